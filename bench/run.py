"""Benchmarks (``make bench``): TLC on lifecycle-ci, orchestrator throughput, Hypothesis
steps/s and the PBFT reference implementation on the simulated network.

Results are printed and written to ``bench/results/<name>.json`` (kept in the repository so a
change in a figure shows in review).  Timing targets live here, not in timed tests: the
orchestrator target is >= 10,000 commands/s on one core with 10,000 artifacts, and
proposals/s with 1,000, 10,000 and 100,000 artifacts within 20% of each other
(``bench/orchestrator.py``).

``pbft`` (``bench/pbft.py``, about six minutes on a busy 2-core machine): requests executed
per second at every honest replica for N = 4, 7, 10, 13 with no faulty replica, a silent
backup and a silent primary (view change); messages and bytes per request against the
normal-case O(N^2) count; the share of Ed25519 signing and verification (stubbed-crypto
runs and a cProfile run); N = 4 with durable replicas (SQLite, fsync on and off) next to
the in-process figure and the Ed25519 bound; and view changes per 1,000 requests at 0, 5
and 20% message loss for the earlier (``quiet``) and the timer-driven retransmission.

``congestion`` (``bench/congestion.py``; the sweep took eight and a half minutes on a busy
2-core machine and 38 at a load average near 30, the run without congestion control alone
several CPU-minutes): issue 42's run
with and without congestion control, and the sweep over N in {4, 7, 10, 13}, max_delay
in {0, 5, 20, 50}, loss in {0, 5, 20%} with no faulty replica, f silent and f flooding
VIEW-CHANGEs: every request executed everywhere, messages per request within
``LOSS_BOUND`` times the loss-free run's; then the process cluster (four replica
processes behind the fault-injecting proxy, five cells of loss and jitter, one to six
minutes with the machine's load): frames and bytes per request on the replica links
against the fault-free load's, written to ``congestion_cluster``.

``sortition`` (``bench/sortition.py``, seconds): a tick recruiting 200 artifacts among 1k,
10k and 100k agents; the per-tick figures must lie within a factor 2 of each other.

``conformance`` (``bench/conformance.py``, about a minute): vectors/s of the reference
driver through the conformance runner, a full ``ostrom conform`` run, the kill matrix, and
``validate-trace`` of a 1,000-step lifecycle log.

``service`` (``bench/service.py``, about eight minutes): the node's commands/s in process
and over loopback HTTP (1 and 16 streams, group commit), fsync on and off, against
``Community.apply`` measured just before; the write path over 1k, 10k and 100k commands;
restart, ``--verify`` and ``ostrom log export`` (500, 1k, 2k commands).

``trace_export`` (``bench/trace_export.py``; the node logs are built once and cached under
``build/trace_export/``): ``ostrom log export`` of a node's log of 1k, 10k and 100k
commands, its seconds and bytes (issue 42: the 100k figure at most 120x the 1k one), and
``validate-trace`` of the 1k export, with its time limit.

``tick`` (``bench/tick.py``, a few minutes): the same activity after 1k, 10k and 100k agents
joined — the node's commands/s and the tick's median and p99 (in process, fsync off), the
tick in ``Community.apply``, and the eager tick of before at 1k and 10k; the tick at 100k
must lie within 2x of the one at 1k and the commands/s at 100k reach half of the one at 1k.

``memory`` (``bench/memory.py``, a few minutes, the search stores built once): the node's
resident memory per agent at 10k and 100k agents and per artifact at 10k and 100k
artifacts, each opened in a fresh process, with the snapshot's bytes, the bytes on disk and
the restart's seconds; the per-item figures must lie within 2x from the smallest size to
the largest.

``cluster`` (``bench/cluster.py``, about four minutes): the 4-process cluster's commands/s
and p50/p99 latency over HTTP at batch sizes 1, 16 and 64, SQLite synchronous FULL and
OFF, next to the in-process PBFT simulation at N = 4 and the Ed25519 bound for each batch
size (signatures and verifications counted in profiled replica processes), and whether
the cluster reaches half of that bound.

``experiments`` (``bench/experiments.py``, about a quarter of an hour): the forgetting and
plasticity experiments whole (30 seeds, every cell) on every core — issue 17 asks for at
most 15 minutes each on 2 cores — and one run of each as the work grows (500, 1,000,
2,000 epochs; 128, 256, 512 rounds).

``search`` (``bench/search.py``; ``make bench-search``; not part of a run without
``--only``: the stores are built once and cached under ``build/search/``; the 100k one
took 100 s, the 1M one more than half an hour on a loaded machine): search p50/p99 at
10k, 100k and 1M artifacts over HTTP and in process, proposals with 4 KiB of content per
second against digest-only ones, the database's bytes per artifact and the cost of
purging a forgotten artifact.

``siege`` (``bench/siege.py``, about three minutes): ``ostrom serve`` (fsync on) under
1,000 concurrent honest clients, with and without 1,000 slow clients (half a request, then
nothing) and a Sybil flood (joins from fresh keys, refused), each side in its own
processes over loopback: honest commands/s and p50/p99 under attack next to the
attack-free run, and whether the first is at least half the second (issue 41).

``ceiling`` (``bench/ceiling.py``, half a minute): ``Community.apply``, one Ed25519
verification and one bare Starlette request, timed here, and the best share each of the
node's and the cluster's targets could reach if every other cost were zero.

Usage: python bench/run.py
       [--only tlc|orchestrator|sortition|hypothesis|pbft|congestion|reputation|thresholds|
               conformance|simulation|experiments|service|trace_export|tick|memory|cluster|
               siege|ceiling|search]
       [--artifacts N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from record import save

ROOT = Path(__file__).resolve().parents[1]


def bench_tlc() -> None:
    """TLC on lifecycle-ci exactly as the manifest pins it (workers, fingerprint seed)."""
    from ostrom.verify.tlc.runner import run_model

    run = run_model(ROOT, "lifecycle-ci")
    out = run.outcome
    distinct = out.distinct_states or 0
    save(
        "tlc_lifecycle_ci",
        {
            "outcome": out.got,
            "distinct_states": distinct,
            "total_states": out.total_states,
            "depth": out.depth,
            "seconds": round(run.seconds, 2),
            "distinct_states_per_s": round(distinct / run.seconds) if run.seconds else None,
            "total_states_per_s": round((out.total_states or 0) / run.seconds)
            if run.seconds
            else None,
        },
    )


def bench_orchestrator(n_artifacts: int) -> None:
    """Commands/s through formal review, and proposals/s at 1k, 10k and 100k existing
    artifacts (``propose`` is O(1); see ``bench/orchestrator.py``)."""
    import orchestrator

    save("orchestrator_throughput", orchestrator.throughput(n_artifacts))
    save("orchestrator_propose", orchestrator.propose_scaling())


def bench_sortition() -> None:
    """Seconds per tick recruiting 200 artifacts at 1k, 10k and 100k agents (the reviewer
    sortition's cost does not grow with the number of agents; ``bench/sortition.py``)."""
    import sortition

    save("sortition", sortition.sortition_scaling())


def bench_hypothesis() -> None:
    """Steps/s of the Hypothesis lifecycle state machine (ci profile): each step is one command
    to the orchestrator under test, with every invariant and the CR-1 twin checked after it."""
    sys.path.insert(0, str(ROOT / "property_tests"))
    import test_orchestrator_stateful as t
    from hypothesis import settings

    import conftest  # noqa: F401  (registers the profiles)
    from mutant_check import run_machine

    counter = {"n": 0}
    original = t.LifecycleMachine.do

    def counting(self: Any, cmd: Any, alt: Any = None) -> Any:
        counter["n"] += 1  # one command to the orchestrator under test (its CR-1 twin aside)
        return original(self, cmd, alt)

    t.LifecycleMachine.do = counting  # type: ignore[method-assign]
    try:
        profile = settings.get_profile("ci")
        t0 = time.perf_counter()
        run_machine(t.LifecycleMachine)
        seconds = time.perf_counter() - t0
    finally:
        t.LifecycleMachine.do = original  # type: ignore[method-assign]
    save(
        "hypothesis_steps",
        {
            "profile": "ci",
            "max_examples": profile.max_examples,
            "stateful_step_count": profile.stateful_step_count,
            "steps": counter["n"],
            "seconds": round(seconds, 2),
            "steps_per_s": round(counter["n"] / seconds),
            "examples_per_s": round(profile.max_examples / seconds, 1),
        },
    )


def bench_pbft() -> None:
    """PBFT throughput, messages per request, signing cost, durability and view changes
    under loss per retransmission scheduler (see ``bench/pbft.py``)."""
    import pbft

    data = pbft.measure()
    save("pbft", data)
    pbft.print_tables(data)


def bench_congestion() -> None:
    """Issue 42's run before and after congestion control, the sweep, and the process
    cluster under jitter and loss (see ``bench/congestion.py``)."""
    import congestion

    data = congestion.measure()
    save("congestion", data)
    congestion.print_tables(data)
    save("congestion_cluster", congestion.measure_cluster())


def bench_reputation() -> None:
    """EigenTrust for 100, 1,000 and 10,000 agents (see ``bench/reputation.py``)."""
    import reputation

    data = reputation.bench_reputation()
    save("reputation", data)
    print(json.dumps(data, indent=2))


def bench_thresholds() -> None:
    """``ostrom check-params`` and the Z3 proofs (see ``bench/thresholds.py``)."""
    import thresholds

    data = thresholds.bench_thresholds()
    save("thresholds", data)
    print(json.dumps(data, indent=2))


def bench_conformance() -> None:
    """The conformance suite: runner, conform, kill matrix, validate-trace (see
    ``bench/conformance.py``)."""
    import conformance

    save("conformance", conformance.bench_conformance())


def bench_simulation() -> None:
    """The evaluation model: the full ``paper`` experiment (480 runs) and the per-round
    cost at 100, 300 and 1,000 agents (see ``bench/simulation.py``)."""
    import simulation

    save("simulation", simulation.bench_simulation(full=True))


def bench_experiments() -> None:
    """The forgetting and plasticity experiments, whole, on every core, and the cost of
    one run as the work grows (see ``bench/experiments.py``)."""
    import experiments

    save("experiments", experiments.measure())


def bench_service() -> None:
    """The node: commands/s in process and over HTTP, fsync on and off, the write path as
    the log grows, restart, export, many agents (see ``bench/service.py``)."""
    import service

    save("service", service.measure())


def bench_siege() -> None:
    """The node under 1,000 honest clients, with and without slow clients and a Sybil
    flood (see ``bench/siege.py``)."""
    import siege

    save("siege", siege.measure())


def bench_trace_export() -> None:
    """Export bytes and seconds at 1k, 10k and 100k commands of a node's log, and
    validate-trace seconds (see ``bench/trace_export.py``)."""
    import trace_export

    save("trace_export", trace_export.measure([1_000, 10_000, 100_000], [1_000], 3_600.0))


def bench_tick() -> None:
    """What a tick costs at 1k, 10k and 100k agents with the same activity (see
    ``bench/tick.py``)."""
    import tick

    save("tick", tick.measure())


def bench_memory() -> None:
    """Resident memory per agent (10k, 100k) and per artifact (10k, 100k), snapshot size
    and restart time, each in a fresh process (see ``bench/memory.py``)."""
    import memory

    save("memory", memory.measure())


def bench_cluster() -> None:
    """The cluster: commands/s and latency over HTTP per batch size, fsync on and off,
    against the in-process simulation and the Ed25519 bound (see ``bench/cluster.py``)."""
    import cluster

    data = cluster.measure()
    save("cluster", data)
    cluster.print_table(data)


def bench_search() -> None:
    """Search at 10k, 100k and 1M artifacts, proposals with content, bytes per artifact,
    the cost of a purge (see ``bench/search.py``)."""
    import search

    save("search", search.measure())


def bench_ceiling() -> None:
    """The best share each of issue 14's targets could reach here if everything but apply,
    Ed25519 and a bare HTTP request were free (see ``bench/ceiling.py``; after
    ``cluster``, whose Ed25519 counts it reads)."""
    import ceiling

    save("ceiling", ceiling.measure())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        choices=[
            "tlc",
            "orchestrator",
            "sortition",
            "hypothesis",
            "pbft",
            "congestion",
            "reputation",
            "thresholds",
            "conformance",
            "simulation",
            "experiments",
            "service",
            "trace_export",
            "tick",
            "memory",
            "cluster",
            "siege",
            "ceiling",
            "search",
        ],
    )
    parser.add_argument(
        "--artifacts", type=int, default=10_000, help="artifacts for the throughput run"
    )
    args = parser.parse_args()
    if args.only in (None, "orchestrator"):
        bench_orchestrator(args.artifacts)
    if args.only in (None, "sortition"):
        bench_sortition()
    if args.only in (None, "hypothesis"):
        bench_hypothesis()
    if args.only in (None, "pbft"):
        bench_pbft()
    if args.only in (None, "congestion"):
        bench_congestion()
    if args.only in (None, "reputation"):
        bench_reputation()
    if args.only in (None, "thresholds"):
        bench_thresholds()
    if args.only in (None, "conformance"):
        bench_conformance()
    if args.only in (None, "simulation"):
        bench_simulation()
    if args.only in (None, "experiments"):
        bench_experiments()
    if args.only in (None, "service"):
        bench_service()
    if args.only in (None, "trace_export"):
        bench_trace_export()
    if args.only in (None, "tick"):
        bench_tick()
    if args.only in (None, "memory"):
        bench_memory()
    if args.only in (None, "cluster"):
        bench_cluster()
    if args.only in (None, "siege"):
        bench_siege()
    if args.only in (None, "ceiling"):
        bench_ceiling()
    if args.only in (None, "tlc"):
        bench_tlc()
    if args.only == "search":  # its own target: make bench-search
        bench_search()


if __name__ == "__main__":
    main()
