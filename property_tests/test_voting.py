"""Unit and property tests of ``ostrom.voting`` (CR-2, TALLY-1, reviewer selection)."""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.agents import micro
from ostrom.errors import ErrorCode
from ostrom.voting import (
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
    ("yes", "no", "n", "want"),
    [
        (600_000, 400_000, 3, "accept"),  # exactly tau_accept
        (599_999, 400_001, 3, "undecided"),  # just below
        (400_000, 600_000, 3, "reject"),  # exactly tau_reject
        (400_001, 599_999, 3, "undecided"),  # just above
        (1, 0, 3, "accept"),
        (0, 1, 3, "reject"),
        (1_000_000, 0, 2, "no_quorum"),  # quorum 3 missed, however clear the vote
        (0, 0, 3, "accept"),  # all-zero weights: 0 >= 0 (accept is tested first)
    ],
)
def test_review_verdict_at_the_thresholds(yes: int, no: int, n: int, want: str) -> None:
    assert review_verdict(Tally(yes, no, n), 3, TA, TR) == want


def test_dispute_verdict_at_the_threshold() -> None:
    tau = micro(0.67)
    assert dispute_verdict(Tally(670_000, 330_000, 5), 5, tau) == "retract"
    assert dispute_verdict(Tally(669_999, 330_001, 5), 5, tau) == "keep"
    assert dispute_verdict(Tally(1_000_000, 0, 4), 5, tau) == "keep"  # quorum missed


@given(st.lists(st.integers(0, 10**6), min_size=2, max_size=2), st.integers(1, 10**6 - 1))
def test_tally_regions_are_disjoint(w: list[int], gap: int) -> None:
    """TALLY-1: with tau_reject < tau_accept no tally is both accept and reject."""
    ta = min(10**6, gap + 1)
    t = Tally(w[0], w[1], 5)
    accept = t.yes * 10**6 >= ta * (t.yes + t.no)
    reject = t.yes * 10**6 <= gap * (t.yes + t.no)
    assert not (accept and reject) or t.yes + t.no == 0


def test_tally_sums_weights() -> None:
    b = Ballot(BallotKind.DISPUTE, 1, frozenset({"a", "b", "c"}))
    for v, vote in (("a", "retract"), ("b", "keep"), ("c", "retract")):
        b.reveal(v, vote, "")
    weights = {"a": 100_000, "b": 1_000_000, "c": 250_000}
    assert b.tally(weights.__getitem__) == Tally(350_000, 1_000_000, 3)


def test_select_reviewers_is_the_sha256_ranking() -> None:
    eligible = [f"ag{i}" for i in range(10)]
    got = select_reviewers(7, "x1", 1, eligible, 3)
    ranked = sorted(eligible, key=lambda a: hashlib.sha256(f"7|x1|1|{a}".encode()).hexdigest())
    assert got == tuple(ranked[:3])
    assert select_reviewers(7, "x1", 1, eligible[:2], 3) == tuple(
        sorted(eligible[:2], key=lambda a: hashlib.sha256(f"7|x1|1|{a}".encode()).hexdigest())
    )
    assert select_reviewers(7, "x1", 1, eligible, 0) == ()
