"""The forgetting and plasticity experiments: their wall time on every core, and the cost
of one run as the work grows.

* **forgetting** / **plasticity** — the whole experiment as ``ostrom simulate
  --experiment NAME`` runs it (30 seeds, every cell and scenario) on ``os.cpu_count()``
  worker processes: runs, wall time, core-seconds per run, and a few headline figures, so
  that a change in speed or in result shows in review.  Issue 17 asks for each to finish
  in at most 15 minutes on 2 cores.
* **forgetting_growth** — one run of the reference cell (``protocol [c≥α]``, honest)
  for 500, 1,000 and 2,000 epochs (the world grows with the epochs: more topics' worth of
  items, more reads, more votes): wall time, items admitted, commands, and seconds per
  epoch.
* **plasticity_growth** — one protocol run for 128, 256 and 512 rounds (trials grow with
  the rounds): wall time and seconds per trial.

Usage: python bench/experiments.py [--only forgetting|plasticity|growth]
       (writes bench/results/experiments.json)
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from ostrom.simulation.experiments import build_family, run_experiment
from ostrom.simulation.forgetting.config import ForgetConfig
from ostrom.simulation.plasticity.config import PlasticityConfig
from ostrom.simulation.report import summary
from ostrom.simulation.run import simulate
from record import save


def _whole(name: str) -> dict[str, Any]:
    exp = build_family(name)
    jobs = os.cpu_count() or 1
    result = run_experiment(exp, jobs=jobs, progress=True)
    out: dict[str, Any] = {
        "runs": exp.total,
        "cells": len(exp.cells),
        "scenarios": list(exp.scenarios),
        "seeds": len(exp.seeds),
        "jobs": jobs,
        "seconds": round(result.seconds, 1),
        "core_seconds_per_run": round(result.seconds * jobs / exp.total, 3),
    }
    if name == "forgetting":
        ref = "protocol [c≥α]"
        out["reference_honest"] = {
            m: round(summary(result, ref, "honest", m).mean, 4)
            for m in ("reduction", "accuracy", "precision", "wrongly_forgotten")
        }
    else:
        out["protocol_after_plasticity_drop"] = {
            s: round(summary(result, "protocol [after]", s, "plasticity_drop").mean, 4)
            for s in exp.scenarios
        }
    return out


def _growth_forgetting() -> list[dict[str, Any]]:
    rows = []
    for epochs in (500, 1_000, 2_000):
        cfg = ForgetConfig(vote_rule="at_alpha", epochs=epochs)
        t0 = time.perf_counter()
        r = simulate(cfg, 1)
        seconds = time.perf_counter() - t0
        rows.append(
            {
                "epochs": epochs,
                "admitted": r.extras["admitted"],
                "commands": r.extras["commands"],
                "seconds": round(seconds, 3),
                "ms_per_epoch": round(seconds / epochs * 1000, 3),
            }
        )
    return rows


def _growth_plasticity() -> list[dict[str, Any]]:
    rows = []
    for rounds in (128, 256, 512):
        cfg = PlasticityConfig(rounds=rounds)
        t0 = time.perf_counter()
        r = simulate(cfg, 1)
        seconds = time.perf_counter() - t0
        rows.append(
            {
                "rounds": rounds,
                "trials": r.final["trials"],
                "seconds": round(seconds, 3),
                "ms_per_trial": round(seconds / r.final["trials"] * 1000, 3),
            }
        )
    return rows


def measure(only: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if only in (None, "growth"):
        out["forgetting_growth"] = _growth_forgetting()
        out["plasticity_growth"] = _growth_plasticity()
    for name in ("forgetting", "plasticity"):
        if only in (None, name):
            out[name] = _whole(name)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=["forgetting", "plasticity", "growth"])
    args = parser.parse_args()
    save("experiments", measure(args.only))


if __name__ == "__main__":
    main()
