"""TLA+ values as TLC prints them: a recursive-descent parser, a printer, and ITF encoding.

TLC's ``-tool`` output gives every state of a counterexample in TLA+ syntax. To save traces as
data (ITF JSON) and to diff states in ``ostrom explain`` we need those values as Python objects.
The grammar covers what TLC prints for *normalised* state values:

* integers ``-3``, strings ``"a\\"b"``, booleans ``TRUE``/``FALSE``;
* sequences/tuples ``<<1, 2>>`` (TLA+ cannot tell them apart; a function with domain ``1..n``
  is printed this way too);
* sets ``{1, 2}`` and integer intervals ``1..3`` (expanded to a set when small);
* records ``[a |-> 1, b |-> "x"]`` (and the empty record ``[]``);
* functions ``(k1 :> v1 @@ k2 :> v2)``;
* model values, which TLC prints as bare identifiers (``p1``);
* anything TLC prints lazily (``[x \\in Nat |-> x + 1]``, ``[S -> T]``, ``SUBSET S``...) is kept
  verbatim as :class:`Opaque`, so one exotic value never loses a whole trace.

ITF encoding (docs/design.md §12): integers as JSON numbers when they fit in a double
exactly, else ``{"#bigint": "..."}``; sequences as JSON arrays; sets ``{"#set": [...]}``; records as
plain objects; functions ``{"#map": [[k, v], ...]}``. ITF has no model values: following the
format's escape hatch they are written ``{"#unserializable": "p1"}`` (as are :class:`Opaque`
values, whose text is not an identifier, which is how they are told apart when read back).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias, Union

__all__ = [
    "ModelValue",
    "Opaque",
    "TlaFunction",
    "TlaRecord",
    "TlaSet",
    "Value",
    "ValueParseError",
    "format_pretty",
    "format_value",
    "from_itf",
    "function",
    "lift",
    "parse_value",
    "record",
    "tla",
    "to_itf",
]


@dataclass(frozen=True)
class ModelValue:
    """A TLC model value (an uninterpreted constant such as ``p1``), printed as a bare name."""

    name: str


@dataclass(frozen=True)
class Opaque:
    """A value TLC printed in a form we do not interpret (e.g. a lazy function); kept verbatim."""

    text: str


@dataclass(frozen=True)
class TlaSet:
    """A finite set; elements keep TLC's printing order so printing round-trips exactly."""

    elems: tuple[Value, ...]


@dataclass(frozen=True)
class TlaRecord:
    """A record ``[f |-> v, ...]``; fields keep their printing order."""

    fields: tuple[tuple[str, Value], ...]

    def get(self, name: str) -> Value | None:
        """The value of field ``name``, or None."""
        for key, value in self.fields:
            if key == name:
                return value
        return None


@dataclass(frozen=True)
class TlaFunction:
    """A function printed by TLC as ``(k1 :> v1 @@ k2 :> v2)``."""

    pairs: tuple[tuple[Value, Value], ...]


Value: TypeAlias = Union[  # noqa: UP007 - a recursive alias needs the string forward references
    bool, int, str, ModelValue, Opaque, TlaSet, TlaRecord, TlaFunction, tuple["Value", ...]
]


class ValueParseError(ValueError):
    """Raised when text is not a TLA+ value in the syntax TLC prints."""


# ----------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<int>-?\d+)
  | (?P<op><<|>>|\|->|:>|@@|\.\.|->|\\in\b|[\[\]{}(),])
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f"}
_UNESCAPES = {v: k for k, v in _ESCAPES.items()}
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_MAX_INTERVAL = 10_000
_SAFE_INT = 2**53


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "other"
        if kind == "ws":
            continue
        toks.append(_Tok(kind, m.group(), m.start()))
    return toks


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


