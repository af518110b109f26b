"""Deliberately broken forget rules: one bug each, each caught by the check of its property.

``test_forgetting.py::test_forgetting_mutant_is_caught`` runs the property's Hypothesis
check against each mutant and requires a failure *of that property* (the message starts
with its id).  A mutant that survives means the check has gone blind.  Each mutant
overrides one step of ``ForgetRule``; everything else is the real code.

``MUTANTS`` has the shape of ``mutants.MUTANTS`` (name -> (class, property id)), so the
registry test can list it next to the lifecycle and consensus mutants.
"""

from __future__ import annotations

from collections.abc import Mapping

from ostrom.conformance.mutants.registry import code_mutants
from ostrom.protocol.agents import MICRO
from ostrom.protocol.forgetting import ForgetRule, blocker
from ostrom.protocol.lifecycle import FORGET_VOTABLE, RETRACTED


class QuorumOverVoters(ForgetRule):
    """FG-1: the quorum is α × the weight of those who voted, not of all active agents.

    A plausible reading of "dynamic quorum": a lone voter is then its own quorum and
    forgets alone whenever its confidence is at least α.
    """

    def quorum(self, votes: Mapping[str, int], weights: Mapping[str, int], alpha: float) -> int:
        return round(alpha * MICRO) * sum(w for a, w in weights.items() if a in votes)


class VotableIsForgettable(ForgetRule):
    """LC-SAFE-6: every state that admits a forget *vote* also admits the decision.

    ``FORGET_VOTABLE`` includes ``disputed`` (votes are recorded while a dispute runs);
    confusing it with ``FORGETTABLE`` forgets an artifact whose dispute is still open.
    """

    def blocker(self, state: str, hidden: bool) -> str | None:
        if state in FORGET_VOTABLE and not (hidden and state != RETRACTED):
            return None
        return blocker(state, hidden)


class HiddenIgnored(ForgetRule):
    """LC-SAFE-6: the hidden flag is not consulted (only the state is)."""

    def blocker(self, state: str, hidden: bool) -> str | None:
        return blocker(state, False)


class FloatTally(ForgetRule):
    """FG-EXACT: ``S ≥ Q`` compared in floats instead of micro-unit integers.

    Sums of decimal weights are not exact in binary floating point, so at the threshold
    the float comparison and the integer one disagree, and two replicas (or two languages)
    could take different decisions.  Not a docs/design.md §7 id: the check is "the threshold is
    decided exactly", which every implementation must share.
    """

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


#: key -> (mutant class, the id of the check that must catch it): the code mutants the
#: mutant registry (ostrom.conformance.mutants.registry) places in this module.
MUTANTS: dict[str, tuple[type[ForgetRule], str]] = code_mutants(
    "forgetting_mutants", globals(), ForgetRule
)
