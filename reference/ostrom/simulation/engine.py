"""The experiment engine: labelled cells × scenarios × seeds, run in parallel.

An ``Experiment`` is a list of labelled cells (one run configuration each) × scenarios ×
seeds.  ``run_experiment`` runs every (cell, scenario, seed) — in a process pool, or
in-process with ``jobs=1`` — and returns the results sorted, so they do not depend on the
number of workers or on the order in which runs finish.  ``ostrom.simulation.report`` turns
the result into tables, statistics and plots, as the experiment's ``Presentation`` says.

The engine does not know what a run is: a configuration is any ``RunConfig`` (the paper's
``SimConfig``, the forgetting and plasticity configurations), and the caller says what runs
one (``ostrom.simulation.experiments.run_experiment`` passes ``run.simulate``, which
dispatches on the configuration's type).  The built-in experiments are in
``ostrom.simulation.experiments``.

A cell may be restricted to some of the experiment's scenarios (``Cell.scenarios``): the
forgetting experiment runs its consensus cells only in the scenario sized for PBFT.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import math
import os
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ostrom.simulation.config import ConfigError
from ostrom.simulation.result import SERIES, RunConfig, RunResult

#: What runs one (config, seed) pair (``run.simulate``, or a test's own).  It must be
#: picklable (a module-level function) to run in the process pool.
RunFn = Callable[[Any, int], RunResult]

#: Extra Markdown sections of an experiment's results.md, and extra plots it writes.
Sections = Callable[["ExperimentResult"], list[str]]
Plots = Callable[["ExperimentResult", Path], list[Path]]


@dataclass(frozen=True)
class Presentation:
    """How an experiment's report shows it: which metrics are the main table's columns,
    which one the Δ column and the by-round plot show, the scenario the degradation table
    starts from (None: no such table), and extra sections and plots of its own."""

    main_metrics: tuple[str, ...] = SERIES
    key_metric: str = "precision"
    key_axis: str = "precision (good share of active artifacts)"
    other_metrics: tuple[str, ...] = ("precision", "gini")
    degradation_from: str | None = "moderate"
    md_skip_prefixes: tuple[str, ...] = ("commands.", "paths.")
    #: what the committed evidence leaves out (None: ``md_skip_prefixes``); an experiment
    #: whose tables read per-cell figures that results.md's main table skips names its own
    evidence_skip: tuple[str, ...] | None = None
    sections: Sections | None = None
    plots: Plots | None = None


@dataclass(frozen=True)
class Cell:
    """One configuration of an experiment.  ``config.scenario`` is replaced by each of
    the experiment's scenarios (or only by those in ``scenarios``, if given); ``vs``
    lists the labels this cell is compared with."""

    label: str
    config: Any  # a RunConfig
    vs: tuple[str, ...] = ()
    scenarios: tuple[str, ...] = ()

    def runs_in(self, scenario: str) -> bool:
        return not self.scenarios or scenario in self.scenarios


@dataclass(frozen=True)
class RunSpec:
    """One run to do: which cell, scenario and seed (indices give the sort order)."""

    cell: int
    scenario: int
    seed: int
    label: str
    config: Any

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
    presentation: Presentation = field(default=Presentation(), compare=False)

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
            for s in cell.scenarios:
                if s not in self.scenarios:
                    raise ConfigError(f"experiment {self.name}: {cell.label} in unknown {s!r}")
            if not any(cell.runs_in(s) for s in self.scenarios):
                raise ConfigError(f"experiment {self.name}: {cell.label} runs in no scenario")
            for s in self.scenarios:
                if cell.runs_in(s):
                    self.config(cell, s)  # raises ConfigError for a config that cannot run

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(c.label for c in self.cells)

    @property
    def total(self) -> int:
        return len(self.seeds) * sum(cell.runs_in(s) for cell in self.cells for s in self.scenarios)

    def cell(self, label: str) -> Cell:
        for c in self.cells:
            if c.label == label:
                return c
        raise KeyError(label)

    def config(self, cell: Cell, scenario: str) -> Any:
        """The cell's configuration in ``scenario`` (a ``RunConfig``)."""
        config: RunConfig = cell.config
        if config.scenario == scenario:
            return config
        return config.with_scenario(scenario)

    def runs(self) -> list[RunSpec]:
        return [
            RunSpec(i, j, seed, cell.label, self.config(cell, s))
            for i, cell in enumerate(self.cells)
            for j, s in enumerate(self.scenarios)
            if cell.runs_in(s)
            for seed in self.seeds
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "scenarios": list(self.scenarios),
            "seeds": list(self.seeds),
            "cells": [
                {
                    "label": c.label,
                    "vs": list(c.vs),
                    "config": c.config.to_dict(),
                    **({"scenarios": list(c.scenarios)} if c.scenarios else {}),
                }
                for c in self.cells
            ],
        }


