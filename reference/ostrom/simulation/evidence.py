"""The committed evidence of an experiment: every final number of every run, compact, with
the commit and the configuration that produced it (issue 43, item 2).

``results/`` (the full report: series, plots, Markdown) is not committed; the evidence is.
An experiment's evidence is a directory ``evaluation/<experiment>/`` of two files:

* ``runs.csv``: one row per run — cell label, scenario, seed, then every final metric and
  numeric extra of the report (``ExperimentResult.metrics``) except the per-command and
  per-path counters (the presentation's ``md_skip_prefixes``), rounded to 6 decimals;
  an empty field is NaN (the run does not measure it);
* ``meta.json``: the experiment (its cells with their full configuration, scenarios and
  seeds), the command line, the commit it ran on (and whether the tree had uncommitted
  changes), and the wall time.

docs/evaluation.md's result tables are generated from these files
(``ostrom.simulation.evidence_docs``, entries of ``ostrom.codegen.registry``), so a number
in the docs cannot differ from its file without ``ostrom docs --check`` failing.
"""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ostrom import layout
from ostrom.simulation.engine import ExperimentResult

#: Where the committed evidence lives, relative to the repository root.
EVIDENCE_DIR: Final = Path("evaluation")
RUNS: Final = "runs.csv"
META: Final = "meta.json"
#: Decimals kept: far below any difference the docs report (3 decimals).
DECIMALS: Final = 6


class EvidenceError(ValueError):
    """An evidence directory that cannot be read (the message names the file)."""


#: The code a run's numbers depend on: uncommitted changes here make the evidence dirty.
RUN_CODE: Final = ("reference/ostrom/simulation", "reference/ostrom/protocol")


def git_commit(root: Path = layout.ROOT) -> tuple[str, bool]:
    """The commit the tree is at and whether it has uncommitted changes in ``RUN_CODE``
    (the code that runs); ("unknown", True) outside a git checkout.  ``ostrom simulate``
    asks before it runs, when the code is loaded, not after."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", *RUN_CODE],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown", True
    return head, bool(status)


def _cell(v: float) -> str:
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    r = round(v, DECIMALS)
    return str(int(r)) if r == int(r) else repr(r)


def write_evidence(
    result: ExperimentResult,
    directory: Path,
    command: Sequence[str],
    commit: tuple[str, bool],
) -> list[Path]:
    """Write ``runs.csv`` and ``meta.json`` of ``result`` into ``directory``; ``commit`` is
    ``git_commit()`` taken when the run started."""
    exp = result.experiment
    look = exp.presentation
    skip = look.md_skip_prefixes if look.evidence_skip is None else look.evidence_skip
    metrics = [m for m in result.metrics() if not m.startswith(skip)]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["label", "scenario", "seed", *metrics])
    for i, run in enumerate(result.runs):
        w.writerow(
            [
                result.label_of(i),
                run.config.scenario,
                run.seed,
                *(_cell(result.value(run, m)) for m in metrics),
            ]
        )
    head, dirty = commit
    meta = {
        "experiment": exp.to_dict(),
        "command": list(command),
        "commit": head,
        "uncommitted_changes": dirty,
        "runs": exp.total,
        "seconds": round(result.seconds, 1),
    }
    directory.mkdir(parents=True, exist_ok=True)
    runs_path, meta_path = directory / RUNS, directory / META
    runs_path.write_text(out.getvalue(), encoding="utf-8")
    meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return [runs_path, meta_path]


@dataclass(frozen=True)
class Evidence:
    """One experiment's committed evidence, read back."""

    name: str
    meta: dict[str, Any]
    metrics: tuple[str, ...]
    rows: dict[tuple[str, str], list[tuple[int, dict[str, float]]]]  # (label, scenario)
    directory: str = ""  # the name of the directory it was read from (what the docs cite)

    @property
    def scenarios(self) -> tuple[str, ...]:
        return tuple(self.meta["experiment"]["scenarios"])

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(c["label"] for c in self.meta["experiment"]["cells"])

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(self.meta["experiment"]["seeds"])

    def has(self, label: str, scenario: str) -> bool:
        return (label, scenario) in self.rows

    def values(self, label: str, scenario: str, metric: str) -> list[float]:
        """Per-seed values of ``metric`` for one cell in one scenario, in seed order
        (``EvidenceError`` for a cell, scenario or metric the file does not have)."""
        if metric not in self.metrics:
            raise EvidenceError(f"{self.name}: no metric {metric!r} in {RUNS}")
        try:
            rows = self.rows[(label, scenario)]
        except KeyError:
            raise EvidenceError(f"{self.name}: no runs of {label!r} in {scenario!r}") from None
        return [v[metric] for _, v in rows]

    def config(self, label: str) -> dict[str, Any]:
        for c in self.meta["experiment"]["cells"]:
            if c["label"] == label:
                cfg: dict[str, Any] = c["config"]
                return cfg
        raise EvidenceError(f"{self.name}: no cell {label!r}")


def _float(text: str, where: str) -> float:
    if text == "":
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise EvidenceError(f"{where}: not a number: {text!r}") from None


def load_evidence(directory: Path) -> Evidence:
    """Read ``directory``'s ``runs.csv`` and ``meta.json`` (``EvidenceError`` naming the
    file if either is missing or malformed)."""
    runs_path, meta_path = directory / RUNS, directory / META
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        text = runs_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EvidenceError(f"{directory}: cannot read the evidence: {exc}") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or header[:3] != ["label", "scenario", "seed"]:
        raise EvidenceError(f"{runs_path}: the header must start with label,scenario,seed")
    metrics = tuple(header[3:])
    rows: dict[tuple[str, str], list[tuple[int, dict[str, float]]]] = {}
    for n, row in enumerate(reader, start=2):
        if len(row) != len(header):
            raise EvidenceError(f"{runs_path}:{n}: {len(row)} fields, expected {len(header)}")
        where = f"{runs_path}:{n}"
        try:
            seed = int(row[2])
        except ValueError:
            raise EvidenceError(f"{where}: seed {row[2]!r} is not an integer") from None
        values = {m: _float(t, where) for m, t in zip(metrics, row[3:], strict=True)}
        rows.setdefault((row[0], row[1]), []).append((seed, values))
    for key in rows:
        rows[key].sort(key=lambda r: r[0])
    name = str(meta.get("experiment", {}).get("name", directory.name))
    return Evidence(name, meta, metrics, rows, directory.name)


__all__ = [
    "DECIMALS",
    "EVIDENCE_DIR",
    "META",
    "RUNS",
    "RUN_CODE",
    "Evidence",
    "EvidenceError",
    "git_commit",
    "load_evidence",
    "write_evidence",
]
