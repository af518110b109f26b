"""TALLY-1: accept and reject regions are disjoint; no single agent decides a quorum vote."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

import z3

from ostrom.protocol.agents import MICRO
from ostrom.protocol.params import Params
from ostrom.protocol.voting import Tally, review_verdict
from ostrom.verify.thresholds.result import TheoremResult
from ostrom.verify.thresholds.solver import _check, _Claim, _general, _int, _range_words, _rng
from ostrom.verify.thresholds.verdicts import (
    _M,
    _z_accepts,
    _z_rejects,
    _z_retracts,
    replay_dispute,
    replay_review,
)
from ostrom.verify.thresholds.words import _agents, _dec, _share, _split

__all__ = ["tally_1"]


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
