"""``ostrom diagram``: one view of the lifecycle's transition table (codegen/diagram.py).

Its own module, so that it loads the protocol's table and nothing of the other tools:
``ostrom docs`` (codegen/commands.py) loads every generator of the registry.
"""

from __future__ import annotations

from pathlib import Path

import click

from ostrom.cli.exits import ToolError
from ostrom.codegen import diagram

__all__ = ["diagram_cmd"]


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