class _Parser:
    """Recursive descent over the token list; one method per construct."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self, offset: int = 0) -> _Tok | None:
        j = self.i + offset
        return self.toks[j] if j < len(self.toks) else None

    def error(self, msg: str) -> ValueParseError:
        tok = self.peek()
        where = f"at offset {tok.pos} ({tok.text!r})" if tok else "at end of input"
        return ValueParseError(f"{msg} {where} in {self.text[:200]!r}")

    def next(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise self.error("unexpected end of value")
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.peek()
        if tok is None or tok.text != text:
            raise self.error(f"expected {text!r}")
        self.i += 1

    def at(self, text: str, offset: int = 0) -> bool:
        tok = self.peek(offset)
        return tok is not None and tok.text == text

    def value(self) -> Value:
        first = self.primary()
        if self.at(".."):
            self.i += 1
            last = self.primary()
            if isinstance(first, int) and isinstance(last, int) and not isinstance(first, bool):
                if isinstance(last, bool):
                    raise self.error("interval bound is not an integer")
                if last - first < _MAX_INTERVAL:
                    return TlaSet(tuple(range(first, last + 1)))
                return Opaque(f"{first}..{last}")
            raise self.error("interval bounds must be integers")
        return first

    def primary(self) -> Value:
        tok = self.next()
        if tok.kind == "int":
            return int(tok.text)
        if tok.kind == "string":
            return _unescape(tok.text[1:-1])
        if tok.kind == "ident":
            if tok.text == "TRUE":
                return True
            if tok.text == "FALSE":
                return False
            if tok.text == "SUBSET" or tok.text == "UNION":
                return Opaque(self._raw_from(tok.pos, self._skip_value_raw()))
            return ModelValue(tok.text)
        if tok.text == "<<":
            return tuple(self.items(">>"))
        if tok.text == "{":
            return TlaSet(tuple(self.items("}")))
        if tok.text == "[":
            return self.bracket(tok)
        if tok.text == "(":
            return self.function()
        self.i -= 1
        raise self.error("unexpected token")

    def items(self, close: str) -> list[Value]:
        out: list[Value] = []
        if self.at(close):
            self.i += 1
            return out
        while True:
            out.append(self.value())
            if self.at(","):
                self.i += 1
                continue
            self.expect(close)
            return out

    def bracket(self, open_tok: _Tok) -> Value:
        if self.at("]"):
            self.i += 1
            return TlaRecord(())
        nxt = self.peek()
        if nxt is not None and nxt.kind == "ident" and self.at("|->", 1):
            fields: list[tuple[str, Value]] = []
            while True:
                name = self.next()
                if name.kind != "ident":
                    self.i -= 1
                    raise self.error("expected a record field name")
                self.expect("|->")
                fields.append((name.text, self.value()))
                if self.at(","):
                    self.i += 1
                    continue
                self.expect("]")
                return TlaRecord(tuple(fields))
        # [x \in S |-> e], [S -> T], [a: S] ...: keep the text up to the matching bracket.
        end = self._skip_to_close("[", "]")
        return Opaque(self._raw_from(open_tok.pos, end))

    def function(self) -> Value:
        pairs: list[tuple[Value, Value]] = []
        while True:
            key = self.value()
            self.expect(":>")
            pairs.append((key, self.value()))
            if self.at("@@"):
                self.i += 1
                continue
            self.expect(")")
            return TlaFunction(tuple(pairs))

    def _skip_to_close(self, open_text: str, close_text: str) -> int:
        """Advance past the bracket matching an already consumed opener; return its end offset."""
        depth = 1
        while True:
            tok = self.next()
            if tok.text == open_text:
                depth += 1
            elif tok.text == close_text:
                depth -= 1
                if depth == 0:
                    return tok.pos + len(tok.text)

    def _skip_value_raw(self) -> int:
        start = self.i
        self.value()
        last = self.toks[self.i - 1] if self.i > start else self.toks[start]
        return last.pos + len(last.text)

    def _raw_from(self, start: int, end: int) -> str:
        return " ".join(self.text[start:end].split())


def parse_value(text: str) -> Value:
    """Parse one TLA+ value printed by TLC; raise :class:`ValueParseError` on anything else."""
    parser = _Parser(text)
    value = parser.value()
    if parser.peek() is not None:
        raise parser.error("trailing text after value")
    return value


# ----------------------------------------------------------------------------------------------
# Printer (TLC syntax)
# ----------------------------------------------------------------------------------------------


def _quote(s: str) -> str:
    return '"' + "".join("\\" + _UNESCAPES[c] if c in _UNESCAPES else c for c in s) + '"'


def format_value(value: Value, *, lines: bool = False) -> str:
    """Print ``value`` in the TLA+ syntax TLC uses (the inverse of :func:`parse_value`).

    ``lines``: a line break after every element separator (``,`` and ``@@``) instead of a
    space, for values written into a module TLC parses.  SANY's time grows with the
    square of a line's length (a chunk's TraceLog, whose start states are one line of
    120 kB, spent 12 of its run's 20 s parsing; broken into lines, 0.6 s), and a line
    break is white space, so the value is the same."""
    sep = ",\n" if lines else ", "
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, ModelValue):
        return value.name
    if isinstance(value, Opaque):
        return value.text
    if isinstance(value, tuple):
        return "<<" + sep.join(format_value(v, lines=lines) for v in value) + ">>"
    if isinstance(value, TlaSet):
        return "{" + sep.join(format_value(v, lines=lines) for v in value.elems) + "}"
    if isinstance(value, TlaRecord):
        return (
            "[" + sep.join(f"{k} |-> {format_value(v, lines=lines)}" for k, v in value.fields) + "]"
        )
    if not value.pairs:
        return "<<>>"  # TLC prints the empty function as the empty sequence
    body = (" @@\n" if lines else " @@ ").join(
        f"{format_value(k, lines=lines)} :> {format_value(v, lines=lines)}" for k, v in value.pairs
    )
    return "(" + body + ")"


def format_pretty(value: Value, width: int = 72, indent: int = 0) -> str:
    """``format_value`` laid out for reading: a record, function, set or sequence whose one
    line would pass ``width`` gets one element per line, indented by nesting.  Only the
    layout differs: ``parse_value`` of the result is ``value``."""
    flat = format_value(value)
    if len(flat) + indent <= width:
        return flat
    pad = " " * (indent + 2)

    def block(open_: str, items: list[str], sep: str, close: str) -> str:
        if not items:
            return flat
        return (
            open_ + "\n" + (sep + "\n").join(pad + i for i in items) + "\n" + " " * indent + close
        )

    inner = indent + 2
    if isinstance(value, TlaRecord):
        items = [f"{k} |-> {format_pretty(v, width, inner + len(k) + 5)}" for k, v in value.fields]
        return block("[", items, ",", "]")
    if isinstance(value, TlaFunction) and value.pairs:
        items = []
        for k, v in value.pairs:
            key = format_value(k)
            items.append(f"{key} :> {format_pretty(v, width, inner + len(key) + 4)}")
        return block("(", items, " @@", ")")
    if isinstance(value, TlaSet):
        return block("{", [format_pretty(v, width, inner) for v in value.elems], ",", "}")
    if isinstance(value, tuple):
        return block("<<", [format_pretty(v, width, inner) for v in value], ",", ">>")
    return flat


# ----------------------------------------------------------------------------------------------
# Building values from Python data (the modules the trace compilers write)
# ----------------------------------------------------------------------------------------------


def lift(value: object) -> Value:
    """``value`` as a :class:`Value`: a Python ``set``/``frozenset`` becomes a :class:`TlaSet`
    whose elements are in printed order (so two equal sets are equal values and print the
    same), a ``list`` a sequence; values of the model are kept, nested ones lifted."""
    if isinstance(value, bool | int | str | ModelValue | Opaque):
        return value
    if isinstance(value, frozenset | set):
        elems = [lift(v) for v in value]
        return TlaSet(tuple(sorted(elems, key=format_value)))
    if isinstance(value, tuple | list):
        return tuple(lift(v) for v in value)
    if isinstance(value, TlaSet | TlaRecord | TlaFunction):
        return value
    raise TypeError(f"no TLA+ value for {value!r}")


def record(**fields: object) -> TlaRecord:
    """The record ``[f |-> v, ...]`` of ``fields`` (in the given order, values lifted)."""
    return TlaRecord(tuple((k, lift(v)) for k, v in fields.items()))


def function(pairs: Iterable[tuple[object, object]]) -> TlaFunction:
    """The function ``(k1 :> v1 @@ ...)`` of ``pairs`` (keys and values lifted)."""
    return TlaFunction(tuple((lift(k), lift(v)) for k, v in pairs))


def tla(value: object, *, lines: bool = False) -> str:
    """``value`` (lifted) in TLA+ syntax (``lines``: as :func:`format_value`)."""
    return format_value(lift(value), lines=lines)


# ----------------------------------------------------------------------------------------------
# ITF encoding
# ----------------------------------------------------------------------------------------------


def to_itf(value: Value) -> Any:
    """Encode ``value`` as ITF JSON (a JSON-serialisable Python object)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -_SAFE_INT < value < _SAFE_INT else {"#bigint": str(value)}
    if isinstance(value, str):
        return value
    if isinstance(value, ModelValue):
        return {"#unserializable": value.name}
    if isinstance(value, Opaque):
        return {"#unserializable": value.text}
    if isinstance(value, tuple):
        return [to_itf(v) for v in value]
    if isinstance(value, TlaSet):
        return {"#set": [to_itf(v) for v in value.elems]}
    if isinstance(value, TlaRecord):
        return {k: to_itf(v) for k, v in value.fields}
    return {"#map": [[to_itf(k), to_itf(v)] for k, v in value.pairs]}


