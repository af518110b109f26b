"""The hot terms' fast path (service/bm25.py, docs/design.md §11 "Search at scale"):
``Store.matches`` ranked from the postings gives what FTS5's own query gives — the same
content ids, the same scores to the bit, in the same order, for either column of the
search index, any page — on random stores: payloads with title, tags and source (the
column weights), terms shared by most rows and by few, readable and unreadable rows,
rows added after a term's postings were read (their catch-up) and rows purged
(FORGET-PURGE drops every posting).  Two mutants of the fast path are shown caught
(marked ``mutation``: ``make mutate`` and ``make test-slow`` run them), and a slow variant
compares on many more stores.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ostrom.service import bm25
from ostrom.service.search import match_expression
from ostrom.service.store import Store

VOCAB = [f"w{i}" for i in range(12)] + ["café", "Straße", "x1"]
PAGES = ((10, 0), (3, 0), (4, 2), (1000, 0))


def _payload(rng: random.Random) -> dict[str, Any]:
    weights = [1.0 / (r + 1) for r in range(len(VOCAB))]
    words = rng.choices(VOCAB, weights, k=rng.randint(1, 40))
    out: dict[str, Any] = {"content": " ".join(words)}
    if rng.random() < 0.5:
        out["title"] = " ".join(rng.choices(VOCAB, weights, k=rng.randint(1, 4)))
    if rng.random() < 0.3:
        out["tags"] = sorted(set(rng.choices(VOCAB, k=2)))
    if rng.random() < 0.2:
        out["source"] = rng.choice(VOCAB)
    return out


class World:
    """A store with random payloads and a random search index."""

    def __init__(self, path: Path, seed: int, max_bytes: int | None = None) -> None:
        self.rng = random.Random(seed)
        self.store = Store.open(path, create=({}, {}), fsync=False)
        self.store.postings.hot_df = 1  # every term's postings kept
        self.store.postings.max_bytes = max_bytes
        self.n = 0
        self.carried: dict[int, tuple[int, int]] = {}

    def add(self, count: int) -> None:
        for _ in range(count):
            self.n += 1
            self.store._keep(f"a{self.n}", f"d{self.n}", _payload(self.rng))
        ids = [int(r[0]) for r in self.store._db.execute("SELECT id FROM content")]
        delta: dict[int, tuple[int, int]] = {}
        for i in ids:  # a random, changing search index (READ-1 is the node's business)
            want = (self.rng.choice((0, 0, 1, 2)), self.rng.choice((0, 1)))
            old = self.carried.get(i, (0, 0))
            delta[i] = (want[0] - old[0], want[1] - old[1])
            self.carried[i] = want
        self.store.index_search(delta)

    def purge(self) -> None:
        arts = [r[0] for r in self.store._db.execute("SELECT artifact FROM artifact_content")]
        for x in self.rng.sample(arts, k=min(len(arts), 3)):
            self.store._purge(x)
        alive = {int(r[0]) for r in self.store._db.execute("SELECT id FROM content")}
        gone = {i: (-c, -h) for i, (c, h) in self.carried.items() if i not in alive}
        self.store.index_search(gone)
        self.carried = {i: v for i, v in self.carried.items() if i in alive}

    def queries(self) -> Iterator[str]:
        for _ in range(12):
            yield match_expression(self.rng.sample(VOCAB, k=self.rng.randint(1, 3)))

    def answers(self, fast: bool) -> list[Any]:
        """Every query's pages through ``matches``, by the fast path or FTS5's query."""
        kept = self.store.postings
        if not fast:  # FTS5's query: postings that are never hot (the kept ones stay)
            self.store.postings = kept.never_hot()
        rng = random.Random(self.n)  # the same queries both ways
        saved, self.rng = self.rng, rng
        try:
            return [
                (q, only, page, list(self.store.matches(q, only=only, limit=k, offset=o)))
                for q in self.queries()
                for only in ("current", "history")
                for page, (k, o) in enumerate(PAGES)
            ]
        finally:
            self.rng, self.store.postings = saved, kept


def _walk(tmp: Path, seed: int, max_bytes: int | None = None) -> list[tuple[list[Any], list[Any]]]:
    """(fast, FTS5) answers after each step: rows added, postings kept, more rows added
    (caught up), rows purged, more added; ``max_bytes``: the postings' cap."""
    w = World(tmp / f"{uuid.uuid4().hex}.db", seed, max_bytes)
    out = []
    try:
        for step in ("add", "add", "purge", "add"):
            if step == "add":
                w.add(w.rng.randint(5, 40))
            else:
                w.purge()
            fast = w.answers(True)  # postings read (or caught up) here, kept for the next
            out.append((fast, w.answers(False)))
            kept = w.store.postings.kept()
            terms = w.store.postings._terms.values()
            assert kept["bytes"] == sum(t.ids.nbytes + t.tf.nbytes for t in terms)
            assert kept["bytes"] <= w.store.postings.cap(w.store.postings.stats()[0])
    finally:
        w.store.close()
    return out


