"""Mutation operators over a TLA+ module's text: the small mistakes a designer makes.

Each operator finds its sites in the text with comments and strings blanked
(verify/tlc/text.py) and rewrites the original at the same offsets, so a mutant is the
module with one small edit.  The operators, by name:

``cmp``        a comparison flipped at its boundary (``>=`` to ``>``, ``<`` to ``<=``, ``=`` to
               ``#`` and back) — not ``x' =`` (an assignment: flipping it only makes TLC
               fail to evaluate) nor the ``=`` of an ``EXCEPT`` or ``LET`` clause;
``arith``      ``+`` and binary ``-`` swapped;
``const``      an integer literal nudged by one, up and (above 0) down;
``in``         ``\\in`` and ``\\notin`` swapped (not in a binder: ``\\E x \\in S``);
``set``        ``\\cup`` and ``\\cap`` swapped, ``\\subseteq`` to ``\\subset``;
``quant``      ``\\E`` and ``\\A`` swapped;
``bool``       ``TRUE`` and ``FALSE`` swapped, a ``~`` dropped;
``conj``       one bullet of a conjunction list (``/\\`` at one column, two or more) dropped;
``disj``       one bullet of a disjunction list dropped;
``unchanged``  one variable dropped from an ``UNCHANGED <<...>>`` tuple;
``except``     one clause of an ``EXCEPT`` dropped (the only one: ``[f EXCEPT !...]`` to ``f``).

A mutant's id is ``Definition/operator/n`` (the n-th site of that operator in that
definition), stable under edits of other definitions; its ``change`` (the text before and
after) lets a file of accepted equivalent mutants notice that an id now names another edit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ostrom.verify.tlc.text import Definition, blank, definitions

__all__ = ["OPERATORS", "Mutant", "mutants"]

OPERATORS = ("cmp", "arith", "const", "in", "set", "quant", "bool", "conj", "disj",
             "unchanged", "except")  # fmt: skip

# every multi-character operator first, so that `<=` is not read as `<` then `=`
_TOKEN = re.compile(
    r"<=>|=>|==|\|->|->|<-|<<|>>|<>|\[\]|~>|<=|=<|>=|/=|/\\|\\/|\.\.|::|"
    r"\\(?:in|notin|cup|cap|subseteq|E|A|geq|leq)(?![A-Za-z])|"
    r"\bTRUE\b|\bFALSE\b|[<>=#+\-~]|\b\d+\b"
)
_FLIP = {"<=": "<", "=<": "<", "\\leq": "<", "<": "<=", ">=": ">", "\\geq": ">", ">": ">=",
         "=": "#", "#": "=", "/=": "=", "+": "-", "-": "+", "\\in": "\\notin",
         "\\notin": "\\in", "\\cup": "\\cap", "\\cap": "\\cup", "\\subseteq": "\\subset",
         "\\E": "\\A", "\\A": "\\E", "TRUE": "FALSE", "FALSE": "TRUE"}  # fmt: skip
_KIND = {"<=": "cmp", "=<": "cmp", "\\leq": "cmp", "<": "cmp", ">=": "cmp", "\\geq": "cmp",
         ">": "cmp", "=": "cmp", "#": "cmp", "/=": "cmp", "+": "arith", "-": "arith",
         "\\in": "in", "\\notin": "in", "\\cup": "set", "\\cap": "set", "\\subseteq": "set",
         "\\E": "quant", "\\A": "quant", "TRUE": "bool", "FALSE": "bool", "~": "bool"}  # fmt: skip
_BINDER = re.compile(r"(\\E|\\A|CHOOSE|[{\[,])\s*(?:\w+\s*,\s*)*(?:\w+|<<[\w\s,]*>>)\s*$")
_OPERAND_END = re.compile(r"[\w)\]}>'\"]\s*$")


@dataclass(frozen=True)
class Mutant:
    """One edit of a module: ``text[start:end]`` (``before``) replaced by ``after``."""

    id: str
    operator: str
    definition: str
    line: int
    start: int
    end: int
    before: str
    after: str

    @property
    def change(self) -> str:
        """The edit in one line, as the report and the equivalents file show it."""

        def short(s: str) -> str:
            s = " ".join(s.split())
            return s if len(s) <= 60 else s[:59] + "…"

        return f"{short(self.before)!s} -> {short(self.after) or '(nothing)'}"

    def apply(self, text: str) -> str:
        """The mutated module."""
        return text[: self.start] + self.after + text[self.end :]


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _token_sites(masked: str, d: Definition) -> Iterator[tuple[str, int, int, str]]:
    """(operator, start, end, replacement) of every token-level site in ``d``'s body."""
    body_start, body_end = d.start, d.end
    for m in _TOKEN.finditer(masked, body_start, body_end):
        tok = m.group()
        start, end = m.start(), m.end()
        before = masked[max(0, start - 80) : start]
        if tok.isdigit():
            n = int(tok)
            yield "const", start, end, str(n + 1)
            if n > 0:
                yield "const", start, end, str(n - 1)
            continue
        kind = _KIND.get(tok)
        if kind is None:
            continue
        if tok == "=":
            after = masked[end : end + 1]
            if re.search(r"'\s*$", before) or re.search(r"!\S*\s*$", before):
                continue  # x' = e assigns; ![k] = e / !.f = e are EXCEPT clauses
            if re.search(r"\bLET\s+\w+\s*$", before) or after == "=":
                continue
        if tok == "-" and not _OPERAND_END.search(before):
            continue  # a unary minus
        if tok == "\\in" and _BINDER.search(before):
            continue  # the \in of a binder: \E x \in S, {x \in S : P}, [x \in S |-> e]
        if tok == "~":
            yield "bool", start, end, ""
            continue
        yield kind, start, end, _FLIP[tok]


