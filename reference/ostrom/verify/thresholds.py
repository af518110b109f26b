"""What Z3 proves about the parameters: every numeric threshold of the protocol as a theorem.

Each theorem is a function named after its property id (DESIGN §7) and is stated two ways:

* ``theorem(None)`` — **general**: for *every* parameter value the table of
  ``ostrom.protocol.params`` allows (its ranges become Z3 constraints on symbolic parameters), Z3
  proves the exact condition under which the property holds — the "if" direction by
  refuting every counterexample, the "only if" direction by an explicit witness that
  breaks the property whenever the condition fails.  So the condition is neither too
  strong nor too weak;
* ``theorem(params)`` — **concrete**: for one parameter set, Z3 either proves the
  property or returns a counterexample model, which is turned into plain words (which
  agents, which weights, what goes wrong) and replayed through the reference code
  (``voting.review_verdict``, ``voting.dispute_verdict``, the orchestrator's forget
  arithmetic), so a counterexample is never only a solver artefact.

Concrete checks use the protocol's own arithmetic: weights, shares and thresholds are
integer micro-units (``agents.micro``) compared exactly as ``voting.py`` compares them,
so "proved" means proved for the integers an implementation computes.  General checks
use exact reals; every micro-unit value ``x/10^6`` is one of those reals, so they cover
the micro-unit grid as well.

Some checks are *contrasts* whose expected result is a refutation (the paper's plain
decay rule, a flat 2f+1 PBFT quorum): they show what the repaired rule fixes, and a
contrast that stopped being refuted is reported as a failure.

``prove_all(params)`` runs every concrete check, ``prove_general()`` every general one;
``ostrom check-params FILE.toml`` prints them (docs/thresholds.md).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from pathlib import Path
from typing import Any, Final

import z3

from ostrom.protocol.agents import MICRO, micro
from ostrom.protocol.params import DEFAULTS, ParamError, Params, _range_problems, table
from ostrom.protocol.voting import Tally, dispute_verdict, review_verdict

#: Per-query solver budget; a query that exceeds it is reported ``unknown`` (never proved).
TIMEOUT_MS: Final = 30_000


class Status(StrEnum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class TheoremResult:
    """One checked claim.  ``ok`` compares the status with the expected one (contrasts
    are expected to be refuted); ``counterexample`` is JSON-ready, empty when proved."""

    id: str
    check: str
    theorem: str
    title: str
    statement: str
    status: Status
    expected: Status
    explanation: str
    counterexample: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == self.expected

    @property
    def name(self) -> str:
        """``ID/check``, unique within one run."""
        return f"{self.id}/{self.check}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "check": self.check,
            "theorem": self.theorem,
            "title": self.title,
            "statement": self.statement,
            "status": self.status.value,
            "expected": self.expected.value,
            "ok": self.ok,
            "explanation": self.explanation,
            "counterexample": self.counterexample,
            "facts": self.facts,
            "seconds": round(self.seconds, 4),
        }


Theorem = Callable[[Params | None], list[TheoremResult]]


# --- loading a parameter file ----------------------------------------------------------------


class UncheckedParams(Params):
    """Parameters whose types and ranges are validated but whose *relations* are not.

    ``Params`` refuses ``tau_reject >= tau_accept``, unordered tier thresholds and
    non-increasing sanction thresholds; here those are theorems (TALLY-1, TIER-MONO,
    SAN-MONO) that must be able to fail with a counterexample, so a file breaking them
    has to load.  For the theorems only: never run the orchestrator with one.
    """

    def __post_init__(self) -> None:
        problems = _range_problems(self)
        if problems:
            raise ParamError("; ".join(problems))


#: Values satisfying the relations the theorems state; substituted to find the *other*
#: relation problems (quorum > reviewers, w_min > w_max, ...), which stay input errors.
_THEOREM_RELATIONS: Final[dict[str, Any]] = {
    "tau_accept": 1.0,
    "tau_reject": 0.0,
    "tier1_rep": 0.0,
    "tier2_rep": 0.0,
    "tier3_rep": 0.0,
    "sigma1": 1,
    "sigma2": 2,
    "sigma3": 3,
    "sigma4": 4,
}


def load_params(source: str | Path | Mapping[str, Any] | None = None) -> Params:
    """A parameter file or mapping for ``check-params``; keys not given take defaults.

    Unknown keys, wrong types, out-of-range values and the relations no theorem states
    raise ``ParamError`` naming them.  A set that breaks only relations a theorem states
    comes back as ``UncheckedParams`` (the theorems refute it), a valid one as ``Params``.
    """
    if source is None:
        return DEFAULTS
    raw = (
        UncheckedParams.from_mapping(source)
        if isinstance(source, Mapping)
        else UncheckedParams.from_toml(source)
    )
    values = raw.to_dict()
    Params.from_mapping({**values, **_THEOREM_RELATIONS})  # raises on the other relations
    try:
        return Params.from_mapping(values)
    except ParamError:
        return raw


# --- Z3 plumbing -----------------------------------------------------------------------------

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


def _dec(x: int | Fraction, scale: int = MICRO) -> str:
    """A micro-unit integer (or exact fraction) as a short decimal: 100000 → ``0.1``."""
    f = Fraction(x) / scale
    d = f.denominator
    for prime in (2, 5):
        while d % prime == 0:
            d //= prime
    if d == 1:  # a terminating decimal: print it exactly
        return format((Decimal(f.numerator) / Decimal(f.denominator)).normalize(), "f")
    return f"{float(f):.6g}"


def _num(x: Fraction) -> int | float:
    """JSON-ready number: an int when integral, else a float."""
    return int(x) if x.denominator == 1 else float(x)


def _share(yes: int, total: int) -> str:
    return "undefined (no weight)" if total == 0 else f"{yes / total:.6g}"


def _split(total: int, count: int, lo: int, hi: int) -> list[int]:
    """``count`` integer weights in [lo, hi] summing to ``total``, as even as possible."""
    if count <= 0:
        return []
    base, extra = divmod(total, count)
    out = [base + (1 if i < extra else 0) for i in range(count)]
    assert all(lo <= w <= hi for w in out) and sum(out) == total, (total, count, lo, hi)
    return out


def _agents(ws: Sequence[int], start: int = 1, prefix: str = "a") -> str:
    """``a2 and a3 (weight 0.1 each)``, ``a2…a5 (weight 0.1 each)``, ``a2 (0.1), a3 (0.4)``."""
    if not ws:
        return "no other agent"
    last = start + len(ws) - 1
    if len(set(ws)) == 1:
        if len(ws) == 1:
            return f"{prefix}{start} (weight {_dec(ws[0])})"
        join = " and " if len(ws) == 2 else "…"
        return f"{prefix}{start}{join}{prefix}{last} (weight {_dec(ws[0])} each)"
    return ", ".join(f"{prefix}{start + i} ({_dec(x)})" for i, x in enumerate(ws))


_VERDICT_WORDS: Final = {"undecided": "undecided (arbitration)"}


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


# --- voting.py's verdicts, symbolically ------------------------------------------------------
# ``scale`` is MICRO with integer micro-unit thresholds (concrete checks: exactly voting.py's
# integer comparisons) or 1 with real shares (general checks).  ``ny``/``nn`` are the head
# counts of the two sides and ``side`` is ``tally_min_side`` (the side rule of TALLY-1).  The
# quorum of reveals is a hypothesis of every caller, so it is not repeated here.


def _z_accepts(yes: Any, no: Any, ny: Any, tau_a: Any, side: Any, scale: Any) -> Any:
    return z3.And(yes * scale >= tau_a * (yes + no), ny >= side)


def _z_rejects(
    yes: Any, no: Any, ny: Any, nn: Any, tau_a: Any, tau_r: Any, side: Any, scale: Any
) -> Any:
    """Accept is tested first, as in ``review_verdict``."""
    return z3.And(
        z3.Not(_z_accepts(yes, no, ny, tau_a, side, scale)),
        yes * scale <= tau_r * (yes + no),
        nn >= side,
    )


def _z_retracts(yes: Any, no: Any, ny: Any, nn: Any, tau: Any, side: Any, scale: Any) -> Any:
    """``dispute_verdict``: at least ``side`` retracters, and the weight threshold or fewer
    than ``side`` keepers (a lone keeper cannot hold the artifact)."""
    return z3.And(ny >= side, z3.Or(yes * scale >= tau * (yes + no), nn < side))


@dataclass(frozen=True)
class _M:
    """The parameters the theorems read, in micro-units (what voting.py compares)."""

    quorum: int
    reviewers: int
    q_dispute: int
    dispute_reviewers: int
    tau_accept: int
    tau_reject: int
    tau_retract: int
    w_min: int
    w_max: int
    alpha: int
    delta: int
    min_side: int
    min_active: int

    @classmethod
    def of(cls, p: Params) -> _M:
        return cls(
            quorum=p.quorum,
            reviewers=p.reviewers,
            q_dispute=p.q_dispute,
            dispute_reviewers=p.dispute_reviewers,
            tau_accept=micro(p.tau_accept),
            tau_reject=micro(p.tau_reject),
            tau_retract=micro(p.tau_retract),
            w_min=micro(p.w_min),
            w_max=micro(p.w_max),
            alpha=micro(p.alpha),
            delta=micro(p.delta),
            min_side=p.tally_min_side,
            min_active=p.min_active_agents,
        )


def replay_review(accept: Sequence[int], reject: Sequence[int], p: Params) -> str:
    """``voting.review_verdict`` on micro-unit weights, one per voter, with the side rule
    (counterexamples are replayed here)."""
    m = _M.of(p)
    t = Tally.of(tuple(accept), tuple(reject))
    return review_verdict(t, m.quorum, m.tau_accept, m.tau_reject, m.min_side)


def replay_dispute(retract: Sequence[int], keep: Sequence[int], p: Params) -> str:
    """``voting.dispute_verdict`` on micro-unit weights, one per voter, with the side rule."""
    m = _M.of(p)
    t = Tally.of(tuple(retract), tuple(keep))
    return dispute_verdict(t, m.q_dispute, m.tau_retract, m.min_side)


def replay_forget(score: int, weights: Sequence[int], p: Params) -> bool:
    """The forget rule's arithmetic for one artifact in a forgettable state: ``weights`` are
    the active (non-barred) agents' weights, ``score`` is ``S = Σ w·c`` in micro² (weights
    and confidences in micro-units).  Forgotten iff ``S > 0``, ``S ≥ Q = micro(alpha)·Σ w``
    and at least ``min_active_agents`` agents are active (FG-1's population rule)."""
    quorum = micro(p.alpha) * sum(weights)
    return score > 0 and score >= quorum and len(weights) >= p.min_active_agents


# --- BFT-QUORUM-1 ----------------------------------------------------------------------------

QuorumRule = Callable[[Any, Any], Any]


def implementation_rule(n: Any, f: Any) -> Any:
    """``ostrom.consensus.replica.quorum`` = ``(n + f + 2) // 2`` on Z3 integers (Z3's
    integer division floors for a positive divisor: the same function on naturals)."""
    return (n + f + 2) / 2


def flat_rule(n: Any, f: Any) -> Any:
    """A flat 2f+1 quorum, right only when n = 3f+1."""
    return 2 * f + 1


def bft_quorum_1(
    params: Params | None = None, *, rule: QuorumRule = implementation_rule
) -> list[TheoremResult]:
    """BFT-QUORUM-1 for all n ≥ 3f+1, f ≥ 0 — unbounded integers, no parameter of the
    table involved, so both modes check the same.  ``rule`` is the quorum size as a
    function of Z3 integers (default: the replicas' ``quorum``); ``flat_rule`` makes the
    intersection and ceil checks fail.  Two quorums of q among n replicas share at least
    2q − n (inclusion–exclusion); 2q − n ≥ f+1 means one of them is honest.
    """
    del params
    n, f, ceil = z3.Ints("n f ceil")
    q = rule(n, f)
    dom = [f >= 0, n >= 3 * f + 1]
    smallest: list[Objective] = [("min", n), ("min", f)]

    def nfq(model: Any, size: Any = q) -> tuple[int, int, int]:
        return _int(model, n), _int(model, f), _int(model, size)

    def overlap(size: Any) -> Explain:
        def explain(model: Any) -> tuple[str, dict[str, Any]]:
            nv, fv, qv = nfq(model, size)
            a, b = list(range(qv)), list(range(nv - qv, nv))
            shared = sorted(set(a) & set(b))

            def names(xs: Sequence[int]) -> str:
                return ", ".join(f"r{i}" for i in xs) or "none"

            text = (
                f"n = {nv} replicas, f = {fv}: the quorums {{{names(a)}}} and "
                f"{{{names(b)}}} of {qv} share {len(shared)} replica(s) ({names(shared)}), "
                f"fewer than f+1 = {fv + 1}: every shared replica may be faulty, so two "
                f"conflicting requests can each gather a quorum."
            )
            cex = {"n": nv, "f": fv, "quorum": qv, "quorum_a": a, "quorum_b": b, "shared": shared}
            return text, cex

        return explain

    def mismatch(what: str) -> Explain:
        def explain(model: Any) -> tuple[str, dict[str, Any]]:
            nv, fv, qv = nfq(model)
            want = {"ceil": -(-(nv + fv + 1) // 2), "2f+1": 2 * fv + 1, "n-f": nv - fv}[what]
            label = {"ceil": "⌈(n+f+1)/2⌉", "2f+1": "2f+1", "n-f": "n − f"}[what]
            text = f"n = {nv}, f = {fv}: the rule gives {qv}, {label} = {want}."
            if what == "n-f":
                text += f" With {fv} silent replicas the {nv - fv} honest ones never commit."
            return text, {"n": nv, "f": fv, "quorum": qv, what: want}

        return explain

    def claim(check: str, title: str, statement: str, expected: Status = Status.PROVED) -> _Claim:
        return _Claim("BFT-QUORUM-1", check, "bft_quorum_1", title, statement, expected)

    every = "for every n ≥ 3f+1, f ≥ 0 (unbounded integers)"
    return [
        _check(
            claim(
                "intersection",
                "two quorums share f+1 replicas",
                "for all n ≥ 3f+1, f ≥ 0, q = the rule: 2q − n ≥ f+1, so two quorums share "
                "an honest replica",
            ),
            dom,
            2 * q - n >= f + 1,
            proved=f"Z3 proved 2q − n ≥ f+1 {every}.",
            explain=overlap(q),
            objectives=smallest,
            prefer=[f >= 1],
        ),
        _check(
            claim(
                "availability",
                "the honest replicas alone form a quorum",
                "for all n ≥ 3f+1, f ≥ 0: q ≤ n − f (the replicas that are not faulty can "
                "commit without the faulty ones: liveness)",
            ),
            dom,
            q <= n - f,
            proved=f"Z3 proved q ≤ n − f {every}.",
            explain=mismatch("n-f"),
            objectives=smallest,
        ),
        _check(
            claim(
                "ceil",
                "the rule is ⌈(n+f+1)/2⌉",
                "for all n ≥ 3f+1, f ≥ 0: the rule equals ⌈(n+f+1)/2⌉ (DESIGN §6), with the "
                "ceiling as integer constraints 2c ≥ n+f+1 ∧ 2c ≤ n+f+2",
            ),
            [*dom, 2 * ceil >= n + f + 1, 2 * ceil <= n + f + 2],
            q == ceil,
            proved=f"Z3 proved the rule equals ⌈(n+f+1)/2⌉ {every}.",
            explain=mismatch("ceil"),
            objectives=smallest,
            prefer=[f >= 1],
        ),
        _check(
            claim("classic", "q = 2f+1 when n = 3f+1", "for all f ≥ 0: n = 3f+1 ⇒ q = 2f+1"),
            [f >= 0, n == 3 * f + 1],
            q == 2 * f + 1,
            proved="Z3 proved q = 2f+1 whenever n = 3f+1.",
            explain=mismatch("2f+1"),
            objectives=smallest,
        ),
        _check(
            claim(
                "flat-2f+1",
                "contrast: a flat 2f+1 quorum for every n ≥ 3f+1",
                "for all n ≥ 3f+1, f ≥ 1: two quorums of 2f+1 share f+1 replicas — expected "
                "FALSE when n > 3f+1 (Z3 finds the smallest n, f)",
                Status.REFUTED,
            ),
            [f >= 1, n >= 3 * f + 1],
            2 * flat_rule(n, f) - n >= f + 1,
            proved="Z3 proved the flat rule safe: unexpected, it fails for n > 3f+1.",
            explain=overlap(flat_rule(n, f)),
            objectives=smallest,
        ),
    ]


# --- TALLY-1 ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Lone:
    """One way a single agent could decide a quorum vote alone (see ``tally_1``)."""

    check: str
    ballot: str  # review | dispute
    vote: str  # the lone agent's vote
    others: str  # everyone else's
    condition: str  # the exact condition under which it is impossible
    weights: str  # the weight condition alone: what it takes with tally_min_side = 1


_W_ACCEPT: Final = "w_max·(1 − tau_accept) < tau_accept·(quorum − 1)·w_min"
_W_REJECT: Final = (
    "tau_reject·w_max < (1 − tau_reject)·(quorum − 1)·w_min, or w_max = 0 with quorum ≥ 2"
)
_W_RETRACT: Final = "w_max·(1 − tau_retract) < tau_retract·(q_dispute − 1)·w_min"
_W_KEEP: Final = "tau_retract·w_max ≤ (1 − tau_retract)·(q_dispute − 1)·w_min"

_LONE: Final = (
    _Lone(
        "review-lone-accept",
        "review",
        "accept",
        "reject",
        f"tally_min_side ≥ 2 (the side rule), or {_W_ACCEPT}",
        _W_ACCEPT,
    ),
    _Lone(
        "review-lone-reject",
        "review",
        "reject",
        "accept",
        f"tally_min_side ≥ 2 (the side rule), or {_W_REJECT}",
        _W_REJECT,
    ),
    _Lone(
        "dispute-lone-retract",
        "dispute",
        "retract",
        "keep",
        f"tally_min_side ≥ 2 (the side rule), or {_W_RETRACT}",
        _W_RETRACT,
    ),
    _Lone(
        "dispute-lone-keep",
        "dispute",
        "keep",
        "retract",
        f"q_dispute > tally_min_side, and: tally_min_side ≥ 2 (the side rule), or {_W_KEEP}",
        _W_KEEP,
    ),
)


def _lone_wins(
    lone: _Lone,
    w: Any,
    others: Any,
    n_others: Any,
    taus: tuple[Any, Any, Any],
    side: Any,
    scale: Any,
) -> Any:
    """voting.py's verdict is the lone agent's vote: one voter of weight ``w`` against
    ``n_others`` voters of total weight ``others`` (the side rule included)."""
    tau_a, tau_r, tau_t = taus
    if lone.vote == "accept":
        return _z_accepts(w, others, 1, tau_a, side, scale)
    if lone.vote == "reject":
        return _z_rejects(others, w, n_others, 1, tau_a, tau_r, side, scale)
    if lone.vote == "retract":
        return _z_retracts(w, others, 1, n_others, tau_t, side, scale)
    return z3.Not(_z_retracts(others, w, n_others, 1, tau_t, side, scale))


def _lone_weights(lone: _Lone, q: Any, wmin: Any, wmax: Any, taus: tuple[Any, Any, Any]) -> Any:
    """``lone.weights`` as a formula over reals."""
    tau_a, tau_r, tau_t = taus
    if lone.vote == "accept":
        return wmax * (1 - tau_a) < tau_a * (q - 1) * wmin
    if lone.vote == "reject":  # w_max = 0: every weight is 0, and 0 ≥ 0 accepts (q ≥ 2)
        return z3.Or(tau_r * wmax < (1 - tau_r) * (q - 1) * wmin, z3.And(wmax == 0, q >= 2))
    if lone.vote == "retract":
        return wmax * (1 - tau_t) < tau_t * (q - 1) * wmin
    return tau_t * wmax <= (1 - tau_t) * (q - 1) * wmin


def _lone_condition(
    lone: _Lone, q: Any, wmin: Any, wmax: Any, taus: tuple[Any, Any, Any], side: Any
) -> Any:
    """``lone.condition`` as a formula: the side rule, or the weights.

    A lone accept, reject or retract needs its side of one voter to win, which
    ``tally_min_side ≥ 2`` forbids.  A lone keep is different: *keep* is also what a
    dispute does when the retracters are fewer than ``tally_min_side``, so with
    ``q_dispute ≤ tally_min_side`` a lone keeper against ``q_dispute − 1`` retracters keeps.
    """
    weights = _lone_weights(lone, q, wmin, wmax, taus)
    if lone.vote == "keep":
        return z3.And(q > side, z3.Or(side >= 2, weights))
    return z3.Or(side >= 2, weights)


def tally_1(params: Params | None = None) -> list[TheoremResult]:
    """TALLY-1: accept and reject regions are disjoint; no single agent decides a quorum vote.

    *A single agent decides* a quorum vote when, in a ballot with at least the quorum of
    valid reveals (review: ``quorum``; dispute: ``q_dispute``; at most the recruited
    reviewers), **every other voter votes the other way and the lone agent's side still
    wins**: a lone accept that accepts, a lone reject that rejects, a lone retract that
    retracts, a lone keep that keeps.  Being merely *pivotal* (one flipped vote changes
    the outcome) is not the definition: every majority rule has swing voters, even with
    equal weights.

    The tally has a *side rule* (``tally_min_side``, voting.py): a side wins only with at
    least that many voters.  With ``tally_min_side ≥ 2`` no lone accept, reject or retract
    ever wins, whatever the weights; a lone keep is impossible as long as the other
    voters are enough to retract (``q_dispute > tally_min_side``).  With
    ``tally_min_side = 1`` only the weights protect the tally: the worst case is the lone
    agent at ``w_max`` against quorum − 1 agents at ``w_min``.  ``_LONE`` lists the four
    exact conditions; both modes encode the head counts (one voter against reveals − 1).
    """
    return _tally_general() if params is None else _tally_concrete(params)


def _tally_concrete(p: Params) -> list[TheoremResult]:
    m = _M.of(p)
    a, r = z3.Ints("accept_weight reject_weight")
    both = z3.And(a * MICRO >= m.tau_accept * (a + r), a * MICRO <= m.tau_reject * (a + r))

    def overlap(model: Any) -> tuple[str, dict[str, Any]]:
        av, rv = _int(model, a), _int(model, r)
        verdict = review_verdict(
            Tally(av, rv, m.quorum, m.quorum), m.quorum, m.tau_accept, m.tau_reject, m.min_side
        )
        share = _share(av, av + rv)
        text = (
            f"an accept share of {share} (accept weight {_dec(av)} of {_dec(av + rv)} "
            f"revealed) is in both regions: ≥ tau_accept = {_dec(m.tau_accept)} and ≤ "
            f"tau_reject = {_dec(m.tau_reject)}. Only the order of voting.py's tests decides "
            f"it (review_verdict → {verdict}). Make tau_reject < tau_accept."
        )
        cex = {
            "accept_weight": _dec(av),
            "reject_weight": _dec(rv),
            "accept_share": share,
            "replay": verdict,
        }
        return text, cex

    out = [
        _check(
            _Claim(
                "TALLY-1",
                "disjoint-regions",
                "tally_1",
                "accept and reject regions are disjoint",
                f"no accept share is both ≥ tau_accept ({_dec(m.tau_accept)}) and ≤ "
                f"tau_reject ({_dec(m.tau_reject)}) (micro-unit weights, voting.py's "
                f"comparisons); holds iff tau_reject < tau_accept",
            ),
            [a >= 0, r >= 0, a + r > 0],
            z3.Not(both),
            proved=(
                f"Z3 proved it: tau_reject = {_dec(m.tau_reject)} < tau_accept = "
                f"{_dec(m.tau_accept)}; shares strictly between go to arbitration."
            ),
            explain=overlap,
            objectives=[("min", a + r), ("max", a)],
            prefer=[a + r == MICRO],
        )
    ]
    return out + [_lone_concrete(p, m, lone) for lone in _LONE]


def _lone_concrete(p: Params, m: _M, lone: _Lone) -> TheoremResult:
    review = lone.ballot == "review"
    q, seats = (m.quorum, m.reviewers) if review else (m.q_dispute, m.dispute_reviewers)
    qname = "quorum" if review else "q_dispute"
    side = m.min_side
    taus = (m.tau_accept, m.tau_reject, m.tau_retract)
    reveals, w, others = z3.Ints("reveals lone_weight others_weight")
    hyps = [
        reveals >= q,
        reveals <= seats,
        w >= m.w_min,
        w <= m.w_max,
        others >= (reveals - 1) * m.w_min,
        others <= (reveals - 1) * m.w_max,
    ]

    def real(x: int) -> Any:
        return z3.RealVal(Fraction(x, MICRO))

    rtaus = (real(taus[0]), real(taus[1]), real(taus[2]))
    qv, wlo, whi = z3.IntVal(q), real(m.w_min), real(m.w_max)
    exact = _lone_condition(lone, qv, wlo, whi, rtaus, z3.IntVal(side))
    by_weight = _lone_weights(lone, qv, wlo, whi, rtaus)
    facts = {
        "condition": lone.condition,
        "condition_holds": z3.is_true(z3.simplify(exact)),
        "weight_condition": lone.weights,
        "weight_condition_holds": z3.is_true(z3.simplify(by_weight)),
        "tally_min_side": side,
    }

    def explain(model: Any) -> tuple[str, dict[str, Any]]:
        n, wv, ov = _int(model, reveals), _int(model, w), _int(model, others)
        other_ws = _split(ov, n - 1, m.w_min, m.w_max)
        lone_yes = lone.vote in ("accept", "retract")
        yes, no = ([wv], other_ws) if lone_yes else (other_ws, [wv])
        if review:
            verdict = replay_review(yes, no, p)
            share_name = "accept share"
            tau = (
                f"tau_{lone.vote} = {_dec(m.tau_accept if lone.vote == 'accept' else m.tau_reject)}"
            )
        else:
            verdict = replay_dispute(yes, no, p)
            share_name = "retract share"
            tau = f"tau_retract = {_dec(m.tau_retract)}"
        cmp = {"accept": "≥", "reject": "≤", "retract": "≥", "keep": "<"}[lone.vote]
        share = _share(sum(yes), sum(yes) + sum(no))
        verb = "votes" if len(other_ws) == 1 else "vote"
        others_txt = (
            f"{_agents(other_ws, 2)} {verb} {lone.others}" if other_ws else "no other agent reveals"
        )
        heads_short = lone.vote == "keep" and n - 1 < side  # the retracters are too few
        if heads_short and n == 1:
            why = (
                f"Nobody retracts, and one reveal is a dispute quorum: the outcome is keep on "
                f"a1's vote alone (voting.dispute_verdict → {verdict})."
            )
        elif heads_short:
            why = (
                f"Only {n - 1} voter(s) retract, fewer than tally_min_side = {side}, so the "
                f"dispute cannot retract: the outcome is keep although every other voter "
                f"retracts (voting.dispute_verdict → {verdict})."
            )
        else:
            why = (
                f"The {share_name} is {_dec(sum(yes))} / {_dec(sum(yes) + sum(no))} = {share} "
                f"{cmp} {tau}, and with tally_min_side = {side} a side of one voter may win, "
                f"so the outcome is {lone.vote} on a1's vote alone "
                f"(voting.{lone.ballot}_verdict → {verdict})."
            )
        text = (
            f"{n} valid reveals ({qname} = {q}): agent a1 with weight {_dec(wv)} votes "
            f"{lone.vote}; {others_txt}. {why} Needed: {lone.condition}."
        )
        cex = {
            "ballot": lone.ballot,
            "reveals": n,
            qname: q,
            "tally_min_side": side,
            "lone": {"agent": "a1", "weight": _dec(wv), "vote": lone.vote},
            "others": [
                {"agent": f"a{i + 2}", "weight": _dec(x), "vote": lone.others}
                for i, x in enumerate(other_ws)
            ],
            share_name.replace(" ", "_"): share,
            "outcome": lone.vote,
            "replay": verdict,
        }
        return text, cex

    if lone.vote == "keep" and side >= 2:
        proved = (
            f"Z3 proved it: with {qname} = {q} > tally_min_side = {side} the other voters are "
            f"enough to retract, and a lone keeper — however heavy — is fewer than "
            f"tally_min_side keepers, so it cannot hold the artifact."
        )
    elif side >= 2:
        proved = (
            f"Z3 proved it: a side needs at least tally_min_side = {side} voters to win, so a "
            f"lone {lone.vote} never decides, whatever the weights (even a1 at w_max = "
            f"{_dec(m.w_max)} against {q - 1} agent(s) at w_min = {_dec(m.w_min)})."
        )
    else:
        proved = (
            f"Z3 proved it: tally_min_side = 1, but even a1 at w_max = {_dec(m.w_max)} against "
            f"{q - 1} agent(s) at w_min = {_dec(m.w_min)} does not make the outcome {lone.vote}."
        )
    return _check(
        _Claim(
            "TALLY-1",
            lone.check,
            "tally_1",
            f"no single agent decides a {lone.ballot} ({lone.vote} alone)",
            f"in every {lone.ballot} ballot with {q} ≤ valid reveals ≤ {seats}, weights in "
            f"[w_min, w_max] = [{_dec(m.w_min)}, {_dec(m.w_max)}] and tally_min_side = {side}, "
            f"a lone {lone.vote} against {lone.others} from all the others does not win; holds "
            f"iff {lone.condition}",
        ),
        hyps,
        z3.Not(_lone_wins(lone, w, others, reveals - 1, taus, side, MICRO)),
        proved=proved,
        explain=explain,
        objectives=[("min", reveals), ("max", w), ("min", others)],
        facts=facts,
    )


def _tally_general() -> list[TheoremResult]:
    ta, tr, tt, wmin, wmax = z3.Reals("tau_accept tau_reject tau_retract w_min w_max")
    q, seats, reveals, side = z3.Ints("quorum seats reveals tally_min_side")
    w, others, yes, no = z3.Reals("w others yes no")
    base = [
        *_rng(ta, "tau_accept"),
        *_rng(tr, "tau_reject"),
        *_rng(tt, "tau_retract"),
        *_rng(wmin, "w_min"),
        *_rng(wmax, "w_max"),
        wmin <= wmax,
    ]
    both = z3.And(yes >= ta * (yes + no), yes <= tr * (yes + no))
    out = [
        _general(
            _Claim(
                "TALLY-1",
                "disjoint-regions",
                "tally_1",
                "accept and reject regions are disjoint ⟺ tau_reject < tau_accept",
                f"for all {_range_words('tau_accept', 'tau_reject')}: no accept share is in "
                "both regions if tau_reject < tau_accept; the share tau_accept is in both if not",
            ),
            [
                ("if", [*base, yes >= 0, no >= 0, yes + no > 0, tr < ta], z3.Not(both)),
                ("only if", [*base, tr >= ta], z3.substitute(both, (yes, ta), (no, 1 - ta))),
            ],
            "Z3 proved: the regions are disjoint exactly when tau_reject < tau_accept.",
        )
    ]
    taus = (ta, tr, tt)
    for lone in _LONE:
        qname, sname = (
            ("quorum", "reviewers")
            if lone.ballot == "review"
            else ("q_dispute", "dispute_reviewers")
        )
        rng = [
            *base,
            *_rng(q, qname),
            *_rng(seats, sname),
            q <= seats,
            *_rng(side, "tally_min_side"),
            side <= q,  # the parameter relation: a unanimous quorum can decide
        ]
        if lone.vote == "reject":
            rng.append(tr < ta)  # the regions' relation, checked by disjoint-regions
        cfg = [
            reveals >= q,
            reveals <= seats,
            w >= wmin,
            w <= wmax,
            others >= (reveals - 1) * wmin,
            others <= (reveals - 1) * wmax,
        ]
        cond = _lone_condition(lone, q, wmin, wmax, taus, side)
        premises = _range_words(
            "tau_accept", "tau_reject", "tau_retract", "w_min", "w_max", qname, "tally_min_side"
        )
        out.append(
            _general(
                _Claim(
                    "TALLY-1",
                    lone.check,
                    "tally_1",
                    f"a lone {lone.vote} cannot win ⟺ {lone.condition}",
                    f"for all {premises}, w_min ≤ w_max, tally_min_side ≤ {qname}"
                    + (", tau_reject < tau_accept" if lone.vote == "reject" else "")
                    + f": no {lone.ballot} ballot with ≥ {qname} reveals lets a lone "
                    f"{lone.vote} (one voter) win against all the others (reveals − 1 voters) "
                    f"iff {lone.condition}; otherwise the lone agent at w_max against "
                    f"{qname} − 1 agents at w_min wins",
                ),
                [
                    (
                        "if",
                        [*rng, *cfg, cond],
                        z3.Not(_lone_wins(lone, w, others, reveals - 1, taus, side, 1)),
                    ),
                    (
                        "only if: the lone agent at w_max against the others at w_min wins",
                        [*rng, z3.Not(cond)],
                        _lone_wins(lone, wmax, (q - 1) * wmin, q - 1, taus, side, 1),
                    ),
                ],
                f"Z3 proved the condition exact: {lone.condition}.",
            )
        )
    return out


# --- REP-1 -----------------------------------------------------------------------------------


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


# --- REP-2 -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SybilBounds:
    """The fewest Sybils (each at w_min) that change an honest unanimous decision.

    ``None``: no number of Sybils can.  The honest side's worst case is exactly a quorum
    of honest reviewers, all at w_min; w_min then cancels.  (Honest weight H against an
    accept needs ⌊H·(1−tau_accept)/(tau_accept·w_min)⌋ + 1 Sybils.)  The side rule
    (``tally_min_side``) adds a head count wherever the Sybils' own side must win or the
    honest side's win must be undone: a dispute is never overturned by fewer than
    ``tally_min_side`` Sybils.
    """

    unaccept: int | None  # honest all accept → not accept (arbitration or reject)
    unreject: int | None  # honest all reject → not reject
    unretract: int | None  # honest all retract → keep
    force_retract: int | None  # honest all keep → retract
    review_seats: int  # reviewers − quorum: Sybil seats beside an honest quorum
    dispute_seats: int

    @property
    def review(self) -> int | None:
        return _min_opt(self.unaccept, self.unreject)

    @property
    def dispute(self) -> int | None:
        return _min_opt(self.unretract, self.force_retract)


def _min_opt(*xs: int | None) -> int | None:
    ys = [x for x in xs if x is not None]
    return min(ys) if ys else None


def sybil_bounds(p: Params) -> SybilBounds:
    """REP-2's bounds in closed form (micro-units; ``rep_2`` proves them tight).

    q honest voters (q = quorum or q_dispute: the worst case), all at w_min as the k
    Sybils are (w_min cancels); s = tally_min_side ≤ q, so the honest side alone always
    decides (its share is 1, its voters ≥ s); M = 10^6:

    * un-accept:  the share falls below τa:   q·M < τa·(q+k)        ⟺ k ≥ ⌊q(M − τa)/τa⌋ + 1
      (no head count: the Sybils need not win, arbitration is enough);
    * un-reject:  the share rises above τr (⟺ k ≥ ⌊q·τr/(M − τr)⌋ + 1), or the Sybils
      accept: k ≥ s and k·M ≥ τa·(q+k) (⟺ k ≥ max(s, ⌈q·τa/(M − τa)⌉); only below the
      first when tau_reject ≥ tau_accept);
    * un-retract: the share falls below τt **and** the Sybils are ≥ s keepers (fewer
      cannot hold the artifact):                                ⟺ k ≥ max(s, ⌊q(M − τt)/τt⌋ + 1)
    * force retract: the Sybils are ≥ s retracters with share ≥ τt: ⟺ k ≥ max(s, ⌈q·τt/(M − τt)⌉)

    With w_min = 0 honest reviewers may weigh 0 too: then only head counts decide, and s
    weightless Sybils turn an honest reject of weight 0 into an accept (0 ≥ 0) and an
    honest keep into a retraction; nothing else is overturned.
    """
    m = _M.of(p)
    q, qd, ta, tr, tt = m.quorum, m.q_dispute, m.tau_accept, m.tau_reject, m.tau_retract
    side = m.min_side

    def above(num: int, den: int) -> int | None:  # least k ≥ 0 with k·den > num
        return None if den <= 0 else num // den + 1

    def at_least(num: int, den: int) -> int | None:  # least k ≥ 0 with k·den ≥ num
        return None if den <= 0 else -(-num // den)

    def heads(k: int | None) -> int | None:  # the Sybils' side needs tally_min_side voters
        return None if k is None else max(side, k)

    seats = (m.reviewers - q, m.dispute_reviewers - qd)
    if m.w_min == 0:  # weightless Sybils: only against a weightless honest side, by heads
        return SybilBounds(None, side, None, side, *seats)
    unaccept = None if ta == 0 else above(q * (MICRO - ta), ta)
    unreject = _min_opt(above(q * tr, MICRO - tr), heads(at_least(q * ta, MICRO - ta)))
    unretract = None if tt == 0 else heads(above(qd * (MICRO - tt), tt))
    force = heads(at_least(qd * tt, MICRO - tt))
    return SybilBounds(unaccept, unreject, unretract, force, *seats)


def _sybil_model(m: _M, ballot: str) -> tuple[dict[str, Any], list[Any], Any]:
    """Variables, domain and the 'overturned' formula of one ballot kind.

    Honest: h ≥ quorum reveals, unanimous (``yes``: accept/retract, else reject/keep),
    total weight in [h·w_min, h·w_max], and their side wins on their reveals alone (an
    honest *decision*).  k Sybils at w_min reveal the other way: k voters on the other
    side (the side rule counts them).  Overturned: the verdict with the Sybils' reveals
    differs from the honest decision.
    """
    h, k, hw = z3.Ints("honest sybils honest_weight")
    side = z3.Bool("yes")
    q = m.quorum if ballot == "review" else m.q_dispute
    s = m.min_side

    def verdict(yes: Any, no: Any, ny: Any, nn: Any) -> Any:
        if ballot == "dispute":
            return z3.If(_z_retracts(yes, no, ny, nn, m.tau_retract, s, MICRO), 1, -1)
        acc = _z_accepts(yes, no, ny, m.tau_accept, s, MICRO)
        rej = _z_rejects(yes, no, ny, nn, m.tau_accept, m.tau_reject, s, MICRO)
        return z3.If(acc, 1, z3.If(rej, -1, 0))

    sw = k * m.w_min
    alone = z3.If(side, verdict(hw, 0, h, 0), verdict(0, hw, 0, h))
    mixed = z3.If(side, verdict(hw, sw, h, k), verdict(sw, hw, k, h))
    decided = alone == z3.If(side, 1, -1)
    dom = [h >= q, k >= 0, hw >= h * m.w_min, hw <= h * m.w_max, decided]
    return {"honest": h, "sybils": k, "honest_weight": hw, "yes": side, "q": q}, dom, mixed != alone


def rep_2(params: Params | None = None) -> list[TheoremResult]:
    """REP-2: k Sybils at w_min cannot overturn an honest decision unless k ≥ bound(params).

    An *honest decision*: at least a quorum of honest reviewers reveal, unanimously, with
    weights in [w_min, w_max], and their side wins on their reveals alone.  The Sybils
    reveal the other way at w_min (a fresh identity's weight); they *overturn* the
    decision when the verdict with their reveals differs (review: accept → arbitration or
    reject, reject → arbitration or accept; dispute: retract ↔ keep).  Verdicts are
    voting.py's, the side rule included (the Sybils are k voters).  ``sybil_bounds``
    gives the bound; Z3 proves no smaller k overturns anything (``*-bound``) and
    ``Optimize`` finds the least k that does, which must equal it (``*-tight``).
    ``seats`` is what a parameter file can fail: the seats a ballot leaves beside an
    honest quorum (reviewers − quorum) must be fewer than the bound, so Sybils recruited
    into one ballot cannot overturn it.
    """
    return _rep2_general() if params is None else _rep2_concrete(params)


def _rep2_concrete(p: Params) -> list[TheoremResult]:
    m = _M.of(p)
    bounds = sybil_bounds(p)
    facts = {
        "review_bound": bounds.review,
        "unaccept": bounds.unaccept,
        "unreject": bounds.unreject,
        "dispute_bound": bounds.dispute,
        "unretract": bounds.unretract,
        "force_retract": bounds.force_retract,
        "review_seats": bounds.review_seats,
        "dispute_seats": bounds.dispute_seats,
        "tally_min_side": m.min_side,
    }
    out = []
    for ballot, bound in (("review", bounds.review), ("dispute", bounds.dispute)):
        v, dom, overturned = _sybil_model(m, ballot)
        k = v["sybils"]
        qname = "quorum" if ballot == "review" else "q_dispute"
        bound_txt = "∞" if bound is None else str(bound)
        least: list[Objective] = [("min", k), ("min", v["honest_weight"])]

        def explain(
            model: Any, ballot: str = ballot, v: dict[str, Any] = v
        ) -> tuple[str, dict[str, Any]]:
            return _sybil_words(m, p, ballot, v, model)

        out.append(
            _check(
                _Claim(
                    "REP-2",
                    f"{ballot}-bound",
                    "rep_2",
                    f"fewer than {bound_txt} Sybils cannot overturn a {ballot}",
                    f"no honest unanimous {ballot} decision (≥ {qname} = {v['q']} honest "
                    f"reveals, weights in [{_dec(m.w_min)}, {_dec(m.w_max)}]) changes when k < "
                    f"{bound_txt} Sybils at w_min = {_dec(m.w_min)} reveal the other way "
                    f"(voting.py's verdicts, the side rule with tally_min_side = "
                    f"{m.min_side} included)",
                ),
                dom if bound is None else [*dom, k < bound],
                z3.Not(overturned),
                proved=(
                    f"Z3 proved it: no k < {bound_txt} overturns an honest {ballot} decision, "
                    f"whatever the honest count (≥ {v['q']}) and weights."
                ),
                explain=explain,
                objectives=least,
                facts=facts,
            )
        )
        # tight: Optimize finds the least k that overturns anything; it must be the bound
        clock = _Clock()
        claim = _Claim(
            "REP-2",
            f"{ballot}-tight",
            "rep_2",
            f"the {ballot} bound is tight (Optimize)",
            f"the least k for which some honest unanimous {ballot} decision is overturned "
            f"is {bound_txt if bound is not None else '∞ (none is)'}",
        )
        found, model = _optimum([*dom, overturned], least)
        if found is Status.UNKNOWN:
            out.append(claim.result(found, _unknown(model), clock, facts=facts))
        elif found is Status.PROVED:  # nothing overturns
            ok = bound is None
            text = (
                "Z3: no number of Sybils overturns an honest decision (unsat)."
                if ok
                else f"Optimize found nothing to overturn, yet the formula says {bound}."
            )
            out.append(
                claim.result(Status.PROVED if ok else Status.REFUTED, text, clock, facts=facts)
            )
        else:
            k_min = _int(model, k)
            words, cex = _sybil_words(m, p, ballot, v, model)
            status = Status.PROVED if k_min == bound else Status.REFUTED
            verdict = " = the bound." if k_min == bound else f", but the formula says {bound_txt}."
            text = f"Optimize: the least k is {k_min}{verdict} Instance: {words}"
            out.append(claim.result(status, text, clock, cex, facts))
    out.append(_seats_check(m, p, bounds, facts))
    return out


def _seats_check(m: _M, p: Params, bounds: SybilBounds, facts: dict[str, Any]) -> TheoremResult:
    """Sybils fitting beside an honest quorum in one ballot cannot overturn it."""
    clock = _Clock()
    claim = _Claim(
        "REP-2",
        "seats",
        "rep_2",
        "Sybils in one ballot's spare seats cannot overturn it",
        f"with reviewers = {m.reviewers}, quorum = {m.quorum} (disputes: "
        f"{m.dispute_reviewers}, {m.q_dispute}), the Sybils that fit beside an honest quorum "
        f"in one ballot cannot overturn its honest unanimous decision; holds iff the review "
        f"bound > reviewers − quorum and the dispute bound > dispute_reviewers − q_dispute",
    )
    for ballot, seats in (("review", m.reviewers), ("dispute", m.dispute_reviewers)):
        v, dom, overturned = _sybil_model(m, ballot)
        fit = [*dom, v["honest"] + v["sybils"] <= seats]
        status, info = _solve(fit, z3.Not(overturned))
        if status is Status.UNKNOWN:
            return claim.result(status, _unknown(info), clock, facts=facts)
        if status is Status.REFUTED:
            found, model = _optimum(
                [*fit, overturned], [("min", v["sybils"]), ("min", v["honest_weight"])]
            )
            model = model if found is Status.REFUTED else info
            words, cex = _sybil_words(m, p, ballot, v, model)
            text = (
                f"a {ballot} ballot has {seats} seats: {words} So {_int(model, v['sybils'])} "
                f"Sybil reviewers recruited into one ballot are enough."
            )
            return claim.result(Status.REFUTED, text, clock, cex, facts)
    text = (
        f"Z3 proved it: at most {bounds.review_seats} Sybil seats beside a review quorum "
        f"(bound {bounds.review}), {bounds.dispute_seats} beside a dispute quorum (bound "
        f"{bounds.dispute})."
    )
    return claim.result(Status.PROVED, text, clock, facts=facts)


def _sybil_words(
    m: _M, p: Params, ballot: str, v: dict[str, Any], model: Any
) -> tuple[str, dict[str, Any]]:
    h, k, hw = (_int(model, v[x]) for x in ("honest", "sybils", "honest_weight"))
    yes_side = z3.is_true(model.eval(v["yes"], model_completion=True))
    honest_ws = _split(hw, h, m.w_min, m.w_max)
    sybil_ws = [m.w_min] * k
    votes = ("accept", "reject") if ballot == "review" else ("retract", "keep")
    hv, sv = votes if yes_side else votes[::-1]
    yes, no = (honest_ws, sybil_ws) if yes_side else (sybil_ws, honest_ws)
    replay = replay_review if ballot == "review" else replay_dispute
    before = replay(*((honest_ws, []) if yes_side else ([], honest_ws)), p)
    after = replay(yes, no, p)
    share_name = "accept share" if ballot == "review" else "retract share"
    text = (
        f"{h} honest reviewers, {_agents(honest_ws, 1, 'h')}, vote {hv}: alone they decide "
        f"{before}. {k} Sybil(s) at w_min = {_dec(m.w_min)} vote {sv} "
        f"({'at least' if k >= m.min_side else 'fewer than'} tally_min_side = {m.min_side} "
        f"voters): the {share_name} "
        f"becomes {_dec(sum(yes))} / {_dec(sum(yes) + sum(no))} = "
        f"{_share(sum(yes), sum(yes) + sum(no))} and the verdict "
        f"{_VERDICT_WORDS.get(after, after)}."
    )
    cex = {
        "ballot": ballot,
        "honest": [{"weight": _dec(x), "vote": hv} for x in honest_ws],
        "sybils": [{"weight": _dec(x), "vote": sv} for x in sybil_ws],
        "decision_without_sybils": before,
        "decision_with_sybils": after,
    }
    return text, cex


def _rep2_general() -> list[TheoremResult]:
    ta, tr, tt, wmin, wmax, hw = z3.Reals("tau_accept tau_reject tau_retract w_min w_max H")
    q, k, h, s = z3.Ints("quorum k honest tally_min_side")
    base = [
        *_rng(ta, "tau_accept"),
        *_rng(tr, "tau_reject"),
        *_rng(tt, "tau_retract"),
        *_rng(wmin, "w_min"),
        *_rng(wmax, "w_max"),
        *_rng(q, "quorum"),
        *_rng(s, "tally_min_side"),
        s <= q,  # the parameter relation: a unanimous quorum can decide
        wmin <= wmax,
        tr < ta,
        k >= 0,
        h >= q,
        hw >= h * wmin,
        hw <= h * wmax,
    ]
    heavy = [*base, wmin > 0]
    light = [*base, wmin == 0]
    sw, w_q = k * wmin, q * wmin  # the Sybils' weight; the witness: a quorum at w_min
    # accept side: k·τa ≤ q(1−τa); reject side: k(1−τr) ≤ q·τr  (k over reals: the least
    # integer above each is the tight integer bound)
    x_a, x_r, x_t = q * (1 - ta), q * tr, q * (1 - tt)

    def accepts(yes: Any, no: Any, ny: Any) -> Any:
        return _z_accepts(yes, no, ny, ta, s, 1)

    def rejects(yes: Any, no: Any, ny: Any, nn: Any) -> Any:
        return _z_rejects(yes, no, ny, nn, ta, tr, s, 1)

    def retracts(yes: Any, no: Any, ny: Any, nn: Any) -> Any:
        return _z_retracts(yes, no, ny, nn, tt, s, 1)

    ranges = _range_words("tau_accept", "tau_reject", "w_min", "w_max", "quorum", "tally_min_side")
    review = _general(
        _Claim(
            "REP-2",
            "review-bound",
            "rep_2",
            "least Sybils to overturn a review = min(⌊q(1−τa)/τa⌋+1, ⌊q·τr/(1−τr)⌋+1) "
            "(w_min > 0; tally_min_side if w_min = 0)",
            f"for all {ranges}, w_min ≤ w_max, tau_reject < tau_accept, tally_min_side ≤ "
            "quorum, with voting.py's side rule: for w_min > 0 an honest unanimous accept (≥ "
            "quorum honest reveals, any weights in range) survives every k ≤ q(1−τa)/τa "
            "Sybil rejects, and a quorum of honest reviewers at w_min survives no larger k; "
            "an honest unanimous reject survives every k ≤ q·τr/(1−τr) Sybil accepts and the "
            "same witness survives no more (the Sybils need not win: arbitration is enough, "
            "so the side rule does not raise this bound); for w_min = 0 fewer than "
            "tally_min_side weightless Sybils never overturn, and tally_min_side of them "
            "accept against an honest reject of weight 0",
        ),
        [
            ("accept survives", [*heavy, k * ta <= x_a], accepts(hw, sw, h)),
            ("accept falls", [*heavy, k * ta > x_a], z3.Not(accepts(w_q, sw, q))),
            ("reject survives", [*heavy, k * (1 - tr) <= x_r], rejects(sw, hw, k, h)),
            ("reject falls", [*heavy, k * (1 - tr) > x_r], z3.Not(rejects(sw, w_q, k, q))),
            (
                "w_min = 0: fewer than tally_min_side Sybils",
                [*light, k < s],
                z3.And(accepts(hw, 0, h), rejects(0, hw, k, h)),
            ),
            (
                "w_min = 0: an accept of weight 0 at tally_min_side",
                [*light, k >= s],
                z3.Not(rejects(0, 0, k, q)),
            ),
        ],
        "Z3 proved both bounds exact for all parameter values in range (so the least integer "
        "above each is tight), and the weightless case: tally_min_side Sybils at w_min = 0.",
    )
    dispute = _general(
        _Claim(
            "REP-2",
            "dispute-bound",
            "rep_2",
            "least Sybils to overturn a dispute = max(tally_min_side, min(⌊q(1−τt)/τt⌋+1, "
            "⌈q·τt/(1−τt)⌉)) (w_min > 0; tally_min_side if w_min = 0)",
            f"for all {_range_words('tau_retract', 'w_min', 'w_max', 'tally_min_side')}, q = "
            "q_dispute ≥ tally_min_side, w_min ≤ w_max, with voting.py's side rule: for w_min "
            "> 0 an honest unanimous retract survives every k ≤ q(1−τt)/τt Sybil keeps and "
            "every k < tally_min_side (too few keepers to hold the artifact), and a quorum at "
            "w_min survives no other k; an honest unanimous keep survives every k < "
            "q·τt/(1−τt) Sybil retracts and every k < tally_min_side, and the same witness "
            "survives no other k; for w_min = 0 an honest retract always survives, an honest "
            "keep survives fewer than tally_min_side Sybils, and tally_min_side of them "
            "retract one of weight 0",
        ),
        [
            (
                "retract survives",
                [*heavy, tt > 0, z3.Or(k * tt <= x_t, k < s)],
                retracts(hw, sw, h, k),
            ),
            (
                "retract falls",
                [*heavy, tt > 0, k * tt > x_t, k >= s],
                z3.Not(retracts(w_q, sw, q, k)),
            ),
            ("retract at tau_retract = 0 never falls", [*heavy, tt == 0], retracts(hw, sw, h, k)),
            (
                "keep survives",
                [*heavy, tt < 1, z3.Or(k * (1 - tt) < q * tt, k < s)],
                z3.Not(retracts(sw, hw, k, h)),
            ),
            (
                "keep falls",
                [*heavy, tt < 1, k * (1 - tt) >= q * tt, k >= s],
                retracts(sw, w_q, k, q),
            ),
            (
                "keep at tau_retract = 1 never falls",
                [*heavy, tt == 1],
                z3.Not(retracts(sw, hw, k, h)),
            ),
            ("w_min = 0: a retract survives", light, retracts(hw, 0, h, k)),
            (
                "w_min = 0: fewer than tally_min_side Sybils",
                [*light, k < s],
                z3.Not(retracts(0, hw, k, h)),
            ),
            (
                "w_min = 0: a retract of weight 0 at tally_min_side",
                [*light, k >= s],
                retracts(0, 0, k, q),
            ),
        ],
        "Z3 proved both dispute bounds exact for all parameter values in range, the side "
        "rule's tally_min_side included.",
    )
    return [review, dispute]


# --- FG-1 ------------------------------------------------------------------------------------


def fg_min_population(p: Params) -> tuple[int | None, int | None]:
    """The smallest populations for FG-1: (no lone forgetter, Q > w_max); None if none.

    * no lone forgetter — exact, what ``min_active_agents`` must reach (equal to
      ``forgetting.fg1_min_active``): w_max·(10^6 − alpha) < alpha·(N − 1)·w_min (the voter
      is in Q), or w_max = 0 (no vote has S > 0): N = 1;
    * DESIGN §5's Q > w_max for every population, sufficient but not necessary:
      alpha·N·w_min > 10^6·w_max.
    """
    m = _M.of(p)
    den = m.alpha * m.w_min
    literal = None if den == 0 else MICRO * m.w_max // den + 1
    if m.w_max == 0:
        return 1, literal
    if den == 0:
        return None, literal
    return m.w_max * (MICRO - m.alpha) // den + 2, literal


def fg_1(
    params: Params | None = None, *, min_active_agents: int | None = None
) -> list[TheoremResult]:
    """FG-1: no single agent can make an artifact forgotten.

    The forget rule (docs/rules.md): an artifact in a forgettable state is forgotten at a
    tick iff S = Σ w_i·c_i over the active forget voters is positive, S ≥ Q = alpha·Σ w
    over the active (non-barred) agents, and at least ``min_active_agents`` agents are
    active — the orchestrator's micro² arithmetic.  The lone voter (confidence ≤ 1,
    weight ≤ w_max) is itself in Q, so a small population always lets one agent forget
    (with one agent, Q = alpha·w ≤ w): ``min_active_agents`` is FG-1's population floor.
    ``no-lone-forgetter`` holds iff min_active_agents ≥ ``fg_min_population(params)[0]``,
    i.e. w_max·(1−alpha) < alpha·(min_active_agents − 1)·w_min (or w_max = 0); no
    population suffices when alpha = 0 or w_min = 0.  ``min_active_agents`` (the argument)
    checks the file as if it set that value (CLI ``--min-active-agents``).

    DESIGN §5's "Q > w_max for every allowed population" (alpha·N·w_min > w_max) is
    sufficient, not necessary: it ignores that the voter's own weight counts in Q.  It is
    reported as a derived number and proved as a relation in the general theorems.
    """
    if params is None:
        return _fg_general()
    p = params
    if min_active_agents is not None and min_active_agents != p.min_active_agents:
        p = dataclasses.replace(p, min_active_agents=min_active_agents)
    m = _M.of(p)
    n_min = m.min_active
    lone_n, literal_n = fg_min_population(p)
    facts = {
        "min_active_agents": n_min,
        "least_population_no_lone_forgetter": lone_n,
        "least_population_quorum_above_w_max": literal_n,
    }
    if lone_n is None:
        need = (
            "No population is large enough (alpha = 0 or w_min = 0): one agent at w_max "
            "always reaches Q."
        )
    else:
        need = (
            f"FG-1 needs min_active_agents ≥ {lone_n}, the least N with (1 − alpha)·w_max < "
            f"alpha·(N − 1)·w_min."
        )

    # The lone score S = w·c is bounded by 0 ≤ S ≤ w·10^6 instead of multiplying two
    # unknowns (linear, so Z3 decides it fast): a superset of the real scores, so a proof
    # covers them; a counterexample maximises S, i.e. c = 1, and is replayed exactly.
    n, w, score, rest = z3.Ints("agents voter_weight score rest")
    band = f"[{_dec(m.w_min)}, {_dec(m.w_max)}]"

    def lone(model: Any) -> tuple[str, dict[str, Any]]:
        nv, wv, sv, rv = (_int(model, x) for x in (n, w, score, rest))
        cv = MICRO if wv == 0 else min(MICRO, -(-sv // wv))  # a confidence giving ≥ S
        others = _split(rv, nv - 1, m.w_min, m.w_max)
        weights = [wv, *others]
        q_val, s_val = Fraction(m.alpha * sum(weights), MICRO), Fraction(wv * cv, MICRO)
        forgotten = replay_forget(wv * cv, weights, p)
        text = (
            f"{nv} active agents (min_active_agents = {n_min}, so the forget rule decides): "
            f"a1 with weight {_dec(wv)} votes forget with confidence {_dec(cv)}; "
            f"{_agents(others, 2)} do not vote. S = {_dec(s_val)} > 0 and Q = {_dec(m.alpha)} "
            f"× {_dec(sum(weights))} = {_dec(q_val)} ≤ S: a1 makes the artifact forgotten "
            f"alone (forget rule → {'forgotten' if forgotten else 'kept'}). {need}"
        )
        cex = {
            "agents": nv,
            "min_active_agents": n_min,
            "voter": {"agent": "a1", "weight": _dec(wv), "confidence": _dec(cv)},
            "others": [_dec(x) for x in others],
            "Q": _dec(q_val),
            "S": _dec(s_val),
            "replay_forgotten": forgotten,
        }
        return text, cex

    if m.w_max == 0:
        proved = "Z3 proved it: every weight is 0, so no forget vote has S > 0."
    else:
        proved = (
            f"Z3 proved it: with at least min_active_agents = {n_min} active agents (the "
            f"forget rule decides nothing with fewer) no single vote reaches Q. {need}"
        )
    least = "never" if lone_n is None else f"min_active_agents ≥ {lone_n}"
    return [
        _check(
            _Claim(
                "FG-1",
                "no-lone-forgetter",
                "fg_1",
                "no single agent can make an artifact forgotten",
                f"in every population of ≥ {n_min} active agents (min_active_agents: no "
                f"forget decision with fewer) with weights in {band}, one forget vote "
                f"(confidence ≤ 1) never has S > 0 and S ≥ Q = alpha·Σw, alpha = "
                f"{_dec(m.alpha)}; holds iff w_max·(1 − alpha) < alpha·(min_active_agents − "
                f"1)·w_min or w_max = 0 (here: {least})",
            ),
            [
                n >= n_min,
                w >= m.w_min,
                w <= m.w_max,
                score >= 0,
                score <= w * MICRO,
                rest >= (n - 1) * m.w_min,
                rest <= (n - 1) * m.w_max,
            ],
            z3.Not(z3.And(score > 0, score >= m.alpha * (w + rest))),
            proved=proved,
            explain=lone,
            objectives=[("min", n), ("max", w), ("max", score), ("min", rest)],
            facts=facts,
        )
    ]


def _fg_general() -> list[TheoremResult]:
    al, wmin, wmax, w, c, rest, total = z3.Reals("alpha w_min w_max w c rest total")
    big_n, n = z3.Ints("min_active_agents agents")
    base = [
        *_rng(al, "alpha"),
        *_rng(wmin, "w_min"),
        *_rng(wmax, "w_max"),
        *_rng(big_n, "min_active_agents"),
        wmin <= wmax,
    ]
    cfg = [
        n >= big_n,
        w >= wmin,
        w <= wmax,
        c >= 0,
        c <= 1,
        rest >= (n - 1) * wmin,
        rest <= (n - 1) * wmax,
    ]
    lone = z3.Or(wmax == 0, wmax * (1 - al) < al * (big_n - 1) * wmin)
    literal = al * big_n * wmin > wmax
    ranges = _range_words("alpha", "w_min", "w_max", "min_active_agents")
    return [
        _general(
            _Claim(
                "FG-1",
                "no-lone-forgetter",
                "fg_1",
                "no lone forgetter ⟺ w_max·(1−alpha) < alpha·(min_active_agents−1)·w_min "
                "or w_max = 0",
                f"for all {ranges}, w_min ≤ w_max: no single forget vote (S = w·c > 0 and S ≥ "
                "Q = alpha·Σw) in any population of ≥ min_active_agents agents iff "
                "w_max·(1−alpha) < alpha·(min_active_agents−1)·w_min or w_max = 0; otherwise "
                "the agent at w_max with confidence 1 among min_active_agents − 1 agents at "
                "w_min forgets alone",
            ),
            [
                ("if", [*base, *cfg, lone], z3.Not(z3.And(w * c > 0, w * c >= al * (w + rest)))),
                (
                    "only if: one agent at w_max among min_active_agents − 1 at w_min",
                    [*base, z3.Not(lone)],
                    z3.And(wmax > 0, wmax >= al * (wmax + (big_n - 1) * wmin)),
                ),
            ],
            "Z3 proved the relation exact for every alpha, w_min, w_max and min_active_agents "
            "in range.",
        ),
        _general(
            _Claim(
                "FG-1",
                "quorum-above-w_max",
                "fg_1",
                "DESIGN §5's sufficient form: Q > w_max for every population ⟺ "
                "alpha·N·w_min > w_max",
                f"for all {ranges}, w_min ≤ w_max, N = min_active_agents: alpha·Σw > w_max for "
                "every population of ≥ N agents iff alpha·N·w_min > w_max (the smallest Q is N "
                "agents at w_min); it implies no-lone-forgetter (S ≤ w_max < Q) but is not "
                "needed for it: the voter's own weight counts in Q",
            ),
            [
                (
                    "if",
                    [*base, literal, total >= big_n * wmin, total <= big_n * wmax],
                    al * total > wmax,
                ),
                (
                    "only if: N agents at w_min",
                    [*base, z3.Not(literal)],
                    al * big_n * wmin <= wmax,
                ),
            ],
            "Z3 proved the relation exact; it implies no-lone-forgetter (S ≤ w_max < Q).",
        ),
    ]


# --- threshold monotonicity ------------------------------------------------------------------

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


# --- entry points ----------------------------------------------------------------------------

#: Theorem functions by property id.  The z3 layer of spec/properties.toml names them
#: ``ostrom.verify.thresholds::<function>`` (``resolve`` turns a name back into the function).
THEOREMS: Final[dict[str, Theorem]] = {
    "TALLY-1": tally_1,
    "REP-1": rep_1,
    "REP-2": rep_2,
    "FG-1": fg_1,
    "BFT-QUORUM-1": bft_quorum_1,
    "TIER-MONO": tier_mono,
    "SAN-MONO": san_mono,
}


def resolve(name: str) -> Theorem:
    """A registry z3 checker name, ``ostrom.verify.thresholds::tally_1``, as its function."""
    module, _, func = name.partition("::")
    for theorem in THEOREMS.values():
        if module == __name__ and theorem.__name__ == func:
            return theorem
    raise KeyError(f"{name}: not a theorem of {__name__} (expected {__name__}::<function>)")


def prove_all(
    params: Params = DEFAULTS, *, min_active_agents: int | None = None
) -> list[TheoremResult]:
    """Every concrete check for one parameter set (what ``ostrom check-params`` prints).

    ``min_active_agents`` checks FG-1 as if the set had that value (CLI
    ``--min-active-agents``); by default the set's own ``min_active_agents`` counts.
    """
    out: list[TheoremResult] = []
    for theorem in THEOREMS.values():
        if theorem is fg_1:
            out += fg_1(params, min_active_agents=min_active_agents)
        else:
            out += theorem(params)
    return out


def prove_general() -> list[TheoremResult]:
    """Every check for all parameter values in the table's ranges (symbolic parameters)."""
    return [r for theorem in THEOREMS.values() for r in theorem(None)]


def failures(results: Iterable[TheoremResult]) -> list[TheoremResult]:
    """The results that are not as expected: an unexpected refutation, or unknown."""
    return [r for r in results if not r.ok]


def derived_bounds(params: Params, *, min_active_agents: int | None = None) -> dict[str, Any]:
    """The numbers the theorems derive for ``params`` (for the CLI and the docs)."""
    b = sybil_bounds(params)
    lone_n, literal_n = fg_min_population(params)
    n_min = params.min_active_agents if min_active_agents is None else min_active_agents
    m = _M.of(params)
    ratio = None if m.w_min == 0 else m.w_max / m.w_min

    def limit(num: int, den: int) -> float | None:  # None: any ratio will do (∞)
        if den == 0:
            return None if num > 0 else 0.0
        return num / den

    # TALLY-1: the largest w_max/w_min each lone check allows (strict for the first three)
    # when tally_min_side = 1; with the side rule (≥ 2) the weights do not matter
    ta, tr, tt, q, qd = m.tau_accept, m.tau_reject, m.tau_retract, m.quorum, m.q_dispute
    limits = {
        "review-lone-accept": limit(ta * (q - 1), MICRO - ta),
        "review-lone-reject": limit((MICRO - tr) * (q - 1), tr),
        "dispute-lone-retract": limit(tt * (qd - 1), MICRO - tt),
        "dispute-lone-keep": limit((MICRO - tt) * (qd - 1), tt),
    }
    return {
        "tally_min_side": m.min_side,
        "tally_lone_keep_by_heads": qd <= m.min_side,  # q_dispute ≤ tally_min_side
        "tally_weight_ratio": ratio,
        "tally_ratio_limits": limits,
        "sybil_review_bound": b.review,
        "sybil_dispute_bound": b.dispute,
        "sybil_review_seats": b.review_seats,
        "sybil_dispute_seats": b.dispute_seats,
        "forget_min_active_agents": n_min,
        "forget_least_population_no_lone_forgetter": lone_n,
        "forget_least_population_quorum_above_w_max": literal_n,
    }
