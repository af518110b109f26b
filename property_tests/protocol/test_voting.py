"""Unit and property tests of ``ostrom.protocol.voting`` (CR-2, TALLY-1, reviewer selection)."""

from __future__ import annotations

import hashlib
import random
import struct
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.conformance.layers import VotingLayer
from ostrom.protocol import voting
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


# --- the sortition (docs/rules.md `recruit`, LC-SAFE-4: only eligible agents review) -------


def _sortition_as_documented(
    seed: int, artifact: str, rnd: int, eligible: list[str], excluded: set[str], k: int
) -> tuple[str, ...]:
    """rules.md's algorithm, transcribed literally (struct for the big-endian u64)."""
    cands = [a for a in eligible if a not in excluded]
    if k <= 0:
        return ()
    if len(cands) <= k:
        return tuple(cands)
    n = len(eligible)
    out: list[str] = []
    for j in range(64 * k):
        h = hashlib.sha256(f"{seed}|{artifact}|{rnd}|{j}".encode()).digest()
        (x,) = struct.unpack(">Q", h[:8])
        if x >= 2**64 - 2**64 % n:
            continue
        a = eligible[x % n]
        if a not in excluded and a not in out:
            out.append(a)
            if len(out) == k:
                return tuple(out)
    return tuple(out + [a for a in cands if a not in out][: k - len(out)])


TEN = ["ana", "ben", "cat", "dan", "eve", "fay", "gus", "hal", "jon", "kim"]


def test_sortition_pinned_values() -> None:
    """Fixed outputs (the JS driver and vectors/voting reproduce them): a change of the
    algorithm, its bytes or its order fails here first."""
    assert select_reviewers(0, "x", 1, TEN, frozenset(), 3) == ("jon", "gus", "cat")
    assert select_reviewers(0, "x", 1, TEN, frozenset({"jon"}), 3) == (
        _sortition_as_documented(0, "x", 1, TEN, {"jon"}, 3)
    )
    assert select_reviewers(0, "x", 1, TEN, frozenset(), 0) == ()
    assert select_reviewers(0, "x", 1, ["ana", "ben"], frozenset(), 4) == ("ana", "ben")
    assert select_reviewers(0, "x", 1, TEN, frozenset(TEN[1:8]), 3) == ("ana", "jon", "kim")
    assert select_reviewers(0, "x", 1, TEN, frozenset(TEN), 3) == ()
    assert select_reviewers(0, "x", 1, (), frozenset(), 3) == ()
    cmd = {"op": "select_reviewers", "seed": 0, "artifact": "x", "round": 1, "k": 3}
    layer = VotingLayer()  # the conformance op sorts what it is given
    obs = layer.step({**cmd, "eligible": TEN[::-1], "excluded": ["jon", "nobody"]})
    assert obs["result"] == "ok"
    assert obs["state"] == list(select_reviewers(0, "x", 1, TEN, frozenset({"jon"}), 3))


_IDS = st.lists(st.text("abcdefgh", min_size=1, max_size=3), max_size=24, unique=True)


@given(
    st.integers(0, 2**70),
    st.text(max_size=6),
    st.integers(0, 50),
    _IDS,
    st.data(),
    st.integers(-1, 12),
)
def test_sortition_is_the_documented_algorithm(
    seed: int, artifact: str, rnd: int, ids: list[str], data: st.DataObject, k: int
) -> None:
    """Exactly rules.md's draw (LC-SAFE-4): distinct, never excluded, min(k, m) of them."""
    eligible = sorted(ids)
    excluded = set(data.draw(st.lists(st.sampled_from([*ids, "zz"]), max_size=8)))
    got = select_reviewers(seed, artifact, rnd, eligible, frozenset(excluded), k)
    assert got == _sortition_as_documented(seed, artifact, rnd, eligible, excluded, k)
    cands = [a for a in eligible if a not in excluded]
    assert len(set(got)) == len(got) == min(max(k, 0), len(cands))
    assert set(got) <= set(cands)
    assert got == select_reviewers(seed, artifact, rnd, tuple(eligible), frozenset(excluded), k)


