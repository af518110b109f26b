"""``ostrom mutate MODEL``: spec mutation testing — would the model catch a small mistake?

See verify/mutate/run.py for what killed, survived, invalid and timeout mean, and
docs/checking.md for how to read a survivor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ostrom import layout
from ostrom.cli.exits import BadInput, ExitCode, ToolError
from ostrom.cli.options import SECONDS
from ostrom.verify.mutate.equivalents import EquivalentsError, load_equivalents
from ostrom.verify.mutate.operators import OPERATORS
from ostrom.verify.mutate.run import MutantResult, MutationError, Report, mutate_model
from ostrom.verify.mutate.scope import ScopeError
from ostrom.verify.tlc.jar import TlcSetupError
from ostrom.verify.tlc.manifest import ManifestError, load_manifest
from ostrom.verify.tlc.runner import RunnerError, TlcRun


def _operators(text: str | None) -> list[str] | None:
    if text is None:
        return None
    ops = [o.strip() for o in text.split(",") if o.strip()]
    bad = [o for o in ops if o not in OPERATORS]
    if bad or not ops:
        raise BadInput(
            f"--operators: unknown {bad[0] if bad else '(none)'!r} "
            f"(the operators: {', '.join(OPERATORS)})"
        )
    return ops


def _table(report: Report) -> Table:
    table = Table(title=f"{report.model}: mutants of spec/{report.spec}.tla", expand=False)
    for col in ("id", "line", "change", "verdict", "why"):
        table.add_column(col, overflow="fold")
    for r in report.results:
        m = r.mutant
        why = r.reason or r.why
        if r.verdict == "survived" and r.distinct_states is not None:
            why = f"{r.distinct_states:,} distinct states (baseline {report.baseline_states:,})"
        table.add_row(
            m.id,
            str(m.line),
            m.change,
            r.verdict.upper() if r.verdict == "survived" else r.verdict,
            why,
        )
    return table


def _summary(report: Report) -> str:
    counts = ", ".join(
        f"{report.count(v)} {v}" for v in ("killed", "survived", "timeout", "invalid", "equivalent")
    )
    score = "n/a" if report.score is None else f"{report.score:.1%}"
    if report.seed is not None:
        sample = f"a sample of {report.sampled} of {report.generated} (seed {report.seed})"
    elif report.sampled < report.generated:
        sample = f"{report.sampled} chosen of {report.generated}"
    else:
        sample = f"all {report.generated}"
    return f"{report.model} · spec/{report.spec}.tla · {sample} mutants: {counts} · score {score}"


@click.command(name="mutate")
@click.argument("model")
@click.option(
    "--spec",
    default=None,
    metavar="NAME",
    help="The spec to mutate (default: the first module of spec/ MODEL uses; "
    "e.g. PBFTReplica for the pbft-replica-* models).",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=None,
    help="Run N mutants drawn with --seed (default: every mutant in scope).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**31),
    default=0,
    show_default=True,
    help="The seed of --sample.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1, max=64),
    default=2,
    show_default=True,
    help="TLC runs at once (one JVM each).",
)
@click.option(
    "--timeout",
    type=SECONDS,
    default=600.0,
    show_default=True,
    help="Seconds one mutant's run may take (0: no limit); past it: timeout.",
)
@click.option(
    "--operators",
    default=None,
    metavar="A,B",
    help=f"Only these operators ({', '.join(OPERATORS)}).",
)
@click.option(
    "--only",
    default=None,
    metavar="ID,ID",
    help="Run just these mutants (ids as --list prints them), e.g. to see a fix kill one.",
)
@click.option(
    "--list",
    "list_only",
    is_flag=True,
    help="Print the mutants in scope (id, line, change) and run nothing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON on stdout.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the JSON report to this file.",
)
def mutate(
    model: str,
    spec: str | None,
    sample: int | None,
    seed: int,
    jobs: int,
    timeout: float,
    operators: str | None,
    only: str | None,
    list_only: bool,
    as_json: bool,
    out: Path | None,
) -> None:
    """Mutation-test a passing manifest MODEL: run it against small edits of its spec.

    Each mutant (a comparison flipped at its boundary, + and - swapped, a constant nudged,
    \\in and \\notin, \\cup and \\cap, \\E and \\A, TRUE and FALSE swapped, a ~ dropped, one
    bullet of a /\\ or \\/ list dropped, one variable dropped from an UNCHANGED, one EXCEPT
    clause dropped) is checked in its own staged copy with the model's invariants,
    properties and reachability witnesses. KILLED: TLC reports a violation, deadlock or
    error, or a witness is no longer reached; INVALID: it does not parse; TIMEOUT: past
    --timeout; SURVIVED: everything passes — read its line and change, and either add a
    check that catches it or, if no behaviour can tell it apart, accept it in
    models/mutation/SPEC.toml with a reason. Only definitions the model's behaviour uses
    (from its INIT, NEXT or SPECIFICATION) are mutated.

    Exit status: 0 when no mutant survived or timed out, 1 otherwise, 2 bad input,
    3 TLC could not run.

    \b
    Examples:
      ostrom mutate lifecycle-ci-solo --list
      ostrom mutate lifecycle-ci-solo --sample 25 --seed 1 --jobs 2
      ostrom mutate sanctions-ci --json --out build/mutate-sanctions.json
      ostrom mutate pbft-replica-view-change-ci --spec PBFTReplica --sample 20
    """
    ops = _operators(operators)
    try:
        manifest = load_manifest(layout.MODELS_DIR / "manifest.json")
    except ManifestError as exc:
        raise BadInput(str(exc)) from None
    entry = manifest.get(model)
    if entry is None:
        raise BadInput(f"no model {model!r} in models/manifest.json (ostrom check --list)")
    if list_only:
        from ostrom.verify.mutate.operators import mutants
        from ostrom.verify.mutate.scope import scope_of
        from ostrom.verify.tlc.manifest import cfg_text

        try:
            scope = scope_of(entry.module, cfg_text(manifest, entry, layout.ROOT), spec)
        except (ScopeError, ManifestError) as exc:
            raise BadInput(str(exc)) from None
        pool = mutants(scope.path.read_text(encoding="utf-8"), scope.names)
        pool = [m for m in pool if ops is None or m.operator in ops]
        if as_json:
            click.echo(
                json.dumps(
                    [{"id": m.id, "line": m.line, "change": m.change} for m in pool], indent=2
                )
            )
            return
        for m in pool:
            click.echo(f"{m.id:<40} {m.line:>5}  {m.change}")
        click.echo(
            f"{len(pool)} mutants of spec/{scope.spec}.tla in {len(scope.names)} "
            f"definitions (left out: {', '.join(scope.left_out) or 'none'})",
            err=True,
        )
        return

    def on_result(done: int, total: int, r: MutantResult) -> None:
        m = r.mutant
        click.echo(
            f"[{done}/{total}] {m.id} (line {m.line}: {m.change}): {r.verdict}: "
            f"{r.why.splitlines()[0][:160] if r.why else ''} [{r.seconds:.0f} s]",
            err=True,
        )

    def on_baseline(run: TlcRun) -> None:
        click.echo(
            f"{model}: the unmutated model passes and reaches its witnesses "
            f"({run.outcome.distinct_states or 0:,} distinct states, {run.seconds:.0f} s)",
            err=True,
        )

    try:
        spec_name = spec
        if spec_name is None:
            from ostrom.verify.mutate.scope import scope_of
            from ostrom.verify.tlc.manifest import cfg_text

            spec_name = scope_of(entry.module, cfg_text(manifest, entry, layout.ROOT)).spec
        report = mutate_model(
            manifest,
            entry,
            spec=spec,
            sample=sample,
            seed=seed,
            jobs=jobs,
            timeout=timeout or None,
            operators=ops,
            only=[i.strip() for i in only.split(",") if i.strip()] if only else None,
            equivalents=load_equivalents(spec_name),
            on_result=on_result,
            on_baseline=on_baseline,
        )
    except (MutationError, ScopeError, EquivalentsError, ManifestError) as exc:
        raise BadInput(str(exc)) from None
    except (TlcSetupError, RunnerError) as exc:
        raise ToolError(str(exc)) from None
    doc = report.to_json()
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise BadInput(f"cannot write {out}: {exc.strerror or exc}") from None
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        Console(width=None if sys.stdout.isatty() else 160).print(_table(report))
        for s in report.stale:
            click.echo(f"stale equivalent: {s}", err=True)
        click.echo(_summary(report))
    if report.count("survived") or report.count("timeout"):
        raise SystemExit(ExitCode.FAILED)
