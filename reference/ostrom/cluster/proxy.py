"""A fault-injecting TCP proxy between the processes of a cluster.

The proxy listens on each replica's *dial* address and forwards to its *listen* address
(``cluster.toml`` separates the two for exactly this).  It reads the stream as frames
(wire.py): the hello names the sender, the listening port the receiver, so each frame
has a link ``(src, dst)`` and the rules apply per link:

* **pass** (the default), **drop** with a probability (seeded ``random.Random``),
  **delay** by a fixed number of seconds;
* **jitter**: each frame held for its own random time, uniform in ``[0, jitter]``
  seconds, without holding up the frames behind it, so frames of one link arrive
  reordered (what a datagram network does; TCP alone never reorders);
* **scope** (``limit_to``): loss, delay and jitter only on the links between the given
  principals (the replicas: the front's requests then pass untouched), everywhere by
  default;
* **partition**: groups of principals; a frame between two groups is dropped (the TCP
  connections stay up, as in a network partition that loses packets).  ``heal`` ends it.

It runs its own asyncio loop in a thread, so a synchronous test controls it with plain
method calls (``partition``, ``heal``, ``set_drop``, ``set_delay``, ``set_jitter``) and
stops it with ``close``.  Garbage from either side closes that connection only.

``traffic`` counts, per link, the frames and bytes the sender offered (before any fault):
what a sender's retransmission costs the network, the cluster's messages per request
(issue 42 item 0); ``acks`` counts, of those frames, the acknowledgements (wire.py
``ACK_MAGIC``), which carry no protocol message and are paced by time, not by work;
``repeats`` the other frames whose bytes the sender had offered on that link before
(retransmissions, whatever their cause).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable

from ostrom.cluster.config import Address
from ostrom.cluster.wire import (
    ACK_MAGIC,
    FrameDecoder,
    FrameError,
    frame,
    hello,
    parse_hello,
    read_one,
)

__all__ = ["FaultProxy"]

#: The frames remembered per link to tell a repeat (16-byte digests, about 100 bytes each in
#: a set: 6 MB a link at most; forgotten all at once
#: when full, so a repeat of a frame older than that goes uncounted).
_MAX_SEEN = 1 << 16


class FaultProxy:
    """Proxies ``routes`` (receiver name -> (address to listen on, address to forward to))."""

    def __init__(self, routes: dict[str, tuple[Address, Address]], seed: int = 0) -> None:
        self.routes = routes
        self.rng = random.Random(seed)
        self.drop = 0.0
        self.delay = 0.0
        self.jitter = 0.0
        self.scope: frozenset[str] | None = None
        self.groups: list[frozenset[str]] = []
        self.stats: Counter[str] = Counter()
        #: (sender, receiver) -> [frames, bytes] offered by the sender
        self.traffic: dict[tuple[str, str], list[int]] = {}
        #: (sender, receiver) -> acknowledgement frames offered by the sender
        self.acks: Counter[tuple[str, str]] = Counter()
        #: (sender, receiver) -> frames (not acknowledgements) offered on the link before
        self.repeats: Counter[tuple[str, str]] = Counter()
        self._seen: dict[tuple[str, str], set[bytes]] = {}
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.base_events.Server] = []
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, daemon=True, name="fault-proxy")
        self._thread.start()
        if not self._ready.wait(10) or self._error is not None:
            raise RuntimeError(f"the proxy did not start: {self._error}")

    # --- control (any thread) -------------------------------------------------------------

    def partition(self, *groups: Iterable[str]) -> None:
        """Frames between principals of different groups are dropped (a principal in no
        group talks to everyone)."""
        with self._lock:
            self.groups = [frozenset(g) for g in groups]

    def heal(self) -> None:
        with self._lock:
            self.groups = []

    def set_drop(self, probability: float) -> None:
        with self._lock:
            self.drop = probability

    def set_delay(self, seconds: float) -> None:
        with self._lock:
            self.delay = seconds

    def limit_to(self, principals: Iterable[str] | None) -> None:
        """Loss, delay and jitter only between two of ``principals`` (None: everywhere)."""
        with self._lock:
            self.scope = None if principals is None else frozenset(principals)

    def _faulty(self, src: str, dst: str) -> bool:
        scope = self.scope
        return scope is None or (src in scope and dst in scope)

    def set_jitter(self, seconds: float) -> None:
        with self._lock:
            self.jitter = seconds

    def offered(self) -> dict[tuple[str, str], tuple[int, int]]:
        """A copy of ``traffic``: (sender, receiver) -> (frames, bytes) offered so far."""
        with self._lock:
            return {link: (f, b) for link, (f, b) in self.traffic.items()}

    def repeats_offered(self) -> dict[tuple[str, str], int]:
        """A copy of ``repeats``: (sender, receiver) -> frames, acknowledgements aside,
        whose very bytes the sender had already offered on the link (counted in
        ``offered`` too)."""
        with self._lock:
            return dict(self.repeats)

    def acks_offered(self) -> dict[tuple[str, str], int]:
        """A copy of ``acks``: (sender, receiver) -> acknowledgement frames offered so far
        (counted in ``offered`` too)."""
        with self._lock:
            return dict(self.acks)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        fut = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        with contextlib.suppress(Exception):
            fut.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    # --- the loop -------------------------------------------------------------------------

    def _blocked(self, src: str, dst: str) -> bool:
        with self._lock:
            gs = [g for g in self.groups if src in g]
            gd = [g for g in self.groups if dst in g]
            if gs and gd and gs[0] != gd[0]:
                return True
            if not self._faulty(src, dst):
                return False
            return self.drop > 0 and self.rng.random() < self.drop

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._start())
        except BaseException as exc:  # reported to the constructor
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.close()

    async def _start(self) -> None:
        for dst, (listen, upstream) in self.routes.items():
            server = await asyncio.start_server(
                self._handler(dst, upstream),
                listen.host,
                listen.port,
                reuse_address=True,
            )
            self._servers.append(server)

    def _handler(
        self, dst: str, up: Address
    ) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
        async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await self._conn(r, w, dst, up)

        return handle

    async def _shutdown(self) -> None:
        for s in self._servers:
            s.close()
        for t in asyncio.all_tasks():
            if t is not asyncio.current_task():
                t.cancel()

    async def _conn(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, dst: str, up: Address
    ) -> None:
        upw: asyncio.StreamWriter | None = None
        try:
            first = await asyncio.wait_for(read_one(reader, 256), 5)
            if first is None:
                return
            src = parse_hello(first)
            upr, out = await asyncio.wait_for(asyncio.open_connection(up.host, up.port), 5)
            upw = out
            out.write(hello(src))
            loop = asyncio.get_running_loop()
            back = loop.create_task(self._pump_back(upr, writer))
            decoder = FrameDecoder()
            try:
                while True:
                    data = await reader.read(1 << 16)
                    if not data:
                        return
                    for payload in decoder.feed(data):
                        self._count(src, dst, payload)
                        if self._blocked(src, dst):
                            self.stats["dropped"] += 1
                            continue
                        faulty = self._faulty(src, dst)
                        if self.delay > 0 and faulty:
                            await asyncio.sleep(self.delay)
                        self.stats["passed"] += 1
                        hold = self._hold() if faulty else 0.0
                        if hold > 0:
                            loop.call_later(hold, self._emit, out, frame(payload))
                        else:
                            out.write(frame(payload))
                    await out.drain()
            finally:
                back.cancel()
        except (TimeoutError, FrameError, OSError, ConnectionError):
            self.stats["closed"] += 1
        except asyncio.CancelledError:
            pass
        finally:
            writer.close()
            if upw is not None:
                upw.close()

    def _count(self, src: str, dst: str, payload: bytes) -> None:
        key = hashlib.blake2b(payload, digest_size=16).digest()
        with self._lock:
            row = self.traffic.setdefault((src, dst), [0, 0])
            row[0] += 1
            row[1] += len(payload)
            if payload.startswith(ACK_MAGIC):
                self.acks[(src, dst)] += 1
                return
            seen = self._seen.setdefault((src, dst), set())
            if key in seen:
                self.repeats[(src, dst)] += 1
            elif len(seen) >= _MAX_SEEN:  # bounded memory: older frames are forgotten
                seen.clear()
            seen.add(key)

    def _hold(self) -> float:
        with self._lock:
            return self.rng.uniform(0, self.jitter) if self.jitter > 0 else 0.0

    def _emit(self, out: asyncio.StreamWriter, data: bytes) -> None:
        """A jittered frame, written when its time comes (lost if the connection closed
        meanwhile, as a frame in flight is when a link breaks)."""
        if out.is_closing():
            self.stats["lost_in_flight"] += 1
            return
        out.write(data)

    async def _pump_back(self, upr: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """What the receiver answers (a status frame): passed unchanged."""
        with contextlib.suppress(OSError, ConnectionError, asyncio.CancelledError):
            while True:
                data = await upr.read(1 << 16)
                if not data:
                    return
                writer.write(data)
                await writer.drain()
