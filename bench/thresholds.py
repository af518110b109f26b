"""Threshold-proof benchmark: how long ``ostrom check-params`` takes.

* ``prove_all`` on the defaults, in-process: the first call (Z3's one-time set-up
  included) and the median of ``RUNS`` further calls, with the slowest checks;
* ``prove_general`` (every theorem for all parameter values in range), median of ``RUNS``;
* the command end to end in a fresh process (interpreter start, imports, Z3, printing):
  ``ostrom check-params`` on the defaults and on ``examples/params/bad-tally.toml``, median
  of ``CLI_RUNS`` runs each.  The defaults exit 0 (every theorem proved), the bad file
  exits 1 (docs/thresholds.md), which is expected here.

``bench_thresholds()`` returns the figures as a dict; ``python bench/thresholds.py``
prints them as JSON.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ostrom.protocol.params import DEFAULTS
from ostrom.verify import thresholds

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5
CLI_RUNS = 3


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _cli_seconds(*args: str) -> tuple[float, int]:
    """Median wall-clock of ``ostrom check-params ARGS`` in a fresh interpreter."""
    times, code = [], 0
    for _ in range(CLI_RUNS):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ostrom", "check-params", *args, "--json"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        times.append(time.perf_counter() - t0)
        code = proc.returncode
        json.loads(proc.stdout)  # the run really produced its report
    return statistics.median(times), code


def bench_thresholds() -> dict[str, Any]:
    first, results = _timed(lambda: thresholds.prove_all(DEFAULTS))
    warm = [_timed(lambda: thresholds.prove_all(DEFAULTS))[0] for _ in range(RUNS)]
    general = [_timed(thresholds.prove_general)[0] for _ in range(RUNS)]
    slowest = sorted(results, key=lambda r: r.seconds, reverse=True)[:3]
    cli_defaults, code_defaults = _cli_seconds()
    cli_bad, code_bad = _cli_seconds(str(ROOT / "examples" / "params" / "bad-tally.toml"))
    return {
        "checks": len(results),
        "general_checks": len(thresholds.prove_general()),
        "prove_all_defaults_first_s": round(first, 4),
        "prove_all_defaults_median_s": round(statistics.median(warm), 4),
        "prove_general_median_s": round(statistics.median(general), 4),
        "slowest_checks_ms": {r.name: round(r.seconds * 1000, 1) for r in slowest},
        "cli_check_params_defaults_s": round(cli_defaults, 3),
        "cli_check_params_defaults_exit": code_defaults,
        "cli_check_params_bad_tally_s": round(cli_bad, 3),
        "cli_check_params_bad_tally_exit": code_bad,
    }


if __name__ == "__main__":
    data = {"python": platform.python_version(), "machine": platform.machine()}
    print(json.dumps({**data, **bench_thresholds()}, indent=2))
