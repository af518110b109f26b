"""Reviewer sortition benchmark: the cost of a tick that recruits ``ARTIFACTS`` artifacts
against the number of agents.

An ``Orchestrator`` gets ``n`` tier-1 agents through ``set_agent`` (n in ``SIZES``); then,
``TICKS`` times, ``ARTIFACTS`` proposals (distinct submitters and slots, untimed) and one
timed ``tick`` that recruits them all (``voting.select_reviewers``, rules.md ``recruit``).
Timers are long, so a tick does nothing else.  The first tick also builds the sorted
eligible tuple (O(n log n), once per eligibility change) and is reported on its own; the
figure is the median of the others, with the cyclic garbage collector paused in the timed
region (as ``timeit`` does, and bench/orchestrator.py: a full collection walks the whole
heap, n agents included, and would measure the heap, not the tick).

Target: the per-tick figures at 1k, 10k and 100k agents within ``SCALING_FACTOR`` of each
other (the sortition draws O(k) hashes per recruitment whatever n).  Ranking every eligible
agent by sha256, as before the sortition, made this tick cost 0.14 s at 1k agents, 1.3 s at
10k and 14.5 s at 100k on the machine of bench/results/sortition.json (a factor 101
between 1k and 100k); with the sortition it is about 3 ms at each size.

Usage: ``python bench/sortition.py [--sizes 1000,10000]`` prints the result as JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Sequence
from typing import Any

from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import Params

SIZES = (1_000, 10_000, 100_000)
ARTIFACTS = 200
TICKS = 7
SCALING_FACTOR = 2.0
PARAMS = Params(reviewers=5, quorum=3, T_fast=10_000, T_delib=10_000)


def _tick_seconds(n: int, artifacts: int, ticks: int) -> dict[str, Any]:
    o = Orchestrator(PARAMS)
    t0 = time.perf_counter()
    for i in range(n):
        o.set_agent(f"ag{i:06}", 1)
    register = time.perf_counter() - t0
    times: list[float] = []
    for t in range(ticks):
        for x in range(artifacts):
            sub = f"ag{(t * artifacts + x) % n:06}"
            cmd = {"op": "propose", "agent": sub, "artifact": f"t{t}x{x}", "slot": f"t{t}s{x}"}
            r = o.apply({**cmd, "digest": "d"})
            assert r["result"] == "ok", r
        gc.disable()
        try:
            t0 = time.perf_counter()
            obs = o.apply({"op": "tick"})
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
        recruited = sum(1 for e in obs["events"] if e.get("event") == "recruit")
        assert recruited == artifacts, recruited
    steady = statistics.median(times[1:]) if len(times) > 1 else times[0]
    return {
        "agents": n,
        "recruitments_per_tick": artifacts,
        "register_seconds": round(register, 3),
        "first_tick_seconds": round(times[0], 5),
        "tick_seconds": round(steady, 5),
        "seconds_per_recruitment": round(steady / artifacts, 7),
        "ticks": ticks,
    }


def sortition_scaling(
    sizes: Sequence[int] = SIZES, artifacts: int = ARTIFACTS, ticks: int = TICKS
) -> dict[str, Any]:
    """Seconds per tick (median) and per recruitment at each size, and whether the largest
    and smallest per-tick figures are within ``SCALING_FACTOR``."""
    runs = [_tick_seconds(n, artifacts, ticks) for n in sizes]
    ticks_s = [r["tick_seconds"] for r in runs]
    ratio = max(ticks_s) / min(ticks_s) if min(ticks_s) > 0 else None
    return {
        "runs": runs,
        "max_over_min_tick": round(ratio, 3) if ratio is not None else None,
        "target_factor": SCALING_FACTOR,
        "within_target": ratio is not None and ratio <= SCALING_FACTOR,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--artifacts", type=int, default=ARTIFACTS)
    parser.add_argument("--ticks", type=int, default=TICKS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(json.dumps(sortition_scaling(sizes, args.artifacts, args.ticks), indent=2))


if __name__ == "__main__":
    main()
