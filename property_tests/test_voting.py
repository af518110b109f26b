"""Unit and property tests of ``ostrom.protocol.voting`` (CR-2, TALLY-1, reviewer selection)."""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.protocol.agents import micro
from ostrom.protocol.errors import ErrorCode
from ostrom.protocol.voting import (
    Ballot,
    BallotKind,
    Tally,
    canonical,
    commitment,
    dispute_verdict,
    is_hex64,
    make_salt,
    review_verdict,
    select_reviewers,
)

SALT = "00" * 32


def test_canonical_encoding_is_the_documented_bytes() -> None:
    """rules.md: UTF-8 JSON, exactly six keys, sorted, no spaces, non-ASCII kept as UTF-8."""
    got = canonical("alice", "x1", 1, "accept", "ok ✓", SALT)
    want = (
        '{"artifact":"x1","reason":"ok ✓","round":1,"salt":"' + SALT + '","vote":"accept",'
        '"voter":"alice"}'
    ).encode()
    assert got == want
    assert commitment("alice", "x1", 1, "accept", "ok ✓", SALT) == hashlib.sha256(want).hexdigest()


def test_commitment_vector() -> None:
    """A fixed vector for other implementations (and a guard against encoding drift)."""
    assert commitment("alice", "x1", 1, "accept", "", SALT) == hashlib.sha256(
        b'{"artifact":"x1","reason":"","round":1,"salt":"' + SALT.encode()
        + b'","vote":"accept","voter":"alice"}'
    ).hexdigest()  # fmt: skip


@given(st.sampled_from(["voter", "artifact", "round", "vote", "reason", "salt"]))
def test_commitment_binds_every_field(field: str) -> None:
    """CR-2: changing any one field changes the commitment (round included: no replays)."""
    base = {
        "voter": "a",
        "artifact": "x",
        "round": 1,
        "vote": "accept",
        "reason": "r",
        "salt": SALT,
    }
    other = dict(base)
    other[field] = {"round": 2, "salt": "11" * 32, "vote": "reject"}.get(field, "zz")
    assert commitment(**base) != commitment(**other)  # type: ignore[arg-type]


def test_make_salt_is_seeded_and_hex() -> None:
    a, b = make_salt(random.Random(1)), make_salt(random.Random(1))
    assert a == b and is_hex64(a)
    assert make_salt(random.Random(2)) != a
    assert not is_hex64("AB" * 32) and not is_hex64("ab" * 31) and not is_hex64(None)


def _ballot() -> Ballot:
    b = Ballot(BallotKind.REVIEW, 3, frozenset({"a", "b"}))
    b.commit("a", commitment("a", "x", 3, "accept", "why", SALT))
    return b


def test_reveal_checks() -> None:
    """CR-2: only the exact opening of this round's commitment is accepted."""
    b = _ballot()
    assert b.check_reveal("a", "x", "accept", "why", SALT) is None
    assert b.check_reveal("a", "x", "reject", "why", SALT) is ErrorCode.BAD_REVEAL
    assert b.check_reveal("a", "x", "accept", "why!", SALT) is ErrorCode.BAD_REVEAL
    assert b.check_reveal("a", "y", "accept", "why", SALT) is ErrorCode.BAD_REVEAL
    assert b.check_reveal("b", "x", "accept", "why", SALT) is ErrorCode.BAD_REVEAL
    # a commitment made for round 2 does not open in round 3 (stale round)
    b.commitments["b"] = commitment("b", "x", 2, "accept", "", SALT)
    assert b.check_reveal("b", "x", "accept", "", SALT) is ErrorCode.BAD_REVEAL
    # a vote of the other ballot kind never counts, even if committed to
    b.commitments["b"] = commitment("b", "x", 3, "retract", "", SALT)
    assert b.check_reveal("b", "x", "retract", "", SALT) is ErrorCode.BAD_REVEAL
    b.reveal("a", "accept", "why")
    assert b.check_reveal("a", "x", "accept", "why", SALT) is ErrorCode.DUPLICATE
    assert b.check_commit("a") is ErrorCode.DUPLICATE and b.check_commit("b") is ErrorCode.DUPLICATE


TA, TR = micro(0.6), micro(0.4)


