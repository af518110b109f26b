"""The read API's answers, written once for a node and for every replica of a cluster.

A read is data (``Read``: the endpoint's name and its checked arguments).  The node's app
answers it over its own ``Node``; a cluster replica answers the very same ``Read``, sent
by the front over the replica's read channel (cluster/replica_process.py), over the node
its ordered commands are executed on (cluster/app.py).  So an answer of a cluster is the
answer a single node gives in the same state, byte for byte, and the route table, the
errors and the OpenAPI document of the two are one (docs/design.md §11).

Every answer says at which log position it was read (``Answer.position``: the state
after that many logged commands), and the two belong to one state: the reads of the
public state (``VIEWED``) answer from one ``node.View`` and its position, without the
node's lock (a write in progress never delays them: issue 41, item 9); the others (the
log, a slot's payloads, a search, a content) read one snapshot of the file and the view
of its position, without the lock either (``Node._reading``).  ``Read.from_json`` is
the replica's side of the channel: a frame from the network is hostile, and anything
that is not a read the app could have built is refused (``ReadError``), never answered
and never a crash.
"""

from __future__ import annotations

import json
import threading
import weakref
from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Any, Final

from ostrom.protocol.commands import MAX_EMBEDDING, is_number
from ostrom.service.node import Node, Reply, View, error
from ostrom.service.openapi import MAX_LIMIT
from ostrom.service.search import SearchError, SearchQuery

__all__ = ["READS", "VIEWED", "Answer", "Read", "ReadError", "answer", "slots_of"]

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
#: The reads answered from the published view alone, without the node's lock.
VIEWED: Final = frozenset({"artifacts", "artifact", "agents", "agent", "slots", "health"})
#: The reads of the view that take no argument: their answer is kept with the view.
_WHOLE: Final = frozenset({"artifacts", "agents", "slots"})
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
    #: the body already encoded as the app sends it (a node's answer kept with its view)
    raw: bytes | None = field(default=None, compare=False, repr=False)

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


