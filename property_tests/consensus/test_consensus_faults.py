"""PBFT under real faults: the regression tests of the defects found by trying the replica
as an adversary would (docs/consensus.md, "Liveness under loss, lies and restarts").

Each test is the smallest schedule that showed the defect on the replica before it was
fixed, driven through the simulation's primitives (deliver, drop, timeouts, partitions)
or through one replica's entry points; each failed on that code:

1. a view change that never completes after its NEW-VIEW is lost (BFT-LIVE-1);
2. checkpoint-vote poisoning keeps a lagging replica behind forever (BFT-LIVE-1);
3. hostile bytes raise out of ``Replica.on_message`` before any signature check (and,
   found by test_consensus_fuzz.py, odd client names in the handlers, an in-process
   reply in ``Client.on_reply``, a huge setup in the pbft conformance driver);
4. resource exhaustion: a FETCH-STATE buys a STATE-TRANSFER every time, far-future
   VIEW-CHANGEs and votes for many digests are all stored;
5. a stale PRE-PREPARE of an executed request restarts the view-change timer.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from test_consensus_stateful import check_safety_1, check_safety_2

from ostrom.conformance.pbft_layer import PBFTLayer
from ostrom.consensus.client import Client
from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import (
    Checkpoint,
    Commit,
    FetchState,
    Prepare,
    PrePrepare,
    Reply,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica import Output, Replica, Send
from ostrom.consensus.storage import MemoryLocation
from ostrom.harness.byzantine import Silent, Strategy
from ostrom.harness.network import Envelope, Faults, Simulation

NEVER = 10**9  # timers fire only when a test fires them


def _is(kind: type) -> Callable[[Envelope], bool]:
    return lambda e: isinstance(e.payload, Signed) and isinstance(e.payload.message, kind)


# --- 1. the view change that never completes ---------------------------------------------


@pytest.mark.parametrize(("n", "f"), [(4, 1), (7, 2)])
def test_view_change_completes_after_its_new_view_is_lost(n: int, f: int) -> None:
    """BFT-LIVE-1.  f replicas are silent.  The client's request reaches every replica, the
    primary's PRE-PREPAREs are lost, the other honest replicas time out into view 1; the
    new primary collects their VIEW-CHANGEs and installs view 1, but its own VIEW-CHANGE
    and its NEW-VIEW are lost; it then times out into view 2.  The replicas left in view 1
    hold fewer than 2f+1 VIEW-CHANGEs and run no timer; the new primary had dropped its
    VIEW-CHANGE(1) and NEW-VIEW(1).  After the network heals every request must execute.
    """
    silent = list(range(n - f, n))
    sim = Simulation(
        n,
        f,
        0,
        byzantine={i: Silent() for i in silent},
        faults=Faults(reorder=False),
        base_timeout=NEVER,
        client_timeout=NEVER,
    )
    sim.submit("c0", {"op": "x"})
    sim.fire_client_timeout("c0")  # the request reaches every replica
    sim.deliver_where(deliver=_is(Request), drop=_is(PrePrepare))
    new_primary = 1
    for i in sim.honest:
        if i != new_primary:
            sim.fire_timeout(i)
    # the new primary hears the VIEW-CHANGEs; everything it sends is lost
    sim.deliver_where(deliver=lambda e: e.dst == "r1", drop=lambda e: e.src == "r1")
    r1 = sim.replicas[new_primary]
    assert (r1.view, r1.active) == (1, True)
    sim.fire_timeout(new_primary)
    assert (r1.view, r1.active) == (2, False)
    behind = [sim.replicas[i] for i in sim.honest if i != new_primary]
    assert all((r.view, r.active, r.waiting) == (1, False, False) for r in behind)
    rounds = sim.run_fair(12)
    assert rounds is not None, (
        f"BFT-LIVE-1: views {[r.view for r in sim.replicas]}, "
        f"executed {[r.last_exec for r in sim.replicas]}"
    )
    check_safety_1(sim)
    check_safety_2(sim)


def test_restarted_replica_gets_the_commits_of_a_view_the_others_left() -> None:
    """BFT-LIVE-1, found by TLC on the code-level spec (pbft-replica-faults).  N = 4,
    replica 3 silent.  The primary sends its PRE-PREPARE, commits, and times out into
    view 1 alone; replica 1 collects three commits and executes; the commits to replica
    2 are lost and replica 2 crashes and restarts from its database, which keeps what
    it promised but not what it received, nor the pending request (so no timer).
    Replica 1 re-sends its view-0 commit; the primary, in view 1, re-sent only the
    messages of its current view, so replica 2 never got its commit again and never
    executed.  Now a replica re-sends its own votes of every view its log holds."""
    sim = Simulation(
        4,
        1,
        0,
        byzantine={3: Silent()},
        faults=Faults(reorder=False),
        base_timeout=NEVER,
        client_timeout=NEVER,
        stores=lambda i: MemoryLocation(),
    )
    try:
        sim.submit("c0", {"op": "x"})
        sim.fire_client_timeout("c0")  # the request reaches every replica
        sim.deliver_where(deliver=lambda e: not _is(Commit)(e))
        primary = sim.replicas[0]
        assert primary.sent_commit, "the primary has sent its commit"
        sim.fire_timeout(0)  # the primary leaves view 0 alone
        assert (primary.view, primary.active) == (1, False)
        sim.deliver_where(deliver=lambda e: e.dst != "r2", drop=lambda e: e.dst == "r2")
        assert [r.last_exec for r in sim.replicas[:3]] == [1, 1, 0]
        sim.crash(2)
        sim.restart(2)
        r2 = sim.replicas[2]
        assert (r2.view, r2.last_exec, r2.waiting) == (0, 0, False)
        rounds = sim.run_fair(12)
        check_safety_1(sim)
        check_safety_2(sim)
        assert rounds is not None, (
            f"BFT-LIVE-1: views {[r.view for r in sim.replicas]}, "
            f"executed {[r.last_exec for r in sim.replicas]}"
        )
    finally:
        sim.close()


# --- 2. checkpoint-vote poisoning ----------------------------------------------------------


class CheckpointPoisoner(Strategy):
    """Honest, except that before anything else it sends the victim CHECKPOINTs with wrong
    state digests for the sequence numbers it will checkpoint at (it signs them: they are
    its own votes, and they arrive before its genuine ones)."""

    name = "checkpoint-poisoner"

    def __init__(self, victim: int, seqs: tuple[int, ...]) -> None:
        super().__init__()
        self.victim, self.seqs, self.lied = victim, seqs, False

    def transform(self, out: Output) -> Output:
        res = Output(list(out.sends), out.executed)
        if not self.lied:
            self.lied = True
            for seq in self.seqs:
                lie = self.sign(Checkpoint(seq, "ab" * 32, self.replica.id))
                res.sends.append(Send(replica_name(self.victim), lie))
        return res


@pytest.mark.parametrize(("n", "f"), [(4, 1), (7, 2)])
def test_lagging_replica_catches_up_despite_checkpoint_lies(n: int, f: int) -> None:
    """BFT-LIVE-1.  The victim (an honest replica) is partitioned away while the others
    execute and make checkpoints 2 and 4 stable; the f Byzantine replicas had first sent
    it lying CHECKPOINTs for those sequence numbers.  Their genuine votes reach it only
    relayed inside the others' stable proofs, and used to be refused as replays, so it
    never collected 2f+1 matching votes, never fetched state, and ran no timer."""
    victim = n - f - 1
    byz = {i: CheckpointPoisoner(victim, (2, 4)) for i in range(n - f, n)}
    sim = Simulation(
        n,
        f,
        3,
        byzantine=byz,
        faults=Faults(reorder=False),
        checkpoint_k=2,
        watermark_window=4,
        base_timeout=NEVER,
        client_timeout=NEVER,
    )
    for i in byz:
        sim.retransmit(i)  # the lies go out first
    sim.drain()
    others = [replica_name(i) for i in range(n) if i != victim] + ["c0"]
    sim.partition([[replica_name(victim)], others])
    for k in range(4):
        sim.submit("c0", {"op": k})
    sim.run(200_000)
    lagging = sim.replicas[victim]
    assert lagging.last_exec == 0
    lies = {
        (seq, r): s.message.state_digest
        for seq, votes in lagging.checkpoints.items()
        for r, s in votes.items()
        if isinstance(s.message, Checkpoint)
    }
    assert lies == {(seq, b): "ab" * 32 for seq in (2, 4) for b in byz}  # the lies came first
    assert all(sim.replicas[i].stable_seq == 4 for i in sim.honest if i != victim)
    rounds = sim.run_fair(12)
    assert rounds is not None and lagging.last_exec >= 4, (
        f"BFT-LIVE-1: executed {[r.last_exec for r in sim.replicas]}, "
        f"victim rejected {dict(lagging.rejected)}"
    )
    check_safety_2(sim)


# --- 3. hostile bytes --------------------------------------------------------------------


def _world() -> Replica:
    ring, signers = make_keys(0, ["r0", "r1", "r2", "r3", "c0"])
    return Replica(1, 4, 1, ring, signers["r1"])


def _hostile_inputs() -> dict[str, bytes]:
    _ring, signers = make_keys(0, ["r0", "r1", "r2", "r3", "c0"])
    req = signers["c0"].sign(Request("c0", 1, {"x": "y"}))
    surrogate = req.tree()
    surrogate["message"]["operation"] = {"x": "\ud800"}
    big = json.dumps(req.tree()).replace('"timestamp": 1', '"timestamp": ' + "1" * 5000)
    deep: object = None
    for _ in range(300):
        pp = {"type": "PrePrepare", "view": 0, "seq": 1, "digest": "0" * 64}
        deep = {
            "type": "Signed",
            "message": {**pp, "request": deep, "replica": 0},
            "sender": "r0",
            "signature": "00",
        }
    return {
        "lone surrogate in an operation": json.dumps(surrogate).encode(),
        "integer literal of 5,000 digits": big.encode(),
        "300 levels of nested requests": json.dumps(deep).encode(),
        "NaN": json.dumps({"type": "Signed", "x": float("nan")}).encode(),
        "not UTF-8": b"\xff\xfe{",
        "100,000 nested arrays": b"[" * 100_000 + b"]" * 100_000,
    }


@pytest.mark.parametrize("name", sorted(_hostile_inputs()))
def test_hostile_bytes_are_counted_not_raised(name: str) -> None:
    replica = _world()
    out = replica.on_message(_hostile_inputs()[name])
    assert out.sends == [] and out.executed == []
    assert replica.rejected["malformed"] == 1


def test_in_process_envelope_without_encoding_is_malformed() -> None:
    """A Byzantine strategy in the same process can build a message whose operation has
    no UTF-8 encoding; the replica counts it, as the decoder would."""
    replica = _world()
    forged = Signed(Request("c0", 1, {"x": "\ud800"}), "c0", b"\x00" * 64)
    replica.on_message(forged)
    assert replica.rejected["malformed"] == 1


# Found by property_tests/consensus/test_consensus_fuzz.py; each input below raised (or hung)
# before.


def test_in_process_reply_without_encoding_is_malformed_at_the_client() -> None:
    """A genuine REPLY whose ``client`` got a lone surrogate in the same process: verifying
    it encodes it, which raised UnicodeEncodeError out of ``Client.on_reply``."""
    ring, signers = make_keys(0, ["r0", "r1", "r2", "r3", "c0"])
    client = Client("c0", signers["c0"], ring, 4, 1)
    client.request({"op": "x"})
    reply = signers["r0"].sign(Reply(0, 1, "c0", 0, {"n": 1}))
    poisoned = Signed(Reply(0, 1, "c0\ud800", 0, {"n": 1}), "r0", reply.signature)
    assert client.on_reply(poisoned).sends == []
    assert client.rejected == {"malformed": 1}


@pytest.mark.parametrize("name", ["r²", "r" + "1" * 5000])
def test_client_named_like_no_replica_is_authenticated_everywhere(name: str) -> None:
    """A client may be called ``r²`` or ``r`` and 5,000 digits (the pbft conformance setup
    takes any name but ``r<i>``).  Deciding whether it is named like a replica ran
    ``int`` on the digits, which raised ValueError: its request was counted ``malformed``,
    and a PRE-PREPARE carrying it raised out of ``Replica.on_message``.  It is a client."""
    ring, signers = make_keys(0, ["r0", "r1", "r2", "r3", name])
    replica = Replica(1, 4, 1, ring, signers["r1"])
    req = signers[name].sign(Request(name, 1, {"op": "x"}))
    replica.on_message(req)
    pp = signers["r0"].sign(PrePrepare(0, 1, request_digest(req), req, 0))
    out = replica.on_message(pp)
    assert not replica.rejected
    sent = [s.payload.message for s in out.sends if isinstance(s.payload, Signed)]
    assert sent == [Prepare(0, 1, request_digest(req), 1)]


def test_pbft_layer_refuses_a_setup_with_too_many_replicas() -> None:
    """``{"type": "reset", "layer": "pbft", "setup": {"n": 1000000000, ...}}`` made the
    driver derive a key per replica: hours (and all memory) for one line, not an error.
    (100,000 here: on the old code it builds, in seconds, instead of failing for hours.)"""
    with pytest.raises(ValueError, match="principals"):
        PBFTLayer().reset({}, {"n": 100_000, "f": 1, "id": 0, "key_seed": 0})
    with pytest.raises(ValueError, match="principals"):
        PBFTLayer().reset(
            {}, {"n": 4, "f": 1, "id": 0, "key_seed": 0, "clients": [f"c{i}" for i in range(2000)]}
        )


# --- 4. resource exhaustion ----------------------------------------------------------------


def _stable_cluster() -> Simulation:
    """Four honest replicas that executed two requests with checkpoint 2 stable."""
    sim = Simulation(4, 1, 1, faults=Faults(reorder=False), checkpoint_k=2, watermark_window=4)
    for k in range(2):
        sim.submit("c0", {"op": k})
    sim.run(100_000)
    assert all(r.stable_seq == 2 for r in sim.replicas)
    return sim


def test_fetch_state_is_answered_once_per_retransmission_period() -> None:
    """One small FETCH-STATE used to buy a STATE-TRANSFER of the whole certified log every
    time it arrived; now a peer gets one per retransmission period."""
    sim = _stable_cluster()
    r0 = sim.replicas[0]
    _ring, signers = make_keys(1, ["r0", "r1", "r2", "r3", "c0", "c1"])
    fetch = signers["r3"].sign(FetchState(0, 3))
    replies = [r0.on_message(fetch) for _ in range(100)]
    transfers = [
        s
        for out in replies
        for s in out.sends
        if isinstance(s.payload, Signed) and isinstance(s.payload.message, StateTransfer)
    ]
    assert len(transfers) == 1
    assert r0.rejected["rate_limited"] == 99
    r0.retransmit()
    out = r0.on_message(fetch)
    assert (
        sum(
            isinstance(s.payload, Signed) and isinstance(s.payload.message, StateTransfer)
            for s in out.sends
        )
        == 1
    )


def test_far_future_view_changes_are_not_all_stored() -> None:
    """A Byzantine replica sending VIEW-CHANGEs for views 1..200 keeps one stored (its
    highest), not 200."""
    sim = _stable_cluster()
    r0 = sim.replicas[0]
    _ring, signers = make_keys(1, ["r0", "r1", "r2", "r3", "c0", "c1"])
    proof = r0.stable_proof
    for v in range(1, 201):
        r0.on_message(signers["r3"].sign(ViewChange(v, 2, proof, (), 3)))
    held = [(v, r) for v, ms in r0.view_changes.items() for r in ms if r == 3]
    assert held == [(200, 3)]
    assert r0.rejected["superseded"] == 199
    r0.on_message(signers["r3"].sign(ViewChange(150, 2, proof, (), 3)))
    assert r0.rejected["superseded"] == 200  # lower than the one held


def test_votes_for_many_digests_are_not_all_stored() -> None:
    """One vote per (view, seq, sender): a replica sending PREPAREs (or COMMITs) for many
    digests at one sequence number has the first stored and the rest refused."""
    ring, signers = make_keys(0, ["r0", "r1", "r2", "r3", "c0"])
    replica = Replica(1, 4, 1, ring, signers["r1"])
    for k in range(50):
        d = f"{k:064x}"
        replica.on_message(signers["r2"].sign(Prepare(0, 1, d, 2)))
        replica.on_message(signers["r2"].sign(Commit(0, 1, d, 2)))
    assert sum(len(v) for v in replica.prepares.values()) == 1
    assert sum(len(v) for v in replica.commits.values()) == 1
    assert replica.rejected["conflicting"] == 98


def test_pending_requests_per_client_are_bounded() -> None:
    ring, signers = make_keys(0, ["r0", "r1", "r2", "r3", "c0"])
    replica = Replica(1, 4, 1, ring, signers["r1"], watermark_window=8)
    for ts in range(1, 101):
        replica.on_message(signers["c0"].sign(Request("c0", ts, {"k": ts})))
    assert len(replica.pending) == 8
    assert replica.rejected["rate_limited"] == 92


# --- 5. a stale PRE-PREPARE must not restart the timer ---------------------------------------


def test_stale_pre_prepare_of_an_executed_request_starts_no_timer() -> None:
    """A (Byzantine) primary assigns one request twice, at seqs 1 and 2.  The replica
    executes it at 1; the PRE-PREPARE for 2 arrives afterwards.  It used to put the
    executed request back into ``pending``, which restarted the view-change timer: a
    needless view change while idle."""
    ring, signers = make_keys(0, ["r0", "r1", "r2", "r3", "c0"])
    replica = Replica(1, 4, 1, ring, signers["r1"])
    req = signers["c0"].sign(Request("c0", 1, {"op": "x"}))
    d = request_digest(req)
    replica.on_message(signers["r0"].sign(PrePrepare(0, 1, d, req, 0)))
    for j in (2, 3):
        replica.on_message(signers[f"r{j}"].sign(Prepare(0, 1, d, j)))
    for j in (0, 2, 3):
        replica.on_message(signers[f"r{j}"].sign(Commit(0, 1, d, j)))
    assert replica.last_exec == 1 and not replica.waiting
    replica.on_message(signers["r0"].sign(PrePrepare(0, 2, d, req, 0)))
    assert not replica.pending
    assert not replica.waiting


def test_installing_an_older_certified_state_does_not_claim_the_stable_one() -> None:
    """Found by test_consensus_fuzz.py: a STATE-TRANSFER to a certified checkpoint older
    than the replica's stable one set ``stable_app_digest`` to the *older* application
    state's digest, which the replica would then serve as the stable state's (every
    STATE-TRANSFER it sent would fail the digest check).  Now only a transfer to the
    stable checkpoint itself sets it."""
    sim = _stable_cluster()  # seed 1, K = 2, stable at 2
    _ring, signers = make_keys(1, ["r0", "r1", "r2", "r3", "c0"])
    old = sim.replicas[0].on_message(signers["r3"].sign(FetchState(0, 3)))
    (old_transfer,) = [s.payload for s in old.sends if isinstance(s.payload, Signed)]
    for k in range(2, 4):
        sim.submit("c0", {"op": k})
    sim.run(100_000)
    assert all(r.stable_seq == 4 for r in sim.replicas)
    fresh = Replica(3, 4, 1, sim.keyring, signers["r3"], checkpoint_k=2, watermark_window=4)
    for proof in sim.replicas[0].stable_proof:  # checkpoint 4 becomes stable; nothing run
        fresh.on_message(proof)
    assert (fresh.stable_seq, fresh.last_exec) == (4, 0)
    fresh.on_message(old_transfer)  # the certified state at 2
    assert fresh.last_exec == 2
    assert fresh.stable_app_digest is None  # was the digest of the state at 2
    new = sim.replicas[0]
    new.retransmit()
    out = new.on_message(signers["r3"].sign(FetchState(2, 3)))
    (transfer,) = [s.payload for s in out.sends if isinstance(s.payload, Signed)]
    fresh.on_message(transfer)
    assert fresh.last_exec == 4
    assert fresh.stable_app_digest == new.stable_app_digest == new.app.digest()
