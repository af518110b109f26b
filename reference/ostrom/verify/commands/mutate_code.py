"""``ostrom mutate-code [TARGET...]``: code mutation testing — would the tests catch wrong code?

See verify/codemutation/ for the targets, the run and the verdicts, and docs/checking.md
("Code mutation") for how to read a survivor.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ostrom import layout
from ostrom.cli.exits import BadInput, ExitCode, ToolError
from ostrom.cli.extras import install_hint
from ostrom.verify.codemutation.report import TargetReport
from ostrom.verify.codemutation.run import CodeMutationError, NoSuchMutant, run_target
from ostrom.verify.codemutation.scores import (
    SCORES_PATH,
    ScoresError,
    load_scores,
    record_score,
)
from ostrom.verify.codemutation.target import TargetError, load_target, target_names
from ostrom.verify.codemutation.workspace import (
    WORKSPACE_ROOT,
    WorkspaceChanged,
    check_resumable,
)

__all__ = ["mutate_code"]


def _table(report: TargetReport) -> Table:
    t = report.target
    table = Table(title=f"survivors in reference/ostrom/{t.source}", expand=False)
    for col in ("file:line" if t.is_package else "line", "change", "verdict", "id"):
        table.add_column(col, overflow="fold")
    for r in report.survivors:
        # Text, not str: a change is source code, and rich would read its "[i]" as markup
        short = r.id.rpartition(".")[2]
        table.add_row(report.location(r), Text(r.change), r.verdict.upper(), Text(short))
    return table


def _summary(report: TargetReport) -> str:
    counts = ", ".join(f"{n} {v}" for v, n in report.counts.items() if n)
    score = "n/a" if report.score is None else f"{report.score:.1%}"
    if report.kind == "full":
        what = f"all {report.generated}"
    elif report.seed is None:
        what = f"{report.sampled} chosen of {report.generated}"
    else:
        what = f"{report.sampled} of {report.generated} (seed {report.seed})"
    goal = "" if report.target.goal is None else f" (goal {report.target.goal:.0%})"
    return (
        f"{report.target.name} · reference/ostrom/{report.target.source} · {what} mutants: "
        f"{counts} · score {score}{goal} · {report.seconds:.0f} s"
    )


@click.command(name="mutate-code")
@click.argument("targets", nargs=-1)
@click.option(
    "--sample",
    "gate",
    is_flag=True,
    help="Run each target's gate: its seeded sample on its ci_tests (make test runs it "
    "with --check), not every mutant.",
)
@click.option(
    "--estimate",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Run N mutants drawn with the target's seed on all its tests (kind estimate): a "
    "score with an interval where the full run takes hours.",
)
@click.option(
    "--record",
    is_flag=True,
    help="Write each score into models/mutation/code/scores.json (its kind: sample, "
    "estimate or full).",
)
@click.option(
    "--check",
    "check_score",
    is_flag=True,
    help="Fail (exit 1) if a score is below the recorded one of the same kind, whatever survived.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1, max=64),
    default=2,
    show_default=True,
    help="Mutants tested at once (mutmut's forked workers).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write each target's JSON report to DIR/<target>.json (default: "
    "build/mutate-code/KIND: full, sample or estimate).",
)
@click.option(
    "--only",
    default=None,
    metavar="ID,ID",
    help="Run just these mutants of the one TARGET (ids as the report prints them, or their "
    "last part), e.g. to see a new test kill a survivor.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue an interrupted full run of each TARGET where it stopped, if the tree is "
    "the one it started on (the recorded scores apart): mutants with a verdict are not rerun.",
)
@click.option("--list", "list_only", is_flag=True, help="List the targets and run nothing.")
def mutate_code(
    targets: tuple[str, ...],
    gate: bool,
    estimate: int | None,
    record: bool,
    check_score: bool,
    jobs: int,
    out: Path | None,
    only: str | None,
    resume: bool,
    list_only: bool,
) -> None:
    """Mutation-test reference/ostrom's modules: run their tests against small edits.

    mutmut makes each mutant of a target's module (a comparison flipped, and/or swapped, a
    not dropped, a constant nudged, a string changed, a call's argument dropped or None, a
    return value None, ...) and runs, for each, only the tests of the target that reach the
    mutated function, stopping at the first failure. KILLED: a test failed; SURVIVED: every
    test passed; NO_TESTS: no test reaches the function; TIMEOUT: the tests ran past the
    CPU limit (they hang: detected). Read a survivor's line and change, and either write a
    test that states the rule it breaks or, if no behaviour can tell it apart, accept it
    in models/mutation/code/<target>.toml with a reason. The score is (killed + timeout) /
    (mutants run - accepted equivalent).

    TARGETS are the files of models/mutation/code (default: all of them), each naming a
    module of reference/ostrom (or a package: all its modules) and the tests that cover it.

    Exit status: 0 when every full score reaches its target's goal (with --check: every
    score is at least the recorded one of its kind; a full run with none recorded is held
    to the goal), 1 otherwise, 2 bad input, 3 mutmut could not run.

    \b
    Examples:
      ostrom mutate-code --list
      ostrom mutate-code voting                      # every mutant of protocol/voting.py
      ostrom mutate-code --sample --check            # make test's gate
      ostrom mutate-code replica --estimate 150 --record
      ostrom mutate-code replica --only 'xǁNormalCaseǁ_body__mutmut_1'   # one mutant
      ostrom mutate-code orchestrator --resume --record   # after an interrupted full run
      ostrom mutate-code --record                    # make mutate-code-record
    """
    try:  # the mutants are made of reference/ostrom's files and run its property_tests
        layout.source_tree("ostrom mutate-code")
    except layout.NotACheckout as exc:
        raise BadInput(str(exc)) from None
    try:
        names = list(targets) or target_names()
        chosen = [load_target(n) for n in names]
    except TargetError as exc:
        raise BadInput(str(exc)) from None
    if len(set(names)) != len(names):
        raise BadInput("a target is named twice")
    only_ids = [i.strip() for i in only.split(",") if i.strip()] if only is not None else None
    if only_ids is not None:
        if len(targets) != 1 or not only_ids:
            raise BadInput("--only needs exactly one TARGET and at least one mutant id")
        if gate or estimate or record or check_score:
            raise BadInput(
                "--only runs the mutants named: no --sample, --estimate, --record or --check"
            )
    if gate and estimate:
        raise BadInput("--sample and --estimate are different runs: give one")
    if resume and (gate or estimate or only_ids is not None):
        raise BadInput("--resume continues a full run: no --sample, --estimate or --only")
    if list_only:
        for t in chosen:
            modules = f"{len(t.files)} modules, " if t.is_package else ""
            click.echo(
                f"{t.name:<14} reference/ostrom/{t.source:<28} {modules}{len(t.tests)} test "
                f"files, gate: {t.sample} mutants (seed {t.seed}) on {len(t.gate().tests)}"
            )
        return
    if importlib.util.find_spec("mutmut") is None:
        raise ToolError(
            f"mutate-code needs mutmut, of the 'mutation' extra: {install_hint('mutation')}"
        )
    kind = "sample" if gate or only_ids else "estimate" if estimate else "full"
    try:
        recorded = load_scores()
    except ScoresError as exc:
        raise BadInput(str(exc)) from None
    missing = [
        t.name
        for t in chosen
        if check_score and kind != "full" and recorded.get(t.name, {}).get(kind) is None
    ]
    if missing:  # refused before hours of work, not after
        raise BadInput(
            f"no recorded {kind} score for {missing[0]} (ostrom mutate-code {missing[0]}"
            f"{' --sample' if gate else f' --estimate {estimate}' if estimate else ''} --record)"
        )
    if resume:  # every target checked before any runs
        for t in chosen:
            try:
                check_resumable(t, WORKSPACE_ROOT / kind)
            except WorkspaceChanged as exc:
                raise BadInput(str(exc)) from None
    out_dir = out or WORKSPACE_ROOT / kind
    try:  # before the run, not after it
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    failed: list[str] = []
    for t in chosen:
        try:
            report = run_target(
                t.gate() if gate else t,
                sample=t.sample if gate else estimate,
                seed=t.seed if gate or estimate else None,
                jobs=jobs,
                progress=lambda line: click.echo(line, err=True),
                only=only_ids,
                kind=kind,
                resume=resume,
            )
        except NoSuchMutant as exc:
            raise BadInput(str(exc)) from None
        except WorkspaceChanged as exc:
            raise BadInput(str(exc)) from None
        except CodeMutationError as exc:
            raise ToolError(str(exc)) from None
        try:
            (out_dir / f"{t.name}.json").write_text(
                json.dumps(report.as_json(), indent=2) + "\n", encoding="utf-8"
            )
        except OSError as exc:
            raise BadInput(f"cannot write {out_dir}: {exc.strerror or exc}") from None
        if report.survivors:
            Console(width=None if sys.stdout.isatty() else 160).print(_table(report))
        for s in report.stale:
            click.echo(f"stale equivalent: {s}", err=True)
        click.echo(_summary(report))
        # compared as recorded (rounded to 4 places): 8/9 must not fall below its own 0.8889
        now = round(report.score, 4) if report.score is not None else 0.0
        if record:
            try:
                record_score(t.name, kind, report.summary())
            except (OSError, ScoresError) as exc:
                raise BadInput(f"cannot record the score: {exc}") from None
            click.echo(f"recorded: {t.name} {kind} score in {SCORES_PATH.name}")
        before = recorded.get(t.name, {}).get(kind) if check_score else None
        if before is not None and before.get("score") is not None:
            if now < before["score"]:
                click.echo(
                    f"FAILED: {t.name} scores {now:.1%}, below the recorded {before['score']:.1%}",
                    err=True,
                )
                failed.append(t.name)
            else:
                click.echo(f"{t.name}: {now:.1%}, at least the recorded {before['score']:.1%}")
        elif not record and t.goal is not None and now < t.goal and kind == "full":
            # a full run with nothing recorded yet (make check-deep before the first
            # make mutate-code-record) is held to the target's goal instead
            click.echo(f"FAILED: {t.name} scores {now:.1%}, below its goal {t.goal:.0%}", err=True)
            failed.append(t.name)
    if failed:
        raise SystemExit(ExitCode.FAILED)
