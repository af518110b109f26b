"""A PBFT replica (Castro & Liskov, OSDI'99 / TOCS 2002), sans-IO and deterministic.

``Replica`` is a state machine: ``on_request``, ``on_message`` and ``on_timeout`` (and
``retransmit``) take an input and return an ``Output`` — the signed messages to send and
the requests executed — without touching a network, a clock or an entropy source.  The
cluster's replica process (``ostrom.cluster.replica_process``) puts sockets, timers and a
store around it; the test harness's simulated network and Byzantine wrappers
(``ostrom.harness``) drive the same object.

What is PBFT here, and what the seed paper's Algorithm 1 lacks (docs/design.md §6):

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

Each handler names its TLA+ action (``# spec/PBFT.tla: Name``); what PBFT.tla abstracts
(checkpoints, state transfer) is named in the code-level ``spec/PBFTReplica.tla``.
"""

from __future__ import annotations

import dataclasses
import unicodedata
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
#: Refusals that mean "not yet": the receiver may take the message later (above its
#: window, of a future view, over its rate), so a sender or an I/O layer offers it again.
RETRY_LATER: Final = ("out_of_window", "future_view", "rate_limited")
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


class InvalidDurableState(ValueError):
    """A durable state this replica cannot have written (``Replica.restore_durable``)."""


class ReplayMismatch(InvalidDurableState):
    """Re-executing the durable history does not reproduce a checkpoint this replica
    signed: the application is not deterministic, or it was changed outside the log
    (REPL-1)."""


