"""Governed retrieval: GET/POST /search and GET /slots/{slot} (docs/design.md §11).

The node ranks the payloads it keeps with SQLite's FTS5 and BM25 (store.py:
``content_fts``), and the *protocol* decides what may be returned (READ-1): a hit is an
artifact whose entry of the Community's public state (``Orchestrator.public_artifact``,
read under the node's lock, at the log position the answer names) is ``active`` and not
``hidden`` — what ``serve(slot)`` serves — and whose current digest is the payload's;
with ``include=history``, ``superseded`` ones too.  No second copy of the states is
kept anywhere that could drift from the protocol's: the index holds text, the state
comes from the Community at the moment of the answer.  A forgotten artifact's payload is
not in the index at all (FORGET-PURGE), and its state would exclude it anyway.

Search takes plain words.  A query that holds FTS5's syntax — a character of
``SYNTAX_CHARS`` (double quotes, ``*``, ``^``, parentheses and braces, ``:`` of a column filter,
``+``) or one of the operators ``AND``, ``OR``, ``NOT``, ``NEAR`` as a word in capitals,
as FTS5 spells them — is refused (``query_syntax``, 422: "search takes plain words")
rather than read as separators: the asker meant something the node would not do.  Other
punctuation (``.``, ``,``, ``?``, ``'``, ``-``, ...) separates words, as in prose.  User
text still never reaches MATCH raw: ``terms`` splits the query into runs of letters and
digits (Unicode) and the FTS5 query is those runs, each a quoted string, joined with
``OR`` (BM25 ranks the documents that match more of them higher), so no query can be one
SQLite rejects.  A query with no term at all (``...``) is refused (``bad_query``), as
are k out of range, an unknown ``include`` and a slot that is not an id; one over
``MAX_QUERY_BYTES`` or with more than ``MAX_TERMS`` distinct terms is ``query_too_large``
(the cost of a MATCH grows with its terms).

A search may carry a query ``vector`` (POST only) when the community declares an
``embedding_dim`` (service/dense.py): its numbers are checked as an embedding's
(``bad_embedding``, ``embedding_dimension``, ``embeddings_off``), and a zero vector, which
points nowhere, is ``bad_embedding`` too.  With a vector, ``q`` may be left out (dense
retrieval alone); with both, the two rankings are fused (dense.rrf).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from ostrom.protocol.commands import is_text
from ostrom.service.gate import embedding_refusal

__all__ = [
    "DEFAULT_K",
    "HISTORY",
    "MAX_K",
    "MAX_QUERY_BYTES",
    "MAX_TERMS",
    "OPERATORS",
    "SYNTAX_CHARS",
    "SearchError",
    "SearchQuery",
    "match_expression",
    "query_vector",
    "syntax",
    "terms",
]

#: Most hits one search returns.
MAX_K: Final = 100
#: Hits a search returns by default.
DEFAULT_K: Final = 10
#: Longest query text, in UTF-8 bytes.
MAX_QUERY_BYTES: Final = 4096
#: Most distinct terms of a query.
MAX_TERMS: Final = 32
#: The one value of ``include``: superseded versions too.
HISTORY: Final = "history"
#: Longest slot id (the protocol's ids: community.py).
_MAX_SLOT: Final = 256

#: The characters of FTS5's query syntax a plain-words query may not hold.
SYNTAX_CHARS: Final = '"*^:(){}+'
#: FTS5's operators, as FTS5 spells them (capitals): not words of a plain query.
OPERATORS: Final = ("AND", "OR", "NOT", "NEAR")
_SYNTAX: Final = re.compile(
    "[" + re.escape(SYNTAX_CHARS) + "]|(?<![^\\W_])(?:" + "|".join(OPERATORS) + ")(?![^\\W_])"
)

#: A term: a run of Unicode letters and digits (no underscore: FTS5's unicode61
#: tokenizer separates on it too).
_TERM: Final = re.compile(r"[^\W_]+")


class SearchError(Exception):
    """A search request the node refuses: one code of ``GATE_ERRORS`` and a detail."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def terms(q: str) -> list[str]:
    """The distinct terms of ``q``, in order of first appearance, case-folded."""
    seen: dict[str, None] = {}
    for t in _TERM.findall(q):
        seen.setdefault(t.casefold(), None)
    return list(seen)


