"""Every mutant of ``consensus_mutants.py`` must be caught by the check of its own property.

The stateful PBFT test is run with the mutant as every replica's code (no shrinking: only
*which* property fails matters, and the first failure says it).  A mutant that survives,
or that is caught by another property's check, fails this test.  A mutant runs up to
``max(1000, profile)`` examples; the run stops at the first failure, so only a surviving
mutant costs that much.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings

from consensus_mutants import MUTANTS
from ostrom.consensus.replica import Replica
from test_consensus_stateful import PBFTMachine, run_machine


@pytest.mark.parametrize(("mutant", "prop"), list(MUTANTS.values()), ids=list(MUTANTS))
def test_consensus_mutant_is_caught(mutant: type[Replica], prop: str) -> None:
    machine = type(f"{mutant.__name__}Machine", (PBFTMachine,), {"REPLICA": mutant})
    try:
        run_machine(
            machine,
            phases=[Phase.explicit, Phase.generate],
            report_multiple_bugs=False,
            max_examples=max(1000, settings.default.max_examples),
        )
    except AssertionError as failure:
        message = str(failure)
        assert message.startswith(prop + ":"), (
            f"{mutant.__name__} caught by another check: {message[:2000]}"
        )
        return
    pytest.fail(f"mutant {mutant.__name__} ({prop}) survived the property tests")
