"""The cluster's wire (ostrom/cluster/wire.py): hostile bytes never crash anything.

Frames reassemble from any chunking; a bad length raises ``FrameError`` (the connection
closes) and nothing else is ever raised; a hello is a name or ``FrameError``.  And a
live replica process fed garbage on its port — on the PBFT links, the read channel and
the payload channel — stays up and keeps answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.cluster.keys import load_signer
from ostrom.cluster.supervisor import Cluster, create, replica_status
from ostrom.cluster.wire import (
    HEADER,
    MAX_FRAME,
    FrameDecoder,
    FrameError,
    frame,
    hello,
    parse_hello,
    prove,
    read_one,
)
from ostrom.service.reads import Read

payloads = st.lists(st.binary(min_size=1, max_size=300), max_size=12)


@given(payloads, st.lists(st.integers(1, 64), min_size=1, max_size=20))
def test_frames_reassemble_from_any_chunking(items: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(p) for p in items)
    dec, out, pos, k = FrameDecoder(), [], 0, 0
    while pos < len(stream):
        step = cuts[k % len(cuts)]
        out += dec.feed(stream[pos : pos + step])
        pos, k = pos + step, k + 1
    assert out == items
    assert dec.pending == 0


@given(st.binary(max_size=2000))
def test_hostile_bytes_give_frames_or_frame_error(data: bytes) -> None:
    dec = FrameDecoder(max_frame=1024)
    try:
        frames = dec.feed(data)
    except FrameError:
        assert dec.broken
        with pytest.raises(FrameError):
            dec.feed(b"x")
        return
    assert all(0 < len(f) <= 1024 for f in frames)
    assert sum(HEADER + len(f) for f in frames) + dec.pending == len(data)


def test_bad_lengths_are_refused() -> None:
    for size in (0, MAX_FRAME + 1, 2**32 - 1):
        with pytest.raises(FrameError):
            FrameDecoder().feed(size.to_bytes(HEADER, "big") + b"x")
    with pytest.raises(FrameError):
        frame(b"")


@given(st.binary(max_size=300))
def test_hello_parses_or_refuses(data: bytes) -> None:
    try:
        name = parse_hello(data)
    except FrameError:
        return
    assert parse_hello(hello(name)[HEADER:]) == name


def test_hello_round_trip() -> None:
    assert parse_hello(hello("r3")[HEADER:]) == "r3"
    for bad in (b"{}", b'{"hello": 3}', b'{"hello": "R!"}', b"\xff", b"[1]"):
        with pytest.raises(FrameError):
            parse_hello(bad)


def test_a_replica_survives_garbage_on_its_port(tmp_path: Path) -> None:
    """Random bytes, a bad hello, a huge length, half a frame, valid frames of junk: the
    process stays up, counts them, and still answers its status.  Frames after a hello
    that names a principal reach the replica only once the principal proved it
    (wire.py: the challenge, signed)."""
    create(tmp_path, n=4, seed=5, synchronous="OFF")
    c = Cluster(tmp_path)
    try:
        c.start_replica(0)
        c.wait_replica(0, 30)
        addr = c.cfg.replica(0).listen
        junk = [
            b"\x00\x00\x00\x05hello",  # a hello that is not JSON
            hello("r1") + b"\xff\xff\xff\xff",  # a length beyond the limit
            hello("r1") + frame(b"not json") + frame(b'{"type":"Signed"}') + b"\x00\x00",
            bytes(range(256)) * 8,
            hello("front") + frame(b"[" * 10_000),
        ]
        rng = random.Random(7)  # and random streams, after a valid hello or not
        for k in range(24):
            blob = rng.randbytes(rng.randint(1, 3000))
            junk.append((hello("r2") if k % 2 else b"") + blob)
        for data in junk:
            with socket.create_connection((addr.host, addr.port), timeout=5) as s:
                s.sendall(data)
                s.settimeout(0.3)
                with contextlib.suppress(OSError):
                    s.recv(10)  # the replica closes (or we time out): either is fine

        # the read and payload channels: garbage is answered {"error"} or closed
        def ask(data: bytes) -> Any:
            with socket.create_connection((addr.host, addr.port), timeout=5) as s:
                s.sendall(data)
                s.settimeout(5)
                got = b""
                with contextlib.suppress(OSError):
                    while chunk := s.recv(1 << 16):
                        got += chunk
            return json.loads(got[4:]) if len(got) > 4 else None

        async def proven_ask(channel: str, body: bytes, by: str) -> Any:
            """A request on a payload channel after a proof by ``by`` (wire.CHANNELS)."""
            reader, writer = await asyncio.open_connection(addr.host, addr.port)
            try:
                writer.write(hello(channel))
                await prove(reader, writer, load_signer(c.cfg.keys, by), channel, "r0")
                writer.write(frame(body))
                await writer.drain()
                got = await asyncio.wait_for(read_one(reader), 5)
                return None if got is None else json.loads(got)
            finally:
                writer.close()

        for channel, body in [
            ("read", b"not json"),
            ("read", b'{"read": "log", "args": {"limit": 1000000000}}'),
            ("read", b'{"read": "nope", "args": {}}'),
            ("put", b'{"agent": 1}'),
            ("fetch", b'{"agent": 1}'),
            ("fetch", b"not json"),
            (
                "put",
                json.dumps(
                    {
                        "agent": "a",
                        "seq": 1,
                        "artifact": "x",
                        "digest": "0" * 64,
                        "payload": {"content": "not the digest's"},
                    }
                ).encode(),
            ),
        ]:
            if channel == "read":
                assert set(ask(hello(channel) + frame(body))) == {"error"}, (channel, body)
                continue
            # a payload channel without a proof: the challenge, then closed unread
            assert set(ask(hello(channel) + frame(body))) == {"challenge"}, (channel, body)
            by = "c0" if channel == "put" else "r1"
            got = asyncio.run(proven_ask(channel, body, by))
            assert set(got) == {"error"}, (channel, body)
        assert ask(hello("read") + b"\xff\xff\xff\xff") is None  # a bad length: closed
        health = ask(hello("read") + frame(json.dumps(Read.of("health").to_json()).encode()))
        assert health["status"] == 200 and health["position"] == 0 == health["executed"]
        # the front's reply port too (the front is a process of its own)
        c.start_front()
        c.wait_ready(30)
        fa = c.cfg.front
        for data in junk[:8]:
            with socket.create_connection((fa.host, fa.port), timeout=5) as s:
                s.sendall(data)
        r = httpx.post(c.url + "/status", timeout=5)
        assert r.status_code == 405  # wrong method: answered, not crashed
        assert httpx.get(c.url + "/status", timeout=5).status_code == 200
        assert c.procs["front"].poll() is None
        # junk from a peer that proved who it is (a Byzantine replica): decoded, refused

        async def proven(data: bytes) -> None:
            reader, writer = await asyncio.open_connection(addr.host, addr.port)
            writer.write(hello("r1"))
            await prove(reader, writer, load_signer(c.cfg.keys, "r1"), "r1", "r0")
            writer.write(data)
            await writer.drain()
            await asyncio.sleep(0.2)
            writer.close()

        asyncio.run(proven(frame(b"not json") + frame(b'{"type":"Signed"}') + b"\x00\x00"))
        time.sleep(0.2)
        st_ = replica_status(addr, 5)
        assert st_ is not None, "the replica stopped answering after garbage"
        assert c.procs["r0"].poll() is None
        assert st_["rejected"].get("malformed", 0) == 2  # only the proven peer's reach it
        # every other hello naming a principal was closed before its frames were read
        assert st_["stats"].get("unauthenticated_connections", 0) >= 14
        assert st_["stats"]["bad_reads"] == 3 and st_["stats"]["bad_puts"] == 2
    finally:
        c.stop()
