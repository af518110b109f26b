"""What a simulation run is made of and what it gives (``ostrom.simulation``): the config
(``config``), the world drawn from a seed (``world``), and whole runs of the protocol, its
ablations and the baselines (``run.simulate``, ``protocol.Run``, ``baselines``).

Runs are small (30 agents, 60 rounds, 120 artifacts: about 0.1 s each) so the file stays
within seconds.  Each test that checks an effect (an ablation, a rate) also checks that
the same configuration without the cause does *not* show it, so it cannot pass vacuously.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.protocol.agents import MAX_TIER
from ostrom.simulation import archetypes as arch
from ostrom.simulation import config as cfgmod
from ostrom.simulation import metrics, protocol, world
from ostrom.simulation.config import (
    ACCEPT_THRESHOLD,
    ARCHETYPES,
    MIXES,
    QUALITY_RANGES,
    ConfigError,
    SimConfig,
    from_mapping,
    load_config,
    population,
)
from ostrom.simulation.run import SERIES, simulate

SMALL = SimConfig(agents=30, rounds=60, artifacts=120)


def custom(**shares: float) -> SimConfig:
    return SMALL.with_(scenario="custom", mix=tuple(shares.items()))


def same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


# --- config --------------------------------------------------------------------------------


def largest_remainder(shares: dict[str, float], n: int) -> dict[str, int]:
    """The rule, in exact arithmetic (shares read as the decimals they are written as)."""
    exact = {a: Fraction(str(shares[a])) * n for a in ARCHETYPES if shares.get(a, 0) > 0}
    out = {a: math.floor(v) for a, v in exact.items()}
    rest = n - sum(out.values())
    for a in sorted(exact, key=lambda a: (-(exact[a] - out[a]), ARCHETYPES.index(a)))[:rest]:
        out[a] += 1
    return {a: k for a, k in out.items() if k}


@pytest.mark.parametrize("scenario", sorted(MIXES))
def test_population_follows_the_shares_by_largest_remainder(scenario: str) -> None:
    for n in range(2, 251):
        c = SimConfig(scenario=scenario, agents=n, reviewers=1, quorum=1)
        pop = population(c)
        got = Counter(pop)
        assert len(pop) == n
        assert dict(got) == largest_remainder(MIXES[scenario], n), n
        for a, k in got.items():
            assert abs(k - MIXES[scenario][a] * n) < 1, (n, a)
        # in the fixed order of ARCHETYPES
        assert pop == sorted(pop, key=ARCHETYPES.index)


def test_population_hand_cases() -> None:
    assert Counter(population(SimConfig())) == {
        "honest": 40,
        "sycophant": 15,
        "malicious": 10,
        "strategic": 10,
        "adaptive": 5,
        "broken": 10,
        "lazy": 10,
    }
    # 10 agents, moderate: 4, 1.5, 1, 1, 0.5, 1, 1 -> one seat left, a tie of remainders
    # 0.5 broken in ARCHETYPES order: the sycophants get it
    small = Counter(population(SimConfig(agents=10, reviewers=5)))
    assert small == {
        "honest": 4,
        "sycophant": 2,
        "malicious": 1,
        "strategic": 1,
        "broken": 1,
        "lazy": 1,
    }
    assert Counter(population(custom(honest=0.5, broken=0.5).with_(agents=7))) == {
        "honest": 4,
        "broken": 3,
    }


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"scenario": "extreme"}, "scenario"),
        ({"scenario": "custom"}, "needs a mix"),
        ({"scenario": "custom", "mix": (("honest", 0.5), ("saint", 0.5))}, "unknown archetype"),
        ({"scenario": "custom", "mix": (("honest", 1.5), ("lazy", -0.5))}, "share of honest"),
        ({"scenario": "custom", "mix": (("honest", 0.5), ("lazy", 0.4))}, "sum to 1"),
        ({"agents": 1}, "agents"),
        ({"agents": 30.0}, "agents"),
        ({"agents": True}, "agents"),
        ({"artifacts": 0}, "artifacts"),
        ({"rounds": 0}, "rounds"),
        ({"proposals_per_round": -1}, "proposals_per_round"),
        ({"reviewers": 0}, "reviewers"),
        ({"quorum": 0}, "quorum"),
        ({"quorum": 6}, "quorum"),
        ({"reviewers": 30, "quorum": 3}, "reviewers"),
        ({"deliberation_rounds": 0}, "deliberation_rounds"),
        ({"adaptive_switch": -1}, "adaptive_switch"),
        ({"dispute_scans": -1}, "dispute_scans"),
        ({"feedback_noise": 1.5}, "feedback_noise"),
        ({"strategic_attack": -0.1}, "strategic_attack"),
        ({"bloc_target": 2}, "bloc_target"),
        ({"broken_malfunction": "0.3"}, "broken_malfunction"),
        ({"lazy_participation": 1.01}, "lazy_participation"),
        ({"lazy_reveal": -1}, "lazy_reveal"),
        ({"founder_reputation": 1.2}, "founder_reputation"),
        ({"perception_noise": -0.1}, "perception_noise"),
        ({"deliberation_noise": -1}, "deliberation_noise"),
        ({"sycophant_noise": -0.01}, "sycophant_noise"),
        ({"founder_evidence": 1.0}, "founder_evidence"),
        ({"quality_mix": (0.5, 0.3, 0.3)}, "quality_mix"),
        ({"quality_mix": (0.5, 0.5)}, "quality_mix"),
        ({"quality_mix": (1.2, -0.1, -0.1)}, "quality_mix"),
        ({"governance": "dictator"}, "governance"),
        ({"ablations": ("no_quorum",)}, "ablations"),
        ({"governance": "majority", "ablations": ("no_sanctions",)}, "protocol only"),
        ({"governance": "ungoverned", "ablations": ("no_reputation",)}, "protocol only"),
        ({"feedback": "oracle"}, "feedback"),
        ({"artifacts": 119}, "rounds x proposals_per_round"),
        ({"rounds": 61}, "rounds x proposals_per_round"),
    ],
)
def test_bad_fields_are_refused_by_name(changes: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        SMALL.with_(**changes)


def test_good_configs_are_accepted() -> None:
    SMALL.with_(quorum=5, reviewers=5)
    SMALL.with_(artifacts=120, rounds=60, proposals_per_round=2)
    SMALL.with_(ablations=cfgmod.ABLATIONS)
    for g in cfgmod.GOVERNANCE:
        assert SMALL.with_(governance=g).label == g
    assert SMALL.with_(ablations=("no_sanctions",)).label == "protocol+no_sanctions"
    custom(honest=0.7, bloc=0.3)


def test_load_config_reads_a_toml_file_with_a_mix(tmp_path: Path) -> None:
    p = tmp_path / "run.toml"
    p.write_text(
        'agents = 40\nrounds = 50\nartifacts = 100\nfeedback = "truth"\n'
        'quality_mix = [0.4, 0.4, 0.2]\nablations = ["no_sanctions"]\n\n'
        "[mix]\nhonest = 0.5\nmalicious = 0.25\nlazy = 0.25\n",
        encoding="utf-8",
    )
    c = load_config(p)
    assert c.scenario == "custom"
    assert c.shares == {"honest": 0.5, "malicious": 0.25, "lazy": 0.25}
    assert (c.agents, c.rounds, c.artifacts, c.feedback) == (40, 50, 100, "truth")
    assert c.quality_mix == (0.4, 0.4, 0.2)
    assert c.ablations == ("no_sanctions",)
    assert Counter(population(c)) == {"honest": 20, "malicious": 10, "lazy": 10}
    # a base is kept where the file says nothing
    assert load_config(p, base=SimConfig(reviewers=7, quorum=4)).reviewers == 7
    # and the dict round trip gives the same config
    assert from_mapping(c.to_dict()) == c


@pytest.mark.parametrize(
    ("text", "msg"),
    [
        ("agents = 40\nvelocity = 3\n", "unknown field 'velocity'"),
        ("mix = 3\n", "mix must be a table"),
        ("[mix]\nhonest = 0.5\nsaint = 0.5\n", "unknown archetype"),
        ("[mix]\nhonest = 0.5\n", "sum to 1"),
        ("agents = [\n", "not TOML"),
        ('governance = "majority"\nablations = ["no_reputation"]\n', "protocol only"),
        ('quality_mix = "abc"\n', "bad.toml"),
    ],
)
def test_load_config_refuses(tmp_path: Path, text: str, msg: str) -> None:
    p = tmp_path / "bad.toml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=msg):
        load_config(p)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    "doc",
    [
        {"quality_mix": "abc"},  # refused, but the message does not name the field
        {"mix": {"honest": "lots"}},  # a plain ValueError, not a ConfigError
        {"scenario": "moderate", "mix": {"honest": 1.0}},  # the mix is silently ignored
    ],
)
def test_config_bugs_found(doc: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="mix"):
        from_mapping(doc)


# --- world ---------------------------------------------------------------------------------


@given(st.integers(1, 500), st.lists(st.integers(0, 20), min_size=1, max_size=8))
def test_counts_is_a_largest_remainder_split(total: int, weights: list[int]) -> None:
    if sum(weights) == 0:
        weights = [1, *weights[1:]]
    shares = tuple(w / sum(weights) for w in weights)
    out = world.counts(total, shares)
    assert sum(out) == total
    rem = [s * total - k for s, k in zip(shares, out, strict=True)]
    assert all(-1 < r < 1 for r in rem)
    # nobody rounded up has a smaller remainder than somebody rounded down
    down = [s * total - math.floor(s * total) for s in shares]
    ups = [d for d, k, s in zip(down, out, shares, strict=True) if k > math.floor(s * total)]
    downs = [d for d, k, s in zip(down, out, shares, strict=True) if k == math.floor(s * total)]
    if ups and downs:
        assert min(ups) >= max(downs) - 1e-9


@pytest.mark.parametrize(
    "c",
    [
        SMALL,
        SMALL.with_(artifacts=137, quality_mix=(0.33, 0.33, 0.34)),
        SimConfig(agents=11, reviewers=3, rounds=10, artifacts=21, quality_mix=(1.0, 0.0, 0.0)),
    ],
)
def test_world_has_the_exact_quality_mix_and_ranges(c: SimConfig) -> None:
    w = world.make_world(c, 5)
    got = Counter(a.quality_class for a in w.artifacts)
    want = dict(
        zip(("good", "mediocre", "bad"), world.counts(c.artifacts, c.quality_mix), strict=True)
    )
    assert {k: got.get(k, 0) for k in want} == want
    assert len(w.artifacts) == c.artifacts
    assert len({a.id for a in w.artifacts}) == c.artifacts
    # the ranges of the design, written out (not read back from the module under test)
    ranges = {"good": (0.7, 1.0), "mediocre": (0.4, 0.7), "bad": (0.0, 0.4)}
    assert ranges == QUALITY_RANGES
    assert ranges["good"][0] == ACCEPT_THRESHOLD == ranges["mediocre"][1]
    for a in w.artifacts:
        lo, hi = ranges[a.quality_class]
        assert lo <= a.quality < hi
        assert a.good == (a.quality_class == "good")
    assert list(w.agents) == sorted(w.agents) and len(set(w.agents)) == c.agents
    assert Counter(w.archetype.values()) == Counter(population(c))


def test_world_is_deterministic_per_seed_and_varies_across_seeds() -> None:
    a, b, c = world.make_world(SMALL, 1), world.make_world(SMALL, 1), world.make_world(SMALL, 2)
    assert a == b
    assert a.artifacts != c.artifacts
    assert [x.quality_class for x in a.artifacts] != [x.quality_class for x in c.artifacts]
    assert a.archetype != c.archetype  # the archetypes are shuffled over the ids
    assert Counter(a.archetype.values()) == Counter(c.archetype.values())
    s1, s2 = world.stream(3, "votes"), world.stream(3, "votes")
    assert [s1.random() for _ in range(5)] == [s2.random() for _ in range(5)]
    assert world.stream(3, "votes").random() != world.stream(3, "acts").random()


# --- runs: determinism and shape -----------------------------------------------------------

GOVERNANCES = cfgmod.GOVERNANCE


def canon(c: SimConfig, seed: int) -> str:
    return json.dumps(simulate(c, seed).to_dict(), sort_keys=True)


@pytest.mark.parametrize("governance", GOVERNANCES)
def test_same_config_and_seed_give_the_same_result(governance: str) -> None:
    c = SMALL.with_(governance=governance)
    assert canon(c, 11) == canon(c, 11)
    if governance != "ungoverned":  # ungoverned accepts every proposal whatever the seed
        assert canon(c, 11) != canon(c, 12)


def test_runs_are_reproducible_in_a_fresh_process() -> None:
    """Another interpreter, with another string-hash seed: any dependence on set order,
    ``hash()`` or object ids would show."""
    configs = [
        SMALL,
        SMALL.with_(ablations=("no_commit_reveal",)),
        SMALL.with_(governance="majority"),
    ]
    script = (
        "import json, sys\n"
        "from ostrom.simulation.config import from_mapping\n"
        "from ostrom.simulation.run import simulate\n"
        "out = []\n"
        "for d in json.loads(sys.argv[1]):\n"
        "    out.append(json.dumps(simulate(from_mapping(d), 11).to_dict(), sort_keys=True))\n"
        "print(json.dumps(out))\n"
    )
    arg = json.dumps([c.to_dict() for c in configs])
    here = [canon(c, 11) for c in configs]
    for hashseed in ("1", "987654"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        proc = subprocess.run(
            [sys.executable, "-c", script, arg],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=120,
        )
        assert json.loads(proc.stdout) == here


@pytest.mark.parametrize("governance", GOVERNANCES)
def test_series_lengths_and_metric_ranges(governance: str) -> None:
    c = SMALL.with_(governance=governance)
    r = simulate(c, 3)
    assert tuple(r.series) == SERIES
    for name, s in r.series.items():
        assert len(s) == c.rounds, name
        for v in s:
            # (a Gini of equal reputations comes out as ±2e-16: see the metrics tests)
            assert math.isnan(v) or -1e-12 <= v <= 1.0, (name, v)
        assert same(r.final[name], s[-1])
    for v in r.series["gini"]:
        assert math.isnan(v) or v < 1.0
    assert r.extras["proposed"] == c.rounds * c.proposals_per_round
    assert not math.isnan(r.final["precision"]) and not math.isnan(r.final["recall"])
    if governance in ("protocol", "weighted_no_deliberation"):
        assert not math.isnan(r.final["fpr"]) and not math.isnan(r.final["gini"])
    else:
        assert all(math.isnan(v) for v in r.series["fpr"])  # baselines sanction nobody


# --- the protocol runs on the core ---------------------------------------------------------


def test_protocol_drives_the_real_core() -> None:
    run = protocol.Run(SMALL, 7)
    r = run.run()
    cmd = r.extras["commands"]
    assert cmd["tick:ok"] == SMALL.rounds
    assert cmd["propose:ok"] == r.extras["proposed"] == SMALL.rounds * SMALL.proposals_per_round
    for op in ("commit_vote", "reveal_vote", "object", "dispute"):
        assert cmd.get(f"{op}:ok", 0) > 0, op
    # the broken agents' garbage reaches the core and is refused there
    assert cmd.get("commit_vote:invalid_input", 0) + cmd.get("object:invalid_input", 0) > 0
    assert run.community.now == SMALL.rounds
    # the tracker follows the core: every artifact's state is the orchestrator's
    proposed = [a.id for a in run.world.artifacts[: r.extras["proposed"]]]
    assert run.tracker.state == {x: run.community.state_of(x) for x in proposed}
    # and the final metrics are the core's state measured from scratch
    good = {a.id: a.good for a in run.world.artifacts}
    active = [x for x in proposed if run.community.state_of(x) == "active"]
    settled_good = [x for x in proposed if good[x] and run.community.state_of(x) in metrics.STABLE]
    assert r.final["precision"] == sum(good[x] for x in active) / len(active)
    assert r.final["recall"] == sum(good[x] for x in active) / len(settled_good)
    rep = run.community.reputation
    assert r.final["gini"] == pytest.approx(metrics.gini(rep.expected(a) for a in run.world.agents))


def test_protocol_parameters_follow_the_config() -> None:
    p = protocol.protocol_params(SMALL.with_(reviewers=4, quorum=2), 9)
    assert (p.reviewers, p.quorum, p.T_delib, p.seed) == (4, 2, SMALL.deliberation_rounds, 9)
    assert (
        protocol.protocol_params(SMALL.with_(governance="weighted_no_deliberation"), 9).T_delib == 1
    )
    assert (
        protocol.protocol_params(SMALL.with_(ablations=("no_farming_cap",)), 9).farm_gain == 100.0
    )


def test_weighted_no_deliberation_reads_without_the_bonus(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, set[bool]] = {"protocol": set(), "weighted_no_deliberation": set()}
    real = arch.vote

    def spy(archetype, agent, b, cfg, rng, seed):  # type: ignore[no-untyped-def]
        if b.kind == "review":
            seen[cfg.governance].add(b.deliberated)
        return real(archetype, agent, b, cfg, rng, seed)

    monkeypatch.setattr(arch, "vote", spy)
    for g in seen:
        simulate(SMALL.with_(governance=g, rounds=20, artifacts=40), 1)
    assert seen == {"protocol": {True}, "weighted_no_deliberation": {False}}


# --- ablations -----------------------------------------------------------------------------

BROKEN_HEAVY = custom(honest=0.5, broken=0.3, lazy=0.2).with_(broken_malfunction=0.9)


def test_no_sanctions_sanctions_nobody() -> None:
    for seed in (1, 2):
        for c in (BROKEN_HEAVY, SMALL):
            base = simulate(c, seed).extras
            assert base["quarantined"] or base["warned_or_worse"]  # they fire without it
            r = simulate(c.with_(ablations=("no_sanctions",)), seed)
            assert r.extras["sanctioned"] == {}
            assert r.extras["warned_or_worse"] == {}
            assert r.extras["quarantined"] == {}
            assert r.extras["first_sanction_round"] is None
            assert all(v == 0.0 for v in r.series["fpr"])
        assert simulate(BROKEN_HEAVY, seed).extras["quarantined"]
        assert simulate(SMALL, seed).extras["warned_or_worse"]


def test_no_reputation_weighting_gives_every_agent_the_same_weight_only() -> None:
    flat = protocol.Run(SMALL.with_(ablations=("no_reputation_weighting",)), 4)
    flat.run()
    weights = {a.weight for a in flat.community.agents.values()}
    assert weights == {flat.community.reputation.params.w_max}
    assert len({a.tier for a in flat.community.agents.values()}) > 1  # tiers still move
    normal = protocol.Run(SMALL, 4)
    normal.run()
    assert len({a.weight for a in normal.community.agents.values()}) > 5


def test_no_reputation_gates_nothing() -> None:
    """Issue 43, item 1: weights, tiers and so recruitment no longer follow reputation:
    every agent not under a sanction's tier cap holds the top tier, whatever its E."""
    run = protocol.Run(SMALL.with_(ablations=("no_reputation",)), 4)
    run.run()
    agents = run.community.agents.values()
    assert {a.weight for a in agents} == {run.community.reputation.params.w_max}
    capped = {a for a in run.community.agents if run.community.sanctions.tier_cap(a) is not None}
    assert {a.tier for a in agents if a.id not in capped} == {MAX_TIER}
    # the book still scores: what reputation would say is measured, not used
    assert len({round(run.community.reputation.expected(a), 6) for a in run.world.agents}) > 5


