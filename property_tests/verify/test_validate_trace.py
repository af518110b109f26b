"""Trace validation (``ostrom validate-trace``) and the vectors that come from TLC.

* a log written by the reference driver (``python -m ostrom.conformance.driver --log``) is accepted,
  one with a ``set_agent`` mid-log included (the registry variables of LifecycleTrace.tla);
* hand-broken logs are rejected at the step that breaks them, for the right reason: a
  wrong state after a tick, a command the spec does not allow, a refusal of a command the
  spec allows, a refusal that changes the state, a wrong ``unknown_agent``;
* a forget decision is checked against the confidence-weighted rule: a log that forgets
  at S = Q exactly (a vote of confidence 0.25) is accepted, the same log with confidence
  0.24 (S < Q) is rejected at the tick that forgets;
* unusable input exits 2 with a message and never reaches TLC (confidences whose common
  unit would overflow TLC's integers included);
* every lifecycle vector of the suite is accepted by the spec (one TLC run per parameter
  set and confidence unit, about 20 s), forget votes of confidence below 1 included;
* the tlc:* vectors are current (``generate_tlc_vectors`` writes the committed bytes: the
  generation is deterministic), cover every action, table row and error code, and their
  ITF traces carry the vectors' commands.
"""

from __future__ import annotations

import copy
import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.conformance.generators import tlc_vectors
from ostrom.conformance.generators.random_log import random_lifecycle_log
from ostrom.conformance.vectors import VECTORS_DIR, load_suite
from ostrom.verify.tlc.itf import read_itf
from ostrom.verify.trace.lifecycle_check import validate_logs
from ostrom.verify.trace.log import TRACE_SPECS, TraceLog, log_from_vector, read_log
from ostrom.verify.trace.regvar import REGISTRY_CONSTANTS, registry_variable_spec
from ostrom.verify.trace.validate import validate_file
from ostrom.verify.trace.verdict import format_verdict

pytestmark = pytest.mark.tlc

ROOT = Path(__file__).resolve().parents[2]


