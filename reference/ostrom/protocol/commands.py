"""The command language: what a well-formed command is (check 1 of docs/rules.md).

One table, ``COMMANDS``, says for each op which fields it requires and allows and of which
type each is.  Everything that asks "is this command well formed?" reads it: the
orchestrator's ``invalid_input`` check (``SCHEMAS``), the conformance layers, the trace
compilers (``well_formed``), and the JSON Schema published for drivers in other languages
(``command_schema``, committed as schema/command.schema.json and checked current by
property_tests/protocol/test_commands.py, which also validates every committed vector's command
against it).  A field type carries both spellings of one rule: the Python check and the
JSON Schema of the same set of values.

The typed views (``ProposeCommand`` ... ``Command``) are for code that builds commands;
a test checks that their keys are the table's.
"""

# No ``from __future__ import annotations`` here: TypedDict reads NotRequired[...] from
# evaluated annotations (Python 3.11).
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NotRequired, TypeAlias, TypedDict

from ostrom.protocol.agents import MAX_TIER, Sanction
from ostrom.protocol.encoding import HEX64_PATTERN, canonical, is_hex64
from ostrom.protocol.voting import ALL_VOTES

__all__ = [
    "ARBITER_OUTCOMES",
    "COMMANDS",
    "CONTENT",
    "EMBEDDING",
    "HEX64",
    "ID",
    "ID_LIST",
    "JOIN",
    "MAX_EMBEDDING",
    "MAX_NUMBER",
    "MAX_SOURCE",
    "MAX_TAG",
    "MAX_TAGS",
    "MAX_TITLE",
    "NUMBER",
    "OPS",
    "OUTCOME",
    "PAYLOAD",
    "PAYLOAD_FIELDS",
    "SANCTION",
    "SANCTIONS",
    "SCHEMAS",
    "SCHEMA_ID",
    "SHORT_ID",
    "SHORT_ID_LIST",
    "SOURCE",
    "TAGS",
    "TEXT",
    "TIER",
    "TITLE",
    "TYPED",
    "UNIT",
    "VOTE",
    "ArbitrateCommand",
    "Check",
    "Command",
    "CommandSpec",
    "CommitVoteCommand",
    "DisputeCommand",
    "Event",
    "FieldType",
    "ForgetVoteCommand",
    "JoinCommand",
    "ObjectCommand",
    "Observation",
    "ProposeCommand",
    "RecruitCommand",
    "ResubmitCommand",
    "RevealVoteCommand",
    "SetAgentCommand",
    "TickCommand",
    "UrgentReportCommand",
    "checked_fields",
    "command_schema",
    "is_embedding",
    "is_finite",
    "is_id",
    "is_id_list",
    "is_int",
    "is_number",
    "is_short_id",
    "is_text",
    "is_tier",
    "is_unit",
    "payload_digest",
    "payload_matches",
    "payload_of",
    "schema_text",
    "well_formed",
]

Check: TypeAlias = Callable[[object], bool]

# --- the field types ------------------------------------------------------------------------


def is_text(v: object) -> bool:
    """A string that UTF-8 can encode (lone surrogates would crash the canonical encoding)."""
    if not isinstance(v, str):
        return False
    try:
        v.encode()
    except UnicodeEncodeError:
        return False
    return True


def is_id(v: object) -> bool:
    """A non-empty text: agent, artifact and slot ids."""
    return is_text(v) and v != ""


def is_int(v: object) -> bool:
    """An integer (a boolean is not one, though Python says so)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_finite(v: object) -> bool:
    """A finite int or float (a boolean is not a number)."""
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


#: Largest magnitude a numeric field may have: micro(v) must stay an exact, finite integer.
MAX_NUMBER: Final = 1e9


def is_number(v: object) -> bool:
    """A finite int or float of at most ``MAX_NUMBER`` in magnitude (``1e303`` or a
    400-digit integer would overflow ``micro``; booleans are not numbers)."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        return False
    try:
        return math.isfinite(v) and abs(v) <= MAX_NUMBER
    except OverflowError:  # an int too large for a float
        return False


