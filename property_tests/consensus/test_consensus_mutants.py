"""Every mutant of ``consensus_mutants.py`` must be caught by the check of its own property.

The stateful PBFT test is run with the mutant as every replica's code
(``mutant_check.assert_mutant_caught``): a mutant that survives, or that is caught by another
property's check, fails this test.
"""

from __future__ import annotations

import pytest
from test_consensus_stateful import PBFTMachine

from consensus_mutants import MUTANTS
from mutant_check import assert_mutant_caught
from ostrom.consensus.replica import Replica


@pytest.mark.parametrize(("mutant", "prop"), list(MUTANTS.values()), ids=list(MUTANTS))
@pytest.mark.budget  # holds at the ci profile's budget
@pytest.mark.mutation  # a mutant the machine must catch: make mutate, make test-slow
def test_consensus_mutant_is_caught(mutant: type[Replica], prop: str) -> None:
    machine = type(f"{mutant.__name__}Machine", (PBFTMachine,), {"REPLICA": mutant})
    assert_mutant_caught(machine, mutant.__name__, prop)
