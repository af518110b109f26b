"""REP-2: the fewest Sybils that change an honest unanimous decision, proved tight."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from ostrom.protocol.agents import MICRO
from ostrom.protocol.params import Params
from ostrom.verify.thresholds.result import Status, TheoremResult
from ostrom.verify.thresholds.solver import (
    Objective,
    _check,
    _Claim,
    _Clock,
    _general,
    _int,
    _optimum,
    _range_words,
    _rng,
    _solve,
    _unknown,
)
from ostrom.verify.thresholds.verdicts import (
    _M,
    _z_accepts,
    _z_rejects,
    _z_retracts,
    replay_dispute,
    replay_review,
)
from ostrom.verify.thresholds.words import _VERDICT_WORDS, _agents, _dec, _share, _split

__all__ = ["SybilBounds", "rep_2", "sybil_bounds"]


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
