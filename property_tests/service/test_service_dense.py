"""Dense retrieval at the node (service/dense.py, docs/design.md §11): embeddings on
proposals, search by a query vector, and its reciprocal rank fusion with BM25, through
the HTTP app (httpx's ASGI transport) over a real node and its SQLite store; the client
and the MCP tools with vectors against a node on loopback.

Bad embeddings and bad query vectors are each a 4xx with a stable code that changes
nothing: no log row, no payload, no vector, no read.  READ-1 over dense hits is the
state machine's (test_service_search_stateful.py); FORGET-PURGE of the vectors is
test_service_content.py's grep.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from content_world import post_all as _post_all
from content_world import propose as _propose
from content_world import to_active as _to_active
from ostrom.protocol.params import Params
from ostrom.service.dense import RRF_K, rrf
from ostrom.service.node import Node
from ostrom.service.search import SearchQuery
from service_world import OPERATOR, Signer, key, served, setup
from service_world import in_app as _run
from service_world import validate_schema as _validate

DIM = 3
PARAMS = Params(embedding_dim=DIM)


def _node(tmp: Path, params: Params = PARAMS) -> Node:
    return Node.open(tmp / "n.db", params=params, setup=setup(), fsync=False)


def _vectors(node: Node) -> int:
    """Rows of the embeddings table (read beside the node's connection)."""
    db = sqlite3.connect(node.store.path)
    try:
        return int(db.execute("SELECT count(*) FROM content_vec").fetchone()[0])
    finally:
        db.close()


# --- embeddings on proposals ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("embedding", "status", "code"),
    [
        ([1.0, 0.0], 422, "embedding_dimension"),
        ([1.0, 0.0, 0.0, 0.0], 422, "embedding_dimension"),
        ([], 422, "bad_embedding"),
        ([1.0, True, 0.0], 422, "bad_embedding"),
        ([1.0, "0", 0.0], 422, "bad_embedding"),
        ([1.0, None, 0.0], 422, "bad_embedding"),
        ([2e9, 0.0, 0.0], 422, "bad_embedding"),
        ([10**400, 0, 0], 422, "bad_embedding"),
        ([0.0] * 4097, 422, "bad_embedding"),
        ("1,0,0", 422, "bad_embedding"),
        ({"x": 1}, 422, "bad_embedding"),
    ],
)
def test_a_bad_embedding_is_a_4xx_that_changes_nothing(
    tmp_path: Path, embedding: Any, status: int, code: str
) -> None:
    """Over HTTP: the code, and no row, payload or vector kept; the sender's seq unused."""
    node, s = _node(tmp_path), Signer()
    cmd = _propose("f1", "x", "s", content="text", embedding=[0.0, 0.0, 1.0])
    cmd["embedding"] = embedding  # checked before the digest: the digest is the old one

    async def body(c: httpx.AsyncClient) -> httpx.Response:
        return await c.post("/commands", content=json.dumps(s.env("f1", cmd)).encode())

    r = _run(node, body)
    assert (r.status_code, r.json()["error"]) == (status, code), r.text
    assert node.last_pos == 0 and node.store.payload_count() == 0 and _vectors(node) == 0
    assert node.gate.last_seq("f1") == 0
    node.close()