def _clip(data: Any, limit: int = 80) -> str:
    text = repr(data)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def from_itf(data: Any) -> Value:
    """Decode ITF JSON back into a :class:`Value`; raise ValueError on anything not ITF."""
    if isinstance(data, bool | str):
        return data
    if isinstance(data, int):
        return data
    if isinstance(data, list):
        return tuple(from_itf(v) for v in data)
    if isinstance(data, dict):
        if "#bigint" in data:
            text = data["#bigint"]
            if not isinstance(text, str | int) or isinstance(text, bool):
                raise ValueError(f"malformed #bigint: {text!r}")
            return int(text)
        for tag in ("#set", "#tup", "#map"):
            if tag in data and not isinstance(data[tag], list):
                raise ValueError(f"malformed {tag}: {data[tag]!r} is not a list")
        if "#set" in data:
            elems = tuple(from_itf(v) for v in data["#set"])
            # distinct as TLA+ values: printed, since Python takes TRUE for 1
            if len({format_value(e) for e in elems}) != len(elems):
                raise ValueError(f"malformed #set: duplicate elements in {_clip(data)}")
            return TlaSet(elems)
        if "#tup" in data:
            return tuple(from_itf(v) for v in data["#tup"])
        if "#map" in data:
            pairs = []
            for pair in data["#map"]:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ValueError(f"malformed #map entry: {pair!r}")
                pairs.append((from_itf(pair[0]), from_itf(pair[1])))
            if len({format_value(k) for k, _ in pairs}) != len(pairs):
                raise ValueError(f"malformed #map: duplicate keys in {_clip(data)}")
            return TlaFunction(tuple(pairs))
        if "#unserializable" in data:
            text = str(data["#unserializable"])
            return ModelValue(text) if _IDENT_RE.match(text) else Opaque(text)
        return TlaRecord(tuple((str(k), from_itf(v)) for k, v in data.items()))
    raise ValueError(f"not an ITF value: {data!r}")
