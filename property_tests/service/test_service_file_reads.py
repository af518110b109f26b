"""The reads of the file — ``/log``, ``/slots/{slot}``, ``/search`` (GET and POST),
``/artifacts/{id}/content`` — without the node's write lock (issue 41, item 9).

Before, each of them read the store under the node's lock, which a write holds until
its rows are durable: a write stuck on the disk stalled them all, and each of them
stalled the writer for as long as it read.  Now each reads one WAL snapshot of the file
and the view the writer published for that snapshot's position (``Node._reading``).

* ``test_a_write_stuck_on_the_disk_delays_no_read_of_the_file`` (a real ``ostrom serve``
  over loopback): another process holds the database's write lock, so the node's writer
  waits in SQLite with its group in progress; every read of the file must answer within
  ``READ_S`` meanwhile.  On the code before, the first one waited for the write until
  the busy timeout (5 s).
* ``test_reads_during_writes_are_of_a_committed_position``: a writer thread submits random
  groups of commands (proposals with content, ticks, urgent reports) while a reader
  thread reads; every answer must be, byte for byte, the answer of a node that applied
  exactly the first ``position`` commands (a twin that applies them one by one): no
  half-applied command, no group half seen, READ-1 decided on the state the payloads
  were read from.  A node whose reads take the view *before* their snapshot's (the
  mutant) is caught.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_service_siege import Conn, serve

from ostrom.protocol.commands import payload_digest
from ostrom.protocol.params import Params
from ostrom.service.identity import canonical
from ostrom.service.node import Node, View
from ostrom.service.reads import Read, answer
from service_world import FOUNDERS, OPERATOR, Signer, setup

#: A read of the file must answer within this while a write is stuck (before: 5 s).
READ_S = 1.0
#: How long at least the other process holds the write lock.
HOLD_S = 2.0
PARAMS = Params(propose_rate=1000)
WORDS = ("river", "stone", "cloud", "ember", "frost")


def proposal(signer: Signer, i: int, slot: str, words: str) -> dict[str, Any]:
    """Founder ``i``'s proposal of ``a{i}`` in ``slot``, with a payload of ``words``."""
    f = FOUNDERS[i % len(FOUNDERS)]
    payload = {"content": words, "title": f"t{i}"}
    cmd = {
        "op": "propose",
        "agent": f,
        "artifact": f"a{i}",
        "slot": slot,
        "digest": payload_digest(payload),
        **payload,
    }
    return signer.env(f, cmd)


def _file_reads() -> list[tuple[str, str, bytes]]:
    return [
        ("GET", "/log?after=0&limit=1000", b""),
        ("GET", "/slots/s1", b""),
        ("GET", "/search?q=river", b""),
        ("POST", "/search", b'{"q": "stone", "k": 20}'),
        ("GET", "/artifacts/a1/content", b""),
    ]


def test_a_write_stuck_on_the_disk_delays_no_read_of_the_file(tmp_path: Path) -> None:
    path, signer = tmp_path / "n.db", Signer()
    node = Node.open(path, params=PARAMS, setup=setup(), fsync=False)
    try:
        envs = [
            proposal(signer, i, f"s{i % 7}", f"{WORDS[i % 5]} {WORDS[i % 3]}") for i in range(60)
        ]
        envs += [signer.env(OPERATOR, {"op": "tick"}) for _ in range(4)]
        assert all(r.status == 200 for r in node.submit_many(envs))
    finally:
        node.close()
    with serve(path) as port:

        async def attack() -> tuple[list[float], int]:
            other = sqlite3.connect(path, isolation_level=None, timeout=0)
            other.execute("BEGIN IMMEDIATE")  # the writer now waits in SQLite, locked
            try:
                conn = await Conn.open(port)
                body = canonical(proposal(signer, 60, "s1", "river late"))
                write = asyncio.create_task(conn.request("POST", "/commands", body))
                await asyncio.sleep(0.5)  # the write is in progress: its group waits
                assert not write.done()
                reader, took = await Conn.open(port), []
                try:
                    for method, target, sent in _file_reads():
                        t0 = asyncio.get_running_loop().time()
                        status, got = await reader.request(method, target, sent)
                        took.append(asyncio.get_running_loop().time() - t0)
                        assert status == 200, (target, got[:200])
                finally:
                    reader.close()
                await asyncio.sleep(max(0.0, HOLD_S - 0.5 - sum(took)))
            finally:
                other.execute("ROLLBACK")
                other.close()
            status, _ = await write
            conn.close()
            return took, status

        took, status = asyncio.run(attack())
    assert max(took) < READ_S, f"reads took {[round(t, 2) for t in took]} s"
    assert status == 200  # the lock was released within the busy timeout


