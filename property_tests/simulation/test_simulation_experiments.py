"""Experiments, statistics, reports and ``ostrom simulate`` (ostrom/simulation/).

Most tests inject a fake run function (fast, deterministic per config and seed) in place
of ``simulate``; the last one runs the real ``smoke`` experiment end to end.
"""

from __future__ import annotations

import csv
import json
import math
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ostrom.simulation import commands as command
from ostrom.simulation import experiments as ex
from ostrom.simulation import report
from ostrom.simulation.config import ABLATIONS, GOVERNANCE, ConfigError, SimConfig
from ostrom.simulation.result import SERIES, RunResult
from ostrom.simulation.stats import paired, summarize

# --- a fake run function ---------------------------------------------------------------

QUALITY = {"protocol": 0.82, "majority": 0.78, "single_curator": 0.7, "ungoverned": 0.5}


def fake_run(config: SimConfig, seed: int) -> RunResult:
    """Deterministic per (config, seed); precision depends on the mechanism, the scenario
    and the ablations, so comparisons have something to find."""
    key = zlib.crc32(json.dumps(config.to_dict(), sort_keys=True).encode())
    rng = np.random.default_rng([key, seed])
    seed_rng = np.random.default_rng(seed)  # shared by every config: the pairing
    level = QUALITY.get(config.governance, 0.8) - 0.03 * len(config.ablations)
    level -= 0.05 if config.scenario == "high" else 0.0
    level += 0.02 * seed_rng.standard_normal()
    noise = rng.normal(0, 0.01, config.rounds)
    precision = [float(min(1.0, max(0.0, level + e))) for e in noise]
    series = {
        "precision": precision,
        "recall": [0.9] * config.rounds,
        "gini": [0.1] * config.rounds,
        "fpr": [0.0] * config.rounds,
    }
    if config.governance == "majority":
        series["fpr"] = [math.nan] * config.rounds
    final = {k: v[-1] for k, v in series.items()}
    sanctioned = {"honest": 1} if seed % 2 else {}
    extras = {"separation": float(rng.random()), "sanctioned": sanctioned, "note": "text"}
    return RunResult(config, seed, series, final, extras)


def failing_run(config: SimConfig, seed: int) -> RunResult:
    if config.governance == "majority" and seed == 2:
        raise ValueError("boom")
    return fake_run(config, seed)


def _small(name: str = "paper", **kw: object) -> ex.Experiment:
    return ex.build_experiment(name, seeds=3, rounds=10, agents=20, **kw)  # type: ignore[arg-type]


# --- stats -----------------------------------------------------------------------------


def _t3_cdf(t: float) -> float:
    """Student's t CDF with 3 degrees of freedom, closed form."""
    u = t / math.sqrt(3)
    return 0.5 + (u / (1 + u * u) + math.atan(u)) / math.pi


def test_paired_hand_computed() -> None:
    a, b = [1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 1.0, 2.0]
    c = paired(a, b)
    # differences 1, 1, 2, 2: mean 1.5, sd sqrt(1/3), t = 1.5 / (sd / 2) = 3 sqrt(3)
    sd = math.sqrt(1 / 3)
    assert c.n == 4 and c.dropped == 0
    assert c.mean_a == pytest.approx(2.5) and c.sd_a == pytest.approx(math.sqrt(5 / 3))
    assert c.mean_b == pytest.approx(1.0) and c.sd_b == pytest.approx(math.sqrt(2 / 3))
    assert c.diff == pytest.approx(1.5)
    assert c.sd_diff == pytest.approx(sd)
    assert c.d_z == pytest.approx(1.5 / sd)
    assert c.p == pytest.approx(2 * (1 - _t3_cdf(3 * math.sqrt(3))))
    half = 3.182446305284263 * sd / 2  # t(0.975, 3) from a table
    assert (c.ci_low, c.ci_high) == pytest.approx((1.5 - half, 1.5 + half))


def test_paired_drops_nan_pairs() -> None:
    c = paired([1.0, math.nan, 3.0, 4.0, 5.0], [0.0, 1.0, math.nan, 2.0, 3.0])
    # pairs kept: (1, 0), (4, 2), (5, 3): differences 1, 2, 2
    assert (c.n, c.dropped) == (3, 2)
    assert c.diff == pytest.approx(5 / 3)
    assert c.sd_diff == pytest.approx(math.sqrt(1 / 3))
    assert c.mean_a == pytest.approx(10 / 3)


