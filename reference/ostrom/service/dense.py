"""Dense retrieval: embeddings beside the payloads, k-NN by cosine, fusion with BM25
(docs/design.md §11, "Dense retrieval").

A community that declares an ``embedding_dim`` (a parameter, 0 by default: off) lets a
propose or resubmit carry an ``embedding`` — that many finite numbers, part of the payload
and so covered by its digest — and a search carry a query ``vector`` of as many.  The
node ships no model: agents bring their own vectors, computed by whatever model the
community agreed on.

Storage (store.py, ``content_vec``): one row per payload that carries an embedding, keyed
by the ``content`` row's id like the FTS5 index; it holds the embedding's canonical JSON
(what the digest hashed, so a stored payload is verified against its digest as a whole)
and its unit vector as little-endian float32 (what the k-NN reads).  A trigger deletes it
with its ``content`` row, so FORGET-PURGE takes it in the same transaction, with
``secure_delete`` on and the WAL checkpointed after.

k-NN: exact, over every stored vector, in numpy (``nearest``).  The issue asked for
sqlite-vec's ``vec0``; this interpreter's ``sqlite3`` module was built without
``enable_load_extension``, so no SQLite extension can be loaded into the node's
connection, and the scan is numpy's — vec0 is itself an exact scan, so the answers are
the same.  The candidates are then filtered by READ-1 exactly as the lexical ones
(node.py: one filter for both).

Fusion: when a search carries both a text and a vector, the two ranked lists (each of the
artifacts READ-1 lets through, ranked 1, 2, ... after the filter, so that a rank never
reveals a filtered artifact) are fused by reciprocal rank fusion: an artifact's score is
the sum over the lists it is in of ``1 / (RRF_K + rank)``, with ``RRF_K`` = 60 (Cormack,
Clarke and Büttcher, SIGIR 2009), best first, ties by artifact id.  Each list is taken
to ``FUSION_DEPTH`` hits.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

import numpy as np

__all__ = [
    "FUSION_DEPTH",
    "RRF_K",
    "matrix",
    "nearest",
    "rrf",
    "to_blob",
    "unit",
]

#: The constant of reciprocal rank fusion: a hit at rank r of a list adds 1 / (RRF_K + r).
RRF_K: Final = 60
#: How deep each ranked list (lexical, dense) is taken before a fusion.
FUSION_DEPTH: Final = 100


def unit(vector: Sequence[float]) -> np.ndarray:
    """``vector`` scaled to length 1, in float32 (a zero vector stays zero: it is near
    nothing)."""
    v = np.asarray(vector, dtype=np.float64)
    n = float(np.linalg.norm(v))
    return (v / n if n > 0 else v).astype("<f4")


def to_blob(vector: Sequence[float]) -> bytes:
    """The stored form of an embedding: its unit vector, little-endian float32."""
    return unit(vector).tobytes()


#: How many of the nearest vectors are ordered first; the rest only if a caller reads on
#: (READ-1's filter may skip many): a partial sort instead of a full one.
_FIRST: Final = 256


def matrix(rows: Sequence[tuple[int, bytes]], dim: int) -> tuple[np.ndarray, np.ndarray]:
    """The content ids and the stored unit vectors of ``rows`` (content id, stored blob)
    as arrays: what ``nearest`` scans (store.py keeps them between writes)."""
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not rows:
        return ids, np.zeros((0, dim))
    vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dim)
    return ids, vectors.astype(np.float64)


def nearest(
    ids: np.ndarray, vectors: np.ndarray, query: Sequence[float]
) -> Iterator[tuple[int, float]]:
    """(content id, cosine similarity) of every stored vector, most similar first, ties
    by content id: an exact k-NN over the unit ``vectors`` (rows) of content ``ids``."""
    if not len(ids):
        return
    sims = vectors @ unit(query).astype(np.float64)
    if len(ids) > 2 * _FIRST:
        # the _FIRST most similar (ties at the cut included), in order; then the rest
        cut = np.partition(-sims, _FIRST - 1)[_FIRST - 1]
        head = np.flatnonzero(-sims <= cut)
        rest = np.flatnonzero(-sims > cut)
        parts = [head, rest]
    else:
        parts = [np.arange(len(ids))]
    for part in parts:
        for i in part[np.lexsort((ids[part], -sims[part]))]:
            yield int(ids[i]), float(sims[i])


def rrf(*ranked: Sequence[str]) -> list[tuple[str, float, list[int | None]]]:
    """Reciprocal rank fusion of ranked lists of artifact ids: (artifact, fused score,
    its 1-based rank in each list or None), best first, ties by artifact id."""
    ranks: dict[str, list[int | None]] = {}
    for i, lst in enumerate(ranked):
        for r, x in enumerate(lst, 1):
            ranks.setdefault(x, [None] * len(ranked))[i] = r
    scored = [
        (x, sum(1.0 / (RRF_K + r) for r in rs if r is not None), rs) for x, rs in ranks.items()
    ]
    scored.sort(key=lambda t: (-t[1], t[0]))
    return scored
