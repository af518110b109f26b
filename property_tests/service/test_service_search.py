"""Governed retrieval at the node (service/search.py, docs/design.md §11): GET and POST
/search and GET /slots/{slot} over a real node and its SQLite store, through the HTTP
app (httpx's ASGI transport).  The life of a slot's value — found with its provenance,
updated through review, the old one history only, forgotten and gone — the advisory read
record on the artifact, and bad input: every malformed search is a 4xx with a stable
code (a Hypothesis fuzz of GET and POST finds no 500 and no traceback).

READ-1's state machine is test_service_search_stateful.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from content_world import FORGET_PARAMS
from content_world import forget as _forget
from content_world import post_all as _post_all
from content_world import to_active as _to_active
from content_world import update as _update
from ostrom.service.gate import GATE_ERRORS
from ostrom.service.node import Node
from ostrom.service.openapi import ENDPOINTS
from ostrom.service.search import MAX_K, MAX_QUERY_BYTES, MAX_TERMS, SearchQuery, terms
from ostrom.service.store import RECENT_QUERIES
from service_world import Signer
from service_world import in_app as _run
from service_world import validate_schema as _validate


def _node(tmp: Path) -> Node:
    return Node.open(tmp / "n.db", params=FORGET_PARAMS, setup=_setup(), fsync=False)


def _setup() -> Any:
    from service_world import setup

    return setup()


def test_a_slots_life_found_updated_history_forgotten(tmp_path: Path) -> None:
    """The issue's walk: a value found with provenance; an update supersedes it after
    review; search returns the new one, include=history marks the old with its successor
    and round; GET /slots/{slot}; forgotten, search finds nothing of it."""
    node, s = _node(tmp_path), Signer()

    async def body(c: httpx.AsyncClient) -> None:
        await _post_all(
            c,
            _to_active(
                s,
                "old",
                "paris/population",
                content="Paris has 2.1 million inhabitants",
                title="population",
            ),
        )
        r = (await c.get("/search", params={"q": "paris inhabitants"})).json()
        _validate(r, "SearchResult")
        assert [h["artifact"] for h in r["hits"]] == ["old"]
        hit = r["hits"][0]
        assert hit["state"] == "active" and hit["content"].startswith("Paris has")
        assert hit["decision"] == {"path": "fast_track", "verdict": "accept"}
        assert hit["submitter"] == "f1" and hit["submitter_tier"] == 3
        assert hit["submitter_reputation"] is not None and hit["superseded_by"] is None
        assert r["position"] == node.last_pos and hit["score"] > 0
        await _update(c, s, "new", "paris/population", content="Paris has 2.2 million inhabitants")
        r = (await c.get("/search", params={"q": "paris inhabitants"})).json()
        assert [h["artifact"] for h in r["hits"]] == ["new"]
        new = r["hits"][0]
        assert new["decision"]["path"] == "tally" and new["supersedes"] == "old"
        assert sorted(new["reviewers"]) and new["decision"]["tally"]
        r = (await c.get("/search", params={"q": "paris", "include": "history"})).json()
        by = {h["artifact"]: h for h in r["hits"]}
        assert set(by) == {"old", "new"}
        assert by["old"]["state"] == "superseded" and by["old"]["superseded_by"] == "new"
        assert by["old"]["superseded_round"] == by["new"]["activated_round"]
        slot = (await c.get("/slots/paris/population")).json()
        _validate(slot, "SlotValues")
        assert [h["artifact"] for h in slot["current"]] == ["new"]
        assert [h["artifact"] for h in slot["history"]] == ["old"]
        art = (await c.get("/artifacts/new")).json()
        assert art["reads"]["returned"] == 2 and art["reads"]["recent_queries"] == [
            "paris",
            "paris inhabitants",
        ]
        await _post_all(c, _forget(s, "new"))
        r = (await c.get("/search", params={"q": "paris", "include": "history"})).json()
        assert [h["artifact"] for h in r["hits"]] == ["old"]  # the forgotten one: gone
        assert (await c.get("/artifacts/new")).json()["reads"]["returned"] == 0
        r = (await c.get("/search", params={"q": "2.2"})).json()
        assert r["hits"] == []

    _run(node, body)
    node.close()


def test_reads_are_advisory_bounded_and_survive_a_restart(tmp_path: Path) -> None:
    """The read record keeps the newest RECENT_QUERIES query texts, counts every return,
    and is written to the file (on close, or with the next log append)."""
    node, s = _node(tmp_path), Signer()
    for e in _to_active(s, "x", "s", content="alpha beta"):
        assert node.submit(e).status == 200
    for i in range(RECENT_QUERIES + 3):
        node.search(SearchQuery.parse(f"alpha q{i}"))
    reads = node.artifact("x")
    assert reads is not None
    assert reads["reads"]["returned"] == RECENT_QUERIES + 3
    assert len(reads["reads"]["recent_queries"]) == RECENT_QUERIES
    assert reads["reads"]["recent_queries"][0] == f"alpha q{RECENT_QUERIES + 2}"
    node.close()
    again = Node.open(tmp_path / "n.db", fsync=False)
    after = again.artifact("x")
    assert after is not None and after["reads"] == reads["reads"]
    again.close()


def test_terms_never_carry_fts5_syntax() -> None:
    assert terms('NEAR("a b", 3) OR title:x* AND (y -z) ^w "') == [
        "near",
        "a",
        "b",
        "3",
        "or",
        "title",
        "x",
        "and",
        "y",
        "z",
        "w",
    ]
    assert terms("*") == [] and terms("snake_case") == ["snake", "case"]


BAD: list[tuple[dict[str, Any], str]] = [
    ({}, "bad_query"),
    ({"q": ""}, "bad_query"),
    ({"q": "..."}, "bad_query"),
    ({"q": "*"}, "query_syntax"),
    ({"q": '"()"'}, "query_syntax"),
    ({"q": "a", "k": "0"}, "bad_query"),
    ({"q": "a", "k": str(MAX_K + 1)}, "bad_query"),
    ({"q": "a", "k": "-1"}, "bad_query"),
    ({"q": "a", "k": "1e3"}, "bad_query"),
    ({"q": "a", "include": "everything"}, "bad_query"),
    ({"q": "a", "slot": ""}, "bad_query"),
    ({"q": "a", "other": "1"}, "bad_query"),
    ({"q": "x" * (MAX_QUERY_BYTES + 1)}, "query_too_large"),
    ({"q": " ".join(f"t{i}" for i in range(MAX_TERMS + 1))}, "query_too_large"),
]

#: Queries in FTS5's syntax (most of which SQLite would reject raw): refused, query_syntax.
FTS5_SYNTAX = [
    '"unbalanced',
    "a AND",
    "(a OR b",
    "NEAR(a b",
    "a NEAR b",
    "content:a",
    "a:b:c",
    "^",
    "a*b",
    "x NOT y",
    "a + b",
    "{content title}",
    '"a b"',
]
#: Plain words with the punctuation of prose, and operators' words in lower case: answered.
PLAIN = ["what's the content?", "a-b, c. d!", "a and b or not near", "Ándré b/c", "A Or B"]


def test_bad_searches_are_4xx_with_a_stable_code_and_fts5_syntax_is_refused(
    tmp_path: Path,
) -> None:
    """Each malformed search is its code, by GET and POST; FTS5's syntax is
    ``query_syntax`` (422, search takes plain words) and changes nothing (no read is
    recorded); prose punctuation and lower-case operator words are plain words."""
    node, s = _node(tmp_path), Signer()
    for e in _to_active(s, "x", "s", content="a b content"):
        assert node.submit(e).status == 200

    async def body(c: httpx.AsyncClient) -> None:
        for params, code in BAD:
            r = await c.get("/search", params=params)
            assert (r.status_code, r.json()["error"]) == (GATE_ERRORS[code].status, code), params
            post = {
                k: (int(v) if k == "k" and v.lstrip("-").isdigit() else v)
                for k, v in params.items()
            }
            r = await c.post("/search", json=post)
            assert r.json()["error"] == code, post
        before = node.store.reads("x")
        for q in FTS5_SYNTAX:
            for r in (
                await c.get("/search", params={"q": q}),
                await c.post("/search", json={"q": q}),
            ):
                assert (r.status_code, r.json()["error"]) == (422, "query_syntax"), (q, r.text)
        assert node.store.reads("x") == before  # a refused query is no read
        for q in PLAIN:
            r = await c.get("/search", params={"q": q})
            assert r.status_code == 200, (q, r.text)
        assert node.store.reads("x")["returned"] == before["returned"] + len(PLAIN)
        r = await c.post("/search", content=b"{not json")
        assert r.json()["error"] == "malformed"
        r = await c.post("/search", json={"q": "a", "k": True})
        assert r.json()["error"] == "bad_query"
        r = await c.post("/search", json=["a"])
        assert r.json()["error"] == "bad_query"

    _run(node, body)
    node.close()


_TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ['"', "NEAR(", "*", "(", ")", "col:", "AND", "OR NOT", "\x00", "^", "-", "+", "{", "}"]
)
_PARAM = st.one_of(_TEXT, st.integers(-5, 200).map(str), st.none())
#: Query vectors: of the community's dimension (4) or not, finite or not, numbers or not.
_NUMBER = st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(2**70), 2**70)
_VECTOR = st.one_of(
    st.none(),
    st.lists(st.floats(-1, 1), min_size=4, max_size=4),
    st.lists(_NUMBER, max_size=6),
    st.lists(st.booleans() | st.text(max_size=2) | st.none(), max_size=4),
    _TEXT,
)

#: The codes each search route documents (the OpenAPI table): nothing else may answer.
_DOCUMENTED = {e.name: set(e.errors) for e in ENDPOINTS if e.name in ("search", "search_post")}


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    q=st.lists(_TEXT, max_size=6).map(" ".join) | st.none(),
    k=_PARAM,
    include=st.sampled_from([None, "history", "History", ""]) | _TEXT,
    slot=_PARAM,
    post_k=st.one_of(st.integers(-3, 200), st.none(), st.booleans(), st.floats(), _TEXT),
    vector=_VECTOR,
)
def test_fuzz_search_no_500_no_traceback(
    fuzz_node: Node,
    q: str | None,
    k: str | None,
    include: str | None,
    slot: str | None,
    post_k: Any,
    vector: Any,
) -> None:
    """Any GET or POST /search (words, k, include, slot, and a query vector by POST) is a
    200 or a 4xx with a code the route documents: never a 500, never a traceback; every
    200 is the promised SearchResult; a refused search changes nothing (no read is
    recorded, the log does not move) and an answered one records its hits' reads."""

    async def body(c: httpx.AsyncClient) -> None:
        params = {
            n: v
            for n, v in (("q", q), ("k", k), ("include", include), ("slot", slot))
            if v is not None
        }
        doc = {**params, "k": post_k} if post_k is not None else params
        if vector is not None:
            doc = {**doc, "vector": vector}

        async def get() -> httpx.Response:
            return await c.get("/search", params=params)

        async def post() -> httpx.Response:
            return await c.post("/search", content=json.dumps(doc, allow_nan=True).encode())

        for route, send in (("search", get), ("search_post", post)):
            pos, before = fuzz_node.last_pos, fuzz_node.store.reads("x")
            r = await send()
            assert r.status_code < 500, r.text
            b = r.json()
            after = fuzz_node.store.reads("x")
            assert fuzz_node.last_pos == pos
            if r.status_code == 200:
                _validate(b, "SearchResult")
                n = sum(h["artifact"] == "x" for h in b["hits"])
                assert after["returned"] == before["returned"] + n
            else:
                assert b["error"] in _DOCUMENTED[route], (route, b)
                assert GATE_ERRORS[b["error"]].status == r.status_code
                assert "Traceback" not in b["detail"]
                assert after == before, "a refused search recorded a read"

    _run(fuzz_node, body)


