"""The front of a cluster: the ``Backend`` the one HTTP application (service/app.py) serves.

A cluster answers the node's HTTP API, every route of it, through the same application
as ``ostrom serve``: the same routes, body limits, error mapping and OpenAPI document.
What differs is here (docs/design.md §11):

* ``submit`` (POST /commands) signs the envelope into a PBFT request and answers once
  ``f+1`` replicas sent the same signed result (``consensus.client.Client``: at least one
  of them is honest, so the result is one the replicated service produced).  The result
  is the single node's reply (``ClusterApp``), answered unchanged;
* ``read`` (every GET, and POST /search) asks a replica over its read channel for the
  answer from its executed state (service/reads.py) and says at which log position
  (``Ostrom-Position``) and from which replica (``Ostrom-Answered-By``).  A plain read is
  one replica's word: a Byzantine replica may answer anything.  A replica still fetching
  the content asked for (503 ``content_pending``: cluster/payloads.py, "Repair") is passed
  over for the next.  ``consistent=1`` asks
  every replica and answers only what ``f+1`` of them answer at the same position (one
  of them honest), asking again for ``_CONSISTENT_S``; else 503 ``not_consistent``.

**Several client identities.**  A PBFT client has one outstanding request; the front
holds ``clients`` of them (``c0..``), so concurrent HTTP requests are not serialised
behind one.  A client's timestamps start at the wall clock in microseconds, so a
restarted front never reuses a timestamp the replicas executed (they would answer the
old reply: PBFT's exactly-once rule).

**Batching** (docs/cluster.md): the dispatcher takes the first waiting command, waits
for a free client, then takes up to ``batch_size`` commands (waiting at most
``batch_window_ms`` for more) into one request ``{"batch": [...]}``, as many as keep
the request within ``max_batch_bytes`` (``messages.max_request_bytes``: the largest
NEW-VIEW that may carry it must fit a frame); the reply's ``results`` are handed back in
order, one per HTTP request.

**Timers.**  A client whose request has no result within the client timeout (twice the
view-change timeout, as ``Simulation``) broadcasts it to every replica
(``Client.on_timeout``): that is what makes the backups suspect a silent primary.

Hostile input: a body larger than ``MAX_BODY`` or not JSON is refused by the application
(413, 400), a command the replicas could not decode by ``check_command`` (400), an
envelope its sender did not sign by ``screen`` (cluster/screen.py: the gate's own codes,
400 to 403), and a command beyond the queue's bound in bytes (``MAX_QUEUED_BYTES``) or
count by 503 ``busy``; nothing is sent for any of them.  Each refusal is charged to the
node's refusal budget (service/budget.py, ADM-2: ``refusal_burst`` and ``refusal_rate``
in cluster.toml's ``[front]``), and a sender past it is answered 429
``too_many_refusals`` before the screen checks a signature.  The front looks up an agent's
registered key from the replicas (``registered_key``: ``f+1`` of them agreeing) and
keeps it; a key kept is looked up again when a signature fails under it (a
rotate_key may have replaced it, KEY-1).  A reply frame that is not a valid
signed reply is counted and dropped by ``Client.on_reply``; a read answer that is not one
is counted and the next replica asked.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import uvicorn

from ostrom.cluster.app import RESULTS, batch_operation, community
from ostrom.cluster.config import ClusterConfig, ConfigError, ReplicaConfig, load
from ostrom.cluster.keys import KeyFileError, load_ring, load_signer
from ostrom.cluster.links import Link
from ostrom.cluster.payloads import PayloadError, check_put, ordered_form, put_request
from ostrom.cluster.screen import Lookup, Refusal, screen
from ostrom.cluster.wire import (
    CHANNELS,
    HELLO_TIMEOUT_S,
    PUT,
    READ,
    FrameDecoder,
    FrameError,
    authenticate,
    frame,
    hello,
    parse_hello,
    prove,
    read_frames,
    read_one,
)
from ostrom.consensus.client import Client
from ostrom.consensus.messages import (
    Malformed,
    Reply,
    Signed,
    canonical,
    check_tree,
    decode,
    max_request_bytes,
)
from ostrom.consensus.replica import BROADCAST, Output
from ostrom.service.app import create_app
from ostrom.service.budget import RefusalBudget
from ostrom.service.gate import IDENTITY_OPS, payload_refusal
from ostrom.service.node import Reply as HttpReply
from ostrom.service.node import error
from ostrom.service.openapi import body_limit
from ostrom.service.reads import Answer, Read
from ostrom.service.server import config as server_config

__all__ = [
    "MAX_BODY",
    "MAX_QUEUED",
    "MAX_QUEUED_BYTES",
    "BadCommand",
    "Front",
    "check_command",
    "main",
]

MAX_BODY: Final = 1 << 20
#: What a signed REQUEST adds around its batch's commands (its client, timestamp,
#: signature; 300 bytes measured with a 32-character client name), and each command's
#: separator is counted as one byte more.
_REQUEST_WRAPPER: Final = 512
#: What naming a command in its batch's list of carried commands adds (an index below
#: 1024, ``batch_size``'s bound, and a comma; the list's key is within the wrapper).
_CARRIED_BYTES: Final = 8
#: Levels of the request envelope above a command (Signed, Request, operation, batch).
_ENVELOPE_DEPTH: Final = 6
#: Commands waiting for a client identity before the front answers 503 (busy).
MAX_QUEUED: Final = 10_000
#: Bytes of commands waiting for a client identity before the front answers 503 (busy):
#: the queue's memory, whatever the size of each command (a count alone let 10,000
#: bodies of 1 MiB wait).
MAX_QUEUED_BYTES: Final = 64 << 20
#: Registered keys the front keeps (looked up again when one no longer verifies: KEY-1).
_MAX_KEYS: Final = 1 << 16
#: How long an HTTP request waits for its result before answering 504.
_RESULT_TIMEOUT_S: Final = 60.0
#: How long one replica may take to connect and answer a read.
_READ_TIMEOUT_S: Final = 5.0
#: How long a consistent read asks again for f+1 agreeing answers (then 503).
_CONSISTENT_S: Final = 2.0
#: Least time between two look-ups of one agent's key caused by a failed signature (s).
_RELOOK_S: Final = 1.0
#: How often a consistent read asks again, and the long poll looks for a new entry.
_POLL_S: Final = 0.05
_TICK_S: Final = 0.01


class BadCommand(ValueError):
    """The body cannot travel as a command (the message says why): 400, nothing sent."""


def check_command(command: Any) -> int:
    """The encoded size of ``command`` (a JSON value the app parsed from a body), or
    ``BadCommand``.

    The replicas decode requests with ``messages.decode``, which refuses what is not
    JSON every implementation reads alike (``check_tree``: 64-bit integers, finite
    floats, no lone surrogates, bounded depth).  A command it would refuse must be
    refused *here*: signed and sent, it would be dropped by every replica and its client
    identity would retry it forever."""
    wrapped: Any = command
    for _ in range(_ENVELOPE_DEPTH):
        wrapped = [wrapped]
    try:
        check_tree(wrapped)
        return len(canonical(command))
    except (Malformed, ValueError, RecursionError) as exc:
        raise BadCommand(f"the command cannot be signed: {exc}") from None


@dataclass
class _Pending:
    command: Any
    future: asyncio.Future[dict[str, Any]]
    size: int = 0
    #: ordered without the payload handed to the replicas (the batch names it: app.py)
    carried: bool = False


@dataclass
class _Slot:
    """One client identity and what it carries."""

    client: Client
    batch: list[_Pending] = field(default_factory=list)
    sent_at: float = 0.0
    timeout_at: float = 0.0


class Front:
    """The HTTP front of a cluster: a PBFT client that answers after ``f+1`` matching
    replies."""

    def __init__(self, cfg: ClusterConfig) -> None:
        self.cfg = cfg
        ring = load_ring(cfg.keys)
        now_us = time.time_ns() // 1000
        self.slots: dict[str, _Slot] = {}
        self.ring = ring
        self._link_signer = load_signer(cfg.keys, cfg.client_names[0])
        for name in cfg.client_names:
            c = Client(name, load_signer(cfg.keys, name), ring, cfg.n, cfg.f)
            c.timestamp = now_us
            self.slots[name] = _Slot(c)
        self.queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self.free: asyncio.Queue[str] = asyncio.Queue()
        self.links: dict[str, Link] = {}
        self.stats: Counter[str] = Counter()
        self.latencies: list[float] = []
        self.client_timeout_s = 2 * cfg.base_timeout_ms / 1000
        self.stopping = asyncio.Event()
        self._held: _Pending | None = None
        self._reader = 0  # the replica plain reads go to (another only if it fails)
        self._background: set[asyncio.Future[Any]] = set()  # puts to the slower replicas
        params, setup = community(cfg.founders, cfg.params, cfg.community)
        self.operators: dict[str, str] = dict(setup.operators)
        self.community_id = setup.community  # ENV-1: what every envelope is signed for
        #: registered keys f+1 replicas agreed on (insertion order: the oldest evicted)
        self.keys: dict[str, str] = {}
        #: the keys each agent of ``keys`` rotated away from, as the same f+1 answered
        self.retired: dict[str, tuple[str, ...]] = {}
        #: when each agent's kept key was last looked up again after a failed signature
        self._relooked: dict[str, float] = {}
        self.queued_bytes = 0
        #: the commands of one request, encoded, stay within this: every VIEW-CHANGE and
        #: NEW-VIEW that may carry the request then fits a frame (``max_request_bytes``)
        self.max_batch_bytes = (
            max_request_bytes(cfg.n, cfg.watermark_window, cfg.max_frame_bytes) - _REQUEST_WRAPPER
        )
        #: ADM-2: the node's refusal budget (service/budget.py), checked before the screen
        #: verifies anything: a flood of bad envelopes is answered 429 without a signature
        #: check once its address or key has spent its burst
        self.refusals = RefusalBudget(cfg.refusal_burst, cfg.refusal_rate)
        self.content_limit = params.content_limit
        self.embedding_dim = params.embedding_dim
        #: the node's body limit for this community, within the front's own bound
        self.body_limit = min(MAX_BODY, body_limit(self.content_limit, self.embedding_dim))

    # --- PBFT side ------------------------------------------------------------------------

    def route(self, out: Output) -> None:
        for s in out.sends:
            payload = s.payload if isinstance(s.payload, bytes) else s.payload.encoded
            dests = list(self.links) if s.dest == BROADCAST else [s.dest]
            for d in dests:
                link = self.links.get(d)
                if link is not None:
                    link.send(payload)

    async def dispatch(self) -> None:
        """Batches waiting commands into requests, one per free client."""
        window = self.cfg.batch_window_ms / 1000
        while True:
            if self._held is not None:
                first, self._held = self._held, None
            else:
                first = await self.queue.get()
                self.queued_bytes -= first.size
            name = await self.free.get()
            batch, size = [first], first.size
            deadline = time.monotonic() + window
            while len(batch) < self.cfg.batch_size:
                if self.queue.empty():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    try:
                        nxt = await asyncio.wait_for(self.queue.get(), left)
                    except TimeoutError:
                        break
                else:
                    nxt = self.queue.get_nowait()
                self.queued_bytes -= nxt.size
                if size + nxt.size + len(batch) + 1 > self.max_batch_bytes:
                    self._held = nxt  # the first of the next batch
                    break
                batch.append(nxt)
                size += nxt.size
            slot = self.slots[name]
            slot.batch = batch
            slot.sent_at = time.monotonic()
            slot.timeout_at = slot.sent_at + self.client_timeout_s
            self.stats["requests"] += 1
            self.stats["commands"] += len(batch)
            try:
                out = slot.client.request(
                    batch_operation(
                        [p.command for p in batch], [i for i, p in enumerate(batch) if p.carried]
                    )
                )
            except Exception as exc:  # check_command admits only what signs; never die here
                self.stats["unsendable"] += 1
                for p in batch:
                    if not p.future.done():
                        p.future.set_exception(RuntimeError(f"cannot send: {exc}"))
                slot.client.outstanding, slot.batch = None, []
                self.free.put_nowait(name)
                continue
            self.route(out)

    def on_reply(self, data: bytes) -> None:
        try:
            signed = decode(data)
        except Malformed:
            self.stats["malformed_replies"] += 1
            return
        m = signed.message
        if not isinstance(signed, Signed) or not isinstance(m, Reply):
            self.stats["not_replies"] += 1
            return
        slot = self.slots.get(m.client)
        if slot is None or not slot.client.busy:
            self.stats["unexpected_replies"] += 1
            return
        slot.client.on_reply(signed)
        if not slot.client.busy:
            self._complete(m.client, slot)

    def _complete(self, name: str, slot: _Slot) -> None:
        ts, result = slot.client.results[-1]
        del slot.client.results[:]  # the front keeps no history of results
        results = result.get(RESULTS) if isinstance(result, dict) else None
        batch, slot.batch = slot.batch, []
        self.latencies.append(time.monotonic() - slot.sent_at)
        if len(self.latencies) > 100_000:
            del self.latencies[:50_000]
        for i, p in enumerate(batch):
            if p.future.done():
                continue
            if isinstance(results, list) and i < len(results):
                p.future.set_result(
                    {"observation": results[i], "client": name, "timestamp": ts, "index": i}
                )
            else:
                p.future.set_exception(RuntimeError("the replicas answered no result"))
        self.stats["acknowledged"] += len(batch)
        self.free.put_nowait(name)

    def tick(self) -> None:
        now = time.monotonic()
        for slot in self.slots.values():
            if slot.client.busy and now >= slot.timeout_at:
                slot.timeout_at = now + self.client_timeout_s
                self.stats["client_timeouts"] += 1
                self.route(slot.client.on_timeout())

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(_TICK_S)
            self.tick()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Replies from the replicas (each dials the front like any peer)."""
        try:
            first = await asyncio.wait_for(read_one(reader, 256), HELLO_TIMEOUT_S)
            if first is None:
                return
            peer = parse_hello(first)
            replicas = {rc.name for rc in self.cfg.replicas}
            try:  # only a replica, proving it is itself (wire.py)
                await authenticate(
                    reader, writer, peer, "front", self.ring, lambda s: s == peer and s in replicas
                )
            except (FrameError, TimeoutError):
                self.stats["unauthenticated_connections"] += 1
                return
            decoder = FrameDecoder()
            while True:
                frames = await read_frames(reader, decoder)
                if frames is None:
                    return
                for data in frames:
                    self.on_reply(data)
        except FrameError:
            self.stats["garbage_connections"] += 1
        except (TimeoutError, OSError, ConnectionError):
            self.stats["broken_connections"] += 1
        except asyncio.CancelledError:
            pass  # the front stops: the connection closes with it
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    # --- the Backend of the HTTP application (service/app.py) ---------------------------

    async def submit(self, envelope: Any) -> HttpReply:
        """POST /commands: order ``command`` and answer the reply ``f+1`` replicas sent
        (the single node's reply: ``ClusterApp``)."""
        try:
            size = check_command(envelope)
        except BadCommand as exc:
            return error("malformed", str(exc))
        refusal = await self.screened(envelope)
        if refusal is not None:
            self.stats["screened"] += 1
            return error(refusal.code, refusal.detail)
        if self.queue.qsize() >= MAX_QUEUED:
            return error("busy", f"{MAX_QUEUED} commands are waiting for a client identity")
        if self.queued_bytes + size > MAX_QUEUED_BYTES:
            return error(
                "busy", f"{self.queued_bytes} bytes of commands are waiting for a client identity"
            )
        put = put_request(envelope) if isinstance(envelope, dict) else None
        if put is None and size + 1 > self.max_batch_bytes:
            return self._too_large(size)
        if put is not None:
            # the payload travels apart from the ordered command (cluster/payloads.py)
            refused = payload_refusal(envelope["command"], self.content_limit, self.embedding_dim)
            if refused is not None:
                return error(*refused)
            envelope = ordered_form(envelope)
            # its index in the batch's list of carried commands (app.PAYLOADS)
            size = len(canonical(envelope)) + _CARRIED_BYTES
            if size + 1 > self.max_batch_bytes:
                return self._too_large(size)
            try:
                check_put(put, self.content_limit, self.embedding_dim)
            except PayloadError:
                # not an envelope the gate and the Community accept (its agent, seq or
                # artifact is not what they take): ordered without its payload, it is
                # refused as on a node, and no replica needs the payload
                put = None
            if put is not None:
                kept = await self._hand(put)
                if kept < self.cfg.n - self.cfg.f:
                    return error(
                        "no_replica",
                        f"{kept} replicas kept the payload, fewer than n - f = "
                        f"{self.cfg.n - self.cfg.f}: nothing was ordered",
                    )
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.queue.put_nowait(_Pending(envelope, fut, size, carried=put is not None))
        self.queued_bytes += size
        try:
            done = await asyncio.wait_for(fut, _RESULT_TIMEOUT_S)
        except TimeoutError:
            return error("timeout", "no result from the replicas in time (it may still execute)")
        except RuntimeError as exc:
            return error("internal_error", str(exc))
        result = done["observation"]
        if (
            isinstance(result, dict)
            and set(result) == {"status", "body"}
            and isinstance(result["status"], int)
            and isinstance(result["body"], dict)
        ):
            if result["body"].get("result") == "ok":
                self._forget_key(envelope)
            return HttpReply(result["status"], result["body"])
        # f+1 replicas, one of them honest, sent this: not the shape ClusterApp answers
        self.stats["unshaped_results"] += 1
        return error("internal_error", "the replicas answered no reply for the command")

    def _too_large(self, size: int) -> HttpReply:
        self.stats["too_large"] += 1
        return error(
            "too_large",
            f"the command is {size} bytes; this cluster orders at most {self.max_batch_bytes - 1}"
            " bytes per request (its size and window: max_request_bytes)",
        )

    def _forget_key(self, envelope: Any) -> None:
        """After an applied rotate_key or revoke_key, the kept key of the agent it names
        is stale (KEY-1, KEY-2): the next envelope of that agent looks it up again."""
        command = envelope.get("command") if isinstance(envelope, dict) else None
        if isinstance(command, dict) and command.get("op") in IDENTITY_OPS:
            agent = command.get("agent")
            if isinstance(agent, str):
                self.keys.pop(agent, None)
                self.retired.pop(agent, None)

    async def screened(self, envelope: Any) -> Refusal | None:
        """The gate's refusal of an envelope its sender did not sign (cluster/screen.py),
        or None: signed, to be ordered.  An agent's registered key is asked of the
        replicas (``registered_key``); if they do not agree on it in time the envelope is
        ordered and the gate decides (counted: ``unscreened``)."""
        looked: dict[str, str | None] = {}
        while True:
            known = _Known(self.keys, looked)
            got = screen(envelope, self.community_id, self.operators, known, self.retired)
            agent = envelope.get("agent") if isinstance(envelope, dict) else None
            now = asyncio.get_running_loop().time()
            if (
                isinstance(got, Refusal)
                and got.code == "bad_signature"
                and isinstance(agent, str)
                and agent in self.keys
                and agent not in looked
                and now - self._relooked.get(agent, -_RELOOK_S) >= _RELOOK_S
            ):
                # the kept key may be one the agent has since rotated away from (KEY-1,
                # a rotation this front did not see answered): ask the replicas again,
                # at most once a _RELOOK_S per agent, so forgeries cost no more lookups
                if len(self._relooked) >= _MAX_KEYS:
                    self._relooked.clear()
                self._relooked[agent] = now
                del self.keys[agent]
                self.retired.pop(agent, None)
                continue
            if not isinstance(got, Lookup):
                return got
            decided, key = await self.registered_key(got.agent)
            if not decided:
                self.stats["unscreened"] += 1
                return None
            looked[got.agent] = key

    async def registered_key(self, agent: str) -> tuple[bool, str | None]:
        """``(True, key)``: ``agent``'s registered key as ``f+1`` replicas answer it (one
        of them honest; a kept key that no longer verifies is looked up again);
        ``(True, None)`` if ``f+1`` answer that it has none and none answers a key;
        ``(False, None)``, undecided, after asking for ``_CONSISTENT_S`` (replicas still
        executing its join, or Byzantine ones disagreeing).  A key is kept (``keys``, at
        most ``_MAX_KEYS``); "none" is not, as the agent may join at any moment."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _CONSISTENT_S
        read = Read.of("agent", agent=agent)
        while True:
            got = await asyncio.gather(*(self._ask(rc, read) for rc in self.cfg.replicas))
            votes: Counter[tuple[str, tuple[str, ...]] | None] = Counter()
            for a in got:
                if a is None:
                    continue
                status, body, _ = a
                key = body.get("public_key") if status == 200 else None
                old = body.get("retired_keys", []) if status == 200 else []
                if status in (200, 404):
                    ok = isinstance(key, str) and isinstance(old, list)
                    votes[(str(key), tuple(map(str, old))) if ok else None] += 1
            for vote, count in votes.items():
                if vote is not None and count >= self.cfg.f + 1:
                    if len(self.keys) >= _MAX_KEYS:
                        evicted = next(iter(self.keys))
                        del self.keys[evicted]
                        self.retired.pop(evicted, None)
                    self.keys[agent], self.retired[agent] = vote
                    return True, vote[0]
            if votes[None] >= self.cfg.f + 1 and len(votes) == 1:
                return True, None
            if loop.time() >= deadline:
                return False, None
            await asyncio.sleep(_POLL_S)

    async def read(self, read: Read, consistent: bool) -> Answer:
        """A read from a replica's executed state (``consistent``: ``f+1`` agreeing)."""
        if consistent:
            return await self._read_consistent(read)
        n = len(self.cfg.replicas)
        pending: Answer | None = None
        for i in range(n):
            k = (self._reader + i) % n
            rc = self.cfg.replicas[k]
            got = await self._ask(rc, read)
            if got is not None and _pending(got):
                pending = pending or Answer(got[0], got[1], got[2], rc.name)
                continue  # that replica is still fetching the content: another has it
            if got is not None:
                self._reader = k  # sticky: the next read sees this state or a later one
                return Answer(got[0], got[1], got[2], rc.name)
        return pending or _no_replica()

    async def _read_consistent(self, read: Read) -> Answer:
        """Ask every replica; the answer ``f+1`` of them give at one log position (at least
        one honest replica executed to there and answers so), else ask again until
        ``_CONSISTENT_S`` passed: 503 ``not_consistent`` (``no_replica``: none answered)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _CONSISTENT_S
        self.stats["consistent_reads"] += 1
        while True:
            got = await asyncio.gather(*(self._ask(rc, read) for rc in self.cfg.replicas))
            groups: dict[bytes, list[str]] = {}
            for rc, a in zip(self.cfg.replicas, got, strict=True):
                if a is not None:
                    groups.setdefault(canonical(list(a)), []).append(rc.name)
            for key, names in groups.items():
                if len(names) >= self.cfg.f + 1:
                    status, body, position = json.loads(key)
                    return Answer(status, body, position, ",".join(names))
            if loop.time() >= deadline:
                if not groups:
                    return _no_replica()
                self.stats["not_consistent"] += 1
                err = error(
                    "not_consistent",
                    f"no {self.cfg.f + 1} replicas agreed at one log position in {_CONSISTENT_S} s",
                )
                return Answer(err.status, err.body, None)
            await asyncio.sleep(_POLL_S)

    async def _ask(self, rc: ReplicaConfig, read: Read) -> tuple[int, dict[str, Any], int] | None:
        """One replica's answer over its read channel: (status, body, position), or None
        (unreachable, too slow, or not an answer: counted)."""
        request = json.dumps(read.to_json(), ensure_ascii=False, sort_keys=True).encode()
        doc = await self._exchange(rc, READ, request)
        if (
            isinstance(doc, dict)
            and isinstance(doc.get("status"), int)
            and isinstance(doc.get("body"), dict)
            and isinstance(doc.get("position"), int)
        ):
            return doc["status"], doc["body"], doc["position"]
        self.stats["bad_read_answers"] += 1
        return None

    async def _hand(self, put: dict[str, Any]) -> int:
        """Hand a payload to every replica (its payload channel); how many kept it, as
        soon as ``n - f`` did (the others go on in the background), or after all
        answered or timed out.  ``n - f`` keep it: at least ``f + 1`` honest replicas
        hold the content of what is ordered next."""
        data = json.dumps(put, ensure_ascii=False, sort_keys=True).encode()
        tasks = [asyncio.ensure_future(self._exchange(rc, PUT, data)) for rc in self.cfg.replicas]
        kept = 0
        pending: set[asyncio.Future[Any]] = set(tasks)
        while pending and kept < self.cfg.n - self.cfg.f:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            kept += sum(1 for t in done if t.result() == {"ok": True})
        self._background |= pending
        for t in pending:
            t.add_done_callback(self._background.discard)
        self.stats["payloads_handed"] += 1
        return kept

    async def _exchange(self, rc: ReplicaConfig, channel: str, request: bytes) -> Any:
        """One request frame on a replica's ``channel`` (read, put) and its answer as
        JSON, or None (unreachable, too slow, garbage: counted)."""
        writer = None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(rc.dial.host, rc.dial.port), _READ_TIMEOUT_S
            )
            writer.write(hello(channel))
            if channel in CHANNELS:  # a put: proved with a client identity's key (wire.py)
                await prove(reader, writer, self._link_signer, channel, rc.name)
            writer.write(frame(request))
            await writer.drain()
            data = await asyncio.wait_for(read_one(reader), _READ_TIMEOUT_S)
            return None if data is None else json.loads(data.decode("utf-8"))
        except (OSError, TimeoutError, ConnectionError, FrameError, ValueError, RecursionError):
            self.stats[f"{channel}_failures"] += 1
            return None
        finally:
            if writer is not None:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

    async def wait(self, after: int, timeout: float) -> None:
        """GET /events' long poll: until the replica reads are served from has a log past
        ``after`` (asked every ``_POLL_S``), or ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            a = await self.read(Read.of("health"), False)
            if a.position is not None and a.position > after:
                return
            left = deadline - loop.time()
            if left <= 0:
                return
            await asyncio.sleep(min(_POLL_S, left))

    async def status(self) -> dict[str, Any]:
        lat = sorted(self.latencies[-10_000:])
        return {
            "kind": "cluster",
            "n": self.cfg.n,
            "f": self.cfg.f,
            "batch_size": self.cfg.batch_size,
            "clients": len(self.slots),
            "busy": sum(1 for s in self.slots.values() if s.client.busy),
            "queued": self.queue.qsize(),
            "queued_bytes": self.queued_bytes,
            "stats": dict(sorted(self.stats.items())),
            "latency_p50_ms": round(1000 * lat[len(lat) // 2], 3) if lat else None,
        }

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The PBFT side, while the app serves: a link to every replica, the server the
        replicas send their replies to, the dispatcher and the client timers."""
        loop = asyncio.get_running_loop()
        for rc in self.cfg.replicas:
            # the front has no key of its own: its links prove it with its first client's
            self.links[rc.name] = Link("front", rc.name, rc.dial, self._link_signer)
            self.links[rc.name].start()
        for name in self.slots:
            self.free.put_nowait(name)
        server = await asyncio.start_server(
            self._serve, self.cfg.front.host, self.cfg.front.port, reuse_address=True
        )
        tasks = [loop.create_task(self.dispatch()), loop.create_task(self._ticker())]
        try:
            yield
        finally:
            server.close()
            for t in tasks:
                t.cancel()
            for link in self.links.values():
                await link.close()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        # the node's server, with its timeouts and connection cap (service/server.py)
        config = server_config(
            create_app(self, refusals=self.refusals, key_of=self.keys.get),
            host=self.cfg.http.host,
            port=self.cfg.http.port,
            lifespan="on",
        )
        http = _QuietServer(config)
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, http.stop)
        print(f"front: http://{self.cfg.http.host}:{self.cfg.http.port}", flush=True)
        await http.serve()
        return 0


class _Known(Mapping[str, "str | None"]):
    """The registered keys ``screen`` may use: those kept, then those just looked up."""

    def __init__(self, kept: dict[str, str], looked: dict[str, str | None]) -> None:
        self.kept, self.looked = kept, looked

    def __getitem__(self, agent: str) -> str | None:
        if agent in self.kept:
            return self.kept[agent]
        return self.looked[agent]

    def __iter__(self) -> Iterator[str]:
        return iter({**self.kept, **self.looked})

    def __len__(self) -> int:
        return len({**self.kept, **self.looked})


def _pending(got: tuple[int, dict[str, Any], int]) -> bool:
    """A replica's answer that it is still fetching the content asked for (repair:
    cluster/payloads.py)."""
    return got[1].get("error") == "content_pending"


def _no_replica() -> Answer:
    err = error("no_replica", "no replica answered the read")
    return Answer(err.status, err.body, None)


class _QuietServer(uvicorn.Server):
    """uvicorn's server without its signal capture: uvicorn re-raises a captured SIGTERM
    after its shutdown, so the front would die of the signal (exit -15) instead of
    stopping cleanly (exit 0, as the replicas do).  The front's loop handles SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def stop(self) -> None:
        self.should_exit = True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="ostrom cluster front", description="The HTTP front.")
    p.add_argument("--cluster", required=True)
    args = p.parse_args(argv)
    try:
        front = Front(load(args.cluster))
    except (ConfigError, KeyFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(front.run())
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
