"""Conformance-suite benchmark: the reference driver through the runner, and trace validation.

* **vectors/s** — ``runner.run_suite`` over every vector of the suite against
  ``python -m ostrom.conformance.driver`` (a subprocess speaking the driver protocol, as any
  implementation under test): vectors and steps per second, overall and per layer (the
  runner's own per-vector clock), best of ``RUNS``;
* **a full conform run** — ``ostrom conform -- python -m ostrom.conformance.driver`` end to end in a
  fresh process (interpreter start, imports, the suite check: manifest, sha256 and JSON
  Schema of every file, both driver handshakes, the report), median of ``RUNS``;
* **the kill matrix** — every mutant through conform (and validate-trace where it
  applies), as ``property_tests/conformance/test_kill_matrix.py`` runs it;
* **validate-trace of a 1,000-step log** — ``random_lifecycle_log(1000)`` of
  ``ostrom.conformance.generators.random_log`` (seeded: mostly commands an honest agent sends, some
  refused ones, ticks; what ``python -m ostrom.conformance.driver --log`` writes for them), checked
  against spec/Lifecycle.tla as ``ostrom validate-trace FILE`` does, median of ``RUNS``.

``bench_conformance()`` returns the figures as a dict; ``python bench/conformance.py``
prints them as JSON.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ostrom.conformance import killmatrix, runner

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3
LOG_STEPS = 1_000
SEED = 0
TRACE_TIMEOUT = 600.0  # seconds: a validate-trace run that takes longer is reported as such
DRIVER = [sys.executable, "-m", "ostrom.conformance.driver"]


# --- vectors through the reference driver ---------------------------------------------------


def bench_vectors() -> dict[str, Any]:
    suite = runner.load_suite(runner.default_vectors_dir())
    steps_total = sum(len(v.steps) for v in suite.vectors)
    best: runner.Report | None = None
    for _ in range(RUNS):
        report = runner.run_suite(suite, DRIVER)
        if not report.ok:
            raise SystemExit("the reference driver failed its own vectors: run ostrom conform")
        if best is None or report.seconds < best.seconds:
            best = report
    assert best is not None
    layers: dict[str, dict[str, Any]] = {}
    for res in best.results:
        row = layers.setdefault(res.vector.layer, {"vectors": 0, "steps": 0, "seconds": 0.0})
        row["vectors"] += 1
        row["steps"] += len(res.vector.steps)
        row["seconds"] += res.seconds
    for row in layers.values():
        row["vectors_per_s"] = round(row["vectors"] / row["seconds"])
        row["steps_per_s"] = round(row["steps"] / row["seconds"])
        row["seconds"] = round(row["seconds"], 3)
    return {
        "vectors": len(suite.vectors),
        "steps": steps_total,
        "seconds": round(best.seconds, 3),
        "vectors_per_s": round(len(suite.vectors) / best.seconds),
        "steps_per_s": round(steps_total / best.seconds),
        "runs": RUNS,
        "per_layer": layers,
    }


def bench_full_run() -> dict[str, Any]:
    cmd = [sys.executable, "-m", "ostrom", "conform", "--", *DRIVER]
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        times.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise SystemExit(f"ostrom conform failed ({done.returncode}):\n{done.stdout[-2000:]}")
    last = done.stdout.strip().splitlines()[-1]
    return {
        "command": "ostrom conform -- python -m ostrom.conformance.driver",
        "seconds_median": round(statistics.median(times), 3),
        "seconds_all": [round(t, 3) for t in times],
        "summary": last,
    }


def bench_kill_matrix() -> dict[str, Any]:
    t0 = time.perf_counter()
    rows = killmatrix.build()
    seconds = time.perf_counter() - t0
    return {
        "mutants": len(rows),
        "killed": sum(not r.survives for r in rows),
        "seconds": round(seconds, 2),
        "conform_seconds": round(sum(r.conform.seconds for r in rows), 2),
        "trace_seconds": round(sum(r.trace.seconds for r in rows), 2),
        "trace_statuses": {
            s: sum(r.trace.status == s for r in rows)
            for s in sorted({r.trace.status for r in rows})
        },
    }


# --- validate-trace of a 1,000-step lifecycle log ---------------------------------------------


def bench_trace(out: Path) -> dict[str, Any]:
    """``ostrom validate-trace`` on the trace engineer's seeded 1,000-step random log
    (``ostrom.conformance.generators.random_log``), written to a file and validated as the command
    does (``trace.validate_file``)."""
    if not killmatrix.trace_available():
        return {"validate_trace": "TODO: ostrom validate-trace is not in this tree yet"}
    from ostrom.conformance.generators.random_log import random_lifecycle_log
    from ostrom.verify.trace import log as trace_log
    from ostrom.verify.trace import validate as trace

    log = random_lifecycle_log(LOG_STEPS, seed=SEED)
    path = out / "random-1000.jsonl"
    path.write_text("\n".join(trace_log.log_lines(log)) + "\n", encoding="utf-8")
    results = [s.result for s in log.steps]
    times = []
    verdict = None
    for _ in range(RUNS):
        verdict = trace.validate_file(path, timeout=TRACE_TIMEOUT)
        times.append(verdict.seconds)
    assert verdict is not None
    return {
        "log": f"random_lifecycle_log({LOG_STEPS}, seed={SEED})",
        "log_steps": len(log.steps),
        "accepted_commands": sum(r == "ok" for r in results),
        "ticks": sum(
            isinstance(s.command, dict) and s.command.get("op") == "tick" for s in log.steps
        ),
        "log_bytes": path.stat().st_size,
        "verdict": verdict.status,
        "distinct_states": verdict.distinct_states,
        "seconds_median": round(statistics.median(times), 2),
        "seconds_all": [round(t, 2) for t in times],
        "steps_per_s": round(len(log.steps) / statistics.median(times), 1),
    }


def bench_conformance() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ostrom-bench-") as tmp:
        trace = bench_trace(Path(tmp))
    return {
        "cores": _cores(),
        "reference_driver": bench_vectors(),
        "full_conform_run": bench_full_run(),
        "kill_matrix": bench_kill_matrix(),
        "trace_log_1000": trace,
    }


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    print(
        json.dumps(
            {"python": platform.python_version(), **bench_conformance()}, indent=2, default=str
        )
    )
