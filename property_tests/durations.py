"""The measured cost of each test module, for the order in which the workers take them.

``pytest --dist loadfile`` deals whole modules to the two workers in collection order, and
xdist's default reorders them by their *number of tests*: a module of one 70-second state
machine came last and ran alone while the other worker idled (about 150 worker-seconds of
``make test`` in a run measured from a clean clone).  conftest.py orders the modules by
their measured seconds instead, longest first (the LPT rule), from ``durations.json``,
which this script writes from a run's JUnit XML (``make test-durations``)::

    python property_tests/durations.py build/junit.xml

A module missing from the file (a new one) counts as :data:`UNKNOWN` seconds; a stale
figure only makes the order worse, never a test wrong.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

__all__ = ["PATH", "UNKNOWN", "load", "module_seconds"]

PATH = Path(__file__).resolve().parent / "durations.json"
#: What an unmeasured module is assumed to cost (the median module takes about a second).
UNKNOWN = 5.0


def module_seconds(junit: Path) -> dict[str, float]:
    """Seconds per test module file (``property_tests/…/test_x.py``) in a JUnit XML report."""
    totals: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit).iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        while len(parts) > 1 and parts[-1][:1].isupper():  # a test class: its module's
            parts.pop()
        module = "/".join(parts) + ".py"
        totals[module] += float(case.get("time") or 0.0)
    return {m: round(s, 1) for m, s in sorted(totals.items())}


def load(path: Path = PATH) -> dict[str, float]:
    """The recorded seconds per module; empty if the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python property_tests/durations.py JUNIT.xml", file=sys.stderr)
        return 2
    try:
        seconds = module_seconds(Path(argv[0]))
    except (OSError, ET.ParseError) as exc:
        print(f"error: {argv[0]}: {exc}", file=sys.stderr)
        return 2
    PATH.write_text(json.dumps(seconds, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {PATH.name}: {len(seconds)} modules, {sum(seconds.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
