"""The service a replica executes committed requests on (``App``), and the minimal one the
protocol tests use (``CounterApp``).

spec/PBFTReplica.tla abstracts the application to the sequence of requests it applied
(``Applied``): a deterministic service is a function of that sequence, which is what
REPL-1 and the checkpoints' state digests rely on.  Separate from the sections because it
is what the replica runs, not part of the protocol.
"""

from __future__ import annotations

from typing import Any, Protocol

from ostrom.consensus.messages import canonical, sha256_hex
from ostrom.consensus.replica.helpers import GENESIS_CHAIN

__all__ = ["App", "CounterApp"]


class App(Protocol):
    """The deterministic service being replicated (here: the orchestrator)."""

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]: ...

    def digest(self) -> str: ...


class CounterApp:
    """A minimal deterministic service: counts operations and echoes them.

    Used by the protocol tests, where only the order matters; ``replicated.py`` puts the
    orchestrator in its place.
    """

    def __init__(self) -> None:
        self.applied: list[dict[str, Any]] = []
        self._digest = GENESIS_CHAIN

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]:
        self.applied.append(operation)
        self._digest = sha256_hex(self._digest.encode() + canonical(operation))
        return {"n": len(self.applied)}

    def digest(self) -> str:
        return self._digest
