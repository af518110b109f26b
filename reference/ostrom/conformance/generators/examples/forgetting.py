"""Hand-written forgetting histories: the forget rule and its population floor (FG-*)."""

from __future__ import annotations

from ostrom.conformance.generators.examples.registry import example
from ostrom.conformance.generators.recorder import Recorder

__all__ = []

_POP = [
    {"id": "ana", "tier": 3, "weight": 1.0},
    {"id": "ben", "tier": 2, "weight": 0.5},
    {"id": "cat", "tier": 1, "weight": 0.5},
    {"id": "dan", "tier": 0, "weight": 0.8},
]


@example(
    "forgetting",
    "decide",
    "score-and-quorum",
    ["FG-1", "LC-SAFE-6"],
    "S = Σ w·c over the voters, Q = α·Σ w over the active agents (micro²; tier 0 counts at "
    "w_min): forget iff S > 0 and S ≥ Q. min_active 0 disables the population floor here.",
)
def _(r: Recorder) -> None:
    arts = [
        {"id": "x", "state": "active", "forget_votes": {"ana": 1_000_000}},
        {"id": "y", "state": "rejected", "forget_votes": {"ana": 1_000_000, "ben": 1_000_000}},
        {"id": "z", "state": "expired", "forget_votes": {"ben": 500_000, "dan": 1_000_000}},
        {"id": "w", "state": "superseded", "forget_votes": {}},
    ]
    r.do({"op": "decide", "artifacts": arts, "agents": _POP, "min_active": 0})


@example(
    "forgetting",
    "decide",
    "blocked",
    ["LC-SAFE-6", "LC-SAFE-5", "FG-1"],
    "A reached decision is blocked while disputed, while hidden under review, in a "
    "transient or forgotten state, or below min_active agents (default 12); a hidden "
    "retracted artifact may be forgotten.",
)
def _(r: Recorder) -> None:
    v = {"ana": 1_000_000, "ben": 1_000_000}
    arts = [
        {"id": "a", "state": "disputed", "forget_votes": v},
        {"id": "b", "state": "active", "hidden": True, "forget_votes": v},
        {"id": "c", "state": "retracted", "hidden": True, "forget_votes": v},
        {"id": "d", "state": "commit", "forget_votes": v},
        {"id": "e", "state": "forgotten", "forget_votes": v},
    ]
    r.do({"op": "decide", "artifacts": arts, "agents": _POP, "min_active": 0})
    r.do({"op": "decide", "artifacts": arts[2:3], "agents": _POP}, note="4 active < 12")


@example(
    "forgetting",
    "decide",
    "exact-threshold",
    ["FG-1"],
    "S = Q exactly is reached: a vote of weight 0.3 against Q = 0.5 × (0.1 + 0.2 + 0.3). "
    "Decided on integers (micro²), as every implementation must; in binary floats "
    "0.1 + 0.2 + 0.3 exceeds 0.6 and the same comparison says no.",
)
def _(r: Recorder) -> None:
    pop = [
        {"id": "ana", "tier": 1, "weight": 0.1},
        {"id": "ben", "tier": 1, "weight": 0.2},
        {"id": "cat", "tier": 1, "weight": 0.3},
    ]
    arts = [{"id": "x", "state": "active", "forget_votes": {"cat": 1_000_000}}]
    obs = r.do({"op": "decide", "artifacts": arts, "agents": pop, "min_active": 0})
    r.check(obs["state"][0]["forget"], "S = Q must forget")


@example(
    "forgetting",
    "decide",
    "barred-agents-count-nothing",
    ["FG-1", "LC-SAFE-4"],
    "A barred agent is not active: its vote counts 0 and its weight is not in Q.",
)
def _(r: Recorder) -> None:
    pop = [*_POP[:3], {"id": "dan", "tier": 2, "weight": 0.8, "sanction": "suspended"}]
    arts = [{"id": "x", "state": "active", "forget_votes": {"dan": 1_000_000, "ben": 1_000_000}}]
    r.do({"op": "decide", "artifacts": arts, "agents": pop, "min_active": 0})
    arts = [{"id": "x", "state": "active", "forget_votes": {"ana": 1_000_000}}]
    r.do({"op": "decide", "artifacts": arts, "agents": pop, "min_active": 0})


@example(
    "forgetting",
    "decide",
    "invalid-arguments",
    ["FG-1"],
    "A confidence above 10^6, an unknown state, repeated agents or a missing field is "
    "`invalid_input`.",
)
def _(r: Recorder) -> None:
    ok = [{"id": "x", "state": "active"}]
    bad = [{"id": "x", "state": "active", "forget_votes": {"ana": 2_000_000}}]
    r.do({"op": "decide", "artifacts": bad, "agents": _POP}, "invalid_input")
    r.do(
        {"op": "decide", "artifacts": [{"id": "x", "state": "gone"}], "agents": _POP},
        "invalid_input",
    )
    r.do({"op": "decide", "artifacts": ok, "agents": [_POP[0], _POP[0]]}, "invalid_input")
    r.do({"op": "decide", "artifacts": ok}, "invalid_input")
    r.do({"op": "forget", "artifacts": ok, "agents": _POP}, "invalid_input", "an unknown op")


@example(
    "forgetting",
    "decay",
    "multi-scale",
    ["FG-1"],
    "D = Σ γ_k·exp(−elapsed/S_k) with S = (10, 100, 1000), γ = (0.5, 0.3, 0.2): 1 at "
    "access, decaying on three clocks. A negative elapsed time is `invalid_input`.",
)
def _(r: Recorder) -> None:
    for elapsed in (0, 1, 10, 100, 1000, 10_000):
        r.do({"op": "decay", "elapsed": elapsed})
    r.do({"op": "decay", "elapsed": -1}, "invalid_input")


@example(
    "forgetting",
    "keep_score",
    "weighted-sum",
    ["FG-1"],
    "C = ω_D·D + ω_R·R (0.5 each by default). R outside [0, 1] is `invalid_input`.",
)
def _(r: Recorder) -> None:
    r.do({"op": "keep_score", "decay": 1.0, "relevance": 1.0})
    r.do({"op": "keep_score", "decay": 0.2, "relevance": 0.1})
    r.do({"op": "keep_score", "decay": 0.0, "relevance": 0.0})
    r.do({"op": "keep_score", "decay": 0.5, "relevance": 1.5}, "invalid_input")


@example(
    "forgetting",
    "forget_confidence",
    "below-theta",
    ["FG-1"],
    "Confidence ⌊(Θ − K)·10^6/Θ⌋ in micro-units when the keep score is below θ = 0.3, "
    "else 0 (no vote).",
)
def _(r: Recorder) -> None:
    for keep in (0.0, 0.1, 0.15, 0.299999, 0.3, 0.9):
        r.do({"op": "forget_confidence", "keep": keep})
    r.do({"op": "forget_confidence", "keep": "low"}, "invalid_input")
