"""Durability of the node (service/store.py, service/node.py): what got a reply is in
the log and survives a restart; a failed write (disk full, locked) leaves the state and
the log as they were (503); a corrupt, torn, foreign or tampered file is refused on open;
checkpoints and --verify catch a log that no longer replays."""

from __future__ import annotations

import contextlib
import copy
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ostrom.protocol.params import Params
from ostrom.service.gate import Gate
from ostrom.service.node import PROBE_MAX_S, Node
from ostrom.service.store import FORMAT, Store, StoreError
from service_world import (
    FOUNDERS,
    OPERATOR,
    PARAMS,
    Signer,
    commit_phase,
    decided,
    setup,
)


def _open(path: Path, **kw: Any) -> Node:
    kw.setdefault("fsync", False)
    return Node.open(path, params=PARAMS, setup=setup(), **kw)


def _rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute(
            "SELECT pos, agent, seq, result, refused FROM log ORDER BY pos"
        ).fetchall()


def test_every_answered_command_is_in_the_log_and_survives_a_restart(tmp_path: Path) -> None:
    db, s = tmp_path / "n.db", Signer()
    node = _open(db, snapshot_every=4, snapshot_ratio=0)
    envs = commit_phase(s)
    replies = [node.submit(e) for e in envs]
    assert all(r.status == 200 for r in replies)
    state = copy.deepcopy(node.public_state())
    node.close()
    rows = _rows(db)
    assert [r[0] for r in rows] == list(range(1, len(envs) + 1))
    # the early reveal was refused by the protocol: logged, marked refused
    assert rows[-1][3:] == ("wrong_phase", 1)
    again = Node.open(db, verify=True)
    assert again.public_state() == state
    for e in decided(s):  # and it continues where it stopped
        assert again.submit(e).status == 200
    again.close()


def test_a_retry_is_answered_from_the_log_not_applied_again(tmp_path: Path) -> None:
    node, s = _open(tmp_path / "n.db"), Signer()
    env = s.env("f1", {"op": "propose", "agent": "f1", "artifact": "a", "slot": "s", "digest": "d"})
    first = node.submit(env)
    state = copy.deepcopy(node.public_state())
    second = node.submit(copy.deepcopy(env))
    assert second.body == {**first.body, "retry": True}
    assert node.public_state() == state and node.last_pos == 1
    # the same (agent, seq) with another command is a replay, not a retry
    other = dict(env, command={**env["command"], "digest": "e"})
    assert node.submit(other).body["error"] in ("replayed", "bad_signature")


def test_gate_refusals_are_not_logged(tmp_path: Path) -> None:
    node = _open(tmp_path / "n.db")
    bads: list[object] = [None, [], {"agent": "f1"}, {"agent": "f1", "seq": 1, "command": {}}]
    for bad in bads:
        assert node.submit(bad).status >= 400
    assert node.last_pos == 0


def _fill(node: Node, s: Signer, n: int) -> list[int]:
    return [
        node.submit(
            s.env(
                "f1",
                {
                    "op": "propose",
                    "agent": "f1",
                    "artifact": f"a{i}",
                    "slot": f"s{i}",
                    "digest": "d" * 2000,
                },
            )
        ).status
        for i in range(n)
    ]


def test_disk_full_is_503_and_nothing_half_applied(tmp_path: Path) -> None:
    now = [0.0]  # the node's clock: its probe of the disk is due once it passes
    node, s = _open(tmp_path / "n.db", clock=lambda: now[0]), Signer()
    _fill(node, s, 3)
    db = node.store._db  # the node's own connection: the limit is per connection
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count={pages}")
    state, pos = copy.deepcopy(node.public_state()), node.last_pos
    statuses = _fill(node, s, 20)
    assert 503 in statuses
    first = statuses.index(503)
    assert node.last_pos == pos + first
    # the failed commands are not in the state either: rebuild from disk agrees
    assert node.public_state()["artifacts"].keys() == {
        *state["artifacts"],
        *(f"a{i}" for i in range(first)),
    }
    db.execute("PRAGMA max_page_count=1073741823")
    s.seq["f1"] = node.gate.last_seq("f1")  # the client re-signs the lost command
    assert _fill(node, s, 1) == [503]  # degraded: refused at once until the probe is due
    s.seq["f1"] = node.gate.last_seq("f1")
    now[0] += PROBE_MAX_S
    assert _fill(node, s, 1) == [200]  # the probe commits: writes resume
    mem = copy.deepcopy(node.public_state())
    node.close()
    assert Node.open(tmp_path / "n.db", verify=True).public_state() == mem


