"""FG-1: no single agent can make an artifact forgotten (the population rule)."""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import z3

from ostrom.protocol.agents import MICRO
from ostrom.protocol.params import Params
from ostrom.verify.thresholds.result import TheoremResult
from ostrom.verify.thresholds.solver import _check, _Claim, _general, _int, _range_words, _rng
from ostrom.verify.thresholds.verdicts import _M, replay_forget
from ostrom.verify.thresholds.words import _agents, _dec, _split

__all__ = ["fg_1", "fg_min_population"]


def fg_min_population(p: Params) -> tuple[int | None, int | None]:
    """The smallest populations for FG-1: (no lone forgetter, Q > w_max); None if none.

    * no lone forgetter — exact, what ``min_active_agents`` must reach (equal to
      ``forgetting.fg1_min_active``): w_max·(10^6 − alpha) < alpha·(N − 1)·w_min (the voter
      is in Q), or w_max = 0 (no vote has S > 0): N = 1;
    * docs/design.md §5's Q > w_max for every population, sufficient but not necessary:
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

    docs/design.md §5's "Q > w_max for every allowed population" (alpha·N·w_min > w_max) is
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
                "docs/design.md §5's sufficient form: Q > w_max for every population ⟺ "
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
