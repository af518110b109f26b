"""Benchmark of ``ostrom validate-trace``: logs of 250, 500 and 1,000 steps of the reference.

Each log is ``random_lifecycle_log(n, seed=0)`` (``ostrom.conformance.generators.random_log``: ten
agents, three slots, every command kind, refusals included), written as the driver's
``--log`` writes it and checked exactly as ``ostrom validate-trace FILE`` does
(``trace.validate_file``: compile, one TLC run with one worker, verdict).  The figure of
issue 5 is the 1,000-step one.  Results go to ``bench/results/validate_trace.json``.

Usage: python bench/trace.py [--steps 1000 ...]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from ostrom.conformance.generators.random_log import random_lifecycle_log
from ostrom.verify.trace import log as trace_log
from ostrom.verify.trace import validate as trace

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def bench_validate_trace(steps: int, seed: int = 0) -> dict[str, Any]:
    """Time validate-trace on a ``steps``-step random log of the reference."""
    started = time.monotonic()
    log = random_lifecycle_log(steps, seed)
    generated = time.monotonic() - started
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"random-{steps}.jsonl"
        path.write_text("\n".join(trace_log.log_lines(log)) + "\n", encoding="utf-8")
        verdict = trace.validate_file(path)
    artifacts = len(log.steps[-1].state["artifacts"]) if log.steps else 0
    return {
        "steps": steps,
        "seed": seed,
        "artifacts": artifacts,
        "ticks": sum(1 for s in log.steps if s.command == {"op": "tick"}),
        "refused": sum(1 for s in log.steps if s.result != "ok"),
        "status": verdict.status,
        "seconds": round(verdict.seconds, 2),
        "steps_per_s": round(steps / verdict.seconds, 1) if verdict.seconds else None,
        "tlc_distinct_states": verdict.distinct_states,
        "log_generation_seconds": round(generated, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[250, 500, 1000])
    args = parser.parse_args()
    runs = [bench_validate_trace(n) for n in args.steps]
    data = {
        "benchmark": "validate_trace",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "workers": 1,
        "runs": runs,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "validate_trace.json").write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
