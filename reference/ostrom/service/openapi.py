"""The HTTP API as data (a node's and a cluster front's: one): the endpoint table and the
OpenAPI 3.1 document made from it.

``ENDPOINTS`` is the one list of routes: app.py binds a handler to each (and refuses to
build an app if one is missing or extra), this module turns it, the gate's error table
(``GATE_ERRORS``) and the command schema (protocol/commands.py) into the OpenAPI
document committed as schema/openapi.json (``openapi_text``; ``ostrom docs`` writes it, and
property_tests/codegen/test_generated.py fails when the file drifts); docs/service.md's API
and error tables are made from the same table (``ostrom.codegen.service_docs``).  No web
framework is imported here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from ostrom import __version__
from ostrom.protocol.commands import MAX_EMBEDDING, command_schema
from ostrom.protocol.params import DEFAULTS
from ostrom.service.dense import FUSION_DEPTH, RRF_K
from ostrom.service.gate import GATE_ERRORS, identity_command_schema
from ostrom.service.identity import SIGNING_DOMAIN
from ostrom.service.search import DEFAULT_K, HISTORY, MAX_K, MAX_QUERY_BYTES, MAX_TERMS

__all__ = [
    "BODY_LIMIT",
    "ENDPOINTS",
    "MAX_LIMIT",
    "MAX_WAIT",
    "NUMBER_BYTES",
    "POSITION_HEADER",
    "SEARCH_BODY_LIMIT",
    "SOURCE_HEADER",
    "Endpoint",
    "Query",
    "body_limit",
    "openapi",
    "openapi_path",
    "openapi_text",
]


@dataclass(frozen=True)
class Query:
    """A query parameter: its name, JSON Schema and meaning."""

    name: str
    schema: dict[str, Any]
    doc: str


@dataclass(frozen=True)
class Endpoint:
    """One route: method, path (Starlette syntax), what it answers, its errors."""

    method: str
    path: str
    name: str
    summary: str
    query: tuple[Query, ...] = ()
    errors: tuple[str, ...] = ()
    response: str = ""  # the component schema of its 200 body (RESPONSES)
    body: str = "Envelope"  # a POST's request body: its component schema
    read: bool = False  # a read (reads.Read): Ostrom-Position, consistent=1


#: Most bytes of one number of an embedding or a query vector, its comma included: a
#: double's shortest spelling is at most 24 characters (``-2.2250738585072014e-308``).
NUMBER_BYTES: Final = 32


def body_limit(content_limit: int, embedding_dim: int = 0) -> int:
    """Largest request body a node reads (bytes; larger: 413 too_large, before parsing):
    64 KiB for the envelope, plus six times the content limit, the most bytes JSON may
    spell a content of ``content_limit`` UTF-8 bytes with (``\u0001`` for one byte), plus
    ``NUMBER_BYTES`` per number of an embedding of ``embedding_dim`` numbers."""
    return 64 * 1024 + 6 * content_limit + NUMBER_BYTES * embedding_dim


#: The body limit at the default ``content_limit`` (and no embeddings).
BODY_LIMIT: Final = body_limit(DEFAULTS.content_limit)
#: Largest POST /search body: the query text spelled with escapes, a query vector of
#: ``MAX_EMBEDDING`` numbers, and room for the other keys.
SEARCH_BODY_LIMIT: Final = 6 * MAX_QUERY_BYTES + NUMBER_BYTES * MAX_EMBEDDING + 4096
#: Most log entries one GET /log or /events returns.
MAX_LIMIT: Final = 1000
#: Longest wait of GET /events (seconds).
MAX_WAIT: Final = 30.0
#: The response header of every read: the log position the answer was read at.
POSITION_HEADER: Final = "Ostrom-Position"
#: The response header of a cluster's read: the replica(s) whose executed state answered.
SOURCE_HEADER: Final = "Ostrom-Answered-By"

_AFTER = Query("after", {"type": "integer", "minimum": 0, "default": 0}, "entries after pos N")
_LIMIT = Query(
    "limit",
    {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": 100},
    "at most M entries",
)
_TIMEOUT = Query(
    "timeout",
    {"type": "number", "minimum": 0, "maximum": MAX_WAIT, "default": 10},
    "seconds to wait for an entry after N",
)
_WRITE_ERRORS: Final = tuple(
    c
    for c in GATE_ERRORS
    if c
    not in (
        "not_found",
        "no_content",
        "content_forgotten",
        "content_pending",
        "method_not_allowed",
        "bad_query",
        "query_syntax",
        "query_too_large",
        "not_consistent",
    )
)
_Q = Query(
    "q",
    {"type": "string", "maxLength": MAX_QUERY_BYTES},
    f"the query, plain words: its terms (runs of letters and digits; at most {MAX_TERMS} "
    f"distinct, at most {MAX_QUERY_BYTES} UTF-8 bytes) are searched for, any of them. FTS5 "
    "query syntax is refused (422 `query_syntax`): a quote, `*`, `^`, a parenthesis or "
    "brace, `:`, `+`, or `AND`, `OR`, `NOT`, `NEAR` in capitals; other punctuation "
    "separates words",
)
_K = Query(
    "k", {"type": "integer", "minimum": 1, "maximum": MAX_K, "default": DEFAULT_K}, "most hits"
)
_INCLUDE = Query(
    "include", {"enum": [HISTORY]}, "`history`: superseded versions too, each with its successor"
)
_SLOT = Query("slot", {"type": "string", "minLength": 1, "maxLength": 256}, "only this slot")
_SEARCH_ERRORS: Final = (
    "bad_query",
    "query_syntax",
    "query_too_large",
    "db_unavailable",
    "busy",
)
_VECTOR_ERRORS: Final = ("bad_embedding", "embedding_dimension", "embeddings_off")
_CONSISTENT = Query(
    "consistent",
    {"enum": ["0", "1"], "default": "0"},
    "`1`: on a cluster, answer only when f+1 replicas give the same answer at the same log "
    "position (503 `not_consistent` otherwise); a plain read is one replica's word. A "
    "single node is its own quorum.",
)
#: What every read may answer besides its own errors (a cluster's replicas unreachable or
#: not agreeing).
_READ_ERRORS: Final = ("bad_query", "no_replica", "not_consistent")


def _reading(
    method: str,
    path: str,
    name: str,
    summary: str,
    query: tuple[Query, ...] = (),
    errors: tuple[str, ...] = (),
    response: str = "",
    body: str = "Envelope",
) -> Endpoint:
    """A read: answered from a state at a log position (``Ostrom-Position``), with
    ``consistent=1`` and the cluster's read errors besides its own."""
    errs = (*errors, *(c for c in _READ_ERRORS if c not in errors))
    return Endpoint(method, path, name, summary, (*query, _CONSISTENT), errs, response, body, True)


