"""Experiments: many runs of the evaluation model in parallel (``ostrom simulate``, in
``ostrom.simulation.command``, runs them).

An ``Experiment`` is a list of labelled cells (one ``SimConfig`` each) × scenarios ×
seeds.  ``run_experiment`` runs every (cell, scenario, seed) — in a process pool, or
in-process with ``jobs=1`` — and returns the results sorted, so they do not depend on
the number of workers or on the order in which runs finish.  ``ostrom.simulation.report``
turns the result into tables, statistics and plots.

Built-in experiments (docs/design.md §10; docs/evaluation.md says what each one tests):

* ``paper``     — the paper's §5.5–5.6: the protocol, the four baselines and the four
  ablations, scenarios moderate and high, seeds 1..30 (540 runs);
* ``truth``     — experiment (a): reputation fed by the decision (the paper's rule) or by
  the ground truth, for the protocol, the protocol without commit-reveal and majority;
* ``bloc``      — experiment (b): a coordinated adversary (scenario ``bloc``) against
  ``moderate``, for the protocol, majority and the protocol without reputation; reports
  ``separation`` (mean E of the honest agents minus that of the adversaries);
* ``sanctions`` — experiment (c): the protocol over horizons of 500 and 2,000 rounds ×
  broken-agent malfunction rates × lazy reveal rates, to see whether sanctions fire;
* ``smoke``     — a tiny version for CI (20 agents, 60 rounds, 3 seeds).

Every cell is compared with the cells named in its ``vs`` (the first one, majority vote
for the paper, is the table's reference), pairing runs by seed.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ostrom.simulation.config import (
    ABLATIONS,
    GOVERNANCE,
    MIXES,
    ConfigError,
    SimConfig,
)
from ostrom.simulation.result import SERIES, RunResult
from ostrom.simulation.run import simulate

#: What runs one (config, seed) pair; ``simulate`` unless a test injects another.  It must
#: be picklable (a module-level function) to run in the process pool.
RunFn = Callable[[SimConfig, int], RunResult]

#: The reference every paper configuration is compared with (§5.5).
REFERENCE = "majority"


@dataclass(frozen=True)
class Cell:
    """One configuration of an experiment.  ``config.scenario`` is replaced by each of
    the experiment's scenarios; ``vs`` lists the labels this cell is compared with."""

    label: str
    config: SimConfig
    vs: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunSpec:
    """One run to do: which cell, scenario and seed (indices give the sort order)."""

    cell: int
    scenario: int
    seed: int
    label: str
    config: SimConfig

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.cell, self.scenario, self.seed)


