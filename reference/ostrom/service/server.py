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
  honest client at most a retry, never the node.

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

from ostrom.service.limits import BACKLOG, DEFAULT_LIMITS, Limits, effective_cap

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
        self._timer: asyncio.TimerHandle | None = None

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
        self.waiting = None
        super().connection_lost(exc)

    def on_headers_complete(self) -> None:
        self._arm(self.limits.body_timeout)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self.waiting = None
        super().on_message_complete()

    def on_response_complete(self) -> None:
        self.served = True
        super().on_response_complete()
        if not self.transport.is_closing() and not self.pipeline:
            self._wait_for_request()


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
        backlog=BACKLOG,
    )