def test_paired_degenerate_cases() -> None:
    same = paired([0.8, 0.7, 0.9], [0.8, 0.7, 0.9])
    assert (same.diff, same.sd_diff, same.p, same.d_z) == (0.0, 0.0, 1.0, 0.0)
    assert (same.ci_low, same.ci_high) == (0.0, 0.0)
    shift = paired([1.5, 2.5, 3.5], [1.0, 2.0, 3.0])
    assert shift.diff == 0.5 and shift.p == 0.0 and shift.d_z == math.inf
    assert (shift.ci_low, shift.ci_high) == (0.5, 0.5)
    down = paired([1.0, 2.0], [1.5, 2.5])
    assert down.d_z == -math.inf
    one = paired([1.0, math.nan], [0.0, 1.0])
    assert one.n == 1 and one.diff == 1.0
    assert all(math.isnan(v) for v in (one.p, one.d_z, one.sd_diff, one.ci_low, one.ci_high))
    none = paired([math.nan], [1.0])
    assert none.n == 0 and math.isnan(none.diff)
    with pytest.raises(ValueError, match="length"):
        paired([1.0, 2.0], [1.0])
    assert json.dumps(shift.to_dict(), allow_nan=False)  # inf and NaN made JSON-safe
    assert json.dumps(one.to_dict(), allow_nan=False)


def test_summarize() -> None:
    s = summarize([1.0, math.nan, 3.0])
    assert (s.mean, s.sd) == pytest.approx((2.0, math.sqrt(2))) and s.n == 2
    assert summarize([4.0]).n == 1 and math.isnan(summarize([4.0]).sd)
    assert summarize([]).n == 0 and math.isnan(summarize([]).mean)


# --- experiment definitions --------------------------------------------------------------


def test_paper_experiment_is_the_papers() -> None:
    exp = ex.build_experiment("paper")
    assert exp.total == 12 * 2 * ex.SEEDS["paper"]
    assert len(exp.cells) == 12
    assert exp.scenarios == ("moderate", "high")
    assert exp.seeds == tuple(range(1, ex.SEEDS["paper"] + 1))
    assert exp.labels == (
        "protocol",
        *GOVERNANCE[1:],
        *(f"protocol+{a}" for a in ABLATIONS),
    )
    for cell in exp.cells:
        cfg = cell.config
        assert cfg.label == cell.label
        assert (cfg.agents, cfg.artifacts, cfg.rounds) == (100, 1000, 500)
        assert cell.vs == (() if cell.label == "majority" else ("majority", *cell.vs[1:]))
    assert exp.cell("protocol+no_sanctions").vs == ("majority", "protocol")
    assert exp.cell("majority_open").vs == ("majority", "protocol")
    assert exp.cell("protocol+no_reputation").vs == (
        "majority",
        "protocol",
        "protocol+no_reputation_weighting",
    )
    assert {exp.config(c, "high").scenario for c in exp.cells} == {"high"}
    assert len(exp.runs()) == exp.total and len({r.key for r in exp.runs()}) == exp.total


def test_other_experiments() -> None:
    truth = ex.build_experiment("truth")
    assert {c.config.feedback for c in truth.cells} == {"decision", "truth"}
    assert truth.cell("protocol [truth]").vs == ("majority [truth]", "protocol")
    assert truth.cell("protocol+no_commit_reveal [truth]").config.ablations == ("no_commit_reveal",)
    assert truth.total == 6 * 2 * ex.SEEDS["truth"]
    bloc = ex.build_experiment("bloc")
    assert bloc.scenarios == ("bloc", "bloc_high")
    assert bloc.labels == (
        "protocol",
        "majority",
        "majority_open",
        "protocol+no_reputation",
        "protocol+no_commit_reveal",
        "protocol [truth]",
    )
    sanctions = ex.build_experiment("sanctions")
    assert len(sanctions.cells) == 2 * 4 * 2
    assert {c.config.rounds for c in sanctions.cells} == {500, 2000}
    assert all(c.config.artifacts == 2 * c.config.rounds for c in sanctions.cells)
    assert {c.config.broken_malfunction for c in sanctions.cells} == {0.1, 0.3, 0.6, 0.9}
    assert {c.config.lazy_reveal for c in sanctions.cells} == {0.7, 0.3}
    assert {c.config.governance for c in sanctions.cells} == {"protocol"}
    smoke = ex.build_experiment("smoke")
    assert smoke.total == 3 * 2 * 3
    assert all((c.config.agents, c.config.rounds) == (20, 60) for c in smoke.cells)


