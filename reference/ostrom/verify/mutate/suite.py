"""A spec's mutation suite and its recorded scores: what `make mutate` runs and guards.

The ``[suite]`` table of ``models/mutation/<Spec>.toml`` (beside its accepted
equivalents) names the models a mutant of the spec runs on, cheapest first, and the
seeded sample `make mutate` draws:

    [suite]
    models = ["lifecycle-ci-solo", "lifecycle-ci"]   # manifest models, in this order
    sample = 40                                      # mutants drawn with seed
    seed = 1
    timeout = 300                                    # seconds per mutant and model
    ci_models = ["lifecycle-ci-solo"]                # optional: the CI gate's models ...
    ci_sample = 8                                    # ... and its smaller sample

The CI gate (``ostrom mutate --suite SPEC --ci --check``, run by ``make test``) is a
smaller sample on the suite's cheap models only, so that a spec or model change that
lowers the score fails CI within minutes; the full suite sample is ``make mutate``'s.

The scores measured are written by ``ostrom mutate --suite SPEC --record`` into
``models/mutation/scores.json`` (one source: nothing else states them), and ``--check``
fails when a run scores below the recorded figure.  The sample is drawn from the
mutants in scope with a seeded generator and TLC is deterministic for a model, so the
same tree gives the same score: a drop is a change of the spec or its models, never
noise.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ostrom import layout

__all__ = ["KINDS", "SCORES_PATH", "SUITES_DIR", "Suite", "SuiteError", "load_scores",
           "load_suite", "record_score", "scores_table", "suites"]  # fmt: skip

SUITES_DIR = layout.MODELS_DIR / "mutation"
SCORES_PATH = SUITES_DIR / "scores.json"
_FIELDS = {"models": list, "sample": int, "seed": int, "timeout": int}
_OPTIONAL = {"ci_models": list, "ci_sample": int}
#: the kinds of run a score is recorded for: the CI gate, the suite's sample, every mutant
KINDS = ("ci", "sample", "full")


class SuiteError(ValueError):
    """The suite or the scores file cannot be read; the message names the file and key."""


@dataclass(frozen=True)
class Suite:
    spec: str
    models: tuple[str, ...]
    sample: int
    seed: int
    timeout: int
    #: the CI gate (both empty when the suite has none)
    ci_models: tuple[str, ...] = ()
    ci_sample: int = 0


def suites(directory: Path | None = None) -> list[str]:
    """The specs that have a suite, in name order."""
    out = []
    for path in sorted((directory or SUITES_DIR).glob("*.toml")):
        try:
            if "suite" in tomllib.loads(path.read_text(encoding="utf-8")):
                out.append(path.stem)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SuiteError(f"{path}: {exc}") from None
    return out


def load_suite(spec: str, directory: Path | None = None) -> Suite:
    """The ``[suite]`` of ``spec``; SuiteError if it has none or it is malformed."""
    path = (directory or SUITES_DIR) / f"{spec}.toml"
    if not path.exists():
        raise SuiteError(f"no suite for {spec}: {path.name} does not exist in models/mutation")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SuiteError(f"{path}: {exc}") from None
    table = doc.get("suite")
    if not isinstance(table, dict):
        raise SuiteError(f"{path}: no [suite] table")
    unknown = sorted(set(table) - set(_FIELDS) - set(_OPTIONAL))
    if unknown:
        raise SuiteError(f"{path}: [suite] has an unknown key {unknown[0]!r}")
    # the required fields, and the optional ones when present, with the same type check
    for key, kind in [*_FIELDS.items(), *((k, v) for k, v in _OPTIONAL.items() if k in table)]:
        value = table.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise SuiteError(
                f"{path}: [suite] {key} must be {'a list' if kind is list else 'an integer'}"
            )
    models = table["models"]
    if not models or not all(isinstance(m, str) and m for m in models):
        raise SuiteError(f"{path}: [suite] models must be a non-empty list of model names")
    if len(set(models)) != len(models):
        raise SuiteError(f"{path}: [suite] models names a model twice")
    if table["sample"] < 1 or table["seed"] < 0 or table["timeout"] < 1:
        raise SuiteError(f"{path}: [suite] sample and timeout must be positive, seed not negative")
    ci_models = table.get("ci_models", [])
    ci_sample = table.get("ci_sample", 0)
    if ("ci_models" in table) != ("ci_sample" in table):
        raise SuiteError(f"{path}: [suite] ci_models and ci_sample go together")
    if "ci_models" in table:
        if not ci_models or any(m not in models for m in ci_models):
            raise SuiteError(f"{path}: [suite] ci_models must be some of the suite's models")
        if len(set(ci_models)) != len(ci_models) or ci_sample < 1:
            raise SuiteError(f"{path}: [suite] ci_models names a model twice, or ci_sample < 1")
    return Suite(
        spec, tuple(models), table["sample"], table["seed"], table["timeout"],
        tuple(ci_models), ci_sample,
    )  # fmt: skip


def load_scores(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The recorded scores, by spec and then kind (:data:`KINDS`)."""
    path = path or SCORES_PATH
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SuiteError(f"{path}: {exc}") from None
    if not isinstance(doc, dict) or not all(
        isinstance(v, dict) and all(isinstance(r, dict) for r in v.values()) for v in doc.values()
    ):
        raise SuiteError(f"{path}: not an object of specs to runs")
    for spec, runs in doc.items():
        for kind, run in runs.items():
            if kind not in KINDS:
                raise SuiteError(f"{path}: {spec}: unknown kind {kind!r}")
            bad = _bad_run_field(run)
            if bad:
                raise SuiteError(f"{path}: {spec}: {kind}: {bad} is malformed")
    return doc


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


