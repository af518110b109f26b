"""Hand-written reputation histories: Beta updates, decay and tiers (REP-*)."""

from __future__ import annotations

from ostrom.conformance.generators.examples.registry import example
from ostrom.conformance.generators.recorder import Recorder

__all__ = []


@example(
    "reputation",
    "add",
    "newcomer-at-w-min",
    ["REP-2"],
    "A new identity enters at E = 1/2, tier 0 and weight w_min, and stays at w_min without "
    "evidence, whatever its trust.",
)
def _(r: Recorder) -> None:
    r.do({"op": "add", "agent": "ana"})
    r.do({"op": "add", "agent": "ben"})
    r.do({"op": "tick"})
    r.do({"op": "tick"})


@example(
    "reputation",
    "add",
    "founder-and-refusals",
    ["REP-2"],
    "A founder enters at its tier with a prior supporting it; its first weight is not held "
    "back by the farming cap. A prior below the tier's threshold is `invalid_input`, a "
    "second add of an id `duplicate`.",
    setup={"pretrusted": ["ana"]},
)
def _(r: Recorder) -> None:
    r.do({"op": "add", "agent": "ana", "tier": 3, "prior": {"mean": 0.9, "total": 20}})
    r.do({"op": "add", "agent": "ben", "tier": 1, "prior": {"mean": 0.6, "total": 6}})
    r.do(
        {"op": "add", "agent": "cat", "tier": 2, "prior": {"mean": 0.6, "total": 6}},
        "invalid_input",
    )
    r.do({"op": "add", "agent": "cat", "prior": {"mean": 1.5, "total": 6}}, "invalid_input")
    r.do({"op": "add", "agent": "ana"}, "duplicate")
    r.do({"op": "tick"})


@example(
    "reputation",
    "tick",
    "decay-keeps-expectation",
    ["REP-1"],
    "Decay shrinks the evidence weight (total) by (1 − δ) a round but leaves an inactive "
    "agent's E unchanged; the total never falls below 2.",
    params={"delta": 0.5},
)
def _(r: Recorder) -> None:
    r.do({"op": "add", "agent": "ana"})
    r.do({"op": "observe", "agent": "ana", "positive": True, "weight": 6})
    for _ in range(4):
        r.do({"op": "tick"})


@example(
    "reputation",
    "observe",
    "evidence-moves-expectation",
    ["REP-1"],
    "Positive evidence raises E, negative lowers it; a weight-0 observation does nothing. "
    "An unknown agent is `unknown_agent`; a negative weight `invalid_input`.",
)
def _(r: Recorder) -> None:
    r.do({"op": "add", "agent": "ana"})
    r.do({"op": "observe", "agent": "ana", "positive": True})
    r.do({"op": "observe", "agent": "ana", "positive": False, "weight": 0.5})
    r.do({"op": "observe", "agent": "ana", "positive": True, "weight": 0})
    r.do({"op": "observe", "agent": "bob", "positive": True}, "unknown_agent")
    r.do({"op": "observe", "agent": "ana", "positive": True, "weight": -1}, "invalid_input")
    r.do({"op": "observe", "agent": "ana", "positive": "yes"}, "invalid_input")


@example(
    "reputation",
    "tick",
    "tier-promotion-needs-time",
    ["REP-2"],
    "With E above every threshold a newcomer still climbs one tier per tier1_rounds (3 "
    "here): tier 1, then 2, then 3.",
    params={"tier1_rounds": 3},
)
def _(r: Recorder) -> None:
    r.do({"op": "add", "agent": "ana"})
    r.do({"op": "observe", "agent": "ana", "positive": True, "weight": 40})
    for _ in range(10):
        r.do({"op": "tick"})


@example(
    "reputation",
    "tick",
    "demotion-at-once",
    ["REP-2"],
    "A founder at tier 3 whose E falls below every threshold drops to tier 0 at the next "
    "tick, not one tier at a time.",
)
def _(r: Recorder) -> None:
    r.do({"op": "add", "agent": "ana", "tier": 3, "prior": {"mean": 0.9, "total": 10}})
    r.do({"op": "tick"})
    r.do({"op": "observe", "agent": "ana", "positive": False, "weight": 10})
    r.do({"op": "tick"})


@example(
    "reputation",
    "record_votes",
    "agreement-builds-trust",
    ["REP-2"],
    "Votes scored against the decision: agreeing voters gain evidence and local trust in "
    "each other; EigenTrust moves global trust towards them; the dissenter loses.",
    setup={"pretrusted": ["ana"]},
)
def _(r: Recorder) -> None:
    for a in ("ana", "ben", "cat", "dan"):
        r.do({"op": "add", "agent": a, "tier": 1, "prior": {"mean": 0.7, "total": 10}})
    votes = {"ana": "accept", "ben": "accept", "cat": "accept", "dan": "reject"}
    r.do({"op": "record_votes", "votes": votes, "decision": "accept"})
    r.do({"op": "record_votes", "votes": votes, "decision": "accept"})
    r.do({"op": "tick"})
    r.do({"op": "record_votes", "votes": {"ana": "keep", "ben": "keep"}, "decision": None})
    r.do({"op": "tick"})


@example(
    "reputation",
    "record_votes",
    "truth-feedback-and-refusals",
    ["REP-2"],
    "In truth mode votes are scored against ground truth, not the decision. A voter not in "
    "the book is `unknown_agent`; an unknown vote value `invalid_input`.",
    setup={"feedback": "truth"},
)
def _(r: Recorder) -> None:
    for a in ("ana", "ben", "cat"):
        r.do({"op": "add", "agent": a})
    votes = {"ana": "accept", "ben": "accept", "cat": "reject"}
    r.do({"op": "record_votes", "votes": votes, "decision": "accept", "truth": "reject"})
    r.do({"op": "record_votes", "votes": {"zed": "accept"}, "decision": "accept"}, "unknown_agent")
    r.do({"op": "record_votes", "votes": {"ana": "yes"}, "decision": "accept"}, "invalid_input")
    r.do({"op": "tick", "round": 3}, "invalid_input", "tick takes no arguments")


@example(
    "reputation",
    "tick",
    "farming-cap",
    ["REP-2"],
    "Weight may rise by at most farm_gain within farm_window rounds, however much evidence "
    "an agent collects at once.",
    setup={"pretrusted": ["ana"]},
    params={"farm_window": 3, "farm_gain": 0.2},
)
def _(r: Recorder) -> None:
    r.do({"op": "add", "agent": "ana"})
    r.do({"op": "observe", "agent": "ana", "positive": True, "weight": 100})
    for _ in range(6):
        r.do({"op": "tick"})
