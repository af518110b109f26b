"""TIER-MONO and SAN-MONO: tier and sanction thresholds are ordered."""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Final

import z3

from ostrom.protocol.agents import MICRO, micro
from ostrom.protocol.params import Params
from ostrom.verify.thresholds.result import TheoremResult
from ostrom.verify.thresholds.solver import _check, _Claim, _general, _int, _range_words, _rng, _val
from ostrom.verify.thresholds.words import _dec, _num

__all__ = ["san_mono", "tier_mono"]

_TIERS: Final = ("tier1_rep", "tier2_rep", "tier3_rep")
_TIER_PRIVILEGE: Final = ("review and vote", "dispute", "arbitrate")
_SIGMAS: Final = ("sigma1", "sigma2", "sigma3", "sigma4")
_SIGMA_NAMES: Final = ("warning", "rate-limited", "suspended", "banned")


def tier_mono(params: Params | None = None) -> list[TheoremResult]:
    """TIER-MONO: tiers are nested — whoever meets a tier's reputation threshold meets the
    lower tiers' too (tier1_rep ≤ tier2_rep ≤ tier3_rep).  Otherwise an agent could hold a
    higher tier's privileges (dispute, arbitrate) without a lower tier's (review)."""
    e = z3.Real("E")
    if params is None:
        ts = [z3.Real(t) for t in _TIERS]
    else:
        ts = [z3.RealVal(Fraction(micro(getattr(params, t)), MICRO)) for t in _TIERS]

    def nested(x: Any) -> Any:
        return z3.And(*(z3.Implies(x >= ts[i + 1], x >= ts[i]) for i in range(2)))

    claim = _Claim(
        "TIER-MONO",
        "nested",
        "tier_mono",
        "tiers are nested (tier1_rep ≤ tier2_rep ≤ tier3_rep)",
        ("for all thresholds in [0, 1]: " if params is None else "")
        + "for every expected reputation E in [0, 1]: E ≥ tier3_rep ⇒ E ≥ tier2_rep and "
        "E ≥ tier2_rep ⇒ E ≥ tier1_rep; holds iff tier1_rep ≤ tier2_rep ≤ tier3_rep",
    )
    if params is None:
        rng = [x for t, v in zip(_TIERS, ts, strict=True) for x in _rng(v, t)]
        ordered = z3.And(ts[0] <= ts[1], ts[1] <= ts[2])
        witness = z3.Or(*(z3.Not(nested(ts[i + 1])) for i in range(2)))  # E = the higher one
        return [
            _general(
                claim,
                [
                    ("if", [*rng, e >= 0, e <= 1, ordered], nested(e)),
                    ("only if: E = the higher threshold", [*rng, z3.Not(ordered)], witness),
                ],
                "Z3 proved: tiers are nested exactly when the thresholds are ordered.",
            )
        ]
    p = params

    def explain(model: Any) -> tuple[str, dict[str, Any]]:
        ev = _val(model, e)
        i = next(i for i in range(2) if ev >= _val(model, ts[i + 1]) and ev < _val(model, ts[i]))
        hi, lo = _TIERS[i + 1], _TIERS[i]
        text = (
            f"an agent with expected reputation E = {_dec(ev, 1)} meets {hi} = "
            f"{getattr(p, hi)} but not {lo} = {getattr(p, lo)}: it would qualify for tier "
            f"{i + 2} ({_TIER_PRIVILEGE[i + 1]}) without tier {i + 1} ({_TIER_PRIVILEGE[i]}). "
            f"Order the thresholds: {lo} ≤ {hi}."
        )
        return text, {"E": _num(ev), hi: getattr(p, hi), lo: getattr(p, lo)}

    values = ", ".join(f"{t} = {getattr(p, t)}" for t in _TIERS)
    return [
        _check(
            claim,
            [e >= 0, e <= 1],
            nested(e),
            proved=f"Z3 proved it: {values}.",
            explain=explain,
            objectives=[("min", e)],
        )
    ]


def san_mono(params: Params | None = None) -> list[TheoremResult]:
    """SAN-MONO: the sanction ladder is graduated — σ(i+1) takes strictly more violations
    in the window than σi (sigma1 < sigma2 < sigma3 < sigma4), so no level is skipped: an
    agent is warned before it is rate-limited, rate-limited before it is suspended, ..."""
    c = z3.Int("violations")
    ss: list[Any] = (
        [z3.Int(s) for s in _SIGMAS] if params is None else [getattr(params, s) for s in _SIGMAS]
    )

    def graduated(x: Any) -> Any:
        return z3.And(*(z3.Implies(x >= ss[i + 1], x >= ss[i] + 1) for i in range(3)))

    claim = _Claim(
        "SAN-MONO",
        "graduated",
        "san_mono",
        "sanction levels are graduated (sigma1 < sigma2 < sigma3 < sigma4)",
        (f"for all {_range_words(*_SIGMAS)}: " if params is None else "")
        + "for every violation count c ≥ 0: c ≥ sigma(i+1) ⇒ c ≥ sigma(i) + 1, i = 1..3 "
        "(each level needs strictly more violations than the one below); holds iff "
        "sigma1 < sigma2 < sigma3 < sigma4",
    )
    if params is None:
        rng = [x for s, v in zip(_SIGMAS, ss, strict=True) for x in _rng(v, s)]
        strict = z3.And(*(ss[i] < ss[i + 1] for i in range(3)))
        witness = z3.Or(*(z3.Not(graduated(ss[i + 1])) for i in range(3)))
        return [
            _general(
                claim,
                [
                    ("if", [*rng, c >= 0, strict], graduated(c)),
                    (
                        "only if: c = the first out-of-order threshold",
                        [*rng, z3.Not(strict)],
                        witness,
                    ),
                ],
                "Z3 proved: the ladder is graduated exactly when the thresholds rise strictly.",
            )
        ]

    def explain(model: Any) -> tuple[str, dict[str, Any]]:
        cv = _int(model, c)
        i = next(i for i in range(3) if cv >= ss[i + 1] and cv < ss[i] + 1)
        lo, hi = _SIGMAS[i], _SIGMAS[i + 1]
        text = (
            f"with {cv} violations in the window an agent is already at σ{i + 2} "
            f"({_SIGMA_NAMES[i + 1]}, {hi} = {ss[i + 1]}) without ever having been at σ{i + 1} "
            f"({_SIGMA_NAMES[i]}, {lo} = {ss[i]}) alone: the ladder skips a step. "
            f"Make {lo} < {hi}."
        )
        return text, {"violations": cv, lo: ss[i], hi: ss[i + 1]}

    values = " < ".join(f"{s} = {v}" for s, v in zip(_SIGMAS, ss, strict=True))
    return [
        _check(
            claim,
            [c >= 0],
            graduated(c),
            proved=f"Z3 proved it: {values}.",
            explain=explain,
            objectives=[("min", c)],
        )
    ]
