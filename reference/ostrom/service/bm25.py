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
    "BYTES_PER_ROW",
    "HOT_DF",
    "K1",
    "MIN_BYTES",
    "B",
    "Floats",
    "Ids",
    "KeptIds",
    "KeptTf",
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
#: The postings kept over all terms take at most this many bytes per row of the index
#: (least recently searched terms dropped first), and at least ``MIN_BYTES`` in all: the cap
#: grows with the store, as the hot terms' lists do (a common word's list holds nearly
#: every row).  A posting takes 6 bytes (a uint32 content id, a uint16 count of halves) when
#: its values fit, 16 otherwise (int64, float64): 256 bytes a row keep about 42 postings a
#: row, what the benchmark's queries of every class need together at 1M artifacts
#: (docs/design.md §11 "Search at scale").  ``Postings(max_bytes=...)`` sets another cap.
BYTES_PER_ROW: Final = 256
MIN_BYTES: Final = 16 << 20

#: A query as service/search.py builds it: quoted terms joined with OR.
_MATCH: Final = re.compile(r'"([^"]+)"(?: OR "([^"]+)")*')
_TERM: Final = re.compile(r'"([^"]+)"')

#: At most this many terms' counts remembered by ``worth``.
_MAX_COUNTS: Final = 100_000

Ids = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
#: A term's postings as kept (``_pack``): uint32 or int64 ids, uint16 halves or float64 tf.
KeptIds = npt.NDArray[np.integer]
KeptTf = npt.NDArray[np.number]


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


_U32: Final = (1 << 32) - 1
_U16: Final = (1 << 16) - 1


def _pack(ids: Ids, tf: Floats) -> tuple[KeptIds, KeptTf]:
    """(ids, tf) in 6 bytes a posting: ids as uint32, tf as uint16 counts of halves (a
    weighted count is on the weights' grid of halves); any value that does not fit keeps
    the array as it is (int64, float64), so nothing is ever rounded or wrapped."""
    small_ids = not len(ids) or (int(ids.min()) >= 0 and int(ids.max()) <= _U32)
    out_ids: KeptIds = ids.astype(np.uint32) if small_ids else ids
    with np.errstate(over="ignore", invalid="ignore"):  # inf, NaN: they do not fit
        halves = 2.0 * tf
    fits = not len(tf) or bool(  # -0.0 too stays float64: its sign would be lost
        np.all(halves == np.floor(halves)) and not np.signbit(halves).any() and halves.max() <= _U16
    )
    out_tf: KeptTf = halves.astype(np.uint16) if fits else tf
    return out_ids, out_tf


def _tf(kept: KeptTf) -> Floats:
    """A kept tf array as float64: a count of halves times 0.5 (exact: a power of two)."""
    out: Floats = kept.astype(np.float64, copy=False)
    if kept.dtype == np.uint16:
        out *= 0.5  # a fresh array (the cast copied): the kept halves are untouched
    return out


@dataclass
class _Term:
    ids: KeptIds  # every content id that holds the term, ascending (_pack)
    tf: KeptTf  # its weighted count in each (_pack: halves or float64)
    seen: int  # the largest content id when the postings were last brought up to date

    def nbytes(self) -> int:
        return int(self.ids.nbytes + self.tf.nbytes)


