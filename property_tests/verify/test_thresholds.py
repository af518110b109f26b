"""The Z3 threshold theorems (TALLY-1, REP-1, REP-2, FG-1, BFT-QUORUM-1, TIER-MONO, SAN-MONO).

Every check is shown both ways: proved where it should be, and refuted — with the expected
counterexample — for a crafted bad parameter set (so no check is vacuous).  Hypothesis
then cross-checks Z3 against plain arithmetic: for random parameter sets, whenever Z3
proves TALLY-1 or FG-1 a brute-force search over small populations (through voting.py's
verdicts and the orchestrator's forget arithmetic) finds no violation, and whenever Z3
refutes one its counterexample, replayed, really violates.  REP-2's bounds are triangulated
between the closed form, Z3's Optimize and a brute-force minimum.
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import z3
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.cli.main import main
from ostrom.consensus.replica import quorum as replica_quorum
from ostrom.protocol import forgetting
from ostrom.protocol.agents import MICRO, Agent, micro
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import DEFAULTS, ParamError, Params, table
from ostrom.protocol.voting import Tally, dispute_verdict, review_verdict
from ostrom.verify import registry, thresholds
from ostrom.verify.thresholds import Status, TheoremResult
from ostrom.verify.thresholds import tally as tally_theorem
from ostrom.verify.thresholds.tally import _lone_weights

# one xdist worker holds the module's fixture (--dist loadfile, conftest.py)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "params"
LONE_CHECKS = (
    "review-lone-accept",
    "review-lone-reject",
    "dispute-lone-retract",
    "dispute-lone-keep",
)
#: A parameter set for which every theorem holds *without* the side rule (tally_min_side =
#: 1): the defaults with w_min raised so that w_max/w_min = 1/0.55 stays below every TALLY-1
#: weight limit (the tightest is dispute-lone-keep).  The defaults hold by the side rule.
SAFE = {"tally_min_side": 1, "w_min": 0.55}
#: The names the z3 layer of spec/properties.toml should use.
Z3_CHECKERS = {
    "TALLY-1": "ostrom.verify.thresholds::tally_1",
    "REP-1": "ostrom.verify.thresholds::rep_1",
    "REP-2": "ostrom.verify.thresholds::rep_2",
    "FG-1": "ostrom.verify.thresholds::fg_1",
    "BFT-QUORUM-1": "ostrom.verify.thresholds::bft_quorum_1",
}


def by_name(results: list[TheoremResult]) -> dict[str, TheoremResult]:
    names = [r.name for r in results]
    assert len(names) == len(set(names)), names
    return {r.name: r for r in results}


def failed(results: list[TheoremResult]) -> set[str]:
    return {r.name for r in thresholds.failures(results)}


# --- the defaults ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def defaults() -> dict[str, TheoremResult]:
    return by_name(thresholds.prove_all(DEFAULTS))


def test_every_theorem_runs_on_the_defaults(defaults: dict[str, TheoremResult]) -> None:
    assert {r.id for r in defaults.values()} == set(thresholds.THEOREMS)
    assert all(r.status is not Status.UNKNOWN for r in defaults.values())


def test_defaults_prove_every_theorem(defaults: dict[str, TheoremResult]) -> None:
    """The defaults (docs/design.md §8) prove TALLY-1 (by the side rule, tally_min_side = 2),
    REP-1, REP-2, FG-1 (by the population floor, min_active_agents = 12), BFT-QUORUM-1,
    TIER-MONO and SAN-MONO; the two contrasts are refuted as expected."""
    assert failed(list(defaults.values())) == set()
    for name, r in defaults.items():
        assert r.ok and r.status is r.expected, (name, r.explanation)
    for check in LONE_CHECKS:  # by the side rule: the weights alone would not do
        facts = defaults[f"TALLY-1/{check}"].facts
        assert facts["condition_holds"] and not facts["weight_condition_holds"], check
        assert facts["tally_min_side"] == 2
    fg = defaults["FG-1/no-lone-forgetter"]
    assert fg.facts["min_active_agents"] == DEFAULTS.min_active_agents == 12
    assert fg.facts["least_population_no_lone_forgetter"] == 12


def test_defaults_without_the_side_rule_let_one_agent_decide() -> None:
    """What the side rule repairs: with tally_min_side = 1 the defaults' weights (w_max/w_min
    = 10) let one reviewer at w_max outweigh the quorum's other reviewers at w_min.  The
    canonical counterexample is that worst case, and it replays through voting.py."""
    p = thresholds.load_params({"tally_min_side": 1})
    r = by_name(thresholds.tally_1(p))
    assert failed(list(r.values())) == {f"TALLY-1/{c}" for c in LONE_CHECKS}
    cex = r["TALLY-1/review-lone-accept"].counterexample
    assert cex["reveals"] == 3 and cex["quorum"] == 3 and cex["tally_min_side"] == 1
    assert cex["lone"] == {"agent": "a1", "weight": "1", "vote": "accept"}
    assert [o["weight"] for o in cex["others"]] == ["0.1", "0.1"]
    assert {o["vote"] for o in cex["others"]} == {"reject"}
    assert cex["accept_share"] == "0.833333" and cex["replay"] == "accept"
    words = r["TALLY-1/review-lone-accept"].explanation
    assert "a1 with weight 1 votes accept" in words and "a2 and a3 (weight 0.1 each)" in words
    assert "tally_min_side = 1" in words and "tally_min_side ≥ 2 (the side rule)" in words
    keep = r["TALLY-1/dispute-lone-keep"].counterexample
    assert keep["reveals"] == 5 and keep["replay"] == "keep"
    assert [o["vote"] for o in keep["others"]] == ["retract"] * 4
    # the same ballots with the side rule (the defaults) go to arbitration / are retracted
    lone, others = micro(1.0), [micro(0.1)] * 2
    assert thresholds.replay_review([lone], others, DEFAULTS) == "undecided"
    assert thresholds.replay_review(others, [lone], DEFAULTS) == "undecided"
    assert thresholds.replay_dispute([lone], [micro(0.1)] * 4, DEFAULTS) == "keep"
    assert thresholds.replay_dispute([micro(0.1)] * 4, [lone], DEFAULTS) == "retract"


def test_defaults_derived_bounds(defaults: dict[str, TheoremResult]) -> None:
    rep2 = defaults["REP-2/review-bound"].facts
    assert (rep2["review_bound"], rep2["unaccept"], rep2["unreject"]) == (3, 3, 3)
    assert (rep2["dispute_bound"], rep2["unretract"], rep2["force_retract"]) == (3, 3, 11)
    assert (rep2["review_seats"], rep2["dispute_seats"]) == (2, 2)
    assert rep2["tally_min_side"] == 2
    fg = defaults["FG-1/no-lone-forgetter"].facts
    assert fg["least_population_no_lone_forgetter"] == 12
    assert fg["least_population_quorum_above_w_max"] == 21  # docs/design.md §5's sufficient form
    assert fg["min_active_agents"] == 12
    assert defaults["REP-1/decay-keeps-E"].facts["branches_reachable"] == {
        "floor": True,
        "no floor": True,
    }
    b = thresholds.derived_bounds(DEFAULTS)
    assert b["tally_min_side"] == 2 and b["tally_lone_keep_by_heads"] is False
    assert b["tally_weight_ratio"] == 10
    limits = b["tally_ratio_limits"]
    assert limits["review-lone-accept"] == limits["review-lone-reject"] == 3
    assert limits["dispute-lone-keep"] == pytest.approx(0.33 * 4 / 0.67)
    # SAFE's ratio 1/0.55 is below every limit: it needs no side rule
    assert 1 / SAFE["w_min"] < min(limits.values())
    assert b["forget_min_active_agents"] == 12


def test_contrasts_are_refuted_as_expected(defaults: dict[str, TheoremResult]) -> None:
    flat = defaults["BFT-QUORUM-1/flat-2f+1"]
    assert flat.status is Status.REFUTED and flat.ok
    assert (flat.counterexample["n"], flat.counterexample["f"]) == (5, 1)
    assert flat.counterexample["quorum"] == 3 and len(flat.counterexample["shared"]) == 1
    plain = defaults["REP-1/plain-rule"]
    assert plain.status is Status.REFUTED and plain.ok
    cex = plain.counterexample
    assert (cex["r"], cex["s"], cex["delta"]) == (1, 0, 0.01)
    assert cex["E_after_plain"] != cex["E_before"] == cex["E_after_repaired"]


def test_a_safe_parameter_set_proves_every_theorem() -> None:
    """The other way out of TALLY-1: no side rule, a narrow weight range."""
    results = by_name(thresholds.prove_all(thresholds.load_params(SAFE)))
    assert failed(list(results.values())) == set()
    assert all(r.status is Status.PROVED for r in results.values() if r.expected is Status.PROVED)
    for check in LONE_CHECKS:
        assert results[f"TALLY-1/{check}"].facts["weight_condition_holds"], check


# --- every check can fail ----------------------------------------------------------------------

#: Each crafted bad set changes the defaults (which prove everything) in one place.
BAD: list[tuple[str, dict[str, Any], set[str]]] = [
    ("overlapping regions", {"tau_reject": 0.65}, {"TALLY-1/disjoint-regions"}),
    ("no side rule", {"tally_min_side": 1}, {f"TALLY-1/{c}" for c in LONE_CHECKS}),
    # q_dispute = tally_min_side: a lone keeper against q_dispute − 1 retracters keeps
    (
        "dispute quorum of tally_min_side",
        {"q_dispute": 2, "dispute_reviewers": 2},
        {"TALLY-1/dispute-lone-keep"},
    ),
    # the side rule holds TALLY-1, but a heavier w_max needs a larger population for FG-1
    ("w_max = 5", {"w_max": 5.0}, {"FG-1/no-lone-forgetter"}),
    ("9 reviewers, quorum 3", {"reviewers": 9}, {"REP-2/seats"}),
    ("12 dispute reviewers", {"dispute_reviewers": 12}, {"REP-2/seats"}),
    ("alpha = 0.05", {"alpha": 0.05}, {"FG-1/no-lone-forgetter"}),
    ("11 active agents", {"min_active_agents": 11}, {"FG-1/no-lone-forgetter"}),
    ("tier2 below tier1", {"tier2_rep": 0.5}, {"TIER-MONO/nested"}),
    ("sigma2 = sigma1", {"sigma2": 3}, {"SAN-MONO/graduated"}),
]


@pytest.mark.parametrize(("label", "mapping", "expected"), BAD, ids=[b[0] for b in BAD])
def test_each_check_is_refuted_for_a_crafted_bad_set(
    label: str, mapping: dict[str, Any], expected: set[str]
) -> None:
    results = thresholds.prove_all(thresholds.load_params(mapping))
    assert failed(results) == expected, label
    for r in results:
        if r.name in expected:
            assert r.status is Status.REFUTED and r.counterexample and r.explanation


def _assert_lone_replays(p: Params, cex: dict[str, Any]) -> None:
    """A lone-agent counterexample is real: its weights are in range, it has a quorum of
    reveals, and voting.py's verdict on exactly those voters is the lone agent's vote."""
    lone = micro(float(cex["lone"]["weight"]))
    others = [micro(float(o["weight"])) for o in cex["others"]]
    assert all(micro(p.w_min) <= w <= micro(p.w_max) for w in [lone, *others])
    seats = p.reviewers if cex["ballot"] == "review" else p.dispute_reviewers
    assert (p.quorum if cex["ballot"] == "review" else p.q_dispute) <= 1 + len(others) <= seats
    yes_side = cex["lone"]["vote"] in ("accept", "retract")
    yes, no = ([lone], others) if yes_side else (others, [lone])
    assert _verdict(p, cex["ballot"], yes, no) == cex["lone"]["vote"] == cex["replay"]


def test_overlapping_regions_counterexample() -> None:
    r = by_name(thresholds.tally_1(thresholds.load_params({"tau_reject": 0.65})))
    cex = r["TALLY-1/disjoint-regions"].counterexample
    share = Fraction(cex["accept_share"])
    assert Fraction(6, 10) <= share <= Fraction(65, 100)
    assert cex["replay"] == "accept"  # accept is tested first: the overlap goes to accept


def test_bad_tally_file_lone_agent_at_w_max_5() -> None:
    """examples/params/bad-tally.toml: no side rule and w_max = 5 (and overlapping regions);
    every lone counterexample replays through voting.py with its own numbers."""
    p = thresholds.load_params(EXAMPLES / "bad-tally.toml")
    assert isinstance(p, thresholds.UncheckedParams)  # tau_reject > tau_accept: loads anyway
    assert p.tally_min_side == 1
    r = by_name(thresholds.prove_all(p))
    cex = r["TALLY-1/review-lone-accept"].counterexample
    assert cex["lone"]["weight"] == "5" and cex["accept_share"] == "0.961538"
    assert failed(list(r.values())) == (
        {"TALLY-1/disjoint-regions", "FG-1/no-lone-forgetter"}
        | {f"TALLY-1/{c}" for c in LONE_CHECKS}
    )
    for check in LONE_CHECKS:
        _assert_lone_replays(p, r[f"TALLY-1/{check}"].counterexample)


def test_bad_forget_file_eleven_agents() -> None:
    """examples/params/bad-forget.toml: 11 active agents, one at w_max and ten at w_min:
    S = Q = 1.0 and the lone vote forgets, through forgetting.decide and the orchestrator."""
    p = thresholds.load_params(EXAMPLES / "bad-forget.toml")
    assert type(p) is Params and p.min_active_agents == 11
    r = by_name(thresholds.prove_all(p))
    assert failed(list(r.values())) == {"FG-1/no-lone-forgetter"}
    cex = r["FG-1/no-lone-forgetter"].counterexample
    assert cex["agents"] == 11 and cex["voter"] == {"agent": "a1", "weight": "1", "confidence": "1"}
    assert cex["others"] == ["0.1"] * 10 and cex["S"] == cex["Q"] == "1"
    assert cex["replay_forgotten"] is True
    assert _decide_forgets_alone(p, 1.0, [0.1] * 10)
    assert _orchestrator_forgets_alone(p, 1.0, [0.1] * 10)
    # the defaults' floor of 12 refuses the same population, and 12 agents are enough
    assert not _decide_forgets_alone(DEFAULTS, 1.0, [0.1] * 10)
    assert not _orchestrator_forgets_alone(DEFAULTS, 1.0, [0.1] * 10)
    assert not _orchestrator_forgets_alone(DEFAULTS, 1.0, [0.1] * 11)


def test_rep_1_with_the_plain_rule_fails() -> None:
    """REP-1 has no parameter in range that breaks it (δ = 1 resets the weight to the
    prior's through the floor); a wrong *rule* does: the paper's, in Beta parameters."""
    r = by_name(thresholds.rep_1(DEFAULTS, rule=thresholds.plain_rule))
    assert failed(list(r.values())) == {"REP-1/decay-keeps-E", "REP-1/floor-keeps-mass"}
    cex = r["REP-1/decay-keeps-E"].counterexample
    assert (cex["alpha"], cex["beta"], cex["alpha_after"], cex["beta_after"]) == (2, 1, 1.99, 1)


def test_rep_1_delta_one_goes_through_the_floor_only() -> None:
    r = by_name(thresholds.rep_1(thresholds.load_params({"delta": 1.0})))
    assert failed(list(r.values())) == set()
    assert r["REP-1/decay-keeps-E"].facts["branches_reachable"] == {
        "floor": True,
        "no floor": False,
    }
    assert thresholds.beta_decay(Fraction(5), Fraction(3), Fraction(1)) == (
        Fraction(5, 4),
        Fraction(3, 4),
    )


def test_rep_2_seats_counterexample_replays() -> None:
    p = thresholds.load_params({"reviewers": 9})
    cex = by_name(thresholds.rep_2(p))["REP-2/seats"].counterexample
    assert len(cex["sybils"]) == 3 and len(cex["honest"]) == 3
    assert cex["decision_without_sybils"] != cex["decision_with_sybils"]
    honest = [micro(float(h["weight"])) for h in cex["honest"]]
    sybils = [micro(float(s["weight"])) for s in cex["sybils"]]
    yes, no = (honest, sybils) if cex["honest"][0]["vote"] == "accept" else (sybils, honest)
    t = Tally.of(yes, no)
    assert (
        review_verdict(t, p.quorum, micro(p.tau_accept), micro(p.tau_reject), p.tally_min_side)
        == cex["decision_with_sybils"]
    )


def test_fg_1_small_population_counterexample_replays_in_the_orchestrator() -> None:
    """The counterexample is real: with min_active_agents = 5, in an orchestrator with that
    population, a1 forgets alone."""
    p = thresholds.load_params({"min_active_agents": 5})
    r = by_name(thresholds.fg_1(p))
    cex = r["FG-1/no-lone-forgetter"].counterexample
    assert cex["agents"] == 5 and cex["voter"] == {"agent": "a1", "weight": "1", "confidence": "1"}
    assert cex["replay_forgotten"] is True
    voter, others = float(cex["voter"]["weight"]), [float(w) for w in cex["others"]]
    assert _decide_forgets_alone(p, voter, others)
    assert _orchestrator_forgets_alone(p, voter, others)
    # the CLI option checks the defaults as if they set the same floor
    same = by_name(thresholds.fg_1(DEFAULTS, min_active_agents=5))["FG-1/no-lone-forgetter"]
    assert same.counterexample == cex


def _agents_of(voter: float, others: list[float]) -> list[Agent]:
    agents = [Agent("a1", tier=1, weight=voter)]
    return agents + [Agent(f"a{i + 2}", tier=1, weight=w) for i, w in enumerate(others)]


@dataclass(frozen=True)
class _View:
    """What forgetting.decide reads of an artifact."""

    forget_votes: Mapping[str, int]
    id: str = "x"
    state: str = "active"
    hidden: bool = False


def _decide_forgets_alone(
    p: Params, voter: float, others: list[float], confidence: int = MICRO
) -> bool:
    """forgetting.decide (the orchestrator's rule) on one active artifact with a1's vote."""
    view = _View({"a1": confidence})
    agents = _agents_of(voter, others)
    [d] = forgetting.decide([view], agents, p, min_active=p.min_active_agents)
    return d.forget


def _orchestrator_forgets_alone(p: Params, voter: float, others: list[float]) -> bool:
    o = Orchestrator(p, _agents_of(voter, others))
    assert (
        o.apply({"op": "propose", "agent": "a1", "artifact": "x", "slot": "s", "digest": "d"})[
            "result"
        ]
        == "ok"
    )
    for _ in range(p.T_fast):
        o.apply({"op": "tick"})
    assert o.state_of("x") == "active"
    assert o.apply({"op": "forget_vote", "agent": "a1", "artifact": "x"})["result"] == "ok"
    o.apply({"op": "tick"})
    return o.state_of("x") == "forgotten"


def test_bft_quorum_1_with_a_flat_rule_fails() -> None:
    r = by_name(thresholds.bft_quorum_1(rule=thresholds.flat_rule))
    assert failed(list(r.values())) == {"BFT-QUORUM-1/intersection", "BFT-QUORUM-1/ceil"}
    cex = r["BFT-QUORUM-1/intersection"].counterexample
    assert (cex["n"], cex["f"], cex["quorum"]) == (5, 1, 3)
    assert set(cex["quorum_a"]) & set(cex["quorum_b"]) == set(cex["shared"])
    assert len(cex["shared"]) < cex["f"] + 1


def test_bft_rule_is_the_replicas_quorum_function() -> None:
    for n in range(1, 80):
        for f in range(0, (n - 1) // 3 + 1):
            z = z3.simplify(thresholds.implementation_rule(z3.IntVal(n), z3.IntVal(f)))
            assert z.as_long() == replica_quorum(n, f) == -(-(n + f + 1) // 2)


def test_tier_and_sanction_counterexamples() -> None:
    tier = thresholds.tier_mono(thresholds.load_params({"tier3_rep": 0.6}))[0]
    assert tier.status is Status.REFUTED and tier.counterexample["E"] == 0.6
    assert "tier 3 (arbitrate) without tier 2 (dispute)" in tier.explanation
    san = thresholds.san_mono(thresholds.load_params({"sigma4": 8}))[0]
    assert san.counterexample == {"violations": 8, "sigma3": 8, "sigma4": 8}
    assert "σ4 (banned" in san.explanation


# --- exactly at the boundary: voting.py's ≥ and ≤ decide, and the conditions say so --------------

# Without the side rule, w_max·(1 − tau) = tau·(quorum − 1)·w_min (and the reject/keep
# analogues) exactly:
REVIEW_EDGE = {
    "tally_min_side": 1,
    "w_min": 0.2,
    "w_max": 0.6,
    "quorum": 3,
    "tau_accept": 0.6,
    "tau_reject": 0.4,
}
DISPUTE_EDGE = {"tally_min_side": 1, "w_min": 0.2, "w_max": 0.4, "q_dispute": 3, "tau_retract": 0.5}


def test_at_the_boundary_a_lone_accept_or_reject_wins() -> None:
    """A share exactly at tau_accept accepts (≥) and exactly at tau_reject rejects (≤)."""
    r = by_name(thresholds.tally_1(thresholds.load_params(REVIEW_EDGE)))
    accept, reject = r["TALLY-1/review-lone-accept"], r["TALLY-1/review-lone-reject"]
    assert accept.status is Status.REFUTED and accept.counterexample["accept_share"] == "0.6"
    assert reject.status is Status.REFUTED and reject.counterexample["accept_share"] == "0.4"


def test_at_the_boundary_a_lone_retract_wins_and_a_lone_keep_loses() -> None:
    """Retract needs share ≥ tau_retract: at equality a lone retract wins, a lone keep does
    not (the others' retract share is exactly tau_retract)."""
    r = by_name(thresholds.tally_1(thresholds.load_params(DISPUTE_EDGE)))
    assert r["TALLY-1/dispute-lone-retract"].status is Status.REFUTED
    assert r["TALLY-1/dispute-lone-retract"].counterexample["retract_share"] == "0.5"
    assert r["TALLY-1/dispute-lone-keep"].status is Status.PROVED


def test_the_side_rule_closes_the_boundary_cases() -> None:
    """The same edges with the default side rule: no lone side of one voter wins."""
    for edge in (REVIEW_EDGE, DISPUTE_EDGE):
        r = thresholds.tally_1(thresholds.load_params({**edge, "tally_min_side": 2}))
        assert failed(r) == set(), edge


def test_lone_keep_needs_a_dispute_quorum_above_tally_min_side() -> None:
    """Keep is also what a dispute does when its retracters are fewer than tally_min_side:
    with q_dispute = tally_min_side a lone keeper against q_dispute − 1 retracters keeps,
    whatever the weights."""
    for qd, side in ((2, 2), (3, 3)):
        p = thresholds.load_params({"q_dispute": qd, "tally_min_side": side, "w_min": 1.0})
        keep = by_name(thresholds.tally_1(p))["TALLY-1/dispute-lone-keep"]
        assert keep.status is Status.REFUTED, (qd, side)
        assert keep.counterexample["reveals"] == qd and keep.counterexample["replay"] == "keep"
        assert f"fewer than tally_min_side = {side}" in keep.explanation
        _assert_lone_replays(p, keep.counterexample)
    ok = thresholds.load_params({"q_dispute": 3, "tally_min_side": 2, "dispute_reviewers": 3})
    assert by_name(thresholds.tally_1(ok))["TALLY-1/dispute-lone-keep"].status is Status.PROVED


@pytest.mark.parametrize(("n_min", "lone"), [(11, Status.REFUTED), (12, Status.PROVED)])
def test_fg_1_boundary_populations(n_min: int, lone: Status) -> None:
    """Defaults: S = 1 ≥ Q = 0.5·(1 + 10·0.1) at 11 agents (S ≥ Q forgets); from 12 agents
    Q = 0.5·(1 + 11·0.1) = 1.05 > 1.  The theorem reads the parameter, and the CLI's override
    gives the same answer."""
    by_param = by_name(thresholds.fg_1(thresholds.load_params({"min_active_agents": n_min})))
    by_arg = by_name(thresholds.fg_1(DEFAULTS, min_active_agents=n_min))
    assert by_param["FG-1/no-lone-forgetter"].status is lone
    assert by_arg["FG-1/no-lone-forgetter"].status is lone
    assert by_param["FG-1/no-lone-forgetter"].facts == by_arg["FG-1/no-lone-forgetter"].facts


# --- general proofs ----------------------------------------------------------------------------


def test_general_proofs_hold_for_every_parameter_value_in_range() -> None:
    results = thresholds.prove_general()
    assert failed(results) == set()
    assert {r.id for r in results} == set(thresholds.THEOREMS)
    contrasts = {r.name for r in results if r.expected is Status.REFUTED}
    assert contrasts == {"REP-1/plain-rule", "BFT-QUORUM-1/flat-2f+1"}
    assert all(r.status is Status.PROVED for r in results if r.name not in contrasts)
    tally = by_name(results)["TALLY-1/review-lone-accept"]
    assert "w_max·(1 − tau_accept) < tau_accept·(quorum − 1)·w_min" in tally.title
    assert "tally_min_side ≥ 2" in tally.title
    assert "q_dispute > tally_min_side" in by_name(results)["TALLY-1/dispute-lone-keep"].title
    fg = by_name(results)["FG-1/no-lone-forgetter"]
    assert "min_active_agents" in fg.title


def test_general_tally_1_refutes_a_condition_that_is_not_exact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The general checks are not vacuous: "tally_min_side ≥ 2, or the weights" is exact for
    a lone accept, reject and retract but not for a lone keep (q_dispute = tally_min_side
    keeps on head counts), and Z3 says so with the parameters that break it."""

    def naive(lone: Any, q: Any, wmin: Any, wmax: Any, taus: Any, side: Any) -> Any:
        return z3.Or(side >= 2, _lone_weights(lone, q, wmin, wmax, taus))

    monkeypatch.setattr(tally_theorem, "_lone_condition", naive)
    r = by_name(thresholds.tally_1(None))
    assert failed(list(r.values())) == {"TALLY-1/dispute-lone-keep"}
    cex = r["TALLY-1/dispute-lone-keep"].counterexample
    assert cex["quorum"] <= cex["tally_min_side"]  # q_dispute ≤ tally_min_side: keep by heads


# --- loading parameter files -------------------------------------------------------------------


def test_defaults_file_is_the_defaults() -> None:
    p = thresholds.load_params(EXAMPLES / "defaults.toml")
    assert type(p) is Params and p == DEFAULTS
    # it spells out every key of the table (regenerate it when a parameter is added)
    with (EXAMPLES / "defaults.toml").open("rb") as fh:
        assert set(tomllib.load(fh)) == {r.name for r in table()}


@pytest.mark.parametrize(
    ("mapping", "named"),
    [
        ({"qourum": 3, "zeta": 1}, ["qourum", "zeta"]),
        ({"quorum": 9}, ["quorum"]),
        ({"w_min": 0.9, "w_max": 0.5}, ["w_min"]),
        ({"tau_accept": 1.5}, ["tau_accept"]),
        ({"tau_accept": "high"}, ["tau_accept"]),
        # the side rule above a quorum: a unanimous quorum could not decide (params.py)
        ({"tally_min_side": 4}, ["tally_min_side", "quorum"]),
        ({"q_dispute": 2, "tally_min_side": 3}, ["tally_min_side", "q_dispute"]),
    ],
)
def test_input_errors_name_the_keys(mapping: dict[str, Any], named: list[str]) -> None:
    with pytest.raises(ParamError) as err:
        thresholds.load_params(mapping)
    assert all(n in str(err.value) for n in named)


# --- Hypothesis: Z3 against plain arithmetic ---------------------------------------------------


@st.composite
def param_sets(draw: st.DrawFn) -> Params:
    """Parameter sets in range (hundredths, so micro-units are exact), small ballots; the
    side rule anywhere from off (1) to the smaller quorum (the relation params.py keeps)."""
    quorum = draw(st.integers(1, 5))
    q_dispute = draw(st.integers(1, 6))
    tau_accept = draw(st.integers(1, 100))
    w_min = draw(st.integers(0, 100))
    return Params(
        quorum=quorum,
        reviewers=draw(st.integers(quorum, quorum + 4)),
        q_dispute=q_dispute,
        dispute_reviewers=draw(st.integers(q_dispute, q_dispute + 4)),
        tally_min_side=draw(st.integers(1, min(quorum, q_dispute))),
        tau_accept=tau_accept / 100,
        tau_reject=draw(st.integers(0, tau_accept - 1)) / 100,
        tau_retract=draw(st.integers(0, 100)) / 100,
        w_min=w_min / 100,
        w_max=draw(st.integers(max(w_min, 1), 500)) / 100,
        alpha=draw(st.integers(0, 100)) / 100,
    )


def _verdict(p: Params, ballot: str, yes: list[int], no: list[int]) -> str:
    """voting.py's verdict on these voters' weights (one per voter), with the side rule."""
    t = Tally.of(yes, no)
    if ballot == "review":
        return review_verdict(
            t, p.quorum, micro(p.tau_accept), micro(p.tau_reject), p.tally_min_side
        )
    return dispute_verdict(t, p.q_dispute, micro(p.tau_retract), p.tally_min_side)


def _lone_violations(p: Params, check: str) -> list[tuple[list[int], list[int]]]:
    """Brute force: the lone agent at w_min or w_max, the others any mix of w_min/w_max,
    quorum to quorum + 2 reveals (the extremes are where a lone agent is strongest)."""
    ballot, _, vote = check.split("-", 2)
    vote = vote.removeprefix("lone-")
    q, seats = (p.quorum, p.reviewers) if ballot == "review" else (p.q_dispute, p.dispute_reviewers)
    lo, hi = micro(p.w_min), micro(p.w_max)
    out = []
    for m in range(q, min(seats, q + 2) + 1):
        for lone in {lo, hi}:
            for heavy in range(m):
                others = [hi] * heavy + [lo] * (m - 1 - heavy)
                yes, no = ([lone], others) if vote in ("accept", "retract") else (others, [lone])
                if _verdict(p, ballot, yes, no) == vote:
                    out.append((yes, no))
    return out


@settings(max_examples=80, derandomize=True, database=None, deadline=None)
@given(param_sets())
def test_tally_1_agrees_with_brute_force(p: Params) -> None:
    results = by_name(thresholds.tally_1(p))
    assert results["TALLY-1/disjoint-regions"].status is Status.PROVED  # Params has tau_r < tau_a
    for check in LONE_CHECKS:
        r = results[f"TALLY-1/{check}"]
        found = _lone_violations(p, check)
        assert r.status is not Status.UNKNOWN
        assert (r.status is Status.PROVED) == (not found), (check, r.explanation, found[:1])
        assert r.facts["condition_holds"] == (r.status is Status.PROVED)
        if p.tally_min_side == 1 and check != "dispute-lone-keep":  # weights alone decide
            assert r.facts["weight_condition_holds"] == (r.status is Status.PROVED)
        if r.status is Status.REFUTED:  # replay the counterexample through voting.py
            _assert_lone_replays(p, r.counterexample)


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(param_sets(), st.integers(1, 30))
def test_fg_1_agrees_with_brute_force(p: Params, n_min: int) -> None:
    """Z3 against brute force (populations of min_active_agents .. + 2, the voter at w_min
    or w_max with confidence 1, the others any mix), against forgetting.py's own FG-1
    relation, and the counterexample replayed through forgetting.decide."""
    results = by_name(thresholds.fg_1(p, min_active_agents=n_min))
    lone = results["FG-1/no-lone-forgetter"]
    lo, hi, a = micro(p.w_min), micro(p.w_max), micro(p.alpha)
    violations = [
        (n, voter, heavy)
        for n in range(n_min, n_min + 3)
        for voter in {lo, hi}
        for heavy in range(n)
        if voter > 0 and voter * MICRO >= a * (voter + heavy * hi + (n - 1 - heavy) * lo)
    ]
    assert (lone.status is Status.PROVED) == (not violations), (lone.explanation, violations[:1])
    least_lone, least_literal = thresholds.fg_min_population(p)
    assert least_lone == forgetting.fg1_min_active(p)
    assert (lone.status is Status.PROVED) == (least_lone is not None and n_min >= least_lone)
    assert (lone.status is Status.PROVED) == all(
        forgetting.fg1_holds(p, n) for n in range(n_min, n_min + 3)
    )
    assert (a * n_min * lo > MICRO * hi) == (least_literal is not None and n_min >= least_literal)
    if lone.status is Status.REFUTED:
        cex = lone.counterexample
        weights = [micro(float(cex["voter"]["weight"]))] + [micro(float(w)) for w in cex["others"]]
        confidence = micro(float(cex["voter"]["confidence"]))
        q = dataclasses.replace(p, min_active_agents=n_min)
        assert len(weights) >= n_min and thresholds.replay_forget(
            weights[0] * confidence, weights, q
        )
        voter, others = float(cex["voter"]["weight"]), [float(w) for w in cex["others"]]
        assert _decide_forgets_alone(q, voter, others, confidence)


def _least_sybils(p: Params, ballot: str, limit: int) -> int | None:
    """Brute force: the least k that changes an honest unanimous decision, honest = quorum
    or quorum + 1 reviewers at w_min or w_max, Sybils at w_min."""
    q = p.quorum if ballot == "review" else p.q_dispute
    votes = ("accept", "reject") if ballot == "review" else ("retract", "keep")
    lo, hi = micro(p.w_min), micro(p.w_max)
    for k in range(limit + 1):
        for h in (q, q + 1):
            for heavy in range(h + 1):
                honest = [hi] * heavy + [lo] * (h - heavy)
                for side in (0, 1):
                    alone = _verdict(p, ballot, *((honest, []) if side == 0 else ([], honest)))
                    if alone != votes[side]:
                        continue  # not an honest decision
                    syb = [lo] * k
                    yes, no = (honest, syb) if side == 0 else (syb, honest)
                    if _verdict(p, ballot, yes, no) != alone:
                        return k
    return None


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(param_sets())
def test_rep_2_bound_formula_optimize_and_brute_force_agree(p: Params) -> None:
    results = by_name(thresholds.rep_2(p))
    for name in ("review-bound", "review-tight", "dispute-bound", "dispute-tight"):
        assert results[f"REP-2/{name}"].ok, results[f"REP-2/{name}"].explanation
    b = thresholds.sybil_bounds(p)
    for ballot, bound in (("review", b.review), ("dispute", b.dispute)):
        limit = 600 if bound is None else bound
        assert _least_sybils(p, ballot, limit) == bound, ballot
    seats_ok = (b.review is None or b.review > b.review_seats) and (
        b.dispute is None or b.dispute > b.dispute_seats
    )
    assert results["REP-2/seats"].ok == seats_ok


fractions = st.fractions(min_value=Fraction(1, 1000), max_value=1000, max_denominator=1000)


deltas = st.fractions(min_value=0, max_value=1, max_denominator=1000)


@given(fractions, fractions, deltas)
def test_rep_1_decay_rule_keeps_expectation_exactly(a: Fraction, b: Fraction, d: Fraction) -> None:
    a2, b2 = thresholds.beta_decay(a, b, d)
    assert a2 / (a2 + b2) == a / (a + b)
    assert a2 > 0 and b2 > 0 and a2 + b2 >= 2
    # the Z3 rule the theorem is about is the same function
    za, zb = (z3.simplify(x) for x in thresholds.repaired_rule(*map(z3.RealVal, (a, b, d))))
    assert (Fraction(za.as_fraction()), Fraction(zb.as_fraction())) == (a2, b2)


@given(
    st.floats(1, 1e6),
    st.floats(1, 1e6),
    st.sampled_from([0.0, 0.001, 0.01, 0.1, 0.5, 0.999, 1.0]),
)
def test_rep_1_reputation_layer_uses_the_proved_rule(a: float, b: float, d: float) -> None:
    """ostrom.protocol.reputation.decay (mean and total weight, floats) is beta_decay: the mean is
    kept exactly and the total weight is the proved rule's alpha' + beta'."""
    reputation = pytest.importorskip("ostrom.protocol.reputation")
    before = reputation.Beta.from_params(a, b)
    after = reputation.decay(before, d)
    assert after.mean == before.mean
    a2, b2 = thresholds.beta_decay(Fraction(a), Fraction(b), Fraction(d))
    assert after.total == pytest.approx(float(a2 + b2), rel=1e-12)


@given(st.integers(0, 50), st.integers(0, 50), st.fractions(Fraction(1, 1000), Fraction(999, 1000)))
def test_rep_1_plain_rule_moves_expectation_unless_r_equals_s(r: int, s: int, d: Fraction) -> None:
    r2, s2 = thresholds.plain_decay(Fraction(r), Fraction(s), d)
    moved = (r2 + 1) / (r2 + s2 + 2) != Fraction(r + 1, r + s + 2)
    assert moved == (r != s)


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(
    st.integers(0, 100),
    st.integers(0, 100),
    st.integers(0, 100),
    st.integers(0, 100),
    st.integers(0, 100),
    st.lists(st.integers(1, 20), min_size=4, max_size=4),
)
def test_relation_theorems_decide_exactly_what_the_parameter_table_refuses(
    ta: int, tr: int, t1: int, t2: int, t3: int, sigmas: list[int]
) -> None:
    """No drift between params.py's relation checks and the theorems that replace them: a
    set is a valid ``Params`` iff the three relation theorems prove for it."""
    mapping = {
        "tau_accept": ta / 100,
        "tau_reject": tr / 100,
        "tier1_rep": t1 / 100,
        "tier2_rep": t2 / 100,
        "tier3_rep": t3 / 100,
        **{f"sigma{i + 1}": s for i, s in enumerate(sigmas)},
    }
    try:
        Params.from_mapping(mapping)
        valid = True
    except ParamError:
        valid = False
    p = thresholds.load_params(mapping)
    assert (type(p) is Params) == valid
    checks = [
        by_name(thresholds.tally_1(p))["TALLY-1/disjoint-regions"],
        *thresholds.tier_mono(p),
        *thresholds.san_mono(p),
    ]
    assert all(r.status is Status.PROVED for r in checks) == valid


# --- registry ----------------------------------------------------------------------------------


def test_theorem_names_resolve() -> None:
    for pid, name in Z3_CHECKERS.items():
        theorem = thresholds.resolve(name)
        assert thresholds.THEOREMS[pid] is theorem
        assert {r.id for r in theorem(DEFAULTS)} == {pid}
    with pytest.raises(KeyError):
        thresholds.resolve("ostrom.verify.thresholds::nope")


def test_registry_z3_entries_resolve_to_their_property() -> None:
    """Whatever spec/properties.toml names in its z3 layer is a theorem of that property."""
    for prop in registry.load():
        for name in prop.z3:
            assert thresholds.THEOREMS[prop.id] is thresholds.resolve(name), (prop.id, name)


# --- the CLI -----------------------------------------------------------------------------------


def test_cli_good_file_exits_0(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text("tally_min_side = 1\nw_min = 0.55\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check-params", str(good)])
    assert result.exit_code == 0, result.output
    assert "0 failed" in result.stdout and "Counterexamples" not in result.stdout


@pytest.mark.parametrize("args", [[], [str(EXAMPLES / "defaults.toml")]], ids=["none", "file"])
def test_cli_defaults_exit_0_with_every_theorem_proved(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["check-params", *args])
    assert result.exit_code == 0, result.output
    out = " ".join(result.stdout.split())
    assert "19 proved, 2 refuted as expected (contrasts), 0 failed" in out
    assert "tally_min_side = 2: no side of one voter wins" in out
    assert "min_active_agents = 12; no lone forgetter from 12 active agents" in out


def test_cli_side_rule_above_the_quorum_exits_2(tmp_path: Path) -> None:
    """tally_min_side > quorum is an input error (a relation no theorem states): a unanimous
    quorum could not decide.  The message names both keys; nothing on stdout."""
    bad = tmp_path / "side.toml"
    bad.write_text("tally_min_side = 4\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check-params", str(bad)])
    assert result.exit_code == 2 and result.stdout == ""
    assert "tally_min_side (4) exceeds quorum (3)" in result.stderr


def test_cli_bad_file_exits_1_with_words() -> None:
    result = CliRunner().invoke(main, ["check-params", str(EXAMPLES / "bad-tally.toml")])
    assert result.exit_code == 1
    out = " ".join(result.stdout.split())  # undo the wrapping
    assert "TALLY-1/disjoint-regions" in out and "is in both regions" in out
    assert "agent a1 with weight 5 votes accept" in out
    assert "0.961538 ≥ tau_accept = 0.6" in out
    assert "with tally_min_side = 1 a side of one voter may win" in out
    assert "Needed: tally_min_side ≥ 2 (the side rule), or" in out


def test_cli_bad_forget_file_exits_1_with_words() -> None:
    result = CliRunner().invoke(main, ["check-params", str(EXAMPLES / "bad-forget.toml")])
    assert result.exit_code == 1
    out = " ".join(result.stdout.split())
    assert "11 active agents (min_active_agents = 11" in out
    assert "a2…a11 (weight 0.1 each) do not vote. S = 1 > 0 and Q = 0.5 × 2 = 1 ≤ S" in out
    assert "FG-1 needs min_active_agents ≥ 12" in out and "1 failed" in out


def test_cli_unknown_key_exits_2_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "typo.toml"
    bad.write_text("qourum = 3\nw_min = 0.2\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check-params", str(bad), "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "qourum" in result.stderr


def test_cli_json_shape(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["check-params", str(EXAMPLES / "bad-tally.toml"), "--json", "--general"]
    )
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert set(doc) == {"params", "ok", "summary", "bounds", "results", "general"}
    assert doc["ok"] is False and doc["summary"]["failed"] == 6
    first = doc["results"][0]
    assert set(first) == {
        "id", "check", "theorem", "title", "statement", "status", "expected", "ok",
        "explanation", "counterexample", "facts", "seconds",
    }  # fmt: skip
    assert {r["id"] for r in doc["results"]} == set(thresholds.THEOREMS)
    assert all(r["ok"] for r in doc["general"])
    lone = next(r for r in doc["results"] if r["check"] == "review-lone-accept")
    assert lone["status"] == "refuted" and lone["counterexample"]["lone"]["weight"] == "5"


def test_cli_min_active_agents_option() -> None:
    result = CliRunner().invoke(main, ["check-params", "--json", "--min-active-agents", "5"])
    doc = json.loads(result.stdout)
    fg = {r["check"]: r for r in doc["results"] if r["id"] == "FG-1"}
    assert set(fg) == {"no-lone-forgetter"}
    assert fg["no-lone-forgetter"]["status"] == "refuted"
    assert fg["no-lone-forgetter"]["counterexample"]["agents"] == 5
    assert doc["bounds"]["forget_min_active_agents"] == 5
