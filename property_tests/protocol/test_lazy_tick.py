"""A tick costs what changed, not who exists — and computes what the eager tick computed.

``ReputationBook.tick`` computes only the agents whose weight or tier can move and
replays the settled agents' rounds on read; ``Community._after_tick`` writes back only the
agents the book computed or the sanction book named (docs/reputation.md, "What a tick
costs").  The oracle is the old eager code (property_tests/eager_reputation.py: every
agent decayed, weighed, tiered and synced at every tick).  Checks, every message starting
with ``LAZY-TICK:`` (the label the mutant tests below require):

* the book alone, on random histories of adds (newcomers and founders, pre-trusted or
  not), observations, ballots (agreement and vote feedback) and ticks under random
  decay, farming-cap and tier parameters: after every command the two books' snapshots
  (E, evidence total, weight, weight history, tier, ``held``, trust, agreement) and
  views are equal, bit for bit;
* the whole Community, on the random histories of test_community.py's machine (joins,
  votes, arbitration, sanctions, disputes, forget votes, malformed commands): identical
  observations for every command, identical public state and book snapshots after it;
* mutants of the lazy book — trust changes that do not wake the agents whose weight
  follows trust, settled rounds not replayed into the weight history, a newcomer settled
  at once although tier 1's threshold is E = ½ — are caught.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from test_community import FOUNDERS, PARAMS, CommunityMachine

from eager_reputation import EagerCommunity, EagerReputationBook
from mutant_check import assert_mutant_caught, run_machine
from ostrom.protocol.commands import Observation
from ostrom.protocol.community import Community
from ostrom.protocol.params import Params
from ostrom.protocol.reputation import Beta, ReputationBook, TierState, settled_tier

NAMES = tuple("abcdefgh")
VOTES = ("accept", "reject")


def _same_books(lazy: ReputationBook, eager: ReputationBook, after: str) -> None:
    got, want = lazy.snapshot(), eager.snapshot()
    assert got == want, f"LAZY-TICK: after {after} the books differ:\n{got}\n{want}"
    for a in eager.agents:
        views = (lazy.expected(a), lazy.beta(a), lazy.weight_micro(a), lazy.tier(a))
        wants = (eager.expected(a), eager.beta(a), eager.weight_micro(a), eager.tier(a))
        assert views == wants, f"LAZY-TICK: after {after}, {a}: {views} != {wants}"


class BookMachine(RuleBasedStateMachine):
    """The lazy and the eager book fed the same commands; ``BOOK`` is swapped by the
    mutant tests."""

    BOOK: type[ReputationBook] = ReputationBook

    def __init__(self) -> None:
        super().__init__()
        self.lazy: ReputationBook = self.BOOK()
        self.eager: ReputationBook = EagerReputationBook()

    @initialize(
        delta=st.sampled_from([0.0, 0.01, 0.2, 0.5]),
        window=st.integers(1, 4),
        gain=st.sampled_from([0.05, 0.2, 0.9]),
        dwell=st.integers(0, 3),
        tier1=st.sampled_from([0.5, 0.55]),  # at 0.5 a newcomer is due a promotion
        pretrusted=st.sets(st.sampled_from(NAMES), max_size=3),
        feedback=st.sampled_from(["decision", "truth"]),
    )
    def start(
        self, delta: float, window: int, gain: float, dwell: int, tier1: float,
        pretrusted: set[str], feedback: str,
    ) -> None:  # fmt: skip
        params = Params(
            delta=delta, farm_window=window, farm_gain=gain, tier1_rounds=dwell, tier1_rep=tier1
        )
        self.lazy = self.BOOK(params, pretrusted=sorted(pretrusted), feedback=feedback)
        self.eager = EagerReputationBook(params, pretrusted=sorted(pretrusted), feedback=feedback)

    def both(self, what: str, *args: Any, **kwargs: Any) -> None:
        getattr(self.lazy, what)(*args, **kwargs)
        getattr(self.eager, what)(*args, **kwargs)

    @rule(agent=st.sampled_from(NAMES))
    def join(self, agent: str) -> None:
        if agent not in self.eager.agents:
            self.both("add", agent)

    @rule(
        agent=st.sampled_from(NAMES),
        mean=st.floats(0.5, 1.0),
        total=st.floats(2.0, 60.0),
        tier=st.integers(1, 3),
    )
    def found(self, agent: str, mean: float, total: float, tier: int) -> None:
        """A founder: a prior and a tier it supports (the highest its E allows, at most
        ``tier``), its time in tier served."""
        if agent not in self.eager.agents:
            tier = min(tier, settled_tier(mean, self.eager.params))
            self.both("add", agent, prior=Beta(mean, total), tier=tier)

    @rule(
        agent=st.sampled_from(NAMES),
        positive=st.booleans(),
        weight=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    )
    def observe(self, agent: str, positive: bool, weight: float) -> None:
        if agent in self.eager.agents:
            self.both("observe", agent, positive, weight)

    @rule(
        votes=st.dictionaries(st.sampled_from(NAMES), st.sampled_from(VOTES), max_size=5),
        decision=st.sampled_from([*VOTES, None]),
        truth=st.sampled_from([*VOTES, None]),
    )
    def ballot(self, votes: dict[str, str], decision: str | None, truth: str | None) -> None:
        votes = {a: v for a, v in votes.items() if a in self.eager.agents}
        self.both("record_votes", votes, decision, truth)

    @rule(n=st.integers(1, 6))
    def tick(self, n: int) -> None:
        for _ in range(n):
            self.both("tick")

    @invariant()
    def same(self) -> None:
        _same_books(self.lazy, self.eager, f"round {self.eager.round}")


class LazyEagerMachine(CommunityMachine):
    """test_community.py's machine (all its checks kept) with an eager twin: every command
    goes to both; observations, public states and book snapshots must be equal."""

    def __init__(self) -> None:
        super().__init__()
        self.eager = EagerCommunity(PARAMS, FOUNDERS)

    def do(self, cmd: dict[str, Any]) -> Observation:
        twin = copy.deepcopy(cmd)
        obs = super().do(cmd)
        want = self.eager.apply(twin)
        assert obs == want, f"LAZY-TICK: {twin} gave {obs}, the eager tick {want}"
        return obs

    @invariant()
    def same_state(self) -> None:
        got, want = self.c.public_state(), self.eager.public_state()
        assert got == want, f"LAZY-TICK: public state {got} != eager {want}"
        _same_books(self.c.reputation, self.eager.reputation, f"round {self.c.now}")


def test_lazy_book_is_the_eager_book() -> None:
    """60 histories in ``make test`` (the mutants below fall within a few); the profile's
    count in ``make test-slow``."""
    run_machine(BookMachine, max_examples=60)


@pytest.mark.slow
def test_lazy_book_is_the_eager_book_at_the_profile() -> None:
    run_machine(BookMachine)


def test_lazy_community_is_the_eager_community() -> None:
    """A small run in ``make test`` (each step runs two communities); the full profile in
    ``make test-slow``."""
    run_machine(LazyEagerMachine, max_examples=30)


@pytest.mark.slow
def test_lazy_community_is_the_eager_community_at_the_profile() -> None:
    run_machine(LazyEagerMachine)


# --- mutants of the lazy book: the checks above must see each one -------------------------


class NoTrustWakeBook(ReputationBook):
    """A change of global trust (a join, a ballot) does not wake the agents whose weight
    depends on it: a settled agent keeps the weight computed from the old trust."""

    def _invalidate_trust(self) -> None:
        self._trust = None  # the version is not bumped


class NoReplayBook(ReputationBook):
    """A settled agent's rounds are not replayed: its ``held`` counters and weight history
    stop where it settled (the farming cap then reads a stale window)."""

    def _replayed(self, rec: Any, round: int) -> tuple[TierState, list[int]]:
        return rec.tier, list(rec.history)


class EagerlySettledBook(ReputationBook):
    """Every newcomer is settled at its join, even when tier 1's threshold is ½ and its
    first ticks would promote it."""

    def _tier_settled(self, tier: int, e: float) -> bool:
        return True if tier == 0 and e == 0.5 else super()._tier_settled(tier, e)


@pytest.mark.parametrize(
    "book", [NoTrustWakeBook, NoReplayBook, EagerlySettledBook], ids=lambda b: b.__name__
)
def test_a_lazy_book_mutant_is_caught(book: type[ReputationBook]) -> None:
    machine = type(f"{book.__name__}Machine", (BookMachine,), {"BOOK": book})
    assert_mutant_caught(machine, book.__name__, "LAZY-TICK")


class _NoTrustWakeCommunity(Community):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, reputation_cls=NoTrustWakeBook, **kwargs)


@pytest.mark.mutation  # two communities per step until it fails: make mutate, make test-slow
def test_the_community_twin_catches_a_lazy_mutant() -> None:
    machine = type(
        "NoTrustWakeCommunityMachine", (LazyEagerMachine,), {"COMMUNITY": _NoTrustWakeCommunity}
    )
    assert_mutant_caught(machine, "NoTrustWakeBook", "LAZY-TICK")
