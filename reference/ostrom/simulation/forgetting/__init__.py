"""The forgetting model: the Co-Forgetting paper's evaluation, against ground truth.

A knowledge base whose items carry a hidden value over time (useful, superseded, stale,
never useful); agents read items (reads drive decay), judge relevance with noise and cast
forget votes through the real orchestrator — or a baseline decides instead.  Modules, one
job each:

* ``config``     — what a run is: scenario (population), mechanism, ablations, governance;
* ``world``      — the generative model: topics, items and their labels, queries, reads;
* ``relevance``  — R, the protocol's lexical scorer against the recent queries;
* ``judges``     — what each agent votes (the protocol's agent side, with noise);
* ``mechanisms`` — the protocol on the orchestrator, and the five baselines;
* ``consensus``  — the same workload under PBFT with a faulty replica, and Algorithm 1;
* ``metrics``    — footprint, reduction, accuracy, precision, recall against the labels;
* ``run``        — one run; ``experiment`` and ``report`` — the experiment and its tables.

The entry points, re-exported here, load on first use (PEP 562): ``ForgetConfig``,
``run_forgetting`` and ``build_forgetting``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.simulation.forgetting.config import ForgetConfig
    from ostrom.simulation.forgetting.experiment import build_forgetting
    from ostrom.simulation.forgetting.run import run_forgetting

__all__ = [
    "ForgetConfig",
    "build_forgetting",
    "run_forgetting",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "ForgetConfig": "ostrom.simulation.forgetting.config:ForgetConfig",
    "run_forgetting": "ostrom.simulation.forgetting.run:run_forgetting",
    "build_forgetting": "ostrom.simulation.forgetting.experiment:build_forgetting",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
