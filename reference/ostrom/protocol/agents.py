"""The agent registry as the lifecycle sees it (docs/rules.md "Agents").

Tier, weight, reputation and sanction are *given* here: ``set_agent`` stands in for the
reputation and sanction layers, which later derive them.  ``Agent`` is frozen so that a
registry entry can only change by replacing it, which keeps refusals side-effect free
and snapshots cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

__all__ = ["BARRING", "MAX_TIER", "MICRO", "Agent", "Sanction", "micro"]


class Sanction(StrEnum):
    """Sanction levels σ0..σ4 plus quarantine (docs/design.md §4)."""

    NONE = "none"
    WARNED = "warned"
    RATE_LIMITED = "rate_limited"
    SUSPENDED = "suspended"
    BANNED = "banned"
    QUARANTINED = "quarantined"


#: Sanctions under which every command of the agent is refused (LC-SAFE-4).
BARRING: Final[frozenset[Sanction]] = frozenset(
    {Sanction.SUSPENDED, Sanction.BANNED, Sanction.QUARANTINED}
)

MAX_TIER: Final = 3
MICRO: Final = 1_000_000


def micro(x: float) -> int:
    """A weight, share or threshold as integer micro-units: ``round(x · 10^6)``.

    All tallies compare these integers, so every implementation gets the same answer
    at a threshold (no float rounding differences between languages).
    """
    return round(x * MICRO)


@dataclass(frozen=True)
class Agent:
    """One registry entry."""

    id: str
    tier: int
    weight: float
    reputation: float = 0.0
    sanction: Sanction = Sanction.NONE
    subscriptions: frozenset[str] = field(default_factory=frozenset)

    @property
    def barred(self) -> bool:
        """Suspended, banned or quarantined: every command is refused ``sanctioned``."""
        return self.sanction in BARRING

    def weight_micro(self, w_min: float) -> int:
        """Effective voting weight in micro-units; tier 0 always counts at ``w_min``.

        The tier-0 floor is what makes a fresh (possibly Sybil) identity cheap to admit
        and expensive to exploit (REP-2).
        """
        return micro(w_min) if self.tier == 0 else micro(self.weight)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form (sorted subscriptions, so it is deterministic)."""
        return {
            "id": self.id,
            "tier": self.tier,
            "weight": self.weight,
            "reputation": self.reputation,
            "sanction": self.sanction.value,
            "subscriptions": sorted(self.subscriptions),
        }
