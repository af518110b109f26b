"""The whole protocol in one deterministic core: the orchestrator and the layers that feed it.

The lifecycle orchestrator guards every command with the agent's tier, weight and
sanction, read from its registry.  On its own (``Orchestrator``) that registry is given
by ``set_agent``; here it is *derived*, and only derived (docs/design.md §2, §4):

* **reputation drives tiers drives guards**: every revealed vote is scored
  (``ReputationBook.record_votes``) when its ballot is decided; at every ``tick`` the
  book decays, recomputes global trust, weights (farming cap) and tiers, and the
  registry takes the new tier and weight;
* **sanctions block actions**: the orchestrator's observations name each violation
  (``violation``/``penalty`` events); the ``SanctionBook`` counts them and its level is
  written into the registry *at once*, so the very next command of a suspended,
  banned or quarantined agent is refused ``sanctioned`` (agents are stateless: the
  registry, not the agent, remembers).  Tier caps apply on top of reputation;
* **forgetting** is the orchestrator's own forget decision (``forgetting.decide``):
  never while disputed or hidden under review, never below ``min_active_agents``.

``set_agent`` is therefore refused here (``invalid_input``): an agent enters with
``join`` at tier 0 and w_min (REP-2).  A community starts from *founders*, agents given
a tier and a prior at construction: with every agent at tier 0 nobody could review and
no reputation could ever be earned (docs/community.md).

Vote feedback (docs/design.md §2): against the decision (the paper's rule) or against ground
truth (``feedback="truth"`` with a ``truth`` callable, for the simulation).  A tally
that goes to arbitration scores its votes against the arbiter's accept or reject; a
revote or a status-quo timeout scores nothing (nobody decided on the merits).

Same contract as the orchestrator: ``apply(command) -> observation``, never an exception
for bad input, a refused command changes nothing (its violation is still counted: that
is what the sanctions layer is for), time only by ``tick``, no I/O, no clock, no entropy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ostrom.protocol.agents import MAX_TIER, Agent, Sanction, micro
from ostrom.protocol.commands import Event, Observation
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.protocol.reputation import Beta, ReputationBook
from ostrom.protocol.sanctions import RepairCheck, SanctionBook

__all__ = ["REFUSED_WITH_VIOLATION", "Community", "Member", "Truth"]

#: The refusals whose only effect is a violation of their sender of the same kind
#: (``Community.refused``): the orchestrator's ``rate_limited`` and ``bad_reveal``.
REFUSED_WITH_VIOLATION: Final = frozenset({"rate_limited", "bad_reveal"})

#: A tick event's verdict -> the vote value it decided (None: not a decision on the merits).
DECIDED_VOTE: Final[Mapping[str, str]] = {
    "accept": "accept",
    "reject": "reject",
    "retract": "retract",
    "keep": "keep",
    "keep_superseded": "keep",
}

#: ``truth(artifact, ballot)`` -> the vote value that is right ("accept"/"reject" for a
#: review ballot, "retract"/"keep" for a dispute), or None if unknown.
Truth = Callable[[str, str], str | None]


@dataclass(frozen=True)
class Member:
    """An agent a community starts with.

    ``tier`` > 0 makes a founder: it starts at that tier with a prior of mean
    ``reputation`` and weight ``evidence`` (pseudo-observations; at least 2, the uniform
    prior's), which must support the tier.  ``pretrusted`` members make up EigenTrust's
    seed vector p.
    """

    id: str
    tier: int = 0
    reputation: float = 0.5
    evidence: float = 2.0
    pretrusted: bool = False
    subscriptions: frozenset[str] = field(default_factory=frozenset)


def _is_id(v: object) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 256


class Community:
    """Orchestrator + reputation + sanctions, with the registry derived from the layers.

    ``orchestrator``, ``reputation`` and ``sanctions`` are read-only views for tests,
    tools and the simulation; only ``apply`` (or the typed helpers) changes anything.
    The ``*_cls`` arguments exist for the mutants of property_tests (one bug each).
    """

    def __init__(
        self,
        params: Params = DEFAULTS,
        members: Iterable[Member] = (),
        *,
        feedback: str = "decision",
        truth: Truth | None = None,
        repair_check: RepairCheck | None = None,
        orchestrator_cls: type[Orchestrator] = Orchestrator,
        reputation_cls: type[ReputationBook] = ReputationBook,
        sanctions_cls: type[SanctionBook] = SanctionBook,
    ) -> None:
        members = tuple(members)
        ids = [m.id for m in members]
        if len(set(ids)) != len(ids):
            raise ValueError("member ids must be unique")
        if feedback == "truth" and truth is None:
            raise ValueError('feedback="truth" needs a truth callable')
        self.params = params
        self._truth = truth
        self.reputation = reputation_cls(
            params, pretrusted=[m.id for m in members if m.pretrusted], feedback=feedback
        )
        self.sanctions = sanctions_cls(params, repair_check)
        self.orchestrator = orchestrator_cls(params)
        self._subscriptions: dict[str, frozenset[str]] = {}
        self._pending: dict[str, dict[str, str]] = {}  # artifact -> votes awaiting an arbiter
        for m in members:
            prior = None if m.tier == 0 else Beta(m.reputation, max(m.evidence, 2.0))
            self.reputation.add(m.id, prior=prior, tier=m.tier)
            self._subscriptions[m.id] = frozenset(m.subscriptions)
            self._sync(m.id)

    # --- entry point ------------------------------------------------------------------------

    def apply(self, command: object) -> Observation:
        """Apply one command; ``{"result": "ok" | code, "events": [...]}`` as the
        orchestrator's, plus the layers' events (``sanction``, ``agent``)."""
        if isinstance(command, dict) and command.get("op") == "join":
            return self._join(command)
        if isinstance(command, dict) and command.get("op") == "set_agent":
            return {"result": "invalid_input", "events": []}  # the registry is derived
        obs = self.orchestrator.apply(command)
        events: list[Event] = list(obs["events"])
        if obs["result"] == "ok" and isinstance(command, dict):
            if command.get("op") == "tick":
                events += self._after_tick(obs["events"])
            elif command.get("op") == "arbitrate":
                for agent in self._arbiter_feedback(obs["events"]):
                    events += self._sync(agent)
        events += self._enforce(obs["events"])
        return {"result": obs["result"], "events": events}

    def refused(self, agent: str, code: str) -> Observation:
        """What a command of ``agent`` that was refused ``code`` with a violation did,
        without the command: a ``rate_limited`` or ``bad_reveal`` refusal changes nothing
        but its sender's violation count (the orchestrator checks before it changes
        anything, then ``apply`` enforces the refusal's violation), so this observation
        and state are ``apply``'s for that command.  A node logs such a command, when
        oversized, as its hash and replays it by this (ROW-1, service/gate.py).  Any other
        code, or an agent not registered: ``invalid_input``, nothing changed."""
        if code not in REFUSED_WITH_VIOLATION or self.orchestrator.agent(agent) is None:
            return {"result": "invalid_input", "events": []}
        events: list[Event] = [{"event": "violation", "agent": agent, "kind": code}]
        return {"result": code, "events": events + self._enforce(events)}

    # --- typed helpers ----------------------------------------------------------------------

    def join(self, agent: str, subscriptions: Iterable[str] = ()) -> Observation:
        return self.apply({"op": "join", "agent": agent, "subscriptions": list(subscriptions)})

    def tick(self) -> Observation:
        return self.apply({"op": "tick"})

    # --- reading ----------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self.orchestrator.now

    @property
    def agents(self) -> Mapping[str, Agent]:
        return self.orchestrator.agents

    def state_of(self, artifact: str) -> str | None:
        return self.orchestrator.state_of(artifact)

    def public_state(self) -> dict[str, Any]:
        """The orchestrator's public state plus the registry the layers derived."""
        return {**self.orchestrator.public_state(), "agents": self.public_agents()}

    def public_agents(self) -> dict[str, Any]:
        """The registry part of ``public_state`` alone: ``ostrom log export`` reads it at
        every step without building the artifacts' part, which grows with the log."""
        return {a: _public_agent(x) for a, x in sorted(self.agents.items())}

    # --- internals --------------------------------------------------------------------------

    def _join(self, command: dict[str, Any]) -> Observation:
        extra = set(command) - {"op", "agent", "subscriptions"}
        subs = command.get("subscriptions", [])
        if (
            extra
            or not _is_id(command.get("agent"))
            or not isinstance(subs, list)
            or not all(_is_id(s) for s in subs)
        ):
            return {"result": "invalid_input", "events": []}
        agent = command["agent"]
        if self.orchestrator.agent(agent) is not None:  # not self.agents: an O(N) copy
            return {"result": "duplicate", "events": []}
        self.reputation.add(agent)  # tier 0, w_min: a fresh identity is cheap (REP-2)
        self._subscriptions[agent] = frozenset(subs)
        return {"result": "ok", "events": [{"event": "join", "agent": agent}, *self._sync(agent)]}

    def _after_tick(self, tick_events: list[Event]) -> list[Event]:
        """Score the ballots this tick decided, then one round of each layer, then the
        registry (LC-SAFE-4 reads it from the next command on)."""
        for ev in tick_events:
            if ev.get("event") != "timeout":
                continue
            verdict = ev.get("verdict")
            if verdict == "undecided":
                votes = self._revealed(ev["artifact"])
                if votes:
                    self._pending[ev["artifact"]] = votes
            elif isinstance(verdict, str) and verdict in DECIDED_VOTE:
                votes = self._revealed(ev["artifact"])
                self._feedback(ev["artifact"], votes, DECIDED_VOTE[verdict])
            elif ev.get("from") == "arbitration":
                self._pending.pop(ev["artifact"], None)  # status quo: no decision on the merits
        ticked = self.reputation.tick()
        events = self.sanctions.tick(self.now) if self.now > self.sanctions.now else []
        # only the agents whose tier, weight, E or sanction this tick may have moved: the
        # book names the ones it computed, the sanction book's events the others; every
        # other agent's registry entry is already what _sync would write (docs/reputation.md,
        # "What a tick costs"), so a tick costs what changed, not who exists
        moved = set(ticked) | {str(e["agent"]) for e in events if "agent" in e}
        for agent in sorted(moved):
            events += self._sync(agent)
        return events

    def _arbiter_feedback(self, events: list[Event]) -> list[str]:
        """Score the tally's voters (and submitter) against the arbiter's outcome; the
        agents whose evidence changed, sorted."""
        touched: set[str] = set()
        for ev in events:
            if ev.get("event") != "arbitrate":
                continue
            votes = self._pending.pop(ev["artifact"], None)
            if votes is not None and ev.get("verdict") in ("accept", "reject"):
                self._feedback(ev["artifact"], votes, ev["verdict"])
                pub = self.orchestrator.public_artifact(ev["artifact"])
                touched |= set(votes) | ({pub["submitter"]} if pub else set())
        return sorted(touched)

    def _revealed(self, artifact: str) -> dict[str, str]:
        pub = self.orchestrator.public_artifact(artifact)
        return dict(pub["revealed"] or {}) if pub else {}

    def _feedback(self, artifact: str, votes: dict[str, str], decided: str) -> None:
        """Score the voters, and the submitter: an accepted artifact is evidence for its
        submitter, a rejected or retracted one against (the same reference as the votes:
        the decision, or the truth).  Without the submitter's share a newcomer, who may
        propose but not review, could never leave tier 0."""
        ballot = "dispute" if decided in ("retract", "keep") else "review"
        truth = None if self._truth is None else self._truth(artifact, ballot)
        if votes:
            self.reputation.record_votes(votes, decided, truth)
        reference = decided if self.reputation.feedback == "decision" else truth
        pub = self.orchestrator.public_artifact(artifact)
        if pub is not None and reference in ("accept", "reject", "retract"):
            self.reputation.observe(pub["submitter"], reference == "accept")

    def _enforce(self, events: list[Event]) -> list[Event]:
        """Count the violations of these observations now and bar at once (LC-SAFE-4)."""
        out = self.sanctions.record_events(events, self.now)
        for agent in sorted({e["agent"] for e in out if "agent" in e}):
            out += self._sync(agent)
        return out

    def _sync(self, agent: str) -> list[Event]:
        """Write the layers' view of ``agent`` into the orchestrator's registry; an
        ``agent`` event if anything the guards read changed."""
        level = self.sanctions.level(agent)
        cap = self.sanctions.tier_cap(agent)
        tier = self.reputation.tier(agent, MAX_TIER if cap is None else cap)
        weight = self.reputation.weight(agent)
        rep = self.reputation.expected(agent)
        old = self.orchestrator.agent(agent)  # not self.agents: that copies the registry
        new = Agent(agent, tier, weight, rep, level, self._subscriptions.get(agent, frozenset()))
        if old == new:
            return []
        self.orchestrator.set_agent(
            agent,
            tier,
            weight=weight,
            reputation=rep,
            sanction=level.value,
            subscriptions=sorted(new.subscriptions),
        )
        if old is not None and (old.tier, old.weight, old.sanction) == (tier, weight, level):
            return []  # only the reputation moved: not something the guards read
        return [{"event": "agent", **_public_agent(new)}]


def _public_agent(a: Agent) -> dict[str, Any]:
    """An agent's public registry entry.  ``reputation_micro`` is the expected reputation E
    the tier was derived from, in micro-units (spec/CommunityTrace.tla checks the tier
    against the tier rule over it)."""
    return {
        "agent": a.id,
        "tier": a.tier,
        "weight": a.weight,
        "sanction": a.sanction.value if isinstance(a.sanction, Sanction) else a.sanction,
        "reputation_micro": micro(a.reputation),
    }
