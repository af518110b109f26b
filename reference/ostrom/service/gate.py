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
  (``payload_refusal``): the log keeps no payload, so a bad one must never reach it;
* ``rotate_key`` and ``revoke_key`` (``IDENTITY_COMMANDS``) change which key speaks for
  an agent: the binding of keys to names is the gate's, not the Community's, so they
  never reach the Community (docs/design.md §11, "Keys"; docs/deployment.md).  An agent
  rotates with its current key (KEY-1: from then on only the new key is valid for it,
  and an envelope under a retired key is refused ``key_retired``, one signed before the
  rotation included); it revokes itself with its current key *or any key it ever held*
  (KEY-2: then nothing is accepted for it, ``key_revoked``), so the owner of a stolen
  key can stop a thief who rotated first; an operator may revoke any agent, and rotate
  any agent's key, which is the only way out of a revocation.
"""

from __future__ import annotations

import hashlib
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
from ostrom.protocol.community import REFUSED_WITH_VIOLATION, Community, Member
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.service.identity import (
    admission_shape,
    canonical,
    envelope_shape,
    is_community_id,
    is_public_key,
    new_community_id,
    pow_bits,
    verify_envelope,
    verify_invite,
    without_payload,
)

__all__ = [
    "ELIDED_KEYS",
    "GATE_ERRORS",
    "IDENTITY_COMMANDS",
    "IDENTITY_OPS",
    "OPERATOR_OPS",
    "PAYLOAD_OPS",
    "Admission",
    "Founder",
    "Gate",
    "GateError",
    "IdentityCommand",
    "Setup",
    "elided",
    "elided_result",
    "embedding_refusal",
    "identity_command_schema",
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
        GateError(
            "oversized_refusal",
            413,
            "the Community refused the command (its result in the detail) without counting a "
            "violation, and its envelope is over the refused_row_bytes parameter: nothing "
            "logged, the seq unused (ROW-1)",
        ),
        GateError("not_found", 404, "no such resource"),
        GateError("no_content", 404, "the artifact was proposed by digest only: no content"),
        GateError(
            "content_forgotten",
            404,
            "the artifact was forgotten: its content was purged (FORGET-PURGE)",
        ),
        GateError("method_not_allowed", 405, "the path exists but not with this method"),
        GateError(
            "key_retired",
            403,
            "signed by a key the agent has rotated away from (KEY-1): only its current key "
            "is valid, for envelopes signed before the rotation too",
        ),
        GateError(
            "key_revoked",
            403,
            "the agent's key is revoked (KEY-2): nothing is accepted for it until an "
            "operator rotates its key",
        ),
        GateError(
            "key_reused",
            409,
            "a rotate_key to a key the agent holds or has held (a retired key stays retired)",
        ),
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
        GateError(
            "db_unavailable",
            503,
            "the database refused the write, or a read of the file failed; nothing was "
            "applied. After a failed append (a full disk) the node refuses every write at "
            "once until a probe of the disk commits: retry after the Retry-After seconds",
        ),
        GateError(
            "busy",
            503,
            "too much waiting: a cluster's front's commands (nothing was sent), or a node's "
            "reads of the file past its read pool and queue (--max-reads, --read-queue: "
            "nothing was read); retry after the Retry-After seconds",
        ),
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


@dataclass(frozen=True)
class IdentityCommand:
    """A command of the gate's own (``IDENTITY_COMMANDS``): its fields, all required."""

    op: str
    fields: tuple[str, ...]
    doc: str


#: The commands that change which key speaks for an agent: the gate's, not the
#: Community's (the binding of keys to names is not protocol state: docs/design.md §11).
#: Signed and sequenced like any command, logged, ordered by a cluster; the one table the
#: gate, the OpenAPI document and docs/service.md read.
IDENTITY_COMMANDS: Final[dict[str, IdentityCommand]] = {
    c.op: c
    for c in (
        IdentityCommand(
            "rotate_key",
            ("agent", "public_key"),
            "bind public_key to agent in place of its current key (KEY-1): sent by the agent, "
            "signed with its current key, or by an operator (which also lifts a revocation)",
        ),
        IdentityCommand(
            "revoke_key",
            ("agent",),
            "nothing more is accepted for agent (KEY-2): sent by the agent, signed with its "
            "current key or any key it held before, or by an operator",
        ),
    )
}
IDENTITY_OPS: Final = frozenset(IDENTITY_COMMANDS)

