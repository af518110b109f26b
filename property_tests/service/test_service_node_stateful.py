"""The node as a state machine (Hypothesis stateful): commands, hostile envelopes,
retries, restarts, a full disk and a locked database in any order.  Invariants: the
node's state is always a fresh gate's after the log's envelopes in order (nothing
half-applied, nothing lost), every 200 is in the log, a restart changes nothing, and the
content served is exactly what the accepted proposals carried (kept or rolled back with
their rows)."""

from __future__ import annotations

import copy
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ostrom.protocol.commands import payload_digest
from ostrom.service.gate import Gate
from ostrom.service.node import PROBE_MAX_S, Node, Reply
from service_world import FOUNDERS, OPERATOR, PARAMS, Signer, setup

#: The 503s the runs met (a check that the failure rules do make writes fail).
UNAVAILABLE: list[str] = []


class NodeMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="ostrom-node-"))
        self.path = self.dir / "n.db"
        self.every = 3
        #: the node's clock: the failure rules move it past the probe of the disk, so the
        #: next write probes and (the disk writable again) resumes writes
        self.now = 0.0
        self.node = Node.open(
            self.path,
            params=PARAMS,
            setup=setup(),
            fsync=False,
            snapshot_every=self.every,
            snapshot_ratio=0,  # exactly every 3 commands: many snapshots, many restores
            clock=self.clock,
        )
        self.signer = Signer()
        self.answered: list[dict[str, Any]] = []  # envelopes that got a 200 (not retries)
        self.last: dict[str, Any] | None = None
        self.blocker: sqlite3.Connection | None = None
        #: (artifact, digest) -> the payload an accepted propose carried (none was forgotten:
        #: the default population floor blocks every forget decision)
        self.carried: dict[tuple[str, str], dict[str, Any]] = {}

    def clock(self) -> float:
        return self.now

    def _submit(self, env: Any) -> Reply:
        r = self.node.submit(env)
        if r.status == 200 and not r.body["retry"]:
            self.answered.append(env)
            self.last = env
        elif r.status == 503:  # nothing applied: the client re-signs the same seq later
            self.signer.seq[env["agent"]] -= 1
            UNAVAILABLE.append(r.body["error"])
        else:
            assert r.status < 500 or r.status == 503, r
        return r

    @rule(f=st.sampled_from(FOUNDERS), i=st.integers(0, 4), content=st.booleans())
    def propose(self, f: str, i: int, content: bool = False) -> None:
        cmd = {"op": "propose", "agent": f, "artifact": f"a{i}", "slot": f"s{i}", "digest": "d"}
        payload = {"content": f"a{i} as {f} wrote it"} if content else {}
        if payload:
            cmd = {**cmd, "digest": payload_digest(payload), **payload}
        r = self._submit(self.signer.env(f, cmd))
        if payload and r.status == 200 and r.body["result"] == "ok":
            self.carried[(f"a{i}", cmd["digest"])] = payload

    @rule(f=st.sampled_from(FOUNDERS), i=st.integers(0, 4))
    def object(self, f: str, i: int) -> None:
        self._submit(self.signer.env(f, {"op": "object", "agent": f, "artifact": f"a{i}"}))

    @rule()
    def tick(self) -> None:
        self._submit(self.signer.env(OPERATOR, {"op": "tick"}))

    @rule(i=st.integers(0, 3))
    def join(self, i: int) -> None:
        a = f"j{i}"
        self._submit(self.signer.env(a, {"op": "join", "agent": a}, join=True))

    @rule(junk=st.sampled_from([None, [], {"agent": "f1", "seq": 1}, {"agent": "f1"}]))
    def hostile(self, junk: Any) -> None:
        assert 400 <= self.node.submit(junk).status < 500

    @precondition(lambda self: self.last is not None)
    @rule()
    def retry(self) -> None:
        r = self.node.submit(copy.deepcopy(self.last))
        assert r.status == 200 and r.body["retry"] is True

    @rule(verify=st.booleans())
    def restart(self, verify: bool) -> None:
        before = copy.deepcopy(self.node.public_state())
        self.node.close()
        self.node = Node.open(
            self.path,
            fsync=False,
            verify=verify,
            snapshot_every=self.every,
            snapshot_ratio=0,
            clock=self.clock,
        )
        assert self.node.public_state() == before

    @rule()
    def disk_full_for_one_command(self) -> None:
        db = self.node.store._db
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        db.execute(f"PRAGMA max_page_count={pages}")
        rebuilds = self.node.counts["rebuilds"]
        try:
            for i in range(3):  # big enough to need a new page
                cmd = {
                    "op": "propose",
                    "agent": "f1",
                    "artifact": f"big{i}",
                    "slot": f"b{i}",
                    "digest": "d" * 5000,
                }
                self._submit(self.signer.env("f1", cmd))
            # the writes after a failed one are refused at once: one rebuild at most
            assert self.node.counts["rebuilds"] - rebuilds <= 1
        finally:
            db.execute("PRAGMA max_page_count=1073741823")
            self.now += PROBE_MAX_S

    @rule()
    def locked_for_one_command(self) -> None:
        other = sqlite3.connect(self.path, isolation_level=None, timeout=0)
        other.execute("BEGIN IMMEDIATE")
        self.node.store._db.execute("PRAGMA busy_timeout=10")
        try:
            r_before = self.node.last_pos
            self._submit(self.signer.env(OPERATOR, {"op": "tick"}))
            assert self.node.last_pos == r_before
        finally:
            other.execute("ROLLBACK")
            other.close()
            self.now += PROBE_MAX_S

    @invariant()
    def state_is_the_logs(self) -> None:
        ref = Gate(PARAMS, setup())
        for e in self.answered:
            ref.apply(e)
        expected = ref.public_state()
        # what the next write builds on, and what the reads answer from (the view)
        assert self.node.gate.public_state() == expected
        assert self.node.public_state() == expected
        assert self.node.last_pos == self.node.view().pos == len(self.answered)

    @invariant()
    def content_is_what_accepted_commands_carried(self) -> None:
        """GET /artifacts/{id}/content serves the payload an accepted command carried under
        the artifact's digest, and nothing for a digest-only one — across restarts, full
        disks and locks (a payload is kept in the transaction of its command's row)."""
        for x, a in self.node.public_state()["artifacts"].items():
            r = self.node.content(x)
            payload = self.carried.get((x, a["digest"]))
            if payload is None:
                assert (r.status, r.body["error"]) == (404, "no_content"), (x, r)
            else:
                assert r.body == {"artifact": x, "digest": a["digest"], **payload}, (x, r)
        assert self.node.store.payload_count() == len(set(map(str, self.carried.values())))

    def teardown(self) -> None:
        self.node.close()
        shutil.rmtree(self.dir, ignore_errors=True)


NodeMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)
TestNode = NodeMachine.TestCase


def test_the_failure_rules_do_fail_writes() -> None:
    """The disk-full and lock rules do make writes fail (503), so the machine's invariant
    is checked across real failed writes, and holds after them."""
    UNAVAILABLE.clear()
    m = NodeMachine()
    try:
        m.propose("f1", 0, content=True)
        m.disk_full_for_one_command()
        m.state_is_the_logs()
        m.content_is_what_accepted_commands_carried()
        full = len(UNAVAILABLE)
        m.locked_for_one_command()
        m.state_is_the_logs()
        m.restart(verify=True)
        m.state_is_the_logs()
        m.content_is_what_accepted_commands_carried()
    finally:
        m.teardown()
    assert full >= 1 and len(UNAVAILABLE) == full + 1
    assert set(UNAVAILABLE) == {"db_unavailable"}


def test_a_node_without_its_rollback_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation: after a failed write the node keeps the half-applied command in
    memory.  The machine's invariant sees the state drift from the log."""
    monkeypatch.setattr(Node, "_rebuild", lambda self: None)
    m = NodeMachine()
    try:
        m.propose("f1", 0)
        m.disk_full_for_one_command()
        with pytest.raises(AssertionError):
            m.state_is_the_logs()
    finally:
        m.teardown()


def test_a_node_that_loses_payloads_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation: the store never keeps a payload.  The content invariant sees it."""
    from ostrom.service.store import Store

    monkeypatch.setattr(Store, "_keep", lambda self, artifact, digest, payload: None)
    m = NodeMachine()
    try:
        m.propose("f1", 0, content=True)
        with pytest.raises(AssertionError):
            m.content_is_what_accepted_commands_carried()
    finally:
        m.teardown()


def test_reads_build_nothing_and_a_write_builds_no_whole_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 41, item 9: a read never builds the public state (it reads the view the
    writer published), and a write publishes its view without building the whole state
    again (only what it changed: ``Node._next_view``); the next read sees the write."""
    m = NodeMachine()
    built = []
    real = Gate.public_state

    def counting(gate: Gate) -> dict[str, Any]:
        built.append(1)
        return real(gate)

    monkeypatch.setattr(Gate, "public_state", counting)
    try:
        for _ in range(20):
            m.node.public_state()
            m.node.agent("f1")
            m.node.artifact("a0")
        m.propose("f1", 0)
        assert "a0" in m.node.public_state()["artifacts"]
        assert m.node.view().pos == m.node.last_pos == 1
        assert built == []
        m.state_is_the_logs()
    finally:
        m.teardown()


def test_a_view_kept_across_writes_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutation: the writer never publishes a new view.  The machine's invariant
    sees the reads fall behind the log."""
    monkeypatch.setattr(Node, "_next_view", lambda self, old, staged: old)
    m = NodeMachine()
    try:
        m.node.public_state()
        m.propose("f1", 0)
        with pytest.raises(AssertionError):
            m.state_is_the_logs()
    finally:
        m.teardown()
