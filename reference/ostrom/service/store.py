"""The node's durable log: one SQLite file (stdlib ``sqlite3``), WAL, synchronous=FULL.

What is durable, and when (docs/service.md "Durability"): every command the node answers
was first appended here, in *one* transaction with its observation; the HTTP response is
sent after the commit.  Refused commands (the protocol's refusals: they are sequenced,
they may count a violation) are rows too, marked ``refused``.  Envelopes the gate
refuses are never rows: they changed nothing.

Tables:

* ``meta``: ``format`` (``FORMAT``), ``version`` (``_VERSION``), ``params`` and ``setup``
  (JSON): what every replay of the log starts from;
* ``log``: ``pos`` (1, 2, ... contiguous), ``agent``, ``seq`` (UNIQUE together: an
  (agent, seq) is applied at most once), the ``envelope`` as received but for a
  propose's or resubmit's payload (canonical JSON, signature included: the log proves who
  sent what; the signature covers the payload through the digest, service/identity.py),
  ``result``, ``refused``, the
  ``observation`` (canonical JSON);
* ``content``: the payload of each digest (content, title, tags, source: docs/design.md
  §10), stored once however often it is proposed, with a stable integer ``id`` (room for
  an FTS5 external-content index on it, whose rowid must not move);
* ``artifact_content``: which artifact carried which digest's payload in an accepted
  propose or resubmit (the log rows name the digest; this is their index).  When the log
  forgets an artifact its rows go, and so does every payload no other artifact carried
  (FORGET-PURGE): deleted with ``secure_delete`` on, then the WAL checkpointed and
  truncated, so that the bytes are in no file of the database any more;
* ``content_fts``: an FTS5 index of the ``content`` table (external content, rowid =
  ``content.id``; columns content, title, tags, source), kept in step by triggers on the
  table's inserts and deletes in the same transaction; GET /search ranks it by BM25
  (service/search.py).  A purge deletes through it and then merges it (``optimize``): FTS5
  deletes by writing a delete marker beside the old segment, which still holds the
  forgotten terms until a merge drops both (FORGET-PURGE);
* ``content_vec``: the embedding of each payload that carries one (dense retrieval,
  service/dense.py), keyed by ``content.id``: its canonical JSON (hashed with the rest of
  the payload) and its unit vector (float32, what the k-NN reads); deleted with its
  ``content`` row by a trigger, so a purge takes it too (FORGET-PURGE);
* ``provenance``: per artifact, what the log knows of its last activation and its
  supersession (the round, the submitter's tier and reputation at that moment, the
  artifact it superseded, the one that superseded it), written with the row that caused
  it;
* ``temp.search_index`` (not in the file: SQLite's temporary database of the connection,
  in memory): per content id, how many artifacts carry it that READ-1 lets through
  without and with ``include=history``.  The node keeps it in step with the Community's
  public state (``Node`` rebuilds it on open and updates it after every command);
  ``matches`` joins it, so the READ-1 filter and ``k`` reach SQL and a search reads
  ``k`` rows instead of every match (docs/design.md §11); for a term most payloads hold,
  ``matches`` ranks from the node's postings of it instead (service/bm25.py), with the
  same answer;
* ``reads`` and ``read_queries``: advisory read counts of GET /search (per artifact: times
  returned, last round read, the recent query texts, bounded) — not protocol state, not
  replicated, purged with a forgotten artifact;
* ``snapshot``: every K commands, the state after ``pos`` (``{"public", "full"}``: the
  public state and the gate's whole state, service/snapshot.py) and its SHA-256.  The
  node starts from the latest one and replays the log after it; ``--verify`` replays
  the whole log and compares every snapshot.

The file is hostile input: ``open`` checks SQLite's own ``quick_check``, the header, the
schema version, contiguous positions and every JSON column, and refuses what fails
(``StoreError``, the CLI exits 2) without writing anything.  A ``sqlite3`` error during an
append becomes ``DbUnavailable`` after the transaction is rolled back.  ``probe`` asks
whether a write of a given size commits now (a transaction that adds and removes a row of
``meta`` in one commit: the pages are written and synced, the file's content is unchanged),
what the node's degraded mode waits for after a failed append (service/node.py).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from ostrom.protocol.commands import payload_digest
from ostrom.protocol.lifecycle import FORGOTTEN
from ostrom.service import bm25, dense
from ostrom.service.bm25 import match_terms
from ostrom.service.identity import canonical

__all__ = [
    "FORMAT",
    "PROVENANCE",
    "RECENT_QUERIES",
    "DbUnavailable",
    "Entry",
    "Row",
    "Store",
    "StoreError",
    "digest",
]

#: The file format the ``meta`` table names; a file of another format is refused.
FORMAT: Final = "ostrom-node/1"
#: The schema version; bumped with any change of the tables or of what a row means.
#: Version 5: every envelope is signed for the community id in ``meta.setup`` (ENV-1).  A
#: file of an earlier version (1: before the content tables, 2: before the search tables,
#: 3: before the embeddings, 4) holds envelopes signed for no community, which verify
#: under none: it is refused (``_BEFORE_COMMUNITY``), never upgraded.
_VERSION: Final = 5
#: The versions whose envelopes name no community (refused on open, with how to move on).
_BEFORE_COMMUNITY: Final = ("1", "2", "3", "4")
#: Most recent query texts kept per artifact in ``read_queries`` (advisory).
RECENT_QUERIES: Final = 8
#: Reads kept in memory before they are written without waiting for a log append.
_READ_BUFFER: Final = 256
#: The BM25 weights of the FTS5 columns content, title, tags, source: a title and tags are
#: the submitter's own summary of the text, a source is a reference, rarely searched.
_WEIGHTS: Final = "1.0, 2.0, 2.0, 0.5"
#: The columns of the ``provenance`` table (but its key).
PROVENANCE: Final = (
    "activated_round",
    "submitter_tier",
    "submitter_reputation",
    "supersedes",
    "superseded_by",
    "superseded_round",
)

_CONTENT_SCHEMA: Final = """
CREATE TABLE content (
    id INTEGER PRIMARY KEY,
    digest TEXT NOT NULL UNIQUE,
    content TEXT,
    title TEXT,
    tags TEXT,
    source TEXT
);
CREATE TABLE artifact_content (
    artifact TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (artifact, digest)
);
CREATE INDEX artifact_content_digest ON artifact_content (digest);
"""

_SEARCH_SCHEMA: Final = """
CREATE VIRTUAL TABLE content_fts USING fts5(
    content, title, tags, source, content='content', content_rowid='id'
);
CREATE TRIGGER content_fts_insert AFTER INSERT ON content BEGIN
    INSERT INTO content_fts (rowid, content, title, tags, source)
    VALUES (new.id, new.content, new.title, new.tags, new.source);
