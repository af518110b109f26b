"""The reputation layer: REP-1, the refuted plain rule, EigenTrust, weights, farming cap, tiers.

Pure-function properties are checked with ``@given``; the book as a whole by a stateful
machine (``ReputationMachine``) whose per-tick checks are labelled (``REP-1:``,
``FARM-CAP:``, ``TIER-DWELL:``, ...), so that each mutant of ``reputation_mutants.py`` must
be caught by its own check.

EigenTrust is compared with networkx on the same weighted graph, twice: networkx's own
power iteration (``_pagerank_python``, the pure-Python implementation of
``networkx.pagerank``, whose public entry point needs scipy, which ostrom does not
install) and a direct linear solve for the stationary vector of
``networkx.google_matrix`` (public, numpy only).  Both are given personalization = p,
``alpha = 1 - a`` and no ``dangling`` argument, so dangling nodes jump by p exactly as in
``ostrom.protocol.reputation.eigentrust``.
"""

from __future__ import annotations

import json
import math
import random
from collections import deque
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python

from mutant_check import assert_mutant_caught, run_machine
from ostrom.codegen.reputation_plot import group_mean, main, simulate
from ostrom.protocol.agents import MAX_TIER, micro
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.protocol.reputation import (
    PRIOR_WEIGHT,
    Beta,
    Evidence,
    ReputationBook,
    TierState,
    decay,
    eigentrust,
    eigentrust_iteration_bound,
    farm_capped,
    plain_decay,
    raw_weight_micro,
    settled_tier,
    step_tier,
    tier_thresholds,
    vote_feedback,
)
from reputation_mutants import MUTANTS

unit = st.floats(0.0, 1.0)
deltas = st.floats(0.0, 1.0)
params_alpha_beta = st.floats(1e-3, 1e6)


# --- REP-1: the decay rule ----------------------------------------------------------------


@given(alpha=params_alpha_beta, beta=params_alpha_beta, delta=deltas)
@example(alpha=10.0, beta=2.0, delta=0.01)  # no floor
@example(alpha=1.5, beta=0.6, delta=0.01)  # (1-δ)·2.1 < 2: the floor
@example(alpha=0.001, beta=1.999, delta=1.0)  # δ = 1 empties everything: floor
@example(alpha=1.0, beta=1.0, delta=0.5)  # the prior stays the prior
def test_rep1_decay_keeps_expectation(alpha: float, beta: float, delta: float) -> None:
    """REP-1: one round of decay leaves E exactly unchanged, for every α, β, δ in range."""
    assume(alpha + beta >= PRIOR_WEIGHT)
    b = Beta.from_params(alpha, beta)
    d = decay(b, delta)
    assert d.expected == b.expected  # exact: the mean is carried over untouched
    assert math.isclose(d.alpha / (d.alpha + d.beta), alpha / (alpha + beta), rel_tol=1e-12)
    # the weight of evidence shrinks by (1-δ), never below the prior's 2 ...
    assert d.total == max((1.0 - delta) * b.total, PRIOR_WEIGHT)
    # ... and both parameters are scaled by the same k (up to rounding, relative to n)
    k = d.total / b.total
    assert abs(d.alpha - k * alpha) <= 1e-12 * b.total
    assert abs(d.beta - k * beta) <= 1e-12 * b.total
    assert PRIOR_WEIGHT <= d.total <= b.total


@given(mean=unit, total=st.floats(2.0, 1e6), delta=deltas, rounds=st.integers(1, 2000))
def test_rep1_over_many_rounds(mean: float, total: float, delta: float, rounds: int) -> None:
    b = Beta(mean, total)
    for _ in range(rounds):
        b = decay(b, delta)
    assert b.expected == mean


def test_rep1_floor_is_reached_and_holds() -> None:
    # α=10, β=2 (r=9, s=1): 12·0.99^k < 2 from k = 179 on; then α+β = 2 with α/β = 5 kept.
    b = Beta.from_counts(9, 1)
    for k in range(1, 301):
        b = decay(b, 0.01)
        assert b.expected == 10 / 12
        assert (b.total == PRIOR_WEIGHT) == (k >= 179)
    assert math.isclose(b.alpha, 10 / 6) and math.isclose(b.beta, 2 / 6)


# --- the plain rule is refuted -------------------------------------------------------------


def test_plain_rule_violates_rep1_concrete() -> None:
    """The paper's claim is false for r' = (1-δ)r, s' = (1-δ)s: E drifts to 1/2."""
    b = Beta.from_counts(9, 1)  # E = 10/12 = 0.8333: tier 2
    one = plain_decay(b, 0.01)
    assert math.isclose(one.expected, 9.91 / 11.9)  # 0.83277 != 0.83333
    assert one.expected != b.expected
    for _ in range(499):
        one = plain_decay(one, 0.01)
    assert 0.512 < one.expected < 0.513  # 500 idle rounds: tier 2 -> tier 0
    assert settled_tier(one.expected) == 0 and settled_tier(b.expected) == 2


