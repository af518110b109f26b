"""The forgetting experiment end to end: consensus success on the real replicated
orchestrator and on Algorithm 1, a small real run of the experiment (deterministic
whatever ``--jobs``) and its report, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ostrom.simulation import commands as command
from ostrom.simulation import evidence, evidence_docs, report
from ostrom.simulation.experiments import run_experiment
from ostrom.simulation.forgetting.config import FAULTS, ForgetConfig
from ostrom.simulation.forgetting.consensus import replay_pbft, run_alg1_decisions
from ostrom.simulation.forgetting.experiment import build_forgetting
from ostrom.simulation.forgetting.mechanisms import ProtocolKB
from ostrom.simulation.forgetting.run import _play
from ostrom.simulation.forgetting.world import make_world

#: a whole experiment or real OS processes: make test runs these, make test-fast does not
pytestmark = pytest.mark.system

#: A consensus-sized run short enough to replay three times under PBFT in a test.
SHORT = ForgetConfig(
    scenario="consensus",
    vote_rule="at_alpha",
    epochs=160,
    topics=4,
    slots_per_topic=4,
    junk_rate=0.2,
)


def _local(seed: int = 1) -> ProtocolKB:
    _, _, kb, _ = _play(SHORT, make_world(SHORT, seed), seed, None)
    assert isinstance(kb, ProtocolKB)
    return kb


def _candidates(kb: ProtocolKB) -> list[str]:
    return sorted({x for votes in kb.voted.values() for x in votes})


@pytest.mark.parametrize("fault", FAULTS)
def test_pbft_executes_every_forget_decision_identically(fault: str) -> None:
    kb = _local()
    assert kb.forgets, "the workload must contain forget decisions"
    got = replay_pbft(kb.log, kb.forgets, _candidates(kb), kb.params, kb.agents, fault, 1)
    assert got["consensus_all_executed"] and got["consensus_repl1"]
    assert got["consensus_success"] == 1.0
    assert got["consensus_decisions"] >= len(kb.forgets)
    if fault == "silent-primary":
        assert got["consensus_final_view"] >= 1  # the view change happened


def test_consensus_success_can_fail() -> None:
    """Against a reference that differs by one decision the same replay scores below 1:
    the measure compares the replicas with the reference, it is not 1 by construction."""
    kb = _local()
    wrong = kb.forgets[1:]
    got = replay_pbft(kb.log, wrong, _candidates(kb), kb.params, kb.agents, "silent-backup", 1)
    assert got["consensus_success"] < 1.0


def test_alg1_fails_as_its_review_predicts() -> None:
    kb = _local()
    cands = _candidates(kb)
    forgotten = {x for _, x in kb.forgets}
    assert run_alg1_decisions(cands, forgotten, "silent-backup", 1)["consensus_success"] == 1.0
    silent = run_alg1_decisions(cands, forgotten, "silent-primary", 1)
    assert silent["consensus_success"] == 0.0 and silent["alg1_undecided"] == len(cands)
    forged = run_alg1_decisions(cands, forgotten, "equivocating", 1)
    assert forged["consensus_success"] < 1.0 and forged["alg1_disagreements"] > 0


@pytest.mark.slow  # 33 s: two runs of the experiment; make test keeps its other small runs
def test_small_experiment_is_deterministic_whatever_the_jobs(tmp_path: Path) -> None:
    exp = build_forgetting(
        seeds=2,
        seed_start=3,
        rounds=130,
        agents=None,
        artifacts=None,
        scenarios=("honest", "four"),
        governance=None,
    )
    one = run_experiment(exp, jobs=1, progress=False)
    two = run_experiment(exp, jobs=2, progress=False)
    assert [r.to_dict() for r in one.runs] == [r.to_dict() for r in two.runs]
    files = report.write_report(two, tmp_path)
    names = {p.name for p in files}
    assert {"results.md", "results.json", "runs.csv", "comparisons.csv"} <= names
    assert {"footprint_by_epoch_honest.png", "accuracy_by_round_four.png"} <= names
    md = (tmp_path / "results.md").read_text()
    assert "## Against the paper" in md and "## 95% confidence intervals" in md
    doc = json.loads((tmp_path / "results.json").read_text())
    assert len(doc["runs"]) == exp.total == 2 * 12 * 2
    # the floor: the reference forgets nothing with four agents, its no_floor twin may
    four = one.values("protocol [c≥α]", "four", "reduction")
    assert four == [0.0, 0.0]


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(command.simulate_command, [*args, "--quiet", "--jobs", "1"])
    return res.exit_code, res.output


def test_cli_forgetting_consensus_only(tmp_path: Path) -> None:
    code, out = _cli(
        "--experiment",
        "forgetting",
        "--governance",
        "alg1",
        "--seeds",
        "1",
        "--rounds",
        "60",
        "--out",
        str(tmp_path),
    )
    assert code == 0, out
    assert "alg1 [silent-primary]" in out and "pbft" not in out.split("## Against")[0]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--experiment", "forgetting", "--scenario", "moderate"], "scenario"),
        (["--experiment", "forgetting", "--scenario", ""], "scenario"),
        (["--experiment", "plasticity", "--scenario", ""], "scenario"),
        (["--experiment", "smoke", "--scenario", ""], "scenario"),
        (["--experiment", "forgetting", "--artifacts", "10"], "--artifacts"),
        (["--experiment", "forgetting", "--ablation", "no_reputation"], "--ablation"),
        (["--experiment", "forgetting", "--governance", "majority"], "--governance"),
        (["--experiment", "smoke", "--governance", "pbft"], "--governance"),
        (["--governance", "pbft"], "governance"),
    ],
)
def test_cli_forgetting_errors(argv: list[str], message: str) -> None:
    code, out = _cli(*argv)
    assert code == 2 and message in out and "Traceback" not in out


def test_a_small_runs_evidence_renders_every_forgetting_table(tmp_path: Path) -> None:
    """Every cell and scenario, written as evidence the way ``--evidence`` writes it and
    rendered into docs/evaluation.md's forgetting tables: a metric the evidence leaves out
    fails here (``EvidenceError``), as results.md's skip-list once dropped consensus
    success and the useful share."""
    exp = build_forgetting(
        seeds=2,
        seed_start=1,
        rounds=40,
        agents=None,
        artifacts=None,
        scenarios=None,
        governance=None,
    )
    result = run_experiment(exp, jobs=1, progress=False)
    target = tmp_path / evidence.EVIDENCE_DIR / "forgetting"
    evidence.write_evidence(result, target, ["ostrom", "test"], ("c0ffee", False))
    ev = evidence.load_evidence(target)
    assert ev.labels == exp.labels and len(ev.seeds) == 2
    for name, (experiment, render) in evidence_docs.BLOCKS.items():
        if experiment == "forgetting":
            text = "\n".join(render(ev))
            assert text.startswith("|") and "nan" not in text, name
