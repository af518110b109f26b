"""Unit tests of the PBFT building blocks: messages, signatures, quorums, the normal case,
checkpoints, view change, state transfer, the client, and the replicated orchestrator.

The stateful tests (``test_consensus_stateful.py``) check the properties over arbitrary
schedules; these pin down individual rules, each with the smallest setup that shows it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from lifecycle_world import AGENTS, PARAMS
from ostrom.consensus.application import reference_state
from ostrom.consensus.client import Client
from ostrom.consensus.crypto import KeyRing, Signer, derive_key, make_keys, public_bytes
from ostrom.consensus.messages import (
    NULL_DIGEST,
    Checkpoint,
    Commit,
    FetchState,
    Malformed,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Reply,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    canonical,
    decode,
    encode,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica import (
    BROADCAST,
    CounterApp,
    DurableState,
    Executed,
    InvalidDurableState,
    Output,
    ReplayMismatch,
    Replica,
    Send,
    quorum,
    signer_matches,
    state_digest,
)
from ostrom.harness.byzantine import EquivocatingPrimary, Garbage, Silent
from ostrom.harness.network import Faults, Simulation
from ostrom.harness.replicated import ReplicatedOrchestrator

# --- a hand-driven world: replicas with no network, messages passed explicitly -----------


class World:
    def __init__(self, n: int = 4, f: int = 1, **kw: Any) -> None:
        names = [replica_name(i) for i in range(n)] + ["c0", "c1"]
        self.ring, self.signers = make_keys(7, names)
        self.replicas = [
            Replica(i, n, f, self.ring, self.signers[replica_name(i)], **kw) for i in range(n)
        ]
        self.ts = 0

    def request(self, op: str = "x", client: str = "c0") -> Signed:
        self.ts += 1
        return self.signers[client].sign(Request(client, self.ts, {"op": op}))

    def sent(self, out: Output, kind: type) -> list[Signed]:
        return [
            s.payload
            for s in out.sends
            if isinstance(s.payload, Signed) and isinstance(s.payload.message, kind)
        ]


M = TypeVar("M")


def body(s: Signed, kind: type[M]) -> M:
    """The message ``s`` carries, checked to be a ``kind`` (which types its fields)."""
    assert isinstance(s.message, kind)
    return s.message


def _deliver_all(w: World, src: int, msgs: list[Signed], to: list[int]) -> list[Output]:
    return [w.replicas[j].on_message(m) for m in msgs for j in to if j != src]


# --- messages and signatures -------------------------------------------------------------


def _examples(w: World) -> list[Signed]:
    s0, s1 = w.signers["r0"], w.signers["r1"]
    req = w.request()
    d = request_digest(req)
    pp = s0.sign(PrePrepare(0, 1, d, req, 0))
    prep = s1.sign(Prepare(0, 1, d, 1))
    ck = s1.sign(Checkpoint(16, d, 1))
    vc = s1.sign(ViewChange(1, 0, (), (PreparedCert(pp, (prep,)),), 1))
    return [
        req,
        pp,
        prep,
        s1.sign(Commit(0, 1, d, 1)),
        s1.sign(Reply(0, 1, "c0", 1, {"result": "ok", "events": []})),
        ck,
        vc,
        s1.sign(NewView(1, (vc,), (s1.sign(PrePrepare(1, 1, NULL_DIGEST, None, 1)),), 1)),
        s1.sign(FetchState(0, 1)),
        s1.sign(StateTransfer(0, (req, None), d, (ck,), 1)),
    ]


def test_messages_roundtrip_and_canonical_encoding() -> None:
    w = World()
    for signed in _examples(w):
        wire = encode(signed)
        assert decode(wire) == signed
        assert decode(wire).message.msg_digest == signed.message.msg_digest
        assert w.ring.verify(decode(wire))
        assert wire == canonical(signed.tree())  # sorted keys, no spaces
        assert b" " not in wire.replace(b'"x"', b"")


@pytest.mark.parametrize(
    "wire",
    [
        b"",
        b"\xff\xfe",
        b"[]",
        b'{"type":"Signed"}',
        b'{"type":"Signed","message":{"type":"Prepare"},"sender":"r1","signature":""}',
        b'{"type":"Signed","message":{"type":"Prepare","view":true,"seq":1,"digest":"'
        + b"0" * 64
        + b'","replica":1},"sender":"r1","signature":""}',
        b'{"type":"Signed","message":{"type":"Commit","view":0,"seq":1,"digest":"zz",'
        b'"replica":1},"sender":"r1","signature":""}',
        b'{"type":"Signed","message":{"type":"Nope"},"sender":"r1","signature":"00"}',
    ],
)
def test_decode_refuses_malformed(wire: bytes) -> None:
    with pytest.raises(Malformed):
        decode(wire)


def test_keys_are_deterministic_and_signatures_bind_message_and_sender() -> None:
    assert public_bytes(derive_key(7, "r0")) == public_bytes(derive_key(7, "r0"))
    assert public_bytes(derive_key(7, "r0")) != public_bytes(derive_key(8, "r0"))
    w = World()
    good = w.signers["r1"].sign(Prepare(0, 1, NULL_DIGEST, 1))
    assert w.ring.verify(good)
    assert not w.ring.verify(Signed(Prepare(0, 2, NULL_DIGEST, 1), "r1", good.signature))
    assert not w.ring.verify(Signed(good.message, "r2", good.signature))
    assert not w.ring.verify(Signed(good.message, "stranger", good.signature))
    assert not KeyRing({}).verify(good)


def test_quorum_intersection() -> None:
    """BFT-QUORUM-1: two quorums share f+1 replicas, and the honest ones form a quorum."""
    for n in range(4, 14):
        for f in range(0, (n - 1) // 3 + 1):
            q = quorum(n, f)
            assert 2 * q - n >= f + 1, (n, f)
            assert q <= n - f, (n, f)
        if n == 3 * ((n - 1) // 3) + 1:
            assert quorum(n, (n - 1) // 3) == 2 * ((n - 1) // 3) + 1
    assert 2 * 3 - 5 < 2  # a flat 2f+1 = 3 of n = 5 (f = 1) can meet in one replica


# --- normal case -------------------------------------------------------------------------


def _pre_prepare(w: World) -> tuple[Signed, Signed]:
    req = w.request()
    out = w.replicas[0].on_request(req)
    (pp,) = w.sent(out, PrePrepare)
    return req, pp


def test_prepared_needs_2f_prepares_from_backups_and_commit_2f_plus_1() -> None:
    w = World()
    _, pp = _pre_prepare(w)
    r1 = w.replicas[1]
    out = r1.on_message(pp)
    (p1,) = w.sent(out, Prepare)
    assert not w.sent(out, Commit)  # own prepare only: 1 < 2f
    primary_prep = w.signers["r0"].sign(Prepare(0, 1, body(pp, PrePrepare).digest, 0))
    assert not w.sent(r1.on_message(primary_prep), Commit)
    assert r1.rejected["not_backup"] == 1  # the primary's prepare does not count
    p2 = w.sent(w.replicas[2].on_message(pp), Prepare)[0]
    out = r1.on_message(p2)
    assert len(w.sent(out, Commit)) == 1  # pre-prepare + 2f prepares: prepared
    c2 = w.sent(w.replicas[2].on_message(p1), Commit)[0]
    assert not r1.on_message(c2).executed  # 2 commits < 2f+1
    w.replicas[3].on_message(pp)
    c3 = w.signers["r3"].sign(Commit(0, 1, body(pp, PrePrepare).digest, 3))
    out = r1.on_message(c3)
    assert [e.seq for e in out.executed] == [1]
    assert r1.last_exec == 1 and r1.executed_log[0][1] == body(pp, PrePrepare).digest
    (reply,) = [s for s in out.sends if s.dest == "c0"]
    assert isinstance(reply.payload, Signed) and isinstance(reply.payload.message, Reply)


def _commit_everywhere(w: World, pps: list[Signed]) -> list[Output]:
    """Pass a batch of pre-prepares and all resulting prepares/commits among backups."""
    outs: list[Output] = []
    queue: list[tuple[int, Signed]] = [(0, pp) for pp in pps]
    while queue:
        src, m = queue.pop(0)
        for j in range(len(w.replicas)):
            if j == src:
                continue
            out = w.replicas[j].on_message(m)
            outs.append(out)
            queue += [(j, s.payload) for s in out.sends if s.dest == BROADCAST]  # type: ignore[misc]
    return outs


def test_execution_is_in_sequence_order() -> None:
    w = World()
    _, pp1 = _pre_prepare(w)
    _, pp2 = _pre_prepare(w)
    assert body(pp2, PrePrepare).seq == 2
    _commit_everywhere(w, [pp2])
    assert all(r.last_exec == 0 for r in w.replicas)  # seq 2 committed, waits for seq 1
    assert all(2 in r.committed for r in w.replicas[1:])
    _commit_everywhere(w, [pp1])
    assert all(r.last_exec == 2 for r in w.replicas)
    assert [s for s, _ in w.replicas[1].executed_log] == [1, 2]


# --- checkpoints, garbage collection, watermarks, state transfer -------------------------


def test_checkpoints_garbage_collection_and_watermarks() -> None:
    sim = Simulation(4, 1, seed=3, checkpoint_k=2, watermark_window=4)
    for k in range(7):
        sim.submit("c0", {"op": "x", "k": k})
    sim.run(until=sim.all_executed)
    assert sim.all_executed()
    for r in sim.replicas:
        assert r.stable_seq == 6 and len(r.stable_proof) >= r.q
        assert all(s > r.stable_seq for (_, s) in r.pre_prepares)
        assert all(s > r.stable_seq for (_, s, _) in r.prepares)
        assert all(s > r.stable_seq for s in r.checkpoints)
        # every per-sequence-number index is collected, the replica's own votes included:
        # memory is bounded by the watermark window, whatever the history's length
        assert all(s > r.stable_seq for (_, s, _) in r.commits)
        assert all(s > r.stable_seq for (_, s) in r.sent_commit)
        assert all(s > r.stable_seq for s in r.prepared_certs)
        assert all(s > r.stable_seq for (_, _, s, _) in r._voted)
    r1 = sim.replicas[1]
    before = r1.rejected.copy()
    far = sim.replicas[0].signer.sign(PrePrepare(0, 11, NULL_DIGEST, None, 0))  # > 6 + 4
    r1.on_message(far)
    assert r1.rejected["out_of_window"] == before["out_of_window"] + 1
    old = sim.replicas[0].signer.sign(Checkpoint(2, NULL_DIGEST, 0))  # below the low mark
    r1.on_message(old)
    assert r1.rejected["stale_view"] == before["stale_view"] + 1


def test_a_partitioned_replica_catches_up_by_state_transfer() -> None:
    sim = Simulation(4, 1, seed=5, clients=1, checkpoint_k=2, watermark_window=4)
    sim.partition([["r3"], ["r0", "r1", "r2", "c0"]])
    for k in range(12):
        sim.submit("c0", {"op": "x", "k": k})
    sim.run(until=lambda: not sim.clients["c0"].busy and not sim.backlog["c0"])
    assert sim.replicas[3].last_exec == 0 and sim.replicas[0].stable_seq >= 10
    assert sim.run_fair() is not None
    assert sim.replicas[3].executed_log == sim.replicas[0].executed_log
    assert sim.replicas[3].app.digest() == sim.replicas[0].app.digest()


# --- view change -------------------------------------------------------------------------


def test_view_change_with_a_silent_primary() -> None:
    sim = Simulation(4, 1, seed=1, byzantine={0: Silent()}, clients=2)
    for k in range(6):
        sim.submit(f"c{k % 2}", {"op": "x", "k": k})
    sim.run(until=sim.all_executed)
    assert sim.all_executed()
    assert all(sim.replicas[i].view >= 1 and sim.replicas[i].active for i in sim.honest)
    assert [len(c.results) for c in sim.clients.values()] == [3, 3]


def test_exponential_timeout_back_off() -> None:
    w = World(base_timeout=10)
    r = w.replicas[1]
    r.on_message(w.request())
    assert r.waiting and r.timeout_duration() == 10
    r.on_timeout()
    assert r.view == 1 and not r.active and r.timeout_duration() == 20
    assert not r.waiting  # alone in view 1: it waits for others instead of running ahead
    r.on_timeout()
    assert r.view == 1
    r.view_changes[1].update({2: r.view_changes[1][1], 3: r.view_changes[1][1]})
    assert r.waiting
    r.on_timeout()  # q view-changes for view 1 and still no NEW-VIEW: on to view 2
    assert r.view == 2 and r.timeout_duration() == 40


def _prepared_then_view_change(w: World) -> list[Signed]:
    """Everyone prepares seq 1 in view 0 (commits are lost); r1..r3 time out."""
    _, pp = _pre_prepare(w)
    prepares = [w.sent(w.replicas[j].on_message(pp), Prepare)[0] for j in (1, 2, 3)]
    for p in prepares:
        for j in (1, 2, 3):
            if p.sender != replica_name(j):
                w.replicas[j].on_message(p)
    assert all((0, 1, body(pp, PrePrepare).digest) in w.replicas[j].prepared_log for j in (1, 2, 3))
    return [w.sent(w.replicas[j].on_timeout(), ViewChange)[0] for j in (1, 2, 3)]


def test_new_view_verification_rejects_a_primary_ignoring_a_prepared_certificate() -> None:
    w = World()
    vcs = _prepared_then_view_change(w)
    assert all(len(body(vc, ViewChange).prepared) == 1 for vc in vcs)
    new_primary = w.signers["r1"]  # primary of view 1
    forged_o = (new_primary.sign(PrePrepare(1, 1, NULL_DIGEST, None, 1)),)
    bad = new_primary.sign(NewView(1, tuple(vcs), forged_o, 1))
    r2 = w.replicas[2]
    r2.on_message(bad)
    assert r2.rejected["bad_new_view"] == 1 and not r2.active
    empty = new_primary.sign(NewView(1, tuple(vcs), (), 1))
    r2.on_message(empty)
    assert r2.rejected["bad_new_view"] == 2 and not r2.active
    # the honest new primary, given the view changes, re-proposes the certified request
    r1 = w.replicas[1]
    out = Output()
    for vc in vcs[1:]:
        out.extend(r1.on_message(vc))
    (nv,) = w.sent(out, NewView)
    (o1,) = body(nv, NewView).pre_prepares
    assert body(o1, PrePrepare).digest != NULL_DIGEST and body(o1, PrePrepare).seq == 1
    r2.on_message(nv)
    assert r2.active and r2.view == 1


def test_view_change_carries_prepared_requests_to_execution() -> None:
    w = World()
    vcs = _prepared_then_view_change(w)
    queue = [(int(vc.sender[1:]), vc) for vc in vcs]
    while queue:
        src, m = queue.pop(0)
        for j in (1, 2, 3):
            if j != src:
                out = w.replicas[j].on_message(m)
                queue += [(j, s.payload) for s in out.sends if s.dest == BROADCAST]  # type: ignore[misc]
    assert all(w.replicas[j].view == 1 and w.replicas[j].last_exec == 1 for j in (1, 2, 3))


# --- authentication: refused and counted -------------------------------------------------


def test_rejections_are_counted_by_reason() -> None:
    w = World()
    _, pp = _pre_prepare(w)
    r1 = w.replicas[1]
    d = body(pp, PrePrepare).digest
    r1.on_message(pp)
    r1.on_message(pp)
    assert r1.rejected["replayed"] == 1
    # forged: r3 signs a prepare claiming to be r2, or signs with a key that is not its own
    fake = w.signers["r3"].sign(Prepare(0, 1, d, 2))
    r1.on_message(fake)
    r1.on_message(Signed(fake.message, "r2", fake.signature))
    outsider = Signer("r2", derive_key(99, "r2")).sign(Prepare(0, 1, d, 2))
    r1.on_message(outsider)
    assert r1.rejected["forged"] == 3
    # tampered: the digest is not the request's
    bad = w.signers["r0"].sign(PrePrepare(0, 2, NULL_DIGEST, w.request(), 0))
    r1.on_message(bad)
    assert r1.rejected["tampered"] == 1
    # not the primary
    r1.on_message(w.signers["r2"].sign(PrePrepare(0, 3, NULL_DIGEST, None, 2)))
    assert r1.rejected["not_primary"] == 1
    # out of window
    r1.on_message(w.signers["r2"].sign(Prepare(0, 40, d, 2)))
    assert r1.rejected["out_of_window"] == 1
    # malformed bytes and non-messages
    r1.on_message(b"\x00garbage")
    r1.on_message(42)
    assert r1.rejected["malformed"] == 2
    # stale view: after moving to view 1, view-0 messages are refused
    r1.on_timeout()
    r1.on_message(w.signers["r2"].sign(Prepare(0, 1, d, 2)))
    assert r1.rejected["stale_view"] == 1
    # a request in a replica's name is not a client's
    r1.on_message(w.signers["r3"].sign(Request("r3", 1, {"op": "x"})))
    assert r1.rejected["forged"] == 4
    assert r1.last_exec == 0


def test_byzantine_garbage_is_refused_and_cannot_forge() -> None:
    sim = Simulation(4, 1, seed=2, byzantine={3: Garbage()}, clients=1)
    for k in range(5):
        sim.submit("c0", {"op": "x", "k": k})
    sim.run(until=sim.all_executed)
    assert sim.all_executed()
    rejected = sum(
        (sim.replicas[i].rejected for i in sim.honest), start=type(sim.replicas[0].rejected)()
    )
    assert rejected["forged"] > 0 and rejected["malformed"] > 0
    sent = sim.sent_requests()
    for i in sim.honest:
        assert all(request_digest(r) in sent for r in sim.replicas[i].history if r is not None)


# --- client ------------------------------------------------------------------------------


def test_client_accepts_f_plus_1_matching_replies() -> None:
    ring, signers = make_keys(1, ["r0", "r1", "r2", "r3", "c0"])
    c = Client("c0", signers["c0"], ring, 4, 1)
    out = c.request({"op": "x"})
    assert [s.dest for s in out.sends] == ["r0"]
    assert [s.dest for s in c.on_timeout().sends] == [BROADCAST]

    def reply(i: int, result: dict[str, object], ts: int = 1) -> Signed:
        return signers[f"r{i}"].sign(Reply(0, ts, "c0", i, result))

    c.on_reply(reply(0, {"v": 1}))
    c.on_reply(reply(0, {"v": 1}))
    assert c.busy and c.rejected["replayed"] == 1
    c.on_reply(reply(1, {"v": 2}))  # does not match
    c.on_reply(Signed(reply(2, {"v": 1}).message, "r3", reply(2, {"v": 1}).signature))
    assert c.busy and c.rejected["forged"] == 1
    c.on_reply(reply(2, {"v": 1}, ts=9))
    assert c.busy and c.rejected["stale"] == 1
    c.on_reply(reply(3, {"v": 1}))
    assert not c.busy and c.results == [(1, {"v": 1})]


# --- the replicated orchestrator and determinism -----------------------------------------

COMMANDS = [
    {"op": "propose", "agent": "d1", "artifact": "x0", "slot": "s0", "digest": "d0"},
    {"op": "tick"},
    {"op": "object", "agent": "a1", "artifact": "x0"},
    {"op": "propose", "agent": "a1", "artifact": "x1", "slot": "s1", "digest": "d1"},
    {"op": "tick"},
    {"op": "tick"},
    {"op": "nonsense"},
    {"op": "tick"},
]


@pytest.mark.parametrize("byzantine", [None, {0: EquivocatingPrimary()}, {2: Silent()}])
def test_replicated_orchestrator_repl1(byzantine: dict[int, object] | None) -> None:
    ro = ReplicatedOrchestrator(
        4,
        1,
        seed=11,
        params=PARAMS,
        agents=AGENTS,
        byzantine=byzantine,
        faults=Faults(drop=0.05, duplicate=0.05, max_delay=5),
        clients=1,
    )
    for cmd in COMMANDS:
        ro.submit("c0", cmd)
    ro.sim.run(200_000, until=ro.sim.all_executed)
    assert ro.sim.run_fair() is not None
    ro.check_repl1()
    states = list(ro.states().values())
    assert all(s == states[0] for s in states)
    assert states[0] == reference_state(COMMANDS, PARAMS, AGENTS)
    results = [r for _, r in ro.sim.results("c0")]
    assert [r["result"] for r in results][-2:] == ["invalid_input", "ok"]


def test_runs_are_reproducible_from_the_seed() -> None:
    def run() -> tuple[object, ...]:
        sim = Simulation(
            4, 1, seed=9, byzantine={1: Garbage()}, faults=Faults(drop=0.1, max_delay=3)
        )
        for k in range(5):
            sim.submit("c0", {"k": k})
        sim.run(50_000, until=sim.all_executed)
        return (dict(sim.network.stats), sim.replicas[0].executed_log, sim.network.now)

    assert run() == run()


def _view_0_commits(w: World, r: Replica, digest: str) -> None:
    """r0, r1 and r2 (a quorum) each deliver their view-0 COMMIT of number 1 to ``r``."""
    for j in (0, 1, 2):
        r.on_message(w.signers[f"r{j}"].sign(Commit(0, 1, digest, j)))


def test_a_replica_that_left_the_view_still_executes_a_committed_request() -> None:
    """q signed commits of a view it has left decide the sequence number for it too."""
    w = World()
    _, pp = _pre_prepare(w)
    d = body(pp, PrePrepare).digest
    r3 = w.replicas[3]
    r3.on_message(pp)
    r3.on_timeout()  # r3 leaves view 0 alone
    assert r3.view == 1 and not r3.active
    _view_0_commits(w, r3, d)
    assert r3.last_exec == 1 and r3.executed_log == [(1, d)]


# --- rules that code mutation showed no test pinned down ---------------------------------


def test_a_left_view_commit_outside_the_window_or_executed_is_refused_unstored() -> None:
    """BFT-SAFE-1 and bounded memory: a replica that left view 0 still learns decisions
    from view 0's commits, but only for sequence numbers it has not executed and that lie
    inside its window.  Anything else is refused ``stale_view`` and *not stored*, so a
    Byzantine replica cannot fill the commit table with an old view's commits for far-away
    sequence numbers, nor reopen an executed one."""
    w = World()
    _, pp = _pre_prepare(w)
    _commit_everywhere(w, [pp])
    r1 = w.replicas[1]
    assert r1.last_exec == 1
    r1.on_message(w.request())  # a pending request starts r1's timer
    r1.on_timeout()  # r1 leaves view 0: its commits are now late
    assert r1._late(0)
    far = r1.stable_seq + r1.window + 1
    digest = body(pp, PrePrepare).digest
    before = r1.rejected["stale_view"]
    for seq in (far, far + 100):
        r1.on_message(w.signers["r3"].sign(Commit(0, seq, digest, 3)))
        assert not any(key[1] == seq for key in r1.commits)
    executed = w.signers["r2"].sign(Commit(0, 1, "ab" * 32, 2))  # seq 1 is executed
    r1.on_message(executed)
    assert r1.rejected["stale_view"] == before + 3
    assert (0, 1, "ab" * 32) not in r1.commits


def test_executing_one_clients_request_keeps_the_other_clients_pending() -> None:
    """BFT-LIVE-1: executing client c0's request drops only c0's pending requests it
    answers; c1's request, pending at the same replica with a lower timestamp, stays
    pending (its timer keeps running until it is executed, so it is never forgotten)."""
    w = World()
    r1 = w.replicas[1]
    early = w.request("from-c1", client="c1")  # timestamp 1
    r1.on_message(early)
    assert request_digest(early) in r1.pending
    _, pp = _pre_prepare(w)  # c0's request, timestamp 2, ordered and executed everywhere
    _commit_everywhere(w, [pp])
    assert r1.last_exec == 1 and r1.last_ts["c0"] == 2
    assert request_digest(early) in r1.pending and r1.pending_per_client["c1"] == 1
    assert r1.waiting  # still waiting for c1's request


def test_a_request_overtaken_by_a_later_one_of_its_client_is_refused_for_good() -> None:
    """BFT-LIVE-1's `Due` (spec/PBFTReplicaSystem.tla: Overtaken): a client's timestamps
    order its requests, so once a later request of the client has executed, an earlier one
    that arrives after it is refused as old, and its reply never comes, however often it
    is sent. Only a client with two requests in flight can meet this (the spec's client,
    on a link that drops or reorders); ostrom.consensus.Client has one at a time."""
    w = World()
    early, late = w.request("first"), w.request("second")  # timestamps 1 and 2
    _pump(w, [(4, Output(sends=[Send(BROADCAST, late)]))])  # the later one arrives first
    for r in w.replicas:
        assert r.last_exec == 1 and r.last_ts["c0"] == 2 and not r.pending
    for _ in range(2):  # the client sends the earlier one again: refused every time
        for r in w.replicas:
            out = r.on_message(early)
            assert not out.sends and request_digest(early) not in r.pending
            assert r.rejected["replayed"] >= 1 and r.last_ts["c0"] == 2
    assert all(early not in r.history for r in w.replicas)
    ring, signers = make_keys(1, ["r0", "r1", "r2", "r3", "c0"])
    client = Client("c0", signers["c0"], ring, 4, 1)
    client.request({"op": "first"})
    with pytest.raises(RuntimeError, match="outstanding"):
        client.request({"op": "second"})


def test_a_late_view_change_is_answered_with_the_installed_new_view() -> None:
    """BFT-LIVE-1: a replica still asking for view 1 after the others installed it (its
    NEW-VIEW was lost) gets the NEW-VIEW from a replica that has it, once per sender; a
    replica's own VIEW-CHANGE coming back to it is not answered."""
    w = World()
    vcs = _prepared_then_view_change(w)
    r1 = w.replicas[1]  # primary of view 1
    out = Output()
    for vc in vcs[1:]:
        out.extend(r1.on_message(vc))
    (nv,) = w.sent(out, NewView)
    assert r1.active and r1.view == 1
    late = w.signers["r0"].sign(ViewChange(1, 0, (), (), 0))  # r0 missed the NEW-VIEW
    answer = r1.on_message(late)
    assert [(s.dest, s.payload) for s in answer.sends] == [("r0", nv)]
    assert not r1.on_message(late).sends  # answered once per sender
    own = r1.on_message(vcs[0])  # r1's own VIEW-CHANGE, relayed back
    assert not [s for s in own.sends if s.dest == "r1"]