def _bullets(masked: str, d: Definition, bullet: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each bullet of a junction list in ``d`` that has a sibling: the
    bullet's own line from its indent through every following line indented deeper."""
    lines: list[tuple[int, int, str]] = []  # (offset, indent, text) of each line
    pos = masked.rfind("\n", 0, d.start) + 1
    for raw in masked[pos : d.end].split("\n"):
        stripped = raw.lstrip()
        lines.append((pos, len(raw) - len(stripped), stripped))
        pos += len(raw) + 1
    for i, (off, col, text) in enumerate(lines):
        if not text.startswith(bullet) or off + col < d.start:
            continue
        j = i + 1
        while j < len(lines) and (not lines[j][2] or lines[j][1] > col):
            j += 1
        siblings = j < len(lines) and lines[j][1] == col and lines[j][2].startswith(bullet)
        k = i - 1
        while k >= 0 and (not lines[k][2] or lines[k][1] > col):
            k -= 1
        siblings = siblings or (k >= 0 and lines[k][1] == col and lines[k][2].startswith(bullet))
        if not siblings:
            continue
        end = lines[j][0] if j < len(lines) else d.end
        while j > i + 1 and not lines[j - 1][2]:  # keep the blank lines that follow
            j -= 1
            end = lines[j][0]
        yield off, end


def _unchanged_sites(masked: str, d: Definition) -> Iterator[tuple[int, int]]:
    """(start, end) of each element (with its comma) of an ``UNCHANGED <<...>>`` with two
    or more elements."""
    for m in re.finditer(r"UNCHANGED\s*<<", masked[: d.end]):
        if m.start() < d.start:
            continue
        close = masked.find(">>", m.end())
        if close < 0:
            continue
        inner = masked[m.end() : close]
        names = list(re.finditer(r"\w+", inner))
        if len(names) < 2:
            continue
        for k, n in enumerate(names):
            s, e = m.end() + n.start(), m.end() + n.end()
            if k + 1 < len(names):  # "a, " -> drop through the next name's start
                e = m.end() + names[k + 1].start()
            else:  # the last: drop ", c"
                s = m.end() + names[k - 1].end()
            yield s, e


def _except_sites(masked: str, d: Definition, text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, replacement) dropping each clause of each ``EXCEPT`` in ``d``; found in
    ``masked``, the replacement (the function left when the only clause goes) is taken
    from the original ``text``, strings and all."""
    for m in re.finditer(r"\bEXCEPT\b", masked[: d.end]):
        if m.start() < d.start:
            continue
        # the [ that opens this EXCEPT
        depth, i = 0, m.start() - 1
        while i >= d.start:
            c = masked[i]
            if c in ")]}":
                depth += 1
            elif c in "([{":
                if depth == 0:
                    break
                depth -= 1
            i -= 1
        if i < d.start or masked[i] != "[":
            continue
        open_at = i
        # the clauses: top-level commas up to the closing ]
        clauses: list[tuple[int, int]] = []
        depth, j, start = 0, m.end(), m.end()
        while j < d.end:
            two = masked[j : j + 2]
            if two in ("<<", ">>"):
                depth += 1 if two == "<<" else -1
                j += 2
                continue
            c = masked[j]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                clauses.append((start, j))
                start = j + 1
            j += 1
        if j >= d.end:
            continue
        clauses.append((start, j))
        if len(clauses) == 1:
            f = text[open_at + 1 : m.start()]
            yield open_at, j + 1, f.strip()
            continue
        for k, (s, e) in enumerate(clauses):
            if k + 1 < len(clauses):
                yield s, clauses[k + 1][0], ""
            else:
                yield clauses[k - 1][1], e, ""


def mutants(text: str, names: Iterable[str] | None = None) -> list[Mutant]:
    """Every mutant of the module ``text`` in the definitions ``names`` (all if None), in
    the order of the text."""
    masked = blank(text, strings=True)
    wanted = set(names) if names is not None else None
    out: list[Mutant] = []
    for d in definitions(masked):
        if wanted is not None and d.name not in wanted:
            continue
        sites: list[tuple[str, int, int, str]] = list(_token_sites(masked, d))
        sites += [("conj", s, e, "") for s, e in _bullets(masked, d, "/\\")]
        sites += [("disj", s, e, "") for s, e in _bullets(masked, d, "\\/")]
        sites += [("unchanged", s, e, "") for s, e in _unchanged_sites(masked, d)]
        sites += [("except", s, e, r) for s, e, r in _except_sites(masked, d, text)]
        sites.sort(key=lambda t: (t[1], OPERATORS.index(t[0]), t[2]))
        count: dict[str, int] = {}
        for op, s, e, after in sites:
            count[op] = count.get(op, 0) + 1
            out.append(
                Mutant(
                    id=f"{d.name}/{op}/{count[op]}",
                    operator=op,
                    definition=d.name,
                    line=_line_of(text, s),
                    start=s,
                    end=e,
                    before=text[s:e],
                    after=after,
                )
            )
    return out
