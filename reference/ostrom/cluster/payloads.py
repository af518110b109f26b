"""A replica's payloads: the content of proposals, kept apart from the ordered commands.

Why apart (docs/design.md §11): a replica's PBFT store keeps every executed request for
ever — a restarted replica re-executes its whole history, and each request is checked
against the signature its client made over it, so no request can be rewritten — and a
forgotten artifact's content must leave every file of every replica (FORGET-PURGE).  So
the front orders a propose or resubmit *without* its payload (the command keeps its
digest: the agent's signature never covered the payload, its digest does) and first
hands the payload to the replicas over their payload channel (``put``: cluster/front.py,
cluster/replica_process.py).  A replica keeps it here, durably, under the envelope that
carried it (agent, seq); when it executes that envelope it gives the payload back to the
command (``ClusterApp``) and its node keeps and indexes it as ``ostrom serve`` does.  When
an artifact is forgotten the rows of every envelope that carried a payload for it are
deleted with ``secure_delete`` and the WAL truncated: nothing of them is left in the file.

Keyed by envelope (agent, seq, digest), not by digest alone: a proposal by digest alone
(a pin) stays without content, as on a node, even if another proposal carried the same
payload.  A row whose envelope is executed but not accepted (refused by the gate, or a
protocol refusal) is discarded then, as the node keeps no payload for it; a row whose
envelope is never ordered (the front stopped in between) stays until its artifact is
forgotten.  The file is
durable (a restarted replica rebuilds its node by re-executing its history, and the
payloads come back from here); it is written with the cluster's ``synchronous`` setting
before the replica acknowledges the ``put``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from ostrom.protocol.commands import payload_of
from ostrom.service.gate import payload_refusal
from ostrom.service.identity import without_payload

__all__ = ["PayloadError", "PayloadStore", "check_put", "ordered_form", "put_request"]

_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS payload (agent TEXT NOT NULL, seq INTEGER NOT NULL,"
    " artifact TEXT NOT NULL, digest TEXT NOT NULL, body TEXT NOT NULL,"
    " PRIMARY KEY (agent, seq, digest))"
)
_INDEX: Final = "CREATE INDEX IF NOT EXISTS payload_artifact ON payload (artifact)"
#: The ops whose command may carry a payload (service/gate.py checks it).
_CARRIERS: Final = frozenset({"propose", "resubmit"})


class PayloadError(ValueError):
    """A put that is not one (the message says why): refused, nothing kept."""


def put_request(envelope: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the front hands the replicas for ``envelope``: its (agent, seq), artifact,
    digest and payload; None if it carries no payload."""
    command = envelope.get("command")
    if not isinstance(command, dict) or command.get("op") not in _CARRIERS:
        return None
    payload = payload_of(command)
    if not payload:
        return None
    return {
        "agent": envelope.get("agent"),
        "seq": envelope.get("seq"),
        "artifact": command.get("artifact"),
        "digest": command.get("digest"),
        "payload": payload,
    }


def ordered_form(envelope: Any) -> Any:
    """An envelope as the front orders it: a propose or resubmit that carries a payload
    without it (``without_payload``: the signature and the digest stay); anything else
    as it is.  The audit compares acknowledged commands in this form."""
    if isinstance(envelope, dict) and put_request(envelope) is not None:
        return {**envelope, "command": without_payload(envelope["command"])}
    return envelope


def check_put(
    doc: object, content_limit: int, embedding_dim: int = 0
) -> tuple[str, int, str, str, dict[str, Any]]:
    """A put from the network, checked as the gate checks a payload (``payload_refusal``:
    its fields, its size, and that it is the preimage of its digest), or ``PayloadError``."""
    if not isinstance(doc, dict) or set(doc) != {"agent", "seq", "artifact", "digest", "payload"}:
        raise PayloadError("a put is {agent, seq, artifact, digest, payload}")
    agent, seq, artifact, digest, payload = (
        doc["agent"],
        doc["seq"],
        doc["artifact"],
        doc["digest"],
        doc["payload"],
    )
    if not isinstance(agent, str) or not isinstance(artifact, str) or not isinstance(digest, str):
        raise PayloadError("agent, artifact and digest are strings")
    if isinstance(seq, bool) or not isinstance(seq, int) or not 0 < seq < 2**63:
        raise PayloadError("seq is a positive integer")
    if not isinstance(payload, dict) or not payload:
        raise PayloadError("payload is an object")
    command = {"op": "propose", "artifact": artifact, "digest": digest, **payload}
    if payload_of(command) != payload:
        raise PayloadError("payload has fields no payload has")
    refusal = payload_refusal(command, content_limit, embedding_dim)
    if refusal is not None:
        raise PayloadError(f"{refusal[0]}: {refusal[1]}")
    return agent, seq, artifact, digest, payload


class PayloadStore:
    """The payloads a replica was handed, by the envelope that carries them."""

    def __init__(self, path: Path, *, synchronous: str = "FULL") -> None:
        self.path = path
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            # FORGET-PURGE: a deleted payload's bytes are overwritten, not left in free pages
            self._db.execute("PRAGMA secure_delete=ON")
            self._db.execute(_SCHEMA)
            self._db.execute(_INDEX)
            # a crash between a purge and its checkpoint left the old frames in the WAL
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            self._db.close()
            raise

    def close(self) -> None:
        self._db.close()

    def put(self, agent: str, seq: int, artifact: str, digest: str, payload: Any) -> None:
        """Keep ``payload`` for the envelope (agent, seq) (committed when this returns)."""
        body = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        self._db.execute(
            "INSERT OR REPLACE INTO payload VALUES (?, ?, ?, ?, ?)",
            (agent, seq, artifact, digest, body),
        )

    def get(self, agent: str, seq: int, digest: str) -> dict[str, Any] | None:
        """The payload handed for the envelope (agent, seq) with this digest, if any."""
        row = self._db.execute(
            "SELECT body FROM payload WHERE agent = ? AND seq = ? AND digest = ?",
            (agent, seq, digest),
        ).fetchone()
        if row is None:
            return None
        doc = json.loads(row[0])
        return doc if isinstance(doc, dict) else None

    def discard(self, agent: str, seq: int, digest: str) -> None:
        """The envelope (agent, seq) was not applied with this payload: its row goes."""
        self._db.execute(
            "DELETE FROM payload WHERE agent = ? AND seq = ? AND digest = ?", (agent, seq, digest)
        )

    def forget(self, artifacts: Iterable[str]) -> int:
        """FORGET-PURGE: delete every payload handed for these artifacts, then truncate
        the WAL so that no frame of the file still holds one.  How many were deleted."""
        purged = 0
        for x in sorted(set(artifacts)):
            purged += self._db.execute("DELETE FROM payload WHERE artifact = ?", (x,)).rowcount
        if purged:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return purged

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM payload").fetchone()[0])
