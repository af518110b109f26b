"""One run of the plasticity experiment (``run_plasticity``) and the experiment's cells.

Why a loop separate from the mechanisms: the measurement must be identical for every
mechanism, so it lives here once.  Each round the mechanism consumes the stream's
proposals of that round (``World.by_round``); then every trial whose valid update has
been proposed and whose window is still open records the value its slot serves; a trial
closes after round ``t_valid + T`` and becomes a ``metrics.TrialRecord``.

The experiment (``plasticity_cells`` × ``PLASTICITY_SCENARIOS`` × seeds) asks: does
supersession with review keep plasticity flat as the interference count k grows, where
the baselines collapse — and at what adversary share does it stop?  The four mechanisms
are run in three conditions: ``after`` (the paper's design: the conflicts follow the
valid update), ``before`` (the reviewers' control: the conflicts precede it) and
``transient`` (after, with the conflicts marked transient: the other control).  Every
baseline is compared with the protocol in the same condition; the protocol's controls
with the protocol ``after``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from ostrom.simulation.plasticity.config import KINDS, MECHANISMS, PlasticityConfig, scenario_name
from ostrom.simulation.plasticity.mechanisms import (
    LastWriterWins,
    LatestStable,
    Majority,
    Mechanism,
)
from ostrom.simulation.plasticity.metrics import (
    TrialRecord,
    by_cell,
    nested,
    outcome,
    pooled,
)
from ostrom.simulation.plasticity.protocol import ProtocolMechanism
from ostrom.simulation.plasticity.world import Trial, World, make_world
from ostrom.simulation.result import RunResult

#: The adversary shares the experiment sweeps (its scenarios are ``adv=0.00`` ...).
PLASTICITY_SCENARIOS: Final = (0.0, 0.1, 0.2, 0.3, 0.4)
#: The same, as scenario names.
PLASTICITY_SCENARIO_NAMES: Final = tuple(scenario_name(s) for s in PLASTICITY_SCENARIOS)

#: The conditions of the experiment: (name, order, transient).
CONDITIONS: Final = (
    ("after", "after", False),
    ("before", "before", False),
    ("transient", "after", True),
)

#: The kinds whose conflicts are about the trial's own slot (the drop is measured on them).
INTERFERING: Final = ("same_slot", "repeated")

#: The per-round series (running values over the trials closed so far, all kinds pooled).
SERIES: Final = ("plasticity", "stale_retention", "wrong_adoption", "open_trials")

#: The per-(kind, k) metrics reported in ``extras``.
CELL_METRICS: Final = (
    "plasticity",
    "stale_retention",
    "wrong_adoption",
    "displaced",
    "time_to_adoption",
    "trials",
    "censored",
)


#: The per-(kind, k) metrics also in ``final`` (as ``<metric>.<kind>.k<k>``).
EVIDENCE_CELL_METRICS: Final = ("plasticity", "wrong_adoption")


def make_mechanism(cfg: PlasticityConfig, world: World, seed: int) -> Mechanism:
    """The mechanism ``cfg.mechanism`` names, ready for round 0."""
    if cfg.mechanism == "last_writer_wins":
        return LastWriterWins(world)
    if cfg.mechanism == "latest_stable":
        return LatestStable(world)
    if cfg.mechanism == "majority":
        return Majority(cfg, world, seed)
    return ProtocolMechanism(cfg, world, seed)


def record(trial: Trial, served: tuple[str | None, ...]) -> TrialRecord:
    """A trial's record: its values and what its slot served over the window."""
    conflicts: frozenset[str] = frozenset()
    if trial.kind == "same_slot" and trial.wrong is not None:
        conflicts = frozenset({trial.wrong})
    elif trial.kind == "repeated" and trial.k:
        conflicts = frozenset({trial.old})
    return TrialRecord(trial.kind, trial.k, trial.old, trial.new, conflicts, served)


