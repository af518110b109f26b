"""Long logs are validated in chunks (issue 42 item 2; LifecycleTrace.tla "Chunks").

A log longer than ``chunk_steps`` is checked by one TLC run per chunk, each starting from
the states the previous chunk ended in and holding only the artifacts its steps can touch.
The check keeps its strength:

* a log the spec allows is accepted whichever steps the boundaries fall between (the state
  handed across a boundary, the Frozen artifacts left out and handed back, is the state);
* a mutated log is refused at the same step, for the same reason, as in one run: a mutation
  inside a later chunk, on the last step before a boundary and on the first step after one
  (the hand-broken logs of test_validate_trace.py and a community log whose registry is not
  the derived one);
* ``make test`` keeps one small case that crosses a boundary (two TLC runs); the sweep over
  the mutations and boundaries is ``slow``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ostrom.conformance import killmatrix
from ostrom.conformance.vectors import load_suite
from ostrom.verify.trace import lifecycle_check
from ostrom.verify.trace.lifecycle import make_batches, stage_trace_run
from ostrom.verify.trace.lifecycle_check import CHUNK_STEPS, validate_logs
from ostrom.verify.trace.log import read_log
from ostrom.verify.trace.tlc import CHUNK_JVM, run_java_tlc
from ostrom.verify.trace.verdict import Verdict

pytestmark = pytest.mark.tlc

DISPUTE = "lifecycle/dispute/retracted-by-two-of-three"


def _reference_log(tmp: Path, vector: str) -> list[dict[str, Any]]:
    by_id = {v.id: v for v in load_suite().vectors}
    (path,) = killmatrix.write_logs(None, [by_id[vector]], tmp)
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _refused(good: list[dict[str, Any]], line: int) -> list[dict[str, Any]]:
    """The log with the command of ``line`` refused although the spec allows it (the
    state left as it was, as a refusal leaves it)."""
    bad = copy.deepcopy(good)
    bad[line]["result"] = "wrong_phase"
    bad[line]["state"] = bad[line - 1]["state"]
    return bad


def _mutants(good: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """test_validate_trace.py's hand-broken logs of the dispute vector (line k is step
    k, 1-based; the steps: propose, tick, tick, dispute, commit_vote x3, ...)."""
    assert [x["command"]["op"] for x in good[1:4]] == ["propose", "tick", "tick"]
    drawn = set(good[4]["state"]["artifacts"]["x"]["reviewers"])
    stranger = next(a for a in ("ana", "ben", "kim") if a not in drawn)
    deadline = copy.deepcopy(good)  # a wrong state after a tick
    deadline[2]["state"]["artifacts"]["x"]["deadline"] = 5
    outsider = copy.deepcopy(good)  # a commitment from someone who is no reviewer
    outsider[5]["command"]["agent"] = stranger
    moved = copy.deepcopy(good)  # refused (rightly), but the state changed
    moved[7]["command"]["agent"] = stranger
    moved[7]["result"] = "not_eligible"
    unknown = copy.deepcopy(good)  # unknown_agent for a registered agent
    unknown[4]["result"] = "unknown_agent"
    unknown[4]["state"] = unknown[3]["state"]
    return {
        "deadline": deadline,
        "outsider": outsider,
        "refused": _refused(good, 6),
        "moved": moved,
        "unknown": unknown,
    }


def _same(chunked: Verdict, whole: Verdict) -> None:
    assert (chunked.status, chunked.matched, chunked.steps) == (
        whole.status,
        whole.matched,
        whole.steps,
    ), (chunked.message, whole.message)
    assert chunked.message == whole.message
    if whole.failure is not None:
        assert chunked.failure is not None
        assert chunked.failure.to_json() == whole.failure.to_json()


def test_a_mutation_after_a_chunk_boundary_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks of 4 steps: the refused commitment is step 6, the second of chunk 2, so
    chunk 1 is accepted, chunk 2 starts from its end state, follows step 5 from it and
    refuses step 6 for the reason one run gives (test_validate_trace.py).  Each chunk's
    JVM runs the first JIT tier only (tlc.CHUNK_JVM: half the CPU of a chunk of a node's
    log), which changes what the run costs, not what it finds."""
    good = _reference_log(tmp_path, DISPUTE)
    assert good[5]["command"]["op"] == good[6]["command"]["op"] == "commit_vote"
    log = read_log(_write(tmp_path / "refused.jsonl", _refused(good, 6)))
    seen: list[str] = []
    jvms: list[tuple[str, ...]] = []

    def run(*args: Any, **kwargs: Any) -> Any:
        jvms.append(tuple(kwargs.get("jvm", ())))
        return run_java_tlc(*args, **kwargs)

    monkeypatch.setattr(lifecycle_check, "run_java_tlc", run)
    (v,) = validate_logs([log], chunk_steps=4, progress=seen.append)
    assert [s.split(",")[0] for s in seen if "chunk" in s] == [
        "TLC: chunk 1/3",
        "TLC: chunk 2/3",
    ]
    assert jvms == [CHUNK_JVM, CHUNK_JVM] and "-XX:TieredStopAtLevel=1" in CHUNK_JVM
    assert v.status == "rejected" and v.failure is not None, v.message
    assert (v.failure.step, v.failure.kind, v.matched, v.steps) == (5, "refusal", 5, 12)
    assert v.message.startswith("rejected at step 6 of 12 (line 7): refused as wrong_phase")
    assert "but the spec allows CommitVote(" in v.message


