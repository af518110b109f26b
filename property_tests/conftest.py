"""Hypothesis profiles, selected with ``pytest --hypothesis-profile=NAME`` (default ``ci``).

``ci`` is repeatable (derandomized, no example database) and bounded so that the whole
suite stays fast; ``deep`` explores far more and longer histories for a nightly run.
The stateful lifecycle tests read ``max_examples`` and ``stateful_step_count`` from the
active profile, so switching profiles changes how deep they go.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

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
