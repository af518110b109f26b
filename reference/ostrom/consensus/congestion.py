"""Congestion control for retransmission: how long to wait before re-sending, how much a
link may re-send, and how long a view-change timer must run, all from the delay observed
(docs/consensus.md, "Congestion control").

PBFT's liveness assumes that messages between correct replicas are retransmitted until
they are delivered (BFT-LIVE-1).  Retransmission on a fixed timer is not bounded by what
the network can carry: once the queueing delay exceeds the timer, every message is sent
again, which lengthens the queue, which makes the next round of timers expire — and the
view-change timers with them, whose VIEW-CHANGEs and NEW-VIEWs add more.  That is
congestion collapse (issue 42 item 0: seven honest replicas with 20 ticks of jitter ended
with tens of thousands of messages queued and the view changing for ever).  The rules
here are TCP's (RFC 6298, Jacobson/Karels, Karn), adapted to messages that a sender may
stop needing:

* ``DelayEstimator`` — the smoothed delay and its variation from acknowledged messages
  that were sent once (Karn: a retransmitted message's acknowledgement is ambiguous), and
  from them the retransmission timeout ``rto``; a message's wait then grows by one
  timeout per retransmission (``backoff``), so a sender re-sends less the longer the
  network takes and the longer a receiver stays silent;
* ``LinkBudget`` — at most ``per_window`` retransmissions per link in one window of the
  sender's current timeout: a receiver that never acknowledges (silent, or cut off) costs
  a bounded share of the network however much is outstanding towards it;
* ``view_change_timeout`` — the view-change timer runs at least ``VIEW_CHANGE_DELAYS``
  timeouts of the observed delay (a request takes a few message delays to commit; under
  load each of them includes the queue), doubled per consecutive view change as before.

Why linear and not TCP's doubling: here every delivery measures the delay (the
acknowledgement echoes the copy's send tick), so the timeout itself follows congestion
and the back-off only has to cover loss and silence; doubling made a message lost four
times wait 15 timeouts for its fifth copy, and with f silent replicas and 20% loss, where
every honest vote is needed, that outlasted the view-change timer (N = 13: four view
changes in 30 requests, 3.4 times the loss-free messages; linearly: none, 1.3 times).

What a sender may skip is decided here too, so that every driver skips the same things:

* ``holds`` — whether a replica still has a use for a message reaching a peer; one it no
  longer holds is *superseded* and never re-sent;
* ``covers`` — cumulative acknowledgement: a receiver that executed a sequence number (or
  made a checkpoint stable) has no use for a normal-case message (or CHECKPOINT) at or
  below it, whatever it holds;
* ``retransmission_wait`` — one step of a due message that is still needed: the link's
  budget, then the back-off;
* ``resend_interval`` — each replica's own retransmission period (``Replica.retransmit``);
* ``waited_timeout`` — the observed timeout a view-change timer is sized by: the replica's
  own, or the ``f+1``-th largest of its own and its peers' (what it waits for is re-sent
  on its senders' timeouts);
* ``Retransmitter`` — all of that as one replica's outgoing state for a driver that has
  real acknowledgements to feed it: the messages each peer has not acknowledged, the
  acknowledgements this replica owes its peers, and its peers' positions.

Sans-IO and deterministic: time is whatever tick the caller passes, and nothing here reads
a clock or a random source.  Two drivers carry it: the simulated network
(``ostrom.harness.network``, whose acknowledgements are idealised) and the cluster's
replica processes (``ostrom.cluster.replica_process``, whose acknowledgements are frames on
the wire, ``ostrom.cluster.wire.ack_frame``, and whose ticks are milliseconds).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from ostrom.consensus.messages import (
    Checkpoint,
    Commit,
    FetchState,
    NewView,
    Prepare,
    PrePrepare,
    Reply,
    Request,
    Signed,
    ViewChange,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica import Replica

__all__ = [
    "ACK_BATCH",
    "ACK_DELAY",
    "ACK_MEMORY_TIMEOUTS",
    "BACKOFF_LIMIT",
    "KEY_BYTES",
    "LINK_BUDGET",
    "RESEND_BACKOFF_DOUBLINGS",
    "RESEND_PERIOD_DIVISOR",
    "RETRANSMIT_BACKOFF_CAP",
    "RETRANSMIT_PERIOD_DIVISOR",
    "VIEW_CHANGE_DELAYS",
    "DelayEstimator",
    "LinkBudget",
    "Retransmitter",
    "Unacked",
    "covers",
    "holds",
    "message_key",
    "resend_interval",
    "retransmission_wait",
    "view_change_timeout",
    "waited_timeout",
]

#: A message's wait grows by one timeout per retransmission up to this many timeouts
#: (towards a receiver that never answers, one re-send per 64 timeouts at most).
BACKOFF_LIMIT: Final = 64
#: Retransmissions one link may carry per window of its sender's timeout.
LINK_BUDGET: Final = 8
#: The view-change timer lasts at least this many retransmission timeouts: a request
#: needs about five message delays (request, relay, PRE-PREPARE, PREPARE, COMMIT), each of
#: which the timeout (delay plus four deviations) covers, and a message lost twice waits
#: 1 + 2 + 3 + 4 + 5 = 15 timeouts for its sixth (0.2^5 = 3·10⁻⁴ at 20% loss).  With 8,
#: f silent replicas and 20% loss (every honest replica's vote needed) changed views up
#: to nine times (N = 7, the sweep); with 16, up to four times at N = 13.
VIEW_CHANGE_DELAYS: Final = 32
#: Before the first sample a message is first re-sent this fraction of the view-change
#: timeout after it was sent (the fixed timers' period, ``Simulation.retransmit_period``)
#: ...
RETRANSMIT_PERIOD_DIVISOR: Final = 8
#: ... and towards a receiver that never answers no more often than this many periods
#: (a quarter of the timeout: five chances before the timer that a lost message would
#: otherwise fire).
RETRANSMIT_BACKOFF_CAP: Final = 2
#: Every replica runs its own ``Replica.retransmit`` each this fraction of its
#: view-change timeout ...
RESEND_PERIOD_DIVISOR: Final = 4
#: ... doubling (at most this many times) while it makes no progress.
RESEND_BACKOFF_DOUBLINGS: Final = 4
#: An acknowledgement waits at most this many ticks for others to share its frame
#: (TCP's delayed acknowledgement): one frame per peer per ``ACK_DELAY`` under load, not
#: one per message.  The delay is part of every sample the sender takes, so it never
#: makes the sender re-send early.
ACK_DELAY: Final = 20
#: ... and goes out at once when this many keys are waiting for the same peer.
ACK_BATCH: Final = 256
#: Acknowledgements are remembered for this many view-change timeouts.
ACK_MEMORY_TIMEOUTS: Final = 4
#: The bytes of a message's key (``message_key``).
KEY_BYTES: Final = 8


@dataclasses.dataclass
class DelayEstimator:
    """The observed delay of one sender's messages and its retransmission timeout.

    RFC 6298 in ticks: the first sample ``s`` sets ``srtt = s`` and ``rttvar = s/2``;
    each later one moves ``rttvar`` a quarter of the way to ``|srtt - s|`` and ``srtt``
    an eighth of the way to ``s``.  ``rto = srtt + 4·rttvar``, at least ``floor`` and
    at most ``ceiling``; before any sample it is ``initial``.
    """

    initial: int
    floor: int = 1
    ceiling: int = 1 << 40
    srtt: float | None = None
    rttvar: float = 0.0
    samples: int = 0

    def __post_init__(self) -> None:
        if not 1 <= self.floor <= self.initial <= self.ceiling:
            raise ValueError(
                f"delay estimator: expected 1 <= floor ({self.floor}) <= initial "
                f"({self.initial}) <= ceiling ({self.ceiling})"
            )

    def sample(self, delay: int) -> None:
        """A message sent once arrived ``delay`` ticks after it was sent (Karn: never a
        retransmitted one)."""
        s = float(max(0, delay))
        if self.srtt is None:
            self.srtt, self.rttvar = s, s / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - s)
            self.srtt = 0.875 * self.srtt + 0.125 * s
        self.samples += 1

    def rto(self) -> int:
        """The retransmission timeout: how long a message may take before it is re-sent."""
        if self.srtt is None:
            return self.initial
        return min(self.ceiling, max(self.floor, int(self.srtt + 4 * self.rttvar) + 1))

    def backoff(self, retransmissions: int, at_least: int = 0) -> int:
        """The wait after the ``retransmissions``-th re-send: ``retransmissions + 1``
        timeouts, until it is both ``BACKOFF_LIMIT`` timeouts and ``at_least`` (a
        caller's floor for the cap: a receiver that never answers is not re-sent to more
        often than that), and at most ``ceiling``."""
        rto = self.rto()
        cap = max(rto * BACKOFF_LIMIT, at_least)
        return min(self.ceiling, cap, rto * (retransmissions + 1))


@dataclasses.dataclass
class LinkBudget:
    """Retransmissions on one link: at most ``per_window`` in a window of ``window``
    ticks (the sender's timeout when the window opened); one over the budget waits for
    the next window (``next_slot``)."""

    per_window: int = LINK_BUDGET
    opened: int = 0
    window: int = 0
    used: int = 0

    def take(self, now: int, window: int) -> bool:
        """Spend one retransmission at tick ``now`` if the budget allows (True)."""
        if now >= self.opened + self.window:
            self.opened, self.window, self.used = now, max(1, window), 0
        if self.used >= self.per_window:
            return False
        self.used += 1
        return True

    def next_slot(self) -> int:
        """The tick at which the next window opens."""
        return self.opened + self.window


def waited_timeout(own: int, peers: Iterable[int], f: int) -> int:
    """The observed timeout a replica's view-change timer is sized by: its own (``own``),
    or the ``f+1``-th largest of its own and its peers' (``peers``), whichever is longer.

    What a waiting replica waits for are its peers' messages, and each of them is re-sent
    on its *sender's* timeout and back-off: sized by its own timeout alone, a replica
    whose messages happen to travel fast gives up on a correct primary while a slower
    peer's vote is still on its way (the simulation's worst cell, N = 13 with four silent
    replicas and 20% loss, where every honest vote is needed: one replica's timer was 32
    of its 29-tick timeouts while a needed PREPARE's sender re-sent every 140·k ticks;
    the first replica that gave up left view 0 without a quorum, and the others followed
    one by one).  The ``f+1``-th largest, not the largest: at most ``f`` peers lie, so
    the value is at most some correct replica's, and a faulty one cannot stretch the
    timer that is to replace a faulty primary (BFT-LIVE-1)."""
    values = sorted([own, *peers], reverse=True)
    return max(own, values[min(f, len(values) - 1)])


def view_change_timeout(own: int, consecutive: int, rto: int) -> int:
    """The view-change timer: the replica's own (``own``, already doubled per ``consecutive``
    view change, ``Replica.timeout_duration``) or ``VIEW_CHANGE_DELAYS`` observed
    timeouts doubled the same way, whichever is longer.  A timer shorter than the time
    the network takes to commit a request fires on a correct primary (BFT-LIVE-1)."""
    return max(own, (VIEW_CHANGE_DELAYS * rto) << min(consecutive, 20))


def retransmission_wait(
    est: DelayEstimator, budget: LinkBudget, now: int, retransmissions: int, at_least: int
) -> int | None:
    """One step of a message that is due and still needed (neither acknowledged, covered
    nor superseded): ``None`` when its link has spent its budget for the current window
    (the message waits for ``budget.next_slot()``, without spending a back-off step);
    otherwise the copy goes out now, its ``retransmissions``-th, and the result is the
    wait until the next (``DelayEstimator.backoff``, capped at no less than
    ``at_least``)."""
    if not budget.take(now, est.rto()):
        return None
    return est.backoff(retransmissions, at_least)


def resend_interval(base: int, previous: int, progressed: bool) -> int:
    """The next period of a replica's own ``Replica.retransmit``: ``base`` (a
    ``RESEND_PERIOD_DIVISOR``-th of its view-change timer) after progress, otherwise
    twice the previous one, at most ``RESEND_BACKOFF_DOUBLINGS`` doublings of ``base``:
    a replica that makes no progress re-sends less often, never never."""
    if progressed:
        return base
    return min(2 * previous, base << RESEND_BACKOFF_DOUBLINGS)


def holds(replica: Replica, dst: str, payload: Signed | bytes) -> bool:
    """Whether ``replica`` still has a use for ``payload`` reaching ``dst``; once it has
    not, the message is *superseded* and its retransmission stops.

    This mirrors what ``Replica.retransmit`` re-sends (``test_consensus_retransmission``
    checks that the two agree): the PRE-PREPAREs (its own and those it accepted) and its
    own PREPAREs and COMMITs that its log still holds (a stable checkpoint garbage
    collects them, and state transfer serves what is below); its CHECKPOINTs and the
    stable proof; its VIEW-CHANGEs for the view it left and the one it wants, while the
    view change is on; the last NEW-VIEW it installed; the pending requests it relays to
    the primary of its view; and a FETCH-STATE while the replica is still behind where it
    asked from (``retransmit`` signs a new one each period: held by content, not
    identity).  Besides those, the last reply to each client (the replica answers a
    repeated request with it, so a lost one is worth re-sending).  A STATE-TRANSFER is
    an answer and never held: the FETCH-STATE it answers is.

    Identity (``is``), not equality: the replica re-sends the very objects it keeps.
    """
    if not isinstance(payload, Signed):
        return False
    m, r = payload.message, replica
    if isinstance(m, Prepare | Commit):
        log = r.prepares if isinstance(m, Prepare) else r.commits
        return log.get((m.view, m.seq, m.digest), {}).get(r.id) is payload
    if isinstance(m, PrePrepare):
        return r.pre_prepares.get((m.view, m.seq)) is payload
    if isinstance(m, Checkpoint):
        own = r.checkpoints.get(m.seq, {}).get(r.id)
        return own is payload or any(p is payload for p in r.stable_proof)
    if isinstance(m, ViewChange):
        return (
            not r.active
            and m.new_view in (r.view - 1, r.view)
            and r.view_changes.get(m.new_view, {}).get(m.replica) is payload
        )
    if isinstance(m, NewView):
        return payload is r.new_view_msg
    if isinstance(m, Request):
        return (
            r.active
            and not r.is_primary
            and dst == replica_name(r.primary())
            and r.pending.get(request_digest(payload)) is payload
        )
    if isinstance(m, Reply):
        return r.last_reply.get(dst) is payload
    if isinstance(m, FetchState):
        return m.replica == r.id and m.after_seq == r.last_exec < r.stable_seq
    return False


def covers(executed: int, stable: int, payload: Signed | bytes) -> bool:
    """Cumulative acknowledgement: a receiver that has executed ``executed`` and whose
    stable checkpoint is ``stable`` has no use for ``payload`` whatever it holds — a
    PRE-PREPARE, PREPARE or COMMIT for a sequence number it executed, a CHECKPOINT at or
    below its stable checkpoint."""
    m = payload.message if isinstance(payload, Signed) else None
    if isinstance(m, PrePrepare | Prepare | Commit):
        return m.seq <= executed
    if isinstance(m, Checkpoint):
        return m.seq <= stable
    return False


def message_key(data: bytes) -> bytes:
    """What an acknowledgement names a message by: ``KEY_BYTES`` of a BLAKE2b digest of
    its wire bytes.  A replica re-sends the very objects it keeps, whose encoding is
    fixed, so every copy of a message has one key.  A collision costs at most one message
    that its sender believes delivered on one link: the periodic ``Replica.retransmit``
    no longer carries it there, but the receiver's peers still do."""
    return hashlib.blake2b(data, digest_size=KEY_BYTES).digest()


