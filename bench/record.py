"""Where and how every benchmark writes its figures: ``bench/results/<name>.json``, stamped
with the Python version and the machine, and echoed on stdout.

Shared by ``bench/run.py`` (all benchmarks) and the benchmark scripts run on their own
(``python bench/simulation.py``), so neither imports the other.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from ostrom.layout import ROOT

RESULTS = ROOT / "bench" / "results"


def save(name: str, data: dict[str, Any]) -> Path:
    """Write ``data`` as ``RESULTS/<name>.json`` (with python and machine) and print it."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {
        "benchmark": name,
        "python": platform.python_version(),
        "machine": platform.machine(),
        **data,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(data, indent=2))
    return path
