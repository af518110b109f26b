"""A pytest plugin for code-mutation runs: a mutant's cheapest test files run first.

mutmut runs, for each mutant, the tests that reach the mutated function with ``-x`` (stop
at the first failure).  A mutant is usually killed by a cheap unit test as surely as by a
Hypothesis state machine that runs for half a minute, so running the cheap files first
makes the kills cheap, and a run of the PBFT replica's ~1,900 mutants takes hours instead
of days.

The unit of the order is the test *file*, not the test: files are ordered by the mean
measured duration of their selected tests, and inside a file the tests keep the order
they are written in.  Some files rely on that order: a witness test such as
``test_attack_machine_reaches`` reads the counters that the state machines above it in
the same file filled, so it passes after them and fails before them.  An earlier version
sorted single tests, which put that witness (it takes a millisecond) first; mutmut's
clean run, which has every duration once a run is resumed, then failed.  With the file
order kept, the order changes no verdict: each test is deterministic (Hypothesis profile
``ci``, derandomized) and a survivor runs all of them.

The durations are the ones mutmut measured in its own first run of the tests (its
``mutmut-stats.json``, in the directory the tests run in); without that file the order
is left alone.  Loaded with ``-p ostrom.verify.codemutation.fastfirst`` (workspace.py).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["file_of", "order", "pytest_collection_modifyitems"]


class _HasNodeId(Protocol):
    @property
    def nodeid(self) -> str: ...


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


def file_of(nodeid: str) -> str:
    """The file part of a pytest node id (``tests/test_a.py::test_b[x]`` -> the path)."""
    return nodeid.split("::", 1)[0]


def order(nodeids: Sequence[str], durations: dict[str, float]) -> list[int]:
    """The positions of ``nodeids`` in run order: files by the mean duration of their
    tests (a file with any unmeasured test last), each file's tests in their given order."""
    files = [file_of(nodeid) for nodeid in nodeids]
    members: dict[str, list[float]] = defaultdict(list)
    first_seen: dict[str, int] = {}
    for i, (nodeid, f) in enumerate(zip(nodeids, files, strict=True)):
        members[f].append(durations.get(nodeid, math.inf))
        first_seen.setdefault(f, i)
    cost = {f: sum(ds) / len(ds) for f, ds in members.items()}
    return sorted(range(len(nodeids)), key=lambda i: (cost[files[i]], first_seen[files[i]], i))


def pytest_collection_modifyitems(items: list[_HasNodeId]) -> None:
    """Reorder the selected tests by :func:`order` (as collected when nothing is measured)."""
    durations = _durations()
    if durations:
        ranked = order([item.nodeid for item in items], durations)
        items[:] = [items[i] for i in ranked]
