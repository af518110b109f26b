"""The kill matrix: every mutant of ``ostrom.conformance.mutants`` against the suite.

For each mutant (a reference driver with one deliberate bug, ``python -m ostrom.conformance.driver
--mutant NAME``):

* **conform** — the vectors of the mutant's layer are run through the driver protocol by
  ``runner.run_suite`` (exactly what ``ostrom conform --layer L -- python -m
  ostrom.conformance.driver --mutant NAME`` does): how many of them fail, and the first failing
  vector with its diverging step.  A mutant that fails no vector *survives*: the suite has a gap.
* **validate-trace** — for the layers with a trace spec (``lifecycle``, ``community``,
  ``sanctions``, ``pbft``): the mutant driver replays the first failing vectors with
  ``--log`` and each log is checked against the spec by ``ostrom validate-trace``; the
  mutant is killed if the spec rejects one of them (the first step the spec does not
  allow is reported).  The other layers have no trace spec: the column says ``n/a`` and
  why.

``python -m ostrom.conformance.killmatrix`` prints the matrix (``--markdown`` the table kept
in docs/conformance.md, ``--json`` the data); ``ostrom docs --slow`` writes the table into
docs/conformance.md (its generated block ``kill-matrix``);
``property_tests/conformance/test_kill_matrix.py`` runs it and fails if any mutant survives.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ostrom.conformance import DRIVER_PROTOCOL, LAYERS, runner
from ostrom.conformance.mutants import MUTANTS
from ostrom.conformance.vectors import Suite, Vector

__all__ = [
    "OUTSIDE_SPEC",
    "TRACED_LAYERS",
    "Row",
    "build",
    "driver_command",
    "markdown",
    "plain",
    "to_json",
    "trace_available",
    "write_logs",
]

#: Layers whose driver steps are checked by a trace spec (the driver's ``--log``):
#: spec/LifecycleTrace.tla, spec/CommunityTrace.tla, spec/SanctionsTrace.tla and
#: spec/PBFTReplicaTrace.tla (``trace.LAYER_TRACES`` names the module of each).
TRACED_LAYERS: Final = ("lifecycle", "community", "sanctions", "pbft")

#: Why validate-trace does not apply to a layer's mutants.
NOT_TRACED: Final[dict[str, str]] = {
    "voting": "pure functions with no state to trace; no TLA+ spec of their own (the "
    "lifecycle spec uses their results)",
    "reputation": "no TLA+ spec of the reputation layer (REP-1, REP-2 are Z3 theorems and "
    "Hypothesis checks)",
    "forgetting": "a stateless decision function: no trace (FG-1 is a Z3 theorem)",
}

#: Mutants of the traced layers whose bug the trace specs cannot see, and why: the spec
#: accepts their logs (as it accepts the reference's), by construction.  The test
#: requires exactly these to be accepted, so the list cannot go stale silently.  Empty:
#: spec/LifecycleTrace.tla checks the rate limits, spec/CommunityTrace.tla derives the
#: community's registry (join, spec/Sanctions.tla, the tier rule).
OUTSIDE_SPEC: Final[dict[str, str]] = {}

TraceStatus = Literal["rejected", "refused", "outside", "accepted", "n/a", "unavailable", "error"]


@dataclass
class ConformCell:
    """What ``conform`` did to one mutant."""

    failed: int
    ran: int
    first: str | None = None  # the first failing vector's id
    step: int | None = None  # its diverging step (0-based, as conform prints it; None: reset)
    steps: int = 0  # the vector's number of steps
    failing: list[str] = field(default_factory=list)  # every failing vector, in run order
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        return self.failed > 0


@dataclass
class TraceCell:
    """What ``validate-trace`` did to one mutant's logs."""

    status: TraceStatus
    detail: str = ""
    log: str | None = None  # the vector whose log was rejected
    step: int | None = None  # the first logged step the spec does not allow (0-based)
    steps: int | None = None  # steps in that log
    logs: int = 0  # logs checked
    seconds: float = 0.0

    @property
    def killed(self) -> bool:
        return self.status in ("rejected", "refused")


@dataclass
class Row:
    name: str
    layer: str
    description: str
    conform: ConformCell
    trace: TraceCell

    @property
    def survives(self) -> bool:
        """Not caught: no vector failed, or (where a trace check applies and is available)
        no log was rejected."""
        return not self.conform.killed or self.trace.status in ("accepted", "error")


# --------------------------------------------------------------------------- conform


def driver_command(name: str) -> list[str]:
    """The command that starts the mutant's driver."""
    return [sys.executable, "-m", "ostrom.conformance.driver", "--mutant", name]


