"""What one run of the evaluation model measured (``RunResult``), shared by every mechanism's
runner (``protocol``, ``baselines``, ``forgetting``, ``plasticity``) and by ``run.simulate``
that dispatches to them; and what every run configuration offers the engine
(``RunConfig``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, Self

__all__ = ["SERIES", "Progress", "RunConfig", "RunResult"]


class RunConfig(Protocol):
    """What the engine needs of a run's configuration (``SimConfig``, ``ForgetConfig``,
    ``PlasticityConfig``): its name in tables, the scenario it runs in, the same
    configuration in another scenario, and a JSON-able description for results.json."""

    @property
    def label(self) -> str: ...

    @property
    def scenario(self) -> str: ...

    def with_scenario(self, scenario: str) -> Self: ...

    def to_dict(self) -> dict[str, Any]: ...


#: The per-round series every run records, in this order.
SERIES = ("precision", "recall", "gini", "fpr")


@dataclass
class RunResult:
    """What one run measured.  ``series[name][r]`` is the metric after round r + 1;
    ``final`` holds the values after the last round plus the run's counts."""

    config: Any  # a RunConfig
    seed: int
    series: dict[str, list[float]]
    final: dict[str, float]
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, with_series: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.config.label,
            "scenario": self.config.scenario,
            "seed": self.seed,
            "final": {k: _json_float(v) for k, v in self.final.items()},
            "extras": self.extras,
        }
        if with_series:
            out["series"] = {k: [_json_float(v) for v in vs] for k, vs in self.series.items()}
        return out


def _json_float(v: float) -> float | None:
    return None if isinstance(v, float) and math.isnan(v) else v


#: Progress callback: (rounds done, rounds in all).
Progress = Callable[[int, int], None]
