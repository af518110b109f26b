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

User text never reaches MATCH raw.  ``terms`` splits the query into runs of letters and
digits (Unicode) and the FTS5 query is those runs, each a quoted string, joined with
``OR`` (BM25 ranks the documents that match more of them higher): FTS5's own syntax —
quotes, ``NEAR``, ``AND``/``OR``/``NOT``, column filters ``col:``, parentheses, ``*``,
``^`` — is not syntax here but separators, so no query can be one SQLite rejects.  A
query with no term at all (``*`` alone, ``"()"``) is refused (``bad_query``), as are k
out of range, an unknown ``include`` and a slot that is not an id; one over
``MAX_QUERY_BYTES`` or with more than ``MAX_TERMS`` distinct terms is ``query_too_large``
(the cost of a MATCH grows with its terms).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from ostrom.protocol.commands import is_text

__all__ = [
    "DEFAULT_K",
    "HISTORY",
    "MAX_K",
    "MAX_QUERY_BYTES",
    "MAX_TERMS",
    "SearchError",
    "SearchQuery",
    "match_expression",
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


@dataclass(frozen=True)
class SearchQuery:
    """A checked search request."""

    q: str
    terms: tuple[str, ...]
    k: int = DEFAULT_K
    history: bool = False
    slot: str | None = None

    @classmethod
    def parse(
        cls, q: object, k: object = None, include: object = None, slot: object = None
    ) -> SearchQuery:
        """The request of these values (GET's query strings or POST's JSON values), or
        ``SearchError``.  ``k``: an int, or the decimal text of one."""
        if not isinstance(q, str) or not is_text(q):
            raise SearchError("bad_query", "q must be a text")
        if len(q.encode()) > MAX_QUERY_BYTES:
            raise SearchError("query_too_large", f"q is over {MAX_QUERY_BYTES} bytes")
        words = terms(q)
        if not words:
            raise SearchError("bad_query", "q has no term (letters or digits) to search for")
        if len(words) > MAX_TERMS:
            raise SearchError("query_too_large", f"q has over {MAX_TERMS} distinct terms")
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
        return cls(q, tuple(words), n, include == HISTORY, slot)

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