#: The routes of a node and of a cluster's front: the one table of the API, OpenAPI and docs.
ENDPOINTS: Final[tuple[Endpoint, ...]] = (
    Endpoint(
        "POST",
        "/commands",
        "commands",
        "Submit a signed envelope; answers the observation once it is durable in the log "
        "(a retry of the same envelope is answered from the log, not applied again).",
        errors=_WRITE_ERRORS,
        response="CommandReply",
    ),
    _reading(
        "GET",
        "/artifacts",
        "artifacts",
        "The public state: round and every artifact.",
        response="Artifacts",
    ),
    _reading(
        "GET",
        "/artifacts/{artifact:path}/content",
        "content",
        "The content and metadata the artifact was proposed (or last resubmitted) with, "
        "and its digest. 404 `no_content`: proposed by digest only; `content_forgotten`: "
        "the artifact was forgotten and its content purged (FORGET-PURGE). 503 "
        "`content_pending`: a cluster's replicas are still repairing it. Before the "
        "artifact route: an artifact id ending in `/content` is read through this one.",
        errors=(
            "not_found",
            "no_content",
            "content_forgotten",
            "content_pending",
            "db_unavailable",
            "busy",
        ),
        response="Content",
    ),
    _reading(
        "GET",
        "/artifacts/{artifact:path}",
        "artifact",
        "One artifact's public state.",
        errors=("not_found", "busy"),
        response="Artifact",
    ),
    _reading(
        "GET",
        "/agents",
        "agents",
        "The registry the layers derived, and every key.",
        response="Agents",
    ),
    _reading(
        "GET",
        "/agents/{agent:path}",
        "agent",
        "One agent (or operator): registry entry, public key, last_seq and next_seq.",
        errors=("not_found",),
        response="AgentInfo",
    ),
    _reading(
        "GET", "/slots", "slots", "Each slot's artifacts and its active one(s).", response="Slots"
    ),
    _reading(
        "GET",
        "/slots/{slot:path}",
        "slot",
        "The slot's current value(s) — its active artifact unless hidden (READ-1) — and its "
        "history: its superseded artifacts in the order they were superseded, each a Hit "
        "with its content and provenance (score null).",
        errors=("db_unavailable", "busy"),
        response="SlotValues",
    ),
    _reading(
        "GET",
        "/search",
        "search",
        "Governed retrieval (READ-1): the k best artifacts by BM25 over their content, "
        "title, tags and source, among current knowledge only (active, not hidden); with "
        "`include=history` superseded versions too. Never a proposed, rejected, expired, "
        "retracted, disputed, hidden or forgotten one. Each hit carries its content and "
        "provenance; `position` is the log position the answer reflects.",
        (_Q, _K, _INCLUDE, _SLOT),
        _SEARCH_ERRORS,
        "SearchResult",
    ),
    _reading(
        "POST",
        "/search",
        "search_post",
        "GET /search with the parameters in a JSON body, for long queries, and dense "
        "retrieval: a `vector` of `embedding_dim` numbers (a community parameter; 0: off, "
        "422 `embeddings_off`) ranks the payloads' embeddings by cosine similarity; with "
        "`q` too, the lexical and the dense ranking are fused by reciprocal rank fusion "
        f"(score = Σ 1/({RRF_K} + rank), each ranking after READ-1's filter, to depth "
        f"{FUSION_DEPTH}). `q` may be left out with a vector. Each hit's `ranks` are its "
        "places in both rankings, `similarity` its cosine similarity (null: no vector, or "
        "not among the dense ranking's hits).",
        errors=("malformed", "too_large", *_SEARCH_ERRORS, *_VECTOR_ERRORS),
        response="SearchResult",
        body="SearchRequest",
    ),
    _reading(
        "GET",
        "/log",
        "log",
        "Log entries after pos N (refused reveals redacted until public: CR-1).",
        (_AFTER, _LIMIT),
        ("bad_query", "db_unavailable", "busy"),
        "LogPage",
    ),
    _reading(
        "GET",
        "/events",
        "events",
        "Long poll: the entries after pos N, waiting up to `timeout` s for the first. With "
        "`Accept: text/event-stream`: server-sent events (`id` = pos, `data` = a LogEntry) "
        "for `timeout` s, resuming after `Last-Event-ID`.",
        (_AFTER, _LIMIT, _TIMEOUT),
        ("bad_query", "db_unavailable", "busy"),
        "LogPage",
    ),
    _reading(
        "GET",
        "/health",
        "health",
        "Liveness: log position and round, and the community id every envelope is signed "
        "for (ENV-1). `status` `degraded`, with `writes`: an append failed (a full disk) and "
        "every write is refused at once (503 `db_unavailable`, `Retry-After`) until a probe "
        "of the disk commits; the reads still answer.",
        response="Health",
    ),
    Endpoint(
        "GET",
        "/status",
        "status",
        "What serves this API and its counters: a node's log position and group commits; "
        "a cluster front's n, f, batching, client identities and counters (not a read: "
        "the front's own, or the node's own, state).",
    ),
    Endpoint("GET", "/openapi.json", "openapi", "This document."),
)


