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

from collections.abc import Iterable, Mapping
from typing import Any

from ostrom.consensus.application import (
    CoreFactory,
    OrchestratorApp,
    committed_operations,
    reference_state,
)
from ostrom.harness.network import Faults, Simulation
from ostrom.protocol.agents import Agent
from ostrom.protocol.params import DEFAULTS, Params

__all__ = ["ReplicatedOrchestrator"]


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
