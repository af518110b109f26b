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

Sans-IO and deterministic: time is whatever tick the caller passes, and nothing here reads
a clock or a random source.  The simulated network (``ostrom.harness.network``) drives it.
"""

from __future__ import annotations

import dataclasses
from typing import Final

__all__ = [
    "BACKOFF_LIMIT",
    "LINK_BUDGET",
    "VIEW_CHANGE_DELAYS",
    "DelayEstimator",
    "LinkBudget",
    "view_change_timeout",
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


def view_change_timeout(own: int, consecutive: int, rto: int) -> int:
    """The view-change timer: the replica's own (``own``, already doubled per ``consecutive``
    view change, ``Replica.timeout_duration``) or ``VIEW_CHANGE_DELAYS`` observed
    timeouts doubled the same way, whichever is longer.  A timer shorter than the time
    the network takes to commit a request fires on a correct primary (BFT-LIVE-1)."""
    return max(own, (VIEW_CHANGE_DELAYS * rto) << min(consecutive, 20))