@pytest.fixture(scope="module")
def fuzz_node(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("fuzz")
    node, s = _node(tmp), Signer()
    for e in _to_active(
        s, "x", "s", content="a b c NEAR content alpha", embedding=[0.5, 0.5, 0.5, 0.5]
    ):
        assert node.submit(e).status == 200
    yield node
    node.close()


# --- the figures at scale (bench/search.py) ---------------------------------------------------


def _bench_search() -> Any:
    """bench/search.py as a module (the benchmarks are scripts, not a package)."""
    import importlib.util

    from ostrom.layout import ROOT

    spec = importlib.util.spec_from_file_location("bench_search", ROOT / "bench" / "search.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_search_figures_are_the_committed_results() -> None:
    """docs/design.md §11's table of search at scale is bench/results/search.json's
    (``python bench/search.py --table`` prints it): no figure is typed by hand."""
    from ostrom.layout import ROOT

    bench = _bench_search()
    results = json.loads((ROOT / "bench" / "results" / "search.json").read_text("utf-8"))
    sizes = [r["artifacts"] for r in results["sizes"]]
    assert sizes and set(sizes) <= set(bench.SIZES) and sizes == sorted(sizes)
    assert results["target"]["measured"] == (max(bench.SIZES) in sizes)
    assert results["bulk_path"]["same_answers"] is True
    for row in results["sizes"]:  # the hot terms' postings answered as FTS5 (bench/search.py)
        same = row["in_process"].get("fast_path_same_answers", {"same_answers": True})
        assert same["same_answers"] is True, row["artifacts"]
    docs = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    assert bench.figures_table(results) in docs, "regenerate: python bench/search.py --table"


def test_bench_proposal_rates_split_the_content_cost(tmp_path: Path) -> None:
    """bench/search.py's proposals part (``--proposals``): every kind timed, the content
    kept by both content kinds and indexed by one only (the bench asserts it on each store:
    a diagnostic that fed the index, or kept nothing, would stop it), and the ratio, the
    verdict and the CPU ratio computed from the rates it reports; the committed results
    say the same of theirs."""
    from ostrom.layout import ROOT

    bench = _bench_search()
    got = bench.proposal_rates(tmp_path, n=24, runs=1)
    assert set(got["cpu_ms_per_proposal"]) == set(bench.KINDS)
    ms = got["cpu_ms_per_proposal"]
    assert got["cpu_ratio"] == pytest.approx(ms["content_4k"] / ms["digest_only"], abs=0.02)
    committed = json.loads((ROOT / "bench" / "results" / "search.json").read_text("utf-8"))
    for p in (got, committed["proposals"]):
        assert p["ratio"] == pytest.approx(p["digest_only_per_s"] / p["content_per_s"], abs=0.01)
        assert p["met"] == (p["digest_only_per_s"] / p["content_per_s"] <= p["target_ratio"])
        assert p["content_per_s"] > 0 and p["content_unindexed_per_s"] > 0


def test_bench_bulk_path_gives_what_one_command_at_a_time_gives(tmp_path: Path) -> None:
    """bench/search.py builds its stores by ``Node.submit_many`` in groups (the bulk path);
    the same workload submitted one command at a time gives the same log, public state and
    search answers (the bench itself checks its stores against one built over HTTP)."""
    bench = _bench_search()
    bulk = tmp_path / "bulk.db"
    bench.build(200, bulk, group=64, progress=False)
    one = Node.open(tmp_path / "one.db", params=bench.PARAMS, setup=bench.setup(), fsync=False)
    grouped = Node.open(bulk, fsync=False)
    try:
        for env in bench.workload(200):
            assert one.submit(env).body["result"] == "ok"
        assert grouped.log(0, 10_000) == one.log(0, 10_000)
        assert grouped.public_state() == one.public_state()
        states = {a["state"] for a in one.public_state()["artifacts"].values()}
        assert {"active", "superseded"} <= states and states & {"proposed", "fast_track"}
        for texts in bench.queries().values():
            for q in texts:
                query = SearchQuery.parse(q, 10, "history")
                assert grouped.search(query) == one.search(query), q
    finally:
        one.close()
        grouped.close()
