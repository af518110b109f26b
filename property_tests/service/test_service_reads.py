"""The read API as data (ostrom/service/reads.py) and the one application over a backend
(service/app.py, service/backend.py), on a real node through httpx's ASGI transport.

* every read the app serves is ``reads.answer`` of the same ``Read`` (the function a
  cluster's replica answers with), with ``Ostrom-Position`` the log position it was read
  at; ``consistent=1`` gives the same answer on a node (its own quorum), anything else
  but 0 and 1 is 422 ``bad_query``;
* the app serves a ``Node`` through its ``LocalBackend`` (service/backend.py);
* the OpenAPI document gives every read ``consistent`` and the position header;
* ``Read.from_json``, the replica's side of the read channel, refuses every hostile
  document with ``ReadError`` (Hypothesis) and round-trips every read the app builds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from content_world import FORGET_PARAMS, post_all, to_active
from ostrom.service.app import create_app
from ostrom.service.backend import LocalBackend
from ostrom.service.node import Node
from ostrom.service.openapi import ENDPOINTS, POSITION_HEADER, SOURCE_HEADER, openapi
from ostrom.service.reads import READS, Read, ReadError, answer
from service_world import Signer, setup

#: Each read route, the request that reaches it and the ``Read`` it must be.
CASES: list[tuple[str, dict[str, str], Read]] = [
    ("/artifacts", {}, Read.of("artifacts")),
    ("/artifacts/x", {}, Read.of("artifact", artifact="x")),
    ("/artifacts/nope", {}, Read.of("artifact", artifact="nope")),
    ("/artifacts/x/content", {}, Read.of("content", artifact="x")),
    ("/agents", {}, Read.of("agents")),
    ("/agents/f1", {}, Read.of("agent", agent="f1")),
    ("/slots", {}, Read.of("slots")),
    ("/slots/s", {}, Read.of("slot", slot="s")),
    ("/search", {"q": "alpha"}, Read.of("search", q="alpha")),
    ("/log", {"after": "2", "limit": "2"}, Read.of("log", after=2, limit=2)),
    ("/health", {}, Read.of("health")),
]


def _run(node: Node, body: Callable[[httpx.AsyncClient], Any]) -> Any:
    """The app over the node's backend, as ``create_app(node)`` builds it."""

    async def go() -> Any:
        transport = httpx.ASGITransport(app=create_app(LocalBackend(node)))
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as c:
            return await body(c)

    return asyncio.run(go())


def test_every_read_is_reads_answer_at_its_position(tmp_path: Path) -> None:
    node = Node.open(tmp_path / "n.db", params=FORGET_PARAMS, setup=setup(), fsync=False)
    assert {r.name for _, _, r in CASES} == set(READS)

    async def body(c: httpx.AsyncClient) -> None:
        await post_all(c, to_active(Signer(), "x", "s", content="alpha beta"))
        for path, params, read in CASES:
            want = answer(node, read)
            for consistent in ({}, {"consistent": "0"}, {"consistent": "1"}):
                r = await c.get(path, params={**params, **consistent})
                assert (r.status_code, r.json()) == (want.status, want.body), path
                assert int(r.headers[POSITION_HEADER]) == node.last_pos == want.position
                assert SOURCE_HEADER.lower() not in r.headers  # a node names no replica
            bad = await c.get(path, params={**params, "consistent": "yes"})
            assert (bad.status_code, bad.json()["error"]) == (422, "bad_query"), path
        r = await c.post("/search", json={"q": "alpha"}, params={"consistent": "1"})
        assert r.json() == answer(node, Read.of("search", q="alpha", k=10)).body
        status = (await c.get("/status")).json()
        assert status["kind"] == "node" and status["last_pos"] == node.last_pos

    _run(node, body)
    node.close()


def test_the_openapi_document_marks_every_read() -> None:
    doc = openapi()
    for e in ENDPOINTS:
        op = doc["paths"][e.path.replace(":path}", "}")][e.method.lower()]
        names = {p["name"] for p in op.get("parameters", [])}
        headers = op["responses"]["200"].get("headers", {})
        assert ("consistent" in names) == e.read == (POSITION_HEADER in headers), e.name
        if e.read:
            assert {"no_replica", "not_consistent"} <= set(e.errors)
    assert sum(e.read for e in ENDPOINTS) == len(ENDPOINTS) - 3  # commands, status, openapi


@pytest.mark.parametrize("read", [r for _, _, r in CASES])
def test_reads_travel(read: Read) -> None:
    assert Read.from_json(read.to_json()) == read


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)


_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    _nested,
    max_leaves=6,
)


@given(
    st.fixed_dictionaries(
        {
            "read": st.sampled_from(sorted(READS)) | st.text(max_size=6),
            "args": st.dictionaries(
                st.sampled_from(["artifact", "agent", "slot", "q", "k", "after", "limit", "x"]),
                st.integers() | st.text(max_size=8) | _value,
                max_size=4,
            ),
        }
    )
    | _value
)
def test_hostile_reads_are_refused_or_read(doc: Any) -> None:
    try:
        read = Read.from_json(doc)
    except ReadError:
        return
    assert read.name in READS and {k for k, _ in read.args} <= READS[read.name]
    assert Read.from_json(read.to_json()) == read
