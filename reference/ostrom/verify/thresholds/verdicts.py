"""voting.py's verdicts as Z3 formulas, the micro-unit parameters, and the replays that run
counterexamples back through the reference code."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import z3

from ostrom.protocol.agents import micro
from ostrom.protocol.params import Params
from ostrom.protocol.voting import Tally, dispute_verdict, review_verdict

__all__ = ["replay_dispute", "replay_forget", "replay_review"]

# ``scale`` is MICRO with integer micro-unit thresholds (concrete checks: exactly voting.py's
# integer comparisons) or 1 with real shares (general checks).  ``ny``/``nn`` are the head
# counts of the two sides and ``side`` is ``tally_min_side`` (the side rule of TALLY-1).  The
# quorum of reveals is a hypothesis of every caller, so it is not repeated here.


def _z_accepts(yes: Any, no: Any, ny: Any, tau_a: Any, side: Any, scale: Any) -> Any:
    return z3.And(yes * scale >= tau_a * (yes + no), ny >= side)


def _z_rejects(
    yes: Any, no: Any, ny: Any, nn: Any, tau_a: Any, tau_r: Any, side: Any, scale: Any
) -> Any:
    """Accept is tested first, as in ``review_verdict``."""
    return z3.And(
        z3.Not(_z_accepts(yes, no, ny, tau_a, side, scale)),
        yes * scale <= tau_r * (yes + no),
        nn >= side,
    )


def _z_retracts(yes: Any, no: Any, ny: Any, nn: Any, tau: Any, side: Any, scale: Any) -> Any:
    """``dispute_verdict``: at least ``side`` retracters, and the weight threshold or fewer
    than ``side`` keepers (a lone keeper cannot hold the artifact)."""
    return z3.And(ny >= side, z3.Or(yes * scale >= tau * (yes + no), nn < side))


@dataclass(frozen=True)
class _M:
    """The parameters the theorems read, in micro-units (what voting.py compares)."""

    quorum: int
    reviewers: int
    q_dispute: int
    dispute_reviewers: int
    tau_accept: int
    tau_reject: int
    tau_retract: int
    w_min: int
    w_max: int
    alpha: int
    delta: int
    min_side: int
    min_active: int

    @classmethod
    def of(cls, p: Params) -> _M:
        return cls(
            quorum=p.quorum,
            reviewers=p.reviewers,
            q_dispute=p.q_dispute,
            dispute_reviewers=p.dispute_reviewers,
            tau_accept=micro(p.tau_accept),
            tau_reject=micro(p.tau_reject),
            tau_retract=micro(p.tau_retract),
            w_min=micro(p.w_min),
            w_max=micro(p.w_max),
            alpha=micro(p.alpha),
            delta=micro(p.delta),
            min_side=p.tally_min_side,
            min_active=p.min_active_agents,
        )


def replay_review(accept: Sequence[int], reject: Sequence[int], p: Params) -> str:
    """``voting.review_verdict`` on micro-unit weights, one per voter, with the side rule
    (counterexamples are replayed here)."""
    m = _M.of(p)
    t = Tally.of(tuple(accept), tuple(reject))
    return review_verdict(t, m.quorum, m.tau_accept, m.tau_reject, m.min_side)


def replay_dispute(retract: Sequence[int], keep: Sequence[int], p: Params) -> str:
    """``voting.dispute_verdict`` on micro-unit weights, one per voter, with the side rule."""
    m = _M.of(p)
    t = Tally.of(tuple(retract), tuple(keep))
    return dispute_verdict(t, m.q_dispute, m.tau_retract, m.min_side)


def replay_forget(score: int, weights: Sequence[int], p: Params) -> bool:
    """The forget rule's arithmetic for one artifact in a forgettable state: ``weights`` are
    the active (non-barred) agents' weights, ``score`` is ``S = Σ w·c`` in micro² (weights
    and confidences in micro-units).  Forgotten iff ``S > 0``, ``S ≥ Q = micro(alpha)·Σ w``
    and at least ``min_active_agents`` agents are active (FG-1's population rule)."""
    quorum = micro(p.alpha) * sum(weights)
    return score > 0 and score >= quorum and len(weights) >= p.min_active_agents