def test_overrides() -> None:
    exp = ex.build_experiment("paper", seeds=5, rounds=100)
    assert exp.total == 12 * 2 * 5 and exp.seeds == (1, 2, 3, 4, 5)
    assert all((c.config.rounds, c.config.artifacts) == (100, 200) for c in exp.cells)
    exp = ex.build_experiment("smoke", seeds=2, seed_start=10, agents=30, artifacts=500)
    assert exp.seeds == (10, 11)
    assert all((c.config.agents, c.config.artifacts) == (30, 500) for c in exp.cells)
    assert len(ex.build_experiment("sanctions", rounds=50).cells) == 8
    base = SimConfig(scenario="custom", mix=(("honest", 0.5), ("malicious", 0.5)), reviewers=3,
                     quorum=2)  # fmt: skip
    exp = ex.build_experiment("paper", seeds=1, base=base)
    assert exp.scenarios == ("custom",)
    assert all((c.config.reviewers, c.config.mix) == (3, base.mix) for c in exp.cells)
    assert ex.build_experiment("paper", scenarios=("high",)).scenarios == ("high",)


def test_bad_experiments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="experiment"):
        ex.build_experiment("nope")
    with pytest.raises(ConfigError, match="reviewers"):
        ex.build_experiment("smoke", agents=4)
    with pytest.raises(ConfigError, match="artifacts"):
        ex.build_experiment("paper", rounds=100, artifacts=10)
    with pytest.raises(ConfigError, match="scenario"):
        ex.build_experiment("paper", scenarios=("calm",))
    with pytest.raises(ConfigError, match="seeds"):
        ex.build_experiment("paper", seeds=0)


# --- running -----------------------------------------------------------------------------


def _as_json(result: ex.ExperimentResult) -> str:
    return json.dumps(report.results_doc(result), sort_keys=True)


def test_run_experiment_is_deterministic_and_independent_of_jobs() -> None:
    exp = _small()
    one = ex.run_experiment(exp, jobs=1, progress=False, run=fake_run)
    two = ex.run_experiment(exp, jobs=2, progress=False, run=fake_run)
    again = ex.run_experiment(exp, jobs=1, progress=False, run=fake_run)
    assert _as_json(one) == _as_json(two) == _as_json(again)
    assert [(r.config.label, r.config.scenario, r.seed) for r in two.runs] == [
        (s.label, exp.scenarios[s.scenario], s.seed) for s in exp.runs()
    ]
    assert [r.seed for r in one.get("majority", "high")] == [1, 2, 3]
    assert one.get("protocol", "moderate")[0].config.scenario == "moderate"


def test_failing_run_is_reported_with_config_and_seed() -> None:
    exp = _small("smoke")
    for jobs in (1, 2):
        with pytest.raises(ex.RunError) as info:
            ex.run_experiment(exp, jobs=jobs, progress=False, run=failing_run)
        err = info.value
        assert (err.label, err.seed) == ("majority", 2)
        assert err.config.governance == "majority"
        assert "ValueError: boom" in str(err) and '"governance": "majority"' in str(err)
        assert "seed 2" in str(err) and "Traceback" in err.detail


def test_metric_values_and_missing_counts() -> None:
    result = ex.run_experiment(_small("smoke"), jobs=1, progress=False, run=fake_run)
    metrics = result.metrics()
    assert metrics[:4] == list(SERIES)
    assert "separation" in metrics and "sanctioned.honest" in metrics and "note" not in metrics
    # seeds 1, 3 sanction one honest agent; seed 2 has no entry: a count of 0, not NaN
    assert result.values("protocol", "moderate", "sanctioned.honest") == [1.0, 0.0, 1.0]
    assert all(math.isnan(v) for v in result.values("majority", "moderate", "fpr"))


# --- report ------------------------------------------------------------------------------