def test_executed_reports_the_applications_answer_as_the_reply_does() -> None:
    """The sans-IO contract of ``Output.executed``: each executed request comes with the
    application's result, the same one this replica's REPLY carries to the client (a
    driver that answers from ``executed`` must not answer ``None``)."""
    w = World()
    _, pp = _pre_prepare(w)
    outs = _commit_everywhere(w, [pp])
    done = [(o, e) for o in outs for e in o.executed]
    assert len(done) == 4  # every replica executed seq 1
    for out, executed in done:
        (reply,) = [s.payload for s in out.sends if s.dest == "c0"]
        assert isinstance(reply, Signed)
        assert executed.result is not None and executed.result == body(reply, Reply).result


def test_a_view_changes_checkpoint_proof_moves_the_low_watermark() -> None:
    """A replica behind the others learns their stable checkpoint from a VIEW-CHANGE: its
    proof (q signed CHECKPOINTs for one sequence number and digest) moves the low watermark
    to that sequence number, with that digest and that proof (garbage collection and the
    window follow it; state transfer fetches what it has not executed)."""
    w = World()
    r3 = w.replicas[3]
    k = r3.checkpoint_k
    digest = "cd" * 32
    proof = tuple(w.signers[f"r{i}"].sign(Checkpoint(k, digest, i)) for i in (0, 1, 2))
    r3.on_message(w.signers["r1"].sign(ViewChange(1, k, proof, (), 1)))
    assert (r3.stable_seq, r3.stable_digest) == (k, digest)
    assert r3.stable_proof == tuple(sorted(proof, key=lambda s: s.sender))


