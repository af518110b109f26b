"""Hand-written lifecycle histories: every command, guard and error of the lifecycle layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ostrom.conformance.generators.examples.registry import example
from ostrom.conformance.generators.examples.steps import (
    arbiter,
    art,
    ballot,
    by_weight,
    commit,
    dispute,
    fast_active,
    formal_commit,
    propose,
    reveal,
    reviewers,
    salt,
    state_is,
    tick,
    to_arbitration,
)
from ostrom.conformance.generators.recorder import Recorder
from ostrom.protocol.commands import payload_digest
from ostrom.protocol.voting import commitment

__all__ = []


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


#: A payload whose canonical JSON exercises the encoding rules an implementation must
#: follow to compute payload_digest: sorted keys, non-ASCII as UTF-8, escaped quotes,
#: backslashes and control characters.
_PAYLOAD: dict[str, Any] = {
    "content": 'Water boils at 100 °C at sea level.\n"Quoted", back\\slash, tab\t, 水.',
    "title": "Boiling point",
    "tags": ["physics", "water"],
    "source": "https://example.org/boiling",
}


@example(
    "lifecycle",
    "propose",
    "payload-digest",
    ["LC-SAFE-4"],
    "A proposal may carry its payload (content, title, tags, source): accepted when digest is "
    "the SHA-256 of the payload's canonical JSON (commands.payload_digest). The payload is "
    "not protocol state: the public state holds the digest only.",
)
def _(r: Recorder) -> None:
    propose(r, "fay", "x", digest=payload_digest(_PAYLOAD), **_PAYLOAD)
    only = {"content": "just the text"}
    propose(r, "gus", "y", slot="t", digest=payload_digest(only), **only)


@example(
    "lifecycle",
    "propose",
    "payload-digest-mismatch",
    ["LC-SAFE-4"],
    "A payload that does not hash to the command's digest is malformed: `invalid_input`, the "
    "sender's `malformed` violation, nothing else changed. Every field of the payload is "
    "covered, and a digest-only proposal is still accepted.",
)
def _(r: Recorder) -> None:
    good = payload_digest(_PAYLOAD)
    base = {"op": "propose", "agent": "fay", "artifact": "x", "slot": "s", "digest": good}
    r.do({**base, **_PAYLOAD, "digest": "x-v1"}, "invalid_input", "a digest that is no hash")
    r.do({**base, **_PAYLOAD, "content": "Water boils at 90 °C."}, "invalid_input", "content")
    r.do({**base, **_PAYLOAD, "title": "Freezing point"}, "invalid_input", "another title")
    r.do({**base, **_PAYLOAD, "tags": ["water", "physics"]}, "invalid_input", "tags reordered")
    r.do({**base, **{k: v for k, v in _PAYLOAD.items() if k != "source"}}, "invalid_input",
         "a field left out")  # fmt: skip
    r.do({**base, **_PAYLOAD, "tags": "physics"}, "invalid_input", "tags must be a list")
    r.do({**base, **_PAYLOAD}, "ok", "the payload as hashed")


#: An embedding whose canonical spelling an implementation must reproduce to hash it:
#: Python's float repr (``1e-07``, ``100.0``, ``2.5e-05``: not JavaScript's ``1e-7``,
#: ``100``, ``0.000025``), an integer as an integer, a negative zero as ``-0.0``.
_EMBEDDED: dict[str, Any] = {
    "content": "Ice melts at 0 °C.",
    "embedding": [1e-07, 0.1, -0.5, 100.0, 3, 2.5e-05, -0.0, 123456.789],
}


@example(
    "lifecycle",
    "propose",
    "payload-embedding",
    ["LC-SAFE-4"],
    "A payload may carry an `embedding` (dense retrieval): 1 to MAX_EMBEDDING numbers, each "
    "finite and at most MAX_NUMBER in magnitude, hashed with the rest of the payload, each "
    "number spelled as Python's json writes it (an integer as an integer, a float as its "
    "shortest repr: `1e-07`, `100.0`, `-0.0`). A changed number, a float for an integer, "
    "an empty list or a list of anything else is `invalid_input`. The community's dimension "
    "(`embedding_dim`) is the node's check, not the protocol's.",
)
def _(r: Recorder) -> None:
    good = payload_digest(_EMBEDDED)
    base = {"op": "propose", "agent": "fay", "artifact": "x", "slot": "s", "digest": good}
    vec = list(_EMBEDDED["embedding"])
    r.do({**base, **_EMBEDDED, "embedding": [*vec[:-1], 123456.78]}, "invalid_input",
         "a number changed")  # fmt: skip
    r.do({**base, **_EMBEDDED, "embedding": [*vec[:4], 3.0, *vec[5:]]}, "invalid_input",
         "3.0 for 3: another spelling, another digest")  # fmt: skip
    r.do({**base, **_EMBEDDED, "embedding": vec[::-1]}, "invalid_input", "reordered")
    for bad, note in (
        ([], "an empty embedding"),
        (["0.5"], "a string for a number"),
        ([True], "a boolean for a number"),
        ([2e9], "a number over MAX_NUMBER"),
    ):
        payload = {**_EMBEDDED, "embedding": bad}
        r.do({**base, **payload, "digest": payload_digest(payload)}, "invalid_input", note)
    r.do({**base, **_EMBEDDED}, "ok", "the payload as hashed")
    only = {"embedding": [0.25, -0.75]}
    cmd = {"op": "propose", "agent": "gus", "artifact": "y", "slot": "t"}
    r.do({**cmd, "digest": payload_digest(only), **only}, "ok", "an embedding alone")


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