_IDENTITY_FIELD_SCHEMA: Final[dict[str, dict[str, Any]]] = {
    "agent": {"type": "string", "minLength": 1, "maxLength": 256},
    "public_key": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
}


def identity_command_schema() -> list[dict[str, Any]]:
    """The JSON Schema of each ``IDENTITY_COMMANDS`` command (the OpenAPI's Command)."""
    return [
        {
            "title": c.op,
            "description": c.doc,
            "type": "object",
            "required": ["op", *c.fields],
            "additionalProperties": False,
            "properties": {
                "op": {"const": c.op},
                **{f: _IDENTITY_FIELD_SCHEMA[f] for f in c.fields},
            },
        }
        for c in IDENTITY_COMMANDS.values()
    ]


def _identity_shape(command: Mapping[str, Any]) -> str | None:
    """Why ``command`` (an identity op) is not its ``IDENTITY_COMMANDS`` shape, or None."""
    spec = IDENTITY_COMMANDS[str(command.get("op"))]
    if set(command) != {"op", *spec.fields}:
        return f"{spec.op} has exactly the fields {', '.join(spec.fields)}"
    agent = command["agent"]
    if not isinstance(agent, str) or not is_text(agent) or not 0 < len(agent) <= 256:
        return "agent must be a string of 1 to 256 characters"
    if "public_key" in spec.fields and not is_public_key(command["public_key"]):
        return "public_key must be 64 hex digits (Ed25519)"
    return None


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


#: The keys of a log row's envelope kept as its hash (``elided``): no signature.
ELIDED_KEYS: Final = frozenset({"agent", "seq", "command", "elided"})
#: The results a row kept as its hash may replay as (``elided_result``).
_ELIDED_RESULTS: Final = frozenset({"invalid_input", *REFUSED_WITH_VIOLATION})


def elided(envelope: Mapping[str, Any], size: int, refused: str | None = None) -> dict[str, Any]:
    """What the log keeps of an admitted envelope of ``size`` canonical bytes (over
    ``refused_row_bytes``) that the Community refused ``invalid_input`` (ROW-1): its
    agent, seq, the SHA-256 and size of its canonical JSON, and a *surrogate* command
    that the Community refuses exactly as it refused the original.

    ``refused``: the code of a refusal with a violation of another kind
    (``REFUSED_WITH_VIOLATION``: ``rate_limited``, ``bad_reveal``), which the hash row
    names (``elided.refused``).  No surrogate command replays those (the refusal depends
    on state a command the sender chose can steer: a surrogate reveal could open the
    commitment); the gate replays the row by ``Community.refused`` instead: the
    violation, counted, which is all such a refusal changes.

    Why the surrogate replays the same: ``invalid_input`` is check 1 (the command's
    shape: the orchestrator's ``_parse``, or a join's or set_agent's own check), and its
    only effect is a ``malformed`` violation of the sender if the op is an agent's op
    and the sender is registered.  The surrogate keeps the op if it is a known one (an
    unknown op stays unknown), the sender as its ``agent`` if the original named it
    (the gate admits an agent's op only from the agent it names), and adds a field
    ``elided`` that no command has: it fails check 1 with the same violation or none.
    ``replay`` and ``--verify`` check the observation again; the signature cannot be
    checked (its bytes are gone), which is what ``admit_logged`` accepts instead."""
    command = envelope["command"]
    digest = hashlib.sha256(canonical(dict(envelope))).hexdigest()
    surrogate: dict[str, Any] = {"elided": digest}
    op = command.get("op")
    if isinstance(op, str) and (op in COMMANDS or op == "join"):
        surrogate["op"] = op
    if command.get("agent") == envelope["agent"] and op not in OPERATOR_OPS:
        surrogate["agent"] = envelope["agent"]
    info: dict[str, Any] = {"sha256": digest, "bytes": size}
    if refused is not None:
        info["refused"] = refused
    return {
        "agent": envelope["agent"],
        "seq": envelope["seq"],
        "command": surrogate,
        "elided": info,
    }


