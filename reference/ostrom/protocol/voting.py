"""Commit-reveal voting: commitments, ballots, the exact weighted tally, reviewer selection.

Everything here is deterministic and portable so that the TLA+ spec, this reference and
an implementation in another language compute the same bytes and the same integers:

* a commitment is SHA-256 over a canonical JSON encoding (docs/rules.md) that binds the
  voter, the artifact and the ballot *round*, so a reveal can only open the commitment
  it was made for (CR-2) and an old round's commitment cannot be replayed in a new one;
* tallies are integer arithmetic on micro-units (``agents.micro``): no float ever decides;
* reviewer selection is a sortition: draw ``j`` picks index
  ``u64(sha256("<seed>|<artifact>|<round>|<j>")) mod n`` of the sorted eligible agents, a
  public, seedable lottery that needs no shared random generator and whose cost is
  O(k log n) for k reviewers among n agents (``select_reviewers``);
* salts come only from a ``random.Random`` passed in (the core holds no entropy source).
"""

from __future__ import annotations

import bisect
import hashlib
import random
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from ostrom.protocol.encoding import canonical as canonical_json
from ostrom.protocol.encoding import is_hex64 as is_hex64
from ostrom.protocol.errors import ErrorCode

__all__ = [
    "ALL_VOTES",
    "BALLOT_VOTES",
    "SORTITION_DRAWS_PER_SEAT",
    "Ballot",
    "BallotKind",
    "Phase",
    "Reveal",
    "Tally",
    "canonical",
    "commitment",
    "dispute_verdict",
    "draw_index",
    "make_salt",
    "review_verdict",
    "select_reviewers",
]


#: The kind of a ballot: a review, a dispute or a forget vote.
class BallotKind(StrEnum):
    REVIEW = "review"
    DISPUTE = "dispute"


class Phase(StrEnum):
    COMMIT = "commit"
    REVEAL = "reveal"
    CLOSED = "closed"


#: The two values a ballot of each kind accepts, (yes, no).
BALLOT_VOTES: Final[dict[BallotKind, tuple[str, str]]] = {
    BallotKind.REVIEW: ("accept", "reject"),
    BallotKind.DISPUTE: ("retract", "keep"),
}
#: Every vote value a command may carry (anything else is ``invalid_input``).
ALL_VOTES: Final[frozenset[str]] = frozenset({"accept", "reject", "retract", "keep"})


def canonical(voter: str, artifact: str, round: int, vote: str, reason: str, salt: str) -> bytes:
    """The commitment's preimage: the canonical encoding (protocol/encoding.py) of a JSON
    object of exactly these six keys."""
    obj = {
        "artifact": artifact,
        "reason": reason,
        "round": round,
        "salt": salt,
        "vote": vote,
        "voter": voter,
    }
    return canonical_json(obj)


def commitment(voter: str, artifact: str, round: int, vote: str, reason: str, salt: str) -> str:
    """``sha256(canonical(...))`` as 64 lowercase hex digits."""
    return hashlib.sha256(canonical(voter, artifact, round, vote, reason, salt)).hexdigest()


def make_salt(rng: random.Random) -> str:
    """32 random bytes as 64 hex digits, from the seeded generator the caller owns."""
    return rng.getrandbits(256).to_bytes(32, "big").hex()


#: Draws per seat before the sortition stops hashing and completes in eligible order (so it
#: always ends, after at most 64·k hashes).  The cap binds only when the candidates are few
#: against n: with m > k candidates and at most 2k + 2 excluded agents the chance is below
#: 10^-9, computed exactly for k ≤ 100 (docs/rules.md, `recruit`).  The orchestrator stays
#: within 2k + 2 when reviewers ≤ 2·dispute_reviewers (the defaults): a dispute excludes
#: the reviewers, the submitter and the disputer, a re-recruitment this review's reviewers
#: and the submitter.  Reaching the cap is part of the definition, not an error path.
SORTITION_DRAWS_PER_SEAT: Final = 64
_TWO64: Final = 1 << 64


def _digest(text: str) -> bytes:
    """SHA-256 of ``text`` in UTF-8 (one function so a test can count the hashes)."""
    return hashlib.sha256(text.encode()).digest()


