"""One run: ``simulate(config, seed) -> RunResult``, whatever the experiment or mechanism.

The configuration's type says which model runs: a ``SimConfig`` is the paper's curation
model (the protocol or a baseline), a ``ForgetConfig`` the forgetting model, a
``PlasticityConfig`` the update-plasticity model.
"""

from __future__ import annotations

from typing import Any

from ostrom.simulation.baselines import run_baseline
from ostrom.simulation.config import SimConfig
from ostrom.simulation.forgetting.config import ForgetConfig
from ostrom.simulation.forgetting.run import run_forgetting
from ostrom.simulation.plasticity.config import PlasticityConfig
from ostrom.simulation.plasticity.run import run_plasticity
from ostrom.simulation.protocol import run_protocol
from ostrom.simulation.result import SERIES, Progress, RunResult
from ostrom.simulation.retrieval.config import RetrievalConfig
from ostrom.simulation.retrieval.run import run_retrieval


def simulate(config: Any, seed: int, progress: Progress | None = None) -> RunResult:
    """Run ``config`` with ``seed``: the same pair always gives the same result."""
    if isinstance(config, ForgetConfig):
        return run_forgetting(config, seed, progress)
    if isinstance(config, PlasticityConfig):
        return run_plasticity(config, seed, progress)
    if isinstance(config, RetrievalConfig):
        return run_retrieval(config, seed, progress)
    if not isinstance(config, SimConfig):
        raise TypeError(f"simulate: not a run configuration: {type(config).__name__}")
    if config.governance in ("protocol", "weighted_no_deliberation"):
        return run_protocol(config, seed, progress)
    return run_baseline(config, seed, progress)


__all__ = ["SERIES", "Progress", "RunResult", "simulate"]