def conform_mutant(name: str, suite: Suite, *, timeout: float = 30.0) -> ConformCell:
    """Run the vectors of the mutant's layer against its driver (``runner.run_suite``)."""
    layer = MUTANTS[name].layer
    report = runner.run_suite(suite, driver_command(name), layers=[layer], timeout=timeout)
    failing = [r for r in report.results if r.failing]
    cell = ConformCell(
        failed=len(failing),
        ran=report.ran,
        failing=[r.vector.id for r in failing],
        seconds=report.seconds,
    )
    if failing:
        first = failing[0]
        cell.first, cell.step, cell.steps = first.vector.id, first.step, len(first.vector.steps)
    return cell


# --------------------------------------------------------------------------- validate-trace


def trace_available() -> bool:
    """Whether ``ostrom validate-trace`` (``ostrom.verify.trace.validate``) is in this tree."""
    return importlib.util.find_spec("ostrom.verify.trace.validate") is not None


def session(vectors: Iterable[Vector]) -> str:
    """The driver-protocol lines that replay ``vectors`` (all their steps), one reset each."""
    lines = [json.dumps({"type": "hello", "protocol": DRIVER_PROTOCOL})]
    for v in vectors:
        reset = {"type": "reset", "layer": v.layer, "params": v.doc["params"]}
        reset["setup"] = v.doc["setup"]
        lines.append(json.dumps(reset))
        lines += [json.dumps({"type": "step", "command": s["command"]}) for s in v.steps]
    lines.append(json.dumps({"type": "bye"}))
    return "\n".join(lines) + "\n"


def write_logs(name: str | None, vectors: Sequence[Vector], out: Path) -> list[Path]:
    """Run the driver (the mutant ``name``, or the reference for None) with ``--log`` over
    ``vectors``; the log file of each vector, in order."""
    command = (
        [sys.executable, "-m", "ostrom.conformance.driver"]
        if name is None
        else driver_command(name)
    )
    log = out / f"{name or 'reference'}.jsonl"
    subprocess.run(
        [*command, "--log", str(log)],
        input=session(vectors),
        text=True,
        capture_output=True,
        check=True,
        timeout=120,
    )
    later = (log.with_name(f"{log.stem}.{k}{log.suffix}") for k in range(2, 1 + len(vectors)))
    return [p for p in (log, *later) if p.exists()]


@dataclass
class _TraceJob:
    """One mutant's part of its layer's validate-trace run: the vectors it replays, its
    logs and the reference's logs of the same vectors (the control)."""

    name: str
    chosen: list[Vector]
    paths: list[Path]
    controls: list[Path]


def trace_mutant(
    name: str,
    suite: Suite,
    conform: ConformCell,
    *,
    max_logs: int = 3,
    timeout: float = 120.0,
) -> TraceCell:
    """Validate the mutant's logs of the first ``max_logs`` vectors ``conform`` found
    failing (they exercise the bug), next to the reference's logs of the same vectors (the
    control: the spec must accept those, or the vector says nothing about the mutant)."""
    return trace_mutants([(name, conform)], suite, max_logs=max_logs, timeout=timeout)[name]


def trace_mutants(
    cells: Sequence[tuple[str, ConformCell]],
    suite: Suite,
    *,
    max_logs: int = 3,
    timeout: float = 120.0,
) -> dict[str, TraceCell]:
    """``trace_mutant`` for many mutants, with one validate-trace run per layer: each TLC run
    pays a JVM start and a parse of the trace spec, which cost more than checking a few
    short logs, so the logs of every mutant of a layer (and their controls) are validated
    together.  A log's verdict does not depend on the others of its batch."""
    from ostrom.verify.trace.log import UnusableLog

    out: dict[str, TraceCell] = {}
    jobs: dict[str, list[_TraceJob]] = {}
    with tempfile.TemporaryDirectory(prefix="ostrom-killmatrix-") as tmp:
        for name, conform in cells:
            layer = MUTANTS[name].layer
            if layer not in TRACED_LAYERS:
                out[name] = TraceCell("n/a", NOT_TRACED.get(layer, "no trace spec for this layer"))
                continue
            if not trace_available():
                out[name] = TraceCell(
                    "unavailable", "ostrom validate-trace is not in this tree yet"
                )
                continue
            by_id = {v.id: v for v in suite.vectors}
            chosen = [by_id[i] for i in conform.failing[:max_logs]]
            if not chosen:
                out[name] = TraceCell("accepted", "no failing vector to log")
                continue
            where = Path(tmp) / name
            where.mkdir()
            try:
                paths = write_logs(name, chosen, where)
                controls = write_logs(None, chosen, where)
            except (subprocess.SubprocessError, OSError, ValueError, KeyError, UnusableLog) as exc:
                out[name] = TraceCell("error", f"cannot build the logs: {exc}")
                continue
            jobs.setdefault(layer, []).append(_TraceJob(name, chosen, paths, controls))
        with ThreadPoolExecutor(max_workers=2) as pool:  # two TLC runs at a time
            for cells_of_layer in pool.map(
                lambda item: _validate_batch(item[0], item[1], timeout), jobs.items()
            ):
                out.update(cells_of_layer)
    return out


