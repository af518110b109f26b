"""The rankings the baseline stores use: the same FTS5/BM25 query as the node, and LSA.

Why the node's own query: a baseline must differ from ostrom only in *what it holds*, not
in how it ranks, or a difference in the answers could be the ranking's.  ``Lexical`` is
an in-memory SQLite FTS5 table with the node's columns and tokenizer (unicode61, the
default of service/store.py's ``content_fts``) queried with the node's own MATCH
expression (service/search.py: ``terms`` and ``match_expression``) ordered by FTS5's
``rank`` (BM25), ties by insertion.

``Lsa`` is the experiment's dense model (no model can be downloaded here, and none is
needed to ask the question): latent semantic analysis, i.e. the truncated SVD of the
TF-IDF matrix of every sentence the world will write (fitted once per run, before the
run, on the world's whole corpus, so every store sees the same vectors).  A sentence's or
query's vector is its TF-IDF row projected on the top ``rank`` right singular vectors and
normalised; similarity is the cosine.  It is a weak dense model by today's standards; it
stands for "a similarity that is not word overlap", which is what the paper contrasts.
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ostrom.service.search import match_expression, terms

__all__ = ["Lexical", "Lsa"]


class Lexical:
    """An in-memory FTS5 index of (id, text) rows."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(content)")
        self.rowid: dict[str, int] = {}
        self.ids: dict[int, str] = {}
        self.next = 1

    def add(self, doc: str, text: str) -> None:
        r = self.next
        self.next += 1
        self.rowid[doc], self.ids[r] = r, doc
        self.db.execute("INSERT INTO docs (rowid, content) VALUES (?, ?)", (r, text))

    def remove(self, doc: str) -> None:
        r = self.rowid.pop(doc)
        del self.ids[r]
        self.db.execute("DELETE FROM docs WHERE rowid = ?", (r,))

    def search(self, q: str, k: int) -> list[str]:
        words = terms(q)
        if not words:
            return []
        rows = self.db.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY rank, rowid LIMIT ?",
            (match_expression(words), k),
        )
        return [self.ids[r] for (r,) in rows]


class Lsa:
    """TF-IDF + truncated SVD over a corpus (module docstring)."""

    def __init__(self, corpus: Sequence[str], rank: int) -> None:
        docs = [Counter(terms(t)) for t in corpus]
        vocab = sorted({w for d in docs for w in d})
        self.col = {w: i for i, w in enumerate(vocab)}
        df = Counter(w for d in docs for w in d)
        n = len(docs)
        self.idf = np.array([math.log((1 + n) / (1 + df[w])) + 1.0 for w in vocab])
        m = np.zeros((n, len(vocab)))
        for i, d in enumerate(docs):
            for w, c in d.items():
                m[i, self.col[w]] = c
        m *= self.idf
        _, _, vt = np.linalg.svd(m, full_matrices=False)
        self.basis = vt[: min(rank, vt.shape[0])].T  # vocab x rank
        self.rank = rank

    def vector(self, text: str) -> np.ndarray:
        """The unit vector of ``text`` (rank floats; zero-padded if the corpus was small);
        a text with no known word gets a fixed unit vector, never a zero one."""
        tf = np.zeros(len(self.col))
        for w, c in Counter(terms(text)).items():
            j = self.col.get(w)
            if j is not None:
                tf[j] = c
        v = np.zeros(self.rank)
        proj = (tf * self.idf) @ self.basis
        v[: proj.shape[0]] = proj
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            v[0] = 1.0
            return v
        return v / norm
