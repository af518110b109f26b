"""What a code-mutation run found: each mutant's verdict, where it is, and the score.

mutmut reports a status per mutant; ostrom folds them into five verdicts:

``killed``      a test failed (or errored) with the mutant in place;
``survived``    every test that reaches the mutated function passed;
``no_tests``    no listed test reaches the mutated function at all (a survivor too: nothing
                would notice the change);
``timeout``     the tests ran past mutmut's CPU limit ((their unmutated time + the target's
                ``timeout_constant``) x ``timeout_multiplier`` x 2 seconds): the mutant
                made them hang (``now += 1`` turned into ``now = 1`` in a loop), which
                would stop CI, so it counts as detected;
``error``       mutmut could not tell (a crash of the worker, an interrupted run).

and ``equivalent`` for a survivor a person accepted in the target file, with a reason.

The score is (killed + timeout) / (mutants run - accepted equivalent); no_tests and
errors count against it (a verdict nobody could read is not a kill).  Spec mutation
(verify/mutate/run.py) counts a timeout against its score instead: there it means that TLC
did not finish a larger state space, which is no caught mistake; here it means the tests
never finish, which CI would not let through.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ostrom.verify.codemutation.target import Equivalent, Target

__all__ = [
    "VERDICTS",
    "MutantResult",
    "TargetReport",
    "change_of",
    "line_of",
    "verdict_of",
]

VERDICTS = ("killed", "survived", "no_tests", "timeout", "error", "equivalent")
#: the verdicts that detect the mutant
DETECTED = ("killed", "timeout")
#: the verdicts that do not (what a person looks at)
NOT_KILLED = ("survived", "no_tests", "error")

_BY_STATUS = {
    "killed": "killed",
    "caught by type check": "killed",
    "survived": "survived",
    "no tests": "no_tests",
    "timeout": "timeout",
}
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
#: mutmut's names: ``x_f__mutmut_3`` for a function ``f``, ``xǁCǁm__mutmut_3`` for ``C.m``
_NAME = re.compile(r"^(?:xǁ(?P<cls>[^ǁ]+)ǁ|x_)(?P<fn>.+?)__mutmut_\d+$")


def verdict_of(status: str) -> str:
    """ostrom's verdict for mutmut's status (see the module docstring)."""
    return _BY_STATUS.get(status, "error")


def _changed_lines(diff: str) -> tuple[int | None, str, str]:
    """The first hunk's first removed line (its index in the function) and the texts of
    the first removed and first added line, stripped."""
    start: int | None = None
    index = 0
    old = new = ""
    for line in diff.splitlines():
        m = _HUNK.match(line)
        if m:
            if start is None:
                start = int(m.group(1))
                index = 0
            continue
        if line.startswith(("---", "+++")) or start is None:
            continue
        if line.startswith("-") and not old:
            old = line[1:].strip()
            start += index
        elif line.startswith("+") and not new:
            new = line[1:].strip()
        elif not old:
            index += 1
        if old and new:
            break
    return start, old, new


def change_of(diff: str) -> str:
    """A one-line description of the edit: ``old line -> new line`` (stripped)."""
    _, old, new = _changed_lines(diff)
    return f"{old} -> {new}"


def _function_span(tree: ast.Module, mutant_id: str) -> tuple[int, int] | None:
    """The first and last line of the function a mutant was made from (decorators in)."""
    short = mutant_id.rpartition(".")[2]
    m = _NAME.match(short)
    if not m:
        return None
    cls, fn = m.group("cls"), m.group("fn")
    scope: list[ast.stmt] = tree.body
    if cls:
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == cls:
                scope = node.body
                break
        else:
            return None
    for node in scope:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == fn:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return first, node.end_lineno or node.lineno
    return None


def line_of(source: str, mutant_id: str, diff: str) -> int | None:
    """The line of ``source`` (the unmutated file) that the mutant changes.

    The diff is of the function alone, so its line numbers are relative to the function;
    the line is the one inside the function's span whose text is the removed line,
    nearest to where the diff puts it.
    """
    start, old, _ = _changed_lines(diff)
    if start is None or not old:
        return None
    span = _function_span(ast.parse(source), mutant_id)
    if span is None:
        return None
    lines = source.splitlines()
    expected = span[0] + start - 1
    hits = [n for n in range(span[0], span[1] + 1) if lines[n - 1].strip() == old]
    if not hits:
        return None
    return min(hits, key=lambda n: abs(n - expected))


@dataclass(frozen=True)
class MutantResult:
    """One mutant: mutmut's name, status and diff, with ostrom's verdict and location
    (``file`` under reference/ostrom, ``line`` in it)."""

    id: str
    status: str
    verdict: str
    line: int | None
    change: str
    diff: str
    seconds: float | None = None
    reason: str | None = None
    file: str = ""

    def as_json(self, source: str) -> dict[str, Any]:
        """The mutant as the JSON report lists it (``source``: the target's, where the
        mutant names no file of its own)."""
        return {
            "id": self.id,
            "file": f"reference/ostrom/{self.file or source}",
            "line": self.line,
            "change": self.change,
            "verdict": self.verdict,
            "status": self.status,
            "seconds": self.seconds,
            "reason": self.reason,
            "diff": self.diff,
        }


@dataclass
class TargetReport:
    """A run of one target: what was generated, what was run, and every verdict."""

    target: Target
    generated: int
    seed: int | None
    results: list[MutantResult]
    seconds: float
    #: accepted equivalents whose id now names another edit (or no mutant at all)
    stale: list[str] = field(default_factory=list)
    #: ``full`` (every mutant), ``sample`` (the gate's seeded sample, or mutants named one
    #: by one) or ``estimate`` (a seeded sample on all the target's tests)
    kind: str = "full"

    @property
    def sampled(self) -> int:
        return len(self.results)

    def count(self, verdict: str) -> int:
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(r.verdict for r in self.results)
        return {v: c.get(v, 0) for v in VERDICTS}

    @property
    def score(self) -> float | None:
        """(killed + timeout) / (run - accepted equivalent); None when nothing counts."""
        denominator = self.sampled - self.count("equivalent")
        detected = sum(self.count(v) for v in DETECTED)
        return detected / denominator if denominator else None

    @property
    def survivors(self) -> list[MutantResult]:
        return [r for r in self.results if r.verdict in NOT_KILLED]

    def location(self, r: MutantResult) -> str:
        """Where ``r`` is, as the summary and the survivor table say it: its line, and in a
        package its file too, relative to the package (``normal.py:123``)."""
        line = "?" if r.line is None else str(r.line)
        if not self.target.is_package:
            return line
        return f"{r.file.removeprefix(self.target.source) or '?'}:{line}"

    def summary(self) -> dict[str, Any]:
        """What ``--record`` keeps in models/mutation/code/scores.json."""
        return {
            "source": f"reference/ostrom/{self.target.source}",
            "generated": self.generated,
            "sampled": self.sampled,
            "seed": self.seed,
            "counts": self.counts,
            "score": None if self.score is None else round(self.score, 4),
            "seconds": round(self.seconds),
            "survivors": [f"{self.location(r)}: {r.change} ({r.verdict})" for r in self.survivors],
        }

    def as_json(self) -> dict[str, Any]:
        """The whole run, as ``--out`` writes it: the survivors first, then every mutant."""
        t = self.target
        return {
            "target": t.name,
            "source": f"reference/ostrom/{t.source}",
            "tests": list(t.tests),
            "kind": self.kind,
            "goal": t.goal,
            **self.summary(),
            "stale_equivalents": self.stale,
            "survivors": [r.as_json(t.source) for r in self.survivors],
            "mutants": [r.as_json(t.source) for r in self.results],
        }


def file_of_mutant(target: Target, mutant_id: str) -> str | None:
    """The file of ``target`` a mutant was made in, from the module part of its id (a
    single-file target's mutants are all its file's)."""
    found = target.file_of(mutant_id.rpartition(".")[0])
    if found is None and len(target.files) == 1:
        return target.files[0]
    return found


def classify(
    target: Target,
    sources: Mapping[str, str],
    raw: list[dict[str, Any]],
    run: set[str] | None = None,
) -> tuple[list[MutantResult], list[str]]:
    """mutmut's report (mutmut_driver.py's ``report``: every mutant of the target's files)
    as the results of the mutants ``run`` (all by default), with the target's accepted
    equivalents applied; also the accepted equivalents that are stale.  ``sources`` maps
    each file of the target (under reference/ostrom) to its unmutated text, where each
    mutant's line is found."""
    accepted: dict[str, Equivalent] = {e.id: e for e in target.equivalents}
    by_id = {str(r["id"]): r for r in raw}
    stale = [
        f"{e.id}: no such mutant" if e.id not in by_id
        else f"{e.id}: now {change_of(str(by_id[e.id]['diff']))!r}, accepted {e.change!r}"
        for e in target.equivalents
        if e.id not in by_id or change_of(str(by_id[e.id]["diff"])) != e.change
    ]  # fmt: skip
    stale_ids = {s.partition(":")[0] for s in stale}
    results: list[MutantResult] = []
    for r in raw:
        if run is not None and r["id"] not in run:
            continue
        mid, status, diff = str(r["id"]), str(r["status"]), str(r["diff"])
        verdict = verdict_of(status)
        reason = None
        eq = accepted.get(mid)
        if eq is not None and mid not in stale_ids and verdict in NOT_KILLED:
            verdict, reason = "equivalent", eq.reason
        seconds = r.get("seconds")
        file = file_of_mutant(target, mid)
        source = None if file is None else sources.get(file)
        results.append(
            MutantResult(
                id=mid,
                status=status,
                verdict=verdict,
                line=None if source is None else line_of(source, mid, diff),
                change=change_of(diff),
                diff=diff,
                seconds=float(seconds) if isinstance(seconds, int | float) else None,
                reason=reason,
                file=file or "",
            )
        )
    return results, stale
