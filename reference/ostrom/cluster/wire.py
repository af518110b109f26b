"""The cluster's wire: length-prefixed frames of the existing message encoding.

A frame is a 4-byte big-endian length and that many bytes.  The bytes of a frame are
one ``messages.encode`` envelope (a signed PBFT message), except the first frame of a
connection, the *hello*: ``{"hello": NAME}``, naming who dials (a principal, or
``"status"`` for a status request, ``"read"`` for a read of the HTTP API or ``"put"``
for a payload to keep: one request frame of JSON after it, cluster/replica_process.py).
The hello is not authenticated and need not be: every PBFT message after it is signed,
and the receiver checks the signature, not the hello; a status or a read asks only for
what is public, and a put can only give a payload that its digest already names
(cluster/payloads.py).  It serves routing (a status request, a read, the proxy's
partition rules) and counting.

Every byte from the network is hostile.  ``FrameDecoder`` is sans-IO: ``feed`` takes
any bytes and returns the complete frames; a length above ``MAX_FRAME`` (or zero) is
garbage and raises ``FrameError``, after which the connection is closed (a stream out
of step cannot be resynchronised).  A frame whose content does not decode is *dropped
and counted* by whoever handles it (the replica counts it as ``malformed``).  Nothing
here raises anything but ``FrameError``; test_cluster_wire fuzzes it.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Final

from ostrom.consensus.messages import MAX_MESSAGE_BYTES

__all__ = [
    "HEADER",
    "HELLO_TIMEOUT_S",
    "MAX_FRAME",
    "MAX_READ",
    "PUT",
    "READ",
    "FrameDecoder",
    "FrameError",
    "frame",
    "hello",
    "parse_hello",
    "read_frames",
    "read_one",
]

HEADER: Final = 4
#: The largest frame accepted: the largest message the decoder accepts.
MAX_FRAME: Final = MAX_MESSAGE_BYTES
#: The largest hello frame.
_MAX_HELLO: Final = 256
_NAME: Final = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
#: How long a peer may take to send its hello before the connection is closed.
HELLO_TIMEOUT_S: Final = 5.0
#: The hello of the read channel (a read of the HTTP API, answered from a replica's node).
READ: Final = "read"
#: The largest read request (a POST /search's query, and the rest of the read).
MAX_READ: Final = 1 << 16
#: The hello of the payload channel (a payload the front hands a replica to keep).
PUT: Final = "put"


class FrameError(Exception):
    """The stream is not a sequence of frames: close the connection."""


def frame(payload: bytes) -> bytes:
    """One frame around ``payload``."""
    if not 0 < len(payload) <= MAX_FRAME:
        raise FrameError(f"a frame carries 1..{MAX_FRAME} bytes, not {len(payload)}")
    return len(payload).to_bytes(HEADER, "big") + payload


class FrameDecoder:
    """Reassembles frames from arbitrary chunks of a stream (sans-IO)."""

    def __init__(self, max_frame: int = MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()
        self.broken = False

    def feed(self, data: bytes) -> list[bytes]:
        """The complete frames ``data`` finishes; ``FrameError`` on a bad length (the
        decoder stays broken: the connection must close)."""
        if self.broken:
            raise FrameError("the stream already failed")
        self._buf += data
        out: list[bytes] = []
        while len(self._buf) >= HEADER:
            size = int.from_bytes(self._buf[:HEADER], "big")
            if not 0 < size <= self.max_frame:
                self.broken = True
                self._buf.clear()
                raise FrameError(f"frame length {size} not in 1..{self.max_frame}")
            if len(self._buf) < HEADER + size:
                break
            out.append(bytes(self._buf[HEADER : HEADER + size]))
            del self._buf[: HEADER + size]
        return out

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held."""
        return len(self._buf)


def hello(name: str) -> bytes:
    """The first frame of a connection: who dials."""
    if not _NAME.match(name):
        raise FrameError(f"not a principal name: {name!r}")
    return frame(json.dumps({"hello": name}, separators=(",", ":")).encode())


def parse_hello(payload: bytes) -> str:
    """The name in a hello frame's payload; ``FrameError`` for anything else."""
    if len(payload) > _MAX_HELLO:
        raise FrameError("hello too long")
    try:
        doc = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise FrameError("hello is not JSON") from None
    if not isinstance(doc, dict) or set(doc) != {"hello"}:
        raise FrameError('hello is not {"hello": NAME}')
    name = doc["hello"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise FrameError("hello names no principal")
    return name


async def read_frames(
    reader: asyncio.StreamReader, decoder: FrameDecoder, chunk: int = 1 << 16
) -> list[bytes] | None:
    """The next frames from ``reader`` (waits for at least one); None at end of stream
    (a frame cut short by the end is dropped with it).  ``FrameError`` on garbage."""
    while True:
        data = await reader.read(chunk)
        if not data:
            return None
        frames = decoder.feed(data)
        if frames:
            return frames


async def read_one(reader: asyncio.StreamReader, max_frame: int = MAX_FRAME) -> bytes | None:
    """Exactly one frame (the hello, or a status answer); None at end of stream."""
    try:
        head = await reader.readexactly(HEADER)
    except asyncio.IncompleteReadError:
        return None
    size = int.from_bytes(head, "big")
    if not 0 < size <= max_frame:
        raise FrameError(f"frame length {size} not in 1..{max_frame}")
    try:
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None