def test_nan_infinity_and_a_community_without_embeddings(tmp_path: Path) -> None:
    """NaN and infinity: no JSON carries them (malformed, 400), and a caller of the node
    in process gets bad_embedding; a community whose embedding_dim is 0 refuses any
    embedding (embeddings_off) and any query vector; a good embedding whose digest is
    another payload's is digest_mismatch."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    node, s = _node(tmp_path / "a"), Signer()
    for bad in ([math.nan, 0.0, 1.0], [math.inf, 0.0, 1.0], [0.0, -math.inf, 1.0]):
        cmd = _propose("f1", "x", "s", content="t", embedding=[1.0, 0.0, 0.0])
        r = node.submit(Signer().env("f1", {**cmd, "embedding": bad}))  # seq 1 each time
        assert (r.status, r.body["error"]) == (422, "bad_embedding"), bad

    async def body(c: httpx.AsyncClient) -> list[httpx.Response]:
        cmd = _propose("f1", "x", "s", content="t", embedding=[1.0, 0.0, 0.0])
        raw = json.dumps(Signer().env("f1", {**cmd, "embedding": [math.nan, 0, 1]})).encode()
        other = Signer().env("f1", {**cmd, "embedding": [1.0, 0.0, 0.5]})
        return [
            await c.post("/commands", content=raw),
            await c.post("/commands", json=other),
            await c.post("/search", content=b'{"vector": [NaN, 0, 1]}'),
        ]

    nan, mismatch, nan_query = _run(node, body)
    assert (nan.status_code, nan.json()["error"]) == (400, "malformed")
    assert (mismatch.status_code, mismatch.json()["error"]) == (422, "digest_mismatch")
    assert (nan_query.status_code, nan_query.json()["error"]) == (400, "malformed")
    assert node.last_pos == 0 and _vectors(node) == 0
    node.close()
    off, s = _node(tmp_path / "b", Params()), Signer()
    cmd = _propose("f1", "x", "s", content="t", embedding=[1.0, 0.0, 0.0])
    r = off.submit(s.env("f1", cmd))
    assert (r.status, r.body["error"]) == (422, "embeddings_off")

    async def query(c: httpx.AsyncClient) -> httpx.Response:
        return await c.post("/search", json={"q": "t", "vector": [1.0, 0.0, 0.0]})

    r2 = _run(off, query)
    assert (r2.status_code, r2.json()["error"]) == (422, "embeddings_off")
    r = off.submit(Signer().env("f1", _propose("f1", "x", "s", content="t")))
    assert r.status == 200 and r.body["result"] == "ok"  # without one: as before
    off.close()


# --- search by vector, and fused --------------------------------------------------------------

#: Three active artifacts: their words and their embeddings.
DOCS = {
    "boil": ("water boils at one hundred degrees", [1.0, 0.0, 0.0]),
    "melt": ("ice melts into water", [0.8, 0.6, 0.0]),
    "iron": ("iron rusts in water and air", [0.0, 0.6, 0.8]),
}


def _world(tmp: Path) -> Node:
    node, s = _node(tmp), Signer()
    envs = [
        s.env(f, _propose(f, x, x, content=text, embedding=vec))
        for f, (x, (text, vec)) in zip(("f1", "f2", "f3"), DOCS.items(), strict=True)
    ]
    envs += [s.env(OPERATOR, {"op": "tick"}) for _ in range(4)]
    for e in envs:
        r = node.submit(e)
        assert r.status == 200 and r.body["result"] == "ok", r.body
    return node


def test_search_by_vector_by_words_and_fused(tmp_path: Path) -> None:
    """A vector alone ranks by cosine similarity; words alone by BM25; both by reciprocal
    rank fusion, each hit's score the sum of 1/(RRF_K + rank) over the rankings it is in,
    its ranks and similarity exposed; every answer is the promised SearchResult."""
    node = _world(tmp_path)
    query = [0.0, 0.6, 0.8]

    async def body(c: httpx.AsyncClient) -> list[Any]:
        return [
            (await c.post("/search", json={"vector": query})).json(),
            (await c.post("/search", json={"q": "water boils", "vector": query})).json(),
            (await c.get("/search", params={"q": "water boils"})).json(),
            (await c.post("/search", json={"q": "water", "vector": query, "k": 1})).json(),
        ]

    dense, fused, words, top = _run(node, body)
    for answer in (dense, fused, words, top):
        _validate(answer, "SearchResult")
    assert [h["artifact"] for h in dense["hits"]] == ["iron", "melt", "boil"]
    assert [h["ranks"] for h in dense["hits"]] == [{"lexical": None, "dense": r} for r in (1, 2, 3)]
    sims = [h["similarity"] for h in dense["hits"]]
    assert sims == pytest.approx([1.0, 0.36, 0.0], abs=1e-6)
    assert [h["score"] for h in dense["hits"]] == sims
    lexical = [h["artifact"] for h in words["hits"]]
    assert lexical[0] == "boil" and set(lexical) == set(DOCS)
    assert all(h["similarity"] is None and h["ranks"]["dense"] is None for h in words["hits"])
    # fused: the expected RRF of the two rankings, computed here from the ranks
    lex_rank = {x: i for i, x in enumerate(lexical, 1)}
    dense_rank = {"iron": 1, "melt": 2, "boil": 3}
    expected = {x: 1 / (RRF_K + lex_rank[x]) + 1 / (RRF_K + dense_rank[x]) for x in DOCS}
    got = {h["artifact"]: h for h in fused["hits"]}
    assert set(got) == set(DOCS)
    for x, h in got.items():
        assert h["score"] == pytest.approx(expected[x])
        assert h["ranks"] == {"lexical": lex_rank[x], "dense": dense_rank[x]}
    order = sorted(DOCS, key=lambda x: (-expected[x], x))
    assert [h["artifact"] for h in fused["hits"]] == order
    assert len(top["hits"]) == 1
    # answered searches are reads, vector-only ones too (their query text is empty)
    reads = node.artifact("iron")
    assert reads is not None and reads["reads"]["returned"] == 3
    node.close()


def test_bad_query_vectors_are_4xx_and_record_no_read(tmp_path: Path) -> None:
    node = _world(tmp_path)
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"vector": [1.0, 0.0]}, 422, "embedding_dimension"),
        ({"q": "water", "vector": [1.0, 0.0, 0.0, 0.0]}, 422, "embedding_dimension"),
        ({"vector": [0.0, 0.0, 0.0]}, 422, "bad_embedding"),  # a zero vector points nowhere
        ({"vector": [1.0, "x", 0.0]}, 422, "bad_embedding"),
        ({"vector": []}, 422, "bad_embedding"),
        ({"vector": "1 0 0"}, 422, "bad_embedding"),
        ({"vector": [1e300, 0.0, 0.0]}, 422, "bad_embedding"),
        ({"vector": [1.0, 0.0, 0.0], "q": 'water "boils"'}, 422, "query_syntax"),
        ({"vector": [1.0, 0.0, 0.0], "q": None}, 422, "bad_query"),
        ({"k": 3}, 422, "bad_query"),
        ({"q": "water", "vector": None}, 422, "bad_embedding"),
        ({"vector": [1.0, 0.0, 0.0], "other": 1}, 422, "bad_query"),
    ]

    async def body(c: httpx.AsyncClient) -> list[httpx.Response]:
        out = [await c.post("/search", json=doc) for doc, _, _ in cases]
        out.append(await c.get("/search", params={"q": "water", "vector": "1,0,0"}))
        return out

    before = {x: node.store.reads(x) for x in DOCS}
    answers = _run(node, body)
    for r, (doc, status, code) in zip(answers, cases, strict=False):
        assert (r.status_code, r.json()["error"]) == (status, code), (doc, r.text)
    assert answers[-1].json()["error"] == "bad_query"  # GET carries no vector
    assert {x: node.store.reads(x) for x in DOCS} == before
    node.close()


def test_embeddings_are_payload_kept_served_and_replayed(tmp_path: Path) -> None:
    """GET /artifacts/{id}/content serves the embedding as hashed; the node replays its
    log (``verify``) and searches the same after a restart; two artifacts with one payload
    share one vector row."""
    node = _world(tmp_path)
    before = node.search(SearchQuery.parse(None, vector=[0.0, 0.6, 0.8], dim=DIM))["hits"]
    got = node.content("melt").body
    assert got["embedding"] == [0.8, 0.6, 0.0] and got["content"] == DOCS["melt"][0]
    text, vec = DOCS["melt"]
    r = node.submit(Signer().env("f4", _propose("f4", "again", "o", content=text, embedding=vec)))
    assert r.body["result"] == "ok"
    assert _vectors(node) == 3
    node.close()
    again = Node.open(tmp_path / "n.db", fsync=False, verify=True)
    after = again.search(SearchQuery.parse(None, vector=[0.0, 0.6, 0.8], dim=DIM))["hits"]
    assert [(h["artifact"], h["similarity"]) for h in after] == [
        (h["artifact"], h["similarity"]) for h in before
    ]
    again.close()


def test_rrf_is_the_documented_formula() -> None:
    fused = rrf(["a", "b", "c"], ["c", "a"])
    assert fused == [
        ("a", 1 / 61 + 1 / 62, [1, 2]),
        ("c", 1 / 63 + 1 / 61, [3, 1]),
        ("b", 1 / 62, [2, None]),
    ]
    assert rrf(["b"], ["a"]) == [("a", 1 / 61, [None, 1]), ("b", 1 / 61, [1, None])]  # ties


# --- the client and the MCP tools --------------------------------------------------------------


@pytest.fixture
def dense_url(tmp_path: Path) -> Iterator[tuple[str, Node]]:
    node = _node(tmp_path)
    with served(node) as url:
        yield url, node


def test_client_and_mcp_tools_carry_vectors(dense_url: tuple[str, Node], tmp_path: Path) -> None:
    """Client.propose(embedding=) and Client.search(vector=); the MCP tools remember
    (embedding) and search_memory (vector) through an in-process server; a NaN is
    bad_embedding before any request (JSON cannot carry it)."""
    import anyio
    from mcp import Client as McpClient

    from ostrom.agent import BallotBook, Memory
    from ostrom.agent.server import build_server
    from ostrom.client import Client, ClientError

    url, node = dense_url
    f1, op = Client(url, "f1", key("f1")), Client(url, OPERATOR, key(OPERATOR))
    assert f1.propose("a", "s", content="water boils", embedding=[1, 0, 0])["result"] == "ok"
    for _ in range(4):
        op.tick()
    hits = f1.search(None, vector=[1.0, 0.1, 0.0])["hits"]
    assert [h["artifact"] for h in hits] == ["a"] and hits[0]["ranks"]["dense"] == 1
    hits = f1.search("water", vector=[1.0, 0.1, 0.0])["hits"]
    assert hits[0]["ranks"] == {"lexical": 1, "dense": 1}
    for bad in ([math.nan, 0.0, 0.0], [1.0, 0.0]):
        with pytest.raises(ClientError) as err:
            f1.search("water", vector=bad)
        assert err.value.code in ("bad_embedding", "embedding_dimension")
    with pytest.raises(ClientError) as err:
        f1.propose("b", "t", content="x", embedding=[math.inf, 0.0, 0.0])
    assert err.value.code == "bad_embedding"

    async def main() -> None:
        with Client(url, "f2", key("f2")) as client:
            server = build_server(Memory(client, BallotBook(tmp_path / "b.json", "f2")))
            async with McpClient(server) as c:
                r = await c.call_tool(
                    "remember", {"slot": "t", "content": "ice", "embedding": [0.0, 1.0, 0.0]}
                )
                assert not r.is_error, r
                out = await c.call_tool("search_memory", {"vector": [1.0, 0.0, 0.0], "k": 3})
                assert not out.is_error, out
                found = out.structured_content or {}
                assert [h["artifact"] for h in found["hits"]] == ["a"]
                bad = await c.call_tool("search_memory", {"vector": [1.0]})
                assert bad.is_error and "embedding_dimension" in str(bad.content)
                none = await c.call_tool("search_memory", {})
                assert none.is_error and "bad_argument" in str(none.content)

    anyio.run(main)
    f1.close()
    op.close()
    assert node.store.payload_count() == 2


def test_the_world_is_reached_over_http_too(tmp_path: Path) -> None:
    """A payload with an embedding proposed over HTTP is kept with its vector."""
    node, s = _node(tmp_path), Signer()

    async def body(c: httpx.AsyncClient) -> None:
        await _post_all(c, _to_active(s, "x", "s", content="c", embedding=[0.0, 0.0, 2.0]))
        r = await c.get("/artifacts/x/content")
        assert r.json()["embedding"] == [0.0, 0.0, 2.0]
        _validate(r.json(), "Content")

    _run(node, body)
    assert _vectors(node) == 1
    node.close()


def test_nearest_orders_every_vector_as_a_full_sort_would() -> None:
    """dense.nearest orders its first vectors by a partial sort and the rest after: the
    order is exactly the full sort's (similarity, then content id), ties at the cut too."""
    import random

    import numpy as np

    from ostrom.service.dense import matrix as stack
    from ostrom.service.dense import nearest, to_blob, unit

    rng = random.Random(7)
    vectors = [[float(rng.randint(-2, 2)) for _ in range(4)] for _ in range(3000)]
    rows = [(i, to_blob(v)) for i, v in enumerate(vectors, 1) if any(v)]
    query = [1.0, 0.5, 0.0, -1.0]
    matrix = np.frombuffer(b"".join(b for _, b in rows), dtype="<f4").reshape(len(rows), 4)
    sims = matrix.astype(np.float64) @ unit(query).astype(np.float64)
    full = sorted(
        zip((i for i, _ in rows), sims.tolist(), strict=True), key=lambda t: (-t[1], t[0])
    )
    assert list(nearest(*stack(rows, 4), query)) == full


def test_a_header_without_a_later_parameter_opens_with_its_parameters(tmp_path: Path) -> None:
    """A header written before a parameter joined the table (embedding_dim, join_mode,
    join_pow_bits) reads it at its default, and the same parameters given again are the
    same (not "other parameters"); a dimension given for it is other parameters."""
    from ostrom.service.store import StoreError

    params = Params(min_active_agents=3)
    node = _node(tmp_path, params)
    node.close()
    db = sqlite3.connect(tmp_path / "n.db")
    stored = json.loads(db.execute("SELECT value FROM meta WHERE key = 'params'").fetchone()[0])
    for later in ("embedding_dim", "join_mode", "join_pow_bits"):
        del stored[later]
    db.execute("UPDATE meta SET value = ? WHERE key = 'params'", (json.dumps(stored),))
    db.commit()
    db.close()
    again = Node.open(tmp_path / "n.db", params=params, setup=setup(), fsync=False, verify=True)
    assert again.gate.params.embedding_dim == 0 and _vectors(again) == 0
    assert again.gate.params.join_mode == "open"
    again.close()
    with pytest.raises(StoreError, match="other parameters"):
        Node.open(tmp_path / "n.db", params=PARAMS, fsync=False)
