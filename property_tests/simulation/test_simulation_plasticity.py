"""The plasticity experiment's building blocks: config, generative model, metrics, baselines.

Mirrors ``ostrom.simulation.plasticity``: ``config`` (validation of hostile input),
``world`` (the stream: deterministic, independent of the mechanism, balanced, the orders
and the controls as documented), ``metrics`` (on hand-computed trial records) and the
three baselines on streams whose answer is known by hand.  The protocol mechanism and
whole runs are in test_simulation_plasticity_runs.py.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.protocol.params import DEFAULTS
from ostrom.simulation.config import ConfigError
from ostrom.simulation.plasticity.config import (
    DEFAULT_WINDOW,
    FORMAL_REVIEW,
    KINDS,
    MECHANISMS,
    PROPOSE_RATE,
    PlasticityConfig,
    from_mapping,
    largest_remainder,
    parse_scenario,
)
from ostrom.simulation.plasticity.mechanisms import (
    LastWriterWins,
    LatestStable,
    Majority,
    Mechanism,
    judge,
)
from ostrom.simulation.plasticity.metrics import (
    TrialRecord,
    by_cell,
    nested,
    outcome,
    pooled,
    summarize,
)
from ostrom.simulation.plasticity.run import (
    PLASTICITY_SCENARIO_NAMES,
    PLASTICITY_SCENARIOS,
    plasticity_cells,
)
from ostrom.simulation.plasticity.world import (
    CONFLICT,
    UNRELATED,
    VALID,
    Proposal,
    Trial,
    World,
    make_world,
)
from ostrom.simulation.world import stream

# --- helpers ------------------------------------------------------------------------------


def hand_world(
    kinds: dict[str, str],
    initial: dict[str, str],
    changes: dict[str, tuple[tuple[int, str, str], ...]],
    proposals: list[Proposal],
    stale_lag: int = 100,
) -> World:
    """A world built by hand (no trials: the mechanisms only read the proposals)."""
    return World(
        agents=tuple(sorted(kinds)),
        kind=kinds,
        slots=tuple(sorted(initial)),
        initial=initial,
        trials=(),
        proposals=tuple(proposals),
        changes=changes,
        stale_lag=stale_lag,
        dropped=0,
    )


def P(
    id: str, round: int, slot: str, value: str, role: str = CONFLICT, transient: bool = False
) -> Proposal:
    return Proposal(id, round, slot, value, "a000", transient, 0, role)


def play(mech: Mechanism, world: World, rounds: int, slot: str) -> list[str | None]:
    """Step ``mech`` through ``rounds`` rounds; what ``slot`` served after each."""
    per_round = world.by_round(rounds)
    out = []
    for r in range(rounds):
        mech.step(r, per_round[r])
        out.append(mech.served(slot))
    return out


SMALL = PlasticityConfig(
    agents=12, slots=30, rounds=40, counts=(0, 1, 2), window=12, adversary_share=0.0
)

# --- config -------------------------------------------------------------------------------


def test_defaults_are_valid_and_documented_arithmetic() -> None:
    c = PlasticityConfig()
    assert c.agents == 30 and c.counts == (0, 1, 2, 4, 8)
    assert FORMAL_REVIEW == DEFAULTS.T_delib + DEFAULTS.T_commit + DEFAULTS.T_reveal == 9
    assert DEFAULT_WINDOW == FORMAL_REVIEW + DEFAULTS.T_arb + 8 + 1 == 23
    assert c.window == c.stale_lag == DEFAULT_WINDOW
    assert c.trials == 194 and c.start_rounds == 97
    assert c.trials // len(c.cells) >= 12  # >= 10 trials per (kind, k) in one run
    assert sum(c.population.values()) == c.agents


def test_names() -> None:
    c = PlasticityConfig()
    assert c.scenario == "adv=0.20"
    assert c.label == "protocol [after]"
    assert c.with_(order="before").label == "protocol [before]"
    assert c.with_(mechanism="latest_stable", transient=True).label == "latest_stable [transient]"
    assert c.with_(order="before", transient=True).label == "protocol [before+transient]"
    assert c.with_(scenario="adv=0.30").adversary_share == 0.30
    assert c.with_scenario("adv=0.00").scenario == "adv=0.00"
    assert tuple(f"adv={s:.2f}" for s in PLASTICITY_SCENARIOS) == PLASTICITY_SCENARIO_NAMES
    for name in PLASTICITY_SCENARIO_NAMES:
        assert c.with_scenario(name).scenario == name


def test_to_dict_is_json_and_round_trips() -> None:
    c = PlasticityConfig(mechanism="majority", order="before", adversary_share=0.1)
    d = json.loads(json.dumps(c.to_dict()))
    assert d["label"] == c.label and d["scenario"] == c.scenario
    back = from_mapping({k: v for k, v in d.items() if k not in ("label", "scenario")})
    assert back == c


BAD: list[tuple[str, Any]] = [
    ("agents", 11),
    ("agents", 30.0),
    ("agents", True),
    ("agents", "30"),
    ("slots", 0),
    ("slots", None),
    ("rounds", 0),
    ("rounds", -5),
    ("trials_per_round", 0),
    ("window", 0),
    ("window", 1.5),
    ("stale_lag", -1),
    ("adversary_share", -0.1),
    ("adversary_share", 1.5),
    ("adversary_share", math.nan),
    ("adversary_share", "0.2"),
    ("stale_share", math.inf),
    ("stale_share", False),
    ("reviewer_noise", 0.6),
    ("reviewer_noise", None),
    ("counts", ()),
    ("counts", (1, 2)),
    ("counts", (0, 2, 1)),
    ("counts", (0, 1, 1)),
    ("counts", (0, -1)),
    ("counts", (0, 1.0)),
    ("counts", (0, 10_000)),
    ("counts", "0,1"),
    ("counts", 8),
    ("mechanism", "ungoverned"),
    ("mechanism", 3),
    ("order", "during"),
    ("order", None),
    ("transient", 1),
    ("transient", "yes"),
]


@pytest.mark.parametrize(("name", "value"), BAD)
def test_every_bad_field_is_a_config_error_naming_it(name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=name):
        PlasticityConfig().with_(**{name: value})


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"rounds": 31}, "rounds"),  # must exceed max K + window = 8 + 23
        ({"slots": 8}, "slots"),  # an unrelated trial of k = 8 needs 9
        ({"adversary_share": 1.0}, "adversary_share"),  # no honest agent left
        ({"trials_per_round": 3, "adversary_share": 0.0}, "stale_share"),  # 9 send 18 < 24
        ({"adversary_share": 0.0, "stale_share": 0.0}, "stale_share"),  # nobody to conflict
        ({"agents": 12, "adversary_share": 0.96}, "adversary_share"),  # 12 adversaries
        ({"agents": 12, "adversary_share": 0.9}, "trials_per_round"),  # 1 honest: 2 < 10
        ({"window": 7}, "window"),  # must cover the 8 conflicts of order after
    ],
)
def test_relations_are_config_errors(changes: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        PlasticityConfig().with_(**changes)


def test_unknown_fields_and_scenarios() -> None:
    with pytest.raises(ConfigError, match="colour"):
        PlasticityConfig().with_(colour="red")
    with pytest.raises(ConfigError, match="colour"):
        from_mapping({"colour": "red"})
    for bad in ("moderate", "adv=", "adv=x", "adv=nan", "adv=2", 0.2, None):
        with pytest.raises(ConfigError, match=r"scenario|adversary_share"):
            PlasticityConfig().with_(scenario=bad)
    with pytest.raises(ConfigError):
        from_mapping([("agents", 12)])  # type: ignore[arg-type]
    assert parse_scenario("adv=0.40") == 0.4
    assert from_mapping({"counts": [0, 1, 2, 4, 8]}).counts == (0, 1, 2, 4, 8)  # TOML lists


JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["protocol", "before", "after", "majority", "adv=0.10", "adv=-1"]),
    st.lists(st.one_of(st.integers(-3, 300), st.floats(), st.text(max_size=3)), max_size=6),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
FIELD_NAMES = [f.name for f in fields(PlasticityConfig)] + ["scenario", "nonsense"]


@given(st.dictionaries(st.sampled_from(FIELD_NAMES), JUNK, max_size=4))
def test_hostile_values_construct_or_raise_config_error(doc: dict[str, Any]) -> None:
    try:
        c = from_mapping(doc)
    except ConfigError:
        return
    json.dumps(c.to_dict())  # a config that constructs is a runnable, JSON-able one
    assert c.trials >= 1 and sum(c.population.values()) == c.agents


@given(st.integers(0, 10_000), st.floats(0, 1))
def test_largest_remainder_sums(total: int, share: float) -> None:
    parts = largest_remainder(total, (share, 1.0 - share))
    assert sum(parts) == total and all(p >= 0 for p in parts)
    assert abs(parts[0] - share * total) < 1 + 1e-9


def test_cells() -> None:
    cells = plasticity_cells()
    assert len(cells) == 12
    labels = [label for label, _, _ in cells]
    assert len(set(labels)) == 12
    for label, cfg, vs in cells:
        assert label == cfg.label
        assert all(v in labels for v in vs)
        if cfg.mechanism != "protocol":
            assert vs == (cfg.with_(mechanism="protocol").label,)
    assert {c.mechanism for _, c, _ in cells} == set(MECHANISMS)
    assert {c.condition for _, c, _ in cells} == {"after", "before", "transient"}
    assert dict((label, vs) for label, _, vs in cells)["protocol [after]"] == ()


# --- the generative model -----------------------------------------------------------------


def test_world_is_deterministic_per_seed() -> None:
    c = PlasticityConfig()
    assert make_world(c, 3) == make_world(c, 3)
    assert make_world(c, 3).proposals != make_world(c, 4).proposals


def test_world_does_not_depend_on_the_mechanism() -> None:
    c = PlasticityConfig()
    worlds = [make_world(c.with_(mechanism=m), 7) for m in MECHANISMS]
    assert all(w == worlds[0] for w in worlds)


def test_every_cell_has_enough_trials() -> None:
    c = PlasticityConfig()
    for seed in (1, 2):
        w = make_world(c, seed)
        assert w.dropped == 0
        n = Counter(t.cell for t in w.trials)
        assert set(n) == set(c.cells)
        assert min(n.values()) >= 12 and max(n.values()) - min(n.values()) <= 1


def check_world(c: PlasticityConfig, w: World) -> None:
    """The invariants of the generative model, for any valid config."""
    by_trial: dict[int, list[Proposal]] = {}
    for p in w.proposals:
        by_trial.setdefault(p.trial, []).append(p)
    # submission order, unique ids
    assert [(p.round) for p in w.proposals] == sorted(p.round for p in w.proposals)
    assert len({p.id for p in w.proposals}) == len(w.proposals)
    # the protocol's proposal limit is honoured by the stream
    per = Counter((p.round, p.submitter) for p in w.proposals)
    assert max(per.values(), default=0) <= PROPOSE_RATE
    # slots: an open trial holds its slot (and its unrelated slots) alone
    held: dict[str, list[tuple[int, int]]] = {}
    for t in w.trials:
        for s in (t.slot, *t.others):
            held.setdefault(s, []).append((t.t0, t.close))
    for spans in held.values():
        spans.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
    for t in w.trials:
        ps = by_trial[t.index]
        valid = [p for p in ps if p.role == VALID]
        rest = [p for p in ps if p.role != VALID]
        assert len(valid) == 1 and len(rest) == t.k
        v = valid[0]
        assert (v.slot, v.value, v.round, v.transient) == (t.slot, t.new, t.t_valid, False)
        assert w.kind[v.submitter] == "honest"
        assert t.close == t.t_valid + c.window < c.rounds
        assert w.truth(t.slot, t.t0) == t.new and w.truth(t.slot, t.t0 - 1) == t.old
        rounds = sorted(p.round for p in rest)
        if c.order == "after":
            assert rounds == list(range(t.t_valid + 1, t.t_valid + 1 + t.k))
        else:
            assert rounds == list(range(t.t0, t.t_valid))  # all before the valid update
        for p in rest:
            assert w.kind[p.submitter] in ("stale", "adversary")
            assert p.transient == c.transient
            if t.kind == "unrelated":
                assert p.role == UNRELATED and p.slot != t.slot and p.slot in t.others
                assert p.value != w.truth(p.slot, p.round)  # a wrong value ...
                assert w.truth(p.slot, p.round) == w.truth(p.slot, t.t0 - 1)  # ... no change
            elif t.kind == "repeated":
                assert (p.role, p.slot, p.value) == (CONFLICT, t.slot, t.old)
            else:
                assert (p.role, p.slot, p.value) == (CONFLICT, t.slot, t.wrong)
                assert t.wrong not in (t.old, t.new)
    # no proposal of any trial ever touches another open trial's slot
    open_at: dict[str, list[tuple[int, int, int]]] = {}
    for t in w.trials:
        open_at.setdefault(t.slot, []).append((t.t0, t.close, t.index))
    for p in w.proposals:
        for t0, close, idx in open_at.get(p.slot, []):
            if t0 <= p.round <= close:
                assert p.trial == idx
    # balanced cells: the counts of the started trials differ by at most one
    if not w.dropped:
        n = Counter(t.cell for t in w.trials)
        if len(w.trials) >= len(c.cells):
            assert max(n.values()) - min(n.values()) <= 1


def test_world_invariants_default() -> None:
    for order in ("after", "before"):
        for transient in (False, True):
            c = PlasticityConfig(order=order, transient=transient)
            check_world(c, make_world(c, 11))


def test_stale_beliefs() -> None:
    c = PlasticityConfig()
    w = make_world(c, 5)
    t = w.trials[0]
    stale = next(a for a in w.agents if w.kind[a] == "stale")
    fresh = next(a for a in w.agents if w.kind[a] == "honest")
    assert w.belief(stale, t.slot, t.t0) == t.old
    assert w.belief(stale, t.slot, t.t0 + c.stale_lag - 1) == t.old
    assert w.belief(fresh, t.slot, t.t0) == t.new
    assert w.belief(stale, t.slot, t.t0 - 1) == w.belief(fresh, t.slot, t.t0 - 1) == t.old
    later = [x for x in w.trials if x.slot == t.slot and x.index != t.index]
    end = later[0].t0 if later else c.rounds
    if t.t0 + c.stale_lag < end:
        assert w.belief(stale, t.slot, t.t0 + c.stale_lag) == t.new


def test_order_and_transient_change_only_timing_and_marking() -> None:
    c = PlasticityConfig()
    after, before = make_world(c, 9), make_world(c.with_(order="before"), 9)
    marked = make_world(c.with_(transient=True), 9)
    key = [(t.index, t.kind, t.k, t.slot, t.old, t.new, t.wrong, t.t0) for t in after.trials]
    assert key == [
        (t.index, t.kind, t.k, t.slot, t.old, t.new, t.wrong, t.t0) for t in before.trials
    ]
    ids = {p.id: p for p in after.proposals}
    assert {p.id for p in before.proposals} == set(ids)
    for p in before.proposals:
        q = ids[p.id]
        assert (p.slot, p.value, p.role, p.trial) == (q.slot, q.value, q.role, q.trial)
    same = sum(ids[p.id].submitter == p.submitter for p in before.proposals)
    assert same >= 0.95 * len(ids)  # the submitters differ only where the limit binds
    assert [p.id for p in marked.proposals] == [p.id for p in after.proposals]
    for p, q in zip(marked.proposals, after.proposals, strict=True):
        assert (p.round, p.slot, p.value, p.submitter) == (q.round, q.slot, q.value, q.submitter)
        assert p.transient == (q.role != VALID)


@st.composite
def small_configs(draw: st.DrawFn) -> PlasticityConfig:
    counts = (0, *sorted(draw(st.sets(st.integers(1, 5), max_size=3))))
    window = draw(st.integers(1, 10))
    try:
        return PlasticityConfig(
            agents=draw(st.integers(12, 20)),
            slots=draw(st.integers(6, 40)),
            rounds=max(counts) + window + draw(st.integers(1, 25)),
            trials_per_round=draw(st.integers(1, 2)),
            counts=counts,
            window=window,
            stale_lag=draw(st.integers(0, 12)),
            adversary_share=draw(st.sampled_from([0.0, 0.1, 0.25, 0.4])),
            stale_share=draw(st.sampled_from([0.3, 0.5])),
            order=draw(st.sampled_from(["after", "before"])),
            transient=draw(st.booleans()),
        )
    except ConfigError:
        return PlasticityConfig(
            agents=12, slots=12, rounds=20, counts=(0, 1), window=5, adversary_share=0.0
        )


@given(small_configs(), st.integers(0, 2**32))
def test_world_invariants_property(c: PlasticityConfig, seed: int) -> None:
    w = make_world(c, seed)
    assert w == make_world(c.with_(mechanism="majority"), seed)
    check_world(c, w)
    assert len(w.trials) + w.dropped == c.trials


# --- metrics on hand-computed records -----------------------------------------------------

OLD, NEW, W = "s:v0", "s:v1", "s:w2"


def rec(*served: str | None, kind: str = "same_slot", k: int = 2) -> TrialRecord:
    conflicts = frozenset({W}) if kind == "same_slot" else frozenset({OLD})
    return TrialRecord(kind, k, OLD, NEW, conflicts, tuple(served))


def test_outcome_plastic_with_interruption() -> None:
    o = outcome(rec(OLD, NEW, W, NEW, NEW))
    assert (o.plastic, o.stale, o.wrong, o.displaced, o.adoption) == (True, False, False, False, 3)


def test_outcome_adoption_bounds() -> None:
    assert outcome(rec(NEW, NEW, NEW)).adoption == 0  # served in its own round
    assert outcome(rec(OLD, OLD, NEW)).adoption == 2  # at the window's last round: in
    assert outcome(rec(NEW)).adoption == 0
    with pytest.raises(ValueError):
        outcome(rec())


def test_outcome_wrong_and_displaced_is_censored() -> None:
    o = outcome(rec(NEW, NEW, W))
    assert (o.plastic, o.stale, o.wrong, o.displaced) == (False, False, True, True)
    assert o.adoption is None


def test_outcome_stale_never_replaced() -> None:
    o = outcome(rec(OLD, OLD, OLD))
    assert (o.plastic, o.stale, o.wrong, o.displaced) == (False, True, False, False)
    assert o.adoption is None


def test_outcome_repeated_old_value_is_stale_not_wrong() -> None:
    # the tie: for the repeated kind the old value is also the conflict; it counts once,
    # as stale retention
    o = outcome(rec(NEW, OLD, kind="repeated"))
    assert (o.plastic, o.stale, o.wrong, o.displaced) == (False, True, False, True)


def test_outcome_unknown_value_is_none_of_the_three() -> None:
    o = outcome(rec(OLD, "s:other"))
    assert not (o.plastic or o.stale or o.wrong) and o.adoption is None
    o = outcome(rec(None, None))
    assert not (o.plastic or o.stale or o.wrong or o.displaced)


def test_summarize_by_hand() -> None:
    records = [
        rec(OLD, NEW, NEW),  # plastic, t = 1
        rec(NEW, NEW, NEW),  # plastic, t = 0
        rec(NEW, OLD, OLD, NEW),  # plastic, t = 3 (re-adopted at the end)
        rec(NEW, W, W),  # wrong, displaced, censored
        rec(OLD, OLD, OLD),  # stale, censored
    ]
    s = summarize(outcome(r) for r in records)
    assert s.trials == 5 and s.censored == 2
    assert s.plasticity == 3 / 5 and s.stale_retention == 1 / 5 and s.wrong_adoption == 1 / 5
    assert s.displaced == 1 / 5
    assert s.time_to_adoption == (1 + 0 + 3) / 3
    empty = summarize([])
    assert empty.trials == 0 and math.isnan(empty.plasticity)
    assert math.isnan(empty.time_to_adoption) and empty.as_dict()["plasticity"] is None
    none_adopted = summarize([outcome(rec(OLD, OLD))])
    assert math.isnan(none_adopted.time_to_adoption) and none_adopted.censored == 1


def test_by_cell_pooled_nested() -> None:
    records = [
        rec(NEW, kind="same_slot", k=0),
        rec(OLD, kind="same_slot", k=0),
        rec(W, kind="same_slot", k=2),
        rec(NEW, kind="repeated", k=2),
    ]
    cells = by_cell(records)
    assert list(cells) == [("repeated", 2), ("same_slot", 0), ("same_slot", 2)]
    assert cells[("same_slot", 0)].plasticity == 0.5
    assert cells[("same_slot", 2)].wrong_adoption == 1.0
    assert pooled(records, counts=(2,)).plasticity == 0.5
    assert pooled(records, kinds=("same_slot",)).trials == 3
    assert pooled(records).trials == 4
    table = nested(cells, "plasticity", KINDS, (0, 2))
    assert table["same_slot"] == {"k0": 0.5, "k2": 0.0}
    assert table["repeated"] == {"k0": None, "k2": 1.0}
    assert table["unrelated"] == {"k0": None, "k2": None}
    assert nested(cells, "trials", KINDS, (0, 2))["unrelated"] == {"k0": 0, "k2": 0}


# --- judge and the baselines on hand-built streams ----------------------------------------

KINDS_4 = {"a000": "honest", "a001": "honest", "a002": "stale", "a003": "adversary"}


def test_judge_by_hand() -> None:
    w = hand_world(KINDS_4, {"s": OLD}, {"s": ((5, OLD, NEW),)}, [], stale_lag=3)
    rng = stream(0, "t")

    def j(agent: str, value: str, r: int, transient: bool = False) -> bool:
        return judge(w, agent, "s", value, transient, r, rng, 0.0)

    assert j("a000", NEW, 5) and not j("a000", OLD, 5) and not j("a000", W, 5)
    assert j("a000", OLD, 4) and not j("a000", NEW, 4)  # before the change
    assert not j("a000", NEW, 5, transient=True)  # marked transient: not a stable update
    assert j("a002", OLD, 5) and j("a002", OLD, 7) and not j("a002", NEW, 7)  # stale, lag 3
    assert j("a002", NEW, 8) and not j("a002", OLD, 8)  # caught up
    assert j("a003", W, 5) and j("a003", OLD, 5) and not j("a003", NEW, 5)
    assert j("a003", W, 5, transient=True)  # an adversary ignores the marking
    flips = sum(not judge(w, "a000", "s", NEW, False, 6, rng, 0.5) for _ in range(2000))
    assert 850 < flips < 1150  # noise 0.5 flips about half


def test_last_writer_wins_by_hand() -> None:
    after = [P("v", 0, "s", NEW, VALID), P("c1", 1, "s", W), P("c2", 2, "s", OLD)]
    w = hand_world(KINDS_4, {"s": OLD, "t": "t:v0"}, {"s": ((0, OLD, NEW),)}, after)
    assert play(LastWriterWins(w), w, 4, "s") == [NEW, W, OLD, OLD]
    before = [P("c1", 0, "s", W), P("c2", 1, "s", W), P("v", 2, "s", NEW, VALID)]
    w = hand_world(KINDS_4, {"s": OLD}, {"s": ((0, OLD, NEW),)}, before)
    assert play(LastWriterWins(w), w, 4, "s") == [W, W, NEW, NEW]


def test_latest_stable_skips_transient() -> None:
    ps = [
        P("v", 0, "s", NEW, VALID),
        P("c1", 1, "s", W, transient=True),
        P("c2", 2, "s", OLD, transient=True),
    ]
    w = hand_world(KINDS_4, {"s": OLD}, {"s": ((0, OLD, NEW),)}, ps)
    assert play(LatestStable(w), w, 3, "s") == [NEW, NEW, NEW]
    assert play(LastWriterWins(w), w, 3, "s") == [NEW, W, OLD]  # the marking is ignored
    ps[2] = P("c2", 2, "s", W)  # a later stable one contradicts it
    w = hand_world(KINDS_4, {"s": OLD}, {"s": ((0, OLD, NEW),)}, ps)
    assert play(LatestStable(w), w, 3, "s") == [NEW, NEW, W]


def test_majority_all_honest_adopts_the_valid_update() -> None:
    kinds = {f"a{i:03d}": "honest" for i in range(12)}
    ps = [P("v", 0, "s", NEW, VALID), *(P(f"c{j}", 1 + j, "s", W) for j in range(8))]
    ps += [P(f"r{j}", 9 + j, "s", OLD) for j in range(8)]
    w = hand_world(kinds, {"s": OLD}, {"s": ((0, OLD, NEW),)}, ps)
    cfg = PlasticityConfig(reviewer_noise=0.0)
    assert play(Majority(cfg, w, 1), w, 18, "s") == [NEW] * 18


def test_majority_all_adversarial_panel_accepts_conflicts() -> None:
    kinds = {f"a{i:03d}": "adversary" for i in range(12)}
    ps = [P("v", 0, "s", NEW, VALID), P("c", 1, "s", W)]
    w = hand_world(kinds, {"s": OLD}, {"s": ((0, OLD, NEW),)}, ps)
    assert play(Majority(PlasticityConfig(), w, 1), w, 2, "s") == [OLD, W]


def test_majority_in_real_all_honest_world() -> None:
    c = SMALL.with_(mechanism="majority", reviewer_noise=0.0, stale_share=0.0, counts=(0,))
    w = make_world(c, 2)
    mech = Majority(c, w, 2)
    per_round = w.by_round(c.rounds)
    for r in range(c.rounds):
        mech.step(r, per_round[r])
        for t in w.trials:
            if t.t_valid <= r <= t.close:
                assert mech.served(t.slot) == t.new


def test_baselines_on_real_streams_by_hand() -> None:
    """Last-writer-wins serves the last conflict with order after, the valid update with
    order before; latest_stable skips the marked conflicts."""
    for order in ("after", "before"):
        for transient in (False, True):
            c = PlasticityConfig(order=order, transient=transient)
            w = make_world(c, 4)
            for cls in (LastWriterWins, LatestStable):
                mech = cls(w)
                per_round = w.by_round(c.rounds)
                ends: dict[int, str | None] = {}
                closing: dict[int, list[Trial]] = {}
                for t in w.trials:
                    closing.setdefault(t.close, []).append(t)
                for r in range(c.rounds):
                    mech.step(r, per_round[r])
                    for t in closing.get(r, ()):
                        ends[t.index] = mech.served(t.slot)
                for t in w.trials:
                    skip = cls is LatestStable and transient
                    expected: str | None = t.new
                    if t.k and t.kind != "unrelated" and order == "after" and not skip:
                        expected = t.wrong if t.kind == "same_slot" else t.old
                    assert ends[t.index] == expected, (cls.__name__, order, transient, t)
