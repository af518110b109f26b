"""REP-1: decay leaves an inactive agent's expected reputation unchanged."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import z3

from ostrom.protocol.agents import MICRO, micro
from ostrom.protocol.params import Params
from ostrom.verify.thresholds.result import Status, TheoremResult
from ostrom.verify.thresholds.solver import (
    _check,
    _Claim,
    _general,
    _optimum,
    _range_words,
    _rng,
    _val,
)
from ostrom.verify.thresholds.words import _dec, _num

__all__ = ["DecayRule", "beta_decay", "plain_decay", "plain_rule", "rep_1", "repaired_rule"]


def beta_decay(alpha: Fraction, beta: Fraction, delta: Fraction) -> tuple[Fraction, Fraction]:
    """One round of the decay rule REP-1 is proved for, in exact arithmetic.

    Both Beta parameters — evidence *and* prior: alpha = r+1, beta = s+1 — are scaled by
    the same factor k, so E = alpha/(alpha+beta) cannot move: k = 1 − δ, unless that would
    leave alpha+beta < 2 (less weight than the uniform prior), in which case
    k = 2/(alpha+beta) and the pair is rescaled to sum 2.  Computing the floor from the
    pre-decay values keeps it defined at δ = 1.  ``ostrom.protocol.reputation.decay`` implements
    this rule (stored as mean and total weight); decayed pseudo-counts may fall below the prior's
    1, so the state is (alpha, beta), not (r, s).
    """
    k = 1 - delta if (1 - delta) * (alpha + beta) >= 2 else 2 / (alpha + beta)
    return k * alpha, k * beta


def plain_decay(r: Fraction, s: Fraction, delta: Fraction) -> tuple[Fraction, Fraction]:
    """The paper's rule: only the evidence decays, r' = (1−δ)r, s' = (1−δ)s."""
    return (1 - delta) * r, (1 - delta) * s


DecayRule = Callable[[Any, Any, Any], tuple[Any, Any]]


def repaired_rule(a: Any, b: Any, d: Any) -> tuple[Any, Any]:
    """``beta_decay`` on Z3 reals: (alpha, beta, δ) → (alpha', beta')."""
    k = z3.If((1 - d) * (a + b) >= 2, 1 - d, 2 / (a + b))
    return k * a, k * b


def plain_rule(a: Any, b: Any, d: Any) -> tuple[Any, Any]:
    """The paper's rule in Beta parameters: alpha' − 1 = (1−δ)(alpha − 1), same for beta."""
    return (1 - d) * (a - 1) + 1, (1 - d) * (b - 1) + 1


def rep_1(params: Params | None = None, *, rule: DecayRule = repaired_rule) -> list[TheoremResult]:
    """REP-1: decay leaves an inactive agent's expected reputation unchanged.

    ``rule`` is one decay round on Z3 reals (default: ``beta_decay``'s rule; passing
    ``plain_rule`` makes the checks fail).  Concrete: for the file's δ as the exact rational
    micro(δ)/10^6, all alpha, beta > 0, both branches of the floor (the reachable ones are
    listed, so the proof is not vacuous).  General: for all δ in the table's range [0, 1].
    Contrast: the paper's plain rule on whole outcome counts (expected refuted).
    """
    a, b = z3.Reals("alpha beta")
    general = params is None
    d = z3.Real("delta") if params is None else z3.RealVal(Fraction(micro(params.delta), MICRO))
    d_txt = _range_words("delta") if params is None else f"δ = {_dec(micro(params.delta))}"
    a2, b2 = rule(a, b, d)
    keeps = z3.And(a2 + b2 > 0, a2 * (a + b) == a * (a2 + b2))  # E' = E, cross-multiplied
    mass = z3.And(a2 > 0, b2 > 0, a2 + b2 >= 2)
    dom = [a > 0, b > 0, *(_rng(d, "delta") if general else [])]
    keeps_claim = _Claim(
        "REP-1",
        "decay-keeps-E",
        "rep_1",
        "decay keeps E = alpha/(alpha+beta)",
        f"for all alpha, beta > 0, {d_txt}: one round of decay, (alpha', beta') = "
        "k·(alpha, beta) with k = 1−δ, or k = 2/(alpha+beta) when (1−δ)(alpha+beta) < 2 (the "
        "floor), has alpha'/(alpha'+beta') = alpha/(alpha+beta), in both branches",
    )
    mass_claim = _Claim(
        "REP-1",
        "floor-keeps-mass",
        "rep_1",
        "after decay alpha, beta > 0 and alpha+beta ≥ 2",
        f"for all alpha, beta > 0, {d_txt}: alpha', beta' > 0 and alpha' + beta' ≥ 2 (never "
        "less weight than the uniform prior)",
    )
    if general:
        return [
            _general(
                keeps_claim,
                [("for every δ in range", dom, keeps)],
                "Z3 proved: for every δ in [0, 1] the rule keeps E for all alpha, beta > 0, "
                "in both branches of the floor.",
            ),
            _general(
                mass_claim,
                [("for every δ in range", dom, mass)],
                "Z3 proved: the floor keeps at least the uniform prior's weight.",
            ),
            _plain_contrast(None),
        ]
    floor = (1 - d) * (a + b) < 2
    reach = {
        branch: _optimum([*dom, cond], [])[0] is Status.REFUTED
        for branch, cond in (("floor", floor), ("no floor", z3.Not(floor)))
    }
    reached = " and ".join(k for k, v in reach.items() if v)

    def explain(model: Any) -> tuple[str, dict[str, Any]]:
        av, bv, a2v, b2v = (_val(model, x) for x in (a, b, a2, b2))
        e0 = av / (av + bv)
        e1 = "undefined" if a2v + b2v == 0 else f"{float(a2v / (a2v + b2v)):.6g}"
        text = (
            f"alpha = {_dec(av, 1)}, beta = {_dec(bv, 1)} (E = {float(e0):.6g}) decay with "
            f"{d_txt} to alpha' = {_dec(a2v, 1)}, beta' = {_dec(b2v, 1)} (E = {e1}, "
            f"alpha' + beta' = {_dec(a2v + b2v, 1)})."
        )
        cex = {
            "alpha": _num(av),
            "beta": _num(bv),
            "alpha_after": _num(a2v),
            "beta_after": _num(b2v),
        }
        return text, cex

    def check(
        claim: _Claim, goal: Any, proved: str, facts: dict[str, Any] | None = None
    ) -> TheoremResult:
        return _check(
            claim,
            dom,
            goal,
            proved=proved,
            explain=explain,
            objectives=[("min", a + b), ("max", a)],
            prefer=[a == 2, b == 1],  # one positive outcome, if that breaks it
            facts=facts,
        )

    return [
        check(
            keeps_claim,
            keeps,
            f"Z3 proved it for {d_txt} and every alpha, beta > 0, in each reachable branch "
            f"({reached}).",
            {"branches_reachable": reach},
        ),
        check(
            mass_claim, mass, "Z3 proved it: the floor keeps at least the uniform prior's weight."
        ),
        _plain_contrast(params),
    ]


