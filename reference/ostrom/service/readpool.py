"""Admission control for the reads that read the file: a bounded pool and a bounded queue.

The reads of the public state answer from the published view on the event loop, in
microseconds (service/backend.py).  The others — ``/log`` pages, ``/search``,
``/slots/{slot}``, an artifact's content or read record — read a snapshot of the file
and encode up to a page of 1,000 rows or 100 hits: milliseconds of Python each, which
hold the interpreter lock the single writer needs too (issue 41, item 9).  Without a
bound, every such read took a thread of Starlette's shared pool (40 of them), so a
flood of them ran 40 at a time and queued without end, and the writer's own group
waited for one of the same 40 threads.

Here they run on a pool of their own, ``workers`` threads (``--max-reads``), with at
most ``queue`` more waiting (``--read-queue``).  A read past that is answered at once
503 ``busy`` with ``Retry-After`` (``ReadsBusy``): nothing was read, the client may ask
again.  So at most ``workers`` reads take the interpreter from the writer at any time,
whatever the number of clients; the writer's thread is never one of theirs; and a
flood costs its senders retries, not the node its memory or its writes.

The count is kept on the event loop (``run`` is called there only) and a read leaves
it when its thread is done with it, not when its client hangs up: a cancelled read
that already runs still holds a worker until it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final, TypeVar

__all__ = [
    "DEFAULT_MAX_READS",
    "DEFAULT_READ_QUEUE",
    "DEFAULT_READ_SHARE",
    "RETRY_AFTER_S",
    "ReadPool",
    "ReadsBusy",
]

#: Reads of the file running at once (threads): two, so that one long read (a page of
#: 1,000 log rows) does not hold up a short one, and no more, since they share one
#: interpreter lock with the writer whatever their number.
DEFAULT_MAX_READS: Final = 2
#: Reads of the file waiting for a thread, beyond which a read is refused 503 ``busy``.
DEFAULT_READ_QUEUE: Final = 64
#: The CPU the reads of the file may use, summed over the pool's threads, as a share of
#: the time that passes (one core's worth at 1): past it a read waits for its turn
#: before it starts, so the rest is the writer's and the event loop's.
DEFAULT_READ_SHARE: Final = 0.5
#: CPU seconds of reads the pool may run at once after an idle spell (the bucket's size).
_BURST_S: Final = 0.25
#: The ``Retry-After`` of a refused read (seconds).
RETRY_AFTER_S: Final = 1

_T = TypeVar("_T")


class ReadsBusy(Exception):
    """Every thread of the pool is reading and its queue is full: refused, nothing read."""


class ReadPool:
    """``workers`` threads for the reads of the file, and at most ``queue`` waiting;
    their CPU paced to ``share`` of the time (a bucket of CPU seconds refilled at
    ``share`` per second: each read's own thread time is taken out of it when it ends,
    and a read starts only when the bucket is not empty, its thread sleeping meanwhile,
    which leaves the interpreter lock to the writer)."""

    def __init__(
        self,
        workers: int = DEFAULT_MAX_READS,
        queue: int = DEFAULT_READ_QUEUE,
        share: float = DEFAULT_READ_SHARE,
    ) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ValueError(f"max reads is an integer of at least 1, not {workers!r}")
        if isinstance(queue, bool) or not isinstance(queue, int) or queue < 0:
            raise ValueError(f"the read queue is an integer of at least 0, not {queue!r}")
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 64:
            raise ValueError(f"the read share is a number in (0, 64], not {share!r}")
        self.workers, self.queue, self.share = workers, queue, float(share)
        self._bucket_lock = threading.Lock()
        self._credit, self._filled = _BURST_S, time.monotonic()
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="ostrom-read")
        #: reads running or waiting (changed on the event loop only)
        self.admitted = 0
        #: reads refused since the start (GET /status)
        self.refused = 0

    async def run(self, fn: Callable[..., _T], *args: object) -> _T:
        """``fn(*args)`` on one of the pool's threads, or ``ReadsBusy`` at once if
        ``workers + queue`` reads are already admitted."""
        if self.admitted >= self.workers + self.queue:
            self.refused += 1
            raise ReadsBusy(f"{self.admitted} reads running or waiting")
        loop = asyncio.get_running_loop()
        self.admitted += 1
        try:
            job: Future[_T] = self._executor.submit(self._paced, fn, *args)
        except BaseException:
            self.admitted -= 1
            raise
        # left when the thread is done with it (or it is cancelled before it started)
        job.add_done_callback(lambda _: self._leave(loop))
        return await asyncio.wrap_future(job)

    def _paced(self, fn: Callable[..., _T], *args: object) -> _T:
        """``fn(*args)`` on this thread once the bucket allows, its CPU taken out after."""
        with self._bucket_lock:
            now = time.monotonic()
            self._credit = min(_BURST_S, self._credit + self.share * (now - self._filled))
            self._filled = now
            wait = -self._credit / self.share if self._credit < 0 else 0.0
        if wait > 0:
            time.sleep(wait)
        t0 = time.thread_time()
        try:
            return fn(*args)
        finally:
            with self._bucket_lock:
                self._credit -= time.thread_time() - t0

    def _leave(self, loop: asyncio.AbstractEventLoop) -> None:
        """The read is done (on its thread, or on the loop if cancelled unstarted): the
        count goes down on the loop.  A closed loop: nobody serves or counts any more."""
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._left)

    def _left(self) -> None:
        self.admitted -= 1

    def close(self) -> None:
        """Stop taking reads; the running ones end (the threads exit with them)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