def _validate_batch(layer: str, batch: Sequence[_TraceJob], timeout: float) -> dict[str, TraceCell]:
    """One validate-trace run over the logs of ``batch`` (one layer); a cell per mutant, each
    charged an equal share of the run's time."""
    from ostrom.verify.trace.validate import LAYER_TRACES

    validate_paths = importlib.import_module(LAYER_TRACES[layer]).validate_paths
    t0 = time.monotonic()
    verdicts = validate_paths([p for j in batch for p in (*j.paths, *j.controls)], timeout=timeout)
    seconds = (time.monotonic() - t0) / len(batch)
    out: dict[str, TraceCell] = {}
    k = 0
    for job in batch:
        n, m = len(job.paths), len(job.controls)
        mine, ref = verdicts[k : k + n], verdicts[k + n : k + n + m]
        k += n + m
        out[job.name] = _trace_cell(job, mine, ref, seconds)
    return out


def _trace_cell(
    job: _TraceJob, mine: Sequence[Any], ref: Sequence[Any], seconds: float
) -> TraceCell:
    """The mutant's cell from the verdicts on its logs and on the reference's."""
    name, chosen, n = job.name, job.chosen, len(job.paths)
    if len(ref) != n or n != len(chosen):
        return TraceCell("error", f"{n} mutant logs, {len(ref)} reference logs", seconds=seconds)
    notes: list[str] = []
    for k, (vector, m, r) in enumerate(zip(chosen, mine, ref, strict=True), 1):
        if r.status != "accepted":
            notes.append(f"{vector.id}: the reference's log is {r.status} ({r.message})")
            continue
        if m.status == "rejected" and m.failure is not None:
            return TraceCell(
                "rejected",
                m.failure.message,
                log=vector.id,
                step=m.failure.line - 2,  # the logged step (the line after the header)
                steps=len(vector.steps),
                logs=k,
                seconds=seconds,
            )
        if m.status == "unusable":  # not even a public state: refused, exit status 2
            line = re.search(r"\.jsonl:(\d+):", m.message)
            return TraceCell(
                "refused",
                m.message.split(": ", 1)[-1],
                log=vector.id,
                step=int(line.group(1)) - 2 if line else None,
                steps=len(vector.steps),
                logs=k,
                seconds=seconds,
            )
        if m.status != "accepted":
            notes.append(f"{vector.id}: {m.status}: {m.message}")
    if any(v.status == "error" for v in (*mine, *ref)):
        return TraceCell("error", "; ".join(notes), logs=n, seconds=seconds)
    accepted = n - len(notes)
    detail = f"the spec accepts {accepted} of {n} logs" + (f"; {'; '.join(notes)}" if notes else "")
    if name in OUTSIDE_SPEC and accepted == n:
        return TraceCell("outside", f"{OUTSIDE_SPEC[name]} ({detail})", logs=n, seconds=seconds)
    return TraceCell("accepted", detail, logs=n, seconds=seconds)


# --------------------------------------------------------------------------- the matrix


def build(
    names: Sequence[str] | None = None,
    *,
    suite: Suite | None = None,
    trace: bool = True,
    max_logs: int = 3,
    jobs: int = 2,
) -> list[Row]:
    """The kill matrix of ``names`` (default: every mutant), in registration order."""
    names = list(MUTANTS) if names is None else list(names)
    suite = runner.load_suite(runner.default_vectors_dir()) if suite is None else suite

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        conforms = list(pool.map(lambda name: conform_mutant(name, suite), names))
    if trace:
        traces = trace_mutants(list(zip(names, conforms, strict=True)), suite, max_logs=max_logs)
    else:
        traces = {
            name: TraceCell("unavailable", "--no-trace")
            if MUTANTS[name].layer in TRACED_LAYERS
            else TraceCell("n/a", NOT_TRACED.get(MUTANTS[name].layer, ""))
            for name in names
        }
    return [
        Row(name, MUTANTS[name].layer, MUTANTS[name].description, cell, traces[name])
        for name, cell in zip(names, conforms, strict=True)
    ]


def conform_text(c: ConformCell) -> str:
    return f"{c.failed}/{c.ran}"


def first_text(c: ConformCell) -> str:
    if c.first is None:
        return "— (survives)"
    where = "at reset" if c.step is None else f"step {c.step} of {c.steps}"
    return f"`{c.first}` ({where})"


