"""Property tests of ``ostrom.protocol.forgetting`` (docs/design.md §5) and its mutants.

The checks of FG-1, LC-SAFE-6 and FG-EXACT (the threshold decided exactly) are built by
factories that take a ``ForgetRule``: the tests run them on the real rule, and
``test_forgetting_mutant_is_caught`` runs them on each mutant of ``forgetting_mutants.py``
and requires a failure whose message starts with the property id.
"""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, assume, given, settings
from hypothesis import strategies as st

from forgetting_mutants import MUTANTS
from ostrom.protocol.agents import BARRING, MICRO, Agent, Sanction, micro
from ostrom.protocol.forgetting import (
    BLOCK_DISPUTED,
    BLOCK_HIDDEN,
    BLOCK_POPULATION,
    LEXICAL,
    MICRO2,
    RULE,
    ForgetDecision,
    ForgetRule,
    LexicalScorer,
    assess,
    blocker,
    checked_relevance,
    decay,
    decay_bound,
    decide,
    fg1_holds,
    fg1_margin,
    fg1_min_active,
    forget_candidates,
    forget_confidence,
    forget_confidence_micro,
    keep_bound,
    keep_score,
    tokens,
)
from ostrom.protocol.lifecycle import ACTIVE, DISPUTED, FORGETTABLE, RETRACTED, STATES
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import DEFAULTS, Params

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class View:
    """An artifact as ``decide`` reads it (``orchestrator.Artifact`` has the same fields)."""

    id: str
    state: str = ACTIVE
    hidden: bool = False
    forget_votes: dict[str, int] = field(default_factory=dict)


def units(lo: int = 0, hi: int = MICRO) -> st.SearchStrategy[float]:
    """Decimals with an exact micro-unit value (``micro(x)`` is the integer drawn)."""
    return st.integers(lo, hi).map(lambda k: k / MICRO)


# --- decay, keep score, confidence -------------------------------------------------------

scales = st.one_of(
    st.just(0.0), st.just(math.inf), st.floats(1e-6, 1e6, allow_nan=False, allow_infinity=False)
)
elapsed = st.one_of(st.floats(0, 1e7, allow_nan=False), st.just(math.inf), st.integers(0, 5000))


@st.composite
def decay_params(draw: st.DrawFn) -> tuple[list[float], list[float]]:
    k = draw(st.integers(1, 5))
    return draw(st.lists(scales, min_size=k, max_size=k)), draw(
        st.lists(st.floats(0, 1), min_size=k, max_size=k)
    )


@given(decay_params(), elapsed, elapsed)
def test_decay_in_range_and_non_increasing(
    sw: tuple[list[float], list[float]], e1: float, e2: float
) -> None:
    """D ∈ [0, Σγ] and D never grows with the time since the last access."""
    s, w = sw
    lo, hi = sorted((e1, e2))
    d_lo, d_hi = decay(lo, s, w), decay(hi, s, w)
    assert 0.0 <= d_hi <= d_lo <= math.fsum(w), (lo, hi, d_lo, d_hi)


def test_decay_examples() -> None:
    p = DEFAULTS
    assert decay(0, p.decay_scales, p.decay_weights) == 1.0 == decay_bound(p)
    assert decay(math.inf, p.decay_scales, p.decay_weights) == 0.0
    # docs/forgetting.md: after 10 rounds 0.5·e^-1 + 0.3·e^-0.1 + 0.2·e^-0.01
    want = 0.5 * math.exp(-1) + 0.3 * math.exp(-0.1) + 0.2 * math.exp(-0.01)
    assert decay(10, p.decay_scales, p.decay_weights) == pytest.approx(want, abs=1e-15)
    assert decay(0, (0.0,), (0.4,)) == 0.4 and decay(1, (0.0,), (0.4,)) == 0.0  # S_k = 0
    table = {1: 0.9492, 13: 0.5971, 50: 0.3756, 100: 0.2914, 1000: 0.0736, 3000: 0.0100}
    for e, d in table.items():  # the table in docs/forgetting.md
        assert round(decay(e, p.decay_scales, p.decay_weights), 4) == d
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError):
            decay(bad, p.decay_scales, p.decay_weights)  # an access in the future


