"""The driver mutants: the reference with one deliberate bug, served through the driver.

``python -m ostrom.conformance.driver --mutant NAME`` serves the reference with one layer replaced
by the mutant's adapter: ``MUTANTS[NAME] = Mutant(layer, factory, description)``.  A mutant is
a small, deliberate bug — a subclass of the reference class that overrides one method —
wrapped by the layer's reference adapter (``ostrom.conformance.layers``), so everything but
the bug is the reference.

Each is an entry of the mutant registry (:mod:`ostrom.conformance.mutants.registry`), which
gives its name, layer and description (naming the property id, docs/design.md §7, or the
check label whose rule the bug breaks) and says where else the same bug is played: as a
Hypothesis mutant (``property_tests/*mutants.py``) and as a TLC model.  Here it is caught from
the outside, through the driver protocol, by the conformance vectors:
``property_tests/conformance/test_kill_matrix.py`` requires every mutant to fail at least one
vector of its layer (and, for the layers with a trace spec — lifecycle, community, sanctions,
pbft — its trace logs to be rejected by ``ostrom validate-trace``); ``python -m
ostrom.conformance.killmatrix`` prints the matrix (docs/conformance.md keeps it).

Register one with ``@mutant(name)`` on a zero-argument factory that returns a ``Layer``; the
name must be a registry entry marked ``driver=True``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

from ostrom.conformance.layer import Layer, LayerFactory, Observation
from ostrom.conformance.layers import (
    CommunityLayer,
    ForgettingLayer,
    LifecycleLayer,
    ReputationLayer,
    SanctionsLayer,
    VotingLayer,
    pbft_available,
)
from ostrom.conformance.mutants import registry
from ostrom.protocol.agents import MAX_TIER, MICRO, Agent, Sanction
from ostrom.protocol.commands import Event
from ostrom.protocol.community import Community
from ostrom.protocol.errors import ErrorCode, Refused
from ostrom.protocol.forgetting import ForgetRule, blocker
from ostrom.protocol.lifecycle import ARBITRATION, DISPUTED, FORGOTTEN
from ostrom.protocol.orchestrator import Artifact, Orchestrator
from ostrom.protocol.reputation import Beta, ReputationBook, plain_decay
from ostrom.protocol.sanctions import AgentRecord, SanctionBook
from ostrom.protocol.voting import Ballot, commitment

__all__ = ["MUTANTS", "Mutant", "mutant"]


class Mutant(NamedTuple):
    """One mutant: the layer it replaces, a factory of its adapter, what its bug is."""

    layer: str
    factory: LayerFactory
    description: str


#: name -> mutant, in registration order.
MUTANTS: Final[dict[str, Mutant]] = {}


def mutant(name: str) -> Callable[[LayerFactory], LayerFactory]:
    """Register the decorated factory as the driver mutant ``name`` of the registry (its layer
    and description are the registry's)."""
    entry = registry.by_name().get(name)
    if entry is None or not entry.driver:
        raise ValueError(f"mutant {name!r} is not a driver mutant of the registry")

    def register(factory: LayerFactory) -> LayerFactory:
        if name in MUTANTS:
            raise ValueError(f"mutant {name!r} registered twice")
        MUTANTS[name] = Mutant(entry.layer, factory, entry.bug)
        return factory

    return register


# --- lifecycle: one Orchestrator method each ------------------------------------------------


class _IgnoredObjection(Orchestrator):
    """An objection is accepted (``ok``) but does nothing: the artifact stays fast-tracked
    and goes active at its timeout although a reviewer objected (LC-SAFE-1)."""

    def _do_object(self, art: Artifact) -> list[Event]:
        return []


@mutant("lifecycle-ignored-objection")
def _ignored_objection() -> Layer:
    return LifecycleLayer(_IgnoredObjection)


class _UncheckedReveal(Orchestrator):
    """Any reveal of a committed reviewer is counted, whether or not it opens the
    commitment (CR-2)."""

    def _reveal_matches(
        self, ballot: Ballot, voter: str, artifact: str, vote: str, reason: str, salt: str
    ) -> bool:
        return True


@mutant("lifecycle-unchecked-reveal")
def _unchecked_reveal() -> Layer:
    return LifecycleLayer(_UncheckedReveal)


class _StaleReveal(Orchestrator):
    """A reveal that opens the voter's hash for *any* earlier round of the artifact is
    counted: a commitment replayed from an older ballot, and its old opening, pass (CR-2:
    the commitment binds the round)."""

    def _reveal_matches(
        self, ballot: Ballot, voter: str, artifact: str, vote: str, reason: str, salt: str
    ) -> bool:
        return any(
            ballot.commitments.get(voter) == commitment(voter, artifact, r, vote, reason, salt)
            for r in range(ballot.round + 1)
        )


@mutant("lifecycle-stale-reveal")
def _stale_reveal() -> Layer:
    return LifecycleLayer(_StaleReveal)


class _TierOffByOne(Orchestrator):
    """Every tier guard is one tier too lenient (``<`` where ``<=`` was meant)."""

    def _min_tier(self, event: str) -> int:
        return max(0, super()._min_tier(event) - 1)


@mutant("lifecycle-tier-off-by-one")
def _tier_off_by_one() -> Layer:
    return LifecycleLayer(_TierOffByOne)


class _DisputeUnbounded(Orchestrator):
    """The ``max_disputes`` bound is dropped: an artifact can be disputed forever."""

    def _open_dispute(self, agent: str, artifact: str, event: str) -> list[Event]:
        self._max_disputes = 1 << 30
        return super()._open_dispute(agent, artifact, event)


@mutant("lifecycle-dispute-unbounded")
def _dispute_unbounded() -> Layer:
    return LifecycleLayer(_DisputeUnbounded)


class _NoSupersede(Orchestrator):
    """A newly active artifact leaves the slot's old active artifact active."""

    def _supersede(self, art: Artifact) -> list[Event]:
        return []


@mutant("lifecycle-no-supersede")
def _no_supersede() -> Layer:
    return LifecycleLayer(_NoSupersede)


class _HiddenNeverCleared(Orchestrator):
    """A failed urgent report leaves the artifact hidden (never served again)."""

    def _clear_hidden(self, art: Artifact) -> None:
        pass


@mutant("lifecycle-hidden-never-cleared")
def _hidden_never_cleared() -> Layer:
    return LifecycleLayer(_HiddenNeverCleared)


class _DisputedForgettable(ForgetRule):
    def blocker(self, state: str, hidden: bool) -> str | None:
        return None if state == DISPUTED else super().blocker(state, hidden)


class _ForgetWhileDisputed(Orchestrator):
    """The forget decision does not wait for an open dispute (the rule's blocker skips
    ``disputed``, and a careless edit of the table allows the row)."""

    forget_rule = _DisputedForgettable()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._machine.add_transition("forget", DISPUTED, FORGOTTEN)


@mutant("lifecycle-forget-while-disputed")
def _forget_while_disputed() -> Layer:
    return LifecycleLayer(_ForgetWhileDisputed)


class _NoSideRule(Orchestrator):
    """Tallies on weights alone: ``tally_min_side`` is taken as 1."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._min_side = 1


@mutant("lifecycle-no-side-rule")
def _no_side_rule() -> Layer:
    return LifecycleLayer(_NoSideRule)


class _CommitmentLeaked(Orchestrator):
    """The public state shows what each reviewer committed, not only who."""

    def _public_artifact(self, art: Artifact) -> dict[str, Any]:
        out = super()._public_artifact(art)
        if art.ballot is not None and art.ballot.commitments:
            out["committed"] = dict(sorted(art.ballot.commitments.items()))
        return out


@mutant("lifecycle-commitment-leaked")
def _commitment_leaked() -> Layer:
    return LifecycleLayer(_CommitmentLeaked)


class _ArbitrationNeverTimesOut(Orchestrator):
    """The arbitration deadline passes without effect: the artifact waits forever."""

    def _timeout(self, art: Artifact) -> list[Event]:
        if art.state == ARBITRATION:
            art.deadline = None
            return []
        return super()._timeout(art)


@mutant("lifecycle-arbitration-stuck")
def _arbitration_stuck() -> Layer:
    return LifecycleLayer(_ArbitrationNeverTimesOut)


class _SanctionIgnored(Orchestrator):
    """The sanction guard is skipped: a suspended, banned or quarantined agent's commands
    are checked as if it were unsanctioned (it is still not recruited)."""

    def _actor(self, agent: str, event: str, artifact: str | None) -> tuple[Agent, Artifact]:
        a = self._agents.get(agent)
        if a is None or not a.barred:
            return super()._actor(agent, event, artifact)
        self._agents[agent] = dataclasses.replace(a, sanction=Sanction.NONE)
        try:
            return super()._actor(agent, event, artifact)
        finally:
            self._agents[agent] = a


@mutant("lifecycle-sanction-ignored")
def _sanction_ignored() -> Layer:
    return LifecycleLayer(_SanctionIgnored)


class _RateLimitIgnored(Orchestrator):
    """The per-round proposal count is never consulted (it is reset before each check)."""

    def _op_propose(
        self, agent: str, artifact: str, slot: str, digest: str, evidence: tuple[str, ...] = ()
    ) -> list[Event]:
        self._proposals.pop(agent, None)
        return super()._op_propose(agent, artifact, slot, digest, evidence)


@mutant("lifecycle-rate-limit-ignored")
def _rate_limit_ignored() -> Layer:
    return LifecycleLayer(_RateLimitIgnored)


class _RefusalCounts(Orchestrator):
    """A proposal refused as ``duplicate`` still uses up one of the proposer's per-round
    proposals (a refusal must change nothing)."""

    def _op_propose(
        self, agent: str, artifact: str, slot: str, digest: str, evidence: tuple[str, ...] = ()
    ) -> list[Event]:
        a = self._agents.get(agent)
        if a is not None and not a.barred and artifact in self._artifacts:
            self._proposals[agent] = self._proposals.get(agent, 0) + 1
            raise Refused(ErrorCode.DUPLICATE, artifact)
        return super()._op_propose(agent, artifact, slot, digest, evidence)


@mutant("lifecycle-refusal-counts")
def _refusal_counts() -> Layer:
    return LifecycleLayer(_RefusalCounts)


# --- community: the integrated core (one Community method each) ------------------------------


class _SanctionsNotEnforced(Community):
    """Violations are counted, but the registry learns the new level only at the next
    tick: a just-suspended agent still acts until then."""

    def _enforce(self, events: list[Event]) -> list[Event]:
        return self.sanctions.record_events(events, self.now)


@mutant("community-sanction-not-enforced")
def _sanction_not_enforced() -> Layer:
    return CommunityLayer(_SanctionsNotEnforced)


class _JoinAtTierOne(Community):
    """A new identity joins at tier 1 instead of tier 0 (reputation bypassed)."""

    def _sync(self, agent: str) -> list[Event]:
        events = super()._sync(agent)
        a = self.agents[agent]
        if a.tier == 0 and not a.barred:
            self.orchestrator.set_agent(agent, 1)
        return events


@mutant("community-join-at-tier-one")
def _join_at_tier_one() -> Layer:
    return CommunityLayer(_JoinAtTierOne)


class _NoPopulationGuardOrch(Orchestrator):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._min_active = 1


def _no_population_guard(params: Any, members: Iterable[Any] = ()) -> Community:
    return Community(params, members, orchestrator_cls=_NoPopulationGuardOrch)


@mutant("community-no-population-floor")
def _no_population_floor() -> Layer:
    return CommunityLayer(_no_population_guard)


class _StaleTierBook(ReputationBook):
    """Tiers are fixed when an agent is added and never move again."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._frozen_tiers: dict[str, int] = {}

    def tier(self, agent: str, cap: int = MAX_TIER) -> int:
        if agent not in self._frozen_tiers:
            self._frozen_tiers[agent] = super().tier(agent)
        return min(self._frozen_tiers[agent], cap)


def _stale_tiers(params: Any, members: Iterable[Any] = ()) -> Community:
    return Community(params, members, reputation_cls=_StaleTierBook)


@mutant("community-stale-tiers")
def _stale_tiers_layer() -> Layer:
    return CommunityLayer(_stale_tiers)


# --- voting: the pure functions (one adapter method each) ----------------------------------


class _NoSideRuleVoting(VotingLayer):
    """``review_verdict`` and ``dispute_verdict`` decide on weights alone: the side rule's
    ``min_side`` is taken as 1."""

    def _step(self, op: str, command: Mapping[str, Any]) -> Observation:
        if op in ("review_verdict", "dispute_verdict") and isinstance(command.get("min_side"), int):
            command = {**command, "min_side": 1}
        return super()._step(op, command)


@mutant("voting-no-side-rule")
def _voting_no_side_rule() -> Layer:
    return _NoSideRuleVoting()


class _RoundlessCommitment(VotingLayer):
    """The commitment does not bind the round: it is the hash for round 0, whatever the
    command's round, so an opening from an older ballot opens it too."""

    def _step(self, op: str, command: Mapping[str, Any]) -> Observation:
        if op == "commitment" and isinstance(command.get("round"), int):
            command = {**command, "round": 0}
        return super()._step(op, command)


@mutant("voting-roundless-commitment")
def _voting_roundless_commitment() -> Layer:
    return _RoundlessCommitment()


# --- reputation: one ReputationBook hook each ----------------------------------------------


class _PlainDecayBook(ReputationBook):
    """Decay scales the evidence counts r, s instead of α, β: E drifts towards 1/2."""

    def _decay(self, b: Beta) -> Beta:
        return plain_decay(b, self.params.delta)


@mutant("reputation-plain-decay")
def _plain_decay() -> Layer:
    return ReputationLayer(_PlainDecayBook)


class _NoFarmingCapBook(ReputationBook):
    """Weight jumps straight to its raw value, however fast it rises."""

    def _cap(self, raw: int, history: Iterable[int], gain: int) -> int:
        return raw


@mutant("reputation-no-farming-cap")
def _no_farming_cap() -> Layer:
    return ReputationLayer(_NoFarmingCapBook)


# --- sanctions: one SanctionBook hook each --------------------------------------------------


class _WindowOffByOne(SanctionBook):
    """A violation leaves the window one round late: a window of W + 1 rounds."""

    def _in_window(self, r: int) -> bool:
        return self._now - self.params.sanction_window <= r <= self._now


@mutant("sanctions-window-off-by-one")
def _window_off_by_one() -> Layer:
    return SanctionsLayer(_WindowOffByOne)


class _QuarantineEscalates(SanctionBook):
    """A quarantined agent's violations raise its level like anyone's."""

    def _frozen(self, rec: AgentRecord) -> bool:
        return False


@mutant("sanctions-quarantine-escalates")
def _quarantine_escalates() -> Layer:
    return SanctionsLayer(_QuarantineEscalates)


class _NeverReleased(SanctionBook):
    """A passed repair check starts another quarantine period anyway."""

    def _repaired(self, agent: str) -> bool:
        super()._repaired(agent)
        return False


@mutant("sanctions-never-released")
def _never_released() -> Layer:
    return SanctionsLayer(_NeverReleased)


# --- forgetting: one ForgetRule step each ---------------------------------------------------


class _QuorumOverVoters(ForgetRule):
    """Q is α × the weight of those who voted, not of every active agent."""

    def quorum(self, votes: Mapping[str, int], weights: Mapping[str, int], alpha: float) -> int:
        return round(alpha * MICRO) * sum(w for a, w in weights.items() if a in votes)


@mutant("forgetting-quorum-over-voters")
def _quorum_over_voters() -> Layer:
    return ForgettingLayer(_QuorumOverVoters())


class _HiddenIgnored(ForgetRule):
    """The blocker reads the state only: an artifact hidden under review is forgettable."""

    def blocker(self, state: str, hidden: bool) -> str | None:
        return blocker(state, False)


@mutant("forgetting-hidden-ignored")
def _hidden_ignored() -> Layer:
    return ForgettingLayer(_HiddenIgnored())


class _FloatTally(ForgetRule):
    """``S ≥ Q`` compared in floats instead of micro-unit integers."""

    def tally(
        self, votes: Mapping[str, int], weights: Mapping[str, int], alpha: float
    ) -> tuple[int, int, bool]:
        s, q, _ = super().tally(votes, weights, alpha)
        s_f = 0.0
        for voter, c in votes.items():
            s_f += (weights.get(voter, 0) / MICRO) * (c / MICRO)
        total = 0.0
        for w in weights.values():
            total += w / MICRO
        return s, q, s_f > 0 and s_f >= alpha * total


@mutant("forgetting-float-tally")
def _float_tally() -> Layer:
    return ForgettingLayer(_FloatTally())


# --- pbft: ostrom.conformance.pbft_mutants ---------------------------------------------------


def _register_pbft() -> None:
    if not pbft_available():  # pragma: no cover - the PBFT adapter ships with the reference
        return
    from ostrom.conformance.pbft_mutants import PBFT_MUTANTS

    for name, (_layer, factory, _description) in PBFT_MUTANTS.items():
        mutant(name)(factory)


_register_pbft()
