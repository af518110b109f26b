"""TLA+ source as text: comments and strings blanked (offsets kept), definitions found.

Tools that read or rewrite a spec's text (``explain --params`` reading call sites,
``ostrom mutate`` rewriting operators) must not mistake a ``\\*`` comment or a string's
contents for code; blanking them with spaces (or ``_`` inside strings) keeps every offset,
so a site found in the blanked text is edited in the original at the same place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Definition", "blank", "definitions"]

#: a definition's head at the start of a line: ``Name ==`` or ``Name(a, b) ==``
DEF_RE = re.compile(r"^([A-Za-z_]\w*)\s*(\(([^)]*)\))?\s*==", re.M)


@dataclass(frozen=True)
class Definition:
    """One top-level definition: its name, formal parameters, and where its body is
    (``start`` just after ``==``, ``end`` at the next definition or the module's end)."""

    name: str
    params: tuple[str, ...]
    head: int
    start: int
    end: int


def blank(text: str, *, strings: bool) -> str:
    """``text`` with TLA+ comments (``\\*`` to the end of a line, nested ``(* *)``) blanked,
    and with ``strings`` the contents of strings too; offsets kept."""
    out = list(text)
    i, depth, n = 0, 0, len(text)
    while i < n:
        two = text[i : i + 2]
        if depth == 0 and text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                if strings and text[k] != "\n":  # an unterminated string keeps its lines
                    out[k] = "_"
            i = j + 1
        elif two == "(*":
            depth += 1
            out[i] = out[i + 1] = " "
            i += 2
        elif two == "*)" and depth:
            depth -= 1
            out[i] = out[i + 1] = " "
            i += 2
        elif depth:
            out[i] = out[i] if out[i] == "\n" else " "
            i += 1
        elif two == "\\*":
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
        else:
            i += 1
    return "".join(out)


_TOP_LEVEL_RE = re.compile(
    r"^(?:(?:ASSUME|ASSUMPTION|AXIOM|THEOREM|LEMMA|CONSTANTS?|VARIABLES?|RECURSIVE|EXTENDS|"
    r"INSTANCE)\b|-{4,})",
    re.M,
)


def definitions(masked: str) -> list[Definition]:
    """The top-level definitions of a module's text (comments and strings blanked); each
    ends where the next begins, or at a top-level ASSUME, declaration or ``----`` line
    before it, the last at the module's closing ``====`` line."""
    heads = list(DEF_RE.finditer(masked))
    close = re.search(r"^={4,}\s*$", masked, re.M)
    stop = close.start() if close else len(masked)
    out = []
    for k, m in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else stop
        # a top-level ASSUME, declaration or separator line ends the definition too
        other = _TOP_LEVEL_RE.search(masked, m.end(), end)
        if other is not None:
            end = other.start()
        params = tuple(p.strip() for p in (m.group(3) or "").split(",") if p.strip())
        out.append(Definition(m.group(1), params, m.start(), m.end(), max(end, m.end())))
    return out