def test_report_files(tmp_path: Path) -> None:
    result = ex.run_experiment(_small(), jobs=1, progress=False, run=fake_run)
    written = report.write_report(result, tmp_path / "a")
    names = sorted(p.name for p in written)
    assert names == sorted(
        [
            "results.csv",
            "comparisons.csv",
            "runs.csv",
            "results.json",
            "results.md",
            "precision_by_round_moderate.png",
            "precision_by_round_high.png",
            "degradation.png",
        ]
    )
    out = tmp_path / "a"
    rows = list(csv.DictReader((out / "results.csv").open(encoding="utf-8")))
    assert len(rows) == 12 * 2 * len(result.metrics())
    row = next(
        r
        for r in rows
        if (r["label"], r["scenario"], r["metric"]) == ("protocol", "high", "precision")
    )
    expected = paired(
        result.values("protocol", "high", "precision"),
        result.values("majority", "high", "precision"),
    )
    assert row["vs"] == "majority" and int(row["n"]) == 3
    assert float(row["diff"]) == pytest.approx(expected.diff)
    assert float(row["p"]) == pytest.approx(expected.p)
    assert float(row["d_z"]) == pytest.approx(expected.d_z)
    assert float(row["ci_low"]) < float(row["diff"]) < float(row["ci_high"])
    majority = next(r for r in rows if r["label"] == "majority" and r["metric"] == "fpr")
    assert majority["mean"] == "" and majority["vs"] == ""  # NaN -> empty; no reference
    comps = list(csv.DictReader((out / "comparisons.csv").open(encoding="utf-8")))
    assert {(r["label"], r["vs"]) for r in comps if r["label"] == "protocol+no_reputation"} == {
        ("protocol+no_reputation", "majority"),
        ("protocol+no_reputation", "protocol"),
        ("protocol+no_reputation", "protocol+no_reputation_weighting"),
    }
    runs = list(csv.DictReader((out / "runs.csv").open(encoding="utf-8")))
    assert len(runs) == result.experiment.total
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert doc["experiment"]["name"] == "paper" and len(doc["runs"]) == 72
    assert doc["experiment"]["cells"][0]["config"]["rounds"] == 10
    md = (out / "results.md").read_text(encoding="utf-8")
    assert "## Scenario `moderate`" in md and "## Scenario `high`" in md
    assert "| protocol | 0." in md and "vs majority" in md and "Degradation" in md
    assert "separation" in md
    for p in written:
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the same result gives the same bytes
    again = report.write_report(result, tmp_path / "b")
    for p, q in zip(written, again, strict=True):
        assert p.read_bytes() == q.read_bytes(), p.name


# --- the CLI -----------------------------------------------------------------------------


@pytest.fixture
def fake_simulate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(command, "simulate", fake_run)


