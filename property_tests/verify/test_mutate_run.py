"""`ostrom mutate`: the verdicts of real TLC runs, the classification, and hostile input.

The TLC tests run real mutants of spec/Lifecycle.tla on lifecycle-ci-solo and
lifecycle-boundary and compare with evidence TLC does not give the classifier: the
invariant named is the one the edit breaks, a witness lost is the behaviour the edit
removes, and a mutant no check can see (dropping ``Tier[a] >= 0``, which every tier
satisfies) survives unless it is accepted as equivalent.  The three fixes of the spec
mutation issue are shown by the mutants that survived before them:
``OpenDispute/const/2`` (LC-SAFE-3 against the history, not the counter),
``Object/except/1`` (TableStepProp: the row a step records is what it did),
``AtMostPct/cmp/1`` and ``Dispute/cmp/1`` (a threshold and a tier at their boundaries).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from click.testing import CliRunner

from ostrom import layout
from ostrom.cli.main import main
from ostrom.verify.mutate.equivalents import Equivalent
from ostrom.verify.mutate.run import MutationError, _classify, mutate_models
from ostrom.verify.tlc.manifest import load_manifest
from ostrom.verify.tlc.output import TlcOutcome
from ostrom.verify.tlc.runner import TlcRun

MANIFEST = layout.MODELS_DIR / "manifest.json"


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["mutate", *args])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give a MODEL"),
        (("--all",), "need --suite"),
        (("lifecycle-ci-solo", "--record"), "need --suite"),
        (("--suite", "Lifecycle", "lifecycle-ci"), "give no MODEL"),
        (("--suite", "Lifecycle", "--sample", "3"), "give no MODEL, --spec or --sample"),
        (("--suite", "Lifecycle", "--check", "--only", "X/cmp/1"), "--only cannot"),
        (("--suite", "Lifecycle", "--record", "--operators", "cmp"), "--record keeps"),
        (("--suite", "Nope"), "no suite for Nope"),
        (("no-such-model",), "no model 'no-such-model'"),
        (("lifecycle-ci-solo", "--operators", "cmp,flip"), "unknown 'flip'"),
        (("lifecycle-ci-solo", "--operators", ","), "unknown '(none)'"),
        (("lifecycle-mutant-quorum",), "only a passing model"),
        (("lifecycle-ci-solo", "sanctions-ci", "--list"), "mutate different specs"),
        (("lifecycle-ci-solo", "--spec", "PBFT", "--list"), "does not use a spec PBFT"),
        (("lifecycle-ci-solo", "--only", "Nope/cmp/1"), "no mutant 'Nope/cmp/1'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_tlc_run(
    args: tuple[str, ...], message: str
) -> None:
    result = _cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_list_prints_every_mutant_in_scope_once() -> None:
    result = _cli("lifecycle-ci-solo", "lifecycle-boundary", "--list", "--json")
    assert result.exit_code == 0, result.output
    listed = json.loads(result.output)
    ids = [m["id"] for m in listed]
    assert len(ids) == len(set(ids)) > 400
    # properties and witnesses are out of scope; the actions and their helpers are in
    definitions = {i.split("/")[0] for i in ids}
    assert {"OpenDispute", "Observe", "AtLeastPct", "Recruit"} <= definitions
    assert not definitions & {"BoundedCountsInv", "Legitimate", "TableStep", "TypeOK"}
    only_cmp = json.loads(
        _cli("lifecycle-ci-solo", "--list", "--json", "--operators", "cmp").output
    )
    assert only_cmp and all("/cmp/" in m["id"] for m in only_cmp)


def _run(code: int, kind: str = "pass", got: str = "pass", prints: list[str] | None = None,
         timed_out: bool = False) -> TlcRun:  # fmt: skip
    return TlcRun(
        label="t",
        outcome=TlcOutcome(kind=kind, got=got, error_text=got if kind == "error" else None),
        exit_code=code,
        seconds=0.0,
        run_dir=Path("."),
        cfg_text="",
        print_lines=prints or [],
        timed_out=timed_out,
    )


def test_the_classification_of_each_outcome() -> None:
    w = ["NeverAInv", "NeverBStep"]
    both = ['<<"ostrom-witness", "NeverAInv">>', '<<"ostrom-witness", "NeverBStep">>']
    baseline = set(w)
    assert _classify(_run(0, prints=both), baseline, w)[0] == "survived"
    assert _classify(_run(12, "invariant", "TypeOK", both), baseline, w) == ("killed", "TypeOK")
    assert _classify(_run(11, "deadlock", "deadlock", both), baseline, w)[0] == "killed"
    lost = _classify(_run(0, prints=both[:1]), baseline, w)
    assert lost == ("killed", "witness NeverBStep no longer reached")
    assert _classify(_run(150, "error", "Parse error: x"), baseline, w) == (
        "invalid",
        "Parse error: x",
    )
    assert _classify(_run(151, "error", "cfg"), baseline, w)[0] == "invalid"
    assert _classify(_run(75, "error", "error: eval"), baseline, w)[0] == "killed"
    assert _classify(_run(0, timed_out=True), baseline, w)[0] == "timeout"
    # a witness the unmutated model did not reach cannot be lost
    assert _classify(_run(0, prints=both[:1]), {"NeverAInv"}, w)[0] == "survived"


@pytest.mark.tlc
@pytest.mark.mutation  # 40 s of TLC: make mutate and make test-slow
def test_real_mutants_are_killed_by_the_check_they_break_and_a_blind_one_survives() -> None:
    manifest = load_manifest(MANIFEST)
    solo = manifest.get("lifecycle-ci-solo")
    assert solo is not None
    seen: list[tuple[int, int]] = []
    report = mutate_models(
        manifest,
        [solo],
        only=["OpenDispute/const/2", "Propose/cmp/1", "Resubmit/conj/2", "Observe/const/1"],
        jobs=2,
        timeout=300,
        on_result=lambda done, total, r: seen.append((done, total)),
    )
    by = {r.mutant.id: r for r in report.results}
    # fix 1: `disputes + 1` -> `+ 0`: the history counts the dispute the counter misses
    assert by["OpenDispute/const/2"].verdict == "killed"
    assert by["OpenDispute/const/2"].why == "CountersInv"
    # the newcomer (tier 0) can no longer propose: nothing of the lifecycle is reached
    assert by["Propose/cmp/1"].verdict == "killed"
    assert by["Propose/cmp/1"].why.startswith("witness ")
    # Tier[a] >= 0 holds for every agent (Tier ranges over 0..3): no check can see it go
    blind = by["Resubmit/conj/2"]
    assert blind.verdict == "survived" and blind.model == "lifecycle-ci-solo"
    assert blind.distinct_states == report.baseline_states["lifecycle-ci-solo"] == 15747
    # the history itself miscounting is caught by the bound it feeds
    assert by["Observe/const/1"].verdict == "killed"
    assert sorted(seen) == [(k, 4) for k in range(1, 5)]
    assert report.score == 3 / 4
    accepted = mutate_models(
        manifest,
        [solo],
        only=["Resubmit/conj/2"],
        equivalents=[Equivalent("Resubmit/conj/2", blind.mutant.change, "Tier >= 0 always")],
    )
    assert [r.verdict for r in accepted.results] == ["equivalent"]
    assert accepted.score is None


@pytest.mark.tlc
@pytest.mark.mutation  # 50 s of TLC: make mutate and make test-slow
def test_the_boundary_model_kills_what_the_small_models_let_pass() -> None:
    manifest = load_manifest(MANIFEST)
    entries = [manifest.get("lifecycle-boundary")]
    assert entries[0] is not None
    report = mutate_models(
        manifest,
        cast(Any, entries),
        only=["AtMostPct/cmp/1", "Dispute/cmp/1", "Object/except/1"],
        jobs=2,
        timeout=300,
    )
    by = {r.mutant.id: r for r in report.results}
    assert by["AtMostPct/cmp/1"].why == "witness NeverRejectAtThresholdStep no longer reached"
    assert by["Dispute/cmp/1"].why == "witness NeverMinTierDisputeStep no longer reached"
    # the objection recorded while the artifact stays in fast_track
    assert by["Object/except/1"].why == "TableStepProp"


@pytest.mark.tlc
@pytest.mark.slow  # 80 s; make mutate's gate reaches AuthenticInv and NormalCaseInv
def test_each_new_replica_invariant_kills_the_survivor_it_was_written_for() -> None:
    # spec/PBFTReplicaSystem.tla's invariants added for the PBFTReplica suite's survivors
    # (docs/checking.md): each is the check TLC reports for a mutant that passed before
    manifest = load_manifest(MANIFEST)
    entries = [
        manifest.get("pbft-replica-checkpoint-ci"),
        manifest.get("pbft-replica-byz-view-change-ci"),
    ]
    assert all(e is not None for e in entries)
    expected = {
        "AdvanceStable/except/2": "StableDigestInv",  # a stable checkpoint without its digest
        "AppliedFrom/const/1": "ServesStableInv",  # a request skipped in the application state
        "SPP/const/3": "NormalCaseInv",  # a sequence number skipped: only a view change recovers
        "ValidCert/conj/7": "AuthenticInv",  # a certificate's PREPAREs not checked
        "OnViewChange/except/1": "LaterVCsInv",  # a superseded VIEW-CHANGE kept
    }
    report = mutate_models(
        manifest, cast(Any, entries), spec="PBFTReplica", only=list(expected), jobs=2, timeout=300
    )
    assert {r.mutant.id: r.why for r in report.results} == expected


@pytest.mark.tlc
@pytest.mark.mutation  # about 40 s of TLC: make mutate and make test-slow
def test_an_answer_is_not_progress_the_answer_only_round_kills_core_except_1() -> None:
    # BFT-LIVE-1 (RoundInv): spec/PBFTReplicaSystem.tla's Core leaves out `answered`, the
    # rate limit an answer to a late VIEW-CHANGE or a FETCH-STATE sets. Core/except/1 keeps
    # it, so an answer alone counts as progress and starts another round after the heal.
    # pbft-replica-net-late-answer-ci reaches a round whose only change is such an answer
    # (its witness NeverAnswerOnlyRoundInv), and RoundInv, which judges progress from
    # outside the spec, reports the idle round the mutant starts.
    manifest = load_manifest(MANIFEST)
    entry = manifest.get("pbft-replica-net-late-answer-ci")
    assert entry is not None and "NeverAnswerOnlyRoundInv" in entry.witnesses
    report = mutate_models(
        manifest, [entry], spec="PBFTReplicaSystem", only=["Core/except/1"], timeout=300
    )
    [result] = report.results
    assert result.mutant.change == "!.answered = {}, -> (nothing)"
    assert (result.verdict, result.why) == ("killed", "RoundInv")


def test_a_model_expected_to_fail_cannot_be_mutation_tested() -> None:
    manifest = load_manifest(MANIFEST)
    entry = manifest.get("sanctions-mutant-expire-late")
    assert entry is not None
    with pytest.raises(MutationError, match="only a passing model"):
        mutate_models(manifest, [entry])
    with pytest.raises(MutationError, match="no model"):
        mutate_models(manifest, [])