@given(r=st.floats(0.0, 1e4), s=st.floats(0.0, 1e4), delta=st.floats(1e-3, 0.999))
def test_plain_rule_moves_e_towards_half_by_the_closed_form(
    r: float, s: float, delta: float
) -> None:
    """E' - E = -δ(r-s) / ((r+s+2)((1-δ)(r+s)+2)): zero only when r = s."""
    assume(abs(r - s) > 1e-3)
    b = Beta.from_counts(r, s)
    p = plain_decay(b, delta)
    drift = -delta * (r - s) / ((r + s + 2) * ((1 - delta) * (r + s) + 2))
    assert math.isclose(p.expected - b.expected, drift, rel_tol=1e-6, abs_tol=1e-12)
    assert abs(p.expected - 0.5) < abs(b.expected - 0.5)


# --- Beta evidence -------------------------------------------------------------------------


@given(mean=unit, total=st.floats(2.0, 1e6), w=st.floats(0.0, 1e3), positive=st.booleans())
def test_observation_moves_e_the_right_way(
    mean: float, total: float, w: float, positive: bool
) -> None:
    b = Beta(mean, total)
    o = b.observe(positive, w)
    assert math.isclose(o.total, total + w)
    assert (o.expected >= b.expected - 1e-12) if positive else (o.expected <= b.expected + 1e-12)
    assert math.isclose(o.alpha, b.alpha + (w if positive else 0.0), rel_tol=1e-9, abs_tol=1e-9)


def test_beta_validation() -> None:
    assert Beta().expected == 0.5 and Beta().alpha == 1.0 and Beta().beta == 1.0
    with pytest.raises(ValueError):
        Beta(0.5, 1.0)  # below the prior's weight
    with pytest.raises(ValueError):
        Beta.from_params(0.0, 3.0)
    with pytest.raises(ValueError):
        Beta().observe(True, -1.0)
    with pytest.raises(ValueError):
        decay(Beta(), 1.5)


# --- EigenTrust ---------------------------------------------------------------------------


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, list[int], list[int], list[float], list[float]]:
    n = draw(st.integers(1, 12))
    node = st.integers(0, n - 1)
    edges = draw(
        st.lists(st.tuples(node, node, st.one_of(st.just(0.0), st.floats(0.01, 10.0))), max_size=40)
    )
    mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    p = [1.0 if m else 0.0 for m in mask] if any(mask) else [1.0] * n
    return n, [e[0] for e in edges], [e[1] for e in edges], [e[2] for e in edges], p


def _nx_graph(n: int, src: list[int], dst: list[int], w: list[float]) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for i, j, x in zip(src, dst, w, strict=True):
        if x > 0:  # a zero-weight edge is no edge: its row may be dangling
            prev = g.get_edge_data(i, j, {"weight": 0.0})["weight"]
            g.add_edge(i, j, weight=prev + x)
    return g


@given(g=graphs(), a=st.floats(0.05, 0.95))
def test_eigentrust_matches_networkx(
    g: tuple[int, list[int], list[int], list[float], list[float]], a: float
) -> None:
    n, src, dst, w, p = g
    ours = eigentrust(n, src, dst, w, p, a)
    assert ours.converged
    graph = _nx_graph(n, src, dst, w)
    pers = {i: p[i] for i in range(n)}
    # 1. networkx's power iteration (pagerank's algorithm), alpha = 1 - a
    theirs = _pagerank_python(graph, alpha=1 - a, personalization=pers, tol=1e-14, max_iter=10**5)
    assert max(abs(theirs[i] - ours.trust[i]) for i in range(n)) < 1e-6
    # 2. the stationary vector of networkx's Google matrix, by a direct linear solve
    m = nx.google_matrix(graph, alpha=1 - a, personalization=pers, nodelist=list(range(n)))
    system = np.vstack([np.asarray(m).T - np.eye(n), np.ones(n)])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    solved = np.linalg.lstsq(system, rhs, rcond=None)[0]
    assert np.abs(solved - ours.trust).max() < 1e-6


@given(g=graphs(), a=st.floats(0.0, 1.0))
def test_eigentrust_is_a_distribution(
    g: tuple[int, list[int], list[int], list[float], list[float]], a: float
) -> None:
    n, src, dst, w, p = g
    t = eigentrust(n, src, dst, w, p, a).trust
    assert math.isclose(float(t.sum()), 1.0, abs_tol=1e-9)
    assert (t >= 0).all()


