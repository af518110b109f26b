"""The Z3 plumbing every theorem shares: prove ``hyps ⇒ goal``, find the canonical
counterexample with ``Optimize``, turn the table's ranges into constraints, time each check."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import z3

from ostrom.protocol.params import table
from ostrom.verify.thresholds.result import Status, TheoremResult
from ostrom.verify.thresholds.words import _num

__all__ = ["TIMEOUT_MS", "Explain", "Objective"]

#: Per-query solver budget; a query that exceeds it is reported ``unknown`` (never proved).
TIMEOUT_MS: Final = 30_000


Objective = tuple[str, Any]  # ("min" | "max", z3 expression)
Explain = Callable[[Any], tuple[str, dict[str, Any]]]  # model -> (words, counterexample)


def _solve(hyps: Sequence[Any], goal: Any) -> tuple[Status, Any]:
    """Prove ``hyps ⇒ goal`` by asking for a model of ``hyps ∧ ¬goal`` (unsat = proof)."""
    s = z3.Solver()
    s.set(timeout=TIMEOUT_MS)
    s.add(*hyps)
    s.add(z3.Not(goal))
    r = s.check()
    if r == z3.unsat:
        return Status.PROVED, None
    if r == z3.sat:
        return Status.REFUTED, s.model()
    return Status.UNKNOWN, s.reason_unknown()


def _optimum(
    constraints: Sequence[Any], objectives: Sequence[Objective], prefer: Sequence[Any] = ()
) -> tuple[Status, Any]:
    """``Optimize`` over ``constraints`` (objectives lexicographic): (REFUTED, model) if
    satisfiable, (PROVED, None) if not, (UNKNOWN, reason) if Z3 gives up.

    Picks the *canonical* counterexample (fewest agents, extreme weights) so that the
    words describe the clearest instance, and finds REP-2's least k.  ``prefer`` are
    constraints tried first and dropped if they leave nothing.
    """
    reason: Any = None
    for extra in ((*prefer,), ()) if prefer else ((),):
        o = z3.Optimize()
        o.set(timeout=TIMEOUT_MS)
        o.add(*constraints, *extra)
        for kind, expr in objectives:
            if kind == "min":
                o.minimize(expr)
            else:
                o.maximize(expr)
        r = o.check()
        if r == z3.sat:
            return Status.REFUTED, o.model()
        if r != z3.unsat:
            reason = o.reason_unknown()
    return (Status.PROVED, None) if reason is None else (Status.UNKNOWN, reason)


def _val(model: Any, expr: Any) -> Fraction:
    """The exact value of ``expr`` in ``model`` (algebraic numbers: 20 decimal digits)."""
    v = model.eval(expr, model_completion=True)
    if z3.is_int_value(v):
        return Fraction(v.as_long())
    if z3.is_rational_value(v):
        return Fraction(v.numerator_as_long(), v.denominator_as_long())
    if z3.is_algebraic_value(v):  # pragma: no cover (only nonlinear general checks)
        a = v.approx(20)
        return Fraction(a.numerator_as_long(), a.denominator_as_long())
    raise ValueError(f"not a number in the model: {v}")  # pragma: no cover


def _int(model: Any, expr: Any) -> int:
    v = _val(model, expr)
    assert v.denominator == 1, v
    return int(v)


def _ranges() -> dict[str, tuple[float | None, float | None]]:
    return {r.name: (r.lo, r.hi) for r in table()}


def _rng(var: Any, name: str) -> list[Any]:
    """The table's range of parameter ``name`` as constraints on ``var``."""
    lo, hi = _ranges()[name]
    out = []
    if lo is not None:
        out.append(var >= z3.RealVal(Fraction(lo).limit_denominator(10**9)))
    if hi is not None:
        out.append(var <= z3.RealVal(Fraction(hi).limit_denominator(10**9)))
    return out


def _range_words(*names: str) -> str:
    r = _ranges()
    return ", ".join(
        f"{n} in [{r[n][0]:g}, {'∞' if r[n][1] is None else format(r[n][1], 'g')}]" for n in names
    )


class _Clock:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0


@dataclass(frozen=True)
class _Claim:
    """What one check claims; ``result`` turns an outcome into a ``TheoremResult``."""

    id: str
    check: str
    theorem: str
    title: str
    statement: str
    expected: Status = Status.PROVED

    def result(
        self,
        status: Status,
        explanation: str,
        clock: _Clock,
        counterexample: dict[str, Any] | None = None,
        facts: dict[str, Any] | None = None,
    ) -> TheoremResult:
        return TheoremResult(
            id=self.id,
            check=self.check,
            theorem=self.theorem,
            title=self.title,
            statement=self.statement,
            status=status,
            expected=self.expected,
            explanation=explanation,
            counterexample=counterexample or {},
            facts=facts or {},
            seconds=clock(),
        )


def _unknown(detail: Any) -> str:
    return f"Z3 gave up ({detail}); nothing is claimed."


def _check(
    claim: _Claim,
    hyps: Sequence[Any],
    goal: Any,
    *,
    proved: str,
    explain: Explain,
    objectives: Sequence[Objective] = (),
    prefer: Sequence[Any] = (),
    facts: dict[str, Any] | None = None,
) -> TheoremResult:
    """Prove ``hyps ⇒ goal``; on failure explain the canonical counterexample in words."""
    clock = _Clock()
    status, info = _solve(hyps, goal)
    if status is Status.PROVED:
        return claim.result(status, proved, clock, facts=facts)
    if status is Status.UNKNOWN:
        return claim.result(status, _unknown(info), clock, facts=facts)
    found, model = _optimum([*hyps, z3.Not(goal)], objectives, prefer)
    text, cex = explain(model if found is Status.REFUTED else info)
    return claim.result(status, text, clock, cex, facts)


def _general(
    claim: _Claim, parts: Sequence[tuple[str, Sequence[Any], Any]], proved: str
) -> TheoremResult:
    """A general (all-ranges) check: every ``(label, hyps, goal)`` part must prove."""
    clock = _Clock()
    for label, hyps, goal in parts:
        status, info = _solve(hyps, goal)
        if status is Status.UNKNOWN:
            return claim.result(status, f"{label}: {_unknown(info)}", clock)
        if status is Status.REFUTED:
            cex = {
                d.name(): _num(_val(info, d()))
                for d in sorted(info.decls(), key=lambda d: d.name())
                if d.arity() == 0 and z3.is_arith_sort(d.range())
            }
            return claim.result(status, f"the part '{label}' fails at {cex}", clock, cex)
    return claim.result(Status.PROVED, proved, clock)