@pytest.mark.usefixtures("fake_simulate")
def test_cli_single_configuration_json() -> None:
    args = ["--governance", "majority", "--seeds", "3", "--rounds", "10", "--agents", "20"]
    res = CliRunner().invoke(command.simulate_command, [*args, "--json", "--quiet", "--jobs", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["label"] == "majority" and doc["seeds"] == [1, 2, 3]
    assert doc["config"]["rounds"] == 10 and doc["config"]["artifacts"] == 20
    assert doc["summary"]["precision"]["n"] == 3 and len(doc["runs"]) == 3
    res = CliRunner().invoke(command.simulate_command, [*args, "--quiet", "--jobs", "1"])
    assert res.exit_code == 0 and "precision" in res.stdout and "majority" in res.stdout


@pytest.mark.usefixtures("fake_simulate")
def test_cli_experiment(tmp_path: Path) -> None:
    out = tmp_path / "smoke"
    argv = ["--experiment", "smoke", "--out", str(out), "--jobs", "2", "--json", "--quiet"]
    res = CliRunner().invoke(command.simulate_command, argv)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["experiment"]["name"] == "smoke" and len(doc["runs"]) == 18
    assert (out / "results.md").is_file() and (out / "degradation.png").is_file()
    res = CliRunner().invoke(
        command.simulate_command,
        ["--experiment", "paper", "--seeds", "2", "--rounds", "10", "--agents", "20",
         "--scenario", "high", "--out", str(tmp_path / "p"), "--jobs", "1", "--quiet"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "## Scenario `high`" in res.stdout and "moderate" not in res.stdout


@pytest.mark.usefixtures("fake_simulate")
def test_cli_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def run(*argv: str) -> tuple[int, str]:
        res = CliRunner().invoke(command.simulate_command, [*argv, "--quiet", "--jobs", "1"])
        return res.exit_code, res.stderr

    code, err = run("--agents", "4")
    assert code == 2 and err.startswith("error: reviewers")
    bad = tmp_path / "bad.toml"
    bad.write_text("agentz = 10\n", encoding="utf-8")
    code, err = run("--config", str(bad))
    assert code == 2 and "unknown field 'agentz'" in err
    code, err = run("--experiment", "paper", "--governance", "majority")
    assert code == 2 and "--governance" in err
    code, err = run("--seeds", "0")
    assert code == 2 and "--seeds" in err
    code, _ = run("--scenario", "calm")
    assert code == 2  # click's own usage error
    monkeypatch.setattr(command, "simulate", failing_run)
    code, err = run("--governance", "majority", "--seeds", "3", "--rounds", "10")
    assert code == 1 and "seed 2" in err and "boom" in err


def test_cli_help_and_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    res = CliRunner().invoke(command.simulate_command, ["--help"])
    assert res.exit_code == 0
    assert "Examples:" in res.output and "--experiment paper --seeds 5" in res.output
    monkeypatch.setattr(command, "simulate", fake_run)
    cfg = tmp_path / "c.toml"
    cfg.write_text("agents = 30\nrounds = 12\nartifacts = 24\n[mix]\nhonest = 0.5\n"
                   "malicious = 0.5\n", encoding="utf-8")  # fmt: skip
    res = CliRunner().invoke(
        command.simulate_command, ["--config", str(cfg), "--json", "--quiet", "--jobs", "1"]
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["config"]["scenario"] == "custom" and doc["config"]["agents"] == 30


# --- the real thing --------------------------------------------------------------------


def test_real_smoke_experiment_end_to_end(tmp_path: Path) -> None:
    t0 = time.perf_counter()
    result = ex.run_experiment(ex.build_experiment("smoke"), jobs=2, progress=False)
    written = report.write_report(result, tmp_path)
    assert time.perf_counter() - t0 < 60
    assert len(written) == 8
    for r in result.runs:
        assert set(SERIES) <= set(r.series) and len(r.series["precision"]) == r.config.rounds
        assert 0.0 <= r.final["precision"] <= 1.0
        assert 0.0 <= r.final["recall"] <= 1.0
    rows = list(csv.DictReader((tmp_path / "results.csv").open(encoding="utf-8")))
    labels = {r["label"] for r in rows}
    assert labels == {"protocol", "majority", "protocol+no_commit_reveal"}
    doc = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert len(doc["runs"]) == 18
    # the same seeds give the same numbers, in-process
    again = ex.run_experiment(ex.build_experiment("smoke", seeds=1), jobs=1, progress=False)
    first = [r for r in result.runs if r.seed == 1]
    assert [r.final["precision"] for r in again.runs] == [r.final["precision"] for r in first]


@given(
    name=st.sampled_from(sorted(ex.FAMILIES)),
    seeds=st.one_of(st.none(), st.integers(-3, 40)),
    rounds=st.one_of(st.none(), st.integers(-5, 10**6)),
    agents=st.one_of(st.none(), st.integers(-5, 10**5)),
    artifacts=st.one_of(st.none(), st.integers(-5, 50)),
    scenarios=st.one_of(
        st.none(),
        st.lists(
            st.one_of(
                st.text(max_size=12),
                st.sampled_from(["honest", "adv=0.2", "adv=nan", "adv=-1", "adv=1e999", "four"]),
            ),
            max_size=3,
        ),
    ),
    governance=st.one_of(st.none(), st.sampled_from(["pbft", "alg1", "protocol", "majority"])),
)
def test_family_experiments_refuse_hostile_options_with_config_errors(
    name: str,
    seeds: int | None,
    rounds: int | None,
    agents: int | None,
    artifacts: int | None,
    scenarios: list[str] | None,
    governance: str | None,
) -> None:
    """What the command line hands the forgetting and plasticity builders either builds an
    experiment or is a ConfigError (exit 2), never another exception."""
    try:
        exp = ex.build_family(
            name,
            seeds=seeds,
            rounds=rounds,
            agents=agents,
            artifacts=artifacts,
            scenarios=scenarios,
            governance=governance,
        )
    except ConfigError:
        return
    assert exp.total == len(exp.seeds) * sum(c.runs_in(s) for c in exp.cells for s in exp.scenarios)