def _same(tmp: Path, seed: int, max_bytes: int | None = None) -> None:
    for fast, straight in _walk(tmp, seed, max_bytes):
        assert any(hits for *_, hits in straight)  # the comparison compares something
        assert fast == straight


_FIXTURE = [HealthCheck.function_scoped_fixture]


@settings(max_examples=4, deadline=None, suppress_health_check=_FIXTURE)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_fast_path_ranks_as_fts5_does(tmp_path: Path, seed: int) -> None:
    _same(tmp_path, seed)


@settings(max_examples=4, deadline=None, suppress_health_check=_FIXTURE)
@given(seed=st.integers(0, 2**32 - 1), postings=st.integers(0, 120))
def test_the_fast_path_ranks_as_fts5_does_under_a_small_cap(
    tmp_path: Path, seed: int, postings: int
) -> None:
    """A cap of a few postings' bytes: terms are dropped (least recently searched first)
    and read again, the kept bytes never exceed the cap, the answers stay FTS5's."""
    _same(tmp_path, seed, 6 * postings)


def test_a_small_cap_drops_terms(tmp_path: Path) -> None:
    """The cap is in force (the test above compares a cache that forgets, not one that
    keeps every term): under 60 bytes fewer terms are kept than without a cap."""
    kept = []
    for cap in (None, 60):
        w = World(tmp_path / f"c{cap}.db", 3, cap)
        try:
            w.add(40)
            w.answers(True)
            kept.append(w.store.postings.kept())
        finally:
            w.store.close()
    assert kept[1]["bytes"] <= 60 < kept[0]["bytes"]
    assert kept[1]["terms"] < kept[0]["terms"]


_HALVES = st.integers(0, 70_000).map(lambda h: h / 2.0)
_ANY_TF = st.one_of(_HALVES, st.floats(allow_nan=True, allow_infinity=True), st.just(-0.0))


@given(
    ids=st.lists(st.integers(1, 2**40), max_size=30, unique=True),
    small=st.booleans(),
    tf=st.data(),
)
def test_postings_are_packed_in_six_bytes_and_read_back_bit_for_bit(
    ids: list[int], small: bool, tf: st.DataObject
) -> None:
    """``_pack`` keeps ids as uint32 and tf as uint16 counts of halves when every value
    fits (6 bytes a posting: 2.7 times the postings in the memory of int64 and float64),
    the wide arrays otherwise; what ``rank`` reads back (``_tf``) is the very tf, sign and
    NaN included: no posting is rounded or wrapped."""
    if small:
        ids = [i % (2**32) for i in ids]
    values = tf.draw(st.lists(_HALVES if small else _ANY_TF, min_size=len(ids), max_size=len(ids)))
    assert _packs_exactly(sorted(ids), values)
    if small and all(v <= 32_767.5 for v in values):
        p_ids, p_tf = bm25._pack(np.array(sorted(ids)), np.array(values))
        assert p_ids.dtype == np.dtype(np.uint32) and p_tf.dtype == np.dtype(np.uint16)