def test_o_keeps_every_prepared_request_above_the_highest_stable_checkpoint() -> None:
    """PBFT §4.4 (BFT-SAFE-1 across views): O re-proposes, for every sequence number above
    the highest stable checkpoint in V, the request of its highest-view prepared
    certificate.  A VIEW-CHANGE from a replica with an older checkpoint also carries
    certificates at or below that number; they are skipped, and its later certificates
    still count: a request prepared at seq 5 must not become a null request because the
    same VIEW-CHANGE also held one for seq 2."""
    w = World()
    r1 = w.replicas[1]
    low_req, high_req = w.request("low"), w.request("high")
    pp_low = w.signers["r0"].sign(PrePrepare(0, 2, request_digest(low_req), low_req, 0))
    pp_high = w.signers["r0"].sign(PrePrepare(0, 5, request_digest(high_req), high_req, 0))
    behind = ViewChange(1, 0, (), (PreparedCert(pp_low, ()), PreparedCert(pp_high, ())), 2)
    ahead = ViewChange(1, 3, (), (), 3)
    o = r1.compute_o([ahead, behind], 1)
    assert [(pp.seq, pp.digest, pp.request) for pp in o] == [
        (4, NULL_DIGEST, None),
        (5, request_digest(high_req), high_req),
    ]
    assert all(pp.view == 1 and pp.replica == r1.primary(1) for pp in o)


def test_a_restart_whose_history_does_not_reproduce_its_checkpoint_is_refused() -> None:
    """REPL-1 across a restart: ``restore_durable`` executes the history again and compares
    each checkpoint this replica signed with what the execution gives; a durable state
    whose recorded checkpoint the history does not reproduce is a ``ReplayMismatch``
    (the replica is discarded), never a replica running on another state."""
    sim = Simulation(4, 1, seed=3, checkpoint_k=2, watermark_window=4)
    for k in range(2):
        sim.submit("c0", {"op": "x", "k": k})
    sim.run(until=sim.all_executed)
    r1 = sim.replicas[1]
    state = r1.durable_state()
    assert r1.stable_seq == 2 and 2 in state.own_checkpoints
    intact = sim._new_replica(1)
    intact.restore_durable(state)  # the true record restores
    assert intact.durable_state() == state
    forged = dataclasses.replace(
        state, own_checkpoints={**state.own_checkpoints, 2: ("00" * 32, "11" * 32)}
    )
    with pytest.raises(ReplayMismatch, match="does not reproduce its checkpoint at 2"):
        sim._new_replica(1).restore_durable(forged)


def test_a_view_change_for_a_later_view_keeps_the_senders_vote_for_this_one() -> None:
    """BFT-LIVE-1: one VIEW-CHANGE per sender is held only for views *above* this
    replica's (the sender's highest).  r1, the primary of view 1, is collecting VIEW-CHANGEs
    for view 1; r2's VIEW-CHANGE for view 2 must not "supersede" r2's vote for view 1, or
    r1 never reaches the q votes its NEW-VIEW needs."""
    w = World()
    req = w.request()
    vcs = {}
    for j in (1, 2, 3):
        w.replicas[j].on_message(req)
        vcs[j] = w.sent(w.replicas[j].on_timeout(), ViewChange)[0]
    r1 = w.replicas[1]
    assert r1.view == 1 and not r1.active and r1.primary(1) == 1
    r1.on_message(vcs[2])
    before = r1.rejected["superseded"]
    r1.on_message(w.signers["r2"].sign(ViewChange(2, 0, (), (), 2)))
    assert r1.rejected["superseded"] == before and set(r1.view_changes[1]) == {1, 2}
    out = r1.on_message(vcs[3])
    (nv,) = w.sent(out, NewView)
    assert body(nv, NewView).view == 1 and r1.active


def test_a_replica_refuses_too_few_replicas_and_an_id_outside_the_group() -> None:
    """BFT-QUORUM-1 needs n ≥ 3f + 1: n = 3f is refused, and so is an id outside 0..n-1."""
    ring, signers = make_keys(7, [replica_name(i) for i in range(4)])
    with pytest.raises(ValueError, match=r"^n=3 < 3f\+1 with f=1$"):
        Replica(0, 3, 1, ring, signers["r0"])
    with pytest.raises(ValueError, match=r"^replica id 4 not in 0\.\.3$"):
        Replica(4, 4, 1, ring, signers["r0"])
    with pytest.raises(ValueError, match=r"^a replica signs only as itself$"):
        Replica(1, 4, 1, ring, signers["r0"])
    assert Replica(3, 4, 1, ring, signers["r3"]).q == 3


def test_a_durable_history_must_hold_client_requests_only() -> None:
    """BFT-SAFE-2 across a restart: an executed entry that is not a client's signed request
    is refused before anything changes, and the message names its position."""
    sim = Simulation(4, 1, seed=3)
    sim.submit("c0", {"op": "x"})
    sim.run(until=sim.all_executed)
    state = sim.replicas[1].durable_state()
    (entry,) = state.history
    assert entry is not None
    unsigned = dataclasses.replace(entry, signature=bytes(64))
    forged = dataclasses.replace(state, history=(unsigned,))
    with pytest.raises(InvalidDurableState, match="executed request 1 is not a client's"):
        sim._new_replica(1).restore_durable(forged)


def test_a_durable_new_view_must_be_a_primarys_new_view() -> None:
    """A restart from a state whose NEW-VIEW is some other signed message (here one of the
    client requests it executed) is refused before anything changes, and says why."""
    sim = Simulation(4, 1, seed=3)
    sim.submit("c0", {"op": "x"})
    sim.run(until=sim.all_executed)
    state = sim.replicas[1].durable_state()
    (entry,) = state.history
    assert entry is not None and state.new_view_msg is None
    forged = dataclasses.replace(state, new_view_msg=entry)
    with pytest.raises(InvalidDurableState, match="its NEW-VIEW is not a primary's, or of a la"):
        sim._new_replica(1).restore_durable(forged)


def test_the_counter_apps_digest_chains_the_operations() -> None:
    """The test application's digest (what checkpoints sign) depends on every operation
    in order, not only on how many ran: two logs of one length differ."""
    a, b = CounterApp(), CounterApp()
    assert a.execute({"op": "x"}) == {"n": 1} and b.execute({"op": "y"}) == {"n": 1}
    assert a.digest() != b.digest()


def test_a_pre_prepare_of_a_request_no_client_signed_is_refused() -> None:
    """BFT-SAFE-2 (every committed request was sent by a client): a primary cannot order a
    request whose client signature does not verify, even with the right digest."""
    w = World()
    req = w.request()
    forged = dataclasses.replace(req, signature=bytes(64))
    pp = w.signers["r0"].sign(PrePrepare(0, 1, request_digest(forged), forged, 0))
    r1 = w.replicas[1]
    out = r1.on_message(pp)
    assert r1.rejected["forged"] == 1 and not w.sent(out, Prepare)
    assert not r1.pre_prepares


def test_a_view_change_with_two_certificates_for_one_number_is_refused() -> None:
    """A VIEW-CHANGE holds one prepared certificate per sequence number (PBFT §4.4: P);
    two for one number, even two copies of a valid one, make it invalid."""
    w = World()
    vcs = _prepared_then_view_change(w)
    vc = body(vcs[1], ViewChange)
    assert len(vc.prepared) == 1
    doubled = w.signers["r2"].sign(dataclasses.replace(vc, prepared=vc.prepared * 2))
    r3 = w.replicas[3]
    before = r3.rejected["bad_view_change"]
    r3.on_message(doubled)
    assert r3.rejected["bad_view_change"] == before + 1
    r3.on_message(vcs[1])  # the genuine one is taken
    assert 2 in r3.view_changes[1]


def _bad_certificate(w: World, cert: PreparedCert, flaw: str) -> PreparedCert:
    """``cert`` (r2's true certificate for number 1 of view 0) with one flaw."""
    pp, prepares = cert.pre_prepare, cert.prepares
    if flaw == "pre-prepare-forged":  # the primary's signature does not verify
        return dataclasses.replace(cert, pre_prepare=dataclasses.replace(pp, signature=bytes(64)))
    if flaw == "pre-prepare-is-a-prepare":  # an authentic message, but not a PRE-PREPARE
        return dataclasses.replace(cert, pre_prepare=prepares[0])
    assert flaw == "primary-votes"  # the primary's own PREPARE counted among the 2f
    d = body(pp, PrePrepare).digest
    primary = w.signers["r0"].sign(Prepare(0, 1, d, 0))
    return dataclasses.replace(cert, prepares=(prepares[0], primary))


