"""The committed evidence and the tables made from it (issue 43, items 2 and 5): the
statistics (paired bootstrap, sign-flip test, Holm, bimodality), the evidence files' round
trip, and the drift check — evaluation/tables.md must be exactly what the committed
evidence gives, so a number in docs/evaluation.md cannot differ from its file
(``ostrom docs --check`` ties the docs to evaluation/tables.md)."""

from __future__ import annotations

import math
import random
import shutil
from pathlib import Path

import pytest

from ostrom import layout
from ostrom.simulation import evidence, evidence_docs
from ostrom.simulation import experiments as ex
from ostrom.simulation.stats import BIMODAL_BC, bimodality, holm, quantiles, robust

ROOT = layout.ROOT


# --- statistics ----------------------------------------------------------------------------


def test_holm_adjusts_step_down_and_keeps_nan() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    out = holm([0.5, math.nan, 0.4])
    assert out[0] == pytest.approx(0.8) and math.isnan(out[1]) and out[2] == pytest.approx(0.8)
    assert holm([0.9, 0.8]) == [1.0, 1.0]  # capped at 1


def test_robust_is_deterministic_and_brackets_the_shift() -> None:
    rng = random.Random(7)
    b = [rng.random() for _ in range(20)]
    a = [x + 0.1 + rng.gauss(0, 0.02) for x in b]
    r = robust(a, b)
    assert r == robust(a, b)
    assert r.ci_low < r.diff < r.ci_high and r.ci_low > 0.05
    assert r.p < 0.001  # every seed moves the same way: no sign flip comes close
    same = robust(b, b)
    assert same.diff == 0.0 and same.p == 1.0 and same.ci_low == same.ci_high == 0.0
    noise = robust([rng.gauss(0, 1) for _ in range(20)], [rng.gauss(0, 1) for _ in range(20)])
    assert noise.p > 0.05 and noise.ci_low < 0 < noise.ci_high
    nan = robust([1.0, math.nan, 2.0], [0.0, 1.0, 1.0])
    assert nan.n == 2 and nan.diff == 1.0
    with pytest.raises(ValueError):
        robust([1.0], [1.0, 2.0])


def test_bimodality_flags_two_clusters_only() -> None:
    rng = random.Random(3)
    two = [rng.gauss(0.1, 0.03) for _ in range(15)] + [rng.gauss(0.9, 0.03) for _ in range(15)]
    one = [rng.gauss(0.5, 0.05) for _ in range(30)]
    assert bimodality(two) > BIMODAL_BC > bimodality(one)
    assert math.isnan(bimodality([1.0, 2.0, 3.0]))
    assert quantiles([3.0, 1.0, 2.0]) == (1.0, 1.5, 2.0, 2.5, 3.0)


# --- evidence files ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_paper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny paper experiment's evidence (12 cells x 2 scenarios x 2 seeds of 10 rounds)."""
    root = tmp_path_factory.mktemp("evidence")
    exp = ex.build_experiment("paper", seeds=2, rounds=10, agents=12)
    result = ex.run_experiment(exp, jobs=1, progress=False)
    evidence.write_evidence(result, root / "paper", ["ostrom", "test"], ("c0ffee", False))
    return root / "paper"


def test_evidence_round_trips_the_runs(small_paper: Path) -> None:
    ev = evidence.load_evidence(small_paper)
    assert ev.name == "paper" and ev.seeds == (1, 2)
    assert ev.meta["commit"] == "c0ffee" and ev.meta["runs"] == 12 * 2 * 2
    assert set(ev.labels) == set(ex.build_experiment("paper", seeds=1).labels)
    for label in ev.labels:
        for s in ("moderate", "high"):
            assert len(ev.values(label, s, "precision")) == 2
    assert ev.config("protocol+no_reputation")["ablations"] == ["no_reputation"]
    with pytest.raises(evidence.EvidenceError):
        ev.values("protocol", "moderate", "no such metric")


