"""The HTTP front of a cluster: a PBFT client that answers after ``f+1`` matching replies.

``POST /commands`` takes one signed envelope (the body of the single node: ``ostrom
serve``) and answers as the node does (``_answer``: ``{"result", "events"}``, or a gate
refusal with its HTTP status) once ``f+1`` replicas sent the same signed result
(``consensus.client.Client``: at least one of them is honest, so the result is one the
replicated service produced).

**Several client identities.**  A PBFT client has one outstanding request; the front
holds ``clients`` of them (``c0..``), so concurrent HTTP requests are not serialised
behind one.  A client's timestamps start at the wall clock in microseconds, so a
restarted front never reuses a timestamp the replicas executed (they would answer the
old reply: PBFT's exactly-once rule).

**Batching** (docs/cluster.md): the dispatcher takes the first waiting command, waits
for a free client, then takes up to ``batch_size`` commands (waiting at most
``batch_window_ms`` for more) into one request ``{"batch": [...]}``; the reply's
``results`` are handed back in order, one per HTTP request.

**Timers.**  A client whose request has no result within the client timeout (twice the
view-change timeout, as ``Simulation``) broadcasts it to every replica
(``Client.on_timeout``): that is what makes the backups suspect a silent primary.

Hostile input: a body that is not JSON, or larger than ``MAX_BODY``, is refused with 400
or 413 and changes nothing; a reply frame that is not a valid signed reply is counted
and dropped by ``Client.on_reply``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import uvicorn
from starlette.responses import JSONResponse

from ostrom.cluster.app import RESULTS, batch_operation
from ostrom.cluster.config import ClusterConfig, ConfigError, load
from ostrom.cluster.keys import KeyFileError, load_ring, load_signer
from ostrom.cluster.links import Link
from ostrom.cluster.wire import (
    HELLO_TIMEOUT_S,
    FrameDecoder,
    FrameError,
    parse_hello,
    read_frames,
    read_one,
)
from ostrom.consensus.client import Client
from ostrom.consensus.messages import (
    MAX_MESSAGE_BYTES,
    Malformed,
    Reply,
    Signed,
    canonical,
    check_tree,
    decode,
)
from ostrom.consensus.replica import BROADCAST, Output
from ostrom.service.gate import GATE_ERRORS
from ostrom.service.server import config as server_config

__all__ = ["MAX_BODY", "BadCommand", "Front", "main", "parse_command"]

MAX_BODY: Final = 1 << 20
#: The encoded commands of one batch stay below this (a PBFT message carries at most
#: ``MAX_MESSAGE_BYTES``; the rest is the envelope).
_MAX_BATCH_BYTES: Final = MAX_MESSAGE_BYTES // 2
#: Levels of the request envelope above a command (Signed, Request, operation, batch).
_ENVELOPE_DEPTH: Final = 6
#: Commands waiting for a client identity before the front answers 503 (busy).
_MAX_QUEUED: Final = 10_000
#: How long an HTTP request waits for its result before answering 504.
_RESULT_TIMEOUT_S: Final = 60.0
_TICK_S: Final = 0.01


class BadCommand(ValueError):
    """The body cannot travel as a command (the message says why): 400, nothing sent."""


def parse_command(body: bytes) -> tuple[Any, int]:
    """The command in an HTTP body and its encoded size, or ``BadCommand``.

    The replicas decode requests with ``messages.decode``, which refuses what is not
    JSON every implementation reads alike (``check_tree``: 64-bit integers, finite
    floats, no lone surrogates, bounded depth).  A command it would refuse must be
    refused *here*: signed and sent, it would be dropped by every replica and its client
    identity would retry it forever."""
    if len(body) > MAX_BODY:
        raise BadCommand(f"body larger than {MAX_BODY} bytes")
    try:
        command = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadCommand("the body is not JSON") from None
    wrapped: Any = command
    for _ in range(_ENVELOPE_DEPTH):
        wrapped = [wrapped]
    try:
        check_tree(wrapped)
        size = len(canonical(command))
    except (Malformed, ValueError, RecursionError) as exc:
        raise BadCommand(f"the command cannot be signed: {exc}") from None
    return command, size


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@dataclass
class _Pending:
    command: Any
    future: asyncio.Future[dict[str, Any]]
    size: int = 0


@dataclass
class _Slot:
    """One client identity and what it carries."""

    client: Client
    batch: list[_Pending] = field(default_factory=list)
    sent_at: float = 0.0
    timeout_at: float = 0.0


class Front:
    """The HTTP front of a cluster: a PBFT client that answers after ``f+1`` matching
    replies."""

    def __init__(self, cfg: ClusterConfig) -> None:
        self.cfg = cfg
        ring = load_ring(cfg.keys)
        now_us = time.time_ns() // 1000
        self.slots: dict[str, _Slot] = {}
        for name in cfg.client_names:
            c = Client(name, load_signer(cfg.keys, name), ring, cfg.n, cfg.f)
            c.timestamp = now_us
            self.slots[name] = _Slot(c)
        self.queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self.free: asyncio.Queue[str] = asyncio.Queue()
        self.links: dict[str, Link] = {}
        self.stats: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.client_timeout_s = 2 * cfg.base_timeout_ms / 1000
        self.stopping = asyncio.Event()
        self._held: _Pending | None = None

    # --- PBFT side ------------------------------------------------------------------------

    def route(self, out: Output) -> None:
        for s in out.sends:
            payload = s.payload if isinstance(s.payload, bytes) else s.payload.encoded
            dests = list(self.links) if s.dest == BROADCAST else [s.dest]
            for d in dests:
                link = self.links.get(d)
                if link is not None:
                    link.send(payload)

    async def dispatch(self) -> None:
        """Batches waiting commands into requests, one per free client."""
        window = self.cfg.batch_window_ms / 1000
        while True:
            first = self._held if self._held is not None else await self.queue.get()
            self._held = None
            name = await self.free.get()
            batch, size = [first], first.size
            deadline = time.monotonic() + window
            while len(batch) < self.cfg.batch_size:
                if self.queue.empty():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    try:
                        nxt = await asyncio.wait_for(self.queue.get(), left)
                    except TimeoutError:
                        break
                else:
                    nxt = self.queue.get_nowait()
                if size + nxt.size > _MAX_BATCH_BYTES:
                    self._held = nxt  # the first of the next batch
                    break
                batch.append(nxt)
                size += nxt.size
            slot = self.slots[name]
            slot.batch = batch
            slot.sent_at = time.monotonic()
            slot.timeout_at = slot.sent_at + self.client_timeout_s
            self.stats["requests"] += 1
            self.stats["commands"] += len(batch)
            try:
                out = slot.client.request(batch_operation([p.command for p in batch]))
            except Exception as exc:  # parse_command admits only what signs; never die here
                self.stats["unsendable"] += 1
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(RuntimeError(f"cannot send: {exc}"))
                slot.client.outstanding, slot.batch = None, []
                self.free.put_nowait(name)
                continue
            self.route(out)

    def on_reply(self, data: bytes) -> None:
        try:
            signed = decode(data)
        except Malformed:
            self.stats["malformed_replies"] += 1
            return
        m = signed.message
        if not isinstance(signed, Signed) or not isinstance(m, Reply):
            self.stats["not_replies"] += 1
            return
        slot = self.slots.get(m.client)
        if slot is None or not slot.client.busy:
            self.stats["unexpected_replies"] += 1
            return
        slot.client.on_reply(signed)
        if not slot.client.busy:
            self._complete(m.client, slot)

    def _complete(self, name: str, slot: _Slot) -> None:
        ts, result = slot.client.results[-1]
        del slot.client.results[:]  # the front keeps no history of results
        results = result.get(RESULTS) if isinstance(result, dict) else None
        batch, slot.batch = slot.batch, []
        self.latencies.append(time.monotonic() - slot.sent_at)
        if len(self.latencies) > 100_000:
            del self.latencies[:50_000]
        for i, p in enumerate(batch):
            if p.future.done():
                continue
            if isinstance(results, list) and i < len(results):
                p.future.set_result(
                    {"observation": results[i], "client": name, "timestamp": ts, "index": i}
                )
            else:
                p.future.set_exception(RuntimeError("the replicas answered no result"))
        self.stats["acknowledged"] += len(batch)
        self.free.put_nowait(name)

    def tick(self) -> None:
        now = time.monotonic()
        for slot in self.slots.values():
            if slot.client.busy and now >= slot.timeout_at:
                slot.timeout_at = now + self.client_timeout_s
                self.stats["client_timeouts"] += 1
                self.route(slot.client.on_timeout())

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(_TICK_S)
            self.tick()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Replies from the replicas (each dials the front like any peer)."""
        try:
            first = await asyncio.wait_for(read_one(reader, 256), HELLO_TIMEOUT_S)
            if first is None:
                return
            parse_hello(first)
            decoder = FrameDecoder()
            while True:
                frames = await read_frames(reader, decoder)
                if frames is None:
                    return
                for data in frames:
                    self.on_reply(data)
        except FrameError:
            self.stats["garbage_connections"] += 1
        except (TimeoutError, OSError, ConnectionError):
            self.stats["broken_connections"] += 1
        except asyncio.CancelledError:
            pass  # the front stops: the connection closes with it
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    # --- HTTP side ------------------------------------------------------------------------

    async def submit(self, command: Any, size: int = 0) -> dict[str, Any]:
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.queue.put_nowait(_Pending(command, fut, size))
        return await asyncio.wait_for(fut, _RESULT_TIMEOUT_S)

    def status(self) -> dict[str, Any]:
        lat = sorted(self.latencies[-10_000:])
        return {
            "n": self.cfg.n,
            "f": self.cfg.f,
            "batch_size": self.cfg.batch_size,
            "clients": len(self.slots),
            "busy": sum(1 for s in self.slots.values() if s.client.busy),
            "queued": self.queue.qsize(),
            "stats": dict(sorted(self.stats.items())),
            "latency_p50_ms": round(1000 * lat[len(lat) // 2], 3) if lat else None,
        }

    def asgi(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request as HttpRequest
        from starlette.routing import Route

        async def commands(request: HttpRequest) -> JSONResponse:
            body = await _read_body(request)
            if body is None:
                return JSONResponse({"error": f"body larger than {MAX_BODY} bytes"}, 413)
            try:
                command, size = parse_command(body)
            except BadCommand as exc:
                return JSONResponse({"error": str(exc)}, 400)
            if self.queue.qsize() >= _MAX_QUEUED:
                return JSONResponse({"error": "busy: too many commands waiting"}, 503)
            try:
                return _answer(await self.submit(command, size))
            except TimeoutError:
                return JSONResponse(
                    {"error": "no result from the replicas in time (it may still execute)"}, 504
                )
            except RuntimeError as exc:
                return JSONResponse({"error": str(exc)}, 502)

        async def status(request: HttpRequest) -> JSONResponse:
            return JSONResponse(self.status())

        return Starlette(
            routes=[
                Route("/commands", commands, methods=["POST"]),
                Route("/status", status, methods=["GET"]),
            ]
        )

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for rc in self.cfg.replicas:
            self.links[rc.name] = Link("front", rc.name, rc.dial)
            self.links[rc.name].start()
        for name in self.slots:
            self.free.put_nowait(name)
        server = await asyncio.start_server(
            self._serve, self.cfg.front.host, self.cfg.front.port, reuse_address=True
        )
        tasks = [loop.create_task(self.dispatch()), loop.create_task(self._ticker())]
        # the node's server, with its timeouts and connection cap (service/server.py)
        config = server_config(
            self.asgi(), host=self.cfg.http.host, port=self.cfg.http.port, lifespan="off"
        )
        http = _QuietServer(config)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, http.stop)
        print(f"front: http://{self.cfg.http.host}:{self.cfg.http.port}", flush=True)
        try:
            await http.serve()
        finally:
            server.close()
            for t in tasks:
                t.cancel()
            for link in self.links.values():
                await link.close()
        return 0


class _QuietServer(uvicorn.Server):
    """uvicorn's server without its signal capture: uvicorn re-raises a captured SIGTERM
    after its shutdown, so the front would die of the signal (exit -15) instead of
    stopping cleanly (exit 0, as the replicas do).  The front's loop handles SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def stop(self) -> None:
        self.should_exit = True


def _answer(done: dict[str, Any]) -> JSONResponse:
    """The HTTP answer to an executed command, as the single node answers it: a gate
    refusal (``GATE_ERRORS``) with its status and ``{"error", "detail"}``; anything else
    200 with the observation's ``result``, ``events`` and ``retry`` (a protocol refusal is
    an observation, as on the node), plus where the cluster ordered it (client, timestamp,
    index in the batch) instead of the node's log position ``pos``."""
    obs = done["observation"]
    code = obs.get("result") if isinstance(obs, dict) else None
    if isinstance(code, str) and code in GATE_ERRORS:
        detail = "refused by the gate of every honest replica; nothing changed"
        return JSONResponse({"error": code, "detail": detail}, GATE_ERRORS[code].status)
    body = {"result": code, "events": obs.get("events", []) if isinstance(obs, dict) else []}
    # an envelope identical to one already applied is answered from the replicas' memory
    # of it, as the node answers it from its log (app.Retries): nothing applied again
    body["retry"] = isinstance(obs, dict) and obs.get("retry") is True
    body |= {k: done[k] for k in ("client", "timestamp", "index")}
    return JSONResponse(body)


async def _read_body(request: Any) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ostrom cluster front", description="The HTTP front.")
    p.add_argument("--cluster", required=True)
    args = p.parse_args(argv)
    try:
        front = Front(load(args.cluster))
    except (ConfigError, KeyFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(front.run())
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
