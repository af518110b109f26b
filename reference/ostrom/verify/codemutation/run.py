"""Run mutmut over one target and read back what it found.

A run builds the target's workspace (workspace.py), and then either runs every mutant of
the target's file (the full run of ``make mutate-code``) or a seeded sample of them (the
gate of ``make test``): mutmut's ``generate`` step lists the mutants, ``random.Random(seed)``
draws the sample from the sorted names, and ``mutmut run NAME...`` tests just those.
mutmut first runs the target's tests once to learn which test reaches which function
(its per-test "stats"), then runs, for each mutant, only the tests that reach the mutated
function, stopping at the first failure, on ``jobs`` forked workers.

A full run interrupted (a machine shut down, a session over) may be resumed on the same
tree (workspace.py): mutmut skips the mutants it already has a verdict for, and the
report's time is the sum of the parts (kept in the workspace as each part goes on).

Each mutant's tests run in the Hypothesis profile ``ci`` (derandomized), so the same tree
gives the same verdicts: a lower score is a change of the code or the tests, not noise.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ostrom import children, layout
from ostrom.verify.codemutation.report import TargetReport, classify
from ostrom.verify.codemutation.target import Target
from ostrom.verify.codemutation.workspace import WORKSPACE_ROOT, build_workspace

__all__ = ["CodeMutationError", "NoSuchMutant", "mutant_ids", "run_target", "sample_of"]

_DRIVER = Path(__file__).with_name("mutmut_driver.py")
#: Seconds spent by the earlier parts of a resumed run, in its workspace.
_ELAPSED = ".ostrom-elapsed"
_PROGRESS = re.compile(r"(\d+)/\d+\s+🎉")


class CodeMutationError(RuntimeError):
    """mutmut could not run the target (its unmutated tests failed, say); the message
    holds the end of mutmut's output."""


class NoSuchMutant(ValueError):
    """``only`` names a mutant the target's module does not have (bad input)."""


def sample_of(names: list[str], size: int, seed: int) -> list[str]:
    """``size`` of ``names`` drawn with ``seed`` (all of them when there are fewer)."""
    ordered = sorted(names)
    if size >= len(ordered):
        return ordered
    return sorted(random.Random(seed).sample(ordered, size))


def mutant_ids(target: Target, names: list[str], only: list[str]) -> set[str]:
    """The mutants of ``names`` (mutmut's full ids) that ``only`` names: a full id, one
    relative to the target's module or package (``normal.xǁNormalCaseǁ_body__mutmut_1``), or
    the last part alone as the survivor table prints it, if exactly one module has it.
    ``NoSuchMutant`` for one that names none, or several."""
    known = set(names)
    by_short: dict[str, list[str]] = {}
    for n in names:
        by_short.setdefault(n.rpartition(".")[2], []).append(n)
    out: set[str] = set()
    for o in only:
        if o in known:
            out.add(o)
        elif f"{target.module}.{o}" in known:
            out.add(f"{target.module}.{o}")
        elif len(by_short.get(o, [])) == 1:
            out.add(by_short[o][0])
        else:
            what = "several mutants" if by_short.get(o) else "no mutant"
            raise NoSuchMutant(
                f"{target.name} has {what} {o!r} (the JSON report lists their full ids)"
            )
    return out