def test_every_paper_table_renders_and_moves_with_its_file(
    small_paper: Path, tmp_path: Path
) -> None:
    ev = evidence.load_evidence(small_paper)
    before = {
        name: "\n".join(render(ev))
        for name, (exp, render) in evidence_docs.BLOCKS.items()
        if exp == "paper"
    }
    assert all(before.values())
    # break the file: one precision of the protocol changes, and so does its table
    copy = tmp_path / "paper"
    shutil.copytree(small_paper, copy)
    lines = (copy / evidence.RUNS).read_text().splitlines()
    header = lines[0].split(",")
    col = header.index("precision")
    i = next(n for n, row in enumerate(lines) if row.startswith("protocol,moderate,1,"))
    row = lines[i].split(",")
    row[col] = "0.123456"
    lines[i] = ",".join(row)
    (copy / evidence.RUNS).write_text("\n".join(lines) + "\n")
    broken = evidence.load_evidence(copy)
    assert "\n".join(evidence_docs.paper_precision(broken)) != before["paper-precision"]


@pytest.mark.parametrize(
    ("runs", "meta", "message"),
    [
        ("label,scenario,seed,precision\nprotocol,moderate,x,0.5\n", "{}", "not an integer"),
        ("label,scenario,seed,precision\nprotocol,moderate,1\n", "{}", "fields"),
        ("label,scenario,seed,precision\nprotocol,moderate,1,abc\n", "{}", "not a number"),
        ("seed,label\n", "{}", "header"),
        ("label,scenario,seed\n", "{not json", "cannot read"),
    ],
)
def test_malformed_evidence_is_one_error(
    tmp_path: Path, runs: str, meta: str, message: str
) -> None:
    (tmp_path / evidence.RUNS).write_text(runs)
    (tmp_path / evidence.META).write_text(meta)
    with pytest.raises(evidence.EvidenceError, match=message):
        evidence.load_evidence(tmp_path)
    with pytest.raises(evidence.EvidenceError, match="cannot read"):
        evidence.load_evidence(tmp_path / "missing")


# --- the committed evidence ----------------------------------------------------------------


def test_committed_tables_are_what_the_committed_evidence_gives() -> None:
    """evaluation/tables.md (copied into docs/evaluation.md by ostrom docs) is exactly
    what evaluation/<experiment>/ gives: a number edited in either place fails here or in
    ostrom docs --check."""
    committed = (ROOT / evidence_docs.TABLES).read_text(encoding="utf-8")
    assert committed == evidence_docs.render_tables(ROOT)


def test_committed_evidence_is_the_full_experiments_on_committed_code() -> None:
    """The paper's evidence must be there; every committed one is its experiment at full
    size (SEEDS), on committed code (truth, bloc and sensitivity: when committed)."""
    assert (ROOT / evidence.EVIDENCE_DIR / "paper" / evidence.RUNS).is_file()
    for name in ("paper", "truth", "bloc", "sensitivity"):
        if not (ROOT / evidence.EVIDENCE_DIR / name).exists():
            continue
        ev = evidence.load_evidence(ROOT / evidence.EVIDENCE_DIR / name)
        assert ev.seeds == tuple(range(1, ex.SEEDS[name] + 1)), name
        assert ev.labels == ex.build_experiment(name).labels, name
        assert not ev.meta["uncommitted_changes"], name
        assert len(ev.meta["commit"]) == 40, name


def test_committed_sanctions_evidence_is_each_horizon_on_committed_code() -> None:
    """The sanctions experiment is committed once per horizon: ``evaluation/sanctions/``
    at 500 rounds and ``evaluation/sanctions2k/`` at 2,000, each every cell of its
    horizon, every seed, on committed code, and each table cites its own directory."""
    for directory, rounds in (("sanctions", 500), ("sanctions2k", 2000)):
        ev = evidence.load_evidence(ROOT / evidence.EVIDENCE_DIR / directory)
        full = ex.build_experiment("sanctions", rounds=rounds)
        assert ev.name == "sanctions" and ev.directory == directory
        assert ev.labels == full.labels and ev.seeds == full.seeds, directory
        assert {int(ev.config(label)["rounds"]) for label in ev.labels} == {rounds}
        assert ev.meta["runs"] == full.total and "--rounds" in ev.meta["command"]
        assert not ev.meta["uncommitted_changes"] and len(ev.meta["commit"]) == 40
        table = "\n".join(evidence_docs.BLOCKS["sanctions"][1](ev))
        assert f"`evaluation/{directory}/`" in table and f", {rounds:,} |" in table


