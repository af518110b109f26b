"""A deterministic simulated network and the driver that runs replicas and clients on it.

Everything is a discrete-event simulation in *logical* time: one delivery is one tick,
timeouts are deadlines in ticks and fire as explicit events, and every choice (which
ready message goes next, drops, duplicates, delays) comes from a ``random.Random``
seeded by the caller.  The same seed gives the same run, message for message.

The property tests drive the primitives directly (``deliver``, ``drop``, ``duplicate``,
``fire_timeout``, ``partition``...); ``Simulation.run`` is the seeded random scheduler
and ``Simulation.run_fair`` the liveness driver of BFT-LIVE-1: no loss, every message
delivered, retransmission and timeouts when the system goes quiet.

Retransmission (docs/consensus.md, "Retransmission") is the driver's, the thin layer
around the sans-IO replica; PBFT's liveness assumes messages are retransmitted until
delivered (BFT-LIVE-1), and the view-change timer is for a faulty primary, not for a
lossy link.  With ``retransmission="timer"`` (the default) there are two timers:

* **one per message and link** (the transport): every message a replica or client sends
  is re-sent an eighth of the view-change timeout later, then twice as long after each
  retransmission up to a quarter of the timeout (five chances before the timer that a
  lost message would otherwise fire), until the receiver acknowledges it or the sender
  no longer holds it (``holds``: the message is superseded);
* **one per replica** (the protocol): ``Replica.retransmit`` every quarter of the
  replica's view-change timeout, doubling while it makes no progress, with what the
  receivers acknowledged skipped.  It carries what no per-message timer can: messages
  this replica never sent to the peer that needs them (relayed PRE-PREPAREs, requests
  for a new primary, FETCH-STATEs) and a new period of its rate limits.

With ``congestion=True`` (the default; docs/consensus.md, "Congestion control") both are
bounded by what the network carries (``ostrom.consensus.congestion``): a message's timer
starts at its sender's observed timeout (every delivery is a sample) and grows by one
timeout per retransmission, each link re-sends at most ``LINK_BUDGET`` messages per timeout, what
the receiver executed counts as acknowledged (``Simulation.covered``), and the
view-change timers last at least ``VIEW_CHANGE_DELAYS`` observed timeouts.  Without it
the fixed periods above collapse under load (issue 42's run).

``retransmission="quiet"`` is the earlier scheduler, kept to measure against: every
replica retransmits when nothing is in flight, which under load comes too late.

With ``stores=`` every honest replica is a ``storage.DurableReplica`` (its durable state
in SQLite, written before its sends are released), and ``crash(i)`` / ``restart(i)``
take one down (volatile state lost, timer stopped, messages to it dropped) and rebuild
it from its store; ``restart(i, amnesiac=True)`` deletes the store first, a fault.
"""

from __future__ import annotations

import dataclasses
import heapq
import operator
import random
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal, Protocol

