"""The replicated orchestrator: orchestrator commands totally ordered by PBFT.

Each replica owns an ``Orchestrator`` with the same ``Params`` and agents and applies its
committed log to it, in sequence order (``OrchestratorApp`` is the PBFT application).
Because the orchestrator is deterministic, agreement on the log is agreement on the
state; REPL-1 states exactly that and ``check_repl1`` checks it: every honest replica's
``public_state()`` equals that of one fresh orchestrator applying the replica's committed
log in order — read from the replica's executed PBFT history, not from what the
application recorded.  (With BFT-SAFE-2 — the logs are prefixes of one another — that is
one orchestrator at different points of one history.)
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from ostrom.consensus.messages import Request, Signed, canonical, sha256_hex
from ostrom.consensus.network import Faults, Simulation
from ostrom.protocol.agents import Agent
from ostrom.protocol.commands import Observation
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import DEFAULTS, Params


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


class ReplicatedOrchestrator:
    """``Simulation`` whose replicas each run an orchestrator (PBFT params from Params)."""

    def __init__(
        self,
        n: int = 4,
        f: int = 1,
        seed: int = 0,
        *,
        params: Params = DEFAULTS,
        agents: Iterable[Agent] = (),
        byzantine: Mapping[int, Any] | None = None,
        faults: Faults | None = None,
        clients: int = 1,
        core: CoreFactory | None = None,
        **options: Any,
    ) -> None:
        self.params = params
        self.agents = tuple(agents)
        self.core = core
        self.sim = Simulation(
            n,
            f,
            seed,
            byzantine=byzantine,
            faults=faults,
            clients=clients,
            app_factory=lambda: OrchestratorApp(params, self.agents, core),
            checkpoint_k=params.checkpoint_k,
            watermark_window=params.watermark_window,
            **options,
        )

    def app(self, i: int) -> OrchestratorApp:
        app = self.sim.replicas[i].app
        assert isinstance(app, OrchestratorApp)
        return app

    def submit(self, client: str, command: dict[str, Any]) -> None:
        self.sim.submit(client, command)

    def states(self) -> dict[int, dict[str, Any]]:
        return {i: self.app(i).state() for i in self.sim.honest}

    def check_repl1(self) -> None:
        """REPL-1, raising ``AssertionError`` naming the first replica that differs."""
        for i in self.sim.honest:
            log = committed_operations(self.sim.replicas[i].history)
            want = reference_state(log, self.params, self.agents, self.core)
            assert self.app(i).state() == want, f"REPL-1: replica {i} diverges from its log"