def _packs_exactly(ids: list[int], tf: list[float]) -> bool:
    a_ids, a_tf = np.array(ids, dtype=np.int64), np.array(tf, dtype=np.float64)
    p_ids, p_tf = bm25._pack(a_ids, a_tf)
    back = bm25._tf(p_tf)
    return bool(
        np.array_equal(p_ids.astype(np.int64), a_ids)
        and back.dtype == np.float64
        and back.tobytes() == a_tf.tobytes()
    )


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=_FIXTURE)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_fast_path_ranks_as_fts5_does_on_many_stores(tmp_path: Path, seed: int) -> None:
    _same(tmp_path, seed)


def test_the_fast_path_is_taken(tmp_path: Path) -> None:
    """With a high ``hot_df`` no term's postings are kept, with a low one they are (the
    comparison above compares the fast path, not FTS5 with itself)."""
    w = World(tmp_path / "t.db", 1)
    try:
        w.add(30)
        w.store.postings.hot_df = 1 << 60
        w.answers(True)
        assert not w.store.postings._terms
        w.store.postings.hot_df = 1
        w.answers(True)
        assert w.store.postings._terms
    finally:
        w.store.close()


def _caught(tmp: Path, monkeypatch: pytest.MonkeyPatch, name: str, mutant: Any) -> bool:
    with monkeypatch.context() as m:
        m.setattr(bm25.Postings, name, mutant)
        return any(
            fast != straight for seed in range(4) for fast, straight in _walk(tmp, 100 + seed)
        )


@pytest.mark.mutation
def test_mutants_of_the_fast_path_are_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fast path that never catches up with the rows added since a term's postings were
    read, and one that breaks score ties by the larger content id: the comparison fails."""
    real = bm25.Postings.postings

    def stale(self: bm25.Postings, term: str, top: int, n_row: int, avgdl: float) -> Any:
        entry = self._terms.get(term)
        if entry is not None:
            return entry.ids, entry.tf
        return real(self, term, top, n_row, avgdl)

    assert _caught(tmp_path, monkeypatch, "postings", stale)

    rank = bm25.Postings.rank

    def ties_reversed(self: bm25.Postings, terms: Any, readable: Any, top: int, n: int) -> Any:
        got = rank(self, terms, readable, top, 1 << 40)
        if got is None:
            return None
        ids, score = got
        order = np.lexsort((-ids, -score))[:n]
        return ids[order], score[order]

    assert _caught(tmp_path, monkeypatch, "rank", ties_reversed)


@pytest.mark.mutation
def test_mutants_of_the_packing_are_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Postings packed without the fallback (wide ids and counts wrapped into uint32 and
    uint16), and counts packed whole instead of in halves (source's weight is 0.5): the
    round trip, the comparison with FTS5 on random stores, fail."""

    def wrapped(ids: Any, tf: Any) -> Any:
        return ids.astype(np.uint32), (2.0 * tf).astype(np.uint16)

    def whole(ids: Any, tf: Any) -> Any:
        return ids.astype(np.uint32), tf.astype(np.uint16)

    with monkeypatch.context() as m:
        m.setattr(bm25, "_pack", wrapped)
        assert not _packs_exactly([1, 2**33], [1.0, 40_000.0])
    assert _packs_exactly([1, 2**33], [1.0, 40_000.0])
    with monkeypatch.context() as m:
        m.setattr(bm25, "_pack", whole)
        assert any(
            fast != straight for seed in range(4) for fast, straight in _walk(tmp_path, 200 + seed)
        )


def test_the_docs_state_the_postings_cap() -> None:
    """docs/design.md §11 and docs/service.md (memory per artifact) quote the cap's
    constants: a change of either fails here until the docs say the new one."""
    from ostrom.layout import ROOT

    for doc in ("design.md", "service.md"):
        text = " ".join((ROOT / "docs" / doc).read_text(encoding="utf-8").split())
        assert f"`BYTES_PER_ROW` = {bm25.BYTES_PER_ROW} bytes per" in text, doc
        assert f"`MIN_BYTES` = {bm25.MIN_BYTES >> 20} MiB" in text, doc
        assert bm25.MIN_BYTES % (1 << 20) == 0
