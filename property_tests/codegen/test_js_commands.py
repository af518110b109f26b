"""The JavaScript driver's command table is the one command table, field by field
(codegen/js_commands.py); test_generated.py checks drivers/js/lifecycle.js holds it."""

from __future__ import annotations

import re

from ostrom.codegen.js_commands import js_commands
from ostrom.protocol.commands import COMMANDS, MAX_TAGS, MAX_TITLE, PAYLOAD


def test_every_op_and_field_reaches_the_driver_with_its_type() -> None:
    text = js_commands()
    rows = dict(re.findall(r"^  (\w+): (\[.*\]),$", text, re.M))
    assert list(rows) == list(COMMANDS)
    for op, c in COMMANDS.items():
        required, optional = rows[op][1:-1].split("}, {")
        for name, field_type in dict(c.required).items():
            assert f"{name}: T.{field_type.name}" in required, (op, name)
        for name, field_type in dict(c.optional).items():
            assert f"{name}: T.{field_type.name}" in optional, (op, name)


def test_the_payload_fields_and_bounds_are_the_tables() -> None:
    text = js_commands()
    assert f"const PAYLOAD_FIELDS = [{', '.join(repr(k) for k in PAYLOAD)}];" in text
    assert f"title: {MAX_TITLE}," in text and f"tags: {MAX_TAGS}," in text