@given(g=graphs(), a=st.floats(0.03, 1.0), tol=st.sampled_from([1e-6, 1e-9, 1e-12]))
def test_eigentrust_converges_within_the_bound_and_cap(
    g: tuple[int, list[int], list[int], list[float], list[float]], a: float, tol: float
) -> None:
    n, src, dst, w, p = g
    bound = eigentrust_iteration_bound(a, tol)
    assert bound is not None and bound <= 1000  # a >= 0.03: the default cap suffices
    res = eigentrust(n, src, dst, w, p, a, tol=tol)
    assert res.converged and res.iterations <= bound and res.residual < tol


def test_eigentrust_cap_reports_non_convergence() -> None:
    # a = 0 on a 2-cycle from p = (1, 0): t alternates forever; the cap stops it.
    res = eigentrust(2, [0, 1], [1, 0], [1.0, 1.0], [1.0, 0.0], 0.0, max_iter=50)
    assert not res.converged and res.iterations == 50 and res.residual == 2.0
    # a = 1: everything returns to the seed at once
    one = eigentrust(3, [0, 1], [1, 2], [1.0, 1.0], [0.0, 1.0, 0.0], 1.0)
    assert one.converged and one.iterations == 1 and list(one.trust) == [0.0, 1.0, 0.0]
    assert eigentrust_iteration_bound(0.15) == 175 and eigentrust_iteration_bound(0.0) is None


