"""Outgoing connections of a cluster process: one per peer, reconnecting with back-off.

A ``Link`` owns a bounded queue of frames for one peer and a task that dials the peer,
sends the hello, proves who it is (the peer's challenge signed with ``signer``: wire.py),
and writes the queue.  A peer that is down (killed, restarting,
partitioned) costs nothing but the frames queued for it: the queue drops its oldest
frame when full, and a frame being written when the connection breaks is lost.  Both
are what PBFT's retransmission is for (BFT-LIVE-1: a replica re-sends each message until
its peer acknowledges it, congestion.Retransmitter), so a link never blocks the process
and never raises.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from typing import Final

from ostrom.cluster.config import Address
from ostrom.cluster.wire import FrameError, frame, hello, prove
from ostrom.consensus.crypto import Signer

__all__ = ["Link"]

#: Frames queued per peer before the oldest is dropped.
_QUEUE_FRAMES: Final = 4096
_BACKOFF_MIN_S: Final = 0.02
_BACKOFF_MAX_S: Final = 0.5
_CONNECT_TIMEOUT_S: Final = 2.0
#: At most this many queued frames are joined into one write.
_WRITE_FRAMES: Final = 256


class Link:
    """Frames to one peer (``send`` never blocks; ``close`` ends the task)."""

    def __init__(self, me: str, peer: str, address: Address, signer: Signer) -> None:
        self.me, self.peer, self.address, self.signer = me, peer, address, signer
        self.queue: asyncio.Queue[bytes] = asyncio.Queue(_QUEUE_FRAMES)
        self.stats: Counter[str] = Counter()
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    def send(self, payload: bytes) -> None:
        try:
            data = frame(payload)
        except Exception:  # an empty or oversized payload: never sent
            self.stats["unsendable"] += 1
            return
        if self.queue.full():
            with contextlib.suppress(asyncio.QueueEmpty):
                self.queue.get_nowait()
            self.stats["dropped_full"] += 1
        self.queue.put_nowait(data)

    async def _run(self) -> None:
        backoff = _BACKOFF_MIN_S
        while True:
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_connection(self.address.host, self.address.port),
                    _CONNECT_TIMEOUT_S,
                )
            except (TimeoutError, OSError):
                self.stats["connect_failed"] += 1
                await asyncio.sleep(backoff)
                backoff = min(2 * backoff, _BACKOFF_MAX_S)
                continue
            self._writer = writer
            self.stats["connected"] += 1
            backoff = _BACKOFF_MIN_S
            try:
                writer.write(hello(self.me))
                await prove(reader, writer, self.signer, self.me, self.peer)
                self.stats["proven"] += 1
                while True:
                    # every frame queued meanwhile goes in one write (one send syscall)
                    chunk = [await self.queue.get()]
                    while not self.queue.empty() and len(chunk) < _WRITE_FRAMES:
                        chunk.append(self.queue.get_nowait())
                    writer.write(b"".join(chunk) if len(chunk) > 1 else chunk[0])
                    self.stats["frames"] += len(chunk)
                    self.stats["writes"] += 1
                    if writer.transport.get_write_buffer_size() > 1 << 20 or self.queue.empty():
                        await writer.drain()
            except (OSError, ConnectionError):
                self.stats["disconnected"] += 1
            except (FrameError, TimeoutError):
                self.stats["unproven"] += 1  # no challenge from the peer: dial again
            finally:
                self._writer = None
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
                del reader
            await asyncio.sleep(backoff)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._writer is not None:
            self._writer.close()