def _sycophant_views(monkeypatch: pytest.MonkeyPatch, governance: str) -> list[tuple[bool, ...]]:
    views: list[tuple[bool, ...]] = []
    real = arch.vote

    def spy(archetype, agent, b, cfg, rng, seed):  # type: ignore[no-untyped-def]
        if archetype == "sycophant":
            views.append(b.visible)
        return real(archetype, agent, b, cfg, rng, seed)

    monkeypatch.setattr(arch, "vote", spy)
    simulate(custom(sycophant=0.5, malicious=0.5).with_(governance=governance), 3)
    return views


@pytest.mark.parametrize("governance", ["majority", "weighted_majority"])
def test_majority_ballots_are_concealed(monkeypatch: pytest.MonkeyPatch, governance: str) -> None:
    """The reference ballot: a sycophant never sees a vote to copy (issue 43, item 1)."""
    views = _sycophant_views(monkeypatch, governance)
    assert views and all(v == () for v in views)


def test_open_majority_lets_sycophants_copy_the_adversaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    views = _sycophant_views(monkeypatch, "majority_open")
    assert sum(1 for v in views if v) > len(views) // 2


def test_weighted_majority_decides_by_weight() -> None:
    """Same ballots, same votes: the weighted tally changes some decisions (ties in count
    broken by weight, and minorities of heavy voters), so its precision differs."""
    plain = [simulate(SMALL.with_(governance="majority"), s).final["precision"] for s in (1, 2)]
    weighted = [
        simulate(SMALL.with_(governance="weighted_majority"), s).final["precision"] for s in (1, 2)
    ]
    assert plain != weighted