def elided_result(envelope: Mapping[str, Any]) -> str:
    """The result a row kept as its hash replays as (``elided``): ``invalid_input``, or
    the refusal with a violation it names."""
    info = envelope.get("elided")
    refused = info.get("refused") if isinstance(info, dict) else None
    return refused if isinstance(refused, str) else "invalid_input"


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
        #: each agent's keys that no longer speak for it, oldest first (KEY-1)
        self._retired: dict[str, list[str]] = {}
        #: the agents whose key is revoked (KEY-2): nothing accepted until an operator's
        #: rotate_key
        self._revoked: set[str] = set()

    # --- reading ----------------------------------------------------------------------------

    def last_seq(self, principal: str) -> int:
        """The last seq ``principal`` used (0: none yet); its next command is this + 1."""
        return self._last.get(principal, 0)

    def key_of(self, principal: str) -> str | None:
        return self._keys.get(principal) or self._operators.get(principal)

    def is_operator(self, principal: str) -> bool:
        return principal in self._operators

    def is_revoked(self, agent: str) -> bool:
        """Whether ``agent``'s key is revoked (KEY-2)."""
        return agent in self._revoked

    def retired_keys(self, agent: str) -> tuple[str, ...]:
        """The keys that spoke for ``agent`` before its current one, oldest first."""
        return tuple(self._retired.get(agent, ()))

    def public_state(self) -> dict[str, Any]:
        """The Community's public state plus the gate's (keys, last seqs): what replicas
        compare.  Nothing secret: public keys and counters."""
        names = sorted({*self._keys, *self._operators, *self._last})
        return {
            **self.community.public_state(),
            "principals": {p: self.principal(p) for p in names},
        }

    def principal(self, p: str) -> dict[str, Any]:
        """A principal's public entry; ``retired_keys`` and ``revoked`` only once it has
        rotated or been revoked (an entry without them is as before key rotation)."""
        out: dict[str, Any] = {
            "public_key": self.key_of(p),
            "last_seq": self.last_seq(p),
            "operator": p in self._operators,
        }
        if p in self._retired:
            out["retired_keys"] = list(self._retired[p])
        if p in self._revoked:
            out["revoked"] = True
        return out

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
        if isinstance(op, str) and op in IDENTITY_OPS:
            return self._admit_identity(envelope, agent, seq, command)
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
            if agent in self._revoked:  # KEY-2: no key speaks for it
                return Admission("key_revoked", f"{agent!r}'s key is revoked", agent, seq)
        assert isinstance(key, str)
        if not verify_envelope(envelope, key, self.setup.community):  # ENV-1
            return self._bad_signature(envelope, agent, seq)
        return self._sequenced(envelope, agent, seq, command)

    def _bad_signature(self, envelope: dict[str, Any], agent: str, seq: int) -> Admission:
        """``key_retired`` if a key ``agent`` rotated away from signed ``envelope`` (KEY-1:
        a stable answer for an old key's envelopes, signed before the rotation or after),
        else ``bad_signature``.  Only an agent that rotated pays the extra checks."""
        community = self.setup.community
        for old in self._retired.get(agent, ()):
            if verify_envelope(envelope, old, community):
                return Admission("key_retired", "signed by a retired key of the agent", agent, seq)
        return Admission("bad_signature", "the signature does not verify", agent, seq)

    def _sequenced(
        self, envelope: dict[str, Any], agent: str, seq: int, command: dict[str, Any]
    ) -> Admission:
        """The seq and payload checks of an authentic envelope (``admit``'s last steps)."""
        last = self.last_seq(agent)
        if seq <= last:
            return Admission("replayed", f"seq {seq} <= last seq {last}", agent, seq)
        if seq > last + 1:
            return Admission("out_of_order", f"seq {seq} > last seq {last} + 1", agent, seq)
        refusal = payload_refusal(command, self.params.content_limit, self.params.embedding_dim)
        if refusal is not None:
            return Admission(refusal[0], refusal[1], agent, seq)
        return Admission(None, "", agent, seq)

    def _admit_identity(
        self, envelope: dict[str, Any], sender: str, seq: int, command: dict[str, Any]
    ) -> Admission:
        """``admit`` for ``rotate_key`` and ``revoke_key`` (module docstring, KEY-1, KEY-2).

        Who may send it: the agent it names, or an operator.  Which key signs it: an
        operator's own; the agent's current key for a rotation; for a revocation its
        current key or any it held before, because a thief who stole a key and rotated
        first leaves the owner holding only that retired key, and the owner must still
        be able to stop the thief (the worst a stolen key does, then, is a revocation
        that an operator's rotate_key undoes).  A revoked agent sends nothing more: only
        an operator's rotate_key gives it a key again."""
        problem = _identity_shape(command)
        if problem is not None:
            return Admission("malformed", problem, sender, seq)
        op, target = command["op"], command["agent"]
        if target not in self._keys:
            return Admission("unknown_agent", f"{target!r} has not joined", sender, seq)
        community = self.setup.community
        if sender in self._operators:
            if not verify_envelope(envelope, self._operators[sender], community):  # ENV-1
                return Admission("bad_signature", "the signature does not verify", sender, seq)
        elif sender != target:
            return Admission(
                "impersonation", f"only {target!r} or an operator may {op} it", sender, seq
            )
        elif target in self._revoked:  # KEY-2
            return Admission("key_revoked", f"{target!r}'s key is revoked", sender, seq)
        elif op == "revoke_key":
            keys = (self._keys[target], *self._retired.get(target, ()))
            if not any(verify_envelope(envelope, k, community) for k in keys):
                return Admission("bad_signature", "the signature does not verify", sender, seq)
        elif not verify_envelope(envelope, self._keys[target], community):  # KEY-1
            return self._bad_signature(envelope, sender, seq)
        if op == "rotate_key":
            new = command["public_key"]
            if new == self._keys[target] or new in self._retired.get(target, ()):
                return Admission(
                    "key_reused", f"{target!r} holds or has held this key", sender, seq
                )
        elif target in self._revoked:
            return Admission("key_revoked", f"{target!r}'s key is revoked already", sender, seq)
        return self._sequenced(envelope, sender, seq, command)

    def usable_retry(self, envelope: object) -> Admission | None:
        """For a retry the node found in its log (the same envelope, already applied):
        the refusal of an envelope whose key no longer speaks for its agent — revoked
        (KEY-2) or rotated away from (KEY-1) — or None (answered from the log).  A retried
        identity command is always answered: it is what changed the key."""
        if not isinstance(envelope, dict) or not isinstance(envelope.get("command"), dict):
            return None
        agent, seq = envelope.get("agent"), envelope.get("seq")
        if not isinstance(agent, str) or not isinstance(seq, int):
            return None
        if envelope["command"].get("op") in IDENTITY_OPS or agent in self._operators:
            return None
        if agent in self._revoked:
            return Admission("key_revoked", f"{agent!r}'s key is revoked", agent, seq)
        key = self._keys.get(agent)
        if (
            agent in self._retired
            and key is not None
            and not verify_envelope(envelope, key, self.setup.community)
        ):
            return self._bad_signature(envelope, agent, seq)
        return None

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

    def untraced(self, envelope: dict[str, Any], obs: Observation) -> str | None:
        """The ``GATE_ERRORS`` code of ``envelope``, just applied with observation ``obs``,
        if it changed nothing, not even its sender's seq, so the node logs nothing for it:
        ``join_refused``, a join from a key not yet registered that the Community refused
        (ADM-1); ``oversized_refusal``, a refusal over ``refused_row_bytes`` that counted
        no violation (ROW-1).  None: the command is logged."""
        if (
            envelope["command"].get("op") == "join"
            and obs["result"] != "ok"
            and envelope["agent"] not in self._keys
        ):
            return "join_refused"
        if self._oversized_refusal(envelope, obs):
            return "oversized_refusal"
        return None

    def row_size(self, envelope: Mapping[str, Any]) -> int:
        """The canonical bytes of an admitted envelope without its payload (what the log
        keeps, and what ``refused_row_bytes`` bounds)."""
        return len(canonical({**envelope, "command": without_payload(envelope["command"])}))

    def _oversized_refusal(self, envelope: Mapping[str, Any], obs: Observation) -> bool:
        """A refusal other than ``invalid_input`` that counted no violation (so it changed
        nothing in the Community), of an envelope over ``refused_row_bytes`` (ROW-1)."""
        return (
            obs["result"] not in ("ok", "invalid_input")
            and not obs["events"]
            and envelope["command"].get("op") not in IDENTITY_OPS
            and self.row_size(envelope) > self.params.refused_row_bytes
        )

    def logged_form(self, envelope: dict[str, Any], obs: Observation) -> dict[str, Any]:
        """The envelope as the log keeps it: a refusal over ``refused_row_bytes`` as its
        hash (``elided``, ROW-1) — ``invalid_input`` with a surrogate, ``rate_limited``
        and ``bad_reveal`` naming their refusal (``Community.refused`` replays them) —
        anything else as it is (without its payload: the node strips it before)."""
        result = obs["result"]
        if result == "invalid_input" or self._replays_as_refusal(envelope, obs):
            size = self.row_size(envelope)
            if size > self.params.refused_row_bytes:
                return elided(envelope, size, None if result == "invalid_input" else result)
        return envelope

    def _replays_as_refusal(self, envelope: Mapping[str, Any], obs: Observation) -> bool:
        """Whether ``obs`` is a refusal ``Community.refused`` gives again: one of
        ``REFUSED_WITH_VIOLATION`` whose first event is that violation of the sender."""
        events = obs["events"]
        return (
            obs["result"] in REFUSED_WITH_VIOLATION
            and envelope["command"].get("op") not in IDENTITY_OPS
            and bool(events)
            and events[0]
            == {"event": "violation", "agent": envelope["agent"], "kind": obs["result"]}
        )

    def admit_logged(self, envelope: object) -> Admission:
        """``admit`` for a row of the node's own log (replay, and the rollback of a failed
        write): an envelope as sent, or one the log keeps as its hash (``elided``), whose
        signature cannot be checked again; its sender must be a principal with a key, not
        revoked, at its next seq, and its command the surrogate ``elided`` makes (the
        replay then checks that the Community refuses it ``invalid_input``)."""
        if not isinstance(envelope, dict) or "elided" not in envelope:
            return self.admit(envelope)
        agent, seq = _agent_seq(envelope)
        info = envelope.get("elided")
        if (
            set(envelope) != ELIDED_KEYS
            or agent is None
            or seq is None
            or not isinstance(info, dict)
            or not {"sha256", "bytes"} <= set(info) <= {"sha256", "bytes", "refused"}
            or info.get("refused", "invalid_input") not in _ELIDED_RESULTS
            or not isinstance(info["bytes"], int)
            or not isinstance(envelope["command"], dict)
            or envelope["command"].get("elided") != info["sha256"]
            or not set(envelope["command"]) <= {"op", "agent", "elided"}
        ):
            return Admission("malformed", "not a row kept as its hash", agent, seq)
        if self.key_of(agent) is None or agent in self._revoked:
            return Admission("unknown_agent", f"{agent!r} has no key", agent, seq)
        return self._sequenced(envelope, agent, seq, envelope["command"])

    def apply_logged(self, envelope: object) -> Observation:
        """``apply`` of a row of the node's own log (``admit_logged``)."""
        adm = self.admit_logged(envelope)
        if not adm.ok:
            return _refused(str(adm.code))
        assert isinstance(envelope, dict)
        return self.apply_admitted(envelope, adm)

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
        if "elided" in envelope and elided_result(envelope) != "invalid_input":  # ROW-1
            obs = self.community.refused(adm.agent, elided_result(envelope))
            self._last[adm.agent] = adm.seq
            return obs
        if inner.get("op") in IDENTITY_OPS:
            obs = self._apply_identity(inner, adm.agent)
            self._last[adm.agent] = adm.seq
            return obs
        obs = self.community.apply(inner)
        if inner.get("op") == "join" and adm.agent not in self._keys:
            if obs["result"] != "ok":
                return obs  # ADM-1: a refused join of an unregistered name uses no seq
            # a join registers its key only when the Community admits it (tier 0, w_min: REP-2)
            self._keys[adm.agent] = str(envelope["public_key"])
        elif self._oversized_refusal(envelope, obs):
            return obs  # ROW-1: it changed nothing, and it uses no seq
        self._last[adm.agent] = adm.seq
        return obs

    def _apply_identity(self, command: dict[str, Any], sender: str) -> Observation:
        """Apply an admitted ``rotate_key`` or ``revoke_key``: the key binding changes, the
        Community does not (its event names the agent, the key and who sent it)."""
        target = command["agent"]
        if command["op"] == "rotate_key":
            self._retired.setdefault(target, []).append(self._keys[target])
            self._keys[target] = str(command["public_key"])
            self._revoked.discard(target)
            event = {"event": "key_rotated", "agent": target, "public_key": self._keys[target]}
        else:
            self._revoked.add(target)
            event = {"event": "key_revoked", "agent": target}
        return {"result": "ok", "events": [{**event, "by": sender}]}
