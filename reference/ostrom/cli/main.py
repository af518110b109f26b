"""The ``ostrom`` command line: one subcommand per job, each with ``--help``.

The group lists two kinds of command.  The product's — ``serve``, ``log``, ``keygen``,
``cluster``, ``node``, ``params``, ``mcp`` — are defined in this package and need nothing but
``pip install ostrom``.  The tools' (cli/tools.py: ``check``, ``conform``, ``mutate``,
``simulate``, ...) are named here and imported on first use, so the product never imports
a tool and ``ostrom serve`` never pays for one; a tool whose extra is missing stops with
one line naming the extra (cli/extras.py) instead of a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ostrom import __version__
from ostrom.cli import exits
from ostrom.cli.agent import mcp
from ostrom.cli.cluster import cluster, node
from ostrom.cli.exits import BadInput, ToolError
from ostrom.cli.extras import install_hint, missing_extra
from ostrom.cli.options import console
from ostrom.cli.service import keygen, log, serve
from ostrom.cli.tools import TOOL_COMMANDS, load
from ostrom.protocol.params import ParamError, Params, markdown_table, range_text
from ostrom.protocol.params import table as param_table
from ostrom.protocol.version import PROTOCOL_VERSION

__all__ = ["PRODUCT_COMMANDS", "main", "params"]


class _Group(click.Group):
    """The command group: the product's commands, and the tools' loaded on first use.

    A tool command whose extra is not installed becomes a stand-in that says which
    extra to install (exit 3), for ``--help`` too; ``ostrom --help`` lists both kinds
    without importing any tool."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *TOOL_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in TOOL_COMMANDS and cmd_name not in self.commands:
            self.add_command(_load_tool(cmd_name), name=cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Two sections, without importing a tool: the product, then the tools."""
        product = [
            (name, command.get_short_help_str(limit=70))
            for name, command in sorted(self.commands.items())
            if name not in TOOL_COMMANDS
        ]
        tools = [
            (name, entry.summary + (f" [{entry.extra}]" if entry.extra else ""))
            for name, entry in sorted(TOOL_COMMANDS.items())
        ]
        with formatter.section("Commands (the product: pip install ostrom)"):
            formatter.write_dl(product)
        with formatter.section("Tools that check it ([extra]: pip install 'ostrom[extra]')"):
            formatter.write_dl(tools)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            message = missing_extra(exc)
            if message is None:
                raise
            raise ToolError(message) from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's ``main`` inside the one error boundary (``cli/exits.py``): every
        exception becomes one line and an exit code of docs/cli.md."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        if args is not None and any("\x00" in str(a) for a in args):
            # no shell can pass one (execve cannot); an in-process caller must not either
            click.echo("error: an argument contains a NUL byte", err=True)
            sys.exit(exits.ExitCode.BAD_INPUT)
        code = exits.run(
            lambda: super(_Group, self).main(args, prog_name, complete_var, False, **extra)
        )
        sys.exit(code)


def _load_tool(name: str) -> click.Command:
    """The tool command ``name``, or a stand-in naming the extra it lacks."""
    try:
        return load(name)
    except ModuleNotFoundError as exc:
        message = missing_extra(exc)
        if message is None:
            raise
    entry = TOOL_COMMANDS[name]

    @click.command(
        name=name,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        help=f"{entry.summary} (needs {install_hint(entry.extra or 'all')})",
        add_help_option=False,
    )
    def unavailable() -> None:
        raise ToolError(message)

    return unavailable


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__,
    prog_name="ostrom",
    message=f"%(prog)s %(version)s (protocol version {PROTOCOL_VERSION})",
)
def main() -> None:
    """ostrom: model-check the specs, run the reference implementation, check conformance."""


@click.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the parameters as JSON.")
@click.option(
    "--markdown",
    is_flag=True,
    help="Print the table as Markdown (docs/design.md §8 embeds it), defaults only.",
)
def params(file: Path | None, as_json: bool, markdown: bool) -> None:
    """Print the parameter table, or validate FILE.toml and print its effective values.

    Keys of FILE are the parameter names (e.g. w_min, quorum, tau_accept), at the top
    level or all under one [params] table; keys not given take their defaults; unknown
    keys, keys beside [params], out-of-range values and values finer than the protocol's
    resolution (10^-6) are errors that name them (exit 2).
    """
    try:
        p = Params.from_toml(file) if file else Params()
    except ParamError as exc:
        raise BadInput(str(exc)) from None
    if as_json:
        click.echo(json.dumps(p.to_dict(), indent=2))
    elif markdown:
        click.echo(markdown_table(), nl=False)
    else:
        console(160).print(_params_table(p, file))


def _params_table(p: Params, file: Path | None) -> Table:
    values = p.to_dict()
    title = f"parameters of {file}" if file else "parameters (defaults)"
    table = Table(title=title, title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("value" if file else "default", no_wrap=True)
    table.add_column("unit", no_wrap=True)
    table.add_column("range", no_wrap=True)
    table.add_column("meaning")
    for row in param_table():
        v = values[row.name]
        shown = ", ".join(f"{x:g}" for x in v) if isinstance(v, list) else str(v)
        if file and v != (list(row.default) if isinstance(row.default, tuple) else row.default):
            shown += " *"  # not the default: marked with a sign, not a colour alone
        table.add_row(row.name, shown, row.unit, range_text(row), Text(row.doc))
    if file:
        table.caption = "* differs from the default"
    return table


#: The product's commands (the tools' are named in cli/tools.py).
PRODUCT_COMMANDS: tuple[click.Command, ...] = (serve, log, keygen, cluster, node, params, mcp)
for _command in PRODUCT_COMMANDS:
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