def test_a_locked_database_is_503_and_nothing_changes(tmp_path: Path) -> None:
    now = [0.0]
    node, s = _open(tmp_path / "n.db", busy_timeout=0.05, clock=lambda: now[0]), Signer()
    _fill(node, s, 1)
    state = copy.deepcopy(node.public_state())
    other = sqlite3.connect(tmp_path / "n.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a second writer holds the write lock
    try:
        env = s.env("f1", {"op": "object", "agent": "f1", "artifact": "zz"})
        r = node.submit(env)
        assert (r.status, r.body["error"]) == (503, "db_unavailable")
        assert node.public_state() == state and node.last_pos == 1
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert node.submit(env).status == 503  # degraded until its probe of the file is due
    now[0] += PROBE_MAX_S
    assert node.submit(env).status == 200  # the same envelope, once the lock is gone


def _make(tmp_path: Path, n: int = 6) -> Path:
    db, s = tmp_path / "n.db", Signer()
    node = _open(db, snapshot_every=2, snapshot_ratio=0)
    for e in commit_phase(s)[:n]:
        node.submit(e)
    node.close()
    return db


def _sql(path: Path, sql: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql)


@pytest.mark.parametrize(
    "damage,match",
    [
        ("UPDATE meta SET value='other/9' WHERE key='format'", "format"),
        ("UPDATE meta SET value='7' WHERE key='version'", "schema version"),
        ("UPDATE meta SET value='{' WHERE key='params'", "not JSON"),
        ("UPDATE meta SET value='{\"w_min\": 7}' WHERE key='params'", "header does not load"),
        ("DELETE FROM log WHERE pos=3", "positions"),
        ("UPDATE log SET envelope='[' WHERE pos=2", "not JSON"),
        ("UPDATE log SET result='duplicate' WHERE pos=2", "agree"),
        ("UPDATE snapshot SET state='{}' WHERE pos=4", "hash"),
        ("DROP TABLE snapshot", "not a node database"),
        (
            'UPDATE log SET envelope=replace(envelope, \'"digest":"d"\', \'"digest":"e"\')',
            "gate refuses",
        ),
    ],
)
def test_a_damaged_file_is_refused_with_a_clear_message(
    tmp_path: Path, damage: str, match: str
) -> None:
    db = _make(tmp_path)
    _sql(db, damage)
    with pytest.raises(StoreError, match=match):
        Node.open(db, verify=True)


def test_a_changed_observation_is_caught_by_verify_only(tmp_path: Path) -> None:
    db = _make(tmp_path)
    _sql(
        db,
        "UPDATE log SET observation=replace(observation, '\"events\":[', "
        '\'"events":[{"event":"forged"},\') WHERE pos=2',
    )
    Node.open(db).close()  # the state is unchanged: only --verify reads every observation
    with pytest.raises(StoreError, match="observation differs"):
        Node.open(db, verify=True)


def _rewrite_latest_snapshot(db: Path, change: Any) -> None:
    """Change the latest snapshot's document and re-hash it (a consistent forgery)."""
    import hashlib
    import json

    with sqlite3.connect(db) as c:
        pos, state = c.execute("SELECT pos, state FROM snapshot ORDER BY pos DESC").fetchone()
        doc = json.loads(state)
        change(doc)
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        c.execute(
            "UPDATE snapshot SET state=?, sha256=? WHERE pos=?",
            (text, hashlib.sha256(text.encode()).hexdigest(), pos),
        )


def test_a_snapshot_whose_parts_disagree_is_refused(tmp_path: Path) -> None:
    db = _make(tmp_path)
    _rewrite_latest_snapshot(db, lambda d: d["public"].__setitem__("now", d["public"]["now"] + 1))
    with pytest.raises(StoreError, match="public state is not its full state"):
        Node.open(db)


def test_a_snapshot_that_is_not_what_the_log_produces_is_caught_by_verify(
    tmp_path: Path,
) -> None:
    """Forged consistently (full and public state agree): only the replay can tell."""
    db = _make(tmp_path)

    def forge(d: Any) -> None:
        d["public"]["now"] += 1
        for k, v in d["full"]["orchestrator"].items():
            if k == "_now":
                d["full"]["orchestrator"][k] = v + 1

    _rewrite_latest_snapshot(db, forge)
    Node.open(db).close()  # restored from the forged snapshot: consistent with itself
    with pytest.raises(StoreError, match="differs"):
        Node.open(db, verify=True)


def test_a_snapshot_that_does_not_restore_is_refused(tmp_path: Path) -> None:
    db = _make(tmp_path)
    _rewrite_latest_snapshot(db, lambda d: d["full"].__setitem__("format", "pickle"))
    with pytest.raises(StoreError, match="does not restore"):
        Node.open(db)


@pytest.mark.parametrize("where", [0, 100, b'"digest":"d"', b'"op":"tick"', b"ostrom-node/1"])
def test_overwritten_bytes_are_refused(tmp_path: Path, where: int | bytes) -> None:
    """The file header, a b-tree page header, a log row, the meta table (free space in a
    page is not data: overwriting it changes nothing, so it is not tested)."""
    db = _make(tmp_path)
    data = bytearray(db.read_bytes())
    offset = where if isinstance(where, int) else data.index(where)
    data[offset : offset + 64] = b"\xa5" * 64
    db.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    with pytest.raises(StoreError):
        Node.open(db, verify=True)


def test_foreign_empty_and_missing_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "text").write_text("hello, not sqlite" * 100)
    (tmp_path / "empty").write_bytes(b"")
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE t (x)").connection.close()
    for name in ("text", "empty", "other.db"):
        with pytest.raises(StoreError):
            Node.open(tmp_path / name)
    with pytest.raises(StoreError, match="no such"):
        Store.open(tmp_path / "missing")
    assert FORMAT == "ostrom-node/1"


