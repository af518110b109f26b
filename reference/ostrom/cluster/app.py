"""What a cluster replica executes: batches of commands on the single node's write path.

The front batches (docs/cluster.md, "Batching"): one PBFT request carries the operation
``{"batch": [command, ...]}``, up to ``batch_size`` commands that arrived together.  A
replica executes a batch by submitting its commands in order to its ``Node`` (the one
``ostrom serve`` runs, over the replica's own node database: ``replica_node``) and answers
the list of the node's replies, ``{"results": [{"status", "body"}, ...]}`` (``ClusterApp``).
So a cluster runs exactly the single node's logic, ``POST /commands`` takes the same body
and gives the same answer, and every replica keeps the node's log, content and search
index, from which it answers the read API (service/reads.py; docs/design.md §11).  An
envelope the gate refuses is ordered like any other and refused identically by every
replica (nothing changes for it), so the replicas stay deterministic whatever a client
sends; an operation that is not a batch is submitted as one command.

A batch also says which of its commands were ordered without the payload the front
handed the replicas for them (``{"batch": [...], "payloads": [index, ...]}``, present only
if any: cluster/payloads.py).  A replica that holds no payload for such a command
executes it all the same and then fetches the payload from its peers (``Repair``).

The audit (``audit.py``, REPL-1) replays a replica's log on a bare core instead
(``Retries`` over a ``Gate``, ``execute_operation``): the node's state is its gate's, so
the replay's public state is the one the replica reports (its ``app_digest``), which the
audit compares with the replay wherever the replica was at that point of its log.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ostrom.cluster.config import ClusterConfig, ConfigError
from ostrom.cluster.payloads import PayloadError, PayloadStore, Repair, Wanted
from ostrom.consensus.application import Core, CoreFactory
from ostrom.consensus.messages import canonical, sha256_hex
from ostrom.protocol.commands import Observation, payload_of
from ostrom.protocol.lifecycle import FORGOTTEN
from ostrom.protocol.params import DEFAULTS, ParamError, Params
from ostrom.service.founders import FoundersError, load_founders
from ostrom.service.gate import GATE_ERRORS, Gate, Setup
from ostrom.service.node import Node, Reply, error
from ostrom.service.reads import Answer, Read, answer
from ostrom.service.store import DbUnavailable, Store, StoreError

__all__ = [
    "BATCH",
    "PAYLOADS",
    "RESULTS",
    "ClusterApp",
    "ReplicaStoreFailure",
    "Retries",
    "batch_operation",
    "carried_of",
    "commands_of",
    "community",
    "community_factory",
    "core_factory",
    "execute_operation",
    "replica_node",
    "state_digest",
]

BATCH: Final = "batch"
#: The indices of a batch's commands ordered without the payload handed for them.
PAYLOADS: Final = "payloads"
RESULTS: Final = "results"
#: ``snapshot_every`` of a replica's node: never (it is rebuilt by re-execution).
_NEVER: Final = 2**62


def batch_operation(commands: list[Any], carried: Sequence[int] = ()) -> dict[str, Any]:
    """The PBFT operation that carries ``commands`` (the front builds it); ``carried``:
    the indices of those ordered without the payload the front handed for them."""
    if carried:
        return {BATCH: list(commands), PAYLOADS: sorted(set(carried))}
    return {BATCH: list(commands)}


def _is_batch(operation: Any) -> bool:
    return (
        isinstance(operation, dict)
        and set(operation) in ({BATCH}, {BATCH, PAYLOADS})
        and isinstance(operation[BATCH], list)
    )


def commands_of(operation: Any) -> list[Any]:
    """The commands an operation carries, in execution order."""
    if _is_batch(operation):
        return list(operation[BATCH])
    return [operation]


def carried_of(operation: Any) -> frozenset[int]:
    """The indices of the commands of ``operation`` whose payload was handed apart (none
    for anything but a batch that names them)."""
    if not _is_batch(operation):
        return frozenset()
    marks = operation.get(PAYLOADS, [])
    if not isinstance(marks, list):
        return frozenset()
    return frozenset(i for i in marks if isinstance(i, int) and not isinstance(i, bool))


def execute_operation(core: Core, operation: Any) -> dict[str, Any]:
    """Apply every command of ``operation`` in order; the list of observations.

    The core gets its own copy of each command (``_json_copy``): the operation belongs to
    the replica's request, which its history and its store keep.  Each observation is
    answered in its JSON form (what a decoded reply holds), from the canonical bytes the
    core gives (``Retries.apply_canonical``: the bytes it keeps for a retry), or encoded
    here."""
    results = []
    encoded = getattr(core, "apply_canonical", None)
    for cmd in commands_of(operation):
        mine = _json_copy(cmd)
        text = encoded(mine) if encoded is not None else canonical(core.apply(mine))
        results.append(json.loads(text))
    return {RESULTS: results}


def _json_copy(value: Any) -> Any:
    """A deep copy of a JSON tree (dicts, lists, strings, numbers, booleans, null), as
    ``copy.deepcopy`` makes it but without its memo: a command decoded from the wire is a
    tree, no value in it is shared.  Anything else is copied by ``copy.deepcopy``."""
    if isinstance(value, dict):
        return {k: _json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_copy(v) for v in value]
    if value is None or isinstance(value, str | int | float):  # bool is an int
        return value
    return copy.deepcopy(value)


class ReplicaStoreFailure(RuntimeError):
    """The replica's node database refused a write: the replica must stop (fail-stop),
    as for its PBFT store.  Answering the command 503 as a single node does would leave
    this replica's state behind its peers' (they applied the command)."""


class ClusterApp:
    """The PBFT ``App`` of a cluster replica: the single node's write path (``Node``) on
    the ordered batches.

    A replica executes each command as ``ostrom serve`` does — retries answered from the
    node's log, the gate's refusals, the payload kept in its content table with its FTS
    index, a forgotten artifact's payload purged (FORGET-PURGE) — and answers each
    command's ``{"status", "body"}``: the reply a node gives, ``pos`` included (the
    node's log position, the same on every replica: they execute the same commands on
    the same fresh database).  The front hands it to the HTTP client unchanged, so a
    cluster answers a command exactly as a node does.  Reads are answered from this
    node too (service/reads.py), never ordered.

    ``payloads``: the replica's payload file (cluster/payloads.py).  The front orders a
    propose or resubmit without its payload; executing it, the replica gives back the
    payload handed for that envelope (``_give_back``), and after the batch drops the
    payloads the node did not keep and those of forgotten artifacts (``_settle``).

    ``repair``: what the replica lacks (cluster/payloads.py, "Repair").  A command the
    batch marks as carried whose payload this replica was not handed is executed
    without it; if it is accepted, its payload is wanted (``_lacks``), and ``repaired``
    keeps a payload a peer gave, once checked."""

    def __init__(
        self, node: Node, payloads: PayloadStore | None = None, repair: Repair | None = None
    ) -> None:
        self.node = node
        self.payloads = payloads
        self.repair = repair
        self.executed = 0

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]:
        self.executed += 1
        commands = [_json_copy(c) for c in commands_of(operation)]
        carried = carried_of(operation)
        handed = [self._give_back(c) for c in commands]
        lacking = [
            _wanted(c) if i in carried and h is None else None
            for i, (c, h) in enumerate(zip(commands, handed, strict=True))
        ]
        replies = self.node.submit_many(commands)
        out = []
        for r in replies:
            if r.status == GATE_ERRORS["db_unavailable"].status:
                raise ReplicaStoreFailure(str(r.body.get("detail")))
            out.append({"status": r.status, "body": r.body})
        if self.payloads is not None:
            self._settle(handed, replies)
            self._lacks(lacking, replies)
        return {RESULTS: out}

    def _lacks(self, lacking: list[Wanted | None], replies: list[Reply]) -> None:
        """Want the payloads of the accepted commands executed without them (``want`` is
        idempotent, and a retry finds the payload file holding one kept since); stop
        wanting those of artifacts forgotten (FORGET-PURGE: never fetched)."""
        if self.repair is None:
            return
        for w, r in zip(lacking, replies, strict=True):
            if w is not None and r.status == 200 and r.body.get("result") == "ok":
                self.repair.want(w)
        forgotten = [
            str(ev["artifact"])
            for r in replies
            if r.status == 200
            for ev in r.body.get("events", ())
            if isinstance(ev, dict) and ev.get("to") == FORGOTTEN and "artifact" in ev
        ]
        if forgotten:
            self.repair.drop(forgotten)

    def repaired(self, w: Wanted, payload: dict[str, Any]) -> bool:
        """Keep ``payload``, a peer's answer that ``Repair.answer`` checked against ``w``'s
        digest: in the payload file (a restart gives it back like a handed one) and in
        the node's content table and search index.  False, nothing kept, if it is no
        longer wanted or its artifact was forgotten meanwhile (FORGET-PURGE); False, and
        still wanted, if a file refused it (full, or a failed write)."""
        if self.repair is None or self.payloads is None or not self.repair.is_wanted(w):
            return False
        art = self.node.gate.community.orchestrator.public_artifact(w.artifact)
        if art is None or art["state"] == FORGOTTEN:
            self.repair.drop([w.artifact])
            return False
        try:
            self.payloads.put(w.agent, w.seq, w.artifact, w.digest, payload)
            self.node.keep_payload(w.artifact, w.digest, payload)
        except (PayloadError, DbUnavailable, sqlite3.Error):
            return False
        self.repair.done(w)
        return True

    def _give_back(self, command: Any) -> tuple[str, int, str] | None:
        """Give a propose or resubmit ordered without its payload the payload the front
        handed for its envelope (cluster/payloads.py); the envelope's key if it did."""
        if self.payloads is None or not isinstance(command, dict):
            return None
        agent, seq, inner = command.get("agent"), command.get("seq"), command.get("command")
        if not (
            isinstance(agent, str)
            and isinstance(seq, int)
            and not isinstance(seq, bool)
            and isinstance(inner, dict)
            and isinstance(inner.get("digest"), str)
            and not payload_of(inner)
        ):
            return None
        payload = self.payloads.get(agent, seq, inner["digest"])
        if payload is None:
            return None
        command["command"] = {**inner, **payload}
        return agent, seq, inner["digest"]

    def _kept(self, key: tuple[str, int, str], reply: Reply) -> bool:
        """Whether the payload handed for ``key`` is the payload of an accepted command:
        this envelope's (applied, ``ok``), or, for a refused one, that of the envelope
        logged with the same agent and seq if it has the same digest (a replay of it)."""
        agent, seq, digest = key
        if reply.status == 200:
            return reply.body.get("result") == "ok"
        if self.node.gate.last_seq(agent) < seq:
            return False  # nothing applied at (agent, seq)
        logged = self.node.store.find(agent, seq)
        if logged is None or logged.result != "ok":
            return False
        command = logged.envelope.get("command")
        return isinstance(command, dict) and command.get("digest") == digest

    def _settle(self, handed: list[tuple[str, int, str] | None], replies: list[Reply]) -> None:
        """What the payload file keeps after a batch: not the payload of an envelope that
        was not accepted (the node keeps none: ``_kept``), nothing of a forgotten
        artifact."""
        assert self.payloads is not None
        forgotten = []
        for key, r in zip(handed, replies, strict=True):
            if key is not None and not self._kept(key, r):
                self.payloads.discard(*key)
            for ev in r.body.get("events", ()) if r.status == 200 else ():
                if isinstance(ev, dict) and ev.get("to") == FORGOTTEN and "artifact" in ev:
                    forgotten.append(str(ev["artifact"]))
        if forgotten:
            self.payloads.forget(forgotten)  # FORGET-PURGE

    def read(self, read: Read) -> Answer:
        """A read of the HTTP API from this replica's executed state (service/reads.py),
        but for the content of an artifact whose payload is being fetched: 503
        ``content_pending``, not ``no_content`` (that is "proposed by digest only"),
        so the front asks another replica (cluster/payloads.py, "Repair")."""
        ans = answer(self.node, read)
        if (
            read.name == "content"
            and ans.body.get("error") == "no_content"
            and self.repair is not None
            and read.arg("artifact") in self.repair.pending()
        ):
            err = error("content_pending", "this replica is still fetching the content")
            return Answer(err.status, err.body, ans.position)
        return ans

    def state(self) -> dict[str, Any]:
        return self.node.public_state()

    def digest(self) -> str:
        return state_digest(self.state())