@pytest.mark.parametrize(
    "flaw", ["pre-prepare-forged", "pre-prepare-is-a-prepare", "primary-votes"]
)
def test_a_view_change_with_a_bad_prepared_certificate_is_refused(flaw: str) -> None:
    """BFT-SAFE-2 across views: a prepared certificate is the primary's authentic
    PRE-PREPARE and 2f PREPAREs of backups (the primary's own PREPARE does not count).
    A VIEW-CHANGE whose one certificate breaks that is refused ``bad_view_change``, and no
    replica crashes on a certificate whose PRE-PREPARE is another kind of message (seen by
    code mutation: ``or`` as ``and`` in either check)."""
    w = World()
    vcs = _prepared_then_view_change(w)
    vc = body(vcs[1], ViewChange)
    (cert,) = vc.prepared
    assert len(cert.prepares) == 2 and body(vcs[1], ViewChange).replica == 2
    flawed = dataclasses.replace(vc, prepared=(_bad_certificate(w, cert, flaw),))
    r3 = w.replicas[3]
    before = r3.rejected["bad_view_change"]
    r3.on_message(w.signers["r2"].sign(flawed))
    assert r3.rejected["bad_view_change"] == before + 1
    assert 2 not in r3.view_changes.get(1, {})
    r3.on_message(vcs[1])  # the genuine one is taken
    assert 2 in r3.view_changes[1]


def test_a_view_change_at_stable_number_0_carries_no_checkpoint_proof() -> None:
    """Number 0 is stable by definition (no proof exists for it): a VIEW-CHANGE that says
    0 and still carries CHECKPOINTs is malformed and refused ``bad_view_change``, whatever
    else it holds, even an otherwise valid proof of a later number."""
    w = World(checkpoint_k=1)
    _, pp = _pre_prepare(w)
    _commit_everywhere(w, [pp])
    r3 = w.replicas[3]
    proof = r3.stable_proof
    assert r3.stable_seq == 1 and len(proof) >= 3
    lying = w.signers["r2"].sign(ViewChange(1, 0, proof, (), 2))
    r3.on_message(lying)
    assert r3.rejected["bad_view_change"] == 1 and 2 not in r3.view_changes.get(1, {})


def test_a_second_checkpoint_vote_counts_only_when_it_completes_a_certificate() -> None:
    """BFT-LIVE-1 against a lie that arrives first: r0 signs two digests for number 1. Its
    first CHECKPOINT is kept; the same one again is ``replayed``; its second is refused
    ``conflicting`` while fewer than q-1 others match it, and replaces the first once
    q-1 do (q signatures then prove the checkpoint, whatever r0 also signed), which makes
    the checkpoint stable."""
    w = World(checkpoint_k=1)
    r3 = w.replicas[3]
    lie, true = "aa" * 32, "bb" * 32

    def vote(i: int, digest: str) -> None:
        r3.on_message(w.signers[f"r{i}"].sign(Checkpoint(1, digest, i)))

    vote(0, lie)
    vote(0, lie)
    assert r3.rejected["replayed"] == 1
    vote(1, true)
    vote(0, true)  # one other (r1) matches: 1 + 1 < q = 3
    assert r3.rejected["conflicting"] == 1
    assert body(r3.checkpoints[1][0], Checkpoint).state_digest == lie
    vote(2, true)
    assert r3.stable_seq == 0  # r1 and r2: two of three
    vote(0, true)  # two others match: r0's second vote completes the certificate
    assert r3.rejected["conflicting"] == 1
    assert r3.stable_seq == 1 and r3.stable_digest == true
    assert sorted(s.sender for s in r3.stable_proof) == ["r0", "r1", "r2"]


def test_a_stable_checkpoint_keeps_the_replicas_own_votes_above_it() -> None:
    """Garbage collection at a stable checkpoint drops what lies at or below it and
    nothing above: the index of the replica's own votes (which refuses a second vote for
    another digest at a (view, seq), BFT-SAFE-1) still holds its prepare for seq 3 after
    the checkpoint at 2 becomes stable."""
    w = World(checkpoint_k=2)
    r1 = w.replicas[1]
    req = w.request()
    pp = w.signers["r0"].sign(PrePrepare(0, 3, request_digest(req), req, 0))
    assert w.sent(r1.on_message(pp), Prepare)
    digest = "cd" * 32
    for i in (0, 2, 3):
        r1.on_message(w.signers[f"r{i}"].sign(Checkpoint(2, digest, i)))
    assert r1.stable_seq == 2
    assert ("prepare", 0, 3, 1) in r1._voted
    assert all(s > 2 for (_, _, s, _) in r1._voted)


def _pump(
    w: World,
    outputs: list[tuple[int, Output]],
    hold: Callable[[int, object], bool] = lambda j, m: False,
) -> list[Signed]:
    """Deliver what the replicas send (``outputs``: who produced each), in order, until
    nothing is left; the messages ``hold(destination, message)`` picks are kept back and
    returned instead.  Sends to clients are dropped."""
    queue: list[tuple[int, Signed]] = []
    held: list[Signed] = []

    def route(src: int, out: Output) -> None:
        for send in out.sends:
            assert isinstance(send.payload, Signed)
            for j in range(len(w.replicas)):
                if j != src and send.dest in (BROADCAST, replica_name(j)):
                    queue.append((j, send.payload))

    for src, out in outputs:
        route(src, out)
    while queue:
        j, m = queue.pop(0)
        if hold(j, m.message):
            held.append(m)
        else:
            route(j, w.replicas[j].on_message(m))
    return held


def test_a_request_stamped_0_ordered_by_a_lying_primary_executes_nothing() -> None:
    """Timestamps are naturals, and a replica executes a client's request only above the
    last timestamp it executed for that client (none yet: 0).  An honest primary refuses
    a request stamped 0 as a replay; a lying one may still order it.  The backups then
    give it its sequence number but do not execute it, and the client's fresh request
    they hold stays pending, to be ordered next: nobody crashes or forgets it."""
    w = World()
    stale = w.signers["c0"].sign(Request("c0", 0, {"op": "x"}))
    fresh = w.request(client="c0")
    outs = [(j, w.replicas[j].on_message(fresh)) for j in (1, 2, 3)]
    pp = w.signers["r0"].sign(PrePrepare(0, 1, request_digest(stale), stale, 0))
    outs += [(j, w.replicas[j].on_message(pp)) for j in (1, 2, 3)]
    _pump(w, outs, hold=lambda j, m: j == 0)  # the primary hears nothing more
    for r in w.replicas[1:]:
        assert r.last_exec == 1 and r.history == [stale], r.id
        assert "c0" not in r.last_ts and list(r.pending) == [request_digest(fresh)], r.id


def test_the_primary_refills_its_window_when_a_checkpoint_becomes_stable() -> None:
    """The primary pre-prepares at most ``window`` numbers above the stable checkpoint;
    a request beyond waits.  When a checkpoint it has executed to becomes stable, the
    window moves and the primary pre-prepares the waiting request in its answer to the
    CHECKPOINT that made it stable — not later, on a client's retransmission — and, being
    up to date, asks nobody for a state transfer."""
    w = World(checkpoint_k=2, watermark_window=2)
    r0 = w.replicas[0]
    outs = [r0.on_message(w.request(client=c)) for c in ("c0", "c1", "c1")]
    assert r0.next_seq == 3 and len(r0.pending) == 3  # seq 1 and 2 pre-prepared; one waits
    # (a client has at most two requests pending: hence two clients)
    held = _pump(
        w, [(0, out) for out in outs], hold=lambda j, m: j == 0 and isinstance(m, Checkpoint)
    )
    assert all(r.last_exec == 2 for r in w.replicas) and r0.stable_seq == 0
    assert r0.next_seq == 3  # still waiting: the window is full
    outs = [r0.on_message(m) for m in held]
    assert r0.stable_seq == 2
    (pp,) = [p for out in outs for p in w.sent(out, PrePrepare)]
    assert body(pp, PrePrepare).seq == 3
    assert not [f for out in outs for f in w.sent(out, FetchState)]


def test_a_state_transfer_drops_what_it_executed_from_the_queue() -> None:
    """A replica that missed sequence numbers 1-3 but committed 4 holds 4 in its queue of
    committed requests waiting for their turn.  Learning the stable checkpoint 2 it asks
    for a state transfer; its peers, stable at 4 by then, send their log up to 4.  After
    executing it the queue holds nothing at or below what it executed (else 4 stays
    there for good: executed, never popped again)."""
    w = World(checkpoint_k=2, watermark_window=4)
    r0, r3 = w.replicas[0], w.replicas[3]
    outs = [(0, r0.on_message(w.request(client=c))) for c in ("c0", "c0", "c1", "c1")]
    held = _pump(w, outs, hold=lambda j, m: j == 3)  # r3 hears nothing yet
    assert [r.stable_seq for r in w.replicas] == [4, 4, 4, 0]

    def about(m: Signed, seq: int) -> bool:
        return getattr(m.message, "seq", None) == seq

    for m in held:
        if about(m, 4) and not isinstance(m.message, Checkpoint):
            r3.on_message(m)  # the PRE-PREPARE, PREPAREs and COMMITs of 4
    assert sorted(r3.to_execute) == [4] and r3.last_exec == 0
    outs = [
        (3, r3.on_message(m)) for m in held if isinstance(m.message, Checkpoint) and about(m, 2)
    ]
    assert r3.stable_seq == 2
    _pump(w, outs, hold=lambda j, m: j != 3 and not isinstance(m, FetchState))
    assert (r3.last_exec, r3.stable_seq) == (4, 4)
    assert all(s > r3.last_exec for s in r3.to_execute), sorted(r3.to_execute)


def test_a_replica_that_left_the_view_executes_a_committed_request_it_holds_as_pending() -> None:
    """The late-commit rule needs the request itself: a replica that left view 0 without
    the PRE-PREPARE but with the client's request (the client sent it to every replica)
    executes it when q commits of view 0 decide its sequence number."""
    w = World()
    req, pp = _pre_prepare(w)
    d = body(pp, PrePrepare).digest
    r3 = w.replicas[3]
    r3.on_message(req)  # the PRE-PREPARE to r3 is lost
    r3.on_timeout()
    assert r3.view == 1 and not r3.active and (0, 1) not in r3.pre_prepares
    _view_0_commits(w, r3, d)
    assert r3.executed_log == [(1, d)] and r3.app.digest() != CounterApp().digest()
    before = r3.rejected["stale_view"]
    r3.on_message(pp)  # the PRE-PREPARE comes late, after the number was executed
    assert r3.rejected["stale_view"] == before + 1
    assert (0, 1) not in r3.pre_prepares  # not kept: the number is done


def test_a_replica_that_left_the_view_executes_the_request_its_pre_prepare_carried() -> None:
    """...and when it did not keep the request as pending (its client already had a
    window's worth pending there), the request comes from the PRE-PREPARE it accepted."""
    w = World(watermark_window=2)
    r3 = w.replicas[3]
    for _ in range(2):  # c0's window at r3 filled with requests the primary never saw
        r3.on_message(w.request())
    req, pp = _pre_prepare(w)
    d = body(pp, PrePrepare).digest
    before = r3.rejected["rate_limited"]
    r3.on_message(pp)
    assert r3.rejected["rate_limited"] == before + 1 and d not in r3.pending
    r3.on_timeout()
    assert r3.view == 1 and not r3.active
    _view_0_commits(w, r3, d)
    assert r3.executed_log == [(1, d)]
    assert r3.history == [req]


def test_a_late_pre_prepare_hands_its_request_to_the_next_view() -> None:
    """BFT-LIVE-1: a request the client sent to the primary alone reaches the backups
    only in its PRE-PREPARE.  When that comes late, to a replica already changing to the
    next view, the request is kept as pending there, so that it is not lost with the
    abandoned view: the next view's primary orders it as soon as it enters the view (a
    backup relays its pending requests to that primary, and its timer runs for them)."""
    w = World()
    req, pp = _pre_prepare(w)  # r0 orders c0's request; its PRE-PREPARE is delayed
    d = body(pp, PrePrepare).digest
    ignored = w.request("y", client="c1")  # r0 never orders c1's: the backups time out
    r1 = w.replicas[1]  # the primary of view 1
    vcs = []
    for j in (1, 2, 3):
        w.replicas[j].on_message(ignored)
        vcs += w.sent(w.replicas[j].on_timeout(), ViewChange)
    assert r1.view == 1 and not r1.active and d not in r1.pending
    before = r1.rejected["stale_view"]
    r1.on_message(pp)
    assert r1.rejected["stale_view"] == before + 1 and d in r1.pending
    outs = [r1.on_message(vc) for vc in vcs[1:]]
    assert r1.active
    ordered = {
        (m.view, m.digest): m.request
        for out in outs
        for m in (body(s, PrePrepare) for s in w.sent(out, PrePrepare))
    }
    assert ordered == {(1, d): req, (1, request_digest(ignored)): ignored}


