"""The HTTP server of ``ostrom serve`` and of the cluster's front: uvicorn, bounded.

uvicorn (0.54, httptools) arms no timer before a connection's first response and caps
nothing by default, so a client that sends half a request and stops holds its
connection, and its file descriptor, for good: enough of them exhaust the process's
descriptors and every later connection, ``/health`` included, is refused (docs/security.md,
"slow clients").  ``limit_concurrency`` does not help: it answers 503 to *every* request
once the count is reached, the honest ones included.  So the protocol class here adds,
per connection (``Limits``):

* a header timeout: the request line and headers must arrive within ``header_timeout``
  seconds of the connection's opening, or of the end of the previous response;
* a body timeout: the body must arrive within ``body_timeout`` seconds of the headers;
* a connection cap: at ``max_connections`` open connections a new one *evicts* the
  connection whose request has waited longest without completing (a slow client) —
  first among those that never completed a request, then among keep-alive connections
  between two requests — and is refused only when every open connection has a complete
  request in the app.  A slow client that reconnects as soon as it is evicted is always
  the youngest: by age alone, an honest keep-alive connection that had just been
  answered would go first (the siege of bench/siege.py closed 97 of them).  The cap
  is lowered to what the process's descriptor limit allows (``effective_cap``), so the
  server never runs out of descriptors: a flood of half-open connections can cost an
  honest client at most a retry, never the node;
* a listen backlog as deep as the descriptors allow above the cap (``listen_backlog``):
  at the cap every connection a slow client is evicted from comes straight back, so the
  kernel's accept queue holds the attackers' excess connections; with a backlog of 128
  it stayed full through the siege (bench/siege.py) and the kernel dropped the SYNs of
  honest clients, who then waited out TCP's backoff (1, 3, 7, 15, 31 s) before their
  first command (docs/security.md);
* a refused sender waits out its ``Retry-After`` (ADM-2): after a 429 on a connection
  on which no command was ever accepted (a flooder's; a proxy's connection carries its
  honest clients' commands too; a read does not count, it is free), the connection is
  not read for the 429's Retry-After
  (at most half the header timeout and of the keep-alive).  The refusal budget answers
  an over-budget sender before any check, but each answer still costs the node its HTTP
  machinery (the parse, an ASGI task, two writes, the timers: most of a 429's cost, the
  app's own part is a fraction), and a flooder on keep-alive sent tens of thousands a
  siege.  Its next request waits in the kernel's buffer, costing nothing, until the
  budget has refilled; a client that honours Retry-After never notices.  (Requests a
  flooder pipelined into bytes already read are answered in turn: one read's worth.)

One place configures the server for both HTTP entry points (``config``): the node's
``create_app`` and the cluster's front.  ``hold``-style slow reads of a *response* are
bounded by the transport's write buffer and the app's own limits, not here.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from ostrom.service.limits import DEFAULT_LIMITS, Limits, effective_cap, listen_backlog

__all__ = ["config", "protocol_class"]


class _Guarded(HttpToolsProtocol):
    """uvicorn's httptools protocol with the header and body timers and the eviction
    that ``Limits`` describes.  ``waiting`` is when the current incomplete request (or
    the idle time before it) began, None while a complete request is in the app."""

    limits: Limits = DEFAULT_LIMITS
    cap: int = DEFAULT_LIMITS.max_connections

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.waiting: float | None = None
        #: whether a response was sent on this connection (an honest keep-alive one)
        self.served = False
        #: whether a command was accepted on it (POST /commands answered below 400): never
        #: held after a 429 (a proxy's connection, an agent's own); a free read does not
        #: vouch, or a flooder would read /health once per connection and flood unheld
        self.vouched = False
        #: seconds the current response's 429 asks the client to wait (None: no 429)
        self._hold: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._paused: asyncio.TimerHandle | None = None

    # --- the timers --------------------------------------------------------------------

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        """Too slow: the connection is closed (an app awaiting the body sees a disconnect)."""
        self._timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _wait_for_request(self) -> None:
        self.waiting = time.monotonic()
        self._arm(self.limits.header_timeout)

    # --- uvicorn's callbacks -----------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_request()
        if len(self.connections) > self.cap:
            self._evict()

    def _evict(self) -> None:
        """Close the connection that has waited longest for its request, this one
        included, among those never answered first: an honest client sends its request
        at once, a slow one holds it."""
        slow = [c for c in self.connections if isinstance(c, _Guarded) and c.waiting is not None]
        victim = min(slow, key=lambda c: (c.served, c.waiting or 0.0)) if slow else self
        victim.transport.close()
        victim.waiting = None  # not evicted twice while it closes
        self.connections.discard(victim)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._paused is not None:
            self._paused.cancel()
            self._paused = None
        self.waiting = None
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._arm(self.limits.body_timeout)
        before = self.cycle
        super().on_headers_complete()
        if self.cycle is not None and self.cycle is not before:
            self._watch(self.cycle)

    # --- a refused sender waits out its Retry-After (ADM-2) ----------------------------

    def _watch(self, cycle: Any) -> None:
        """Note the status (and a 429's Retry-After) of the response ``cycle`` sends: the
        ASGI task reads ``cycle.send`` when it starts, after this."""
        send = cycle.send
        command = cycle.scope.get("method") == "POST" and cycle.scope.get("path") == "/commands"

        async def watched(message: Any) -> None:
            if message["type"] == "http.response.start":
                self._note(message["status"], message.get("headers", ()), command)
            await send(message)

        cycle.send = watched

    def _note(self, status: int, headers: Any, command: bool) -> None:
        if status < 400 and command:
            self.vouched = True
        elif status == 429:
            for name, value in headers:
                if name.lower() == b"retry-after" and value.isdigit():
                    self._hold = float(int(value))

    def _hold_off(self) -> None:
        """After a 429 on a connection no command was accepted on: not read until its Retry-After
        has passed (bounded so that the header and keep-alive timers stay the client's)."""
        hold, self._hold = self._hold, None
        if hold is None or self.vouched or self.transport.is_closing():
            return
        seconds = min(hold, self.limits.header_timeout / 2, self.limits.keep_alive / 2)
        if seconds > 0 and self._paused is None:
            self.transport.pause_reading()
            self._paused = self.loop.call_later(seconds, self._resume)

    def _resume(self) -> None:
        self._paused = None
        if not self.transport.is_closing():
            self.transport.resume_reading()

    def on_message_complete(self) -> None:
        self._disarm()
        self.waiting = None
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self.served = True
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:
            self._wait_for_request()
        self._hold_off()


def protocol_class(limits: Limits) -> type[HttpToolsProtocol]:
    """The protocol class uvicorn instantiates per connection, bound to ``limits``."""
    return type(
        "GuardedHttpToolsProtocol", (_Guarded,), {"limits": limits, "cap": effective_cap(limits)}
    )


def config(
    app: Any,
    *,
    host: str,
    port: int,
    lifespan: Literal["on", "off"],
    limits: Limits = DEFAULT_LIMITS,
) -> uvicorn.Config:
    """The uvicorn configuration of every ostrom HTTP server."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan=lifespan,
        http=protocol_class(limits),
        timeout_keep_alive=max(1, round(limits.keep_alive)),
        backlog=listen_backlog(limits),
    )
