"""The plasticity experiment end to end: its cells and scenarios, a small real run that is
deterministic whatever ``--jobs``, its report (the by-k tables and plots), and the command
line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ostrom.simulation import commands as command
from ostrom.simulation import report
from ostrom.simulation.config import ConfigError
from ostrom.simulation.experiments import build_family, run_experiment
from ostrom.simulation.plasticity.config import MECHANISMS

#: a whole experiment or real OS processes: make test runs these, make test-fast does not
pytestmark = pytest.mark.system


def test_cells_and_scenarios() -> None:
    exp = build_family("plasticity", seeds=2)
    assert exp.scenarios == ("adv=0.00", "adv=0.10", "adv=0.20", "adv=0.30", "adv=0.40")
    assert len(exp.cells) == 12 and len(set(exp.labels)) == 12
    assert {c.config.mechanism for c in exp.cells} == set(MECHANISMS)
    assert {c.config.condition for c in exp.cells} == {"after", "before", "transient"}
    for cell in exp.cells:
        for s in exp.scenarios:
            assert exp.config(cell, s).scenario == s
    one = build_family("plasticity", seeds=1, scenarios=["adv=0.3"], rounds=60, agents=24)
    assert one.scenarios == ("adv=0.30",)
    assert {(c.config.rounds, c.config.agents) for c in one.cells} == {(60, 24)}
    for bad in ({"scenarios": ["honest"]}, {"artifacts": 5}, {"governance": "pbft"}):
        with pytest.raises(ConfigError):
            build_family("plasticity", seeds=1, **bad)


def test_small_experiment_is_deterministic_and_reported(tmp_path: Path) -> None:
    exp = build_family("plasticity", seeds=2, scenarios=["adv=0.0", "adv=0.2"])
    one = run_experiment(exp, jobs=1, progress=False)
    two = run_experiment(exp, jobs=2, progress=False)
    assert [r.to_dict() for r in one.runs] == [r.to_dict() for r in two.runs]
    names = {p.name for p in report.write_report(two, tmp_path)}
    assert {"plasticity_by_k_adv_0.00.png", "plasticity_by_round_adv_0.20.png"} <= names
    assert "degradation.png" in names
    md = (tmp_path / "results.md").read_text()
    for heading in ("## Plasticity by interference count", "## Where it stops"):
        assert heading in md
    # the recency baselines lose every interfered trial after, and recover before
    lww = one.values("last_writer_wins [after]", "adv=0.00", "plasticity.same_slot.k8")
    assert lww == [0.0, 0.0]
    before = one.values("last_writer_wins [before]", "adv=0.00", "plasticity.same_slot.k8")
    assert before == [1.0, 1.0]


def test_cli_plasticity(tmp_path: Path) -> None:
    res = CliRunner().invoke(
        command.simulate_command,
        [
            "--experiment",
            "plasticity",
            "--scenario",
            "adv=0.10",
            "--seeds",
            "1",
            "--rounds",
            "60",
            "--quiet",
            "--jobs",
            "1",
            "--out",
            str(tmp_path),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "Scenario `adv=0.10`" in res.output
    bad = CliRunner().invoke(
        command.simulate_command, ["--experiment", "plasticity", "--scenario", "x", "--quiet"]
    )
    assert bad.exit_code == 2 and "adv=0.20" in bad.output and "Traceback" not in bad.output
