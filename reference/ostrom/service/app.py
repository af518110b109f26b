"""The HTTP face of ostrom, one for a node and for a cluster: a Starlette app over a
``Backend`` (service/backend.py; no hand-written HTTP server).

Thin on purpose: each handler parses what the request carries, hands it to the backend
(a ``LocalBackend`` over a ``Node``, or a cluster's front: cluster/front.py), and answers
JSON.  The routes are ``openapi.ENDPOINTS`` (one table; ``create_app`` refuses to build if
a handler is missing or extra) and a cluster serves every one of them.  Every byte of a
request is hostile: the body is read up to the backend's ``body_limit`` and no further
(413 before any parsing), JSON is parsed strictly (no NaN/Infinity, no lone surrogates,
bounded depth), every error is ``{"error": code, "detail": ...}`` with a code of
``GATE_ERRORS``, and no input produces a 500.

Every read is a ``reads.Read`` answered with the log position it was read at (the
``Ostrom-Position`` header; on a cluster ``Ostrom-Answered-By`` names the replica(s)), and
takes ``consistent=1``: on a cluster, ``f+1`` replicas agreeing at one position
(docs/design.md §11).  ``GET /events`` is a long poll over ``Backend.wait``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ostrom.service.backend import Backend, LocalBackend
from ostrom.service.budget import RefusalBudget, is_refusal, senders
from ostrom.service.gate import GATE_ERRORS
from ostrom.service.node import Node, Reply, error
from ostrom.service.openapi import (
    BODY_LIMIT,
    ENDPOINTS,
    MAX_LIMIT,
    MAX_WAIT,
    POSITION_HEADER,
    SEARCH_BODY_LIMIT,
    SOURCE_HEADER,
    openapi,
)
from ostrom.service.readpool import RETRY_AFTER_S, ReadPool, ReadsBusy
from ostrom.service.reads import Answer, Read
from ostrom.service.search import HISTORY, SearchError, SearchQuery
from ostrom.service.store import StoreError

__all__ = ["create_app"]

_Handler = Callable[[Request], Awaitable[Response]]


class _BadRequest(Exception):
    """A request the node refuses before it reaches the node: code and detail."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def _reply(r: Reply) -> JSONResponse:
    headers = None if r.retry_after is None else {"Retry-After": str(r.retry_after)}
    return JSONResponse(r.body, status_code=r.status, headers=headers)


def _too_many(wait: float) -> JSONResponse:
    """429 ``too_many_refusals`` with the seconds to wait (ADM-2)."""
    r = _err("too_many_refusals", f"refused too often lately; retry in {wait:.1f} s")
    r.headers["Retry-After"] = str(max(1, math.ceil(wait)))
    return r


def _err(code: str, detail: str) -> JSONResponse:
    return _reply(error(code, detail))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(raw: bytes) -> Any:
    """Strict JSON from untrusted bytes (``BadRequest("malformed")`` otherwise)."""
    try:
        doc = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _BadRequest("malformed", f"not JSON: {str(exc)[:200]}") from None
    return doc


async def _read_body(request: Request, limit: int = BODY_LIMIT) -> bytes:
    """The body, refused as ``too_large`` as soon as it passes ``limit`` bytes (the
    declared Content-Length first, then the bytes actually read)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise _BadRequest("malformed", "Content-Length is not a number")
        if int(declared) > limit:
            raise _BadRequest("too_large", f"the body is over {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _BadRequest("too_large", f"the body is over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _int(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not raw.isascii() or not raw.isdigit() or len(raw) > 19 or not lo <= int(raw) <= hi:
        raise _BadRequest("bad_query", f"{name} must be an integer in {lo}..{hi}")
    return int(raw)


def _float(request: Request, name: str, default: float, lo: float, hi: float) -> float:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or not lo <= v <= hi:
        raise _BadRequest("bad_query", f"{name} must be a number in [{lo}, {hi}]")
    return v


def _consistent(request: Request) -> bool:
    raw = request.query_params.get("consistent")
    if raw is None or raw == "0":
        return False
    if raw == "1":
        return True
    raise _BadRequest("bad_query", "consistent must be 0 or 1")


def _answer(a: Answer) -> Response:
    """A read's answer with the position it was read at (and who answered, on a cluster)."""
    headers = {} if a.position is None else {POSITION_HEADER: str(a.position)}
    if a.source is not None:
        headers[SOURCE_HEADER] = a.source
    if a.raw is not None:  # encoded once for every read of the node's view
        return Response(a.raw, a.status, headers, media_type="application/json")
    return JSONResponse(a.body, status_code=a.status, headers=headers)


