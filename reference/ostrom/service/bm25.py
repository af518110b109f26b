"""FTS5's ``bm25`` mirrored exactly, for the terms that most documents hold (READ-1's fast
path: docs/design.md §11 "Search at scale").

Why.  FTS5 ranks a query by calling ``bm25`` on *every* row that matches it; for a word
that most documents contain that is every document, and a search's cost grows with the
store (at 100k artifacts a common word took ~250 ms, almost all of it in ``bm25``; the
doclist itself is read in a fraction of that).  The score of a row depends only on a few
numbers: per phrase of the query, its weighted count in the row (``tf``: the column
weights times the phrase's instances per column) and the number of rows holding it
(``nHit``); the row's size in tokens (``D``, FTS5's ``docsize``); the table's row count
and token total (FTS5's averages record).  ``Postings`` keeps, for the terms searched
that many rows hold (``HOT_DF``), the (content id, ``tf``) of every row holding them,
and ``rank`` recomputes FTS5's formula over them with numpy in the same floating-point
operations in the same order (SQLite's ext/fts5/fts5_aux.c, ``fts5Bm25Function``):

    idf   = log((nRow - nHit + 0.5) / (nHit + 0.5)), or 1e-6 if that is <= 0
    score = sum, phrase by phrase in order, of
            idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * D / avgdl))

so a score is the very double FTS5 returns, and the order (score, then content id) the one
``ORDER BY bm25, rowid`` gives.  Nothing is approximated: a term's ``tf`` is not counted
here but read back from FTS5's own score of each row (the formula solved for ``tf``,
rounded to the weights' grid of halves) and kept only if recomputing every row's score
from it gives FTS5's double bit for bit (``Postings`` returns None otherwise, and the
caller runs FTS5's query instead).  A term's postings are brought up to date with the rows
added since (content ids only grow while nothing is deleted), and every posting is dropped
when a payload is deleted (FORGET-PURGE: the ids may be used again, and no purged row may
be ranked).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = [
    "HOT_DF",
    "K1",
    "MAX_POSTINGS",
    "B",
    "Floats",
    "Ids",
    "Postings",
    "idf",
    "match_terms",
    "part",
    "varints",
]

#: FTS5's bm25 constants (fts5_aux.c).
K1: Final = 1.2
B: Final = 0.75
#: A term is kept (its postings cached) when at least this many rows hold it: below, FTS5's
#: own query reads few rows and is fast already.
HOT_DF: Final = 2_000
#: At most this many postings kept over all terms (least recently searched dropped first):
#: 16 bytes each (an int64 content id, a float64 tf), 256 MB in all.
MAX_POSTINGS: Final = 16_000_000

#: A query as service/search.py builds it: quoted terms joined with OR.
_MATCH: Final = re.compile(r'"([^"]+)"(?: OR "([^"]+)")*')
_TERM: Final = re.compile(r'"([^"]+)"')

#: At most this many terms' counts remembered by ``worth``.
_MAX_COUNTS: Final = 100_000

Ids = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


def varints(blob: bytes) -> list[int]:
    """The SQLite varints of ``blob`` (FTS5's docsize and averages records)."""
    out: list[int] = []
    i = 0
    while i < len(blob):
        v = 0
        for j in range(9):
            if i >= len(blob):  # cut short (a hostile file): the scores will not agree
                break
            c = blob[i]
            i += 1
            if j == 8:
                v = (v << 8) | c
                break
            v = (v << 7) | (c & 0x7F)
            if not c & 0x80:
                break
        out.append(v)
    return out


def match_terms(match: str) -> list[str] | None:
    """The terms of an FTS5 query of quoted terms joined with OR (search.match_expression),
    in order; None for any other query."""
    if _MATCH.fullmatch(match) is None:
        return None
    return _TERM.findall(match)


def idf(n_row: int, n_hit: int) -> float:
    """FTS5's inverse document frequency of a phrase that ``n_hit`` of ``n_row`` rows hold."""
    x = math.log((float(n_row) - float(n_hit) + 0.5) / (float(n_hit) + 0.5))
    return 1e-6 if x <= 0.0 else x


def part(weight: float, tf: Floats, dl: Floats, avgdl: float) -> Floats:
    """One phrase's term of the score (``weight``: its idf), as fts5_aux.c computes it."""
    out: Floats = weight * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * dl / avgdl)))
    return out