class Postings:
    """The hot terms' postings and every row's size (module docstring), for one
    connection; ``weights``: the bm25 column weights, as the SQL text passes them."""

    def __init__(
        self, db: sqlite3.Connection, fts: str, weights: str, *, max_bytes: int | None = None
    ) -> None:
        self._db, self._fts, self._weights = db, fts, weights
        #: the cap on the kept postings' bytes; None: ``BYTES_PER_ROW`` a row (``cap``)
        self.max_bytes = max_bytes
        self._terms: OrderedDict[str, _Term] = OrderedDict()
        self._bytes = 0  # the kept postings' bytes: sum of the terms' ``nbytes``
        self._dl: Floats = np.zeros(0)
        self._dl_seen = 0
        self.hot_df = HOT_DF
        #: how many times a hot term's whole list was read: its first search, or a search
        #: after it was dropped for the cap (the benchmark splits its timings by it)
        self.loads = 0
        #: term -> (rows holding it, the largest content id then): ``worth``'s counts
        self._df: dict[str, tuple[int, int]] = {}

    def never_hot(self) -> Postings:
        """Postings of the same index that never take the fast path: FTS5's own query
        answers every search (the comparison of the tests and the benchmark)."""
        out = Postings(self._db, self._fts, self._weights, max_bytes=self.max_bytes)
        out.hot_df = 1 << 62
        return out

    def clear(self) -> None:
        """Forget every posting and size (a payload was deleted: FORGET-PURGE)."""
        self._terms.clear()
        self._bytes = 0
        self._dl, self._dl_seen = np.zeros(0), 0

    def cap(self, n_row: int) -> int:
        """The kept postings' bytes at most, for an index of ``n_row`` rows."""
        if self.max_bytes is not None:
            return self.max_bytes
        return max(MIN_BYTES, BYTES_PER_ROW * n_row)

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

    def postings(
        self, term: str, top: int, n_row: int, avgdl: float
    ) -> tuple[KeptIds, KeptTf] | None:
        """(ids, tf) of every row holding ``term`` as of content id ``top`` (the largest
        now), or None (FTS5's query must answer); as kept (``_pack``: ``_tf`` reads tf),
        so a search converts only the rows it selects."""
        dl = self._sizes(top)
        entry = self._terms.get(term)
        if entry is None:
            got = self._read(term, -(1 << 63), 0, n_row, avgdl, dl)
            if got is None:
                return None
            ids, tf = got
            if len(ids) >= self.hot_df:
                self.loads += 1
                self._keep(term, _Term(*_pack(ids, tf), top), n_row)
            return ids, tf
        self._terms.move_to_end(term)
        if top > entry.seen:
            got = self._read(term, entry.seen, len(entry.ids), n_row, avgdl, dl)
            self._bytes -= entry.nbytes()
            if got is None:
                del self._terms[term]
                return None
            new_ids, new_tf = _pack(*got)
            if new_ids.dtype != entry.ids.dtype:  # one did not fit: both wide
                new_ids, entry.ids = new_ids.astype(np.int64), entry.ids.astype(np.int64)
            if new_tf.dtype != entry.tf.dtype:
                new_tf, entry.tf = _tf(new_tf), _tf(entry.tf)
            entry.ids = np.concatenate([entry.ids, new_ids])
            entry.tf = np.concatenate([entry.tf, new_tf])
            entry.seen = top
            self._bytes += entry.nbytes()
        return entry.ids, entry.tf

    def kept(self) -> dict[str, int]:
        """How many terms' postings are kept, how many postings and bytes in all."""
        return {
            "terms": len(self._terms),
            "postings": sum(len(t.ids) for t in self._terms.values()),
            "bytes": self._bytes,
        }

    def _keep(self, term: str, entry: _Term, n_row: int) -> None:
        """Keep ``entry``, then drop the least recently searched terms while the kept
        bytes are over the cap (a list bigger than the cap alone is not kept at all)."""
        self._terms[term] = entry
        self._bytes += entry.nbytes()
        cap = self.cap(n_row)
        while self._bytes > cap and self._terms:
            self._bytes -= self._terms.popitem(last=False)[1].nbytes()

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
        lists: list[tuple[KeptIds, KeptTf, float]] = []
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
            ids = t_ids[sel].astype(np.int64, copy=False)
            return self._best(ids, part(w, _tf(t_tf[sel]), self._dl[ids], avgdl), n)
        ids = np.flatnonzero(held)
        dl = self._dl[ids]
        score = np.zeros(len(ids))
        for t_ids, t_tf, w in lists:  # phrase by phrase, in the query's order, as FTS5 adds
            full = np.zeros(size, dtype=t_tf.dtype)
            full[t_ids] = t_tf
            score = score + part(w, _tf(full[ids]), dl, avgdl)
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
