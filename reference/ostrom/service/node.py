"""One node: the gate, the durable log, and the order between them.

``Node.submit(envelope)`` is the whole write path, serialised by one lock (a single
writer, so the log's order *is* the order of application):

1. a retry — an (agent, seq) already in the log with the identical envelope — is
   answered from the log and not applied again (a client that timed out resends the same
   envelope: it cannot double-apply);
2. the gate admits or refuses (a refusal: a 4xx, nothing changed, nothing logged);
   a join from a key not yet registered that the Community refuses is a 4xx too
   (``join_refused``): it changed nothing, its name's seq included, so it is not logged
   (ADM-1);
3. the command is applied to the gate, and its envelope and observation are appended to
   the log in one SQLite transaction (with a snapshot when one is due, below);
4. only then the reply; waiting readers of ``/events`` are woken.

If the append fails (disk full, locked, I/O) the in-memory state is rebuilt from the
last snapshot and the envelopes durable since, so the state is exactly the log's and the
reply is 503 ``db_unavailable`` — nothing half-applied.  The core changes in place, so the
state before the command is not at hand and that rebuild replays everything since the
snapshot under the lock (issue 41, item 9: a second).  So the node rebuilds once and
then *degrades* (``Degraded``): every write is refused at once, 503 ``db_unavailable``
with ``Retry-After``, before the lock, the core or the file are touched, until a probe
(``Store.probe``: a transaction as large as the failed group's rows, committed and
synced, that changes nothing) commits.  The first probe is ``PROBE_FIRST_S`` after the
failure, each failed one doubles the wait up to ``PROBE_MAX_S``; the next write due
probes (under the lock, the others still refused at once), and so does the app's prober
(service/backend.py), so ``/health`` says when the disk is writable again even with no
write.  A probe that commits resumes writes; a failed append after it degrades again,
its wait still doubled (a committed append resets it), so a disk that takes probes and
refuses appends costs one rebuild per wait, never one per write.  The reads keep
answering from the published view, which a failed append never changed.

When a snapshot is due the row also carries one: the gate's whole state
(service/snapshot.py) and its public state.  One is due once ``snapshot_every`` commands
*and* ``snapshot_ratio`` times the latest snapshot's size in log bytes have been appended
since it (default 1; the policy of the Raft dissertation, §5.1.3): a snapshot costs time
in proportion to the state, which grows with the history, so with a fixed interval every
command's share of it would grow without bound; comparing with the previous snapshot's
size keeps that share constant, and a restart replays at most about
max(``snapshot_every``, ratio × the state's size) of log.  ``snapshot_ratio = 0`` is a
fixed interval (the tests use it to place snapshots exactly).  On open the node restores the latest
snapshot and replays the log after it; with ``verify`` it replays the *whole* log from
the header instead and checks every logged observation and every snapshot against the
replay (a snapshot that is not what the log produces is refused).

Reads do not take the lock (issue 41, item 9; docs/design.md §11).  Once a group's rows
are committed, the writer publishes a ``View``: the public state at the new log
position, never changed afterwards.  The reads of the public state (``/health``,
``/artifacts``, ``/artifacts/{id}``, ``/agents``, ``/agents/{id}``, ``/slots``) answer from
the latest view, one attribute read, so they never wait for a write in progress: not for
its fsync, nor for the replay after a failed append (the state the failure rolls back to
is the published one).  The view is built incrementally (``_next_view``): a command
changes only the artifacts its command and events name and the principal that signed
it; a change of the agents' registry rebuilds that part whole.

The reads that also read the file (``/log``, ``/slots/{slot}``, ``/search``,
``/artifacts/{id}/content``) do not take the lock either (``_reading``): each opens a
read transaction of SQLite (WAL: a snapshot of the committed file; the store's read
connections, one per thread, and the search connection), takes the log position that
snapshot holds, and answers from it and the view published for that very position
(the node keeps the last ``KEPT_VIEWS``).  Rows and view are of one committed group
boundary: never a half-applied command, never a group half seen, and READ-1 decided on
the same state the payloads are read from.  A search brings the search index to that
position first (the writer only queues its changes: service/store.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ostrom.protocol.agents import micro
from ostrom.protocol.commands import Observation, is_text, payload_of
from ostrom.protocol.lifecycle import ACTIVE, FORGOTTEN, SUPERSEDED
from ostrom.protocol.params import DEFAULTS, ParamError, Params
from ostrom.service.dense import FUSION_DEPTH, rrf
from ostrom.service.gate import (
    GATE_ERRORS,
    IDENTITY_COMMANDS,
    Admission,
    Gate,
    Setup,
    elided_result,
    payload_refusal,
)
from ostrom.service.identity import canonical, sign_envelope, without_payload
from ostrom.service.search import SearchQuery, eligible
from ostrom.service.snapshot import CodecError, older_format, restore, snapshot
from ostrom.service.store import DbUnavailable, Entry, Row, Store, StoreError, digest

__all__ = [
    "KEPT_VIEWS",
    "PROBE_FIRST_S",
    "PROBE_MAX_BYTES",
    "PROBE_MAX_S",
    "PROBE_MIN_BYTES",
    "REDACTED",
    "Degraded",
    "Node",
    "Operator",
    "Reply",
    "View",
    "error",
    "provenance",
    "public_command",
    "replay",
]

_log = logging.getLogger(__name__)

#: How many of the latest views the node keeps, for the reads whose snapshot of the file
#: began before the newest group was published (a read finds the view of its position).
KEPT_VIEWS: Final = 64
#: How long a read waits for the view of the position its snapshot holds (the writer
#: publishes it right after the commit; a longer wait means a writer that failed).
_VIEW_WAIT: Final = 10.0

#: Seconds from a failed append to the first probe of the disk (``Degraded``), and the
#: longest wait between two probes (each failed probe or append doubles the wait).
PROBE_FIRST_S: Final = 1.0
PROBE_MAX_S: Final = 30.0
#: Bytes a probe writes: the failed group's rows (``Row.stored_bytes``), at least the
#: first and at most the second bound.
PROBE_MIN_BYTES: Final = 64 * 1024
PROBE_MAX_BYTES: Final = 256 * 1024 * 1024

#: Fields of a reveal_vote that are the ballot's secret until its commit phase closes.
_SECRET_FIELDS: Final = ("vote", "reason", "salt")
#: Marker that replaces a redacted field in every public view.
REDACTED: Final = "(redacted)"


@dataclass(frozen=True)
class Reply:
    """What the HTTP layer sends: a status and a JSON body (and the seconds of its
    ``Retry-After`` header, if any)."""

    status: int
    body: dict[str, Any]
    retry_after: int | None = None


def error(code: str, detail: str) -> Reply:
    return Reply(GATE_ERRORS[code].status, {"error": code, "detail": detail})


def public_command(command: Any, result: str | None) -> Any:
    """The command as everything outside the database shows it (CR-1): the one
    redaction, applied by every output path — GET /log, GET /events, ``ostrom log
    export`` and the node's own error log (docs/security.md, "secrecy of votes").

    A reveal_vote that was *refused* (the commit phase still open, a wrong salt, a
    duplicate) keeps its vote, reason and salt out of every public view: published, an
    early reveal would expose a vote while others are still committing.  An accepted
    reveal happens only in the reveal phase, after the commit phase closed: public.
    ``result`` None (not known: the core raised on it) is treated as a refusal."""
    if isinstance(command, dict) and command.get("op") == "reveal_vote" and result != "ok":  # CR-1
        return {k: (REDACTED if k in _SECRET_FIELDS else v) for k, v in command.items()}
    return command


def _public_entry(e: Entry) -> dict[str, Any]:
    """A log row as GET /log and GET /events show it (no signature, secrets redacted)."""
    return {
        "pos": e.pos,
        "agent": e.agent,
        "seq": e.seq,
        "command": public_command(e.envelope.get("command"), e.result),
        "result": e.result,
        "events": e.observation.get("events", []),
    }


def _stripped(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope as the log keeps it: its command without the payload."""
    command = envelope.get("command")
    stripped = without_payload(command)
    return envelope if stripped is command else {**envelope, "command": stripped}


