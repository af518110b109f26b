"""Group commit: the POST /commands that arrive together share one transaction.

A node answers a command only after its log row is durable (one SQLite transaction, an
fsync with ``synchronous=FULL``).  Written one by one, every request pays a commit.
Here the requests queue on the event loop; one writer at a time takes everything
queued (up to ``max_group``) to ``Node.submit_many`` — the commands applied in arrival
order, their rows in one transaction — and hands each request its own reply.  While a
group is being written the next one gathers, so under load the groups grow by
themselves and with one client nothing waits: there is no timer.

``threaded``: the group is written in a worker thread, so the event loop goes on
reading requests while the disk syncs (with fsync on, the default).  Without fsync a
commit costs less than the hop to a thread and back (measured by bench/service.py:
about half the throughput with one client), so the group is written on the loop
itself; the requests parsed in the same turn of the loop still share it.

Nothing about a single command changes: it is applied exactly once, in the order of
arrival, and answered only after its row is durable; a failed transaction answers the
whole group 503 with nothing applied (``Node.submit_many``).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Final

from starlette.concurrency import run_in_threadpool

from ostrom.service.node import Node, Reply, error

__all__ = ["GroupCommit"]

_log = logging.getLogger(__name__)

#: The most commands one transaction takes (bounds a group's latency and memory).
_MAX_GROUP: Final = 256


@dataclass
class GroupCommit:
    """The writer of one node's POST /commands (one per app, on its event loop)."""

    node: Node
    threaded: bool = True
    max_group: int = _MAX_GROUP
    _queue: list[tuple[object, asyncio.Future[Reply]]] = field(default_factory=list)
    _writing: bool = False
    #: group size -> groups of that size written (diagnostics; at most ``max_group`` keys)
    sizes: Counter[int] = field(default_factory=Counter)

    async def submit(self, envelope: object) -> Reply:
        """The node's reply to ``envelope``, once its row is durable."""
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._queue.append((envelope, fut))
        if not self._writing:
            self._writing = True
            asyncio.get_running_loop().create_task(self._write())
        # shielded: a client that hangs up does not cancel the group's other commands
        return await asyncio.shield(fut)

    async def _write(self) -> None:
        try:
            while self._queue:
                group = self._queue[: self.max_group]
                del self._queue[: self.max_group]
                self.sizes[len(group)] += 1
                envelopes = [e for e, _ in group]
                try:
                    if self.threaded:
                        replies = await run_in_threadpool(self.node.submit_many, envelopes)
                    else:
                        replies = self.node.submit_many(envelopes)
                except Exception as exc:  # submit_many promises never to raise: a bug
                    _log.exception("submit_many raised")
                    replies = [error("internal_error", type(exc).__name__)] * len(group)
                for (_, fut), reply in zip(group, replies, strict=True):
                    if not fut.done():
                        fut.set_result(reply)
        finally:
            self._writing = False
