"""Orchestrator benchmarks: command throughput, and the cost of ``propose`` against the
number of artifacts already there.

* **throughput** — ``n_artifacts`` pushed through formal review (propose, recruit, commit,
  reveal, tally), every command through ``apply`` (the untrusted, validating entry point,
  as a driver uses it).  Salts and commitments are computed outside the timed region.
  Target: >= ``TARGET_COMMANDS_PER_S`` on one core with 10,000 artifacts.
* **propose scaling** — proposals/s with 1,000, 10,000 and 100,000 artifacts already
  proposed: ``BATCHES`` batches of ``BATCH`` proposals each, through ``apply``; the
  figure is the median batch.  ``propose`` must be O(1) in the number of artifacts (the
  ``transitions`` machine's ``add_model`` included: ``lifecycle.LifecycleMachine``), so
  the figures must lie within ``SCALING_TOLERANCE`` of each other.  The cyclic garbage
  collector is paused in the timed region, as ``timeit`` does: a full collection walks
  the whole heap (every artifact), so with it the batches measure when the collector
  happened to run rather than what ``propose`` costs (and that depends on the whole
  process's heap); the median with the collector running is recorded beside it.

Usage: ``python bench/orchestrator.py`` prints both results as JSON.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import time
from collections.abc import Sequence
from typing import Any

from ostrom.protocol.agents import Agent
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import Params
from ostrom.protocol.voting import commitment, make_salt

TARGET_COMMANDS_PER_S = 10_000
N_SUBMITTERS = 100  # propose_rate (max 1000 per round) x 100 covers 100,000 artifacts in one round
PROPOSE_SIZES = (1_000, 10_000, 100_000)
BATCH = 1_000
BATCHES = 11
SCALING_TOLERANCE = 0.20


def _registry(n_reviewers: int, n_submitters: int = N_SUBMITTERS) -> list[Agent]:
    agents = [Agent(id=f"n{i}", tier=0, weight=0.1, reputation=0.6) for i in range(n_submitters)]
    agents += [
        Agent(id=f"r{i}", tier=1 + i % 3, weight=0.5 + (i % 5) / 10, reputation=0.8)
        for i in range(n_reviewers)
    ]
    return agents


def _propose(agent: str, artifact: str, i: int) -> dict[str, Any]:
    return {
        "op": "propose",
        "agent": agent,
        "artifact": artifact,
        "slot": f"s{i}",
        "digest": f"d{i}",
    }


def throughput(n_artifacts: int) -> dict[str, Any]:
    """Commands/s through formal review of ``n_artifacts`` artifacts."""
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
    run([_propose(submitters[i % N_SUBMITTERS], x, i) for i, x in enumerate(ids)])
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
    return {
        "artifacts": n_artifacts,
        "commands": n_commands,
        "seconds": round(timed, 3),
        "commands_per_s": round(rate),
        "target_commands_per_s": TARGET_COMMANDS_PER_S,
        "meets_target": rate >= TARGET_COMMANDS_PER_S,
        "propose_only_commands_per_s": round(propose_rate),
        "final_states": states,
    }


def _timed_batch(orch: Orchestrator, agents: list[str], tag: str, paused: bool) -> float:
    """Proposals/s of one batch of ``BATCH`` proposals through ``apply``."""
    cmds = [_propose(agents[i // 1000], f"{tag}x{i}", i) for i in range(BATCH)]
    if paused:
        gc.disable()
    try:
        t0 = time.perf_counter()
        for cmd in cmds:
            if orch.apply(cmd)["result"] != "ok":
                raise SystemExit(f"benchmark command refused: {cmd}")
        seconds = time.perf_counter() - t0
    finally:
        gc.enable()
    return BATCH / seconds


def propose_scaling(sizes: Sequence[int] = PROPOSE_SIZES) -> dict[str, Any]:
    """Proposals/s against the number of existing artifacts (``propose`` is O(1)).

    One orchestrator per size, each holding that many proposed artifacts; the batches
    go round-robin over the sizes, so a busy machine slows every size alike.  The figure
    is each size's median batch with the collector paused; the fastest batch and the
    median with the collector running are recorded beside it.
    """
    batch_agents = -(-BATCH // 1000)  # propose_rate is at most 1000 a round per agent
    n_batch = 2 * BATCHES * batch_agents
    params = Params(propose_rate=1000, propose_rate_limited=1)
    orchs: dict[int, Orchestrator] = {}
    for size in sizes:
        orch = Orchestrator(params, _registry(0, N_SUBMITTERS + n_batch))
        for i in range(size):
            orch.apply(_propose(f"n{i % N_SUBMITTERS}", f"x{i}", i))
        orchs[size] = orch
    rates: dict[tuple[int, bool], list[float]] = {}
    fresh = iter(range(N_SUBMITTERS, N_SUBMITTERS + n_batch))
    for b in range(2 * BATCHES):
        paused = b % 2 == 0
        agents = [f"n{next(fresh)}" for _ in range(batch_agents)]
        for size, orch in orchs.items():
            rate = _timed_batch(orch, agents, f"b{b}", paused)
            rates.setdefault((size, paused), []).append(rate)
    median = {str(n): round(statistics.median(rates[n, True])) for n in sizes}
    spread = max(median.values()) / min(median.values()) - 1
    return {
        "existing_artifacts": list(sizes),
        "batch": BATCH,
        "batches": BATCHES,
        "proposals_per_s": median,
        "proposals_per_s_best": {str(n): round(max(rates[n, True])) for n in sizes},
        "proposals_per_s_median_gc_running": {
            str(n): round(statistics.median(rates[n, False])) for n in sizes
        },
        "spread": round(spread, 3),
        "tolerance": SCALING_TOLERANCE,
        "within_tolerance": spread <= SCALING_TOLERANCE,
    }


if __name__ == "__main__":
    print(json.dumps(propose_scaling(), indent=2))
    print(json.dumps(throughput(10_000), indent=2))
