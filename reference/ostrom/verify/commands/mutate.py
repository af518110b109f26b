"""``ostrom mutate MODEL...``: spec mutation testing — would the models catch a small mistake?

See verify/mutate/run.py for what killed, survived, invalid and timeout mean,
verify/mutate/suite.py for the suites `make mutate` runs, and docs/checking.md for how
to read a survivor.
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
from ostrom.verify.mutate.run import MutantResult, MutationError, Report, mutate_models, pool_of
from ostrom.verify.mutate.scope import ScopeError, scope_of
from ostrom.verify.mutate.suite import SuiteError, load_scores, load_suite, record_score
from ostrom.verify.tlc.jar import TlcSetupError
from ostrom.verify.tlc.manifest import Manifest, ManifestError, ModelEntry, cfg_text, load_manifest
from ostrom.verify.tlc.runner import RunnerError, TlcRun

__all__ = ["mutate"]


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
    models = ", ".join(report.models)
    table = Table(title=f"{models}: mutants of spec/{report.spec}.tla", expand=False)
    for col in ("id", "line", "change", "verdict", "model", "why"):
        table.add_column(col, overflow="fold")
    for r in report.results:
        m = r.mutant
        why = r.reason or r.why
        if r.verdict == "survived" and r.distinct_states is not None and r.model is not None:
            base = report.baseline_states.get(r.model)
            why = f"{r.distinct_states:,} distinct states (unmutated {base or 0:,})"
        table.add_row(
            m.id,
            str(m.line),
            m.change,
            r.verdict.upper() if r.verdict == "survived" else r.verdict,
            r.model or "",
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
    return (
        f"{', '.join(report.models)} · spec/{report.spec}.tla · {sample} mutants: "
        f"{counts} · score {score}"
    )


def _score_summary(report: Report) -> dict[str, object]:
    """What --record keeps of a run: enough to compare, and the survivors to read."""
    return {
        "models": list(report.models),
        "generated": report.generated,
        "sampled": report.sampled,
        "seed": report.seed,
        "counts": report.to_json()["counts"],
        "score": None if report.score is None else round(report.score, 4),
        "survivors": sorted(
            f"{r.mutant.id}: {r.mutant.change}" for r in report.results if r.verdict == "survived"
        ),
    }


@click.command(name="mutate")
@click.argument("models", nargs=-1)
@click.option(
    "--suite",
    default=None,
    metavar="SPEC",
    help="Run the suite of models/mutation/<Spec>.toml: its models, sample, seed and timeout.",
)
@click.option(
    "--all",
    "run_all",
    is_flag=True,
    help="With --suite: every mutant in scope, not the suite's sample (make check-deep).",
)
@click.option(
    "--ci",
    "ci_gate",
    is_flag=True,
    help="With --suite: the suite's CI gate, its ci_sample on its ci_models only "
    "(make test runs it with --check).",
)
@click.option(
    "--record",
    is_flag=True,
    help="With --suite: write the score into models/mutation/scores.json.",
)
@click.option(
    "--check",
    "check_score",
    is_flag=True,
    help="With --suite: fail (exit 1) if the score is below the recorded one, "
    "whatever survived (make mutate).",
)
@click.option(
    "--spec",
    default=None,
    metavar="NAME",
    help="The spec to mutate (default: the first module of spec/ the models use; "
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
    help="Mutants run at once (one TLC process each, one worker each).",
)
@click.option(
    "--timeout",
    type=SECONDS,
    default=None,
    help="Seconds one mutant may run on one model (0: no limit; default 600, or the "
    "suite's); past it: timeout.",
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
    models: tuple[str, ...],
    suite: str | None,
    run_all: bool,
    ci_gate: bool,
    record: bool,
    check_score: bool,
    spec: str | None,
    sample: int | None,
    seed: int,
    jobs: int,
    timeout: float | None,
    operators: str | None,
    only: str | None,
    list_only: bool,
    as_json: bool,
    out: Path | None,
) -> None:
    """Mutation-test passing manifest MODELS: run them against small edits of their spec.

    Each mutant (a comparison flipped at its boundary, + and - swapped, a constant nudged,
    \\in and \\notin, \\cup and \\cap, \\E and \\A, TRUE and FALSE swapped, a ~ dropped, one
    bullet of a /\\ or \\/ list dropped, one variable dropped from an UNCHANGED, one EXCEPT
    clause dropped) is checked in its own staged copy with each model's invariants,
    properties and reachability witnesses, on the models in the order given until one
    kills it. KILLED: TLC reports a violation, deadlock or error, or a witness is no longer
    reached; INVALID: it does not parse; TIMEOUT: past --timeout; SURVIVED: everything
    passes on every model — read its line and change, and either add a check that catches
    it or, if no behaviour can tell it apart, accept it in models/mutation/<Spec>.toml with a
    reason. Only definitions the models' behaviour uses (from their INIT, NEXT or
    SPECIFICATION) are mutated.

    Exit status: 0 when no mutant survived or timed out (with --check: when the score is
    at least the recorded one), 1 otherwise, 2 bad input, 3 TLC could not run.

    \b
    Examples:
      ostrom mutate lifecycle-ci-solo --list
      ostrom mutate lifecycle-ci-solo --sample 25 --seed 1 --jobs 2
      ostrom mutate lifecycle-ci-solo lifecycle-ci --only OpenDispute/const/2
      ostrom mutate --suite Sanctions --check
      ostrom mutate --suite PBFT --ci --check          # the CI gate (make test)
      ostrom mutate --suite Lifecycle --all --record
    """
    ops = _operators(operators)
    if suite is None and (run_all or ci_gate or record or check_score):
        raise BadInput("--all, --ci, --record and --check need --suite SPEC")
    if run_all and ci_gate:
        raise BadInput("--all and --ci are different runs: give one")
    if suite is not None and (models or spec or sample):
        raise BadInput(
            "--suite SPEC names the models, spec and sample: give no MODEL, --spec or --sample"
        )
    if check_score and only:
        raise BadInput("--check compares the suite's own run: --only cannot be given with it")
    if record and (only or ops):
        raise BadInput("--record keeps the suite's whole run: no --only or --operators with it")
    if suite is None and not models:
        raise BadInput("give a MODEL (ostrom check --list) or --suite SPEC")
    if record:
        try:  # the scores are kept in models/mutation/scores.json of the tree
            layout.source_tree("ostrom mutate --record")
        except layout.NotACheckout as exc:
            raise BadInput(str(exc)) from None
    try:
        manifest = load_manifest(layout.MODELS_DIR / "manifest.json")
        chosen_suite = load_suite(suite) if suite is not None else None
    except (ManifestError, SuiteError) as exc:
        raise BadInput(str(exc)) from None
    if chosen_suite is not None:
        if ci_gate and not chosen_suite.ci_models:
            raise BadInput(
                f"the suite of {chosen_suite.spec} has no CI gate (ci_models, ci_sample)"
            )
        models, spec = chosen_suite.models, chosen_suite.spec
        sample = None if run_all else chosen_suite.sample
        if ci_gate:
            models, sample = chosen_suite.ci_models, chosen_suite.ci_sample
        seed = chosen_suite.seed
        if timeout is None:
            timeout = float(chosen_suite.timeout)
    entries: list[ModelEntry] = []
    for name in models:
        entry = manifest.get(name)
        if entry is None:
            raise BadInput(f"no model {name!r} in models/manifest.json (ostrom check --list)")
        entries.append(entry)
    if list_only:
        try:
            pool = pool_of(manifest, entries, spec)
        except (ScopeError, ManifestError, MutationError) as exc:
            raise BadInput(str(exc)) from None
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
        click.echo(f"{len(pool)} mutants in scope of {', '.join(models)}", err=True)
        return

    def on_result(done: int, total: int, r: MutantResult) -> None:
        m = r.mutant
        click.echo(
            f"[{done}/{total}] {m.id} (line {m.line}: {m.change}): {r.verdict}"
            f"{' by ' + r.model if r.verdict == 'killed' and r.model else ''}: "
            f"{r.why.splitlines()[0][:160] if r.why else ''} [{r.seconds:.0f} s]",
            err=True,
        )

    def on_baseline(name: str, run: TlcRun) -> None:
        click.echo(
            f"{name}: the unmutated model passes and reaches its witnesses "
            f"({run.outcome.distinct_states or 0:,} distinct states, {run.seconds:.0f} s)",
            err=True,
        )

    try:
        report = mutate_models(
            manifest,
            entries,
            spec=spec,
            sample=sample,
            seed=seed,
            jobs=jobs,
            timeout=(600.0 if timeout is None else timeout) or None,
            operators=ops,
            only=[i.strip() for i in only.split(",") if i.strip()] if only else None,
            equivalents=load_equivalents(spec or _spec_of(manifest, entries)),
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
    kind = "full" if run_all else "ci" if ci_gate else "sample"
    if chosen_suite is not None and record:
        try:
            record_score(chosen_suite.spec, kind, _score_summary(report))
        except (OSError, SuiteError) as exc:
            raise BadInput(f"cannot record the score: {exc}") from None
        click.echo(f"recorded: {chosen_suite.spec} {kind} score in models/mutation/scores.json")
    if chosen_suite is not None and check_score:
        try:
            recorded = load_scores().get(chosen_suite.spec, {}).get(kind)
        except SuiteError as exc:
            raise BadInput(str(exc)) from None
        if recorded is None or not isinstance(recorded.get("score"), (int, float)):
            if kind == "full":  # make check-deep before anyone recorded a full run
                click.echo(
                    f"{chosen_suite.spec}: no recorded full score to compare with "
                    f"(ostrom mutate --suite {chosen_suite.spec} --all --record)",
                    err=True,
                )
                return
            raise BadInput(
                f"no recorded {kind} score for {chosen_suite.spec} "
                f"(ostrom mutate --suite {chosen_suite.spec}{' --ci' if ci_gate else ''} --record)"
            )
        # compared as recorded (rounded to 4 places): 8/9 must not fall below its own 0.8889
        now = round(report.score, 4) if report.score is not None else 0.0
        if now < recorded["score"]:
            click.echo(
                f"FAILED: {chosen_suite.spec} scores {now:.1%}, below the recorded "
                f"{recorded['score']:.1%}",
                err=True,
            )
            raise SystemExit(ExitCode.FAILED)
        click.echo(f"{chosen_suite.spec}: {now:.1%}, at least the recorded {recorded['score']:.1%}")
        return
    if report.count("survived") or report.count("timeout"):
        raise SystemExit(ExitCode.FAILED)


def _spec_of(manifest: Manifest, entries: list[ModelEntry]) -> str:
    """The spec the models mutate by default (for its equivalents file)."""
    return scope_of(entries[0].module, cfg_text(manifest, entries[0], layout.ROOT)).spec
