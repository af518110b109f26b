"""One PBFT replica as an OS process: a ``DurableReplica`` behind asyncio TCP.

The replica itself is the sans-IO ``consensus.replica.Replica``; this module is the thin
layer around it, the asyncio counterpart of ``harness.network.Simulation``'s driving
loop:

* **messages**: a server accepts connections from peers and from the front; each
  frame (wire.py) goes to ``on_message`` as bytes (the replica decodes, verifies, and
  counts what it refuses); the ``Output``'s sends go out on one ``Link`` per peer
  (links.py), ``BROADCAST`` to every other replica, a client's reply to the front;
* **durability**: an honest replica is a ``DurableReplica`` on its SQLite file: every
  step is committed before its sends are released (write before send, BFT-SAFE-1), so
  ``kill -9`` at any instant loses only what retransmission gives back, and the
  restarted process resumes from ``DurableReplica.recover``.  The frames of one read
  are committed together (``deliver_all``: group commit, one transaction and one fsync
  for all of them, their sends released after it);
* **retransmission and timers** (as ``Simulation``'s, with the same rules: docs/consensus.md,
  "Congestion control"): an honest replica's ``congestion.Retransmitter`` decides, this
  layer only carries its decisions.  Every message to a peer is tracked until the peer
  acknowledges it (an acknowledgement frame, wire.py: the peer's keys of what it took and
  its position, within ``ACK_DELAY``) and re-sent on its own timer, after the observed
  timeout and with back-off, within the link's budget, unless the peer's position covers
  it or the replica no longer holds it (superseded).  Loss happens above TCP too (a
  broken connection, a proxy that drops frames), so TCP's delivery is not enough
  (BFT-LIVE-1: PBFT assumes retransmission until delivery).  ``Replica.retransmit`` runs
  each quarter of the adapted view-change timer (the period doubling while nothing
  progresses), its copies skipped where acknowledged, outstanding or covered: an idle
  cluster sends nothing but a position update per peer after a change
  (``Retransmitter.acks_due``).  The view-change timer runs while ``Replica.waiting``
  and restarts when ``progress`` moves, lasts at least ``VIEW_CHANGE_DELAYS`` observed
  timeouts, and one due that the delay observed since lengthened moves to its new end.
  The timers are explicit ticks: one tick is one millisecond of ``time.monotonic``
  since the process started;
* **links**: a connection whose hello names a principal (a peer, or the front) must
  prove it (wire.py: a signed challenge) before any of its frames is read; one that does
  not is closed and counted (``unauthenticated_connections``);
* **status**: a connection whose hello is ``status`` gets one frame of JSON (view, last
  executed, stable checkpoint, application digest, refusals) and is closed;
* **reads**: a connection whose hello is ``read`` sends one frame, a read of the HTTP API
  (service/reads.py), and gets one frame, its answer from the replica's node with the log
  position and the executed sequence number, and is closed (the front's read channel:
  docs/design.md §11); one whose hello is ``put`` proves it is the front (one of its
  client identities) and sends one frame, a payload the front hands for an envelope it
  orders next, kept in the replica's payload file (bounded in bytes) before the answer
  (cluster/payloads.py);
* **repair**: one whose hello is ``fetch`` proves it is another replica and asks for a
  payload it executed without (``fetch_answer``); this replica asks its peers the same
  for what it lacks (``_repairer``, driven by the sans-IO ``Repair``) and keeps only an
  answer that hashes to the ordered command's digest;
* **Byzantine** (the fault tests): a ``Wrapper`` in place of the store wraps the replica
  (without a store: a Byzantine replica may forget anything).  The product knows no
  attack: ``python -m ostrom.harness.byzantine_node`` passes one of the harness's
  strategies (harness/byzantine.py) to ``run_node``;
* **stop**: SIGTERM or SIGINT closes the server and the store and exits 0.  A failed
  store write stops the process with exit code 3 (fail-stop: its memory is ahead of its
  store; a restart rebuilds it from the store).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

from ostrom.cluster.app import ClusterApp, ReplicaStoreFailure, replica_node
from ostrom.cluster.config import ClusterConfig, ConfigError, load
from ostrom.cluster.keys import KeyFileError, load_ring, load_signer
from ostrom.cluster.links import Link
from ostrom.cluster.payloads import (
    PayloadError,
    PayloadFull,
    PayloadStore,
    Repair,
    Wanted,
    check_put,
    fetch_answer,
)
from ostrom.cluster.wire import (
    ACK_MAGIC,
    FETCH,
    HELLO_TIMEOUT_S,
    MAX_FETCH,
    MAX_FRAME,
    MAX_READ,
    PUBLIC,
    PUT,
    READ,
    STATUS,
    FrameDecoder,
    FrameError,
    ack_frame,
    authenticate,
    frame,
    hello,
    parse_ack,
    parse_hello,
    prove,
    read_frames,
    read_one,
)
from ostrom.consensus.congestion import (
    ACK_MEMORY_TIMEOUTS,
    RESEND_PERIOD_DIVISOR,
    RETRANSMIT_BACKOFF_CAP,
    RETRANSMIT_PERIOD_DIVISOR,
    Retransmitter,
    holds,
    resend_interval,
    view_change_timeout,
)
from ostrom.consensus.messages import (
    Commit,
    Malformed,
    Prepare,
    PrePrepare,
    Signed,
    decode,
    replica_name,
)
from ostrom.consensus.replica import BROADCAST, RETRY_LATER, Output, Replica
from ostrom.consensus.storage import DurableReplica, FileLocation, StoreError, StoreMissing
from ostrom.protocol.lifecycle import FORGOTTEN
from ostrom.service.reads import Read, ReadError
from ostrom.service.store import StoreError as NodeStoreError

__all__ = ["Node", "Wrapper", "main", "run_node"]

#: How often the timers are looked at (milliseconds).
_TICK_MS: Final = 10
#: Messages refused for now kept for another try (the oldest dropped beyond).
_DEFER_MAX: Final = 2048
_EXIT_STORE: Final = 3
#: How often the repair looks for payloads to fetch (seconds) ...
_REPAIR_TICK_S: Final = 0.05
#: ... with at most this many fetches in flight ...
_REPAIR_FETCHES: Final = 4
#: ... each given this long to connect, prove and answer (seconds).
_FETCH_TIMEOUT_S: Final = 2.0


class Wrapper(Protocol):
    """What may stand between the I/O and a replica instead of its store: a Byzantine
    strategy of the test harness (``ostrom.harness.byzantine.Strategy``)."""

    name: str

    def attach(self, replica: Replica, rng: random.Random, n: int) -> None: ...

    def on_message(self, payload: object) -> Output: ...

    def on_timeout(self) -> Output: ...

    def retransmit(self) -> Output: ...


class Node:
    """A replica (durable, or wrapped in a ``Wrapper``) and its I/O."""

    def __init__(self, cfg: ClusterConfig, replica_id: int, wrapper: Wrapper | None = None) -> None:
        self.cfg = cfg
        self.me = cfg.replica(replica_id)
        self.name = replica_name(replica_id)
        ring = load_ring(cfg.keys)
        signer = load_signer(cfg.keys, self.name)
        self.ring, self.signer = ring, signer
        try:
            payloads = PayloadStore(
                self.me.payload_db, synchronous=cfg.synchronous, max_bytes=cfg.payload_bytes
            )
        except sqlite3.Error as exc:
            raise ConfigError(f"{self.me.payload_db}: not a payload file: {exc}") from None
        node = replica_node(cfg, replica_id)
        self.content_limit = node.gate.params.content_limit
        self.embedding_dim = node.gate.params.embedding_dim
        peers = [rc.name for rc in cfg.replicas if rc.id != replica_id]
        repair = Repair(peers, self.content_limit, self.embedding_dim)
        self.app = ClusterApp(node, payloads, repair)

        def new_replica() -> Replica:
            return Replica(
                replica_id,
                cfg.n,
                cfg.f,
                ring,
                signer,
                app=self.app,
                checkpoint_k=cfg.checkpoint_k,
                watermark_window=cfg.watermark_window,
                base_timeout=cfg.base_timeout_ms,
                max_message=cfg.max_frame_bytes,
            )

        self.replica = new_replica()
        self.byzantine = wrapper.name if wrapper is not None else None
        self.durable: DurableReplica | None = None
        self.node: DurableReplica | Wrapper
        self.recovered = False
        if wrapper is not None:
            wrapper.attach(self.replica, random.Random(replica_id), cfg.n)
            self.node = wrapper
        else:
            location = FileLocation(self.me.db, synchronous=cfg.synchronous)
            try:
                self.durable = DurableReplica.recover(self.replica, location)
                self.recovered = True
            except StoreMissing:
                # a fresh replica needs a fresh Replica object: recover may have touched it
                self.replica = new_replica()
                self.durable = DurableReplica.create(self.replica, location)
            self.node = self.durable
        self.links: dict[str, Link] = {}
        self.peers = tuple(rc.name for rc in cfg.replicas if rc.id != replica_id)
        self.stats: Counter[str] = Counter()
        self.stopping = asyncio.Event()
        self.exit_code = 0
        # congestion control (BFT-LIVE-1): an honest replica's retransmission state; a
        # Byzantine one's is its strategy's (it acknowledges nothing and tracks nothing)
        t = cfg.base_timeout_ms
        period = max(1, t // RETRANSMIT_PERIOD_DIVISOR)
        self.transport: Retransmitter | None = (
            None
            if wrapper is not None
            else Retransmitter(
                initial=period,
                at_least=period * RETRANSMIT_BACKOFF_CAP,
                memory=ACK_MEMORY_TIMEOUTS * t,
                heartbeat=t,
            )
        )
        self._vc_deadline: int | None = None
        self._vc_armed = 0
        self._vc_progress = -1
        self._resend_at = 0
        self._resend_interval = 0
        self._resend_progress = -1
        self.started = time.monotonic()
        #: frames refused for now, with the peer they came from (None: the front)
        self.deferred: list[tuple[bytes, str | None]] = []
        #: the held output of a group of messages (deliver_all), None outside one
        self._held: Output | None = None
        self._deferred_at: tuple[int, int, bool, int] | None = None

    # --- the replica's outputs ------------------------------------------------------------

    def now(self) -> int:
        """The replica's tick: milliseconds since the process started."""
        return int((time.monotonic() - self.started) * 1000)

    def route(self, out: Output, *, periodic: bool = False) -> None:
        """``out``'s sends on the links; to a peer, as the ``Retransmitter`` decides
        (a ``periodic`` copy of what the peer acknowledged, covers or still gets on its
        own timer is skipped)."""
        loop = asyncio.get_running_loop()
        now = self.now()
        peers = frozenset(self.peers)
        for s in out.sends:
            payload = s.payload if isinstance(s.payload, bytes) else s.payload.encoded
            if s.dest == BROADCAST:
                dests: Iterable[str] = [p for p in self.links if p != "front"]
            elif s.dest in self.links:
                dests = [s.dest]
            else:
                dests = ["front"]  # a client's reply: every client lives at the front
            for d in dests:
                link = self.links[d]
                if (
                    self.transport is not None
                    and d in peers
                    and not self.transport.offer(
                        d, s.payload, payload, now + s.delay, periodic=periodic
                    )
                ):
                    continue
                if s.delay > 0:
                    loop.call_later(s.delay / 1000, link.send, payload)
                else:
                    link.send(payload)

    def step(self, kind: str, payload: bytes | None = None) -> None:
        """One entry point of the replica, its output routed, the timers re-armed.  Inside
        ``group`` a message's output is held (not routed) until the group's one commit."""
        if self.stopping.is_set():
            return
        try:
            if kind == "message" and self._held is not None and self.durable is not None:
                self._held.extend(self.durable.on_message_held(payload))
                self.stats[kind] += 1
                return
            if kind == "message":
                out = self.node.on_message(payload)
            elif kind == "timeout":
                out = self.node.on_timeout()
            else:
                out = self.node.retransmit()
        except (StoreError, ReplicaStoreFailure) as exc:
            print(f"{self.name}: store failure, stopping: {exc}", file=sys.stderr, flush=True)
            self.exit_code = _EXIT_STORE
            self.stopping.set()
            return
        self.stats[kind] += 1
        self.route(out, periodic=kind == "retransmit")

    def deliver_all(self, frames: list[bytes], peer: str | None = None) -> None:
        """The frames of one read, delivered with one commit (group commit): the durable
        state of all their steps is written in one transaction (one fsync with
        ``synchronous=FULL``) before anything they send is released (BFT-SAFE-1 holds:
        a crash before the commit loses the frames' effects and their sends together, as
        if the frames had been lost on the way)."""
        if self.durable is None or len(frames) == 1:
            for data in frames:
                self.deliver(data, peer)
            return
        self._held = Output()
        try:
            for data in frames:
                self.deliver(data, peer)
        finally:
            held, self._held = self._held, None
        if self.stopping.is_set():
            return
        try:
            out = self.durable.release(held)
        except StoreError as exc:
            print(f"{self.name}: store failure, stopping: {exc}", file=sys.stderr, flush=True)
            self.exit_code = _EXIT_STORE
            self.stopping.set()
            return
        self.stats["group_commits"] += 1
        self.route(out)

    def deliver(self, data: bytes, peer: str | None = None) -> None:
        """A frame from the network (from replica ``peer``, or None: the front).  An
        acknowledgement from a peer goes to the ``Retransmitter``; a message is stepped,
        and acknowledged to the peer that sent it unless it was refused *for now* (above
        the window, of a future view, rate limited, or of the view being entered:
        ``RETRY_LATER``).  Such a message is kept and offered again when the replica's
        position changes (and acknowledged then): the receiver-side half of the
        retransmission (BFT-LIVE-1).  Without it a backup whose stable checkpoint trails
        the primary's refuses the next PRE-PREPAREs for good and waits for the next
        checkpoint to catch up."""
        if peer is not None and data.startswith(ACK_MAGIC):
            self.acknowledgement(peer, data)
            return
        before, view, active = self._refusals(), self.replica.view, self.replica.active
        self.step("message", data)
        if self._not_yet(data, before, view, active):
            self.deferred.append((data, peer))
            if len(self.deferred) > _DEFER_MAX:
                del self.deferred[0]
                self.stats["deferred_dropped"] += 1
        elif self.transport is not None and peer is not None:
            self.transport.received(peer, data, self.now())
        self._redeliver()

    def acknowledgement(self, peer: str, data: bytes) -> None:
        """Peer ``peer``'s acknowledgement frame (malformed ones dropped and counted)."""
        ack = parse_ack(data)
        if ack is None:
            self.stats["malformed_acks"] += 1
            return
        self.stats["acks"] += 1
        if self.transport is not None:
            t = self.transport
            t.acknowledged(peer, ack.keys, ack.executed, ack.stable, self.now(), ack.timeout)

    def _refusals(self) -> tuple[int, ...]:
        rej = self.replica.rejected
        return (*(rej[k] for k in RETRY_LATER), rej["stale_view"])

    def _not_yet(self, data: bytes, before: tuple[int, ...], view: int, active: bool) -> bool:
        """Was ``data`` refused only for now?  (``Simulation._not_yet``'s rule: above the
        window, a future view, rate limited, or a normal-case message of the view the
        replica is changing to.)"""
        now = self._refusals()
        window, future, limited, stale = (now[k] - before[k] for k in range(4))
        if future or limited:
            return True
        if not (window or (stale and not active)):
            return False
        try:
            m = decode(data).message
        except Malformed:
            return False
        if window:
            seq = getattr(m, "seq", None)
            return isinstance(seq, int) and seq > self.replica.stable_seq
        return isinstance(m, PrePrepare | Prepare | Commit) and m.view == view

    def _position(self) -> tuple[int, int, bool, int]:
        r = self.replica
        return (r.progress, r.view, r.active, r.stable_seq)

    def _redeliver(self) -> None:
        pos = self._position()
        while self.deferred and pos != self._deferred_at:
            self._deferred_at = pos
            frames, self.deferred = self.deferred, []
            self.stats["redelivered"] += len(frames)
            for data, peer in frames:
                before, view, active = self._refusals(), self.replica.view, self.replica.active
                self.step("message", data)
                if self._not_yet(data, before, view, active):
                    self.deferred.append((data, peer))
                elif self.transport is not None and peer is not None:
                    self.transport.received(peer, data, self.now())
            pos = self._position()

    # --- timers ---------------------------------------------------------------------------

    def view_change_timeout(self) -> int:
        """The view-change timer (ms): the replica's own, and once the delay of its
        messages is measured at least ``VIEW_CHANGE_DELAYS`` observed timeouts, its own or
        the ``f+1``-th largest of its own and its peers' (``congestion.waited_timeout``,
        ``congestion.view_change_timeout``; as ``Simulation.view_change_timeout``)."""
        r = self.replica
        observed = None if self.transport is None else self.transport.waited(self.cfg.f)
        if observed is None:
            return r.timeout_duration()
        return view_change_timeout(r.timeout_duration(), r.consecutive_view_changes, observed)

    def tick(self) -> None:
        """The timers at the current tick: the view-change timer, the per-message
        retransmissions, the replica's own period, the acknowledgements owed."""
        r = self.replica
        now = self.now()
        if not r.waiting:
            self._vc_deadline = None
        elif self._vc_deadline is None or self._vc_progress != r.progress:
            self._vc_deadline = now + self.view_change_timeout()
            self._vc_armed, self._vc_progress = now, r.progress
        if self._vc_deadline is not None and now >= self._vc_deadline:
            end = self._vc_armed + self.view_change_timeout()
            if end > now:  # the delay observed since it started lengthened it
                self._vc_deadline = end
                self.stats["timer_lengthened"] += 1
            else:
                self._vc_deadline = None
                self.step("timeout")
        if self.transport is not None:
            for rec in self.transport.due(now, self._holds):
                self.links[rec.dst].send(rec.data)
        if now >= self._resend_at:
            base = max(self.view_change_timeout() // RESEND_PERIOD_DIVISOR, _TICK_MS)
            progressed = r.progress != self._resend_progress
            self._resend_interval = resend_interval(base, self._resend_interval, progressed)
            self._resend_progress = r.progress
            self._resend_at = now + self._resend_interval
            self.step("retransmit")
        if self.transport is not None:
            pos = (r.last_exec, r.stable_seq)
            timeout = self.transport.observed() or 0
            for peer, keys in self.transport.acks_due(now, *pos, self.peers):
                self.links[peer].send(ack_frame(keys, *pos, timeout))

    def _holds(self, dst: str, payload: Signed | bytes) -> bool:
        return holds(self.replica, dst, payload)

    async def _ticker(self) -> None:
        while not self.stopping.is_set():
            await asyncio.sleep(_TICK_MS / 1000)
            self.tick()
            self._redeliver()

    # --- connections ----------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        r = self.replica
        return {
            "replica": r.id,
            "name": self.name,
            "pid": os.getpid(),
            "byzantine": self.byzantine,
            "view": r.view,
            "active": r.active,
            "primary": r.primary(),
            "last_executed": r.last_exec,
            "stable_checkpoint": r.stable_seq,
            "app_digest": self.app.digest(),
            "recovered": self.recovered,
            "transactions": None if self.durable is None else self.durable.store.batch,
            "rejected": dict(sorted(r.rejected.items())),
            "payloads_wanted": 0 if self.app.repair is None else len(self.app.repair.wanted),
            "payload_bytes": None if self.app.payloads is None else self.app.payloads.bytes,
            "stats": dict(sorted(self.stats.items())),
            "uptime_s": round(time.monotonic() - self.started, 3),
        }

    def read(self, request: bytes) -> bytes:
        """The read channel: the answer to one read (service/reads.py) from this replica's
        executed state, with the log position it was read at and the PBFT sequence
        number executed (``executed``); ``{"error"}`` for a request that is not a read.
        Answered on the event loop between two messages, so from one executed state."""
        self.stats["reads"] += 1
        try:
            read = Read.from_json(json.loads(request.decode("utf-8")))
        except (UnicodeDecodeError, ValueError, RecursionError, ReadError) as exc:
            self.stats["bad_reads"] += 1
            return json.dumps({"error": str(exc)[:200]}).encode()
        try:
            ans = self.app.read(read)
        except (sqlite3.Error, NodeStoreError) as exc:
            return json.dumps({"error": f"the node database cannot be read: {exc}"}).encode()
        doc = {**ans.to_json(), "executed": self.replica.last_exec, "replica": self.name}
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    def put(self, request: bytes) -> bytes:
        """The payload channel (only the front, proved: ``_may_sign``): keep the payload
        the front hands for an envelope it is about to order (cluster/payloads.py),
        checked as the gate checks a payload and within the file's bound in bytes;
        ``{"ok": true}`` once it is committed, ``{"error"}`` for anything else."""
        self.stats["puts"] += 1
        try:
            doc = json.loads(request.decode("utf-8"))
            agent, seq, artifact, digest, payload = check_put(
                doc, self.content_limit, self.embedding_dim
            )
            assert self.app.payloads is not None
            self.app.payloads.put(agent, seq, artifact, digest, payload)
        except PayloadFull as exc:
            self.stats["full_puts"] += 1
            return json.dumps({"error": str(exc)[:200]}).encode()
        except (UnicodeDecodeError, ValueError, RecursionError, PayloadError) as exc:
            self.stats["bad_puts"] += 1
            return json.dumps({"error": str(exc)[:200]}).encode()
        except sqlite3.Error as exc:
            return json.dumps({"error": f"the payload file refused it: {exc}"}).encode()
        return b'{"ok":true}'

    def fetch(self, request: bytes) -> bytes:
        """The repair channel: a peer asks for a payload it lacks (cluster/payloads.py,
        ``fetch_answer``): never one of an artifact this replica executed the forget of."""
        self.stats["fetches"] += 1
        orch = self.app.node.gate.community.orchestrator

        def forgotten(x: str) -> bool:
            art = orch.public_artifact(x)
            return art is not None and art["state"] == FORGOTTEN

        assert self.app.payloads is not None
        try:
            doc = fetch_answer(
                json.loads(request.decode("utf-8")), self.app.payloads.get, forgotten
            )
        except (UnicodeDecodeError, ValueError, RecursionError, sqlite3.Error) as exc:
            doc = {"error": str(exc)[:200]}
        self.stats["fetches_served" if "payload" in doc else "fetches_refused"] += 1
        return json.dumps(doc, sort_keys=True, ensure_ascii=False).encode()

    # --- repair: payloads this replica executed without ---------------------------------

    async def _repairer(self) -> None:
        """Fetch what ``Repair`` wants, at most ``_REPAIR_FETCHES`` at a time, each from
        the peer it names; a peer's answer goes back to ``Repair`` (checked against the
        digest) and an accepted payload is kept (``ClusterApp.repaired``)."""
        repair = self.app.repair
        assert repair is not None
        flying: set[asyncio.Task[None]] = set()
        while not self.stopping.is_set():
            await asyncio.sleep(_REPAIR_TICK_S)
            for w, peer in repair.asks(time.monotonic(), _REPAIR_FETCHES - len(flying)):
                task = asyncio.get_running_loop().create_task(self._fetch_one(w, peer))
                flying.add(task)
                task.add_done_callback(flying.discard)
        for task in list(flying):
            task.cancel()

    async def _fetch_one(self, w: Wanted, peer: str) -> None:
        doc = await self._ask_peer(peer, json.dumps(w.request(), sort_keys=True).encode())
        repair = self.app.repair
        assert repair is not None
        payload = repair.answer(w, peer, doc, time.monotonic())
        if payload is not None and not self.stopping.is_set():
            if self.app.repaired(w, payload):
                self.stats["repaired"] += 1
            else:
                self.stats["repair_not_kept"] += 1
        elif payload is None:
            self.stats["repair_asks_failed"] += 1

    async def _ask_peer(self, peer: str, request: bytes) -> Any:
        """One fetch on ``peer``'s repair channel, proved as this replica; its answer as
        JSON, or None (unreachable, too slow, not proved, garbage)."""
        rc = next(r for r in self.cfg.replicas if r.name == peer)
        writer = None
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(rc.dial.host, rc.dial.port), _FETCH_TIMEOUT_S
            )
            writer.write(hello(FETCH))
            await prove(reader, writer, self.signer, FETCH, peer)
            writer.write(frame(request))
            await writer.drain()
            data = await asyncio.wait_for(read_one(reader), _FETCH_TIMEOUT_S)
            return None if data is None else json.loads(data.decode("utf-8"))
        except (OSError, TimeoutError, ConnectionError, FrameError, ValueError, RecursionError):
            return None
        finally:
            if writer is not None:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

    def _may_sign(self, peer: str) -> Callable[[str], bool]:
        """Who may prove a hello naming ``peer``: a replica itself; the front (it has
        no key of its own) one of its client identities (wire.py)."""
        if peer in ("front", PUT):  # only the front puts (issue 40, item 4)
            clients = frozenset(self.cfg.client_names)
            return lambda signer: signer in clients
        replicas = frozenset(rc.name for rc in self.cfg.replicas)
        if peer == FETCH:  # a peer replica repairing what it lacks
            others = replicas - {self.name}
            return lambda signer: signer in others
        return lambda signer: signer == peer and signer in replicas

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await asyncio.wait_for(read_one(reader, 256), HELLO_TIMEOUT_S)
            if first is None:
                return
            peer = parse_hello(first)
            if peer not in PUBLIC:
                try:
                    await authenticate(
                        reader, writer, peer, self.name, self.ring, self._may_sign(peer)
                    )
                except (FrameError, TimeoutError):
                    self.stats["unauthenticated_connections"] += 1
                    return
            if peer == STATUS:
                writer.write(frame(json.dumps(self.status(), sort_keys=True).encode()))
                await writer.drain()
                return
            if peer in (READ, PUT, FETCH):
                limit = {READ: MAX_READ, PUT: MAX_FRAME, FETCH: MAX_FETCH}[peer]
                request = await asyncio.wait_for(read_one(reader, limit), HELLO_TIMEOUT_S)
                if request is not None:
                    handle = {READ: self.read, PUT: self.put, FETCH: self.fetch}[peer]
                    writer.write(frame(handle(request)))
                    await writer.drain()
                return
            self.stats["connections"] += 1
            decoder = FrameDecoder(self.cfg.max_frame_bytes)
            while not self.stopping.is_set():
                frames = await read_frames(reader, decoder)
                if frames is None:
                    return
                self.deliver_all(frames, peer if peer in self.peers else None)
        except FrameError:
            self.stats["garbage_connections"] += 1  # closed: the stream is out of step
        except (TimeoutError, OSError, ConnectionError):
            self.stats["broken_connections"] += 1
        except asyncio.CancelledError:
            pass  # the process stops: the connection closes with it
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.stopping.set)
        for rc in self.cfg.replicas:
            if rc.id != self.me.id:
                self.links[rc.name] = Link(self.name, rc.name, rc.dial, self.signer)
        self.links["front"] = Link(self.name, "front", self.cfg.front, self.signer)
        if self.transport is not None:
            r = self.replica
            for peer in self.peers:  # the position this replica starts from
                self.transport.told(peer, self.now(), r.last_exec, r.stable_seq)
        server = await asyncio.start_server(
            self._serve, self.me.listen.host, self.me.listen.port, reuse_address=True
        )
        for link in self.links.values():
            link.start()
        ticker = loop.create_task(self._ticker())
        repairer = loop.create_task(self._repairer())
        print(
            f"{self.name}: listening on {self.me.listen.host}:{self.me.listen.port}"
            f" ({'recovered' if self.recovered else 'fresh'}, view {self.replica.view},"
            f" executed {self.replica.last_exec}"
            f"{', byzantine ' + self.byzantine if self.byzantine else ''})",
            flush=True,
        )
        try:
            await self.stopping.wait()
        finally:
            server.close()
            for task in (ticker, repairer):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
            for link in self.links.values():
                await link.close()
            if self.durable is not None:
                self.durable.close()
            self.app.node.close()
            if self.app.payloads is not None:
                self.app.payloads.close()
        return self.exit_code


def main(argv: list[str] | None = None) -> int:
    """``python -m ostrom.cluster.replica_process --cluster FILE --id I``: 0 on a clean
    stop, 2 for a bad configuration or store (one line on stderr), 3 after a failed write."""
    p = argparse.ArgumentParser(prog="ostrom node", description="Run one PBFT replica.")
    p.add_argument("--cluster", required=True, help="the cluster.toml")
    p.add_argument("--id", type=int, required=True, help="the replica id (0..n-1)")
    args = p.parse_args(argv)
    return run_node(args.cluster, args.id)


def run_node(cluster: str, replica_id: int, wrapper: Wrapper | None = None) -> int:
    """Run replica ``replica_id`` of the cluster configured in ``cluster`` until it is
    stopped; ``wrapper`` puts a Byzantine strategy around it.  The exit status (``main``)."""
    try:
        cfg = load(cluster)
        node = Node(cfg, replica_id, wrapper)
    except (ConfigError, KeyFileError, StoreError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(node.run())
    except OSError as exc:  # the port is taken, the address unknown
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