def test_a_restart_sends_nothing_by_itself() -> None:
    """``restore_durable`` executes the history again to rebuild the application and the
    last replies, but it sends nothing: the replies went out before the crash, and the
    restarted replica's first step answers only what it is given."""
    sim = Simulation(4, 1, seed=3)
    for k in range(2):
        sim.submit("c0", {"op": "x", "k": k})
    sim.run(until=sim.all_executed)
    state = sim.replicas[1].durable_state()
    assert len(state.history) == 2
    restarted = sim._new_replica(1)
    restarted.restore_durable(state)
    out = restarted.on_timeout()
    assert not [s for s in out.sends if isinstance(s.payload, Signed)
                and isinstance(s.payload.message, Reply)]  # fmt: skip


def test_the_counter_app_records_each_operation_in_order() -> None:
    """The protocol tests' application keeps what it applied, in order, and answers with
    the count."""
    app = CounterApp()
    assert app.execute({"op": "a"}) == {"n": 1}
    assert app.execute({"op": "b"}) == {"n": 2}
    assert app.applied == [{"op": "a"}, {"op": "b"}]


def test_a_durable_state_naming_a_reply_never_sent_is_refused() -> None:
    """``reply_views`` records the view each client's last reply was signed in; one for a
    client the history never answered is an ``InvalidDurableState`` naming the client,
    not a crash and not a replica inventing a reply."""
    sim = Simulation(4, 1, seed=3)
    sim.submit("c0", {"op": "x"})
    sim.run(until=sim.all_executed)
    state = sim.replicas[1].durable_state()
    forged = dataclasses.replace(state, reply_views={**state.reply_views, "c9": 0})
    with pytest.raises(InvalidDurableState, match=r"^replica 1: a reply to c9 never sent$"):
        sim._new_replica(1).restore_durable(forged)


def _executed_state(**sim: Any) -> tuple[Simulation, Any]:
    """A simulation whose two requests every replica executed, and replica 1's state."""
    s = Simulation(4, 1, seed=3, **sim)
    for k in range(2):
        s.submit("c0", {"op": "x", "k": k})
    s.run(until=s.all_executed)
    return s, s.replicas[1].durable_state()


@pytest.mark.parametrize(
    "used",
    [
        lambda r, w: setattr(r, "history", [None]),
        lambda r, w: setattr(r, "view", 1),
        lambda r, w: setattr(r, "stable_seq", 2),
        lambda r, w: r.on_message(_pre_prepare(w)[1]),
        lambda r, w: r.view_changes.setdefault(1, {}),
    ],
    ids=["history", "view", "stable_seq", "pre_prepares", "view_changes"],
)
def test_restore_needs_a_fresh_replica(used: Callable[[Replica, World], Any]) -> None:
    """``restore_durable`` rebuilds a freshly constructed replica only: any one trace of
    use (an execution, a view, a checkpoint, a PRE-PREPARE, a VIEW-CHANGE) refuses it,
    whatever the state offered."""
    w = World()
    r = w.replicas[1]
    state = r.durable_state()
    used(r, w)
    with pytest.raises(InvalidDurableState, match=r"^restore_durable needs a freshly constructed"):
        r.restore_durable(state)


class _Long(tuple):  # type: ignore[type-arg]
    """A history that claims a length no store could hold (hostile input)."""

    claimed = 0

    def __len__(self) -> int:
        return self.claimed


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        ({"view": -1}, True),
        ({"next_seq": 2}, True),  # at stable_seq 2 the next number is at least 3
        ({"history": 2**62 + 1}, True),
        ({"history": 2**62}, False),  # the bound itself is in range
    ],
    ids=["negative-view", "next-seq-not-above-stable", "history-too-long", "history-at-bound"],
)
def test_durable_counters_out_of_range_are_refused(change: dict[str, int], refused: bool) -> None:
    """A durable state's counters are checked first, each on its own: a negative view, a
    next sequence number not above the stable checkpoint, a history longer than 2^62."""
    sim, state = _executed_state(checkpoint_k=2, watermark_window=4)
    assert state.stable_seq == 2
    if "history" in change:
        long = _Long(state.history)
        long.claimed = change["history"]
        bad = dataclasses.replace(state, history=long)
    else:
        bad = dataclasses.replace(state, **change)
    try:
        sim._new_replica(1).restore_durable(bad)
        why = ""
    except InvalidDurableState as err:
        why = str(err)
    assert (why == "replica 1: counters out of range") == refused, why


def test_a_durable_request_that_cannot_be_encoded_is_refused() -> None:
    """A history entry whose signature cannot even be checked (its operation has no
    canonical encoding) is not authentic: ``InvalidDurableState``, never the exception
    the encoder raised, nor an execution of it."""
    sim, state = _executed_state()
    req = state.history[0]
    assert isinstance(req, Signed) and isinstance(req.message, Request)
    odd = dataclasses.replace(req, message=dataclasses.replace(req.message, operation={"op": {1}}))
    bad = dataclasses.replace(state, history=(odd, *state.history[1:]))
    with pytest.raises(InvalidDurableState, match=r"executed request 1 is not a client's"):
        sim._new_replica(1).restore_durable(bad)


def test_a_durable_state_that_does_not_restore_to_itself_is_refused() -> None:
    """The last check of ``restore_durable``: the replica rebuilt must give back exactly
    the state it was given.  A state without the reply its history sent (``reply_views``
    missing c0) passes every field's own check but not this one."""
    sim, state = _executed_state()
    bad = dataclasses.replace(state, reply_views={})
    with pytest.raises(
        InvalidDurableState, match=r"^replica 1: the state does not restore exactly$"
    ):
        sim._new_replica(1).restore_durable(bad)


def test_a_stable_checkpoint_at_0_must_be_the_initial_state() -> None:
    """At stable number 0 there is no checkpoint to prove: a durable state there must
    carry no proof and the initial digests, each refused on its own."""
    w = World()
    fresh = w.replicas[1].durable_state()
    assert fresh.stable_seq == 0
    _, pp = _pre_prepare(w)
    for bad in (
        dataclasses.replace(fresh, stable_proof=(pp,)),
        dataclasses.replace(fresh, stable_digest="00" * 32),
        dataclasses.replace(fresh, stable_app_digest="00" * 32),
    ):
        with pytest.raises(
            InvalidDurableState,
            match=r"^replica 1: a stable checkpoint at 0 that is not the initial state$",
        ):
            World().replicas[1].restore_durable(bad)


def _view_1_state() -> tuple[Simulation, Any]:
    """Replica 1 as the primary of view 1 (replica 0 crashed at once): its durable state
    holds a NEW-VIEW of three VIEW-CHANGEs, a stable checkpoint at 2 with its proof, three
    executions, a PRE-PREPARE it sent and its COMMIT."""
    sim = Simulation(4, 1, seed=3, checkpoint_k=2, watermark_window=4)
    sim.crash(0)
    for k in range(3):
        sim.submit("c0", {"op": "x", "k": k})
    sim.run(200_000)
    state = sim.replicas[1].durable_state()
    assert (state.view, state.active, state.stable_seq, len(state.history)) == (1, True, 2, 3)
    assert state.new_view_msg is not None
    return sim, state


def _forged(sim: Simulation, signer: int, message: Any) -> Signed:
    return sim.replicas[signer].signer.sign(message)


def _unsigned(s: Signed) -> Signed:
    return dataclasses.replace(s, signature=bytes(len(s.signature)))


def _with_new_view(sim: Simulation, state: Any, **change: Any) -> Any:
    nv = state.new_view_msg.message
    return dataclasses.replace(
        state, new_view_msg=_forged(sim, 1, dataclasses.replace(nv, **change))
    )


_r = dataclasses.replace  # the forgeries below are one-line edits of a true state