forget_params = st.builds(
    lambda od, orr, th, sw: Params(
        omega_D=od, omega_R=orr, theta=th, decay_scales=tuple(sw[0]), decay_weights=tuple(sw[1])
    ),
    units(),
    units(),
    units(),
    decay_params(),
)


@given(forget_params, elapsed, st.floats(0, 1))
def test_keep_score_in_range(p: Params, e: float, r: float) -> None:
    """C = ω_D·D + ω_R·R ∈ [0, ω_D·Σγ + ω_R]."""
    c = keep_score(decay(e, p.decay_scales, p.decay_weights), r, p.omega_D, p.omega_R)
    assert 0.0 <= c <= keep_bound(p)


@given(st.floats(-1, 3, allow_nan=False), st.floats(-1, 3, allow_nan=False), units())
def test_confidence_in_unit_interval_and_monotone(k1: float, k2: float, theta: float) -> None:
    """c ∈ [0, 1]; c > 0 iff C < θ (in micro-units); a higher keep score never raises c."""
    lo, hi = sorted((k1, k2))
    c_lo, c_hi = forget_confidence_micro(lo, theta), forget_confidence_micro(hi, theta)
    assert 0 <= c_hi <= c_lo <= MICRO
    assert (c_lo > 0) == (micro(lo) < micro(theta) and micro(theta) > 0)  # θ = 0: never
    if micro(theta) > 0:
        assert forget_confidence_micro(0.0, theta) == MICRO  # nothing left to keep


def test_confidence_examples() -> None:
    assert forget_confidence_micro(0.3, 0.3) == 0  # at the threshold: keep
    assert forget_confidence_micro(0.299999, 0.3) == 3  # ⌊1·10⁶/300000⌋
    assert forget_confidence_micro(0.15, 0.3) == 500_000
    assert forget_confidence_micro(0.0, 0.0) == 0  # θ = 0: nobody ever votes


@given(forget_params, st.text(max_size=40), st.lists(st.text(max_size=40), max_size=4), elapsed)
def test_assess_end_to_end(p: Params, text: str, context: list[str], e: float) -> None:
    """The agent side: every number in range, and the command round-trips in micro-units."""
    a = assess(text, context, e, 0, p)
    assert 0.0 <= a.decay <= decay_bound(p) and 0.0 <= a.relevance <= 1.0
    assert 0.0 <= a.keep <= keep_bound(p) and 0.0 <= a.confidence <= 1.0
    assert a.forget == (micro(a.keep) < micro(p.theta))
    cmd = a.command("ag", "x")
    if a.forget:
        assert cmd is not None and micro(cmd["confidence"]) == a.confidence_micro > 0
    else:
        assert cmd is None


def test_a_plugged_scorer_out_of_range_is_refused() -> None:
    for bad in (1.5, -0.1, math.nan, math.inf):

        def scorer(text: str, context: Sequence[str], r: float = bad) -> float:
            return r

        with pytest.raises(ValueError):
            assess("t", ["t"], 1, 0, DEFAULTS, scorer)
    assert assess("t", [], 1, 0, DEFAULTS, lambda t, c: 1).relevance == 1.0


def test_assess_example_from_docs() -> None:
    """docs/forgetting.md: never relevant (R = 0), last read 13 rounds ago -> votes forget."""
    keep12 = assess("tram map Lyon", ["population of Paris"], 12, 0, DEFAULTS)
    keep13 = assess("tram map Lyon", ["population of Paris"], 13, 0, DEFAULTS)
    assert keep12.relevance == 0.0 and not keep12.forget
    assert keep13.forget and keep13.confidence_micro == 4813
    fresh_relevant = assess("population of Paris", ["Population of Paris?"], 10**6, 0, DEFAULTS)
    assert fresh_relevant.relevance == 1.0 and not fresh_relevant.forget  # C >= 0.5·R
    text, context = "Paris population 2.1 million", ["population of Paris", "weather in Lyon"]
    at20, at100 = (assess(text, context, t, 0, DEFAULTS) for t in (20, 100))
    assert round(at20.relevance, 4) == 0.2499 and round(at20.keep, 4) == 0.3796
    assert not at20.forget and micro(at100.keep) == 270605 and at100.confidence == 0.097983


