"""The recorded code-mutation scores: what ``--check`` guards and docs/checking.md shows.

``models/mutation/code/scores.json`` holds, per target, the last recorded run of each
kind: ``sample`` (make test's gate: the target's seeded sample on its ``ci_tests``),
``estimate`` (a larger seeded sample on all its tests, where the full run takes longer
than anyone has yet given it) and ``full`` (every mutant on all its tests, ``make
mutate-code``).  It is written only by
``ostrom mutate-code --record``; ``--check`` fails when a run of the same kind scores
below the recorded figure, and the docs' table is rendered from it by ``ostrom docs``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ostrom.verify.codemutation.target import TARGETS_DIR

__all__ = ["KINDS", "SCORES_PATH", "ScoresError", "load_scores", "record_score", "scores_table"]

SCORES_PATH = TARGETS_DIR / "scores.json"
KINDS = ("sample", "estimate", "full")


class ScoresError(ValueError):
    """The scores file cannot be read; the message names the file, target and kind."""


def _is_score(x: Any) -> bool:
    return x is None or (isinstance(x, int | float) and not isinstance(x, bool) and 0 <= x <= 1)


def load_scores(path: Path | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """The recorded runs, by target and kind; ``{}`` when nothing is recorded."""
    path = path or SCORES_PATH
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScoresError(f"{path}: {exc}") from None
    if not isinstance(doc, dict):
        raise ScoresError(f"{path}: not an object of targets")
    for name, runs in doc.items():
        if not isinstance(runs, dict):
            raise ScoresError(f"{path}: {name}: not an object of runs")
        for kind, run in runs.items():
            if kind not in KINDS:
                raise ScoresError(f"{path}: {name}: unknown kind {kind!r}")
            if not isinstance(run, dict) or not _is_score(run.get("score")):
                raise ScoresError(f"{path}: {name}: {kind}: score is malformed")
            for key in ("generated", "sampled"):
                value = run.get(key)
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ScoresError(f"{path}: {name}: {kind}: {key} is malformed")
    return doc


def record_score(name: str, kind: str, summary: dict[str, Any], path: Path | None = None) -> None:
    """Write ``summary`` as the recorded ``kind`` run of target ``name``."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    path = path or SCORES_PATH
    doc = load_scores(path)
    doc.setdefault(name, {})[kind] = summary
    # UTF-8 as written, not \u escapes: a survivor's change is source code (reputation.py's
    # comments have α and β), and a record must not re-encode the other targets' lines
    text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")


def scores_table(scores: dict[str, dict[str, dict[str, Any]]] | None = None) -> str:
    """The recorded runs as the Markdown table of docs/checking.md (generated block
    ``code-mutation-scores``)."""
    scores = load_scores() if scores is None else scores
    out = [
        "| module | run | mutants | killed | survived | no tests | timeout | error | "
        "equivalent | score | time (2 cores) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted(scores):
        for kind in KINDS:
            run = scores[name].get(kind)
            if run is None:
                continue
            c = run.get("counts", {})
            score = run.get("score")
            what = (
                f"all {run['generated']}"
                if kind == "full"
                else f"{run['sampled']} of {run['generated']} (seed {run.get('seed')})"
            )
            if kind == "estimate" and score is not None:
                low, high = wilson(score, run["sampled"] - c.get("equivalent", 0))
                what += f", 95% interval {low:.1%}–{high:.1%}"
            if "note" in run:
                # A run kept across a refactoring says on what it was measured.
                what += f"; {run['note']}"
            out.append(
                f"| `{run.get('source', name)}` | {kind} | {what} | {c.get('killed', 0)} | "
                f"{c.get('survived', 0)} | {c.get('no_tests', 0)} | {c.get('timeout', 0)} | "
                f"{c.get('error', 0)} | {c.get('equivalent', 0)} | "
                f"{'n/a' if score is None else f'{score:.1%}'} | {run.get('seconds', '?')} s |"
            )
    return "\n".join(out) + "\n"


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` measured on ``n`` mutants (95%):
    what a sampled score says about the full run's."""
    if n <= 0:
        return 0.0, 1.0
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)
