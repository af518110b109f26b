"""Congestion control for retransmission (issue 42 item 0; docs/consensus.md, "Congestion
control"): the issue's run before and after, and the sweep.

* **issue_run** — ``Simulation(n=7, f=2, faults=Faults(reorder=True, max_delay=20),
  checkpoint_k=8, watermark_window=16, base_timeout=280)``, every replica honest, three
  clients submitting 30 requests at once (seed 0), run for at most 14,000 ticks: with the
  fixed retransmission timers of before (``congestion=False``) and with congestion
  control; the same run with the two highest replicas silent, and flooding VIEW-CHANGEs.
  The run without congestion control takes several CPU-minutes (its queue grows to tens
  of thousands of messages, and the scheduler scans it every tick).
* **sweep** — ``ostrom.harness.sweep.FULL``: N in {4, 7, 10, 13}, max_delay in {0, 5, 20,
  50}, loss in {0, 5, 20%}, with no faulty replica, f silent ones and f flooding
  VIEW-CHANGEs (144 runs of 30 requests); per run whether every request executed at
  every honest replica, ticks, messages per request, retransmissions and the highest
  view, and every lossy run's messages per request against ``LOSS_BOUND`` times its
  loss-free run's.

* **cluster** (``--cluster``) — the same question against the process cluster: 4 replica
  processes whose replica-bound frames cross the fault-injecting proxy
  (property_tests/lossy_cluster.py, the experiment the cluster test runs): a fault-free
  load, a load under loss and per-frame jitter (delay and reordering) on the replica
  links, the heal; with the highest replica honest, silent or flooding VIEW-CHANGEs;
  protocol messages per PBFT instance against the fault-free load's, frames and bytes
  per request, the idle frames per second (among the honest replicas, and towards the
  faulty one), the views.  Real time on a shared
  machine: the figures vary from run to run.

Usage: python bench/congestion.py [--no-before]   (writes bench/results/congestion.json)
       python bench/congestion.py --cluster       (bench/results/congestion_cluster.json)
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ostrom.harness.sweep import FAULTY, FULL, LOSS_BOUND, Cell, bound_violations, run_cell
from record import save

ISSUE_TICKS = 14_000
#: (loss, jitter in seconds) of the cluster rows, and the commands per load
CLUSTER_CELLS = ((0.05, 0.02), (0.1, 0.02), (0.2, 0.02), (0.1, 0.1), (0.2, 0.1))
CLUSTER_REQUESTS = 60


def issue_run(faulty: str, *, congestion: bool) -> dict[str, Any]:
    """The issue's run (N = 7, 20 ticks of jitter, no loss, T = 280) for 14,000 ticks."""
    cell = Cell(7, 20, 0.0, faulty, requests=30, clients=3, seed=0, congestion=congestion)
    return run_cell(cell, max_ticks=ISSUE_TICKS)


def measure(*, before: bool = True) -> dict[str, Any]:
    start = time.perf_counter()
    load = os.getloadavg()[0]  # CPU seconds per run move with the machine's load
    runs = [issue_run(k, congestion=True) for k in ("none", "silent", "flood")]
    if before:
        runs.append(issue_run("none", congestion=False))
    rows = []
    for cell in FULL.cells():  # one line per run as it ends (the sweep takes a while)
        rows.append(run_cell(cell))
        print(json.dumps(rows[-1]), flush=True)
    violations = bound_violations(rows)
    worst: dict[str, float] = {}
    free = {
        (r["n"], r["max_delay"], r["faulty"]): r["messages_per_request"]
        for r in rows
        if r["loss"] == 0
    }
    for r in rows:
        base = free[(r["n"], r["max_delay"], r["faulty"])]
        key = f"loss {r['loss']:.2f}"
        worst[key] = max(worst.get(key, 0.0), round(r["messages_per_request"] / base, 3))
    return {
        "issue_run": runs,
        "sweep": rows,
        "completed": sum(r["completed"] for r in rows),
        "runs": len(rows),
        "loss_bound": LOSS_BOUND,
        "worst_ratio_to_loss_free": worst,
        "violations": violations,
        "wall_s": round(time.perf_counter() - start, 1),
        "load_average_before": round(load, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
    }


def measure_cluster(requests: int = CLUSTER_REQUESTS) -> dict[str, Any]:
    """One cluster experiment per cell of ``CLUSTER_CELLS`` and kind of faulty replica
    (``FAULTY``, as the simulation's sweep: none, the highest replica silent, or flooding
    VIEW-CHANGEs)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "property_tests"))
    from lossy_cluster import Faults, experiment

    start = time.perf_counter()
    rows = []
    for (loss, jitter), faulty in itertools.product(CLUSTER_CELLS, FAULTY):
        load = os.getloadavg()[0]  # real time on a shared machine: say how busy it was
        with tempfile.TemporaryDirectory() as tmp:
            row = experiment(Path(tmp), Faults(loss, jitter), requests, faulty=faulty)
        rows.append(
            {
                **row,
                "load_average_before": round(load, 2),
                "load_average_after": round(os.getloadavg()[0], 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    return {"rows": rows, "wall_s": round(time.perf_counter() - start, 1)}


def print_tables(data: dict[str, Any]) -> None:
    print("issue run (N=7, max_delay=20, T=280, 30 requests, 14,000 ticks at most):")
    for r in data["issue_run"]:
        print(
            f"  congestion={r['congestion']!s:5} faulty={r['faulty']:6} "
            f"completed={r['completed']!s:5} executed={r['executed_min']:3} ticks={r['ticks']:6} "
            f"view={r['view']:2} queue={r['queue']:6} sent={r['messages']:6} "
            f"retransmitted={r['retransmitted']:6}"
        )
    print(f"sweep: {data['completed']}/{data['runs']} completed; worst ratio to loss-free:")
    print(f"  {data['worst_ratio_to_loss_free']} (bound {data['loss_bound']})")
    for v in data["violations"]:
        print("  VIOLATION", v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-before", action="store_true", help="skip the slow run of before")
    parser.add_argument("--cluster", action="store_true", help="the process cluster's rows only")
    args = parser.parse_args()
    if args.cluster:
        save("congestion_cluster", measure_cluster())
        return
    data = measure(before=not args.no_before)
    save("congestion", data)
    print_tables(data)


if __name__ == "__main__":
    main()
