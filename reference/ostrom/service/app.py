"""The node's HTTP face: a Starlette app over a ``Node`` (no hand-written HTTP server).

Thin on purpose: each handler parses what the request carries, calls the node, and
answers JSON.  The routes are ``openapi.ENDPOINTS`` (one table; ``create_app`` refuses to
build if a handler is missing or extra).  Every byte of a request is hostile: the body is
read up to ``body_limit`` (of the node's ``content_limit``) and no further (413 before any
parsing), JSON is parsed strictly
(no NaN/Infinity, no lone surrogates, bounded depth), every error is ``{"error": code,
"detail": ...}`` with a code of ``GATE_ERRORS``, and no input produces a 500.

The write path runs in a worker thread (SQLite's fsync must not block the event loop);
the node's lock serialises it.  ``GET /events`` is a long poll over ``Node.wait``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ostrom.service.gate import GATE_ERRORS
from ostrom.service.group_commit import GroupCommit
from ostrom.service.node import Node, Reply, error
from ostrom.service.openapi import (
    BODY_LIMIT,
    ENDPOINTS,
    MAX_LIMIT,
    MAX_WAIT,
    SEARCH_BODY_LIMIT,
    body_limit,
    openapi,
)
from ostrom.service.search import SearchError, SearchQuery
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
    return JSONResponse(r.body, status_code=r.status)


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


def _slots(artifacts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, dict[str, list[str]]] = {}
    for x, a in sorted(artifacts.items()):
        s = out.setdefault(a["slot"], {"artifacts": [], "active": []})
        s["artifacts"].append(x)
        if a["state"] == "active":
            s["active"].append(x)
    return out


def create_app(node: Node, *, tick_interval: float | None = None) -> Starlette:
    """The Starlette app of ``node`` (``tick_interval``: the node ticks by itself)."""

    writer = GroupCommit(node, threaded=node.store.fsync)

    limit = body_limit(node.gate.params.content_limit, node.gate.params.embedding_dim)

    async def commands(request: Request) -> Response:
        raw = await _read_body(request, limit)
        envelope = _parse_json(raw)
        return _reply(await writer.submit(envelope))

    async def state() -> dict[str, Any]:
        """The public state, computed off the event loop (it waits for the node's lock)."""
        return await run_in_threadpool(node.public_state)

    async def artifacts(request: Request) -> Response:
        st = await state()
        return JSONResponse({"now": st["now"], "artifacts": st["artifacts"]})

    async def artifact(request: Request) -> Response:
        x = request.path_params["artifact"]
        a = await run_in_threadpool(node.artifact, x)
        if a is None:
            return _err("not_found", f"no artifact {x[:200]!r}")
        return JSONResponse(a)

    async def search(request: Request) -> Response:
        p = request.query_params
        extra = set(p) - {"q", "k", "include", "slot"}
        if extra or any(len(p.getlist(n)) > 1 for n in p):
            raise _BadRequest("bad_query", "search takes q, k, include and slot, each once")
        query = SearchQuery.parse(p.get("q"), p.get("k"), p.get("include"), p.get("slot"))
        return JSONResponse(await run_in_threadpool(node.search, query))

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
        query = SearchQuery.parse(
            doc.get("q"),
            k,
            doc.get("include"),
            doc.get("slot"),
            vector=doc.get("vector"),
            dim=node.gate.params.embedding_dim,
        )
        return JSONResponse(await run_in_threadpool(node.search, query))

    async def slot(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(node.slot, request.path_params["slot"]))

    async def content(request: Request) -> Response:
        return _reply(await run_in_threadpool(node.content, request.path_params["artifact"]))

    async def agents(request: Request) -> Response:
        st = await state()
        return JSONResponse({"agents": st["agents"], "principals": st["principals"]})

    async def agent(request: Request) -> Response:
        a = await run_in_threadpool(node.agent, request.path_params["agent"])
        if a is None:
            return _err("not_found", "no such agent or operator (join first)")
        return JSONResponse(a)

    async def slots(request: Request) -> Response:
        return JSONResponse({"slots": _slots((await state())["artifacts"])})

    def _page(request: Request) -> tuple[int, int]:
        return (
            _int(request, "after", 0, 0, 2**63 - 1),
            _int(request, "limit", 100, 1, MAX_LIMIT),
        )

    async def log(request: Request) -> Response:
        after, limit = _page(request)
        entries = await run_in_threadpool(node.log, after, limit)
        return JSONResponse({"entries": entries, "last_pos": node.last_pos})

    async def events(request: Request) -> Response:
        after, limit = _page(request)
        timeout = _float(request, "timeout", 10.0, 0.0, MAX_WAIT)
        if "text/event-stream" in request.headers.get("accept", ""):
            last = request.headers.get("last-event-id", "")
            if last:  # a reconnecting EventSource resumes after the last entry it saw
                if not last.isascii() or not last.isdigit() or len(last) > 19:
                    raise _BadRequest("bad_query", "Last-Event-ID must be a log position")
                after = max(after, int(last))
            return StreamingResponse(
                _sse(node, after, limit, timeout), media_type="text/event-stream"
            )
        await node.wait(after, timeout)
        entries = await run_in_threadpool(node.log, after, limit)
        return JSONResponse({"entries": entries, "last_pos": node.last_pos})

    async def health(request: Request) -> Response:
        return JSONResponse(
            {"status": "ok", "last_pos": node.last_pos, "now": (await state())["now"]}
        )

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
        task = asyncio.create_task(_ticker(node, tick_interval)) if tick_interval else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    return Starlette(
        routes=routes, exception_handlers={HTTPException: http_error}, lifespan=lifespan
    )


async def _sse(node: Node, after: int, limit: int, timeout: float) -> AsyncIterator[str]:
    """Server-sent events: one ``entry`` event per log entry after ``after`` (``id``: its
    position, ``data``: the public entry, redacted as GET /log), for ``timeout`` seconds;
    then the stream ends and an EventSource reconnects with Last-Event-ID."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        for e in await run_in_threadpool(node.log, after, limit):
            after = e["pos"]
            yield f"id: {after}\nevent: entry\ndata: {json.dumps(e, sort_keys=True)}\n\n"
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        await node.wait(after, remaining)


async def _ticker(node: Node, interval: float) -> None:
    """``--tick-interval``: a signed tick by the node's operator every ``interval`` s."""
    while True:
        await asyncio.sleep(interval)
        await run_in_threadpool(node.tick)
