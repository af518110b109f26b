"""The gate: which signed envelope may reach the ``Community``, decided before it does.

Sans-IO and deterministic, like the core it guards: ``Gate`` holds the ``Community``, the
public key of every principal (founders and operators from the setup, joiners from their
``join``) and each principal's last sequence number.  ``admit(envelope)`` answers *before*
anything is applied; a refusal names one code of ``GATE_ERRORS`` and changes nothing.
An admitted envelope goes to ``apply``: the command is applied on the Community (which
may itself refuse it, with a protocol error code and possibly a sanction: that is a
logged, sequenced command like any other), the seq advances either way, and an ok
``join`` registers its key.

``Gate`` is also an ``ostrom.consensus.application.Core`` (``apply(envelope)``,
``public_state()``), so the cluster replicates exactly this object.  Called with an
envelope that ``admit`` refuses, ``apply`` returns ``{"result": <gate code>, "events":
[]}`` and changes nothing: a replica stays deterministic whatever it is fed.

Who may send what (docs/service.md "Identity"):

* a command with an ``agent`` field is sent by that agent, under its registered key
  (``impersonation`` otherwise): nobody acts as another, votes twice under another
  name, or reveals another's vote;
* ``join`` carries the new agent's ``public_key``; the signature is checked against it
  and it is registered when the Community accepts the join.  A join from a key not yet
  registered must pass the community's ``join_mode`` (``open``; ``pow``: a proof of work
  of ``join_pow_bits`` bits over the community id and the key; ``invite``: an operator's
  signature of the key) — ``admission_required`` otherwise — and if the Community refuses
  it, it leaves no trace: the name's seq does not advance (ADM-1), so nobody can use up
  the seq of a name they do not own;
* ``tick`` and ``recruit`` (no ``agent`` field) are *operator* commands: the sender must
  be an operator of the setup (``not_operator`` otherwise);
* a propose's or resubmit's payload (content, metadata, embedding) is checked last
  (``payload_refusal``): the log keeps no payload, so a bad one must never reach it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ostrom.protocol.commands import (
    COMMANDS,
    MAX_EMBEDDING,
    PAYLOAD,
    Observation,
    is_embedding,
    is_text,
    payload_digest,
    payload_of,
)
from ostrom.protocol.community import Community, Member
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.service.identity import (
    admission_shape,
    envelope_shape,
    is_community_id,
    is_public_key,
    new_community_id,
    pow_bits,
    verify_envelope,
    verify_invite,
)

__all__ = [
    "GATE_ERRORS",
    "OPERATOR_OPS",
    "PAYLOAD_OPS",
    "Admission",
    "Founder",
    "Gate",
    "GateError",
    "Setup",
    "embedding_refusal",
    "member_from_json",
    "member_json",
    "payload_refusal",
]


@dataclass(frozen=True)
class GateError:
    """One stable refusal of the node: its code (the API), HTTP status and meaning."""

    code: str
    status: int
    doc: str


#: Every error the node answers with, before or around the Community (the one table:
#: app.py, openapi.py and docs/service.md read it).  Protocol refusals are not here: they
#: are observations (200, ``result`` = an ``ErrorCode``), logged like any command.
GATE_ERRORS: Final[dict[str, GateError]] = {
    e.code: e
    for e in (
        GateError("malformed", 400, "not JSON, or not an envelope {agent, seq, command, ...}"),
        GateError("unsigned", 401, "the envelope has no signature"),
        GateError("bad_signature", 401, "the signature is not the sender's over the envelope"),
        GateError("unknown_agent", 403, "the sender has no registered key (join first)"),
        GateError("impersonation", 403, "the command's agent is not the envelope's sender"),
        GateError("not_operator", 403, "an operator command (tick, recruit) from a non-operator"),
        GateError(
            "admission_required",
            403,
            "a join from a key not yet registered without the proof the community's join_mode "
            "asks: a proof of work of join_pow_bits bits (pow) or an operator's invitation of "
            "the key (invite)",
        ),
        GateError(
            "join_refused",
            409,
            "the Community refused a join from a key not yet registered (its result in the "
            "detail): nothing logged, the name's seq unchanged (ADM-1)",
        ),
        GateError("not_found", 404, "no such resource"),
        GateError("no_content", 404, "the artifact was proposed by digest only: no content"),
        GateError(
            "content_forgotten",
            404,
            "the artifact was forgotten: its content was purged (FORGET-PURGE)",
        ),
        GateError("method_not_allowed", 405, "the path exists but not with this method"),
        GateError("replayed", 409, "seq is not above the sender's last seq (already used)"),
        GateError("out_of_order", 409, "seq skips ahead of the sender's last seq + 1"),
        GateError("too_large", 413, "the request body exceeds the node's limit"),
        GateError(
            "too_many_refusals",
            429,
            "this address or key was refused too often lately (the node's refusal budget): "
            "nothing was checked or logged; retry after the Retry-After seconds",
        ),
        GateError(
            "content_too_large",
            413,
            "a propose or resubmit's content is over the content_limit parameter (UTF-8 bytes)",
        ),
        GateError(
            "bad_content",
            422,
            "a payload field is not its type: content text UTF-8 can encode; title, tags or "
            "source too long, empty or not strings (protocol/commands.py: PAYLOAD)",
        ),
        GateError(
            "bad_embedding",
            422,
            "an embedding or a query vector is not a list of 1 to MAX_EMBEDDING finite numbers "
            "(no NaN, no infinity, none over MAX_NUMBER in magnitude: protocol/commands.py)",
        ),
        GateError(
            "embedding_dimension",
            422,
            "an embedding or a query vector whose length is not the embedding_dim parameter",
        ),
        GateError(
            "embeddings_off",
            422,
            "an embedding or a query vector, and the community declares no embedding_dim "
            "(0: dense retrieval off)",
        ),
        GateError(
            "digest_mismatch",
            422,
            "the command's digest is not the SHA-256 of its payload's canonical JSON",
        ),
        GateError(
            "query_too_large",
            413,
            "a search query over its bounds: q over MAX_QUERY_BYTES bytes or more than "
            "MAX_TERMS distinct terms (service/search.py)",
        ),
        GateError("bad_query", 422, "a query parameter is not what the endpoint takes"),
        GateError(
            "query_syntax",
            422,
            "search takes plain words: q holds FTS5 query syntax (a double quote, *, ^, a "
            "parenthesis or brace, :, +, or AND, OR, NOT, NEAR in capitals: service/search.py)",
        ),
        GateError(
            "internal_error", 500, "the core raised (a bug, never input's fault); nothing applied"
        ),
        GateError("db_unavailable", 503, "the database refused the write; nothing was applied"),
        GateError("busy", 503, "a cluster's front has too many commands waiting; nothing was sent"),
        GateError(
            "no_replica",
            503,
            "too few replicas of the cluster answered in time: none for a read, fewer than "
            "n - f kept a command's payload (nothing was ordered)",
        ),
        GateError(
            "content_pending",
            503,
            "a cluster replica executed the artifact's command without its payload and is "
            "still fetching it from its peers (the front asks another replica first); ask "
            "again",
        ),
        GateError(
            "not_consistent",
            503,
            "consistent=1: f+1 replicas did not agree on one answer at one log position in "
            "time (they are executing; try again)",
        ),
        GateError(
            "timeout",
            504,
            "a cluster's replicas gave no result in time; the command may still execute "
            "(resend the same envelope: a retry is answered, not applied again)",
        ),
    )
}

#: The ops that may carry a payload (content and metadata).
PAYLOAD_OPS: Final = frozenset(op for op, c in COMMANDS.items() if "content" in c.optional)
#: Ops without an ``agent`` field: sent by an operator of the node.
OPERATOR_OPS: Final = frozenset(op for op, c in COMMANDS.items() if "agent" not in c.required)


@dataclass(frozen=True)
class Admission:
    """The gate's answer to an envelope: ``ok`` or a ``GATE_ERRORS`` code with a detail."""

    code: str | None
    detail: str = ""
    agent: str | None = None
    seq: int | None = None

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def status(self) -> int:
        return 200 if self.code is None else GATE_ERRORS[self.code].status