def openapi_path(path: str) -> str:
    return path.replace(":path}", "}")


def _error_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["error", "detail"],
        "additionalProperties": False,
        "properties": {
            "error": {"enum": sorted(GATE_ERRORS)},
            "detail": {"type": "string"},
        },
    }


_ENVELOPE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "required": ["agent", "seq", "command", "signature"],
    "additionalProperties": False,
    "properties": {
        "agent": {"type": "string", "minLength": 1, "maxLength": 256},
        "seq": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},
        "command": {"$ref": "#/components/schemas/Command"},
        "signature": {"type": "string", "pattern": "^[0-9a-f]{128}$"},
        "public_key": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "admission": {
            "oneOf": [
                {
                    "type": "object",
                    "required": ["nonce"],
                    "properties": {"nonce": {"type": "string", "pattern": "^[0-9a-f]{1,64}$"}},
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "required": ["invite", "operator"],
                    "properties": {
                        "operator": {"type": "string", "minLength": 1, "maxLength": 256},
                        "invite": {"type": "string", "pattern": "^[0-9a-f]{128}$"},
                    },
                    "additionalProperties": False,
                },
            ]
        },
    },
    "description": (
        f"Ed25519 signature by `agent` over {SIGNING_DOMAIN!r} + the community id (GET "
        "/health) + a newline + canonical JSON of {agent, seq, command[, public_key, "
        "admission]}, the command without its payload (content, title, tags, source: its "
        "digest covers them) (docs/service.md). public_key and admission: join only "
        "(admission: the proof the community's join_mode asks)."
    ),
}


def _obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "required": sorted(required),
        "properties": {**required, **(optional or {})},
        "additionalProperties": optional is not None,
    }


