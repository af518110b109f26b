"""Hand-written histories (source ``reference:examples``): small, each named for what it shows.

Every script drives the reference adapter through a ``Recorder`` and asserts the result
it is about (``expect=``), so a change of the reference that would make a vector show
something else stops generation instead of silently rewriting the vector.  Together the
scripts use every command of every layer and every error code the layer can answer
(property_tests/test_conformance_vectors.py checks this).

The lifecycle world (``WORLD``): eleven active agents of every tier and one suspended
agent; timeouts of one or two rounds so that a whole review fits in a few ticks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ostrom.conformance.generators.recorder import Recorder
from ostrom.conformance.layer import Observation
from ostrom.protocol.voting import commitment

SOURCE: Final = "reference:examples"

# --- the registry ---------------------------------------------------------------------------------

Script = Callable[[Recorder], None]


@dataclass(frozen=True)
class Example:
    layer: str
    action: str
    name: str
    properties: tuple[str, ...]
    description: str
    params: Mapping[str, Any]
    setup: Mapping[str, Any]
    script: Script = field(repr=False)


EXAMPLES: Final[list[Example]] = []

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

_DEFAULTS: Final[dict[str, tuple[dict[str, Any], dict[str, Any]]]] = {
    "lifecycle": (LC_PARAMS, {"agents": WORLD}),
    "community": (CM_PARAMS, {"members": MEMBERS}),
}


def example(
    layer: str,
    action: str,
    name: str,
    properties: Sequence[str],
    description: str,
    *,
    params: Mapping[str, Any] | None = None,
    setup: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Callable[[Script], Script]:
    """Register a script.  ``params``/``setup`` default to the layer's world; ``extra``
    adds parameters to the default ones."""
    p0, s0 = _DEFAULTS.get(layer, ({}, {}))

    def register(script: Script) -> Script:
        p = dict(p0 if params is None else params)
        p.update(extra or {})
        s = dict(s0 if setup is None else setup)
        EXAMPLES.append(Example(layer, action, name, tuple(properties), description, p, s, script))
        return script

    return register


def build_examples() -> list[dict[str, Any]]:
    """Run every script on a fresh reference adapter; the vector documents."""
    out = []
    for ex in EXAMPLES:
        r = Recorder(
            ex.layer,
            ex.action,
            ex.name,
            ex.description,
            list(ex.properties),
            SOURCE,
            dict(ex.params),
            dict(ex.setup),
        )
        ex.script(r)
        out.append(r.vector())
    return out


# --- lifecycle helpers ----------------------------------------------------------------------------


def salt(agent: str, k: int = 0) -> str:
    """A fixed salt per agent (and variant k): 64 lowercase hex digits."""
    return hashlib.sha256(f"salt|{agent}|{k}".encode()).hexdigest()


def art(r: Recorder, x: str) -> dict[str, Any]:
    a: dict[str, Any] = r.state["artifacts"][x]
    return a


def propose(
    r: Recorder, agent: str, x: str, slot: str = "s", expect: str = "ok", **extra: Any
) -> Observation:
    cmd = {"op": "propose", "agent": agent, "artifact": x, "slot": slot, "digest": f"{x}-v1"}
    return r.do({**cmd, **extra}, expect)


def tick(r: Recorder, n: int = 1, note: str | None = None) -> Observation:
    obs = r.do({"op": "tick"}, note=note)
    for _ in range(n - 1):
        obs = r.do({"op": "tick"})
    return obs


def commit(
    r: Recorder,
    agent: str,
    x: str,
    vote: str,
    *,
    k: int = 0,
    round: int | None = None,
    expect: str = "ok",
    note: str | None = None,
) -> Observation:
    rnd = art(r, x)["round"] if round is None else round
    c = commitment(agent, x, rnd, vote, f"{agent} says {vote}", salt(agent, k))
    return r.do({"op": "commit_vote", "agent": agent, "artifact": x, "commitment": c}, expect, note)


def reveal(
    r: Recorder,
    agent: str,
    x: str,
    vote: str,
    *,
    k: int = 0,
    expect: str = "ok",
    note: str | None = None,
) -> Observation:
    cmd = {
        "op": "reveal_vote",
        "agent": agent,
        "artifact": x,
        "vote": vote,
        "reason": f"{agent} says {vote}",
        "salt": salt(agent, k),
    }
    return r.do(cmd, expect, note)


def reviewers(r: Recorder, x: str) -> list[str]:
    return list(art(r, x)["reviewers"])


def by_weight(r: Recorder, x: str) -> list[str]:
    """The open ballot's reviewers, heaviest first (ties by id)."""
    return sorted(reviewers(r, x), key=lambda a: (-WEIGHT.get(a, 0.0), a))


def ballot(
    r: Recorder, x: str, votes: Sequence[str | None], *, reveal_all: bool = True
) -> Observation:
    """Commit ``votes`` (one per reviewer, heaviest first; None: abstain), close the commit
    phase, reveal, close the reveal phase; the closing tick's observation."""
    cast = [(a, v) for a, v in zip(by_weight(r, x), votes, strict=False) if v is not None]
    for a, v in cast:
        commit(r, a, x, v)
    tick(r, note="the commit phase closes: the votes may be revealed")
    if reveal_all:
        for a, v in cast:
            reveal(r, a, x, v)
    return tick(r, note="the reveal phase closes: the tally decides")


def fast_active(r: Recorder, x: str, agent: str = "fay", slot: str = "s") -> None:
    """``x`` proposed by a tier-1 agent on a free slot: fast track, active 2 ticks later."""
    propose(r, agent, x, slot)
    tick(r, 2)
    r.check(art(r, x)["state"] == "active", f"{x} should be active")


def formal_commit(r: Recorder, x: str, agent: str = "ivy", slot: str = "s") -> None:
    """``x`` proposed by the newcomer: formal review, in its commit phase after one tick."""
    propose(r, agent, x, slot)
    tick(r, note="recruited (formal: tier-0 submitter); T_delib = 1 closes deliberation")
    r.check(art(r, x)["state"] == "commit", f"{x} should be in commit")


def state_is(r: Recorder, x: str, state: str) -> None:
    r.check(art(r, x)["state"] == state, f"{x} is {art(r, x)['state']}, expected {state}")