@pytest.mark.slow
def test_every_experiment_renders_its_tables_from_a_small_run(tmp_path: Path) -> None:
    """A small run of each experiment the chapter cites, written as evidence and rendered
    into every table and the tornado plot (what ``make experiments`` then ``ostrom simulate
    --tables`` do at full size)."""
    for name in ("paper", "truth", "bloc", "sanctions", "sensitivity"):
        exp = ex.build_experiment(name, seeds=2, rounds=6, agents=12)
        result = ex.run_experiment(exp, jobs=1, progress=False)
        target = tmp_path / evidence.EVIDENCE_DIR / name
        evidence.write_evidence(result, target, ["ostrom", "test"], ("c0ffee", False))
    written = evidence_docs.write_tables(tmp_path)
    text = written[0].read_text(encoding="utf-8")
    for name in evidence_docs.BLOCKS:
        assert f"BEGIN table: {evidence_docs.PREFIX}{name}" in text
    assert written[1].stat().st_size > 0


# --- the forgetting experiment ---------------------------------------------------------------

FORGETTING = ROOT / evidence.EVIDENCE_DIR / "forgetting"


def test_committed_forgetting_evidence_is_the_full_experiment_on_committed_code() -> None:
    """The forgetting tables' evidence is ``build_forgetting`` at full size (30 seeds,
    every cell), on committed code, with every figure those tables read."""
    ev = evidence.load_evidence(FORGETTING)
    full = ex.build_family("forgetting")
    assert ev.seeds == full.seeds and ev.labels == full.labels
    assert ev.meta["runs"] == full.total
    assert not ev.meta["uncommitted_changes"] and len(ev.meta["commit"]) == 40
    for metric in (
        *(m for _, m, _ in evidence_docs.FORGETTING_COLUMNS),
        "admitted",
        "admitted_by_label.useful",
        "consensus_success",
        "consensus_all_executed",
        "consensus_repl1",
        "consensus_final_view",
        "alg1_disagreements",
    ):
        assert metric in ev.metrics, metric


def _forgetting_tables(directory: Path) -> dict[str, str]:
    ev = evidence.load_evidence(directory)
    return {
        name: "\n".join(render(ev))
        for name, (exp, render) in evidence_docs.BLOCKS.items()
        if exp == "forgetting"
    }


def _set(directory: Path, label: str, scenario: str, seed: int, metric: str, value: str) -> None:
    """Overwrite one figure of ``directory``'s runs.csv (a mutant of the evidence)."""
    path = directory / evidence.RUNS
    lines = path.read_text(encoding="utf-8").splitlines()
    col = lines[0].split(",").index(metric)
    prefix = f"{label},{scenario},{seed},"
    i = next(n for n, row in enumerate(lines) if row.startswith(prefix))
    row = lines[i].split(",")
    row[col] = value
    lines[i] = ",".join(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_the_forgetting_tables_move_with_their_file(tmp_path: Path) -> None:
    """A figure changed in the evidence changes exactly the tables that read it: the
    reference's accuracy in ``honest`` (its scenario table, the comparisons, the paper's
    figures), a PBFT run's consensus success (the consensus table and the paper's)."""
    before = _forgetting_tables(FORGETTING)
    assert len(before) == 7
    copy = tmp_path / "forgetting"
    shutil.copytree(FORGETTING, copy)
    _set(copy, "protocol [c≥α]", "honest", 1, "accuracy", "0.123456")
    after = _forgetting_tables(copy)
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {
        "forgetting-honest",
        "forgetting-accuracy-vs-reference",
        "forgetting-paper",
    }
    shutil.copytree(FORGETTING, copy, dirs_exist_ok=True)
    _set(copy, "protocol [c≥α] [pbft: silent-primary]", "consensus", 2, "consensus_success", "0.5")
    after = _forgetting_tables(copy)
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"forgetting-consensus", "forgetting-paper"}
    assert "0.500" in after["forgetting-consensus"]  # the worst seed
