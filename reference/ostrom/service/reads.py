"""The read API's answers, written once for a node and for every replica of a cluster.

A read is data (``Read``: the endpoint's name and its checked arguments).  The node's app
answers it over its own ``Node``; a cluster replica answers the very same ``Read``, sent
by the front over the replica's read channel (cluster/replica_process.py), over the node
its ordered commands are executed on (cluster/app.py).  So an answer of a cluster is the
answer a single node gives in the same state, byte for byte, and the route table, the
errors and the OpenAPI document of the two are one (docs/design.md §11).

Every answer says at which log position it was read (``Answer.position``: the state
after that many logged commands); the node and the replica read the answer and its
position under the node's lock, so the two belong to one state.  ``Read.from_json`` is
the replica's side of the channel: a frame from the network is hostile, and anything
that is not a read the app could have built is refused (``ReadError``), never answered
and never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ostrom.protocol.commands import MAX_EMBEDDING, is_number
from ostrom.service.node import Node, Reply, error
from ostrom.service.openapi import MAX_LIMIT
from ostrom.service.search import SearchError, SearchQuery

__all__ = ["READS", "Answer", "Read", "ReadError", "answer", "slots_of"]

#: Each read and the names of its arguments (all optional but the path's).
READS: Final[dict[str, frozenset[str]]] = {
    "artifacts": frozenset(),
    "artifact": frozenset({"artifact"}),
    "content": frozenset({"artifact"}),
    "agents": frozenset(),
    "agent": frozenset({"agent"}),
    "slots": frozenset(),
    "slot": frozenset({"slot"}),
    "search": frozenset({"q", "k", "include", "slot", "vector"}),
    "log": frozenset({"after", "limit"}),
    "health": frozenset(),
}
#: The arguments a read must carry (a path parameter).
_REQUIRED: Final = {"artifact": "artifact", "content": "artifact", "agent": "agent", "slot": "slot"}
#: Longest id in a path (the gate's agent bound; artifact and slot ids are no longer).
_MAX_ID: Final = 4096


class ReadError(ValueError):
    """Not a read the app builds (a hostile frame on a replica's read channel)."""


@dataclass(frozen=True)
class Read:
    """One read: the endpoint's name and its arguments (JSON values)."""

    name: str
    args: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, name: str, **args: Any) -> Read:
        return cls(name, tuple(sorted((k, v) for k, v in args.items() if v is not None)))

    def arg(self, name: str, default: Any = None) -> Any:
        return dict(self.args).get(name, default)

    def to_json(self) -> dict[str, Any]:
        return {"read": self.name, "args": dict(self.args)}

    @classmethod
    def from_json(cls, doc: object) -> Read:
        """The read ``doc`` describes, or ``ReadError``: a known name, only its
        arguments, each a string or an integer of bounded size (what the app sends)."""
        if not isinstance(doc, dict) or set(doc) != {"read", "args"}:
            raise ReadError('a read is {"read": NAME, "args": {...}}')
        name, args = doc["read"], doc["args"]
        if not isinstance(name, str) or name not in READS:
            raise ReadError("no such read")
        if not isinstance(args, dict) or set(args) - READS[name]:
            raise ReadError(f"{name} takes {sorted(READS[name])}")
        for k, v in args.items():
            if k == "vector":  # a query vector: the numbers the app checked (dense retrieval)
                if not isinstance(v, list) or not 1 <= len(v) <= MAX_EMBEDDING:
                    raise ReadError(f"vector is a list of 1 to {MAX_EMBEDDING} numbers")
                if not all(is_number(x) for x in v):
                    raise ReadError("vector is a list of finite numbers")
                continue
            if isinstance(v, bool) or not isinstance(v, str | int):
                raise ReadError(f"{k} is a string or an integer")
            if isinstance(v, str) and len(v) > _MAX_ID:
                raise ReadError(f"{k} is too long")
            if isinstance(v, int) and not 0 <= v < 2**63:
                raise ReadError(f"{k} is out of range")
        if name == "log":
            after, limit = args.get("after", 0), args.get("limit", 1)
            if not isinstance(after, int) or not isinstance(limit, int):
                raise ReadError("after and limit are integers")
            if not 1 <= limit <= MAX_LIMIT:
                raise ReadError(f"limit is in 1..{MAX_LIMIT}")
        need = _REQUIRED.get(name)
        if need is not None and not isinstance(args.get(need), str):
            raise ReadError(f"{name} needs {need}")
        return cls.of(name, **args)


@dataclass(frozen=True)
class Answer:
    """A read's answer: its HTTP status and body, the log position of the state it was
    read from, and who answered (a cluster's replica(s); None: the node itself)."""

    status: int
    body: dict[str, Any]
    position: int | None  # None: no state answered (a cluster's read error)
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "body": self.body, "position": self.position}


def slots_of(artifacts: dict[str, Any]) -> dict[str, Any]:
    """Each slot's artifacts and its active one(s) (GET /slots)."""
    out: dict[str, dict[str, list[str]]] = {}
    for x, a in sorted(artifacts.items()):
        s = out.setdefault(a["slot"], {"artifacts": [], "active": []})
        s["artifacts"].append(x)
        if a["state"] == "active":
            s["active"].append(x)
    return out


def answer(node: Node, read: Read) -> Answer:
    """The answer of ``node`` to ``read`` and the position it was read at (one state:
    the node's lock is held across both; it is reentrant, the node's reads take it too)."""
    with node._lock:
        reply = _reply(node, read)
        return Answer(reply.status, reply.body, node.last_pos)


def _reply(node: Node, read: Read) -> Reply:
    name = read.name
    if name == "artifacts":
        st = node.public_state()
        return Reply(200, {"now": st["now"], "artifacts": st["artifacts"]})
    if name == "artifact":
        x = str(read.arg("artifact"))
        a = node.artifact(x)
        return error("not_found", f"no artifact {x[:200]!r}") if a is None else Reply(200, a)
    if name == "content":
        return node.content(str(read.arg("artifact")))
    if name == "agents":
        st = node.public_state()
        return Reply(200, {"agents": st["agents"], "principals": st["principals"]})
    if name == "agent":
        info = node.agent(str(read.arg("agent")))
        if info is None:
            return error("not_found", "no such agent or operator (join first)")
        return Reply(200, info)
    if name == "slots":
        return Reply(200, {"slots": slots_of(node.public_state()["artifacts"])})
    if name == "slot":
        return Reply(200, node.slot(str(read.arg("slot"))))
    if name == "search":
        try:
            query = SearchQuery.parse(
                read.arg("q"),
                read.arg("k"),
                read.arg("include"),
                read.arg("slot"),
                vector=read.arg("vector"),
                dim=node.gate.params.embedding_dim,
            )
        except SearchError as exc:
            return error(exc.code, exc.detail)
        return Reply(200, node.search(query))
    if name == "log":
        entries = node.log(int(read.arg("after", 0)), int(read.arg("limit", 100)))
        return Reply(200, {"entries": entries, "last_pos": node.last_pos})
    if name == "health":
        now = node.gate.community.orchestrator.now
        community = node.gate.setup.community  # what a client signs for (ENV-1)
        return Reply(
            200, {"status": "ok", "last_pos": node.last_pos, "now": now, "community": community}
        )
    raise ReadError(f"no such read: {name!r}")
