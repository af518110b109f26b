"""A PBFT replica (Castro & Liskov, OSDI'99 / TOCS 2002), sans-IO and deterministic.

``Replica`` is a state machine: ``on_request``, ``on_message`` and ``on_timeout`` (and
``retransmit``) take an input and return an ``Output`` — the signed messages to send and
the requests executed — without touching a network, a clock or an entropy source.  The
simulated network (``network.py``) and the Byzantine wrappers (``byzantine.py``) drive it;
a real deployment would put sockets and timers around the same object.

What is PBFT here, and what the seed paper's Algorithm 1 lacks (DESIGN §6):

* **normal case** — the primary of view ``v`` (replica ``v mod n``) assigns sequence
  numbers with PRE-PREPARE; *prepared* = the pre-prepare plus ``q-1`` matching PREPAREs
  from distinct backups (``2f`` when ``n = 3f+1``); *committed-local* = prepared plus
  ``q`` matching COMMITs; requests execute in sequence order, each exactly once per client
  timestamp, and the result goes back to the client;
* **checkpoints** every ``checkpoint_k`` executions, stable with ``q`` matching signed
  CHECKPOINTs; the message log below the stable checkpoint is garbage collected and the
  watermarks ``h < n <= h + watermark_window`` bound what is accepted;
* **view change** — on timeout a replica stops accepting messages of its view and sends
  VIEW-CHANGE with its stable-checkpoint proof and its prepared certificates; the new
  primary, with ``q`` of them, computes O (per sequence number the request of the
  highest-view certificate, else a null request) and sends NEW-VIEW; backups recompute O
  and refuse a NEW-VIEW that differs.  Timeouts double per consecutive view change;
* **authentication** — every message is Ed25519-signed (``crypto.py``); forged, tampered,
  replayed, out-of-window and stale-view messages are refused and counted in
  ``rejected`` by reason.

Quorum: ``q = ceil((n+f+1)/2)``, which is ``2f+1`` when ``n = 3f+1`` (BFT-QUORUM-1).

Two things a textbook omits are explicit here because a simulation with message loss
needs them: ``retransmit`` re-sends this replica's own signed messages of the current
view (PBFT assumes retransmission until delivery), and a replica behind a stable
checkpoint fetches the certified request log (``FetchState``/``StateTransfer``) and
replays it after checking its hash chain against the checkpoint digest.

Each handler names its TLA+ action (``# spec/PBFT.tla: Name``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Final, Protocol

from ostrom.consensus.crypto import KeyRing, Signer
from ostrom.consensus.messages import (
    NULL_DIGEST,
    AnyMessage,
    Checkpoint,
    Commit,
    FetchState,
    Malformed,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Reply,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    canonical,
    decode,
    replica_name,
    request_digest,
    sha256_hex,
)

BROADCAST: Final = "*"
GENESIS_CHAIN: Final = sha256_hex(b"ostrom-pbft-genesis")


def quorum(n: int, f: int) -> int:
    """``ceil((n+f+1)/2)``: any two quorums share ``f+1`` replicas (BFT-QUORUM-1)."""
    return (n + f + 2) // 2


def chain_step(chain: str, digest: str) -> str:
    """The hash chain of executed request digests (what a checkpoint certifies)."""
    return sha256_hex((chain + digest).encode())


def state_digest(chain: str, app_digest: str) -> str:
    return sha256_hex((chain + app_digest).encode())


class App(Protocol):
    """The deterministic service being replicated (here: the orchestrator)."""

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]: ...

    def digest(self) -> str: ...


class CounterApp:
    """A minimal deterministic service: counts operations and echoes them.

    Used by the protocol tests, where only the order matters; ``replicated.py`` puts the
    orchestrator in its place.
    """

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []
        self._digest = GENESIS_CHAIN

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]:
        self.applied.append(operation)
        self._digest = sha256_hex(self._digest.encode() + canonical(operation))
        return {"n": len(self.applied)}

    def digest(self) -> str:
        return self._digest


@dataclasses.dataclass(frozen=True)
class Send:
    """Send ``payload`` to ``dest`` (a principal name, or ``BROADCAST`` to every other
    replica).  ``delay`` is extra logical delay a (Byzantine) sender asks for."""

    dest: str
    payload: Signed | bytes
    delay: int = 0


@dataclasses.dataclass(frozen=True)
class Executed:
    """Sequence number ``seq`` was executed: ``request`` (None: null request) and the
    application's result (None: null, or a duplicate timestamp that was skipped)."""

    seq: int
    request: Signed | None
    result: dict[str, Any] | None


@dataclasses.dataclass
class Output:
    sends: list[Send] = dataclasses.field(default_factory=list)
    executed: list[Executed] = dataclasses.field(default_factory=list)

    def extend(self, other: Output) -> Output:
        self.sends.extend(other.sends)
        self.executed.extend(other.executed)
        return self


Key3 = tuple[int, int, str]  # (view, seq, digest)