def arbiter(r: Recorder, x: str) -> str:
    """A tier-3 agent who may arbitrate ``x`` (not a reviewer, not the submitter)."""
    a = art(r, x)
    for cand in ("ana", "ben", "kim"):
        if cand not in a["reviewers"] and cand != a["submitter"]:
            return cand
    raise AssertionError("no arbiter")  # pragma: no cover


def to_arbitration(r: Recorder, x: str) -> None:
    """A formal review whose tally is undecided: heaviest accepts alone against one reject."""
    formal_commit(r, x)
    ballot(r, x, ["accept", "reject", None])
    state_is(r, x, "arbitration")


def dispute(r: Recorder, x: str, agent: str = "dan", expect: str = "ok") -> Observation:
    return r.do({"op": "dispute", "agent": agent, "artifact": x, "reason": "outdated"}, expect)


# ============================================================================================
# lifecycle
# ============================================================================================


@example(
    "lifecycle",
    "propose",
    "fast-track-to-active",
    ["LC-SAFE-1", "LC-LIVE-1"],
    "A tier-1 agent proposes on a free slot: recruited on the fast track, active when "
    "T_fast passes without objection.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x")
    tick(r, note="recruited: fast track (tier-1 submitter, slot free), deadline now + T_fast")
    tick(r, note="T_fast passed without objection: active")
    state_is(r, "x", "active")


@example(
    "lifecycle",
    "propose",
    "newcomer-goes-formal",
    ["LC-SAFE-1"],
    "A tier-0 newcomer's proposal is never fast-tracked: it goes to deliberation, then commit.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")


@example(
    "lifecycle",
    "propose",
    "duplicate-id",
    ["LC-SAFE-4"],
    "Proposing an artifact id that exists is refused `duplicate` and changes nothing.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x")
    propose(r, "gus", "x", slot="t", expect="duplicate")


@example(
    "lifecycle",
    "propose",
    "rate-limited-third-proposal",
    ["LC-SAFE-4"],
    "propose_rate = 2: the third proposal in a round is refused `rate_limited` and reported "
    "as a violation; the next round the counter is reset.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x", slot="s1")
    propose(r, "fay", "y", slot="s2")
    propose(r, "fay", "z", slot="s3", expect="rate_limited")
    tick(r, note="a new round: the per-round counters reset")
    propose(r, "fay", "z", slot="s3")