def measure(
    cfg: PlasticityConfig,
    world: World,
    mech: Mechanism,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[TrialRecord], dict[str, list[float]]]:
    """Step ``mech`` through the stream; the closed trials' records and the series."""
    per_round = world.by_round(cfg.rounds)
    starts: dict[int, list[Trial]] = {}
    closes: dict[int, list[Trial]] = {}
    for t in world.trials:
        starts.setdefault(t.t_valid, []).append(t)
        closes.setdefault(t.close, []).append(t)
    traces: dict[int, tuple[Trial, list[str | None]]] = {}
    records: list[TrialRecord] = []
    n = plastic = stale = wrong = 0
    series: dict[str, list[float]] = {k: [] for k in SERIES}
    for r in range(cfg.rounds):
        mech.step(r, per_round[r])
        for t in starts.get(r, ()):
            traces[t.index] = (t, [])
        for t, trace in traces.values():
            trace.append(mech.served(t.slot))
        for t in closes.get(r, ()):
            _, trace = traces.pop(t.index)
            rec = record(t, tuple(trace))
            records.append(rec)
            o = outcome(rec)
            n += 1
            plastic += o.plastic
            stale += o.stale
            wrong += o.wrong
        series["plasticity"].append(plastic / n if n else math.nan)
        series["stale_retention"].append(stale / n if n else math.nan)
        series["wrong_adoption"].append(wrong / n if n else math.nan)
        series["open_trials"].append(float(len(traces)))
        if progress is not None:
            progress(r + 1, cfg.rounds)
    return records, series


def run_plasticity(
    config: PlasticityConfig,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """One run: the world of ``seed``, played by ``config.mechanism``, measured.

    ``final``: plasticity, stale retention, wrong adoption and time to adoption pooled
    over every kind at k >= 1; ``plasticity_k0`` (every kind at k = 0); and
    ``plasticity_drop`` = plasticity at k = 0 minus plasticity of the same-slot and
    repeated trials at the largest k (the paper's headline contrast).  ``extras``:
    each ``CELL_METRICS`` entry as ``{kind: {"k0": .., "k1": ..}}``, the stream's
    ``dropped`` trials and the mechanism's own counts.
    """
    world = make_world(config, seed)
    mech = make_mechanism(config, world, seed)
    records, series = measure(config, world, mech, progress)
    interfered = [k for k in config.counts if k > 0]
    top = pooled(records, counts=interfered)
    base = pooled(records, counts=(0,))
    at_max = pooled(records, kinds=INTERFERING, counts=(config.max_count,))
    final: dict[str, float] = {
        "plasticity": top.plasticity,
        "stale_retention": top.stale_retention,
        "wrong_adoption": top.wrong_adoption,
        "time_to_adoption": top.time_to_adoption,
        "plasticity_k0": base.plasticity,
        "plasticity_drop": base.plasticity - at_max.plasticity,
        "trials": float(len(records)),
    }
    cells = by_cell(records)
    # per (kind, k) finals too, so that the committed evidence (one row of finals per run)
    # holds what docs/evaluation.md's plasticity tables show
    for name in EVIDENCE_CELL_METRICS:
        for kind, row in nested(cells, name, KINDS, config.counts).items():
            for k, v in row.items():
                final[f"{name}.{kind}.{k}"] = math.nan if v is None else float(v)
    extras: dict[str, Any] = {
        name: nested(cells, name, KINDS, config.counts) for name in CELL_METRICS
    }
    extras["dropped"] = world.dropped
    extras["mechanism"] = mech.extras()
    return RunResult(config, seed, series, final, extras)


def plasticity_cells() -> list[tuple[str, PlasticityConfig, tuple[str, ...]]]:
    """The experiment's cells: (label, config, labels it is compared with).

    The four mechanisms × the three conditions; each baseline vs the protocol in the
    same condition, the protocol's controls (``before``, ``transient``) vs the protocol
    ``after``.  The scenario (adversary share) is set by the experiment.
    """
    cells: list[tuple[str, PlasticityConfig, tuple[str, ...]]] = []
    reference = PlasticityConfig(mechanism="protocol").label
    for _name, order, transient in CONDITIONS:
        protocol = PlasticityConfig(mechanism="protocol", order=order, transient=transient)
        for mech in MECHANISMS:
            cfg = protocol.with_(mechanism=mech)
            if mech != "protocol":
                vs: tuple[str, ...] = (protocol.label,)
            else:
                vs = () if cfg.label == reference else (reference,)
            cells.append((cfg.label, cfg, vs))
    return cells


__all__ = [
    "CELL_METRICS",
    "CONDITIONS",
    "EVIDENCE_CELL_METRICS",
    "INTERFERING",
    "PLASTICITY_SCENARIOS",
    "PLASTICITY_SCENARIO_NAMES",
    "SERIES",
    "make_mechanism",
    "measure",
    "plasticity_cells",
    "record",
    "run_plasticity",
]