# --- reads of a committed position ----------------------------------------------------------


def _history(seed: int, n: int) -> Iterator[list[dict[str, Any]]]:
    """Random groups of commands: proposals (a few slots, a few words: supersessions
    and search hits that come and go), ticks (fast tracks end: artifacts turn active),
    and urgent reports of active artifacts (hidden: READ-1 drops them)."""
    rng, signer = random.Random(seed), Signer()
    for i in range(n):
        group: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            if r < 0.55:
                words = " ".join(rng.choice(WORDS) for _ in range(3))
                group.append(proposal(signer, i * 10 + len(group), f"s{rng.randint(1, 3)}", words))
            elif r < 0.85:
                group.append(signer.env(OPERATOR, {"op": "tick"}))
            else:
                f = rng.choice(FOUNDERS)
                x = f"a{rng.randrange(max(1, i)) * 10}"
                cmd = {"op": "urgent_report", "agent": f, "artifact": x, "reason": "wrong"}
                group.append(signer.env(f, cmd))
        yield group


def _reads(rng: random.Random) -> Read:
    kind = rng.randrange(5)
    if kind == 0:
        return Read.of("search", q=rng.choice(WORDS), k=rng.choice([3, 10]))
    if kind == 1:
        return Read.of("search", q=rng.choice(WORDS), include="history", k=10)
    if kind == 2:
        return Read.of("slot", slot=f"s{rng.randint(1, 3)}")
    if kind == 3:
        return Read.of("log", after=rng.randrange(5), limit=50)
    return Read.of("content", artifact=f"a{rng.randrange(20) * 10}")


def _observe(tmp: Path, seed: int) -> tuple[list[tuple[Read, int, Any]], dict[int, Any]]:
    """Writes and reads at once: every read's (read, position, body), and the envelope
    of each logged position."""
    node = Node.open(tmp / "n.db", params=PARAMS, setup=setup(), fsync=False)
    logged: dict[int, Any] = {}
    seen: list[tuple[Read, int, Any]] = []
    done = threading.Event()

    def read() -> None:
        rng = random.Random(seed ^ 0x5EAD)
        while not done.is_set() or len(seen) < 20:
            r = _reads(rng)
            a = answer(node, r)
            seen.append((r, int(a.position or 0), json.loads(canonical(a.body))))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for group in _history(seed, 40):
            for env, reply in zip(group, node.submit_many(group), strict=True):
                if reply.status == 200 and not reply.body["retry"]:
                    logged[reply.body["pos"]] = env
            # let the reader finish a read before the next group: without it the writer
            # could run every group before the reader's thread is first scheduled, and all
            # reads would see the last position (the reader keeps reading during writes)
            wanted, deadline = len(seen) + 1, time.monotonic() + 5
            while len(seen) < wanted and reader.is_alive() and time.monotonic() < deadline:
                time.sleep(0.0005)
    finally:
        done.set()
        reader.join(30)
        node.close()
    return seen, logged


def _check(tmp: Path, seen: list[tuple[Read, int, Any]], logged: dict[int, Any]) -> int:
    """Each read against a twin that applies the logged commands one by one; how many
    reads fell between two positions the twin passed (all of them must match)."""
    twin = Node.open(tmp / "twin.db", params=PARAMS, setup=setup(), fsync=False)
    try:
        pos, checked = 0, 0
        for r, at, body in sorted(seen, key=lambda s: s[1]):
            while pos < at:
                pos += 1
                assert twin.submit(logged[pos]).status == 200
            want = json.loads(canonical(answer(twin, r).body))
            assert body == want, f"{r} at {at}: {body} != {want}"
            checked += 1
        return checked
    finally:
        twin.close()


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(0, 2**32 - 1))
def test_reads_during_writes_are_of_a_committed_position(tmp_path_factory: Any, seed: int) -> None:
    tmp = tmp_path_factory.mktemp("reads")
    seen, logged = _observe(tmp, seed)
    assert len({at for _, at, _ in seen}) > 1  # the reads saw the writes go on
    assert _check(tmp, seen, logged) == len(seen)


def test_reads_of_the_view_before_their_snapshot_are_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: a node whose reads take the view published *before* the
    position of their snapshot (the mutant) answers reads that no twin gives."""
    real = Node._view_at

    def stale(self: Node, pos: int) -> View | None:
        view = real(self, pos)
        older = [p for p in self._views if p < pos]
        return self._views[max(older)] if older and view is not None else view

    monkeypatch.setattr(Node, "_view_at", stale)
    seen, logged = _observe(tmp_path, 7)
    with pytest.raises(AssertionError):
        _check(tmp_path, seen, logged)