def is_unit(v: object) -> bool:
    """A number in [0, 1] (a share, a reputation, a confidence)."""
    return is_number(v) and 0 <= v <= 1  # type: ignore[operator]


def is_tier(v: object) -> bool:
    return is_int(v) and 0 <= v <= MAX_TIER  # type: ignore[operator]


def is_id_list(v: object) -> bool:
    return isinstance(v, list | tuple) and all(is_id(x) for x in v)


def _one_of(values: frozenset[str]) -> Check:
    """A string among ``values`` (a list or dict is not hashable: never a member)."""
    return lambda v: isinstance(v, str) and v in values


@dataclass(frozen=True)
class FieldType:
    """One type of command field: the reference's check and the JSON Schema of the same
    values (``name``: its entry under ``$defs`` in the published schema)."""

    name: str
    check: Check
    schema: Mapping[str, Any]


TEXT: Final = FieldType("text", is_text, {"type": "string"})
ID: Final = FieldType("id", is_id, {"type": "string", "minLength": 1})
HEX64: Final = FieldType(
    "hex64",
    is_hex64,
    {"type": "string", "minLength": 64, "maxLength": 64, "pattern": HEX64_PATTERN},
)
NUMBER: Final = FieldType(
    "number", is_number, {"type": "number", "minimum": -MAX_NUMBER, "maximum": MAX_NUMBER}
)
UNIT: Final = FieldType("unit", is_unit, {"type": "number", "minimum": 0, "maximum": 1})
TIER: Final = FieldType("tier", is_tier, {"type": "integer", "minimum": 0, "maximum": MAX_TIER})
ID_LIST: Final = FieldType(
    "id_list", is_id_list, {"type": "array", "items": {"$ref": "#/$defs/id"}}
)


def is_short_id(v: object) -> bool:
    """An id of 1 to 256 characters (the community's identities and slot names)."""
    return isinstance(v, str) and 0 < len(v) <= 256


SHORT_ID: Final = FieldType(
    "short_id", is_short_id, {"type": "string", "minLength": 1, "maxLength": 256}
)
SHORT_ID_LIST: Final = FieldType(
    "short_id_list",
    lambda v: isinstance(v, list) and all(is_short_id(x) for x in v),
    {"type": "array", "items": {"$ref": "#/$defs/short_id"}},
)


def _bounded_text(lo: int, hi: int) -> Check:
    """Text (UTF-8 encodable) of ``lo`` to ``hi`` characters (code points, as JSON Schema's
    ``minLength``/``maxLength`` count them)."""
    return lambda v: is_text(v) and lo <= len(v) <= hi  # type: ignore[arg-type]


#: Most characters of a title, a tag, a source; most tags on one artifact.
MAX_TITLE: Final = 256
MAX_TAG: Final = 64
MAX_TAGS: Final = 32
MAX_SOURCE: Final = 2048

# The payload's field types.  Their byte bound is the node's (``content_limit`` in
# protocol/params.py): the command language bounds only what has a fixed size.
CONTENT: Final = FieldType("content", is_text, {"type": "string"})
TITLE: Final = FieldType(
    "title", _bounded_text(0, MAX_TITLE), {"type": "string", "maxLength": MAX_TITLE}
)
_is_tag: Final = _bounded_text(1, MAX_TAG)
TAGS: Final = FieldType(
    "tags",
    lambda v: isinstance(v, list) and len(v) <= MAX_TAGS and all(_is_tag(t) for t in v),
    {
        "type": "array",
        "maxItems": MAX_TAGS,
        "items": {"type": "string", "minLength": 1, "maxLength": MAX_TAG},
    },
)
SOURCE: Final = FieldType(
    "source", _bounded_text(0, MAX_SOURCE), {"type": "string", "maxLength": MAX_SOURCE}
)

#: Most numbers of an embedding: the command language's fixed bound; the community's own
#: dimension (the ``embedding_dim`` parameter, at most this) is the node's to check.
MAX_EMBEDDING: Final = 4096


def is_embedding(v: object) -> bool:
    """A list of 1 to ``MAX_EMBEDDING`` numbers (``is_number``: finite, no boolean, at most
    ``MAX_NUMBER`` in magnitude): an embedding of the payload (dense retrieval,
    docs/design.md §11)."""
    return isinstance(v, list) and 0 < len(v) <= MAX_EMBEDDING and all(is_number(x) for x in v)


