"""Timer-driven retransmission (docs/consensus.md, "Retransmission").

PBFT's liveness assumes that messages are retransmitted until they are delivered; the
view-change timer is there for a faulty primary, not for a lossy link.  The tests:

1. with no faulty replica and 5% or 20% loss, N = 4 and N = 7, every request of a few
   dozen executes everywhere on the seeded random (fair) scheduler, and no replica ever
   times out: no VIEW-CHANGE is signed (BFT-LIVE-1 without spurious view changes);
2. a message's timer doubles up to its cap and stops once the receiver has the message;
   a replica's own retransmission period doubles while it makes no progress and
   returns to its base once it does;
3. ``network.holds`` (when a message is superseded) agrees with what
   ``Replica.retransmit`` re-sends;
4. the earlier scheduler is still selectable (``retransmission="quiet"``), and under the
   same loss it does change views; bad parameters are refused with a message.

No test reads the wall clock: time is the simulation's logical ticks.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_consensus_stateful import check_safety_1, check_safety_2

from ostrom.consensus.messages import (
    FetchState,
    PrePrepare,
    Reply,
    Signed,
    ViewChange,
    replica_name,
)
from ostrom.consensus.replica import BROADCAST, Output
from ostrom.consensus.storage import MemoryLocation
from ostrom.harness.byzantine import Silent
from ostrom.harness.network import (
    RESEND_BACKOFF_DOUBLINGS,
    Faults,
    Simulation,
    holds,
)

CLIENTS = 4


def _spy_view_changes(sim: Simulation) -> set[tuple[str, int]]:
    """(sender, view) of every VIEW-CHANGE handed to the network: a replica timed out."""
    seen: set[tuple[str, int]] = set()
    send = sim.network.send

    def spy(src: str, dst: str, payload: Signed | bytes, delay: int = 0) -> None:
        if isinstance(payload, Signed) and isinstance(payload.message, ViewChange):
            seen.add((payload.sender, payload.message.new_view))
        send(src, dst, payload, delay)

    sim.network.send = spy  # type: ignore[method-assign]
    return seen


def _workload(sim: Simulation, requests: int) -> Callable[[], bool]:
    """Submit ``requests`` operations round-robin over the clients; return ``done()``:
    every honest replica executed every one and every client has its results
    (O(clients x replicas), where ``Simulation.all_executed`` is O(history))."""
    names = list(sim.clients)
    per_client = Counter(names[k % len(names)] for k in range(requests))
    for k in range(requests):
        sim.submit(names[k % len(names)], {"op": "retransmission", "k": k})
    honest = [sim.replicas[i] for i in sim.honest]

    def done() -> bool:
        return all(
            len(sim.clients[c].results) == m and all(r.last_ts.get(c, 0) == m for r in honest)
            for c, m in per_client.items()
        )

    return done


# --- 1. no spurious view changes under loss ------------------------------------------------


@pytest.mark.parametrize(("n", "requests"), [(4, 48), (7, 24)])
@pytest.mark.parametrize("loss", [0.05, 0.20])
@settings(max_examples=6)
@given(seed=st.integers(0, 2**32 - 1))
def test_loss_causes_no_view_change(n: int, requests: int, loss: float, seed: int) -> None:
    """BFT-LIVE-1 without spurious view changes: no faulty replica, independent loss of
    every message (acknowledgement-free: the network drops, the timers recover), random
    delivery order; every request executes at every replica and none times out."""
    sim = Simulation(n, (n - 1) // 3, seed, clients=CLIENTS, faults=Faults(drop=loss))
    view_changes = _spy_view_changes(sim)
    done = _workload(sim, requests)
    sim.run(2_000_000, until=done)
    assert done(), (
        f"not every request executed: {[r.last_exec for r in sim.replicas]}, "
        f"views {[r.view for r in sim.replicas]}"
    )
    assert view_changes == set(), f"spurious view changes: {sorted(view_changes)}"
    assert all(r.view == 0 and r.active for r in sim.replicas)
    assert sum(len(c.results) for c in sim.clients.values()) == requests
    check_safety_1(sim)  # BFT-SAFE-1
    check_safety_2(sim)  # BFT-SAFE-2
    stats = sim.network.stats
    assert stats["dropped"] > 0 and stats["retransmitted"] > 0  # loss was exercised


# --- 2. back-off ---------------------------------------------------------------------------


def test_a_message_timer_doubles_to_its_cap_and_stops_once_acknowledged() -> None:
    """BFT-LIVE-1.  The fixed timers of before (``congestion=False``): every PRE-PREPARE to
    replica 3 is lost until the link is repaired: the primary re-sends it 10, 20, 40 and
    40 ticks apart (period 10, cap 40), and not again once it arrived; replica 3 then
    executes the request.  (With congestion control: test_consensus_congestion.)"""
    sim = Simulation(
        4, 1, 0, base_timeout=10_000, retransmit_period=10, retransmit_max=40, congestion=False
    )
    lost: list[int] = []  # ticks at which the primary's PRE-PREPARE to r3 was lost
    after: list[int] = []  # ... and sent once the link works
    broken = [True]
    send = sim.network.send

    def lossy(src: str, dst: str, payload: Signed | bytes, delay: int = 0) -> None:
        pp = isinstance(payload, Signed) and isinstance(payload.message, PrePrepare)
        if pp and (src, dst) == ("r0", "r3"):
            (lost if broken[0] else after).append(sim.network.now)
            if broken[0]:
                sim.network.stats["dropped"] += 1
                return
        send(src, dst, payload, delay)

    sim.network.send = lossy  # type: ignore[method-assign]
    sim.submit("c0", {"op": "x"})
    sim.run(100_000, until=lambda: len(lost) == 5)
    assert [b - a for a, b in itertools.pairwise(lost)] == [10, 20, 40, 40]
    ((key, rec),) = [(k, r) for k, r in sim.outstanding.items() if k[:2] == ("r0", "r3")]
    assert rec.retransmissions == 4 and rec.interval == 40
    assert sim.replicas[3].last_exec == 0  # it never got the request's body
    broken[0] = False
    sim.run(100_000, until=lambda: sim.replicas[3].last_exec == 1)
    assert sim.replicas[3].last_exec == 1
    sim.run(100_000)  # to quiescence: nothing is outstanding on that link any more
    assert len(after) == 1 and key not in sim.outstanding


def test_a_replicas_own_period_doubles_without_progress_and_resets_with_it() -> None:
    """BFT-LIVE-1.  The client is cut off, so its request reaches nobody and every replica
    idles: replica 0's own retransmission period doubles (base, 2, 4, 8, 16 times the
    base, then stays capped).  After the heal the request executes, and the period after
    that progress is the base again."""
    sim = Simulation(4, 1, 0, base_timeout=4000)
    base, cap = 4000 // 4, (4000 // 4) << RESEND_BACKOFF_DOUBLINGS
    sim.partition([["c0"], [replica_name(i) for i in range(4)]])
    sim.submit("c0", {"op": "x"})
    intervals = [sim.resend_deadlines[0]]  # armed at tick 0 for one base period
    last = [sim.resend_deadlines[0]]

    def observe() -> int:  # before every step: a period fired if its deadline moved
        if sim.resend_deadlines[0] != last[0]:
            last[0] = sim.resend_deadlines[0]
            intervals.append(last[0] - sim.network.now)
        return len(intervals)

    sim.run(100_000, until=lambda: observe() >= 7)
    assert intervals == [base, 2 * base, 4 * base, 8 * base, cap, cap, cap]
    assert all(r.last_exec == 0 for r in sim.replicas)
    sim.heal()
    sim.run(100_000, until=lambda: observe() > 0 and all(r.last_exec == 1 for r in sim.replicas))
    assert all(r.last_exec == 1 for r in sim.replicas)
    executed_at = len(intervals)
    sim.partition([["c0"], [replica_name(i) for i in range(4)]])  # a second request that
    sim.submit("c0", {"op": "y"})  # reaches nobody keeps the clock running
    sim.run(100_000, until=lambda: observe() > executed_at + 1)
    # progress since the last period: back to the base, then doubling again
    assert intervals[executed_at:] == [base, 2 * base]


# --- 3. superseded is what Replica.retransmit no longer sends ---------------------------------


def _expand(out: Output, src: str, n: int) -> set[tuple[str, int]]:
    """(receiver, id(payload)) of every send in ``out``."""
    links: set[tuple[str, int]] = set()
    for s in out.sends:
        dests = [replica_name(i) for i in range(n)] if s.dest == BROADCAST else [s.dest]
        links.update((d, id(s.payload)) for d in dests if d != src)
    return links


def _check_holds(sim: Simulation, sent: dict[str, dict[tuple[str, int], Signed | bytes]]) -> None:
    """Every honest replica's ``retransmit`` against ``holds`` on everything it sent."""
    for i in sim.honest:
        r, name = sim.replicas[i], replica_name(i)
        out = r.retransmit()  # it opens a new period of its rate limits: harmless here
        resent = _expand(out, name, sim.n)
        for s in out.sends:
            dests = [d for d, ident in resent if ident == id(s.payload)]
            assert all(holds(r, d, s.payload) for d in dests), s.payload
        for (dst, ident), payload in sent[name].items():
            m = payload.message if isinstance(payload, Signed) else None
            if isinstance(m, Reply | FetchState):  # not re-sent unasked / signed anew
                continue
            assert holds(r, dst, payload) == ((dst, ident) in resent), payload


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_holds_mirrors_replica_retransmit(seed: int) -> None:
    """``holds`` decides when a message's timer stops; it must agree with
    ``Replica.retransmit``, which re-sends what a replica still holds (BFT-LIVE-1).  A
    lossy N = 7 run with a silent primary (a view change), small checkpoints (garbage
    collection) and replica 6 cut off until the others are past its window (it fetches
    the state after the heal); every 300 steps every honest replica's retransmission is
    compared with ``holds`` on everything it sent."""
    sim = Simulation(
        7,
        2,
        seed,
        byzantine={0: Silent()},
        faults=Faults(drop=0.1),
        clients=2,
        checkpoint_k=2,
        watermark_window=4,
    )
    sent: dict[str, dict[tuple[str, int], Signed | bytes]] = {replica_name(i): {} for i in range(7)}
    send = sim.network.send

    def spy(src: str, dst: str, payload: Signed | bytes, delay: int = 0) -> None:
        if src in sent:
            sent[src][(dst, id(payload))] = payload
        send(src, dst, payload, delay)

    sim.network.send = spy  # type: ignore[method-assign]
    sim.partition([["r6"], [*(replica_name(i) for i in range(6)), *sim.clients]])
    done = _workload(sim, 12)

    def ahead() -> bool:  # the others' stable checkpoint is past replica 6's window
        return min(sim.replicas[i].stable_seq for i in range(1, 6)) >= 6

    for _ in range(100):
        sim.run(300, until=ahead)
        _check_holds(sim, sent)
        if ahead():
            break
    assert ahead() and sim.replicas[6].last_exec == 0
    sim.heal()
    for _ in range(100):
        sim.run(300, until=done)
        _check_holds(sim, sent)
        if done():
            break
    assert done()
    assert min(r.view for r in sim.replicas[1:]) >= 1  # the view change was exercised
    fetches = [p for p in sent["r6"].values() if isinstance(p, Signed)]
    assert any(isinstance(p.message, FetchState) for p in fetches)  # state transfer too