# --- the lexical scorer ----------------------------------------------------------------------

words = st.text(alphabet="abcdeé ÉXY.,-_1", max_size=30)


@given(words, st.lists(words, max_size=5), st.randoms(use_true_random=False))
def test_lexical_scorer_is_deterministic_and_in_range(
    text: str, context: list[str], rnd: Any
) -> None:
    """Same inputs, same bits; the order of the context items does not matter either."""
    for scorer in (LEXICAL, LexicalScorer(idf=False)):
        r = scorer(text, context)
        assert 0.0 <= r <= 1.0
        assert scorer(text, list(context)) == r
        shuffled = list(context)
        rnd.shuffle(shuffled)
        assert scorer(text, shuffled) == r
        if tokens(text):
            assert scorer(text, [text]) == 1.0
        assert scorer(text, []) == 0.0


def test_lexical_scorer_examples() -> None:
    assert LEXICAL("Paris, population!", ["paris population"]) == 1.0  # case and punctuation
    assert LEXICAL("STRASSE", ["straße"]) == 1.0  # casefold
    assert LEXICAL("tram map of Lyon", ["population of Paris"]) > 0.0  # "of" is shared
    assert LEXICAL("tram map Lyon", ["population Paris"]) == 0.0
    assert LEXICAL("", ["anything"]) == 0.0


_CASES = [
    ("Paris population 2.1 million", ["population of Paris", "weather in Lyon"]),
    ("Ünïcode Straße 東京 tokens", ["strasse", "東京 tokens tokens"]),
    ("a b c d e f g", ["g f e", "d c", "b a a a"]),
]


def test_lexical_scorer_does_not_depend_on_the_hash_seed() -> None:
    """Bit-identical results in fresh interpreters with different ``PYTHONHASHSEED``."""
    script = (
        "from ostrom.protocol.forgetting import LEXICAL\n"
        f"for t, c in {_CASES!r}: print(repr(LEXICAL(t, c)))\n"
    )
    here = "\n".join(repr(LEXICAL(t, c)) for t, c in _CASES)
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT / "reference")}
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.strip() == here


# --- FG-1 -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fg1Case:
    params: Params
    agents: tuple[Agent, ...]
    voter: str
    confidence: int  # micro
    stale: tuple[str, ...]  # barred agents whose earlier votes are still recorded


@st.composite
def fg1_params(draw: st.DrawFn) -> Params:
    w_min = draw(units(10_000, MICRO))  # (0.01 .. 1]
    rho = draw(st.integers(1, 30))
    w_max = draw(st.sampled_from([w_min, min(100.0, w_min * rho)]))
    return Params(alpha=draw(units(50_000, MICRO)), w_min=w_min, w_max=w_max)


@st.composite
def fg1_cases(draw: st.DrawFn, relation_holds: bool = True) -> Fg1Case:
    """One active voter in a population of n active agents (+ barred ones).

    With ``relation_holds``: n is at least ``fg1_min_active`` (FG-1's relation holds for
    n); the others default to ``w_min`` (the worst case), a few are drawn freely.
    """
    p = draw(fg1_params())
    lo, hi = micro(p.w_min), micro(p.w_max)
    n_min = fg1_min_active(p)
    assert n_min is not None  # alpha > 0 and w_min > 0 here
    n = n_min + draw(st.integers(0, 20)) if relation_holds else draw(st.integers(1, 40))
    assume(n <= 400)
    weight = st.one_of(st.just(hi), st.just(lo), st.integers(lo, hi))
    voter_w = draw(weight)
    free = draw(st.lists(weight, max_size=min(8, n - 1)))
    others = free + [lo] * (n - 1 - len(free))
    agents = [Agent("v", draw(st.sampled_from([0, 1, 3])), voter_w / MICRO)]
    agents += [Agent(f"o{i}", draw(st.integers(0, 3)), w / MICRO) for i, w in enumerate(others)]
    n_barred = draw(st.integers(0, 3))
    agents += [
        Agent(f"b{i}", 3, p.w_max, sanction=draw(st.sampled_from(sorted(BARRING))))
        for i in range(n_barred)
    ]
    stale = tuple(f"b{i}" for i in range(n_barred) if draw(st.booleans()))
    conf = draw(st.one_of(st.just(MICRO), st.integers(0, MICRO)))
    return Fg1Case(p, tuple(agents), "v", conf, stale)