EMBEDDING: Final = FieldType(
    "embedding",
    is_embedding,
    {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_EMBEDDING,
        "items": {"type": "number", "minimum": -MAX_NUMBER, "maximum": MAX_NUMBER},
    },
)


def _enum(name: str, values: frozenset[str]) -> FieldType:
    return FieldType(name, _one_of(values), {"enum": sorted(values)})


ARBITER_OUTCOMES: Final = frozenset({"accept", "reject", "revote"})
SANCTIONS: Final = frozenset(s.value for s in Sanction)
VOTE: Final = _enum("vote", ALL_VOTES)
OUTCOME: Final = _enum("outcome", ARBITER_OUTCOMES)
SANCTION: Final = _enum("sanction", SANCTIONS)

# --- the commands ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandSpec:
    """An op's fields: each required one must be there, an optional one may; no other key."""

    op: str
    required: Mapping[str, FieldType]
    optional: Mapping[str, FieldType]
    doc: str


_AA: Final = {"agent": ID, "artifact": ID}

#: An artifact's *payload*: its content and metadata, carried by propose and resubmit.
#: Payload, not protocol state (docs/design.md §11): the orchestrator checks that it hashes
#: to the command's ``digest`` and then drops it; only the digest enters the state, the
#: TLA+ specs and the log.
#: The ``embedding`` (a vector for dense retrieval) is payload too: hashed with the rest.
PAYLOAD: Final = {
    "content": CONTENT,
    "title": TITLE,
    "tags": TAGS,
    "source": SOURCE,
    "embedding": EMBEDDING,
}
PAYLOAD_FIELDS: Final = tuple(PAYLOAD)


def payload_of(command: Mapping[str, Any]) -> dict[str, Any]:
    """The payload fields ``command`` carries (empty: a digest-only command)."""
    return {k: command[k] for k in PAYLOAD_FIELDS if k in command}


def payload_digest(payload: Mapping[str, Any]) -> str:
    """The digest a payload must be proposed under: SHA-256, in lowercase hex, of the
    canonical JSON of the payload object (protocol/encoding.py: sorted keys, compact,
    UTF-8), e.g. ``{"content":"...","tags":["a"],"title":"..."}``.  Hashing the object,
    not the text alone, binds the metadata too: the signature covers the digest, the
    digest covers every field, the embedding's numbers too (docs/design.md §11).  Raises
    ``UnicodeEncodeError`` for text UTF-8 cannot encode (``is_text`` refuses it first)."""
    return hashlib.sha256(canonical(dict(payload))).hexdigest()


#: The orchestrator's commands (lifecycle.EVENTS' commands, ``tick`` and ``set_agent``).
COMMANDS: Final[dict[str, CommandSpec]] = {
    c.op: c
    for c in (
        CommandSpec(
            "propose",
            {**_AA, "slot": ID, "digest": ID},
            {"evidence": ID_LIST, **PAYLOAD},
            "submit a new artifact for a slot (with a payload: digest = payload_digest)",
        ),
        CommandSpec(
            "resubmit",
            {**_AA, "digest": ID},
            {"evidence": ID_LIST, **PAYLOAD},
            "a revised resubmission (with a payload: digest = payload_digest)",
        ),
        CommandSpec("recruit", {"artifact": ID}, {}, "recruit the reviewers of a proposal"),
        CommandSpec("object", dict(_AA), {}, "object to a fast-tracked artifact"),
        CommandSpec("commit_vote", {**_AA, "commitment": HEX64}, {}, "commit to a vote (its hash)"),
        CommandSpec(
            "reveal_vote",
            {**_AA, "vote": VOTE, "reason": TEXT, "salt": HEX64},
            {},
            "reveal the committed vote",
        ),
        CommandSpec("arbitrate", {**_AA, "outcome": OUTCOME}, {}, "a tier-3 arbiter decides"),
        CommandSpec("dispute", {**_AA, "reason": TEXT}, {}, "dispute an active artifact"),
        CommandSpec("urgent_report", {**_AA, "reason": TEXT}, {}, "report and hide at once"),
        CommandSpec("forget_vote", dict(_AA), {"confidence": UNIT}, "vote to forget"),
        CommandSpec("tick", {}, {}, "one round: timeouts, forgets, recruitment"),
        CommandSpec(
            "set_agent",
            {"agent": ID, "tier": TIER},
            {"weight": NUMBER, "reputation": UNIT, "sanction": SANCTION, "subscriptions": ID_LIST},
            "register or update an agent (the reference's stand-in for the other layers)",
        ),
    )
}
#: The community's own command (protocol/community.py: Community._join): a new identity.
JOIN: Final = CommandSpec(
    "join",
    {"agent": SHORT_ID},
    {"subscriptions": SHORT_ID_LIST},
    "a new identity joins the community at tier 0",
)

