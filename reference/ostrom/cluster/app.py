"""What a cluster replica executes: batches of commands on a ``Core``.

The front batches (docs/cluster.md, "Batching"): one PBFT request carries the operation
``{"batch": [command, ...]}``, up to ``batch_size`` commands that arrived together.  A
replica executes a batch by applying its commands to its core in order and answers the
list of their observations, ``{"results": [observation, ...]}``.  ``execute_operation``
is that rule, written once: the replica's application (``ClusterApp``) and the audit's
replays (``audit.py``, REPL-1) both call it, so the check replays exactly what the
replicas execute.  An operation that is not a batch is applied as one command (a
hostile or buggy client gets the core's refusal, never an exception).

The core is the node's ``Gate`` (``ostrom.service.gate``): the Community behind signed
envelopes ``{"agent", "seq", "command", "signature"}`` with per-agent sequence numbers,
built from the node's founders file.  So a cluster runs exactly the single node's logic,
and ``POST /commands`` takes the same body.  An envelope the gate refuses is ordered like
any other and refused identically by every replica (``Gate.apply`` changes nothing for
it), so the replicas stay deterministic whatever a client sends.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Final

from ostrom.cluster.config import ClusterConfig, ConfigError
from ostrom.consensus.application import Core, CoreFactory
from ostrom.consensus.messages import canonical, sha256_hex
from ostrom.protocol.commands import Observation
from ostrom.protocol.params import DEFAULTS, ParamError, Params
from ostrom.service.founders import FoundersError, load_founders
from ostrom.service.gate import Gate, Setup

__all__ = [
    "BATCH",
    "RESULTS",
    "ClusterApp",
    "Retries",
    "batch_operation",
    "commands_of",
    "community_factory",
    "core_factory",
    "execute_operation",
    "state_digest",
]

BATCH: Final = "batch"
RESULTS: Final = "results"


def batch_operation(commands: list[Any]) -> dict[str, Any]:
    """The PBFT operation that carries ``commands`` (the front builds it)."""
    return {BATCH: list(commands)}


def commands_of(operation: Any) -> list[Any]:
    """The commands an operation carries, in execution order."""
    if isinstance(operation, dict) and set(operation) == {BATCH}:
        cmds = operation[BATCH]
        if isinstance(cmds, list):
            return list(cmds)
    return [operation]


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


class ClusterApp:
    """The PBFT ``App`` of a cluster replica: a core executing batches."""

    def __init__(self, core: CoreFactory) -> None:
        self.core = core()
        self.executed = 0

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]:
        self.executed += 1
        return execute_operation(self.core, operation)

    def state(self) -> dict[str, Any]:
        return self.core.public_state()

    def digest(self) -> str:
        return state_digest(self.state())


def state_digest(state: dict[str, Any]) -> str:
    """The digest of a public state (what ``status`` reports and the audit compares)."""
    return sha256_hex(canonical(state))


def core_factory(cfg: ClusterConfig) -> CoreFactory:
    """The cluster's core, the one place that names it: a fresh ``Gate`` per call, from
    the founders and parameter files read once (every replica and every replay of the
    audit starts from the same state).  ``ConfigError`` if a file cannot be used."""
    return community_factory(cfg.founders, cfg.params)


def community_factory(founders: Path | None, params_file: Path | None) -> CoreFactory:
    """Fresh ``Gate`` s of the community the two files describe, read exactly as ``ostrom
    serve`` reads them (``load_founders``, ``Params.from_toml``), so a community set up
    for a node runs unchanged on a cluster.  One gate is built here, so what only the
    Community checks (a founder's reputation below its tier's threshold) is refused now,
    as one line (``ConfigError``): a replica refuses to start rather than crash later or
    execute with other parameters than its peers."""
    setup = Setup()
    if founders is not None:
        try:
            setup = load_founders(founders)
        except FoundersError as exc:
            raise ConfigError(str(exc)) from None
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

    def make() -> Core:
        return Retries(Gate(params, setup))

    return make


class Retries:
    """A ``Gate`` that answers a retried envelope as the node does: from the log.

    The node (service/node.py) answers an envelope identical to one it applied — a client
    that timed out resends the same bytes — with the logged observation and ``"retry":
    true``, and applies nothing (at most once).  A cluster's replicas have no such log of
    observations, so the gate alone would answer ``replayed`` (409) and the client would
    fail although its command was applied.  This core keeps, for every applied envelope,
    its canonical digest and its observation, and answers an identical one from there
    with ``retry: true``; anything else (another envelope with a used seq) goes to the gate
    and is refused as on the node.  The memory is a function of the executed history, so
    every replica (and every replay of the audit) holds the same; it is not part of the
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
                return canonical({**json.loads(prior[1]), "retry": True})
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
