"""Group commit (service/group_commit.py, ``Node.submit_many``): grouping never changes
what a command gets.  Any split of any sequence of envelopes — accepted, refused by the
protocol, refused by the gate, retried from the log, sent twice in one group, junk —
into groups gives the replies and the log that ``submit`` one by one gives; a group
whose transaction fails is answered 503 throughout with nothing applied; and over HTTP
concurrent requests do share transactions."""

from __future__ import annotations

import asyncio
import copy
import sqlite3
from pathlib import Path
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.service.app import create_app
from ostrom.service.group_commit import GroupCommit
from ostrom.service.node import PROBE_MAX_S, Node
from service_world import FOUNDERS, OPERATOR, PARAMS, Signer, setup

#: what a step of the generated sequences is
STEP = st.tuples(
    st.sampled_from(["propose", "object", "tick", "join", "retry", "twice", "forged", "junk"]),
    st.integers(0, 5),
)


def _open(path: Path, **kw: Any) -> Node:
    return Node.open(path, params=PARAMS, setup=setup(), fsync=False, **kw)


def _envelopes(steps: list[tuple[str, int]]) -> list[Any]:
    s, out = Signer(), []
    for op, i in steps:
        f = FOUNDERS[i % len(FOUNDERS)]
        if op == "propose":
            cmd = {"op": "propose", "agent": f, "artifact": f"a{i}", "slot": f"s{i}", "digest": "d"}
            out.append(s.env(f, cmd))
        elif op == "object":
            out.append(s.env(f, {"op": "object", "agent": f, "artifact": f"a{i}"}))
        elif op == "tick":
            out.append(s.env(OPERATOR, {"op": "tick"}))
        elif op == "join":
            out.append(s.env(f"j{i}", {"op": "join", "agent": f"j{i}"}, join=True))
        elif op == "retry" and out:  # an earlier envelope again (logged, or in this group)
            out.append(copy.deepcopy(out[i % len(out)]))
        elif op == "twice":  # the same seq signed over another command: a replay
            env = s.env(f, {"op": "object", "agent": f, "artifact": f"b{i}"})
            out += [env, {**env, "command": {**env["command"], "artifact": "other"}}]
        elif op == "forged":
            env = s.env(f, {"op": "object", "agent": f, "artifact": "a0"})
            s.seq[f] -= 1  # the node never saw it: the client's next command reuses the seq
            out.append({**env, "signature": "00" * 64})
        else:
            out.append({"agent": f, "seq": i})
    return out


def _log(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT * FROM log ORDER BY pos").fetchall()


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(STEP, min_size=1, max_size=40),
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=40),
    every=st.sampled_from([1, 3, 1000]),
)
def test_any_grouping_gives_the_replies_and_the_log_of_one_by_one(
    tmp_path_factory: Any, steps: list[tuple[str, int]], cuts: list[int], every: int
) -> None:
    tmp = tmp_path_factory.mktemp("g")
    envs = _envelopes(steps)
    one = _open(tmp / "one.db", snapshot_every=every, snapshot_ratio=0)
    grouped = _open(tmp / "grouped.db", snapshot_every=every, snapshot_ratio=0)
    expected = [one.submit(copy.deepcopy(e)) for e in envs]
    got, k = [], 0
    for size in [*cuts, len(envs)]:  # the groups' sizes, the rest in one last group
        got += grouped.submit_many([copy.deepcopy(e) for e in envs[k : k + size]])
        k += size
        if k >= len(envs):
            break
    assert got == expected
    state = copy.deepcopy(one.public_state())
    assert grouped.public_state() == state
    one.close()
    grouped.close()
    assert _log(tmp / "grouped.db") == _log(tmp / "one.db")
    with sqlite3.connect(tmp / "grouped.db") as a, sqlite3.connect(tmp / "one.db") as b:
        snaps = "SELECT pos, sha256 FROM snapshot ORDER BY pos"
        assert a.execute(snaps).fetchall() == b.execute(snaps).fetchall()
    again = Node.open(tmp / "grouped.db", verify=True)  # the grouped log replays
    assert again.public_state() == state
    again.close()


def test_a_failed_group_transaction_applies_none_of_its_commands(tmp_path: Path) -> None:
    now = [0.0]  # the node's clock: its probe of the disk is due once it passes
    node, s = _open(tmp_path / "n.db", clock=lambda: now[0]), Signer()
    assert node.submit(s.env(OPERATOR, {"op": "tick"})).status == 200
    state, pos = copy.deepcopy(node.public_state()), node.last_pos
    db = node.store._db
    db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")
    big = [
        s.env(
            f, {"op": "propose", "agent": f, "artifact": f"x{i}" * 200, "slot": "s", "digest": "d"}
        )
        for i, f in enumerate(FOUNDERS * 4)
    ]
    junk = {"agent": "f1"}
    replies = node.submit_many([*big, junk])
    assert [r.status for r in replies[:-1]] == [503] * len(big)
    assert replies[-1].status == 400  # a refusal of the gate keeps its own answer
    assert node.public_state() == state and node.last_pos == pos
    db.execute("PRAGMA max_page_count=1073741823")
    # degraded (service/node.py): the whole group refused at once until the probe is due
    assert [r.status for r in node.submit_many(big)] == [503] * len(big)
    assert node.counts["rebuilds"] == 1
    now[0] += PROBE_MAX_S
    assert [r.status for r in node.submit_many(big)] == [200] * len(big)  # the same envelopes
    mem = copy.deepcopy(node.public_state())
    node.close()
    assert Node.open(tmp_path / "n.db", verify=True).public_state() == mem


def test_concurrent_requests_share_transactions_over_http(tmp_path: Path) -> None:
    """Forty agents post at once through the ASGI app: every command is answered 200 and
    logged once, and some transaction held more than one command."""
    node, s = _open(tmp_path / "n.db"), Signer()
    joins = [s.env(f"j{i}", {"op": "join", "agent": f"j{i}"}, join=True) for i in range(40)]
    app = create_app(node)
    writer: list[GroupCommit] = []

    async def run() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as c:
            rs = await asyncio.gather(*(c.post("/commands", json=e) for e in joins))
        return [r.status_code for r in rs]

    original = GroupCommit.submit

    async def spy(self: GroupCommit, envelope: object) -> Any:
        if not writer:
            writer.append(self)
        return await original(self, envelope)

    GroupCommit.submit = spy  # type: ignore[method-assign]
    try:
        statuses = asyncio.run(run())
    finally:
        GroupCommit.submit = original  # type: ignore[method-assign]
    assert statuses == [200] * 40
    assert node.last_pos == 40
    assert sum(n * k for n, k in writer[0].sizes.items()) == 40
    assert max(writer[0].sizes) > 1, writer[0].sizes
    assert sorted(e.agent for e in node.store.entries()) == sorted(f"j{i}" for i in range(40))
    node.close()
