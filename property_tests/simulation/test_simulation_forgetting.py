"""The forgetting model's building blocks (``ostrom.simulation.forgetting``), module by module.

World: deterministic per seed, independent of the mechanism, labels absorbing and consistent
with the generative story.  Relevance: ``Prepared`` is exactly the protocol's ``LEXICAL``.
Judges: an honest agent's vote is the protocol's agent side.  Metrics: the tracker agrees
with a brute-force recount.  Mechanisms: each baseline against a control computed by hand,
the protocol against the orchestrator's own rule and FG-1's floor.  Config: hostile values
are ``ConfigError`` only.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.protocol.agents import MICRO
from ostrom.protocol.forgetting import LEXICAL, assess, decay
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import Params
from ostrom.simulation.config import ConfigError
from ostrom.simulation.forgetting import mechanisms as mech
from ostrom.simulation.forgetting.config import (
    ABLATIONS,
    FAULTS,
    GOVERNANCE,
    MECHANISMS,
    SCENARIOS,
    VOTE_RULES,
    ForgetConfig,
)
from ostrom.simulation.forgetting.judges import Judges, RelevanceBook
from ostrom.simulation.forgetting.metrics import Tracker
from ostrom.simulation.forgetting.relevance import Prepared
from ostrom.simulation.forgetting.run import _play, run_forgetting
from ostrom.simulation.forgetting.world import (
    NEVER_USEFUL,
    STALE,
    SUPERSEDED,
    USEFUL,
    Item,
    World,
    make_world,
)

SMALL = ForgetConfig(epochs=120, topics=6, slots_per_topic=4, junk_rate=0.2, agents=14)


# --- world -------------------------------------------------------------------------------------


def _items_by_slot(world: World) -> dict[str, list[Item]]:
    out: dict[str, list[Item]] = {}
    for i in world.items:
        out.setdefault(i.slot, []).append(i)
    return out


@given(
    seed=st.integers(0, 2**32),
    epochs=st.integers(1, 150),
    topics=st.integers(1, 6),
    slots=st.integers(1, 5),
    life=st.floats(1.0, 400.0),
    supersede=st.floats(1.0, 300.0),
    junk=st.floats(0.0, 1.0),
)
def test_world_is_consistent_with_its_story(
    seed: int, epochs: int, topics: int, slots: int, life: float, supersede: float, junk: float
) -> None:
    cfg = ForgetConfig(
        epochs=epochs,
        topics=topics,
        slots_per_topic=slots,
        topic_life=life,
        supersede_every=supersede,
        junk_rate=junk,
    )
    w = make_world(cfg, seed)
    assert w == make_world(cfg, seed)  # deterministic per seed
    assert [x for a in w.arrivals for x in a] == [i.id for i in w.items]
    for t, arrived in enumerate(w.arrivals):
        assert all(w.item(x).born == t for x in arrived)
    for _slot, versions in _items_by_slot(w).items():
        if versions[0].topic is None:
            (junk_item,) = versions
            assert junk_item.label(junk_item.born) == NEVER_USEFUL
            assert not any(junk_item.useful(t) for t in range(epochs))
            continue
        for old, new in itertools.pairwise(versions):
            # a superseded version is replaced exactly when its usefulness ends
            assert old.fate == SUPERSEDED and old.useful_until == new.born
        last = versions[-1]
        assert last.fate in (STALE, USEFUL)
        assert (last.useful_until is None) == (last.fate == USEFUL)
        for v in versions:
            useful = [v.useful(t) for t in range(epochs)]
            # useful exactly on [born, useful_until): the labels are absorbing
            end = v.useful_until if v.useful_until is not None else epochs
            assert useful == [v.born <= t < end for t in range(epochs)]
            if v.useful_until is not None and v.useful_until < epochs:
                assert v.label(v.useful_until) == v.fate
    for t, queries in enumerate(w.queries):
        for q in queries:
            item = w.item(q.item)
            assert item.useful(t), "a query reads the slot's current, useful version"
            assert q.text.split()[0] == item.slot
    for t, strays in enumerate(w.strays):
        assert all(w.item(x).born <= t for x in strays)


def test_world_ignores_the_mechanism() -> None:
    w = make_world(SMALL, 7)
    for changes in (
        {"mechanism": "lru"},
        {"mechanism": "majority", "vote_rule": "at_alpha"},
        {"ablations": ("no_reputation", "no_floor")},
        {"governance": "pbft", "fault": "silent-primary"},
        {"sweep_every": 3, "context_window": 5, "noise_careful": 0.0},
    ):
        assert make_world(SMALL.with_(**changes), 7) == w, changes
    assert make_world(SMALL, 8) != w


def test_population_follows_the_scenario() -> None:
    for name, pop in SCENARIOS.items():
        w = make_world(ForgetConfig(scenario=name, epochs=5), 3)
        assert len(w.agents) == pop.agents
        kinds = Counter(w.kind.values())
        for kind, share in pop.mix:
            assert abs(kinds[kind] - share * pop.agents) < 1
        for a in w.agents:
            assert Params().w_min <= w.weight[a] <= Params().w_max


# --- relevance -----------------------------------------------------------------------------------

_WORDS = st.sampled_from(["tram", "Lyon", "map", "of", "the", "Straße", "STRASSE", "x1", "ß", ""])
_TEXT = st.lists(_WORDS, max_size=8).map(" ".join)


@given(text=_TEXT, context=st.lists(_TEXT, max_size=12))
def test_prepared_is_exactly_the_lexical_scorer(text: str, context: list[str]) -> None:
    assert Prepared(context)(text) == LEXICAL(text, context)


@given(text=st.text(max_size=40), context=st.lists(st.text(max_size=30), max_size=6))
def test_prepared_on_arbitrary_text(text: str, context: list[str]) -> None:
    assert Prepared(context)(text) == LEXICAL(text, context)


def test_relevance_tells_subjects_apart_but_not_versions() -> None:
    """The model's R: higher for useful items than for stale or junk ones on average, and
    no help against supersession (a version and its replacement share slot and topic)."""
    cfg = ForgetConfig()
    w = make_world(cfg, 1)
    book = RelevanceBook(w, cfg.context_window)
    by: dict[str, list[float]] = {}
    for t in (150, 300, 450):
        for i in w.items:
            if i.born <= t:
                by.setdefault(i.label(t), []).append(book.r(i.id, t))
    mean = {k: sum(v) / len(v) for k, v in by.items()}
    assert mean[USEFUL] > 1.5 * mean[STALE]
    assert mean[USEFUL] > 1.5 * mean[NEVER_USEFUL]
    assert mean[SUPERSEDED] > 0.7 * mean[USEFUL]


# --- judges --------------------------------------------------------------------------------------


def _judges(cfg: ForgetConfig, seed: int = 1) -> tuple[World, Judges]:
    w = make_world(cfg, seed)
    return w, Judges(cfg, w, mech.protocol_params(cfg), seed)


def test_an_honest_vote_is_the_protocols_agent_side() -> None:
    cfg = SMALL.with_(noise_careful=0.0, noise_sloppy=0.0)
    w, j = _judges(cfg)
    p = mech.protocol_params(cfg)
    honest = [a for a in w.agents if w.kind[a] != "eraser"]
    checked = voted = 0
    for t in (0, 30, 90):
        for item in w.items[:60]:
            if item.born > t:
                continue
            for last in (item.born, max(item.born, t - 40)):
                r = j.relevance.r(item.id, t)
                want = assess(item.text, [], t, last, p, scorer=lambda _t, _c, r=r: r)
                got = j.confidence(honest[0], item.id, t, last)
                assert got == want.confidence_micro
                checked += 1
                voted += got > 0
    assert checked > 50 and 0 < voted < checked  # both outcomes occur


def test_vote_rules_and_ablations_of_the_judgment() -> None:
    base = SMALL.with_(noise_careful=0.0, noise_sloppy=0.0)
    w, plain = _judges(base)
    _, patient = _judges(base.with_(vote_rule="at_alpha"))
    _, flat = _judges(base.with_(vote_rule="at_alpha", ablations=("no_confidence",)))
    alpha = round(Params().alpha * MICRO)
    a = next(a for a in w.agents if w.kind[a] != "eraser")
    seen = set()
    for item in w.items[:80]:
        for t in range(item.born, min(SMALL.epochs, item.born + 300), 7):
            c = plain.confidence(a, item.id, t, item.born)
            assert patient.confidence(a, item.id, t, item.born) == (c if c >= alpha else 0)
            assert flat.confidence(a, item.id, t, item.born) == (MICRO if c >= alpha else 0)
            seen.add((c > 0, c >= alpha))
    assert seen == {(False, False), (True, False), (True, True)}


def test_an_eraser_votes_to_forget_exactly_what_is_useful() -> None:
    cfg = ForgetConfig(scenario="adversarial", epochs=200, topics=6, slots_per_topic=3)
    w, j = _judges(cfg)
    eraser = next(a for a in w.agents if w.kind[a] == "eraser")
    for item in w.items:
        for t in (item.born, 100, 199):
            if t >= item.born:
                want = MICRO if item.useful(t) else 0
                assert j.confidence(eraser, item.id, t, item.born) == want


# --- metrics -------------------------------------------------------------------------------------


def _brute(
    world: World, admitted: dict[str, int], forgotten: dict[str, int], t: int
) -> dict[str, float]:
    held = [x for x in admitted if x not in forgotten]
    not_useful = [x for x in admitted if not world.item(x).useful(t)]
    right = [x for x, e in forgotten.items() if not world.item(x).useful(e)]
    n = len(admitted)
    return {
        "footprint": float(len(held)),
        "reduction": len(forgotten) / n if n else math.nan,
        "accuracy": (
            sum(world.item(x).useful(t) for x in held)
            + sum(not world.item(x).useful(t) for x in forgotten)
        )
        / n
        if n
        else math.nan,
        "precision": len(right) / len(forgotten) if forgotten else math.nan,
        "recall": sum(x in forgotten for x in not_useful) / len(not_useful)
        if not_useful
        else math.nan,
    }


@given(seed=st.integers(0, 2**32), p_forget=st.floats(0.0, 0.5))
def test_tracker_agrees_with_a_brute_force_recount(seed: int, p_forget: float) -> None:
    w = make_world(SMALL, seed % 1000)
    rng = random.Random(seed)
    tracker = Tracker(w)
    admitted: dict[str, int] = {}
    forgotten: dict[str, int] = {}
    for t in range(SMALL.epochs):
        tracker.begin(t)
        entering = [x for x in w.arrivals[t] if rng.random() < 0.9]
        tracker.admit(t, entering)
        admitted.update(dict.fromkeys(entering, t))
        gone = [x for x in sorted(admitted) if x not in forgotten and rng.random() < p_forget / 10]
        tracker.forget(t, gone)
        forgotten.update(dict.fromkeys(gone, t))
        want = _brute(w, admitted, forgotten, t)
        got = tracker.series_point()
        for k, v in want.items():
            assert (math.isnan(v) and math.isnan(got[k])) or got[k] == pytest.approx(v), (t, k)
        assert tracker.wrong == sum(w.item(x).useful(e) for x, e in forgotten.items())
        assert tracker.stale_kept == sum(
            not w.item(x).useful(t) for x in admitted if x not in forgotten
        )


def test_tracker_on_a_hand_computed_case() -> None:
    """Three items: A useful until epoch 5 (then stale), B junk, C useful to the end.
    B is forgotten at 1 (right), A at 3 (wrong: still useful).  By hand, at epoch 2:
    held A, C (both useful), gone B: accuracy 3/3, precision 1/1, recall 1/1 (B is the only
    not-useful item); at epoch 3 after forgetting A: accuracy 2/3 (A gone but useful),
    precision 1/2, wrong 1; at epoch 6 A has gone stale: accuracy 3/3, recall 2/2, still
    precision 1/2 (a decision is judged when it is taken)."""
    a = Item("A", "s/a", 0, "a", 0, 5, STALE)
    b = Item("B", "junk-B", None, "b", 0, 0, NEVER_USEFUL)
    c = Item("C", "s/c", 1, "c", 0, None, USEFUL)
    w = World(("g0",), {"g0": "careful"}, {"g0": 1.0}, (a, b, c), (("A", "B", "C"),), ((),), ((),))
    t = Tracker(w)
    t.begin(0)
    t.admit(0, ["A", "B", "C"])
    assert (t.footprint, t.accuracy, t.stale_kept) == (3, 2 / 3, 1)
    assert math.isnan(t.precision) and t.recall == 0.0
    t.begin(1)
    t.forget(1, ["B"])
    t.begin(2)
    assert (t.accuracy, t.precision, t.recall, t.reduction) == (1.0, 1.0, 1.0, 1 / 3)
    t.begin(3)
    t.forget(3, ["A"])
    assert (t.accuracy, t.precision, t.wrong, t.footprint) == (2 / 3, 0.5, 1, 1)
    for e in (4, 5, 6):
        t.begin(e)
    assert (t.accuracy, t.precision, t.recall, t.stale_kept) == (1.0, 0.5, 1.0, 0)


def test_tracker_refuses_a_double_forget() -> None:
    w = make_world(SMALL, 1)
    tracker = Tracker(w)
    tracker.admit(0, w.arrivals[0][:2])
    tracker.forget(0, w.arrivals[0][:1])
    with pytest.raises(ValueError):
        tracker.forget(1, w.arrivals[0][:1])
    with pytest.raises(ValueError):
        tracker.forget(1, w.arrivals[0][3:4])  # never admitted


# --- mechanisms ----------------------------------------------------------------------------------


def _play_cfg(cfg: ForgetConfig, seed: int = 2) -> tuple[Tracker, dict[str, list[float]], Any, int]:
    return _play(cfg, make_world(cfg, seed), seed, None)


def test_keep_all_never_forgets() -> None:
    tracker, series, _, misses = _play_cfg(SMALL.with_(mechanism="keep_all"))
    assert tracker.forgets == 0 and misses == 0
    assert series["reduction"][-1] == 0.0


def test_time_decay_forgets_exactly_what_decay_alone_puts_below_theta() -> None:
    cfg = SMALL.with_(mechanism="time_decay", epochs=200)
    w = make_world(cfg, 2)
    judges = Judges(cfg, w, Params(), 2)
    kb = mech.TimeDecay(judges)
    p = Params()
    for t in range(cfg.epochs):
        kb.admit(t, w.arrivals[t])
        for q in w.queries[t]:
            if kb.holds(q.item):
                kb.last_access[q.item] = t
        held = sorted(kb.live)
        want = [
            x
            for x in held
            if decay(t - kb.last_access[x], p.decay_scales, p.decay_weights) < p.theta
        ]
        assert kb.step(t) == want
    assert kb.live != set(kb.last_access)  # something was forgotten


def test_lru_holds_at_most_its_capacity_and_evicts_the_least_recent() -> None:
    w = make_world(SMALL, 3)
    cap = [max(5, 40 - t // 4) for t in range(SMALL.epochs)]
    kb = mech.Lru(len(w.agents), cap)
    for t in range(SMALL.epochs):
        kb.admit(t, w.arrivals[t])
        for q in w.queries[t]:
            if kb.holds(q.item):
                kb.last_access[q.item] = t
        before = {x: kb.last_access[x] for x in kb.live}
        gone = kb.step(t)
        assert len(kb.live) <= cap[t]
        if gone:
            assert max(before[x] for x in gone) <= min(before[x] for x in kb.live)


def test_lru_has_the_reference_protocols_footprint() -> None:
    ref = SMALL.with_(vote_rule="at_alpha", ablations=("no_floor",), agents=4)
    lru = ref.with_(mechanism="lru", ablations=())
    cfg_ref = ref.with_(ablations=())
    _, s_ref, _, _ = _play_cfg(cfg_ref)
    _, s_lru, _, _ = _play_cfg(lru)
    assert s_lru["footprint"] == s_ref["footprint"]


def test_single_curator_is_its_own_judgment_executed() -> None:
    cfg = SMALL.with_(mechanism="single_curator", epochs=200)
    w = make_world(cfg, 4)
    judges = Judges(cfg, w, Params(), 4)
    shadow = Judges(cfg, w, Params(), 4)  # the same random stream: the same readings
    kb = mech.SingleCurator(judges, w, 4)
    forgot = 0
    for t in range(cfg.epochs):
        kb.admit(t, w.arrivals[t])
        want = []
        if shadow.sweeps(kb.curator, t):
            want = [
                x
                for x in sorted(kb.live)
                if shadow.confidence(kb.curator, x, t, kb.last_access[x]) > 0
            ]
        assert kb.step(t) == want
        forgot += len(want)
    assert forgot > 0


def test_majority_needs_more_than_half_of_all_agents() -> None:
    cfg = SMALL.with_(mechanism="majority", epochs=200)
    w = make_world(cfg, 5)
    kb = mech.Majority(Judges(cfg, w, Params(), 5), w)
    forgot = 0
    for t in range(cfg.epochs):
        kb.admit(t, w.arrivals[t])
        for x in kb.step(t):
            assert len(kb.votes[x]) > len(w.agents) / 2
            forgot += 1
        for x in kb.live:
            assert len(kb.votes.get(x, ())) <= len(w.agents) / 2
    assert forgot > 0


def test_protocol_decisions_are_the_orchestrators() -> None:
    """The protocol mechanism takes no decision of its own: replaying its command log on a
    fresh orchestrator forgets the same items at the same ticks, and every forget had
    S ≥ Q by ``forgetting.decide`` (checked through the replayed state)."""
    cfg = SMALL.with_(vote_rule="at_alpha", epochs=200)
    _, _, kb, _ = _play_cfg(cfg)
    assert isinstance(kb, mech.ProtocolKB) and kb.forgets
    fresh = Orchestrator(kb.params, kb.agents)
    replayed = []
    for cmd in kb.log:
        for ev in fresh.apply(dict(cmd))["events"]:
            if ev.get("event") == "forget":
                replayed.append((fresh.now, ev["artifact"]))
    assert replayed == kb.forgets
    assert fresh.public_state() == kb.orchestrator.public_state()
    assert kb.refused == 0


def test_fg1_floor_forbids_forgetting_below_twelve_agents() -> None:
    """FG-1: with fewer than min_active_agents active agents nothing is forgotten; the
    no_floor baseline forgets in the same world."""
    four = SMALL.with_(agents=4, vote_rule="at_alpha", epochs=200)
    t_floor, _, _, _ = _play_cfg(four)
    t_free, _, _, _ = _play_cfg(four.with_(ablations=("no_floor",)))
    assert Params().min_active_agents > 4
    assert t_floor.forgets == 0 and t_free.forgets > 0


def test_documented_vote_rule_freezes_confidence_near_zero() -> None:
    """The finding docs/evaluation.md reports: with votes final and cast as soon as C < θ,
    the forget score never reaches the quorum; waiting for c ≥ α does."""
    cfg = SMALL.with_(epochs=300)
    eager, _, kb_eager, _ = _play_cfg(cfg)
    patient, _, _, _ = _play_cfg(cfg.with_(vote_rule="at_alpha"))
    assert isinstance(kb_eager, mech.ProtocolKB)
    votes = [c for a in kb_eager.orchestrator._artifacts.values() for c in a.forget_votes.values()]
    assert votes and sum(votes) / len(votes) < 0.25 * MICRO
    assert eager.forgets < patient.forgets


def test_no_reputation_flattens_weights_only() -> None:
    w = make_world(SMALL, 1)
    flat = mech.registry(SMALL.with_(ablations=("no_reputation",)), w)
    real = mech.registry(SMALL, w)
    assert {a.weight for a in flat} == {1.0}
    assert [a.weight for a in real] == [w.weight[a] for a in w.agents]
    p = mech.protocol_params(SMALL.with_(ablations=("decay_only", "no_floor")))
    assert (p.omega_R, p.min_active_agents) == (0.0, 1)
    assert dataclasses.replace(p, omega_R=Params().omega_R, min_active_agents=12) == Params()


# --- a whole run ---------------------------------------------------------------------------------


def test_run_is_deterministic_and_reports_its_measurements() -> None:
    cfg = SMALL.with_(vote_rule="at_alpha", epochs=150)
    a, b = run_forgetting(cfg, 9), run_forgetting(cfg, 9)
    assert a.to_dict() == b.to_dict()
    assert set(a.series) == {
        "footprint",
        "reduction",
        "accuracy",
        "precision",
        "recall",
        "wrongly_forgotten",
        "stale_kept",
        "decisions",
    }
    assert a.series["wrongly_forgotten"][-1] == a.final["wrongly_forgotten"]
    assert all(len(v) == cfg.epochs for v in a.series.values())
    f = a.final
    assert f["footprint"] + f["reduction"] * a.extras["admitted"] == pytest.approx(
        a.extras["admitted"]
    )
    assert sum(a.extras["admitted_by_label"].values()) == a.extras["admitted"]
    assert f["decisions_per_epoch"] * cfg.epochs == pytest.approx(sum(a.series["decisions"]))


# --- config --------------------------------------------------------------------------------------


def test_config_errors_name_the_field() -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"scenario": "nope"}, "scenario"),
        ({"mechanism": "protocol2"}, "mechanism"),
        ({"ablations": ("no_floor", "no_floor")}, "ablations"),
        ({"ablations": ("decay_only", "relevance_only")}, "ablations"),
        ({"mechanism": "lru", "ablations": ("no_floor",)}, "ablations"),
        ({"governance": "pbft", "mechanism": "majority"}, "governance"),
        ({"epochs": 0}, "epochs"),
        ({"epochs": True}, "epochs"),
        ({"junk_rate": math.nan}, "junk_rate"),
        ({"topic_life": 0.5}, "topic_life"),
        ({"vote_rule": "later"}, "vote_rule"),
        ({"fault": "loud"}, "fault"),
        ({"agents": -3}, "agents"),
    ]
    for changes, field in bad:
        with pytest.raises(ConfigError, match=field):
            ForgetConfig(**changes)
    with pytest.raises(ConfigError, match="forgetting"):
        ForgetConfig().with_(no_such_field=1)


_ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**7),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.tuples(st.text(max_size=8)),
    st.sampled_from([*MECHANISMS, *ABLATIONS, *GOVERNANCE, *FAULTS, *VOTE_RULES, *SCENARIOS]),
    st.tuples(st.sampled_from(ABLATIONS)),
    st.lists(st.integers(), max_size=2),
)


@given(
    data=st.dictionaries(
        st.sampled_from([f.name for f in dataclasses.fields(ForgetConfig)]), _ANY, max_size=5
    )
)
def test_hostile_config_values_are_config_errors(data: dict[str, Any]) -> None:
    try:
        cfg = ForgetConfig(**data)
    except ConfigError:
        return
    assert cfg.label and cfg.to_dict()["scenario"] in SCENARIOS


def test_labels_are_unique_across_the_cells() -> None:
    from ostrom.simulation.forgetting.experiment import build_forgetting

    exp = build_forgetting(
        seeds=1,
        seed_start=1,
        rounds=5,
        agents=None,
        artifacts=None,
        scenarios=None,
        governance=None,
    )
    assert len(exp.labels) == len(set(exp.labels)) == 18
    assert {c.config.mechanism for c in exp.cells} == set(MECHANISMS)
    assert {a for c in exp.cells for a in c.config.ablations} == set(ABLATIONS)
    only = build_forgetting(
        seeds=1,
        seed_start=1,
        rounds=5,
        agents=None,
        artifacts=None,
        scenarios=None,
        governance="pbft",
    )
    assert {c.config.governance for c in only.cells} == {"local", "pbft"}
    assert only.scenarios == ("consensus",)