@dataclass(frozen=True)
class Founder:
    """A member the community starts with, and the public key it signs with."""

    member: Member
    public_key: str


@dataclass(frozen=True)
class Setup:
    """What a node is built from besides its parameters: founders, operators and the
    community's id (random, made with the database or written in cluster.toml: every
    envelope is signed for it, ENV-1).

    Stored in the database's header so that every replay rebuilds the same gate."""

    founders: tuple[Founder, ...] = ()
    operators: Mapping[str, str] = field(default_factory=dict)  # operator id -> public key
    community: str = field(default_factory=new_community_id)

    def __post_init__(self) -> None:
        if not is_community_id(self.community):
            raise ValueError("community must be 32 lowercase hex digits")
        ids = [f.member.id for f in self.founders] + list(self.operators)
        if len(set(ids)) != len(ids):
            raise ValueError("founder and operator ids must be unique (together)")
        for pid, key in [(f.member.id, f.public_key) for f in self.founders] + list(
            self.operators.items()
        ):
            if not is_public_key(key):
                raise ValueError(f"{pid}: public_key must be 64 hex digits (Ed25519)")

    def to_json(self) -> dict[str, Any]:
        """The JSON form stored in the database's ``meta`` (``from_json`` reads it back)."""
        return {
            "members": [member_json(f.member) for f in self.founders],
            "keys": {f.member.id: f.public_key for f in self.founders},
            "operators": dict(sorted(self.operators.items())),
            "community": self.community,
        }

    @classmethod
    def from_json(cls, doc: Any) -> Setup:
        """Inverse of ``to_json``; ``ValueError`` for anything else (hostile file bytes)."""
        if not isinstance(doc, dict) or set(doc) != {"members", "keys", "operators", "community"}:
            raise ValueError("setup: expected {members, keys, operators, community}")
        members, keys, ops = doc["members"], doc["keys"], doc["operators"]
        if not isinstance(members, list) or not isinstance(keys, dict) or not isinstance(ops, dict):
            raise ValueError("setup: members is a list, keys and operators objects")
        founders = []
        for m in members:
            member = member_from_json(m)
            if member.id not in keys:
                raise ValueError(f"setup: founder {member.id!r} has no key")
            founders.append(Founder(member, keys[member.id]))
        if set(keys) != {f.member.id for f in founders}:
            raise ValueError("setup: keys name exactly the founders")
        if not all(isinstance(k, str) and k for k in ops):
            raise ValueError("setup: operator ids are non-empty strings")
        return cls(tuple(founders), dict(ops), doc["community"])


