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
* ``snapshot``: every K commands, the state after ``pos`` (``{"public", "full"}``: the
  public state and the gate's whole state, service/snapshot.py) and its SHA-256.  The
  node starts from the latest one and replays the log after it; ``--verify`` replays
  the whole log and compares every snapshot.

The file is hostile input: ``open`` checks SQLite's own ``quick_check``, the header, the
schema version, contiguous positions and every JSON column, and refuses what fails
(``StoreError``, the CLI exits 2) without writing anything.  A ``sqlite3`` error during an
append becomes ``DbUnavailable`` after the transaction is rolled back.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ostrom.protocol.commands import payload_digest
from ostrom.protocol.lifecycle import FORGOTTEN
from ostrom.service.identity import canonical

__all__ = ["FORMAT", "DbUnavailable", "Entry", "Row", "Store", "StoreError", "digest"]

#: The file format the ``meta`` table names; a file of another format is refused.
FORMAT: Final = "ostrom-node/1"
#: The schema version; bumped with any change of the tables (a file of version 1, from
#: before the content tables, is upgraded on open: its log carries no payload).
_VERSION: Final = 2

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
)


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

    @classmethod
    def of(
        cls,
        envelope: Mapping[str, Any],
        observation: Mapping[str, Any],
        snapshot: Any,
        payload: Mapping[str, Any] | None = None,
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
        )

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
    """One node's SQLite file.  Not thread-safe by itself: the node serialises access."""

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
            store.fsync = fsync
            return store
        except (sqlite3.Error, UnicodeDecodeError) as exc:  # text that is not UTF-8 any more
            db.close()
            raise StoreError(f"{p}: not a usable node database: {exc}") from None
        except StoreError:
            db.close()
            raise

    @classmethod
    def _create(cls, db: sqlite3.Connection, p: Path, params: Any, setup: Any) -> Store:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
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
        if meta.get("version") == "1" and "content" not in tables:
            cls._upgrade_v1(db)
        elif meta.get("version") != str(_VERSION):
            raise StoreError(f"{p}: schema version {meta.get('version')!r}, expected {_VERSION}")
        elif not {"content", "artifact_content"} <= tables:
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

    @staticmethod
    def _upgrade_v1(db: sqlite3.Connection) -> None:
        """Version 1 -> 2: add the (empty) content tables; a version-1 log has no payload."""
        db.execute("BEGIN IMMEDIATE")
        try:
            for stmt in _CONTENT_SCHEMA.strip().split(";"):
                if stmt.strip():
                    db.execute(stmt)
            db.execute("UPDATE meta SET value = ? WHERE key = 'version'", (str(_VERSION),))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _rollback(self) -> None:
        """Roll back the open transaction, if any (a failing rollback leaves SQLite to
        roll back itself: an uncommitted transaction is never visible)."""
        with suppress(sqlite3.Error):
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")

    def close(self) -> None:
        self._db.close()

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
        with closing(self._db.execute(sql, (after,))) as cur:
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
        row = self._db.execute(
            "SELECT c.content, c.title, c.tags, c.source FROM artifact_content a "
            "JOIN content c ON c.digest = a.digest WHERE a.artifact = ? AND a.digest = ?",
            (artifact, digest),
        ).fetchone()
        if row is None:
            return None
        content, title, tags, source = row
        out: dict[str, Any] = {}
        for key, value in (("content", content), ("title", title), ("source", source)):
            if value is not None:
                out[key] = value
        if tags is not None:
            out["tags"] = _loads(tags, f"content[{digest}].tags")
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
        purged = 0
        for d in digests:
            cur = self._db.execute(
                "DELETE FROM content WHERE digest = ? AND NOT EXISTS "
                "(SELECT 1 FROM artifact_content WHERE digest = ?)",
                (d, d),
            )
            purged += cur.rowcount
        return purged

    def checkpoint(self) -> None:
        """Copy the WAL into the database file and truncate it to zero bytes: the frames
        that held a purged payload are gone from the -wal file (FORGET-PURGE)."""
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def append_rows(self, rows: Sequence[Row]) -> list[int]:
        """Append ``rows`` in order in *one* transaction (a group commit: one fsync for
        all); their positions.  ``DbUnavailable`` if SQLite refuses: the transaction is
        rolled back and none of them was kept."""
        first = self.last_pos + 1
        purged = 0
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
                    for artifact in row.forgotten:
                        purged += self._purge(artifact)
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
        return list(range(first, self.last_pos + 1))