def test_sortition_rejects_the_biased_tail_and_completes_in_eligible_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A draw x >= 2^64 - (2^64 mod n) is rejected (a mutant taking x mod n would pick
    index 5 here); after 64·k draws the rest come in eligible order, skipping excluded
    agents."""
    calls: list[str] = []

    def top(text: str) -> bytes:
        calls.append(text)
        return b"\xff" * 32  # x = 2^64 - 1: rejected for n = 10 (2^64 mod 10 = 6)

    monkeypatch.setattr(voting, "_digest", top)
    assert select_reviewers(3, "x", 2, TEN, frozenset({"ben"}), 3) == ("ana", "cat", "dan")
    assert len(calls) == 64 * 3 and calls[0] == "3|x|2|0" and calls[-1] == "3|x|2|191"
    # n = 16 divides 2^64: nothing is rejected, x mod 16 = 15 every time
    sixteen = [f"a{i:02}" for i in range(16)]
    assert select_reviewers(3, "x", 2, sixteen, frozenset({"a00"}), 3) == ("a15", "a01", "a02")


def _chi2(counts: Counter[str], keys: list[str]) -> float:
    total = sum(counts.values())
    e = total / len(keys)
    return sum((counts[a] - e) ** 2 / e for a in keys)


def _biased(eligible: list[str], excluded: set[str], seed: int, k: int) -> tuple[str, ...]:
    """A plausible wrong sortition: an excluded hit takes the next candidate instead of
    drawing again (the agent after an excluded run is drawn about 4 times as often)."""
    n, out = len(eligible), list[str]()
    for j in range(64 * k):
        i = int.from_bytes(hashlib.sha256(f"{seed}|x|1|{j}".encode()).digest()[:8], "big") % n
        while eligible[i] in excluded:
            i = (i + 1) % n
        if eligible[i] not in out:
            out.append(eligible[i])
        if len(out) == k:
            break
    return tuple(out)


def test_sortition_is_uniform_over_candidates() -> None:
    """Chi-square of how often each candidate is drawn, over the fixed seeds 0..2999 (not
    flaky: deterministic), and of the first draw; the biased mutant fails the same bound.
    16 degrees of freedom: 39.25 is the 0.1% critical value."""
    eligible = [f"a{i:02}" for i in range(20)]
    excluded = {"a03", "a04", "a05"}
    cands = [a for a in eligible if a not in excluded]
    seats: Counter[str] = Counter()
    first: Counter[str] = Counter()
    bad: Counter[str] = Counter()
    for seed in range(3000):
        got = select_reviewers(seed, "x", 1, eligible, frozenset(excluded), 5)
        seats.update(got)
        first[got[0]] += 1
        bad.update(_biased(eligible, excluded, seed, 5))
    assert _chi2(seats, cands) < 39.25
    assert _chi2(first, cands) < 39.25
    assert _chi2(bad, cands) > 39.25  # the check can fail


def test_sortition_cost_does_not_grow_with_agents(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hashes per recruitment are O(k), about the same at 1k, 10k and 100k eligible agents
    (ranking every agent would hash n per recruitment)."""
    calls = [0]
    real = voting._digest

    def counting(text: str) -> bytes:
        calls[0] += 1
        return real(text)

    monkeypatch.setattr(voting, "_digest", counting)
    per_n = {}
    for n in (1_000, 10_000, 100_000):
        eligible = tuple(sorted(f"ag{i}" for i in range(n)))
        calls[0] = 0
        for x in range(200):
            excluded = frozenset({f"ag{x}", f"ag{x + 1}", "nobody"})
            assert len(select_reviewers(1, f"x{x}", 1, eligible, excluded, 7)) == 7
        per_n[n] = calls[0]
    assert all(200 * 7 <= c <= 200 * 8 for c in per_n.values()), per_n


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@given(
    st.fixed_dictionaries(
        {"op": st.just("select_reviewers")},
        optional={
            "seed": st.one_of(st.integers(-3, 2**70), _JSONISH),
            "artifact": st.one_of(st.sampled_from(["x", "ä"]), _JSONISH),
            "round": st.one_of(st.integers(-2, 9), _JSONISH),
            "eligible": st.one_of(st.lists(st.sampled_from(TEN), max_size=12), _JSONISH),
            "excluded": st.one_of(st.lists(st.sampled_from([*TEN, "zz"]), max_size=5), _JSONISH),
            "k": st.one_of(st.integers(-2, 12), _JSONISH),
            "extra": _JSONISH,
        },
    )
)
def test_voting_layer_select_reviewers_refuses_hostile_fields(command: dict[str, object]) -> None:
    """The conformance op never raises: ``invalid_input`` or exactly the sortition over the
    eligible agents sorted (any order given) minus ``excluded``."""
    layer = VotingLayer()
    obs = layer.step(command)
    assert obs["result"] in ("ok", "invalid_input"), obs
    if obs["result"] == "ok":
        c: Any = command
        eligible, excluded = sorted(c["eligible"]), frozenset(c.get("excluded", []))
        want = select_reviewers(c["seed"], c["artifact"], c["round"], eligible, excluded, c["k"])
        assert obs["state"] == list(want)