@dataclass
class _Term:
    ids: Ids  # every content id that holds the term, ascending
    tf: Floats  # its weighted count in each
    seen: int  # the largest content id when the postings were last brought up to date


class Postings:
    """The hot terms' postings and every row's size (module docstring), for one
    connection; ``weights``: the bm25 column weights, as the SQL text passes them."""

    def __init__(self, db: sqlite3.Connection, fts: str, weights: str) -> None:
        self._db, self._fts, self._weights = db, fts, weights
        self._terms: OrderedDict[str, _Term] = OrderedDict()
        self._dl: Floats = np.zeros(0)
        self._dl_seen = 0
        self.hot_df = HOT_DF
        #: term -> (rows holding it, the largest content id then): ``worth``'s counts
        self._df: dict[str, tuple[int, int]] = {}

    def never_hot(self) -> Postings:
        """Postings of the same index that never take the fast path: FTS5's own query
        answers every search (the comparison of the tests and the benchmark)."""
        out = Postings(self._db, self._fts, self._weights)
        out.hot_df = 1 << 62
        return out

    def clear(self) -> None:
        """Forget every posting and size (a payload was deleted: FORGET-PURGE)."""
        self._terms.clear()
        self._dl, self._dl_seen = np.zeros(0), 0

    def stats(self) -> tuple[int, float]:
        """(nRow, avgdl) from FTS5's averages record."""
        row = self._db.execute(f"SELECT block FROM {self._fts}_data WHERE id = 1").fetchone()
        if row is None:
            return 0, 0.0
        v = varints(bytes(row[0]))
        if not v:
            return 0, 0.0
        n_row, n_tok = v[0], sum(v[1:])
        return n_row, (float(n_tok) / float(n_row) if n_row else 0.0)

    def _sizes(self, top: int) -> Floats:
        """Every row's size in tokens (FTS5's ``xColumnSize(-1)``), by content id."""
        if top > self._dl_seen:
            rows = self._db.execute(
                f"SELECT id, sz FROM {self._fts}_docsize WHERE id > ?", (self._dl_seen,)
            ).fetchall()
            dl = np.zeros(top + 1)
            dl[: len(self._dl)] = self._dl
            for i, sz in rows:
                if 1 <= i <= top:
                    dl[i] = float(sum(varints(bytes(sz))))
            self._dl, self._dl_seen = dl, top
        return self._dl

    def _read(
        self, term: str, after: int, before: int, n_row: int, avgdl: float, dl: Floats
    ) -> tuple[Ids, Floats] | None:
        """(ids, tf) of the rows after content id ``after`` that hold ``term`` (``before``
        rows up to it do), read back from FTS5's own scores; None if a recomputed score is
        not FTS5's double."""
        phrase = f'"{term}"'
        rows = self._db.execute(
            f"SELECT rowid, -bm25({self._fts}, {self._weights}) FROM {self._fts} "
            f"WHERE {self._fts} MATCH ? AND rowid > ?",
            (phrase, after),
        ).fetchall()
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        score = np.array([r[1] for r in rows], dtype=np.float64)
        by_id = np.argsort(ids, kind="stable")  # FTS5 reads in rowid order: to be sure
        ids, score = ids[by_id], score[by_id]
        if len(ids) and (int(ids.max()) >= len(dl) or int(ids.min()) < 1):
            return None  # a row newer than the sizes read (never with one connection), or
            # an id SQLite never gives (a hostile file): FTS5 answers
        w = idf(n_row, before + len(ids))  # nHit: every row holding the term
        d = dl[ids]
        k = K1 * (1 - B + B * d / avgdl)
        tf = np.round(2.0 * (score * k / (w * (K1 + 1.0) - score))) / 2.0
        if not np.array_equal(part(w, tf, d, avgdl), score):
            return None
        return ids, tf

    def postings(self, term: str, top: int, n_row: int, avgdl: float) -> tuple[Ids, Floats] | None:
        """(ids, tf) of every row holding ``term`` as of content id ``top`` (the largest
        now), or None (FTS5's query must answer)."""
        dl = self._sizes(top)
        entry = self._terms.get(term)
        if entry is None:
            got = self._read(term, -(1 << 63), 0, n_row, avgdl, dl)
            if got is None:
                return None
            ids, tf = got
            if len(ids) >= self.hot_df:
                self._keep(term, _Term(ids, tf, top))
            return ids, tf
        self._terms.move_to_end(term)
        if top > entry.seen:
            got = self._read(term, entry.seen, len(entry.ids), n_row, avgdl, dl)
            if got is None:
                del self._terms[term]
                return None
            ids, tf = got
            entry.ids = np.concatenate([entry.ids, ids])
            entry.tf = np.concatenate([entry.tf, tf])
            entry.seen = top
        return entry.ids, entry.tf

    def kept(self) -> dict[str, int]:
        """How many terms' postings are kept, and how many postings in all."""
        return {
            "terms": len(self._terms),
            "postings": sum(len(t.ids) for t in self._terms.values()),
        }

    def _keep(self, term: str, entry: _Term) -> None:
        self._terms[term] = entry
        while sum(len(t.ids) for t in self._terms.values()) > MAX_POSTINGS and self._terms:
            self._terms.popitem(last=False)

    def worth(self, terms: Sequence[str], top: int) -> bool:
        """Whether a query of ``terms`` is worth the fast path: one of them is kept, or
        at least ``hot_df`` rows hold one.  A term's count is read again once the store
        grew by a tenth since (either answer is exact: this only picks the faster way)."""
        if any(t in self._terms for t in terms):
            return True
        for t in terms:
            known = self._df.get(t)
            if known is None or top > known[1] + known[1] // 10:
                n = int(
                    self._db.execute(
                        f"SELECT count(*) FROM {self._fts} WHERE {self._fts} MATCH ?",
                        (f'"{t}"',),
                    ).fetchone()[0]
                )
                if len(self._df) >= _MAX_COUNTS:
                    self._df.clear()
                known = self._df[t] = (n, top)
            if known[0] >= self.hot_df:
                return True
        return False

    def rank(
        self, terms: Sequence[str], readable: npt.NDArray[np.bool_], top: int, n: int
    ) -> tuple[Ids, Floats] | None:
        """(ids, scores) of the best ``n`` rows holding any of ``terms`` that ``readable``
        (by content id) lets through, in FTS5's order (score descending, then id), as of
        content id ``top`` (the largest now); None: FTS5's query must answer."""
        n_row, avgdl = self.stats()
        if n_row <= 0 or n <= 0:
            return None  # nothing to rank, or a record that does not read: FTS5 answers
        lists: list[tuple[Ids, Floats, float]] = []
        for t in terms:
            got = self.postings(t, top, n_row, avgdl)
            if got is None:
                return None
            lists.append((*got, idf(n_row, len(got[0]))))
        # the union of the posting lists, READ-1 applied: a mask over content ids (every
        # posting's id is below the sizes' length), not a sort
        size = len(self._dl)
        held = np.zeros(size, dtype=bool)
        for t_ids, _, _ in lists:
            held[t_ids] = True
        let = np.zeros(size, dtype=bool)
        m = min(size, len(readable))
        let[:m] = readable[:m]
        held &= let
        if len(lists) == 1:  # one term: its rows in id order already
            t_ids, t_tf, w = lists[0]
            sel = held[t_ids]
            ids = t_ids[sel]
            return self._best(ids, part(w, t_tf[sel], self._dl[ids], avgdl), n)
        ids = np.flatnonzero(held)
        dl = self._dl[ids]
        score = np.zeros(len(ids))
        for t_ids, t_tf, w in lists:  # phrase by phrase, in the query's order, as FTS5 adds
            full = np.zeros(size)
            full[t_ids] = t_tf
            score = score + part(w, full[ids], dl, avgdl)
        return self._best(ids, score, n)

    @staticmethod
    def _best(ids: Ids, score: Floats, n: int) -> tuple[Ids, Floats]:
        """The best ``n`` of (ids, score), in FTS5's order: score descending, then id."""
        neg = -score  # FTS5's bm25 (exactly: a negation), ascending is best first
        if n < len(ids):  # only the rows that can be among the best n (ties included)
            sel = np.nonzero(neg <= np.partition(neg, n - 1)[n - 1])[0]
            ids, score, neg = ids[sel], score[sel], neg[sel]
        order = np.lexsort((ids, neg))[:n]
        return ids[order], score[order]
