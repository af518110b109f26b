"""The cluster's wire: length-prefixed frames of the existing message encoding.

A frame is a 4-byte big-endian length and that many bytes.  The bytes of a frame are
one ``messages.encode`` envelope (a signed PBFT message), except the first frames of a
connection.  The first is the *hello*: ``{"hello": NAME}``, naming who dials (a
principal, or ``"status"`` for a status request, ``"read"`` for a read of the HTTP API,
``"put"`` for a payload to keep or ``"fetch"`` for a payload a peer lacks: one request
frame of JSON after it, cluster/replica_process.py).  A status or a read (``PUBLIC``)
asks only for what is public and needs no proof.  A put and a fetch are *channels*
(``CHANNELS``): their hello is proved like a principal's, by one of the principals the
receiver allows (a put: the front's client identities only; a fetch: a peer replica),
because a put makes the receiver store what it carries (issue 40, item 4: any local
process could fill a replica's payload file) and a fetch is one replica's repair
request to another (cluster/payloads.py, "Repair").

**A principal's hello is authenticated** (issue 41, item 6; docs/security.md, "replica
links").  Without it any local process could open a peer's connection and put frames in
front of its decoder and its signature checks (a decode and a verification each).  The
receiver answers a principal's hello with a *challenge*, ``{"challenge": 32 random bytes
in hex}``, and the dialer must answer, within ``HELLO_TIMEOUT_S``, a
*proof*: ``{"signer": PRINCIPAL, "signature": hex}``, the signer's Ed25519 signature
(``Signer.sign_domain`` under ``LINK_DOMAIN``) of the canonical ``{"challenge", "from":
the hello's name, "signer", "to": the receiver's name}``.  The challenge is fresh per
connection, so a proof cannot be replayed; ``to`` binds it to one receiver, so a proof
one peer gives cannot open a connection to another.  Who may sign for a hello is the
receiver's rule (``may_sign``: a replica for itself; the front, which has no key of its
own, with one of its client identities' keys).  A connection whose proof is missing,
late or wrong is closed before any frame of it is read.  The proof does not replace the
PBFT messages' own signatures: a Byzantine replica authenticates as itself and then
sends what it likes, under its own name only (BFT-SAFE-1 needs nothing from the links).

**Acknowledgements** (issue 42 item 0; docs/consensus.md, "Congestion control"): on a
connection between two replicas a frame may also be an *acknowledgement*, ``ACK_MAGIC``
(a zero byte, which no JSON envelope starts with), the sender's last executed sequence
number and stable checkpoint (8 bytes each, big-endian, signed), its observed
retransmission timeout in milliseconds (4 bytes, 0 before its first sample: its peers
size their view-change timers with it, ``congestion.waited_timeout``), the number of
keys (2 bytes) and that many ``congestion.message_key``s: the messages of the receiver's that
the sender took.  It travels on the acknowledging replica's own link to the other (so
the fault-injecting proxy loses and delays it like any frame) and is not signed: the
connection's proof says who sent it, and a forged or lost acknowledgement can only stop a
retransmission, which the network may do anyway (BFT-SAFE-1 needs nothing from it).

Every byte from the network is hostile.  ``FrameDecoder`` is sans-IO: ``feed`` takes
any bytes and returns the complete frames; a length above ``MAX_FRAME`` (or zero) is
garbage and raises ``FrameError``, after which the connection is closed (a stream out
of step cannot be resynchronised).  A frame whose content does not decode is *dropped
and counted* by whoever handles it (the replica counts it as ``malformed``).  Nothing
here raises anything but ``FrameError`` (and ``TimeoutError``, from the two sides of a
proof); test_cluster_wire fuzzes it.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import struct
from collections.abc import Callable
from typing import Final

from ostrom.consensus.congestion import ACK_BATCH, KEY_BYTES
from ostrom.consensus.crypto import KeyRing, Signer
from ostrom.consensus.messages import MAX_MESSAGE_BYTES, canonical

__all__ = [
    "ACK_MAGIC",
    "CHANNELS",
    "FETCH",
    "HEADER",
    "HELLO_TIMEOUT_S",
    "LINK_DOMAIN",
    "MAX_ACK_TIMEOUT",
    "MAX_FETCH",
    "MAX_FRAME",
    "MAX_READ",
    "PUBLIC",
    "PUT",
    "READ",
    "STATUS",
    "Ack",
    "FrameDecoder",
    "FrameError",
    "ack_frame",
    "authenticate",
    "frame",
    "hello",
    "parse_ack",
    "parse_hello",
    "prove",
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
#: The hello of the repair channel (a replica asks a peer for a payload it lacks).
FETCH: Final = "fetch"
#: The largest fetch request (an envelope's agent, seq, artifact and digest).
MAX_FETCH: Final = 1 << 14
#: The hello of a status request (one frame of JSON answers it).
STATUS: Final = "status"
#: The hellos that name no principal and ask only for what is public: no challenge.
PUBLIC: Final = frozenset({STATUS, READ})
#: The hellos of one-request channels whose dialer must prove who it is (``authenticate``).
CHANNELS: Final = frozenset({PUT, FETCH})
#: What a link's proof signs under (``Signer.sign_domain``): never a PBFT message's bytes.
LINK_DOMAIN: Final = b"ostrom-link/1\n"
_NONCE: Final = 32
_MAX_PROOF: Final = 512


#: The first bytes of an acknowledgement frame's payload.
ACK_MAGIC: Final = b"\x00ack"
_ACK_HEAD: Final = struct.Struct(">qqIH")
#: The largest timeout an acknowledgement can carry (ms).
MAX_ACK_TIMEOUT: Final = 2**32 - 1


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


class Ack:
    """A parsed acknowledgement: the keys of the messages taken, and the position of the
    replica that took them."""

    __slots__ = ("executed", "keys", "stable", "timeout")

    def __init__(self, keys: tuple[bytes, ...], executed: int, stable: int, timeout: int) -> None:
        self.keys, self.executed, self.stable, self.timeout = keys, executed, stable, timeout


def ack_frame(keys: tuple[bytes, ...], executed: int, stable: int, timeout: int = 0) -> bytes:
    """The payload of an acknowledgement (put in a frame by the link); ``timeout`` is
    clamped to what the frame carries."""
    if len(keys) > ACK_BATCH or any(len(k) != KEY_BYTES for k in keys):
        raise FrameError(f"an acknowledgement names at most {ACK_BATCH} keys of {KEY_BYTES} bytes")
    head = _ACK_HEAD.pack(executed, stable, min(max(0, timeout), MAX_ACK_TIMEOUT), len(keys))
    return ACK_MAGIC + head + b"".join(keys)


def parse_ack(payload: bytes) -> Ack | None:
    """The acknowledgement in ``payload``, None if it is not a well-formed one (a frame
    that does not start with ``ACK_MAGIC`` is a message; one that does but is malformed is
    dropped and counted by the caller).  Never raises."""
    head = len(ACK_MAGIC) + _ACK_HEAD.size
    if len(payload) < head or not payload.startswith(ACK_MAGIC):
        return None
    executed, stable, timeout, count = _ACK_HEAD.unpack_from(payload, len(ACK_MAGIC))
    if count > ACK_BATCH or len(payload) != head + count * KEY_BYTES or executed < 0 or stable < 0:
        return None
    keys = tuple(payload[head + k * KEY_BYTES : head + (k + 1) * KEY_BYTES] for k in range(count))
    return Ack(keys, executed, stable, timeout)


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


def _claim(nonce: bytes, dialer: str, receiver: str, signer: str) -> bytes:
    return canonical({"challenge": nonce.hex(), "from": dialer, "signer": signer, "to": receiver})


async def authenticate(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    dialer: str,
    receiver: str,
    ring: KeyRing,
    may_sign: Callable[[str], bool],
) -> str:
    """The receiver's side, after a principal's hello naming ``dialer``: send a fresh
    challenge, read the proof (within ``HELLO_TIMEOUT_S``) and return who signed it.
    ``FrameError`` if the proof is not one ``may_sign`` allows and the ring verifies
    (the caller closes the connection); ``TimeoutError`` if it is late."""
    nonce = os.urandom(_NONCE)
    writer.write(frame(json.dumps({"challenge": nonce.hex()}).encode()))
    await writer.drain()
    payload = await asyncio.wait_for(read_one(reader, _MAX_PROOF), HELLO_TIMEOUT_S)
    if payload is None:
        raise FrameError("closed before its proof")
    try:
        doc = json.loads(payload.decode("utf-8"))
        signer, signature = doc["signer"], bytes.fromhex(doc["signature"])
    except (UnicodeDecodeError, ValueError, RecursionError, TypeError, KeyError):
        raise FrameError("not a proof") from None
    if not isinstance(signer, str) or not _NAME.match(signer) or not may_sign(signer):
        raise FrameError(f"{signer!r} may not sign for {dialer!r}")
    if not ring.verify_domain(
        signer, LINK_DOMAIN, _claim(nonce, dialer, receiver, signer), signature
    ):
        raise FrameError(f"the proof of {dialer!r} does not verify")
    return signer


async def prove(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    signer: Signer,
    dialer: str,
    receiver: str,
) -> None:
    """The dialer's side, after its hello: read the challenge, send the proof.
    ``FrameError`` for anything but a challenge, ``TimeoutError`` if none comes."""
    payload = await asyncio.wait_for(read_one(reader, _MAX_HELLO), HELLO_TIMEOUT_S)
    if payload is None:
        raise FrameError("closed before the challenge")
    try:
        doc = json.loads(payload.decode("utf-8"))
        nonce = bytes.fromhex(doc["challenge"])
    except (UnicodeDecodeError, ValueError, RecursionError, TypeError, KeyError):
        raise FrameError("not a challenge") from None
    if len(nonce) != _NONCE:
        raise FrameError("not a challenge")
    sig = signer.sign_domain(LINK_DOMAIN, _claim(nonce, dialer, receiver, signer.principal))
    doc = {"signer": signer.principal, "signature": sig.hex()}
    writer.write(frame(json.dumps(doc).encode()))
    await writer.drain()
