"""One run of the forgetting model: ``run_forgetting(config, seed) -> RunResult``.

Per epoch t (one orchestrator tick for the protocol):

1. labels move: items whose usefulness ends at t become not useful (``Tracker.begin``);
2. the items born at t are admitted (the protocol proposes them; see ``mechanisms``);
3. the epoch's queries and stray accesses read items; a read of a held item sets its
   last access to t (every agent's decay reads it); a query whose item was forgotten is a
   **miss** (someone needed it and it was gone);
4. the mechanism's forgetting step (agents' sweeps and votes, then the decision);
5. the measurements (``metrics``).

``lru`` first runs the protocol on the same seed to learn its footprint, its capacity.
``governance = "pbft"`` or ``"alg1"`` runs the plain protocol locally, then has the
consensus layer decide the same workload (``consensus``); the run's finals are the local
run's, and its ``consensus_*`` finals say whether the replicas executed exactly them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ostrom.simulation.forgetting.config import ForgetConfig
from ostrom.simulation.forgetting.consensus import replay_pbft, run_alg1_decisions
from ostrom.simulation.forgetting.judges import Judges
from ostrom.simulation.forgetting.mechanisms import (
    KeepAll,
    Lru,
    Majority,
    Mechanism,
    ProtocolKB,
    SingleCurator,
    TimeDecay,
    protocol_params,
)
from ostrom.simulation.forgetting.metrics import FORGET_SERIES, Tracker
from ostrom.simulation.forgetting.world import LABELS, World, make_world
from ostrom.simulation.result import Progress, RunResult


def _mechanism(cfg: ForgetConfig, world: World, seed: int, judges: Judges) -> Mechanism:
    m = cfg.mechanism
    if m == "protocol":
        return ProtocolKB(cfg, world, judges)
    if m == "keep_all":
        return KeepAll(len(world.agents))
    if m == "time_decay":
        return TimeDecay(judges)
    if m == "single_curator":
        return SingleCurator(judges, world, seed)
    if m == "majority":
        return Majority(judges, world)
    if m == "lru":
        plain = cfg.with_(mechanism="protocol", ablations=(), governance="local")
        footprint = _play(plain, world, seed, None)[1]["footprint"]
        return Lru(len(world.agents), [int(v) for v in footprint])
    raise ValueError(f"unknown mechanism {m!r}")  # check() refuses it first


def _play(
    cfg: ForgetConfig, world: World, seed: int, progress: Progress | None
) -> tuple[Tracker, dict[str, list[float]], Mechanism, int]:
    judges = Judges(cfg, world, protocol_params(cfg), seed)
    kb = _mechanism(cfg, world, seed, judges)
    tracker = Tracker(world)
    series: dict[str, list[float]] = {k: [] for k in (*FORGET_SERIES, "decisions")}
    misses = 0
    for t in range(cfg.epochs):
        tracker.begin(t)
        tracker.admit(t, kb.admit(t, world.arrivals[t]))
        for q in world.queries[t]:
            if kb.holds(q.item):
                kb.last_access[q.item] = t
            elif q.item in tracker.forgotten:
                misses += 1
        for x in world.strays[t]:
            if kb.holds(x):
                kb.last_access[x] = t
        gone = kb.step(t)
        tracker.forget(t, gone)
        for k, v in tracker.series_point().items():
            series[k].append(v)
        series["decisions"].append(float(len(gone)))
        if progress is not None:
            progress(t + 1, cfg.epochs)
    return tracker, series, kb, misses


def run_forgetting(cfg: ForgetConfig, seed: int, progress: Progress | None = None) -> RunResult:
    """``cfg`` for ``seed`` (deterministic: the same pair gives the same result)."""
    world = make_world(cfg, seed)
    tracker, series, kb, misses = _play(cfg, world, seed, progress)
    t_end = cfg.epochs - 1
    final: dict[str, float] = {
        "reduction": tracker.reduction,
        "accuracy": tracker.accuracy,
        "precision": tracker.precision,
        "recall": tracker.recall,
        "wrongly_forgotten": float(tracker.wrong),
        "stale_kept": float(tracker.stale_kept),
        "footprint": float(tracker.footprint),
        "decisions_per_epoch": tracker.forgets / cfg.epochs,
        "misses": float(misses),
    }
    labels = {lab: 0 for lab in LABELS}
    for x in tracker.admitted:
        labels[world.item(x).label(t_end)] += 1
    extras: dict[str, Any] = {
        "admitted": len(tracker.admitted),
        "admitted_by_label": labels,
        "agents": len(world.agents),
    }
    if isinstance(kb, ProtocolKB):
        extras["commands"] = len(kb.log)
        extras["refused_commands"] = kb.refused
        extras["forget_votes"] = sum(len(v) for v in kb.voted.values())
    if cfg.governance != "local":
        assert isinstance(kb, ProtocolKB)
        candidates = sorted({x for votes in kb.voted.values() for x in votes})
        if cfg.governance == "pbft":
            got = replay_pbft(kb.log, kb.forgets, candidates, kb.params, kb.agents, cfg.fault, seed)
        else:
            got = run_alg1_decisions(candidates, tracker.forgotten, cfg.fault, seed)
        final.update(_numbers(got))
    return RunResult(dataclasses.replace(cfg), seed, series, final, extras)


def _numbers(d: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in d.items()}


__all__ = ["run_forgetting"]