def test_the_log_module_has_short_lines(tmp_path: Path) -> None:
    """SANY's parse time grows with the square of a line's length: a chunk module of a
    node's log written one value a line took 12 of its run's 20 s to parse (0.6 s broken
    into lines; docs/conformance.md "Long logs").  Every value of the TraceLog module is
    written an element a line, so no line holds a whole step or start state."""
    good = _reference_log(tmp_path, DISPUTE)
    batches, unusable = make_batches([read_log(_write(tmp_path / "good.jsonl", good))])
    assert not unusable
    stage_trace_run(tmp_path / "run", batches[0])
    text = (tmp_path / "run" / "TraceLog.tla").read_text(encoding="utf-8")
    assert max(len(line) for line in text.splitlines()) <= 120
    assert "steps |-> <<" in text and "@@\n" in text


def test_short_logs_are_one_run() -> None:
    assert CHUNK_STEPS >= 100  # the vectors and the kill matrix's logs stay one TLC run
    with pytest.raises(ValueError, match="positive"):
        validate_logs([], chunk_steps=0)


@pytest.mark.slow  # about 25 TLC runs: make test-slow
@pytest.mark.parametrize("chunk", [1, 4, 5])
def test_chunked_verdicts_are_the_whole_runs(tmp_path: Path, chunk: int) -> None:
    """Every hand-broken log, and the good one, gets the verdict of one run: with chunks
    of 1 step (a boundary after every step), 4 (the unknown_agent refusal is the last
    step of chunk 1, the outsider's commitment the first of chunk 2, the refused and the
    moved commitments inside chunk 2) and 5 (the unknown_agent refusal inside chunk 1,
    the outsider's commitment the last step before a boundary)."""
    good = _reference_log(tmp_path, DISPUTE)
    logs = {"good": good, **_mutants(good)}
    read = {name: read_log(_write(tmp_path / f"{name}.jsonl", x)) for name, x in logs.items()}
    whole = dict(zip(read, validate_logs(list(read.values())), strict=True))
    assert whole["good"].status == "accepted"
    assert all(whole[name].status == "rejected" for name in read if name != "good")
    for name, log in read.items():
        if chunk == 1 and name != "good":
            continue  # the good log crosses every boundary; the others at 4 and 5
        (v,) = validate_logs([log], chunk_steps=chunk)
        _same(v, whole[name])


@pytest.mark.slow  # about 10 TLC runs of the community spec: make test-slow
def test_community_logs_in_chunks(tmp_path: Path) -> None:
    """The community's state (the sanction book, the tier states, the derived registry)
    crosses a boundary too: the reference's log of the reweighting tie is accepted in
    chunks of 3, and the log whose newcomer is logged at tier 1 is refused at the same
    step as in one run (test_validate_trace.py: the registry is derived, not given)."""
    tie = _reference_log(tmp_path, "community/tick/tie-at-reweighting-tick")
    (v,) = validate_logs([read_log(_write(tmp_path / "tie.jsonl", tie))], chunk_steps=3)
    assert v.status == "accepted" and v.matched == len(tie) - 1, v.message
    good = _reference_log(tmp_path, "community/join/newcomer-at-w-min")
    k = next(i for i, x in enumerate(good) if x.get("command", {}).get("op") == "join")
    agent = good[k]["command"]["agent"]
    tier_one = copy.deepcopy(good)
    for x in tier_one[k:]:
        x["state"]["agents"][agent]["tier"] = 1
    log = read_log(_write(tmp_path / "tier-one.jsonl", tier_one))
    (whole,) = validate_logs([log])
    assert whole.status == "rejected" and whole.failure is not None
    assert whole.failure.step == k - 1
    for chunk in (2, 3):
        (v,) = validate_logs([log], chunk_steps=chunk)
        _same(v, whole)
