"""Consensus success: do all honest replicas execute the same forget decisions?

The Co-Forgetting paper reports 92% "PBFT consensus success" with one faulty agent of four;
its reviewers showed that this contradicts PBFT's liveness (three honest replicas are
already 2f + 1) and that the paper's Algorithm 1 is not PBFT.  Here both are run on the
*same workload*: the full command log of a protocol run of the forgetting model (every
proposal, every forget vote, every tick, in order).

* ``pbft`` — the log is submitted, command by command, to the replicated orchestrator
  (``ostrom.harness.replicated.ReplicatedOrchestrator``: N = 4, f = 1, signed messages,
  view change) with one faulty replica from the first message on: ``silent-backup``
  (replica 3 sends nothing), ``silent-primary`` (replica 0, the first primary, sends
  nothing: the replicas must change view) or ``equivocating`` (replica 3 sends conflicting
  PREPAREs and COMMITs while staying reachable: ``byzantine.ConflictingVoter``).  Each
  replica's orchestrator records its forget decisions as (tick, artifact).  The items
  decided are the *candidates* — every artifact that received a forget vote — and
  anything a replica forgot; an item is a *success* when every honest replica ended with
  the sans-IO run's outcome for it: forgotten at the same tick, or not forgotten.
  ``consensus_success`` = successes / items (NaN if there is none).  REPL-1 is checked
  as well;
* ``alg1`` — the paper's two-round vote as written (``ostrom.harness.alg1``,
  unauthenticated, no view change), with the same faults (the coordinator for the silent
  primary, conflicting votes for the equivocating replica), deciding one instance per
  artifact that received a forget vote, with the sans-IO run's outcome as the value the
  coordinator proposes (forget if it was forgotten, keep if not).  A success is an item
  every honest agent decided, identically, and as proposed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ostrom.harness import alg1
from ostrom.harness.byzantine import ConflictingVoter, Silent, Strategy
from ostrom.harness.replicated import ReplicatedOrchestrator
from ostrom.protocol.agents import Agent
from ostrom.protocol.commands import Observation
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import Params

N, F = 4, 1
CLIENT = "c0"
#: Simulation steps allowed per command before a replay is declared stuck.
STEPS_PER_COMMAND = 2_000

#: (faulty replica index, its PBFT strategy, Algorithm 1's scenario) per fault.
FAULT_SETUP: dict[str, tuple[int, type[Strategy], alg1.Scenario]] = {
    "silent-backup": (N - 1, Silent, "silent-backup"),
    "silent-primary": (0, Silent, "silent-coordinator"),
    "equivocating": (N - 1, ConflictingVoter, "conflicting-votes"),
}


class RecordingOrchestrator(Orchestrator):
    """An orchestrator that remembers its forget decisions as (now after the tick, id)."""

    def __init__(self, params: Params, agents: Sequence[Agent]) -> None:
        super().__init__(params, agents)
        self.forgets: list[tuple[int, str]] = []

    def apply(self, command: object) -> Observation:
        obs = super().apply(command)
        for ev in obs["events"]:
            if ev.get("event") == "forget":
                self.forgets.append((self.now, str(ev["artifact"])))
        return obs


def replay_pbft(
    log: Sequence[dict[str, Any]],
    reference: Sequence[tuple[int, str]],
    candidates: Sequence[str],
    params: Params,
    agents: Sequence[Agent],
    fault: str,
    seed: int,
) -> dict[str, Any]:
    """Replay ``log`` under PBFT with ``fault``; compare with the sans-IO ``reference``
    (its forget decisions as (tick, artifact)) on every ``candidate`` (an artifact that
    received a forget vote) and on anything a replica forgot."""
    bad, strategy, _ = FAULT_SETUP[fault]

    def core() -> RecordingOrchestrator:
        return RecordingOrchestrator(params, agents)

    ro = ReplicatedOrchestrator(
        N, F, seed, params=params, agents=agents, byzantine={bad: strategy()}, core=core
    )
    sim = ro.sim
    sent0 = sim.network.stats["sent"]
    for cmd in log:
        ro.submit(CLIENT, cmd)
    sim.run(STEPS_PER_COMMAND * (len(log) + 10), until=sim.all_executed)
    done = sim.all_executed()
    honest = list(sim.honest)
    want = {x: tick for tick, x in reference}
    outcomes = [{x: tick for tick, x in _forgets(ro, i)} for i in honest]
    items = set(candidates).union(want, *outcomes)
    agreed = sum(all(o.get(x) == want.get(x) for o in outcomes) for x in items)
    try:
        ro.check_repl1()
        repl1 = True
    except AssertionError:
        repl1 = False
    return {
        "consensus_success": agreed / len(items) if items else math.nan,
        "consensus_decisions": len(items),
        "consensus_all_executed": done,
        "consensus_repl1": repl1,
        "consensus_messages_per_command": (sim.network.stats["sent"] - sent0) / max(1, len(log)),
        "consensus_final_view": max(sim.replicas[i].view for i in honest),
        "consensus_commands": len(log),
    }


def _forgets(ro: ReplicatedOrchestrator, i: int) -> list[tuple[int, str]]:
    core = ro.app(i).orchestrator
    assert isinstance(core, RecordingOrchestrator)
    return core.forgets


def run_alg1_decisions(
    candidates: Sequence[str], forgotten: set[str], fault: str, seed: int
) -> dict[str, Any]:
    """Algorithm 1 deciding one instance per candidate, proposing the reference outcome."""
    _, _, scenario = FAULT_SETUP[fault]
    values: list[alg1.Value] = ["forget" if x in forgotten else "keep" for x in candidates]
    report = alg1.run_alg1(N, F, len(values), scenario, seed, values=values)
    ok = sum(all(d == v for d in ds) for ds, v in zip(report.decisions, values, strict=True))
    return {
        "consensus_success": ok / len(values) if values else math.nan,
        "consensus_decisions": len(values),
        "alg1_undecided": report.undecided_items,
        "alg1_disagreements": report.disagreements,
        "consensus_messages_per_command": report.messages_per_item,
    }


__all__ = ["FAULT_SETUP", "RecordingOrchestrator", "replay_pbft", "run_alg1_decisions"]
