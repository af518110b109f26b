"""The Python model of the Co-Forgetting paper's Algorithm 1 (reference/ostrom/harness/alg1.py)
in the reviewers' scenarios: what it decides is observed by running it, per seed.

The expected failures mirror the TLC models of spec/CoForgettingAlg1.tla (docs/alg1.md):
a silent coordinator decides nothing (ALG1-FAIL-1, no view change); forged votes split the
honest agents (no authentication) and disappear with authentication.
"""

from __future__ import annotations

import pytest

from ostrom.harness.alg1 import Agent, Config, Kind, Message, run_alg1

SEEDS = range(10)
ITEMS = 50


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("authenticated", [False, True])
def test_silent_backup_decides_everything_identically(seed: int, authenticated: bool) -> None:
    r = run_alg1(4, 1, ITEMS, "silent-backup", seed, authenticated=authenticated)
    assert r.decided_items == ITEMS and r.decided_pct == 100.0
    assert r.disagreements == 0
    assert all(len(set(ds)) == 1 for ds in r.decisions)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("authenticated", [False, True])
def test_silent_coordinator_decides_nothing(seed: int, authenticated: bool) -> None:
    """ALG1-FAIL-1: three honest agents (2f+1) and reliable delivery, yet no decision."""
    r = run_alg1(4, 1, ITEMS, "silent-coordinator", seed, authenticated=authenticated)
    assert r.decided_items == 0 and r.undecided_items == ITEMS
    assert all(d is None for ds in r.decisions for d in ds)
    assert r.messages == 0


def test_conflicting_votes_with_forging_split_the_honest_agents() -> None:
    reports = [run_alg1(4, 1, ITEMS, "conflicting-votes", s) for s in SEEDS]
    assert any(r.disagreements > 0 for r in reports)


@pytest.mark.parametrize("seed", SEEDS)
def test_conflicting_votes_with_authentication_never_split(seed: int) -> None:
    r = run_alg1(4, 1, ITEMS, "conflicting-votes", seed, authenticated=True)
    assert r.disagreements == 0
    assert r.decided_items == ITEMS


def test_equivocating_coordinator_splits_even_with_authentication() -> None:
    """The 2f prepare threshold with line 8 as an upon-rule (alg1-equivocating-coordinator)."""
    reports = [
        run_alg1(4, 1, ITEMS, "equivocating-coordinator", s, authenticated=True) for s in SEEDS
    ]
    assert any(r.disagreements > 0 for r in reports)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("fix", ["quorum", "commit-once"])
def test_equivocating_coordinator_fixed_by_either_piece(seed: int, fix: str) -> None:
    """2f+1 prepares, or one COMMIT per item, restore agreement (the passing TLC models)."""
    r = run_alg1(
        4,
        1,
        ITEMS,
        "equivocating-coordinator",
        seed,
        authenticated=True,
        prepare_quorum=3 if fix == "quorum" else None,
        commit_once=fix == "commit-once",
    )
    assert r.disagreements == 0


@pytest.mark.parametrize(
    "scenario", ["silent-backup", "conflicting-votes", "equivocating-coordinator"]
)
def test_deterministic_per_seed(scenario: str) -> None:
    a = run_alg1(4, 1, ITEMS, scenario, 7)  # type: ignore[arg-type]
    b = run_alg1(4, 1, ITEMS, scenario, 7)  # type: ignore[arg-type]
    assert a == b


def test_larger_n_silent_backup_and_coordinator() -> None:
    assert run_alg1(7, 2, 10, "silent-backup", 0).decided_pct == 100.0
    assert run_alg1(7, 2, 10, "silent-coordinator", 0).decided_items == 0


def test_agent_is_sans_io_and_timeout_does_nothing() -> None:
    cfg = Config(4, 1)
    agent = Agent(1, cfg)
    out = agent.on_message(Message(Kind.PROPOSE, 0, 0, 1, "forget"))
    assert {(m.kind, m.dest, m.value) for m in out.messages} == {
        (Kind.PREPARE, d, "forget") for d in range(4)
    }
    assert agent.on_timeout(0).messages == [] and agent.decided(0) is None
    # a proposal claiming another sender than the coordinator is ignored
    assert Agent(2, cfg).on_message(Message(Kind.PROPOSE, 0, 3, 2, "keep")).messages == []


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError):
        run_alg1(3, 1, 1, "silent-backup", 0)
