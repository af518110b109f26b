"""docs/service.md's generated tables and schema/openapi.json, from the node's one table.

The node's routes, their errors and the OpenAPI document come from
``ostrom.service.openapi`` (``ENDPOINTS``, ``GATE_ERRORS``, ``openapi_text``); this module
writes them into the repository (``ostrom docs``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ostrom.docblocks import replace_block
from ostrom.service.gate import GATE_ERRORS
from ostrom.service.openapi import ENDPOINTS, openapi_path, openapi_text


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


def service_doc(text: str) -> str:
    """docs/service.md with its generated tables current."""
    try:
        text = replace_block(text, "service-api", markdown_table())
        return replace_block(text, "service-errors", errors_table())
    except ValueError as exc:
        raise ValueError(f"docs/service.md: {exc}") from None


def update_generated(root: Path) -> list[Path]:
    """Rewrite schema/openapi.json and docs/service.md's tables (``ostrom docs``)."""
    changed: list[Path] = []

    def schema(_old: str) -> str:
        return openapi_text()

    targets: list[tuple[Path, Callable[[str], str]]] = [
        (root / "schema" / "openapi.json", schema),
        (root / "docs" / "service.md", service_doc),
    ]
    for path, make in targets:
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        new = make(old)
        if new != old:
            path.write_text(new, encoding="utf-8")
            changed.append(path)
    return changed