def test_other_params_or_founders_on_reopen_are_refused(tmp_path: Path) -> None:
    db = _make(tmp_path)
    with pytest.raises(StoreError, match="parameters"):
        Node.open(db, params=Params(seed=5))
    with pytest.raises(StoreError, match="founders"):
        Node.open(db, setup=setup().__class__())


OPS = st.sampled_from(["tick", "propose", "object", "join", "garbage"])


@settings(max_examples=25)
@given(
    st.lists(st.tuples(OPS, st.sampled_from(FOUNDERS), st.integers(0, 3)), max_size=25),
    st.integers(0, 25),
    st.integers(1, 5),
)
def test_a_restart_anywhere_is_invisible(
    tmp_path_factory: pytest.TempPathFactory, steps: list[Any], cut: int, every: int
) -> None:
    """Restart (replay + checkpoints) in the middle == never restarted."""
    path = tmp_path_factory.mktemp("r") / "n.db"
    s = Signer()
    envs: list[Any] = []
    for op, f, i in steps:
        if op == "tick":
            envs.append(s.env(OPERATOR, {"op": "tick"}))
        elif op == "propose":
            envs.append(
                s.env(
                    f,
                    {
                        "op": "propose",
                        "agent": f,
                        "artifact": f"a{i}",
                        "slot": f"s{i}",
                        "digest": "d",
                    },
                )
            )
        elif op == "object":
            envs.append(s.env(f, {"op": "object", "agent": f, "artifact": f"a{i}"}))
        elif op == "join":
            envs.append(s.env(f"j{i}", {"op": "join", "agent": f"j{i}"}, join=True))
        else:
            envs.append({"agent": f, "seq": i, "command": {"op": "x"}})
    node = _open(path, snapshot_every=every, snapshot_ratio=0)
    ref = Gate(PARAMS, setup())
    for k, e in enumerate(envs):
        if k == cut:
            node.close()
            node = Node.open(path, verify=True, fsync=False, snapshot_every=every, snapshot_ratio=0)
        node.submit(e)
        ref.apply(e)
    assert node.public_state() == ref.public_state()
    node.close()


