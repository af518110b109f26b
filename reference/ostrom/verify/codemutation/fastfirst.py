"""A pytest plugin for code-mutation runs: a mutant's tests run fastest first.

mutmut runs, for each mutant, the tests that reach the mutated function with ``-x`` (stop
at the first failure), in no particular order.  A mutant is usually killed by a cheap
unit test as surely as by a Hypothesis state machine that runs for half a minute, so
running the cheap ones first makes the kills cheap, and a run of the PBFT replica's ~1,900
mutants takes hours instead of days.  The order changes no verdict: each test is
deterministic (Hypothesis profile ``ci``, derandomized) and a survivor runs all of them.

The durations are the ones mutmut measured in its own first run of the tests (its
``mutmut-stats.json``, in the directory the tests run in); without that file the order
is left alone.  Loaded with ``-p ostrom.verify.codemutation.fastfirst`` (workspace.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

__all__ = ["pytest_collection_modifyitems"]


def _durations() -> dict[str, float]:
    path = Path.cwd() / "mutmut-stats.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    raw = doc.get("duration_by_test") if isinstance(doc, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {str(k): float(v) for k, v in raw.items() if isinstance(v, int | float)}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Sort the selected tests by their measured duration (unknown ones last, stable)."""
    durations = _durations()
    if durations:
        items.sort(key=lambda item: durations.get(item.nodeid, math.inf))