END;
CREATE TRIGGER content_fts_delete AFTER DELETE ON content BEGIN
    INSERT INTO content_fts (content_fts, rowid, content, title, tags, source)
    VALUES ('delete', old.id, old.content, old.title, old.tags, old.source);
END;
CREATE TABLE provenance (
    artifact TEXT PRIMARY KEY,
    activated_round INTEGER,
    submitter_tier INTEGER,
    submitter_reputation REAL,
    supersedes TEXT,
    superseded_by TEXT,
    superseded_round INTEGER
);
CREATE TABLE reads (
    artifact TEXT PRIMARY KEY,
    returned INTEGER NOT NULL,
    last_round INTEGER NOT NULL
);
CREATE TABLE read_queries (
    id INTEGER PRIMARY KEY,
    artifact TEXT NOT NULL,
    q TEXT NOT NULL,
    round INTEGER NOT NULL
);
CREATE INDEX read_queries_artifact ON read_queries (artifact, id);
"""

_DENSE_SCHEMA: Final = """
CREATE TABLE content_vec (
    id INTEGER PRIMARY KEY,
    embedding TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE TRIGGER content_vec_delete AFTER DELETE ON content BEGIN
    DELETE FROM content_vec WHERE id = old.id;
END;
"""

_SCHEMA: Final = (
    """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE log (
    pos INTEGER PRIMARY KEY,
    agent TEXT NOT NULL,
    seq INTEGER NOT NULL,
    envelope TEXT NOT NULL,
    result TEXT NOT NULL,
    refused INTEGER NOT NULL,
    observation TEXT NOT NULL,
    UNIQUE (agent, seq)
);
CREATE TABLE snapshot (pos INTEGER PRIMARY KEY, state TEXT NOT NULL, sha256 TEXT NOT NULL);
"""
    + _CONTENT_SCHEMA
    + _SEARCH_SCHEMA
    + _DENSE_SCHEMA
)

#: The search index (module docstring): a temporary table, never in the file.
_SEARCH_INDEX: Final = (
    "CREATE TEMP TABLE search_index "
    "(id INTEGER PRIMARY KEY, current INTEGER NOT NULL, history INTEGER NOT NULL)"
)
#: The columns of ``search_index`` that ``matches(only=...)`` may require to be positive.
_SEARCH_INDEX_COLUMNS: Final = ("current", "history")

#: Every table of a current file (besides FTS5's own shadow tables).
_TABLES: Final = frozenset(
    {"meta", "log", "snapshot", "content", "artifact_content", "content_fts"}
    | {"provenance", "reads", "read_queries", "content_vec"}
)


def _statements(script: str) -> list[str]:
    """The statements of a schema script (a trigger's body keeps its own semicolons)."""
    out, buf = [], ""
    for part in script.strip().split(";"):
        buf += part + ";"
        body = buf.strip()
        if body.upper().startswith("CREATE TRIGGER") and not body.upper().endswith("END;"):
            continue
        if body.strip(";").strip():
            out.append(body)
        buf = ""
    return out


class StoreError(Exception):
    """The database file cannot be used as a node's log (unknown, corrupt, torn, tampered)."""


class DbUnavailable(Exception):
    """A write failed (disk full, locked, I/O): nothing of the command was kept."""


@dataclass(frozen=True)
class Entry:
    """One log row, decoded."""

    pos: int
    agent: str
    seq: int
    envelope: dict[str, Any]
    result: str
    observation: dict[str, Any]


def _text(obj: Any) -> str:
    """The canonical JSON text stored in a column."""
    return canonical(obj).decode()


def digest(state: Any) -> str:
    return hashlib.sha256(canonical(state)).hexdigest()


def _loads(value: object, what: str) -> Any:
    if not isinstance(value, str):
        raise StoreError(f"{what}: not text")
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise StoreError(f"{what}: not JSON ({exc})") from None


@dataclass(frozen=True)
class Row:
    """One log row as stored: the envelope's and observation's canonical texts, and the
    text of the snapshot taken after it (None: no snapshot)."""

    agent: str
    seq: int
    envelope: str
    result: str
    observation: str
    state: str | None = None
    #: the accepted command's artifact, digest and payload (None: none to keep)
    payload: tuple[str, str, dict[str, Any]] | None = None
    #: the artifacts the command forgot (their payloads are purged, FORGET-PURGE)
    forgotten: tuple[str, ...] = ()
    #: what the command changed of the ``provenance`` table: (artifact, {column: value})
    provenance: tuple[tuple[str, dict[str, Any]], ...] = ()

    @classmethod
    def of(
        cls,
        envelope: Mapping[str, Any],
        observation: Mapping[str, Any],
        snapshot: Any,
        payload: Mapping[str, Any] | None = None,
        provenance: Sequence[tuple[str, dict[str, Any]]] = (),
    ) -> Row:
        """The row of an envelope (without its payload) and its observation
        (``ValueError``/``TypeError`` for what canonical JSON cannot hold); ``payload``:
        the payload the command carried, kept if the command was accepted."""
        command = envelope.get("command")
        ok = observation.get("result") == "ok"
        kept = None
        if payload and ok and isinstance(command, dict):
            kept = (str(command["artifact"]), str(command["digest"]), dict(payload))
        forgotten = tuple(
            str(ev["artifact"])
            for ev in observation.get("events", ())
            if isinstance(ev, dict) and ev.get("to") == FORGOTTEN and "artifact" in ev
        )
        return cls(
            str(envelope["agent"]),
            int(envelope["seq"]),
            _text(envelope),
            str(observation["result"]),
            _text(observation),
            None if snapshot is None else _text(snapshot),
            kept,
            forgotten,
            tuple(provenance),
        )

    @property
    def stored_bytes(self) -> int:
        """About what the row writes to the file: its log texts, its snapshot, its payload
        (what a probe of the disk after a failed append writes: service/node.py)."""
        state = 0 if self.state is None else len(self.state.encode())
        payload = 0 if self.payload is None else len(canonical(self.payload[2]))
        return self.log_bytes + state + payload

    @property
    def log_bytes(self) -> int:
        """What the row adds to the log (what the snapshot policy counts)."""
        return len(self.envelope.encode()) + len(self.observation.encode())

    def sizes_after(self, snapshot_bytes: int, since: int) -> tuple[int, int]:
        """(the latest snapshot's size, the log bytes since it) once this row is appended."""
        if self.state is None:
            return snapshot_bytes, since + self.log_bytes
        return len(self.state.encode()), 0


class Store:
    """One node's SQLite file.  The writer's connection is the node's (it serialises the
    writes); reads run on other connections, WAL snapshots that never wait for a write
    in progress nor delay one (issue 41, item 9):

    * ``read_snapshot``: the calling thread's read-only connection, in one read
      transaction (GET /log, /slots/{slot}, /artifacts/{id}/content); every read method
      called inside it reads that snapshot;
    * ``search_snapshot``: the search connection, one at a time (``_search_lock``), which
      holds the search index (``temp.search_index``, the hot terms' postings, the
      vectors): the writer only queues each group's change of the index (``index_search``),
      and a search applies what was queued up to the position it reads (``sync_search``);
    * ``reads`` (the advisory read record), from any thread, on its read-only connection.

    A connection is never used by two threads at once: the writer's by the node's
    lock, the search connection by ``_search_lock``, a reader by its own thread."""

    def __init__(self, db: sqlite3.Connection, path: Path, params: Any, setup: Any) -> None:
        self._db = db
        self.path = path
        self.params: dict[str, Any] = params
        self.setup: dict[str, Any] = setup
        self.last_pos = self._count()
        #: whether a commit waits for the disk (synchronous=FULL), set by ``open``
        self.fsync = True
        #: the size of the latest snapshot's state text, and of the log rows after it
        #: (envelope and observation texts): the node's snapshot policy compares them
        self.snapshot_bytes, self.bytes_since_snapshot = self._sizes()
        #: advisory reads not yet written: artifact -> (times returned, last round), and
        #: the (artifact, query, round) of each
        self._pending_reads: dict[str, tuple[int, int]] = {}
        #: the stored unit vectors, read once and kept until a write adds or purges one
        #: (a search used to read every vector from SQLite: seconds at 100k)
        self._vectors: tuple[Any, Any] | None = None
        #: the transaction in progress purged a payload, added or purged a vector: the
        #: search side drops its postings, its vectors, once it is committed
        self._drop_postings = self._drop_vectors = False
        self._pending_queries: list[tuple[str, str, int]] = []
        #: held while the buffered reads change or are written and committed, so that
        #: ``reads`` sees them either buffered or in the file, never both nor neither
        self._pending_lock = threading.Lock()
        #: searches' reads not yet folded into the buffer (``record_reads`` only takes
        #: this short lock: a search never waits for a commit that writes the buffer)
        self._incoming: list[tuple[tuple[str, ...], str, int]] = []
        self._incoming_lock = threading.Lock()
        #: artifacts purged since open: a search that read them before their purge
        #: records no read of them after it (FORGET-PURGE: the query texts may quote them)
        self._purged: set[str] = set()
        #: each thread's read-only connection (``reads``), all of them to close
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        #: the search connection and what it holds (the class docstring)
        self._search_lock = threading.RLock()
        self._sdb = db  # replaced by ``open`` with a connection of its own
        #: the index changes the writer queued: (log position, delta, reset, drop the
        #: postings, drop the vectors), applied by the search side in order
        self._queue: list[tuple[int, dict[int, tuple[int, int]], bool, bool, bool]] = []
        self._queue_lock = threading.Lock()
        #: the hot terms' postings: ``matches`` ranks them as FTS5 would without calling
        #: bm25 on every row (service/bm25.py)
        self.postings = bm25.Postings(db, "content_fts", _WEIGHTS)
        #: the search index's counts by content id (``current``, ``history``), what the
        #: fast path filters with: the temporary table's columns, kept in step with it
        self._counts: dict[str, Any] = {
            c: np.zeros(0, dtype=np.int64) for c in _SEARCH_INDEX_COLUMNS
        }

    # --- opening ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        create: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
        fsync: bool = True,
        busy_timeout: float = 5.0,
    ) -> Store:
        """Open ``path``; a missing file is created with ``create = (params, setup)`` (a
        missing file without ``create`` is an error).  ``StoreError`` names any problem."""
        p = Path(path)
        exists = p.exists()
        if not exists and create is None:
            raise StoreError(f"{p}: no such database")
        if exists and (not p.is_file() or p.stat().st_size == 0):
            raise StoreError(f"{p}: not a node database (empty or not a file)")
        try:
            db = sqlite3.connect(
                str(p), timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"{p}: cannot open: {exc}") from None
        try:
            if exists:
                store = cls._load(db, p)
            else:
                assert create is not None
                store = cls._create(db, p, dict(create[0]), dict(create[1]))
            db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'OFF'}")
            # FORGET-PURGE: a deleted payload's bytes are overwritten, not left in free pages
            db.execute("PRAGMA secure_delete=ON")
            # a crash between a purge and its checkpoint left the old frames in the WAL
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            store._open_search(busy_timeout)
            store.fsync = fsync
            return store
        except (sqlite3.Error, UnicodeDecodeError) as exc:  # text that is not UTF-8 any more
            db.close()
            raise StoreError(f"{p}: not a usable node database: {exc}") from None
        except StoreError:
            db.close()
            raise

    def _open_search(self, busy_timeout: float) -> None:
        """The search connection (read-only on the file; its temporary database, in
        memory, holds the search index) and the postings that read through it."""
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        sdb = sqlite3.connect(
            uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
        )
        try:
            sdb.execute("PRAGMA temp_store=MEMORY")  # the search index: no file at all
            sdb.execute(_SEARCH_INDEX)
        except BaseException:
            sdb.close()
            raise
        self._sdb = sdb
        self.postings = bm25.Postings(sdb, "content_fts", _WEIGHTS)

    @classmethod
    def _create(cls, db: sqlite3.Connection, p: Path, params: Any, setup: Any) -> Store:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _statements(_SCHEMA):
                db.execute(stmt)
            meta = {
                "format": FORMAT,
                "version": str(_VERSION),
                "params": _text(params),
                "setup": _text(setup),
            }
            db.executemany("INSERT INTO meta VALUES (?, ?)", sorted(meta.items()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return cls(db, p, params, setup)

    @classmethod
    def _load(cls, db: sqlite3.Connection, p: Path) -> Store:
        check = db.execute("PRAGMA quick_check").fetchall()
        if check != [("ok",)]:
            # quick_check's rows may hold several lines each ("*** in database main ***",
            # then one line per problem): the refusal is one line (the CLI prints it)
            lines = [ln for r in check for ln in str(r[0]).splitlines() if not ln.startswith("***")]
            first = lines[0] if lines else "?"
            more = f"; {len(lines) - 1} more problem(s)" if len(lines) > 1 else ""
            raise StoreError(f"{p}: corrupt database ({first}{more})")
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"meta", "log", "snapshot"} <= tables:
            raise StoreError(f"{p}: not a node database (tables: {sorted(tables)})")
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        if meta.get("format") != FORMAT:
            raise StoreError(f"{p}: format {meta.get('format')!r}, expected {FORMAT!r}")
        if meta.get("version") in _BEFORE_COMMUNITY:
            raise StoreError(
                f"{p}: schema version {meta.get('version')}, from before envelopes named their "
                "community: its signatures verify under no community (ENV-1); export its log "
                "with the ostrom that wrote it and start a new node"
            )
        if meta.get("version") != str(_VERSION):
            raise StoreError(f"{p}: schema version {meta.get('version')!r}, expected {_VERSION}")
        if not tables >= _TABLES:
            raise StoreError(f"{p}: not a node database (tables: {sorted(tables)})")
        params, setup = (
            _loads(meta.get("params"), "meta.params"),
            _loads(meta.get("setup"), "meta.setup"),
        )
        if not isinstance(params, dict) or not isinstance(setup, dict):
            raise StoreError(f"{p}: meta params and setup must be JSON objects")
        n, lo, hi = db.execute("SELECT count(*), min(pos), max(pos) FROM log").fetchone()
        if n and (lo != 1 or hi != n):
            raise StoreError(f"{p}: log positions are not 1..{n} (torn or edited log)")
        db.execute("PRAGMA journal_mode=WAL")
        return cls(db, p, params, setup)

    def _rollback(self) -> None:
        """Roll back the open transaction, if any (a failing rollback leaves SQLite to
        roll back itself: an uncommitted transaction is never visible)."""
        with suppress(sqlite3.Error):
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

    def close(self) -> None:
        with self._readers_lock:
            for r in self._readers:
                r.close()
            self._readers.clear()
        with self._search_lock:
            if self._sdb is not self._db:
                self._sdb.close()
        self.flush_reads()
        self._db.close()

    # --- read snapshots ---------------------------------------------------------------------

    def _rdb(self) -> sqlite3.Connection:
        """The connection a read method reads: the snapshot this thread holds, if any,
        else the writer's (the node's own reads under its lock, the tests, replay)."""
        db: sqlite3.Connection | None = getattr(self._local, "current", None)
        return self._db if db is None else db

    @contextmanager
    def _snapshot(self, db: sqlite3.Connection) -> Iterator[int]:
        """``db`` in one read transaction, read by this thread's read methods meanwhile;
        the log position it reads (the last committed group's, when it began)."""
        if getattr(self._local, "current", None) is not None:
            raise RuntimeError("a read snapshot is already held by this thread")
        try:
            db.execute("BEGIN")
            pos = int(db.execute("SELECT coalesce(max(pos), 0) FROM log").fetchone()[0])
        except sqlite3.Error as exc:
            with suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            # StoreError: the app answers 503 db_unavailable, as for any unreadable file
            raise StoreError(f"cannot read the log: {exc}") from None
        self._local.current = db
        try:
            yield pos
        finally:
            self._local.current = None
            with suppress(sqlite3.Error):  # a read transaction: nothing to keep
                db.execute("COMMIT")

    def read_snapshot(self) -> AbstractContextManager[int]:
        """This thread's read-only connection in one read transaction (the class
        docstring): the log position its reads see.  Hold it briefly: a purge's WAL
        checkpoint waits for the readers of older snapshots (FORGET-PURGE)."""
        return self._snapshot(self._reader())

    @contextmanager
    def search_snapshot(self) -> Iterator[int]:
        """The search connection, for this thread alone, in one read transaction: the
        log position it reads.  The caller brings the search index to that position
        (``sync_search``) once the writer has queued its change (the node's view of
        that position is published after it)."""
        with self._search_lock, self._snapshot(self._sdb) as pos:
            yield pos

    def sync_search(self, upto: int | None = None) -> None:
        """Apply the queued changes of the search index up to log position ``upto``
        (None: all of them), on the search connection (``search_snapshot`` held, or
        none: then in a transaction of their own)."""
        with self._search_lock:
            with self._queue_lock:
                n = len(self._queue)
                if upto is not None:
                    n = next((i for i, q in enumerate(self._queue) if q[0] > upto), n)
                todo, self._queue = self._queue[:n], self._queue[n:]
            for _, delta, reset, postings, vectors in todo:
                if postings:
                    self.postings.clear()
                if vectors:
                    self._vectors = None
                self._apply_index(delta, reset)

    def _queue_index(
        self,
        delta: Mapping[int, tuple[int, int]],
        *,
        reset: bool = False,
        postings: bool = False,
        vectors: bool = False,
    ) -> None:
        """Queue a change of the search index at the last committed position (the writer)."""
        with self._queue_lock:
            self._queue.append((self.last_pos, dict(delta), reset, postings, vectors))

    # --- reading ----------------------------------------------------------------------------

    def _count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM log").fetchone()[0])

    def _sizes(self) -> tuple[int, int]:
        row = self._db.execute(
            "SELECT pos, length(CAST(state AS BLOB)) FROM snapshot ORDER BY pos DESC LIMIT 1"
        ).fetchone()
        pos, size = (0, 0) if row is None else (int(row[0]), int(row[1] or 0))
        since = self._db.execute(
            "SELECT coalesce(sum(length(CAST(envelope AS BLOB)) + "
            "length(CAST(observation AS BLOB))), 0) FROM log WHERE pos > ?",
            (pos,),
        ).fetchone()[0]
        return size, int(since or 0)

    def entries(self, after: int = 0, limit: int | None = None) -> Iterator[Entry]:
        """The rows after position ``after`` in order (at most ``limit``); ``StoreError``
        for a row that does not decode."""
        sql = "SELECT pos, agent, seq, envelope, result, observation FROM log WHERE pos > ? "
        sql += "ORDER BY pos" + ("" if limit is None else f" LIMIT {int(limit)}")
        with closing(self._rdb().execute(sql, (after,))) as cur:
            for pos, agent, seq, env, result, obs in cur:
                yield self._entry(pos, agent, seq, env, result, obs)

    def _entry(self, pos: Any, agent: Any, seq: Any, env: Any, result: Any, obs: Any) -> Entry:
        e, o = _loads(env, f"log[{pos}].envelope"), _loads(obs, f"log[{pos}].observation")
        if (
            not isinstance(e, dict)
            or not isinstance(o, dict)
            or not isinstance(agent, str)
            or not isinstance(seq, int)
            or not isinstance(result, str)
            or o.get("result") != result
            or e.get("agent") != agent
            or e.get("seq") != seq
        ):
            raise StoreError(f"log[{pos}]: the row does not agree with itself")
        return Entry(pos, agent, seq, e, result, o)

    def find(self, agent: str, seq: int) -> Entry | None:
        """The row of (agent, seq), if any (a retry is answered from it)."""
        row = self._db.execute(
            "SELECT pos, agent, seq, envelope, result, observation FROM log "
            "WHERE agent = ? AND seq = ?",
            (agent, seq),
        ).fetchone()
        return None if row is None else self._entry(*row)

    def snapshots(self) -> dict[int, str]:
        """Checkpoint position -> the SHA-256 of the state after it (each row verified)."""
        out: dict[int, str] = {}
        for pos, state, sha in self._db.execute("SELECT pos, state, sha256 FROM snapshot"):
            if not isinstance(state, str) or hashlib.sha256(state.encode()).hexdigest() != sha:
                raise StoreError(f"snapshot[{pos}]: its hash does not match its state")
            out[int(pos)] = sha
        return out

    def snapshot_state(self, pos: int) -> Any:
        """The parsed state of the snapshot at ``pos`` (its hash verified)."""
        row = self._db.execute("SELECT state, sha256 FROM snapshot WHERE pos = ?", (pos,))
        found = row.fetchone()
        if found is None:
            raise StoreError(f"snapshot[{pos}]: missing")
        state, sha = found
        if not isinstance(state, str) or hashlib.sha256(state.encode()).hexdigest() != sha:
            raise StoreError(f"snapshot[{pos}]: its hash does not match its state")
        return _loads(state, f"snapshot[{pos}]")

    def payload(self, artifact: str, digest: str) -> dict[str, Any] | None:
        """The payload ``artifact`` carried under ``digest`` (None: it carried none, or it
        was purged).  ``StoreError`` if the stored payload no longer hashes to its digest
        (the file is hostile input)."""
        row = (
            self._rdb()
            .execute(
                "SELECT c.content, c.title, c.tags, c.source, v.embedding FROM artifact_content a "
                "JOIN content c ON c.digest = a.digest LEFT JOIN content_vec v ON v.id = c.id "
                "WHERE a.artifact = ? AND a.digest = ?",
                (artifact, digest),
            )
            .fetchone()
        )
        if row is None:
            return None
        content, title, tags, source, embedding = row
        out: dict[str, Any] = {}
        for key, value in (("content", content), ("title", title), ("source", source)):
            if value is not None:
                out[key] = value
        if tags is not None:
            out["tags"] = _loads(tags, f"content[{digest}].tags")
        if embedding is not None:
            out["embedding"] = _loads(embedding, f"content[{digest}].embedding")
        try:
            ok = payload_digest(out) == digest
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise StoreError(f"content[{digest}]: the payload does not hash to its digest")
        return out

    def payload_count(self) -> int:
        """How many payloads the file holds (each digest once)."""
        return int(self._db.execute("SELECT count(*) FROM content").fetchone()[0])

    def matches(
        self,
        match: str,
        within: Sequence[int] | None = None,
        *,
        only: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> Iterator[tuple[int, float]]:
        """(content id, BM25 score) of every payload that ``match`` (an FTS5 query the
        caller built from quoted terms only: service/search.py) matches, best first; the
        score is FTS5's ``bm25`` negated (higher is better), with title and tags weighing
        twice the text, source half; ties in content id order.  ``within``: only these
        content ids.  ``only`` (``"current"`` or ``"history"``): only the payloads the
        search index lists for that column (READ-1 decided in SQL: FTS5 then keeps only
        the best ``limit`` rows after ``offset``, not every match).  With ``only`` and a
        hot term in ``match`` the same rows come from the hot terms' postings instead
        (``_ranked``, service/bm25.py): FTS5 would call bm25 on every row that holds it.
        Read on the search connection: inside ``search_snapshot``, its snapshot; outside
        it, after every queued change of the index."""
        with self._search_lock:
            if getattr(self._local, "current", None) is not self._sdb:
                self.sync_search()
            yield from self._matches(match, within, only=only, limit=limit, offset=offset)

    def _matches(
        self,
        match: str,
        within: Sequence[int] | None,
        *,
        only: str | None,
        limit: int | None,
        offset: int,
    ) -> Iterator[tuple[int, float]]:
        if only is not None and within is None:
            fast = self._ranked(match, only, offset + (limit if limit is not None else 1 << 62))
            if fast is not None:
                yield from fast[offset:]
                return
        sql = (
            f"SELECT f.rowid, -bm25(content_fts, {_WEIGHTS}) FROM content_fts f"
            if only is None
            # CROSS JOIN: the MATCH drives, the index is probed by content id
            else f"SELECT f.rowid, -bm25(content_fts, {_WEIGHTS}) FROM content_fts f "
            "CROSS JOIN temp.search_index e ON e.id = f.rowid"
        )
        sql += " WHERE content_fts MATCH ?"
        args: list[Any] = [match]
        if only is not None:
            if only not in _SEARCH_INDEX_COLUMNS:
                raise ValueError(f"only must be one of {_SEARCH_INDEX_COLUMNS}")
            sql += f" AND e.{only} > 0"
        if within is not None:
            sql += f" AND f.rowid IN ({','.join('?' * len(within))})"
            args += list(within)
        sql += f" ORDER BY bm25(content_fts, {_WEIGHTS}), f.rowid"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            args += [limit, offset]
        with closing(self._sdb.execute(sql, args)) as cur:
            for rowid, score in cur:
                yield int(rowid), float(score)

    def _ranked(self, match: str, only: str, n: int) -> list[tuple[int, float]] | None:
        """The best ``n`` of ``matches(match, only=only)`` from the hot terms' postings
        (service/bm25.py), the same rows and scores in the same order; None when no term of
        the query is hot (FTS5's query is fast then) or the postings cannot answer."""
        if only not in _SEARCH_INDEX_COLUMNS:
            raise ValueError(f"only must be one of {_SEARCH_INDEX_COLUMNS}")
        terms = match_terms(match)
        if terms is None:
            return None
        p = self.postings
        top = int(self._sdb.execute("SELECT coalesce(max(id), 0) FROM content").fetchone()[0])
        if not p.worth(terms, top):
            return None
        got = p.rank(terms, self._counts[only] > 0, top, max(0, min(n, 1 << 40)))
        if got is None:
            return None
        ids, scores = got
        return list(zip(ids.tolist(), scores.tolist(), strict=True))

    def neighbours(self, vector: Sequence[float]) -> Iterator[tuple[int, float]]:
        """(content id, cosine similarity) of every payload that carries an embedding,
        most similar to ``vector`` first (an exact k-NN: service/dense.py).  ``StoreError``
        for a stored vector that is not of the community's dimension (hostile file).
        Read on the search connection, as ``matches``."""
        with self._search_lock:
            if getattr(self._local, "current", None) is not self._sdb:
                self.sync_search()
            yield from self._neighbours(vector)

    def _neighbours(self, vector: Sequence[float]) -> Iterator[tuple[int, float]]:
        dim = len(vector)
        if self._vectors is None:
            bad = self._sdb.execute(
                "SELECT id FROM content_vec WHERE typeof(vector) != 'blob' "
                "OR length(vector) != ? LIMIT 1",
                (4 * dim,),
            ).fetchone()
            if bad is not None:
                raise StoreError(f"content_vec[{bad[0]}]: not a vector of {dim} float32")
        if self._vectors is None or self._vectors[1].shape[1:] != (dim,):
            rows = self._sdb.execute("SELECT id, vector FROM content_vec").fetchall()
            self._vectors = dense.matrix(rows, dim)
        ids, vectors = self._vectors
        yield from dense.nearest(ids, vectors, vector)

    def carried(self) -> dict[tuple[str, str], int]:
        """(artifact, digest) -> content id of every payload an artifact carried (what the
        node rebuilds its search index from)."""
        rows = self._db.execute(
            "SELECT a.artifact, a.digest, c.id FROM artifact_content a "
            "JOIN content c ON c.digest = a.digest"
        )
        return {(str(x), str(d)): int(i) for x, d, i in rows}

    def index_search(self, delta: Mapping[int, tuple[int, int]], *, reset: bool = False) -> None:
        """Add ``delta`` (content id -> (current, history) carriers, negative to take away)
        to the search index (``reset``: to an empty one); rows left at no carrier go.  The
        writer calls it once a group is committed: the change is queued at the committed
        position, and the search side applies it (``sync_search``)."""
        self._queue_index(delta, reset=reset)

    def _apply_index(self, delta: Mapping[int, tuple[int, int]], reset: bool) -> None:
        """``index_search``'s change, on the search connection (``_search_lock`` held)."""
        if reset:
            self._sdb.execute("DELETE FROM temp.search_index")
            for c in _SEARCH_INDEX_COLUMNS:
                self._counts[c] = np.zeros(0, dtype=np.int64)
        if delta:
            top = max(delta) + 1
            for j, c in enumerate(_SEARCH_INDEX_COLUMNS):
                arr = self._counts[c]
                if len(arr) < top:
                    arr = self._counts[c] = np.concatenate(
                        [arr, np.zeros(max(top, 2 * len(arr)) - len(arr), dtype=np.int64)]
                    )
                for i, counts in delta.items():
                    arr[i] += counts[j]
        self._sdb.executemany(
            "INSERT INTO temp.search_index VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "current = current + excluded.current, history = history + excluded.history",
            [(i, c, h) for i, (c, h) in sorted(delta.items()) if c or h],
        )
        gone = [(i,) for i, (c, h) in delta.items() if c < 0 or h < 0]
        self._sdb.executemany(
            "DELETE FROM temp.search_index WHERE id = ? AND history <= 0 AND current <= 0", gone
        )

    def search_index(self) -> dict[int, tuple[int, int]]:
        """The search index once every queued change is applied: content id ->
        (current, history) carriers."""
        with self._search_lock:
            self.sync_search()
            rows = self._sdb.execute("SELECT id, current, history FROM temp.search_index")
            return {int(i): (int(c), int(h)) for i, c, h in rows}

    def carriers(self, content_id: int) -> tuple[str, list[str]]:
        """The digest of content row ``content_id`` and the artifacts that carried it."""
        db = self._rdb()
        row = db.execute("SELECT digest FROM content WHERE id = ?", (content_id,)).fetchone()
        if row is None:
            return "", []
        d = str(row[0])
        arts = db.execute(
            "SELECT artifact FROM artifact_content WHERE digest = ? ORDER BY artifact", (d,)
        )
        return d, [str(r[0]) for r in arts]

    def content_ids(self, pairs: Sequence[tuple[str, str]]) -> list[int]:
        """The content ids of the payloads these (artifact, digest) pairs carried."""
        out: list[int] = []
        for artifact, d in pairs:
            row = self._db.execute(
                "SELECT c.id FROM artifact_content a JOIN content c ON c.digest = a.digest "
                "WHERE a.artifact = ? AND a.digest = ?",
                (artifact, d),
            ).fetchone()
            if row is not None:
                out.append(int(row[0]))
        return out

    def provenance(self, artifact: str) -> dict[str, Any]:
        """The ``provenance`` row of ``artifact`` (every column null if none)."""
        row = (
            self._rdb()
            .execute(
                f"SELECT {', '.join(PROVENANCE)} FROM provenance WHERE artifact = ?", (artifact,)
            )
            .fetchone()
        )
        return dict(zip(PROVENANCE, row or (None,) * len(PROVENANCE), strict=True))

    def _reader(self) -> sqlite3.Connection:
        """This thread's read-only connection to the file (opened on first use)."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            with self._readers_lock:
                self._readers.append(db)
            self._local.db = db
        return db

    def reads(self, artifact: str) -> dict[str, Any]:
        """The advisory read record of ``artifact``: times returned by a search, the last
        round it was, and the recent query texts that returned it (newest first, at most
        ``RECENT_QUERIES``); the reads not yet written included.  Safe from any thread
        while a write is in progress (the class docstring)."""
        db = self._reader()
        with self._pending_lock:
            pending = self._pending_reads.get(artifact)
            buffered = [q for x, q, _ in reversed(self._pending_queries) if x == artifact]
            with self._incoming_lock:  # not yet folded (only the writer folds)
                for arts, q, rnd in self._incoming:
                    if artifact in arts and artifact not in self._purged:
                        n = arts.count(artifact)
                        pending = ((pending or (0, rnd))[0] + n, rnd)
                        buffered[:0] = [q] * n
            # fetchall: a statement stepped to its end holds no read lock on the WAL
            found = db.execute(
                "SELECT returned, last_round FROM reads WHERE artifact = ?", (artifact,)
            ).fetchall()
            logged = db.execute(
                "SELECT q FROM read_queries WHERE artifact = ? ORDER BY id DESC LIMIT ?",
                (artifact, RECENT_QUERIES),
            ).fetchall()
        returned, last = (0, None) if not found else (int(found[0][0]), int(found[0][1]))
        if pending is not None:
            returned, last = returned + pending[0], pending[1]
        queries = buffered + [str(r[0]) for r in logged]
        return {
            "returned": returned,
            "last_round": last,
            "recent_queries": queries[:RECENT_QUERIES],
        }

    def record_reads(self, artifacts: Sequence[str], q: str, round: int) -> None:
        """Count a search that returned ``artifacts`` (advisory, not protocol state): kept
        in memory and written with the next log append (no fsync of its own), or by
        ``flush_reads`` once ``reads_due``; a crash loses at most those.  Any thread: it
        takes one short lock, never one a commit holds."""
        with self._incoming_lock:
            self._incoming.append((tuple(artifacts), q, round))

    def reads_due(self) -> bool:
        """Whether ``_READ_BUFFER`` reads or more wait to be written."""
        return len(self._pending_queries) + len(self._incoming) >= _READ_BUFFER

    def flush_reads(self) -> None:
        """Write the waiting reads in a transaction of their own (the writer's connection:
        the caller holds the node's lock).  Advisory: a failure loses counts only."""
        with self._pending_lock:
            self._fold()
            if not self._pending_queries:
                return
            with suppress(sqlite3.Error):
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._flush_reads()
                    self._db.execute("COMMIT")
                except BaseException:
                    self._rollback()
                    raise

    def _fold(self) -> None:
        """Move the searches' reads into the buffer (``_pending_lock`` held), but those of
        an artifact purged since the search read it (FORGET-PURGE)."""
        with self._incoming_lock:
            incoming, self._incoming = self._incoming, []
        for artifacts, q, round in incoming:
            for x in artifacts:
                if x in self._purged:
                    continue
                n, _ = self._pending_reads.get(x, (0, round))
                self._pending_reads[x] = (n + 1, round)
                self._pending_queries.append((x, q, round))

    def _flush_reads(self) -> None:
        """Write the pending reads (inside the caller's transaction)."""
        for x, (n, last) in sorted(self._pending_reads.items()):
            self._db.execute(
                "INSERT INTO reads VALUES (?, ?, ?) ON CONFLICT (artifact) DO UPDATE SET "
                "returned = returned + excluded.returned, last_round = excluded.last_round",
                (x, n, last),
            )
        touched = {x for x, _, _ in self._pending_queries}
        self._db.executemany(
            "INSERT INTO read_queries (artifact, q, round) VALUES (?, ?, ?)", self._pending_queries
        )
        for x in sorted(touched):  # keep the newest RECENT_QUERIES per artifact
            self._db.execute(
                "DELETE FROM read_queries WHERE artifact = ? AND id NOT IN (SELECT id FROM "
                "read_queries WHERE artifact = ? ORDER BY id DESC LIMIT ?)",
                (x, x, RECENT_QUERIES),
            )
        self._pending_reads, self._pending_queries = {}, []

    # --- writing ----------------------------------------------------------------------------

    def _keep(self, artifact: str, digest: str, payload: Mapping[str, Any]) -> None:
        """Store ``payload`` under ``digest`` (once), and that ``artifact`` carried it."""
        tags = payload.get("tags")
        self._db.execute(
            "INSERT OR IGNORE INTO content (digest, content, title, tags, source) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                digest,
                payload.get("content"),
                payload.get("title"),
                None if tags is None else _text(tags),
                payload.get("source"),
            ),
        )
        self._db.execute("INSERT OR IGNORE INTO artifact_content VALUES (?, ?)", (artifact, digest))
        if payload.get("embedding") is not None:
            self._keep_embedding(digest, payload["embedding"])

    def keep_late(self, artifact: str, digest: str, payload: Mapping[str, Any]) -> None:
        """``_keep`` in a transaction of its own, outside any command: a cluster replica
        keeps the payload of a command it executed without it, once a peer gave it
        (cluster/payloads.py, "Repair").  ``DbUnavailable`` if SQLite refuses."""
        self._drop_postings = self._drop_vectors = False
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._keep(artifact, digest, payload)
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except sqlite3.Error as exc:
            raise DbUnavailable(str(exc)) from None
        if self._drop_vectors:
            self._queue_index({}, vectors=True)

    def _keep_embedding(self, digest: str, embedding: Sequence[float]) -> None:
        """Store the embedding of the payload ``digest`` (once): its canonical JSON and
        its unit vector (service/dense.py), keyed by the payload's content id."""
        self._invalidate(vectors=True)  # the search side reads them again once committed
        self._db.execute(
            "INSERT OR IGNORE INTO content_vec (id, embedding, vector) "
            "SELECT id, ?, ? FROM content WHERE digest = ?",
            (_text(list(embedding)), dense.to_blob(embedding), digest),
        )

    def _purge(self, artifact: str) -> int:
        """FORGET-PURGE: ``artifact`` is forgotten; delete the payloads no artifact still
        standing carried (a forgotten one no longer counts).  How many were deleted."""
        digests = [
            r[0]
            for r in self._db.execute(
                "SELECT digest FROM artifact_content WHERE artifact = ?", (artifact,)
            )
        ]
        self._db.execute("DELETE FROM artifact_content WHERE artifact = ?", (artifact,))
        # the advisory read record goes too: the query texts that found it may quote it
        self._db.execute("DELETE FROM reads WHERE artifact = ?", (artifact,))
        self._db.execute("DELETE FROM read_queries WHERE artifact = ?", (artifact,))
        self._pending_reads.pop(artifact, None)
        self._pending_queries = [r for r in self._pending_queries if r[0] != artifact]
        purged = 0
        self._invalidate(vectors=True)  # FORGET-PURGE: a purged vector is never scored again
        for d in digests:
            cur = self._db.execute(
                "DELETE FROM content WHERE digest = ? AND NOT EXISTS "
                "(SELECT 1 FROM artifact_content WHERE digest = ?)",
                (d, d),
            )
            purged += cur.rowcount
        if purged:
            self._invalidate(postings=True)  # FORGET-PURGE: no purged row is ranked
        return purged

    def _invalidate(self, *, postings: bool = False, vectors: bool = False) -> None:
        """The search side must drop its postings or vectors: once the transaction in
        progress commits (``_append_rows``, ``keep_late`` queue it), or now if none is
        (a write outside a transaction is committed already)."""
        if self._db.in_transaction:
            self._drop_postings |= postings
            self._drop_vectors |= vectors
        else:
            self._queue_index({}, postings=postings, vectors=vectors)

    def _provenance(self, artifact: str, cols: Mapping[str, Any]) -> None:
        """Set ``cols`` of ``artifact``'s provenance row (created if none)."""
        names = sorted(c for c in cols if c in PROVENANCE)
        self._db.execute("INSERT OR IGNORE INTO provenance (artifact) VALUES (?)", (artifact,))
        if names:
            self._db.execute(
                f"UPDATE provenance SET {', '.join(f'{c} = ?' for c in names)} WHERE artifact = ?",
                (*(cols[c] for c in names), artifact),
            )

    def merge_index(self) -> None:
        """Merge the FTS5 index into one segment (FORGET-PURGE): a delete only adds a
        marker beside the segment that still holds the forgotten terms; the merge drops
        both, and ``secure_delete`` overwrites the pages they were on.  Its cost grows
        with the index (docs/design.md §11)."""
        self._db.execute("INSERT INTO content_fts (content_fts) VALUES ('optimize')")

    def checkpoint(self) -> None:
        """Copy the WAL into the database file and truncate it to zero bytes: the frames
        that held a purged payload are gone from the -wal file (FORGET-PURGE)."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def probe(self, size: int) -> None:
        """Commit a transaction that writes about ``size`` bytes and changes nothing:
        ``DbUnavailable`` if SQLite refuses (disk full, I/O error, locked), as an append
        would.  A row of ``meta`` under a key of its own, ``size`` bytes long, is inserted
        and deleted again in one transaction; ``secure_delete`` overwrites its freed pages,
        so they are written to the WAL and synced with the commit like any append's, and
        the file grows by them if it has no free pages (SQLite's page limit, a full disk).
        No reader sees the row (it is gone at the commit); a crash rolls it back.  The
        freed pages stay in the file for the next appends."""
        key = f"probe:{secrets.token_hex(8)}"  # never a key the file holds
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("INSERT INTO meta VALUES (?, zeroblob(?))", (key, size))
                self._db.execute("DELETE FROM meta WHERE key = ?", (key,))
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()  # SQLite rolled back itself after a full disk
                raise
        except sqlite3.Error as exc:
            raise DbUnavailable(str(exc)) from None

    def append_rows(self, rows: Sequence[Row]) -> list[int]:
        """Append ``rows`` in order in *one* transaction (a group commit: one fsync for
        all); their positions.  ``DbUnavailable`` if SQLite refuses: the transaction is
        rolled back and none of them was kept."""
        if not self._pending_queries and not self._incoming:
            return self._append_rows(rows)  # no read to write: ``reads`` need not wait
        with self._pending_lock:  # the buffered reads move to the file: ``reads`` waits
            self._fold()
            return self._append_rows(rows)

    def _append_rows(self, rows: Sequence[Row]) -> list[int]:
        first = self.last_pos + 1
        purged = 0
        self._drop_postings = self._drop_vectors = False
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for pos, row in enumerate(rows, first):
                    self._db.execute(
                        "INSERT INTO log VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (
                            pos,
                            row.agent,
                            row.seq,
                            row.envelope,
                            row.result,
                            int(row.result != "ok"),
                            row.observation,
                        ),
                    )
                    if row.state is not None:
                        self._db.execute(
                            "INSERT INTO snapshot VALUES (?, ?, ?)",
                            (pos, row.state, hashlib.sha256(row.state.encode()).hexdigest()),
                        )
                    if row.payload is not None:
                        self._keep(*row.payload)
                    for artifact, cols in row.provenance:
                        self._provenance(artifact, cols)
                    for artifact in row.forgotten:
                        purged += self._purge(artifact)
                if purged:
                    self.merge_index()
                self._flush_reads()
                self._db.execute("COMMIT")
            except BaseException:
                self._rollback()
                raise
        except sqlite3.Error as exc:
            raise DbUnavailable(str(exc)) from None
        if purged:
            # FORGET-PURGE: committed; a failing checkpoint is retried on the next open
            with suppress(sqlite3.Error):
                self.checkpoint()
        for row in rows:
            self.snapshot_bytes, self.bytes_since_snapshot = row.sizes_after(
                self.snapshot_bytes, self.bytes_since_snapshot
            )
        self.last_pos = first + len(rows) - 1
        # under _pending_lock still: a search's read of them is not buffered after this
        self._purged.update(x for row in rows for x in row.forgotten)
        if self._drop_postings or self._drop_vectors:
            # FORGET-PURGE: no purged row is ranked (ids come again), no purged vector scored
            self._queue_index({}, postings=self._drop_postings, vectors=self._drop_vectors)
        return list(range(first, self.last_pos + 1))