def signer_matches(signed: Signed, n: int) -> bool:
    """The signer is who the message says it is: a request's client (not a replica name),
    a replica's message its replica ``r<i>`` with ``0 <= i < n``; a prepared certificate is
    never sent on its own.  The signature itself is checked separately."""
    m = signed.message
    if isinstance(m, Request):
        return signed.sender == m.client and not _is_replica_name(m.client, n)
    if isinstance(m, PreparedCert):
        return False
    return 0 <= m.replica < n and signed.sender == replica_name(m.replica)


class Replica:
    """One PBFT replica; see the module docstring for the protocol it runs."""

    def __init__(
        self,
        replica_id: int,
        n: int,
        f: int,
        keyring: KeyRing,
        signer: Signer,
        *,
        app: App | None = None,
        checkpoint_k: int = 16,
        watermark_window: int = 32,
        base_timeout: int = 1000,
    ) -> None:
        if n < 3 * f + 1:
            raise ValueError(f"n={n} < 3f+1 with f={f}")
        if not 0 <= replica_id < n:
            raise ValueError(f"replica id {replica_id} not in 0..{n - 1}")
        if signer.principal != replica_name(replica_id):
            raise ValueError("a replica signs only as itself")
        self.id = replica_id
        self.n, self.f, self.q = n, f, quorum(n, f)
        self.keyring = keyring
        self.signer = signer
        self.app: App = app if app is not None else CounterApp()
        self.checkpoint_k = checkpoint_k
        self.window = watermark_window
        self.base_timeout = base_timeout
        # view
        self.view = 0
        self.active = True  # False between StartViewChange and NewView
        self.consecutive_view_changes = 0
        self.view_changes: dict[int, dict[int, Signed]] = {}
        self.new_view_msg: Signed | None = None  # the NEW-VIEW that started self.view
        # normal-case log (garbage collected below the stable checkpoint)
        self.pre_prepares: dict[tuple[int, int], Signed] = {}
        self.prepares: dict[Key3, dict[int, Signed]] = {}
        self.commits: dict[Key3, dict[int, Signed]] = {}
        self.sent_commit: dict[tuple[int, int], str] = {}
        self.prepared_certs: dict[int, PreparedCert] = {}  # seq -> highest-view certificate
        self.to_execute: dict[int, tuple[str, Signed | None]] = {}
        self.next_seq = 1
        self.pending: dict[str, Signed] = {}  # received, not yet executed (insertion order)
        self.assigned: set[str] = set()  # digests pre-prepared in this view (primary)
        # execution
        self.last_exec = 0
        self.chain = GENESIS_CHAIN
        self.history: list[Signed | None] = []  # executed requests, seq i+1 at index i
        self.executed_log: list[tuple[int, str]] = []  # (seq, digest), BFT-SAFE-2
        self.last_ts: dict[str, int] = {}
        self.last_reply: dict[str, Signed] = {}
        # checkpoints
        self.stable_seq = 0
        self.stable_digest = state_digest(GENESIS_CHAIN, self.app.digest())
        self.stable_app_digest: str | None = self.app.digest()
        self.stable_proof: tuple[Signed, ...] = ()
        self.checkpoints: dict[int, dict[int, Signed]] = {}
        self.own_checkpoints: dict[int, tuple[str, str]] = {}  # seq -> (chain, app digest)
        self.fetching = False
        # observability (monotone: the property tests read them)
        self.prepared_log: set[Key3] = set()
        self.committed: dict[int, set[str]] = {}  # seq -> digests committed here
        self.committed_local: set[Key3] = set()
        self.rejected: Counter[str] = Counter()
        self.progress = 0  # bumps on execution and on entering a view (timer restart)
        self._out = Output()

    # --- helpers ------------------------------------------------------------------------

    def primary(self, view: int | None = None) -> int:
        return (self.view if view is None else view) % self.n

    @property
    def is_primary(self) -> bool:
        return self.primary() == self.id

    @property
    def waiting(self) -> bool:
        """True while the view-change timer should run.

        In an active view: while a request this replica knows of is not executed.  During
        a view change: only once ``q`` replicas want the new view (PBFT §4.5.2), so a
        replica that timed out alone waits for the others instead of running ahead into
        ever higher views that no quorum will join.
        """
        if not self.active:
            return len(self.view_changes.get(self.view, {})) >= self.q
        return bool(self.pending)

    def timeout_duration(self) -> int:
        """Exponential back-off: the timeout doubles per consecutive view change."""
        return self.base_timeout << min(self.consecutive_view_changes, 20)

    def prepared_threshold(self) -> int:
        """Matching prepares (besides the pre-prepare) for *prepared*: ``q-1``."""
        return self.q - 1

    def commit_threshold(self) -> int:
        """Matching commits for *committed-local*: ``q``."""
        return self.q

    def _verify(self, signed: Signed) -> bool:
        return self.keyring.verify(signed)

    def _in_window(self, seq: int) -> bool:
        return self.stable_seq < seq <= self.stable_seq + self.window

    def _reject(self, reason: str) -> None:
        self.rejected[reason] += 1

    def _send(self, dest: str, message: AnyMessage) -> Signed:
        signed = self.signer.sign(message)
        self._out.sends.append(Send(dest, signed))
        return signed

    def _take(self) -> Output:
        out, self._out = self._out, Output()
        return out

    def _authentic(self, signed: Signed) -> bool:
        """Signature valid and the signer is who the message says it is."""
        return self._verify(signed) and signer_matches(signed, self.n)

    # --- entry points -------------------------------------------------------------------

    def on_request(self, signed: Signed) -> Output:
        return self.on_message(signed)

    def on_message(self, payload: object) -> Output:
        """Handle one message from the network (bytes are decoded first)."""
        if isinstance(payload, bytes):
            try:
                payload = decode(payload)
            except Malformed:
                self._reject("malformed")
                return self._take()
        if not isinstance(payload, Signed):
            self._reject("malformed")
            return self._take()
        if not self._authentic(payload):
            self._reject("forged")
            return self._take()
        m = payload.message
        if isinstance(m, Request):
            self._on_request(payload, m)
        elif isinstance(m, PrePrepare):
            self._on_pre_prepare(payload, m)
        elif isinstance(m, Prepare):
            self._on_prepare(payload, m)
        elif isinstance(m, Commit):
            self._on_commit(payload, m)
        elif isinstance(m, Checkpoint):
            self._on_checkpoint(payload, m)
        elif isinstance(m, ViewChange):
            self._on_view_change(payload, m)
        elif isinstance(m, NewView):
            self._on_new_view(payload, m)
        elif isinstance(m, FetchState):
            self._on_fetch_state(m)
        elif isinstance(m, StateTransfer):
            self._on_state_transfer(m)
        else:
            self._reject("unexpected")
        return self._take()

    def on_timeout(self) -> Output:
        """The view-change timer expired."""
        # spec/PBFT.tla: Timeout
        if self.waiting:
            self._send_view_change(self.view + 1)
        return self._take()

    def retransmit(self) -> Output:
        """Re-send this replica's own signed messages that peers may have lost.

        PBFT's liveness assumes that messages are retransmitted until delivered; this is
        that retransmission, bounded to the current view and window.  Duplicates are
        harmless: receivers refuse and count them as ``replayed``.
        """
        out = self._out
        if not self.active:
            # our VIEW-CHANGE, and the signed ones we hold for this view and the one we
            # left: they let a replica that missed some reach the quorum that moved us
            for v in (self.view - 1, self.view):
                for _r, vc in sorted(self.view_changes.get(v, {}).items()):
                    out.sends.append(Send(BROADCAST, vc))
        elif self.new_view_msg is not None:
            out.sends.append(Send(BROADCAST, self.new_view_msg))
        for (v, _s), pp in sorted(self.pre_prepares.items(), key=lambda kv: kv[0]):
            if v == self.view and pp.sender == self.signer.principal:
                out.sends.append(Send(BROADCAST, pp))
        for log in (self.prepares, self.commits):
            for (v, _s, _d), votes in sorted(log.items(), key=lambda kv: kv[0]):
                if v == self.view and self.id in votes:
                    out.sends.append(Send(BROADCAST, votes[self.id]))
        for proof in self.stable_proof:
            out.sends.append(Send(BROADCAST, proof))
        for _seq, votes in sorted(self.checkpoints.items()):
            if self.id in votes:
                out.sends.append(Send(BROADCAST, votes[self.id]))
        if self.active and not self.is_primary:
            for req in self.pending.values():
                out.sends.append(Send(replica_name(self.primary()), req))
        if self.last_exec < self.stable_seq:
            self._fetch()
        return self._take()

    # --- normal case --------------------------------------------------------------------

    def _on_request(self, signed: Signed, req: Request) -> None:
        # spec/PBFT.tla: PrePrepare  (enabled by a sent request; backups relay it)
        if req.timestamp <= self.last_ts.get(req.client, 0):
            self._reject("replayed")
            last = self.last_reply.get(req.client)
            lm = None if last is None else last.message
            if last is not None and isinstance(lm, Reply) and lm.timestamp == req.timestamp:
                self._out.sends.append(Send(req.client, last))
            return
        d = request_digest(signed)
        known = d in self.pending
        self.pending.setdefault(d, signed)
        if self.active and self.is_primary:
            self._send_pre_prepare()
        elif self.active and not known:
            self._out.sends.append(Send(replica_name(self.primary()), signed))

    def _send_pre_prepare(self) -> None:
        """The primary pre-prepares pending requests, in arrival order, within the window."""
        # spec/PBFT.tla: PrePrepare
        for d, req in list(self.pending.items()):
            if d in self.assigned:
                continue
            if self.next_seq > self.stable_seq + self.window:
                return
            pp = PrePrepare(self.view, self.next_seq, d, req, self.id)
            self.next_seq += 1
            self.assigned.add(d)
            signed = self._send(BROADCAST, pp)
            self.pre_prepares[(pp.view, pp.seq)] = signed

    def _view_ok(self, view: int) -> bool:
        """Normal-case messages are accepted only in the current, active view."""
        if view < self.view:
            self._reject("stale_view")
            return False
        if view > self.view:
            self._reject("future_view")
            return False
        if not self.active:
            self._reject("stale_view")  # the view is being abandoned (StartViewChange)
            return False
        return True

    def _valid_request(self, pp: PrePrepare) -> bool:
        """The pre-prepare's digest is its request's, and the request is a client's."""
        if pp.digest != request_digest(pp.request):
            self._reject("tampered")
            return False
        if pp.request is not None and not (
            isinstance(pp.request.message, Request) and self._authentic(pp.request)
        ):
            self._reject("forged")
            return False
        return True

    def accepts_conflicting_pre_prepare(self) -> bool:
        """PBFT: a backup accepts at most one pre-prepare per (view, seq).  (Mutant hook.)"""
        return False

    def _on_pre_prepare(self, signed: Signed, pp: PrePrepare) -> None:
        # spec/PBFT.tla: Prepare  (a backup accepts a pre-prepare and prepares)
        if pp.replica != self.primary(pp.view):
            self._reject("not_primary")
            return
        if self._late(pp.view):
            self._reject("stale_view")
            if self._in_window(pp.seq) and pp.seq > self.last_exec and self._valid_request(pp):
                if pp.request is not None:  # keep the body: late commits may decide it
                    self.pending.setdefault(pp.digest, pp.request)
                for (v, s, d), votes in list(self.commits.items()):
                    if (s, d) == (pp.seq, pp.digest) and votes:
                        self._check_late_committed(v, s, d)
            return
        if not self._view_ok(pp.view):
            return
        if not self._in_window(pp.seq):
            self._reject("out_of_window")
            return
        if not self._valid_request(pp):
            return
        old = self.pre_prepares.get((pp.view, pp.seq))
        if old is not None:
            if old.message == pp:
                self._reject("replayed")
                return
            self._reject("conflicting")  # an equivocating primary
            if not self.accepts_conflicting_pre_prepare():
                return
        self._accept_pre_prepare(signed, pp)

    def _accept_pre_prepare(self, signed: Signed, pp: PrePrepare) -> None:
        self.pre_prepares[(pp.view, pp.seq)] = signed
        if pp.request is not None and pp.seq > self.last_exec:
            self.pending.setdefault(pp.digest, pp.request)
        if self.id != self.primary(pp.view):
            prep = Prepare(pp.view, pp.seq, pp.digest, self.id)
            self.prepares.setdefault((pp.view, pp.seq, pp.digest), {})[self.id] = self._send(
                BROADCAST, prep
            )
        self._check_prepared(pp.view, pp.seq, pp.digest)

    def _on_prepare(self, signed: Signed, p: Prepare) -> None:
        # spec/PBFT.tla: Prepare  (a matching prepare from another backup)
        if p.replica == self.primary(p.view):
            self._reject("not_backup")
            return
        if not self._view_ok(p.view):
            return
        if self._record_vote(self.prepares, (p.view, p.seq, p.digest), p.replica, signed):
            self._check_prepared(p.view, p.seq, p.digest)

    def _record_vote(
        self, table: dict[Key3, dict[int, Signed]], key: Key3, replica: int, signed: Signed
    ) -> bool:
        """Store a prepare or commit vote: inside the watermarks, one per replica (quorums
        count distinct senders, so a repeated vote is a replay)."""
        if not self._in_window(key[1]):
            self._reject("out_of_window")
            return False
        votes = table.setdefault(key, {})
        if replica in votes:
            self._reject("replayed")
            return False
        votes[replica] = signed
        return True

    def _pp_digest(self, view: int, seq: int) -> str | None:
        pp = self.pre_prepares.get((view, seq))
        if pp is None or not isinstance(pp.message, PrePrepare):
            return None
        return pp.message.digest

    def _check_prepared(self, view: int, seq: int, digest: str) -> None:
        """prepared(m, v, n, i): pre-prepare + ``q-1`` matching prepares from backups."""
        # spec/PBFT.tla: Commit  (EagerCommits in the spec: prepared, so send COMMIT)
        if self._pp_digest(view, seq) != digest and not self._extra_pre_prepared(view, seq, digest):
            return
        if self.sent_commit.get((view, seq)) == digest:
            return
        votes = self.prepares.get((view, seq, digest), {})
        backups = [r for r in votes if r != self.primary(view)]
        if len(backups) < self.prepared_threshold():
            return
        if (view, seq) in self.sent_commit and not self.accepts_conflicting_pre_prepare():
            return
        pp = self._pre_prepare_for(view, seq, digest)
        self.sent_commit[(view, seq)] = digest
        self.prepared_log.add((view, seq, digest))
        cert = PreparedCert(pp, tuple(votes[r] for r in sorted(backups)))
        old = self.prepared_certs.get(seq)
        if old is None or _cert_view(old) <= view:
            self.prepared_certs[seq] = cert
        c = Commit(view, seq, digest, self.id)
        self.commits.setdefault((view, seq, digest), {})[self.id] = self._send(BROADCAST, c)
        self._check_committed(view, seq, digest)

    # The two hooks below exist for the "prepares twice" mutant, which keeps every
    # pre-prepare it accepts; honest replicas keep one per (view, seq).
    def _extra_pre_prepared(self, view: int, seq: int, digest: str) -> bool:
        return False

    def _pre_prepare_for(self, view: int, seq: int, digest: str) -> Signed:
        return self.pre_prepares[(view, seq)]

    def _on_commit(self, signed: Signed, c: Commit) -> None:
        # spec/PBFT.tla: Commit  (a matching commit)
        if self._late(c.view):
            self._on_late_commit(signed, c)
            return
        if not self._view_ok(c.view):
            return
        if self._record_vote(self.commits, (c.view, c.seq, c.digest), c.replica, signed):
            self._check_committed(c.view, c.seq, c.digest)

    def _late(self, view: int) -> bool:
        """A message of a view this replica has left (or is leaving)."""
        return view < self.view or (view == self.view and not self.active)

    def _on_late_commit(self, signed: Signed, c: Commit) -> None:
        """Commits of a view this replica has left still prove a decision.

        ``q`` matching commits mean the request is *committed* (prepared at ``q-f``
        honest replicas), so the sequence number can never get another request: a
        replica that left the view early (its timer fired alone) may execute it without
        voting.  Without this, such a replica would wait for the next view change or
        checkpoint to learn a decision everyone else has taken.
        """
        # spec/PBFT.tla: Commit  (a committed certificate from an earlier view)
        if not self._in_window(c.seq) or c.seq <= self.last_exec:
            self._reject("stale_view")
            return
        votes = self.commits.setdefault((c.view, c.seq, c.digest), {})
        if c.replica in votes:
            self._reject("replayed")
            return
        votes[c.replica] = signed
        self._check_late_committed(c.view, c.seq, c.digest)

    def _check_late_committed(self, view: int, seq: int, digest: str) -> None:
        if seq <= self.last_exec or seq in self.to_execute:
            return
        if len(self.commits.get((view, seq, digest), {})) < self.commit_threshold():
            return
        body = self._body(view, seq, digest)
        if body is None and digest != NULL_DIGEST:
            return  # the request itself is still missing (a pre-prepare or the client)
        self.committed.setdefault(seq, set()).add(digest)
        self.committed_local.add((view, seq, digest))
        self.to_execute[seq] = (digest, body)
        self._execute()

    def _body(self, view: int, seq: int, digest: str) -> Signed | None:
        pp = self.pre_prepares.get((view, seq))
        m = None if pp is None else pp.message
        if isinstance(m, PrePrepare) and m.digest == digest:
            return m.request
        return self.pending.get(digest)

    def _check_committed(self, view: int, seq: int, digest: str) -> None:
        """committed-local(m, v, n, i): prepared + ``q`` matching commits."""
        if (view, seq, digest) not in self.prepared_log:
            return
        if len(self.commits.get((view, seq, digest), {})) < self.commit_threshold():
            return
        self.committed.setdefault(seq, set()).add(digest)
        self.committed_local.add((view, seq, digest))
        if seq > self.last_exec and seq not in self.to_execute:
            pp = self._pre_prepare_for(view, seq, digest)
            assert isinstance(pp.message, PrePrepare)
            self.to_execute[seq] = (digest, pp.message.request)
        self._execute()

    def _execute(self) -> None:
        """Execute committed requests strictly in sequence order."""
        # spec/PBFT.tla: Execute  (OwnLog in the spec)
        while self.last_exec + 1 in self.to_execute:
            seq = self.last_exec + 1
            digest, req = self.to_execute.pop(seq)
            result = self._execute_one(seq, digest, req, reply=True)
            self._out.executed.append(Executed(seq, req, result))
            if seq % self.checkpoint_k == 0:
                self._make_checkpoint(seq)
        if self.active and self.is_primary:
            self._send_pre_prepare()

    def _execute_one(
        self, seq: int, digest: str, req: Signed | None, *, reply: bool
    ) -> dict[str, Any] | None:
        result: dict[str, Any] | None = None
        if req is not None:
            m = req.message
            assert isinstance(m, Request)
            if m.timestamp > self.last_ts.get(m.client, 0):
                result = self.app.execute(m.operation)
                self.last_ts[m.client] = m.timestamp
                r = self.signer.sign(Reply(self.view, m.timestamp, m.client, self.id, result))
                self.last_reply[m.client] = r
                if reply:
                    self._out.sends.append(Send(m.client, r))
            self._drop_pending(m.client)
        self.history.append(req)
        self.executed_log.append((seq, digest))
        self.chain = chain_step(self.chain, digest)
        self.last_exec = seq
        self.progress += 1
        self.consecutive_view_changes = 0
        return result

    def _drop_pending(self, client: str) -> None:
        last = self.last_ts.get(client, 0)
        for d, r in list(self.pending.items()):
            m = r.message
            if isinstance(m, Request) and m.client == client and m.timestamp <= last:
                del self.pending[d]

    # --- checkpoints and garbage collection ---------------------------------------------

    def _make_checkpoint(self, seq: int) -> None:
        # spec/PBFT.tla: Checkpoint  (send CHECKPOINT after executing a multiple of K)
        app_digest = self.app.digest()
        self.own_checkpoints[seq] = (self.chain, app_digest)
        ck = Checkpoint(seq, state_digest(self.chain, app_digest), self.id)
        signed = self._send(BROADCAST, ck)
        self._record_checkpoint(signed, ck)

    def _on_checkpoint(self, signed: Signed, ck: Checkpoint) -> None:
        # spec/PBFT.tla: Checkpoint  (collect matching checkpoints; stable at q)
        if ck.seq <= self.stable_seq:
            self._reject("stale_view")
            return
        if ck.seq % self.checkpoint_k != 0:
            self._reject("invalid")
            return
        if ck.seq > self.stable_seq + self.window:
            self._reject("out_of_window")
            if ck.seq > self.last_exec and not self.fetching:
                # far behind: ask the sender for its certified log (StateTransfer)
                self._send(replica_name(ck.replica), FetchState(self.last_exec, self.id))
            return
        self._record_checkpoint(signed, ck)

    def _record_checkpoint(self, signed: Signed, ck: Checkpoint) -> None:
        votes = self.checkpoints.setdefault(ck.seq, {})
        if ck.replica in votes:
            self._reject("replayed")
            return
        votes[ck.replica] = signed
        matching = [
            s
            for s in votes.values()
            if isinstance(s.message, Checkpoint) and s.message.state_digest == ck.state_digest
        ]
        if len(matching) >= self.q and ck.seq > self.stable_seq:
            self._advance_stable(ck.seq, ck.state_digest, tuple(matching))

    def _valid_checkpoint_proof(self, proof: Sequence[Signed]) -> tuple[int, str] | None:
        """``q`` authentic CHECKPOINTs from distinct replicas for one (seq, digest)."""
        seen: set[int] = set()
        key: tuple[int, str] | None = None
        for s in proof:
            m = s.message
            if not isinstance(m, Checkpoint) or not self._authentic(s) or m.replica in seen:
                return None
            if key is not None and key != (m.seq, m.state_digest):
                return None
            key = (m.seq, m.state_digest)
            seen.add(m.replica)
        if key is None or len(seen) < self.q:
            return None
        return key

    def _advance_stable(self, seq: int, digest: str, proof: tuple[Signed, ...]) -> None:
        """A stable checkpoint: move the low watermark and garbage-collect the log."""
        # spec/PBFT.tla: Checkpoint  (stable checkpoint, garbage collection)
        self.stable_seq, self.stable_digest = seq, digest
        self.stable_proof = tuple(sorted(proof, key=lambda s: s.sender))
        own = self.own_checkpoints.get(seq)
        self.stable_app_digest = (
            own[1] if own is not None and state_digest(*own) == digest else None
        )
        self.pre_prepares = {k: v for k, v in self.pre_prepares.items() if k[1] > seq}
        self.prepares = {k: v for k, v in self.prepares.items() if k[1] > seq}
        self.commits = {k: v for k, v in self.commits.items() if k[1] > seq}
        self.sent_commit = {k: v for k, v in self.sent_commit.items() if k[1] > seq}
        self.prepared_certs = {s: c for s, c in self.prepared_certs.items() if s > seq}
        self.checkpoints = {s: c for s, c in self.checkpoints.items() if s > seq}
        self.own_checkpoints = {s: c for s, c in self.own_checkpoints.items() if s >= seq}
        self.next_seq = max(self.next_seq, seq + 1)
        if self.last_exec < seq:
            self.to_execute = {s: e for s, e in self.to_execute.items() if s > seq}
            self._fetch()
        elif self.active and self.is_primary:
            self._send_pre_prepare()

    def _fetch(self) -> None:
        # spec/PBFT.tla: CatchUp  (state transfer to a stable checkpoint)
        self.fetching = True
        for s in self.stable_proof:
            if s.sender != self.signer.principal:
                self._send(s.sender, FetchState(self.last_exec, self.id))

    def _on_fetch_state(self, m: FetchState) -> None:
        if (
            m.after_seq >= self.stable_seq
            or self.last_exec < self.stable_seq
            or self.stable_app_digest is None
        ):
            self._reject("stale_view")
            return
        reqs = tuple(self.history[m.after_seq : self.stable_seq])
        st = StateTransfer(m.after_seq, reqs, self.stable_app_digest, self.stable_proof, self.id)
        self._send(replica_name(m.replica), st)

    def _on_state_transfer(self, m: StateTransfer) -> None:
        # spec/PBFT.tla: CatchUp  (install a certified state)
        if m.after_seq != self.last_exec:
            self._reject("stale")  # an answer to an older FetchState, or to another replica's
            return
        key = self._valid_checkpoint_proof(m.checkpoint_proof)
        if key is None:
            self._reject("bad_state_transfer")
            return
        seq, digest = key
        if seq != m.after_seq + len(m.requests) or seq <= self.last_exec:
            self._reject("bad_state_transfer")
            return
        chain = self.chain
        for r in m.requests:
            if r is not None and not (isinstance(r.message, Request) and self._authentic(r)):
                self._reject("forged")
                return
            chain = chain_step(chain, request_digest(r))
        if state_digest(chain, m.app_digest) != digest:
            self._reject("tampered")
            return
        for i, r in enumerate(m.requests):
            s = m.after_seq + 1 + i
            d = request_digest(r)
            self.committed.setdefault(s, set()).add(d)
            result = self._execute_one(s, d, r, reply=False)
            self._out.executed.append(Executed(s, r, result))
        self.own_checkpoints[seq] = (self.chain, m.app_digest)
        self.fetching = False
        if seq > self.stable_seq:
            self._advance_stable(seq, digest, m.checkpoint_proof)
        else:
            self.stable_app_digest = m.app_digest
        self.to_execute = {s: e for s, e in self.to_execute.items() if s > self.last_exec}
        self._execute()

    # --- view change --------------------------------------------------------------------

    def _send_view_change(self, new_view: int) -> None:
        """Stop accepting messages of the current view; send VIEW-CHANGE for ``new_view``."""
        # spec/PBFT.tla: SendViewChange
        if new_view < self.view or (new_view == self.view and not self.active):
            return
        self.view, self.active = new_view, False
        self.new_view_msg = None
        self.consecutive_view_changes += 1
        self.progress += 1
        certs = tuple(c for s, c in sorted(self.prepared_certs.items()) if s > self.stable_seq)
        vc = ViewChange(new_view, self.stable_seq, self.stable_proof, certs, self.id)
        signed = self._send(BROADCAST, vc)
        self.view_changes.setdefault(new_view, {})[self.id] = signed
        self.view_changes = {v: m for v, m in self.view_changes.items() if v >= new_view - 1}
        self._send_new_view()

    def _valid_cert(self, cert: PreparedCert, new_view: int, low: int) -> PrePrepare | None:
        """A prepared certificate from a view before ``new_view`` above ``low``."""
        pps = cert.pre_prepare
        pp = pps.message
        if not isinstance(pp, PrePrepare) or not self._authentic(pps):
            return None
        if pp.replica != self.primary(pp.view) or pp.view >= new_view:
            return None
        if not low < pp.seq <= low + self.window:
            return None
        if pp.digest != request_digest(pp.request):
            return None
        if pp.request is not None and not (
            isinstance(pp.request.message, Request) and self._authentic(pp.request)
        ):
            return None
        voters: set[int] = set()
        for s in cert.prepares:
            p = s.message
            if not isinstance(p, Prepare) or not self._authentic(s):
                return None
            if (p.view, p.seq, p.digest) != (pp.view, pp.seq, pp.digest):
                return None
            if p.replica == pp.replica or p.replica in voters:
                return None
            voters.add(p.replica)
        if len(voters) < self.prepared_threshold():
            return None
        return pp

    def _valid_view_change(self, vc: ViewChange) -> bool:
        if vc.last_stable_seq == 0:
            if vc.checkpoint_proof:
                return False
        else:
            key = self._valid_checkpoint_proof(vc.checkpoint_proof)
            if key is None or key[0] != vc.last_stable_seq:
                return False
        seqs: set[int] = set()
        for cert in vc.prepared:
            pp = self._valid_cert(cert, vc.new_view, vc.last_stable_seq)
            if pp is None or pp.seq in seqs:
                return False
            seqs.add(pp.seq)
        return True

    def _on_view_change(self, signed: Signed, vc: ViewChange) -> None:
        # spec/PBFT.tla: JoinViewChange  (collect VIEW-CHANGEs; f+1 for later views: join)
        if vc.new_view < self.view or (vc.new_view == self.view and self.active):
            self._reject("stale_view")
            if self.active and self.new_view_msg is not None and vc.replica != self.id:
                # the sender lags behind: the signed NEW-VIEW lets it catch up
                self._out.sends.append(Send(replica_name(vc.replica), self.new_view_msg))
            return
        votes = self.view_changes.setdefault(vc.new_view, {})
        if vc.replica in votes:
            self._reject("replayed")
            return
        if not self._valid_view_change(vc):
            self._reject("bad_view_change")
            return
        votes[vc.replica] = signed
        if vc.last_stable_seq > self.stable_seq:
            key = self._valid_checkpoint_proof(vc.checkpoint_proof)
            assert key is not None
            self._advance_stable(key[0], key[1], vc.checkpoint_proof)
        # liveness: f+1 replicas want a later view -> join the smallest such view
        later: dict[int, int] = {}
        for v, ms in self.view_changes.items():
            if v > self.view:
                for r in ms:
                    later[r] = min(later.get(r, v), v)
        if len(later) >= self.f + 1:
            self._send_view_change(min(later.values()))
        self._send_new_view()

    def compute_o(self, vcs: Sequence[ViewChange], view: int) -> list[PrePrepare]:
        """O: for each seq in (min-s, max-s], the request of the highest-view prepared
        certificate in V, else a null request (PBFT §4.4)."""
        low = max(vc.last_stable_seq for vc in vcs)
        best: dict[int, PrePrepare] = {}
        for vc in vcs:
            for cert in vc.prepared:
                pp = cert.pre_prepare.message
                assert isinstance(pp, PrePrepare)
                if pp.seq <= low:
                    continue
                old = best.get(pp.seq)
                if old is None or (pp.view, pp.digest) > (old.view, old.digest):
                    best[pp.seq] = pp
        high = max(best, default=low)
        primary = self.primary(view)
        return [
            PrePrepare(view, s, best[s].digest, best[s].request, primary)
            if s in best
            else PrePrepare(view, s, NULL_DIGEST, None, primary)
            for s in range(low + 1, high + 1)
        ]

    def _send_new_view(self) -> None:
        # spec/PBFT.tla: SendNewView
        v = self.view
        if self.active or self.primary(v) != self.id:
            return
        votes = self.view_changes.get(v, {})
        if len(votes) < self.q:
            return
        chosen = tuple(votes[r] for r in sorted(votes))
        vcs = [_vc(s) for s in chosen]
        o = tuple(self.signer.sign(pp) for pp in self.compute_o(vcs, v))
        nv = self._send(BROADCAST, NewView(v, chosen, o, self.id))
        self._enter_view(nv, vcs, o)

    def _on_new_view(self, signed: Signed, nv: NewView) -> None:
        # spec/PBFT.tla: AcceptNewView  (O recomputed from V)
        if nv.replica != self.primary(nv.view):
            self._reject("not_primary")
            return
        if nv.view < self.view or (nv.view == self.view and self.active):
            self._reject("replayed" if signed == self.new_view_msg else "stale_view")
            return
        vcs: list[ViewChange] = []
        voters: set[int] = set()
        for s in nv.view_changes:
            vc = s.message
            if (
                not isinstance(vc, ViewChange)
                or not self._authentic(s)
                or vc.new_view != nv.view
                or vc.replica in voters
                or not self._valid_view_change(vc)
            ):
                self._reject("bad_new_view")
                return
            voters.add(vc.replica)
            vcs.append(vc)
        if len(voters) < self.q:
            self._reject("bad_new_view")
            return
        expected = self.compute_o(vcs, nv.view)
        got = [s.message for s in nv.pre_prepares]
        if got != expected or not all(
            self._authentic(s) and s.sender == replica_name(nv.replica) for s in nv.pre_prepares
        ):
            self._reject("bad_new_view")
            return
        self.view = nv.view
        self._enter_view(signed, vcs, nv.pre_prepares)

    def _enter_view(self, nv: Signed, vcs: Sequence[ViewChange], o: Iterable[Signed]) -> None:
        self.active = True
        self.new_view_msg = nv
        self.progress += 1
        self.assigned = set()
        self.view_changes = {v: m for v, m in self.view_changes.items() if v > self.view}
        low = max(vc.last_stable_seq for vc in vcs)
        if low > self.stable_seq:
            best = next(vc for vc in vcs if vc.last_stable_seq == low)
            key = self._valid_checkpoint_proof(best.checkpoint_proof)
            assert key is not None
            self._advance_stable(key[0], key[1], best.checkpoint_proof)
        high = low
        for s in o:
            pp = s.message
            assert isinstance(pp, PrePrepare)
            high = max(high, pp.seq)
            self.assigned.add(pp.digest)
            if pp.seq > self.stable_seq:
                self._accept_pre_prepare(s, pp)
        self.next_seq = max(high, self.stable_seq) + 1
        if self.is_primary:
            self._send_pre_prepare()
        else:
            for req in self.pending.values():
                self._out.sends.append(Send(replica_name(self.primary()), req))


def _cert_view(cert: PreparedCert) -> int:
    pp = cert.pre_prepare.message
    assert isinstance(pp, PrePrepare)
    return pp.view


def _vc(signed: Signed) -> ViewChange:
    m = signed.message
    assert isinstance(m, ViewChange)
    return m


def _is_replica_name(name: str, n: int) -> bool:
    return name.startswith("r") and name[1:].isdigit() and int(name[1:]) < n


def digest_of(obj: Any) -> str:
    """sha256 of the canonical encoding (state digests of JSON-able states)."""
    return hashlib.sha256(canonical(obj)).hexdigest()
