"""The ``ostrom`` command line: one subcommand per job, each with ``--help``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ostrom import __version__, diagram, registry
from ostrom.params import ParamError, Params
from ostrom.tlc.commands import check, explain


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ostrom")
def main() -> None:
    """ostrom: model-check the specs, run the reference implementation, check conformance."""


main.add_command(check)
main.add_command(explain)


@main.command()
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
    fails on it (property_tests/test_registry.py).
    """
    try:
        props = registry.load(path)
    except registry.RegistryError as exc:
        raise click.ClickException(str(exc)) from exc
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
    table = Table(title="ostrom property registry (spec/properties.toml)", show_lines=True)
    for col in ("id", "TLC", "Hypothesis", "Z3", "mutants", "status"):
        table.add_column(col, overflow="fold")
    for p in props:
        missing = [layer for layer in p.required if not p.checkers(layer)]
        status = f"MISSING {', '.join(missing)}" if missing else ("ok" if p.required else "planned")
        mutants = [*(f"tla:{m}" for m in p.tla_mutants), *(f"code:{m}" for m in p.code_mutants)]
        table.add_row(
            p.id,
            "\n".join(p.tla) or "—",
            "\n".join(h.split("::")[-1] for h in p.hypothesis) or "—",
            "\n".join(p.z3) or "—",
            "\n".join(mutants) or "—",
            status,
        )
    Console(width=max(120, Console().width)).print(table)


@main.command(name="diagram")
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
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from exc
    if output is None:
        click.echo(text, nl=False)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@main.command()
@click.option("--no-svg", is_flag=True, help="Skip the SVG (needs Graphviz's dot).")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Repository root.",
)
def docs(no_svg: bool, root: Path) -> None:
    """Regenerate every generated file and docs block from the tables (make docs)."""
    try:
        changed = diagram.update_generated(root, svg=not no_svg)
    except (RuntimeError, ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc
    for path in changed:
        click.echo(f"updated {path}", err=True)
    if not changed:
        click.echo("generated files are current", err=True)


@main.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the parameters as JSON.")
def params(file: Path | None, as_json: bool) -> None:
    """Print the parameter table, or validate FILE.toml and print its effective values.

    Keys of FILE are the parameter names (e.g. w_min, quorum, tau_accept); keys not given
    take their defaults; unknown keys and out-of-range values are errors that name them.
    """
    try:
        p = Params.from_toml(file) if file else Params()
    except ParamError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    if as_json:
        click.echo(json.dumps(p.to_dict(), indent=2))
    elif file is None:
        click.echo(diagram.to_param_table(), nl=False)
    else:
        for key, value in p.to_dict().items():
            click.echo(f"{key} = {value}")


if __name__ == "__main__":  # pragma: no cover
    main()
