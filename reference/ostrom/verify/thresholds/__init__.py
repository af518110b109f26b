"""What Z3 proves about the parameters: every numeric threshold of the protocol as a theorem.

Each theorem is a function named after its property id (docs/design.md §7), in a module named for
the property (``tally``: TALLY-1, ``decay``: REP-1, ``sybil``: REP-2, ``forgetting``: FG-1,
``quorum``: BFT-QUORUM-1, ``monotone``: TIER-MONO and SAN-MONO) over shared plumbing
(``result``, ``params_file``, ``solver``, ``verdicts``, ``words``), and is stated two ways:

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

from collections.abc import Iterable
from typing import Any, Final

from ostrom.protocol.agents import MICRO
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.verify.thresholds.decay import (
    DecayRule,
    beta_decay,
    plain_decay,
    plain_rule,
    rep_1,
    repaired_rule,
)
from ostrom.verify.thresholds.forgetting import fg_1, fg_min_population
from ostrom.verify.thresholds.monotone import san_mono, tier_mono
from ostrom.verify.thresholds.params_file import UncheckedParams, load_params
from ostrom.verify.thresholds.quorum import QuorumRule, bft_quorum_1, flat_rule, implementation_rule
from ostrom.verify.thresholds.result import Status, Theorem, TheoremResult
from ostrom.verify.thresholds.solver import TIMEOUT_MS
from ostrom.verify.thresholds.sybil import SybilBounds, rep_2, sybil_bounds
from ostrom.verify.thresholds.tally import tally_1
from ostrom.verify.thresholds.verdicts import _M, replay_dispute, replay_forget, replay_review

__all__ = [
    "THEOREMS",
    "TIMEOUT_MS",
    "DecayRule",
    "QuorumRule",
    "Status",
    "SybilBounds",
    "Theorem",
    "TheoremResult",
    "UncheckedParams",
    "beta_decay",
    "bft_quorum_1",
    "derived_bounds",
    "failures",
    "fg_1",
    "fg_min_population",
    "flat_rule",
    "implementation_rule",
    "load_params",
    "plain_decay",
    "plain_rule",
    "prove_all",
    "prove_general",
    "rep_1",
    "rep_2",
    "repaired_rule",
    "replay_dispute",
    "replay_forget",
    "replay_review",
    "resolve",
    "san_mono",
    "sybil_bounds",
    "tally_1",
    "tier_mono",
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
