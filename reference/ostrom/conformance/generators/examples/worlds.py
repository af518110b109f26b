"""The worlds the hand-written histories start from, shared with the random walks.

The lifecycle world (``WORLD``): eleven active agents of every tier and one suspended
agent; timeouts of one or two rounds so that a whole review fits in a few ticks.  The
community world (``MEMBERS``): the founders, with priors supporting their tiers.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = ["CM_PARAMS", "LC_PARAMS", "MEMBERS", "WEIGHT", "WORLD"]

#: The lifecycle world: id, tier, weight, reputation (and a subscription, a sanction).
WORLD: Final[list[dict[str, Any]]] = [
    {"id": "ana", "tier": 3, "weight": 1.0, "reputation": 0.9},
    {"id": "ben", "tier": 3, "weight": 0.9, "reputation": 0.9},
    {"id": "kim", "tier": 3, "weight": 0.9, "reputation": 0.9},
    {"id": "cat", "tier": 2, "weight": 0.8, "reputation": 0.8},
    {"id": "dan", "tier": 2, "weight": 0.6, "reputation": 0.8},
    {"id": "eve", "tier": 2, "weight": 0.5, "reputation": 0.7},
    {"id": "fay", "tier": 1, "weight": 0.4, "reputation": 0.6},
    {"id": "gus", "tier": 1, "weight": 0.3, "reputation": 0.6},
    {"id": "hal", "tier": 1, "weight": 0.2, "reputation": 0.4},
    {"id": "jon", "tier": 1, "weight": 0.3, "reputation": 0.6, "subscriptions": ["s"]},
    {"id": "ivy", "tier": 0, "weight": 0.1, "reputation": 0.6},
    {"id": "max", "tier": 2, "weight": 0.7, "reputation": 0.8, "sanction": "suspended"},
]
WEIGHT: Final = {a["id"]: a["weight"] for a in WORLD}

#: Short timeouts: a fast track takes 2 ticks, a formal review 3 (recruit and deliberation
#: close in the first), a dispute 2; three reviewers, quorum 2, disputes need all 3.
LC_PARAMS: Final[dict[str, Any]] = {
    "reviewers": 3,
    "quorum": 2,
    "T_fast": 2,
    "T_delib": 1,
    "T_commit": 1,
    "T_reveal": 1,
    "T_arb": 1,
    "dispute_reviewers": 3,
    "q_dispute": 3,
    "cooldown": 2,
}

#: The community's founders (tier > 0, a prior supporting the tier) and its params.
MEMBERS: Final[list[dict[str, Any]]] = [
    {"id": "ana", "tier": 3, "reputation": 0.9, "evidence": 20, "pretrusted": True},
    {"id": "ben", "tier": 3, "reputation": 0.9, "evidence": 20, "pretrusted": True},
    {"id": "kim", "tier": 3, "reputation": 0.9, "evidence": 20},
    {"id": "cat", "tier": 2, "reputation": 0.8, "evidence": 10},
    {"id": "dan", "tier": 2, "reputation": 0.8, "evidence": 10},
    {"id": "eve", "tier": 2, "reputation": 0.75, "evidence": 10},
    {"id": "fay", "tier": 1, "reputation": 0.6, "evidence": 6},
    {"id": "gus", "tier": 1, "reputation": 0.6, "evidence": 6},
    {"id": "hal", "tier": 1, "reputation": 0.6, "evidence": 6},
    {"id": "jon", "tier": 1, "reputation": 0.6, "evidence": 6, "subscriptions": ["s"]},
]
CM_PARAMS: Final[dict[str, Any]] = {**LC_PARAMS, "min_active_agents": 8}