_DURABLE_FORGERIES: list[tuple[str, Callable[[Simulation, Any], Any], str]] = [
    ("no-stable-proof", lambda sim, st: _r(st, stable_proof=()),
     "stable checkpoint 2 without a valid proof"),
    ("new-view-of-view-0", lambda sim, st: _r(
        st, new_view_msg=_forged(sim, 0, NewView(0, (), (), 0))),
     "its NEW-VIEW is not a primary's, or of a later view"),
    ("new-view-of-a-later-view", lambda sim, st: _r(
        st, new_view_msg=_forged(sim, 2, NewView(2, (), (), 2))),
     "its NEW-VIEW is not a primary's, or of a later view"),
    ("new-view-of-a-backup", lambda sim, st: _r(
        st, new_view_msg=_forged(sim, 2, _r(st.new_view_msg.message, replica=2))),
     "its NEW-VIEW is not a primary's, or of a later view"),
    ("new-view-unsigned", lambda sim, st: _r(
        st, new_view_msg=_unsigned(st.new_view_msg)),
     "its NEW-VIEW is not a primary's, or of a later view"),
    ("new-view-carrying-an-unsigned-view-change", lambda sim, st: _with_new_view(
        sim, st, view_changes=(_unsigned(st.new_view_msg.message.view_changes[0]),
                               *st.new_view_msg.message.view_changes[1:])),
     "its NEW-VIEW is not a primary's, or of a later view"),
    ("new-view-carrying-a-pre-prepare-as-view-change", lambda sim, st: _with_new_view(
        sim, st, view_changes=(_forged(sim, 1, PrePrepare(1, 3, NULL_DIGEST, None, 1)),)),
     "its NEW-VIEW is not a primary's, or of a later view"),
    ("new-view-carrying-an-unsigned-pre-prepare", lambda sim, st: _with_new_view(
        sim, st,
        pre_prepares=(_unsigned(_forged(sim, 1, PrePrepare(1, 3, NULL_DIGEST, None, 1))),)),
     "its NEW-VIEW is not a primary's, or of a later view"),
    ("new-view-carrying-a-view-change-as-pre-prepare", lambda sim, st: _with_new_view(
        sim, st, pre_prepares=st.new_view_msg.message.view_changes[:1]),
     "its NEW-VIEW is not a primary's, or of a later view"),
    ("active-without-its-new-view", lambda sim, st: _r(st, new_view_msg=None),
     "active in view 1 without that view's NEW-VIEW"),
    ("active-with-another-views-new-view", lambda sim, st: _r(
        st, view=2, active=True, next_seq=4),
     "active in view 2 without that view's NEW-VIEW"),
    # its VIEW-CHANGEs: its own, signed, for the view they are kept under, not above its view
    ("view-change-of-another-replica", lambda sim, st: _r(
        st, view_changes={1: _vc(st, "r2")}),
     "the VIEW-CHANGE for view 1 is not its own valid one"),
    ("view-change-unsigned", lambda sim, st: _r(
        st, view_changes={1: _unsigned(_vc(st, "r1"))}),
     "the VIEW-CHANGE for view 1 is not its own valid one"),
    ("view-change-kept-under-another-view", lambda sim, st: _r(
        st, view=2, active=False, view_changes={2: _vc(st, "r1")}),
     "the VIEW-CHANGE for view 2 is not its own valid one"),
    ("view-change-above-its-view", lambda sim, st: _r(
        st, view_changes={2: _forged(sim, 1, _r(_vc(st, "r1").message, new_view=2))}),
     "the VIEW-CHANGE for view 2 is not its own valid one"),
    ("view-change-not-a-view-change", lambda sim, st: _r(
        st, view_changes={1: _pp(st)}),
     "the VIEW-CHANGE for view 1 is not its own valid one"),
    # its PRE-PREPAREs: a valid primary's, kept under its own (view, seq), above the checkpoint
    ("pre-prepare-not-a-pre-prepare", lambda sim, st: _r(
        st, pre_prepares={(1, 3): st.commits[_commit_key(st)]}),
     "the PRE-PREPARE at (1, 3) is not a valid primary's"),
    ("pre-prepare-unsigned", lambda sim, st: _r(
        st, pre_prepares={(1, 3): _unsigned(_pp(st))}),
     "the PRE-PREPARE at (1, 3) is not a valid primary's"),
    ("pre-prepare-under-another-number", lambda sim, st: _r(
        st, pre_prepares={(1, 2): _pp(st)}),
     "the PRE-PREPARE at (1, 2) is not a valid primary's"),
    ("pre-prepare-of-a-backup", lambda sim, st: _r(
        st, pre_prepares={(1, 3): _forged(sim, 2, _r(_pp(st).message, replica=2))}),
     "the PRE-PREPARE at (1, 3) is not a valid primary's"),
    ("pre-prepare-digest-not-its-request", lambda sim, st: _r(
        st, pre_prepares={(1, 3): _forged(sim, 1, _r(_pp(st).message, digest="00" * 32))}),
     "the PRE-PREPARE at (1, 3) is not a valid primary's"),
    ("pre-prepare-of-a-later-view", lambda sim, st: _r(
        st, pre_prepares={(2, 3): _forged(sim, 2, _r(_pp(st).message, view=2, replica=2))}),
     "the PRE-PREPARE at (2, 3) is not a valid primary's"),
    ("pre-prepare-at-the-stable-checkpoint", lambda sim, st: _r(
        st, pre_prepares={(1, 2): _forged(sim, 1, _r(_pp(st).message, seq=2))}),
     "the PRE-PREPARE at (1, 2) is not a valid primary's"),
    ("pre-prepare-neither-sent-nor-prepared", lambda sim, st: _r(
        st, pre_prepares={**st.pre_prepares,
                          (0, 3): _forged(sim, 0, _r(_pp(st).message, view=0, replica=0))}),
     "the PRE-PREPARE at (0, 3) was neither sent nor prepared by it"),
    ("pre-prepare-at-next-seq", lambda sim, st: _r(st, next_seq=3),
     "next_seq 3 is not above its PRE-PREPARE at 3"),
    # its votes: its own, signed, under their own key, not above its view nor at the checkpoint
    ("commit-not-a-commit", lambda sim, st: _r(
        st, commits={_commit_key(st): _forged(sim, 1, Prepare(*_commit_key(st), 1))}),
     "the Commit at (1, 3) is not its own"),
    ("commit-of-another-replica", lambda sim, st: _r(
        st, commits={_commit_key(st): _forged(sim, 2, Commit(*_commit_key(st), 2))}),
     "the Commit at (1, 3) is not its own"),
    ("commit-unsigned", lambda sim, st: _r(
        st, commits={_commit_key(st): _unsigned(st.commits[_commit_key(st)])}),
     "the Commit at (1, 3) is not its own"),
    ("commit-under-another-key", lambda sim, st: _r(
        st, commits={(1, 3, "00" * 32): st.commits[_commit_key(st)]}),
     "the Commit at (1, 3) is not its own"),
    ("prepare-of-a-later-view", lambda sim, st: _r(
        st, prepares={(2, 3, "00" * 32): _forged(sim, 1, Prepare(2, 3, "00" * 32, 1))}),
     "the Prepare at (2, 3) is not its own"),
    ("prepare-at-the-stable-checkpoint", lambda sim, st: _r(
        st, prepares={(1, 2, "00" * 32): _forged(sim, 1, Prepare(1, 2, "00" * 32, 1))}),
     "the Prepare at (1, 2) is not its own"),
    ("sent-commit-without-its-commit", lambda sim, st: _r(
        st, sent_commit={**st.sent_commit, (1, 4): "00" * 32}),
     "sent_commit at (1, 4) without its COMMIT"),
    ("prepared-certificate-under-another-number", lambda sim, st: _r(
        st, prepared_certs={4: st.prepared_certs[3]}),
     "the prepared certificate for 4 is not valid"),
    ("prepared-certificate-not-a-certificate", lambda sim, st: _r(
        st, prepared_certs={3: _pp(st)}),
     "the prepared certificate for 3 is not valid"),
    # checkpoints: within what it executed, its own votes above the stable one
    ("own-checkpoint-beyond-its-history", lambda sim, st: _r(
        st, own_checkpoints={**st.own_checkpoints, 4: st.own_checkpoints[2]}),
     "a checkpoint at 4 outside what it executed"),
    ("own-checkpoint-at-0", lambda sim, st: _r(
        st, own_checkpoints={**st.own_checkpoints, 0: st.own_checkpoints[2]}),
     "a checkpoint at 0 outside what it executed"),
    ("checkpoint-vote-at-the-stable-checkpoint", lambda sim, st: _r(
        st,
        checkpoints={2: _forged(sim, 1, Checkpoint(2, state_digest(*st.own_checkpoints[2]), 1))}),
     "the CHECKPOINT at 2 is not its own"),
    # executions and replies
    ("history-holds-a-vote", lambda sim, st: _r(
        st, history=(st.commits[_commit_key(st)], *st.history[1:])),
     "executed request 1 is not a client's signed request"),
    ("history-holds-an-unsigned-request", lambda sim, st: _r(
        st, history=(*st.history[:2], _unsigned(st.history[2]))),
     "executed request 3 is not a client's signed request"),
    ("pre-prepare-of-an-unsigned-request", lambda sim, st: _r(
        st, pre_prepares={(1, 3): _forged(sim, 1, _r(_pp(st).message,
                                                      request=_unsigned(_request(st))))}),
     "the PRE-PREPARE at (1, 3) is not a valid primary's"),
    ("prepared-certificate-of-a-later-view", lambda sim, st: _r(
        st, prepared_certs={3: _cert_of_view_2(sim, st)}),
     "the prepared certificate for 3 is not valid"),
    ("reply-of-a-later-view", lambda sim, st: _r(st, reply_views={"c0": 2}),
     "the last reply to c0 is of a view it has not reached"),
    ("reply-of-a-negative-view", lambda sim, st: _r(st, reply_views={"c0": -1}),
     "the last reply to c0 is of a view it has not reached"),
]  # fmt: skip


def _vc(st: DurableState, sender: str) -> Signed:
    """The VIEW-CHANGE ``sender`` sent for view 1, as the NEW-VIEW carries it."""
    assert st.new_view_msg is not None
    nv = body(st.new_view_msg, NewView)
    return next(s for s in nv.view_changes if s.sender == sender)


def _pp(st: DurableState) -> Signed:
    return st.pre_prepares[(1, 3)]


def _request(st: DurableState) -> Signed:
    req = body(_pp(st), PrePrepare).request
    assert req is not None
    return req


def _cert_of_view_2(sim: Simulation, st: DurableState) -> PreparedCert:
    """A well-formed prepared certificate for view 2 (its primary's PRE-PREPARE and two
    backups' PREPAREs): valid, but of a view replica 1 (in view 1) cannot have seen."""
    req = _request(st)
    d = request_digest(req)
    pp = _forged(sim, 2, PrePrepare(2, 3, d, req, 2))
    return PreparedCert(pp, tuple(_forged(sim, j, Prepare(2, 3, d, j)) for j in (0, 3)))


def _commit_key(st: DurableState) -> tuple[int, int, str]:
    (key,) = st.commits
    return key


@pytest.mark.parametrize(
    ("forge", "why"),
    [(f, w) for _, f, w in _DURABLE_FORGERIES],
    ids=[n for n, _, _ in _DURABLE_FORGERIES],
)
def test_each_durable_check_refuses_its_own_forgery(
    forge: Callable[[Simulation, Any], Any], why: str
) -> None:
    """Each check of a durable state refuses, by its own message, a state that is valid
    but for the one thing it checks: a replica restarts on a state it could have kept, or
    not at all (InvalidDurableState names what is wrong)."""
    sim, state = _view_1_state()
    sim._new_replica(1).restore_durable(state)  # the true state restores
    # ... and so does one keeping its own VIEW-CHANGE for the view it is in
    sim._new_replica(1).restore_durable(
        dataclasses.replace(state, view_changes={1: _vc(state, "r1")})
    )
    with pytest.raises(InvalidDurableState, match=rf"^replica 1: {re.escape(why)}$"):
        sim._new_replica(1).restore_durable(forge(sim, state))


def test_an_own_checkpoint_at_1_restores() -> None:
    """The first sequence number can carry a checkpoint (``checkpoint_k = 1``): a state
    holding its own checkpoint at 1 restores.  One request: with two, whether replica 1
    still holds its checkpoint at 1 when both executed depends on the schedule."""
    sim = Simulation(4, 1, seed=3, checkpoint_k=1, watermark_window=2)
    sim.submit("c0", {"op": "x", "k": 0})
    sim.run(until=sim.all_executed)
    state = sim.replicas[1].durable_state()
    assert 1 in state.own_checkpoints
    restored = sim._new_replica(1)
    restored.restore_durable(state)
    assert restored.durable_state() == state


def test_a_late_view_change_is_not_answered_with_an_older_new_view() -> None:
    """BFT-LIVE-1's answer is the installed NEW-VIEW only if it is of the view asked for
    or later: a replica that installed view 1 and then moved on to view 3 does not send
    its NEW-VIEW 1 to a replica asking for view 2 (it would not let it in)."""
    w = World()
    vcs = _prepared_then_view_change(w)
    r1 = w.replicas[1]
    for vc in vcs[1:]:
        r1.on_message(vc)
    assert r1.active and r1.view == 1
    r1.on_message(w.request())  # something to wait for: the timer runs
    r1.on_timeout()  # view 2, changing view
    for j in (0, 2, 3):  # q replicas want view 2 too, and its NEW-VIEW does not come
        r1.on_message(w.signers[f"r{j}"].sign(ViewChange(2, 0, (), (), j)))
    r1.on_timeout()
    assert r1.view == 3 and not r1.active
    assert body(r1.new_view_msg, NewView).view == 1
    late = w.signers["r0"].sign(ViewChange(2, 0, (), (), 0))
    assert not w.sent(r1.on_message(late), NewView)


def test_a_vote_delivered_twice_is_counted_as_replayed_and_stored_once() -> None:
    """A PREPARE or COMMIT already held from its sender for that (view, seq, digest) is a
    retransmission: refused ``replayed``, and the quorum still counts the sender once."""
    w = World()
    _, pp = _pre_prepare(w)
    d = body(pp, PrePrepare).digest
    r3 = w.replicas[3]
    r3.on_message(pp)
    votes = [w.signers["r2"].sign(Prepare(0, 1, d, 2)), w.signers["r2"].sign(Commit(0, 1, d, 2))]
    for vote in votes:
        r3.on_message(vote)
        r3.on_message(vote)
    assert r3.rejected["replayed"] == 2
    # r3's own PREPARE, then r2's; prepared, r3 commits too
    assert list(r3.prepares[(0, 1, d)]) == [3, 2] and list(r3.commits[(0, 1, d)]) == [3, 2]


def test_a_replayed_request_is_answered_only_with_its_own_reply() -> None:
    """A request at or below its client's last executed timestamp is a replay: refused
    ``replayed`` and answered with the last REPLY only if that reply is for this very
    request; an older request gets nothing (the stored reply answers a later one)."""
    w = World()
    first, pp1 = _pre_prepare(w)
    second, pp2 = _pre_prepare(w)
    _commit_everywhere(w, [pp1, pp2])
    r1 = w.replicas[1]
    assert r1.last_ts["c0"] == 2
    out = r1.on_message(second)
    (reply,) = w.sent(out, Reply)
    assert body(reply, Reply).timestamp == 2
    assert not r1.on_message(first).sends
    assert r1.rejected["replayed"] == 2


def test_a_replica_changing_view_keeps_a_new_request_without_relaying_it() -> None:
    """During a view change there is no primary to relay to yet: a new request is kept
    pending (relayed when the view is entered) and nothing is sent for it now."""
    w = World()
    r3 = w.replicas[3]
    r3.on_message(w.request())
    r3.on_timeout()
    assert not r3.active
    fresh = w.request("new", client="c1")
    out = r3.on_message(fresh)
    assert request_digest(fresh) in r3.pending and not out.sends


def test_a_replica_waiting_for_its_new_view_executes_what_that_view_commits() -> None:
    """A replica that moved to view 1 but has not yet received its NEW-VIEW treats view
    1's COMMITs as late ones: q of them decide the number, and it executes the request
    it holds pending (not refused as ``stale_view`` while the others go on)."""
    w = World()
    req = w.request()
    d = request_digest(req)
    r3 = w.replicas[3]
    r3.on_message(req)
    r3.on_timeout()
    assert (r3.view, r3.active) == (1, False)
    for j in (0, 1, 2):
        r3.on_message(w.signers[f"r{j}"].sign(Commit(1, 1, d, j)))
    assert r3.executed_log == [(1, d)] and r3.rejected["stale_view"] == 0


