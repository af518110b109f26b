"""The generated parts of docs/cli.md (``ostrom docs`` writes them, a test checks them)."""

from __future__ import annotations

from pathlib import Path

from ostrom.cli.exits import EXIT_CODES
from ostrom.docblocks import replace_block


def exit_code_table() -> str:
    """docs/cli.md's exit codes, from ``exits.EXIT_CODES``."""
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| {e.code.value} | {e.meaning} |" for e in EXIT_CODES]
    return "\n".join(rows) + "\n"


def cli_doc(text: str) -> str:
    """docs/cli.md with its generated blocks current."""
    try:
        return replace_block(text, "exit-codes", exit_code_table())
    except ValueError as exc:
        raise ValueError(f"docs/cli.md: {exc}") from None


def update_generated(root: Path) -> list[Path]:
    """Rewrite docs/cli.md's generated blocks; the files that changed."""
    path = root / "docs" / "cli.md"
    old = path.read_text(encoding="utf-8")
    new = cli_doc(old)
    if new == old:
        return []
    path.write_text(new, encoding="utf-8")
    return [path]