# --- 4. the earlier scheduler, and bad parameters -----------------------------------------


def test_the_quiet_scheduler_is_still_selectable() -> None:
    """``retransmission="quiet"``: no per-message timers; under 20% loss its
    retransmission comes too late and replicas time out (the "before" of
    docs/consensus.md, "Retransmission"), where the timer scheduler, on the same seed
    and workload, has none."""
    timeouts: dict[str, int] = {}
    for mode in ("quiet", "timer"):
        sim = Simulation(4, 1, 1, clients=CLIENTS, faults=Faults(drop=0.2), retransmission=mode)
        view_changes = _spy_view_changes(sim)
        done = _workload(sim, 48)
        sim.run(2_000_000, until=done)
        timeouts[mode] = len(view_changes)
        if mode == "quiet":
            assert sim.retransmission == "quiet"
            assert not sim.outstanding and not sim.resend_deadlines
            assert sim.network.stats["retransmitted"] == 0
        else:
            assert done()
        check_safety_1(sim)
        check_safety_2(sim)
    assert timeouts["quiet"] > 0 and timeouts["timer"] == 0


def test_a_restart_counts_as_progress_whatever_the_replicas_progress() -> None:
    """The quiet scheduler retransmits once per change of ``progress()``.  A restarted
    replica counts its progress from the start again; as a sum, a crash and restart of a
    replica that had made one step's progress, after another replica made one, read as
    "nothing moved", and its start value (0) decided it.  Now every crash and restart is
    a change, and each replica's progress is compared on its own."""
    sim = Simulation(4, 1, 0, stores=lambda i: MemoryLocation())
    start = sim.progress()
    sim.replicas[1].progress += 1
    moved = sim.progress()
    assert moved != start
    sim.replicas[2].progress += 1
    sim.crash(2)
    sim.restart(2)
    after = sim.progress()
    assert sim.replicas[2].progress == 0
    assert after != moved and after != start
    assert sum(after[0]) == sum(moved[0])  # the sum alone would have missed both events


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retransmission": "eager"}, "retransmission='eager'"),
        ({"retransmit_period": 0}, "positive integer"),
        ({"retransmit_period": True}, "positive integer"),
        ({"retransmit_period": 960}, "not below the view-change timeout 960"),
        ({"retransmit_period": 100, "retransmit_max": 99}, "at least retransmit_period=100"),
    ],
)
def test_bad_retransmission_parameters_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Simulation(4, 1, 0, **kwargs)


def test_defaults_follow_the_view_change_timeout() -> None:
    sim = Simulation(4, 1, 0)  # view-change timeout 60 N^2 = 960 ticks
    assert sim.retransmission == "timer"
    assert (sim.retransmit_period, sim.retransmit_max) == (120, 240)
    quiet = Simulation(4, 1, 0, retransmission="quiet", retransmit_period=5000)
    assert quiet.retransmit_period == 5000  # unused by the quiet scheduler: not checked
