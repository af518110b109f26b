"""A replica bounds what it orders and what it sends (issue 41, items 5 and 6).

* It refuses (``too_large``) a REQUEST over ``max_request`` — whoever sends it, a client
  or a primary inside a PRE-PREPARE — so no certificate, VIEW-CHANGE or NEW-VIEW can
  carry one and outgrow a frame (BFT-LIVE-1).
* It cuts a STATE-TRANSFER into chunks of at most a frame (``max_message``): a replica
  more than a frame of requests behind still catches up, each chunk checked for its
  requests' signatures, the whole chain against the certified checkpoint digest before
  anything executes.

The replicas here run with a small frame (``FRAME``) and drop what they would send above
it, as the cluster's wire does (``wire.frame`` refuses it): with main's transfer (the
whole log in one message) the lagging replica never catches up, which the mutant test
shows.
"""

from __future__ import annotations

import functools
from typing import Any

from ostrom.consensus.crypto import Signer, make_keys
from ostrom.consensus.messages import (
    FetchState,
    Prepare,
    PrePrepare,
    Reply,
    Request,
    Signed,
    StateTransfer,
    canonical,
    max_request_bytes,
    replica_name,
    request_digest,
    sha256_hex,
)
from ostrom.consensus.replica import CounterApp, Output, Replica
from ostrom.harness.network import Simulation

#: A frame small enough that a hundred requests of a kilobyte exceed it.
FRAME = 96 * 1024
WINDOW = 4


class _Framed(Replica):
    """A replica whose sends above its frame are dropped, as the wire drops them."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.unsendable = 0
        self.largest = 0
        self.chunk_starts: set[int] = set()  # after_seq of each STATE-TRANSFER sent

    def _take(self) -> Output:
        out = super()._take()
        kept = []
        for s in out.sends:
            assert isinstance(s.payload, Signed)
            size = len(s.payload.encoded)
            self.largest = max(self.largest, size)
            if isinstance(s.payload.message, StateTransfer):
                self.chunk_starts.add(s.payload.message.after_seq)
            if size > self.max_message:
                self.unsendable += 1
            else:
                kept.append(s)
        out.sends = kept
        return out


def _world(n: int = 4) -> tuple[list[Replica], dict[str, Signer]]:
    names = [replica_name(i) for i in range(n)] + ["c0"]
    ring, signers = make_keys(11, names)
    f = (n - 1) // 3
    reps = [Replica(i, n, f, ring, signers[replica_name(i)]) for i in range(n)]
    return reps, signers


def _request(signers: dict[str, Signer], size: int, ts: int = 1) -> Signed:
    """A request of ``c0`` of exactly ``size`` encoded bytes."""
    base = signers["c0"].sign(Request("c0", ts, {"pad": ""}))
    return signers["c0"].sign(Request("c0", ts, {"pad": "x" * (size - len(base.encoded))}))


def test_a_replica_orders_a_request_at_the_bound_and_refuses_one_above() -> None:
    reps, signers = _world()
    bound = reps[0].max_request
    assert bound == max_request_bytes(4, reps[0].window)  # one source with the front's
    over = _request(signers, bound + 1)
    assert len(over.encoded) == bound + 1
    for r in reps:  # the primary does not order it, a backup does not relay it
        out = r.on_request(over)
        assert out.sends == [] and r.rejected["too_large"] == 1 and not r.pending
    at = _request(signers, bound)
    out = reps[0].on_request(at)
    pps = [s.payload for s in out.sends if isinstance(s.payload, Signed)]
    assert [type(p.message) for p in pps] == [PrePrepare]
    assert reps[0].rejected["too_large"] == 1


def test_a_primary_that_orders_an_oversized_request_gets_no_prepare() -> None:
    """A Byzantine primary signs a PRE-PREPARE of a request over the bound: no honest
    backup prepares it, so no prepared certificate (which needs 2f backups) can carry it
    into a VIEW-CHANGE."""
    reps, signers = _world()
    over = _request(signers, reps[0].max_request + 1)
    pp = reps[0].signer.sign(PrePrepare(0, 1, request_digest(over), over, 0))
    for r in reps[1:]:
        out = r.on_message(pp)
        assert not [s for s in out.sends if isinstance(s.payload.message, Prepare)]  # type: ignore[union-attr]
        assert r.rejected["too_large"] == 1 and (0, 1) not in r.pre_prepares


def _lagging_run(replica: type[Replica], requests: int) -> Simulation:
    sim = Simulation(
        4,
        1,
        seed=5,
        clients=1,
        checkpoint_k=2,
        watermark_window=WINDOW,
        replica_factory=functools.partial(replica, max_message=FRAME),
    )
    sim.partition([["r3"], ["r0", "r1", "r2", "c0"]])
    for k in range(requests):
        sim.submit("c0", {"k": k, "pad": "p" * 900})
    sim.run(until=lambda: not sim.clients["c0"].busy and not sim.backlog["c0"])
    assert sim.replicas[3].last_exec == 0
    logged = sum(len(r.encoded) for r in sim.replicas[0].history if r is not None)
    assert logged > FRAME or requests < 100, logged
    sim.run_fair()
    return sim


def test_a_replica_a_state_larger_than_a_frame_behind_catches_up_in_chunks() -> None:
    sim = _lagging_run(_Framed, 120)
    r3, r0 = sim.replicas[3], sim.replicas[0]
    assert r3.executed_log == r0.executed_log[: len(r3.executed_log)]
    assert r3.last_exec >= r0.stable_seq and r3.app.digest() == sim.replicas[1].app.digest()
    assert all(isinstance(r, _Framed) and r.unsendable == 0 for r in sim.replicas)
    assert max(r.largest for r in sim.replicas if isinstance(r, _Framed)) <= FRAME
    # more than one chunk was needed and sent, each from where the one before ended
    starts = set().union(*(r.chunk_starts for r in sim.replicas if isinstance(r, _Framed)))
    assert len(starts) >= 2, starts


class _WholeLog(_Framed):
    """Main's transfer: the whole log since ``after`` in one STATE-TRANSFER."""

    def _chunk(self, after: int, app_digest: str) -> tuple[Signed | None, ...]:
        return tuple(self.history[after : self.stable_seq])


