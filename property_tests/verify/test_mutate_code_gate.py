"""The gate of code mutation: `make mutate` fails when a module's mutation score drops.

Each target file (``models/mutation/code/<target>.toml``) names, besides the tests that
cover its module, a seeded sample and the fast tests it runs on (``sample``, ``seed``,
``ci_tests``).  ``ostrom mutate-code --sample --check`` runs mutmut on that sample and
exits 1 when the score is below the one recorded in ``models/mutation/code/scores.json``
(kind ``sample``).  The sample is seeded and every test runs in the derandomized
Hypothesis profile ``ci``, so a drop is a change of the code or of its tests, never
noise: delete the assertion a sampled mutant needs and this fails.  The last test shows
the gate failing against a recorded score it cannot reach.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.verify.codemutation import scores as scores_mod
from ostrom.verify.codemutation.target import target_names
from ostrom.verify.commands import mutate_code as cli

#: re-proves the recorded scores: make mutate (and make test-slow), not make test
pytestmark = pytest.mark.mutation


@pytest.mark.parametrize("target", target_names())
def test_the_gate_score_does_not_drop_below_the_recorded_one(target: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main, ["mutate-code", target, "--sample", "--check", "--jobs", "2", "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "at least the recorded" in result.output
    report = json.loads((tmp_path / f"{target}.json").read_text(encoding="utf-8"))
    assert report["kind"] == "sample" and report["sampled"] > 0
    assert not report["stale_equivalents"], report["stale_equivalents"]


def test_the_gate_fails_below_the_recorded_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # voting's gate against a recorded score no run can reach
    recorded = scores_mod.load_scores()
    recorded["voting"]["sample"] = dict(recorded["voting"]["sample"], score=1.5)
    monkeypatch.setattr(cli, "load_scores", lambda: recorded)
    result = CliRunner().invoke(
        main, ["mutate-code", "voting", "--sample", "--check", "--out", str(tmp_path)]
    )
    assert result.exit_code == 1, result.output
    assert "below the recorded 150.0%" in result.output
