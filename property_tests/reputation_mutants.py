"""Deliberately broken reputation books: one rule changed each, with the check that must catch it.

``test_reputation.py::test_reputation_mutant_is_caught`` runs the stateful reputation test
(``ReputationMachine``) with each book and requires Hypothesis to fail *that* check
(``mutant_check.assert_mutant_caught``): a surviving mutant means the property tests have
gone blind to the rule.  Each mutant overrides one hook of ``ReputationBook``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ostrom.conformance.mutants.registry import code_mutants
from ostrom.protocol.reputation import Beta, ReputationBook, TierState, plain_decay, step_tier


class PlainDecayBook(ReputationBook):
    """REP-1: decays the evidence counts r, s (the paper's wording) instead of α, β, which
    drags every inactive agent's E towards 1/2."""

    def _decay(self, b: Beta) -> Beta:
        return plain_decay(b, self.params.delta)


class NoFarmingCapBook(ReputationBook):
    """FARM-CAP: weight jumps straight to its raw value, however fast it rises."""

    def _cap(self, raw: int, history: Iterable[int], gain: int) -> int:
        return raw


class NoDwellBook(ReputationBook):
    """TIER-DWELL: promotion needs reputation only, no time in the tier below."""

    def _step_tier(self, state: TierState, e: float) -> TierState:
        return step_tier(state, e, dataclasses.replace(self.params, tier1_rounds=0))


#: key -> (mutant class, the id of the check that must catch it): the code mutants the
#: mutant registry (ostrom.conformance.mutants.registry) places in this module.
MUTANTS: dict[str, tuple[type[ReputationBook], str]] = code_mutants(
    "reputation_mutants", globals(), ReputationBook
)