_MEMBER_KEYS: Final = ("id", "tier", "reputation", "evidence", "pretrusted", "subscriptions")


def member_json(m: Member) -> dict[str, Any]:
    """A member as the community trace header's ``setup.members`` entry."""
    return {
        "id": m.id,
        "tier": m.tier,
        "reputation": m.reputation,
        "evidence": m.evidence,
        "pretrusted": m.pretrusted,
        "subscriptions": sorted(m.subscriptions),
    }


def member_from_json(doc: Any) -> Member:
    """A member from its JSON form, every field checked (``ValueError`` names it)."""
    from ostrom.protocol.agents import MAX_TIER
    from ostrom.protocol.commands import is_finite, is_int, is_short_id

    if not isinstance(doc, dict) or set(doc) - set(_MEMBER_KEYS) or "id" not in doc:
        raise ValueError(f"a member is an object with id and some of {', '.join(_MEMBER_KEYS)}")
    mid = doc["id"]
    if not is_short_id(mid):
        raise ValueError("a member's id is a string of 1 to 256 characters")
    tier = doc.get("tier", 0)
    if not is_int(tier) or not 0 <= tier <= MAX_TIER:
        raise ValueError(f"{mid}: tier must be an integer in 0..{MAX_TIER}")
    rep, ev = doc.get("reputation", 0.5), doc.get("evidence", 2.0)
    if not is_finite(rep) or not 0 <= rep <= 1:
        raise ValueError(f"{mid}: reputation must be a number in [0, 1]")
    if not is_finite(ev) or not 2 <= ev <= 1e9:
        raise ValueError(f"{mid}: evidence must be a number in [2, 1e9]")
    pre = doc.get("pretrusted", False)
    if not isinstance(pre, bool):
        raise ValueError(f"{mid}: pretrusted must be true or false")
    subs = doc.get("subscriptions", [])
    if not isinstance(subs, list) or not all(is_short_id(s) for s in subs):
        raise ValueError(f"{mid}: subscriptions must be a list of ids")
    return Member(mid, tier, float(rep), float(ev), pre, frozenset(subs))


def embedding_refusal(vector: object, dim: int) -> tuple[str, str] | None:
    """Why the node refuses an embedding or a query vector for a community whose
    ``embedding_dim`` is ``dim`` (0: none declared) — ``(code, detail)`` — or None."""
    if dim == 0:
        return "embeddings_off", "the community declares no embedding_dim: no embeddings"
    if not is_embedding(vector):
        return "bad_embedding", f"not a list of 1 to {MAX_EMBEDDING} finite numbers"
    assert isinstance(vector, list)
    if len(vector) != dim:
        return "embedding_dimension", f"{len(vector)} numbers, embedding_dim = {dim}"
    return None


