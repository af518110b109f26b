"""Hypothesis profiles, selected with ``pytest --hypothesis-profile=NAME`` (default ``ci``).

``ci`` is repeatable (derandomized, no example database) and bounded so that the whole
suite stays fast; ``deep`` explores far more and longer histories for a nightly run.
The stateful lifecycle tests read ``max_examples`` and ``stateful_step_count`` from the
active profile, so switching profiles changes how deep they go.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import HealthCheck, settings

from ostrom.verify.tlc import jar

_QUIET = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=300,
    stateful_step_count=80,
    suppress_health_check=_QUIET,
    print_blob=False,
)
settings.register_profile(
    "deep",
    derandomize=False,
    database=None,
    deadline=None,
    max_examples=3000,
    stateful_step_count=150,
    suppress_health_check=_QUIET,
)
settings.load_profile("ci")  # the pytest plugin loads --hypothesis-profile after this


# --- markers: `tlc` (runs TLC, needs java), `venv`, `slow` (see pyproject.toml) ----------
#
# `make test-fast` runs `-m "not tlc and not venv and not slow"`.  A test that starts TLC
# must carry the `tlc` marker (on the test or as the module's `pytestmark`): while an
# unmarked test runs, TLC's start (`find_java`, wherever it was imported) fails the test
# with a message saying so, so the fast run never starts java by accident and a missing
# marker shows at once.


def _unmarked_tlc(real: Callable[[], Path]) -> Callable[[], Path]:
    def find_java() -> Path:
        java = real()  # a missing java or jar still reports as it would
        pytest.fail("this test runs TLC: mark it @pytest.mark.tlc", pytrace=False)
        return java  # pragma: no cover

    return find_java


def _holding(find_java: object) -> list[ModuleType]:
    """The loaded modules whose ``find_java`` is ``find_java``."""
    found = []
    for module in list(sys.modules.values()):
        try:
            if getattr(module, "find_java", None) is find_java:
                found.append(module)
        except Exception:  # a lazy module may fail on attribute access; it holds no TLC
            continue
    return found


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if item.get_closest_marker("tlc") is not None:
        yield
        return
    real = jar.find_java
    guarded = _unmarked_tlc(real)
    for module in _holding(real):
        module.find_java = guarded  # type: ignore[attr-defined]
    try:
        yield
    finally:  # modules first imported during the test took the guard too
        for module in _holding(guarded):
            module.find_java = real  # type: ignore[attr-defined]