def draw_index(seed: int, artifact: str, round: int, j: int, n: int) -> int | None:
    """Draw ``j`` of the sortition of ``artifact``'s ballot ``round`` among ``n`` agents.

    ``x`` is the first 8 bytes of ``sha256("<seed>|<artifact>|<round>|<j>")`` (UTF-8; seed,
    round and j in decimal) read as an unsigned big-endian 64-bit integer.  ``x mod n`` is
    the index, unless ``x ≥ 2^64 − (2^64 mod n)``: then the draw is rejected (``None``), so
    every index has exactly the same probability (no modulo bias) and a portable
    implementation needs only 64-bit, or big, integers.
    """
    x = int.from_bytes(_digest(f"{seed}|{artifact}|{round}|{j}")[:8], "big")
    if x >= _TWO64 - _TWO64 % n:
        return None
    return x % n


def _count_in(eligible: Sequence[str], excluded: Iterable[str]) -> int:
    """How many of ``excluded`` are in the sorted ``eligible`` (bisection: O(|X| log n))."""
    n = len(eligible)
    hits = 0
    for x in set(excluded):
        i = bisect.bisect_left(eligible, x)
        hits += i < n and eligible[i] == x
    return hits


def select_reviewers(
    seed: int,
    artifact: str,
    round: int,
    eligible: Sequence[str],
    excluded: AbstractSet[str],
    k: int,
) -> tuple[str, ...]:
    """``k`` reviewers for ``artifact``'s ballot ``round``, drawn from ``eligible`` (sorted
    ascending by code point, no repeats) minus ``excluded``, in draw order.

    The candidates are ``eligible`` minus ``excluded``; let ``n = len(eligible)`` and ``m``
    the number of candidates.  Exactly (docs/rules.md, `recruit`; drivers/js/lifecycle.js
    does the same):

    1. ``k ≤ 0`` or ``m = 0``: none.  ``m ≤ k``: every candidate, in eligible order (a
       re-recruitment may find only a few fresh agents; rules.md allows it).
    2. Otherwise draws ``j = 0, 1, …, 64·k − 1`` (``draw_index``); a drawn index whose
       agent is excluded or already drawn, and a rejected draw, are skipped; stop at ``k``.
    3. If the draws run out first, the rest are the first candidates not yet drawn in
       eligible order.

    Step 2 is sequential sampling without replacement, so every k-subset of the candidates
    is equally likely (up to the negligible chance of step 3).  The work is O(|excluded|
    log n) to count ``m`` plus an expected O(k) hashes when ``m`` is large against ``k``
    and ``|excluded|``: it does not grow with the number of agents, which keeps a tick that
    recruits many artifacts cheap in a large community (bench ``sortition``).
    """
    if k <= 0:
        return ()
    n = len(eligible)
    m = n - _count_in(eligible, excluded)
    if m <= k:  # then n <= k + |excluded|: the walk is O(k + |excluded|)
        return tuple(a for a in eligible if a not in excluded)
    drawn: list[str] = []
    seen: set[str] = set()
    for j in range(SORTITION_DRAWS_PER_SEAT * k):
        i = draw_index(seed, artifact, round, j, n)
        if i is None:
            continue
        a = eligible[i]
        if a in excluded or a in seen:
            continue
        drawn.append(a)
        seen.add(a)
        if len(drawn) == k:
            return tuple(drawn)
    for a in eligible:  # step 3: at most |excluded| + 2k agents are looked at
        if a not in excluded and a not in seen:
            drawn.append(a)
            if len(drawn) == k:
                break
    return tuple(drawn)


@dataclass(frozen=True)
class Reveal:
    vote: str
    reason: str


@dataclass(frozen=True)
class Tally:
    """Weighted tally in micro-units: ``yes`` is accept (review) or retract (dispute).

    ``yes_voters`` / ``no_voters`` count the reveals on each side: the verdicts need the
    head counts for the side rule of TALLY-1, not only the weights.
    """

    yes: int
    no: int
    yes_voters: int
    no_voters: int

    @property
    def reveals(self) -> int:
        """Valid reveals counted (both sides)."""
        return self.yes_voters + self.no_voters

    @classmethod
    def of(cls, yes: list[int] | tuple[int, ...], no: list[int] | tuple[int, ...]) -> Tally:
        """The tally of these per-voter weights (micro-units) on each side."""
        return cls(sum(yes), sum(no), len(yes), len(no))

    def to_dict(self, kind: BallotKind) -> dict[str, int]:
        y, n = BALLOT_VOTES[kind]
        return {
            y: self.yes,
            n: self.no,
            "reveals": self.reveals,
            f"{y}_voters": self.yes_voters,
            f"{n}_voters": self.no_voters,
        }