def test_no_commit_reveal_lets_sycophants_see_votes(monkeypatch: pytest.MonkeyPatch) -> None:
    c = custom(sycophant=0.7, malicious=0.3)
    views: list[tuple[bool, ...]] = []
    real = arch.vote

    def spy(archetype, agent, b, cfg, rng, seed):  # type: ignore[no-untyped-def]
        if archetype == "sycophant":
            views.append(b.visible)
        return real(archetype, agent, b, cfg, rng, seed)

    monkeypatch.setattr(arch, "vote", spy)
    gaps: list[float] = []
    for seed in (1, 2, 3):
        views.clear()
        hidden = simulate(c, seed)
        assert views and all(v == () for v in views)  # commit-reveal hides every vote
        views.clear()
        open_ = simulate(c.with_(ablations=("no_commit_reveal",)), seed)
        assert sum(1 for v in views if v) > len(views) / 2
        gaps.append(hidden.final["precision"] - open_.final["precision"])
    # the malicious vote first and the sycophants copy them: worse decisions, on average
    # over the seeds (in one run the malicious may prevail anyway, whoever the reviewer
    # sortition draws: a gap of -0.001 at seed 1, and -0.013 at seed 4 with the earlier
    # ranking lottery)
    assert sum(gaps) / len(gaps) > 0.1, gaps