def match_expression(words: list[str]) -> str:
    """The FTS5 query of ``words``: each a quoted string (no ``"`` can be in a term, and
    a quoted string is never an operator), joined with OR."""
    return " OR ".join(f'"{w}"' for w in words)


def syntax(q: str) -> str | None:
    """The first piece of FTS5 syntax in ``q`` (a character or an operator), or None."""
    m = _SYNTAX.search(q)
    return None if m is None else m.group()


def query_vector(vector: object, dim: int) -> tuple[float, ...]:
    """A checked query vector (``SearchError`` with the embedding's codes otherwise)."""
    refusal = embedding_refusal(vector, dim)
    if refusal is not None:
        raise SearchError(*refusal)
    assert isinstance(vector, list)
    if not any(vector):
        raise SearchError("bad_embedding", "a zero vector points nowhere: nothing is near it")
    return tuple(float(x) for x in vector)


@dataclass(frozen=True)
class SearchQuery:
    """A checked search request: words (``q``, ``terms``; empty with a vector alone),
    a query vector, or both."""

    q: str
    terms: tuple[str, ...]
    k: int = DEFAULT_K
    history: bool = False
    slot: str | None = None
    vector: tuple[float, ...] | None = None

    @classmethod
    def parse(
        cls,
        q: object,
        k: object = None,
        include: object = None,
        slot: object = None,
        *,
        vector: object = None,
        dim: int = 0,
    ) -> SearchQuery:
        """The request of these values (GET's query strings or POST's JSON values), or
        ``SearchError``.  ``k``: an int, or the decimal text of one; ``vector``: a query
        vector (None: none), checked against the community's ``embedding_dim`` ``dim``;
        ``q`` may be None only with a vector."""
        vec = None if vector is None else query_vector(vector, dim)
        if q is None and vec is not None:
            words: list[str] = []
            q = ""
        else:
            words = cls._words(q)
        assert isinstance(q, str)
        if k is None:
            n = DEFAULT_K
        elif isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 4:
            n = int(k)
        elif isinstance(k, int) and not isinstance(k, bool):
            n = k
        else:
            n = -1
        if not 1 <= n <= MAX_K:
            raise SearchError("bad_query", f"k must be an integer in 1..{MAX_K}")
        if include not in (None, HISTORY):
            raise SearchError("bad_query", f"include must be {HISTORY!r} or absent")
        if slot is not None and not (
            isinstance(slot, str) and is_text(slot) and 0 < len(slot) <= _MAX_SLOT
        ):
            raise SearchError("bad_query", f"slot must be a slot id (1..{_MAX_SLOT} characters)")
        return cls(q, tuple(words), n, include == HISTORY, slot, vec)

    @staticmethod
    def _words(q: object) -> list[str]:
        """The terms of a query text (``SearchError`` for a text search does not take)."""
        if not isinstance(q, str) or not is_text(q):
            raise SearchError("bad_query", "q must be a text")
        if len(q.encode()) > MAX_QUERY_BYTES:
            raise SearchError("query_too_large", f"q is over {MAX_QUERY_BYTES} bytes")
        found = syntax(q)
        if found is not None:
            raise SearchError(
                "query_syntax", f"search takes plain words: {found!r} is FTS5 query syntax"
            )
        words = terms(q)
        if not words:
            raise SearchError("bad_query", "q has no term (letters or digits) to search for")
        if len(words) > MAX_TERMS:
            raise SearchError("query_too_large", f"q has over {MAX_TERMS} distinct terms")
        return words

    @property
    def match(self) -> str:
        return match_expression(list(self.terms))


def eligible(art: dict[str, Any] | None, history: bool) -> bool:
    """READ-1: may an artifact of this public-state entry be returned?  Active and not
    hidden (what the slot serves, LC-SAFE-5); with history, superseded too.  Never a
    proposed, under-review, disputed, rejected, expired, retracted or forgotten one."""
    if art is None or art.get("hidden"):
        return False
    return art.get("state") == "active" or (history and art.get("state") == "superseded")
