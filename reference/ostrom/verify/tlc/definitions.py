"""Where a spec defines an action, and which Python method the spec cites for it.

The explorer's pages and ``ostrom explain`` show, for each step of a trace, the TLA+
definition of its action (file, line, text, formal parameters) and the method of the
reference it mirrors: the ``\\* ostrom/...py: Class.method`` comment above the
definition (docs/design.md §1, "One name per concept"; property_tests checks the
citations resolve).
"""

from __future__ import annotations

import re
from typing import Any

from ostrom import layout
from ostrom.verify.tlc.modules import search_order

__all__ = ["definitions"]


_DEF_RE = r"^{name}(\(([^)]*)\))?\s*=="
_CITE_RE = re.compile(r"\\\*\s*(?:reference/)?(ostrom/[\w/]+\.py):\s*([\w.]+)")


def definitions(actions: set[str], module: str = "") -> dict[str, dict[str, Any]]:
    """For each action name: where the spec defines it (file, line, its text, its formal
    parameters) and the Python method the spec cites for it (file, line, name)."""
    files = search_order(module or "Lifecycle")
    texts = {f: f.read_text(encoding="utf-8").splitlines() for f in files}
    out: dict[str, dict[str, Any]] = {}
    for action in sorted(a for a in actions if re.fullmatch(r"[A-Za-z_]\w*", a)):
        pattern = re.compile(_DEF_RE.format(name=re.escape(action)))
        for f, lines in texts.items():
            for n, line in enumerate(lines):
                m = pattern.match(line)
                if not m:
                    continue
                body = [line]
                for more in lines[n + 1 : n + 40]:
                    if not more.strip() or re.match(r"^[A-Za-z_]\w*(\(.*\))?\s*==", more):
                        break
                    body.append(more)
                entry: dict[str, Any] = {
                    "tla": {
                        "file": str(f.relative_to(layout.ROOT)),
                        "line": n + 1,
                        "params": (m.group(2) or "").replace(" ", ""),
                        "text": "\n".join(body),
                    }
                }
                cite = _python_cite(lines, n)
                if cite is not None:
                    entry["python"] = cite
                out[action] = entry
                break
            if action in out:
                break
    return out


def _python_cite(lines: list[str], n: int) -> dict[str, Any] | None:
    """The ``\\* ostrom/...py: Class.method`` comment just above line ``n``, resolved."""
    for k in range(n - 1, max(-1, n - 6), -1):
        m = _CITE_RE.search(lines[k])
        if m is None:
            continue
        rel, qual = m.group(1), m.group(2)
        path = layout.PACKAGE_DIR.parent / rel  # reference/ostrom/... or the installed ostrom/...
        line = 0
        method = qual.rsplit(".", 1)[-1]
        if path.is_file():
            for i, text in enumerate(path.read_text(encoding="utf-8").splitlines()):
                if re.match(rf"\s*def {re.escape(method)}\(", text):
                    line = i + 1
                    break
        return {"file": f"reference/{rel}", "line": line, "name": qual}
    return None
