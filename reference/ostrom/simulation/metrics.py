"""The paper's metrics (§5.4), each a small function with the definition in its docstring.

* **precision**: of the artifacts active now, the share that are good;
* **recall**: of the good artifacts whose review has ended (a stable state), the share
  that are active — artifacts still under review count in neither, so a run is not
  penalised for the proposals of its last rounds (the ungoverned baseline has recall 1 by
  definition, as in the paper);
* **Gini** of the agents' expected reputations E (0: all equal);
* **sanction false-positive rate**: of the honest agents, the share that reached σ2
  (rate-limited) or above at any time.  Quarantine is not a sanction (it is protection),
  so it does not count; broken agents' punishments are reported separately.

``Tracker`` keeps the counts incrementally from state changes, so a per-round series costs
O(1) per change, not a scan of every artifact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from ostrom.simulation.config import ADVERSARIAL

#: States in which an artifact's review has ended (docs/design.md §3, "stable").
STABLE = frozenset({"active", "superseded", "rejected", "expired", "retracted", "forgotten"})

#: Sanction levels counted as a punishment by the false-positive rate (σ2 and above).
PUNISHED = frozenset({"rate_limited", "suspended", "banned"})


def precision(active_good: int, active: int) -> float:
    """Good active / active; NaN when nothing is active."""
    return active_good / active if active else math.nan


def recall(active_good: int, good_settled: int) -> float:
    """Good active / good artifacts in a stable state; NaN when none has settled."""
    return active_good / good_settled if good_settled else math.nan


def gini(values: Iterable[float]) -> float:
    """The Gini coefficient of non-negative values: mean absolute difference over twice
    the mean (0 for equal values, (n-1)/n when one holds everything); NaN if empty."""
    x = np.sort(np.asarray(list(values), dtype=float))
    n = x.size
    if n == 0:
        return math.nan
    if np.any(x < 0):
        raise ValueError("gini: values must be non-negative")
    total = x.sum()
    if total == 0 or x[0] == x[-1]:
        return 0.0  # all equal: exactly 0 (the formula leaves a rounding residue)
    ranks = np.arange(1, n + 1)
    return max(0.0, float((2 * np.sum(ranks * x) / (n * total)) - (n + 1) / n))


def false_positive_rate(
    archetype: Mapping[str, str], worst: Mapping[str, str], of: str = "honest"
) -> float:
    """Share of the agents of archetype ``of`` whose worst sanction level is σ2 or above
    (``worst``: agent -> the highest level it ever had); NaN if there are none."""
    group = [a for a, k in archetype.items() if k == of]
    if not group:
        return math.nan
    return sum(1 for a in group if worst.get(a, "none") in PUNISHED) / len(group)


def separation(archetype: Mapping[str, str], expected: Mapping[str, float]) -> float:
    """Mean E of the honest agents minus mean E of the adversarial ones (``ADVERSARIAL``):
    does reputation tell them apart?  NaN if either group is empty."""
    honest = [expected[a] for a, k in archetype.items() if k == "honest"]
    adversaries = [expected[a] for a, k in archetype.items() if k in ADVERSARIAL]
    if not honest or not adversaries:
        return math.nan
    return sum(honest) / len(honest) - sum(adversaries) / len(adversaries)


@dataclass
class Tracker:
    """Per-artifact states and the counts the metrics need, updated on each change."""

    good: Mapping[str, bool]  # artifact -> is it good
    state: dict[str, str] = field(default_factory=dict)
    active: int = 0
    active_good: int = 0
    good_settled: int = 0
    settled: int = 0

    def set(self, artifact: str, new: str) -> None:
        old = self.state.get(artifact)
        if old == new:
            return
        g = self.good[artifact]
        if old == "active":
            self.active -= 1
            self.active_good -= g
        if old in STABLE:
            self.settled -= 1
            self.good_settled -= g
        if new == "active":
            self.active += 1
            self.active_good += g
        if new in STABLE:
            self.settled += 1
            self.good_settled += g
        self.state[artifact] = new

    @property
    def precision(self) -> float:
        return precision(self.active_good, self.active)

    @property
    def recall(self) -> float:
        return recall(self.active_good, self.good_settled)


__all__ = [
    "PUNISHED",
    "STABLE",
    "Tracker",
    "false_positive_rate",
    "gini",
    "precision",
    "recall",
    "separation",
]