@dataclass(frozen=True)
class Experiment:
    """Named cells × scenarios × seeds (see the module doc)."""

    name: str
    description: str
    cells: tuple[Cell, ...]
    scenarios: tuple[str, ...]
    seeds: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.cells or not self.scenarios or not self.seeds:
            raise ConfigError(f"experiment {self.name}: needs cells, scenarios and seeds")
        labels = [c.label for c in self.cells]
        if len(set(labels)) != len(labels):
            raise ConfigError(f"experiment {self.name}: duplicate labels in {labels}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"experiment {self.name}: duplicate seeds")
        if len(set(self.scenarios)) != len(self.scenarios):
            raise ConfigError(f"experiment {self.name}: duplicate scenarios")
        for cell in self.cells:
            for ref in cell.vs:
                if ref not in labels:
                    raise ConfigError(f"experiment {self.name}: {cell.label} vs unknown {ref!r}")
            for s in self.scenarios:
                self.config(cell, s)  # raises ConfigError for a config that cannot run

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(c.label for c in self.cells)

    @property
    def total(self) -> int:
        return len(self.cells) * len(self.scenarios) * len(self.seeds)

    def cell(self, label: str) -> Cell:
        for c in self.cells:
            if c.label == label:
                return c
        raise KeyError(label)

    def config(self, cell: Cell, scenario: str) -> SimConfig:
        if cell.config.scenario == scenario:
            return cell.config
        return cell.config.with_(scenario=scenario)

    def runs(self) -> list[RunSpec]:
        return [
            RunSpec(i, j, seed, cell.label, self.config(cell, s))
            for i, cell in enumerate(self.cells)
            for j, s in enumerate(self.scenarios)
            for seed in self.seeds
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "scenarios": list(self.scenarios),
            "seeds": list(self.seeds),
            "cells": [
                {"label": c.label, "vs": list(c.vs), "config": c.config.to_dict()}
                for c in self.cells
            ],
        }


# --- built-in experiments -------------------------------------------------------------

#: (label, SimConfig changes, labels compared with)
CellDef = tuple[str, dict[str, Any], tuple[str, ...]]


def _paper_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    cells: list[CellDef] = [("protocol", {}, (REFERENCE,))]
    for g in GOVERNANCE[1:]:
        # weighted-without-deliberation is also the deliberation ablation: vs the protocol
        refs = (REFERENCE, "protocol") if g == "weighted_no_deliberation" else (REFERENCE,)
        cells.append((g, {"governance": g}, () if g == REFERENCE else refs))
    for a in ABLATIONS:
        cells.append((f"protocol+{a}", {"ablations": (a,)}, (REFERENCE, "protocol")))
    return cells


def _truth_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    cells: list[CellDef] = []
    for feedback, tag in (("decision", ""), ("truth", " [truth]")):
        ref = f"{REFERENCE}{tag}"
        changes: dict[str, Any] = {"feedback": feedback}
        vs_protocol = (f"protocol{tag}",)
        cells += [
            (f"protocol{tag}", changes, (ref, "protocol") if tag else (ref,)),
            (
                f"protocol+no_commit_reveal{tag}",
                {**changes, "ablations": ("no_commit_reveal",)},
                (ref, *vs_protocol),
            ),
            (ref, {**changes, "governance": REFERENCE}, ()),
        ]
    return cells


def _bloc_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    return [
        ("protocol", {}, (REFERENCE,)),
        (REFERENCE, {"governance": REFERENCE}, ()),
        ("protocol+no_reputation", {"ablations": ("no_reputation",)}, (REFERENCE, "protocol")),
        (
            "protocol+no_commit_reveal",
            {"ablations": ("no_commit_reveal",)},
            (REFERENCE, "protocol"),
        ),
        ("protocol [truth]", {"feedback": "truth"}, (REFERENCE, "protocol")),
    ]


#: Experiment (c): horizons (rounds), broken-agent malfunction and lazy reveal rates.
SANCTION_HORIZONS = (500, 2000)
SANCTION_MALFUNCTION = (0.1, 0.3, 0.6, 0.9)
SANCTION_LAZY_REVEAL = (0.7, 0.3)


def _sanctions_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    cells: list[CellDef] = []
    for r in (rounds,) if rounds is not None else SANCTION_HORIZONS:
        for bm in SANCTION_MALFUNCTION:
            for lr in SANCTION_LAZY_REVEAL:
                changes = {
                    "governance": "protocol",
                    "ablations": (),
                    "rounds": r,
                    "artifacts": r * base.proposals_per_round,
                    "broken_malfunction": bm,
                    "lazy_reveal": lr,
                }
                cells.append((f"protocol r={r} broken={bm} lazy_reveal={lr}", changes, ()))
    return cells


def _smoke_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    small = {"agents": 20, "rounds": 60, "artifacts": 60 * base.proposals_per_round}
    return [
        ("protocol", small, (REFERENCE,)),
        (REFERENCE, {**small, "governance": REFERENCE}, ()),
        (
            "protocol+no_commit_reveal",
            {**small, "ablations": ("no_commit_reveal",)},
            (REFERENCE, "protocol"),
        ),
    ]


@dataclass(frozen=True)
class ExperimentDef:
    description: str
    cells: Callable[[SimConfig, int | None], list[CellDef]]
    scenarios: tuple[str, ...]
    seeds: int


EXPERIMENTS: dict[str, ExperimentDef] = {
    "paper": ExperimentDef(
        "the paper's §5.5-5.6: protocol, four baselines, four ablations",
        _paper_cells,
        ("moderate", "high"),
        30,
    ),
    "truth": ExperimentDef(
        "(a) reputation fed by the decision (the paper's rule) vs by the ground truth",
        _truth_cells,
        ("moderate", "high"),
        30,
    ),
    "bloc": ExperimentDef(
        "(b) a coordinated adversary: does reputation still separate honest agents?",
        _bloc_cells,
        ("moderate", "bloc", "bloc_high"),
        30,
    ),
    "sanctions": ExperimentDef(
        "(c) horizons long enough for sanctions to fire: broken malfunction x lazy reveal",
        _sanctions_cells,
        ("moderate", "high"),
        10,
    ),
    "smoke": ExperimentDef(
        "a tiny run of the paper's comparison for CI (20 agents, 60 rounds)",
        _smoke_cells,
        ("moderate", "high"),
        3,
    ),
}


def build_experiment(
    name: str,
    *,
    seeds: int | None = None,
    seed_start: int = 1,
    rounds: int | None = None,
    agents: int | None = None,
    artifacts: int | None = None,
    base: SimConfig | None = None,
    scenarios: Sequence[str] | None = None,
) -> Experiment:
    """The built-in experiment ``name`` with overrides: ``seeds`` (how many, from
    ``seed_start``), ``rounds`` (artifacts follow as rounds × proposals per round unless
    ``artifacts`` is given), ``agents``, a ``base`` config (e.g. from ``--config``; the
    cells change only their own fields of it) and ``scenarios``.  A base with a custom
    mix runs in scenario ``custom`` only, unless ``scenarios`` says otherwise."""
    try:
        spec = EXPERIMENTS[name]
    except KeyError:
        raise ConfigError(f"experiment: {name!r} is not one of {sorted(EXPERIMENTS)}") from None
    base = base or SimConfig()
    if seeds is not None and seeds < 1:
        raise ConfigError(f"seeds: must be at least 1, got {seeds}")
    sizes: dict[str, Any] = {}
    if agents is not None:
        sizes["agents"] = agents
    if rounds is not None:
        sizes["rounds"] = rounds
        sizes["artifacts"] = rounds * base.proposals_per_round
    if artifacts is not None:
        sizes["artifacts"] = artifacts
    if scenarios is None:
        scenarios = ("custom",) if base.scenario == "custom" else spec.scenarios
    for s in scenarios:
        if s != "custom" and s not in MIXES:
            raise ConfigError(f"scenario: {s!r} is not one of {[*MIXES, 'custom']}")
    cells = []
    for label, changes, vs in spec.cells(base, rounds):
        try:
            config = base.with_(**{**changes, **sizes, "scenario": scenarios[0]})
        except TypeError as exc:  # a field name that SimConfig does not have
            raise ConfigError(f"experiment {name}: {exc}") from None
        cells.append(Cell(label, config, vs))
    n = spec.seeds if seeds is None else seeds
    return Experiment(
        name=name,
        description=spec.description,
        cells=tuple(cells),
        scenarios=tuple(scenarios),
        seeds=tuple(range(seed_start, seed_start + n)),
    )


def single_experiment(config: SimConfig, seeds: Sequence[int]) -> Experiment:
    """One configuration over ``seeds`` (``ostrom simulate`` without ``--experiment``)."""
    label = config.label + (" [truth]" if config.feedback == "truth" else "")
    return Experiment(
        name="single",
        description=f"{label} in scenario {config.scenario}",
        cells=(Cell(label, config),),
        scenarios=(config.scenario,),
        seeds=tuple(seeds),
    )


# --- running --------------------------------------------------------------------------


class RunError(RuntimeError):
    """A run failed: which one (label, scenario, seed, config) and the worker's traceback."""

    def __init__(self, spec: RunSpec, scenario: str, error: str, detail: str) -> None:
        self.label = spec.label
        self.scenario = scenario
        self.seed = spec.seed
        self.config = spec.config
        self.error = error
        self.detail = detail
        super().__init__(
            f"run failed: {spec.label!r} in scenario {scenario}, seed {spec.seed}: {error}\n"
            f"config: {json.dumps(spec.config.to_dict(), sort_keys=True)}\n{detail}".rstrip()
        )


@dataclass(frozen=True)
class _Failure:
    error: str
    detail: str


def _execute(run: RunFn, config: SimConfig, seed: int) -> RunResult | _Failure:
    """One run, in a worker: an exception comes back as text (it may not pickle)."""
    try:
        result = run(config, seed)
    except Exception as exc:
        return _Failure(f"{type(exc).__name__}: {exc}", traceback.format_exc())
    if not isinstance(result, RunResult):
        return _Failure(f"the run function returned {type(result).__name__}, not RunResult", "")
    return result


@dataclass(frozen=True)
class ExperimentResult:
    """Every run of an experiment, sorted by (cell, scenario, seed).  ``seconds`` is the
    wall time (not part of any report file, which depends on the results only)."""

    experiment: Experiment
    runs: tuple[RunResult, ...]
    seconds: float = field(default=0.0, compare=False)

    def __post_init__(self) -> None:
        if len(self.runs) != self.experiment.total:
            raise ValueError(f"{len(self.runs)} runs for {self.experiment.total} specs")

    def get(self, label: str, scenario: str) -> list[RunResult]:
        """The runs of one cell in one scenario, in seed order."""
        exp = self.experiment
        i = exp.labels.index(label)
        j = exp.scenarios.index(scenario)
        n = len(exp.seeds)
        start = (i * len(exp.scenarios) + j) * n
        return list(self.runs[start : start + n])

    def label_of(self, index: int) -> str:
        """The cell label of ``runs[index]``."""
        exp = self.experiment
        return exp.cells[index // (len(exp.scenarios) * len(exp.seeds))].label

    def values(self, label: str, scenario: str, metric: str) -> list[float]:
        """Per-seed final values of ``metric`` (NaN where a run does not have it)."""
        return [metric_value(r, metric) for r in self.get(label, scenario)]

    def metrics(self) -> list[str]:
        """The four series metrics, every other numeric final (first seen), then the
        flattened numeric extras, sorted by name."""
        names = dict.fromkeys(SERIES)
        extras: set[str] = set()
        for r in self.runs:
            values = numeric_values(r)
            names.update(dict.fromkeys(k for k in r.final if k in values))
            extras.update(values)
        return [*names, *sorted(extras - set(names))]


def numeric_values(run: RunResult) -> dict[str, float]:
    """A run's numeric finals, then its extras flattened (``a.b`` for nested mappings;
    None -> NaN; booleans as 0/1; lists and strings left out).  A final wins a clash."""
    out: dict[str, float] = {}
    for k, v in run.final.items():
        f = _number(v)
        if f is not None:
            out[k] = f
    for k, v in _flatten(run.extras).items():
        out.setdefault(k, v)
    return out


def metric_value(run: RunResult, metric: str) -> float:
    """``numeric_values(run)[metric]``; if absent: 0 when the run has the enclosing
    mapping (``sanctioned.honest`` missing from ``sanctioned``: a count by category that
    is zero), NaN otherwise (the run does not measure it)."""
    values = numeric_values(run)
    if metric in values:
        return values[metric]
    node: Any = run.extras
    parts = metric.split(".")
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, Mapping) else None
    return 0.0 if len(parts) > 1 and isinstance(node, Mapping) else math.nan


def _flatten(m: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in m.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, name + "."))
        else:
            f = _number(v)
            if f is not None:
                out[name] = f
    return out


