"""Snapshots (service/snapshot.py): restoring the gate's JSON state and continuing is the
same as never having stopped — observations, public state and the whole state — at every
cut of a real ballot and dispute and of random workloads; a document that is not a
snapshot is a ``CodecError``, never another exception or an object outside the allow-list."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.service.gate import Gate
from ostrom.service.identity import canonical
from ostrom.service.snapshot import CodecError, decode, encode, restore, snapshot
from service_world import FOUNDERS, OPERATOR, PARAMS, Signer, commit_phase, decided, setup


def _through_json(doc: Any) -> Any:
    return json.loads(canonical(doc))


def _check_cut(envs: list[Any], cut: int) -> None:
    ref = Gate(PARAMS, setup())
    for e in envs[:cut]:
        ref.apply(e)
    doc = _through_json(snapshot(ref))
    back = restore(PARAMS, setup(), doc)
    assert _through_json(snapshot(back)) == doc
    assert back.public_state() == ref.public_state()
    for e in envs[cut:]:
        assert back.apply(e) == ref.apply(e)
    assert back.public_state() == ref.public_state()
    assert _through_json(snapshot(back)) == _through_json(snapshot(ref))


def _ballot() -> list[Any]:
    s = Signer()
    return commit_phase(s) + decided(s)


@pytest.mark.parametrize("cut", range(0, 27, 2))
def test_restore_and_continue_equals_never_stopped_in_a_ballot(cut: int) -> None:
    _check_cut(_ballot(), cut)


OPS = st.sampled_from(["tick", "propose", "object", "join", "dispute", "forget", "urgent"])


def _random(steps: list[Any]) -> list[Any]:
    s, envs = Signer(), _ballot()
    s.seq = {}  # a fresh signer continues the ballot's seqs below
    for e in envs:
        s.seq[e["agent"]] = e["seq"]
    for op, f, i in steps:
        x = f"a{i}"
        if op == "tick":
            envs.append(s.env(OPERATOR, {"op": "tick"}))
        elif op == "propose":
            envs.append(
                s.env(
                    f, {"op": "propose", "agent": f, "artifact": x, "slot": f"s{i}", "digest": "d"}
                )
            )
        elif op == "object":
            envs.append(s.env(f, {"op": "object", "agent": f, "artifact": x}))
        elif op == "join":
            envs.append(s.env(f"j{i}", {"op": "join", "agent": f"j{i}"}, join=True))
        elif op == "dispute":
            envs.append(s.env(f, {"op": "dispute", "agent": f, "artifact": "x", "reason": "r"}))
        elif op == "forget":
            envs.append(s.env(f, {"op": "forget_vote", "agent": f, "artifact": x}))
        else:
            envs.append(s.env(f, {"op": "urgent_report", "agent": f, "artifact": x, "reason": "r"}))
    return envs


@settings(max_examples=30)
@given(
    st.lists(st.tuples(OPS, st.sampled_from(FOUNDERS), st.integers(0, 3)), max_size=30),
    st.integers(0, 60),
)
def test_restore_and_continue_equals_never_stopped_at_random(steps: list[Any], cut: int) -> None:
    envs = _random(steps)
    _check_cut(envs, min(cut, len(envs)))


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=6)
    | st.sampled_from(["Artifact", "Ballot", "Sanction", "os.system", "$f", "$obj"]),
    lambda c: (
        st.lists(c, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "$f",
                    "$list",
                    "$tuple",
                    "$set",
                    "$dict",
                    "$deque",
                    "maxlen",
                    "$array",
                    "$enum",
                    "v",
                    "$obj",
                    "a",
                    "state",
                    "x",
                ]
            ),
            c,
            max_size=3,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=300)
@given(JSONISH)
def test_decode_of_any_document_is_a_value_or_a_codec_error(doc: Any) -> None:
    with contextlib.suppress(CodecError):
        decode(doc)


@settings(max_examples=100)
@given(
    st.dictionaries(
        st.sampled_from(["format", "community", "orchestrator", "reputation", "sanctions", "gate"]),
        JSONISH,
        max_size=6,
    )
)
def test_restore_of_any_document_is_a_gate_or_a_codec_error(doc: Any) -> None:
    with contextlib.suppress(CodecError):
        restore(PARAMS, setup(), doc)


def test_classes_outside_the_allow_list_are_refused() -> None:
    with pytest.raises(CodecError, match="allow-list"):
        decode({"$obj": "Popen", "a": {}})
    with pytest.raises(CodecError, match="allow-list"):
        encode(object())


def test_a_new_field_the_codec_cannot_hold_is_an_error_not_lost() -> None:
    """The mutation: a callable attribute (a hook, a strategy) appears in the core."""
    g = Gate(PARAMS, setup())
    g.community.orchestrator._new_hook = print  # type: ignore[attr-defined]
    with pytest.raises(CodecError, match="callable"):
        snapshot(g)


def test_a_dropped_field_is_caught_by_the_continue_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation: a codec that loses the orchestrator's clock diverges (the check can
    fail)."""
    import ostrom.service.snapshot as snap

    real = snap._attrs

    def lossy(obj: Any) -> dict[str, Any]:
        out = real(obj)
        if type(obj).__name__ == "Orchestrator":
            out["_now"] = 0
        return out

    monkeypatch.setattr(snap, "_attrs", lossy)
    with pytest.raises(AssertionError):
        _check_cut(_ballot(), 10)


def _older(db: Any, public_of: Any = None) -> int:
    """Rewrite every snapshot row of the file ``db`` as an earlier version wrote it: its
    full state in the older format (a layout this version cannot restore), its public
    state as it was (or ``public_of(public)``), its hash recomputed."""
    import hashlib
    import sqlite3

    con = sqlite3.connect(db)
    rows = con.execute("SELECT pos, state FROM snapshot").fetchall()
    for pos, state in rows:
        doc = json.loads(state)
        doc["full"] = {"format": "ostrom-snapshot/1", "layout": "of an earlier version"}
        if public_of is not None:
            doc["public"] = public_of(doc["public"])
        text = canonical(doc).decode()
        sha = hashlib.sha256(text.encode()).hexdigest()
        con.execute("UPDATE snapshot SET state = ?, sha256 = ? WHERE pos = ?", (text, sha, pos))
    con.commit()
    con.close()
    return len(rows)


def test_a_node_opens_a_file_with_an_earlier_versions_snapshots(tmp_path: Any) -> None:
    """An upgrade: snapshots of an older format are replayed past (the log is the
    record), ``--verify`` compares their public state only, and a wrong public state in
    one is still caught."""
    from ostrom.service.node import Node
    from ostrom.service.store import StoreError

    db = tmp_path / "n.db"
    node = Node.open(db, params=PARAMS, setup=setup(), fsync=False, snapshot_every=3,
                     snapshot_ratio=0.0)  # fmt: skip
    s = Signer()
    for env in decided(s):
        node.submit(env)
    want = node.public_state()
    node.close()
    assert _older(db) >= 2
    again = Node.open(db, fsync=False)
    assert again.public_state() == want
    again.close()
    Node.open(db, fsync=False, verify=True).close()
    _older(db, lambda public: {**public, "now": public["now"] + 1})
    with pytest.raises(StoreError, match="the replayed state differs"):
        Node.open(db, fsync=False, verify=True)
