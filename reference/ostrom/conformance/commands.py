"""``ostrom conform`` (the runner, conformance/runner.py) and ``ostrom vectors`` (the
reference's vectors, conformance/generators/generate.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ostrom.cli.exits import BadInput, ToolError
from ostrom.cli.options import SECONDS

__all__ = ["conform", "vectors_cmd"]


@click.command(context_settings={"allow_interspersed_args": False})
@click.option(
    "--vectors",
    "vectors_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Vector directory with its MANIFEST.json (default: vectors/ of this source tree, "
    "or the installed package's suite).",
)
@click.option(
    "--layer",
    "layers",
    multiple=True,
    metavar="LAYER",
    help="Run only this layer (repeatable): lifecycle, voting, reputation, sanctions, "
    "forgetting, community, pbft.",
)
@click.option(
    "--action",
    "actions",
    multiple=True,
    metavar="ACTION",
    help="Run only vectors of this action (repeatable), as dispute or lifecycle/dispute.",
)
@click.option(
    "--property",
    "property_ids",
    multiple=True,
    metavar="ID",
    help="Run only vectors exercising this property id (repeatable), e.g. LC-SAFE-3.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON on stdout.")
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write JUnit XML here (one testsuite per layer, one testcase per vector).",
)
@click.option(
    "--timeout",
    type=SECONDS,
    default=10.0,
    show_default=True,
    help="Seconds to wait for each reply of the driver, in (0, 1e6]; after three "
    "timeouts in a row the driver is taken to hang and the rest is not run.",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first failing vector.")
@click.option("-v", "--verbose", is_flag=True, help="A line per vector; full diffs and stderr.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def conform(
    vectors_dir: Path | None,
    layers: tuple[str, ...],
    actions: tuple[str, ...],
    property_ids: tuple[str, ...],
    as_json: bool,
    junit: Path | None,
    timeout: float,
    fail_fast: bool,
    verbose: bool,
    command: tuple[str, ...],
) -> None:
    """Run the conformance vectors against an implementation: ostrom conform -- CMD ARGS.

    CMD ARGS start the implementation's driver, which speaks the driver protocol of
    docs/conformance.md on stdin/stdout (its stderr is shown for failures).  Every file
    listed in vectors/MANIFEST.json is read first; a missing or unlisted file is refused.
    Vectors of the layers the driver names in its handshake run; the others are reported
    "not implemented".  Each vector stops at its first diverging step.  A driver that
    crashes, hangs (--timeout) or answers garbage fails that vector and is restarted.

    Progress goes to stderr; the summary per layer, action and property id, and every
    failure with its diff, go to stdout (or the JSON report with --json).

    Exit status: 0 if every vector of the implemented layers passed (and at least one
    ran), 1 otherwise, 2 if the suite or CMD is unusable.

    \b
    Examples:
      ostrom conform -- python -m ostrom.conformance.driver
      ostrom conform --layer lifecycle --junit conform.xml -- node js/driver.js
    """
    from ostrom.conformance import runner

    sys.exit(
        runner.main(
            command,
            vectors_dir=vectors_dir,
            layers=layers,
            actions=actions,
            properties=property_ids,
            as_json=as_json,
            junit=junit,
            timeout=timeout,
            fail_fast=fail_fast,
            verbose=verbose,
        )
    )


@click.command(name="vectors")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Vector directory (default: vectors/ of this source tree; needed to write from an "
    "installed package, whose suite is read-only).",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; exit 1 if the vectors or MANIFEST.json under --out are not current.",
)
def vectors_cmd(out: Path | None, check_only: bool) -> None:
    """Regenerate the reference's conformance vectors, deterministically (make vectors).

    Sources: reference:examples (hand-written histories that use every command of every
    layer and every error code) and reference:hypothesis (derandomized random walks that
    keep the first history reaching each new transition row, error code, sanction or tier
    change).  Every expectation is what the reference observes.  Files are written as
    <out>/<layer>/<action>/<name>.json; stale files of these sources are deleted; vectors
    of other sources (TLC, PBFT) are left alone; MANIFEST.json is rebuilt over all files.

    Exit status (--check): 0 if the committed files are current, 1 if not (each stale
    file is named).
    """
    from ostrom import layout
    from ostrom.conformance.generators import generate
    from ostrom.conformance.vectors import VECTORS_DIR

    if out is None and not check_only:
        try:  # the installed package's suite is never written to
            layout.source_tree("ostrom vectors without --out")
        except layout.NotACheckout as exc:
            raise BadInput(str(exc)) from None
    root = VECTORS_DIR if out is None else out
    try:
        docs = generate.generate()
    except generate.GenerationError as exc:
        raise ToolError(str(exc)) from None
    counts = generate.summary(docs)
    for layer, row in counts.items():
        parts = ", ".join(f"{n} {src}" for src, n in sorted(row.items()))
        click.echo(f"  {layer:<11} {parts}", err=True)
    if check_only:
        problems = generate.check_suite(root, docs)
        for p in problems:
            click.echo(f"  {p}", err=True)
        if problems:
            click.echo(f"{root}: {len(problems)} problem(s); run `make vectors`", err=True)
            sys.exit(1)
        click.echo(f"{root}: {len(docs)} reference vectors are current", err=True)
        return
    plan = generate.write_suite(root, docs)
    click.echo(
        f"{root}: {len(plan.write)} written, {len(plan.delete)} deleted, "
        f"{plan.unchanged} unchanged; MANIFEST.json rebuilt",
        err=True,
    )