def _closed(required: dict[str, Any], optional: dict[str, Any]) -> dict[str, Any]:
    """``_obj`` with optional properties and no others."""
    return {**_obj(required, optional), "additionalProperties": False}


_INT: Final = {"type": "integer"}
_POS: Final = {"type": "integer", "minimum": 0}
_STR: Final = {"type": "string"}
_EVENTS: Final = {"type": "array", "items": {"type": "object"}}
_IDS: Final = {"type": "array", "items": _STR}

#: The 200 bodies, as component schemas (test_service_app validates real answers).
_RESPONSES: Final[dict[str, Any]] = {
    "CommandReply": _obj(
        {"pos": _POS, "result": _STR, "events": _EVENTS, "retry": {"type": "boolean"}}
    ),
    "LogEntry": _obj(
        {
            "pos": _POS,
            "agent": _STR,
            "seq": _POS,
            "command": {"type": "object"},
            "result": _STR,
            "events": _EVENTS,
        }
    ),
    "LogPage": _obj(
        {
            "entries": {"type": "array", "items": {"$ref": "#/components/schemas/LogEntry"}},
            "last_pos": _POS,
        }
    ),
    "Artifact": _obj(
        {
            "slot": _STR,
            "submitter": _STR,
            "state": _STR,
            "phase": {"type": ["string", "null"]},
            "reviewers": _IDS,
            "committed": _IDS,
            "revealed": {"type": ["object", "null"], "additionalProperties": _STR},
        },
        {
            "reads": _obj(
                {
                    "returned": _POS,
                    "last_round": {"type": ["integer", "null"]},
                    "recent_queries": _IDS,
                }
            )
        },
    ),
    "Artifacts": _obj(
        {
            "now": _INT,
            "artifacts": {
                "type": "object",
                "additionalProperties": {"$ref": "#/components/schemas/Artifact"},
            },
        }
    ),
    "AgentInfo": _obj(
        {
            "agent": _STR,
            "operator": {"type": "boolean"},
            "public_key": {"type": ["string", "null"]},
            "last_seq": _POS,
            "next_seq": {"type": "integer", "minimum": 1},
        },
        {
            "tier": _INT,
            "weight": {"type": "number"},
            "sanction": _STR,
            "reputation_micro": _INT,
            "retired_keys": {"type": "array", "items": _STR},
            "revoked": {"const": True},
        },
    ),
    "Agents": _obj({"agents": {"type": "object"}, "principals": {"type": "object"}}),
    "Slots": _obj(
        {
            "slots": {
                "type": "object",
                "additionalProperties": _obj({"artifacts": _IDS, "active": _IDS}),
            }
        }
    ),
    "Health": _closed(
        {
            "status": {"enum": ["ok", "degraded"]},
            "last_pos": _POS,
            "now": _INT,
            "community": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
        },
        {
            "writes": _obj(
                {"since_pos": _POS, "error": _STR, "retry_after": {"type": "integer", "minimum": 1}}
            )
        },
    ),
    "Content": _obj(
        {"artifact": _STR, "digest": _STR},
        {
            "content": _STR,
            "title": _STR,
            "tags": _IDS,
            "source": _STR,
            "embedding": {"type": "array", "items": {"type": "number"}},
        },
    ),
    # a search's hits carry ranks and similarity, a slot's do not; nothing else may appear
    "Hit": _closed(
        {
            "artifact": _STR,
            "slot": _STR,
            "state": {"enum": ["active", "superseded"]},
            "score": {"type": ["number", "null"]},
            "digest": {"type": ["string", "null"]},
            "content": {"type": ["string", "null"]},
            "title": {"type": ["string", "null"]},
            "tags": {"type": ["array", "null"], "items": _STR},
            "source": {"type": ["string", "null"]},
            "submitter": _STR,
            "decision": {"type": ["object", "null"]},
            "reviewers": _IDS,
            "submitter_tier": {"type": ["integer", "null"]},
            "submitter_reputation": {"type": ["number", "null"]},
            "activated_round": {"type": ["integer", "null"]},
            "supersedes": {"type": ["string", "null"]},
            "superseded_by": {"type": ["string", "null"]},
            "superseded_round": {"type": ["integer", "null"]},
        },
        {
            "ranks": _obj(
                {
                    "lexical": {"type": ["integer", "null"], "minimum": 1},
                    "dense": {"type": ["integer", "null"], "minimum": 1},
                }
            ),
            "similarity": {"type": ["number", "null"]},
        },
    ),
    "SearchResult": _obj(
        {
            "hits": {"type": "array", "items": {"$ref": "#/components/schemas/Hit"}},
            "position": _POS,
        }
    ),
    "SlotValues": _obj(
        {
            "slot": _STR,
            "current": {"type": "array", "items": {"$ref": "#/components/schemas/Hit"}},
            "history": {"type": "array", "items": {"$ref": "#/components/schemas/Hit"}},
            "position": _POS,
        }
    ),
    "SearchRequest": _obj(
        {},
        {
            "q": {"type": "string", "maxLength": MAX_QUERY_BYTES},
            "vector": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_EMBEDDING,
                "items": {"type": "number"},
            },
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K},
            "include": {"enum": [HISTORY, None]},
            "slot": {"type": ["string", "null"], "minLength": 1, "maxLength": 256},
        },
    ),
}