# --- rules pinned down by code mutation (models/mutation/code/voting.toml) -------------------


def test_thresholds_are_exact_at_the_weight_of_a_full_panel() -> None:
    """TALLY-1: ``A·10^6 ≥ τ·(A+R)`` is exact integer arithmetic at any total weight.  At a
    total of one voter's weight an error of one part in a million in the scale hides
    below the micro-unit; at ten voters at w_max (10^7 micro-units) it is a whole unit,
    and a tally one unit short of τ must still not be decided."""
    assert review_verdict(Tally(6_000_000, 4_000_000, 6, 4), 3, TA, TR, 2) == "accept"
    assert review_verdict(Tally(5_999_999, 4_000_001, 6, 4), 3, TA, TR, 2) == "undecided"
    assert review_verdict(Tally(4_000_001, 5_999_999, 4, 6), 3, TA, TR, 2) == "undecided"
    tau = micro(0.67)
    assert dispute_verdict(Tally(6_700_000, 3_300_000, 6, 4), 5, tau, 2) == "retract"
    assert dispute_verdict(Tally(6_699_999, 3_300_001, 6, 4), 5, tau, 2) == "keep"


def test_verdicts_without_a_side_rule_by_default() -> None:
    """``min_side`` defaults to 1 (no side rule): a lone voter on the winning side decides,
    as the verdicts are documented; the orchestrator always passes ``tally_min_side``."""
    lone_accept = Tally.of([1_000_000], [100_000, 100_000])
    assert review_verdict(lone_accept, 3, TA, TR) == "accept"
    lone_retract = Tally.of([1_000_000], [100_000] * 4)
    assert dispute_verdict(lone_retract, 5, micro(0.67)) == "retract"


def test_a_ballot_checks_reveals_with_the_matcher_it_is_given() -> None:
    """CR-2's hook: the orchestrator decides what opens a commitment (``_reveal_matches``,
    which the conformance mutants replace); ``check_reveal`` must ask it, not its own
    ``matches``."""
    b = _ballot()
    seen: list[tuple[str, ...]] = []

    def accept_all(*args: str) -> bool:
        seen.append(args)
        return True

    assert b.check_reveal("a", "x", "accept", "not the opening", SALT, accept_all) is None
    assert seen == [("a", "x", "accept", "not the opening", SALT)]
    assert b.check_reveal("a", "x", "accept", "why", SALT, lambda *_: False) is (
        ErrorCode.BAD_REVEAL
    )


def test_matches_binds_the_round_it_is_asked_about() -> None:
    """CR-2: a commitment opens for the round it was made for; asked about another round
    explicitly, ``matches`` uses that round, not the ballot's."""
    b = _ballot()
    assert b.matches("a", "x", "accept", "why", SALT)
    assert not b.matches("a", "x", "accept", "why", SALT, round=b.round + 1)
    b.commitments["b"] = commitment("b", "x", 2, "accept", "", SALT)
    assert b.matches("b", "x", "accept", "", SALT, round=2)


def test_commit_refuses_an_outsider_and_a_second_commitment() -> None:
    """One commitment per recruited reviewer (LC-SAFE-4): the ballot itself asserts it,
    beneath the orchestrator's checks."""
    b = _ballot()
    with pytest.raises(AssertionError):
        b.commit("outsider", "00" * 32)
    with pytest.raises(AssertionError):
        b.commit("a", "00" * 32)  # ``a`` committed already
    assert "outsider" not in b.commitments