@dataclasses.dataclass
class Unacked:
    """A message on one link that its receiver has not acknowledged."""

    dst: str
    payload: Signed | bytes
    data: bytes
    due: int
    sent_at: int
    retransmissions: int = 0


class Retransmitter:
    """One honest replica's retransmission state, for a driver with real
    acknowledgements (the cluster's replica processes): the rules above applied to what
    the replica sends and what its peers acknowledge.

    * ``offer`` — the replica sends a message to a peer: its retransmission timer starts
      (first after the observed timeout); a *periodic* copy (``Replica.retransmit``) is
      skipped when the peer acknowledged the message, the link already re-sends it on its
      own timer, or the peer's position covers it (``covers``): a period costs only what
      is missing, and an idle replica's period costs nothing;
    * ``acknowledged`` — a peer's acknowledgement frame: the keys of the messages it took
      (or refused for good), its last executed sequence number and stable checkpoint.
      A message acknowledged after one copy is a delay sample (Karn's rule: the
      acknowledgement of a re-sent message may be the first copy's);
    * ``due`` — the copies to re-send now: each due message is dropped if acknowledged,
      covered or superseded (``holds``), deferred if its link spent its budget
      (``LinkBudget``), and otherwise re-sent with its back-off grown
      (``retransmission_wait``);
    * ``received`` / ``acks_due`` — the receiver's half: a message this replica took is
      acknowledged to its sender within ``ACK_DELAY`` ticks, many in one frame; a change
      of this replica's position alone is told to a peer at most once per
      ``heartbeat`` ticks (so an idle cluster sends nothing but those, and only after a
      change).

    Ticks are the caller's (the cluster's are milliseconds).  ``initial`` is the timeout
    before the first sample, ``at_least`` the back-off's floor for its cap (a quarter of
    the view-change timeout: towards a peer that never answers, no more often than
    that), ``memory`` how long an acknowledgement is remembered (what is sent after that
    is long superseded, or goes out once more).
    """

    def __init__(self, initial: int, at_least: int, memory: int, heartbeat: int) -> None:
        self.estimator = DelayEstimator(initial)
        self.at_least, self.memory, self.heartbeat = at_least, memory, heartbeat
        self.budgets: dict[str, LinkBudget] = {}
        self.unacked: dict[tuple[str, bytes], Unacked] = {}
        #: peer -> key -> the tick it acknowledged the message
        self.acked: dict[str, dict[bytes, int]] = {}
        #: peer -> (last executed, stable checkpoint), as it last said
        self.positions: dict[str, tuple[int, int]] = {}
        #: peer -> its observed timeout, as it last said
        self.peer_timeouts: dict[str, int] = {}
        #: peer -> the keys this replica owes it, and when the oldest arrived
        self.owed: dict[str, list[bytes]] = {}
        self._owed_since: dict[str, int] = {}
        #: peer -> the position last told it, and when
        self._told: dict[str, tuple[tuple[int, int], int]] = {}
        self._pruned_at = 0
        self.stats: Counter[str] = Counter()

    # --- the sender's half ---------------------------------------------------------------

    def rto(self) -> int:
        return self.estimator.rto()

    def observed(self) -> int | None:
        """The measured timeout, None before the first sample (a guess lengthens no timer)."""
        return self.estimator.rto() if self.estimator.samples else None

    def waited(self, f: int) -> int | None:
        """The observed timeout this replica's view-change timer is sized by
        (``waited_timeout``), None before its own first sample."""
        own = self.observed()
        if own is None:
            return None
        return waited_timeout(own, self.peer_timeouts.values(), f)

    def covered(self, dst: str, payload: Signed | bytes) -> bool:
        pos = self.positions.get(dst)
        return pos is not None and covers(pos[0], pos[1], payload)

    def offer(
        self, dst: str, payload: Signed | bytes, data: bytes, now: int, *, periodic: bool = False
    ) -> bool:
        """The replica sends ``payload`` (wire bytes ``data``) to ``dst`` at tick ``now``:
        whether the copy goes on the wire (BFT-LIVE-1: what is not skipped is tracked
        until acknowledged or superseded).  A message already outstanding on the link keeps
        its running timer and back-off."""
        key = (dst, message_key(data))
        if periodic and (
            key in self.unacked or key[1] in self.acked.get(dst, {}) or self.covered(dst, payload)
        ):
            self.stats["resend_skipped"] += 1
            return False
        if key not in self.unacked:
            self.unacked[key] = Unacked(dst, payload, data, now + self.rto(), now)
        return True

    def acknowledged(
        self,
        src: str,
        keys: tuple[bytes, ...],
        executed: int,
        stable: int,
        now: int,
        timeout: int = 0,
    ) -> None:
        """Peer ``src`` took the messages ``keys``, is at ``executed`` / ``stable``, and
        observes ``timeout`` (0: not yet measured; ``waited_timeout``)."""
        if timeout > 0:
            self.peer_timeouts[src] = timeout
        acked = self.acked.setdefault(src, {})
        for k in keys:
            rec = self.unacked.pop((src, k), None)
            if rec is not None and rec.retransmissions == 0:
                self.estimator.sample(now - rec.sent_at)
            acked[k] = now
        old = self.positions.get(src, (executed, stable))
        self.positions[src] = (max(old[0], executed), max(old[1], stable))
        if now - self._pruned_at >= self.memory:
            self._prune(now)

    def due(self, now: int, held: Callable[[str, Signed | bytes], bool]) -> Iterator[Unacked]:
        """The messages to re-send at ``now`` (``held(dst, payload)``: the replica still
        holds it, ``holds``)."""
        for key, rec in list(self.unacked.items()):
            if rec.due > now:
                continue
            if key[1] in self.acked.get(rec.dst, {}):
                del self.unacked[key]  # acknowledged meanwhile (a copy sent again)
                continue
            if self.covered(rec.dst, rec.payload):
                del self.unacked[key]  # the receiver is past it (cumulative ack)
                self.stats["covered"] += 1
                continue
            if not held(rec.dst, rec.payload):
                del self.unacked[key]  # superseded: nobody needs it any more
                self.stats["superseded"] += 1
                continue
            budget = self.budgets.setdefault(rec.dst, LinkBudget())
            wait = retransmission_wait(
                self.estimator, budget, now, rec.retransmissions + 1, self.at_least
            )
            if wait is None:
                self.stats["deferred"] += 1  # over the link's budget: its next window
                rec.due = budget.next_slot()
                continue
            rec.retransmissions += 1
            rec.due = now + wait
            self.stats["retransmitted"] += 1
            yield rec

    def next_due(self) -> int | None:
        return min((r.due for r in self.unacked.values()), default=None)

    def _prune(self, now: int) -> None:
        self._pruned_at = now
        for peer, acked in self.acked.items():
            self.acked[peer] = {k: t for k, t in acked.items() if now - t < self.memory}

    # --- the receiver's half -------------------------------------------------------------

    def received(self, src: str, data: bytes, now: int) -> None:
        """This replica took (or refused for good) ``data`` from peer ``src``: owe it an
        acknowledgement."""
        owed = self.owed.setdefault(src, [])
        if not owed:
            self._owed_since[src] = now
        owed.append(message_key(data))

    def acks_due(
        self, now: int, executed: int, stable: int, peers: tuple[str, ...]
    ) -> Iterator[tuple[str, tuple[bytes, ...]]]:
        """The acknowledgements to send at ``now`` (this replica at ``executed`` /
        ``stable``): to each peer owed one for ``ACK_DELAY`` ticks or ``ACK_BATCH`` keys,
        and to each peer not told this replica's position since it changed, at most once
        per ``heartbeat`` ticks."""
        pos = (executed, stable)
        for peer in peers:
            owed = self.owed.get(peer, [])
            told = self._told.get(peer)
            if owed and (
                len(owed) >= ACK_BATCH or now - self._owed_since.get(peer, now) >= ACK_DELAY
            ):
                keys, self.owed[peer] = tuple(owed[:ACK_BATCH]), owed[ACK_BATCH:]
                self._owed_since[peer] = now
            elif (
                not owed and told is not None and told[0] != pos and now - told[1] >= self.heartbeat
            ):
                keys = ()
                self.stats["heartbeats"] += 1
            else:
                continue
            self._told[peer] = (pos, now)
            self.stats["ack_frames"] += 1
            yield peer, keys

    def told(self, peer: str, now: int, executed: int, stable: int) -> None:
        """Start ``peer``'s heartbeat clock (the position it was last told)."""
        self._told.setdefault(peer, ((executed, stable), now))