def fg1_check(rule: ForgetRule) -> Callable[[], None]:
    """FG-1: when the relation holds for the active population, no single vote forgets."""

    @given(fg1_cases())
    def check(case: Fg1Case) -> None:
        votes = {case.voter: case.confidence, **dict.fromkeys(case.stale, MICRO)}
        [d] = decide([View("x", forget_votes=votes)], case.agents, case.params, rule)
        assert not d.forget, (
            f"FG-1: one agent forgot alone: S={d.score / MICRO2} >= Q={d.quorum / MICRO2} "
            f"with {sum(not a.barred for a in case.agents)} active agents, {case.params.alpha=}, "
            f"{case.params.w_min=}, {case.params.w_max=}"
        )

    return check


def test_fg1_no_single_agent_forgets() -> None:
    fg1_check(RULE)()


@given(fg1_cases(relation_holds=False))
def test_fg1_for_every_population_with_the_min_active_guard(case: Fg1Case) -> None:
    """With ``min_active = fg1_min_active(params)`` no population size is exempt: below it
    nothing is forgotten (blocked ``too_few_active``), from it on the relation holds."""
    n_min = fg1_min_active(case.params)
    votes = {case.voter: case.confidence, **dict.fromkeys(case.stale, MICRO)}
    [d] = decide([View("x", forget_votes=votes)], case.agents, case.params, min_active=n_min)
    assert not d.forget, f"FG-1: {d} with min_active={n_min}"
    active = sum(not a.barred for a in case.agents)
    assert (d.blocked == BLOCK_POPULATION) == (n_min is not None and active < n_min)


@given(fg1_params(), st.integers(1, 200))
def test_fg1_relation_is_exact(p: Params, n: int) -> None:
    """The relation is necessary too: where it fails, a witness population lets one agent
    (at w_max, confidence 1, the others at w_min) forget alone; fg1_min_active is the
    first n from which it holds; the textbook α·N·w_min > w_max is only sufficient."""
    holds = fg1_holds(p, n)
    alpha, lo, hi = p.alpha, p.w_min, p.w_max
    assert holds == (micro(hi) * (MICRO - micro(alpha)) < micro(alpha) * (n - 1) * micro(lo))
    agents = [Agent("v", 1, hi)] + [Agent(f"o{i}", 0, hi) for i in range(n - 1)]
    [d] = decide([View("x", forget_votes={"v": MICRO})], agents, p)
    assert d.forget == (not holds), d
    n_min = fg1_min_active(p)
    assert n_min is not None and fg1_holds(p, n_min) and (n_min == 1 or not fg1_holds(p, n_min - 1))
    assert holds == (n >= n_min)
    if micro(alpha) * n * micro(lo) > micro(hi) * MICRO:  # sufficient condition
        assert holds


