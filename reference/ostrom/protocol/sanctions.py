"""Graduated sanctions and broken-agent quarantine (docs/design.md §4, docs/sanctions.md).

Agents are stateless: they do not remember being sanctioned, so sanctions are access control
at the orchestrator, and this book is where the orchestrator looks them up.  It counts each
agent's violations in a sliding window and derives a level on the ladder

    σ0 none · σ1 warned · σ2 rate-limited · σ3 suspended (T_susp rounds) · σ4 banned (terminal)

at ``sigma1..sigma4`` (weighted) violations in the window.  An agent whose violations look
like *malfunction* rather than strategy is quarantined instead of escalated.  The rules, in
the order :meth:`SanctionBook.record` and :meth:`SanctionBook.tick` apply them:

* **Window** (SAN-2).  A violation recorded at round ``r`` counts at round ``now`` iff
  ``now - sanction_window < r <= now``.  Weights: every kind counts 1, except an unfounded
  urgent report, which counts ``urgent_penalty`` (docs/design.md §8: in frivolous-dispute units).
  Weights are integer micro-units (``agents.micro``), so thresholds compare exactly.
* **Rises happen only at a record** (SAN-2): a violation can raise the level to what the
  in-window count gives; a tick only lowers levels (expiry) or ends a suspension.
* **Suspension**: reaching σ3 suspends for exactly ``T_susp`` rounds.  When it ends the level
  is what the window gives, capped at σ2: a suspension is not served twice for the same
  violations, but the next violation while the count is still at σ3 suspends again.
  Violations recorded during a suspension still count; reaching σ4 bans.
* **Ban** is terminal: nothing is recorded for a banned agent and nothing changes it.
* **Classifier** (malfunction): the agent is *broken-looking* iff malformed messages and
  invalid reveals are a strict majority (by number, unweighted) of its in-window violations.
  A strategic agent gains nothing from either (a malformed message does nothing, an invalid
  reveal is never counted, CR-2), while a broken one produces little else.  It is consulted
  only when a record would raise the level of an agent that is below σ3 and not marked
  strategic; broken-looking → **quarantine** for ``T_quarantine`` rounds instead, the level
  stays where it was.  A suspended agent is not given the benefit of the doubt: were it, a
  strategic agent could dodge its ban by sending malformed messages while suspended.
* **Quarantine** (SAN-1): the agent may do nothing; violations are recorded but never raise
  its level (expiry still lowers it).  After ``T_quarantine`` rounds the repair check (a
  callable passed in) decides: passes → released with a **clean slate** (window emptied,
  σ0) and on probation for ``sanction_window`` rounds; fails → quarantined again for
  ``T_quarantine`` rounds.  Clean slate, because what a broken agent emitted says nothing
  about the repaired one; the probation is what keeps this from being a loophole.
* **Reclassification**: a violation during probation marks the agent *strategic* for good
  (the classifier is never consulted for it again) and is then handled by the normal ladder.
  A quarantine therefore wipes an agent's record at most as often as the agent behaves for a
  whole window after it, and with ``T_quarantine >= sanction_window`` (the defaults) the
  wiped violations would have expired by the release anyway.

Sans-IO and deterministic: time is the round passed in (``tick``), nothing reads a clock,
and the repair check must itself be deterministic.  Each method names its TLA+ action in
``spec/Sanctions.tla`` (``# spec/Sanctions.tla: Record``) and each rule the property it
protects (``# SAN-1``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from ostrom.protocol.agents import BARRING, MAX_TIER, MICRO, Sanction, micro
from ostrom.protocol.commands import Event
from ostrom.protocol.lifecycle import EVENTS
from ostrom.protocol.params import DEFAULTS, Params

__all__ = [
    "AFTER_SUSPENSION",
    "AGENT_ACTIONS",
    "BANNED",
    "LADDER",
    "MALFUNCTION",
    "ORCHESTRATOR_KINDS",
    "SUSPENDED",
    "TIER_CAP",
    "AgentRecord",
    "RepairCheck",
    "SanctionBook",
    "Violation",
]


class Violation(StrEnum):
    """The violations the sanctions layer counts (docs/design.md §4)."""

    INVALID_REVEAL = "invalid_reveal"
    NON_REVEAL = "non_reveal"
    RATE_LIMIT = "rate_limit"
    FRIVOLOUS_DISPUTE = "frivolous_dispute"
    UNFOUNDED_URGENT = "unfounded_urgent"
    MALFORMED = "malformed"


#: Kinds that look like malfunction rather than strategy (the classifier's numerator).
MALFUNCTION: Final[frozenset[Violation]] = frozenset(
    {Violation.MALFORMED, Violation.INVALID_REVEAL}
)

#: The orchestrator's observation kinds (docs/rules.md "Observations") and what they count as.
ORCHESTRATOR_KINDS: Final[Mapping[str, Violation]] = {
    "bad_reveal": Violation.INVALID_REVEAL,
    "non_reveal": Violation.NON_REVEAL,
    "rate_limited": Violation.RATE_LIMIT,
    "frivolous_dispute": Violation.FRIVOLOUS_DISPUTE,
    "unfounded_urgent_report": Violation.UNFOUNDED_URGENT,
    "malformed": Violation.MALFORMED,
}

#: The ladder: rank k is σk.
LADDER: Final[tuple[Sanction, ...]] = (
    Sanction.NONE,
    Sanction.WARNED,
    Sanction.RATE_LIMITED,
    Sanction.SUSPENDED,
    Sanction.BANNED,
)
SUSPENDED: Final = 3
BANNED: Final = 4
#: The highest rank a tick leaves when a suspension ends (it is never served twice).
AFTER_SUSPENSION: Final = 2

#: The highest tier an agent may act at under each sanction; None: barred, every command
#: is refused ``sanctioned`` (agents.BARRING, docs/rules.md "Agents").  σ1 only warns and σ2
#: lowers the proposal rate (``propose_rate_limited``): neither caps the tier.
TIER_CAP: Final[Mapping[Sanction, int | None]] = {
    s: (None if s in BARRING else MAX_TIER) for s in Sanction
}

#: The agents' commands (``lifecycle.EVENTS`` whose actor is an agent): what ``may_act`` knows.
AGENT_ACTIONS: Final[frozenset[str]] = frozenset(
    name for name, spec in EVENTS.items() if spec.actor == "agent"
)

#: ``repair_check(agent, round)``: does the quarantined agent pass its repair check now?
RepairCheck = Callable[[str, int], bool]
# What ``record``/``tick`` report (``Event``): ``{"event": "sanction", "agent", "from", "to",
# "cause"}`` when an agent's level changes, plus ``quarantine_renewed`` and ``reclassified``.


def _always_repaired(agent: str, round: int) -> bool:
    return True


@dataclass
class AgentRecord:
    """One agent's sanction state (the per-agent variables of spec/Sanctions.tla).

    ``violations`` holds the in-window violations, oldest first (``hist``); ``rank`` is the
    ladder level σ0..σ4 (``rank``; frozen from rising while quarantined); the ``*_until``
    rounds are absolute where the spec keeps countdowns (``susp``, ``quar``, ``prob``).
    """

    violations: list[tuple[int, Violation]] = field(default_factory=list)
    rank: int = 0
    suspended_until: int | None = None
    quarantined_until: int | None = None
    probation_until: int | None = None
    strategic: bool = False

    def to_dict(self, level: Sanction) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "level": level.value,
            "rank": self.rank,
            "violations": [[r, k.value] for r, k in self.violations],
            "suspended_until": self.suspended_until,
            "quarantined_until": self.quarantined_until,
            "probation_until": self.probation_until,
            "strategic": self.strategic,
        }


class SanctionBook:
    """Violations, levels, suspensions, bans and quarantines of every agent (spec/Sanctions.tla).

    ``repair_check`` is asked at the end of each quarantine period; it defaults to "always
    repaired" (the protocol has no repair tooling of its own).  Agents need no registration:
    an agent the book has never seen is at σ0.
    """

    def __init__(
        self,
        params: Params = DEFAULTS,
        repair_check: RepairCheck | None = None,
        now: int = 0,
    ) -> None:
        self.params = params
        self._repair_check = repair_check or _always_repaired
        self._now = now
        self._agents: dict[str, AgentRecord] = {}
        self._weights = {
            k: micro(params.urgent_penalty) if k == Violation.UNFOUNDED_URGENT else MICRO
            for k in Violation
        }
        self._thresholds = [
            s * MICRO for s in (params.sigma1, params.sigma2, params.sigma3, params.sigma4)
        ]

    # --- queries ---------------------------------------------------------------------------

    @property
    def now(self) -> int:
        """The current round (advanced only by ``tick``)."""
        return self._now

    def agents(self) -> list[str]:
        """Every agent with a record, sorted."""
        return sorted(self._agents)

    def state(self, agent: str) -> AgentRecord:
        """A copy of the agent's record (a fresh σ0 record for an unknown agent)."""
        rec = self._agents.get(agent)
        if rec is None:
            return AgentRecord()
        return AgentRecord(
            list(rec.violations),
            rec.rank,
            rec.suspended_until,
            rec.quarantined_until,
            rec.probation_until,
            rec.strategic,
        )

    def level(self, agent: str) -> Sanction:
        """The agent's sanction: quarantined, or its rung of the ladder.

        This is the value the orchestrator's registry holds (``Agent.sanction``).
        """
        rec = self._agents.get(agent)
        if rec is None:
            return Sanction.NONE
        if rec.quarantined_until is not None:
            return Sanction.QUARANTINED
        return LADDER[rec.rank]

    def rank(self, agent: str) -> int:
        """The ladder level σ0..σ4 (also while quarantined, where it cannot rise: SAN-1)."""
        rec = self._agents.get(agent)
        return 0 if rec is None else rec.rank

    def weight(self, kind: Violation) -> int:
        """A violation's weight in micro-units."""
        return self._weights[kind]

    def window_count(self, agent: str) -> int:
        """The weighted count (micro-units) of the agent's violations in the window (SAN-2)."""
        rec = self._agents.get(agent)
        if rec is None:
            return 0
        return sum(self._weights[k] for r, k in rec.violations if self._in_window(r))

    def rank_of(self, count: int) -> int:
        """The ladder level a weighted count (micro-units) gives: σk at ``sigma_k`` or more.

        # spec/Sanctions.tla: RankOf
        """
        return sum(1 for t in self._thresholds if count >= t)

    def window_rank(self, agent: str) -> int:
        """The ladder level the agent's in-window count gives."""
        return self.rank_of(self.window_count(agent))

    def looks_broken(self, agent: str) -> bool:
        """The malfunction classifier: malformed messages and invalid reveals are a strict
        majority (by number) of the agent's in-window violations.

        # spec/Sanctions.tla: Broken
        """
        rec = self._agents.get(agent)
        if rec is None:
            return False
        window = [k for r, k in rec.violations if self._in_window(r)]
        return 2 * sum(1 for k in window if k in MALFUNCTION) > len(window)

    def tier_cap(self, agent: str) -> int | None:
        """The highest tier the agent may act at; None when barred (suspended, banned or
        quarantined: every command is refused ``sanctioned``).  See ``TIER_CAP``."""
        return TIER_CAP[self.level(agent)]

    def may_act(self, agent: str, action: str) -> bool:
        """Whether the sanctions allow ``agent`` to send the command ``action`` (an agent's
        event of ``lifecycle.EVENTS``) at all — LC-SAFE-4's sanction guard.

        Tier and role are the orchestrator's checks; σ2's lower proposal rate is its rate
        limit (``propose_rate_limited``), not a bar.
        """
        if action not in AGENT_ACTIONS:
            raise ValueError(f"{action!r} is not an agent's command: {sorted(AGENT_ACTIONS)}")
        return self.level(agent) not in BARRING

    def snapshot(self) -> dict[str, Any]:
        """The whole book as JSON-ready data (agents sorted, violations oldest first)."""
        return {
            "now": self._now,
            "agents": {a: self._agents[a].to_dict(self.level(a)) for a in sorted(self._agents)},
        }

    # --- commands ----------------------------------------------------------------------------

    def record(self, agent: str, kind: Violation | str, round: int) -> list[Event]:
        """Count one violation of ``agent`` at ``round`` (spec/Sanctions.tla: Record).

        ``round`` is the current round, or a later one: the book then first advances to it
        exactly as ``tick(round)`` does (its events come first).  Earlier rounds are refused:
        evidence cannot be back-dated into a window that has moved on.  A banned agent's
        violations are not recorded (the ban is terminal).
        """
        # spec/Sanctions.tla: Record
        if not isinstance(agent, str) or not agent:
            raise ValueError("agent must be a non-empty string")
        kind = Violation(kind)
        if round < self._now:
            raise ValueError(f"round {round} is before the current round {self._now}")
        events = self._advance(round) if round > self._now else []
        rec = self._agents.setdefault(agent, AgentRecord())
        if rec.rank == BANNED:
            return events  # terminal: nothing changes a banned agent
        before = self.level(agent)
        rec.violations.append((self._now, kind))
        if self._frozen(rec):
            return events  # SAN-1: recorded, but a quarantined agent's level never rises
        if rec.probation_until is not None:  # tick clears it once now >= probation_until
            rec.strategic = True  # reclassified: its violations continued after release
            rec.probation_until = None
            events.append({"event": "reclassified", "agent": agent})
        target = self.window_rank(agent)  # SAN-2: only in-window violations count
        if target <= rec.rank:
            return events
        if not rec.strategic and rec.rank < SUSPENDED and self.looks_broken(agent):
            rec.quarantined_until = self._now + self.params.T_quarantine
            events.append(self._change(agent, before, "malfunction"))
            return events
        rec.rank = target
        if target == SUSPENDED:
            rec.suspended_until = self._now + self.params.T_susp
        elif target == BANNED:
            rec.suspended_until = None
        events.append(self._change(agent, before, "violation"))
        return events

    def record_events(self, events: Iterable[Mapping[str, Any]], round: int) -> list[Event]:
        """Record the ``violation``/``penalty`` observations of the orchestrator (rules.md
        "Observations"); other events are ignored."""
        out: list[Event] = []
        for ev in events:
            if ev.get("event") in {"violation", "penalty"} and ev.get("kind") in ORCHESTRATOR_KINDS:
                out += self.record(str(ev["agent"]), ORCHESTRATOR_KINDS[ev["kind"]], round)
        return out

    def tick(self, round: int) -> list[Event]:
        """Advance to ``round`` (> now), one round at a time (spec/Sanctions.tla: Tick).

        Each round: violations leave the window, suspensions and quarantine periods that are
        due end (the repair check is asked then), levels fall to what the window gives.
        """
        if round <= self._now:
            raise ValueError(f"tick to round {round}: not after the current round {self._now}")
        return self._advance(round)

    # --- internals (hooks: property_tests/sanctions_mutants.py overrides single ones) --------

    def _advance(self, round: int) -> list[Event]:
        events: list[Event] = []
        while self._now < round:
            self._now += 1
            for agent in sorted(self._agents):
                events += self._tick_agent(agent, self._agents[agent])
        return events

    def _tick_agent(self, agent: str, rec: AgentRecord) -> list[Event]:
        # spec/Sanctions.tla: Tick (one agent's part)
        now = self._now
        before = self.level(agent)
        rec.violations = [(r, k) for r, k in rec.violations if self._in_window(r)]  # SAN-2
        if rec.rank == BANNED:
            return []  # terminal
        if rec.probation_until is not None and now >= rec.probation_until:
            rec.probation_until = None
        events: list[Event] = []
        if rec.quarantined_until is not None:
            if now >= rec.quarantined_until:  # SAN-1: the period ends; the repair check decides
                if self._repaired(agent):
                    rec.quarantined_until = None
                    rec.violations.clear()  # clean slate
                    rec.rank = 0
                    rec.probation_until = now + self.params.sanction_window
                    return [self._change(agent, before, "released")]
                rec.quarantined_until = now + self.params.T_quarantine
                events.append({"event": "quarantine_renewed", "agent": agent})
            rec.rank = min(rec.rank, self.window_rank(agent))  # expiry lowers, never raises
            return events
        if rec.rank == SUSPENDED:
            assert rec.suspended_until is not None
            if now >= rec.suspended_until:
                rec.suspended_until = None
                rec.rank = min(self.window_rank(agent), AFTER_SUSPENSION)
                events.append(self._change(agent, before, "suspension_end"))
            return events
        rank = min(rec.rank, self.window_rank(agent))
        if rank != rec.rank:
            rec.rank = rank
            events.append(self._change(agent, before, "expiry"))
        return events

    def _in_window(self, r: int) -> bool:
        """SAN-2: a violation of round ``r`` counts at round ``now``."""
        return self._now - self.params.sanction_window < r <= self._now

    def _frozen(self, rec: AgentRecord) -> bool:
        """SAN-1: a quarantined agent's violations never escalate it."""
        return rec.quarantined_until is not None

    def _repaired(self, agent: str) -> bool:
        """The repair check at the end of a quarantine period."""
        return bool(self._repair_check(agent, self._now))

    def _change(self, agent: str, before: Sanction, cause: str) -> Event:
        return {
            "event": "sanction",
            "agent": agent,
            "from": before.value,
            "to": self.level(agent).value,
            "cause": cause,
        }