def commit_orders(c: SimConfig, seed: int, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """For each commit phase of a protocol run, the archetypes of the reviewers in the
    order they were asked to vote."""
    run = protocol.Run(c, seed)
    orders: list[list[str]] = []
    current: list[str] | None = None
    real_vote, real_commits = arch.vote, run.commits

    def spy(archetype, agent, b, cfg, rng, seed):  # type: ignore[no-untyped-def]
        if current is not None:
            current.append(archetype)
        return real_vote(archetype, agent, b, cfg, rng, seed)

    def commits(x: str) -> None:
        nonlocal current
        current = []
        real_commits(x)
        orders.append(current)
        current = None

    monkeypatch.setattr(arch, "vote", spy)
    monkeypatch.setattr(run, "commits", commits)
    run.run()
    return [o for o in orders if o]


def test_no_commit_reveal_lets_attackers_speak_first(monkeypatch: pytest.MonkeyPatch) -> None:
    c = custom(honest=0.4, sycophant=0.3, malicious=0.3)

    def late(orders: list[list[str]]) -> int:
        """Ballots where a malicious reviewer votes after somebody else."""
        n = 0
        for o in orders:
            other = next((i for i, k in enumerate(o) if k != "malicious"), len(o))
            n += "malicious" in o[other:]
        return n

    visible = commit_orders(c.with_(ablations=("no_commit_reveal",)), 5, monkeypatch)
    assert sum("malicious" in o for o in visible) > 20
    assert late(visible) == 0
    hidden = commit_orders(c, 5, monkeypatch)
    assert late(hidden) > 5  # without the ablation the order is a plain shuffle


# --- feedback, broken agents, baselines ----------------------------------------------------


def test_truth_feedback_runs_and_separates_the_malicious() -> None:
    c = custom(honest=0.6, malicious=0.4).with_(feedback_noise=0.0)
    for seed in (1, 2):
        t = simulate(c.with_(feedback="truth"), seed)
        d = simulate(c, seed)
        assert t.to_dict() != d.to_dict()
        mr = t.extras["mean_reputation"]
        assert mr["honest"] > mr["malicious"] + 0.2
        assert t.final["separation"] > 0.2


def test_many_malfunctions_lead_to_quarantines() -> None:
    c = custom(honest=0.5, broken=0.5)
    for seed in (1, 2):
        bad = simulate(c.with_(broken_malfunction=0.9), seed).extras
        assert bad["quarantined"].get("broken", 0) >= 5
        assert set(bad["quarantined"]) == {"broken"}  # only the broken ones
        assert bad["repaired"] > 0
        fine = simulate(c.with_(broken_malfunction=0.0), seed).extras
        assert fine["quarantined"] == {} and fine["repaired"] == 0


def test_ungoverned_accepts_everything() -> None:
    c = SMALL.with_(governance="ungoverned", artifacts=150)
    w = world.make_world(c, 8)
    r = simulate(c, 8)
    ppr = c.proposals_per_round
    for i, p in enumerate(r.series["precision"]):
        first = w.artifacts[: (i + 1) * ppr]
        assert p == sum(a.good for a in first) / len(first)
    assert r.series["recall"] == [1.0] * c.rounds
    assert r.extras["decisions"] == {"active": c.rounds * ppr}
    assert all(math.isnan(v) for v in r.series["gini"])


@pytest.mark.parametrize("governance", ["protocol", "majority", "single_curator"])
def test_perfect_honest_readers_decide_perfectly(governance: str) -> None:
    c = custom(honest=1.0).with_(
        governance=governance, perception_noise=0.0, deliberation_noise=0.0
    )
    r = simulate(c, 2)
    assert r.final["precision"] == 1.0
    assert r.final["recall"] == 1.0
    # and a population that always lies does the opposite under a majority
    if governance == "majority":
        liars = custom(malicious=1.0).with_(governance=governance, perception_noise=0.0)
        bad = simulate(liars, 2)
        assert bad.final["precision"] == 0.0 and bad.final["recall"] == 0.0


def test_single_curator_records_its_curator() -> None:
    c = SMALL.with_(governance="single_curator")
    curators = set()
    for seed in range(6):
        r = simulate(c, seed)
        w = world.make_world(c, seed)
        cur = r.extras["curator"]
        assert cur["agent"] in w.agents
        assert cur["archetype"] == w.archetype[cur["agent"]]
        assert cur["agent"] == world.stream(seed, "curator").choice(w.agents)
        assert sum(r.extras["decisions"].values()) == r.extras["proposed"]
        curators.add(cur["agent"])
    assert len(curators) > 1
    # a lazy curator who does not show up lets artifacts expire
    lazy = simulate(custom(lazy=1.0).with_(governance="single_curator"), 1)
    assert lazy.extras["curator"]["archetype"] == "lazy"
    assert lazy.extras["decisions"].get("expired", 0) > 0
    assert set(lazy.extras["decisions"]) <= {"active", "expired"}