@dataclasses.dataclass(frozen=True)
class DurableState:
    """What a replica keeps across a crash: what it has promised, and what it derives
    from its promises (``Replica.durable_state``, ``Replica.restore_durable``).

    A replica that restarts must never contradict a message it sent before the crash
    (BFT-SAFE-1 counts on every honest replica keeping its word, crashed or not).  Each
    durable item is here because forgetting it allows one contradiction:

    * ``view``, ``active``: no message of a view below one it moved to, and no vote in a
      view it abandoned with a VIEW-CHANGE; ``new_view_msg`` (the NEW-VIEW of the last
      view it installed): it can still hand that view's proof to a replica waiting for it;
    * ``view_changes``: its *own* VIEW-CHANGEs by view, so that a retransmission repeats
      the same message, with the same certificates, rather than a second, different one;
    * ``pre_prepares``: the PRE-PREPAREs it *sent* (as primary) or *accepted* (and
      prepared, as a backup) — a backup refuses a second one for the same (view, seq);
      the late path's bodies for a view it has left are not promises and are volatile;
      ``next_seq`` and ``assigned``: a primary never assigns a sequence number twice,
      nor a request it has already assigned in this view (BFT-SAFE-1);
    * ``prepares``, ``commits``: its *own* PREPARE and COMMIT votes (and so the
      ``_voted`` index of its own votes), ``sent_commit``: no vote for another digest at a
      (view, seq) where it voted; ``prepared_certs``: its next VIEW-CHANGE carries every
      certificate it committed on (the NEW-VIEW's O keeps committed requests);
    * ``own_checkpoints``, ``checkpoints`` (its *own* CHECKPOINT votes), ``stable_*``:
      no second checkpoint digest for one sequence number, the low watermark (no vote
      below it), and the certified state it serves by state transfer;
    * ``history``: every executed request (seq i+1 at index i).  ``last_exec``, ``chain``,
      ``executed_log``, ``last_ts``, ``last_reply`` and the application state are rebuilt
      by executing it again on a fresh application (deterministic, REPL-1); so that the
      replies re-sign to the very same bytes, ``reply_views`` keeps the view each client's
      last reply was signed in (the only input of a reply not in the history; Ed25519
      signatures are deterministic);
    * ``prepared_log``, ``committed``, ``committed_local``: the monotone observations the
      property tests read; kept so that the safety lemmas do not fail spuriously after a
      restart.

    Volatile (lost at a crash, rebuilt from the network by retransmission and state
    transfer): others' votes, checkpoints and VIEW-CHANGEs, ``to_execute``, ``pending``
    and ``pending_per_client``, ``answered``, ``fetched``, the late path's PRE-PREPAREs,
    ``rejected``, ``progress``, and ``consecutive_view_changes`` (back to 0).  A TLA+
    spec of crash-restart mirrors exactly this split.
    """

    view: int
    active: bool
    new_view_msg: Signed | None
    view_changes: dict[int, Signed]
    pre_prepares: dict[tuple[int, int], Signed]
    next_seq: int
    assigned: frozenset[str]
    prepares: dict[Key3, Signed]
    commits: dict[Key3, Signed]
    sent_commit: dict[tuple[int, int], str]
    prepared_certs: dict[int, PreparedCert]
    own_checkpoints: dict[int, tuple[str, str]]
    checkpoints: dict[int, Signed]
    stable_seq: int
    stable_digest: str
    stable_app_digest: str | None
    stable_proof: tuple[Signed, ...]
    history: tuple[Signed | None, ...]
    reply_views: dict[str, int]
    prepared_log: frozenset[Key3]
    committed: dict[int, frozenset[str]]
    committed_local: frozenset[Key3]


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
        # The NEW-VIEW of the last view this replica installed.  Kept after it leaves
        # that view: a replica still waiting for it can only enter it with this message
        # (BFT-LIVE-1; retransmit and the answer to a late VIEW-CHANGE send it).
        self.new_view_msg: Signed | None = None
        # normal-case log (garbage collected below the stable checkpoint)
        self.pre_prepares: dict[tuple[int, int], Signed] = {}
        self.prepares: dict[Key3, dict[int, Signed]] = {}
        self.commits: dict[Key3, dict[int, Signed]] = {}
        self.sent_commit: dict[tuple[int, int], str] = {}
        # (kind, view, seq, sender) -> the digests it voted for (one, unless a mutant)
        self._voted: dict[tuple[str, int, int, int], set[str]] = {}
        self.prepared_certs: dict[int, PreparedCert] = {}  # seq -> highest-view certificate
        self.to_execute: dict[int, tuple[str, Signed | None]] = {}
        self.next_seq = 1
        self.pending: dict[str, Signed] = {}  # received, not yet executed (insertion order)
        self.pending_per_client: Counter[str] = Counter()
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
        # Replicas sent a FETCH-STATE this retransmission period: one each per period,
        # so a lost one is repeated and a lying sender cannot monopolise catching up.
        self.fetched: set[int] = set()
        # Peers answered this retransmission period (("fetch"|"new_view", replica)): one
        # STATE-TRANSFER and one NEW-VIEW per peer per period, whatever it sends.
        self.answered: set[tuple[str, int]] = set()
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
        try:
            authentic = self._authentic(payload)
        except (ValueError, TypeError, RecursionError):
            # an in-process envelope whose message has no canonical encoding (a lone
            # surrogate, a value JSON cannot carry): the wire decoder refuses the same
            self._reject("malformed")
            return self._take()
        if not authentic:
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
        harmless: receivers refuse and count them as ``replayed``.  A call also opens a
        new retransmission period: each peer may again get one STATE-TRANSFER and one
        NEW-VIEW from us, and a FETCH-STATE that was lost goes out again.
        """
        # spec/PBFTReplica.tla: Retransmit
        self.answered.clear()
        self.fetched.clear()
        out = self._out
        if not self.active:
            # our VIEW-CHANGE, and the signed ones we hold for this view and the one we
            # left: they let a replica that missed some reach the quorum that moved us
            for v in (self.view - 1, self.view):
                for _r, vc in sorted(self.view_changes.get(v, {}).items()):
                    out.sends.append(Send(BROADCAST, vc))
        if self.new_view_msg is not None:
            # BFT-LIVE-1: also after leaving its view.  A replica still waiting for this
            # NEW-VIEW (it was lost) cannot enter the view otherwise, and with fewer than
            # 2f+1 VIEW-CHANGEs of its own it has no timer running either (issue: the
            # view change that never completes).
            out.sends.append(Send(BROADCAST, self.new_view_msg))
        # BFT-LIVE-1: every PRE-PREPARE we accepted, not only our own, and our own votes,
        # of every view the log still holds (above the stable checkpoint, inside the
        # window), not only the current one.  A primary that leaves one backup out would
        # otherwise leave it without the request body while the others commit (the
        # relayed message keeps the primary's signature, so the relay cannot change
        # it); and a replica that committed in view v and moved on alone to v+1 would
        # withhold the commit a peer still in view v needs, a peer that lost its log in
        # a restart (found by TLC: models/MCPBFTReplicaSystem_faults.cfg).  Votes are
        # signed for their view, so re-sending an old one promises nothing new.
        for _k, pp in sorted(self.pre_prepares.items(), key=lambda kv: kv[0]):
            out.sends.append(Send(BROADCAST, pp))
        for log in (self.prepares, self.commits):
            for (_v, _s, _d), votes in sorted(log.items(), key=lambda kv: kv[0]):
                if self.id in votes:
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
        added = self._add_pending(signed)
        if self.active and self.is_primary:
            self._send_pre_prepare()
        elif self.active and added:
            self._out.sends.append(Send(replica_name(self.primary()), signed))

    def _add_pending(self, signed: Signed) -> bool:
        """Keep a client request until it executes (it drives the primary's ordering, the
        relay to the primary and the view-change timer).

        Only a *fresh* request is kept: one whose timestamp is above the last executed for
        its client.  An executed request brought back by a late PRE-PREPARE must not start
        the timer again (it caused view changes while idle).  At most ``window`` requests
        per client are kept (a PBFT client has one outstanding; more are counted as
        ``rate_limited``).  True if the request is new here.
        """
        m = signed.message
        if not isinstance(m, Request) or m.timestamp <= self.last_ts.get(m.client, 0):
            return False
        d = request_digest(signed)
        if d in self.pending:
            return False
        if self.pending_per_client[m.client] >= self.window:
            self._reject("rate_limited")
            return False
        self.pending[d] = signed
        self.pending_per_client[m.client] += 1
        return True

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
                # keep the body (late commits may decide it) in the pre-prepare log, where
                # it starts no timer, if the view is one this replica has left (not the
                # one it is changing to: that view's PRE-PREPAREs come again after its
                # NEW-VIEW); the request is pending only if it is fresh
                if pp.view < self.view:
                    self.pre_prepares.setdefault((pp.view, pp.seq), signed)
                if pp.request is not None:
                    self._add_pending(pp.request)
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
            self._add_pending(pp.request)
        if self.id != self.primary(pp.view):
            prep = Prepare(pp.view, pp.seq, pp.digest, self.id)
            key = (pp.view, pp.seq, pp.digest)
            self._own_vote("prepare", key, self.id, self._send(BROADCAST, prep))
        self._check_prepared(pp.view, pp.seq, pp.digest)

    def _on_prepare(self, signed: Signed, p: Prepare) -> None:
        # spec/PBFT.tla: Prepare  (a matching prepare from another backup)
        if p.replica == self.primary(p.view):
            self._reject("not_backup")
            return
        if not self._view_ok(p.view):
            return
        if self._record_vote("prepare", (p.view, p.seq, p.digest), p.replica, signed):
            self._check_prepared(p.view, p.seq, p.digest)

    def _record_vote(self, kind: str, key: Key3, replica: int, signed: Signed) -> bool:
        """Store a prepare or commit vote: inside the watermarks, one per replica (quorums
        count distinct senders, so a repeated vote is a replay)."""
        if not self._in_window(key[1]):
            self._reject("out_of_window")
            return False
        return self._store_vote(kind, key, replica, signed)

    def _votes(self, kind: str) -> dict[Key3, dict[int, Signed]]:
        return self.prepares if kind == "prepare" else self.commits

    def _store_vote(self, kind: str, key: Key3, replica: int, signed: Signed) -> bool:
        """One vote per (view, seq, sender): an honest replica votes for one digest per
        (view, seq), so a second digest is a Byzantine sender's, refused as
        ``conflicting`` and not stored (otherwise one sender could fill the log with
        votes for arbitrarily many digests)."""
        table = self._votes(kind)
        votes = table.get(key)
        if votes is not None and replica in votes:
            self._reject("replayed")
            return False
        view, seq, digest = key
        if any(d != digest for d in self._voted.get((kind, view, seq, replica), ())):
            self._reject("conflicting")
            return False
        self._own_vote(kind, key, replica, signed)
        return True

    def _own_vote(self, kind: str, key: Key3, replica: int, signed: Signed) -> None:
        """Store a vote without the checks (this replica's own, or a checked one)."""
        self._votes(kind).setdefault(key, {})[replica] = signed
        self._voted.setdefault((kind, key[0], key[1], replica), set()).add(key[2])

    def _pp_digest(self, view: int, seq: int) -> str | None:
        pp = self.pre_prepares.get((view, seq))
        if pp is None or not isinstance(pp.message, PrePrepare):
            return None
        return pp.message.digest

    def _check_prepared(self, view: int, seq: int, digest: str) -> None:
        """prepared(m, v, n, i): pre-prepare + ``q-1`` matching prepares from backups."""
        # spec/PBFT.tla: EagerCommits  (prepared, so send COMMIT)
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
        self._own_vote("commit", (view, seq, digest), self.id, self._send(BROADCAST, c))
        self._check_committed(view, seq, digest)

    # The two hooks below exist for the "prepares twice" mutant, which keeps every
    # pre-prepare it accepts; honest replicas keep one per (view, seq).
    def _extra_pre_prepared(self, view: int, seq: int, digest: str) -> bool:
        return False

    def _pre_prepare_for(self, view: int, seq: int, digest: str) -> Signed:
        return self.pre_prepares[(view, seq)]

    def _on_commit(self, signed: Signed, c: Commit) -> None:
        # spec/PBFT.tla: CommittedAt  (a matching commit)
        if self._late(c.view):
            self._on_late_commit(signed, c)
            return
        if not self._view_ok(c.view):
            return
        if self._record_vote("commit", (c.view, c.seq, c.digest), c.replica, signed):
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
        # spec/PBFT.tla: CommittedAt  (a committed certificate from an earlier view)
        if not self._in_window(c.seq) or c.seq <= self.last_exec:
            self._reject("stale_view")
            return
        if self._store_vote("commit", (c.view, c.seq, c.digest), c.replica, signed):
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
        # spec/PBFT.tla: OwnLog  (execution in sequence order)
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
                self.pending_per_client[client] -= 1

    # --- checkpoints and garbage collection ---------------------------------------------

    def _make_checkpoint(self, seq: int) -> None:
        # spec/PBFTReplica.tla: MakeCheckpoint  (send CHECKPOINT after executing a multiple of K)
        app_digest = self.app.digest()
        self.own_checkpoints[seq] = (self.chain, app_digest)
        ck = Checkpoint(seq, state_digest(self.chain, app_digest), self.id)
        signed = self._send(BROADCAST, ck)
        self._record_checkpoint(signed, ck)

    def _on_checkpoint(self, signed: Signed, ck: Checkpoint) -> None:
        # spec/PBFTReplica.tla: OnCheckpoint  (collect matching checkpoints; stable at q)
        if ck.seq <= self.stable_seq:
            self._reject("stale_view")
            return
        if ck.seq % self.checkpoint_k != 0:
            self._reject("invalid")
            return
        if ck.seq > self.stable_seq + self.window:
            self._reject("out_of_window")
            if ck.seq > self.last_exec:
                # far behind: ask the sender for its certified log (StateTransfer)
                self._fetch_from(ck.replica)
            return
        self._record_checkpoint(signed, ck)

    def _record_checkpoint(self, signed: Signed, ck: Checkpoint) -> None:
        votes = self.checkpoints.setdefault(ck.seq, {})
        old = votes.get(ck.replica)
        if old is not None:
            if old.message == ck:
                self._reject("replayed")
                return
            # BFT-LIVE-1: the sender signed two digests for one sequence number.  Its
            # first vote (a lie that arrived first) must not keep its genuine vote, relayed
            # in another replica's stable proof, from counting: the second vote replaces
            # the first when it completes a certificate, i.e. with q-1 matching votes of
            # others (q signatures then prove the checkpoint, whatever this sender also
            # signed).  Otherwise it is refused, and nothing is stored for it.
            others = sum(
                1
                for r, s in votes.items()
                if r != ck.replica
                and isinstance(s.message, Checkpoint)
                and s.message.state_digest == ck.state_digest
            )
            if others + 1 < self.q:
                self._reject("conflicting")
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
        # spec/PBFTReplica.tla: AdvanceStable  (stable checkpoint, garbage collection)
        self.stable_seq, self.stable_digest = seq, digest
        self.stable_proof = tuple(sorted(proof, key=lambda s: s.sender))
        own = self.own_checkpoints.get(seq)
        self.stable_app_digest = (
            own[1] if own is not None and state_digest(*own) == digest else None
        )
        self.pre_prepares = {k: v for k, v in self.pre_prepares.items() if k[1] > seq}
        self.prepares = {k: v for k, v in self.prepares.items() if k[1] > seq}
        self.commits = {k: v for k, v in self.commits.items() if k[1] > seq}
        self._voted = {k: v for k, v in self._voted.items() if k[2] > seq}
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
        # spec/PBFT.tla: LogsFrom; spec/PBFTReplica.tla: FetchTo  (state transfer)
        for s in self.stable_proof:
            m = s.message
            if isinstance(m, Checkpoint):
                self._fetch_from(m.replica)

    def _fetch_from(self, replica: int) -> None:
        """Ask ``replica`` for the certified log, at most once per retransmission period."""
        if replica != self.id and replica not in self.fetched:
            self.fetched.add(replica)
            self._send(replica_name(replica), FetchState(self.last_exec, self.id))

    def _on_fetch_state(self, m: FetchState) -> None:
        if (
            m.after_seq >= self.stable_seq
            or self.last_exec < self.stable_seq
            or self.stable_app_digest is None
        ):
            self._reject("stale_view")
            return
        if ("fetch", m.replica) in self.answered:
            # one STATE-TRANSFER per peer per retransmission period: a FETCH-STATE of a
            # few hundred bytes must not buy a reply of the whole log every time
            self._reject("rate_limited")
            return
        self.answered.add(("fetch", m.replica))
        reqs = tuple(self.history[m.after_seq : self.stable_seq])
        st = StateTransfer(m.after_seq, reqs, self.stable_app_digest, self.stable_proof, self.id)
        self._send(replica_name(m.replica), st)

    def _on_state_transfer(self, m: StateTransfer) -> None:
        # spec/PBFT.tla: LogsFrom; spec/PBFTReplica.tla: OnStateTransfer  (install it)
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
        if seq > self.stable_seq:
            self._advance_stable(seq, digest, m.checkpoint_proof)
        elif seq == self.stable_seq:
            # the stable checkpoint's application state is now ours to serve; an older
            # certified state (seq < stable_seq) is not the stable one, and serving its
            # digest as the stable state's would make every STATE-TRANSFER we send fail
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
            self._answer_late_view_change(vc)
            return
        votes = self.view_changes.get(vc.new_view, {})
        if vc.replica in votes:
            self._reject("replayed")
            return
        held = self._later_view_change(vc.replica)
        if vc.new_view > self.view and held is not None and held > vc.new_view:
            # one VIEW-CHANGE per sender for views above this replica's: its highest (an
            # honest replica's views only grow; far-future ones cannot fill the log)
            self._reject("superseded")
            return
        if not self._valid_view_change(vc):
            self._reject("bad_view_change")
            return
        if vc.new_view > self.view and held is not None:
            self._reject("superseded")  # the sender's lower one goes
            del self.view_changes[held][vc.replica]
            if not self.view_changes[held]:
                del self.view_changes[held]
        self.view_changes.setdefault(vc.new_view, {})[vc.replica] = signed
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

    def _later_view_change(self, replica: int) -> int | None:
        """The view of ``replica``'s VIEW-CHANGE held for a view above this replica's."""
        for v, ms in self.view_changes.items():
            if v > self.view and replica in ms:
                return v
        return None

    def _answer_late_view_change(self, vc: ViewChange) -> None:
        """A VIEW-CHANGE for a view this replica has installed (or left): its sender still
        waits for that view's NEW-VIEW, which may have been lost.  Send it the NEW-VIEW of
        the last view installed here if that view is at least the one the sender wants
        (BFT-LIVE-1; one per sender per retransmission period, and also while this replica
        is itself changing view, which is when the sender needs it most)."""
        nv = self.new_view_msg
        if nv is None or vc.replica == self.id or ("new_view", vc.replica) in self.answered:
            return
        m = nv.message
        if isinstance(m, NewView) and m.view >= vc.new_view:
            self.answered.add(("new_view", vc.replica))
            self._out.sends.append(Send(replica_name(vc.replica), nv))

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

    # --- durable state and recovery (additive: no handler calls these) ------------------

    def own_view_changes(self) -> dict[int, Signed]:
        """This replica's own VIEW-CHANGEs that it still holds, by view (durable)."""
        return {v: ms[self.id] for v, ms in self.view_changes.items() if self.id in ms}

    def durable_pre_prepares(self) -> dict[tuple[int, int], Signed]:
        """The PRE-PREPAREs this replica sent (signed by itself: it was the primary) or
        accepted (it holds its own PREPARE for it: ``_accept_pre_prepare`` sends one).

        Those are promises: a backup refuses a second one for the same (view, seq)
        (BFT-SAFE-1).  The bodies the late path keeps for a view this replica has left
        carry no vote of its own, so they are volatile.
        """
        me = self.signer.principal
        out: dict[tuple[int, int], Signed] = {}
        for (v, s), pp in self.pre_prepares.items():
            m = pp.message
            if pp.sender == me or (
                isinstance(m, PrePrepare) and self.id in self.prepares.get((v, s, m.digest), {})
            ):
                out[(v, s)] = pp
        return out

    def own_votes(self, kind: str) -> dict[Key3, Signed]:
        """This replica's own PREPAREs (``kind="prepare"``) or COMMITs (``"commit"``)."""
        return {k: votes[self.id] for k, votes in self._votes(kind).items() if self.id in votes}

    def own_checkpoint_votes(self) -> dict[int, Signed]:
        """This replica's own CHECKPOINT votes, by sequence number."""
        return {s: votes[self.id] for s, votes in self.checkpoints.items() if self.id in votes}

    def reply_views(self) -> dict[str, int]:
        """The view each client's last reply was signed in (see ``DurableState``)."""
        return {
            c: r.message.view for c, r in self.last_reply.items() if isinstance(r.message, Reply)
        }

    def durable_state(self) -> DurableState:
        """The durable projection of this replica, as a copy (see ``DurableState``)."""
        return DurableState(
            view=self.view,
            active=self.active,
            new_view_msg=self.new_view_msg,
            view_changes=self.own_view_changes(),
            pre_prepares=self.durable_pre_prepares(),
            next_seq=self.next_seq,
            assigned=frozenset(self.assigned),
            prepares=self.own_votes("prepare"),
            commits=self.own_votes("commit"),
            sent_commit=dict(self.sent_commit),
            prepared_certs=dict(self.prepared_certs),
            own_checkpoints=dict(self.own_checkpoints),
            checkpoints=self.own_checkpoint_votes(),
            stable_seq=self.stable_seq,
            stable_digest=self.stable_digest,
            stable_app_digest=self.stable_app_digest,
            stable_proof=self.stable_proof,
            history=tuple(self.history),
            reply_views=self.reply_views(),
            prepared_log=frozenset(self.prepared_log),
            committed={s: frozenset(ds) for s, ds in self.committed.items()},
            committed_local=frozenset(self.committed_local),
        )

    def restore_durable(self, state: DurableState) -> None:
        """Rebuild this freshly constructed replica (fresh application) from ``state``.

        Everything is checked before anything changes (``InvalidDurableState``): every
        signed message is authentic, and this replica's own where it must be; every
        certificate and checkpoint proof is valid; the promises agree with one another.
        The history is then executed again on the application: the checkpoints this
        replica signed must come out again (``ReplayMismatch``: discard the replica), and
        each client's last reply is re-signed in the view it was signed in, to the same
        bytes.  Volatile state stays as constructed (empty, ``consecutive_view_changes``
        0): it comes back from the network, by retransmission and state transfer.
        """
        self._check_durable(state)
        for i, req in enumerate(state.history):
            seq = i + 1
            self._execute_one(seq, request_digest(req), req, reply=False)
            own = state.own_checkpoints.get(seq)
            if own is not None and own != (self.chain, self.app.digest()):
                raise ReplayMismatch(
                    f"replica {self.id}: executing the history again does not reproduce "
                    f"its checkpoint at {seq} (REPL-1)"
                )
        for client, view in state.reply_views.items():
            last = self.last_reply.get(client)
            m = None if last is None else last.message
            if not isinstance(m, Reply):
                raise InvalidDurableState(f"replica {self.id}: a reply to {client} never sent")
            if m.view != view:
                self.last_reply[client] = self.signer.sign(dataclasses.replace(m, view=view))
        self.view, self.active = state.view, state.active
        self.new_view_msg = state.new_view_msg
        self.view_changes = {v: {self.id: s} for v, s in state.view_changes.items()}
        self.pre_prepares = dict(state.pre_prepares)
        self.next_seq = state.next_seq
        self.assigned = set(state.assigned)
        self.prepares = {k: {self.id: s} for k, s in state.prepares.items()}
        self.commits = {k: {self.id: s} for k, s in state.commits.items()}
        self._voted = {}
        for kind, table in (("prepare", state.prepares), ("commit", state.commits)):
            for v, s, d in table:
                self._voted.setdefault((kind, v, s, self.id), set()).add(d)
        self.sent_commit = dict(state.sent_commit)
        self.prepared_certs = dict(state.prepared_certs)
        self.own_checkpoints = dict(state.own_checkpoints)
        self.checkpoints = {s: {self.id: c} for s, c in state.checkpoints.items()}
        self.stable_seq, self.stable_digest = state.stable_seq, state.stable_digest
        self.stable_app_digest = state.stable_app_digest
        self.stable_proof = state.stable_proof
        self.prepared_log = set(state.prepared_log)
        self.committed = {s: set(ds) for s, ds in state.committed.items()}
        self.committed_local = set(state.committed_local)
        self.consecutive_view_changes = 0
        if self.durable_state() != state:
            raise InvalidDurableState(f"replica {self.id}: the state does not restore exactly")

    def _check_durable(self, st: DurableState) -> None:
        """``InvalidDurableState`` unless ``st`` is a state this replica could have kept."""
        if self.history or self.view or self.stable_seq or self.pre_prepares or self.view_changes:
            raise InvalidDurableState("restore_durable needs a freshly constructed replica")
        me = self.signer.principal

        def bad(what: str) -> InvalidDurableState:
            return InvalidDurableState(f"replica {self.id}: {what}")

        def authentic(s: Signed) -> bool:
            try:
                return self._authentic(s)
            except (ValueError, TypeError, RecursionError):
                return False

        def client_request(r: Signed | None) -> bool:
            return r is None or (isinstance(r.message, Request) and authentic(r))

        if st.view < 0 or st.next_seq < st.stable_seq + 1 or len(st.history) > 2**62:
            raise bad("counters out of range")
        # the low watermark and the certified state it serves
        if st.stable_seq == 0:
            if st.stable_proof or (st.stable_digest, st.stable_app_digest) != (
                self.stable_digest,
                self.stable_app_digest,
            ):
                raise bad("a stable checkpoint at 0 that is not the initial state")
        elif self._valid_checkpoint_proof(st.stable_proof) != (st.stable_seq, st.stable_digest):
            raise bad(f"stable checkpoint {st.stable_seq} without a valid proof")
        # the view: never a message of a view below it
        nv = st.new_view_msg
        if nv is not None:
            m = nv.message
            if not (
                isinstance(m, NewView)
                and authentic(nv)
                and m.replica == self.primary(m.view)
                and 0 < m.view <= st.view
                and all(isinstance(s.message, ViewChange) and authentic(s) for s in m.view_changes)
                and all(isinstance(s.message, PrePrepare) and authentic(s) for s in m.pre_prepares)
            ):
                raise bad("its NEW-VIEW is not a primary's, or of a later view")
        if st.active and st.view > 0:
            installed = None if nv is None else nv.message
            if not isinstance(installed, NewView) or installed.view != st.view:
                raise bad(f"active in view {st.view} without that view's NEW-VIEW")
        for v, s in st.view_changes.items():
            vc = s.message
            if not (
                isinstance(vc, ViewChange)
                and s.sender == me
                and authentic(s)
                and vc.new_view == v <= st.view
                and self._valid_view_change(vc)
            ):
                raise bad(f"the VIEW-CHANGE for view {v} is not its own valid one")
        # pre-prepares: one per (view, seq), never a sequence number twice (BFT-SAFE-1)
        for (v, seq), s in st.pre_prepares.items():
            pp = s.message
            if not (
                isinstance(pp, PrePrepare)
                and authentic(s)
                and (pp.view, pp.seq) == (v, seq)
                and pp.replica == self.primary(v)
                and pp.digest == request_digest(pp.request)
                and client_request(pp.request)
                and v <= st.view
                and seq > st.stable_seq
            ):
                raise bad(f"the PRE-PREPARE at {(v, seq)} is not a valid primary's")
            if s.sender != me and (v, seq, pp.digest) not in st.prepares:
                raise bad(f"the PRE-PREPARE at {(v, seq)} was neither sent nor prepared by it")
            if s.sender == me and v == st.view and seq >= st.next_seq:
                raise bad(f"next_seq {st.next_seq} is not above its PRE-PREPARE at {seq}")
        # its votes: one digest per (view, seq) (BFT-SAFE-1)
        for table, cls in ((st.prepares, Prepare), (st.commits, Commit)):
            for (v, seq, d), s in table.items():
                vote = s.message
                if not (
                    isinstance(vote, cls)
                    and isinstance(vote, Prepare | Commit)
                    and s.sender == me
                    and authentic(s)
                    and (vote.view, vote.seq, vote.digest) == (v, seq, d)
                    and v <= st.view
                    and seq > st.stable_seq
                ):
                    raise bad(f"the {cls.__name__} at {(v, seq)} is not its own")
        for (v, seq), d in st.sent_commit.items():
            if (v, seq, d) not in st.commits:
                raise bad(f"sent_commit at {(v, seq)} without its COMMIT")
        for seq, cert in st.prepared_certs.items():
            pp = cert.pre_prepare.message if isinstance(cert, PreparedCert) else None
            if not (
                isinstance(cert, PreparedCert)
                and isinstance(pp, PrePrepare)
                and pp.seq == seq
                and self._valid_cert(cert, st.view + 1, st.stable_seq) is not None
            ):
                raise bad(f"the prepared certificate for {seq} is not valid")
        # checkpoints: one digest per sequence number
        for seq in st.own_checkpoints:
            # (below stable_seq too: a state transfer to an older checkpoint than the stable
            # one, while this replica is behind, records the state it reached)
            if not 0 < seq <= len(st.history):
                raise bad(f"a checkpoint at {seq} outside what it executed")
        for seq, s in st.checkpoints.items():
            ck, own = s.message, st.own_checkpoints.get(seq)
            if not (
                isinstance(ck, Checkpoint)
                and s.sender == me
                and authentic(s)
                and ck.seq == seq > st.stable_seq
                and own is not None
                and ck.state_digest == state_digest(*own)
            ):
                raise bad(f"the CHECKPOINT at {seq} is not its own")
        # execution: only client requests (BFT-SAFE-2)
        for i, r in enumerate(st.history):
            if not client_request(r):
                raise bad(f"executed request {i + 1} is not a client's signed request")
        for client, view in st.reply_views.items():
            if not 0 <= view <= st.view:
                raise bad(f"the last reply to {client} is of a view it has not reached")


def _cert_view(cert: PreparedCert) -> int:
    pp = cert.pre_prepare.message
    assert isinstance(pp, PrePrepare)
    return pp.view


def _vc(signed: Signed) -> ViewChange:
    m = signed.message
    assert isinstance(m, ViewChange)
    return m


def _is_replica_name(name: str, n: int) -> bool:
    """``r`` then a decimal number below ``n`` (``r3``, also ``r03``): never a client's name.

    Digit by digit, not ``int(name[1:])``: a client's name is a principal's choice, and
    ``int`` raises on digits ``isdigit`` accepts (``r²``) and on more than 4300 of them,
    which made an authentic request raise out of the handlers that check it (inside a
    PRE-PREPARE, a prepared certificate, a STATE-TRANSFER).  ``isdecimal`` is exactly the
    set of digits ``int`` reads, so every name ``int`` could read is classified as before.
    """
    digits = name[1:]
    if not (name.startswith("r") and digits.isdecimal()):
        return False
    value = 0
    for c in digits:
        value = value * 10 + unicodedata.decimal(c)
        if value >= n:
            return False
    return True