def payload_refusal(
    command: Mapping[str, Any], limit: int, embedding_dim: int = 0
) -> tuple[str, str] | None:
    """Why the node refuses a propose or resubmit's payload — ``(code, detail)`` — or None.

    Checked by the gate, before the log, and not left to the Community's check 1 like
    the rest of the command's shape: the log keeps the command *without* its payload
    (identity.without_payload), so a payload refused by the Community would replay as a
    digest-only command that the Community accepts — the replay would not be the log.
    So a bad payload is a 4xx that changes nothing (docs/design.md §11)."""
    if command.get("op") not in PAYLOAD_OPS:
        return None  # a payload field elsewhere is an unexpected field: invalid_input
    payload = payload_of(command)
    if not payload:
        return None  # a digest-only command: nothing to check
    if "embedding" in payload:
        refusal = embedding_refusal(payload["embedding"], embedding_dim)
        if refusal is not None:
            return refusal
    for key, value in payload.items():
        if not PAYLOAD[key].check(value):
            return "bad_content", f"{key} is not a valid {PAYLOAD[key].name}"
    size = len(str(payload.get("content", "")).encode())
    if size > limit:
        return "content_too_large", f"content is {size} bytes, over content_limit = {limit}"
    if command.get("digest") != payload_digest(payload):
        return "digest_mismatch", "digest is not the SHA-256 of the payload's canonical JSON"
    return None


def _agent_seq(envelope: object) -> tuple[str | None, int | None]:
    """The envelope's agent and seq where each is well typed (a refusal names them)."""
    if not isinstance(envelope, dict):
        return None, None
    agent, seq = envelope.get("agent"), envelope.get("seq")
    ok_agent = isinstance(agent, str) and is_text(agent) and 0 < len(agent) <= 256
    ok_seq = isinstance(seq, int) and not isinstance(seq, bool)
    return (agent if ok_agent else None), (seq if ok_seq else None)


def _refused(code: str) -> Observation:
    """The observation ``Gate.apply`` returns for an envelope ``admit`` refuses."""
    return {"result": code, "events": []}


