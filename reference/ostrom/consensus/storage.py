"""Durable PBFT replicas: a replica's promises in an embedded SQLite database.

``Replica`` is sans-IO and lives in memory.  ``DurableReplica`` wraps one with a
``ReplicaStore`` so that a crash loses only what the network can give back; the split
between durable and volatile state is ``replica.DurableState``'s, and the reasons for
each item are in its docstring and in docs/consensus.md ("Durability and recovery").

**Write before send.**  Every entry point (``on_message``, ``on_timeout``,
``retransmit``) runs the pure replica, then writes what changed in its durable state in
*one* SQLite transaction, and only then hands back the ``Output`` (the sends and the
executions).  A crash before the commit loses the step and everything it would have sent;
a crash after it loses at most sends, which retransmission repeats.  So the restarted
replica never contradicts a message that left it (BFT-SAFE-1).  A step that changes
nothing durable (most receipts of others' votes, retransmissions, refused messages)
writes nothing.  A failed write raises: the replica stops, and its output is not released.

**Incremental writes.**  The state is a set of rows ``record(kind, key, value)``.  Each
step writes only the rows that differ from the last transaction: the window-bounded
promises (PRE-PREPAREs, own votes, certificates, checkpoints: compared with an in-memory
mirror), the new executed requests (``history`` is appended, never rewritten), and the
new entries of the monotone observation sets.  A new stable checkpoint deletes the rows
below it, exactly as the replica garbage-collects its log.

**Integrity.**  ``PRAGMA user_version`` holds the schema version.  Each transaction adds
a row to ``batch``: its number, the number of records, the *state hash* (the sum modulo
2^256 of the SHA-256 of every record: a multiset hash, updated incrementally) and a
running hash chain over the batches (at least the last ``_BATCH_LOG`` rows are kept).  Opening the
store recomputes the state hash from the records and checks the chain: the records are
exactly those of the last committed transaction, or the store is refused.

**Torn writes.**  SQLite's write-ahead log (``journal_mode=WAL``) makes a transaction
atomic: a torn last transaction (its WAL frames cut short) is rolled back on open, and
that transaction's outputs were never released.  With ``synchronous=FULL`` every commit
is on disk before the sends go out; ``OFF`` is for fast tests and for measuring what the
fsync costs (a power loss may then lose released promises).  Damage SQLite cannot see
(a truncated or altered main file, a lost record) fails the state hash, the decoding or
a signature, and the store is refused with a typed ``StoreError`` — never started with
half a record.  Every record read back is decoded with ``messages.decode`` (or
``message_from_tree``), its signatures are verified against the key ring, and
``Replica.restore_durable`` checks the whole state before using it.

``python -m ostrom.consensus.storage DB --replica I --n N --f F --seed S --clients C``
checks whether a replica could restart from a store of the simulation (``CounterApp``
replicas), and says why not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import sys
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, Protocol

from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import (
    Malformed,
    PreparedCert,
    Signed,
    canonical,
    decode,
    message_from_tree,
    replica_name,
)
from ostrom.consensus.replica import (
    DurableState,
    InvalidDurableState,
    Key3,
    Output,
    Replica,
)

__all__ = [
    "DurableReplica",
    "FileLocation",
    "MemoryLocation",
    "ReplicaStore",
    "StoreCorrupt",
    "StoreError",
    "StoreLocation",
    "StoreMismatch",
    "StoreMissing",
    "StoreVersionError",
    "chain_step",
    "main",
    "row_hash",
]

_SCHEMA_VERSION: Final = 1
#: Rows of the ``batch`` table kept (the chain is checked over them on open).
_BATCH_LOG: Final = 64
_GENESIS: Final = hashlib.sha256(b"ostrom-pbft-store-genesis").hexdigest()
_MODULUS: Final = 1 << 256
_SYNCHRONOUS: Final = ("FULL", "NORMAL", "OFF")
_SCHEMA: Final = (
    "CREATE TABLE record (kind TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL,"
    " PRIMARY KEY (kind, key)) WITHOUT ROWID",
    "CREATE TABLE batch (n INTEGER PRIMARY KEY, rows INTEGER NOT NULL,"
    " state_hash TEXT NOT NULL, chain TEXT NOT NULL)",
)

#: Kinds whose value is one encoded ``Signed`` (``history``: or ``null``).
_SIGNED_KINDS: Final = frozenset(
    {"new_view", "stable_proof", "view_change", "pre_prepare", "prepare", "commit"}
    | {"checkpoint", "history"}
)
#: Kinds that are sets: the key is the entry, the value a constant.
_SET_KINDS: Final = frozenset({"assigned", "prepared_log", "committed", "committed_local"})
#: Kinds compared with the in-memory mirror at every step (bounded by the window).
_BOUNDED_KINDS: Final = frozenset(
    {"scalar", "new_view", "stable_proof", "view_change", "pre_prepare", "prepare", "commit"}
    | {"sent_commit", "cert", "own_checkpoint", "checkpoint", "reply_view"}
)
_SCALARS: Final = ("view", "active", "next_seq", "stable_seq", "stable_digest", "stable_app_digest")
_META: Final = ("schema", "replica", "n", "f", "checkpoint_k", "window")
_PRESENT: Final = b"1"

_Row = tuple[str, Hashable]  # (kind, key)


# --- errors ---------------------------------------------------------------------------------


class StoreError(Exception):
    """The store gives no state to restart from; the message says why and what to do."""


class StoreMissing(StoreError):
    """No durable state: restarting from nothing would be an amnesiac restart (a fault)."""


class StoreCorrupt(StoreError):
    """Torn, truncated or altered beyond what SQLite recovers: refused, never half-read."""


class StoreVersionError(StoreError):
    """Written by another schema version."""


class StoreMismatch(StoreError):
    """The store of another replica, or of another configuration (n, f, K, window)."""


# --- where a store lives --------------------------------------------------------------------


class StoreLocation(Protocol):
    """Where one replica's database lives; it survives the replica's crash."""

    name: str

    def connect(self, *, create: bool) -> sqlite3.Connection: ...

    def release(self, conn: sqlite3.Connection) -> None:
        """The replica crashed or stopped: let go of the connection (the data stays)."""

    def destroy(self) -> None:
        """Delete the database (an amnesiac restart follows: a fault)."""

    def dispose(self) -> None:
        """The run is over: free what the location holds."""


class FileLocation:
    """A database file (and its ``-wal`` and ``-shm`` files) on disk.

    ``synchronous`` is SQLite's: ``FULL`` fsyncs the WAL at every commit, which is what
    the write-before-send rule needs against power loss; ``OFF`` leaves it to the OS
    (fast tests, and the benchmark's comparison).  Either way a process crash loses no
    committed transaction.
    """

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        if synchronous not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {_SYNCHRONOUS}")
        self.path = Path(path)
        self.synchronous = synchronous
        self.name = self.path.name

    def connect(self, *, create: bool) -> sqlite3.Connection:
        if not create and not self.path.exists():
            raise StoreMissing(f"{self.name}: no database file")
        try:
            conn = sqlite3.connect(self.path, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreCorrupt(f"{self.name}: cannot open the database ({exc})") from exc
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreCorrupt(f"{self.name}: not a readable SQLite database ({exc})") from exc
        return conn

    def release(self, conn: sqlite3.Connection) -> None:
        conn.close()

    def destroy(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def dispose(self) -> None:
        pass


class MemoryLocation:
    """An in-memory SQLite database: the connection *is* the database, so it is kept
    across the replica's crash (``release`` does nothing) and closed by ``destroy``.

    Same SQL, same transactions and same validation on reopening as a file, without
    disk writes: for the Hypothesis machine, where hundreds of runs would otherwise pay
    for files and fsyncs.  Torn writes need files (``FileLocation``).
    """

    name = ":memory:"

    def __init__(self) -> None:
        self._conn: sqlite3.Connection | None = None

    def connect(self, *, create: bool) -> sqlite3.Connection:
        if self._conn is None:
            if not create:
                raise StoreMissing("in-memory store: no database")
            self._conn = sqlite3.connect(":memory:", isolation_level=None)
        return self._conn

    def release(self, conn: sqlite3.Connection) -> None:
        pass

    def destroy(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def dispose(self) -> None:
        self.destroy()


# --- rows -----------------------------------------------------------------------------------


def _json_text(obj: object) -> str:
    """``canonical(obj)`` as text; fast for what rows hold (ints, plain ASCII strings,
    tuples of them), the encoder for anything else."""
    t = type(obj)
    if t is int:
        return str(obj)
    if t is str and obj.isascii() and obj.replace("_", "").isalnum():  # type: ignore[attr-defined]
        return f'"{obj}"'
    if t is tuple:
        return "[" + ",".join(_json_text(x) for x in obj) + "]"  # type: ignore[attr-defined]
    return canonical(obj).decode()


def _key_text(key: Hashable) -> str:
    """The canonical JSON text of a row key (tuples become lists)."""
    return _json_text(key)


def _envelope_bytes(s: Signed) -> bytes:
    """``s.encoded`` (the wire encoding), built around the message's canonical encoding,
    which signing or verifying has already computed and cached: sorted keys ``message``,
    ``sender``, ``signature``, ``type``, compact separators, as ``canonical`` writes them."""
    return b"".join(
        (
            b'{"message":',
            s.message.encoded,
            b',"sender":',
            _json_text(s.sender).encode(),
            b',"signature":"',
            s.signature.hex().encode(),
            b'","type":"Signed"}',
        )
    )


def _value_bytes(kind: str, obj: object) -> bytes:
    """The stored bytes of a row's value: a signed message's wire encoding, a certificate's
    canonical encoding, or canonical JSON."""
    if kind in _SIGNED_KINDS:
        if obj is None:
            return b"null"
        assert isinstance(obj, Signed)
        return _envelope_bytes(obj)
    if kind == "cert":
        assert isinstance(obj, PreparedCert)
        return obj.encoded
    if kind in _SET_KINDS:
        return _PRESENT
    return _json_text(obj).encode()


def row_hash(kind: str, key: str, value: bytes) -> int:
    """One record's term of the state hash."""
    h = hashlib.sha256(kind.encode())
    h.update(b"\x00")
    h.update(key.encode())
    h.update(b"\x00")
    h.update(value)
    return int.from_bytes(h.digest(), "big")


def chain_step(chain: str, n: int, state_hash: str, rows: int) -> str:
    """The running hash over committed batches."""
    return hashlib.sha256(f"{chain}|{n}|{state_hash}|{rows}".encode()).hexdigest()


def _bounded_rows(r: Replica) -> dict[_Row, object]:
    """The window-bounded durable rows of ``r``, as objects (compared at every step)."""
    rows: dict[_Row, object] = {
        ("scalar", "view"): r.view,
        ("scalar", "active"): r.active,
        ("scalar", "next_seq"): r.next_seq,
        ("scalar", "stable_seq"): r.stable_seq,
        ("scalar", "stable_digest"): r.stable_digest,
        ("scalar", "stable_app_digest"): r.stable_app_digest,
    }
    if r.new_view_msg is not None:
        rows[("new_view", 0)] = r.new_view_msg
    for i, s in enumerate(r.stable_proof):
        rows[("stable_proof", i)] = s
    for v, s in r.own_view_changes().items():
        rows[("view_change", v)] = s
    for vs, s in r.durable_pre_prepares().items():
        rows[("pre_prepare", vs)] = s
    for kind in ("prepare", "commit"):
        for k3, s in r.own_votes(kind).items():
            rows[(kind, k3)] = s
    for vs, d in r.sent_commit.items():
        rows[("sent_commit", vs)] = d
    for seq, cert in r.prepared_certs.items():
        rows[("cert", seq)] = cert
    for seq, own in r.own_checkpoints.items():
        rows[("own_checkpoint", seq)] = own
    for seq, s in r.own_checkpoint_votes().items():
        rows[("checkpoint", seq)] = s
    for client, view in r.reply_views().items():
        rows[("reply_view", client)] = view
    return rows


_Upsert = tuple[str, Hashable, object]


class ReplicaStore:
    """One replica's database: ``create`` (first start), ``load`` (restart), ``sync``
    (after every step).  Not thread-safe; one store per replica."""

    def __init__(self, location: StoreLocation, replica: Replica, *, create: bool) -> None:
        self.location = location
        self.name = location.name
        self.keyring = replica.keyring
        self.meta: dict[str, int] = {
            "schema": _SCHEMA_VERSION,
            "replica": replica.id,
            "n": replica.n,
            "f": replica.f,
            "checkpoint_k": replica.checkpoint_k,
            "window": replica.window,
        }
        self._conn: sqlite3.Connection | None = location.connect(create=create)
        self.batch = -1  # the last committed transaction
        self.transactions = 0  # committed by this process (the benchmark reads it)
        self._chain = _GENESIS
        self._state_hash = 0
        self._rows = 0
        # mirrors of what the last transaction left in the database
        self._mirror: dict[_Row, object] = {}
        self._hashes: dict[_Row, int] = {}  # bounded rows: their term of the state hash
        self._history = 0
        self._prepared_log: set[Key3] = set()
        self._committed_local: set[Key3] = set()
        self._committed: set[tuple[int, str]] = set()
        self._assigned: set[str] = set()
        self._assigned_obj: set[str] | None = None
        self._assigned_len = 0

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"{self.name}: the store is closed")
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self.location.release(self._conn)
            self._conn = None

    # --- first start ----------------------------------------------------------------------

    def create(self, replica: Replica) -> None:
        """Write the schema and ``replica``'s initial state (transaction 0).  Refused if
        the database already holds a state: starting over would be an amnesiac restart."""
        try:
            tables = self._tables()
        except sqlite3.DatabaseError as exc:
            raise StoreCorrupt(f"{self.name}: not a readable SQLite database ({exc})") from exc
        if tables:
            raise StoreError(
                f"{self.name}: already holds a replica's state; restart from it, or destroy "
                "it explicitly (an amnesiac restart, which is a fault)"
            )
        upserts: list[_Upsert] = [("meta", k, v) for k, v in self.meta.items()]
        self._sync(replica, upserts, prelude=[*_SCHEMA, f"PRAGMA user_version={_SCHEMA_VERSION}"])

    # --- after every step -----------------------------------------------------------------

    def sync(self, replica: Replica) -> bool:
        """Write what changed in ``replica``'s durable state since the last transaction, in
        one transaction; True if something was written."""
        return self._sync(replica, [], prelude=())

    def _sync(self, r: Replica, upserts: list[_Upsert], prelude: Sequence[str]) -> bool:
        snap = _bounded_rows(r)
        deletes: list[_Row] = []
        if snap != self._mirror:
            mirror = self._mirror
            for row, obj in snap.items():
                if row not in mirror or mirror[row] != obj:
                    upserts.append((row[0], row[1], obj))
            deletes = [row for row in mirror if row not in snap]
        hist = r.history
        for seq in range(self._history + 1, len(hist) + 1):  # appended, never rewritten
            upserts.append(("history", seq, hist[seq - 1]))
        # the observation sets only grow: a size that did not change means no new entry
        new_prepared = (
            r.prepared_log - self._prepared_log
            if len(r.prepared_log) != len(self._prepared_log)
            else set()
        )
        new_local = (
            r.committed_local - self._committed_local
            if len(r.committed_local) != len(self._committed_local)
            else set()
        )
        # ``committed`` gains a digest at seq s only with an entry (v, s, d) of
        # committed_local (_check_committed, _check_late_committed) or an execution at s
        # (_on_state_transfer): only those sequence numbers can have changed
        seqs = {s for _, s, _ in new_local} | set(range(self._history + 1, len(hist) + 1))
        new_committed = {
            (s, d) for s in seqs for d in r.committed.get(s, ()) if (s, d) not in self._committed
        }
        # ``assigned`` grows within a view and is replaced by a new set when one is entered
        assigned_changed = r.assigned is not self._assigned_obj or len(r.assigned) != (
            self._assigned_len
        )
        if assigned_changed:
            upserts += [("assigned", d, True) for d in sorted(r.assigned - self._assigned)]
            deletes += [("assigned", d) for d in sorted(self._assigned - r.assigned)]
        upserts += [("prepared_log", k, True) for k in sorted(new_prepared)]
        upserts += [("committed_local", k, True) for k in sorted(new_local)]
        upserts += [("committed", k, True) for k in sorted(new_committed)]
        if upserts or deletes:
            self._commit(upserts, deletes, prelude)
        # what the database now holds (after the commit: a failed write changes nothing)
        self._mirror = snap
        self._history = len(hist)
        self._prepared_log |= new_prepared
        self._committed_local |= new_local
        self._committed |= new_committed
        if assigned_changed:
            self._assigned = set(r.assigned)
            self._assigned_obj, self._assigned_len = r.assigned, len(r.assigned)
        return bool(upserts or deletes)

    def _commit(self, upserts: list[_Upsert], deletes: list[_Row], prelude: Sequence[str]) -> None:
        state, rows = self._state_hash, self._rows
        hashes: dict[_Row, int | None] = {}
        dels: list[tuple[str, str]] = []
        for kind, key in deletes:
            text = _key_text(key)
            old = self._hashes.get((kind, key))
            state -= old if old is not None else row_hash(kind, text, _value_bytes(kind, None))
            rows -= 1
            hashes[(kind, key)] = None
            dels.append((kind, text))
        puts: list[tuple[str, str, bytes]] = []
        for kind, key, obj in upserts:
            text, value = _key_text(key), _value_bytes(kind, obj)
            term = row_hash(kind, text, value)
            old = self._hashes.get((kind, key))
            if old is None:
                rows += 1
            else:
                state -= old
            state += term
            if kind in _BOUNDED_KINDS:
                hashes[(kind, key)] = term
            puts.append((kind, text, value))
        state %= _MODULUS
        n = self.batch + 1
        state_hex = f"{state:064x}"
        chain = chain_step(self._chain, n, state_hex, rows)
        conn = self.conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            for sql in prelude:
                conn.execute(sql)
            if dels:
                conn.executemany("DELETE FROM record WHERE kind = ? AND key = ?", dels)
            conn.executemany(
                "INSERT INTO record (kind, key, value) VALUES (?, ?, ?) "
                "ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value",
                puts,
            )
            conn.execute("INSERT INTO batch VALUES (?, ?, ?, ?)", (n, rows, state_hex, chain))
            if n % _BATCH_LOG == 0:  # keep the last BATCH_LOG to 2 * BATCH_LOG batches
                conn.execute("DELETE FROM batch WHERE n <= ?", (n - _BATCH_LOG,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.batch, self._chain, self._state_hash, self._rows = n, chain, state, rows
        self.transactions += 1
        for row, new in hashes.items():
            if new is None:
                self._hashes.pop(row, None)
            else:
                self._hashes[row] = new

    # --- restart --------------------------------------------------------------------------

    def _tables(self) -> set[str]:
        cur = self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {str(row[0]) for row in cur}

    def load(self) -> DurableState:
        """The durable state of the last committed transaction, every record validated
        (``StoreError`` otherwise: missing, corrupt, another version or replica)."""
        try:
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            tables = self._tables()
            if version == 0 and not tables:
                raise StoreMissing(
                    f"{self.name}: no durable state; restarting from nothing is an amnesiac "
                    "restart (a fault): create a store only for a replica that never ran"
                )
            if version != _SCHEMA_VERSION:
                raise StoreVersionError(
                    f"{self.name}: schema version {version}; this code reads {_SCHEMA_VERSION}"
                )
            if tables != {"record", "batch"}:
                raise StoreCorrupt(f"{self.name}: tables {sorted(tables)}, not the schema's")
            batches = self.conn.execute(
                "SELECT n, rows, state_hash, chain FROM batch ORDER BY n"
            ).fetchall()
            records = self.conn.execute("SELECT kind, key, value FROM record").fetchall()
        except sqlite3.DatabaseError as exc:
            raise StoreCorrupt(f"{self.name}: unreadable ({exc})") from exc
        self._check_batches(batches, records)
        return self._decode(records)

    def _check_batches(self, batches: list[Any], records: list[Any]) -> None:
        if not batches:
            raise StoreCorrupt(f"{self.name}: no committed transaction")
        chain: str | None = None
        last = -1
        for n, rows, state_hex, link in batches:
            if not (_is_int(n) and _is_int(rows) and isinstance(state_hex, str)):
                raise StoreCorrupt(f"{self.name}: a malformed batch row")
            if chain is None and n == 0:
                chain = _GENESIS
            if chain is not None and (
                n != last + 1 or link != chain_step(chain, n, state_hex, rows)
            ):
                raise StoreCorrupt(f"{self.name}: the batch chain is broken at transaction {n}")
            chain, last = link, n
        n, rows, state_hex, link = batches[-1]
        total = 0
        for kind, key, value in records:
            if not (isinstance(kind, str) and isinstance(key, str) and isinstance(value, bytes)):
                raise StoreCorrupt(f"{self.name}: a malformed record")
            total += row_hash(kind, key, value)
        if f"{total % _MODULUS:064x}" != state_hex or len(records) != rows:
            raise StoreCorrupt(
                f"{self.name}: the records are not those of the last committed transaction "
                f"({n}): torn or altered"
            )
        self.batch, self._chain, self._state_hash, self._rows = n, link, total % _MODULUS, rows

    def _decode(self, records: list[Any]) -> DurableState:
        """Every record decoded and checked; the mirrors set to what was read."""
        dec = _Decoder(self.name, self.keyring)
        for kind, key, value in records:
            dec.add(kind, key, value)
        for k, v in self.meta.items():
            got = dec.meta.get(k)
            if got != v:
                raise StoreMismatch(
                    f"{self.name}: written for {k} = {got}, opened for {k} = {v} "
                    f"(replica {self.meta['replica']})"
                )
        state = dec.state()
        self._mirror = dec.bounded
        self._hashes = dec.hashes
        self._history = len(state.history)
        self._prepared_log = set(state.prepared_log)
        self._committed_local = set(state.committed_local)
        self._committed = {(s, d) for s, ds in state.committed.items() for d in ds}
        self._assigned = set(state.assigned)
        return state


def _is_int(x: object) -> bool:
    return type(x) is int


class _Decoder:
    """Turns records into a ``DurableState``; ``StoreCorrupt`` for anything unexpected."""

    def __init__(self, name: str, keyring: Any) -> None:
        self.name, self.keyring = name, keyring
        self.meta: dict[str, object] = {}
        self.bounded: dict[_Row, object] = {}
        self.hashes: dict[_Row, int] = {}
        self.history: dict[int, Signed | None] = {}
        self.sets: dict[str, set[Any]] = {k: set() for k in _SET_KINDS}

    def fail(self, kind: str, key: str, why: str) -> StoreCorrupt:
        return StoreCorrupt(f"{self.name}: record {kind} {key}: {why}")

    def signed(self, kind: str, key: str, value: bytes) -> Signed:
        try:
            s = decode(value)
        except Malformed as exc:
            raise self.fail(kind, key, f"not a signed message ({exc})") from exc
        if s.encoded != value:
            raise self.fail(kind, key, "not in canonical form")
        if not self.keyring.verify(s):
            raise self.fail(kind, key, "its signature does not verify")
        return s

    def add(self, kind: str, text: str, value: bytes) -> None:
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise self.fail(kind, text, "key is not JSON") from exc
        key: Hashable = tuple(raw) if isinstance(raw, list) else raw
        if _key_text(key) != text:
            raise self.fail(kind, text, "key is not canonical")
        if not _key_ok(kind, key):
            raise self.fail(kind, text, "unexpected key")
        if kind in _SET_KINDS:
            if value != _PRESENT:
                raise self.fail(kind, text, "unexpected value")
            self.sets[kind].add(key)
            return
        if kind == "history":
            assert isinstance(key, int)
            self.history[key] = None if value == b"null" else self.signed(kind, text, value)
            return
        obj: object
        if kind in _SIGNED_KINDS:
            obj = self.signed(kind, text, value)
        elif kind == "cert":
            try:
                obj = message_from_tree(json.loads(value))
            except (ValueError, Malformed) as exc:
                raise self.fail(kind, text, f"not a certificate ({exc})") from exc
            if not isinstance(obj, PreparedCert) or obj.encoded != value:
                raise self.fail(kind, text, "not a canonical prepared certificate")
            if not all(self.keyring.verify(s) for s in (obj.pre_prepare, *obj.prepares)):
                raise self.fail(kind, text, "a signature in the certificate does not verify")
        else:
            try:
                obj = json.loads(value)
            except ValueError as exc:
                raise self.fail(kind, text, "value is not JSON") from exc
            if canonical(obj) != value or not _value_ok(kind, key, obj):
                raise self.fail(kind, text, "unexpected value")
            if kind == "own_checkpoint":
                assert isinstance(obj, list)
                obj = tuple(obj)
        if kind == "meta":
            assert isinstance(key, str)
            self.meta[key] = obj
            return
        self.bounded[(kind, key)] = obj
        self.hashes[(kind, key)] = row_hash(kind, text, value)

    def of(self, kind: str) -> dict[Any, Any]:
        return {k: v for (kd, k), v in self.bounded.items() if kd == kind}

    def state(self) -> DurableState:
        scalars = self.of("scalar")
        if set(scalars) != set(_SCALARS):
            raise StoreCorrupt(f"{self.name}: scalars {sorted(scalars)}, not {sorted(_SCALARS)}")
        if set(self.history) != set(range(1, len(self.history) + 1)):
            raise StoreCorrupt(f"{self.name}: the executed history has gaps")
        proof = self.of("stable_proof")
        if set(proof) != set(range(len(proof))):
            raise StoreCorrupt(f"{self.name}: the stable proof has gaps")
        committed: dict[int, set[str]] = {}
        for s, d in self.sets["committed"]:
            committed.setdefault(s, set()).add(d)
        nv = self.of("new_view")
        return DurableState(
            view=scalars["view"],
            active=scalars["active"],
            new_view_msg=nv.get(0),
            view_changes=self.of("view_change"),
            pre_prepares=self.of("pre_prepare"),
            next_seq=scalars["next_seq"],
            assigned=frozenset(self.sets["assigned"]),
            prepares=self.of("prepare"),
            commits=self.of("commit"),
            sent_commit=self.of("sent_commit"),
            prepared_certs=self.of("cert"),
            own_checkpoints=self.of("own_checkpoint"),
            checkpoints=self.of("checkpoint"),
            stable_seq=scalars["stable_seq"],
            stable_digest=scalars["stable_digest"],
            stable_app_digest=scalars["stable_app_digest"],
            stable_proof=tuple(proof[i] for i in range(len(proof))),
            history=tuple(self.history[i] for i in range(1, len(self.history) + 1)),
            reply_views=self.of("reply_view"),
            prepared_log=frozenset(self.sets["prepared_log"]),
            committed={s: frozenset(ds) for s, ds in committed.items()},
            committed_local=frozenset(self.sets["committed_local"]),
        )


def _nat(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _hex(x: object) -> bool:
    return isinstance(x, str) and len(x) == 64 and all(c in "0123456789abcdef" for c in x)


def _key_ok(kind: str, key: Hashable) -> bool:
    """The shape of each kind's key (types, not values: the replica checks those)."""
    if kind in ("meta", "scalar"):
        return key in (_META if kind == "meta" else _SCALARS)
    if kind in ("reply_view", "assigned"):
        return isinstance(key, str) and (kind == "reply_view" or _hex(key))
    if kind in ("new_view", "stable_proof", "view_change", "cert", "own_checkpoint"):
        return _nat(key)
    if kind in ("checkpoint", "history"):
        return _nat(key)
    if kind in ("pre_prepare", "sent_commit"):
        return isinstance(key, tuple) and len(key) == 2 and all(_nat(x) for x in key)
    if kind == "committed":
        return isinstance(key, tuple) and len(key) == 2 and _nat(key[0]) and _hex(key[1])
    if kind in ("prepare", "commit", "prepared_log", "committed_local"):
        return (
            isinstance(key, tuple)
            and len(key) == 3
            and _nat(key[0])
            and _nat(key[1])
            and _hex(key[2])
        )
    return False


def _value_ok(kind: str, key: Hashable, v: object) -> bool:
    if kind == "meta":
        return _nat(v)
    if kind == "reply_view":
        return _nat(v)
    if kind == "sent_commit":
        return _hex(v)
    if kind == "own_checkpoint":
        return isinstance(v, list) and len(v) == 2 and all(_hex(x) for x in v)
    if kind == "scalar":
        if key == "active":
            return isinstance(v, bool)
        if key == "stable_digest":
            return _hex(v)
        if key == "stable_app_digest":
            return v is None or _hex(v)
        return _nat(v)
    return False


# --- the durable replica --------------------------------------------------------------------


class DurableReplica:
    """A ``Replica`` whose durable state is written before anything it sends is released.

    The same entry points as ``Replica`` (the ``Node`` protocol of ``network.py``).  The
    pure replica is ``replica``; Byzantine strategies wrap a pure replica (a Byzantine
    replica may forget what it likes, so it needs no store).
    """

    def __init__(self, replica: Replica, store: ReplicaStore) -> None:
        self.replica = replica
        self.store = store
        self.failed: BaseException | None = None

    @classmethod
    def create(cls, replica: Replica, location: StoreLocation) -> DurableReplica:
        """First start: an empty store gets the fresh replica's state (transaction 0)."""
        store = ReplicaStore(location, replica, create=True)
        try:
            store.create(replica)
        except BaseException:
            store.close()
            raise
        return cls(replica, store)

    @classmethod
    def recover(cls, replica: Replica, location: StoreLocation) -> DurableReplica:
        """Restart: rebuild the freshly constructed ``replica`` from the store
        (``StoreError`` if it holds no state this replica can restart from)."""
        store = ReplicaStore(location, replica, create=False)
        try:
            state = store.load()
            try:
                replica.restore_durable(state)
            except InvalidDurableState as exc:
                raise StoreCorrupt(f"{location.name}: {exc}") from exc
        except BaseException:
            store.close()
            raise
        return cls(replica, store)

    def on_request(self, signed: Signed) -> Output:
        return self.on_message(signed)

    def on_message(self, payload: object) -> Output:
        return self._release(self._running().on_message(payload))

    def on_message_held(self, payload: object) -> Output:
        """``on_message`` without the commit: the output must not be released before
        ``release`` commits it (a driver that handles every frame of one read, then
        commits once for all of them: group commit, still write before send)."""
        return self._running().on_message(payload)

    def release(self, out: Output) -> Output:
        """Commit what the held steps changed; then ``out`` may be released."""
        return self._release(out)

    def on_timeout(self) -> Output:
        return self._release(self._running().on_timeout())

    def retransmit(self) -> Output:
        return self._release(self._running().retransmit())

    def _running(self) -> Replica:
        if self.failed is not None:
            raise StoreError(f"{self.store.name}: stopped after a failed write ({self.failed})")
        return self.replica

    def _release(self, out: Output) -> Output:
        """Write before send (BFT-SAFE-1): the durable state is committed, then ``out``
        goes back to the caller.  A failed write raises, ``out`` is never released, and
        the replica stops (fail-stop: its memory is ahead of its store; a restart
        rebuilds it from the store)."""
        try:
            self.store.sync(self.replica)
        except BaseException as exc:
            self.failed = exc
            raise
        return out

    def close(self) -> None:
        self.store.close()


# --- command line ---------------------------------------------------------------------------


def main(argv: Iterable[str] | None = None) -> int:
    """Check that a simulation replica could restart from ``DB``: 0 if so, 1 if the store
    is refused (the reason on stderr, no traceback), 2 for bad arguments."""
    p = argparse.ArgumentParser(
        prog="python -m ostrom.consensus.storage",
        description="Check whether a PBFT replica of the simulation can restart from DB.",
    )
    p.add_argument("db", type=Path)
    p.add_argument("--replica", type=int, required=True)
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--f", type=int, default=1)
    p.add_argument("--seed", type=int, default=0, help="the simulation's key seed")
    p.add_argument("--clients", type=int, default=1)
    p.add_argument("--checkpoint-k", type=int, default=16)
    p.add_argument("--window", type=int, default=32)
    args = p.parse_args(None if argv is None else list(argv))
    names = [replica_name(i) for i in range(args.n)] + [f"c{i}" for i in range(args.clients)]
    try:
        ring, signers = make_keys(args.seed, names)
        replica = Replica(
            args.replica,
            args.n,
            args.f,
            ring,
            signers[replica_name(args.replica)],
            checkpoint_k=args.checkpoint_k,
            watermark_window=args.window,
        )
    except (ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        durable = DurableReplica.recover(replica, FileLocation(args.db))
    except StoreError as exc:
        print(f"refused: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    durable.close()
    print(
        f"ok: replica {replica.id}, view {replica.view}"
        f"{'' if replica.active else ' (changing view)'}, executed {replica.last_exec}, "
        f"stable checkpoint {replica.stable_seq}, transaction {durable.store.batch}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
