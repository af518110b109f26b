"""The generated part of docs/cli.md: its exit-code table (``ostrom docs`` writes it)."""

from __future__ import annotations

from ostrom.cli.exits import EXIT_CODES

__all__ = ["exit_code_table"]


def exit_code_table() -> str:
    """docs/cli.md's exit codes, from ``exits.EXIT_CODES``."""
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| {e.code.value} | {e.meaning} |" for e in EXIT_CODES]
    return "\n".join(rows) + "\n"
