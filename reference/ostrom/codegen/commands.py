"""``ostrom docs``: every generated file and block of the registry (codegen/registry.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import click

from ostrom.cli.exits import BadInput, ExitCode, ToolError
from ostrom.codegen import registry
from ostrom.codegen.registry import REGISTRY, Generated, GenerateError

__all__ = ["docs"]


def _selected(only: tuple[str, ...], slow: bool, svg: bool) -> tuple[list[Generated], list[str]]:
    """The entries to render, and why each left out is (for the report)."""
    chosen, skipped = [], []
    for entry in REGISTRY:
        if only and entry.name not in only:
            continue
        if entry.slow and not (slow or entry.name in only):
            skipped.append(f"{entry.name} (slow: --slow)")
        elif entry.needs == "dot" and not svg:
            skipped.append(f"{entry.name} (--no-svg)")
        else:
            chosen.append(entry)
    return chosen, skipped


@click.command()
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; exit 1 naming each generated file that is not current.",
)
@click.option(
    "--only",
    multiple=True,
    type=click.Choice([e.name for e in REGISTRY]),
    metavar="NAME",
    help="Only this entry of the registry (repeatable; --list names them).",
)
@click.option(
    "--slow",
    is_flag=True,
    help="Also the slow entries: the kill matrix, which runs every mutant driver through "
    "the vectors and validate-trace (about 2 min on 2 cores, needs java).",
)
@click.option("--no-svg", is_flag=True, help="Skip the lifecycle SVG (needs Graphviz's dot).")
@click.option("--list", "list_only", is_flag=True, help="Print the registry and exit.")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Repository root.",
)
def docs(
    check_only: bool, only: tuple[str, ...], slow: bool, no_svg: bool, list_only: bool, root: Path
) -> None:
    """Regenerate every generated file and docs block (make generate).

    \b
    One registry (ostrom.codegen.registry.REGISTRY, `--list` prints it) names every file,
    or generated block inside a hand-written file, that is made from a single source: the
    transition table (spec/LifecycleTable.tla, the diagrams, the guard table), the
    parameter table (the docs' tables, drivers/js/params.js, examples/params/defaults.toml,
    the parameter constants of models/MCLifecycle_ci.cfg), the command schema, the node's
    endpoint table (schema/openapi.json, docs/service.md), the exit codes (docs/cli.md),
    the TLC counterexamples committed in docs/counterexamples/ (their charts), the
    mutation scores, the mutant registry and the kill matrix. A generated block sits
    between `BEGIN generated: NAME` and `END generated: NAME` markers in a comment of the
    file's language; everything outside the blocks is written by hand.

    \b
    Everything is rendered before anything is written: a file that cannot be read or lacks
    its block (exit 2), or a missing program (exit 3), leaves the tree as it was. The kill
    matrix is regenerated only with --slow (or --only kill-matrix). With --check nothing is
    written, and the exit status is 1 if a file is not current (each one named).
    """
    if list_only:
        for entry in REGISTRY:
            flags = ", ".join(f for f in ("slow" if entry.slow else "", entry.needs or "") if f)
            click.echo(f"{entry.name:<22} {entry.target}{f'  ({flags})' if flags else ''}")
            click.echo(f"{'':<22}   from {entry.source}")
        return
    missing = [d for d in ("spec", "models", "docs", "reference") if not (root / d).is_dir()]
    if missing:  # before anything is written: a wrong --root must not get stray files
        raise BadInput(
            f"{root} is not an ostrom source tree (no {', '.join(m + '/' for m in missing)}); "
            "--root names the repository's root"
        )
    entries, skipped = _selected(only, slow, svg=not no_svg)
    if any(e.needs == "dot" for e in entries) and shutil.which("dot") is None:
        raise ToolError(
            "Graphviz's `dot` is not installed: run `make generate` (it installs Debian's "
            "graphviz), or pass --no-svg"
        )
    try:
        changed = (registry.stale if check_only else registry.write)(root, entries)
    except (RuntimeError, subprocess.SubprocessError) as exc:
        raise ToolError(str(exc)) from None
    except GenerateError as exc:
        raise BadInput(str(exc)) from None
    except OSError as exc:  # writing failed
        raise BadInput(f"cannot write: {exc}") from None
    for name in skipped:
        click.echo(f"not {'checked' if check_only else 'written'}: {name}", err=True)
    for path in changed:
        click.echo(f"{'stale' if check_only else 'updated'} {_shown(path, root)}", err=True)
    if check_only and changed:
        click.echo(f"{len(changed)} generated file(s) not current: run `make generate`", err=True)
        sys.exit(ExitCode.FAILED)
    if not changed:
        click.echo(f"generated files are current ({len(entries)} entries)", err=True)


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