def _same(a: Any, b: Any) -> bool:
    """The same envelope, but for a payload (a retry with its content is a retry of the
    logged row, which has none; the payload is bound by the digest all the same)."""
    if isinstance(a, dict):
        a = _stripped(a)
    if isinstance(b, dict):
        b = _stripped(b)
    try:
        return canonical(a) == canonical(b)
    except (TypeError, ValueError, RecursionError):
        return False


def _same_logged(logged: dict[str, Any], envelope: Any) -> bool:
    """Whether ``envelope`` is the one ``logged`` is the row of: the same envelope, or
    for a row kept as its hash (ROW-1) one whose hash it is."""
    info = logged.get("elided")
    if not isinstance(info, dict) or not isinstance(envelope, dict):
        return _same(logged, envelope)
    try:
        return sha256(canonical(_stripped(envelope))).hexdigest() == info.get("sha256")
    except (TypeError, ValueError, RecursionError):
        return False


def _json(obj: Any) -> Any:
    """``obj`` as its JSON round trip (what the log holds)."""
    return json.loads(canonical(obj))


def _agent_seq(envelope: object) -> tuple[str, int] | None:
    """The envelope's (agent, seq) if both are well typed (the key of a retry)."""
    if not isinstance(envelope, dict):
        return None
    agent, seq = envelope.get("agent"), envelope.get("seq")
    if isinstance(agent, str) and isinstance(seq, int) and not isinstance(seq, bool):
        return agent, seq
    return None


@dataclass
class _Staged:
    """A command of a group, applied, its row not yet committed."""

    envelope: dict[str, Any]
    observation: Observation
    row: Row
    base: Any  # the snapshot's full state if the row carries one
    pos: int = 0  # set once committed

    def reply(self, retry: bool) -> Reply:
        obs = self.observation
        return Reply(
            200, {"pos": self.pos, "result": obs["result"], "events": obs["events"], "retry": retry}
        )


@dataclass(frozen=True)
class _Pending:
    """A place in a group's replies, filled once its rows are committed."""

    index: int
    retry: bool = False


@dataclass(frozen=True)
class View:
    """The public state after the first ``pos`` logged commands (``Gate.public_state``:
    now, artifacts, agents, principals), published whole by the writer once those
    commands are committed and never changed afterwards: a reader that holds it reads
    one state, whatever the writer does meanwhile (READ-1 is decided on it).  Read-only:
    successive views share their unchanged entries."""

    pos: int
    state: dict[str, Any]
    #: the registry the ``agents`` part was built from (an ``Agent`` is immutable and
    #: replaced on every change, so the same objects mean the same entries)
    registry: dict[str, Any]
    #: the answers of the reads that take no argument, body and encoded bytes, made by
    #: the first read of this view that needs them (service/reads.py): a read of the
    #: whole state is encoded once per write, not once per read
    answers: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: the position of the view this one was built from and the artifacts that changed
    #: since (None: built whole, on open): how the reads of the whole state bring their
    #: encoded answer from one view to the next in the changes alone (service/reads.py)
    after: int | None = field(default=None, compare=False, repr=False)
    changed: frozenset[str] = field(default=frozenset(), compare=False, repr=False)


@dataclass(frozen=True)
class Degraded:
    """Writes refused since a failed append (module docstring): the log position then,
    the error, when the next probe is due (the node's clock) and how many probes or
    appends have failed in a row (the wait doubles with each)."""

    pos: int
    error: str
    probe_at: float
    failures: int

    def to_json(self, now: float) -> dict[str, Any]:
        """What ``/health`` and ``/status`` say of it."""
        return {"since_pos": self.pos, "error": self.error, "retry_after": self.wait(now)}

    def wait(self, now: float) -> int:
        """The ``Retry-After`` seconds: until the next probe, at least 1."""
        return max(1, math.ceil(self.probe_at - now))


@dataclass
class Operator:
    """The node's own operator identity (for ``--tick-interval``)."""

    id: str
    key: Ed25519PrivateKey


@dataclass
class _Waiter:
    loop: asyncio.AbstractEventLoop
    event: asyncio.Event = field(default_factory=asyncio.Event)


