"""The parameter table: docs/design.md §8 defaults, validation that names every problem."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ostrom.protocol.params import DEFAULTS, ParamError, Params, table

DESIGN_DEFAULTS = {
    "reviewers": 5, "quorum": 3, "T_fast": 3, "T_delib": 5, "T_commit": 2, "T_reveal": 2,
    "T_arb": 5, "tau_accept": 0.60, "tau_reject": 0.40, "dispute_reviewers": 7, "q_dispute": 5,
    "tau_retract": 0.67, "max_disputes": 2, "max_resubmit": 2, "cooldown": 20, "r_resubmit": 0.5,
    "delta": 0.01, "eigentrust_a": 0.15, "w_min": 0.1, "w_max": 1.0, "tier1_rep": 0.55,
    "tier1_rounds": 10, "tier2_rep": 0.70, "tier3_rep": 0.85, "sanction_window": 50,
    "sigma1": 3, "sigma2": 5, "sigma3": 8, "sigma4": 12, "T_susp": 50, "T_quarantine": 50,
    "urgent_penalty": 3.0, "omega_D": 0.5, "omega_R": 0.5, "theta": 0.3,
    "decay_scales": (10.0, 100.0, 1000.0), "decay_weights": (0.5, 0.3, 0.2), "alpha": 0.5,
    "checkpoint_k": 16, "watermark_window": 32,
}  # fmt: skip


@pytest.mark.parametrize(("name", "value"), sorted(DESIGN_DEFAULTS.items()))
def test_defaults_are_design_section_8(name: str, value: object) -> None:
    assert getattr(DEFAULTS, name) == value


def test_table_lists_every_parameter_with_docs() -> None:
    rows = table()
    assert {r.name for r in rows} >= set(DESIGN_DEFAULTS)
    assert all(r.doc and r.unit is not None for r in rows)


def test_unknown_keys_are_named_and_nothing_is_built() -> None:
    with pytest.raises(ParamError) as err:
        Params.from_mapping({"quorum": 2, "qourum": 3, "zeta": 1})
    assert "qourum" in str(err.value) and "zeta" in str(err.value)


def test_wrong_types_are_named() -> None:
    with pytest.raises(ParamError) as err:
        Params.from_mapping({"quorum": 2.5, "tau_accept": "high", "T_fast": True})
    msg = str(err.value)
    assert "quorum" in msg and "tau_accept" in msg and "T_fast" in msg


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"tau_reject": 0.6, "tau_accept": 0.6}, "tau_reject"),  # TALLY-1: disjoint regions
        ({"quorum": 6}, "quorum"),
        ({"q_dispute": 8}, "q_dispute"),
        ({"w_min": 0.9, "w_max": 0.5}, "w_min"),
        ({"tier2_rep": 0.9}, "tier"),
        ({"sigma2": 3}, "sanction"),
        ({"propose_rate": 1, "propose_rate_limited": 2}, "propose_rate_limited"),
        ({"decay_weights": [0.5, 0.5]}, "decay_scales"),
        ({"T_fast": 0}, "T_fast"),
        ({"alpha": 1.5}, "alpha"),
        # the side rule above a quorum: a unanimous quorum could not decide (TALLY-1)
        ({"tally_min_side": 4}, "tally_min_side"),
        ({"q_dispute": 1, "dispute_reviewers": 1}, "tally_min_side"),
        ({"tally_min_side": 0}, "tally_min_side"),
        ({"min_active_agents": 0}, "min_active_agents"),
    ],
)
def test_bad_relations_and_ranges_are_refused(bad: dict[str, object], named: str) -> None:
    with pytest.raises(ParamError, match=named):
        Params.from_mapping(bad)


def test_side_rule_and_population_floor_defaults() -> None:
    """Not the source design's values but repairs of TALLY-1 and FG-1 (docs/design.md §8): a side
    needs two voters, and no forget decision with fewer than 12 active agents, the least
    population in which one agent at w_max cannot reach Q at the default weights."""
    from ostrom.protocol.forgetting import fg1_min_active

    assert DEFAULTS.tally_min_side == 2
    assert DEFAULTS.min_active_agents == 12 == fg1_min_active(DEFAULTS)


def test_side_rule_may_equal_the_quorums() -> None:
    """tally_min_side = quorum (only unanimous quorums decide) is a valid choice."""
    p = Params.from_mapping({"tally_min_side": 3, "quorum": 3, "q_dispute": 3})
    assert (p.tally_min_side, p.quorum, p.q_dispute) == (3, 3, 3)
    with pytest.raises(ParamError, match=re.escape("tally_min_side (4) exceeds quorum (3)")):
        Params.from_mapping({"tally_min_side": 4})
    with pytest.raises(ParamError, match=re.escape("tally_min_side (2) exceeds q_dispute (1)")):
        Params.from_mapping({"q_dispute": 1})


def test_round_trip() -> None:
    assert Params.from_mapping(DEFAULTS.to_dict()) == DEFAULTS


def test_nan_is_refused() -> None:
    """NaN compares false with every bound, so a range check alone would let it in;
    infinities are ordinary values for the range check (an infinite decay scale is
    allowed: no decay on that scale)."""
    with pytest.raises(ParamError, match="is not a number"):
        Params.from_mapping({"alpha": float("nan")})
    with pytest.raises(ParamError, match="is not a number"):
        Params.from_mapping({"decay_scales": [10.0, float("nan"), 1000.0]})
    for v in (float("inf"), float("-inf")):
        with pytest.raises(ParamError, match="outside"):
            Params.from_mapping({"alpha": v})
    assert Params.from_mapping({"decay_scales": [10.0, 100.0, float("inf")]})


#: The constants of spec/Lifecycle.tla that describe a model's world, not a parameter.
WORLD_CONSTANTS = {
    "Agents", "Artifacts", "Slots", "Tier", "Weight", "WMin", "Barred", "Subscriptions",
    "RepOK", "Proposals", "ForgetVotes",
}  # fmt: skip


def test_every_lifecycle_constant_is_a_parameter_of_the_table() -> None:
    # The table's ``tla`` names are the one map from parameters to spec constants
    # (spec_constants, the generated MCLifecycleSim cfgs): a constant added to the spec
    # without a row, or a row naming a constant the spec lacks, fails here.
    from ostrom.verify.trace.lifecycle import lifecycle_constants

    declared = lifecycle_constants()
    trace = {"ProposeRate", "ProposeRateLimited", "DisputeRate"}  # LifecycleTrace.tla's own
    named = {row.tla for row in table() if row.tla is not None}
    assert declared - WORLD_CONSTANTS == named - trace
    assert trace <= named
    assert all(row.unit == "share" or isinstance(row.default, int) for row in table() if row.tla)


def test_an_unreadable_parameter_file_is_a_param_error(tmp_path: Path) -> None:
    """A directory or bytes that are not UTF-8: one ParamError line, never a traceback
    (``ostrom serve --params``, ``ostrom cluster up --params``)."""
    with pytest.raises(ParamError, match="cannot read"):
        Params.from_toml(tmp_path)
    (tmp_path / "p.toml").write_bytes(b"propose_rate = \xff\n")
    with pytest.raises(ParamError, match="not valid TOML"):
        Params.from_toml(tmp_path / "p.toml")
