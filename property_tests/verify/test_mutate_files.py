"""The files of spec mutation: accepted equivalents and suites (models/mutation/*.toml)
and the recorded scores (models/mutation/scores.json).

A typo in these files must never accept a mutant or weaken a recorded score silently:
every malformed entry is an error naming the file and the key.  The files in the tree
are read here too, so a broken one fails `make test`, not only `make mutate`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ostrom import layout
from ostrom.verify.mutate.equivalents import EquivalentsError, load_equivalents
from ostrom.verify.mutate.suite import (
    SUITES_DIR,
    SuiteError,
    load_scores,
    load_suite,
    record_score,
    scores_table,
    suites,
)
from ostrom.verify.tlc.manifest import load_manifest

GOOD = """
[suite]
models = ["m1", "m2"]
sample = 10
seed = 3
timeout = 60

[[equivalent]]
id = "Step/cmp/1"
change = ">= -> >"
reason = "no state has n = 0"
"""


def _write(tmp_path: Path, text: str, name: str = "S") -> Path:
    (tmp_path / f"{name}.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_a_good_file_gives_its_suite_and_equivalents(tmp_path: Path) -> None:
    d = _write(tmp_path, GOOD)
    suite = load_suite("S", d)
    assert (suite.models, suite.sample, suite.seed, suite.timeout) == (("m1", "m2"), 10, 3, 60)
    (eq,) = load_equivalents("S", d)
    assert (eq.id, eq.change, eq.reason) == ("Step/cmp/1", ">= -> >", "no state has n = 0")
    assert suites(d) == ["S"]


def test_a_spec_without_a_file_has_no_equivalents_and_no_suite(tmp_path: Path) -> None:
    assert load_equivalents("Nope", tmp_path) == []
    with pytest.raises(SuiteError, match="no suite for Nope"):
        load_suite("Nope", tmp_path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[[equivalent]]\nid = 'a'\nchange = 'b'\n", "reason must be a non-empty string"),
        ("[[equivalent]]\nid = 'a'\nchange = 'b'\nreason = ' '\n", "reason must be"),
        ("[[equivalent]]\nid = 'a'\nchange = 'b'\nreason = 'r'\nwhy = 'x'\n", "unknown key 'why'"),
        (
            "[[equivalent]]\nid = 'a'\nchange = 'b'\nreason = 'r'\n" * 2,
            "duplicate id 'a'",
        ),
        ("[equivalents]\n", "unknown key 'equivalents'"),
        ("equivalent = 3\n", "must be an array of tables"),
        ("[[equivalent\n", "S.toml"),
    ],
)
def test_a_malformed_equivalent_is_an_error(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(EquivalentsError, match=match):
        load_equivalents("S", _write(tmp_path, text))


@pytest.mark.parametrize(
    ("suite", "match"),
    [
        ("models = []\nsample = 1\nseed = 0\ntimeout = 1", "non-empty list"),
        ("models = ['a', 'a']\nsample = 1\nseed = 0\ntimeout = 1", "names a model twice"),
        ("models = ['a']\nsample = 0\nseed = 0\ntimeout = 1", "must be positive"),
        ("models = ['a']\nsample = 1\nseed = -1\ntimeout = 1", "seed not negative"),
        ("models = ['a']\nsample = true\nseed = 0\ntimeout = 1", "sample must be an integer"),
        ("models = 'a'\nsample = 1\nseed = 0\ntimeout = 1", "models must be a list"),
        ("models = ['a']\nsample = 1\nseed = 0", "timeout must be an integer"),
        ("models = ['a']\nsample = 1\nseed = 0\ntimeout = 1\njobs = 2", "unknown key 'jobs'"),
        ("models = ['a']\nsample = 1\nseed = 0\ntimeout = 1\nci_sample = 1", "go together"),
        (
            "models = ['a']\nsample = 1\nseed = 0\ntimeout = 1\nci_models = ['b']\nci_sample = 1",
            "some of the suite's models",
        ),
        (
            "models = ['a']\nsample = 1\nseed = 0\ntimeout = 1\nci_models = ['a']\nci_sample = 0",
            "ci_sample < 1",
        ),
        (
            "models = ['a']\nsample = 1\nseed = 0\ntimeout = 1\nci_models = 'a'\nci_sample = 1",
            "ci_models must be a list",
        ),
    ],
)
def test_a_malformed_suite_is_an_error(tmp_path: Path, suite: str, match: str) -> None:
    with pytest.raises(SuiteError, match=match):
        load_suite("S", _write(tmp_path, f"[suite]\n{suite}\n"))


def test_scores_are_recorded_per_spec_and_kind(tmp_path: Path) -> None:
    path = tmp_path / "scores.json"
    assert load_scores(path) == {}
    record_score("S", "sample", {"score": 0.9}, path)
    record_score("S", "full", {"score": 0.8}, path)
    record_score("T", "sample", {"score": 1.0}, path)
    record_score("S", "sample", {"score": 0.95}, path)
    assert load_scores(path) == {
        "S": {"sample": {"score": 0.95}, "full": {"score": 0.8}},
        "T": {"sample": {"score": 1.0}},
    }


@pytest.mark.parametrize("text", ["[1, 2]", '{"S": 3}', '{"S": {"sample": 1}}', "{"])
def test_a_malformed_scores_file_is_an_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "scores.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SuiteError):
        load_scores(path)


def test_the_trees_suites_name_passing_models_of_their_spec_and_have_scores() -> None:
    manifest = load_manifest(layout.MODELS_DIR / "manifest.json")
    names = suites()
    assert {"Lifecycle", "Sanctions", "PBFT", "PBFTReplica"} <= set(names)
    scores = load_scores()
    for spec in names:
        suite = load_suite(spec)
        load_equivalents(spec)  # parses
        for model in suite.models:
            entry = manifest.get(model)
            assert entry is not None, f"{spec}: no model {model}"
            assert entry.expect == "pass", f"{spec}: {model} must pass to catch mutants"
        recorded = scores.get(spec, {}).get("sample")
        assert recorded is not None, f"{spec}: no recorded sample score (make mutate-record)"
        assert recorded["models"] == list(suite.models)
        assert recorded["sampled"] == suite.sample or recorded["sampled"] == recorded["generated"]
        assert recorded["seed"] == suite.seed or recorded["sampled"] == recorded["generated"]
        # the CI gate (make test): cheap, not slow, models of the suite, and a recorded score
        assert suite.ci_models, f"{spec}: no CI gate (ci_models, ci_sample)"
        for model in suite.ci_models:
            entry = manifest.get(model)
            assert entry is not None and not entry.slow and not entry.deep, (
                f"{spec}: CI gate model {model} is slow or deep"
            )
        gate = scores.get(spec, {}).get("ci")
        assert gate is not None, (
            f"{spec}: no recorded ci score (ostrom mutate --suite S --ci --record)"
        )
        assert gate["models"] == list(suite.ci_models)
        assert gate["sampled"] == suite.ci_sample or gate["sampled"] == gate["generated"]
    assert (SUITES_DIR / "scores.json").exists()
    json.loads((SUITES_DIR / "scores.json").read_text(encoding="utf-8"))


def test_the_scores_table_shows_what_a_scores_file_says(tmp_path: Path) -> None:
    # survivors included (that docs/checking.md holds the recorded table is the drift test
    # of the generated-files registry, property_tests/codegen/test_generated.py)
    path = tmp_path / "scores.json"
    record_score("S", "sample", {"models": ["m"], "generated": 9, "sampled": 4, "seed": 1,
                                 "counts": {"killed": 3, "survived": 1}, "score": 0.75,
                                 "survivors": ["A/cmp/1: >= -> >"]}, path)  # fmt: skip
    table = scores_table(load_scores(path))
    assert (
        "| S | sample | `m` | 4 of 9 (seed 1) | 3 | 1 | 0 | 0 | 0 | 75.0% | `A/cmp/1: >= -> >` |"
        in table
    )