class Node:
    """Gate + Store behind one lock.  Thread-safe; the event waits are asyncio."""

    def __init__(
        self,
        store: Store,
        gate: Gate,
        envelopes: list[dict[str, Any]],
        *,
        base: Any = None,
        snapshot_every: int = 1000,
        snapshot_ratio: float = 1.0,
        operator: Operator | None = None,
        clock: Callable[[], float] = time.monotonic,
        probe_first: float = PROBE_FIRST_S,
        probe_max: float = PROBE_MAX_S,
    ) -> None:
        self.store = store
        self.gate = gate
        self._envelopes = envelopes  # durable since the base snapshot (for a rollback)
        self._base = base  # the latest snapshot's full state (None: the header)
        self.snapshot_every = snapshot_every
        self.snapshot_ratio = snapshot_ratio
        self.operator = operator
        self._lock = threading.RLock()
        #: the degraded mode (module docstring): None while writes are accepted; read
        #: without the lock (one attribute), changed under it
        self.clock, self.probe_first, self.probe_max = clock, probe_first, probe_max
        self._degraded: Degraded | None = None
        self._failures = 0  # failed appends and probes since the last committed append
        self._size = PROBE_MIN_BYTES  # what the next probe writes
        self._probing = False
        #: counters (``/status``): rebuilds after a failure, writes refused while
        #: degraded, probes and failed probes
        self.counts = {"rebuilds": 0, "refused": 0, "probes": 0, "failed_probes": 0}
        #: the public state at the last committed position (``View``): what every read
        #: of the public state answers from, without the lock (issue 41, item 9: each
        #: read rebuilt the whole state under the lock, so reads stalled writes and a
        #: write in progress stalled every read)
        self._view = self._whole_view()
        #: the latest views by position (``_reading``), and who waits for the next one
        self._views: dict[int, View] = {self._view.pos: self._view}
        self._published = threading.Condition(threading.Lock())
        self._waiters: list[_Waiter] = []
        #: the search index's entry of each artifact READ-1 lets through: (its content
        #: id, 1 if without history, 1 if with); the store's ``search_index`` counts them
        self._indexed: dict[str, tuple[int, int, int]] = {}
        self._reindex()

    # --- opening ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        params: Params | None = None,
        setup: Setup | None = None,
        fsync: bool = True,
        verify: bool = False,
        snapshot_every: int = 1000,
        snapshot_ratio: float = 1.0,
        operator: Operator | None = None,
        busy_timeout: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        probe_first: float = PROBE_FIRST_S,
        probe_max: float = PROBE_MAX_S,
    ) -> Node:
        """Open (or create) the database at ``path`` and rebuild the state by replay.

        A new file is created with ``params`` and ``setup`` (defaults: the default
        parameters, no founders, a fresh community id).  An existing file keeps its own;
        passing different parameters, founders or operators is an error (``StoreError``),
        never a silent change of the rules.  The community id is the file's, made when it
        was created: ``setup``'s own is used only then (ENV-1)."""
        create = ((params or DEFAULTS).to_dict(), (setup or Setup()).to_json())
        store = Store.open(path, create=create, fsync=fsync, busy_timeout=busy_timeout)
        try:
            if params is not None and _stored_params(store) != _json(params.to_dict()):
                raise StoreError(f"{path}: the database was created with other parameters")
            if setup is not None and _but_community(store.setup) != _but_community(
                _json(setup.to_json())
            ):
                raise StoreError(f"{path}: the database was created with other founders")
            gate, base, envelopes = replay(store, verify=verify)
        except (sqlite3.Error, UnicodeDecodeError) as exc:  # e.g. a row no longer UTF-8
            store.close()
            raise StoreError(f"{path}: the log does not read back: {exc}") from None
        except BaseException:
            store.close()
            raise
        if operator is not None and gate.key_of(operator.id) is None:
            store.close()
            raise StoreError(f"operator {operator.id!r} is not an operator of this database")
        return cls(
            store,
            gate,
            envelopes,
            base=base,
            snapshot_every=snapshot_every,
            snapshot_ratio=snapshot_ratio,
            operator=operator,
            clock=clock,
            probe_first=probe_first,
            probe_max=probe_max,
        )

    def close(self) -> None:
        with self._lock:
            self.store.close()

    # --- writing ----------------------------------------------------------------------------

    def submit(self, envelope: object) -> Reply:
        """The write path (module docstring); never raises for any input."""
        return self.submit_many([envelope])[0]

    def submit_many(self, envelopes: Sequence[object]) -> list[Reply]:
        """``submit`` of each envelope in order, with one transaction for all their rows (a
        group commit: the HTTP layer passes the requests that arrived together, so they
        share one fsync).  Each reply is what ``submit`` one by one would have given —
        an envelope sent twice in the group is answered as a retry the second time —
        except that if the transaction fails *every* command of the group gets the 503
        and none is applied.  While degraded (module docstring) every command is refused
        at once, before the lock.  Never raises for any input."""
        refused = self._refusal()
        if refused is not None:  # the core, the lock and the file untouched
            return [refused] * len(envelopes)
        with self._lock:
            refused = self._probe_if_degraded()
            if refused is not None:
                return [refused] * len(envelopes)
            out: list[Reply | _Pending] = []
            staged: list[_Staged] = []
            by_key: dict[tuple[str, int], int] = {}  # (agent, seq) -> index in staged
            since_cmds = len(self._envelopes)
            snap_bytes, since_bytes = self.store.snapshot_bytes, self.store.bytes_since_snapshot
            for envelope in envelopes:
                key = _agent_seq(envelope)
                if key is not None and key in by_key:
                    k = by_key[key]
                    if _same_logged(staged[k].envelope, envelope):  # a retry within the group
                        out.append(_Pending(k, retry=True))
                        continue
                adm = self._decide(envelope)
                if isinstance(adm, Reply):
                    out.append(adm)
                    continue
                assert isinstance(envelope, dict)
                # the payload (checked by the gate) goes to its own table; the log, the
                # state and every replay see the command without it (docs/design.md §11)
                payload = payload_of(envelope["command"])
                envelope = _stripped(envelope)
                try:
                    obs = self.gate.apply_admitted(envelope, adm)
                except Exception as exc:  # the core promises never to raise: a bug
                    command = public_command(envelope.get("command"), None)  # CR-1
                    _log.exception("the core raised on %r", command)
                    self._rebuild([s.envelope for s in staged])  # undo it, keep the group's
                    out.append(error("internal_error", f"{type(exc).__name__}; nothing applied"))
                    continue
                untraced = self.gate.untraced(envelope, obs)  # ADM-1, ROW-1: changed nothing
                if untraced is not None:
                    what = "join" if untraced == "join_refused" else "oversized command"
                    detail = f"the Community refused the {what} ({obs['result']}); nothing logged"
                    out.append(error(untraced, detail))
                    continue
                envelope = self.gate.logged_form(envelope, obs)  # ROW-1: a bounded row
                snap = None
                if since_cmds + 1 >= self.snapshot_every and (
                    since_bytes >= self.snapshot_ratio * snap_bytes
                ):
                    try:
                        snap = _snapshot_row(self.gate)
                    except CodecError:  # a bug of the codec: log the command, no snapshot
                        _log.exception("no snapshot after the command of %r", key)
                try:
                    row = Row.of(envelope, obs, snap, payload, provenance(self.gate, obs))
                except (ValueError, TypeError) as exc:  # not canonically encodable
                    self._rebuild([s.envelope for s in staged])
                    out.append(error("db_unavailable", f"the command was not applied: {exc}"))
                    continue
                snap_bytes, since_bytes = row.sizes_after(snap_bytes, since_bytes)
                since_cmds = 0 if snap is not None else since_cmds + 1
                if key is not None:
                    by_key[key] = len(staged)
                out.append(_Pending(len(staged)))
                staged.append(_Staged(envelope, obs, row, None if snap is None else snap["full"]))
            if not staged:
                return [r for r in out if isinstance(r, Reply)]
            try:
                positions = self.store.append_rows([s.row for s in staged])
            except DbUnavailable as exc:
                self._rebuild()
                size = sum(s.row.stored_bytes for s in staged)
                wait = self._degrade(str(exc), size).wait(self.clock())
                failed = error("db_unavailable", f"the command was not applied: {exc}")
                failed = Reply(failed.status, failed.body, wait)
                return [failed if isinstance(r, _Pending) else r for r in out]
            self._failures = 0
            self._index(_named(staged))
            for s, pos in zip(staged, positions, strict=True):
                s.pos = pos
                if s.base is not None:
                    # the encoded state shares nothing mutable with the live one: no copy
                    self._base, self._envelopes = s.base, []
                else:
                    self._envelopes.append(s.envelope)
            # READ-1: the reads see the group once it is durable, all of it at once
            self._publish(self._next_view(self._view, staged))
            self._wake()
            return [staged[r.index].reply(r.retry) if isinstance(r, _Pending) else r for r in out]

    def _decide(self, envelope: object) -> Reply | Admission:
        """The reply that needs no application — a retry answered from the log, a refusal
        of the gate, an unreadable log — or the gate's admission of the envelope."""
        try:
            retry = self._retry(envelope)
        except (StoreError, DbUnavailable, OSError) as exc:
            return error("db_unavailable", f"cannot read the log: {exc}")
        if retry is not None:
            stale = self.gate.usable_retry(envelope)  # KEY-1, KEY-2: an old key's replay
            if stale is not None:
                return error(str(stale.code), stale.detail)
            # the logged row has no payload to compare: a retry's payload must still be
            # one the gate admits (it then is the logged digest's, by its hash)
            command = envelope.get("command") if isinstance(envelope, dict) else None
            if isinstance(command, dict):
                params = self.gate.params
                refusal = payload_refusal(command, params.content_limit, params.embedding_dim)
                if refusal is not None:
                    return error(*refusal)
            return retry
        adm = self.gate.admit(envelope)
        return adm if adm.ok else error(str(adm.code), adm.detail)

    def _retry(self, envelope: object) -> Reply | None:
        if not isinstance(envelope, dict):
            return None
        agent, seq = envelope.get("agent"), envelope.get("seq")
        if not isinstance(agent, str) or not is_text(agent):
            return None  # not an agent that could be in the log (lone surrogates too)
        if isinstance(seq, bool) or not isinstance(seq, int):
            return None
        if not 1 <= seq <= self.gate.last_seq(agent):
            return None  # past the agent's last logged seq: not in the log, no read needed
        try:
            prior = self.store.find(agent, seq)
        except Exception as exc:  # sqlite3.Error, an undecodable row: the read failed
            raise DbUnavailable(str(exc)) from None
        if prior is None or not _same_logged(prior.envelope, envelope):
            return None
        obs = prior.observation
        return Reply(
            200,
            {"pos": prior.pos, "result": obs["result"], "events": obs["events"], "retry": True},
        )

    # --- the degraded mode (module docstring) -------------------------------------------------

    def _refusal(self) -> Reply | None:
        """The reply to every write while degraded and no probe is due (or one is in
        progress); None: go on (to the probe, if degraded).  Without the lock."""
        d = self._degraded
        now = self.clock()
        if d is None or (now >= d.probe_at and not self._probing):
            return None
        return self._refused(d, now)

    def _refused(self, d: Degraded, now: float) -> Reply:
        self.counts["refused"] += 1
        wait = d.wait(now)
        detail = (
            f"writes are refused since a failed append at log position {d.pos} ({d.error}); "
            f"the node tries the disk again in {wait} s; nothing was applied"
        )
        return Reply(503, error("db_unavailable", detail).body, wait)

    def _degrade(self, err: str, size: int) -> Degraded:
        """Enter (or stay in) the degraded mode after a failed append or probe of ``size``
        bytes (what the next probe writes)."""
        self._failures += 1
        wait = min(self.probe_max, self.probe_first * 2 ** min(self._failures - 1, 60))
        d = Degraded(self.store.last_pos, err[:500], self.clock() + wait, self._failures)
        if self._degraded is None:
            _log.error("an append failed (%s): writes are refused until a probe commits", err)
        self._degraded, self._size = d, min(PROBE_MAX_BYTES, max(PROBE_MIN_BYTES, size))
        return d

    def _probe_if_degraded(self) -> Reply | None:
        """Under the lock: None if writes are accepted (not degraded, or a probe due now
        commits: writes resume), else the refusal."""
        d = self._degraded
        if d is None:
            return None
        now = self.clock()
        if now < d.probe_at:  # another thread's probe failed meanwhile
            return self._refused(d, now)
        self._probing = True
        self.counts["probes"] += 1
        try:
            self.store.probe(self._size)
        except DbUnavailable as exc:
            self.counts["failed_probes"] += 1
            return self._refused(self._degrade(str(exc), self._size), self.clock())
        finally:
            self._probing = False
        self._degraded = None
        _log.warning("the disk takes writes again (a probe committed): writes resume")
        return None

    def probe(self) -> bool:
        """Probe the disk now if degraded and a probe is due (the app's prober, between
        writes: ``/health`` then says when writes resume); whether writes are accepted."""
        if self._degraded is None:
            return True
        if self._refusal() is not None:
            return False
        with self._lock:
            return self._probe_if_degraded() is None

    def degraded(self) -> dict[str, Any] | None:
        """What ``/health`` and ``/status`` say of the degraded mode (None: writes are
        accepted)."""
        d = self._degraded
        return None if d is None else d.to_json(self.clock())

    def probe_in(self) -> float | None:
        """Seconds until the next probe is due (None: not degraded)."""
        d = self._degraded
        return None if d is None else max(0.0, d.probe_at - self.clock())

    # --- the search index -------------------------------------------------------------------

    @staticmethod
    def _entry(art: dict[str, Any] | None, cid: int | None) -> tuple[int, int, int] | None:
        """The search index's entry of an artifact of public entry ``art`` whose current
        digest's payload is content ``cid`` (None: READ-1 never lets it through, or its
        current digest carries no payload)."""
        if art is None or cid is None:
            return None
        current, history = int(eligible(art, False)), int(eligible(art, True))  # READ-1
        return (cid, current, history) if current or history else None

    def _index_now(self) -> dict[str, tuple[int, int, int]]:
        """The search index as the public state and the stored payloads say it is."""
        carried = self.store.carried()
        out: dict[str, tuple[int, int, int]] = {}
        for x, art in self.gate.community.orchestrator.public_state()["artifacts"].items():
            entry = self._entry(art, carried.get((x, art["digest"])))
            if entry is not None:
                out[x] = entry
        return out

    @staticmethod
    def _counts(entries: dict[str, tuple[int, int, int]]) -> dict[int, tuple[int, int]]:
        out: dict[int, tuple[int, int]] = {}
        for cid, current, history in entries.values():
            c, h = out.get(cid, (0, 0))
            out[cid] = (c + current, h + history)
        return out

    def _reindex(self) -> None:
        """Rebuild the search index from the public state (on open)."""
        self._indexed = self._index_now()
        self.store.index_search(self._counts(self._indexed), reset=True)

    def _index(self, artifacts: set[str]) -> None:
        """Bring the entries of ``artifacts`` (those a committed group's commands and
        events named: nothing else changes state) up to date."""
        orch = self.gate.community.orchestrator
        delta: dict[int, tuple[int, int]] = {}
        for x in sorted(artifacts):
            art = orch.public_artifact(x)
            cid = None
            if art is not None and art["digest"] is not None:
                ids = self.store.content_ids([(x, art["digest"])])
                cid = ids[0] if ids else None
            new, old = self._entry(art, cid), self._indexed.get(x)
            if new == old:
                continue
            for entry, sign in ((old, -1), (new, 1)):
                if entry is not None:
                    c, h = delta.get(entry[0], (0, 0))
                    delta[entry[0]] = (c + sign * entry[1], h + sign * entry[2])
            if new is None:
                del self._indexed[x]
            else:
                self._indexed[x] = new
        self.store.index_search(delta)

    def keep_payload(self, artifact: str, digest: str, payload: Mapping[str, Any]) -> None:
        """Keep the payload of an accepted command that was applied without it (a cluster
        replica repairing what it missed: cluster/payloads.py), then index the artifact
        as if it had come with the command.  The caller checked that ``payload`` is the
        digest's preimage and that the artifact is not forgotten (FORGET-PURGE); the
        public state does not change (content is payload, not protocol state)."""
        with self._lock:
            self.store.keep_late(artifact, digest, payload)
            self._index({artifact})

    def search_index_agrees(self) -> bool:
        """Whether the search index, kept in step command by command, is the one the
        public state and the stored payloads give now (what the tests check after every
        step)."""
        with self._lock:
            now = self._index_now()
            return now == self._indexed and self._counts(now) == self.store.search_index()

    def _rebuild(self, staged: Sequence[dict[str, Any]] = ()) -> None:
        """The state of the durable envelopes (then of ``staged``, the group's commands
        applied before a failing one), after a failure: nothing half-applied."""
        self.counts["rebuilds"] += 1
        params, setup = self.gate.params, self.gate.setup
        gate = Gate(params, setup) if self._base is None else restore(params, setup, self._base)
        for env in [*self._envelopes, *staged]:
            gate.apply_logged(env)
        self.gate = gate

    def tick(self) -> Reply:
        """A ``tick`` signed by the node's own operator (``--tick-interval``), logged like
        any command."""
        if self.operator is None:
            return error("not_operator", "this node has no operator key")
        with self._lock:
            seq = self.gate.last_seq(self.operator.id) + 1
            env = sign_envelope(
                self.operator.key,
                self.operator.id,
                seq,
                {"op": "tick"},
                community=self.gate.setup.community,
            )
            return self.submit(env)

    # --- reading ----------------------------------------------------------------------------

    @property
    def last_pos(self) -> int:
        return self.store.last_pos

    def view(self) -> View:
        """The public state at the last committed position: no lock, no copy (module
        docstring).  A write in progress is not in it until its rows are committed."""
        return self._view

    def _publish(self, view: View) -> None:
        """Make ``view`` the latest (after its rows are committed) and wake the reads
        waiting for its position."""
        with self._published:
            self._view = view
            self._views[view.pos] = view
            while len(self._views) > KEPT_VIEWS:
                del self._views[min(self._views)]
            self._published.notify_all()

    def changed_since(self, pos: int, view: View) -> set[str] | None:
        """The artifacts whose public entry can differ between the view of ``pos`` and
        ``view`` (a later one), from the views kept in between; None if one of them is no
        longer kept, or ``view`` is not later (the caller starts again from the whole
        state)."""
        out: set[str] = set()
        with self._published:
            v: View | None = view
            while v is not None and v.pos != pos:
                if v.after is None or v.pos < pos:
                    return None
                out |= v.changed
                v = self._views.get(v.after)
        return None if v is None else out

    def _view_at(self, pos: int) -> View | None:
        """The view published for log position ``pos`` (waited for, if its group is
        committed but not yet published); None if it is no longer kept."""
        with self._published:
            self._published.wait_for(lambda: self._view.pos >= pos, _VIEW_WAIT)
            return self._views.get(pos)

    @contextlib.contextmanager
    def _reading(self, search: bool = False) -> Iterator[View]:
        """A snapshot of the file and the view of the same position, without the
        node's lock (module docstring): the store's read methods called meanwhile on
        this thread read that snapshot.  ``search``: on the search connection, its
        index brought to that position."""
        for _ in range(3):  # a view evicted meanwhile: another snapshot, a newer one
            snap = self.store.search_snapshot() if search else self.store.read_snapshot()
            with snap as pos:
                view = self._view_at(pos)
                if view is None:
                    continue
                if search:
                    self.store.sync_search(pos)
                yield view
                return
        raise StoreError("no view of the position the file's snapshot holds")

    def _whole_view(self) -> View:
        """The view of the gate's state, built whole (on open)."""
        registry = dict(self.gate.community.orchestrator.agents)
        return View(self.store.last_pos, self.gate.public_state(), registry)

    def _next_view(self, old: View, staged: Sequence[_Staged]) -> View:
        """The view after the committed ``staged`` commands, from ``old`` (the view before
        them): only the entries they can have changed are built again.

        * artifacts: those each command and its events name (a tick's timers fire an
          event for each artifact they move; the search index relies on the same);
        * agents: the whole registry part, if any ``Agent`` in it is another object than
          the old view's (the orchestrator replaces an agent's entry on every change:
          ``Orchestrator.set_agent``), else the old one;
        * principals: those that signed a command (the gate records a key and a last
          seq for the signer: ``Gate.apply_admitted``) and those a ``rotate_key`` or
          ``revoke_key`` names (an operator's changes another agent's key: KEY-1, KEY-2).

        ``Node.public_state() == Node.gate.public_state()`` after every command is what
        property_tests/service/test_service_views.py checks, over whole simulated runs."""
        gate, orch = self.gate, self.gate.community.orchestrator
        st = old.state
        artifacts = dict(st["artifacts"])
        for x in sorted(_named(staged)):  # the same names as ``changed`` below
            art = orch.public_artifact(x)
            if art is None:
                artifacts.pop(x, None)
            else:
                artifacts[x] = art
        registry = dict(orch.agents)
        same = _same_registry(old.registry, registry)
        agents = st["agents"] if same else gate.community.public_agents()
        signers = _signers(staged)
        principals = dict(st["principals"])
        for p in signers:
            principals[p] = gate.principal(p)
        if not signers <= st["principals"].keys():  # a new principal: keep them sorted
            principals = dict(sorted(principals.items()))
        state = {"now": orch.now, "artifacts": artifacts, "agents": agents}
        state["principals"] = principals
        registry = registry if not same else old.registry
        named = frozenset(_named(staged))
        return View(self.store.last_pos, state, registry, after=old.pos, changed=named)

    def public_state(self) -> dict[str, Any]:
        """The gate's public state at the last committed position (``view``), shared by
        every read until the next write, so it is read-only (callers copy what they
        change)."""
        return self._view.state

    def log(self, after: int, limit: int) -> list[dict[str, Any]]:
        """GET /log's rows (``log_at``)."""
        return self.log_at(after, limit)[0]

    def log_at(self, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
        """GET /log: at most ``limit`` rows after position ``after``, and the position of
        the snapshot they were read from (no row past it)."""
        with self._reading() as view:
            return [_public_entry(e) for e in self.store.entries(after, limit)], view.pos

    def agent(self, agent: str, view: View | None = None) -> dict[str, Any] | None:
        """An agent's public registry entry, its key and seqs (an operator's too), from
        ``view`` (default: the latest)."""
        st = (view or self._view).state
        principal = st["principals"].get(agent)
        pub = st["agents"].get(agent)
        if principal is None and pub is None:
            return None
        last = 0 if principal is None else principal["last_seq"]
        out = {
            **(pub or {"agent": agent}),
            "operator": principal is not None and principal["operator"],
            "public_key": None if principal is None else principal["public_key"],
            "last_seq": last,
            "next_seq": last + 1,
        }
        if principal is not None and "retired_keys" in principal:  # KEY-1
            out["retired_keys"] = list(principal["retired_keys"])
        if principal is not None and principal.get("revoked"):  # KEY-2
            out["revoked"] = True
        return out

    def content(self, artifact: str) -> Reply:
        """GET /artifacts/{id}/content's reply (``content_at``)."""
        return self.content_at(artifact)[0]

    def content_at(self, artifact: str) -> tuple[Reply, int]:
        """GET /artifacts/{id}/content: the payload the artifact carries under its current
        digest, and the position read.  404 ``not_found`` (no such artifact),
        ``content_forgotten`` (forgotten: its payload was purged, FORGET-PURGE) or
        ``no_content`` (proposed by digest only)."""
        with self._reading() as view:
            art = view.state["artifacts"].get(artifact)
            if art is None:
                return error("not_found", f"no artifact {artifact[:200]!r}"), view.pos
            if art["state"] == FORGOTTEN:
                reply = error("content_forgotten", "the artifact was forgotten: its content too")
                return reply, view.pos
            digest = art.get("digest")
            payload = None if digest is None else self.store.payload(artifact, digest)
            if payload is None:
                return error("no_content", "the artifact was proposed by digest only"), view.pos
            return Reply(200, {"artifact": artifact, "digest": digest, **payload}), view.pos

    def artifact(self, artifact: str, view: View | None = None) -> dict[str, Any] | None:
        """GET /artifacts/{id}: the public entry in ``view`` (default: the latest) and the
        advisory read record (``Store.reads``: not protocol state, read on the store's
        reading connection, so not under the lock either)."""
        art = (view or self._view).state["artifacts"].get(artifact)
        if art is None:
            return None
        return {"artifact": artifact, **art, "reads": self.store.reads(artifact)}

    def _hit(self, x: str, art: dict[str, Any], score: float | None) -> dict[str, Any]:
        """One hit: the artifact, its payload and its provenance (service/search.py)."""
        payload = None if art["digest"] is None else self.store.payload(x, art["digest"])
        prov = self.store.provenance(x)
        return {
            "artifact": x,
            "slot": art["slot"],
            "state": art["state"],
            "score": score,
            "digest": art["digest"],
            "content": None if payload is None else payload.get("content"),
            "title": None if payload is None else payload.get("title"),
            "tags": None if payload is None else payload.get("tags"),
            "source": None if payload is None else payload.get("source"),
            "submitter": art["submitter"],
            "decision": art["decision"],
            "reviewers": art["reviewers"],
            "submitter_tier": prov["submitter_tier"],
            "submitter_reputation": prov["submitter_reputation"],
            "activated_round": prov["activated_round"],
            "supersedes": prov["supersedes"],
            "superseded_by": prov["superseded_by"] if art["state"] == SUPERSEDED else None,
            "superseded_round": prov["superseded_round"] if art["state"] == SUPERSEDED else None,
        }

    def _readable(
        self, ranked: Iterator[tuple[int, float]], query: SearchQuery, depth: int, view: View
    ) -> list[tuple[str, dict[str, Any], float]]:
        """The first ``depth`` (artifact, public entry, score) of the payloads ``ranked``
        (content id, score; best first) that READ-1 lets ``query`` see in ``view``: one
        filter for the lexical and the dense ranking alike."""
        arts = view.state["artifacts"]
        out: list[tuple[str, dict[str, Any], float]] = []
        for cid, score in ranked:
            digest, carriers = self.store.carriers(cid)
            for x in carriers:
                art = arts.get(x)
                if (
                    art is None
                    or not eligible(art, query.history)  # READ-1
                    or art["digest"] != digest  # resubmitted since: not its content now
                    or (query.slot is not None and art["slot"] != query.slot)
                ):
                    continue
                out.append((x, art, score))
            if len(out) >= depth:
                break
        return out[:depth]

    def _matches(self, query: SearchQuery, first: int) -> Iterator[tuple[int, float]]:
        """(content id, BM25 score) of the payloads ``query``'s words match among those the
        search index lists, best first, read in pages (``first`` rows, then four times as
        many each time) for as long as the caller reads on: FTS5 keeps only a page's best
        rows instead of handing every match to Python."""
        only = "history" if query.history else "current"
        offset, limit = 0, max(1, first)
        while True:
            rows = list(self.store.matches(query.match, only=only, limit=limit, offset=offset))
            yield from rows
            if len(rows) < limit:
                return
            offset, limit = offset + limit, 4 * limit

    def search(self, query: SearchQuery) -> dict[str, Any]:
        """GET/POST /search: the ``k`` best hits among the artifacts READ-1 lets through,
        decided from the Community's public state at the answer's position: by BM25 for
        words, by cosine similarity for a query vector, by reciprocal rank fusion of the
        two rankings for both (service/dense.py).  Each hit's ``ranks`` are its places in
        the lexical and the dense ranking (after READ-1's filter).

        The store ranks only the payloads the search index lists (each carried by at
        least one artifact READ-1 lets through), best first, a page at a time
        (``_matches``); every hit is checked against the public state again
        (``_readable``), so the answer is the same as reading every match.

        Without the node's lock: the public state is the view of the position of the
        search connection's snapshot, the index brought to it (``_reading``)."""
        with self._reading(search=True) as view:
            both = bool(query.terms) and query.vector is not None
            depth = max(query.k, FUSION_DEPTH) if both else query.k
            lexical = (
                self._readable(self._matches(query, depth), query, depth, view)
                if query.terms
                else []
            )
            near = (
                self._readable(self.store.neighbours(query.vector), query, depth, view)
                if query.vector is not None
                else []
            )
            found = {x: (art, score) for x, art, score in near}
            sims = {x: score for x, _, score in near}
            found.update({x: (art, score) for x, art, score in lexical})
            ranked: list[tuple[str, float, list[int | None]]]
            if both:
                ranked = rrf([x for x, _, _ in lexical], [x for x, _, _ in near])[: query.k]
            elif query.terms:
                ranked = [(x, sc, [i, None]) for i, (x, _, sc) in enumerate(lexical, 1)]
            else:
                ranked = [(x, sc, [None, i]) for i, (x, _, sc) in enumerate(near, 1)]
            hits: list[dict[str, Any]] = []
            for x, score, (r_lex, r_dense) in ranked:
                hit = self._hit(x, found[x][0], score)
                hit["ranks"] = {"lexical": r_lex, "dense": r_dense}
                hit["similarity"] = sims.get(x)
                hits.append(hit)
        self.store.record_reads([h["artifact"] for h in hits], query.q, view.state["now"])
        if self.store.reads_due() and self._lock.acquire(blocking=False):
            try:  # only if no write is in progress: a search never waits for the lock
                self.store.flush_reads()
            finally:
                self._lock.release()
        return {"hits": hits, "position": view.pos}

    def slot(self, slot: str) -> dict[str, Any]:
        """GET /slots/{slot}: the slot's current value(s) (what READ-1 returns) and its
        history (its superseded artifacts, in the order they were superseded), read
        from one snapshot and the view of its position (``_reading``)."""
        with self._reading() as view:
            arts = view.state["artifacts"]
            mine = [(i, x, a) for i, (x, a) in enumerate(arts.items()) if a["slot"] == slot]
            current = [self._hit(x, a, None) for _, x, a in mine if eligible(a, False)]
            history = [
                (i, self._hit(x, a, None))
                for i, x, a in mine
                if eligible(a, True) and a["state"] == SUPERSEDED
            ]
            history.sort(
                key=lambda h: (
                    h[1]["superseded_round"] is None,
                    h[1]["superseded_round"] or 0,
                    h[0],
                )
            )
            return {
                "slot": slot,
                "current": current,
                "history": [h for _, h in history],
                "position": view.pos,
            }

    # --- the event stream (long poll) -------------------------------------------------------

    async def wait(self, after: int, timeout: float) -> None:
        """Return when the log has a position > ``after``, or after ``timeout`` seconds."""
        waiter = _Waiter(asyncio.get_running_loop())
        with self._lock:
            if self.store.last_pos > after:
                return
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter.event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def _wake(self) -> None:
        for w in self._waiters:
            # a closed loop: nobody is waiting there any more
            with contextlib.suppress(RuntimeError):
                w.loop.call_soon_threadsafe(w.event.set)
        self._waiters.clear()


def _named(staged: Sequence[_Staged]) -> set[str]:
    """The artifacts the commands of ``staged`` and their events name: nothing else
    changes state (the search index and the view are updated for these only)."""
    return {
        str(x)
        for s in staged
        for x in (
            s.envelope["command"].get("artifact"),
            *(ev.get("artifact") for ev in s.observation["events"]),
        )
        if x is not None
    }


def _signers(staged: Sequence[_Staged]) -> set[str]:
    """The principals whose entry the commands of ``staged`` can have changed: each
    signer, and the agent an identity command names (KEY-1, KEY-2)."""
    out = {str(s.envelope["agent"]) for s in staged}
    for s in staged:
        command = s.envelope.get("command")
        if isinstance(command, dict) and command.get("op") in IDENTITY_COMMANDS:
            out.add(str(command["agent"]))
    return out


def _same_registry(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether two copies of the orchestrator's registry hold the same ``Agent`` objects
    (an entry is replaced, never changed in place: ``Orchestrator.set_agent``)."""
    return len(new) == len(old) and all(old.get(k) is v for k, v in new.items())


def provenance(gate: Gate, obs: Observation) -> list[tuple[str, dict[str, Any]]]:
    """What the command of ``obs`` (just applied to ``gate``) tells the ``provenance``
    table: for each artifact it activated, the round and its submitter's tier and
    reputation at that moment; for each artifact it superseded, the artifact that
    superseded it (the one activated in the same step, or for a dispute kept on an
    occupied slot the slot's active one) and the round."""
    orch = gate.community.orchestrator
    out: list[tuple[str, dict[str, Any]]] = []
    activated: str | None = None
    for ev in obs.get("events", ()):
        if not isinstance(ev, dict) or "artifact" not in ev or "to" not in ev:
            continue
        x = str(ev["artifact"])
        if ev["to"] == ACTIVE and ev.get("from") != ACTIVE:
            art = orch.public_artifact(x)
            a = None if art is None else orch.agent(art["submitter"])
            out.append(
                (
                    x,
                    {
                        "activated_round": orch.now,
                        "submitter_tier": None if a is None else a.tier,
                        "submitter_reputation": None if a is None else micro(a.reputation) / 1e6,
                    },
                )
            )
            activated = x
        elif ev["to"] == SUPERSEDED and ev.get("from") != SUPERSEDED:
            by = activated if ev.get("event") == "supersede" else None
            if by is None:  # a dispute kept while another became the slot's value
                art = orch.public_artifact(x)
                served = None if art is None else orch.serve(art["slot"])
                by = None if served is None else str(served["artifact"])
            out.append((x, {"superseded_by": by, "superseded_round": orch.now}))
            if by is not None and ev.get("event") == "supersede":
                out.append((by, {"supersedes": x}))
    return out


def _stored_params(store: Store) -> Any:
    """The file's parameters as the table reads them: a parameter added to the table since
    the file was made (``embedding_dim``) is at its default, as replay takes it, so the same
    parameters given again are the same (a header that does not load: as stored, replay
    names the problem)."""
    try:
        return _json(Params.from_mapping(store.params).to_dict())
    except (ParamError, ValueError, TypeError):
        return store.params


def _but_community(setup: Any) -> Any:
    """A stored setup without its community id (what a caller's setup is compared by)."""
    if isinstance(setup, dict):
        return {k: v for k, v in setup.items() if k != "community"}
    return setup


def _snapshot_row(gate: Gate) -> dict[str, Any]:
    """What a snapshot row holds: the whole state and the public state."""
    return {"public": gate.public_state(), "full": snapshot(gate)}


def replay(store: Store, *, verify: bool = False) -> tuple[Gate, Any, list[dict[str, Any]]]:
    """The gate rebuilt from the store, the snapshot it starts from (None: the header)
    and the envelopes after it.

    Without ``verify``: the latest snapshot restored (its public state must be what its
    full state says), then the log after it.  With ``verify``: the whole log from the
    header, every logged observation and every snapshot compared with the replay.
    ``StoreError`` names the first disagreement (a tampered file, or a reference that no
    longer replays the log)."""
    try:
        params = Params.from_mapping(store.params)
        setup = Setup.from_json(store.setup)
    except (ParamError, ValueError, TypeError) as exc:
        raise StoreError(f"{store.path}: the header does not load: {exc}") from None
    snaps = store.snapshots()
    if set(snaps) - set(range(1, store.last_pos + 1)):
        raise StoreError(f"{store.path}: a snapshot names a position past the log's end")
    gate, base, start = Gate(params, setup), None, 0
    # the latest snapshot this version can restore; one an earlier version wrote (an
    # older format: snapshot.py) is replayed past, back to the header if need be
    for pos in sorted(snaps, reverse=True) if not verify else ():
        doc = store.snapshot_state(pos)
        if not isinstance(doc, dict) or set(doc) != {"public", "full"}:
            raise StoreError(f"snapshot[{pos}]: not a {{public, full}} document")
        if older_format(doc["full"]):
            continue
        start = pos
        try:
            gate = restore(params, setup, doc["full"])
            public = _json(gate.public_state())
        except CodecError as exc:
            raise StoreError(f"snapshot[{start}]: does not restore: {exc}") from None
        except Exception as exc:  # well-formed but wrong-typed state: hostile file bytes
            raise StoreError(f"snapshot[{start}]: does not restore: {exc!r}") from None
        if public != doc["public"]:
            raise StoreError(f"snapshot[{start}]: its public state is not its full state's")
        base = doc["full"]
        break
    envelopes: list[dict[str, Any]] = []
    for e in store.entries(after=start):
        adm = gate.admit_logged(e.envelope)  # every row's signature and seq, checked again
        if not adm.ok:
            raise StoreError(f"log[{e.pos}]: the gate refuses this row ({adm.code})")
        obs = gate.apply_admitted(e.envelope, adm)
        if "elided" in e.envelope and obs["result"] != elided_result(e.envelope):  # ROW-1
            raise StoreError(f"log[{e.pos}]: a row kept as its hash replays as {obs['result']}")
        if verify and _json(obs) != e.observation:
            raise StoreError(f"log[{e.pos}]: the replayed observation differs from the logged one")
        if e.pos in snaps:  # only with verify: otherwise the replay starts after the last
            state = _json(_snapshot_row(gate))
            if digest(state) != snaps[e.pos]:
                doc = store.snapshot_state(e.pos)
                # an earlier version's snapshot: only its public state can be compared
                old = isinstance(doc, dict) and older_format(doc.get("full"))
                if not old or doc.get("public") != state["public"]:
                    raise StoreError(f"snapshot[{e.pos}]: the replayed state differs from it")
            base, envelopes = state["full"], []
            continue
        envelopes.append(e.envelope)
    return gate, base, envelopes