@example(
    "lifecycle",
    "propose",
    "refused-proposal-uses-no-rate",
    ["LC-SAFE-4"],
    "A refused proposal changes nothing, not even the rate counter: after a `duplicate`, "
    "the proposer still has its second proposal of the round (propose_rate = 2).",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x", slot="s1")
    propose(r, "fay", "x", slot="s1", expect="duplicate")
    propose(r, "fay", "y", slot="s2", expect="ok")
    propose(r, "fay", "z", slot="s3", expect="rate_limited")


@example(
    "lifecycle",
    "propose",
    "sanction-rate-limited-allows-one",
    ["LC-SAFE-4"],
    "An agent under sanction rate_limited (σ2) may make propose_rate_limited = 1 proposal a round.",
)
def _(r: Recorder) -> None:
    r.do({"op": "set_agent", "agent": "fay", "tier": 1, "sanction": "rate_limited"})
    propose(r, "fay", "x", slot="s1")
    propose(r, "fay", "y", slot="s2", expect="rate_limited")


@example(
    "lifecycle",
    "propose",
    "unknown-agent",
    ["LC-SAFE-4"],
    "A command from an agent that is not in the registry is refused `unknown_agent`.",
)
def _(r: Recorder) -> None:
    propose(r, "ghost", "x", expect="unknown_agent")


@example(
    "lifecycle",
    "propose",
    "suspended-agent-sanctioned",
    ["LC-SAFE-4"],
    "A suspended agent's proposal is refused `sanctioned` (barred agents act on nothing).",
)
def _(r: Recorder) -> None:
    propose(r, "max", "x", expect="sanctioned")


@example(
    "lifecycle",
    "propose",
    "malformed-commands",
    ["LC-SAFE-4"],
    "Malformed commands are `invalid_input` and change nothing; one that names a registered "
    "sender is reported as that agent's `malformed` violation, anonymous garbage is not.",
)
def _(r: Recorder) -> None:
    base = {"op": "propose", "agent": "fay", "artifact": "x", "slot": "s", "digest": "d"}
    r.do({k: v for k, v in base.items() if k != "digest"}, "invalid_input", "missing digest")
    r.do({**base, "slot": ""}, "invalid_input", "an empty slot")
    r.do({**base, "colour": "red"}, "invalid_input", "an unexpected field")
    r.do({**base, "evidence": "e1"}, "invalid_input", "evidence must be a list")
    r.do({**base, "agent": "ghost", "slot": 5}, "invalid_input", "unregistered: no violation")
    r.do(["propose", "fay"], "invalid_input", "not an object")
    r.do({"op": "promote", "agent": "fay"}, "invalid_input", "an unknown op")
    r.do(base, "ok", "the well-formed command")


@example(
    "lifecycle",
    "propose",
    "evidence-kept",
    ["LC-SAFE-1"],
    "A proposal may carry evidence references; they are part of the public state.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x", evidence=["doi:10.1/a", "doi:10.1/b"])


@example(
    "lifecycle",
    "recruit",
    "explicit-recruit-fast-track",
    ["LC-SAFE-1"],
    "The orchestrator's recruit step can be sent on its own: three reviewers by the sha256 "
    "lottery, the fast track for a tier-1 submitter.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x")
    r.do({"op": "recruit", "artifact": "x"})
    state_is(r, "x", "fast_track")


@example(
    "lifecycle",
    "recruit",
    "wrong-phase-and-unknown-artifact",
    ["LC-SAFE-4"],
    "Recruiting an artifact twice is `wrong_phase`; an unknown one is `unknown_artifact`.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x")
    r.do({"op": "recruit", "artifact": "x"})
    r.do({"op": "recruit", "artifact": "x"}, "wrong_phase")
    r.do({"op": "recruit", "artifact": "nope"}, "unknown_artifact")


@example(
    "lifecycle",
    "recruit",
    "occupied-slot-goes-formal",
    ["LC-SAFE-1", "LC-SAFE-2"],
    "A tier-1 agent's proposal on a slot that already has an active artifact gets formal "
    "review, not the fast track.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    propose(r, "gus", "y")
    tick(r)
    state_is(r, "y", "commit")


@example(
    "lifecycle",
    "object",
    "reviewer-objects",
    ["LC-SAFE-1"],
    "A reviewer objects to a fast-tracked artifact: it goes to deliberation (formal review).",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x")
    tick(r)
    r.do({"op": "object", "agent": reviewers(r, "x")[0], "artifact": "x"})
    state_is(r, "x", "deliberation")
    tick(r, note="T_delib passed: the commit phase opens")
    state_is(r, "x", "commit")


@example(
    "lifecycle",
    "object",
    "subscriber-objects",
    ["LC-SAFE-1", "LC-SAFE-4"],
    "A subscriber of the slot who is not a reviewer may object.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "y")
    tick(r)
    r.check("jon" not in reviewers(r, "y"), "jon must not review y")
    r.do({"op": "object", "agent": "jon", "artifact": "y"})


@example(
    "lifecycle",
    "object",
    "submitter-not-eligible",
    ["LC-SAFE-4"],
    "The submitter may not object to its own artifact, even as a subscriber of the slot.",
)
def _(r: Recorder) -> None:
    propose(r, "jon", "y")
    tick(r)
    r.do({"op": "object", "agent": "jon", "artifact": "y"}, "not_eligible")


@example(
    "lifecycle",
    "object",
    "tier-zero-not-eligible",
    ["LC-SAFE-4"],
    "A tier-0 agent may not object (object needs tier 1).",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x")
    tick(r)
    r.do({"op": "object", "agent": "ivy", "artifact": "x"}, "not_eligible")


@example(
    "lifecycle",
    "object",
    "too-late-wrong-phase",
    ["LC-SAFE-1"],
    "Once the fast track has timed out (active), a reviewer's objection is `wrong_phase`.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    r.do({"op": "object", "agent": reviewers(r, "x")[0], "artifact": "x"}, "wrong_phase")


@example(
    "lifecycle",
    "commit_vote",
    "votes-stay-hidden",
    ["CR-1"],
    "Reviewers commit: the state shows who committed, never what; `revealed` stays null "
    "until the commit phase closes.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    for a, v in zip(reviewers(r, "x"), ("accept", "reject", "accept"), strict=True):
        commit(r, a, "x", v)
    r.check(art(r, "x")["revealed"] is None, "revealed must be null in the commit phase")
    tick(r, note="the commit phase closes: revealed becomes {} (nothing revealed yet)")


@example(
    "lifecycle",
    "commit_vote",
    "twice-duplicate",
    ["CR-2"],
    "One commitment per reviewer and round: a second is `duplicate`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    a = reviewers(r, "x")[0]
    commit(r, a, "x", "accept")
    commit(r, a, "x", "reject", expect="duplicate")


@example(
    "lifecycle",
    "commit_vote",
    "not-a-reviewer",
    ["LC-SAFE-4"],
    "Only the ballot's reviewers may commit: anyone else is `not_eligible`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    outsider = next(a for a in ("gus", "hal", "eve", "dan") if a not in reviewers(r, "x"))
    commit(r, outsider, "x", "accept", expect="not_eligible")


@example(
    "lifecycle",
    "commit_vote",
    "uppercase-commitment-invalid",
    ["CR-2"],
    "A commitment must be 64 lowercase hex digits; uppercase is `invalid_input` (and the "
    "sender's malformed violation).",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    a = reviewers(r, "x")[0]
    c = commitment(a, "x", 1, "accept", "", salt(a)).upper()
    r.do({"op": "commit_vote", "agent": a, "artifact": "x", "commitment": c}, "invalid_input")


@example(
    "lifecycle",
    "commit_vote",
    "after-commit-phase-wrong-phase",
    ["CR-1", "LC-SAFE-4"],
    "A reviewer who commits after the commit phase closed gets `wrong_phase`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    tick(r)
    commit(r, reviewers(r, "x")[0], "x", "accept", expect="wrong_phase")


@example(
    "lifecycle",
    "commit_vote",
    "unknown-artifact",
    ["LC-SAFE-4"],
    "A vote on an artifact that does not exist is `unknown_artifact`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    commit(r, "jon", "nope", "accept", round=1, expect="unknown_artifact")


@example(
    "lifecycle",
    "reveal_vote",
    "bad-reveal-wrong-salt",
    ["CR-2"],
    "A reveal whose salt does not open the commitment is `bad_reveal` and a violation; the "
    "correct reveal is then accepted.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    a = reviewers(r, "x")[0]
    commit(r, a, "x", "accept")
    tick(r)
    reveal(r, a, "x", "accept", k=1, expect="bad_reveal", note="another salt")
    reveal(r, a, "x", "accept")


@example(
    "lifecycle",
    "reveal_vote",
    "bad-reveal-wrong-vote",
    ["CR-2"],
    "Revealing another vote than the one committed is `bad_reveal`: a counted vote equals "
    "the committed one.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    a = reviewers(r, "x")[0]
    commit(r, a, "x", "accept")
    tick(r)
    reveal(r, a, "x", "reject", expect="bad_reveal")


@example(
    "lifecycle",
    "reveal_vote",
    "bad-reveal-wrong-round",
    ["CR-2"],
    "A commitment made for another ballot round cannot be opened in this one: `bad_reveal`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    a = reviewers(r, "x")[0]
    commit(r, a, "x", "accept", round=2, note="committed over round 2; the ballot is round 1")
    tick(r)
    reveal(r, a, "x", "accept", expect="bad_reveal")


@example(
    "lifecycle",
    "reveal_vote",
    "bad-reveal-stale-round",
    ["CR-2"],
    "After an arbiter's revote (round 2) a reviewer replays its round-1 commitment and "
    "reveals the round-1 opening: the hash binds the round, so it is `bad_reveal` and not "
    "counted.",
)
def _(r: Recorder) -> None:
    to_arbitration(r, "x")
    a = by_weight(r, "x")[0]
    r.do({"op": "arbitrate", "agent": arbiter(r, "x"), "artifact": "x", "outcome": "revote"})
    state_is(r, "x", "commit")
    commit(r, a, "x", "accept", round=1, note="the round-1 commitment, replayed in round 2")
    tick(r)
    reveal(r, a, "x", "accept", expect="bad_reveal", note="opens round 1's hash, not round 2's")


@example(
    "lifecycle",
    "reveal_vote",
    "bad-reveal-dispute-value-in-review",
    ["CR-2", "TALLY-1"],
    "A review ballot counts only accept/reject: a matching reveal of `keep` is `bad_reveal`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    a = reviewers(r, "x")[0]
    commit(r, a, "x", "keep")
    tick(r)
    reveal(r, a, "x", "keep", expect="bad_reveal")


@example(
    "lifecycle",
    "reveal_vote",
    "twice-duplicate",
    ["CR-2"],
    "A second reveal of the same vote is `duplicate`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    a = reviewers(r, "x")[0]
    commit(r, a, "x", "accept")
    tick(r)
    reveal(r, a, "x", "accept")
    reveal(r, a, "x", "accept", expect="duplicate")


@example(
    "lifecycle",
    "reveal_vote",
    "without-commitment-not-eligible",
    ["LC-SAFE-4", "CR-2"],
    "A reviewer who did not commit in this round may not reveal: `not_eligible`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    tick(r)
    reveal(r, reviewers(r, "x")[0], "x", "accept", expect="not_eligible")


@example(
    "lifecycle",
    "reveal_vote",
    "in-commit-phase-wrong-phase",
    ["CR-1"],
    "A committed reviewer cannot reveal before the commit phase closes: `wrong_phase`.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    a = reviewers(r, "x")[0]
    commit(r, a, "x", "accept")
    reveal(r, a, "x", "accept", expect="wrong_phase")


@example(
    "lifecycle",
    "tick",
    "tally-accept",
    ["LC-SAFE-1", "TALLY-1", "LC-LIVE-1"],
    "Three reviewers accept: the tally accepts (path tally) and the artifact is active.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    ballot(r, "x", ["accept", "accept", "accept"])
    state_is(r, "x", "active")


@example(
    "lifecycle",
    "tick",
    "tally-reject",
    ["TALLY-1", "LC-LIVE-1"],
    "Three reviewers reject: the tally rejects.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    ballot(r, "x", ["reject", "reject", "reject"])
    state_is(r, "x", "rejected")


@example(
    "lifecycle",
    "tick",
    "tally-undecided-arbitration",
    ["TALLY-1"],
    "Two accept and one heavier reject: the accept share is between τ_reject and τ_accept, "
    "and the artifact goes to arbitration.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    ballot(r, "x", ["reject", "accept", "accept"])
    state_is(r, "x", "arbitration")


@example(
    "lifecycle",
    "tick",
    "tally-side-rule-arbitration",
    ["TALLY-1"],
    "The side rule: the heaviest reviewer accepts alone against one lighter reject. Its "
    "weighted share is above τ_accept, but one voter is fewer than tally_min_side = 2: "
    "arbitration, not acceptance. The middle reviewer abstains.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    ballot(r, "x", ["accept", None, "reject"])
    state_is(r, "x", "arbitration")
    t = art(r, "x")["decision"]["tally"]
    r.check(t["accept"] * 10 >= 6 * (t["accept"] + t["reject"]), "the share is above 0.6")


@example(
    "lifecycle",
    "tick",
    "non-reveal-violation",
    ["CR-2", "SAN-2"],
    "A reviewer who commits and never reveals is reported as a non_reveal violation at the "
    "tally; the two reveals make the quorum.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    revs = by_weight(r, "x")
    for a in revs:
        commit(r, a, "x", "accept")
    tick(r)
    for a in revs[:2]:
        reveal(r, a, "x", "accept")
    tick(r)
    state_is(r, "x", "active")


@example(
    "lifecycle",
    "tick",
    "quorum-missed-rerecruits",
    ["LC-LIVE-1"],
    "Nobody reveals: the quorum is missed, fresh reviewers are recruited for a new round.",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    tick(r, 2)
    state_is(r, "x", "commit")
    r.check(art(r, "x")["round"] == 2, "a new round")


@example(
    "lifecycle",
    "tick",
    "quorum-missed-twice-expires",
    ["LC-LIVE-1"],
    "The quorum is missed twice in one review: the artifact expires (path quorum_missed).",
)
def _(r: Recorder) -> None:
    formal_commit(r, "x")
    tick(r, 4)
    state_is(r, "x", "expired")


@example(
    "lifecycle",
    "tick",
    "arbitration-timeout-rejects",
    ["LC-LIVE-1"],
    "No arbiter decides within T_arb: the status quo wins, the artifact is rejected.",
)
def _(r: Recorder) -> None:
    to_arbitration(r, "x")
    tick(r)
    state_is(r, "x", "rejected")


@example(
    "lifecycle",
    "tick",
    "accept-supersedes-active",
    ["LC-SAFE-2", "LC-SAFE-1"],
    "A second artifact of the slot is accepted: the first one is superseded in the same "
    "step; at most one artifact per slot is active.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    propose(r, "gus", "y")
    tick(r)
    ballot(r, "y", ["accept", "accept", "accept"])
    state_is(r, "y", "active")
    state_is(r, "x", "superseded")


@example(
    "lifecycle",
    "arbitrate",
    "accept",
    ["LC-SAFE-1", "LC-SAFE-4"],
    "A tier-3 agent who did not review arbitrates an undecided tally: accept makes the "
    "artifact active (path arbiter).",
)
def _(r: Recorder) -> None:
    to_arbitration(r, "x")
    r.do({"op": "arbitrate", "agent": arbiter(r, "x"), "artifact": "x", "outcome": "accept"})
    state_is(r, "x", "active")


@example(
    "lifecycle",
    "arbitrate",
    "reject",
    ["LC-SAFE-4"],
    "The arbiter rejects the artifact.",
)
def _(r: Recorder) -> None:
    to_arbitration(r, "x")
    r.do({"op": "arbitrate", "agent": arbiter(r, "x"), "artifact": "x", "outcome": "reject"})
    state_is(r, "x", "rejected")


@example(
    "lifecycle",
    "arbitrate",
    "revote-once",
    ["LC-SAFE-3", "LC-LIVE-1"],
    "The arbiter orders a revote: the same reviewers vote again in a new round. A second "
    "revote of the same review is `limit_reached`; the arbiter then decides.",
)
def _(r: Recorder) -> None:
    to_arbitration(r, "x")
    judge = arbiter(r, "x")
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "revote"})
    state_is(r, "x", "commit")
    ballot(r, "x", ["accept", "reject", None])
    state_is(r, "x", "arbitration")
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "revote"}, "limit_reached")
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "accept"})


@example(
    "lifecycle",
    "arbitrate",
    "reviewer-or-low-tier-not-eligible",
    ["LC-SAFE-4"],
    "A reviewer of the ballot may not arbitrate, nor may a tier-2 agent: `not_eligible`.",
)
def _(r: Recorder) -> None:
    to_arbitration(r, "x")
    judge = next(a for a in by_weight(r, "x") if a in ("ana", "ben", "kim", "cat", "dan"))
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "accept"}, "not_eligible")
    low = next(a for a in ("dan", "eve", "cat") if a not in reviewers(r, "x"))
    r.do({"op": "arbitrate", "agent": low, "artifact": "x", "outcome": "accept"}, "not_eligible")


@example(
    "lifecycle",
    "arbitrate",
    "wrong-phase-and-bad-outcome",
    ["LC-SAFE-4"],
    "Arbitrating an artifact that is not in arbitration is `wrong_phase`; an outcome that "
    "is not accept/reject/revote is `invalid_input`.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    judge = arbiter(r, "x")
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "accept"}, "wrong_phase")
    r.do({"op": "arbitrate", "agent": judge, "artifact": "x", "outcome": "maybe"}, "invalid_input")


def _disputed(r: Recorder, x: str = "x", op: str = "dispute", by: str = "dan") -> list[str]:
    """``x`` fast-tracked to active, then disputed (or reported) by ``by``; the dispute
    ballot's reviewers, heaviest first."""
    fast_active(r, x)
    r.do({"op": op, "agent": by, "artifact": x, "reason": "outdated"})
    state_is(r, x, "disputed")
    return by_weight(r, x)


@example(
    "lifecycle",
    "dispute",
    "retracted-by-two-of-three",
    ["LC-SAFE-3", "TALLY-1"],
    "A tier-2 agent disputes an active artifact; of three fresh reviewers two retract and "
    "one keeps: retracted (the lone keeper is fewer than tally_min_side).",
)
def _(r: Recorder) -> None:
    _disputed(r)
    ballot(r, "x", ["keep", "retract", "retract"])
    state_is(r, "x", "retracted")


@example(
    "lifecycle",
    "dispute",
    "kept-frivolous-penalty",
    ["LC-SAFE-3", "TALLY-1", "SAN-2"],
    "Two of three dispute reviewers keep: the dispute fails, the artifact is active again "
    "(path dispute_kept) and the disputer gets a frivolous_dispute penalty.",
)
def _(r: Recorder) -> None:
    _disputed(r)
    ballot(r, "x", ["retract", "keep", "keep"])
    state_is(r, "x", "active")


@example(
    "lifecycle",
    "dispute",
    "missed-quorum-kept",
    ["LC-LIVE-1"],
    "Only two of the three dispute reviewers reveal (q_dispute = 3): the dispute fails.",
)
def _(r: Recorder) -> None:
    _disputed(r)
    ballot(r, "x", ["retract", "retract", None])
    state_is(r, "x", "active")


@example(
    "lifecycle",
    "dispute",
    "limit-reached",
    ["LC-SAFE-3"],
    "max_disputes = 1: after one failed dispute the artifact cannot be disputed again.",
    extra={"max_disputes": 1},
)
def _(r: Recorder) -> None:
    _disputed(r)
    tick(r, 2)
    state_is(r, "x", "active")
    dispute(r, "x", "cat", expect="limit_reached")


@example(
    "lifecycle",
    "dispute",
    "rate-limited",
    ["LC-SAFE-4"],
    "dispute_rate = 1: an agent's second dispute in the same round is `rate_limited`.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x", slot="s1")
    fast_active(r, "y", agent="gus", slot="s2")
    dispute(r, "x")
    dispute(r, "y", expect="rate_limited")


@example(
    "lifecycle",
    "dispute",
    "tier-one-not-eligible",
    ["LC-SAFE-4"],
    "Disputing needs tier 2: a tier-1 agent is `not_eligible`.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    dispute(r, "x", "gus", expect="not_eligible")


@example(
    "lifecycle",
    "dispute",
    "kept-but-superseded",
    ["LC-SAFE-2"],
    "While x is disputed another artifact of the slot becomes active; when the dispute "
    "fails x cannot return to active and is superseded instead (T_reveal = 2 here).",
    extra={"T_reveal": 2},
)
def _(r: Recorder) -> None:
    _disputed(r)
    propose(r, "gus", "y")
    tick(r, 2)
    state_is(r, "y", "active")
    tick(r)
    state_is(r, "x", "superseded")


@example(
    "lifecycle",
    "urgent_report",
    "hidden-then-retracted",
    ["LC-SAFE-5", "LC-SAFE-3"],
    "A tier-1 agent reports an active artifact: it is hidden at once and disputed; the "
    "reviewers retract it and it stays hidden.",
)
def _(r: Recorder) -> None:
    _disputed(r, op="urgent_report", by="gus")
    r.check(art(r, "x")["hidden"], "hidden")
    ballot(r, "x", ["retract", "retract", "retract"])
    state_is(r, "x", "retracted")


@example(
    "lifecycle",
    "urgent_report",
    "unfounded-penalty",
    ["LC-SAFE-5", "SAN-2"],
    "The reviewers keep a reported artifact: hidden is cleared, the artifact is active "
    "again and the reporter gets an unfounded_urgent_report penalty.",
)
def _(r: Recorder) -> None:
    _disputed(r, op="urgent_report", by="gus")
    ballot(r, "x", ["keep", "keep", "keep"])
    state_is(r, "x", "active")
    r.check(not art(r, "x")["hidden"], "not hidden")


@example(
    "lifecycle",
    "urgent_report",
    "refusals",
    ["LC-SAFE-4", "LC-SAFE-3"],
    "A tier-0 agent may not report (`not_eligible`); a disputed artifact cannot be "
    "reported again (`wrong_phase`).",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    cmd = {"op": "urgent_report", "agent": "ivy", "artifact": "x", "reason": "spam"}
    r.do(cmd, "not_eligible")
    r.do({**cmd, "agent": "gus"})
    r.do({**cmd, "agent": "hal"}, "wrong_phase")


def _rejected(r: Recorder, x: str = "x") -> None:
    formal_commit(r, x)
    ballot(r, x, ["reject", "reject", "reject"])
    state_is(r, x, "rejected")


@example(
    "lifecycle",
    "resubmit",
    "after-cooldown",
    ["LC-SAFE-3", "LC-LIVE-1"],
    "A rejected artifact may be resubmitted once the cooldown (2 rounds) has passed, with "
    "new content; it gets formal review in a new ballot round.",
)
def _(r: Recorder) -> None:
    _rejected(r)
    cmd = {"op": "resubmit", "agent": "ivy", "artifact": "x", "digest": "x-v2"}
    r.do(cmd, "cooldown")
    tick(r)
    r.do(cmd, "cooldown")
    tick(r)
    r.do(cmd)
    state_is(r, "x", "proposed")
    tick(r)
    state_is(r, "x", "commit")


@example(
    "lifecycle",
    "resubmit",
    "unchanged-content-duplicate",
    ["LC-SAFE-3"],
    "Resubmitting the same digest without new evidence is `duplicate`; new evidence alone "
    "is a revision.",
)
def _(r: Recorder) -> None:
    _rejected(r)
    tick(r, 2)
    cmd = {"op": "resubmit", "agent": "ivy", "artifact": "x", "digest": "x-v1"}
    r.do(cmd, "duplicate")
    r.do({**cmd, "evidence": ["doi:10.1/new"]})


@example(
    "lifecycle",
    "resubmit",
    "limit-reached",
    ["LC-SAFE-3"],
    "max_resubmit = 1: the second resubmission of an artifact is `limit_reached`.",
    extra={"max_resubmit": 1},
)
def _(r: Recorder) -> None:
    _rejected(r)
    tick(r, 2)
    r.do({"op": "resubmit", "agent": "ivy", "artifact": "x", "digest": "x-v2"})
    tick(r)
    ballot(r, "x", ["reject", "reject", "reject"])
    tick(r, 2)
    r.do({"op": "resubmit", "agent": "ivy", "artifact": "x", "digest": "x-v3"}, "limit_reached")


@example(
    "lifecycle",
    "resubmit",
    "not-eligible",
    ["LC-SAFE-4"],
    "Only the submitter may resubmit, and only with reputation ≥ r_resubmit (0.5).",
)
def _(r: Recorder) -> None:
    _rejected(r)
    tick(r, 2)
    cmd = {"op": "resubmit", "agent": "gus", "artifact": "x", "digest": "x-v2"}
    r.do(cmd, "not_eligible", "not the submitter")
    r.do({"op": "set_agent", "agent": "ivy", "tier": 0, "reputation": 0.4})
    r.do({**cmd, "agent": "ivy"}, "not_eligible", "reputation 0.4 < r_resubmit")


@example(
    "lifecycle",
    "resubmit",
    "wrong-phase-and-rate-limited",
    ["LC-SAFE-4"],
    "An active artifact cannot be resubmitted (`wrong_phase`); resubmissions share the "
    "proposal rate limit (`rate_limited`).",
)
def _(r: Recorder) -> None:
    fast_active(r, "a")
    r.do({"op": "resubmit", "agent": "fay", "artifact": "a", "digest": "a-v2"}, "wrong_phase")
    _rejected(r)
    tick(r, 2)
    propose(r, "ivy", "y", slot="s2")
    propose(r, "ivy", "z", slot="s3")
    r.do({"op": "resubmit", "agent": "ivy", "artifact": "x", "digest": "x-v2"}, "rate_limited")


_FORGET = {"min_active_agents": 8}


def _forget_votes(r: Recorder, x: str, voters: Sequence[str]) -> None:
    for a in voters:
        r.do({"op": "forget_vote", "agent": a, "artifact": x})


@example(
    "lifecycle",
    "forget_vote",
    "quorum-reached-forgotten",
    ["LC-SAFE-6", "FG-1"],
    "Forget votes of weight 3.6 reach the quorum Q = 0.5 × 6.0 (the active agents' "
    "weight): at the tick the artifact is forgotten, its content erased, a tombstone kept.",
    extra=_FORGET,
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    _forget_votes(r, "x", ["ana", "ben", "kim", "cat"])
    tick(r)
    state_is(r, "x", "forgotten")


@example(
    "lifecycle",
    "forget_vote",
    "below-quorum-kept",
    ["FG-1"],
    "Forget votes of weight 2.8 (one at confidence 0.5) stay below Q = 3.0: nothing is forgotten.",
    extra=_FORGET,
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    _forget_votes(r, "x", ["ana", "ben"])
    r.do({"op": "forget_vote", "agent": "cat", "artifact": "x", "confidence": 0.5})
    tick(r)
    state_is(r, "x", "active")


@example(
    "lifecycle",
    "forget_vote",
    "disputed-waits",
    ["LC-SAFE-6"],
    "Forget votes on a disputed artifact are recorded, but nothing is forgotten while it is "
    "disputed; when the dispute fails the decision is taken at that tick.",
    extra=_FORGET,
)
def _(r: Recorder) -> None:
    _disputed(r)
    _forget_votes(r, "x", ["ana", "ben", "kim", "cat"])
    tick(r)
    state_is(r, "x", "disputed")
    tick(r)
    state_is(r, "x", "forgotten")


@example(
    "lifecycle",
    "forget_vote",
    "population-floor",
    ["FG-1"],
    "At the default min_active_agents = 12, eleven active agents forget nothing, even unanimously.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    _forget_votes(r, "x", ["ana", "ben", "kim", "cat", "dan", "eve", "fay", "gus", "hal"])
    tick(r)
    state_is(r, "x", "active")


@example(
    "lifecycle",
    "forget_vote",
    "refusals",
    ["LC-SAFE-6", "LC-SAFE-4"],
    "One forget vote per agent (`duplicate`); not on an artifact still under review "
    "(`wrong_phase`); confidence in [0, 1] (`invalid_input`); not by a barred agent.",
)
def _(r: Recorder) -> None:
    fast_active(r, "x")
    propose(r, "gus", "y", slot="s2")
    vote = {"op": "forget_vote", "agent": "ana", "artifact": "x"}
    r.do(vote)
    r.do(vote, "duplicate")
    r.do({**vote, "artifact": "y"}, "wrong_phase")
    r.do({**vote, "agent": "ben", "confidence": 1.5}, "invalid_input")
    r.do({**vote, "agent": "max"}, "sanctioned")


@example(
    "lifecycle",
    "set_agent",
    "suspension-bars-commands",
    ["LC-SAFE-4"],
    "set_agent suspends an agent: its next command is refused `sanctioned`; lifting the "
    "sanction lets it act again.",
)
def _(r: Recorder) -> None:
    r.do({"op": "set_agent", "agent": "fay", "tier": 1, "sanction": "suspended"})
    propose(r, "fay", "x", expect="sanctioned")
    r.do({"op": "set_agent", "agent": "fay", "tier": 1, "sanction": "none"})
    propose(r, "fay", "x")


@example(
    "lifecycle",
    "set_agent",
    "new-agent-and-bad-entries",
    ["LC-SAFE-4"],
    "set_agent adds an agent (weight w_min, reputation 0, no sanction by default); a weight "
    "outside [w_min, w_max], a tier above 3 or an unknown sanction is `invalid_input`.",
)
def _(r: Recorder) -> None:
    r.do({"op": "set_agent", "agent": "zed", "tier": 1})
    propose(r, "zed", "x")
    r.do({"op": "set_agent", "agent": "zed", "tier": 1, "weight": 1.5}, "invalid_input")
    r.do({"op": "set_agent", "agent": "zed", "tier": 4}, "invalid_input")
    r.do({"op": "set_agent", "agent": "zed", "tier": 1, "sanction": "exiled"}, "invalid_input")


# ============================================================================================
# voting
# ============================================================================================

_S1 = salt("v", 0)


@example(
    "voting",
    "commitment",
    "canonical-encoding",
    ["CR-2"],
    "sha256 of the canonical JSON (sorted keys artifact, reason, round, salt, vote, voter; "
    "no spaces; UTF-8): the reason may hold any text, including non-ASCII.",
)
def _(r: Recorder) -> None:
    base = {"op": "commitment", "voter": "ana", "artifact": "x", "round": 1, "vote": "accept"}
    r.do({**base, "reason": "", "salt": _S1})
    r.do({**base, "reason": 'cites "Ostrom, 1990" — §3', "salt": _S1})
    r.do({**base, "reason": "", "salt": _S1, "round": 2}, note="another round, another hash")
    r.do({**base, "reason": "", "salt": _S1, "vote": "retract"})


@example(
    "voting",
    "commitment",
    "invalid-arguments",
    ["CR-2"],
    "An uppercase or short salt, an unknown vote, a negative round or a missing field is "
    "`invalid_input`.",
)
def _(r: Recorder) -> None:
    base = {
        "op": "commitment",
        "voter": "ana",
        "artifact": "x",
        "round": 1,
        "vote": "accept",
        "reason": "",
        "salt": _S1,
    }
    r.do({**base, "salt": _S1.upper()}, "invalid_input")
    r.do({**base, "salt": "abc"}, "invalid_input")
    r.do({**base, "vote": "abstain"}, "invalid_input")
    r.do({**base, "round": -1}, "invalid_input")
    r.do({k: v for k, v in base.items() if k != "reason"}, "invalid_input")
    r.do({"op": "hash", "text": "x"}, "invalid_input", "an unknown op")


@example(
    "voting",
    "select_reviewers",
    "lottery",
    ["LC-SAFE-4"],
    'The k eligible agents with the smallest sha256("<seed>|<artifact>|<round>|<agent>"), '
    "ascending; another round or seed draws others; fewer eligible than k gives all of them.",
)
def _(r: Recorder) -> None:
    el = ["ana", "ben", "cat", "dan", "eve", "fay", "gus", "hal", "jon", "kim"]
    base = {"op": "select_reviewers", "seed": 0, "artifact": "x", "round": 1, "eligible": el}
    r.do({**base, "k": 3})
    r.do({**base, "k": 3, "round": 2})
    r.do({**base, "k": 3, "seed": 7})
    r.do({**base, "k": 5, "eligible": list(reversed(el))}, note="the order given does not matter")
    r.do({**base, "k": 4, "eligible": ["ana", "ben"]})
    r.do({**base, "k": 0})


@example(
    "voting",
    "select_reviewers",
    "invalid-arguments",
    ["LC-SAFE-4"],
    "Repeated eligible agents, a negative k or a non-list is `invalid_input`.",
)
def _(r: Recorder) -> None:
    base = {"op": "select_reviewers", "seed": 0, "artifact": "x", "round": 1, "k": 2}
    r.do({**base, "eligible": ["ana", "ana"]}, "invalid_input")
    r.do({**base, "eligible": ["ana"], "k": -1}, "invalid_input")
    r.do({**base, "eligible": "ana"}, "invalid_input")


def _rv(accept: list[int], reject: list[int], **kw: int) -> dict[str, Any]:
    base = {"quorum": 3, "tau_accept": 600_000, "tau_reject": 400_000, "min_side": 2}
    return {"op": "review_verdict", "accept": accept, "reject": reject, **base, **kw}


@example(
    "voting",
    "review_verdict",
    "thresholds",
    ["TALLY-1"],
    "The review tally in micro-units: accept at share ≥ τ_accept, reject at ≤ τ_reject, "
    "undecided between, no_quorum below the quorum of reveals; exactly at a threshold "
    "decides.",
)
def _(r: Recorder) -> None:
    r.do(_rv([1_000_000, 500_000], [300_000]))
    r.do(_rv([300_000], [1_000_000, 500_000]))
    r.do(_rv([500_000, 500_000], [1_000_000]), note="share 0.5: undecided")
    r.do(_rv([600_000, 600_000], [800_000]), note="share exactly 0.6: accept")
    r.do(_rv([400_000], [300_000, 300_000]), note="share exactly 0.4: reject")
    r.do(_rv([1_000_000], [1_000_000]), note="two reveals < quorum 3")


@example(
    "voting",
    "review_verdict",
    "side-rule",
    ["TALLY-1"],
    "A side wins only with min_side voters: one heavy accept against two light rejects is "
    "undecided, although its share is 0.83; with min_side = 1 it would accept.",
)
def _(r: Recorder) -> None:
    r.do(_rv([1_000_000], [100_000, 100_000]))
    r.do(_rv([1_000_000], [100_000, 100_000], min_side=1))
    r.do(_rv([100_000, 100_000], [1_000_000]), note="a lone heavy reject cannot reject either")
    r.do(_rv([0, 0], [0], quorum=3), note="all weights 0: accept is tested first")


@example(
    "voting",
    "review_verdict",
    "invalid-arguments",
    ["TALLY-1"],
    "Weights are non-negative integers (micro-units); thresholds in [0, 10^6]; quorum ≥ 1.",
)
def _(r: Recorder) -> None:
    r.do(_rv([0.5], [1]), "invalid_input", "a float weight")  # type: ignore[list-item]
    r.do(_rv([-1], [1]), "invalid_input")
    r.do(_rv([1], [1], tau_accept=1_500_000), "invalid_input")
    r.do(_rv([1], [1], quorum=0), "invalid_input")


def _dv(retract: list[int], keep: list[int], **kw: int) -> dict[str, Any]:
    base = {"q_dispute": 5, "tau_retract": 670_000, "min_side": 2}
    return {"op": "dispute_verdict", "retract": retract, "keep": keep, **base, **kw}


@example(
    "voting",
    "dispute_verdict",
    "retract-or-keep",
    ["TALLY-1"],
    "The dispute tally: retract at share ≥ τ_retract with at least min_side retracting; a "
    "lone keeper cannot hold against the others; a lone retracter cannot retract; a missed "
    "quorum keeps.",
)
def _(r: Recorder) -> None:
    r.do(_dv([500_000] * 4, [500_000]))
    r.do(_dv([100_000] * 4, [1_000_000]), note="share 0.29, but one keeper: retract")
    r.do(_dv([100_000] * 3, [500_000, 500_000]), note="share 0.23, two keepers: keep")
    r.do(_dv([1_000_000], [100_000] * 4), note="a lone retracter: keep")
    r.do(_dv([1_000_000] * 4, []), note="four reveals < q_dispute 5: keep")
    r.do(_dv([670_000, 670_000], [330_000, 330_000, 0]), note="share exactly 0.67: retract")


@example(
    "voting",
    "dispute_verdict",
    "invalid-arguments",
    ["TALLY-1"],
    "Missing or ill-typed arguments are `invalid_input`.",
)
def _(r: Recorder) -> None:
    r.do({"op": "dispute_verdict", "retract": [1], "keep": [1]}, "invalid_input")
    r.do(_dv([1], [True]), "invalid_input", "a boolean is not a weight")  # type: ignore[list-item]


# ============================================================================================
# reputation
# ============================================================================================


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


# ============================================================================================
# sanctions
# ============================================================================================


def _rec(r: Recorder, agent: str, kind: str, n: int = 1, **kw: Any) -> None:
    for _ in range(n):
        r.do({"op": "record", "agent": agent, "kind": kind, **kw})


@example(
    "sanctions",
    "record",
    "ladder-to-ban",
    ["SAN-2", "LC-SAFE-4"],
    "Strategic violations climb the ladder: warned at 3, rate-limited at 5, suspended at 8, "
    "banned at 12 (in the window); a ban is terminal.",
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "rate_limit", 12)
    _rec(r, "ana", "rate_limit")


@example(
    "sanctions",
    "tick",
    "window-expiry",
    ["SAN-2"],
    "Violations leave the window after sanction_window rounds (5 here) and the level falls "
    "with them.",
    params={"sanction_window": 5},
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "non_reveal", 3)
    r.do({"op": "tick", "round": 4})
    r.do({"op": "tick"})
    r.do({"op": "tick"})


@example(
    "sanctions",
    "tick",
    "suspension-ends",
    ["SAN-2"],
    "σ3 suspends for T_susp rounds (4 here); then the level is what the window gives, at most σ2.",
    params={"T_susp": 4},
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "frivolous_dispute", 8)
    for _ in range(4):
        r.do({"op": "tick"})


@example(
    "sanctions",
    "record",
    "urgent-penalty-weighs-three",
    ["SAN-2"],
    "An unfounded urgent report counts urgent_penalty = 3 violations: one of them warns.",
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "unfounded_urgent")
    _rec(r, "ana", "unfounded_urgent")


@example(
    "sanctions",
    "record",
    "malfunction-quarantined",
    ["SAN-1"],
    "Violations that are mostly malformed messages look like malfunction: quarantine "
    "instead of a warning; while quarantined the level never rises; after T_quarantine (3 "
    "here) the repaired agent is released with a clean slate.",
    params={"T_quarantine": 3},
)
def _(r: Recorder) -> None:
    _rec(r, "bot", "malformed", 3)
    _rec(r, "bot", "malformed", 6)
    for _ in range(3):
        r.do({"op": "tick"})


@example(
    "sanctions",
    "tick",
    "unrepaired-quarantine-renewed",
    ["SAN-1"],
    "An agent that fails its repair check stays quarantined for another T_quarantine.",
    params={"T_quarantine": 2},
    setup={"unrepaired": ["bot"]},
)
def _(r: Recorder) -> None:
    _rec(r, "bot", "invalid_reveal", 3)
    for _ in range(4):
        r.do({"op": "tick"})


@example(
    "sanctions",
    "record",
    "probation-reclassifies",
    ["SAN-1", "SAN-2"],
    "A violation during probation after a quarantine marks the agent strategic: its next "
    "malformed messages escalate on the ladder instead of quarantining it again.",
    params={"T_quarantine": 2},
)
def _(r: Recorder) -> None:
    _rec(r, "bot", "malformed", 3)
    r.do({"op": "tick", "round": 2})
    _rec(r, "bot", "malformed", 3)


@example(
    "sanctions",
    "record",
    "future-round-and-refusals",
    ["SAN-2"],
    "A record may name a later round (the book advances to it first); an earlier round, an "
    "unknown kind or a missing agent is `invalid_input`; so is a tick that does not advance.",
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "non_reveal", round=3)
    _rec(r, "ana", "non_reveal")
    r.do({"op": "record", "agent": "ana", "kind": "non_reveal", "round": 1}, "invalid_input")
    r.do({"op": "record", "agent": "ana", "kind": "rudeness"}, "invalid_input")
    r.do({"op": "record", "kind": "malformed"}, "invalid_input")
    r.do({"op": "tick", "round": 3}, "invalid_input")


# ============================================================================================
# forgetting
# ============================================================================================

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


# ============================================================================================
# community
# ============================================================================================


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