from ostrom.consensus.client import Client
from ostrom.consensus.congestion import (
    ACK_MEMORY_TIMEOUTS,
    RESEND_BACKOFF_DOUBLINGS,
    RESEND_PERIOD_DIVISOR,
    RETRANSMIT_BACKOFF_CAP,
    RETRANSMIT_PERIOD_DIVISOR,
    DelayEstimator,
    LinkBudget,
    covers,
    holds,
    resend_interval,
    retransmission_wait,
    view_change_timeout,
    waited_timeout,
)
from ostrom.consensus.crypto import KeyRing, make_keys
from ostrom.consensus.messages import (
    Commit,
    Prepare,
    PrePrepare,
    Request,
    Signed,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica import BROADCAST, RETRY_LATER, App, Output, Replica
from ostrom.consensus.storage import DurableReplica, StoreLocation

__all__ = [
    "RESEND_BACKOFF_DOUBLINGS",
    "Envelope",
    "Faults",
    "Retransmission",
    "Simulation",
    "StoreFactory",
    "holds",
]


class Node(Protocol):
    """What the driver calls on a replica (honest ``Replica`` or a Byzantine wrapper)."""

    def on_message(self, payload: object) -> Output: ...

    def on_timeout(self) -> Output: ...

    def retransmit(self) -> Output: ...


@dataclasses.dataclass(frozen=True)
class Faults:
    """Probabilistic faults of the random scheduler (the tests inject theirs directly)."""

    drop: float = 0.0
    duplicate: float = 0.0
    reorder: bool = True
    max_delay: int = 0


@dataclasses.dataclass
class Envelope:
    uid: int
    src: str
    dst: str
    payload: Signed | bytes
    deliver_at: int
    #: The tick this copy entered the network (after its sender's own ``delay``): what
    #: its receiver's acknowledgement echoes, so that every delivery measures the delay.
    sent_at: int = 0


NO_FAULTS: Final = Faults()


class Network:
    """Point-to-point links with loss, duplication, delay, reordering and partitions."""

    def __init__(self, rng: random.Random, faults: Faults | None = None) -> None:
        self.rng = rng
        self.faults = faults or NO_FAULTS
        self.now = 0
        self.queue: list[Envelope] = []
        self.groups: list[frozenset[str]] | None = None
        self.stats: Counter[str] = Counter()
        self._uid = 0

    def connected(self, a: str, b: str) -> bool:
        if self.groups is None:
            return True
        return any(a in g and b in g for g in self.groups)

    def partition(self, groups: Iterable[Iterable[str]]) -> None:
        """Cut every link between different groups (principals in no group are isolated)."""
        self.groups = [frozenset(g) for g in groups]

    def heal(self) -> None:
        self.groups = None

    def send(self, src: str, dst: str, payload: Signed | bytes, delay: int = 0) -> None:
        self.stats["sent"] += 1
        if not self.connected(src, dst):
            self.stats["dropped_partition"] += 1
            return
        if self.faults.drop and self.rng.random() < self.faults.drop:
            self.stats["dropped"] += 1
            return
        copies = 2 if self.faults.duplicate and self.rng.random() < self.faults.duplicate else 1
        for _ in range(copies):
            extra = self.rng.randint(0, self.faults.max_delay) if self.faults.max_delay else 0
            self.enqueue(src, dst, payload, self.now + delay + extra, self.now + delay)

    def enqueue(
        self, src: str, dst: str, payload: Signed | bytes, at: int, sent_at: int | None = None
    ) -> None:
        self._uid += 1
        sent = self.now if sent_at is None else sent_at
        self.queue.append(Envelope(self._uid, src, dst, payload, at, sent))

    def ready(self) -> list[int]:
        return [i for i, e in enumerate(self.queue) if e.deliver_at <= self.now]

    def take(self, index: int) -> Envelope:
        return self.queue.pop(index)


#: The retransmission schedulers of ``Simulation`` (docs/consensus.md, "Retransmission").
RETRANSMISSION_MODES: Final = ("timer", "quiet")
Retransmission = Literal["timer", "quiet"]
#: A message is first retransmitted a ``RETRANSMIT_PERIOD_DIVISOR``-th of the view-change
#: timeout after it was sent (``retransmit_period``), then after twice as long each time,
#: up to ``RETRANSMIT_BACKOFF_CAP`` periods (``retransmit_max``; both in
#: ``ostrom.consensus.congestion``, which the cluster's replica processes share).
#: Every replica runs its own ``Replica.retransmit`` each ``RESEND_PERIOD_DIVISOR``-th of
#: its view-change timeout, doubling at most ``RESEND_BACKOFF_DOUBLINGS`` times while it
#: makes no progress (``congestion.resend_interval``).
#: Refusals that mean "not yet" (the receiver may take the message later): no
#: acknowledgement, so the sender keeps retransmitting.  ``out_of_window`` only above the
#: receiver's window (it is behind; below, its stable checkpoint covers the message), and
#: ``stale_view`` for a message of the view the receiver is changing to (it refuses
#: normal-case messages until the NEW-VIEW arrives).  Any other outcome, accepted, a
#: duplicate or refused for good, is acknowledged.
_REFUSALS: Final = operator.itemgetter(*RETRY_LATER, "stale_view")
_FAR: Final = 1 << 62  # a tick no run reaches
#: Acknowledgements are remembered for this many view-change timeouts (the cluster's too).
ACK_MEMORY: Final = ACK_MEMORY_TIMEOUTS


#: A link's message: (sender, receiver, ``id`` of the payload object).
_Key = tuple[str, str, int]


@dataclasses.dataclass
class Outstanding:
    """A message on one link that its sender's transport has not seen acknowledged.

    ``interval`` is the current back-off: the first retransmission comes
    ``retransmit_period`` ticks after the send, each later one twice as long after the
    previous, up to ``retransmit_max``.
    """

    src: str
    dst: str
    payload: Signed | bytes
    delay: int
    due: int
    interval: int
    retransmissions: int = 0


AppFactory = Callable[[], App]
ReplicaFactory = Callable[..., Replica]
#: Where replica ``i``'s store lives (``storage.MemoryLocation``, ``FileLocation``...).
StoreFactory = Callable[[int], StoreLocation]
#: ``Simulation.progress()``: the honest replicas' progress, crashes and restarts, and the
#: clients' result counts, compared only for equality.
Moved = tuple[tuple[int, ...], int, tuple[int, ...]]


class Simulation:
    """N replicas (some wrapped by Byzantine strategies) and clients on one ``Network``."""

    def __init__(
        self,
        n: int = 4,
        f: int = 1,
        seed: int = 0,
        *,
        byzantine: Mapping[int, Any] | None = None,
        faults: Faults | None = None,
        clients: int = 1,
        app_factory: AppFactory | None = None,
        checkpoint_k: int = 16,
        watermark_window: int = 32,
        base_timeout: int | None = None,
        client_timeout: int | None = None,
        replica_factory: ReplicaFactory = Replica,
        stores: StoreFactory | None = None,
        beyond_f: bool = False,
        retransmission: Retransmission = "timer",
        retransmit_period: int | None = None,
        retransmit_max: int | None = None,
        congestion: bool = True,
    ) -> None:
        """``beyond_f=True`` allows more than ``f`` Byzantine replicas: only for the control
        experiment that shows the safety checks can fail (docs/consensus.md, "The
        adversary suite"); PBFT promises nothing then, so the default refuses.

        ``retransmission`` chooses how lost messages come back (docs/consensus.md,
        "Retransmission"): ``"timer"`` gives every message sent its own timer, first
        after ``retransmit_period`` ticks (default: an eighth of the view-change timeout,
        which must stay above it), doubling up to ``retransmit_max`` (default: a
        quarter of the timeout); ``"quiet"`` is the earlier scheduler, which
        retransmits only when nothing is in flight (kept to measure against).

        ``congestion`` (the default; docs/consensus.md, "Congestion control") bounds the
        timer scheduler's retransmission by what the network carries: a message's first
        retransmission waits its sender's observed timeout (``retransmit_period`` until
        the first acknowledgement), each later one twice as long (at most
        ``retransmit_max``, unbounded by default), each link re-sends at most
        ``congestion.LINK_BUDGET`` messages per timeout, what the receiver's execution
        covers counts as acknowledged (cumulative acknowledgement), and the view-change
        and retransmission periods last at least ``congestion.VIEW_CHANGE_DELAYS``
        observed timeouts.  ``congestion=False`` is the fixed timers of before (period,
        doubling to the cap), kept to measure against."""
        self.n, self.f = n, f
        self.rng = random.Random(seed)
        self.client_names = [f"c{i}" for i in range(clients)]
        principals = [replica_name(i) for i in range(n)] + self.client_names
        self.keyring: KeyRing
        self.keyring, signers = make_keys(seed, principals)
        timeout = base_timeout if base_timeout is not None else 60 * n * n
        self.retransmission: Retransmission = retransmission
        self.retransmit_period, self.retransmit_max = _retransmit_schedule(
            retransmission, timeout, retransmit_period, retransmit_max
        )
        self.congestion = congestion and retransmission == "timer"
        # congestion control: each sender's observed delay (by principal), each link's
        # retransmission budget, and the longest a message's back-off may grow
        self.delays: dict[str, DelayEstimator] = {}
        self.budgets: dict[tuple[str, str], LinkBudget] = {}
        self._ceiling = self.retransmit_max if retransmit_max is not None else _FAR
        self._fixed_cap = self.retransmit_period * RETRANSMIT_BACKOFF_CAP

        def new_replica(i: int) -> Replica:
            return replica_factory(
                i,
                n,
                f,
                self.keyring,
                signers[replica_name(i)],
                app=None if app_factory is None else app_factory(),
                checkpoint_k=checkpoint_k,
                watermark_window=watermark_window,
                base_timeout=timeout,
            )

        self._new_replica = new_replica  # a restart builds a fresh replica the same way
        self.replicas = [new_replica(i) for i in range(n)]
        self.byzantine: dict[int, Any] = dict(byzantine or {})
        if len(self.byzantine) > f and not beyond_f:
            raise ValueError(f"{len(self.byzantine)} Byzantine replicas > f={f}")
        for i, strategy in sorted(self.byzantine.items()):
            strategy.attach(self.replicas[i], random.Random(self.rng.getrandbits(64)), n)
        self.honest = [i for i in range(n) if i not in self.byzantine]
        # crash and restart: durable honest replicas (a store each), replicas that are down
        self.stores: dict[int, StoreLocation] = {}
        self.durable: dict[int, DurableReplica] = {}
        self.down: set[int] = set()
        self.restarts: Counter[str] = Counter()
        for i in self.honest if stores is not None else ():
            assert stores is not None
            self.stores[i] = stores(i)
            self.durable[i] = DurableReplica.create(self.replicas[i], self.stores[i])
        self.clients = {c: Client(c, signers[c], self.keyring, n, f) for c in self.client_names}
        self.client_timeout = client_timeout if client_timeout is not None else 2 * timeout
        self.network = Network(random.Random(self.rng.getrandbits(64)), faults)
        self.backlog: dict[str, deque[dict[str, Any]]] = {c: deque() for c in self.clients}
        self.deadlines: dict[str, int] = {}
        self._armed_progress: dict[int, int] = {}
        self._armed_at: dict[str, int] = {}  # when each running timer was (re)started
        self._retransmitted_at: Moved | None = None
        self.executed = 0  # executions at honest replicas (throughput)
        # timer-driven retransmission (docs/consensus.md, "Retransmission"): per link,
        # the messages not yet acknowledged, by (src, dst, id(payload)) (the record keeps
        # the payload alive, so its id is not reused), and their timers (a heap of (due,
        # uid, key); an entry whose record was acknowledged or re-armed is stale) ...
        self.outstanding: dict[_Key, Outstanding] = {}
        self._timers: list[tuple[int, int, _Key]] = []
        self._timer_uid = 0
        # ... what each receiver acknowledged (id -> (payload, tick); pruned after
        # ACK_MEMORY view-change timeouts), and each replica's own retransmission period
        self.acknowledged: dict[str, dict[int, tuple[Signed | bytes, int]]] = {}
        self._ack_memory = ACK_MEMORY * timeout
        self._pruned_at = 0
        self.resend_deadlines: dict[int, int] = {}
        self._next_resend = _FAR  # the earliest of them (a check per tick, not a scan)
        self._resend_interval: dict[int, int] = {}
        self._resend_progress: dict[int, int] = {}
        if retransmission == "timer":
            for i in range(n):
                self._arm_resend(i)

    # --- plumbing -----------------------------------------------------------------------

    def node(self, i: int) -> Node:
        return self.byzantine.get(i) or self.durable.get(i) or self.replicas[i]

    def route(self, src: str, out: Output, *, periodic: bool = False) -> None:
        """Hand ``out``'s sends to the network, one per link.  With timer-driven
        retransmission each starts its link's timer; a ``periodic`` retransmission
        skips what the receiver acknowledged and what the link still retransmits on its
        own timer.  A Byzantine replica's messages get no timer: what it re-sends, and
        when, is its strategy's (``Silent`` stays silent); only its periodic
        ``retransmit`` runs, through the strategy."""
        timer = self.retransmission == "timer"
        track = timer and _index(src) not in self.byzantine
        for s in out.sends:
            if timer:  # a sender has what it sends (its own PRE-PREPARE is never relayed back)
                self._has(src, s.payload)
            dests = (
                [replica_name(i) for i in range(self.n) if replica_name(i) != src]
                if s.dest == BROADCAST
                else [s.dest]
            )
            for d in dests:
                if d != src:
                    if timer:
                        key = (src, d, id(s.payload))
                        if periodic and (
                            key in self.outstanding
                            or key[2] in self.acknowledged.get(d, {})
                            or self.covered(d, s.payload)
                        ):
                            self.network.stats["resend_skipped"] += 1
                            continue
                        if track:
                            self._track(key, s.payload, s.delay)
                    self.network.send(src, d, s.payload, s.delay)
        if _index(src) in self.honest:
            self.executed += len(out.executed)

    def _rearm(self, i: int) -> None:
        """A replica's view-change timer runs while it waits; progress restarts it."""
        r, name = self.replicas[i], replica_name(i)
        if not r.waiting or i in self.down:
            self.deadlines.pop(name, None)
        elif name not in self.deadlines or self._armed_progress.get(i) != r.progress:
            self.deadlines[name] = self.network.now + self.view_change_timeout(i)
            self._armed_at[name] = self.network.now
            self._armed_progress[i] = r.progress

    def view_change_timeout(self, i: int) -> int:
        """Replica ``i``'s view-change timer: its own (``Replica.timeout_duration``), and
        with congestion control at least ``VIEW_CHANGE_DELAYS`` observed timeouts — its
        own, or the ``f+1``-th largest of its own and its peers' (``waited_timeout``: what
        it waits for is re-sent on its senders' timeouts) — (BFT-LIVE-1: a timer shorter
        than a commit under the current queueing fires on a correct primary, and the view
        change it starts adds to the queue)."""
        r = self.replicas[i]
        own = r.timeout_duration()
        observed = self._observed(replica_name(i))
        if observed is None:
            return own
        peers = [
            est.rto()
            for k in range(self.n)
            if k != i and (est := self.delays.get(replica_name(k))) is not None and est.samples
        ]
        return view_change_timeout(
            own, r.consecutive_view_changes, waited_timeout(observed, peers, self.f)
        )

    def client_wait(self, c: str) -> int:
        """Client ``c``'s timer: ``client_timeout``, and with congestion control at least
        twice a view-change timer of its observed delay (a client that gives up early
        broadcasts its request to every replica, more load on a loaded network)."""
        observed = self._observed(c)
        if observed is None:
            return self.client_timeout
        return max(self.client_timeout, 2 * view_change_timeout(0, 0, observed))

    def _observed(self, principal: str) -> int | None:
        """``principal``'s timeout as measured, None before its first sample (or without
        congestion control): only a measured delay lengthens a timer, never the initial
        guess ``retransmit_period``, which is an eighth of the view-change timeout."""
        if not self.congestion:
            return None
        est = self.estimator(principal)
        return est.rto() if est.samples else None

    def _lengthened(self, name: str, i: int | None) -> bool:
        """A timer due now whose length, measured again with the delay observed since it
        started, has not run out: it is moved to its new end instead of firing (the
        observed delay grows under load after the timer was armed; BFT-LIVE-1)."""
        if not self.congestion or name not in self._armed_at:
            return False
        wait = self.view_change_timeout(i) if i is not None else self.client_wait(name)
        end = self._armed_at[name] + wait
        if end <= self.network.now:
            return False
        self.deadlines[name] = end
        self.network.stats["timer_lengthened"] += 1
        return True

    def estimator(self, principal: str) -> DelayEstimator:
        """The observed delay of ``principal``'s messages (created on first use)."""
        est = self.delays.get(principal)
        if est is None:
            est = self.delays[principal] = DelayEstimator(
                self.retransmit_period, ceiling=max(self.retransmit_period, self._ceiling)
            )
        return est

    def rto(self, principal: str) -> int:
        """How long ``principal``'s message waits before its first retransmission."""
        if not self.congestion:
            return self.retransmit_period
        return self.estimator(principal).rto()

    # --- timer-driven retransmission (docs/consensus.md, "Retransmission") ---------------

    def _track(self, key: _Key, payload: Signed | bytes, delay: int) -> None:
        """Start the retransmission timer of a message on one link (BFT-LIVE-1: PBFT
        assumes messages are retransmitted until delivered).  A message already
        outstanding on that link keeps its running timer and back-off."""
        if key in self.outstanding:
            return
        wait = self.rto(key[0])
        due = self.network.now + delay + wait
        self.outstanding[key] = Outstanding(key[0], key[1], payload, delay, due, wait)
        self._push_timer(due, key)

    def _push_timer(self, due: int, key: _Key) -> None:
        self._timer_uid += 1
        heapq.heappush(self._timers, (due, self._timer_uid, key))

    def _refusals(self, i: int) -> tuple[int, ...]:
        return _REFUSALS(self.replicas[i].rejected)  # type: ignore[no-any-return]

    def _not_yet(self, i: int, payload: object, before: tuple[int, ...], view: int | None) -> bool:
        """Replica ``i`` refused ``payload`` for now: no acknowledgement, the sender
        retransmits (BFT-LIVE-1: a replica that is behind, or entering a view, takes it
        later).  ``view`` is the view it was changing to when the message arrived (None
        if it was active).  Below its low watermark a message is refused for good (the
        stable checkpoint covers it): acknowledged."""
        now = self._refusals(i)
        window, future, limited, stale = (now[k] - before[k] for k in range(4))
        if future or limited:
            return True
        m = payload.message if isinstance(payload, Signed) else None
        if window:
            seq = getattr(m, "seq", None)
            return not isinstance(seq, int) or seq > self.replicas[i].stable_seq
        return (
            stale > 0
            and view is not None
            and isinstance(m, PrePrepare | Prepare | Commit)
            and m.view == view
        )

    def _acknowledge(self, env: Envelope) -> None:
        """The receiver took the message (or refused it for good): its link's timer
        stops, and every sender learns that the receiver has it.

        Acknowledgements are idealised: reliable and instantaneous.  A lost one would
        cost one redundant retransmission, which the receiver refuses as ``replayed``
        and acknowledges again: more traffic, never a view change.  That every sender
        learns it stands for receiver-driven recovery, in which replicas tell each other
        what they hold: a relayed PRE-PREPARE goes only to a backup that lacks it."""
        self.outstanding.pop((env.src, env.dst, id(env.payload)), None)
        self._has(env.dst, env.payload)

    def covered(self, dst: str, payload: Signed | bytes) -> bool:
        """Cumulative acknowledgement: honest replica ``dst`` is past what ``payload``
        is about, so it has no use for it whatever it holds (a normal-case message for a
        sequence number it executed, a CHECKPOINT at or below its stable checkpoint).  In
        a deployment every message carries its sender's last executed sequence number and
        stable checkpoint; here the driver reads them, as it reads the idealised
        per-message acknowledgements.  Only with congestion control, and only for an
        honest replica that is up: a Byzantine one acknowledges nothing it is not sent."""
        i = _index(dst)
        if not self.congestion or i is None or i in self.byzantine or i in self.down:
            return False
        r = self.replicas[i]
        return covers(r.last_exec, r.stable_seq, payload)

    def _has(self, principal: str, payload: Signed | bytes) -> None:
        self.acknowledged.setdefault(principal, {})[id(payload)] = (payload, self.network.now)

    def _sender_holds(self, src: str, dst: str, payload: Signed | bytes) -> bool:
        i = _index(src)
        if i is not None:
            return i in self.honest and i not in self.down and holds(self.replicas[i], dst, payload)
        client = self.clients.get(src)
        return client is not None and client.outstanding is payload

    def _fire_retransmissions(self) -> None:
        """Re-send every outstanding message whose timer is due, unless superseded, and
        double its interval up to ``retransmit_max``: a timer per message, with
        back-off (BFT-LIVE-1 without spurious view changes)."""
        net = self.network
        while self._timers and self._timers[0][0] <= net.now:
            due, _uid, key = heapq.heappop(self._timers)
            rec = self.outstanding.get(key)
            if rec is None or rec.due != due:
                continue  # acknowledged, or re-armed later
            if key[2] in self.acknowledged.get(rec.dst, {}):
                del self.outstanding[key]  # the receiver has it from another sender
                continue
            if self.covered(rec.dst, rec.payload):
                del self.outstanding[key]  # the receiver is past it (cumulative ack)
                net.stats["covered"] += 1
                continue
            if not self._sender_holds(rec.src, rec.dst, rec.payload):
                del self.outstanding[key]  # superseded: nobody needs it any more
                net.stats["superseded"] += 1
                continue
            if self.congestion:
                est = self.estimator(rec.src)
                budget = self.budgets.setdefault((rec.src, rec.dst), LinkBudget())
                # never more often than the fixed timers' cap towards a silent receiver
                wait = retransmission_wait(
                    est, budget, net.now, rec.retransmissions + 1, self._fixed_cap
                )
                if wait is None:
                    # over the link's budget: wait for its next window, no back-off spent
                    net.stats["deferred"] += 1
                    rec.due = budget.next_slot()
                    self._push_timer(rec.due, key)
                    continue
                rec.retransmissions += 1
                rec.interval = wait
            else:
                rec.retransmissions += 1
                rec.interval = min(2 * rec.interval, self.retransmit_max)
            net.stats["retransmitted"] += 1
            rec.due = net.now + rec.delay + rec.interval
            self._push_timer(rec.due, key)
            net.send(rec.src, rec.dst, rec.payload, rec.delay)

    def _resend_base(self, i: int) -> int:
        return max(1, self.view_change_timeout(i) // RESEND_PERIOD_DIVISOR)

    def _arm_resend(self, i: int) -> None:
        interval = self._resend_base(i)
        self._resend_interval[i] = interval
        self._resend_progress[i] = self.replicas[i].progress
        self.resend_deadlines[i] = self.network.now + interval
        self._next_resend = min(self._next_resend, self.resend_deadlines[i])

    def _fire_resends(self) -> None:
        """Each replica's own retransmission period (``Replica.retransmit``): a quarter
        of its view-change timeout while it makes progress, doubling (capped) while it
        makes none.  What the per-message timers cannot carry goes out here: messages
        this replica never sent to the peer that needs them (PRE-PREPAREs relayed to a
        backup the primary left out, pending requests to a new primary, FETCH-STATEs),
        and a new period of the replica's rate limits (one STATE-TRANSFER and one
        NEW-VIEW per peer per period) (BFT-LIVE-1).  What the receiver acknowledged or the
        link still retransmits on its own timer is skipped, so a period costs only what is
        missing."""
        now = self.network.now
        if now < self._next_resend:
            return
        if now - self._pruned_at >= self._ack_memory:
            self._prune_acknowledged()
        for i, at in sorted(self.resend_deadlines.items(), key=lambda kv: (kv[1], kv[0])):
            if at > now or self.resend_deadlines.get(i) != at:
                continue
            r, base = self.replicas[i], self._resend_base(i)
            progressed = r.progress != self._resend_progress[i]
            interval = resend_interval(base, self._resend_interval[i], progressed)
            self._resend_interval[i] = interval
            self._resend_progress[i] = r.progress
            self.resend_deadlines[i] = now + interval
            name = replica_name(i)
            self.network.stats["periodic_retransmissions"] += 1
            self.route(name, self.node(i).retransmit(), periodic=True)
            self._rearm(i)
        self._next_resend = min(self.resend_deadlines.values(), default=_FAR)

    def _prune_acknowledged(self) -> None:
        """Forget acknowledgements older than ``ACK_MEMORY`` view-change timeouts: what
        is still sent after that is long superseded, or goes out once more."""
        now = self._pruned_at = self.network.now
        for dst, acked in self.acknowledged.items():
            self.acknowledged[dst] = {
                k: v for k, v in acked.items() if now - v[1] < self._ack_memory
            }

    def _reachable(self, rec: Outstanding) -> bool:
        i = _index(rec.dst)
        return (i is None or i not in self.down) and self.network.connected(rec.src, rec.dst)

    def _behind(self) -> bool:
        """An honest replica that is up knows a stable checkpoint it has not reached:
        its retransmission period fetches it (state transfer)."""
        return any(
            self.replicas[i].last_exec < self.replicas[i].stable_seq
            for i in self.honest
            if i not in self.down
        )

    def _rearm_client(self, c: str) -> None:
        cl = self.clients[c]
        if cl.busy:
            if c not in self.deadlines:
                self.deadlines[c] = self.network.now + self.client_wait(c)
                self._armed_at[c] = self.network.now
        else:
            self.deadlines.pop(c, None)
            if self.backlog[c]:
                self.route(c, cl.request(self.backlog[c].popleft()))
                self._rearm_client(c)

    # --- primitives (the tests' adversary uses these) ------------------------------------

    def submit(self, client: str, operation: dict[str, Any]) -> None:
        """Queue ``operation``; the client sends it as soon as it has no outstanding one."""
        self.backlog[client].append(operation)
        self._rearm_client(client)

    def deliver(self, index: int) -> Envelope:
        env = self.network.take(index)
        i = _index(env.dst)
        if i in self.down:
            self.network.stats["dropped_down"] += 1  # the replica is down: lost
            return env
        self.network.stats["delivered"] += 1
        timer = self.retransmission == "timer"
        if self.congestion:
            # the acknowledgement echoes the copy's send tick (TCP's timestamps, RFC 7323):
            # every delivery is a sample, a retransmitted message's too, without Karn's
            # ambiguity, and a slow copy counts as much as a fast one
            self.estimator(env.src).sample(self.network.now - env.sent_at)
        if i is not None:
            before: tuple[int, ...] = ()
            changing: int | None = None
            if timer:
                r = self.replicas[i]
                before, changing = self._refusals(i), None if r.active else r.view
            self.route(env.dst, self.node(i).on_message(env.payload))
            if timer and not self._not_yet(i, env.payload, before, changing):
                self._acknowledge(env)
            self._rearm(i)
        elif env.dst in self.clients:
            self.route(env.dst, self.clients[env.dst].on_reply(env.payload))
            if timer:
                self._acknowledge(env)
            self._rearm_client(env.dst)
        return env

    def drop(self, index: int) -> Envelope:
        self.network.stats["dropped"] += 1
        return self.network.take(index)

    def duplicate(self, index: int) -> None:
        e = self.network.queue[index]
        self.network.stats["duplicated"] += 1
        self.network.enqueue(e.src, e.dst, e.payload, e.deliver_at, e.sent_at)

    def fire_timeout(self, i: int) -> None:
        self.deadlines.pop(replica_name(i), None)
        if i in self.down:
            return
        self.route(replica_name(i), self.node(i).on_timeout())
        self._rearm(i)

    def fire_client_timeout(self, c: str) -> None:
        self.deadlines.pop(c, None)
        self.route(c, self.clients[c].on_timeout())
        self._rearm_client(c)

    def retransmit(self, i: int) -> None:
        if i in self.down:
            return
        self.route(replica_name(i), self.node(i).retransmit())
        self._rearm(i)

    def partition(self, groups: Iterable[Iterable[str]]) -> None:
        self.network.partition(groups)
        # messages in flight across the cut are lost too
        keep = [e for e in self.network.queue if self.network.connected(e.src, e.dst)]
        self.network.stats["dropped_partition"] += len(self.network.queue) - len(keep)
        self.network.queue = keep

    def heal(self) -> None:
        self.network.heal()

    # --- crash and restart (honest replicas; docs/consensus.md, "Durability and recovery") --

    def crash(self, i: int) -> None:
        """Replica ``i`` stops: its volatile state is gone, its timer stops, and messages
        to it are dropped until it restarts.  Its store, if it has one, survives."""
        if i in self.byzantine:
            raise ValueError(f"replica {i} is Byzantine: crash and restart are for honest ones")
        if i in self.down:
            raise ValueError(f"replica {i} is already down")
        self.down.add(i)
        self.deadlines.pop(replica_name(i), None)
        # its transport's state is volatile too, and what it acknowledged is lost with its
        # memory: its peers forget the acknowledgements (a connection reset)
        name = replica_name(i)
        self.resend_deadlines.pop(i, None)
        self.outstanding = {k: v for k, v in self.outstanding.items() if v.src != name}
        self.acknowledged.pop(name, None)
        durable = self.durable.pop(i, None)
        if durable is not None:
            durable.close()
        self.restarts["crash"] += 1

    def restart(self, i: int, *, amnesiac: bool = False) -> None:
        """Bring replica ``i`` back: a fresh replica rebuilt from its store.

        ``amnesiac=True`` deletes the store first (or there is none): the replica restarts
        from nothing, having forgotten every promise it made.  That is a fault, not a
        recovery: with one Byzantine replica it breaks agreement at N = 4, f = 1
        (``test_consensus_durability.test_amnesia_breaks_agreement``).  A store that gives
        no state to restart from raises ``storage.StoreError`` and the replica stays down.
        """
        if i not in self.down:
            raise ValueError(f"replica {i} is not down")
        replica = self._new_replica(i)
        location = self.stores.get(i)
        if amnesiac:
            if location is not None:
                location.destroy()
                self.durable[i] = DurableReplica.create(replica, location)
            self.restarts["amnesiac"] += 1
        elif location is None:
            raise ValueError(f"replica {i} has no store: only an amnesiac restart is possible")
        else:
            self.durable[i] = DurableReplica.recover(replica, location)
            self.restarts["restart"] += 1
        self.replicas[i] = replica
        self.down.discard(i)
        self._armed_progress.pop(i, None)
        if self.retransmission == "timer":
            self._arm_resend(i)
        self._rearm(i)

    def close(self) -> None:
        """Release every store (in-memory databases are freed; files stay on disk)."""
        for durable in self.durable.values():
            durable.close()
        self.durable.clear()
        for location in self.stores.values():
            location.dispose()

    # --- schedulers ---------------------------------------------------------------------

    def _fire_due(self) -> None:
        if self.retransmission == "timer":
            self._fire_retransmissions()
            self._fire_resends()
        if not self.deadlines or min(self.deadlines.values()) > self.network.now:
            return  # nothing due (the common case: a check per tick, not a sort)
        for name, at in sorted(self.deadlines.items(), key=lambda kv: (kv[1], kv[0])):
            if at <= self.network.now and self.deadlines.get(name) == at:
                i = _index(name)
                if self._lengthened(name, i):
                    continue
                if i is not None:
                    self.fire_timeout(i)
                else:
                    self.fire_client_timeout(name)

    def progress(self) -> Moved:
        """What has moved: each honest replica's progress, the crashes and restarts so far,
        and each client's results.  Only compared for equality ("did anything move?"), so
        a restart always counts as a change (the restarted replica counts its progress
        from its start value again), and no replica's step can be hidden by another's
        restart, as it could in a sum."""
        return (
            tuple(self.replicas[i].progress for i in sorted(self.honest)),
            self.restarts.total(),
            tuple(len(c.results) for c in self.clients.values()),
        )

    def step(self) -> bool:
        """One event of the random scheduler; False when nothing is left to happen.

        An event is the delivery of one ready message (chosen at random unless
        ``Faults.reorder`` is off), after which the clock advances a tick and every timer
        due fires; with nothing ready, the clock jumps to the next delivery or timer.
        The ``"quiet"`` scheduler instead retransmits everything when nothing is in
        flight (once per change of progress)."""
        net = self.network
        ready = net.ready()
        if ready:
            pick = self.rng.choice(ready) if net.faults.reorder else ready[0]
            self.deliver(pick)
            net.now += 1
            self._fire_due()
            return True
        if self.retransmission == "timer":
            return self._advance_timers()
        if not net.queue and not self.deadlines:
            return False
        if not net.queue and self._retransmitted_at != self.progress():
            self._retransmitted_at = self.progress()
            for i in range(self.n):
                self.retransmit(i)
            return True
        net.now = min([e.deliver_at for e in net.queue] + list(self.deadlines.values()))
        self._fire_due()
        return True

    def _advance_timers(self) -> bool:
        """Nothing is ready: move time to the next delivery or timer.  Quiescent (False)
        when nothing is in flight, no view-change or client timer runs, no
        unacknowledged message can still arrive (those to a replica that is down or cut
        off wait for a restart or a heal, which come from outside the scheduler) and no
        replica has a stable checkpoint to catch up with; the retransmission periods run
        on, but alone they change nothing."""
        net = self.network
        if (
            not net.queue
            and not self.deadlines
            and not any(self._reachable(r) for r in self.outstanding.values())
            and not self._behind()
        ):
            return False
        while self._timers and self._timers[0][2] not in self.outstanding:
            heapq.heappop(self._timers)  # acknowledged: no event
        events = [e.deliver_at for e in net.queue] + list(self.deadlines.values())
        events += list(self.resend_deadlines.values())
        if self._timers:
            events.append(self._timers[0][0])
        if not events:
            return False
        net.now = max(net.now, min(events))
        self._fire_due()
        return True

    def run(self, max_steps: int = 1_000_000, until: Callable[[], bool] | None = None) -> int:
        """Run the random scheduler until quiescence, ``until()`` or ``max_steps``."""
        steps = 0
        while steps < max_steps and not (until is not None and until()):
            if not self.step():
                break
            steps += 1
        return steps

    def deliver_where(
        self,
        deliver: Callable[[Envelope], bool],
        drop: Callable[[Envelope], bool] = lambda e: False,
    ) -> None:
        """A scripted schedule: deliver the queued envelopes ``deliver`` selects and drop
        those ``drop`` selects (``drop`` first), in FIFO order, until neither selects one.
        What a test uses to replay the exact interleaving of a counterexample."""
        while True:
            for k, e in enumerate(self.network.queue):
                if drop(e):
                    self.drop(k)
                    break
                if deliver(e):
                    self.deliver(k)
                    break
            else:
                return

    def drain(self, max_steps: int = 200_000) -> int:
        """Deliver every message in FIFO order (advancing time over delays); no loss."""
        steps = 0
        net = self.network
        while net.queue and steps < max_steps:
            ready = net.ready()
            if not ready:
                net.now = min(e.deliver_at for e in net.queue)
                continue
            self.deliver(ready[0])
            net.now += 1
            steps += 1
        return steps

    def run_fair(self, max_rounds: int = 12) -> int | None:
        """BFT-LIVE-1's driver: heal, stop injecting faults, and deliver fairly.

        Each round retransmits, lets clients rebroadcast and delivers everything; a round
        without progress fires the view-change timers of the replicas that wait.  Returns
        the number of rounds until every submitted request is executed at every honest
        replica, or None if ``max_rounds`` did not suffice.
        """
        self.heal()
        self.network.faults = Faults(reorder=False)
        for rounds in range(max_rounds + 1):
            self.drain()
            if self.all_executed():
                return rounds
            before = self.progress()
            for i in range(self.n):
                self.retransmit(i)
            for c in self.clients:
                self.fire_client_timeout(c)
            self.drain()
            if self.progress() == before:
                for i in range(self.n):
                    if self.replicas[i].waiting:
                        self.fire_timeout(i)
        return None

    # --- observations -------------------------------------------------------------------

    def sent_requests(self) -> dict[str, Signed]:
        return {request_digest(s): s for c in self.clients.values() for s in c.sent}

    def all_executed(self) -> bool:
        """Every request a client sent is executed at every honest replica and no client
        still waits (its backlog included)."""
        if any(c.busy for c in self.clients.values()) or any(self.backlog.values()):
            return False
        wanted = set(self.sent_requests())
        for i in self.honest:
            done = {request_digest(r) for r in self.replicas[i].history if r is not None}
            if not wanted <= done:
                return False
        return True

    def results(self, client: str) -> list[tuple[int, dict[str, Any]]]:
        return self.clients[client].results


def _retransmit_schedule(
    mode: str, timeout: int, period: int | None, cap: int | None
) -> tuple[int, int]:
    """The per-message retransmission period and back-off cap, checked.

    The period must stay below the view-change timeout: a lost message has to come back
    before a replica waiting for it gives up on the primary (BFT-LIVE-1 without
    spurious view changes)."""
    if mode not in RETRANSMISSION_MODES:
        raise ValueError(f"retransmission={mode!r}: expected one of {RETRANSMISSION_MODES}")
    if period is None:
        period = max(1, timeout // RETRANSMIT_PERIOD_DIVISOR)
    elif isinstance(period, bool) or not isinstance(period, int) or period < 1:
        raise ValueError(f"retransmit_period={period!r}: expected a positive integer (ticks)")
    elif mode == "timer" and period >= timeout:
        raise ValueError(
            f"retransmit_period={period} is not below the view-change timeout {timeout}: "
            "a lost message would come back only after the timer that it should stop"
        )
    if cap is None:
        cap = period * RETRANSMIT_BACKOFF_CAP
    elif isinstance(cap, bool) or not isinstance(cap, int) or cap < period:
        raise ValueError(
            f"retransmit_max={cap!r}: expected an integer at least retransmit_period={period}"
        )
    return period, cap


def _index(name: str) -> int | None:
    if name.startswith("r") and name[1:].isdigit():
        return int(name[1:])
    return None


def requests_of(history: Iterable[Signed | None]) -> list[Request]:
    return [r.message for r in history if r is not None and isinstance(r.message, Request)]