#: op -> (required checks, optional checks), the orchestrator's view of ``COMMANDS``.
SCHEMAS: Final[dict[str, tuple[dict[str, Check], dict[str, Check]]]] = {
    op: (
        {k: t.check for k, t in c.required.items()},
        {k: t.check for k, t in c.optional.items()},
    )
    for op, c in COMMANDS.items()
}
OPS: Final[tuple[str, ...]] = tuple(COMMANDS)


def checked_fields(
    command: Mapping[str, Any], required: Mapping[str, Check], optional: Mapping[str, Check]
) -> dict[str, Any] | None:
    """The command's fields but ``op`` if each passes its check and every required one is
    there; None otherwise (a malformed command)."""
    fields: dict[str, Any] = {}
    for key, value in command.items():
        if key == "op":
            continue
        check = required.get(key) or optional.get(key)
        if check is None or not check(value):
            return None
        fields[key] = value
    if any(k not in fields for k in required):
        return None
    return fields


def well_formed(command: Any) -> tuple[str, dict[str, Any]] | None:
    """``(op, fields)`` if ``command`` passes check 1 of docs/rules.md, else None (the
    command is malformed: invalid_input)."""
    if not isinstance(command, dict):
        return None
    op = command.get("op")
    if not isinstance(op, str) or op not in SCHEMAS:
        return None
    required, optional = SCHEMAS[op]
    fields = checked_fields(command, required, optional)
    if fields is None or not payload_matches(fields):
        return None
    return op, fields


def payload_matches(fields: Mapping[str, Any]) -> bool:
    """True unless the fields carry a payload whose ``payload_digest`` is not their
    ``digest`` (part of check 1: a payload that does not hash to its digest is malformed).
    The fields must have passed their type checks."""
    payload = payload_of(fields)
    return not payload or fields.get("digest") == payload_digest(payload)


# --- the JSON Schema ------------------------------------------------------------------------

SCHEMA_ID: Final = "https://ostrom.invalid/schema/command.schema.json"


def _op_schema(c: CommandSpec) -> dict[str, Any]:
    props: dict[str, Any] = {"op": {"const": c.op}}
    for k, t in {**c.required, **c.optional}.items():
        props[k] = {"$ref": f"#/$defs/{t.name}"}
    return {
        "title": c.op,
        "description": c.doc,
        "type": "object",
        "required": ["op", *c.required],
        "additionalProperties": False,
        "properties": props,
    }


