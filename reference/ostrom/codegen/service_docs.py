"""docs/service.md's generated tables, from the node's one table.

The node's routes, their errors and the OpenAPI document come from
``ostrom.service.openapi`` (``ENDPOINTS``, ``GATE_ERRORS``, ``openapi_text``); this module
renders the docs' tables of them, and ``ostrom docs`` writes the tables and the OpenAPI
document into the repository (``ostrom.codegen.registry``).
"""

from __future__ import annotations

from ostrom.service.gate import GATE_ERRORS, IDENTITY_COMMANDS
from ostrom.service.openapi import ENDPOINTS, openapi_path

__all__ = ["errors_table", "identity_table", "markdown_table"]


def markdown_table() -> str:
    """docs/service.md's API table."""
    rows = ["| method | path | answers | errors |", "|---|---|---|---|"]
    for e in ENDPOINTS:
        q = "?" + "&".join(f"{x.name}=" for x in e.query) if e.query else ""
        errs = ", ".join(f"`{c}`" for c in e.errors) or "—"
        rows.append(f"| {e.method} | `{openapi_path(e.path)}{q}` | {e.summary} | {errs} |")
    return "\n".join(rows) + "\n"


def errors_table() -> str:
    """docs/service.md's error table (from ``GATE_ERRORS``)."""
    rows = ["| code | HTTP | meaning |", "|---|---|---|"]
    rows += [f"| `{e.code}` | {e.status} | {e.doc} |" for e in GATE_ERRORS.values()]
    return "\n".join(rows) + "\n"


def identity_table() -> str:
    """docs/service.md's table of the gate's own commands (from ``IDENTITY_COMMANDS``)."""
    rows = ["| op | fields | what it does |", "|---|---|---|"]
    rows += [
        f"| `{c.op}` | {', '.join(f'`{f}`' for f in c.fields)} | {c.doc} |"
        for c in IDENTITY_COMMANDS.values()
    ]
    return "\n".join(rows) + "\n"