def _plain_contrast(params: Params | None) -> TheoremResult:
    """Does the paper's plain rule keep E?  Expected refuted, with the agent that drifts."""
    r, s = z3.Ints("r s")  # whole numbers of outcomes make the clearest counterexample
    # the file's δ when it decays at all, else any δ in (0, 1)
    fixed = params is not None and micro(params.delta) > 0
    delta = Fraction(micro(params.delta), MICRO) if params is not None else Fraction(0)
    d = z3.RealVal(delta) if fixed else z3.Real("delta")
    dom = [r >= 0, s >= 0] + ([] if fixed else [d > 0, d < 1])
    r1, s1 = (1 - d) * r, (1 - d) * s
    keeps = (r1 + 1) * (r + s + 2) == (r + 1) * (r1 + s1 + 2)
    d_txt = f"δ = {_dec(delta, 1)}" if fixed else "0 < δ < 1"

    def explain(model: Any) -> tuple[str, dict[str, Any]]:
        rv, sv, dv = _val(model, r), _val(model, s), _val(model, d)
        e0 = (rv + 1) / (rv + sv + 2)
        r2, s2 = plain_decay(rv, sv, dv)
        e1 = (r2 + 1) / (r2 + s2 + 2)
        a2, b2 = beta_decay(rv + 1, sv + 1, dv)
        e2 = a2 / (a2 + b2)
        text = (
            f"an inactive agent with r = {rv} positive and s = {sv} negative outcomes has "
            f"E = {e0} ≈ {float(e0):.6f}; one round of plain decay with δ = {_dec(dv, 1)} "
            f"gives r' = {_dec(r2, 1)}, s' = {_dec(s2, 1)} and E = {float(e1):.6f}: decay "
            f"alone drags E toward 1/2, so the paper's claim is false for its rule. The "
            f"repaired rule decays alpha = {rv + 1}, beta = {sv + 1} to {_dec(a2, 1)}, "
            f"{_dec(b2, 1)}: E = {float(e2):.6f}, unchanged."
        )
        cex = {
            "r": _num(rv),
            "s": _num(sv),
            "delta": _num(dv),
            "E_before": float(e0),
            "E_after_plain": float(e1),
            "E_after_repaired": float(e2),
        }
        return text, cex

    return _check(
        _Claim(
            "REP-1",
            "plain-rule",
            "rep_1",
            "contrast: the paper's plain rule r' = (1−δ)r, s' = (1−δ)s keeps E",
            f"for all r, s ≥ 0, {d_txt}: (r'+1)/(r'+s'+2) = (r+1)/(r+s+2) — expected FALSE "
            "(the paper's claim, for its rule)",
            Status.REFUTED,
        ),
        dom,
        keeps,
        proved="Z3 proved the plain rule keeps E: unexpected.",
        explain=explain,
        objectives=[("min", r + s), ("max", r)],
        prefer=[] if fixed else [d == z3.RealVal(Fraction(1, 2))],
    )
