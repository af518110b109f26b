"""Benchmarks (``make bench``): TLC on lifecycle-ci, orchestrator throughput, Hypothesis
steps/s and the PBFT reference implementation on the simulated network.

Results are printed and written to ``bench/results/<name>.json`` (kept in the repository so a
change in a figure shows in review).  Timing targets live here, not in timed tests: the
orchestrator target is >= 10,000 commands/s on one core with 10,000 artifacts.

``pbft`` (``bench/pbft.py``, about six minutes on a busy 2-core machine): requests executed
per second at every honest replica for N = 4, 7, 10, 13 with no faulty replica, a silent
backup and a silent primary (view change); messages and bytes per request against the
normal-case O(N^2) count; the share of Ed25519 signing and verification (stubbed-crypto
runs and a cProfile run); N = 4 with durable replicas (SQLite, fsync on and off) next to
the in-process figure and the Ed25519 bound; and view changes per 1,000 requests at 0, 5
and 20% message loss for the earlier (``quiet``) and the timer-driven retransmission.

``conformance`` (``bench/conformance.py``, about a minute): vectors/s of the reference
driver through the conformance runner, a full ``ostrom conform`` run, the kill matrix, and
``validate-trace`` of a 1,000-step lifecycle log.

Usage: python bench/run.py
       [--only tlc|orchestrator|hypothesis|pbft|reputation|thresholds|conformance|simulation]
       [--artifacts N]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from pathlib import Path
from typing import Any

from ostrom.protocol.agents import Agent
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import Params
from ostrom.protocol.voting import commitment, make_salt

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
TARGET_COMMANDS_PER_S = 10_000
N_SUBMITTERS = 100  # propose_rate (max 1000 per round) x 100 covers 10,000 artifacts in one round


def _save(name: str, data: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    data = {
        "benchmark": name,
        "python": platform.python_version(),
        "machine": platform.machine(),
        **data,
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(data, indent=2))


def bench_tlc() -> None:
    """TLC on lifecycle-ci exactly as the manifest pins it (workers, fingerprint seed)."""
    from ostrom.verify.tlc.runner import run_model

    run = run_model(ROOT, "lifecycle-ci")
    out = run.outcome
    distinct = out.distinct_states or 0
    _save(
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


def _registry(n_reviewers: int) -> list[Agent]:
    agents = [Agent(id=f"n{i}", tier=0, weight=0.1, reputation=0.6) for i in range(N_SUBMITTERS)]
    agents += [
        Agent(id=f"r{i}", tier=1 + i % 3, weight=0.5 + (i % 5) / 10, reputation=0.8)
        for i in range(n_reviewers)
    ]
    return agents


def bench_orchestrator(n_artifacts: int) -> None:
    """Push ``n_artifacts`` through formal review (propose, recruit, commit, reveal, tally)
    with every command going through ``apply`` (the untrusted, validating entry point, as a
    driver uses it).  Salts and commitments are computed outside the timed region."""
    params = Params(propose_rate=1000, propose_rate_limited=1, T_delib=1, T_commit=1, T_reveal=1)
    orch = Orchestrator(params, _registry(40))
    rng = random.Random(7)
    submitters = [f"n{i}" for i in range(N_SUBMITTERS)]
    n_commands = 0
    timed = 0.0

    def run(cmds: list[dict[str, Any]]) -> None:
        nonlocal n_commands, timed
        t0 = time.perf_counter()
        for cmd in cmds:
            obs = orch.apply(cmd)
            if obs["result"] != "ok":
                raise SystemExit(f"benchmark command refused: {cmd} -> {obs}")
        timed += time.perf_counter() - t0
        n_commands += len(cmds)

    ids = [f"x{i}" for i in range(n_artifacts)]
    t_start = timed
    run(
        [
            {
                "op": "propose",
                "agent": submitters[i % N_SUBMITTERS],
                "artifact": x,
                "slot": f"s{i}",
                "digest": f"d{i}",
            }
            for i, x in enumerate(ids)
        ]
    )
    propose_rate = n_artifacts / (timed - t_start)
    run([{"op": "recruit", "artifact": x} for x in ids])
    run([{"op": "tick"}])  # deliberation -> commit
    state = orch.public_state()["artifacts"]
    secrets: list[tuple[str, str, str, str, int]] = []
    commits = []
    for x in ids:
        art = state[x]
        for agent in art["reviewers"]:
            vote = "accept" if rng.random() < 0.8 else "reject"
            salt = make_salt(rng)
            secrets.append((agent, x, vote, salt, art["round"]))
            commits.append(
                {
                    "op": "commit_vote",
                    "agent": agent,
                    "artifact": x,
                    "commitment": commitment(agent, x, art["round"], vote, "r", salt),
                }
            )
    run(commits)
    run([{"op": "tick"}])  # commit -> reveal
    run(
        [
            {"op": "reveal_vote", "agent": a, "artifact": x, "vote": v, "reason": "r", "salt": s}
            for a, x, v, s, _ in secrets
        ]
    )
    run([{"op": "tick"}])  # reveal -> tally
    states: dict[str, int] = {}
    for art in orch.public_state()["artifacts"].values():
        states[art["state"]] = states.get(art["state"], 0) + 1
    rate = n_commands / timed
    _save(
        "orchestrator_throughput",
        {
            "artifacts": n_artifacts,
            "commands": n_commands,
            "seconds": round(timed, 3),
            "commands_per_s": round(rate),
            "target_commands_per_s": TARGET_COMMANDS_PER_S,
            "meets_target": rate >= TARGET_COMMANDS_PER_S,
            "propose_only_commands_per_s": round(propose_rate),
            "final_states": states,
        },
    )


def bench_hypothesis() -> None:
    """Steps/s of the Hypothesis lifecycle state machine (ci profile): each step is one command
    to the orchestrator under test, with every invariant and the CR-1 twin checked after it."""
    sys.path.insert(0, str(ROOT / "property_tests"))
    from hypothesis import settings

    import conftest  # noqa: F401  (registers the profiles)
    import test_orchestrator_stateful as t

    counter = {"n": 0}
    original = t.LifecycleMachine.do

    def counting(self: Any, cmd: Any, alt: Any = None) -> Any:
        counter["n"] += 1  # one command to the orchestrator under test (its CR-1 twin aside)
        return original(self, cmd, alt)

    t.LifecycleMachine.do = counting  # type: ignore[method-assign]
    try:
        profile = settings.get_profile("ci")
        t0 = time.perf_counter()
        t.run_machine(t.LifecycleMachine)
        seconds = time.perf_counter() - t0
    finally:
        t.LifecycleMachine.do = original  # type: ignore[method-assign]
    _save(
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
    _save("pbft", data)
    pbft.print_tables(data)


def bench_reputation() -> None:
    """EigenTrust for 100, 1,000 and 10,000 agents (see ``bench/reputation.py``)."""
    import reputation

    data = reputation.bench_reputation()
    _save("reputation", data)
    print(json.dumps(data, indent=2))


def bench_thresholds() -> None:
    """``ostrom check-params`` and the Z3 proofs (see ``bench/thresholds.py``)."""
    import thresholds

    data = thresholds.bench_thresholds()
    _save("thresholds", data)
    print(json.dumps(data, indent=2))


def bench_conformance() -> None:
    """The conformance suite: runner, conform, kill matrix, validate-trace (see
    ``bench/conformance.py``)."""
    import conformance

    _save("conformance", conformance.bench_conformance())


def bench_simulation() -> None:
    """The evaluation model: the full ``paper`` experiment (540 runs) and the per-round
    cost at 100, 300 and 1,000 agents (see ``bench/simulation.py``)."""
    import simulation

    _save("simulation", simulation.bench_simulation(full=True))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        choices=[
            "tlc",
            "orchestrator",
            "hypothesis",
            "pbft",
            "reputation",
            "thresholds",
            "conformance",
            "simulation",
        ],
    )
    parser.add_argument(
        "--artifacts", type=int, default=10_000, help="artifacts for the throughput run"
    )
    args = parser.parse_args()
    if args.only in (None, "orchestrator"):
        bench_orchestrator(args.artifacts)
    if args.only in (None, "hypothesis"):
        bench_hypothesis()
    if args.only in (None, "pbft"):
        bench_pbft()
    if args.only in (None, "reputation"):
        bench_reputation()
    if args.only in (None, "thresholds"):
        bench_thresholds()
    if args.only in (None, "conformance"):
        bench_conformance()
    if args.only in (None, "simulation"):
        bench_simulation()
    if args.only in (None, "tlc"):
        bench_tlc()


if __name__ == "__main__":
    main()
