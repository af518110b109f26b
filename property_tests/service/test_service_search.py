"""Governed retrieval at the node (service/search.py, docs/design.md §11): GET and POST
/search and GET /slots/{slot} over a real node and its SQLite store, through the HTTP
app (httpx's ASGI transport).  The life of a slot's value — found with its provenance,
updated through review, the old one history only, forgotten and gone — the advisory read
record on the artifact, and bad input: every malformed search is a 4xx with a stable
code (a Hypothesis fuzz of GET and POST finds no 500 and no traceback).

READ-1's state machine is test_service_search_stateful.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
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
from ostrom.service.app import create_app
from ostrom.service.gate import GATE_ERRORS
from ostrom.service.node import Node
from ostrom.service.openapi import openapi
from ostrom.service.search import MAX_K, MAX_QUERY_BYTES, MAX_TERMS, SearchQuery, terms
from ostrom.service.store import RECENT_QUERIES
from service_world import Signer


def _node(tmp: Path) -> Node:
    return Node.open(tmp / "n.db", params=FORGET_PARAMS, setup=_setup(), fsync=False)


def _setup() -> Any:
    from service_world import setup

    return setup()


def _run(node: Node, body: Callable[[httpx.AsyncClient], Any]) -> Any:
    async def go() -> Any:
        transport = httpx.ASGITransport(app=create_app(node), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as c:
            return await body(c)

    return asyncio.run(go())


def _validate(body: Any, component: str) -> None:
    """``body`` is what the OpenAPI document promises (its component schema)."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs

    doc = openapi()
    # the component, with the document's components beside it: its refs resolve
    schema = {**doc["components"]["schemas"][component], "components": doc["components"]}
    Draft202012Validator(schema).validate(body)


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
    ({"q": "*"}, "bad_query"),
    ({"q": '"()"'}, "bad_query"),
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

#: Queries in FTS5's syntax that SQLite would reject raw: here plain words, answered.
FTS5_SYNTAX = ['"unbalanced', "a AND", "(a OR b", "NEAR(a b", "content:a", "a:b:c", "^", "a*b"]


def test_bad_searches_are_4xx_with_a_stable_code_and_fts5_syntax_is_just_words(
    tmp_path: Path,
) -> None:
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
        for q in FTS5_SYNTAX:
            r = await c.get("/search", params={"q": q})
            assert r.status_code == (422 if not terms(q) else 200), (q, r.text)
        r = await c.post("/search", content=b"{not json")
        assert r.json()["error"] == "malformed"
        r = await c.post("/search", json={"q": "a", "k": True})
        assert r.json()["error"] == "bad_query"
        r = await c.post("/search", json=["a"])
        assert r.json()["error"] == "bad_query"

    _run(node, body)
    node.close()


_TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ['"', "NEAR(", "*", "(", ")", "col:", "AND", "OR NOT", "\x00", "^", "-", "+"]
)
_PARAM = st.one_of(_TEXT, st.integers(-5, 200).map(str), st.none())


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    q=st.lists(_TEXT, max_size=6).map(" ".join) | st.none(),
    k=_PARAM,
    include=st.sampled_from([None, "history", "History", ""]) | _TEXT,
    slot=_PARAM,
    post_k=st.one_of(st.integers(-3, 200), st.none(), st.booleans(), st.floats(), _TEXT),
)
def test_fuzz_search_no_500_no_traceback(
    fuzz_node: Node,
    q: str | None,
    k: str | None,
    include: str | None,
    slot: str | None,
    post_k: Any,
) -> None:
    """Any GET or POST /search is a 200 or a 4xx with a code of GATE_ERRORS: never a
    500, never a traceback, and every 200 is the promised SearchResult."""

    async def body(c: httpx.AsyncClient) -> None:
        params = {
            n: v
            for n, v in (("q", q), ("k", k), ("include", include), ("slot", slot))
            if v is not None
        }
        doc = {**params, "k": post_k} if post_k is not None else params
        for r in (
            await c.get("/search", params=params),
            await c.post("/search", content=json.dumps(doc, allow_nan=True).encode()),
        ):
            assert r.status_code < 500, r.text
            b = r.json()
            if r.status_code == 200:
                _validate(b, "SearchResult")
            else:
                assert b["error"] in GATE_ERRORS and GATE_ERRORS[b["error"]].status == r.status_code
                assert "Traceback" not in b["detail"]

    _run(fuzz_node, body)


@pytest.fixture(scope="module")
def fuzz_node(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("fuzz")
    node, s = _node(tmp), Signer()
    for e in _to_active(s, "x", "s", content="a b c NEAR content alpha"):
        assert node.submit(e).status == 200
    yield node
    node.close()