class Gate:
    """The Community behind signatures and sequence numbers (a ``replicated.Core``)."""

    def __init__(self, params: Params = DEFAULTS, setup: Setup | None = None) -> None:
        setup = setup if setup is not None else Setup()
        self.params = params
        self.setup = setup
        self.community = Community(params, [f.member for f in setup.founders])
        self._keys: dict[str, str] = {f.member.id: f.public_key for f in setup.founders}
        self._operators: dict[str, str] = dict(setup.operators)
        self._last: dict[str, int] = {}

    # --- reading ----------------------------------------------------------------------------

    def last_seq(self, principal: str) -> int:
        """The last seq ``principal`` used (0: none yet); its next command is this + 1."""
        return self._last.get(principal, 0)

    def key_of(self, principal: str) -> str | None:
        return self._keys.get(principal) or self._operators.get(principal)

    def is_operator(self, principal: str) -> bool:
        return principal in self._operators

    def public_state(self) -> dict[str, Any]:
        """The Community's public state plus the gate's (keys, last seqs): what replicas
        compare.  Nothing secret: public keys and counters."""
        names = sorted({*self._keys, *self._operators, *self._last})
        return {
            **self.community.public_state(),
            "principals": {
                p: {
                    "public_key": self.key_of(p),
                    "last_seq": self.last_seq(p),
                    "operator": p in self._operators,
                }
                for p in names
            },
        }

    # --- deciding ---------------------------------------------------------------------------

    def admit(self, envelope: object) -> Admission:
        """Decide whether ``envelope`` may be applied; never raises, changes nothing.

        Checks, in order: the envelope's shape, the sender (impersonation, operator,
        known), the signature, then the seq (so that only an authentic envelope can learn
        anything about seqs).  The command's schema is the Community's to check: an
        admitted command that fails it is answered ``invalid_input`` and counted against
        its sender (SAN-1's malfunction classifier), like any protocol refusal."""
        shape = envelope_shape(envelope)
        if shape is not None:
            return Admission(shape[0], shape[1], *_agent_seq(envelope))
        assert isinstance(envelope, dict)
        agent, seq, command = envelope["agent"], envelope["seq"], envelope["command"]
        op = command.get("op")
        # The command's own shape is NOT checked here: a signed, well-sequenced command
        # that fails the schema is the sender's protocol input, logged and answered by the
        # Community (invalid_input, and a `malformed` violation of the sender: the
        # malfunction classifier that quarantines broken agents, SAN-1, depends on seeing
        # it).  Refusing it here would let a broken agent's garbage bounce for ever.
        # Who is sending, and with which key.
        if isinstance(op, str) and op in OPERATOR_OPS:
            key = self._operators.get(agent)
            if key is None:
                return Admission("not_operator", f"{op} is an operator command", agent, seq)
        else:
            if command.get("agent") != agent:
                return Admission(
                    "impersonation", "the command's agent is not the envelope's", agent, seq
                )
            if agent in self._operators:
                return Admission("impersonation", "an operator id is not an agent", agent, seq)
            key = self._keys.get(agent)
            if key is None and op == "join":
                key = envelope.get("public_key")
                if not is_public_key(key):
                    return Admission(
                        "malformed", "a join carries public_key (64 hex digits)", agent, seq
                    )
                assert isinstance(key, str)
                refused = self._admission_refusal(key, envelope.get("admission"))
                if refused is not None:
                    return Admission("admission_required", refused, agent, seq)
            if key is None:
                return Admission("unknown_agent", f"{agent!r} has not joined", agent, seq)
        assert isinstance(key, str)
        if not verify_envelope(envelope, key, self.setup.community):  # ENV-1
            return Admission("bad_signature", "the signature does not verify", agent, seq)
        last = self.last_seq(agent)
        if seq <= last:
            return Admission("replayed", f"seq {seq} <= last seq {last}", agent, seq)
        if seq > last + 1:
            return Admission("out_of_order", f"seq {seq} > last seq {last} + 1", agent, seq)
        refusal = payload_refusal(command, self.params.content_limit, self.params.embedding_dim)
        if refusal is not None:
            return Admission(refusal[0], refusal[1], agent, seq)
        return Admission(None, "", agent, seq)

    def _admission_refusal(self, key: str, admission: object) -> str | None:
        """Why a join registering ``key`` does not pass the community's ``join_mode`` (its
        signature is checked after this, so the proof is bound to the envelope), or None.
        A proof is one SHA-256 or one Ed25519 check: cheap to verify, whatever is sent."""
        mode = self.params.join_mode
        if mode == "open":
            return None
        kind = None if admission is None else admission_shape(admission)
        community = self.setup.community
        if mode == "pow":
            bits = self.params.join_pow_bits
            if kind != "pow":
                return f"join_mode is pow: a join carries admission {{nonce}} ({bits} bits)"
            assert isinstance(admission, dict)
            if pow_bits(community, key, admission["nonce"]) < bits:
                return f"the proof of work has fewer than join_pow_bits = {bits} zero bits"
            return None
        if kind != "invite":
            return "join_mode is invite: a join carries admission {operator, invite}"
        assert isinstance(admission, dict)
        op_key = self._operators.get(admission["operator"])
        if op_key is None or not verify_invite(community, key, op_key, admission["invite"]):
            return "the invitation is not an operator's signature of this key"
        return None

    def leaves_no_trace(self, envelope: dict[str, Any], obs: Observation) -> bool:
        """Whether ``envelope``, just applied with observation ``obs``, is a join from a key
        not yet registered that the Community refused: it changed nothing (not even its
        name's seq, ADM-1), so the node logs nothing for it."""
        return (
            envelope["command"].get("op") == "join"
            and obs["result"] != "ok"
            and envelope["agent"] not in self._keys
        )

    def apply(self, command: object) -> Observation:
        """Apply an envelope (``command``: the ``Core`` signature): the Community's
        observation, or ``{"result": gate code, "events": []}`` if ``admit`` refuses it."""
        adm = self.admit(command)
        if not adm.ok:
            return _refused(str(adm.code))
        assert isinstance(command, dict)
        return self.apply_admitted(command, adm)

    def apply_admitted(self, envelope: dict[str, Any], adm: Admission) -> Observation:
        """Apply ``envelope`` that ``admit`` has just admitted as ``adm``, with nothing
        applied in between (the node's write path: one signature check per command)."""
        assert adm.ok and adm.agent is not None and adm.seq is not None
        inner = envelope["command"]
        obs = self.community.apply(inner)
        if inner.get("op") == "join" and adm.agent not in self._keys:
            if obs["result"] != "ok":
                return obs  # ADM-1: a refused join of an unregistered name uses no seq
            # a join registers its key only when the Community admits it (tier 0, w_min: REP-2)
            self._keys[adm.agent] = str(envelope["public_key"])
        self._last[adm.agent] = adm.seq
        return obs
