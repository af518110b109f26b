"""The JavaScript driver's command table (drivers/js/lifecycle.js, block ``commands``), made
from the one command table (``ostrom.protocol.commands.COMMANDS``).

Each field names its type by the ``FieldType``'s name (``T.id``, ``T.content``, ...): the
driver defines one check per type name in ``T``, so a field added to the table reaches the
driver's check 1 by ``ostrom docs`` (make generate), and a new *type* without a check in
``T`` fails the driver on the conformance suite instead of passing unchecked.
"""

from __future__ import annotations

from ostrom.protocol.commands import (
    COMMANDS,
    MAX_EMBEDDING,
    MAX_NUMBER,
    MAX_SOURCE,
    MAX_TAG,
    MAX_TAGS,
    MAX_TITLE,
    PAYLOAD,
)

__all__ = ["js_commands"]


def js_commands() -> str:
    """``SCHEMAS`` (op -> [required, optional], each field -> its type's check) and the
    payload's field names and bounds."""

    def fields(spec: dict[str, object]) -> str:
        items = [f"{k}: T.{t.name}" for k, t in spec.items()]  # type: ignore[attr-defined]
        return "{ " + ", ".join(items) + " }" if items else "{}"

    lines = [
        f"const PAYLOAD_FIELDS = [{', '.join(repr(k) for k in PAYLOAD)}];",
        f"const BOUNDS = {{ title: {MAX_TITLE}, tag: {MAX_TAG}, tags: {MAX_TAGS}, "
        f"source: {MAX_SOURCE}, embedding: {MAX_EMBEDDING}, number: {MAX_NUMBER:g} }};",
        "const SCHEMAS = {",
    ]
    for op, c in COMMANDS.items():
        lines.append(f"  {op}: [{fields(dict(c.required))}, {fields(dict(c.optional))}],")
    lines.append("};")
    return "\n".join(lines) + "\n"
