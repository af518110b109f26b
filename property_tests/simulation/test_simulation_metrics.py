"""The simulation's metrics (``ostrom.simulation.metrics``) on hand-computed cases, and
against independent formulas with Hypothesis.

* precision / recall: the ratios, and NaN exactly when the denominator is empty;
* Gini: 0 for equal values, (n-1)/n for one holder, 1/4 for [1, 2, 3, 4] (worked out in
  the test), refused for negatives, and equal on random arrays to the definition it
  claims (mean absolute difference over all ordered pairs / twice the mean);
* false-positive rate: σ2 and above count, warnings and quarantine do not;
* ``Tracker``: a Hypothesis sequence of state changes, with the counts recomputed from
  the test's own record of every artifact's last state after each change.

Functions are reached through the module, so a monkeypatched implementation is the one
under test.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.protocol import lifecycle
from ostrom.simulation import metrics as m

# --- precision and recall ------------------------------------------------------------------


def test_precision_cases() -> None:
    assert m.precision(3, 4) == 0.75
    assert m.precision(0, 5) == 0.0
    assert m.precision(7, 7) == 1.0
    assert math.isnan(m.precision(0, 0))


def test_recall_cases() -> None:
    assert m.recall(2, 5) == 0.4
    assert m.recall(0, 3) == 0.0
    assert m.recall(4, 4) == 1.0
    assert math.isnan(m.recall(0, 0))


@given(st.integers(0, 1000), st.integers(0, 1000))
def test_precision_and_recall_are_the_ratios(a: int, b: int) -> None:
    num, den = min(a, b), max(a, b)
    for f in (m.precision, m.recall):
        v = f(num, den)
        if den == 0:
            assert math.isnan(v)
        else:
            assert v == num / den
            assert 0.0 <= v <= 1.0


# --- Gini ----------------------------------------------------------------------------------


def gini_mad(x: list[float]) -> float:
    """The definition: Σᵢ Σⱼ |xᵢ − xⱼ| / (2 n² mean)."""
    n = len(x)
    total = sum(x)
    if total == 0:
        return 0.0
    mad = sum(abs(a - b) for a in x for b in x)
    return mad / (2 * n * total)


def test_gini_hand_computed() -> None:
    # [1, 2, 3, 4]: |differences| over ordered pairs = 2 · (1+2+3+1+2+1) = 20;
    # 20 / (2 · 4² · 2.5) = 0.25
    assert m.gini([1, 2, 3, 4]) == pytest.approx(0.25, abs=1e-12)
    assert m.gini([4, 3, 2, 1]) == pytest.approx(0.25, abs=1e-12)  # order does not matter
    # [0, 0, 1]: 2 · (0+1+1) = 4; 4 / (2 · 9 · 1/3) = 2/3
    assert m.gini([0, 0, 1]) == pytest.approx(2 / 3, abs=1e-12)
    # [1, 3]: 2 · 2 = 4; 4 / (2 · 4 · 2) = 0.25
    assert m.gini([1, 3]) == pytest.approx(0.25, abs=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 100])
def test_gini_extremes(n: int) -> None:
    assert m.gini([0.6] * n) == pytest.approx(0.0, abs=1e-12)
    assert m.gini([0.0] * n) == 0.0
    assert m.gini([0.0] * (n - 1) + [5.0]) == pytest.approx((n - 1) / n, abs=1e-12)


def test_gini_of_equal_values_is_exactly_zero() -> None:
    # the docstring promises 0; the rank formula gives ±2.2e-16 (e.g. 30 × 0.6, the
    # founders' reputation in every run's first round, gives -2.2e-16: a negative Gini)
    assert m.gini([0.6] * 30) == 0.0
    assert all(m.gini([v] * n) == 0.0 for n in range(1, 60) for v in (0.1, 0.6, 1 / 3))


def test_gini_refuses_negatives_and_is_nan_when_empty() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        m.gini([1.0, -0.1, 2.0])
    assert math.isnan(m.gini([]))
    assert m.gini(v for v in (1.0, 2.0, 3.0, 4.0)) == pytest.approx(0.25)  # any iterable


values = st.lists(
    st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False), min_size=1, max_size=40
)


@given(values)
def test_gini_is_the_mean_absolute_difference_formula(x: list[float]) -> None:
    g = m.gini(x)
    assert g == pytest.approx(gini_mad(x), abs=1e-9)
    assert -1e-12 <= g <= (len(x) - 1) / len(x) + 1e-9


@given(values, st.floats(0.01, 1000.0), st.randoms(use_true_random=False))
def test_gini_is_scale_and_order_invariant(x: list[float], k: float, rnd: random.Random) -> None:
    g = m.gini(x)
    y = [v * k for v in x]
    rnd.shuffle(y)
    assert m.gini(y) == pytest.approx(g, abs=1e-9)


def test_gini_matches_numpy_on_reputation_like_arrays() -> None:
    rng = np.random.default_rng(7)
    for _ in range(50):
        x = rng.beta(2, 2, size=int(rng.integers(2, 120))).tolist()
        assert m.gini(x) == pytest.approx(gini_mad(x), abs=1e-9)


# --- sanction false-positive rate ----------------------------------------------------------


def test_false_positive_rate_counts_sigma2_and_above_only() -> None:
    kinds = {f"h{i}": "honest" for i in range(8)} | {
        "b0": "broken",
        "b1": "broken",
        "m": "malicious",
    }
    worst = {
        "h0": "none",
        "h1": "warned",  # σ1: not a punishment
        "h2": "quarantined",  # protection, not a sanction
        "h3": "rate_limited",  # σ2
        "h4": "suspended",  # σ3
        "h5": "banned",  # σ4
        # h6 is missing: never sanctioned
        "h7": "none",
        "b0": "quarantined",
        "b1": "banned",
        "m": "banned",
    }
    assert m.false_positive_rate(kinds, worst) == pytest.approx(3 / 8)
    assert m.false_positive_rate(kinds, worst, of="broken") == pytest.approx(1 / 2)
    assert m.false_positive_rate(kinds, worst, of="malicious") == 1.0
    assert math.isnan(m.false_positive_rate(kinds, worst, of="lazy"))
    assert m.false_positive_rate(kinds, dict.fromkeys(kinds, "quarantined")) == 0.0
    assert m.false_positive_rate(kinds, dict.fromkeys(kinds, "warned")) == 0.0
    assert m.false_positive_rate(kinds, dict.fromkeys(kinds, "rate_limited")) == 1.0
    assert m.false_positive_rate(kinds, {}) == 0.0


def test_punished_levels_are_sigma2_and_above() -> None:
    from ostrom.protocol.agents import Sanction

    levels = {s.value for s in Sanction}
    punished = set(m.PUNISHED)
    assert punished <= levels
    assert punished == {"rate_limited", "suspended", "banned"}
    assert "quarantined" in levels and "quarantined" not in punished


# --- Tracker -------------------------------------------------------------------------------


def test_tracker_stable_states_are_the_lifecycle_ones() -> None:
    assert m.STABLE == lifecycle.STABLE


ARTS = [f"x{i}" for i in range(6)]


@given(
    st.lists(st.booleans(), min_size=len(ARTS), max_size=len(ARTS)),
    st.lists(st.tuples(st.sampled_from(ARTS), st.sampled_from(lifecycle.STATES)), max_size=60),
)
def test_tracker_counts_match_a_recount(
    good_flags: list[bool], changes: list[tuple[str, str]]
) -> None:
    good = dict(zip(ARTS, good_flags, strict=True))
    t = m.Tracker(good)
    mine: dict[str, str] = {}
    for x, s in changes:
        t.set(x, s)
        mine[x] = s
        active = [a for a, v in mine.items() if v == "active"]
        settled = [a for a, v in mine.items() if v in lifecycle.STABLE]
        assert t.state == mine
        assert t.active == len(active)
        assert t.active_good == sum(good[a] for a in active)
        assert t.settled == len(settled)
        assert t.good_settled == sum(good[a] for a in settled)
        exp_p = m.precision(t.active_good, t.active)
        assert t.precision == exp_p or (math.isnan(t.precision) and math.isnan(exp_p))
        if active:
            assert t.precision == sum(good[a] for a in active) / len(active)
        if any(good[a] for a in settled):
            assert t.recall == sum(good[a] for a in active) / sum(good[a] for a in settled)
        else:
            assert math.isnan(t.recall)


def test_tracker_hand_sequence() -> None:
    t = m.Tracker({"g1": True, "g2": True, "b1": False})
    t.set("g1", "proposed")
    t.set("b1", "proposed")
    assert (t.active, t.settled) == (0, 0)
    assert math.isnan(t.precision) and math.isnan(t.recall)
    t.set("g1", "active")
    t.set("b1", "active")
    assert t.precision == 0.5 and t.recall == 1.0
    t.set("g2", "rejected")
    assert t.recall == 0.5 and t.settled == 3
    t.set("b1", "disputed")  # back under review: counts in neither
    assert t.precision == 1.0 and t.settled == 2
    t.set("b1", "retracted")
    t.set("g1", "active")  # no change
    assert (t.active, t.active_good, t.settled, t.good_settled) == (1, 1, 3, 2)
    t.set("g1", "forgotten")
    assert math.isnan(t.precision) and t.recall == 0.0
