"""Evaluation-model benchmark: the cost of ``simulate`` and of the paper's experiment.

* **per_round** — one protocol run (seed 1, moderate) of ``ROUNDS`` rounds for 100, 300
  and 1,000 agents, artifacts = rounds × proposals per round: wall time and milliseconds
  per round, next to majority vote for scale.  In-process, one run each.
* **experiment** — ``run_experiment`` of the ``paper`` experiment on every core: by
  default a reduced one (``REDUCED_SEEDS`` seeds, ``REDUCED_ROUNDS`` rounds, 12
  configurations × 2 scenarios); with ``--full`` the paper experiment's 480 runs of 500
  rounds
  (several minutes).  Reported: runs, jobs, wall time, runs/s, and the headline
  comparison (protocol vs majority, final precision, per scenario) so a change in
  either speed or result shows in review.

Usage: python bench/simulation.py [--full]   (writes bench/results/simulation.json)
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from ostrom.simulation.config import SimConfig
from ostrom.simulation.experiments import build_experiment, run_experiment
from ostrom.simulation.report import compare, summary
from ostrom.simulation.run import simulate
from record import save

SEED = 1
ROUNDS = 50
AGENTS = (100, 300, 1_000)
REDUCED_SEEDS = 3
REDUCED_ROUNDS = 100


def bench_per_round(agents: int, governance: str) -> dict[str, Any]:
    base = SimConfig()
    config = base.with_(
        agents=agents,
        rounds=ROUNDS,
        artifacts=ROUNDS * base.proposals_per_round,
        governance=governance,
    )
    t0 = time.perf_counter()
    result = simulate(config, SEED)
    seconds = time.perf_counter() - t0
    return {
        "governance": governance,
        "agents": agents,
        "rounds": ROUNDS,
        "artifacts": config.artifacts,
        "seconds": round(seconds, 3),
        "ms_per_round": round(seconds / ROUNDS * 1000, 2),
        "final_precision": round(result.final["precision"], 4),
    }


def bench_experiment(full: bool) -> dict[str, Any]:
    if full:
        exp = build_experiment("paper")
    else:
        exp = build_experiment("paper", seeds=REDUCED_SEEDS, rounds=REDUCED_ROUNDS)
    jobs = os.cpu_count() or 1
    result = run_experiment(exp, jobs=jobs, progress=True)
    headline = {}
    for scenario in exp.scenarios:
        c = compare(result, "protocol", "majority", scenario, "precision")
        headline[scenario] = {
            "protocol": round(summary(result, "protocol", scenario, "precision").mean, 4),
            "majority": round(summary(result, "majority", scenario, "precision").mean, 4),
            "diff": round(c.diff, 4),
            "p": c.p,
            "d_z": round(c.d_z, 3),
        }
    cell = exp.cells[0].config
    return {
        "full": full,
        "runs": exp.total,
        "configurations": len(exp.cells),
        "scenarios": list(exp.scenarios),
        "seeds": len(exp.seeds),
        "agents": cell.agents,
        "rounds": cell.rounds,
        "jobs": jobs,
        "seconds": round(result.seconds, 2),
        "runs_per_s": round(exp.total / result.seconds, 3),
        "core_seconds_per_run": round(result.seconds * jobs / exp.total, 3),
        "precision_protocol_vs_majority": headline,
    }


def bench_simulation(full: bool = False) -> dict[str, Any]:
    """Per-round cost at 100, 300, 1,000 agents and the paper experiment (module doc)."""
    per_round = [bench_per_round(n, g) for n in AGENTS for g in ("protocol", "majority")]
    return {
        "seed": SEED,
        "per_round": per_round,
        "experiment": bench_experiment(full),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--full", action="store_true", help="the paper experiment's 480 runs (default: reduced)"
    )
    args = parser.parse_args()
    save("simulation", bench_simulation(args.full))


if __name__ == "__main__":
    main()
