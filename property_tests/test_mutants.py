"""Every mutant of ``mutants.py`` must be caught by the check of its own property.

The stateful lifecycle test is run against each mutant (no shrinking: only *which*
property fails matters, and the first failure says it).  A mutant that survives, or
that is caught by another property's check, fails this test: the property tests would
otherwise pass vacuously for that property.  A mutant runs up to 1000 examples (the run
stops at the first failure, so only a surviving mutant costs that much): a mutant class
gets its own derandomized stream, and some bugs need a rare history to show.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings

from mutants import MUTANTS
from ostrom.orchestrator import Orchestrator
from test_orchestrator_stateful import LifecycleMachine, run_machine


@pytest.mark.parametrize(("mutant", "prop"), list(MUTANTS.values()), ids=list(MUTANTS))
def test_mutant_is_caught(mutant: type[Orchestrator], prop: str) -> None:
    machine = type(f"{mutant.__name__}Machine", (LifecycleMachine,), {"ORCH": mutant})
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
            f"{mutant.__name__} caught by another check: {message}"
        )
        return
    pytest.fail(f"mutant {mutant.__name__} ({prop}) survived the property tests")
