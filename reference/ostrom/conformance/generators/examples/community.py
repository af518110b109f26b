"""Hand-written community histories: the layers together, as one community runs them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ostrom.conformance.generators.examples.registry import example
from ostrom.conformance.generators.examples.steps import (
    arbiter,
    commit,
    dispute,
    fast_active,
    propose,
    reveal,
    reviewers,
    state_is,
    tick,
)
from ostrom.conformance.generators.examples.worlds import LC_PARAMS
from ostrom.conformance.generators.recorder import Recorder

__all__ = []


@example(
    "community",
    "join",
    "newcomer-at-w-min",
    ["REP-2"],
    "A new identity joins at tier 0 and weight w_min; joining twice is `duplicate`, a bad "
    "id or subscription list `invalid_input`; set_agent is refused (the registry is derived).",
)
def _(r: Recorder) -> None:
    r.do({"op": "join", "agent": "zed", "subscriptions": ["s"]})
    r.do({"op": "join", "agent": "zed"}, "duplicate")
    r.do({"op": "join", "agent": ""}, "invalid_input")
    r.do({"op": "join", "agent": "amy", "subscriptions": "s"}, "invalid_input")
    r.do({"op": "set_agent", "agent": "zed", "tier": 3}, "invalid_input")
    tick(r, note="the first tick computes the founders' weights")


@example(
    "community",
    "tick",
    "review-feeds-reputation",
    ["REP-2", "LC-SAFE-1"],
    "A newcomer's proposal is reviewed and accepted: the reviewers' votes and the "
    "submitter are scored against the decision at the tick, and the registry follows.",
)
def _(r: Recorder) -> None:
    r.do({"op": "join", "agent": "zed"})
    propose(r, "zed", "x")
    tick(r)
    state_is(r, "x", "commit")
    revs = reviewers(r, "x")
    for a in revs:
        commit(r, a, "x", "accept")
    tick(r)
    for a in revs:
        reveal(r, a, "x", "accept")
    tick(r)
    state_is(r, "x", "active")


@example(
    "community",
    "reveal_vote",
    "bad-reveals-quarantine",
    ["SAN-1", "LC-SAFE-4", "CR-2"],
    "Three invalid reveals look like malfunction: the reviewer is quarantined at once and "
    "its next command is refused `sanctioned`.",
)
def _(r: Recorder) -> None:
    r.do({"op": "join", "agent": "zed"})
    propose(r, "zed", "x")
    tick(r)
    a = reviewers(r, "x")[0]
    commit(r, a, "x", "accept")
    tick(r)
    for k in (1, 2, 3):
        reveal(r, a, "x", "accept", k=k, expect="bad_reveal")
    reveal(r, a, "x", "accept", expect="sanctioned")


@example(
    "community",
    "propose",
    "rate-abuse-escalates",
    ["SAN-2", "LC-SAFE-4"],
    "Refused proposals over the rate limit are strategic violations: warned at 3, "
    "rate-limited (one proposal a round) at 5.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "a", slot="s1")
    propose(r, "fay", "b", slot="s2")
    for i in range(5):
        propose(r, "fay", f"c{i}", slot=f"t{i}", expect="rate_limited")
    tick(r)
    propose(r, "fay", "d", slot="s3")
    propose(r, "fay", "e", slot="s4", expect="rate_limited")


@example(
    "community",
    "propose",
    "malformed-and-unknown",
    ["SAN-1", "LC-SAFE-4"],
    "Malformed commands of a registered agent are counted: three of them quarantine it. "
    "Commands of an unknown agent are `unknown_agent`, on an unknown artifact "
    "`unknown_artifact`.",
)
def _(r: Recorder) -> None:
    propose(r, "ghost", "x", expect="unknown_agent")
    r.do({"op": "object", "agent": "fay", "artifact": "nope"}, "unknown_artifact")
    for _ in range(3):
        r.do({"op": "propose", "agent": "gus", "artifact": 1}, "invalid_input")
    propose(r, "gus", "x", expect="sanctioned")


@example(
    "community",
    "object",
    "objection-and-tier-guard",
    ["LC-SAFE-1", "LC-SAFE-4"],
    "A newcomer (tier 0) may not object (`not_eligible`); a subscriber may.",
)
def _(r: Recorder) -> None:
    r.do({"op": "join", "agent": "zed"})
    propose(r, "fay", "x")
    r.do({"op": "recruit", "artifact": "x"})
    r.do({"op": "object", "agent": "zed", "artifact": "x"}, "not_eligible")
    r.do({"op": "object", "agent": "jon", "artifact": "x"})
    r.do({"op": "object", "agent": "jon", "artifact": "x"}, "wrong_phase")


@example(
    "community",
    "arbitrate",
    "arbiter-decides",
    ["LC-SAFE-1", "TALLY-1"],
    "An undecided tally goes to a tier-3 arbiter; the votes are scored against the "
    "arbiter's decision. A second revote is `limit_reached`.",
)
def _(r: Recorder) -> None:
    r.do({"op": "join", "agent": "zed"})
    tick(r, note="founders' weights computed")
    propose(r, "zed", "x")
    tick(r)

    def split() -> None:
        revs = sorted(reviewers(r, "x"))
        commit(r, revs[0], "x", "accept")
        commit(r, revs[1], "x", "reject")
        tick(r)
        reveal(r, revs[0], "x", "accept")
        reveal(r, revs[1], "x", "reject")
        tick(r)
        state_is(r, "x", "arbitration")

    split()
    judge = arbiter(r, "x")
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "revote"})
    split()
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "revote"}, "limit_reached")
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "reject"})


@example(
    "community",
    "dispute",
    "frivolous-dispute-and-limit",
    ["LC-SAFE-3", "SAN-2"],
    "A failed dispute is a frivolous_dispute violation of the disputer; max_disputes = 1 "
    "then refuses another (`limit_reached`).",
    extra={"max_disputes": 1},
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    dispute(r, "x", "cat")
    tick(r, 2)
    state_is(r, "x", "active")
    dispute(r, "x", "dan", expect="limit_reached")


@example(
    "community",
    "urgent_report",
    "unfounded-report-penalty",
    ["LC-SAFE-5", "SAN-2"],
    "An urgent report hides the artifact; kept by the reviewers it is shown again and the "
    "reporter's penalty counts urgent_penalty = 3 violations: warned at once.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    r.do({"op": "urgent_report", "agent": "gus", "artifact": "x", "reason": "spam"})
    for a in reviewers(r, "x"):
        commit(r, a, "x", "keep")
    tick(r)
    for a in reviewers(r, "x"):
        reveal(r, a, "x", "keep")
    tick(r)
    state_is(r, "x", "active")


@example(
    "community",
    "resubmit",
    "rejected-then-cooldown",
    ["LC-SAFE-3"],
    "A rejected artifact: resubmitting before the cooldown is `cooldown`, after it the "
    "submitter's revision goes to formal review.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x")
    r.do({"op": "recruit", "artifact": "x"})
    r.do({"op": "object", "agent": "jon", "artifact": "x"})
    tick(r)
    state_is(r, "x", "commit")
    for a in reviewers(r, "x"):
        commit(r, a, "x", "reject")
    tick(r)
    for a in reviewers(r, "x"):
        reveal(r, a, "x", "reject")
    tick(r)
    state_is(r, "x", "rejected")
    cmd = {"op": "resubmit", "agent": "fay", "artifact": "x", "digest": "x-v2"}
    r.do(cmd, "cooldown")
    tick(r, 2)
    r.do(cmd)


@example(
    "community",
    "forget_vote",
    "forgotten-by-the-community",
    ["FG-1", "LC-SAFE-6"],
    "Enough forget votes of the community (min_active_agents = 8 of 10 active) forget an "
    "artifact at the tick; a second vote is `duplicate`.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    for a in ("ana", "ben", "kim", "cat", "dan", "eve"):
        r.do({"op": "forget_vote", "agent": a, "artifact": "x"})
    r.do({"op": "forget_vote", "agent": "ana", "artifact": "x"}, "duplicate")
    tick(r)
    state_is(r, "x", "forgotten")


@example(
    "community",
    "forget_vote",
    "population-floor",
    ["FG-1"],
    "At the default min_active_agents = 12 a community of ten active members forgets "
    "nothing, even when nine of them vote to forget.",
    params=LC_PARAMS,
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    for a in ("ana", "ben", "kim", "cat", "dan", "eve", "gus", "hal", "jon"):
        r.do({"op": "forget_vote", "agent": a, "artifact": "x"})
    tick(r)
    state_is(r, "x", "active")


#: Founders as the smoke simulation has them (tier 1, a thin prior, none pre-trusted):
#: their weights are EigenTrust's shares, such as 0.158812, not round numbers.
THIN_FOUNDERS: Final[list[dict[str, Any]]] = [
    {"id": f"f{i}", "tier": 1, "reputation": 0.6, "evidence": 2} for i in range(10)
]


def _reviews(r: Recorder, votes: Mapping[str, Sequence[str]]) -> dict[str, dict[str, str]]:
    """zed's proposals (one per key of ``votes``, each on its own slot), reviewed side by
    side with the votes given (one per reviewer, by id), all revealed: the next tick
    tallies them all.  The votes by artifact and reviewer."""
    for x in votes:
        propose(r, "zed", x, slot=x)
    tick(r, note="recruited (formal: tier-0 submitter); deliberation closes")
    cast = {x: dict(zip(sorted(reviewers(r, x)), v, strict=True)) for x, v in votes.items()}
    for x, c in cast.items():
        for a, v in c.items():
            commit(r, a, x, v)
    tick(r, note="the commit phase closes")
    for x, c in cast.items():
        for a, v in c.items():
            reveal(r, a, x, v)
    return cast


@example(
    "community",
    "tick",
    "tie-at-reweighting-tick",
    ["TALLY-1", "LC-SAFE-1"],
    "Two reviewers accept and two reject, all four at the weight 0.158812 (EigenTrust's, no "
    "round number): the tick that closes the ballot tallies 317624 : 317624 micro-units, "
    "undecided, and t goes to arbitration. The same tick decides another ballot and so "
    "recomputes the weights (the accepters drop to 0.144, the rejecters rise to 0.258812, "
    "which would reject): the tally reads the registry as it was before the tick "
    "(docs/community.md, Timing). ostrom validate-trace once wrote such weights as -1, in a "
    "unit fit only for each agent's largest weight, and accepted this tie.",
    setup={"members": THIN_FOUNDERS},
    extra={"reviewers": 4, "quorum": 4, "min_active_agents": 10},
)
def _(r: Recorder) -> None:
    r.do({"op": "join", "agent": "zed"})
    tick(r, note="the founders' first weights")
    _reviews(r, {"a": ["reject"] * 4})
    tick(r, note="a is rejected: its reviewers and zed are scored, the weights recomputed")
    cast = _reviews(r, {"e": ["reject"] * 4, "t": ["accept", "reject", "reject", "accept"]})
    before = {a: r.state["agents"][a]["weight"] for a in cast["t"]}
    r.check(len(set(before.values())) == 1, f"t's reviewers weigh {before}, not the same")
    tick(r, note="e is rejected and t's tally is a tie: undecided; the weights move")
    state_is(r, "e", "rejected")
    state_is(r, "t", "arbitration")
    after = {a: r.state["agents"][a]["weight"] for a in cast["t"]}
    r.check(after != before, "the tick that tallies t recomputes its reviewers' weights")
