"""A cluster process's outgoing link to one peer (cluster/links.py): it dials until the
peer is up, backing off, says hello and proves it (the peer's challenge, signed: wire.py),
then writes its queued frames in order; frames
queued while the peer is down wait, the oldest dropped when the queue is full; a payload
that cannot be framed is counted and never sent; nothing blocks and nothing raises
(BFT-LIVE-1 relies on retransmission for what is lost).
"""

from __future__ import annotations

import asyncio
import socket

from ostrom.cluster.config import Address
from ostrom.cluster.links import Link
from ostrom.cluster.wire import authenticate, parse_hello, read_one
from ostrom.consensus.crypto import make_keys

RING, SIGNERS = make_keys(b"links", ["r0", "r1"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def _receive(port: int, count: int, received: list[bytes], ready: asyncio.Event) -> None:
    """Accept one connection on ``port`` and collect its first ``count`` frames."""
    done = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await read_one(reader)
        assert first is not None
        received.append(first)
        name = parse_hello(first)
        assert await authenticate(reader, writer, name, "r1", RING, lambda s: s == name) == name
        while len(received) < count:
            payload = await read_one(reader)
            if payload is None:
                break
            received.append(payload)
        done.set()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    ready.set()
    async with server:
        await asyncio.wait_for(done.wait(), 10)


def test_a_link_dials_until_the_peer_is_up_and_delivers_in_order() -> None:
    port = _free_port()
    received: list[bytes] = []

    async def go() -> Link:
        link = Link("r0", "r1", Address("127.0.0.1", port), SIGNERS["r0"])
        link.start()
        for k in range(5):
            link.send(b"m%d" % k)
        link.send(b"")  # cannot be framed: counted, not sent
        await asyncio.sleep(0.15)  # the peer is down: the link retries
        ready = asyncio.Event()
        receiver = asyncio.create_task(_receive(port, 7, received, ready))
        await ready.wait()
        link.send(b"late")
        await asyncio.wait_for(receiver, 15)
        await link.close()
        return link

    link = asyncio.run(go())
    assert parse_hello(received[0]) == "r0"
    assert received[1:] == [b"m0", b"m1", b"m2", b"m3", b"m4", b"late"]
    assert link.stats["connect_failed"] >= 1 and link.stats["connected"] == 1
    assert link.stats["proven"] == 1
    assert link.stats["unsendable"] == 1 and link.stats["frames"] == 6


def test_a_full_queue_drops_its_oldest_frame() -> None:
    async def go() -> Link:
        link = Link("r0", "r1", Address("127.0.0.1", _free_port()), SIGNERS["r0"])  # never started
        for k in range(link.queue.maxsize + 3):
            link.send(b"%d" % k)
        return link

    link = asyncio.run(go())
    assert link.stats["dropped_full"] == 3
    assert link.queue.get_nowait() == b"\x00\x00\x00\x013"  # frames 0, 1, 2 were dropped
