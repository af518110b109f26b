"""The eager tick, kept as the oracle of the lazy one (property_tests/protocol/test_lazy_tick.py).

Before issue 42 a tick computed every registered agent: decayed every Beta, recomputed every
weight and tier from the new global trust, and the Community wrote every agent back into
the orchestrator's registry.  ``ReputationBook.tick`` now computes only the agents whose
numbers can move and replays the others' rounds on read; these classes are that old code,
verbatim but for the bookkeeping fields the lazy views read (``decayed`` and ``since``
are set to the current round, so the lazy views replay nothing).  Same commands in, the
lazy and the eager must give the same observations, public state and book snapshots.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ostrom.protocol.agents import micro
from ostrom.protocol.community import Community, Member
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.protocol.reputation import (
    EigenTrustResult,
    FloatArray,
    ReputationBook,
    eigentrust,
    raw_weight_micro,
)

__all__ = ["EagerCommunity", "EagerReputationBook"]


class EagerReputationBook(ReputationBook):
    """Every agent, every tick: the tick and the global trust as they were."""

    def tick(self) -> list[str]:
        self.round += 1
        keep = 1.0 - self.params.delta
        for rec in self._agents.values():
            rec.beta = self._decay(rec.beta)  # REP-1
            rec.decayed = self.round
        for pair in self._pairs.values():
            pair.agree *= keep
            pair.disagree *= keep
        names = tuple(sorted(self._agents))
        trust = self._global().trust
        gain = micro(self.params.farm_gain)
        for i, name in enumerate(names):
            rec = self._agents[name]
            raw = raw_weight_micro(rec.beta.mean, float(trust[i]), len(names), self.params)
            rec.weight = self._cap(raw, rec.history, gain)  # farming cap (docs/design.md §2)
            rec.history.append(rec.weight)
            rec.tier = self._step_tier(rec.tier, rec.beta.mean)
            rec.since = self.round
        return list(names)

    def _global(self) -> EigenTrustResult:
        if self._trust is None:
            names = tuple(sorted(self._agents))
            index = {name: i for i, name in enumerate(names)}
            src: list[int] = []
            dst: list[int] = []
            w: list[float] = []
            for (i, j), s in self.local_trust().items():
                src += [index[i], index[j]]
                dst += [index[j], index[i]]
                w += [s, s]
            self._trust = eigentrust(
                len(names), src, dst, w, self._eager_pretrust(names), self.params.eigentrust_a
            )
        return self._trust

    def _eager_pretrust(self, names: tuple[str, ...]) -> FloatArray:
        chosen = [name in self.pretrusted for name in names]
        if not any(chosen):
            chosen = [True] * len(names)
        p = np.array(chosen, dtype=np.float64)
        return p / p.sum() if len(names) else p


class EagerCommunity(Community):
    """The Community over the eager book: its tick names every agent, so every agent is
    written back into the registry at every tick, as before."""

    def __init__(
        self, params: Params = DEFAULTS, members: Iterable[Member] = (), **kwargs: Any
    ) -> None:
        super().__init__(params, members, reputation_cls=EagerReputationBook, **kwargs)