def test_a_client_may_not_take_a_replica_name_in_a_large_cluster() -> None:
    """A request's client must not be named like a replica of the cluster (``r`` and a
    decimal number below n): with 13 replicas ``r12`` is a replica's name, ``r13`` is
    not.  Two-digit names are where the number is read digit by digit."""
    _ring, signers = make_keys(3, ["r12", "r13", "r1"])
    for name, client in (("r12", False), ("r13", True), ("r1", False)):
        signed = signers[name].sign(Request(name, 1, {"op": "x"}))
        assert signer_matches(signed, 13) is client, name
    assert signer_matches(signers["r12"].sign(Request("r12", 1, {"op": "x"})), 12)


def _times_out_again(w: World, r: Replica) -> None:
    """r1 and r2 want ``r``'s view too, which never starts: with its own VIEW-CHANGE that
    is a quorum, so ``r``'s timer runs again, fires, and it moves on to the next view."""
    for j in (1, 2):
        r.on_message(w.signers[f"r{j}"].sign(ViewChange(r.view, 0, (), (), j)))
    r.on_timeout()


def _leaves_view_0_holding_another_request(w: World, r: Replica) -> None:
    """``r`` times out of view 0 holding only a request of c1's (its timer's reason)."""
    r.on_message(w.request("other", client="c1"))
    r.on_timeout()


def test_a_replica_changing_view_retransmits_the_view_changes_of_the_view_it_left() -> None:
    """While it waits for a NEW-VIEW, a replica re-sends the VIEW-CHANGEs it holds for its
    view and for the one it left (they let a replica that missed some reach the quorum
    that moved it on), not those of later views."""
    w = World()
    r3 = w.replicas[3]
    r3.on_message(w.request())
    r3.on_timeout()
    _times_out_again(w, r3)  # on to view 2
    r3.on_message(w.signers["r0"].sign(ViewChange(3, 0, (), (), 0)))  # a later one
    assert r3.view == 2 and not r3.active
    sent = {(s.sender, body(s, ViewChange).new_view) for s in w.sent(r3.retransmit(), ViewChange)}
    assert sent == {("r1", 1), ("r2", 1), ("r3", 1), ("r3", 2)}
    # bounded memory: moving on to view 3 drops what it held for view 1
    _times_out_again(w, r3)
    assert r3.view == 3 and sorted(r3.view_changes) == [2, 3]


def test_a_request_is_relayed_to_the_primary_once_and_only_if_kept() -> None:
    """A backup relays a client's request to the primary when it first keeps it; the same
    request again is not relayed again, nor is one refused ``rate_limited`` (its client's
    window is full)."""
    w = World(watermark_window=1)
    r1 = w.replicas[1]
    req = w.request()
    assert [s.dest for s in r1.on_message(req).sends] == ["r0"]
    assert not r1.on_message(req).sends
    assert not r1.on_message(w.request()).sends and r1.rejected["rate_limited"] == 1


def test_a_replica_changing_view_refuses_prepares_of_the_view_it_waits_for() -> None:
    """No vote before the NEW-VIEW: a replica that moved to view 1 but has not entered it
    refuses view 1's PREPAREs ``stale_view`` and stores none."""
    w = World()
    r3 = w.replicas[3]
    r3.on_message(w.request())
    r3.on_timeout()
    assert (r3.view, r3.active) == (1, False)
    r3.on_message(w.signers["r2"].sign(Prepare(1, 1, "ab" * 32, 2)))
    assert r3.rejected["stale_view"] == 1 and not r3.prepares


def test_a_far_checkpoint_asks_its_sender_for_the_state_once_per_period() -> None:
    """A CHECKPOINT beyond the window tells a replica it lags: it asks that sender for a
    STATE-TRANSFER once per retransmission period, however many such CHECKPOINTs come."""
    w = World(checkpoint_k=1, watermark_window=2)
    r3 = w.replicas[3]
    far = [w.signers["r1"].sign(Checkpoint(s, "ab" * 32, 1)) for s in (5, 6)]
    fetches = [m for ck in far for m in w.sent(r3.on_message(ck), FetchState)]
    assert [(s.sender, body(s, FetchState).after_seq) for s in fetches] == [("r3", 0)]
    r3.retransmit()  # a new period
    assert w.sent(r3.on_message(far[0]), FetchState)


def test_a_client_named_like_a_replica_beyond_n_cannot_vote() -> None:
    """With four replicas, ``r4`` is a client's name (no replica has it), so a PREPARE that
    ``r4`` signs as replica 4 is ``forged``: replica numbers are below n, or one client
    could add a vote to every quorum."""
    ring, signers = make_keys(7, [*(replica_name(i) for i in range(4)), "c0", "r4"])
    r1 = Replica(1, 4, 1, ring, signers["r1"])
    r1.on_message(signers["r4"].sign(Prepare(0, 1, "ab" * 32, 4)))
    assert r1.rejected == {"forged": 1} and not r1.prepares


def test_retransmission_relays_requests_only_from_an_active_backup() -> None:
    """A retransmission period relays the pending requests to the primary only from an
    active backup: not from the primary (to itself), nor from a replica changing view
    (the new view's primary gets them when the view is entered)."""
    w = World()
    req = w.request()
    for r in w.replicas[:2]:
        r.on_message(req)
    relayed = [s for s in w.replicas[1].retransmit().sends if s.payload == req]
    assert [s.dest for s in relayed] == ["r0"]
    assert not [s for s in w.replicas[0].retransmit().sends if s.payload == req]
    w.replicas[1].on_timeout()
    assert not w.replicas[1].active
    assert not [s for s in w.replicas[1].retransmit().sends if s.payload == req]


def test_a_view_change_delivered_twice_is_counted_as_replayed() -> None:
    """A VIEW-CHANGE already held from its sender for that view is refused ``replayed``
    (a retransmission), not processed again."""
    w = World()
    w.replicas[2].on_message(w.request())
    (vc,) = w.sent(w.replicas[2].on_timeout(), ViewChange)
    r3 = w.replicas[3]
    r3.on_message(vc)
    before = r3.rejected["replayed"]
    r3.on_message(vc)
    assert r3.rejected["replayed"] == before + 1


def test_a_late_commit_waits_for_its_request() -> None:
    """A replica that left the view with neither the PRE-PREPARE nor the client's request
    learns from q commits that the number is decided, but cannot execute what it does
    not have: it executes nothing (never a null request in its place)."""
    w = World()
    _, pp = _pre_prepare(w)
    d = body(pp, PrePrepare).digest
    r3 = w.replicas[3]
    _leaves_view_0_holding_another_request(w, r3)
    assert not r3.active
    _view_0_commits(w, r3, d)
    assert r3.last_exec == 0 and r3.history == []


def test_a_number_decided_in_two_left_views_is_executed_once_and_leaves_no_queue_entry() -> None:
    """One number, one request, committed in two views this replica has left (view 0,
    then view 1 after the request was proposed again), while it had neither the request
    nor a PRE-PREPARE.  View 1's PRE-PREPARE brings the request: the first quorum
    executes the number, and the second, found in the same pass, must not queue it again.
    A number at or below ``last_exec`` in the execution queue is never popped (execution
    pops ``last_exec + 1``): it would stay there until a state transfer prunes the
    queue (seen by code mutation: the guard's ``<=`` as ``<``, or ``or`` as
    ``and``)."""
    w = World()
    req, pp0 = _pre_prepare(w)
    d = body(pp0, PrePrepare).digest
    r3 = w.replicas[3]
    _leaves_view_0_holding_another_request(w, r3)
    _times_out_again(w, r3)  # view 2, not yet entered: views 0 and 1 are both left
    assert r3.view == 2 and not r3.active
    for v in (0, 1):
        for j in (0, 1, 2):
            r3.on_message(w.signers[f"r{j}"].sign(Commit(v, 1, d, j)))
    assert r3.last_exec == 0  # two quorums, no request yet
    pp1 = w.signers["r1"].sign(PrePrepare(1, 1, d, req, 1))  # view 1's primary, same request
    r3.on_message(pp1)
    assert r3.executed_log == [(1, d)]
    assert r3.to_execute == {}, r3.to_execute


def test_a_state_transfer_that_brings_nothing_is_refused() -> None:
    """A STATE-TRANSFER must move its receiver forward: one that brings no request, after
    the number the receiver has executed, with a true proof of that very number (its own
    stable checkpoint), is refused ``bad_state_transfer`` and changes nothing.  It is
    no answer to a FETCH-STATE (one is sent only by a replica that lags), so a peer that
    sends it is counted (seen by code mutation: ``seq <= last_exec`` as ``<``)."""
    w = World(checkpoint_k=1)
    _, pp = _pre_prepare(w)
    _commit_everywhere(w, [pp])
    r3 = w.replicas[3]
    assert (r3.last_exec, r3.stable_seq) == (1, 1) and r3.stable_app_digest is not None
    empty = StateTransfer(1, (), r3.stable_app_digest, r3.stable_proof, 0)
    before = r3.durable_state()
    r3.on_message(w.signers["r0"].sign(empty))
    assert r3.rejected["bad_state_transfer"] == 1
    assert r3.durable_state() == before


def test_execution_reports_each_number_with_its_request_and_result() -> None:
    """``Output.executed`` (what the conformance events and the throughput count read)
    names each executed number with its request and the application's result; a request
    ordered a second time by a lying primary keeps its number but is not executed again,
    and its result is None (nothing ran), not an empty value."""
    w = World()
    req, pp = _pre_prepare(w)
    d = body(pp, PrePrepare).digest
    again = w.signers["r0"].sign(PrePrepare(0, 2, d, req, 0))
    progress = [r.progress for r in w.replicas]
    outs = _commit_everywhere(w, [pp, again])
    # progress only grows: network.py compares it with the value it last saw, so a step
    # back and one forward between two looks would read as no progress at all
    assert all(r.progress >= p + 2 for r, p in zip(w.replicas[1:], progress[1:], strict=True))
    executed = [e for out in outs for e in out.executed]
    result = body(w.replicas[1].last_reply["c0"], Reply).result
    assert result is not None
    # number 1 at all four replicas; number 2 at the three backups (the primary did not
    # pre-prepare it itself: the test signed it in its name)
    assert (
        sorted(executed, key=lambda e: e.seq)
        == [Executed(1, req, result)] * 4 + [Executed(2, req, None)] * 3
    )
    assert all(r.last_exec == 2 for r in w.replicas[1:])


def test_executing_a_request_frees_exactly_its_place_in_the_clients_window() -> None:
    """A client has at most ``window`` requests pending at a replica.  Executing one of
    two frees one place: the count is 1 again, and with a window of 2 the replica takes
    one more request from that client, then refuses the next ``rate_limited``."""
    w = World(watermark_window=2)
    r1 = w.replicas[1]
    first, second = w.request(), w.request()
    r1.on_message(first)
    r1.on_message(second)
    assert r1.pending_per_client["c0"] == 2
    pp = w.signers["r0"].sign(PrePrepare(0, 1, request_digest(first), first, 0))
    _commit_everywhere(w, [pp])
    assert r1.last_exec == 1 and list(r1.pending) == [request_digest(second)]
    assert r1.pending_per_client["c0"] == 1
    r1.on_message(w.request())
    assert r1.pending_per_client["c0"] == 2 and r1.rejected["rate_limited"] == 0
    r1.on_message(w.request())
    assert r1.pending_per_client["c0"] == 2 and r1.rejected["rate_limited"] == 1


def test_a_restored_primary_without_its_own_view_change_takes_view_changes_calmly() -> None:
    """Hostile input from the store: restore accepts a durable state in which the primary
    of view 1 is changing to view 1 but holds no VIEW-CHANGE of its own for it (no honest
    replica keeps such a state; restore does not refuse it).  VIEW-CHANGEs it receives
    then find no quorum for view 1 and are stored, counted and answered as usual: it
    neither crashes nor announces a NEW-VIEW."""
    w = World()
    st = dataclasses.replace(w.replicas[1].durable_state(), view=1, active=False)
    assert st.view_changes == {}
    r1 = Replica(1, 4, 1, w.ring, w.signers["r1"])
    r1.restore_durable(st)
    for j in (2, 3):
        out = r1.on_message(w.signers[f"r{j}"].sign(ViewChange(2, 0, (), (), j)))
        assert not w.sent(out, NewView)
    assert r1.view == 2 and not r1.active  # f+1 want view 2: it joins them
    assert sorted(r1.view_changes[2]) == [1, 2, 3] and not r1.rejected