TEXT = st.text(st.characters(exclude_categories=()), max_size=4)  # lone surrogates too
HOSTILE = st.fixed_dictionaries(
    {},
    optional={
        "agent": TEXT | st.sampled_from(FOUNDERS) | st.integers(),
        "seq": st.integers(-1, 2**64) | st.floats() | st.booleans(),
        "command": st.dictionaries(
            st.sampled_from(["op", "agent", "artifact", "slot", "digest"]) | TEXT,
            st.sampled_from(["tick", "propose", "join", "f1"]) | TEXT | st.integers(),
            max_size=5,
        ),
        "signature": TEXT | st.just("00" * 64),
        "public_key": TEXT | st.just("00" * 32),
    },
)


@settings(max_examples=100)
@given(st.lists(HOSTILE, max_size=5))
@example([{"agent": "\ud800", "seq": 1, "command": {"op": "tick"}}])
def test_hostile_envelopes_on_a_healthy_node_are_4xx_and_change_nothing(
    tmp_path_factory: pytest.TempPathFactory, envs: list[Any]
) -> None:
    """A healthy database never answers 503 to bad input (a lone surrogate in an agent
    name once reached SQLite and came back as db_unavailable)."""
    node = _open(tmp_path_factory.mktemp("h") / "n.db")
    before = copy.deepcopy(node.public_state())
    for e in envs:
        r = node.submit(e)
        assert 400 <= r.status < 500, r
    assert node.public_state() == before and node.last_pos == 0
    node.close()


def test_concurrent_writers_are_serialised_in_log_order(tmp_path: Path) -> None:
    """Four threads submit at once: every command is logged exactly once, and the state
    is the log replayed in its order (one writer: the log's order is the application's)."""
    import threading

    node, s = _open(tmp_path / "n.db", snapshot_every=7, snapshot_ratio=0), Signer()
    per = {
        f: [
            s.env(
                f,
                {
                    "op": "propose",
                    "agent": f,
                    "artifact": f"{f}-{i}",
                    "slot": f"{f}{i}",
                    "digest": "d",
                },
            )
            for i in range(15)
        ]
        for f in FOUNDERS[:3]
    }
    per[OPERATOR] = [s.env(OPERATOR, {"op": "tick"}) for _ in range(15)]
    statuses: list[int] = []

    def run(envs: list[Any]) -> None:
        for e in envs:
            statuses.append(node.submit(e).status)

    threads = [threading.Thread(target=run, args=(envs,)) for envs in per.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert statuses == [200] * 60 and node.last_pos == 60
    state = copy.deepcopy(node.public_state())
    node.close()
    assert Node.open(tmp_path / "n.db", verify=True).public_state() == state


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _make(tmp_path_factory.mktemp("pristine"), n=13)


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=8)), min_size=1, max_size=4
    )
)
def test_any_damage_to_the_file_opens_or_is_a_store_error(
    tmp_path_factory: pytest.TempPathFactory, pristine: Path, damage: list[Any]
) -> None:
    """Random bytes written anywhere in the file: the node opens (the bytes were not
    data, or still say the same) or refuses with StoreError — never another exception."""
    data = bytearray(pristine.read_bytes())
    for offset, chunk in damage:
        at = offset % len(data)
        data[at : at + len(chunk)] = chunk
    path = tmp_path_factory.mktemp("dmg") / "n.db"
    path.write_bytes(bytes(data))
    for verify in (False, True):
        with contextlib.suppress(StoreError):
            Node.open(path, verify=verify, fsync=False).close()