def _number(v: Any) -> float | None:
    if v is None:
        return math.nan
    if isinstance(v, bool | int | float):
        return float(v)
    return None


@contextmanager
def _progress_bar(enabled: bool, total: int, title: str) -> Iterator[Callable[[], None]]:
    if not enabled:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs"),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(title, total=total)
        yield lambda: bar.advance(task)


def run_experiment(
    exp: Experiment,
    jobs: int | None = None,
    progress: bool = True,
    run: RunFn = simulate,
) -> ExperimentResult:
    """Run every (cell, scenario, seed) of ``exp`` on ``jobs`` worker processes (default:
    one per core; 1 runs in this process).  Stops at the first failing run and raises
    ``RunError`` naming it.  ``progress`` draws a bar on stderr (runs done, elapsed, ETA)."""
    specs = exp.runs()
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(specs)))
    done: dict[tuple[int, int, int], RunResult] = {}
    t0 = time.perf_counter()

    def accept(spec: RunSpec, outcome: RunResult | _Failure) -> None:
        if isinstance(outcome, _Failure):
            raise RunError(spec, exp.scenarios[spec.scenario], outcome.error, outcome.detail)
        done[spec.key] = outcome

    title = f"{exp.name} ({jobs} job{'s' if jobs > 1 else ''})"
    with _progress_bar(progress, len(specs), title) as advance:
        if jobs == 1:
            for spec in specs:
                accept(spec, _execute(run, spec.config, spec.seed))
                advance()
        else:
            pool = cf.ProcessPoolExecutor(max_workers=jobs)
            failed = True
            try:
                futures = {pool.submit(_execute, run, s.config, s.seed): s for s in specs}
                for fut in cf.as_completed(futures):
                    spec = futures[fut]
                    try:
                        outcome = fut.result()
                    except Exception as exc:  # a worker died (BrokenProcessPool, pickling)
                        scenario = exp.scenarios[spec.scenario]
                        raise RunError(spec, scenario, f"{type(exc).__name__}: {exc}", "") from exc
                    accept(spec, outcome)
                    advance()
                failed = False
            finally:
                pool.shutdown(wait=not failed, cancel_futures=failed)
    runs = tuple(done[s.key] for s in sorted(specs, key=lambda s: s.key))
    return ExperimentResult(exp, runs, time.perf_counter() - t0)


__all__ = [
    "EXPERIMENTS",
    "REFERENCE",
    "Cell",
    "Experiment",
    "ExperimentResult",
    "RunError",
    "RunFn",
    "RunSpec",
    "build_experiment",
    "metric_value",
    "numeric_values",
    "run_experiment",
    "single_experiment",
]
