"""The ``ostrom`` command line: one subcommand per job, each with ``--help``."""

from __future__ import annotations

import click

from ostrom import __version__
from ostrom.tlc.commands import check, explain


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ostrom")
def main() -> None:
    """ostrom: model-check the specs, run the reference implementation, check conformance."""


main.add_command(check)
main.add_command(explain)


if __name__ == "__main__":  # pragma: no cover
    main()
