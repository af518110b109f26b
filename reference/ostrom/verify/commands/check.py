"""The ``ostrom check`` and ``ostrom explain`` commands (named in ``cli/tools.py``, loaded by
the command group on first use).

Conventions (docs/cli.md): results on stdout (a table, or JSON with ``--json``), progress
on stderr; exit status 0 iff every row is what the manifest expects, 1 if a row is not
(a property failed, a witness holds, a mutant escaped, a count changed), 2 on bad input,
3 if TLC could not check a row (Java, a spec that does not parse, --timeout).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from ostrom import layout
from ostrom.cli.exits import BadInput, ExitCode, ToolError
from ostrom.cli.options import SECONDS
from ostrom.verify import registry
from ostrom.verify.commands import scaleout
from ostrom.verify.tlc.bindings import bind_trace
from ostrom.verify.tlc.constants import model_constants
from ostrom.verify.tlc.definitions import definitions
from ostrom.verify.tlc.distcheck import check_distributed
from ostrom.verify.tlc.distributed import DistributedSetup, DistributedStartError
from ostrom.verify.tlc.explain import ExplainError, explain_itf
from ostrom.verify.tlc.itf import ItfError, read_itf
from ostrom.verify.tlc.jar import TlcSetupError, find_jar, find_java
from ostrom.verify.tlc.manifest import ManifestError, cfg_text, load_manifest
from ostrom.verify.tlc.pbft_chart import chart_from_pbft_spec, is_pbft_spec
from ostrom.verify.tlc.probe import ProbeError
from ostrom.verify.tlc.runner import (
    DEFAULT_WORKERS,
    RowResult,
    RunnerError,
    check_models,
    record_counts,
    select_models,
)
from ostrom.verify.tlc.sequence import FORMATS, Chart, SequenceError, chart_from_itf, render
from ostrom.verify.tlc.simulate import check_simulated
from ostrom.verify.tlc.why import WhyError, why

__all__ = ["check", "explain"]


def _chart(data: dict[str, Any]) -> Chart:
    """The sequence chart of a PBFT.tla trace (with its model's constants) or of a
    PBFTReplicaSystem trace (SequenceError for anything else)."""
    if is_pbft_spec(data):
        meta = data.get("#meta")
        model = meta.get("model") if isinstance(meta, dict) else None
        return chart_from_pbft_spec(data, model_constants(model if isinstance(model, str) else ""))
    return chart_from_itf(data)


def _fail(message: str) -> NoReturn:
    raise BadInput(message)


def _find_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` with ``models/`` and ``spec/`` (a
    checkout), else the source tree this package was installed from (as ``conform`` and
    ``vectors`` find theirs)."""
    for candidate in (start, *start.parents):
        if (candidate / "models").is_dir() and (candidate / "spec").is_dir():
            return candidate
    return layout.ROOT


def _resolve_paths(manifest: Path | None, root: Path | None) -> tuple[Path, Path]:
    if root is None:
        if manifest is not None and manifest.resolve().parent.name == "models":
            root = manifest.resolve().parent.parent
        else:
            root = _find_root(Path.cwd())
    root = root.resolve()
    return (manifest or root / "models" / "manifest.json"), root


def _table(rows: list[RowResult]) -> Table:
    table = Table(title="TLC models", title_justify="left")
    table.add_column("model", no_wrap=True)
    table.add_column("expected", no_wrap=True)
    table.add_column("got", no_wrap=True, overflow="ellipsis", max_width=40)
    table.add_column("distinct states", justify="right", no_wrap=True)
    table.add_column("depth", justify="right", no_wrap=True)
    table.add_column("seconds", justify="right", no_wrap=True)
    table.add_column("ok", justify="center", no_wrap=True)
    for row in rows:
        table.add_row(
            row.name,
            row.expected,
            row.got,
            f"{row.distinct_states:,}" if row.distinct_states is not None else "-",
            str(row.depth) if row.depth is not None else "-",
            f"{row.seconds:.1f}",
            "[green]ok[/green]" if row.ok else "[red]FAIL[/red]",
        )
    return table


@click.command()
@click.option("--model", "models", multiple=True, metavar="NAME", help="Run only this model.")
@click.option("--deep", is_flag=True, help="Also run the models marked deep.")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=DEFAULT_WORKERS,
    show_default=True,
    help="TLC workers for models that do not pin their own.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="TLC runs at once (each a separate JVM; pinned models use one worker each).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option("--record", is_flag=True, help="Write measured counts back into the manifest.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for counterexamples (default .tlc/counterexamples).",
)
@click.option(
    "--manifest",
    "manifest_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Manifest to use (default models/manifest.json under the root).",
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Repository root holding spec/ and models/ (default: found from the manifest or cwd).",
)
@click.option(
    "--timeout",
    type=SECONDS,
    default=None,
    help="Stop a TLC run after this many seconds, in (0, 1e6] (default: no limit); a row "
    "stopped so is a tool error (exit 3).",
)
@click.option(
    "--witness-traces",
    is_flag=True,
    help="Check each reachability witness in a TLC run of its own and save the path to it "
    "as an ITF trace (default: a model's witnesses are checked together in one run, "
    "without traces).",
)
@click.option(
    "--print-cfg",
    is_flag=True,
    help="Print the TLC configuration of each selected model (a derived model's is generated "
    "from its base's) and exit without running TLC.",
)
@scaleout.options
def check(
    models: tuple[str, ...],
    deep: bool,
    workers: int,
    jobs: int,
    as_json: bool,
    record: bool,
    out: Path | None,
    manifest_path: Path | None,
    root: Path | None,
    timeout: float | None,
    witness_traces: bool,
    print_cfg: bool,
    distributed: int | None,
    distributed_host: str | None,
    distributed_port: int | None,
    simulate: bool,
    traces: int | None,
    depth: int | None,
    seed: int | None,
) -> None:
    """Model-check the manifest's models (and their reachability witnesses) with TLC.

    Each row must report what the manifest expects: pass, a named violation, or deadlock;
    witnesses must be reported violated; recorded state counts must not change.

    \b
    Scale-out (docs/checking.md, "Scale-out: TLC's distributed mode and simulation"):
      ostrom check --model sanctions-ci --distributed 2
      ostrom check --model M --distributed 0 --distributed-host HOST   (remote workers)
      ostrom check --model M --simulate --traces 10000 --depth 50 --seed 7

    --distributed runs each model on TLC's distributed mode (a TLCServer and TLCWorker
    processes) and must give the single-machine verdict and state counts; TLC 2.15's
    server does not check temporal properties (the row says so) and prints a violation as
    its last step only (named here by replaying it).  --simulate checks random behaviours
    instead: a violation is reported as usual, no violation proves nothing ('simulated').
    Neither combines with --record, --witness-traces, --jobs or --workers, nor with each
    other.
    """
    ctx = click.get_current_context()
    selected = scaleout.mode(ctx, ctx.params)
    manifest_file, root_dir = _resolve_paths(manifest_path, root)
    if record and layout.in_package(manifest_file):
        _fail(
            f"--record writes the counts into {manifest_file.name}, and the installed "
            "package's is read-only: record in a source checkout"
        )
    err = Console(stderr=True, soft_wrap=True)
    if print_cfg:
        try:
            manifest = load_manifest(manifest_file)
            for entry in select_models(manifest, models, deep):
                click.echo(f"\\* ===== {entry.name} ({entry.cfg_name})")
                click.echo(cfg_text(manifest, entry, root_dir), nl=False)
        except (ManifestError, RunnerError) as exc:
            _fail(str(exc))
        return
    try:
        manifest = load_manifest(manifest_file)
        entries = select_models(manifest, models, deep)
    except (ManifestError, RunnerError) as exc:
        _fail(str(exc))
    try:
        find_jar()
        find_java()
    except TlcSetupError as exc:
        raise ToolError(str(exc)) from None
    out_dir = out if out is not None else layout.scratch(root_dir) / ".tlc" / "counterexamples"
    if not entries:
        err.print(f"no models to check in {manifest_file}", markup=False, highlight=False)

    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
        console=err,
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def on_start(label: str, title: str) -> None:
        tasks[label] = progress.add_task(title, info="starting TLC", total=None)

    def on_progress(label: str, text: str) -> None:
        if label in tasks:
            progress.update(tasks[label], info=text)

    def on_end(label: str) -> None:
        if label in tasks:
            progress.remove_task(tasks.pop(label))

    def on_row(row: RowResult) -> None:
        mark = "[green]ok[/green]" if row.ok else "[red]FAIL[/red]"
        progress.console.print(f"{mark} {row.name}: {row.got} ({row.seconds:.1f} s)")

    rows: list[RowResult]
    try:
        with progress:
            if isinstance(selected, scaleout.Simulate):
                rows = list(check_simulated(
                    manifest, root_dir, entries, traces=selected.traces,
                    depth=selected.depth, seed=selected.seed, out_dir=out_dir,
                    timeout=timeout, on_start=on_start, on_progress=on_progress,
                    on_row=on_row, on_end=on_end,
                ))  # fmt: skip
            elif isinstance(selected, DistributedSetup):
                ready = scaleout.on_ready_printer(
                    selected, find_jar(), lambda text: progress.console.print(
                        text, markup=False, highlight=False, soft_wrap=True)
                )  # fmt: skip
                rows = check_distributed(
                    manifest, root_dir, entries, setup=selected, out_dir=out_dir,
                    timeout=timeout, on_ready=ready, on_start=on_start,
                    on_progress=on_progress, on_row=on_row, on_end=on_end,
                )  # fmt: skip
            else:
                rows = check_models(
                    manifest,
                    root_dir,
                    entries,
                    workers=workers,
                    out_dir=out_dir,
                    record=record,
                    on_start=on_start,
                    on_progress=on_progress,
                    on_row=on_row,
                    on_end=on_end,
                    timeout=timeout,
                    jobs=jobs,
                    witness_traces=witness_traces,
                )
    except DistributedStartError as exc:
        raise ToolError(str(exc)) from None
    except RunnerError as exc:
        _fail(str(exc))
    except TlcSetupError as exc:
        raise ToolError(str(exc)) from None

    if record:
        for note in record_counts(manifest, rows):
            err.print(note, markup=False, highlight=False, soft_wrap=True)
    if as_json:
        doc: dict[str, Any] = {"models": [row.to_json() for row in rows]}
        if isinstance(selected, scaleout.Simulate):
            doc = {"mode": "simulate", **doc}
        elif selected is not None:
            doc = {"mode": "distributed", "workers": selected.workers, **doc}
        click.echo(json.dumps(doc, indent=2))
    else:
        # a log or pipe is not 80 columns wide: do not squeeze the table into it
        console = Console() if sys.stdout.isatty() else Console(width=160)
        simulated = isinstance(selected, scaleout.Simulate)
        console.print(scaleout.simulation_table(rows) if simulated else _table(rows))
        for row in rows:
            if row.message:
                console.print(f"{row.name}: {row.message}", markup=False, highlight=False)
        saved = [row for row in rows if row.counterexample]
        if saved:  # every trace this run saved, expected violations included
            console.print(
                f"\ncounterexamples saved ({len(saved)}; read one with `ostrom explain FILE`):"
            )
            for row in saved:
                mark = "" if row.ok else "  (unexpected)"
                console.print(
                    f"  {row.name}: {row.counterexample}{mark}", markup=False, highlight=False
                )
    if any(_tool_failed(row) for row in rows):
        sys.exit(ExitCode.TOOL_ERROR)
    sys.exit(ExitCode.OK if all(row.ok for row in rows) else ExitCode.FAILED)


def _tool_failed(row: RowResult) -> bool:
    """TLC did not check the row (it crashed, the spec does not parse, --timeout): not a
    verdict about the protocol, so not exit 1."""
    return not row.ok and row.run is not None and row.run.outcome.kind == "error"


@click.command()
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--full", is_flag=True, help="Show every variable of the first state in full.")
@click.option(
    "--sequence",
    is_flag=True,
    help="Draw a PBFT trace (spec/PBFT.tla or spec/PBFTReplicaSystem.tla) as a "
    "message-sequence chart instead.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help="Chart format (implies --sequence): monospace text (default) or a Mermaid "
    "sequenceDiagram, which GitHub renders.",
)
@click.option(
    "--step",
    type=click.IntRange(min=0),
    default=None,
    help="Print only step N (its action, then each changed variable before and after).",
)
@click.option(
    "--var",
    "var",
    metavar="NAME",
    default=None,
    help="Only the changes of variable NAME, or of a path under it (art[x1], rs[r0].view).",
)
@click.option(
    "--why",
    "why_flag",
    is_flag=True,
    help="For an invariant violation: which conjunct of the invariant is false in the last "
    "state, and for which values of its \\A (TLC evaluates it there; needs Java).",
)
@click.option(
    "--params",
    "params_flag",
    is_flag=True,
    help="Name each step's action with the values it was taken with "
    '(CommitVote("a1", "x1", "accept")), which TLC finds by taking the step with each '
    "candidate the spec's quantifiers give (needs Java; a few seconds).",
)
def explain(
    file: Path,
    full: bool,
    sequence: bool,
    fmt: str | None,
    step: int | None,
    var: str | None,
    why_flag: bool,
    params_flag: bool,
) -> None:
    """Print a saved ITF counterexample: one row per step with the variables that changed.

    FILE is an ITF trace written by `ostrom check` (.itf.json, or gzip-compressed
    .itf.json.gz).

    With --sequence (for traces of spec/PBFT.tla, the pbft-* models, and of
    spec/PBFTReplicaSystem.tla, the pbft-replica-* models) it is drawn as a
    message-sequence chart instead: a lifeline for the client (c) and for each
    replica (r0, r1, ...; a Byzantine one dotted), and per step the messages sent (an arrow
    with a head at each receiver), delivered (what the receiver did: view entered, prepared,
    executed, votes collected), lost (dropped, a send omission, a partition: inferred from the
    sender's state, since they never reach a link), timer expiries, restarts, the heal and
    client retries; then why the final state is stuck. docs/counterexamples/ has examples.
    A spec/PBFT.tla trace has no links (its messages are sets every replica reads): its
    chart shows the sends, and marks the COMMITs the spec leaves implicit (derived
    Byzantine ones, eager honest ones).
    """
    if fmt is not None:
        sequence = True
    if sequence and (full or step is not None or var is not None or params_flag):
        _fail("--full, --step, --var and --params are for the change list; not with --sequence")
    try:
        data = read_itf(file)
        if sequence:
            text = render(_chart(data), fmt or "text")
            lines = text.rstrip("\n").split("\n")
        else:
            lines = explain_itf(
                data,
                full=full,
                step=step,
                var=var,
                signatures=_signatures(data),
                bindings=_bindings(data) if params_flag else None,
            )
    except SequenceError as exc:
        _fail(f"{file}: {exc}")
    except (ExplainError, ItfError, ValueError) as exc:
        _fail(str(exc))
    except RecursionError:
        _fail(f"{file}: a value is nested too deeply to be a trace")
    for line in lines:
        click.echo(line)
    if why_flag:
        for line in _why_lines(data):
            click.echo(line)


def _signatures(data: dict[str, object]) -> dict[str, str]:
    """Each action of the trace with its formal parameters, from the spec's definitions."""
    states = data.get("states")
    actions = {
        str(s["#meta"]["action"])
        for s in states if isinstance(s, dict) and isinstance(s.get("#meta"), dict)
        and isinstance(s["#meta"].get("action"), str)
    } if isinstance(states, list) else set()  # fmt: skip
    meta = data.get("#meta")
    module = str(meta.get("module", "")) if isinstance(meta, dict) else ""
    return {
        a: d["tla"]["params"].replace(",", ", ")
        for a, d in definitions(actions, module).items()
        if d.get("tla", {}).get("params")
    }


def _bindings(data: dict[str, Any]) -> dict[int, list[tuple[str, ...]]]:
    """``--params``: each step's argument values, found by TLC (verify/tlc/bindings.py)."""
    try:
        return bind_trace(data)
    except ProbeError as exc:
        raise BadInput(f"--params: {exc}") from None
    except TlcSetupError as exc:
        raise ToolError(str(exc)) from None


def _why_lines(data: dict[str, object]) -> list[str]:
    """``--why``: the invariant's parts that are false in the last state (verify/tlc/why.py)."""
    try:
        name, parts = why(data)
    except WhyError as exc:
        raise BadInput(f"--why: {exc}") from None
    except TlcSetupError as exc:
        raise ToolError(str(exc)) from None
    try:
        props = {t: p for p in registry.load() for t in p.tla}
    except registry.RegistryError:
        props = {}
    pid = f" ({props[name].id}: {props[name].statement})" if name in props else ""
    lines = [f"why: {name}{pid} is false in the last state"]
    false = [p for p in parts if p.false_for]
    for p in false:
        where = f"conjunct {p.index} of {len(parts)}" if len(parts) > 1 else "its body"
        values = f" for {p.var} \\in {p.false_for}" if p.var else ""
        lines.append(f"  {where} is false{values}")
        lines += ["    " + ln.strip() for ln in p.text.splitlines()]
    if not false:
        lines.append("  every part holds: TLC's report and this state disagree (a bug)")
    return lines
