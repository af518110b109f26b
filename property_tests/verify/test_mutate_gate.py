"""The gate of spec mutation: `make mutate` fails when a spec's mutation score drops.

Each spec's suite (``models/mutation/<Spec>.toml``) names, besides the models and the
sample `make mutate` runs (an hour on 2 cores), a CI gate: its cheap models
(``ci_models``, none marked slow or deep) and a smaller seeded sample (``ci_sample``).
``ostrom mutate --suite SPEC --ci --check`` runs it and exits 1 when the score is below
the one recorded in ``models/mutation/scores.json`` (kind ``ci``).  TLC is deterministic
and the sample is seeded, so a drop is a change of the spec, its models or the mutation
tool, never noise: weaken a check or a witness the sample's mutants need and this fails.
The last test shows the gate failing against a recorded score it cannot reach.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.verify.mutate import suite as suite_mod
from ostrom.verify.mutate.suite import load_scores, suites


@pytest.mark.tlc
@pytest.mark.mutation  # re-proves the recorded scores: make mutate, make test-slow
@pytest.mark.parametrize("spec", suites())
def test_the_ci_gate_score_does_not_drop_below_the_recorded_one(spec: str) -> None:
    result = CliRunner().invoke(main, ["mutate", "--suite", spec, "--ci", "--check", "--jobs", "2"])
    assert result.exit_code == 0, result.output
    assert "at least the recorded" in result.output


@pytest.mark.tlc
@pytest.mark.mutation
def test_the_gate_fails_below_the_recorded_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the Sanctions gate cut to one mutant, against a recorded score no run can reach
    text = (suite_mod.SUITES_DIR / "Sanctions.toml").read_text(encoding="utf-8")
    assert "ci_sample = 6" in text
    (tmp_path / "Sanctions.toml").write_text(text.replace("ci_sample = 6", "ci_sample = 1"))
    scores = load_scores()
    scores["Sanctions"]["ci"] = dict(scores["Sanctions"]["ci"], score=1.01)
    path = tmp_path / "scores.json"
    path.write_text(json.dumps(scores), encoding="utf-8")
    monkeypatch.setattr(suite_mod, "SUITES_DIR", tmp_path)
    monkeypatch.setattr(suite_mod, "SCORES_PATH", path)
    result = CliRunner().invoke(
        main, ["mutate", "--suite", "Sanctions", "--ci", "--check", "--jobs", "2"]
    )
    assert result.exit_code == 1, result.output
    assert "below the recorded 101.0%" in result.output


def test_the_gate_needs_a_suite_and_is_not_the_full_run() -> None:
    runner = CliRunner()
    no_suite = runner.invoke(main, ["mutate", "lifecycle-ci-solo", "--ci"])
    assert no_suite.exit_code == 2 and "need --suite SPEC" in no_suite.output
    both = runner.invoke(main, ["mutate", "--suite", "Sanctions", "--ci", "--all"])
    assert both.exit_code == 2 and "--all and --ci" in both.output