#: what a recorded run's fields must be, when present (what --record writes)
_RUN_FIELDS: dict[str, Any] = {
    "score": lambda x: x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)
                                     and x == x and abs(x) != float("inf")),
    "counts": lambda x: isinstance(x, dict) and all(_is_int(v) for v in x.values()),
    "models": lambda x: isinstance(x, list) and all(isinstance(m, str) for m in x),
    "survivors": lambda x: isinstance(x, list) and all(isinstance(m, str) for m in x),
    "sampled": _is_int,
    "generated": _is_int,
    "seed": lambda x: x is None or _is_int(x),
}  # fmt: skip


def _bad_run_field(run: dict[str, Any]) -> str | None:
    """The first field of a recorded run that is not what --record writes, if any."""
    for key, ok in _RUN_FIELDS.items():
        if key in run and not ok(run[key]):
            return key
    return None


def record_score(spec: str, kind: str, summary: dict[str, Any], path: Path | None = None) -> None:
    """Write ``summary`` as the recorded ``kind`` run (one of :data:`KINDS`) of ``spec``."""
    path = path or SCORES_PATH
    doc = load_scores(path)
    doc.setdefault(spec, {})[kind] = summary
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def scores_table(scores: dict[str, dict[str, Any]] | None = None) -> str:
    """The recorded scores as the Markdown table of docs/checking.md (generated block
    ``mutation-scores``, rewritten by ``ostrom docs``)."""
    scores = load_scores() if scores is None else scores
    out = [
        "| spec | run | models | mutants | killed | survived | timeout | invalid | "
        "equivalent | score | survivors |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for spec in sorted(scores):
        for kind in KINDS:
            run = scores[spec].get(kind)
            if run is None:
                continue
            c = run.get("counts", {})
            what = (
                f"{run.get('sampled')} of {run.get('generated')} (seed {run.get('seed')})"
                if kind != "full"
                else f"all {run.get('generated')}"
            )
            score = run.get("score")
            survivors = "<br>".join(f"`{s}`" for s in run.get("survivors", [])) or "—"
            out.append(
                f"| {spec} | {kind} | {', '.join(f'`{m}`' for m in run.get('models', []))} | "
                f"{what} | {c.get('killed', 0)} | {c.get('survived', 0)} | "
                f"{c.get('timeout', 0)} | {c.get('invalid', 0)} | {c.get('equivalent', 0)} | "
                f"{'n/a' if score is None else f'{score:.1%}'} | {survivors} |"
            )
    return "\n".join(out) + "\n"