def test_a_core_that_raises_changes_nothing_and_the_node_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core promises never to raise; if it did half-way through a command, the node
    undoes what it changed (rebuilt from the log) and answers 500 internal_error."""
    node, s = _open(tmp_path / "n.db"), Signer()
    assert node.submit(s.env(OPERATOR, {"op": "tick"})).status == 200
    state = copy.deepcopy(node.public_state())
    community = node.gate.community

    def half_then_raise(command: object) -> Any:
        community.orchestrator._now += 5  # a change, then the failure
        raise RuntimeError("bug")

    monkeypatch.setattr(community, "apply", half_then_raise)  # under apply_admitted
    r = node.submit(s.env(OPERATOR, {"op": "tick"}))
    assert (r.status, r.body["error"]) == (500, "internal_error")
    assert node.public_state() == state and node.last_pos == 1
    s.seq[OPERATOR] -= 1  # the client re-signs the same seq: the rebuilt gate takes it
    assert node.submit(s.env(OPERATOR, {"op": "tick"})).status == 200


def test_a_snapshot_that_cannot_be_encoded_is_skipped_not_fatal(tmp_path: Path) -> None:
    node, s = _open(tmp_path / "n.db", snapshot_every=2, snapshot_ratio=0), Signer()
    node.gate.community.orchestrator._hook = print  # type: ignore[attr-defined]
    statuses = [node.submit(s.env(OPERATOR, {"op": "tick"})).status for _ in range(3)]
    assert statuses == [200] * 3 and node.store.snapshots() == {}


@pytest.mark.parametrize("ratio", [0.5, 1.0, 3.0])
def test_a_snapshot_waits_for_k_commands_and_ratio_times_its_size_in_log(
    tmp_path: Path, ratio: float
) -> None:
    """The snapshot policy (service/node.py): a snapshot follows the previous one after at
    least K commands and at least ``ratio`` times that one's size in log bytes — read
    back from the file's own rows, not from the counters the node keeps — and it is
    not late: the row before it had not yet reached both.  The counters are rebuilt the
    same on a restart."""
    path, s, every = tmp_path / "n.db", Signer(), 5
    node = _open(path, snapshot_every=every, snapshot_ratio=ratio)
    for i in range(300):
        f = FOUNDERS[i % len(FOUNDERS)]
        cmd = {"op": "propose", "agent": f, "artifact": f"a{i}", "slot": f"s{i}", "digest": "d"}
        node.submit(s.env(f, cmd) if i % 11 else s.env(OPERATOR, {"op": "tick"}))
        if i == 150:  # a restart in the middle: the counters come from the file
            counters = (node.store.snapshot_bytes, node.store.bytes_since_snapshot)
            node.close()
            node = _open(path, snapshot_every=every, snapshot_ratio=ratio)
            assert (node.store.snapshot_bytes, node.store.bytes_since_snapshot) == counters
    node.close()
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT pos, length(CAST(envelope AS BLOB)) + length(CAST(observation AS BLOB)) "
            "FROM log ORDER BY pos"
        ).fetchall()
        snaps = dict(db.execute("SELECT pos, length(CAST(state AS BLOB)) FROM snapshot"))
    assert len(snaps) >= 2, snaps  # the ratio is exercised, not just the first snapshot
    prev_size, since, count = 0, 0, 0
    for pos, size in rows:
        due = count + 1 >= every and since >= ratio * prev_size
        assert (pos in snaps) == due, (pos, count, since, prev_size)
        if pos in snaps:
            prev_size, since, count = snaps[pos], 0, 0
        else:
            since, count = since + size, count + 1