def command_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a command: one of the ops of ``COMMANDS`` or ``join``."""
    specs = [*COMMANDS.values(), JOIN]
    types = {t.name: t for c in specs for t in (*c.required.values(), *c.optional.values())}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "ostrom command (ostrom-driver/1, lifecycle and community layers)",
        "description": (
            "A command a driver sends to the orchestrator (docs/rules.md, check 1: "
            "invalid_input). Generated from reference/ostrom/protocol/commands.py. Beyond "
            "this shape the reference refuses as invalid_input text that UTF-8 cannot "
            "encode (lone surrogates), a number with a fraction (1.0) for an integer field, "
            "what depends on the parameters (a set_agent weight outside [w_min, w_max]), a "
            "propose or resubmit with a payload (content, title, tags, source, embedding) "
            "whose digest is not the SHA-256 of the payload's canonical JSON and, in the community "
            "layer, set_agent (the community derives its registry)."
        ),
        "oneOf": [{"$ref": f"#/$defs/{c.op}"} for c in specs],
        "$defs": {
            **{c.op: _op_schema(c) for c in specs},
            **{name: dict(t.schema) for name, t in sorted(types.items())},
        },
    }


def schema_text() -> str:
    """schema/command.schema.json as committed."""
    return json.dumps(command_schema(), indent=2, ensure_ascii=False) + "\n"


# --- typed commands -------------------------------------------------------------------------


class ProposeCommand(TypedDict):
    op: Literal["propose"]
    agent: str
    artifact: str
    slot: str
    digest: str
    evidence: NotRequired[list[str]]
    content: NotRequired[str]
    title: NotRequired[str]
    tags: NotRequired[list[str]]
    source: NotRequired[str]
    embedding: NotRequired[list[float]]


class ResubmitCommand(TypedDict):
    op: Literal["resubmit"]
    agent: str
    artifact: str
    digest: str
    evidence: NotRequired[list[str]]
    content: NotRequired[str]
    title: NotRequired[str]
    tags: NotRequired[list[str]]
    source: NotRequired[str]
    embedding: NotRequired[list[float]]


class RecruitCommand(TypedDict):
    op: Literal["recruit"]
    artifact: str


class ObjectCommand(TypedDict):
    op: Literal["object"]
    agent: str
    artifact: str


class CommitVoteCommand(TypedDict):
    op: Literal["commit_vote"]
    agent: str
    artifact: str
    commitment: str


class RevealVoteCommand(TypedDict):
    op: Literal["reveal_vote"]
    agent: str
    artifact: str
    vote: str
    reason: str
    salt: str


class ArbitrateCommand(TypedDict):
    op: Literal["arbitrate"]
    agent: str
    artifact: str
    outcome: str


class DisputeCommand(TypedDict):
    op: Literal["dispute"]
    agent: str
    artifact: str
    reason: str


class UrgentReportCommand(TypedDict):
    op: Literal["urgent_report"]
    agent: str
    artifact: str
    reason: str


class ForgetVoteCommand(TypedDict):
    op: Literal["forget_vote"]
    agent: str
    artifact: str
    confidence: NotRequired[float]


class TickCommand(TypedDict):
    op: Literal["tick"]


class SetAgentCommand(TypedDict):
    op: Literal["set_agent"]
    agent: str
    tier: int
    weight: NotRequired[float]
    reputation: NotRequired[float]
    sanction: NotRequired[str]
    subscriptions: NotRequired[list[str]]


class JoinCommand(TypedDict):
    op: Literal["join"]
    agent: str
    subscriptions: NotRequired[list[str]]


#: A well-formed command of the orchestrator.
Command: TypeAlias = (
    ProposeCommand
    | ResubmitCommand
    | RecruitCommand
    | ObjectCommand
    | CommitVoteCommand
    | RevealVoteCommand
    | ArbitrateCommand
    | DisputeCommand
    | UrgentReportCommand
    | ForgetVoteCommand
    | TickCommand
    | SetAgentCommand
)
#: Each op's typed view (property_tests/protocol/test_commands.py: its keys are ``COMMANDS``').
TYPED: Final[dict[str, type]] = {
    "propose": ProposeCommand,
    "resubmit": ResubmitCommand,
    "recruit": RecruitCommand,
    "object": ObjectCommand,
    "commit_vote": CommitVoteCommand,
    "reveal_vote": RevealVoteCommand,
    "arbitrate": ArbitrateCommand,
    "dispute": DisputeCommand,
    "urgent_report": UrgentReportCommand,
    "forget_vote": ForgetVoteCommand,
    "tick": TickCommand,
    "set_agent": SetAgentCommand,
    "join": JoinCommand,
}


#: One event of an observation: ``{"event": name, ...}`` with the fields docs/rules.md lists
#: for that event (an artifact's ``from``/``to``, a violation's ``agent`` and ``kind``, ...).
Event: TypeAlias = dict[str, Any]


class Observation(TypedDict):
    """What the orchestrator answers to a command: ``ok`` or an error code, and events."""

    result: str
    events: list[Event]