def test_a_fetch_state_is_answered_only_below_the_stable_checkpoint() -> None:
    """A FETCH-STATE asks for the requests after ``after_seq`` up to the stable
    checkpoint: one at or above the stable number asks for nothing and is refused
    ``stale_view`` with no answer; one below it is answered with the requests between."""
    w = World(checkpoint_k=1)
    req, pp = _pre_prepare(w)
    _commit_everywhere(w, [pp])
    r1 = w.replicas[1]
    assert (r1.last_exec, r1.stable_seq) == (1, 1)
    before = r1.rejected["stale_view"]
    for after in (1, 2):
        out = r1.on_message(w.signers["r3"].sign(FetchState(after, 3)))
        assert not out.sends
    assert r1.rejected["stale_view"] == before + 2
    (answer,) = w.sent(r1.on_message(w.signers["r3"].sign(FetchState(0, 3))), StateTransfer)
    assert body(answer, StateTransfer).requests == (req,)


def test_a_prepare_of_another_view_is_judged_by_that_views_primary() -> None:
    """The primary of a PREPARE's own view sends none (``not_backup``); r0, primary of
    view 0, is a backup of view 1, so its PREPARE of view 1 at a replica still in view 0
    is ``future_view``, and r1's PREPARE of view 1 is ``not_backup``."""
    w = World()
    r2 = w.replicas[2]
    r2.on_message(w.signers["r0"].sign(Prepare(1, 1, "ab" * 32, 0)))
    assert r2.rejected == {"future_view": 1}
    r2.on_message(w.signers["r1"].sign(Prepare(1, 1, "ab" * 32, 1)))
    assert r2.rejected == {"future_view": 1, "not_backup": 1}


def test_a_state_transfer_reports_what_it_executes_and_answers_no_client() -> None:
    """A replica that installs a STATE-TRANSFER executes its requests as the others did
    and reports each one (number, request, result: what the conformance events and the
    throughput count read), but sends no REPLY: the client had its replies from the
    replicas that executed in order, and a lagging replica's late answer would be one
    more message per request for nothing."""
    w = World(checkpoint_k=1)
    req, pp = _pre_prepare(w)
    _commit_everywhere(w, [pp])
    r1 = w.replicas[1]
    assert r1.stable_seq == 1 and r1.stable_app_digest is not None
    result = body(r1.last_reply["c0"], Reply).result
    lagging = Replica(3, 4, 1, w.ring, w.signers["r3"], checkpoint_k=1)
    transfer = StateTransfer(0, (req,), r1.stable_app_digest, r1.stable_proof, 1)
    out = lagging.on_message(w.signers["r1"].sign(transfer))
    assert lagging.last_exec == 1 and lagging.app.digest() == r1.app.digest()
    assert out.executed == [Executed(1, req, result)]
    assert not w.sent(out, Reply)


def test_a_late_commit_conflicting_with_a_commit_of_the_view_is_refused() -> None:
    """One vote per (view, seq, sender) across both paths: a COMMIT stored while in the
    view and a late COMMIT from the same sender for another digest of that (view, seq)
    after leaving it is ``conflicting`` and not stored."""
    w = World()
    _, pp = _pre_prepare(w)
    d = body(pp, PrePrepare).digest
    r3 = w.replicas[3]
    r3.on_message(pp)
    r3.on_message(w.signers["r2"].sign(Commit(0, 1, d, 2)))
    r3.on_timeout()
    assert not r3.active
    before = r3.rejected["conflicting"]
    r3.on_message(w.signers["r2"].sign(Commit(0, 1, "ab" * 32, 2)))
    assert r3.rejected["conflicting"] == before + 1
    assert (0, 1, "ab" * 32) not in r3.commits


def test_a_replayed_pre_prepare_of_an_executed_number_queues_nothing() -> None:
    """After it executed a number, a replica that left the view and gets that number's
    PRE-PREPARE again (a retransmission) queues nothing for execution: the number is
    done, and the queue holds only what is still to run."""
    w = World()
    _, pp = _pre_prepare(w)
    _commit_everywhere(w, [pp])
    r1 = w.replicas[1]
    assert r1.last_exec == 1
    r1.on_message(w.request())
    r1.on_timeout()
    assert not r1.active
    r1.on_message(pp)
    assert r1.to_execute == {} and r1.last_exec == 1


def _honest_new_view(w: World, vcs: list[Signed]) -> Signed:
    """The NEW-VIEW replica 1 (primary of view 1) sends once it has the VIEW-CHANGEs."""
    out = Output()
    for vc in vcs[1:]:
        out.extend(w.replicas[1].on_message(vc))
    (nv,) = w.sent(out, NewView)
    return nv


@pytest.mark.parametrize(
    "extra", ["same-voter-twice", "a-view-change-for-another-view", "unsigned", "not-a-view-change"]
)
def test_a_new_view_with_one_bad_view_change_is_refused(extra: str) -> None:
    """A NEW-VIEW is refused ``bad_new_view`` for any one of its VIEW-CHANGEs: a voter
    counted twice, a VIEW-CHANGE for another view, one not signed by its sender, or a
    message that is no VIEW-CHANGE at all (which must be refused, not crash the replica)
    — even when the others are a valid quorum and the pre-prepares are the right O."""
    w = World()
    vcs = _prepared_then_view_change(w)
    nv = body(_honest_new_view(w, vcs), NewView)
    more = {
        "same-voter-twice": vcs[2],
        "a-view-change-for-another-view": w.signers["r0"].sign(ViewChange(2, 0, (), (), 0)),
        "unsigned": _unsigned(w.signers["r0"].sign(ViewChange(1, 0, (), (), 0))),
        "not-a-view-change": w.signers["r0"].sign(Prepare(1, 1, NULL_DIGEST, 0)),
    }[extra]
    forged = w.signers["r1"].sign(NewView(1, (*nv.view_changes, more), nv.pre_prepares, 1))
    r2 = w.replicas[2]
    r2.on_message(forged)
    assert r2.rejected["bad_new_view"] == 1 and not r2.active
    r2.on_message(w.signers["r1"].sign(nv))  # the honest one is installed
    assert r2.active and r2.view == 1


def test_an_installed_new_view_again_is_replayed_an_older_one_stale() -> None:
    """Once a view is installed, its NEW-VIEW delivered again is ``replayed`` (a
    retransmission) and a NEW-VIEW of an earlier view is ``stale_view``."""
    w = World()
    vcs = _prepared_then_view_change(w)
    nv = _honest_new_view(w, vcs)
    r2 = w.replicas[2]
    r2.on_message(nv)
    assert r2.active and r2.view == 1
    r2.on_message(nv)
    assert (r2.rejected["replayed"], r2.rejected["stale_view"]) == (1, 0)
    r2.on_message(w.signers["r0"].sign(NewView(0, (), (), 0)))
    assert (r2.rejected["replayed"], r2.rejected["stale_view"]) == (1, 1)


def test_a_view_change_for_the_view_being_changed_to_keeps_a_later_one() -> None:
    """A replica changing to view 1 that holds a sender's VIEW-CHANGE for view 2 (the
    sender ran ahead) still takes that sender's VIEW-CHANGE for view 1 when it comes, and
    keeps both: view 1 is not above its own view, so no 'one per sender' rule applies."""
    w = World()
    r3 = w.replicas[3]
    r3.on_message(w.request())
    r3.on_timeout()
    assert r3.view == 1 and not r3.active
    r3.on_message(w.signers["r2"].sign(ViewChange(2, 0, (), (), 2)))
    r3.on_message(w.signers["r2"].sign(ViewChange(1, 0, (), (), 2)))
    assert 2 in r3.view_changes.get(1, {}) and 2 in r3.view_changes.get(2, {})
    assert r3.rejected["superseded"] == 0


def test_a_superseded_view_change_leaves_the_others_of_its_view() -> None:
    """A sender's higher VIEW-CHANGE replaces its lower one held for a view above this
    replica's; the other senders' VIEW-CHANGEs for that lower view stay (n = 7, f = 2, so
    two of them do not yet make this replica join)."""
    w = World(n=7, f=2)
    r = w.replicas[6]
    r.on_message(w.request())
    r.on_timeout()
    assert r.view == 1 and not r.active
    for j in (2, 3):
        r.on_message(w.signers[f"r{j}"].sign(ViewChange(2, 0, (), (), j)))
    assert r.view == 1 and set(r.view_changes[2]) == {2, 3}
    r.on_message(w.signers["r2"].sign(ViewChange(3, 0, (), (), 2)))
    assert set(r.view_changes[2]) == {3} and set(r.view_changes[3]) == {2}


def test_the_view_change_timeout_doubles_up_to_2_to_the_20() -> None:
    """The back-off doubles the base timeout per consecutive view change, up to 2^20 times
    it (past that the timer stays put rather than grow without bound)."""
    r = World(base_timeout=10).replicas[1]
    r.consecutive_view_changes = 20
    assert r.timeout_duration() == 10 << 20
    r.consecutive_view_changes = 21
    assert r.timeout_duration() == 10 << 20


def test_o_starts_above_the_highest_stable_checkpoint_and_takes_the_highest_view() -> None:
    """PBFT §4.4: a certificate exactly at the highest stable checkpoint is not
    re-proposed (that number is decided), and where two certificates name one number
    O takes the one of the higher view, whichever VIEW-CHANGE comes first."""
    w = World()
    r2 = w.replicas[2]
    a, b, c = w.request("a"), w.request("b"), w.request("c")
    at_low = w.signers["r0"].sign(PrePrepare(0, 3, request_digest(a), a, 0))
    old = w.signers["r0"].sign(PrePrepare(0, 4, request_digest(b), b, 0))
    new = w.signers["r1"].sign(PrePrepare(1, 4, request_digest(c), c, 1))
    x = ViewChange(2, 3, (), (PreparedCert(at_low, ()), PreparedCert(new, ())), 0)
    y = ViewChange(2, 0, (), (PreparedCert(old, ()),), 3)
    for vcs in ([x, y], [y, x]):
        o = r2.compute_o(vcs, 2)
        assert [(pp.seq, pp.request) for pp in o] == [(4, c)], vcs


def test_a_new_views_pre_prepares_must_be_signed_by_its_primary() -> None:
    """O's PRE-PREPAREs in a NEW-VIEW must each be the new primary's signed message: the
    right O signed by another replica, or unsigned, is refused ``bad_new_view``."""
    w = World()
    vcs = _prepared_then_view_change(w)
    nv = body(_honest_new_view(w, vcs), NewView)
    (o1,) = nv.pre_prepares
    for bad in (w.signers["r3"].sign(o1.message), _unsigned(o1)):
        forged = w.signers["r1"].sign(NewView(1, nv.view_changes, (bad,), 1))
        r2 = w.replicas[2]
        before = r2.rejected["bad_new_view"]
        r2.on_message(forged)
        assert r2.rejected["bad_new_view"] == before + 1 and not r2.active


def test_entering_a_view_relays_pending_requests_to_its_primary_and_drops_its_votes() -> None:
    """A backup that enters view 1 sends the requests it still holds to view 1's primary
    (its own copy may have been lost with view 0's), and keeps no VIEW-CHANGE for the view
    it entered (nor for any below it)."""
    w = World()
    vcs = _prepared_then_view_change(w)
    nv = _honest_new_view(w, vcs)
    r2 = w.replicas[2]
    req = w.request("late")
    r2.on_message(req)
    out = r2.on_message(nv)
    assert r2.active and r2.view == 1
    assert ("r1", req) in [(s.dest, s.payload) for s in out.sends]
    assert r2.view_changes == {}


def test_replica_defaults_and_group_sizes() -> None:
    """The view-change timeout starts at 1000 ticks by default; n ≥ 3f + 1 holds for every
    f (n = 4 with f = 2 is refused), and f = 0 is a group of one."""
    ring, signers = make_keys(7, [replica_name(i) for i in range(4)])
    assert Replica(0, 4, 1, ring, signers["r0"]).timeout_duration() == 1000
    with pytest.raises(ValueError, match=r"^n=4 < 3f\+1 with f=2$"):
        Replica(0, 4, 2, ring, signers["r0"])
    assert Replica(0, 1, 0, ring, signers["r0"]).q == 1