def _vector(rel: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((VECTORS_DIR / rel).read_text(encoding="utf-8"))
    return doc


def _driver_logs(tmp: Path, *rels: str) -> list[Path]:
    """Run the reference driver on the vectors' commands with --log; the log files."""
    lines = [{"type": "hello", "protocol": "ostrom-driver/1"}]
    for rel in rels:
        doc = _vector(rel)
        lines.append(
            {"type": "reset", "layer": "lifecycle", "params": doc["params"], "setup": doc["setup"]}
        )
        lines += [{"type": "step", "command": s["command"]} for s in doc["steps"]]
    log = tmp / "run.jsonl"
    subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--log", str(log)],
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return [log] + [tmp / f"run.{k}.jsonl" for k in range(2, len(rels) + 1)]


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


# --- logs of the reference ---------------------------------------------------------------


def test_reference_driver_logs_are_accepted(tmp_path: Path) -> None:
    """Two vectors through the driver: a retraction by a dispute, and a resubmission
    refused after a set_agent lowered the submitter's reputation (the registry changes
    mid-log)."""
    logs = _driver_logs(
        tmp_path,
        "lifecycle/dispute/retracted-by-two-of-three.json",
        "lifecycle/resubmit/not-eligible.json",
    )
    for log in logs:
        result = CliRunner().invoke(main, ["validate-trace", str(log)])
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith(f"ACCEPTED {log}")
    result = CliRunner().invoke(main, ["validate-trace", "--json", str(logs[0])])
    report = json.loads(result.stdout)
    assert report["status"] == "accepted" and report["matched"] == report["steps"] == 12


def test_random_reference_log_is_accepted() -> None:
    """A seeded random walk (ticks with many due artifacts, refusals of every kind)."""
    log = random_lifecycle_log(150, seed=3)
    assert random_lifecycle_log(150, seed=3).steps == log.steps  # deterministic
    (verdict,) = validate_logs([log])
    assert verdict.status == "accepted", verdict.message


# --- broken logs -------------------------------------------------------------------------


def test_broken_logs_are_rejected_at_the_right_step(tmp_path: Path) -> None:
    (log,) = _driver_logs(tmp_path, "lifecycle/dispute/retracted-by-two-of-three.json")
    good = _lines(log)
    # line 0 is the header; step k (1-based) is line k
    assert [x["command"]["op"] for x in good[1:4]] == ["propose", "tick", "tick"]
    assert good[5]["command"]["op"] == good[6]["command"]["op"] == "commit_vote"

    deadline = copy.deepcopy(good)  # a wrong state after a tick
    deadline[2]["state"]["artifacts"]["x"]["deadline"] = 5
    # the dispute's reviewers are whoever the sortition drew: the outsider is a tier-3
    # agent who is not one of them
    drawn = set(good[4]["state"]["artifacts"]["x"]["reviewers"])
    stranger = next(a for a in ("ana", "ben", "kim") if a not in drawn)
    outsider = copy.deepcopy(good)  # a commitment from someone who is no reviewer
    outsider[5]["command"]["agent"] = stranger
    refused = copy.deepcopy(good)  # refused, but the spec allows it
    refused[6]["result"] = "wrong_phase"
    refused[6]["state"] = refused[5]["state"]
    moved = copy.deepcopy(good)  # refused (rightly), but the state changed
    moved[7]["command"]["agent"] = stranger
    moved[7]["result"] = "not_eligible"
    unknown = copy.deepcopy(good)  # unknown_agent for a registered agent
    unknown[4]["result"] = "unknown_agent"
    unknown[4]["state"] = unknown[3]["state"]
    logs = [
        read_log(_write(tmp_path / f"{name}.jsonl", lines))
        for name, lines in [
            ("deadline", deadline),
            ("outsider", outsider),
            ("refused", refused),
            ("moved", moved),
            ("unknown", unknown),
        ]
    ]
    v = {Path(x.name).stem: x for x in validate_logs(logs)}  # one TLC run

    assert v["deadline"].status == "rejected" and v["deadline"].exit_code == 1
    f = v["deadline"].failure
    assert f is not None and (f.step, f.line, f.kind) == (1, 3, "state")
    assert f.differences == [{"artifact": "x", "field": "deadline", "spec": 2, "log": 5}]
    assert f.action.startswith("Tick")

    f = v["outsider"].failure
    assert f is not None and (f.step, f.kind) == (4, "command")
    assert f.action.startswith(f"CommitVote({stranger}, x") and "does not allow" in f.message

    f = v["refused"].failure
    assert f is not None and (f.step, f.kind) == (5, "refusal")
    second = good[6]["command"]["agent"]
    assert f"refused as wrong_phase, but the spec allows CommitVote({second}, x" in f.message

    f = v["moved"].failure
    assert f is not None and (f.step, f.kind) == (6, "state")
    assert "refused (not_eligible)" in f.message
    assert f.differences[0]["field"] == "committed"

    f = v["unknown"].failure
    assert f is not None and (f.step, f.kind) == (3, "refusal")
    assert "unknown_agent, but the agent is registered" in f.message

    text = format_verdict(v["deadline"])
    assert "REJECTED" in text and "x.deadline: spec 2, log 5" in text


def test_forget_decision_weighs_the_votes_confidence() -> None:
    """Votes of ana 1.0, ben 0.9, kim 0.9 and cat 0.8 (weights) against Q = 0.5 x 6.0 = 3.0
    (the vector forgets with every confidence at 1).  With cat's confidence at 0.25,
    S = 2.8 + 0.2 = Q exactly: forgotten (ConfUnit 4); at 0.24, S = 2.992 < Q
    (ConfUnit 25), so the logged forgetting contradicts the rule and the log is rejected
    at the tick that forgets, the spec keeping the artifact active."""
    doc = _vector("lifecycle/forget_vote/quorum-reached-forgotten.json")

    def with_confidence(c: float) -> TraceLog:
        d = copy.deepcopy(doc)
        d["id"] += f"-cat-{c}"
        cmd = d["steps"][6]["command"]
        assert (cmd["op"], cmd["agent"]) == ("forget_vote", "cat")
        cmd["confidence"] = c
        return log_from_vector(d)

    at_q, below = validate_logs([with_confidence(0.25), with_confidence(0.24)])
    assert at_q.status == "accepted", at_q.message
    assert below.status == "rejected" and below.exit_code == 1, below.message
    f = below.failure
    assert f is not None and (f.step, f.kind) == (7, "state")
    assert f.action.startswith("Tick")
    assert {"artifact": "x", "field": "state", "spec": "active", "log": "forgotten"} in (
        f.differences
    )


def test_a_malformed_state_is_rejected_not_unusable(tmp_path: Path) -> None:
    """A logged state that is no public state is the implementation's error (exit 1)."""
    (log,) = _driver_logs(tmp_path, "lifecycle/dispute/retracted-by-two-of-three.json")
    lines = _lines(log)
    lines[5]["state"]["artifacts"]["x"]["committed"] = {"ben": "a" * 64}  # leaks hashes
    result = CliRunner().invoke(main, ["validate-trace", str(_write(log, lines))])
    assert result.exit_code == 1, result.output
    assert "step 5 of 12" in result.stdout and "not a public state" in result.stdout


# --- unusable input ------------------------------------------------------------------------


def _header(**params: Any) -> dict[str, Any]:
    agents = [{"id": "a", "tier": 3, "weight": 1.0}, {"id": "b", "tier": 1}]
    return {
        "format": "ostrom-trace/1",
        "layer": "lifecycle",
        "params": params,
        "setup": {"agents": agents},
    }


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["not json"], "not JSON"),
        ([{"format": "ostrom-trace/0"}], "not an ostrom-trace/1 header"),
        ([{**_header(), "layer": "voting"}], "only lifecycle and community logs"),
        ([{**_header(), "layer": "community"}], "setup: unknown key(s) agents"),
        ([_header(quorum=9)], "bad params"),
        ([_header(tau_accept=0.655)], "not a whole percentage"),
        (
            [{**_header(urgent_penalty=2.5), "layer": "community", "setup": {}}],
            "urgent_penalty = 2.5 is not an integer",
        ),
        ([_header(), {"command": {"op": "tick"}}], "a step needs a command and a result"),
        (  # confidence in units of 10^-6, weights in units of 10^-6 summing to 1.010001:
            # ConfUnit x total = 10^6 x 1010001 > 2^31
            [
                {
                    **_header(w_min=0.01, w_max=2.0),
                    "setup": {
                        "agents": [
                            {"id": "a", "tier": 3, "weight": 1.000001},
                            {"id": "b", "tier": 1},
                        ]
                    },
                },
                {
                    "command": {
                        "op": "forget_vote",
                        "agent": "b",
                        "artifact": "x",
                        "confidence": 0.123457,
                    },
                    "result": "ok",
                    "state": {"now": 0, "artifacts": {}},
                },
            ],
            "need the unit 1/1000000",
        ),
    ],
)
def test_unusable_input_exits_2(tmp_path: Path, lines: list[Any], message: str) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    result = CliRunner().invoke(main, ["validate-trace", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stdout.startswith("UNUSABLE") and message in result.stdout


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["validate-trace", "--json", str(tmp_path / "no.jsonl")])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["status"] == "unusable"


# --- the derived spec -----------------------------------------------------------------------


def test_registry_variable_spec_only_moves_declarations() -> None:
    """LifecycleRegVar is Lifecycle.tla with the registry constants as variables and the
    ASSUMEs as definitions: every other line is unchanged."""
    text = (ROOT / "spec" / "Lifecycle.tla").read_text(encoding="utf-8")
    derived = registry_variable_spec(text)
    old, new = text.splitlines(), derived.splitlines()
    dropped = [x for x in old if x not in new]
    added = [x for x in new if x not in old]
    assert len(dropped) == len(REGISTRY_CONSTANTS) + 4  # MODULE line, three ASSUMEs
    assert all(x.lstrip().startswith(REGISTRY_CONSTANTS) for x in dropped[1:6])
    assert sum(x.startswith("ASSUME") for x in dropped) == 3
    assert any(x.startswith("VARIABLES Tier, Weight, Barred, Subscriptions, RepOK") for x in added)
    assert [x for x in added if x.startswith("LifecycleAssumption")] == [
        "LifecycleAssumption1 ==",
        "LifecycleAssumption2 ==",
        "LifecycleAssumption3 ==",
        "LifecycleAssumptions == LifecycleAssumption1 /\\ LifecycleAssumption2"
        " /\\ LifecycleAssumption3",
    ]


# --- the suite's lifecycle vectors ------------------------------------------------------------


def test_every_lifecycle_vector_is_accepted_by_the_spec() -> None:
    suite = load_suite()
    vectors = suite.by_layer("lifecycle")
    assert len(vectors) >= 150
    logs = [log_from_vector(v.doc) for v in vectors]
    verdicts = validate_logs(logs)
    bad = {
        v.id: verdict.message
        for v, verdict in zip(vectors, verdicts, strict=True)
        if verdict.status != "accepted"
    }
    assert bad == {}
    # forget votes of confidence below 1 are in the suite and accepted (ConfUnit > 1)
    assert any(
        s["command"].get("op") == "forget_vote" and s["command"].get("confidence", 1) < 1
        for v in vectors
        for s in v.doc["steps"]
    )


# --- TLC-sourced vectors -----------------------------------------------------------------------


def _owned(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in tlc_vectors._owned(root)}


@pytest.mark.slow  # a minute of TLC runs: make test-slow
def test_tlc_vectors_are_current_and_deterministic(tmp_path: Path) -> None:
    """generate_tlc_vectors writes exactly the committed tlc:* files, byte for byte
    (TLC -simulate with a fixed seed and one worker, BFS cover runs, seed search).

    make test keeps what a change of the spec or of the reference would break: every
    committed tlc:* vector is accepted by the spec (the test below), replays on the
    reference (the conformance tests), and together they still take every action, row and
    error code; this one regenerates them, which a change of the generator needs."""
    paths = tlc_vectors.generate_tlc_vectors(tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in paths) == sorted(_owned(tmp_path))
    assert _owned(tmp_path) == _owned(VECTORS_DIR), (
        "the tlc:* vectors are not current: regenerate them "
        "(ostrom.conformance.generators.tlc_vectors.generate_tlc_vectors)"
    )


def test_tlc_vectors_cover_every_action_row_and_error_code() -> None:
    table = tlc_vectors.cover_table(VECTORS_DIR)
    assert [k for k, ids in table.items() if not ids] == []
    sources = {
        json.loads(p.read_text())["source"]
        for p in tlc_vectors._owned(VECTORS_DIR)
        if not p.name.endswith(".itf.json")
    }
    assert sources == {"tlc:simulate", "tlc:cover"}


def test_itf_traces_carry_the_vectors_commands() -> None:
    traces = sorted((VECTORS_DIR / "lifecycle" / "traces").glob("tlc-sim-*.itf.json"))
    assert len(traces) == tlc_vectors.SIM_VECTORS
    for path in traces:
        itf = read_itf(path)
        vector = _vector(itf["#meta"]["vector"] + ".json")
        commands = [s["#meta"]["command"] for s in itf["states"] if "command" in s["#meta"]]
        assert commands == [s["command"] for s in vector["steps"]], path.name
        assert vector["source"] == "tlc:simulate"


@pytest.mark.slow  # 39 s: make test keeps the community layer's single-vector traces below
def test_every_community_vector_is_accepted_by_the_community_spec(tmp_path: Path) -> None:
    """The reference driver's log of each community vector is a behaviour of
    spec/CommunityTrace.tla: the lifecycle with the registry derived by the spec (join at
    tier 0, the sanction level of spec/Sanctions.tla, the tier rule over the logged E)."""
    from ostrom.conformance import killmatrix

    vectors = load_suite().by_layer("community")
    assert len(vectors) >= 40
    paths = killmatrix.write_logs(None, vectors, tmp_path)
    assert len(paths) == len(vectors)
    verdicts = validate_logs([read_log(p) for p in paths])
    bad = {
        v.id: verdict.message
        for v, verdict in zip(vectors, verdicts, strict=True)
        if verdict.status != "accepted"
    }
    assert bad == {}
    assert {v.spec for v in verdicts} == {TRACE_SPECS["community"]}


def test_community_registry_is_derived_not_given(tmp_path: Path) -> None:
    """A community log whose registry is not the derived one is rejected at that step:
    a newcomer at tier 1, a violation whose sanction level is not applied at once."""
    (log,) = killmatrix_logs(tmp_path, "community/join/newcomer-at-w-min")
    good = _lines(log)
    k = next(i for i, x in enumerate(good) if x.get("command", {}).get("op") == "join")
    agent = good[k]["command"]["agent"]
    tier_one = copy.deepcopy(good)
    for x in tier_one[k:]:
        x["state"]["agents"][agent]["tier"] = 1
    verdict = validate_file(_write(tmp_path / "tier-one.jsonl", tier_one))
    assert verdict.status == "rejected" and verdict.failure is not None
    assert verdict.failure.step == k - 1
    assert f"agents.{agent}.tier: spec 0, log 1" in format_verdict(verdict)


def test_tie_at_a_reweighting_tick_is_tallied_with_the_weights_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """community/tick/tie-at-reweighting-tick: a 2-2 review at 0.158812 each closes, tied
    (317624 : 317624, undecided: arbitration), at a tick that also decides another ballot and
    moves those four weights to 0.144 and 0.258812 (with which the tally would reject).
    The reference's log is accepted: the spec tallies with the registry before the tick
    (TickDue before Derive, docs/community.md Timing), and the weights are written exactly.

    Before the fix this log was REJECTED at its last step (t.state: spec "active", log
    "arbitration"), as the smoke simulation's log of seed 2 was at step 111: the weight
    unit was the gcd of each agent's LARGEST weight (0.02 here), 0.158812 was no multiple
    of it and was written -1, Derive copied the -1s into Weight, and -2 : -2 passed the
    accept threshold (-200 >= 60 x -4). The mutant below is that unit rule."""
    from ostrom.protocol.agents import micro
    from ostrom.verify.trace import lifecycle

    (log,) = killmatrix_logs(tmp_path, "community/tick/tie-at-reweighting-tick")
    verdict = validate_file(log)
    assert verdict.status == "accepted", verdict.message
    steps = _lines(log)[1:]
    tally = steps[-1]
    assert {"artifact": "t", "event": "timeout", "from": "reveal", "to": "arbitration",
            "verdict": "undecided"} in tally["events"]  # fmt: skip
    voters = {
        x["command"]["agent"]
        for x in steps
        if x["command"].get("op") == "reveal_vote" and x["command"]["artifact"] == "t"
    }
    assert len(voters) == 4
    before = {a: steps[-2]["state"]["agents"][a]["weight"] for a in voters}
    after = {a: tally["state"]["agents"][a]["weight"] for a in voters}
    assert len(set(before.values())) == 1 and after != before

    def largest_only(compiled: Any) -> int:  # the unit before the fix
        weights = [micro(c.params.w_min) for c in compiled]
        for c in compiled:
            weights += [e.weight for e in c.initial.values()]
            weights += [*c.set_weights.values(), *c.reg_weights.values()]
        return math.gcd(*weights)

    monkeypatch.setattr(lifecycle, "_unit", largest_only)
    assert validate_file(log).status == "rejected"


@pytest.mark.parametrize("weight", [0, -0.158812])
def test_community_weight_that_is_no_weight_is_rejected_not_tallied(
    tmp_path: Path, weight: float
) -> None:
    """A logged registry weight that is not positive in micro-units (docs/rules.md: in
    [w_min, w_max]) is no public state: the log is rejected at that step, and the weight
    never reaches the spec's tallies (where a 0 or a negative would decide like a weight)."""
    (log,) = killmatrix_logs(tmp_path, "community/tick/tie-at-reweighting-tick")
    lines = _lines(log)
    k = len(lines) - 2  # the last reveal: the step before the tallying tick
    for x in lines[k:]:
        x["state"]["agents"]["f0"]["weight"] = weight
    verdict = validate_file(_write(tmp_path / "bad-weight.jsonl", lines))
    assert verdict.status == "rejected" and verdict.failure is not None
    assert verdict.failure.step == k - 1
    assert "not a public state" in verdict.message and "'f0': weight" in verdict.message


def killmatrix_logs(tmp: Path, *ids: str) -> list[Path]:
    from ostrom.conformance import killmatrix

    by_id = {v.id: v for v in load_suite().by_layer("community")}
    return killmatrix.write_logs(None, [by_id[i] for i in ids], tmp)


def test_tla_view_is_the_python_view() -> None:
    # One artifact view (verify/trace/lifecycle.py: artifact_view): LifecycleTrace.tla's
    # View has its fields in its order, and shows each field in the same states.
    from ostrom.protocol.lifecycle import ACTIVE, FORGOTTEN, STATES, TRANSIENT
    from ostrom.verify.trace.lifecycle import VIEW_FIELDS, VIEW_SHOWN

    text = (ROOT / "spec" / "LifecycleTrace.tla").read_text(encoding="utf-8")
    view = text[text.index("View(x) ==") : text.index("Existing ==")]
    assert tuple(re.findall(r"(\w+) \|->", view)) == VIEW_FIELDS
    # the guard each field is written under in TLA+, and the states it means
    guards = {
        "ballot": ("ballot |-> BallotView(r)", TRANSIENT),
        "reviewers": ('IF r.st \\in Transient \\cup {"active"}', TRANSIENT | {ACTIVE}),
        "committed": ("committed |-> IF r.st \\in Transient", TRANSIENT),
        "revealed": ("revealed |-> IF r.st \\in Transient", TRANSIENT),
        "forget_voters": ('IF r.st = "forgotten" THEN {}', frozenset(STATES) - {FORGOTTEN}),
        "decision": ("decision |-> DecisionView(r)", frozenset({ACTIVE})),
    }
    assert set(guards) == set(VIEW_SHOWN)
    for field, (tla_text, states) in guards.items():
        assert tla_text in view or tla_text in text, field
        assert VIEW_SHOWN[field] == states, field
    assert 'IF r.st # "active" THEN <<NoView, 0, 0, 0, 0>>' in text  # DecisionView
    assert "[] OTHER -> <<NoView, NoView>>" in text  # BallotView of a stable state


# --- weights beyond TLC's products ---------------------------------------------------------

SCALED = [
    "lifecycle/tick/tally-accept.json",
    "lifecycle/tick/tally-reject.json",
    "lifecycle/dispute/retracted-by-two-of-three.json",
    "lifecycle/forget_vote/quorum-reached-forgotten.json",
]


def _scaled(doc: dict[str, Any], factor: int = 10) -> dict[str, Any]:
    """``doc`` with every weight and w_min times ``factor`` (the same decisions: every
    tally compares ratios) and a suspended agent whose weight is one micro-unit off,
    so that the logs' common weight unit is 10^-6: the weight sums in that unit then
    exceed 2^31 / 100, where TLC's products a * 100 overflowed."""
    d = copy.deepcopy(doc)
    w_min = d["params"].get("w_min", 0.1)
    d["params"] |= {"w_min": round(w_min * factor, 6), "w_max": 100.0}
    for a in d["setup"]["agents"]:
        a["weight"] = round(a.get("weight", w_min) * factor, 6)
    barred = {"id": "zed", "tier": 2, "weight": round(w_min * factor + 1e-6, 6)}
    d["setup"]["agents"].append({**barred, "reputation": 0.8, "sanction": "suspended"})
    return d


@pytest.mark.slow  # 17 s: a second trace of the community layer
def test_weight_sums_beyond_tlc_products_are_validated_exactly(tmp_path: Path) -> None:
    """Real logs outgrow TLC's 32-bit products (the crash harness's log: weights in units
    of 10^-6 summing to 7.66 with forget confidences in tenths, 7.7 x 10^9 > 2^31, was
    UNUSABLE): the trace spec compares shares without multiplying the sums by 100
    (LifecycleTrace.tla: TraceAtLeastPct).  Four vectors scaled to sums of about 60 in
    units of 10^-6 (100 x 6 x 10^7 > 2^31) are accepted; the forget vector with the
    score exactly at the quorum (confidence 0.25) is accepted and, with the logged
    confidence lowered to 0.2 (S < Q), rejected at the tick that forgets."""
    from ostrom.protocol.agents import micro
    from ostrom.verify.trace import lifecycle

    docs = [_scaled(_vector(rel)) for rel in SCALED]
    docs[-1]["steps"][6]["command"]["confidence"] = 0.25
    lines = [{"type": "hello", "protocol": "ostrom-driver/1"}]
    for d in docs:
        lines.append(
            {"type": "reset", "layer": "lifecycle", "params": d["params"], "setup": d["setup"]}
        )
        lines += [{"type": "step", "command": s["command"]} for s in d["steps"]]
    log = tmp_path / "run.jsonl"
    subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--log", str(log)],
        input="".join(json.dumps(m) + "\n" for m in lines),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    paths = [log] + [tmp_path / f"run.{k}.jsonl" for k in range(2, len(docs) + 1)]
    logs = [read_log(p) for p in paths]
    batches, unusable = lifecycle.make_batches(logs)
    assert not unusable
    assert {b.unit for b in batches} == {1}
    for d in docs:  # beyond the old limit: 100 x the weight sum in micro-units
        total: int = sum(micro(a["weight"]) for a in d["setup"]["agents"])
        assert 100 * total > 2**31
    for path in paths:
        verdict = validate_file(path)
        assert verdict.status == "accepted", (path, verdict.message)
    forget = _lines(paths[-1])
    assert forget[-1]["state"]["artifacts"]["x"]["state"] == "forgotten"
    assert forget[7]["command"]["agent"] == "cat"
    forget[7]["command"]["confidence"] = 0.2
    verdict = validate_file(_write(tmp_path / "below.jsonl", forget))
    assert verdict.status == "rejected" and verdict.failure is not None, verdict.message
    assert (verdict.failure.step, verdict.failure.kind) == (7, "state"), format_verdict(verdict)


def test_pct_gap_is_the_sign_of_the_products() -> None:
    """LifecycleTrace.tla's PctGap (mirrored by lifecycle.pct_gap) against the products
    it replaces, from 0 to far beyond 2^31 (TLC's ASSUME checks a small range only)."""
    from hypothesis import given
    from hypothesis import strategies as st

    from ostrom.verify.trace.lifecycle import pct_gap

    big = st.integers(0, 2**40)

    @given(big, st.integers(0, 100), big)
    def agree(a: int, p: int, b: int) -> None:
        want = (a * 100 > p * b) - (a * 100 < p * b)
        assert pct_gap(a, p, b) == want
        # every intermediate value of PctGap stays within max(a, b, 9900)
        assert abs(a - p * (b // 100)) <= max(a, b) and p * (b % 100) <= 9900

    agree()
    for a, p, b in [(0, 0, 0), (1, 100, 1), (99, 1, 9900), (100, 100, 100), (2**31, 50, 2**32)]:
        assert pct_gap(a, p, b) == (a * 100 > p * b) - (a * 100 < p * b)
