"""Trace validation of sanctions logs against spec/Sanctions.tla (spec/SanctionsTrace.tla,
``ostrom.verify.trace.sanctions``; ``ostrom validate-trace`` dispatches on the header).

* every sanctions vector, as a log, is accepted (one TLC run per parameter set);
* a long seeded random log of the reference (several agents, an unrepaired one, an agent
  named ``tick``, records at later rounds, refusals) is accepted, with and without events;
* the driver's log of each sanctions mutant, on a vector it fails, is rejected at the
  step where the vector fails, while the reference's log of the same vector is accepted;
* hand-broken logs are rejected at the step that breaks them, for the right reason;
* unusable input (garbage, a fractional urgent_penalty, an unknown setup key) exits 2.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.conformance import TRACE_FORMAT, killmatrix, runner
from ostrom.conformance.layers import SanctionsLayer
from ostrom.conformance.mutants import MUTANTS
from ostrom.conformance.vectors import VECTORS_DIR, load_suite
from ostrom.protocol.sanctions import SanctionBook, Violation
from ostrom.verify.trace import sanctions as st
from ostrom.verify.trace.verdict import Verdict

pytestmark = pytest.mark.tlc

ROOT = Path(__file__).resolve().parents[2]
SANCTIONS_MUTANTS = sorted(n for n, m in MUTANTS.items() if m.layer == "sanctions")


def _vector(rel: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((VECTORS_DIR / rel).read_text(encoding="utf-8"))
    return doc


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _driver_log(tmp: Path, rel: str) -> Path:
    """The reference driver's --log of one vector's commands."""
    doc = _vector(rel)
    msgs: list[dict[str, Any]] = [{"type": "hello", "protocol": "ostrom-driver/1"}]
    msgs.append(
        {"type": "reset", "layer": "sanctions", "params": doc["params"], "setup": doc["setup"]}
    )
    msgs += [{"type": "step", "command": s["command"]} for s in doc["steps"]]
    log = tmp / "run.jsonl"
    subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--log", str(log)],
        input="".join(json.dumps(m) + "\n" for m in msgs),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    return log


# --- the vectors and the reference -------------------------------------------------------------


def test_every_sanctions_vector_is_accepted_by_the_spec() -> None:
    paths = sorted((VECTORS_DIR / "sanctions").rglob("*.json"))
    assert len(paths) >= 21
    logs = [st.log_from_vector(json.loads(p.read_text(encoding="utf-8"))) for p in paths]
    verdicts = st.validate_logs(logs)
    bad = [st.format_verdict(v) for v in verdicts if v.status != "accepted"]
    assert not bad, "\n".join(bad)
    assert all(v.spec == "spec/Sanctions.tla" for v in verdicts)


def random_sanctions_log(
    steps: int, seed: int, book: type[SanctionBook] = SanctionBook
) -> st.SanctionsLog:
    """A seeded random walk of SanctionsLayer over ``book`` (the reference's), as a log."""
    rng = random.Random(seed)
    params = {
        "sanction_window": 4,
        "sigma1": 1,
        "sigma2": 2,
        "sigma3": 3,
        "sigma4": 6,
        "urgent_penalty": 2,
        "T_susp": 2,
        "T_quarantine": 2,
    }
    setup = {"unrepaired": ["zed"]}
    layer = SanctionsLayer(book)
    layer.reset(params, setup)
    agents = ["ana", "bob", "tick", "zed", "é"]
    kinds = [k.value for k in Violation]
    lines: list[dict[str, Any]] = []
    for _ in range(steps):
        now = layer.book.now
        r = rng.random()
        cmd: dict[str, Any]
        if r < 0.6:
            agent = rng.choice(agents)
            # zed and é commit malfunctions mostly: they get quarantined
            kind = (
                "malformed" if agent in ("zed", "é") and rng.random() < 0.8 else rng.choice(kinds)
            )
            cmd = {"op": "record", "agent": agent, "kind": kind}
            if rng.random() < 0.2:
                cmd["round"] = now + rng.choice([0, 1, 3])
        elif r < 0.9:
            cmd = {"op": "tick"} if rng.random() < 0.6 else {"op": "tick", "round": now + 2}
        else:  # refusals
            cmd = rng.choice(
                [
                    {"op": "tick", "round": now},
                    {"op": "record", "agent": "ana", "kind": "rudeness"},
                    {"op": "record", "agent": "ana", "kind": "malformed", "round": now - 1},
                    {"op": "record", "kind": "malformed"},
                    {"op": "forgive", "agent": "ana"},
                ]
            )
        obs = layer.step(cmd)
        lines.append(
            {
                "command": cmd,
                "result": obs["result"],
                "state": obs["state"],
                "events": obs["events"],
            }
        )
    header = {"format": TRACE_FORMAT, "layer": "sanctions", "params": params, "setup": setup}
    return st.parse_log(f"random-{seed}", header, lines)


def test_random_reference_logs_are_accepted() -> None:
    log = random_sanctions_log(300, seed=5)
    results = {s.result for s in log.steps}
    assert results == {"ok", "invalid_input"}
    quiet = copy.deepcopy(log)
    quiet.name += "-without-events"
    for s in quiet.steps:
        s.events = None
    # the same walk over each sanctions mutant's book diverges, and is rejected
    books = {n: MUTANTS[n].factory().book for n in SANCTIONS_MUTANTS}  # type: ignore[attr-defined]
    walks = [random_sanctions_log(300, seed=5, book=type(b)) for b in books.values()]
    verdicts = st.validate_logs([log, quiet, *walks])
    assert [v.status for v in verdicts[:2]] == ["accepted", "accepted"], [
        v.message for v in verdicts
    ]
    for name, v in zip(books, verdicts[2:], strict=True):
        assert v.status == "rejected", f"{name}: {v.message}"
    # the walk reaches quarantine, renewal, release, suspension and ban
    events = {(e["event"], e.get("cause")) for s in log.steps for e in s.events}
    for want in [
        ("sanction", "malfunction"),
        ("quarantine_renewed", None),
        ("sanction", "released"),
        ("sanction", "suspension_end"),
        ("sanction", "expiry"),
    ]:
        assert want in events
    assert any(a["level"] == "banned" for s in log.steps for a in s.state["agents"].values())


# --- mutants -----------------------------------------------------------------------------------


@pytest.mark.mutation  # the kill matrix's rows of this layer, in small: make mutate
def test_mutant_logs_are_rejected_where_their_vectors_fail(tmp_path: Path) -> None:
    """Each sanctions mutant's log of every vector it fails is rejected at the vector's
    failing step; the reference's logs of the same vectors are accepted (control)."""
    assert len(SANCTIONS_MUTANTS) >= 3
    suite = load_suite()
    paths: list[Path] = []
    expect: list[tuple[str, str, int | None]] = []  # (mutant or "", vector id, failing step)
    failing: dict[str, Any] = {}
    for name in SANCTIONS_MUTANTS:
        report = runner.run_suite(
            suite, killmatrix.driver_command(name), layers=["sanctions"], timeout=60
        )
        failed = [r for r in report.results if r.failing]
        assert failed, f"{name} fails no sanctions vector"
        out = tmp_path / name
        out.mkdir()
        logs = killmatrix.write_logs(name, [r.vector for r in failed], out)
        assert len(logs) == len(failed)
        paths += logs
        expect += [(name, r.vector.id, r.step) for r in failed]
        for r in failed:
            failing[r.vector.id] = r.vector
    ref = tmp_path / "reference"
    ref.mkdir()
    controls = list(failing.values())
    paths += killmatrix.write_logs(None, controls, ref)
    expect += [("", v.id, None) for v in controls]
    verdicts = st.validate_paths(paths)
    assert len(verdicts) == len(paths)
    for (name, vid, step), v in zip(expect, verdicts, strict=True):
        if not name:
            assert v.status == "accepted", f"reference on {vid}: {v.message}"
            continue
        assert v.status == "rejected", f"{name} on {vid}: {v.message}"
        assert v.failure is not None and v.exit_code == 1
        assert v.failure.step == step, f"{name} on {vid}: {st.format_verdict(v)}"
        assert f"rejected at step {step + 1} of " in v.message


# --- hand-broken logs ----------------------------------------------------------------------------


def _broken(tmp: Path) -> tuple[list[st.SanctionsLog], list[tuple[int, str]]]:
    """Variants of the ladder-to-ban vector's log: (log, (step index, message part))."""
    good = st.log_from_vector(_vector("sanctions/record/ladder-to-ban.json"))
    out: list[st.SanctionsLog] = []
    want: list[tuple[int, str]] = []

    def variant(name: str, step: int, part: str) -> st.SanctionsLog:
        log = copy.deepcopy(good)
        log.name = name
        out.append(log)
        want.append((step, part))
        return log

    # a wrong rank after the third record (a warning is due at sigma1 = 3)
    log = variant("wrong-rank", 2, "rank: spec 1, log 2")
    log.steps[2].state["agents"]["ana"]["rank"] = 2
    # a wrong event
    log = variant("wrong-event", 2, "events: spec")
    log.steps[2].events[0]["cause"] = "malfunction"
    # a record at an earlier round, accepted
    log = variant("back-in-time", 1, "goes back in time")
    log.steps[0].command["round"] = 2
    log.steps[0].state["now"] = 2
    log.steps[1].command["round"] = 1
    # a valid record refused
    log = variant("valid-refused", 1, "refused (invalid_input), but the command is well-formed")
    log.steps[1].result = "invalid_input"
    log.steps[1].state = copy.deepcopy(log.steps[0].state)
    log.steps[1].events = []
    # a refusal that changes the state
    log = variant("refusal-changes-state", 1, "so the state must not change")
    log.steps[1].command["kind"] = "rudeness"
    log.steps[1].result = "invalid_input"
    log.steps[1].events = []
    # a malformed command accepted
    log = variant("malformed-accepted", 3, "the command is malformed")
    log.steps[3].command["kind"] = "rudeness"
    # an agent missing from the state
    log = variant("agent-missing", 4, "ana.has a record: spec true, log false")
    log.steps[4].state["agents"] = {}
    # a state that is not a sanctions state
    log = variant("not-a-state", 5, "is not a sanctions state")
    log.steps[5].state["agents"]["ana"]["rank"] = "one"
    return out, want


def test_broken_logs_are_rejected_at_the_right_step(tmp_path: Path) -> None:
    logs, want = _broken(tmp_path)
    verdicts = st.validate_logs(logs)
    for log, (step, part), v in zip(logs, want, verdicts, strict=True):
        assert v.status == "rejected", f"{log.name}: {v.message}"
        assert v.failure is not None and v.failure.step == step, f"{log.name}: {v.message}"
        assert part in v.message, f"{log.name}: {v.message}"
        assert f"step {step + 1} of {len(log.steps)}" in st.format_verdict(v)


def test_cli_reports_accepted_and_rejected(tmp_path: Path) -> None:
    log = _driver_log(tmp_path, "sanctions/tick/suspension-ends.json")
    result = CliRunner().invoke(main, ["validate-trace", str(log)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"ACCEPTED {log}: all 12 steps are a behaviour of spec/")
    lines = _lines(log)
    lines[4]["state"]["agents"]["ana"]["window_count"] += 1  # step 4: not a whole violation
    bad = _write(tmp_path / "bad.jsonl", lines)
    result = CliRunner().invoke(main, ["validate-trace", str(bad)])
    assert result.exit_code == 1, result.output
    assert "REJECTED" in result.stdout and "step 4 of 12 (line 5)" in result.stdout
    assert "ana.window_count: spec" in result.stdout
    result = CliRunner().invoke(main, ["validate-trace", "--json", str(bad)])
    report = json.loads(result.stdout)
    assert report["spec"] == "spec/Sanctions.tla" and report["failure"]["step"] == 3


# --- unusable input ------------------------------------------------------------------------------


def _header(**kw: Any) -> dict[str, Any]:
    return {"format": TRACE_FORMAT, "layer": "sanctions", "params": {}, "setup": {}, **kw}


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([_header(), "not json"], "not JSON"),
        ([_header(), {"command": {"op": "tick"}}], "a step needs"),
        ([_header(params={"urgent_penalty": 2.5})], "urgent_penalty = 2.5 is not a whole"),
        ([_header(params={"sigma1": 9})], "bad params"),
        ([_header(setup={"agents": []})], "unknown key(s) agents"),
        ([_header(setup={"unrepaired": "bob"})], "unrepaired must be a list"),
        ([_header(params={"sanction_window": 65})], "at most 64 rounds"),
        (
            [_header(), {"command": {"op": "tick", "round": 10**6}, "result": "ok", "state": {}}],
            "more than 100000 rounds",
        ),
    ],
)
def test_unusable_input_exits_2(tmp_path: Path, lines: list[Any], message: str) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    (verdict,) = st.validate_paths([path])
    assert isinstance(verdict, Verdict)
    assert verdict.status == "unusable" and verdict.exit_code == 2
    assert message in verdict.message
    result = CliRunner().invoke(main, ["validate-trace", str(path)])
    assert result.exit_code == 2 and "UNUSABLE" in result.stdout


def test_lifecycle_header_is_not_a_sanctions_log(tmp_path: Path) -> None:
    path = _write(tmp_path / "log.jsonl", [{**_header(), "layer": "lifecycle"}])
    with pytest.raises(st.UnusableLog, match="this validator checks sanctions logs"):
        st.read_log(path)