def _rebase(schema: Any, prefix: str) -> Any:
    """``schema`` with its local refs (``#/$defs/x``) rewritten under ``prefix``, so that
    it resolves embedded in another document by any tool (no reliance on ``$id``)."""
    if isinstance(schema, dict):
        return {
            k: (
                prefix + v[1:]
                if k == "$ref" and isinstance(v, str) and v.startswith("#/")
                else _rebase(v, prefix)
            )
            for k, v in schema.items()
            if k not in ("$id", "$schema")
        }
    if isinstance(schema, list):
        return [_rebase(v, prefix) for v in schema]
    return schema


_READ_HEADERS: Final[dict[str, Any]] = {
    POSITION_HEADER: {
        "description": "the log position of the state the answer was read from",
        "schema": {"type": "integer", "minimum": 0},
    },
    SOURCE_HEADER: {
        "description": "a cluster only: the replica whose executed state answered (with "
        "consistent=1: the f+1 that agreed, comma-separated)",
        "schema": {"type": "string"},
    },
}


def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document of a node and of a cluster's front (the same routes)."""
    paths: dict[str, Any] = {}
    for e in ENDPOINTS:
        op: dict[str, Any] = {"operationId": e.name, "summary": e.summary}
        params = [
            {
                "name": q.name,
                "in": "query",
                "required": False,
                "schema": q.schema,
                "description": q.doc,
            }
            for q in e.query
        ]
        params += [
            {
                "name": seg.strip("{}").split(":")[0],
                "in": "path",
                "required": True,
                "schema": {"type": "string"},
            }
            for seg in e.path.split("/")
            if seg.startswith("{")
        ]
        if params:
            op["parameters"] = params
        if e.method == "POST":
            op["requestBody"] = {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{e.body}"}}
                },
            }
        ok = {"$ref": f"#/components/schemas/{e.response}"} if e.response else {"type": "object"}
        content: dict[str, Any] = {"application/json": {"schema": ok}}
        if e.name == "events":
            content["text/event-stream"] = {"schema": {"type": "string"}}
        responses: dict[str, Any] = {"200": {"description": "OK", "content": content}}
        if e.read:
            responses["200"]["headers"] = _READ_HEADERS
        for status in sorted({GATE_ERRORS[c].status for c in e.errors}):
            codes = [c for c in e.errors if GATE_ERRORS[c].status == status]
            responses[str(status)] = {
                "description": "; ".join(f"{c}: {GATE_ERRORS[c].doc}" for c in codes),
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            }
        op["responses"] = responses
        paths.setdefault(openapi_path(e.path), {})[e.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ostrom",
            "version": __version__,
            "description": "One ostrom node, or the front of an ostrom cluster: the same "
            "routes, errors and answers (docs/service.md, docs/design.md §11). Generated "
            "from reference/ostrom/service/openapi.py; regenerate with `ostrom docs`.",
        },
        "paths": paths,
        "components": {
            "schemas": {
                "Envelope": _ENVELOPE_SCHEMA,
                "Command": _command_schema(),
                "Error": _error_schema(),
                **_RESPONSES,
            }
        },
    }


def _command_schema() -> dict[str, Any]:
    """A command of an envelope: the protocol's (protocol/commands.py) or one of the gate's
    own ``IDENTITY_COMMANDS`` (rotate_key, revoke_key: service/gate.py)."""
    schema: dict[str, Any] = _rebase(command_schema(), "#/components/schemas/Command")
    schema["oneOf"] = [*schema["oneOf"], *identity_command_schema()]
    return schema


def openapi_text() -> str:
    """schema/openapi.json as committed."""
    return json.dumps(openapi(), indent=2, ensure_ascii=False) + "\n"