def _wanted(command: Any) -> Wanted | None:
    """What a command ordered without its payload lacks (None: not such a command)."""
    if not isinstance(command, dict):
        return None
    agent, seq, inner = command.get("agent"), command.get("seq"), command.get("command")
    if not (isinstance(agent, str) and isinstance(seq, int) and not isinstance(seq, bool)):
        return None
    if not isinstance(inner, dict) or payload_of(inner):
        return None
    artifact, digest = inner.get("artifact"), inner.get("digest")
    if not isinstance(artifact, str) or not isinstance(digest, str):
        return None
    return Wanted(agent, seq, artifact, digest)


def replica_node(cfg: ClusterConfig, replica_id: int) -> Node:
    """The node replica ``replica_id`` executes on: a fresh database (the previous one,
    and its WAL, deleted first) at its ``node_db``, created with the cluster's founders
    and parameters.  It is rebuilt from the executed history at every start (the PBFT
    store is what is durable), so it is written without fsync and never snapshotted, and
    it keeps no advisory read record (``_ReplicaStore``).  ``ConfigError`` if a file
    cannot be used."""
    params, setup = community(cfg.founders, cfg.params, cfg.community)
    path = cfg.replica(replica_id).node_db
    try:
        for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            stale.unlink(missing_ok=True)
        store = _ReplicaStore.open(path, create=(params.to_dict(), setup.to_json()), fsync=False)
    except (StoreError, OSError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return Node(store, Gate(params, setup), [], snapshot_every=_NEVER, snapshot_ratio=0)


class _ReplicaStore(Store):
    """A replica's node database without the advisory read record: reads are not ordered,
    so each replica would count the searches it happened to answer, and two honest
    replicas would answer GET /artifacts/{id} differently (no consistent read of it).
    GET /artifacts/{id} on a cluster shows an empty record (docs/design.md §11)."""

    def record_reads(self, artifacts: Sequence[str], q: str, round: int) -> None:
        return None


def state_digest(state: dict[str, Any]) -> str:
    """The digest of a public state (what ``status`` reports and the audit compares)."""
    return sha256_hex(canonical(state))


def core_factory(cfg: ClusterConfig) -> CoreFactory:
    """The cluster's core, the one place that names it: a fresh ``Gate`` per call, from
    the founders and parameter files read once (every replica and every replay of the
    audit starts from the same state).  ``ConfigError`` if a file cannot be used."""
    return community_factory(cfg.founders, cfg.params, cfg.community)


def community(
    founders: Path | None, params_file: Path | None, community_id: str | None = None
) -> tuple[Params, Setup]:
    """The parameters and founders the two files describe, read exactly as ``ostrom
    serve`` reads them (``load_founders``, ``Params.from_toml``), so a community set up
    for a node runs unchanged on a cluster.  One gate is built here, so what only the
    Community checks (a founder's reputation below its tier's threshold) is refused now,
    as one line (``ConfigError``): a replica refuses to start rather than crash later or
    execute with other parameters than its peers.  ``community_id``: the cluster's
    (cluster.toml), which every envelope is signed for (ENV-1); None, a fresh one (to
    check the files only)."""
    setup = Setup()
    if founders is not None:
        try:
            setup = load_founders(founders)
        except FoundersError as exc:
            raise ConfigError(str(exc)) from None
    if community_id is not None:
        setup = Setup(setup.founders, setup.operators, community_id)
    params = DEFAULTS
    if params_file is not None:
        try:
            params = Params.from_toml(params_file)
        except ParamError as exc:
            raise ConfigError(str(exc)) from None
    try:
        Gate(params, setup)
    except ValueError as exc:
        where = founders if founders is not None else params_file
        raise ConfigError(f"{where}: the community cannot start: {exc}") from None
    return params, setup


def community_factory(
    founders: Path | None, params_file: Path | None, community_id: str | None = None
) -> CoreFactory:
    """Fresh cores (``Retries`` over a ``Gate``) of the community the two files describe
    (``community``): what the audit replays a replica's log on (REPL-1)."""
    params, setup = community(founders, params_file, community_id)

    def make() -> Core:
        return Retries(Gate(params, setup))

    return make


class Retries:
    """A ``Gate`` that answers a retried envelope as the node does: from the log.

    The node (service/node.py) answers an envelope identical to one it applied — a client
    that timed out resends the same bytes — with the logged observation and ``"retry":
    true``, and applies nothing (at most once); a replica's node does the same from its
    own log.  The audit replays a replica's log on a bare gate, which alone would answer
    ``replayed`` (409) where the replica answered a retry.  This core keeps, for every
    applied envelope, its canonical digest and its observation, and answers an identical
    one from there with ``retry: true``; anything else (another envelope with a used
    seq) goes to the gate and is refused as on the node.  The memory is a function of the
    executed history, so every replay of the audit holds the same; it is not part of the
    public state, which stays the gate's (REPL-1 compares it with the single node's).
    It costs one digest and one observation per command, as the replica's history does;
    the observation is kept as its canonical bytes (immutable: nothing the caller does
    with an answer changes the memory, and no copy is needed)."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.applied: dict[tuple[str, int], tuple[str, bytes]] = {}

    def apply(self, command: object) -> Observation:
        obs: Observation = json.loads(self.apply_canonical(command))
        return obs

    def apply_canonical(self, command: object) -> bytes:
        """``apply``, answered as the canonical bytes of the observation."""
        key = _agent_seq(command)
        digest = None
        if key is not None:
            try:
                digest = sha256_hex(canonical(command))
            except (TypeError, ValueError, RecursionError):
                digest = None
            prior = self.applied.get(key)
            if prior is not None and digest is not None and prior[0] == digest:
                stale = self.gate.usable_retry(command)  # KEY-1, KEY-2: an old key's replay
                if stale is None:
                    return canonical({**json.loads(prior[1]), "retry": True})
                return canonical({"result": stale.code, "events": []})
        before = None if key is None else self.gate.last_seq(key[0])
        text = canonical(self.gate.apply(command))
        if key is not None and digest is not None and self.gate.last_seq(key[0]) != before:
            self.applied[key] = (digest, text)  # the gate applied it
        return text

    def public_state(self) -> dict[str, Any]:
        return self.gate.public_state()


def _agent_seq(envelope: object) -> tuple[str, int] | None:
    if not isinstance(envelope, dict):
        return None
    agent, seq = envelope.get("agent"), envelope.get("seq")
    if not isinstance(agent, str) or isinstance(seq, bool) or not isinstance(seq, int):
        return None
    return agent, seq
