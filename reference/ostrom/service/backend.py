"""What the one HTTP application serves: a ``Backend`` (a single node, or a cluster).

service/app.py is the only HTTP face of ostrom: one route table (openapi.ENDPOINTS), one
error mapping, one OpenAPI document.  What differs between a node and a cluster is
behind this interface, and nothing else (docs/design.md §11):

* ``submit``: a signed envelope to its reply (a node: its write path with group commit;
  a cluster: the front orders it by PBFT and answers once ``f+1`` replicas agree);
* ``read``: a ``reads.Read`` to its ``Answer`` and the log position it was read at (a
  node: its own state; a cluster: one replica's executed state, or with ``consistent``
  ``f+1`` replicas agreeing at one position);
* ``wait``: the long poll of GET /events (until the log passes a position);
* ``status``: the backend's own counters (GET /status).

``LocalBackend`` is the node's.  The cluster's is the front (cluster/front.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, Final, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from ostrom.service.group_commit import GroupCommit
from ostrom.service.node import Node, Reply
from ostrom.service.openapi import body_limit
from ostrom.service.readpool import ReadPool
from ostrom.service.reads import VIEWED, Answer, Read, answer

__all__ = ["Backend", "LocalBackend"]

#: The reads answered on the event loop: from the node's published view alone, in
#: microseconds, so a flood of them neither waits for nor takes a worker thread from the
#: writer (which takes one per group with fsync on: service/group_commit.py).
_ON_THE_LOOP: Final = VIEWED - {"artifact"}


class Backend(Protocol):
    """What the HTTP application needs of what it serves (module docstring)."""

    #: Largest request body read (bytes; larger: 413 ``too_large`` before parsing).
    body_limit: int
    #: The community's ``embedding_dim`` (0: no dense retrieval), checked on a query vector.
    embedding_dim: int

    async def submit(self, envelope: Any) -> Reply: ...

    async def read(self, read: Read, consistent: bool) -> Answer: ...

    async def wait(self, after: int, timeout: float) -> None: ...

    async def status(self) -> dict[str, Any]: ...

    def running(self) -> contextlib.AbstractAsyncContextManager[None]:
        """What runs while the app serves (the node's ticker; the front's PBFT side)."""
        ...


class LocalBackend:
    """A single node: its write path (group commit) and its own state.  ``consistent``
    asks nothing more of it: a single node is its own quorum.  ``reads``: the pool the
    reads of the file run on (service/readpool.py; default: its default bounds)."""

    def __init__(
        self, node: Node, *, tick_interval: float | None = None, reads: ReadPool | None = None
    ) -> None:
        self.node = node
        self.tick_interval = tick_interval
        self.reads = reads if reads is not None else ReadPool()
        self.writer = GroupCommit(node, threaded=node.store.fsync)
        self.embedding_dim = node.gate.params.embedding_dim
        self.body_limit = body_limit(node.gate.params.content_limit, self.embedding_dim)

    async def submit(self, envelope: Any) -> Reply:
        return await self.writer.submit(envelope)

    async def read(self, read: Read, consistent: bool) -> Answer:
        if read.name in _ON_THE_LOOP:  # the published view alone: nothing to wait for
            return answer(self.node, read)
        # off the event loop: the read reads the file (a snapshot of it, without the
        # node's lock: Node._reading), or GET /artifacts/{id}'s read record; its answer is
        # encoded there too (a page of 1,000 log rows encoded on the loop would hold up
        # every request meanwhile, the writer's included).  On the bounded read pool:
        # ReadsBusy (503 busy) past its queue, never a thread of the writer's
        return await self.reads.run(_encoded, self.node, read)

    async def wait(self, after: int, timeout: float) -> None:
        await self.node.wait(after, timeout)

    async def status(self) -> dict[str, Any]:
        return {
            "kind": "node",
            "last_pos": self.node.last_pos,
            "fsync": self.node.store.fsync,
            # the degraded mode after a failed append (service/node.py): None while
            # writes are accepted
            "writes": {"degraded": self.node.degraded(), **self.node.counts},
            "group_sizes": {str(k): v for k, v in sorted(self.writer.sizes.items())},
            "reads": {
                "max_reads": self.reads.workers,
                "read_queue": self.reads.queue,
                "read_share": self.reads.share,
                "admitted": self.reads.admitted,
                "refused": self.reads.refused,
            },
        }

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        tasks = [asyncio.create_task(_prober(self.node))]
        if self.tick_interval:
            tasks.append(asyncio.create_task(_ticker(self.node, self.tick_interval)))
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task


def _encoded(node: Node, read: Read) -> Answer:
    """``answer``, its body encoded as the app sends it (``Answer.raw``)."""
    a = answer(node, read)
    return replace(a, raw=bytes(JSONResponse(a.body, status_code=a.status).body))


async def _prober(node: Node) -> None:
    """Probe the disk when a probe is due while the node is degraded (service/node.py),
    so ``/health`` says when writes resume even if no write comes to probe it."""
    while True:
        wait = node.probe_in()
        await asyncio.sleep(node.probe_first if wait is None else max(wait, 0.01))
        if node.probe_in() == 0.0:
            await run_in_threadpool(node.probe)


async def _ticker(node: Node, interval: float) -> None:
    """``--tick-interval``: a signed tick by the node's operator every ``interval`` s."""
    while True:
        await asyncio.sleep(interval)
        await run_in_threadpool(node.tick)
