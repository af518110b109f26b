"""Every mutant of ``mutants.py`` must be caught by the check of its own property.

The stateful lifecycle test is run against each mutant (``mutant_check.assert_mutant_caught``):
a mutant that survives, or that is caught by another property's check, fails this test: the
property tests would otherwise pass vacuously for that property.
"""

from __future__ import annotations

import pytest
from test_orchestrator_stateful import LifecycleMachine

from mutant_check import assert_mutant_caught
from mutants import MUTANTS
from ostrom.protocol.orchestrator import Orchestrator


@pytest.mark.parametrize(("mutant", "prop"), list(MUTANTS.values()), ids=list(MUTANTS))
@pytest.mark.budget  # holds at the ci profile's budget
@pytest.mark.mutation  # a mutant the machine must catch: make mutate, make test-slow
def test_mutant_is_caught(mutant: type[Orchestrator], prop: str) -> None:
    machine = type(f"{mutant.__name__}Machine", (LifecycleMachine,), {"ORCH": mutant})
    assert_mutant_caught(machine, mutant.__name__, prop)