def _enc(obj: Any) -> bytes:
    """``obj`` encoded as ``JSONResponse`` encodes a body (so a body assembled from these
    pieces is byte for byte the one the app would send)."""
    return json.dumps(
        obj, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


class _Whole:
    """The answers of GET /artifacts and GET /slots of one node, brought from one view to
    the next by the artifacts that changed in between (``Node.changed_since``), not built
    again from the whole state (issue 41, item 9: with a write between any two reads,
    every read of ``/slots`` sorted, grouped and encoded the whole state on the event
    loop, 22 ms at 5,600 artifacts, and the writer kept 14% of its pace).

    Kept: each artifact's encoded ``"id":{...}`` (its entry of ``/artifacts``), each
    slot's members (sorted), its body entry and encoded ``"slot":{...}``, and the slots in
    the order ``slots_of`` gives them (by their first artifact).  An answer is then the
    pieces joined in order: one pass in C over the state, not a re-encoding of it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pos: int | None = None  # the view the pieces are of
        self.arts: dict[str, Any] = {}  # the artifacts' entries the pieces were made from
        self.frag: dict[str, bytes] = {}  # artifact -> "id":{entry}
        self.slot_of: dict[str, str] = {}
        self.members: dict[str, list[str]] = {}  # slot -> its artifacts, sorted
        self.entry: dict[str, tuple[dict[str, list[str]], bytes]] = {}  # slot -> body, piece
        self.firsts: list[tuple[str, str]] = []  # (first artifact, slot), sorted

    def bring(self, node: Node, view: View) -> bool:
        """Bring the pieces to ``view``; False if they are of a later view (the caller
        answers from the whole state)."""
        if self.pos == view.pos:
            return True
        changed = None if self.pos is None else node.changed_since(self.pos, view)
        if changed is None:
            if self.pos is not None and self.pos > view.pos:
                return False
            changed = set(view.state["artifacts"]) | set(self.slot_of)
        arts = view.state["artifacts"]
        affected: set[str] = set()
        for x in changed:
            art = arts.get(x)
            old, new = self.slot_of.get(x), None if art is None else art["slot"]
            if art is None:
                self.frag.pop(x, None)
                self.arts.pop(x, None)
            else:
                self.frag[x] = _enc(x) + b":" + _enc(art)
                self.arts[x] = art
            if old is not None and old != new:
                self.members[old].remove(x)
                del self.slot_of[x]
                affected.add(old)
            if new is not None:
                if old != new:
                    insort(self.members.setdefault(new, []), x)
                    self.slot_of[x] = new
                affected.add(new)
        for s in affected:
            self._slot(s)
        self.pos = view.pos
        return True

    def _slot(self, s: str) -> None:
        """The pieces of slot ``s`` again (its members or their states changed)."""
        old = self.entry.pop(s, None)
        if old is not None:
            first = old[0]["artifacts"][0]
            del self.firsts[bisect_left(self.firsts, (first, s))]
        members = self.members.get(s)
        if not members:
            self.members.pop(s, None)
            return
        body = {
            "artifacts": list(members),
            "active": [x for x in members if self.arts[x]["state"] == "active"],
        }
        self.entry[s] = (body, _enc(s) + b":" + _enc(body))
        insort(self.firsts, (members[0], s))

    def artifacts(self, view: View) -> tuple[dict[str, Any], bytes]:
        st = view.state
        body = {"now": st["now"], "artifacts": st["artifacts"]}
        frag = self.frag
        joined = b",".join([frag[x] for x in st["artifacts"]])
        return body, b'{"now":' + _enc(st["now"]) + b',"artifacts":{' + joined + b"}}"

    def slots(self) -> tuple[dict[str, Any], bytes]:
        entry, order = self.entry, [s for _, s in self.firsts]
        body = {"slots": {s: entry[s][0] for s in order}}
        return body, b'{"slots":{' + b",".join([entry[s][1] for s in order]) + b"}}"


#: Each node's ``_Whole`` (weak: a node closed and dropped takes its pieces along).
_WHOLES: Final[weakref.WeakKeyDictionary[Node, _Whole]] = weakref.WeakKeyDictionary()
_WHOLES_LOCK: Final = threading.Lock()


def _whole(node: Node, view: View, name: str) -> tuple[dict[str, Any], bytes]:
    """The body and encoded answer of a read of the whole state (``_WHOLE``)."""
    if name in ("artifacts", "slots"):
        with _WHOLES_LOCK:
            whole = _WHOLES.setdefault(node, _Whole())
        with whole.lock:
            if whole.bring(node, view):
                return whole.artifacts(view) if name == "artifacts" else whole.slots()
    body = _viewed(node, view, Read.of(name)).body
    return body, _enc(body)


def answer(node: Node, read: Read) -> Answer:
    """The answer of ``node`` to ``read`` and the position it was read at (one state: a
    ``VIEWED`` read answers from one view and its position; the others from one snapshot
    of the file and the view of its position)."""
    if read.name in VIEWED:
        view = node.view()
        if read.name in _WHOLE:  # the same answer for every read of this view
            kept = view.answers.get(read.name)
            if kept is None:
                kept = view.answers[read.name] = _whole(node, view, read.name)
            return Answer(200, kept[0], view.pos, raw=kept[1])
        reply = _viewed(node, view, read)
        return Answer(reply.status, reply.body, view.pos)
    reply, pos = _reply(node, read)
    return Answer(reply.status, reply.body, pos)


def _viewed(node: Node, view: View, read: Read) -> Reply:
    """A ``VIEWED`` read, answered from ``view`` alone."""
    name, st = read.name, view.state
    if name == "artifacts":
        return Reply(200, {"now": st["now"], "artifacts": st["artifacts"]})
    if name == "artifact":
        x = str(read.arg("artifact"))
        a = node.artifact(x, view)
        return error("not_found", f"no artifact {x[:200]!r}") if a is None else Reply(200, a)
    if name == "agents":
        return Reply(200, {"agents": st["agents"], "principals": st["principals"]})
    if name == "agent":
        info = node.agent(str(read.arg("agent")), view)
        if info is None:
            return error("not_found", "no such agent or operator (join first)")
        return Reply(200, info)
    if name == "slots":
        return Reply(200, {"slots": slots_of(st["artifacts"])})
    if name == "health":
        community = node.gate.setup.community  # what a client signs for (ENV-1)
        body = {"status": "ok", "last_pos": view.pos, "now": st["now"], "community": community}
        degraded = node.degraded()  # writes refused after a failed append (service/node.py)
        if degraded is not None:
            body.update(status="degraded", writes=degraded)
        return Reply(200, body)
    raise ReadError(f"not a read of the view: {name!r}")


def _reply(node: Node, read: Read) -> tuple[Reply, int]:
    """A read of the file, and the position of the snapshot it was read from."""
    name = read.name
    if name == "content":
        return node.content_at(str(read.arg("artifact")))
    if name == "slot":
        body = node.slot(str(read.arg("slot")))
        return Reply(200, body), int(body["position"])
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
            return error(exc.code, exc.detail), node.view().pos
        body = node.search(query)
        return Reply(200, body), int(body["position"])
    if name == "log":
        entries, pos = node.log_at(int(read.arg("after", 0)), int(read.arg("limit", 100)))
        return Reply(200, {"entries": entries, "last_pos": pos}), pos
    raise ReadError(f"no such read: {name!r}")