def _driver(work: Path, command: str) -> Any:
    proc = subprocess.run(
        [sys.executable, str(_DRIVER), command],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise CodeMutationError(f"mutmut {command} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


def _mutmut_run(
    work: Path,
    names: list[str],
    jobs: int,
    progress: Callable[[str], None],
    label: str,
    total: int,
    resumed: bool = False,
    on_verdict: Callable[[], None] = lambda: None,
) -> None:
    """``mutmut run`` in ``work``, its spinner turned into a progress line every 10% of
    the ``total`` mutants run (text mode reads mutmut's carriage returns as line ends),
    and ``on_verdict`` called each time its counter moves (the time of a run interrupted
    between two progress lines is kept up to its last verdict).

    mutmut's counter counts the mutants it has a verdict for, those of the file it did
    not run (a sample's others) included; the progress line counts from where it starts,
    or, ``resumed``, from zero (a resumed full run's earlier verdicts are its own).
    """
    cmd = [sys.executable, "-m", "mutmut", "run", "--max-children", str(jobs), *names]
    tail: list[str] = []
    shown = -1
    first: int | None = None
    last: int | None = None
    proc = children.spawn(
        cmd,
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    try:
        assert proc.stdout is not None
        buffer = ""
        while chunk := proc.stdout.read(256):
            buffer += chunk
            *parts, buffer = buffer.split("\n")
            for part in parts:
                if not part.strip():
                    continue
                tail = [*tail[-40:], part]
                m = _PROGRESS.search(part)
                if m:
                    done = int(m.group(1))
                    first = (0 if resumed else done) if first is None else first
                    if done != last:
                        last = done
                        on_verdict()
                    ran = min(done - first, total)
                    tenth = ran * 10 // max(total, 1)
                    if tenth > shown:
                        shown = tenth
                        progress(f"{label}: {ran}/{total} mutants tested")
                elif part.startswith(("Running", "Generating", "Failed", "Stopping")):
                    progress(f"{label}: {part.strip(' ⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏')}")
        code = proc.wait()
    finally:
        children.stop(proc, grace=1.0)
    if code != 0:
        raise CodeMutationError(
            f"mutmut run failed for {label} (exit {code}):\n" + "\n".join(tail[-25:])
        )


def run_target(
    target: Target,
    *,
    sample: int | None = None,
    seed: int | None = None,
    jobs: int = 2,
    progress: Callable[[str], None] = lambda _: None,
    workspace_root: Path | None = None,
    only: list[str] | None = None,
    kind: str | None = None,
    resume: bool = False,
) -> TargetReport:
    """Run the target's mutants (all, or ``sample`` drawn with ``seed``) and report.

    ``sample`` and ``seed`` default to none (the full run); the gate passes the target's
    own ``sample`` and ``seed``.  ``kind`` names the run (``full``, ``sample`` for the gate,
    ``estimate`` for a sample on all the tests; by default ``full`` or ``sample``) and its
    workspace, ``<workspace_root>/<kind>/<target>``, so runs of different kinds of one
    target can go on at once.
    ``only`` names the mutants to run instead (ids as the report prints them, or the part
    after the module's dot); it is a sample of its own (kind ``sample``, seed none).
    ``resume`` continues an interrupted full run (workspace.py says when it may);
    ``WorkspaceChanged`` when it may not.
    """
    started = time.monotonic()
    kind = kind or ("full" if sample is None and only is None else "sample")
    if resume and kind != "full":
        raise ValueError("only a full run is resumed")
    root = (workspace_root or WORKSPACE_ROOT) / kind
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root / f"{target.name}.lock", target.name, kind):
        report = _run_locked(target, root, sample, seed, jobs, progress, started, only, resume)
    report.kind = kind
    return report


@contextlib.contextmanager
def _locked(path: Path, name: str, kind: str) -> Iterator[None]:
    """One run of a target and kind at a time: a second would rebuild the workspace
    under the first."""
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise CodeMutationError(
                f"another {kind} run of {name} is using {path.parent / name}"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_locked(
    target: Target,
    root: Path,
    sample: int | None,
    seed: int | None,
    jobs: int,
    progress: Callable[[str], None],
    started: float,
    only: list[str] | None,
    resume: bool,
) -> TargetReport:
    work = build_workspace(target, root=root, resume=resume)
    elapsed_file = work / _ELAPSED
    before = _earlier_seconds(elapsed_file) if resume else 0.0

    def spent() -> float:
        return before + time.monotonic() - started

    def keep_time() -> None:
        # Written aside and renamed, so a run killed mid-write leaves the last whole
        # figure, never an empty file read back as no time at all.
        partial = elapsed_file.with_name(_ELAPSED + ".part")
        partial.write_text(f"{spent():.1f}\n", encoding="utf-8")
        os.replace(partial, elapsed_file)

    def progress_and_time(line: str) -> None:
        keep_time()
        progress(line)

    label = target.name
    progress(f"{label}: generating the mutants of reference/ostrom/{target.source}")
    names = _driver(work, "generate")
    if not isinstance(names, list) or not names:
        raise CodeMutationError(f"mutmut made no mutants of reference/ostrom/{target.source}")
    if only is not None:
        chosen = sorted(mutant_ids(target, names, only))
    else:
        chosen = names if sample is None else sample_of(names, sample, seed or 0)
    everything = sample is None and only is None
    what = f"all {len(names)}" if everything else f"{len(chosen)} of {len(names)}"
    again = f", resumed after {before / 60:.0f} min" if resume else ""
    progress(
        f"{label}: testing {what} mutants with {len(target.tests)} test files, {jobs} jobs{again}"
    )
    _mutmut_run(
        work,
        [] if everything else chosen,
        jobs,
        progress_and_time,
        label,
        len(chosen),
        resume,
        on_verdict=keep_time,
    )
    progress_and_time(f"{label}: reading mutmut's verdicts")
    raw = _driver(work, "report")
    sources = {f: (layout.PACKAGE_DIR / f).read_text(encoding="utf-8") for f in target.files}
    results, stale = classify(target, sources, raw, set(chosen))
    return TargetReport(
        target=target,
        generated=len(names),
        seed=None if sample is None else (seed or 0),
        results=results,
        seconds=spent(),
        stale=stale,
    )


def _earlier_seconds(path: Path) -> float:
    """The time the earlier parts of a resumed run took (0 if none was written)."""
    try:
        value = float(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0.0
    return value if math.isfinite(value) and value >= 0.0 else 0.0
