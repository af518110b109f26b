"""Deliberately broken orchestrators: one bug each, one per property.

``test_mutants.py`` runs the stateful lifecycle test against every mutant and requires
Hypothesis to find a failure *of the named property*.  A mutant that survives means the
property tests have gone blind to that property, so CI fails.  Each mutant overrides
one small hook of ``Orchestrator``; everything else is the real code.
"""

from __future__ import annotations

from typing import Any

from ostrom.conformance.mutants.registry import code_mutants
from ostrom.protocol.commands import Event
from ostrom.protocol.errors import ErrorCode, Refused
from ostrom.protocol.forgetting import ForgetRule
from ostrom.protocol.lifecycle import ARBITRATION, DISPUTED, FORGOTTEN
from ostrom.protocol.orchestrator import Artifact, Orchestrator
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.protocol.voting import Ballot, commitment


class ObjectionIgnored(Orchestrator):
    """LC-SAFE-1: an accepted objection does not stop the fast track."""

    def _do_object(self, art: Artifact) -> list[Event]:
        return []


class NoSupersede(Orchestrator):
    """LC-SAFE-2: a new active artifact leaves the old one active."""

    def _supersede(self, art: Artifact) -> list[Event]:
        return []


class DisputeUnbounded(Orchestrator):
    """LC-SAFE-3: the max_disputes bound is dropped."""

    def __init__(self, params: Params = DEFAULTS, agents: Any = ()) -> None:
        super().__init__(params, agents)
        self._max_disputes = 10**9


class TierOffByOne(Orchestrator):
    """LC-SAFE-4: every tier guard is one tier too lenient."""

    def _min_tier(self, event: str) -> int:
        return max(0, super()._min_tier(event) - 1)


class HiddenNeverCleared(Orchestrator):
    """LC-SAFE-5: a failed urgent report leaves the artifact hidden."""

    def _clear_hidden(self, art: Artifact) -> None:
        pass


class ForgetWhileDisputed(Orchestrator):
    """LC-SAFE-6: the forget decision does not wait for a dispute.

    The transition table has no ``forget`` row from ``disputed``, so the machine itself
    refuses this bug; the mutant therefore also patches its own machine with that row
    (as a careless edit of ``TRANSITIONS`` would).
    """

    def __init__(self, params: Params = DEFAULTS, agents: Any = ()) -> None:
        super().__init__(params, agents)
        self._machine.add_transition("forget", DISPUTED, FORGOTTEN)

    class _Rule(ForgetRule):
        def blocker(self, state: str, hidden: bool) -> str | None:
            return None if state == DISPUTED else super().blocker(state, hidden)

    forget_rule = _Rule()


class RevealUnchecked(Orchestrator):
    """CR-2: any reveal is counted, matching or not."""

    def _reveal_matches(
        self, ballot: Ballot, voter: str, artifact: str, vote: str, reason: str, salt: str
    ) -> bool:
        return True


class StaleRoundAccepted(Orchestrator):
    """CR-2: a reveal opening the voter's hash of *any* earlier round is counted."""

    def _reveal_matches(
        self, ballot: Ballot, voter: str, artifact: str, vote: str, reason: str, salt: str
    ) -> bool:
        return any(
            ballot.commitments.get(voter) == commitment(voter, artifact, r, vote, reason, salt)
            for r in range(1, ballot.round + 1)
        )


class CommitmentLeaked(Orchestrator):
    """CR-1: the public state shows what was committed, not only who."""

    def _public_artifact(self, art: Artifact) -> dict[str, Any]:
        out = super()._public_artifact(art)
        if art.ballot is not None:
            out["committed"] = dict(sorted(art.ballot.commitments.items()))
        return out


class ArbitrationNeverTimesOut(Orchestrator):
    """LC-LIVE-1: the arbitration timeout never fires (the artifact waits forever)."""

    def _timeout(self, art: Artifact) -> list[Event]:
        if art.state == ARBITRATION:
            return []
        return super()._timeout(art)


class RefusalBumpsCounter(Orchestrator):
    """REFUSAL: a refused duplicate proposal still uses up the proposer's rate."""

    def _op_propose(self, agent: str, artifact: str, *args: Any, **kw: Any) -> list[Event]:
        a = self._agents.get(agent)
        if a is not None and not a.barred and artifact in self._artifacts:
            self._proposals[agent] = self._proposals.get(agent, 0) + 1
            raise Refused(ErrorCode.DUPLICATE, artifact)
        return super()._op_propose(agent, artifact, *args, **kw)


#: key -> (mutant class, the id of the check that must catch it): the code mutants the
#: mutant registry (ostrom.conformance.mutants.registry) places in this module.
MUTANTS: dict[str, tuple[type[Orchestrator], str]] = code_mutants(
    "mutants", globals(), Orchestrator
)