def trace_text(t: TraceCell, first: str | None = None) -> str:
    """The validate-trace cell; ``first`` is conform's first failing vector (named once)."""
    at = f"step {t.step} of {t.steps}" if t.step is not None else "a step"
    of = "the same vector" if t.log == first else f"`{t.log}`"
    if t.status == "rejected":
        return f"rejected at {at} of {of}"
    if t.status == "refused":
        return f"refused at {at} of {of}: not a public state"
    if t.status == "outside":
        return "accepted: outside spec/Lifecycle.tla (below)"
    if t.status == "n/a":
        return "n/a (below)"
    if t.status == "unavailable":
        return f"not run: {t.detail}"
    if t.status == "error":
        return f"error: {t.detail}"
    return f"**accepted** ({t.detail})"


def markdown(rows: Sequence[Row]) -> str:
    """The matrix as a Markdown table, with the reasons for n/a and outside under it."""
    out = [
        "| mutant | layer | the bug (property) | conform: vectors failed | first failing vector "
        "(diverging step) | validate-trace |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| `{r.name}` | {r.layer} | {r.description} | {conform_text(r.conform)} | "
            f"{first_text(r.conform)} | {trace_text(r.trace, r.conform.first)} |"
        )
    outside = [r for r in rows if r.trace.status == "outside"]
    if outside:
        out += ["", "validate-trace accepts the logs of these mutants (and the reference's):", ""]
        out += [f"- `{r.name}`: {OUTSIDE_SPEC[r.name]}." for r in outside]
    na = sorted({r.layer for r in rows if r.trace.status == "n/a"}, key=LAYERS.index)
    if na:
        out += ["", "validate-trace is n/a for the mutants of these layers:", ""]
        out += [f"- `{layer}`: {NOT_TRACED[layer]}." for layer in na]
    out += ["", summary(rows)]
    return "\n".join(out)


def summary(rows: Sequence[Row]) -> str:
    """One line: how many mutants each check kills."""
    conform = sum(r.conform.killed for r in rows)
    traced = [r for r in rows if r.layer in TRACED_LAYERS]
    trace = sum(r.trace.killed for r in traced)
    outside = sum(r.trace.status == "outside" for r in traced)
    pending = sum(r.trace.status == "unavailable" for r in traced)  # --no-trace, or no engine
    line = (
        f"conform kills {conform} of {len(rows)} mutants; validate-trace kills {trace} of the "
        f"{len(traced)} mutants of the layers with a trace spec ({', '.join(TRACED_LAYERS)})"
    )
    if outside:
        line += f" ({outside} are outside their spec)"
    if pending:
        line += f" ({pending} not run)"
    return line + "."


def plain(rows: Sequence[Row]) -> str:
    """The matrix for a terminal (or a test's output)."""
    w = max(len(r.name) for r in rows)
    lines = [f"{'mutant':<{w}}  {'conform':>8}  first failing vector / validate-trace"]
    for r in rows:
        mark = "SURVIVES" if r.survives else "killed"
        lines.append(
            f"{r.name:<{w}}  {conform_text(r.conform):>8}  {first_text(r.conform)}  [{mark}]"
        )
        trace = trace_text(r.trace, r.conform.first)
        lines.append(f"{'':<{w}}  {'':>8}  validate-trace: {trace}")
    lines.append(summary(rows))
    return "\n".join(lines)


def to_json(rows: Sequence[Row]) -> dict[str, Any]:
    return {
        "format": "ostrom-kill-matrix/1",
        "mutants": [
            {
                "name": r.name,
                "layer": r.layer,
                "description": r.description,
                "killed": not r.survives,
                "conform": asdict(r.conform),
                "validate_trace": asdict(r.trace),
            }
            for r in rows
        ],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ostrom.conformance.killmatrix",
        description="Run every mutant driver through ostrom conform (and validate-trace) "
        "and print the kill matrix; exit 1 if a mutant survives.",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--markdown", action="store_true", help="print the Markdown table")
    out.add_argument("--json", action="store_true", help="print the matrix as JSON")
    parser.add_argument("--mutant", action="append", metavar="NAME", help="only these mutants")
    parser.add_argument("--no-trace", action="store_true", help="skip validate-trace")
    parser.add_argument(
        "--max-logs", type=int, default=3, help="logs validated per mutant (default 3)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (2)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.mutant or () if n not in MUTANTS]
    if unknown:
        parser.error(f"unknown mutant(s) {', '.join(unknown)}")
    rows = build(args.mutant, trace=not args.no_trace, max_logs=args.max_logs, jobs=args.jobs)
    if args.json:
        print(json.dumps(to_json(rows), indent=2))
    elif args.markdown:
        print(markdown(rows))
    else:
        print(plain(rows))
    return 1 if any(r.survives for r in rows) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
