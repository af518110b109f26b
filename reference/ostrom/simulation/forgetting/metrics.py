"""Forgetting measured against the hidden ground truth, epoch by epoch.

Over the items the knowledge base has admitted by the end of epoch t (the labels are
those of ``world.Item.label`` at t):

* ``footprint``   — items held (admitted and not forgotten);
* ``reduction``   — forgotten / admitted: the share of the memory freed (keep_all: 0);
* ``accuracy``    — admitted items whose status agrees with their label: held and useful,
  or forgotten and not useful (the paper's "forgetting accuracy", here against labels that
  the generative model fixes, not against annotations fitted to the tuned parameters);
* ``precision``   — forget decisions that were right when taken (the item was not useful
  at its forget epoch) / forget decisions; NaN before the first one;
* ``recall``      — not-useful admitted items that are forgotten / not-useful admitted
  items; NaN while there are none;
* ``wrongly_forgotten`` — forget decisions taken while the item was useful: the costly
  error (a valuable item is gone for everyone);
* ``stale_kept``  — items held that are not useful (superseded, stale or never useful);
* ``decisions``   — forget decisions in the epoch.

``Tracker`` keeps the four counts (held/forgotten × useful/not) up to date as items are
admitted, forgotten and expire, so a measurement is O(1) and the definitions above are the
only arithmetic (property_tests/simulation/test_simulation_forgetting.py recomputes them by
brute force).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from ostrom.simulation.forgetting.world import World

#: The per-epoch series a forgetting run records, in this order.
FORGET_SERIES = (
    "footprint",
    "reduction",
    "accuracy",
    "precision",
    "recall",
    "wrongly_forgotten",
    "stale_kept",
)


@dataclass
class Tracker:
    """Ground-truth bookkeeping of one run (see the module doc)."""

    world: World
    held_useful: int = 0
    held_not: int = 0
    gone_useful: int = 0  # forgotten, and useful now
    gone_not: int = 0
    forgets: int = 0
    wrong: int = 0
    admitted: set[str] = field(default_factory=set)
    forgotten: set[str] = field(default_factory=set)
    _expiring: dict[int, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for item in self.world.items:
            if item.topic is not None and item.useful_until is not None:
                self._expiring.setdefault(item.useful_until, []).append(item.id)

    def begin(self, t: int) -> None:
        """Epoch t starts: items whose usefulness ends at t become not useful."""
        for x in self._expiring.pop(t, ()):
            if x not in self.admitted:
                continue
            if x in self.forgotten:
                self.gone_useful -= 1
                self.gone_not += 1
            else:
                self.held_useful -= 1
                self.held_not += 1

    def admit(self, t: int, items: Iterable[str]) -> None:
        for x in items:
            self.admitted.add(x)
            if self.world.item(x).useful(t):
                self.held_useful += 1
            else:
                self.held_not += 1

    def forget(self, t: int, items: Iterable[str]) -> None:
        for x in items:
            if x in self.forgotten or x not in self.admitted:
                raise ValueError(f"{x}: forgotten twice, or never admitted")
            self.forgotten.add(x)
            self.forgets += 1
            if self.world.item(x).useful(t):
                self.wrong += 1
                self.held_useful -= 1
                self.gone_useful += 1
            else:
                self.held_not -= 1
                self.gone_not += 1

    # --- the measurements ------------------------------------------------------------------

    @property
    def footprint(self) -> int:
        return self.held_useful + self.held_not

    @property
    def reduction(self) -> float:
        n = len(self.admitted)
        return len(self.forgotten) / n if n else math.nan

    @property
    def accuracy(self) -> float:
        n = len(self.admitted)
        return (self.held_useful + self.gone_not) / n if n else math.nan

    @property
    def precision(self) -> float:
        return (self.forgets - self.wrong) / self.forgets if self.forgets else math.nan

    @property
    def recall(self) -> float:
        n = self.held_not + self.gone_not
        return self.gone_not / n if n else math.nan

    @property
    def stale_kept(self) -> int:
        return self.held_not

    def series_point(self) -> dict[str, float]:
        return {
            "footprint": float(self.footprint),
            "reduction": self.reduction,
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "wrongly_forgotten": float(self.wrong),
            "stale_kept": float(self.stale_kept),
        }


__all__ = ["FORGET_SERIES", "Tracker"]