@given(fg1_params(), st.lists(st.tuples(st.integers(0, 3), st.integers(0, MICRO)), max_size=12))
def test_fg1_margin_decides_each_population(p: Params, raw: list[tuple[int, int]]) -> None:
    """For a given active population: no single voter forgets iff fg1_margin > 0, and the
    heaviest agent voting with confidence 1 is the one that shows it."""
    lo, hi = micro(p.w_min), micro(p.w_max)
    agents = [
        Agent(f"a{i}", t, (lo + k * (hi - lo) // MICRO) / MICRO) for i, (t, k) in enumerate(raw)
    ]
    weights = RULE.weights(agents, p.w_min)
    margin = fg1_margin(weights, p.alpha)
    for a in agents:
        [d] = decide([View("x", forget_votes={a.id: MICRO})], agents, p)
        assert not (d.forget and margin > 0), (a, d, margin)
    if agents and margin <= 0:
        heaviest = max(agents, key=lambda a: weights[a.id])
        [d] = decide([View("x", forget_votes={heaviest.id: MICRO})], agents, p)
        assert d.forget


def _fast_tracked(agents: Sequence[Agent], params: Params = DEFAULTS) -> Orchestrator:
    o = Orchestrator(params, agents)
    submitter = next(a.id for a in agents if a.tier >= 1 and not a.barred)
    assert o.apply({"op": "propose", "agent": submitter, "artifact": "x", "slot": "s",
                    "digest": "d"})["result"] == "ok"  # fmt: skip
    for _ in range(params.T_fast):
        o.apply({"op": "tick"})
    assert o.state_of("x") == ACTIVE
    return o


UNGUARDED = dataclasses.replace(DEFAULTS, min_active_agents=1)


@pytest.mark.parametrize(
    ("n", "params", "forgotten"),
    [(11, UNGUARDED, True), (12, UNGUARDED, False), (11, DEFAULTS, False), (12, DEFAULTS, False)],
    ids=["11-unguarded", "12-unguarded", "11-defaults", "12-defaults"],
)
def test_fg1_through_the_orchestrator(n: int, params: Params, forgotten: bool) -> None:
    """The check can fail: without the population guard (min_active_agents = 1) at the
    default weights, with 11 active agents (one at w_max = 1.0, ten newcomers at w_min =
    0.1), Q = 0.5·(1.0 + 10·0.1) = 1.0 and one vote of weight 1.0 forgets alone; with 12,
    Q = 1.05 and it does not.  At the defaults (min_active_agents = 12 = fg1_min_active)
    the decision waits at 11, so no single agent forgets (FG-1)."""
    agents = [Agent("heavy", 1, 1.0)] + [Agent(f"new{i}", 0, 0.1) for i in range(n - 1)]
    assert fg1_holds(params, n) is (n >= 12) and fg1_min_active(params) == 12
    o = _fast_tracked(agents, params)
    assert o.apply({"op": "forget_vote", "agent": "heavy", "artifact": "x"})["result"] == "ok"
    [d] = decide(
        [View("x", forget_votes={"heavy": MICRO})],
        o.agents.values(),
        params,
        min_active=params.min_active_agents,
    )
    assert (d.score, d.quorum) == (MICRO2, (n + 9) * MICRO2 // 20)
    o.apply({"op": "tick"})
    assert (o.state_of("x") == "forgotten") is forgotten is d.forget


def test_zero_quorum_needs_a_positive_score() -> None:
    """α = 0 makes Q = 0: a vote of confidence 0 (or a barred agent's stale vote) must not
    forget; any positive vote does, so FG-1 holds for no population size."""
    p = Params(alpha=0.0)
    agents = [Agent("a", 1, 1.0), Agent("b", 1, 1.0), Agent("z", 1, 1.0, sanction=Sanction.BANNED)]
    zero, stale, one = (
        decide([View("x", forget_votes=v)], agents, p)[0]
        for v in ({"a": 0}, {"z": MICRO}, {"a": 1})
    )
    assert not zero.reached and not stale.reached and one.forget
    assert fg1_min_active(p) is None and not fg1_holds(p, 1000)


# --- LC-SAFE-6 --------------------------------------------------------------------------------

lc6_views = st.lists(
    st.builds(View, st.just(""), st.sampled_from(STATES), st.booleans()), min_size=1, max_size=8
)


def lc_safe_6_check(rule: ForgetRule) -> Callable[[], None]:
    """LC-SAFE-6: never a candidate, never forgotten, while disputed or hidden under review —
    even when every active agent votes forget with confidence 1."""

    @given(lc6_views)
    def check(views: list[View]) -> None:
        agents = [Agent(f"a{i}", 1, 1.0) for i in range(5)]
        for i, v in enumerate(views):
            v.id = f"x{i}"
            v.forget_votes = {a.id: MICRO for a in agents}
        candidates = set(forget_candidates(views, rule))
        decisions = {d.artifact: d for d in decide(views, agents, DEFAULTS, rule)}
        for v in views:
            under_review = v.state == DISPUTED or (v.hidden and v.state != RETRACTED)
            ends = v.id in candidates or decisions[v.id].forget
            assert not (under_review and ends), f"LC-SAFE-6: {v} would be forgotten"
            assert (v.id in candidates) == decisions[v.id].forget  # one rule for both

    return check


def test_lc_safe_6_never_forget_disputed_or_hidden() -> None:
    lc_safe_6_check(RULE)()


def test_lc_safe_6_is_not_vacuous() -> None:
    """Witness: every forgettable state, not hidden (and retracted even if hidden), is a
    candidate, so the filter is not simply empty."""
    views = [View(s, s) for s in sorted(FORGETTABLE)] + [View("rh", RETRACTED, hidden=True)]
    assert forget_candidates(views) == [v.id for v in views]
    assert blocker(DISPUTED, False) == BLOCK_DISPUTED
    assert blocker(ACTIVE, True) == BLOCK_HIDDEN


def test_lc_safe_6_urgent_report_through_the_orchestrator() -> None:
    """An urgent report hides the artifact and opens a dispute: votes are recorded, the
    score reaches Q, and still nothing is forgotten until the dispute closes."""
    agents = [Agent(f"t{i}", 2, 1.0) for i in range(10)]
    o = _fast_tracked(agents)
    rep = {"op": "urgent_report", "agent": "t9", "artifact": "x", "reason": "harmful"}
    assert o.apply(rep)["result"] == "ok"
    for a in agents:
        assert o.apply({"op": "forget_vote", "agent": a.id, "artifact": "x"})["result"] == "ok"
    view = View("x", DISPUTED, True, {a.id: MICRO for a in agents})
    [d] = decide([view], o.agents.values(), DEFAULTS)
    assert d.reached and d.blocked == BLOCK_DISPUTED and not d.forget
    assert forget_candidates([view]) == []
    o.apply({"op": "tick"})
    assert o.state_of("x") == DISPUTED


# --- FG-EXACT: the threshold in integers ------------------------------------------------------


@st.composite
def threshold_cases(draw: st.DrawFn) -> tuple[Params, list[Agent], dict[str, int]]:
    """S = Q exactly: voters L with confidence 1, plus k − 1 copies of L who do not vote,
    α = 1/k (k divides 10⁶, so α is exact in micro-units)."""
    k = draw(st.sampled_from([2, 4, 5, 8, 10]))
    lo = draw(units(1, MICRO // 2))
    ws = draw(st.lists(units(micro(lo), MICRO), min_size=1, max_size=6))
    p = Params(alpha=1 / k, w_min=lo, w_max=1.0)
    agents = [Agent(f"c{c}v{i}", 1, w) for c in range(k) for i, w in enumerate(ws)]
    return p, agents, {f"c0v{i}": MICRO for i in range(len(ws))}


def exact_check(rule: ForgetRule) -> Callable[[], None]:
    """FG-EXACT: S ≥ Q is decided on integers: at S = Q it forgets, one micro-unit of
    confidence less and it does not (floats would disagree on some of these)."""

    @given(threshold_cases())
    def check(case: tuple[Params, list[Agent], dict[str, int]]) -> None:
        p, agents, votes = case
        [at] = decide([View("x", forget_votes=votes)], agents, p, rule)
        below = dict(votes, c0v0=MICRO - 1)
        [under] = decide([View("x", forget_votes=below)], agents, p, rule)
        assert at.score == at.quorum, "test construction"
        assert at.forget and not under.forget, f"FG-EXACT: S=Q gives {at}, S<Q gives {under}"

    return check


def test_threshold_is_exact_in_micro_units() -> None:
    exact_check(RULE)()


# --- the orchestrator executes exactly decide's decisions ---------------------------------------


@st.composite
def registries(
    draw: st.DrawFn,
) -> tuple[Params, list[Agent], dict[str, float], dict[str, Sanction]]:
    w_min = draw(units(1, MICRO // 2))
    w_max = draw(units(micro(w_min), 2 * MICRO))
    n = draw(st.integers(1, 10))
    p = Params(
        T_fast=1,
        alpha=draw(units(1, MICRO)),
        w_min=w_min,
        w_max=w_max,
        min_active_agents=draw(st.integers(1, n + 1)),
    )
    agents = [
        Agent(
            f"a{i}",
            1 if i == 0 else draw(st.integers(0, 3)),
            draw(units(micro(w_min), micro(w_max))),
        )
        for i in range(n)
    ]
    votes = {a.id: draw(units()) for a in agents if draw(st.booleans())}
    sanctions = {
        a.id: draw(st.sampled_from(list(Sanction))) for a in agents[1:] if draw(st.booleans())
    }
    return p, agents, votes, sanctions


@given(registries())
def test_decide_agrees_with_the_orchestrator(
    case: tuple[Params, list[Agent], dict[str, float], dict[str, Sanction]],
) -> None:
    """``decide`` on the recorded votes predicts the orchestrator's forget at the tick:
    barred voters, tier-0 weights and the population guard included.  The orchestrator
    calls ``decide`` itself, so this checks its bookkeeping around it (the forget watch
    is re-evaluated after ``set_agent``; votes are recorded as given)."""
    p, agents, votes, sanctions = case
    o = _fast_tracked(agents, p)
    for a, c in votes.items():
        assert (
            o.apply({"op": "forget_vote", "agent": a, "artifact": "x", "confidence": c})["result"]
            == "ok"
        )
    by_id = {a.id: a for a in agents}
    for a, s in sanctions.items():
        o.apply({"op": "set_agent", "agent": a, "tier": by_id[a].tier, "sanction": s})
    view = View("x", ACTIVE, False, {a: micro(c) for a, c in votes.items()})
    [d] = decide([view], o.agents.values(), p, min_active=p.min_active_agents)
    assert d.quorum > 0
    o.apply({"op": "tick"})
    assert (o.state_of("x") == "forgotten") == d.forget, d


# --- the mutants ------------------------------------------------------------------------------

CHECKS: Mapping[str, Callable[[ForgetRule], Callable[[], None]]] = {
    "FG-1": fg1_check,
    "LC-SAFE-6": lc_safe_6_check,
    "FG-EXACT": exact_check,
}


@pytest.mark.parametrize(("mutant", "prop"), list(MUTANTS.values()), ids=list(MUTANTS))
@pytest.mark.budget  # holds at the ci profile's budget
@pytest.mark.mutation  # a mutant the machine must catch: make mutate, make test-slow
def test_forgetting_mutant_is_caught(mutant: type[ForgetRule], prop: str) -> None:
    check = settings(
        phases=[Phase.explicit, Phase.generate],
        report_multiple_bugs=False,
        max_examples=max(1000, settings().max_examples),
    )(CHECKS[prop](mutant()))
    with pytest.raises(AssertionError) as caught:
        check()
    assert str(caught.value).startswith(prop + ":"), str(caught.value)[:2000]


# --- rules pinned down by code mutation (models/mutation/code/forgetting.toml) -------------


def test_the_forget_command_is_the_documented_command() -> None:
    """An agent's vote is a ``forget_vote`` command (schema/command.schema.json) with its
    confidence as a number in [0, 1] whose micro-units are the assessment's."""
    a = assess("unrelated words", ["other", "topic"], 1_000, 0, DEFAULTS)
    assert a.forget
    assert a.command("ag", "x") == {
        "op": "forget_vote",
        "agent": "ag",
        "artifact": "x",
        "confidence": a.confidence_micro / MICRO,
    }


def test_elapsed_counts_from_the_last_access() -> None:
    """``D`` decays with the rounds since the last access, ``now − last_access``: an
    artifact read in round 90 is ten rounds old in round 100, not a hundred and ninety."""
    a = assess("t", ["t"], 100, 90, DEFAULTS)
    assert a.elapsed == 10
    assert a.decay == decay(10, DEFAULTS.decay_scales, DEFAULTS.decay_weights)
    with pytest.raises(ValueError, match=r"^elapsed time must be >= 0 rounds, got -10$"):
        assess("t", ["t"], 90, 100, DEFAULTS)


def test_no_vote_at_the_threshold_and_the_unit_confidence() -> None:
    """``C < θ`` (micro-units): a keep score exactly at θ casts no vote; ``c`` is 1 at
    ``C = 0`` and its float form is the micro-units over 10^6."""
    assert forget_confidence_micro(0.3, 0.3) == 0
    assert forget_confidence_micro(0.299999, 0.3) == 3  # ⌊1·10^6 / 300000⌋
    assert forget_confidence_micro(0.0, 0.3) == MICRO
    assert forget_confidence(0.15, 0.3) == 0.5
    assert forget_confidence(0.3, 0.3) == 0.0


@pytest.mark.parametrize("bad", [True, False, "0.5", None, 1.5, -0.1])
def test_relevance_must_be_a_number_in_range(bad: Any) -> None:
    """A plugged-in scorer's result: a bool is not a number here, nor is a string."""
    with pytest.raises(ValueError, match=r"^relevance must be a number in \[0, 1\], got "):
        checked_relevance(bad)
    assert checked_relevance(0) == 0.0 and checked_relevance(1) == 1.0


def test_decay_refuses_mismatched_scales_and_weights() -> None:
    with pytest.raises(ValueError, match=r"^decay_scales and decay_weights must have the same"):
        decay(1, (10.0, 100.0), (1.0,))


def test_a_forget_decision_as_json_has_both_units() -> None:
    """``to_dict`` is what logs and demos print: S and Q in micro² and in weight units."""
    d = ForgetDecision("x", ACTIVE, 3 * MICRO2 // 2, MICRO2, 2, True, None)
    assert d.to_dict() == {
        "artifact": "x",
        "state": ACTIVE,
        "score_micro2": 3 * MICRO2 // 2,
        "quorum_micro2": MICRO2,
        "score": 1.5,
        "quorum": 1.0,
        "voters": 2,
        "reached": True,
        "blocked": None,
        "forget": True,
    }
    assert ForgetDecision("x", DISPUTED, 1, 0, 1, True, BLOCK_DISPUTED).to_dict()["forget"] is False


def test_the_smallest_vote_meets_a_zero_quorum() -> None:
    """``S > 0`` and ``S ≥ Q``: with Q = 0 any vote of positive weight and confidence,
    however small (1 micro²), is reached; a vote of confidence 0 is not."""
    assert RULE.tally({"a": 1}, {"a": 1}, 0.0) == (1, 0, True)
    assert RULE.tally({"a": 0}, {"a": 1}, 0.0) == (0, 0, False)


@pytest.mark.parametrize(("text", "context"), [("", ["words here"]), ("words here", []),
                                               ("words", [""]), ("", [])])  # fmt: skip
def test_nothing_to_compare_is_irrelevant(text: str, context: list[str]) -> None:
    """An empty text or an empty context has relevance 0 (no division by a zero norm)."""
    assert LEXICAL(text, context) == 0.0
    assert LexicalScorer(idf=False)(text, context) == 0.0


def test_fg1_at_the_edges_of_the_weights() -> None:
    """FG-1's closed forms where the weights vanish or are one micro-unit: nobody to
    forget alone with no agent or no weight; a lone agent of any positive weight is its
    own quorum; the smallest safe population at w_min = w_max = 10^-6 (α 0.5) is 3."""
    zero = Params(w_max=0.0, w_min=0.0)
    tiny = Params(w_max=1e-6, w_min=1e-6)
    assert fg1_holds(DEFAULTS, 0) and fg1_holds(zero, 1) and fg1_holds(zero, 50)
    assert not fg1_holds(tiny, 1) and not fg1_holds(tiny, 2) and fg1_holds(tiny, 3)
    assert fg1_min_active(zero) == 1 and fg1_min_active(tiny) == 3
    assert fg1_min_active(Params(w_min=0.0)) is None
    # the margin Q − max w·10^6 (micro²); with no positive weight, Q + 1
    assert fg1_margin({}, 0.5) == 1 and fg1_margin({"a": 0, "b": 0}, 0.5) == 1
    assert fg1_margin({"a": 1}, 0.5) == micro(0.5) * 1 - MICRO
    assert fg1_margin({"a": 1, "b": 1, "c": 1}, 0.5) == micro(0.5) * 3 - MICRO


BAD_DECAY = [((-1.0,), (1.0,)), ((math.nan,), (1.0,)), ((10.0,), (-0.5,)), ((10.0,), (math.nan,))]


@pytest.mark.parametrize(("scales", "weights"), BAD_DECAY)
def test_decay_refuses_a_negative_or_nan_scale_or_weight(
    scales: tuple[float, ...], weights: tuple[float, ...]
) -> None:
    with pytest.raises(ValueError, match=r"^decay scale .* and weight .* must be >= 0$"):
        decay(1.0, scales, weights)
