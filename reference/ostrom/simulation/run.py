"""One run: ``simulate(config, seed) -> RunResult``, whatever the governance mechanism."""

from __future__ import annotations

from ostrom.simulation.baselines import run_baseline
from ostrom.simulation.config import SimConfig
from ostrom.simulation.protocol import run_protocol
from ostrom.simulation.result import SERIES, Progress, RunResult


def simulate(config: SimConfig, seed: int, progress: Progress | None = None) -> RunResult:
    """Run ``config`` with ``seed``: the same pair always gives the same result."""
    if config.governance in ("protocol", "weighted_no_deliberation"):
        return run_protocol(config, seed, progress)
    return run_baseline(config, seed, progress)


__all__ = ["SERIES", "Progress", "RunResult", "simulate"]
