"""The file layout of a vector: deterministic, readable JSON (docs/conformance.md).

Keys keep the order of docs/conformance.md, containers that fit in ``WIDTH`` columns stay on
one line and short members are packed several to a line, so that generating twice gives
the same bytes and a diff of a vector shows the step that changed.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["compact", "dump"]

#: Lines of a vector file stay within this many columns where they can.
WIDTH: Final = 100


def compact(value: Any) -> str:
    """``value`` as JSON on one line."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), allow_nan=False)


def _fmt(value: Any, indent: int, lead: int) -> str:
    """``value`` on one line if it fits in ``WIDTH`` (after ``lead`` columns), else one
    member per line, short single-line members packed several to a line."""
    one_line = compact(value)
    if not isinstance(value, dict | list) or not value or lead + len(one_line) + 1 <= WIDTH:
        return one_line
    pad = " " * (indent + 2)
    if isinstance(value, dict):
        items = []
        for k, v in value.items():
            key = json.dumps(k, ensure_ascii=False) + ": "
            items.append(key + _fmt(v, indent + 2, len(pad) + len(key)))
    else:
        items = [_fmt(v, indent + 2, len(pad)) for v in value]
    lines: list[str] = []
    line = ""
    for item in items:
        single = "\n" not in item and len(item) <= _PACK
        if line and single and len(pad) + len(line) + len(item) + 3 <= WIDTH:
            line += ", " + item
            continue
        if line:
            lines.append(line)
        if single:
            line = item
        else:
            lines.append(item)
            line = ""
    if line:
        lines.append(line)
    close = "}" if isinstance(value, dict) else "]"
    open_ = "{" if isinstance(value, dict) else "["
    return open_ + "\n" + ",\n".join(pad + x for x in lines) + "\n" + " " * indent + close


#: Members longer than this get a line of their own (packing long ones hides them).
_PACK: Final = 48


def dump(doc: Any) -> str:
    """The file text of a JSON document: deterministic, readable, newline-terminated."""
    return _fmt(doc, 0, 0) + "\n"
