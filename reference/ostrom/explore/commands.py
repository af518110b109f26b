"""``ostrom explore FILE``: one self-contained HTML page to step through a trace."""

from __future__ import annotations

from pathlib import Path

import click

from ostrom.cli.exits import BadInput, ToolError
from ostrom.explore.page import write_page
from ostrom.explore.sources import ExploreError, load
from ostrom.verify.tlc.jar import TlcSetupError

__all__ = ["explore"]


def _default_out(file: Path) -> Path:
    name = file.name
    for suffix in (".itf.json.gz", ".itf.json", ".jsonl", ".json", ".gz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return Path(f"{name}.html")


@click.command(name="explore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The page to write (default: FILE's name with .html, in the current directory).",
)
@click.option(
    "--verdict",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="For a trace log: its verdict (ostrom validate-trace --json), to mark the step "
    "it was rejected at.",
)
@click.option(
    "--params",
    is_flag=True,
    help="Name each step's action with the values it was taken with, as ostrom explain "
    "--params does (TLC finds them; needs Java).",
)
def explore(file: Path, output: Path | None, verdict: Path | None, params: bool) -> None:
    """Write one self-contained HTML page for a trace, to step through in a browser.

    FILE is an ITF counterexample of any spec (ostrom check saves them), a conformance
    vector, an ostrom-trace/1 log (with --verdict, or a verdict file itself: the step it
    was rejected at is marked), or a PBFT vector (a recorded simulation of one replica).

    The page needs no server and no network (it works from file://): step with the keys
    ← → (or j k, Home, End); the changed variables are highlighted; each step shows its
    action with its parameters (with --params, the values it was taken with), its TLA+
    definition and the Python method the spec cites,
    linked to this checkout's files; lifecycle traces show the state diagram with the
    artifacts' current states highlighted; traces with messages (PBFT, Algorithm 1) a
    message-sequence chart, one lane per process, one arrow per message; a violation is
    named in words from the property registry.

    \b
    Examples:
      ostrom check --model lifecycle-mutant-supersede --out cex
      ostrom explore cex/lifecycle-mutant-supersede.itf.json
      ostrom explore docs/counterexamples/drop-own-view-change.itf.json.gz -o dvc.html
      ostrom validate-trace --json run.jsonl > verdict.json; ostrom explore verdict.json
    """
    try:
        page = load(file, verdict, params=params)
    except ExploreError as exc:
        raise BadInput(str(exc)) from None
    except TlcSetupError as exc:
        raise ToolError(str(exc)) from None
    out = output or _default_out(file)
    if out.exists() and out.is_dir():
        raise BadInput(f"{out} is a directory")
    try:
        write_page(page, out)
    except OSError as exc:
        raise BadInput(f"cannot write {out}: {exc.strerror or exc}") from None
    click.echo(f"wrote {out} ({len(page.steps)} steps; open it in a browser)", err=True)
