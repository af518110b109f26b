"""The application PBFT orders: a deterministic core behind the replica's ``App`` interface.

Each replica owns a ``Core`` (an ``Orchestrator``, or a ``Community`` behind the node's
``Gate``) with the same parameters and agents, and applies its committed log to it in
sequence order (``OrchestratorApp``).  Because the core is deterministic, agreement on the
log is agreement on the state; REPL-1 states exactly that: every honest replica's
``public_state()`` equals that of one fresh core applying the replica's committed log in
order (``reference_state`` over ``committed_operations``), read from the replica's executed
PBFT history, not from what the application recorded.  The cluster's audit checks it on
the replicas' stores; the harness (``ostrom.harness.replicated``) on simulated runs.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ostrom.consensus.messages import Request, Signed, canonical, sha256_hex
from ostrom.protocol.agents import Agent
from ostrom.protocol.commands import Observation
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import DEFAULTS, Params

__all__ = ["Core", "CoreFactory", "OrchestratorApp", "committed_operations", "reference_state"]


class Core(Protocol):
    """What a replica replicates: a deterministic ``apply`` and a public state
    (``Orchestrator``, or ``community.Community`` with the layers that feed it)."""

    def apply(self, command: object) -> Observation: ...

    def public_state(self) -> dict[str, Any]: ...


#: Builds one replica's core; every replica (and the REPL-1 reference) calls it afresh.
CoreFactory = Callable[[], Core]


class OrchestratorApp:
    """One replica's orchestrator (or other ``Core``) behind the PBFT ``App`` interface."""

    def __init__(
        self,
        params: Params = DEFAULTS,
        agents: Iterable[Agent] = (),
        core: CoreFactory | None = None,
    ) -> None:
        agents = tuple(agents)
        self.orchestrator: Core = core() if core is not None else Orchestrator(params, agents)
        self.applied: list[dict[str, Any]] = []

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]:
        """Apply one committed command; the observation is the client's result."""
        self.applied.append(copy.deepcopy(operation))
        obs = self.orchestrator.apply(copy.deepcopy(operation))
        return json.loads(canonical(obs))  # type: ignore[no-any-return]

    def state(self) -> dict[str, Any]:
        return self.orchestrator.public_state()

    def digest(self) -> str:
        """The checkpoint digest of the application state."""
        return sha256_hex(canonical(self.state()))


def reference_state(
    log: Iterable[dict[str, Any]],
    params: Params,
    agents: Iterable[Agent],
    core: CoreFactory | None = None,
) -> dict[str, Any]:
    """The public state of one fresh orchestrator (or core) applying ``log`` in order."""
    orch: Core = core() if core is not None else Orchestrator(params, tuple(agents))
    for op in log:
        orch.apply(copy.deepcopy(op))
    return orch.public_state()


def committed_operations(history: Iterable[Signed | None]) -> list[dict[str, Any]]:
    """The commands a replica's committed log denotes, in sequence order.

    Null requests are skipped, and a client's request counts once: only a timestamp
    above the client's last executed one (PBFT's exactly-once rule).
    """
    last: dict[str, int] = {}
    ops: list[dict[str, Any]] = []
    for signed in history:
        if signed is None or not isinstance(signed.message, Request):
            continue
        m = signed.message
        if m.timestamp > last.get(m.client, 0):
            last[m.client] = m.timestamp
            ops.append(m.operation)
    return ops
