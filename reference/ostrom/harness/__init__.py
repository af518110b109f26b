"""The consensus test harness: what drives the PBFT replica core in tests, benchmarks and
the demo, none of which a deployment runs.

* ``network`` — a deterministic simulated network with fault injection (loss,
  duplication, reordering, delay, partitions, crash-restarts) and its driver;
* ``byzantine`` — Byzantine strategies wrapping an honest replica, and the ledger of what
  they cause; ``byzantine_node`` — one of them as a cluster's replica process;
* ``sweep`` — the congestion sweep: runs over N, jitter, loss and faulty replicas, and
  their cost against the loss-free run (docs/consensus.md, "Congestion control");
* ``replicated`` — orchestrator commands ordered by simulated PBFT, REPL-1 checked;
* ``alg1`` — the Co-Forgetting paper's Algorithm 1 as written, for contrast;
* ``demo`` and ``commands`` — ``ostrom consensus-demo``.

The entry points, re-exported here: ``Simulation`` and ``Faults`` (the network),
``STRATEGIES`` (the Byzantine ones), ``ReplicatedOrchestrator``, ``run_alg1``, ``run_demo``
and ``consensus_demo`` (the command). They load on first use (PEP 562), so a cluster's
Byzantine replica process (``byzantine_node``) loads only what it runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.harness.alg1 import run_alg1
    from ostrom.harness.byzantine import STRATEGIES, Strategy
    from ostrom.harness.commands import consensus_demo
    from ostrom.harness.demo import run_demo
    from ostrom.harness.network import Faults, Simulation
    from ostrom.harness.replicated import ReplicatedOrchestrator

__all__ = [
    "STRATEGIES",
    "Faults",
    "ReplicatedOrchestrator",
    "Simulation",
    "Strategy",
    "consensus_demo",
    "run_alg1",
    "run_demo",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "Simulation": "ostrom.harness.network:Simulation",
    "Faults": "ostrom.harness.network:Faults",
    "STRATEGIES": "ostrom.harness.byzantine:STRATEGIES",
    "Strategy": "ostrom.harness.byzantine:Strategy",
    "ReplicatedOrchestrator": "ostrom.harness.replicated:ReplicatedOrchestrator",
    "run_alg1": "ostrom.harness.alg1:run_alg1",
    "run_demo": "ostrom.harness.demo:run_demo",
    "consensus_demo": "ostrom.harness.commands:consensus_demo",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
