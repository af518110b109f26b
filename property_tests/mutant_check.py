"""Running a Hypothesis state machine, and requiring it to catch a mutant with the right check.

Shared by the lifecycle (``test_mutants.py``) and consensus (``test_consensus_mutants.py``)
mutant tests: a mutant must fail the check of its own property id — surviving, or being caught
by another property's check, would leave that property's tests passing vacuously.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test


def run_machine(machine: type[RuleBasedStateMachine], **overrides: Any) -> None:
    """Run ``machine`` under the active profile (``overrides`` on top)."""
    run_state_machine_as_test(machine, settings=settings(settings.default, **overrides))


def assert_mutant_caught(machine: type[RuleBasedStateMachine], mutant: str, prop: str) -> None:
    """Run ``machine`` (wired to the mutant) until the first failure; it must be ``prop``'s.

    No shrinking: only *which* property fails matters, and the first failure says it. Up to
    ``max(1000, profile)`` examples; the run stops at the first failure, so only a surviving
    mutant costs that much (each mutant class gets its own derandomized stream, and some bugs
    need a rare history to show).
    """
    try:
        run_machine(
            machine,
            phases=[Phase.explicit, Phase.generate],
            report_multiple_bugs=False,
            max_examples=max(1000, settings().max_examples),
        )
    except AssertionError as failure:
        message = str(failure)
        assert message.startswith(prop + ":"), f"{mutant} caught by another check: {message[:2000]}"
        return
    pytest.fail(f"mutant {mutant} ({prop}) survived the property tests")
