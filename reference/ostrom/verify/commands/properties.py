"""``ostrom properties``: which checker checks which property id (spec/properties.toml)."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from ostrom.cli.exits import BadInput
from ostrom.cli.options import console
from ostrom.verify import registry

__all__ = ["properties"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the registry as JSON on stdout.")
@click.option(
    "--registry",
    "path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Registry file (default: spec/properties.toml of this source tree).",
)
def properties(as_json: bool, path: Path | None) -> None:
    """Print which checker checks which property id (TLC, Hypothesis, Z3, mutants).

    A property whose required layers lack a checker is marked MISSING; the test suite
    fails on it (property_tests/verify/test_registry.py).
    """
    try:
        props = registry.load(path)
    except registry.RegistryError as exc:
        raise BadInput(str(exc)) from None
    if as_json:
        rows = [
            {
                "id": p.id,
                "statement": p.statement,
                "required": list(p.required),
                "tla": list(p.tla),
                "hypothesis": list(p.hypothesis),
                "z3": list(p.z3),
                "tla_mutants": list(p.tla_mutants),
                "code_mutants": list(p.code_mutants),
                "notes": p.notes,
            }
            for p in props
        ]
        click.echo(json.dumps({"properties": rows}, indent=2))
        return
    title = f"ostrom property registry ({path or 'spec/properties.toml'})"
    table = Table(title=title, title_justify="left", show_lines=True)
    table.add_column("id", no_wrap=True)
    table.add_column("statement", ratio=3)  # wraps between words
    for col in ("TLC", "Hypothesis", "Z3", "mutants"):
        table.add_column(col, ratio=1, overflow="ellipsis")
    table.add_column("status", no_wrap=True)
    for p in props:
        missing = [layer for layer in p.required if not p.checkers(layer)]
        status = f"MISSING {', '.join(missing)}" if missing else ("ok" if p.required else "planned")
        mutants = [*(f"tla:{m}" for m in p.tla_mutants), *(f"code:{m}" for m in p.code_mutants)]
        table.add_row(
            p.id,
            Text(p.statement),
            "\n".join(p.tla) or "—",
            "\n".join(h.split("::")[-1] for h in p.hypothesis) or "—",
            "\n".join(p.z3) or "—",
            "\n".join(mutants) or "—",
            status,
        )
    console(200).print(table)
