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

**Who may put, and how much** (issue 40, item 4).  The put channel is authenticated as a
replica link is (cluster/wire.py: the hello's signed challenge; only the front's client
identities may prove a put), so no other local process can make a replica keep anything.
The file is bounded in bytes besides (``max_bytes``: ``payload_bytes`` in cluster.toml):
a put beyond it is refused (``PayloadFull``, answered as an error: the front then counts
one replica fewer that kept the payload, and orders nothing below ``n - f``).  A payload
is self-certifying (its digest is in the signed command), so a put can never change
content; the bound is what stops it from filling the disk.

**Repair** (issue 41).  The front orders a command once ``n - f`` replicas kept its
payload, so up to ``f`` honest replicas may execute it without the payload (down, the
put lost, restarted before it came).  The ordered batch says which of its commands had a
payload handed (``carried``, cluster/app.py), so such a replica knows what it lacks: it
executes the command as every replica does (the payload is not protocol state) and then
fetches the payload from its peers (``Repair``: the decisions, sans-IO; the fetches are
the replica process's).  A peer's answer is checked against the digest in the ordered,
signed command (``check_put``): a Byzantine peer cannot make it keep other bytes, only
refuse or stall, and the next peer is asked.  Honest replicas that kept it are at least
``n - 2f >= f + 1``, so while they are reachable the repair ends.  Meanwhile the replica
answers a content read of that artifact 503 ``content_pending`` (the front then asks
another replica) and its search does not find it (it is not in its index yet).  A peer
refuses to serve the payload of an artifact it knows forgotten (``fetch_answer``), a
forgotten artifact is never fetched again (``Repair.drop``), and a payload fetched for an
artifact forgotten later is purged with the others (FORGET-PURGE).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ostrom.cluster.config import DEFAULT_PAYLOAD_BYTES
from ostrom.protocol.commands import payload_of
from ostrom.service.gate import payload_refusal
from ostrom.service.identity import without_payload

__all__ = [
    "PayloadError",
    "PayloadFull",
    "PayloadStore",
    "Repair",
    "Wanted",
    "check_put",
    "fetch_answer",
    "ordered_form",
    "put_request",
]


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


class PayloadFull(PayloadError):
    """A put the payload file has no room for (its ``max_bytes``): refused, nothing kept."""


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

    def __init__(
        self, path: Path, *, synchronous: str = "FULL", max_bytes: int = DEFAULT_PAYLOAD_BYTES
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
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
            #: the bytes of the payloads kept (what ``max_bytes`` bounds)
            self.bytes = self._size("")
        except sqlite3.Error:
            self._db.close()
            raise

    def _size(self, where: str, args: tuple[Any, ...] = ()) -> int:
        row = self._db.execute(
            f"SELECT coalesce(sum(length(CAST(body AS BLOB))), 0) FROM payload {where}", args
        ).fetchone()
        return int(row[0])

    def close(self) -> None:
        self._db.close()

    def put(self, agent: str, seq: int, artifact: str, digest: str, payload: Any) -> None:
        """Keep ``payload`` for the envelope (agent, seq) (committed when this returns);
        ``PayloadFull`` if the file would hold more than ``max_bytes``: nothing kept."""
        body = json.dumps(payload, sort_keys=True, ensure_ascii=False)
        key = (agent, seq, digest)
        old = self._size("WHERE agent = ? AND seq = ? AND digest = ?", key)
        size = len(body.encode("utf-8"))
        if self.bytes - old + size > self.max_bytes:
            raise PayloadFull(
                f"the payload file holds {self.bytes} bytes; {size} more would pass its bound"
                f" of {self.max_bytes} (payload_bytes)"
            )
        self._db.execute(
            "INSERT OR REPLACE INTO payload VALUES (?, ?, ?, ?, ?)",
            (agent, seq, artifact, digest, body),
        )
        self.bytes += size - old

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
        key = (agent, seq, digest)
        self.bytes -= self._size("WHERE agent = ? AND seq = ? AND digest = ?", key)
        self._db.execute("DELETE FROM payload WHERE agent = ? AND seq = ? AND digest = ?", key)

    def forget(self, artifacts: Iterable[str]) -> int:
        """FORGET-PURGE: delete every payload handed for these artifacts, then truncate
        the WAL so that no frame of the file still holds one.  How many were deleted."""
        purged = 0
        for x in sorted(set(artifacts)):
            self.bytes -= self._size("WHERE artifact = ?", (x,))
            purged += self._db.execute("DELETE FROM payload WHERE artifact = ?", (x,)).rowcount
        if purged:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return purged

    def count(self) -> int:
        return int(self._db.execute("SELECT count(*) FROM payload").fetchone()[0])


# --- repair -----------------------------------------------------------------------------

#: How long a payload nobody gave is left before its peers are asked again (seconds),
#: doubling each round up to ``_BACKOFF_MAX_S``.
_BACKOFF_S: Final = 0.05
_BACKOFF_MAX_S: Final = 2.0


@dataclass(frozen=True)
class Wanted:
    """A payload a replica lacks: the envelope (agent, seq) that carried it, the
    artifact and the digest the ordered command names."""

    agent: str
    seq: int
    artifact: str
    digest: str

    def request(self) -> dict[str, Any]:
        """The fetch request a peer is sent."""
        return {
            "agent": self.agent,
            "seq": self.seq,
            "artifact": self.artifact,
            "digest": self.digest,
        }

    @classmethod
    def from_json(cls, doc: object) -> Wanted:
        """A fetch request from the network, or ``PayloadError``."""
        if not isinstance(doc, dict) or set(doc) != {"agent", "seq", "artifact", "digest"}:
            raise PayloadError("a fetch is {agent, seq, artifact, digest}")
        agent, seq, artifact, digest = doc["agent"], doc["seq"], doc["artifact"], doc["digest"]
        if not all(isinstance(v, str) and 0 < len(v) <= 4096 for v in (agent, artifact, digest)):
            raise PayloadError("agent, artifact and digest are strings")
        if isinstance(seq, bool) or not isinstance(seq, int) or not 0 < seq < 2**63:
            raise PayloadError("seq is a positive integer")
        return cls(agent, seq, artifact, digest)


def fetch_answer(
    request: object,
    lookup: Callable[[str, int, str], dict[str, Any] | None],
    forgotten: Callable[[str], bool],
) -> dict[str, Any]:
    """What a replica answers a peer's fetch: ``{"payload": ...}`` if it holds the
    payload of that envelope (``lookup``: its payload file), else ``{"error": why}``.
    Never the payload of an artifact it knows forgotten (FORGET-PURGE: ``forgotten``,
    from its executed state; its file no longer holds one it executed the forget of, and
    one handed for an envelope it has not executed yet is refused all the same)."""
    try:
        w = Wanted.from_json(request)
    except PayloadError as exc:
        return {"error": str(exc)}
    if forgotten(w.artifact):
        return {"error": "forgotten"}  # FORGET-PURGE
    payload = lookup(w.agent, w.seq, w.digest)
    if payload is None:
        return {"error": "none"}
    return {"payload": payload}


@dataclass
class _Asking:
    wanted: Wanted
    next_peer: int  # index into the peers: who is asked next
    asked: int = 0  # peers asked in this round
    rounds: int = 0
    not_before: float = 0.0
    in_flight: bool = False


class Repair:
    """The payloads a replica lacks and whom to ask for them: the sans-IO half of peer
    repair (the replica process dials, ``ClusterApp`` keeps what is accepted).

    ``want`` records a payload executed without its payload; ``asks`` says which peer to
    ask for which payload now (one fetch in flight per payload; the first peer asked
    rotates from one payload to the next, so no single peer is everyone's first);
    ``answer`` takes a peer's answer and returns the payload if it is the preimage of
    the digest the ordered command names (``check_put``: a Byzantine peer's other bytes
    are refused, counted in ``lies``, and the next peer asked), None otherwise.  After
    every peer was asked once without success, the payload waits (doubling, capped) and
    the round starts again: a peer that is down or still executing may have it later.
    ``drop`` forgets what was wanted for forgotten artifacts: never fetched again."""

    def __init__(self, peers: Sequence[str], content_limit: int, embedding_dim: int = 0) -> None:
        self.peers = list(peers)
        self.content_limit = content_limit
        self.embedding_dim = embedding_dim
        self.wanted: dict[tuple[str, int, str], _Asking] = {}
        self.lies: dict[str, int] = {}
        self.refusals: dict[str, int] = {}
        self._added = 0

    def want(self, w: Wanted) -> None:
        key = (w.agent, w.seq, w.digest)
        if key in self.wanted or not self.peers:
            return
        self.wanted[key] = _Asking(w, self._added % len(self.peers))
        self._added += 1

    def pending(self) -> set[str]:
        """The artifacts whose payload is still being fetched."""
        return {a.wanted.artifact for a in self.wanted.values()}

    def is_wanted(self, w: Wanted) -> bool:
        return (w.agent, w.seq, w.digest) in self.wanted

    def drop(self, artifacts: Iterable[str]) -> list[Wanted]:
        """FORGET-PURGE: stop wanting the payloads of ``artifacts`` (forgotten)."""
        gone = set(artifacts)
        out = [a.wanted for a in self.wanted.values() if a.wanted.artifact in gone]
        for w in out:
            del self.wanted[(w.agent, w.seq, w.digest)]
        return out

    def asks(self, now: float, limit: int) -> list[tuple[Wanted, str]]:
        """At most ``limit`` (payload, peer) fetches to start now (marked in flight)."""
        out: list[tuple[Wanted, str]] = []
        for a in self.wanted.values():
            if len(out) >= limit:
                break
            if a.in_flight or now < a.not_before:
                continue
            a.in_flight = True
            out.append((a.wanted, self.peers[a.next_peer % len(self.peers)]))
        return out

    def answer(self, w: Wanted, peer: str, doc: object, now: float) -> dict[str, Any] | None:
        """A peer's answer to a fetch of ``w`` (None: it did not answer): the payload if
        it is the digest's preimage (the caller keeps it, then calls ``done``), else
        None and the next peer is asked (after a whole round, later)."""
        a = self.wanted.get((w.agent, w.seq, w.digest))
        if a is None:
            return None  # no longer wanted (kept meanwhile, or forgotten)
        a.in_flight = False
        payload = doc.get("payload") if isinstance(doc, dict) else None
        if payload is not None:
            try:
                check_put(
                    {**w.request(), "payload": payload}, self.content_limit, self.embedding_dim
                )
            except PayloadError:
                self.lies[peer] = self.lies.get(peer, 0) + 1  # not the digest's bytes
            else:
                return dict(payload)
        else:
            self.refusals[peer] = self.refusals.get(peer, 0) + 1
        a.next_peer = (a.next_peer + 1) % len(self.peers)
        a.asked += 1
        if a.asked >= len(self.peers):  # every peer asked: wait, then another round
            a.asked, a.rounds = 0, a.rounds + 1
            a.not_before = now + min(_BACKOFF_S * 2 ** min(a.rounds, 16), _BACKOFF_MAX_S)
        return None

    def done(self, w: Wanted) -> None:
        """``w``'s payload is kept: no longer wanted."""
        self.wanted.pop((w.agent, w.seq, w.digest), None)