@pytest.mark.parametrize(
    ("yes", "no", "ny", "nn", "want"),
    [
        (600_000, 400_000, 2, 1, "accept"),  # exactly tau_accept
        (599_999, 400_001, 2, 1, "undecided"),  # just below
        (400_000, 600_000, 1, 2, "reject"),  # exactly tau_reject
        (400_001, 599_999, 1, 2, "undecided"),  # just above
        (1, 0, 3, 0, "accept"),
        (0, 1, 0, 3, "reject"),
        (1_000_000, 0, 2, 0, "no_quorum"),  # quorum 3 missed, however clear the vote
        (0, 0, 2, 1, "accept"),  # all-zero weights: 0 >= 0 (accept is tested first)
    ],
)
def test_review_verdict_at_the_thresholds(yes: int, no: int, ny: int, nn: int, want: str) -> None:
    assert review_verdict(Tally(yes, no, ny, nn), 3, TA, TR, 2) == want


def test_review_side_rule_sends_a_lone_heavy_vote_to_arbitration() -> None:
    """TALLY-1: one agent at w_max against two at w_min wins on weight alone (1.0 of
    1.2 accepts), but with ``min_side = 2`` it cannot decide: arbitration."""
    lone_accept = Tally.of([1_000_000], [100_000, 100_000])
    assert review_verdict(lone_accept, 3, TA, TR, 1) == "accept"  # the rule without sides
    assert review_verdict(lone_accept, 3, TA, TR, 2) == "undecided"
    lone_reject = Tally.of([100_000, 100_000], [1_000_000])
    assert review_verdict(lone_reject, 3, TA, TR, 1) == "reject"
    assert review_verdict(lone_reject, 3, TA, TR, 2) == "undecided"
    # two voters on the winning side decide as before
    assert review_verdict(Tally.of([1_000_000, 100_000], [100_000]), 3, TA, TR, 2) == "accept"


def test_dispute_verdict_at_the_threshold() -> None:
    tau = micro(0.67)
    assert dispute_verdict(Tally(670_000, 330_000, 3, 2), 5, tau, 2) == "retract"
    assert dispute_verdict(Tally(669_999, 330_001, 3, 2), 5, tau, 2) == "keep"
    assert dispute_verdict(Tally(1_000_000, 0, 4, 0), 5, tau, 2) == "keep"  # quorum missed


def test_dispute_side_rule() -> None:
    """TALLY-1 for disputes: a lone retracter cannot retract; a lone keeper, however
    heavy, cannot hold the artifact against the other voters."""
    tau = micro(0.67)
    lone_keep = Tally.of([100_000] * 4, [1_000_000])
    assert dispute_verdict(lone_keep, 5, tau, 1) == "keep"  # weights alone: 0.4 of 1.4
    assert dispute_verdict(lone_keep, 5, tau, 2) == "retract"
    lone_retract = Tally.of([1_000_000], [100_000] * 4)
    assert dispute_verdict(lone_retract, 5, tau, 1) == "retract"  # 1.0 of 1.4 >= 0.67
    assert dispute_verdict(lone_retract, 5, tau, 2) == "keep"
    two_keep = Tally.of([100_000] * 3, [1_000_000, 100_000])
    assert dispute_verdict(two_keep, 5, tau, 2) == "keep"  # two keepers: weights decide


@given(st.lists(st.integers(0, 10**6), min_size=2, max_size=2), st.integers(1, 10**6 - 1))
def test_tally_regions_are_disjoint(w: list[int], gap: int) -> None:
    """TALLY-1: with tau_reject < tau_accept no tally is both accept and reject."""
    ta = min(10**6, gap + 1)
    t = Tally(w[0], w[1], 3, 2)
    accept = t.yes * 10**6 >= ta * (t.yes + t.no)
    reject = t.yes * 10**6 <= gap * (t.yes + t.no)
    assert not (accept and reject) or t.yes + t.no == 0


def test_tally_sums_weights() -> None:
    b = Ballot(BallotKind.DISPUTE, 1, frozenset({"a", "b", "c"}))
    for v, vote in (("a", "retract"), ("b", "keep"), ("c", "retract")):
        b.reveal(v, vote, "")
    weights = {"a": 100_000, "b": 1_000_000, "c": 250_000}
    assert b.tally(weights.__getitem__) == Tally(350_000, 1_000_000, 2, 1)


def test_select_reviewers_is_the_sha256_ranking() -> None:
    eligible = [f"ag{i}" for i in range(10)]
    got = select_reviewers(7, "x1", 1, eligible, 3)
    ranked = sorted(eligible, key=lambda a: hashlib.sha256(f"7|x1|1|{a}".encode()).hexdigest())
    assert got == tuple(ranked[:3])
    assert select_reviewers(7, "x1", 1, eligible[:2], 3) == tuple(
        sorted(eligible[:2], key=lambda a: hashlib.sha256(f"7|x1|1|{a}".encode()).hexdigest())
    )
    assert select_reviewers(7, "x1", 1, eligible, 0) == ()