def review_verdict(
    t: Tally, quorum: int, tau_accept: int, tau_reject: int, min_side: int = 1
) -> str:
    """``accept`` / ``reject`` / ``undecided`` / ``no_quorum`` (thresholds in micro-units).

    ``A·10^6 ≥ τa·(A+R)`` accepts and ``A·10^6 ≤ τr·(A+R)`` rejects; ``τr < τa`` (a
    parameter relation) makes the regions disjoint (TALLY-1).  Accept is tested first,
    which only matters in the degenerate all-zero-weight case (0 ≥ 0: accept).

    The side rule (TALLY-1, parameter ``tally_min_side``): a side wins only with at
    least ``min_side`` voters.  Weights alone cannot stop one agent at ``w_max`` from
    outweighing the rest of a quorum at ``w_min`` unless ``w_max/w_min`` is tiny (< 3 at
    the defaults), which would defeat reputation weighting; with ``min_side = 2`` a lone
    heavy vote against everyone else sends the artifact to arbitration instead.
    """
    if t.reveals < quorum:
        return "no_quorum"
    total = t.yes + t.no
    if t.yes * 1_000_000 >= tau_accept * total and t.yes_voters >= min_side:  # TALLY-1
        return "accept"
    if t.yes * 1_000_000 <= tau_reject * total and t.no_voters >= min_side:  # TALLY-1
        return "reject"
    return "undecided"


def dispute_verdict(t: Tally, q_dispute: int, tau_retract: int, min_side: int = 1) -> str:
    """``retract`` or ``keep`` (the status quo).

    With the dispute quorum met, the artifact is retracted when at least ``min_side``
    voters retract and either their weight is ≥ τ of the revealed weight, or fewer than
    ``min_side`` voters keep (TALLY-1: a lone keeper, however heavy, cannot hold an
    artifact against a retracting majority of heads; a lone retracter cannot retract).
    A dispute that misses its quorum fails (``keep``).
    """
    if t.reveals < q_dispute or t.yes_voters < min_side:
        return "keep"
    if t.yes * 1_000_000 >= tau_retract * (t.yes + t.no) or t.no_voters < min_side:
        return "retract"
    return "keep"


@dataclass
class Ballot:
    """One commit-reveal ballot: a round, its reviewers, one commitment and one reveal each.

    The ballot only stores; it never decides who may act (that is the orchestrator's
    ordered check list).  ``check_*`` methods are pure so that a refused command can be
    refused before anything is mutated.
    """

    kind: BallotKind
    round: int
    reviewers: frozenset[str]
    phase: Phase = Phase.COMMIT
    commitments: dict[str, str] = field(default_factory=dict)
    reveals: dict[str, Reveal] = field(default_factory=dict)

    @property
    def votes(self) -> tuple[str, str]:
        return BALLOT_VOTES[self.kind]

    def check_commit(self, voter: str) -> ErrorCode | None:
        """``duplicate`` if ``voter`` already committed in this round."""
        return ErrorCode.DUPLICATE if voter in self.commitments else None

    def commit(self, voter: str, digest: str) -> None:
        assert voter in self.reviewers and voter not in self.commitments
        self.commitments[voter] = digest

    def matches(
        self, voter: str, artifact: str, vote: str, reason: str, salt: str, round: int | None = None
    ) -> bool:
        """Does the reveal open ``voter``'s commitment *for this ballot's round*? (CR-2)"""
        r = self.round if round is None else round
        return self.commitments.get(voter) == commitment(voter, artifact, r, vote, reason, salt)

    def check_reveal(
        self,
        voter: str,
        artifact: str,
        vote: str,
        reason: str,
        salt: str,
        matcher: Callable[[str, str, str, str, str], bool] | None = None,
    ) -> ErrorCode | None:
        """``duplicate`` (already revealed), then ``bad_reveal`` (CR-2: no match, or a vote
        that is not one of this ballot's two values).  ``matcher`` defaults to ``matches``."""
        if voter in self.reveals:
            return ErrorCode.DUPLICATE
        m = self.matches if matcher is None else matcher
        if vote not in self.votes or not m(voter, artifact, vote, reason, salt):
            return ErrorCode.BAD_REVEAL
        return None

    def reveal(self, voter: str, vote: str, reason: str) -> None:
        self.reveals[voter] = Reveal(vote, reason)

    def tally(self, weight: Callable[[str], int]) -> Tally:
        """Sum the valid reveals' weights (only checked reveals are ever stored: CR-2)."""
        yes_vote = self.votes[0]
        yes: list[int] = []
        no: list[int] = []
        for voter, rev in self.reveals.items():
            (yes if rev.vote == yes_vote else no).append(weight(voter))
        return Tally.of(yes, no)