def create_app(
    served: Node | Backend,
    *,
    tick_interval: float | None = None,
    refusals: RefusalBudget | None = None,
    key_of: Callable[[str], str | None] | None = None,
    reads: ReadPool | None = None,
) -> Starlette:
    """The Starlette app of a node or of a cluster's front (``served``: a ``Node`` is
    served by a ``LocalBackend``; ``tick_interval``: the node ticks by itself;
    ``refusals``: the refusal budget of each address and key, ADM-2 — ``ostrom serve``
    always passes one, None serves without; ``key_of``: a backend's registered keys, for
    the budget — a node's are its gate's, a cluster's front passes those it keeps;
    ``reads``: a node's pool for the reads of the file, service/readpool.py — default,
    its default bounds)."""

    backend: Backend = (
        LocalBackend(served, tick_interval=tick_interval, reads=reads)
        if isinstance(served, Node)
        else served
    )
    limit = backend.body_limit

    # a registered principal is charged for its own signed refusals only (ADM-2)
    known = (
        served.gate.key_of
        if isinstance(served, Node)
        else key_of
        if key_of is not None
        else (lambda _agent: None)
    )

    async def commands(request: Request) -> Response:
        if refusals is None:
            return _reply(await backend.submit(_parse_json(await _read_body(request, limit))))
        address = request.client.host if request.client is not None else ""
        try:
            envelope = _parse_json(await _read_body(request, limit))
        except _BadRequest:  # bytes that are not an envelope: the address's refusal
            charged = senders(None, address, False)
            wait = refusals.wait(charged, time.monotonic())
            if wait > 0:  # ADM-2: over budget, whatever it sent (before: 400 for ever)
                return _too_many(wait)
            refusals.charge(charged, time.monotonic())
            raise
        agent = envelope.get("agent") if isinstance(envelope, dict) else None
        registered = isinstance(agent, str) and known(agent) is not None
        charged = senders(envelope, address, registered)
        wait = refusals.wait(charged, time.monotonic())
        if wait > 0:  # ADM-2: refused too often lately; the gate never sees it
            return _too_many(wait)
        reply = await backend.submit(envelope)
        if is_refusal(reply.status, reply.body, registered):
            refusals.charge(charged, time.monotonic())
        return _reply(reply)

    async def read(request: Request, name: str, **args: Any) -> Response:
        return _answer(await backend.read(Read.of(name, **args), _consistent(request)))

    def _only(request: Request, *names: str) -> None:
        p = request.query_params
        if set(p) - {*names, "consistent"} or any(len(p.getlist(n)) > 1 for n in p):
            raise _BadRequest("bad_query", f"takes {', '.join(names)} and consistent, each once")

    async def artifacts(request: Request) -> Response:
        return await read(request, "artifacts")

    async def artifact(request: Request) -> Response:
        return await read(request, "artifact", artifact=request.path_params["artifact"])

    async def search(request: Request) -> Response:
        p = request.query_params
        _only(request, "q", "k", "include", "slot")
        # checked here, so a bad query costs no replica a read (the replica checks again)
        SearchQuery.parse(p.get("q"), p.get("k"), p.get("include"), p.get("slot"))
        return await read(
            request,
            "search",
            q=p.get("q"),
            k=p.get("k"),
            include=p.get("include"),
            slot=p.get("slot"),
        )

    async def search_post(request: Request) -> Response:
        doc = _parse_json(await _read_body(request, SEARCH_BODY_LIMIT))
        if not isinstance(doc, dict) or set(doc) - {"q", "k", "include", "slot", "vector"}:
            raise _BadRequest(
                "bad_query", "the body is an object {q?, k?, include?, slot?, vector?}"
            )
        k = doc.get("k")
        if isinstance(k, str):  # JSON's k is a number, not its text
            k = -1
        if "q" not in doc and "vector" not in doc:
            raise _BadRequest("bad_query", "a search takes q, a vector, or both")
        if "q" in doc and doc["q"] is None:  # left out is not null: q is a text
            raise _BadRequest("bad_query", "q must be a text")
        if "vector" in doc and doc["vector"] is None:
            raise _BadRequest("bad_embedding", "vector must be a list of numbers")
        # checked here, so a bad query costs no replica a read (the replica checks again,
        # against its community's embedding_dim)
        query = SearchQuery.parse(
            doc.get("q"),
            k,
            doc.get("include"),
            doc.get("slot"),
            vector=doc.get("vector"),
            dim=backend.embedding_dim,
        )
        return await read(
            request,
            "search",
            q=doc.get("q"),  # as sent: left out with a vector alone
            k=query.k,
            include=HISTORY if query.history else None,
            slot=query.slot,
            vector=None if query.vector is None else list(query.vector),
        )

    async def slot(request: Request) -> Response:
        return await read(request, "slot", slot=request.path_params["slot"])

    async def content(request: Request) -> Response:
        return await read(request, "content", artifact=request.path_params["artifact"])

    async def agents(request: Request) -> Response:
        return await read(request, "agents")

    async def agent(request: Request) -> Response:
        return await read(request, "agent", agent=request.path_params["agent"])

    async def slots(request: Request) -> Response:
        return await read(request, "slots")

    def _page(request: Request) -> tuple[int, int]:
        return (
            _int(request, "after", 0, 0, 2**63 - 1),
            _int(request, "limit", 100, 1, MAX_LIMIT),
        )

    async def log(request: Request) -> Response:
        after, limit = _page(request)
        return await read(request, "log", after=after, limit=limit)

    async def events(request: Request) -> Response:
        after, limit = _page(request)
        timeout = _float(request, "timeout", 10.0, 0.0, MAX_WAIT)
        consistent = _consistent(request)
        if "text/event-stream" in request.headers.get("accept", ""):
            last = request.headers.get("last-event-id", "")
            if last:  # a reconnecting EventSource resumes after the last entry it saw
                if not last.isascii() or not last.isdigit() or len(last) > 19:
                    raise _BadRequest("bad_query", "Last-Event-ID must be a log position")
                after = max(after, int(last))
            return StreamingResponse(
                _sse(backend, after, limit, timeout, consistent), media_type="text/event-stream"
            )
        await backend.wait(after, timeout)
        return _answer(await backend.read(Read.of("log", after=after, limit=limit), consistent))

    async def health(request: Request) -> Response:
        return await read(request, "health")

    async def status(request: Request) -> Response:
        return JSONResponse(await backend.status())

    doc = openapi()

    async def openapi_doc(request: Request) -> Response:
        return JSONResponse(doc)

    handlers: dict[str, _Handler] = {
        "commands": commands,
        "artifacts": artifacts,
        "artifact": artifact,
        "content": content,
        "agents": agents,
        "agent": agent,
        "slots": slots,
        "slot": slot,
        "search": search,
        "search_post": search_post,
        "log": log,
        "events": events,
        "health": health,
        "status": status,
        "openapi": openapi_doc,
    }
    if set(handlers) != {e.name for e in ENDPOINTS}:
        raise RuntimeError("app.py's handlers are not openapi.ENDPOINTS")

    def guarded(h: _Handler) -> _Handler:
        async def run(request: Request) -> Response:
            try:
                return await h(request)
            except (_BadRequest, SearchError) as exc:
                return _err(exc.code, exc.detail)
            except ReadsBusy as exc:  # the node's read pool and its queue are full
                r = _err("busy", f"too many reads waiting ({exc}); nothing was read")
                r.headers["Retry-After"] = str(RETRY_AFTER_S)
                return r
            except (sqlite3.Error, StoreError) as exc:
                return _err("db_unavailable", f"the database cannot be read: {exc}")

        return run

    routes = [
        Route(e.path, guarded(handlers[e.name]), methods=[e.method], name=e.name) for e in ENDPOINTS
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "malformed")
        return JSONResponse(
            {"error": code, "detail": str(exc.detail)}, status_code=GATE_ERRORS[code].status
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with backend.running():
            yield

    return Starlette(
        routes=routes, exception_handlers={HTTPException: http_error}, lifespan=lifespan
    )


async def _sse(
    backend: Backend, after: int, limit: int, timeout: float, consistent: bool
) -> AsyncIterator[str]:
    """Server-sent events: one ``entry`` event per log entry after ``after`` (``id``: its
    position, ``data``: the public entry, redacted as GET /log), for ``timeout`` seconds;
    then the stream ends and an EventSource reconnects with Last-Event-ID."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            page = await backend.read(Read.of("log", after=after, limit=limit), consistent)
        except ReadsBusy:  # the node's read pool is full: the stream ends, the client
            return  # reconnects with Last-Event-ID (its retry)
        for e in page.body.get("entries", []) if page.status == 200 else []:
            after = e["pos"]
            yield f"id: {after}\nevent: entry\ndata: {json.dumps(e, sort_keys=True)}\n\n"
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        await backend.wait(after, remaining)
