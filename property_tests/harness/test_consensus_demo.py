"""The reviewers' concrete test of the Co-Forgetting review (docs/design.md §6).

N=4, f=1, 100 forget decisions ordered through PBFT by the replicated orchestrator, with a
silent backup, a silent primary (a view change) and a faulty replica that sends
conflicting votes but stays reachable: every honest replica must decide every item, all
identically, and REPL-1 must hold.  The same scenarios on the paper's Algorithm 1 show its
expected failures: a silent coordinator leaves every item undecided (ALG1-FAIL-1), forged
conflicting votes split the honest agents.  ``ostrom consensus-demo`` prints the table.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.harness import demo

ITEMS = 100
SEED = 0


@pytest.mark.parametrize("scenario", demo.SCENARIOS)
def test_reviewers_concrete_test(scenario: demo.DemoScenario) -> None:
    r = demo.run_demo(scenario, items=ITEMS, seed=SEED, n=4, f=1)
    p = r.pbft
    # PBFT: every honest replica decides all 100 items, identically, and REPL-1 holds
    assert p.items == ITEMS
    assert p.decided_items == ITEMS and p.decided_pct == 100.0
    assert p.disagreements == 0
    assert r.repl1, r.repl1_error
    assert r.logs_identical
    assert r.invalid_decisions == 0  # each decision is the value the client proposed
    assert len(r.pbft_decisions) == ITEMS
    for ds in r.pbft_decisions:
        assert len(ds) == 3 and ds[0] in ("forget", "keep") and len(set(ds)) == 1
    assert {ds[0] for ds in r.pbft_decisions} == {"forget", "keep"}
    assert r.pbft_ok
    assert p.messages > 0
    if scenario == "silent-primary":
        assert r.faulty == 0
        assert p.view_changes >= 1  # the silent primary is replaced
        assert all(v >= 1 for v in r.final_views)
    else:
        assert r.faulty == 3
    # Algorithm 1, the same scenario: its expected failures
    a = r.alg1
    assert r.alg1_scenario == demo.ALG1_SCENARIO[scenario]
    assert a.view_changes == 0  # it has none
    if scenario == "silent-primary":
        assert a.decided_items == 0 and a.decided_pct == 0.0  # ALG1-FAIL-1
    elif scenario == "silent-backup":
        assert a.decided_items == ITEMS and a.disagreements == 0
    else:
        assert a.disagreements > 0  # forged conflicting votes split the honest agents


def test_aliases_name_the_same_scenarios() -> None:
    assert demo.scenario_name("silent-coordinator") == "silent-primary"
    assert demo.scenario_name("conflicting-voter") == "conflicting-votes"
    assert demo.scenario_name("silent-backup") == "silent-backup"
    with pytest.raises(ValueError, match="unknown scenario"):
        demo.scenario_name("nonsense")


def test_demo_is_deterministic_per_seed() -> None:
    a = demo.run_demo("conflicting-votes", items=10, seed=3)
    b = demo.run_demo("conflicting-votes", items=10, seed=3)
    assert dataclasses.replace(a.pbft, seconds=0.0) == dataclasses.replace(b.pbft, seconds=0.0)
    assert dataclasses.replace(a.alg1, seconds=0.0) == dataclasses.replace(b.alg1, seconds=0.0)
    assert a.pbft_decisions == b.pbft_decisions


METRICS = {
    "items",
    "decided_items",
    "decided_pct",
    "disagreements",
    "messages",
    "messages_per_item",
    "view_changes",
    "view_changes_per_item",
    "seconds",
}


def test_cli_json() -> None:
    result = CliRunner().invoke(main, ["consensus-demo", "--items", "10", "--json"])
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["ok"] is True
    assert [s["scenario"] for s in doc["scenarios"]] == list(demo.SCENARIOS)
    for s in doc["scenarios"]:
        assert s["alg1_scenario"] == demo.ALG1_SCENARIO[s["scenario"]]
        assert (s["n"], s["f"], s["seed"]) == (4, 1, 0)
        assert set(s["pbft"]) >= METRICS and set(s["alg1"]) >= METRICS
        assert s["pbft"]["items"] == s["alg1"]["items"] == 10
        assert s["pbft"]["decided_pct"] == 100.0 and s["pbft"]["disagreements"] == 0
        assert s["pbft"]["repl1"] is True and s["pbft"]["ok"] is True
    by_name = {s["scenario"]: s for s in doc["scenarios"]}
    assert by_name["silent-primary"]["pbft"]["view_changes"] >= 1
    assert by_name["silent-primary"]["alg1"]["decided_items"] == 0


def test_cli_table_and_scenario_choice() -> None:
    result = CliRunner().invoke(
        main, ["consensus-demo", "--items", "5", "--scenario", "silent-coordinator"]
    )
    assert result.exit_code == 0, result.output
    assert "silent-primary" in result.stdout and "Algorithm 1" in result.stdout
    assert "silent-backup" not in result.stdout


def test_cli_fails_when_pbft_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PBFT failure is a bug: the command must exit non-zero (Alg 1's never does)."""
    real = demo.run_demo

    def broken(*args: Any, **kwargs: Any) -> demo.DemoResult:
        r = real(*args, **kwargs)
        return dataclasses.replace(r, repl1=False, repl1_error="REPL-1: injected")

    monkeypatch.setattr(demo, "run_demo", broken)
    result = CliRunner().invoke(
        main, ["consensus-demo", "--items", "3", "--scenario", "silent-backup", "--json"]
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["ok"] is False