def test_the_whole_log_in_one_transfer_never_catches_up() -> None:
    """The check above can fail: with main's transfer the lagging replica's catch-up is
    unsendable past the frame, for good."""
    sim = _lagging_run(_WholeLog, 120)
    assert sim.replicas[3].last_exec == 0
    assert sum(r.unsendable for r in sim.replicas if isinstance(r, _Framed)) > 0


def test_a_chunk_of_a_forged_or_reordered_log_executes_nothing() -> None:
    """Chunks are kept unexecuted until the last one makes the whole chain check against
    the certified digest: a sender that reorders the log gets nothing executed, and the
    receiver asks for the next chunk from where the kept ones end."""
    sim = _lagging_run(_Framed, 40)
    donor = sim.replicas[0]
    r3 = sim._new_replica(3)  # r3 as it started: nothing executed
    assert isinstance(r3, _Framed) and r3.last_exec == 0
    stable = donor.stable_seq
    log = list(donor.history[:stable])
    half = stable // 2
    first = StateTransfer(0, tuple(log[:half]), "0" * 64, donor.stable_proof, 0)
    out = r3.on_message(donor.signer.sign(first))
    assert r3.last_exec == 0 and r3.transfers[0].position == half
    asks = [s.payload.message for s in out.sends if isinstance(s.payload, Signed)]
    assert asks == [FetchState(half, 3)]
    swapped = [log[half + 1], log[half], *log[half + 2 :]]
    rest = StateTransfer(half, tuple(swapped), donor.stable_app_digest or "", donor.stable_proof, 0)
    r3.on_message(donor.signer.sign(rest))
    assert r3.last_exec == 0 and r3.rejected["tampered"] == 1 and 0 not in r3.transfers
    # the honest chunks from the start: executed once the last arrives
    r3.on_message(donor.signer.sign(first))
    right = StateTransfer(
        half, tuple(log[half:]), donor.stable_app_digest or "", donor.stable_proof, 0
    )
    r3.on_message(donor.signer.sign(right))
    assert r3.last_exec == stable and r3.executed_log == donor.executed_log[:stable]


class _BigResult(CounterApp):
    """An application whose result is larger than the frame."""

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]:
        super().execute(operation)
        return {"blob": "b" * (2 * FRAME)}


def test_a_result_larger_than_a_frame_is_answered_by_its_digest() -> None:
    """Every honest replica sends the same REPLY within the frame: the result's digest,
    so the client still gets f+1 matching replies (and learns the result is too large)."""
    names = [replica_name(i) for i in range(4)] + ["c0"]
    ring, signers = make_keys(12, names)
    reps = [
        _Framed(
            i,
            4,
            1,
            ring,
            signers[replica_name(i)],
            app=_BigResult(),
            max_message=FRAME,
            watermark_window=WINDOW,
            checkpoint_k=2,
        )
        for i in range(4)
    ]
    req = signers["c0"].sign(Request("c0", 1, {"k": 1}))
    queue: list[tuple[int, Signed]] = []
    replies: list[Signed] = []

    def route(src: int, out: Output) -> None:
        for send in out.sends:
            assert isinstance(send.payload, Signed)
            if send.dest == "c0":
                replies.append(send.payload)
            for j in range(4):
                if j != src and send.dest in ("*", replica_name(j)):
                    queue.append((j, send.payload))

    route(0, reps[0].on_request(req))
    while queue:
        j, m = queue.pop(0)
        route(j, reps[j].on_message(m))
    assert len(replies) == 4 and all(r.unsendable == 0 for r in reps)
    digest = {"too_large": sha256_hex(canonical({"blob": "b" * (2 * FRAME)}))}
    assert all(isinstance(r.message, Reply) and r.message.result == digest for r in replies)
    assert max(len(r.encoded) for r in replies) <= FRAME
