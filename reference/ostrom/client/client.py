"""``Client``: what an agent uses to talk to a node — it signs, sequences and retries.

Each command is wrapped in an envelope signed with the agent's key under the agent's
next sequence number (service/identity.py).  A request that times out or loses its
connection, or meets a 503 (nothing was applied), is retried with the *same* envelope:
if the node had applied it, the node answers the retry from its log (``"retry": true``)
instead of applying it twice; if not, it applies it now.  Either way one command is
applied at most once.  If every retry fails the client raises ``ClientError`` and does
not guess: ``resync()`` reads the next seq back from the node.

Votes are commit-reveal: ``commit_vote`` draws a fresh salt, keeps the vote, reason and
salt in this object, and sends only the commitment (protocol/voting.py's function, so
the node's check is the same code); ``reveal_vote`` sends them in the reveal phase.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ostrom.protocol.commands import payload_digest
from ostrom.protocol.voting import commitment
from ostrom.service.identity import public_hex, sign_envelope

__all__ = ["Ballot", "Client", "ClientError"]


class ClientError(Exception):
    """The node refused (``code`` from its error table) or could not be reached."""

    def __init__(self, code: str, detail: str, status: int | None = None) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.status = status


@dataclass(frozen=True)
class Ballot:
    """A committed vote this client will reveal."""

    vote: str
    reason: str
    salt: str
    round: int


class Client:
    """One agent (or operator) talking to one node at ``url``."""

    def __init__(
        self,
        url: str,
        agent: str,
        key: Ed25519PrivateKey,
        *,
        seq: int | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.2,
        transport: httpx.BaseTransport | None = None,
        community: str | None = None,
    ) -> None:
        self.agent = agent
        #: the community id envelopes are signed for (ENV-1); None: read from GET /health
        self.community = community
        self.key = key
        self.retries = retries
        self.backoff = backoff
        self._seq = seq
        self._http = httpx.Client(base_url=url, timeout=timeout, transport=transport)
        self.ballots: dict[str, Ballot] = {}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- sequencing and sending -------------------------------------------------------------

    def resync(self) -> int:
        """Read this agent's next seq from the node (1 before its join)."""
        r = self._get(f"/agents/{quote(self.agent, safe='')}")
        if r.status_code == 404:
            self._seq = 1
        else:
            self._seq = int(self._json(r)["next_seq"])
        return self._seq

    def community_id(self) -> str:
        """The community id this client signs for: given, or the node's (GET /health,
        read once).  A node of another community refuses every envelope signed for this
        one (``bad_signature``), so the id is never guessed."""
        if self.community is None:
            self.community = str(self._json(self._get("/health"))["community"])
        return self.community

    def send(
        self,
        command: Mapping[str, Any],
        *,
        public_key: str | None = None,
        admission: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Sign ``command`` with the next seq, post it, retry the same envelope on a
        timeout, a lost connection or a 503; the node's answer ``{pos, result, events,
        retry}``.  ``ClientError`` for a refusal (4xx) or when every attempt failed.

        A ``replayed`` or ``out_of_order`` refusal means this client's seq is stale
        (another process signs for the same agent): the node has *another* envelope at
        that seq, so this one was not applied; the client reads the seq back once and
        signs again."""
        for resynced in (False, True):
            seq = self._seq if self._seq is not None else self.resync()
            envelope = sign_envelope(
                self.key,
                self.agent,
                seq,
                command,
                public_key,
                community=self.community_id(),
                admission=admission,
            )
            try:
                body = self._post(envelope)
            except ClientError as exc:
                if exc.code in ("replayed", "out_of_order") and not resynced:
                    self.resync()
                    continue
                raise
            self._seq = seq + 1
            return body
        raise AssertionError("unreachable")  # pragma: no cover

    def _post(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """Post one envelope, resending it unchanged on a timeout, a lost connection or
        a 503; the 200 body, or ``ClientError``."""
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                r = self._http.post("/commands", json=envelope)
            except httpx.TransportError as exc:  # timeouts and connection errors
                last = f"{type(exc).__name__}: {exc}"
                continue
            if r.status_code == 503:
                last = "db_unavailable"
                continue
            body = self._json(r)
            if r.status_code == 200:
                return body
            raise ClientError(str(body.get("error")), str(body.get("detail")), r.status_code)
        self._seq = None  # unknown whether the node applied it: resync before the next
        raise ClientError("unreachable", f"{self.retries + 1} attempts failed ({last})")

    def _get(self, path: str, **kwargs: Any) -> httpx.Response:
        """A read; a node that cannot be reached is ``ClientError("unreachable")``."""
        try:
            return self._http.get(path, **kwargs)
        except httpx.TransportError as exc:
            raise ClientError("unreachable", f"GET {path}: {type(exc).__name__}: {exc}") from None

    @staticmethod
    def _json(r: httpx.Response) -> dict[str, Any]:
        try:
            body = r.json()
        except ValueError:
            raise ClientError(
                "malformed", f"the node answered non-JSON ({r.status_code})"
            ) from None
        if not isinstance(body, dict):
            raise ClientError("malformed", "the node answered a non-object")
        if r.status_code >= 400 and r.status_code != 503 and r.request.method == "GET":
            raise ClientError(str(body.get("error")), str(body.get("detail")), r.status_code)
        return body

    # --- the key (service/gate.py: IDENTITY_COMMANDS) -------------------------------------

    def rotate_key(self, new_key: Ed25519PrivateKey, agent: str | None = None) -> dict[str, Any]:
        """Bind ``new_key`` to ``agent`` (default: this client's agent) in place of its
        current key (KEY-1), signed with this client's key.  For this client's own agent
        the client signs with ``new_key`` from then on, once the node has answered; an
        operator's client passes ``agent`` to re-key another agent (which also lifts a
        revocation) and keeps its own key."""
        target = self.agent if agent is None else agent
        body = self.send({"op": "rotate_key", "agent": target, "public_key": public_hex(new_key)})
        if target == self.agent and body.get("result") == "ok":
            self.key = new_key
        return body

    def revoke_key(self, agent: str | None = None) -> dict[str, Any]:
        """Revoke ``agent``'s key (default: this client's own agent; KEY-2): nothing more
        is accepted for it until an operator's ``rotate_key``.  An agent may sign its own
        revocation with its current key or any key it held before (a stolen key that a
        thief has rotated away from still revokes), an operator anyone's."""
        return self.send({"op": "revoke_key", "agent": self.agent if agent is None else agent})

    # --- the ops (protocol/commands.py) -----------------------------------------------------

    def join(
        self,
        subscriptions: Iterable[str] = (),
        *,
        admission: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Register this client's key under its agent name.  ``admission``: the proof
        the community's ``join_mode`` asks — ``{"nonce": identity.solve_pow(...)}`` (pow)
        or ``{"operator": id, "invite": identity.sign_invite(...)}`` (invite)."""
        cmd: dict[str, Any] = {"op": "join", "agent": self.agent}
        if subscriptions:
            cmd["subscriptions"] = list(subscriptions)
        return self.send(cmd, public_key=public_hex(self.key), admission=admission)

    def propose(
        self,
        artifact: str,
        slot: str,
        digest: str | None = None,
        evidence: Iterable[str] | None = None,
        *,
        content: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        source: str | None = None,
        embedding: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """Propose ``artifact`` for ``slot``: with ``content`` (and metadata, and an
        ``embedding`` of the community's ``embedding_dim`` numbers) the digest is
        computed here (``payload_digest``; a ``digest`` passed too is sent as given, and
        the node refuses it ``digest_mismatch`` if it differs); without, by digest only."""
        cmd: dict[str, Any] = {"op": "propose", "agent": self.agent, "artifact": artifact}
        cmd["slot"] = slot
        payload = _payload(content, title, tags, source, embedding)
        return self.send(_with_payload(cmd, digest, evidence, payload))

    def resubmit(
        self,
        artifact: str,
        digest: str | None = None,
        evidence: Iterable[str] | None = None,
        *,
        content: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        source: str | None = None,
        embedding: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """Resubmit a revised ``artifact`` (the digest as ``propose`` computes it)."""
        cmd: dict[str, Any] = {"op": "resubmit", "agent": self.agent, "artifact": artifact}
        payload = _payload(content, title, tags, source, embedding)
        return self.send(_with_payload(cmd, digest, evidence, payload))

    def object(self, artifact: str) -> dict[str, Any]:
        return self.send({"op": "object", "agent": self.agent, "artifact": artifact})

    def commit_vote(
        self,
        artifact: str,
        vote: str,
        reason: str,
        *,
        keep: Callable[[str, Ballot], None] | None = None,
    ) -> dict[str, Any]:
        """Commit to ``vote`` (with a fresh salt, kept here for the reveal).

        ``keep(artifact, ballot)`` is called before the commit is sent: a caller that
        must reveal after a restart stores the ballot there (ostrom/agent/ballots.py), so
        no commit is ever on the node whose salt is lost."""
        rnd = int(self.artifact(artifact)["round"])
        ballot = Ballot(vote, reason, secrets.token_hex(32), rnd)
        if keep is not None:
            keep(artifact, ballot)
        digest = commitment(self.agent, artifact, rnd, vote, reason, ballot.salt)
        out = self.send(
            {"op": "commit_vote", "agent": self.agent, "artifact": artifact, "commitment": digest}
        )
        if out["result"] == "ok":
            self.ballots[artifact] = ballot
        return out

    def reveal_vote(self, artifact: str) -> dict[str, Any]:
        """Reveal the vote committed with ``commit_vote`` (``KeyError`` if none)."""
        b = self.ballots[artifact]
        return self.send(
            {
                "op": "reveal_vote",
                "agent": self.agent,
                "artifact": artifact,
                "vote": b.vote,
                "reason": b.reason,
                "salt": b.salt,
            }
        )

    def arbitrate(self, artifact: str, outcome: str) -> dict[str, Any]:
        return self.send(
            {"op": "arbitrate", "agent": self.agent, "artifact": artifact, "outcome": outcome}
        )

    def dispute(self, artifact: str, reason: str) -> dict[str, Any]:
        return self.send(
            {"op": "dispute", "agent": self.agent, "artifact": artifact, "reason": reason}
        )

    def urgent_report(self, artifact: str, reason: str) -> dict[str, Any]:
        return self.send(
            {"op": "urgent_report", "agent": self.agent, "artifact": artifact, "reason": reason}
        )

    def forget_vote(self, artifact: str, confidence: float | None = None) -> dict[str, Any]:
        cmd: dict[str, Any] = {"op": "forget_vote", "agent": self.agent, "artifact": artifact}
        if confidence is not None:
            cmd["confidence"] = confidence
        return self.send(cmd)

    def tick(self) -> dict[str, Any]:
        """An operator's tick (the node refuses it from anyone else: not_operator)."""
        return self.send({"op": "tick"})

    def recruit(self, artifact: str) -> dict[str, Any]:
        return self.send({"op": "recruit", "artifact": artifact})

    # --- reading ----------------------------------------------------------------------------

    def artifacts(self) -> dict[str, Any]:
        return self._json(self._get("/artifacts"))

    def artifact(self, artifact: str) -> dict[str, Any]:
        return self._json(self._get(f"/artifacts/{quote(artifact, safe='')}"))

    def content(self, artifact: str) -> dict[str, Any]:
        """GET /artifacts/{id}/content: ``{artifact, digest, content?, title?, tags?,
        source?}``; ``ClientError`` ``not_found``, ``no_content`` or
        ``content_forgotten`` (the artifact was forgotten: its content is purged)."""
        return self._json(self._get(f"/artifacts/{quote(artifact, safe='')}/content"))

    def search(
        self,
        q: str | None,
        k: int = 10,
        include_history: bool = False,
        slot: str | None = None,
        *,
        vector: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """GET /search (POST /search for a query over ``_LONG_QUERY`` bytes or with a
        ``vector``): ``{"hits": [...], "position": n}``, the ``k`` best matches by BM25
        among current knowledge (READ-1), superseded versions too with
        ``include_history``; with a query ``vector`` (``q`` may then be None) by cosine
        similarity, or both rankings fused; each hit carries its content, provenance and
        ranks.  ``ClientError`` ``bad_query``, ``query_syntax``, ``query_too_large``,
        ``bad_embedding``, ``embedding_dimension``, ``embeddings_off``."""
        if q is None and vector is None:
            raise ValueError("a search needs q, a vector, or both")
        params: dict[str, Any] = {"k": k}
        if q is not None:
            params["q"] = q
        if include_history:
            params["include"] = "history"
        if slot is not None:
            params["slot"] = slot
        if vector is not None:
            params["vector"] = _sendable(vector)
        elif q is not None and len(q.encode("utf-8", "surrogatepass")) <= _LONG_QUERY:
            return self._json(self._get("/search", params=params))
        try:
            r = self._http.post("/search", json=params)
        except httpx.TransportError as exc:
            raise ClientError("unreachable", f"POST /search: {type(exc).__name__}: {exc}") from None
        body = self._json(r)
        if r.status_code != 200:
            raise ClientError(str(body.get("error")), str(body.get("detail")), r.status_code)
        return body

    def slot(self, slot: str) -> dict[str, Any]:
        """GET /slots/{slot}: ``{"slot", "current": [hit, ...], "history": [hit, ...],
        "position"}``: the slot's current value(s) and its superseded versions in order."""
        return self._json(self._get(f"/slots/{quote(slot, safe='')}"))

    def agent_info(self, agent: str | None = None) -> dict[str, Any]:
        return self._json(self._get(f"/agents/{quote(agent or self.agent, safe='')}"))

    def log(self, after: int = 0, limit: int = 100) -> list[dict[str, Any]]:
        body = self._json(self._get("/log", params={"after": after, "limit": limit}))
        return list(body["entries"])

    def events(self, after: int = 0, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Entries after ``after``, waiting up to ``timeout`` s for the first (long poll)."""
        r = self._get(
            "/events",
            params={"after": after, "timeout": timeout},
            timeout=timeout + self._http.timeout.read if self._http.timeout.read else None,
        )
        return list(self._json(r)["entries"])


#: Longest query (UTF-8 bytes) ``Client.search`` sends in a URL; a longer one is POSTed.
_LONG_QUERY = 1024


def _payload(
    content: str | None,
    title: str | None,
    tags: Iterable[str] | None,
    source: str | None,
    embedding: Sequence[float] | None,
) -> dict[str, Any]:
    """The payload of these fields (those given)."""
    payload: dict[str, Any] = {}
    for key, value in (("content", content), ("title", title), ("source", source)):
        if value is not None:
            payload[key] = value
    if tags is not None:
        payload["tags"] = list(tags)
    if embedding is not None:
        payload["embedding"] = _sendable(embedding)
    return payload


def _sendable(vector: Sequence[float]) -> list[float]:
    """``vector`` as a list JSON can carry: NaN and infinity cannot be sent, so they are
    the node's ``bad_embedding`` refusal, raised here without a round trip."""
    out = list(vector)
    for x in out:
        if isinstance(x, float) and not math.isfinite(x):
            raise ClientError("bad_embedding", "NaN or an infinity (JSON carries neither)", 422)
    return out


def _with_payload(
    cmd: dict[str, Any],
    digest: str | None,
    evidence: Iterable[str] | None,
    payload: dict[str, Any],
) -> dict[str, Any]:
    """``cmd`` with its digest, evidence and payload (the digest computed from the payload
    when none is given)."""
    if digest is None:
        if not payload:
            raise ValueError("a proposal needs a digest or a content")
        digest = payload_digest(payload)
    extra = {"evidence": list(evidence)} if evidence else {}
    return {**cmd, "digest": digest, **extra, **payload}
