"""``ostrom docs`` (every generated file) and ``ostrom diagram`` (a view of the lifecycle table)."""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from ostrom.cli.exits import BadInput, ToolError
from ostrom.codegen import cli_docs, diagram, service_docs
from ostrom.explore import docfigures
from ostrom.verify.codemutation import scores as code_mutation_scores
from ostrom.verify.mutate import suite as mutation_suites
from ostrom.verify.tlc import sequence

__all__ = ["diagram_cmd", "docs"]


@click.command(name="diagram")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(diagram.FORMATS)),
    default="mermaid",
    show_default=True,
    help="dot/svg/mermaid: the state diagram; tla: spec/LifecycleTable.tla; "
    "guards/params: the docs' Markdown tables.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write here instead of stdout.",
)
def diagram_cmd(fmt: str, output: Path | None) -> None:
    """Render the lifecycle transition table (one table, many views)."""
    try:
        text = diagram.FORMATS[fmt]()
    except RuntimeError as exc:  # Graphviz's dot is missing or failed
        raise ToolError(str(exc)) from None
    if output is None:
        click.echo(text, nl=False)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@click.command()
@click.option("--no-svg", is_flag=True, help="Skip the SVG (needs Graphviz's dot).")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Repository root.",
)
def docs(no_svg: bool, root: Path) -> None:
    """Regenerate every generated file and docs block (make docs).

    From the tables: the lifecycle diagrams and docs tables. From the TLC counterexamples
    committed in docs/counterexamples/: their message-sequence charts (text and Mermaid).
    """
    missing = [d for d in ("spec", "models", "docs", "reference") if not (root / d).is_dir()]
    if missing:  # before anything is written: a wrong --root must not get stray files
        raise BadInput(
            f"{root} is not an ostrom source tree (no {', '.join(m + '/' for m in missing)}); "
            "--root names the repository's root"
        )
    if not no_svg and shutil.which("dot") is None:
        raise ToolError(
            "Graphviz's `dot` is not installed: run `make docs` (it installs Debian's "
            "graphviz), or pass --no-svg"
        )
    try:
        changed = diagram.update_generated(root, svg=not no_svg)
        changed += service_docs.update_generated(root)
        changed += sequence.update_docs(root)
        changed += cli_docs.update_generated(root)
        changed += docfigures.update_generated(root)
        changed += mutation_suites.update_docs(root)
        changed += code_mutation_scores.update_docs(root)
    except RuntimeError as exc:
        raise ToolError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise BadInput(str(exc)) from None
    for path in changed:
        click.echo(f"updated {path}", err=True)
    if not changed:
        click.echo("generated files are current", err=True)
