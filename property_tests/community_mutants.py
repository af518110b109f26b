"""Deliberately broken integrations of the layers: one bug each, one per property.

``test_community.py`` runs its state machine against every mutant and requires a
failure *of the named property* (the assertion message starts with the id).  Each bug
is one a real integration could make: the layers are right on their own and wrong only
in how the orchestrator's guards are fed from them.
"""

from __future__ import annotations

from typing import Any

import mutants
from ostrom.conformance.mutants.registry import code_mutants
from ostrom.protocol.agents import MAX_TIER
from ostrom.protocol.commands import Event
from ostrom.protocol.community import Community
from ostrom.protocol.orchestrator import Orchestrator


class SanctionsNotEnforced(Community):
    """LC-SAFE-4: violations are counted, but the registry only learns the new level at
    the next tick, so a just-suspended agent can still act until then."""

    def _enforce(self, events: list[Event]) -> list[Event]:
        return self.sanctions.record_events(events, self.now)


class JoinAtTierOne(Community):
    """LC-SAFE-4: a new identity joins at tier 1 instead of tier 0 (reputation bypassed:
    the Sybil's shortcut to reviewing)."""

    def _sync(self, agent: str) -> list[Event]:
        events = super()._sync(agent)
        a = self.agents[agent]
        if a.tier == 0 and not a.barred:
            self.orchestrator.set_agent(agent, 1)
        return events


class StaleTiers(Community):
    """LC-SAFE-4: tiers are copied from reputation at join only, never again (an agent
    demoted by reputation keeps its old rights)."""

    def _sync(self, agent: str) -> list[Event]:
        known = agent in self.agents
        events = super()._sync(agent)
        if known:
            old = self._frozen_tier.setdefault(agent, self.agents[agent].tier)
            self.orchestrator.set_agent(agent, old)
        else:
            self._frozen_tier[agent] = self.agents[agent].tier
        return events

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._frozen_tier: dict[str, int] = {}
        super().__init__(*args, **kwargs)


class ForgetWhileDisputed(Community):
    """LC-SAFE-6: the forget decision does not wait for the dispute (and a careless edit
    of the table allows the row)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, orchestrator_cls=mutants.ForgetWhileDisputed, **kwargs)


class _NoPopulationGuardOrch(Orchestrator):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._min_active = 1


class NoPopulationGuard(Community):
    """FG-1: the orchestrator ignores ``min_active_agents``, so when barred agents leave
    the active population small enough, one agent's vote reaches the quorum."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, orchestrator_cls=_NoPopulationGuardOrch, **kwargs)


class _NoSideRuleOrch(Orchestrator):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._min_side = 1  # the tally on weights alone


class NoSideRule(Community):
    """TALLY-1: a lone heavy vote decides a tally against everyone else."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, orchestrator_cls=_NoSideRuleOrch, **kwargs)


#: key -> (mutant class, the id of the check that must catch it): the code mutants the
#: mutant registry (ostrom.conformance.mutants.registry) places in this module.
MUTANTS: dict[str, tuple[type[Community], str]] = code_mutants(
    "community_mutants", globals(), Community
)

assert MAX_TIER == 3  # the tier arithmetic above assumes tiers 0..3