# --- running --------------------------------------------------------------------------


class RunError(RuntimeError):
    """A run failed: which one (label, scenario, seed, config) and the worker's traceback,
    or, for a ``ConfigError`` raised during the run (``user``: a plugged agent policy that
    raised or answered wrongly), its message alone: the fault is the caller's input, and
    the message names it (a traceback into the engine would only hide it)."""

    def __init__(
        self, spec: RunSpec, scenario: str, error: str, detail: str, user: bool = False
    ) -> None:
        self.label = spec.label
        self.scenario = scenario
        self.seed = spec.seed
        self.config = spec.config
        self.error = error
        self.detail = detail
        self.user = user
        super().__init__(
            f"run failed: {spec.label!r} in scenario {scenario}, seed {spec.seed}: {error}\n"
            f"config: {json.dumps(spec.config.to_dict(), sort_keys=True)}\n{detail}".rstrip()
        )


@dataclass(frozen=True)
class _Failure:
    error: str
    detail: str
    user: bool = False


def _execute(run: RunFn, config: Any, seed: int) -> RunResult | _Failure:
    """One run, in a worker: an exception comes back as text (it may not pickle)."""
    try:
        result = run(config, seed)
    except ConfigError as exc:  # the caller's input (a plugged policy): its message says all
        return _Failure(f"{type(exc).__name__}: {exc}", "", user=True)
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
        specs = self.experiment.runs()
        index: dict[tuple[str, str], list[RunResult]] = {}
        for spec, run in zip(specs, self.runs, strict=True):
            index.setdefault((spec.label, self.experiment.scenarios[spec.scenario]), []).append(run)
        object.__setattr__(self, "_labels", tuple(spec.label for spec in specs))
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_flat", {})  # id(run) -> numeric_values(run)
        object.__setattr__(self, "_metrics", None)

    def get(self, label: str, scenario: str) -> list[RunResult]:
        """The runs of one cell in one scenario, in seed order (none if the cell does not
        run in that scenario; ``KeyError`` for an unknown label or scenario)."""
        exp = self.experiment
        if label not in exp.labels or scenario not in exp.scenarios:
            raise KeyError((label, scenario))
        return list(self._index.get((label, scenario), []))  # type: ignore[attr-defined]

    def label_of(self, index: int) -> str:
        """The cell label of ``runs[index]``."""
        return self._labels[index]  # type: ignore[attr-defined,no-any-return]

    def values(self, label: str, scenario: str, metric: str) -> list[float]:
        """Per-seed final values of ``metric`` (NaN where a run does not have it)."""
        return [self.value(r, metric) for r in self.get(label, scenario)]

    def value(self, run: RunResult, metric: str) -> float:
        """``metric_value(run, metric)``, with the run's flattened values computed once: a
        report asks for every metric of every run, and flattening a run's extras for each
        of them made writing the plasticity report take longer than running it."""
        cache: dict[int, dict[str, float]] = self._flat  # type: ignore[attr-defined]
        values = cache.get(id(run))
        if values is None:
            values = cache[id(run)] = numeric_values(run)
        return metric_value(run, metric, values)

    def metrics(self) -> list[str]:
        """The presentation's main metrics, every other numeric final (first seen), then
        the flattened numeric extras, sorted by name."""
        cached: list[str] | None = self._metrics  # type: ignore[attr-defined]
        if cached is not None:
            return list(cached)
        names = dict.fromkeys(self.experiment.presentation.main_metrics)
        extras: set[str] = set()
        for r in self.runs:
            self.value(r, "")  # fills the cache
            values = self._flat[id(r)]  # type: ignore[attr-defined]
            names.update(dict.fromkeys(k for k in r.final if k in values))
            extras.update(values)
        out = [*names, *sorted(extras - set(names))]
        object.__setattr__(self, "_metrics", out)
        return list(out)


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


def metric_value(run: RunResult, metric: str, values: Mapping[str, float] | None = None) -> float:
    """``numeric_values(run)[metric]``; if absent: 0 when the run has the enclosing
    mapping (``sanctioned.honest`` missing from ``sanctioned``: a count by category that
    is zero), NaN otherwise (the run does not measure it).  ``values`` is the run's
    ``numeric_values`` if the caller has them already."""
    if values is None:
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
    run: RunFn,
    jobs: int | None = None,
    progress: bool = True,
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
            scenario = exp.scenarios[spec.scenario]
            raise RunError(spec, scenario, outcome.error, outcome.detail, outcome.user)
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
    "Cell",
    "Experiment",
    "ExperimentResult",
    "Presentation",
    "RunError",
    "RunFn",
    "RunSpec",
    "metric_value",
    "numeric_values",
    "run_experiment",
]