_EDGES = {"n": 2, "src": [0], "dst": [1], "weight": [1.0], "pretrust": [1.0, 0.0], "a": 0.5}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"n": -1}, "n must be >= 0"),
        ({"a": 1.5}, r"eigentrust_a must be in \[0, 1\], got 1.5"),
        ({"max_iter": 0}, "max_iter must be >= 1 and tol > 0"),
        ({"tol": 0.0}, "max_iter must be >= 1 and tol > 0"),
        ({"weight": [1.0, 2.0]}, "src, dst and weight must have the same length"),
        ({"pretrust": [1.0]}, "pretrust must have length n=2"),
        ({"dst": [2]}, r"edge endpoints must be in range\(n\)"),
        ({"weight": [-1.0]}, "local trust weights must be finite and >= 0"),
        ({"pretrust": [0.0, 0.0]}, "pretrust must be >= 0 with a positive sum"),
    ],
)
def test_eigentrust_refusals_name_what_is_wrong(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        eigentrust(**{**_EDGES, **change})


def test_eigentrust_weights_are_any_non_negative_numbers() -> None:
    """Only the weights' proportions count: integers, beyond int64 too, give the floats'
    result (numpy would hold such integers as Python objects, which its float checks
    cannot read, unless they are converted first)."""
    floats = eigentrust(3, [0, 0, 1], [1, 2, 2], [3.0, 1.0, 1.0], [1.0, 0.0, 0.0], 0.2)
    huge = eigentrust(3, [0, 0, 1], [1, 2, 2], [3 * 10**30, 10**30, 7], [1, 0, 0], 0.2)
    assert np.allclose(floats.trust, huge.trust, rtol=0, atol=1e-12)


def test_eigentrust_meaning_of_a() -> None:
    """a is the share of mass returned to the pre-trusted peers: a peer nobody trusts but
    which is pre-trusted keeps exactly a·p_i."""
    # 0 is pre-trusted, trusts 1; 1 trusts 2; 2 trusts 1.  Nobody trusts 0.
    res = eigentrust(3, [0, 1, 2], [1, 2, 1], [1.0, 1.0, 1.0], [1.0, 0.0, 0.0], 0.15)
    assert math.isclose(res.trust[0], 0.15, rel_tol=1e-9)


# --- voting weight and the farming cap -----------------------------------------------------


@st.composite
def weight_params(draw: st.DrawFn) -> Params:
    # weights are micro-units: a non-zero one below 0.5e-6 is refused (params._MICRO_PARAMS)
    lo = draw(st.floats(0.0, 1.0).filter(lambda x: x == 0 or x >= 0.5e-6))
    hi = draw(st.floats(max(lo, 0.5e-6), 100.0))
    return Params(w_min=lo, w_max=hi)


@given(params=weight_params(), e=unit, t=unit, n=st.integers(1, 10_000))
def test_weight_within_bounds(params: Params, e: float, t: float, n: int) -> None:
    w = raw_weight_micro(e, t, n, params)
    assert micro(params.w_min) <= w <= micro(params.w_max)


@given(params=weight_params(), t=unit, n=st.integers(1, 10_000))
def test_newcomer_enters_at_w_min(params: Params, t: float, n: int) -> None:
    """REP-2's entry clause: E = 1/2 (no evidence) gives exactly w_min, whatever the trust."""
    assert raw_weight_micro(0.5, t, n, params) == micro(params.w_min)


@given(e1=unit, e2=unit, t1=unit, t2=unit, n=st.integers(1, 1000))
def test_weight_monotone_in_e_and_trust(e1: float, e2: float, t1: float, t2: float, n: int) -> None:
    e_lo, e_hi = sorted((e1, e2))
    t_lo, t_hi = sorted((t1, t2))
    assert raw_weight_micro(e_lo, t_lo, n) <= raw_weight_micro(e_hi, t_hi, n)


@given(
    raws=st.lists(st.integers(0, 1_000_000), min_size=1, max_size=200),
    window=st.integers(1, 20),
    gain=st.integers(0, 300_000),
)
def test_farming_cap_over_any_sequence(raws: list[int], window: int, gain: int) -> None:
    """Over any sequence of raw weights: w(t) - w(u) <= gain whenever 0 < t - u <= window."""
    history: deque[int] = deque([0], maxlen=window)
    series = [0]
    for raw in raws:
        w = farm_capped(raw, history, gain)
        assert w <= raw
        history.append(w)
        series.append(w)
    for t, wt in enumerate(series):
        for u in range(max(0, t - window), t):
            assert wt - series[u] <= gain
    # and the cap only bites on the way up: a fall is followed at once
    for t in range(1, len(series)):
        if raws[t - 1] <= series[t - 1]:
            assert series[t] == raws[t - 1]


def test_farming_cap_time_to_full_weight() -> None:
    """Defaults: +0.1 per 10 rounds, so w(t) = min(raw, w_min + 0.1·⌈t/10⌉) for an agent whose
    raw weight is near w_max at once: it needs 81 rounds to get there."""
    book = ReputationBook(agents=["a"], pretrusted=["a"])
    book.observe("a", True, 1000.0)
    raw = raw_weight_micro(book.expected("a"), 1.0, 1)
    assert raw > micro(0.99)
    for t in range(1, 121):
        book.tick()
        capped = micro(DEFAULTS.w_min) + micro(DEFAULTS.farm_gain) * math.ceil(t / 10)
        assert book.weight_micro("a") == min(raw, capped)
        assert (book.weight_micro("a") == raw) == (t >= 81)


# --- tiers --------------------------------------------------------------------------------


@st.composite
def tier_states(draw: st.DrawFn) -> TierState:
    tier = draw(st.integers(0, MAX_TIER))
    held = [draw(st.integers(0, 50)) for _ in range(MAX_TIER + 1)]
    held = sorted(held, reverse=True)  # held[j] is non-increasing in j
    return TierState(tier, tuple(h if j <= tier else 0 for j, h in enumerate(held)))


@given(state=tier_states(), e1=unit, e2=unit, r=st.integers(0, 20))
def test_tier_step_monotone_in_e(state: TierState, e1: float, e2: float, r: int) -> None:
    params = Params(tier1_rounds=r)
    lo, hi = sorted((e1, e2))
    assert step_tier(state, lo, params).tier <= step_tier(state, hi, params).tier


@given(
    pairs=st.lists(st.tuples(unit, unit), min_size=1, max_size=120),
    r=st.integers(0, 8),
)
def test_tiers_monotone_in_e_pathwise(pairs: list[tuple[float, float]], r: int) -> None:
    """If E_a >= E_b at every tick, then tier_a >= tier_b at every tick."""
    params = Params(tier1_rounds=r)
    a = b = TierState()
    for x, y in pairs:
        a = step_tier(a, max(x, y), params)
        b = step_tier(b, min(x, y), params)
        assert a.tier >= b.tier


@given(e=unit, r=st.integers(0, 15))
def test_tier_settles_after_the_dwell_times(e: float, r: int) -> None:
    params = Params(tier1_rounds=r)
    state = TierState()
    target = settled_tier(e, params)
    for k in range(1, 3 * (r + 1) + 1):
        state = step_tier(state, e, params)
        assert state.tier <= target
        assert k >= state.tier * r  # TIER-DWELL: tier j needs j·tier1_rounds rounds
    assert state.tier == target


def test_tier_demotion_is_immediate_and_cap_applies() -> None:
    params = Params(tier1_rounds=1)
    state = TierState()
    for _ in range(10):
        state = step_tier(state, 0.9, params)
    assert state.tier == 3
    state = step_tier(state, 0.6, params)
    assert state.tier == 1 and state.held[2] == 0 and state.held[1] > 0
    assert step_tier(state, 0.4, params).tier == 0
    book = ReputationBook(params, ["a"])
    book.observe("a", True, 100.0)
    for _ in range(5):
        book.tick()
    assert book.tier("a") == 3 and book.tier("a", cap=1) == 1 and book.tier("a", cap=0) == 0
    with pytest.raises(ValueError):
        book.tier("a", cap=4)


# --- vote feedback ------------------------------------------------------------------------


def test_feedback_modes() -> None:
    votes = {"b": "reject", "a": "accept", "c": "accept"}
    by_decision = vote_feedback(votes, decision="accept", truth="reject")
    assert by_decision == [Evidence("a", True), Evidence("b", False), Evidence("c", True)]
    by_truth = vote_feedback(votes, decision="accept", truth="reject", mode="truth")
    assert by_truth == [Evidence("a", False), Evidence("b", True), Evidence("c", False)]
    assert vote_feedback(votes, decision=None) == []
    assert vote_feedback(votes, decision="accept", mode="truth") == []  # truth unknown
    with pytest.raises(ValueError):
        vote_feedback(votes, decision="accept", mode="oracle")


def test_book_applies_feedback_and_agreement() -> None:
    book = ReputationBook(agents=["a", "b", "c"], feedback="truth")
    ev = book.record_votes({"a": "accept", "b": "accept", "c": "reject"}, "accept", "reject")
    assert [e.positive for e in ev] == [False, False, True]
    assert book.expected("c") == 2 / 3 and book.expected("a") == 1 / 3
    assert book.local_trust() == {("a", "b"): 1.0}


# --- the book -----------------------------------------------------------------------------


def _drive(book: ReputationBook, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(30):
        voters = rng.sample(sorted(book.agents), 3)
        votes = {v: rng.choice(["accept", "reject"]) for v in voters}
        book.record_votes(votes, rng.choice(["accept", "reject", None]))
        book.observe(rng.choice(book.agents), rng.random() < 0.5, rng.choice([0.5, 1.0]))
        book.tick()


def test_snapshot_is_json_and_deterministic() -> None:
    one = ReputationBook(agents=["c", "a", "b", "d"], pretrusted=["a"])
    two = ReputationBook(agents=["d", "b", "a", "c"], pretrusted=["a"])
    _drive(one, 3)
    _drive(two, 3)
    text = json.dumps(one.snapshot(), sort_keys=False)
    assert text == json.dumps(two.snapshot(), sort_keys=False)
    assert list(one.snapshot()["agents"]) == ["a", "b", "c", "d"]
    assert json.loads(text)["round"] == 30


def test_book_refuses_unknown_and_duplicate_agents() -> None:
    book = ReputationBook(agents=["a"])
    with pytest.raises(KeyError):
        book.observe("zz", True)
    with pytest.raises(KeyError):
        book.record_votes({"a": "accept", "zz": "accept"}, "accept")
    with pytest.raises(ValueError):
        book.add("a")
    with pytest.raises(ValueError):
        ReputationBook(feedback="oracle")


def test_no_pretrusted_means_uniform_seed() -> None:
    book = ReputationBook(agents=["a", "b", "c", "d"])
    assert list(book.pretrust_vector()) == [0.25] * 4
    assert book.global_trust() == {"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25}


# --- the book, stateful --------------------------------------------------------------------

NAMES = [f"a{i}" for i in range(6)]


class ReputationMachine(RuleBasedStateMachine):
    """Random commands against a book; every tick checks REP-1, the weight bounds, the
    farming cap, the tiers' dwell times and that global trust is a distribution."""

    BOOK: type[ReputationBook] = ReputationBook

    @initialize(
        delta=st.sampled_from([0.0, 0.01, 0.2, 0.6, 1.0]),
        r=st.sampled_from([0, 1, 3]),
        window=st.sampled_from([1, 3, 10]),
        gain=st.sampled_from([0.0, 0.05, 0.3]),
        bounds=st.sampled_from([(0.1, 1.0), (0.0, 5.0), (0.5, 0.5)]),
        feedback=st.sampled_from(["decision", "truth"]),
    )
    def setup(
        self,
        delta: float,
        r: int,
        window: int,
        gain: float,
        bounds: tuple[float, float],
        feedback: str,
    ) -> None:
        self.params = Params(
            delta=delta,
            tier1_rounds=r,
            farm_window=window,
            farm_gain=gain,
            w_min=bounds[0],
            w_max=bounds[1],
        )
        self.book = self.BOOK(self.params, pretrusted=["a0", "a1"], feedback=feedback)
        self.series: dict[str, list[tuple[int, int]]] = {}
        self.joined: dict[str, int] = {}
        for name in NAMES[:2]:
            self._add(name)

    def _add(self, name: str) -> None:
        self.book.add(name)
        self.series[name] = [(self.book.round, self.book.weight_micro(name))]
        self.joined[name] = self.book.round

    @precondition(lambda self: len(self.series) < len(NAMES))
    @rule()
    def add_agent(self) -> None:
        self._add(NAMES[len(self.series)])

    @rule(data=st.data(), positive=st.booleans(), w=st.sampled_from([0.0, 0.5, 1.0, 4.0]))
    def observe(self, data: st.DataObject, positive: bool, w: float) -> None:
        agent = data.draw(st.sampled_from(sorted(self.series)))
        self.book.observe(agent, positive, w)

    @rule(
        data=st.data(),
        decision=st.sampled_from(["accept", "reject", None]),
        truth=st.sampled_from(["accept", "reject", None]),
    )
    def ballot(self, data: st.DataObject, decision: str | None, truth: str | None) -> None:
        voters = data.draw(st.lists(st.sampled_from(sorted(self.series)), unique=True))
        votes = {v: data.draw(st.sampled_from(["accept", "reject"])) for v in voters}
        self.book.record_votes(votes, decision, truth)

    @rule(k=st.integers(1, 8))
    def tick(self, k: int) -> None:
        for _ in range(k):
            before = {a: self.book.expected(a) for a in self.book.agents}
            self.book.tick()
            self._check_tick(before)

    def _check_tick(self, before: dict[str, float]) -> None:
        book, p = self.book, self.params
        now = book.round
        for agent, e in before.items():
            after = book.expected(agent)
            assert after == e, f"REP-1: tick moved E of idle {agent} from {e!r} to {after!r}"
        lo, hi, gain = micro(p.w_min), micro(p.w_max), micro(p.farm_gain)
        for agent in book.agents:
            w = book.weight_micro(agent)
            assert lo <= w <= hi, f"WEIGHT-BOUNDS: {agent} weight {w} outside [{lo}, {hi}]"
            for u, wu in self.series[agent]:
                if now - u <= p.farm_window:
                    assert w - wu <= gain, (
                        f"FARM-CAP: {agent} rose from {wu} (round {u}) to {w} (round {now}) "
                        f"> {gain} within {p.farm_window} rounds"
                    )
            self.series[agent].append((now, w))
            tier, age = book.tier(agent), now - self.joined[agent]
            assert age >= tier * p.tier1_rounds, (
                f"TIER-DWELL: {agent} at tier {tier} after {age} rounds "
                f"(needs {tier * p.tier1_rounds})"
            )
        trust = book.global_trust()
        total = sum(trust.values())
        assert math.isclose(total, 1.0, abs_tol=1e-9), f"TRUST: global trust sums to {total}"
        assert min(trust.values()) >= 0.0, "TRUST: negative global trust"


def test_reputation_stateful() -> None:
    run_machine(ReputationMachine)


@pytest.mark.parametrize(("mutant", "prop"), list(MUTANTS.values()), ids=list(MUTANTS))
@pytest.mark.budget  # holds at the ci profile's budget
@pytest.mark.mutation  # a mutant the machine must catch: make mutate, make test-slow
def test_reputation_mutant_is_caught(mutant: type[ReputationBook], prop: str) -> None:
    machine = type(f"{mutant.__name__}Machine", (ReputationMachine,), {"BOOK": mutant})
    assert_mutant_caught(machine, mutant.__name__, prop)


# --- the seeded run behind docs/img/reputation.png -------------------------------------------


def test_seeded_run_is_deterministic_and_separates() -> None:
    one = simulate(random.Random(7), rounds=80, switch=40)
    two = simulate(random.Random(7), rounds=80, switch=40)
    assert one == two
    for run in (one, simulate(random.Random(7), rounds=80, switch=40, feedback="truth")):
        honest = group_mean(run, run.expected, "honest")[-1]
        bloc = group_mean(run, run.expected, "malicious")[-1]
        assert honest > 0.7 > 0.4 > bloc
        w = group_mean(run, run.weight, "malicious")
        assert max(w) <= DEFAULTS.w_min + DEFAULTS.farm_gain


def test_founders_start_at_their_tier_and_earned_weight() -> None:
    """A founder enters at its tier (time in tier served) with its prior; its first
    weight is not held at w_min by the farming cap.  A prior below the tier's threshold
    is refused: the tier rule would demote the founder at once."""
    book = ReputationBook(DEFAULTS, pretrusted=["f"])
    book.add("f", prior=Beta(0.95, 20), tier=3)
    book.add("n")
    book.tick()
    assert book.tier("f") == 3 and book.tier("n") == 0
    assert book.weight_micro("f") > micro(DEFAULTS.w_min) + micro(DEFAULTS.farm_gain)
    assert book.weight_micro("n") == micro(DEFAULTS.w_min)
    with pytest.raises(ValueError, match="below tier 2"):
        book.add("g", prior=Beta(0.6, 10), tier=2)


def test_a_founders_time_in_tier_is_served_up_to_its_tier_only() -> None:
    """``held[j]`` counts the rounds spent at tier >= j: a tier-1 founder has served
    tier 0's and tier 1's time (``tier1_rounds``), and none at tiers 2 and 3, before the
    first tick as after it (its snapshot says so)."""
    book = ReputationBook(DEFAULTS)
    book.add("f", prior=Beta(0.95, 20), tier=1)
    served = DEFAULTS.tier1_rounds
    assert book.snapshot()["agents"]["f"]["held"] == [served, served, 0, 0]


# --- rules pinned down by code mutation (models/mutation/code/reputation.toml) -------------


def test_local_trust_holds_only_pairs_that_agree_more_than_they_disagree() -> None:
    """s_ij = max(agree − disagree, 0): a pair that agreed as often as it disagreed gives
    no trust edge (EigenTrust's satisfactory minus unsatisfactory)."""
    book = ReputationBook(agents=["a", "b"])
    book.record_votes({"a": "accept", "b": "accept"}, "accept")
    book.record_votes({"a": "accept", "b": "reject"}, "accept")
    assert book.local_trust() == {}
    book.record_votes({"a": "reject", "b": "reject"}, "reject")
    assert book.local_trust() == {("a", "b"): 1.0}


def test_the_snapshot_gives_the_weight_in_both_units() -> None:
    book = ReputationBook(agents=["a", "b"])
    book.record_votes({"a": "accept", "b": "reject"}, "accept")
    agents = book.snapshot()["agents"]
    for entry in agents.values():
        assert entry["weight"] == entry["weight_micro"] / 1_000_000
        assert entry["weight_micro"] > 0


def test_the_snapshot_is_the_whole_state_under_these_names() -> None:
    """``snapshot()`` is the book's state as JSON (docs/reputation.md): these keys, for the
    book, each agent and the EigenTrust run — a renamed key breaks every reader of it."""
    book = ReputationBook(agents=["a", "b"], pretrusted=["a"])
    book.record_votes({"a": "accept", "b": "reject"}, "accept")
    book.record_votes({"a": "accept", "b": "reject"}, "reject")
    assert book.snapshot()["agreement"] == [["a", "b", 0.0, 2.0]]  # two disagreements, counted
    book.tick()
    snap = book.snapshot()
    assert set(snap) == {"round", "feedback", "pretrusted", "agents", "agreement", "eigentrust"}
    assert (snap["round"], snap["feedback"], snap["pretrusted"]) == (1, "decision", ["a"])
    res = book.trust_result()
    assert snap["eigentrust"] == {
        "iterations": res.iterations,
        "converged": res.converged,
        "residual": res.residual,
    }
    a = snap["agents"]["a"]
    assert set(a) == {"alpha", "beta", "expected", "total", "weight", "weight_micro",
                      "weight_history", "tier", "held", "joined", "trust"}  # fmt: skip
    beta = book.beta("a")
    assert (a["alpha"], a["beta"], a["expected"], a["total"]) == (
        beta.alpha, beta.beta, beta.mean, beta.total
    )  # fmt: skip
    assert (a["tier"], a["joined"]) == (book.tier("a"), 0)
    assert a["weight_history"] == [micro(DEFAULTS.w_min), book.weight_micro("a")]
    assert a["trust"] == book.global_trust()["a"]
    assert Beta(0.75, 4.0).to_dict() == {"alpha": 3.0, "beta": 1.0, "expected": 0.75, "total": 4.0}


def test_an_agent_joining_later_records_its_round() -> None:
    book = ReputationBook(agents=["a"])
    book.tick()
    book.tick()
    book.add("b")
    assert book.snapshot()["agents"]["b"]["joined"] == 2


_W = "evidence weight must be finite and >= 0, got"
_REFUSALS: list[tuple[Any, type[Exception], str]] = [
    (lambda: Beta(1.5), ValueError, r"^Beta mean must be in \[0, 1\], got 1.5$"),
    (lambda: Beta(0.5, 1.0), ValueError, "^Beta total weight must be finite and >= 2, got 1.0$"),
    (
        lambda: Beta.from_params(1.0, 0.0),
        ValueError,
        "^Beta parameters must be positive and finite: 1.0, 0.0$",
    ),
    (lambda: Beta(0.5, 10.0).observe(True, -0.5), ValueError, f"^{_W} -0.5$"),
    (lambda: Beta(0.5, 10.0).observe(True, math.inf), ValueError, f"^{_W} inf$"),
    (lambda: decay(Beta(), 1.5), ValueError, r"^delta must be in \[0, 1\], got 1.5$"),
    (
        lambda: vote_feedback({}, decision="accept", mode="x"),
        ValueError,
        "^feedback mode must be one of .*, got 'x'$",
    ),
    (lambda: ReputationBook(feedback="x"), ValueError, "^feedback must be one of .*, got 'x'$"),
    (lambda: ReputationBook(agents=["a"]).add("a"), ValueError, "^agent 'a' already registered$"),
    (lambda: ReputationBook().add("a", tier=4), ValueError, "^tier must be in 0..3, got 4$"),
    (
        lambda: ReputationBook(agents=["a"]).tier("a", 4),
        ValueError,
        "^tier cap must be in 0..3, got 4$",
    ),
    (lambda: ReputationBook().tier("z"), KeyError, "unknown agent 'z'"),
]


@pytest.mark.parametrize(("call", "error", "message"), _REFUSALS)
def test_the_books_refusals_say_what_is_wrong(
    call: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        call()


def test_an_empty_eigentrust_is_an_empty_converged_result() -> None:
    res = eigentrust(0, [], [], [], [], 0.5)
    assert res.trust.shape == (0,) and res.trust.dtype == np.float64
    assert (res.iterations, res.converged, res.residual) == (0, True, 0.0)
    assert eigentrust(1, [], [], [], [1.0], 0.5, max_iter=1).iterations == 1  # 1 is allowed


@pytest.mark.parametrize(("src", "dst"), [([-1], [0]), ([0], [-1]), ([2], [0]), ([0], [2])])
def test_eigentrust_refuses_each_endpoint_out_of_range(src: list[int], dst: list[int]) -> None:
    with pytest.raises(ValueError, match=r"^edge endpoints must be in range\(n\)$"):
        eigentrust(2, src, dst, [1.0], [1.0, 0.0], 0.5)


def test_eigentrusts_result_is_read_only_and_pretrust_any_numbers() -> None:
    """The trust vector may be cached and shared (the book keeps it): it cannot be written.
    Pre-trust, like the weights, may be integers beyond int64."""
    res = eigentrust(2, [0], [1], [1.0], [1, 0], 0.5)
    with pytest.raises(ValueError, match="read-only"):
        res.trust[0] = 1.0
    huge = eigentrust(2, [0], [1], [1.0], [10**30, 0], 0.5)
    assert np.array_equal(res.trust, huge.trust)


def test_ballots_weigh_their_evidence_and_the_book_counts_it() -> None:
    """``record_votes``' weight is the evidence each vote carries."""
    book = ReputationBook(agents=["a", "b"])
    before = book.beta("a").total
    book.record_votes({"a": "accept", "b": "reject"}, "accept", weight=0.25)
    assert book.beta("a").total == before + 0.25
    assert vote_feedback({"a": "x"}, decision="x", weight=0.25) == [Evidence("a", True, 0.25)]


def test_eigentrust_meets_tol_only_strictly_below_it() -> None:
    """Convergence is ``residual < tol``: a residual exactly at ``tol`` is not converged
    and the iteration goes on (the bound of ``eigentrust_iteration_bound`` is for ``<``)."""
    args = (3, [0, 1, 2], [1, 2, 0], [1.0, 2.0, 1.0], [1.0, 0.0, 0.0], 0.3)
    first = eigentrust(*args, max_iter=1)
    assert first.residual > 0.0
    at = eigentrust(*args, max_iter=1, tol=first.residual)
    assert (at.iterations, at.converged) == (1, False)
    assert eigentrust(*args, tol=first.residual).iterations > 1
    assert eigentrust_iteration_bound(1.0) == 1  # a = 1: t is p after one step


def test_thresholds_are_reached_at_equality() -> None:
    """E exactly at a tier's threshold is enough: to be promoted, and for a founder to
    start at that tier; a tier-0 founder given a prior has served tier 0's time."""
    th = tier_thresholds(DEFAULTS)
    served = DEFAULTS.tier1_rounds
    state = TierState(1, (served, served, 0, 0))
    assert step_tier(state, th[2], DEFAULTS).tier == 2
    book = ReputationBook(DEFAULTS)
    book.add("f", prior=Beta(th[2], 10.0), tier=2)
    book.add("z", prior=Beta(0.9, 20.0), tier=0)
    assert book.snapshot()["agents"]["z"]["held"] == [served, 0, 0, 0]
    assert Beta().observe(True).total == PRIOR_WEIGHT + 1.0  # one observation weighs 1


def test_the_plot_takes_no_option_for_its_output_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--help`` prints the usage and writes nothing (it once wrote ``--help.png``); any
    other option is refused with exit 2."""
    monkeypatch.chdir(tmp_path)
    main(["--help"])
    assert "reputation_plot" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["-o"])
    assert exc.value.code == 2
    assert list(tmp_path.iterdir()) == []
