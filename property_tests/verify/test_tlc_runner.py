"""End-to-end tests of ``ostrom check`` / ``ostrom explain`` on tiny specs, with the real TLC.

The fixture repository (``fixtures/tla``: ``spec/``, ``models/``, ``models/manifest.json``) has one
model per outcome TLC can report, so every classification, the witness mechanism, the count
comparison and the ITF output are exercised against TLC itself, not against canned text.
Each TLC run costs about a second (JVM start); the full-manifest run is shared by the module.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ostrom.cli.main import main
from ostrom.verify.tlc.jar import TlcSetupError, find_java
from ostrom.verify.tlc.runner import run_model, run_tlc

pytestmark = pytest.mark.tlc  # one worker holds the module's fixture

FIXTURE = Path(__file__).parents[1] / "fixtures" / "tla"
ACTIONS = {"Initial predicate", "Inc", "Bump", "Reset"}


def _copy_fixture(dest: Path) -> Path:
    root = dest / "repo"
    shutil.copytree(FIXTURE, root)
    return root


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def full_check(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result, dict[str, Any]]:
    """Every model of the fixture manifest, deep ones included, run once for the module."""
    root = _copy_fixture(tmp_path_factory.mktemp("full"))
    result = _invoke(
        "check",
        "--deep",
        "--json",
        "--manifest",
        str(root / "models" / "manifest.json"),
        "--out",
        str(root / "cex"),
    )
    return root, result, json.loads(result.stdout)


def test_every_outcome_is_classified(full_check: tuple[Path, Result, dict[str, Any]]) -> None:
    _, result, data = full_check
    got = {row["name"]: (row["expected"], row["got"], row["ok"]) for row in data["models"]}
    assert got == {
        "counter-pass": ("pass", "pass", True),
        "counter-pass/NeverMax": ("NeverMax", "NeverMax", True),
        "counter-pass/NeverBumped": ("NeverBumped", "NeverBumped", True),
        "counter-inv": ("Small", "Small", True),
        "counter-live": ("StaysMax", "StaysMax", True),
        "counter-deadlock": ("deadlock", "deadlock", True),
        "counter-derived": ("Small", "Small", True),
    }
    assert result.exit_code == 0, result.output
    row = data["models"][0]
    assert set(row) >= {
        "name",
        "expected",
        "got",
        "ok",
        "distinct_states",
        "total_states",
        "depth",
        "seconds",
        "counterexample",
    }
    assert (row["distinct_states"], row["total_states"], row["depth"]) == (20, 41, 7)
    assert row["counterexample"] is None


def _itf(root: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "cex" / f"{name}.itf.json").read_text())
    return data


@pytest.fixture(scope="module")
def traced_check(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    """counter-pass with --witness-traces: each witness in its own run, with its trace."""
    root = _copy_fixture(tmp_path_factory.mktemp("traced"))
    manifest = str(root / "models" / "manifest.json")
    args = ["check", "--witness-traces", "--model", "counter-pass", "--json"]
    return root, _invoke(*args, "--manifest", manifest, "--out", str(root / "cex"))


@pytest.mark.parametrize(
    "name",
    ["counter-inv", "counter-live", "counter-deadlock", "counter-pass--NeverMax"],
)
def test_counterexamples_are_valid_itf(
    full_check: tuple[Path, Result, dict[str, Any]],
    traced_check: tuple[Path, Result],
    name: str,
) -> None:
    root = traced_check[0] if "--" in name else full_check[0]
    data = _itf(root, name)
    states = data["states"]
    assert data["vars"] == ["rec", "f", "x"]
    assert [s["#meta"]["index"] for s in states] == list(range(len(states)))
    assert states[0]["#meta"]["action"] == "Initial predicate"
    for state in states:
        assert state["#meta"]["action"] in ACTIONS
        assert set(state) == {"#meta", "rec", "f", "x"}
    for state in states[1:]:
        assert state["#meta"]["location"].endswith("of module Counter")
    assert states[0]["rec"] == {"a": 0, "b": 'q"s\\', "c": {"#set": []}, "d": []}
    assert states[0]["f"] == {
        "#map": [[{"#unserializable": "p1"}, 0], [{"#unserializable": "p2"}, 0]]
    }


def test_derived_model_runs_its_generated_cfg(
    full_check: tuple[Path, Result, dict[str, Any]],
) -> None:
    """counter-derived is counter-pass with Max 3 and Small <- MutSmall (x < 3): TLC ran the
    cfg generated from the base's, and the trace says where it came from."""
    root, _, _ = full_check
    data = _itf(root, "counter-derived")
    assert data["#meta"]["config"] == "models/manifest.json#counter-derived"
    assert data["states"][-1]["x"] == 3
    shown = _invoke(
        "check",
        "--print-cfg",
        "--model",
        "counter-derived",
        "--manifest",
        str(root / "models" / "manifest.json"),
    )
    assert shown.exit_code == 0, shown.output
    assert "Max = 3" in shown.stdout and "Small <- MutSmall" in shown.stdout
    assert "PROPERTY" not in shown.stdout and "SPECIFICATION Spec" in shown.stdout


def test_liveness_trace_is_a_lasso(full_check: tuple[Path, Result, dict[str, Any]]) -> None:
    root, _, _ = full_check
    data = _itf(root, "counter-live")
    loop = data["loop"]
    assert isinstance(loop, int) and 0 <= loop < len(data["states"]) - 1
    assert data["#meta"]["loop_action"] in ACTIONS
    # the loop really closes: taking loop_action from the last state leads back to states[loop]
    last, back = data["states"][-1]["x"], data["states"][loop]["x"]
    assert (last + 1) % 3 == back
    inv = _itf(root, "counter-inv")
    assert "loop" not in inv and inv["states"][-1]["x"] == 2


def test_explain(full_check: tuple[Path, Result, dict[str, Any]]) -> None:
    root, _, _ = full_check
    path = root / "cex" / "counter-live.itf.json"
    result = _invoke("explain", str(path))
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "model: counter-live" in lines[0] and "loops back to state" in lines[0]
    assert any("Inc" in ln and "x: 0 -> 1" in ln and "rec.a: 0 -> 1" in ln for ln in lines)
    assert any("Bump" in ln and "f[p" in ln and "x:" not in ln for ln in lines)
    assert any("rec.c: +{0}" in ln for ln in lines)
    assert sum("⟲" in ln for ln in lines) == 2
    assert "back to state" in lines[-1]
    full = _invoke("explain", "--full", str(path))
    assert 'rec = [a |-> 0, b |-> "q\\"s\\\\", c |-> {}, d |-> <<>>]' in full.stdout


def test_explain_rejects_bad_files(tmp_path: Path) -> None:
    missing = _invoke("explain", str(tmp_path / "nope.itf.json"))
    assert missing.exit_code == 2 and "error: no such file" in missing.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"vars": []}')
    result = _invoke("explain", str(bad))
    assert result.exit_code == 2 and 'not an ITF trace: no "states" list' in result.output
    assert "Traceback" not in result.output


def _runs(root: Path) -> list[str]:
    return sorted(p.name.rsplit("-", 3)[0] for p in (root / ".tlc" / "runs").iterdir())


def test_witnesses_in_one_run_agree_with_one_run_each(
    tmp_path: Path, traced_check: tuple[Path, Result]
) -> None:
    """Batched (witnesses.py) and one run per witness give the same rows, with three
    JVMs instead of six: a passing model's witnesses ride in its own run, a failing
    model's get one run of their own (its run stops at the violation), and a witness
    that holds everywhere (AlwaysTrue) fails in both modes."""
    _, traced = traced_check
    assert traced.exit_code == 0, traced.output
    assert {r["name"] for r in json.loads(traced.stdout)["models"]} == {
        "counter-pass",
        "counter-pass/NeverMax",
        "counter-pass/NeverBumped",
    }
    verdicts = {}
    for mode in ("batched", "traced"):
        root = _copy_fixture(tmp_path / mode)
        manifest = root / "models" / "manifest.json"
        data = json.loads(manifest.read_text())
        data["models"][0]["witnesses"] = ["NeverMax", "AlwaysTrue", "NeverBumped"]
        data["models"][1]["witnesses"] = ["NeverMax"]  # counter-inv: Small is violated
        manifest.write_text(json.dumps(data, indent=2))
        args = ["check", "--manifest", str(manifest), "--json", "--out", str(root / "cex")]
        args += ["--model", "counter-pass", "--model", "counter-inv"]
        result = _invoke(*args, *(["--witness-traces"] if mode == "traced" else []))
        assert result.exit_code == 1, result.output  # AlwaysTrue is never violated
        rows = json.loads(result.stdout)["models"]
        verdicts[mode] = [(r["name"], r["got"], r["ok"]) for r in rows]
        if mode == "batched":
            assert _runs(root) == ["counter-inv", "counter-inv--witnesses", "counter-pass"]
            msg = {r["name"]: r["message"] for r in rows}["counter-pass/AlwaysTrue"]
            assert "AlwaysTrue holds in every reachable state" in msg
        else:
            assert len(_runs(root)) == 6
    assert (
        verdicts["batched"]
        == verdicts["traced"]
        == [
            ("counter-pass", "pass", True),
            ("counter-pass/NeverMax", "NeverMax", True),
            ("counter-pass/AlwaysTrue", "pass", False),
            ("counter-pass/NeverBumped", "NeverBumped", True),
            ("counter-inv", "Small", True),
            ("counter-inv/NeverMax", "NeverMax", True),
        ]
    )


def test_a_run_that_stops_early_leaves_its_witnesses_not_checked(tmp_path: Path) -> None:
    """A passing model whose run fails (here: Small added to its invariants, violated at
    x = 2) did not explore its whole space: a witness not yet reached is not checked, a
    witness reached before the stop is reached."""
    root = _copy_fixture(tmp_path)
    manifest = root / "models" / "manifest.json"
    data = json.loads(manifest.read_text())
    cfg = root / "models" / "MCCounter_pass.cfg"
    cfg.write_text(cfg.read_text().replace("INVARIANT TypeOK", "INVARIANTS TypeOK Small"))
    data["models"][0]["witnesses"] = ["NeverBumped", "NeverMax"]
    manifest.write_text(json.dumps(data, indent=2))
    result = _invoke("check", "--manifest", str(manifest), "--model", "counter-pass", "--json")
    assert result.exit_code == 1, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)["models"]}
    assert rows["counter-pass"]["got"] == "Small"
    assert rows["counter-pass/NeverMax"]["got"] == "not checked"
    assert "whole state space was not explored" in rows["counter-pass/NeverMax"]["message"]
    assert rows["counter-pass/NeverBumped"]["ok"] is True


def test_count_mismatch_failing_witness_and_record(tmp_path: Path) -> None:
    root = _copy_fixture(tmp_path)
    manifest = root / "models" / "manifest.json"
    data = json.loads(manifest.read_text())
    entry = data["models"][0]
    entry["distinct_states"] = 19
    entry["witnesses"] = ["AlwaysTrue"]
    manifest.write_text(json.dumps(data, indent=2))
    args = ["check", "--manifest", str(manifest), "--model", "counter-pass", "--json"]

    result = _invoke(*args)
    assert result.exit_code == 1
    rows = {row["name"]: row for row in json.loads(result.stdout)["models"]}
    assert rows["counter-pass"]["ok"] is False
    assert rows["counter-pass"]["message"] == (
        "state count changed: manifest 19, got 20 — if intended, run "
        "`ostrom check --model counter-pass --record`"
    )
    witness = rows["counter-pass/AlwaysTrue"]
    assert (witness["expected"], witness["got"], witness["ok"]) == ("AlwaysTrue", "pass", False)
    assert "AlwaysTrue holds in every reachable state" in witness["message"]

    recorded = _invoke(*args, "--record")
    assert recorded.exit_code == 1  # the witness still fails; the counts are recorded anyway
    after = json.loads(manifest.read_text())["models"][0]
    assert (after["distinct_states"], after["total_states"], after["depth"]) == (20, 41, 7)
    assert isinstance(after["seconds"], float)
    assert after["description"] == entry["description"]  # other fields survive


def test_python_api_keeps_print_output(tmp_path: Path) -> None:
    root = _copy_fixture(tmp_path)
    progress: list[tuple[str, str]] = []
    run = run_model(root, "counter-pass", on_progress=lambda *a: progress.append(a))
    assert progress and progress[-1][0] == "counter-pass"
    # TLC's own figures, and its rate per minute as states per second
    assert re.fullmatch(
        r"depth 7 · 20 distinct · 41 generated · [\d,]+ states/s · 0 on queue", progress[-1][1]
    ), progress[-1]
    assert run.outcome.got == "pass" and run.exit_code == 0
    assert '<<"x", 0>>' in run.print_lines and '<<"x", 2>>' in run.print_lines
    assert any("STARTMSG 2193" in ln for ln in run.output_lines)
    assert (run.run_dir / "tlc.out").is_file() and not (run.run_dir / "meta").exists()


def test_parse_and_config_errors(tmp_path: Path) -> None:
    root = _copy_fixture(tmp_path)
    broken = run_tlc(root, "Broken", Path("models/MCBroken.cfg"), workers=1)
    assert broken.outcome.kind == "error" and broken.exit_code == 150
    assert broken.outcome.got.startswith("error: ***Parse Error***")
    assert broken.outcome.error_text is not None and "line 5" in broken.outcome.error_text
    cfg = (root / "models" / "MCCounter_pass.cfg").read_text() + "PROPERTY NoSuchProperty\n"
    config = run_tlc(root, "Counter", Path("models/x.cfg"), workers=1, cfg_text=cfg)
    assert config.exit_code == 151
    assert config.outcome.got.startswith("error: The property NoSuchProperty")


def test_unknown_model_is_one_line(tmp_path: Path) -> None:
    manifest = FIXTURE / "models" / "manifest.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ostrom.cli.main",
            "check",
            "--manifest",
            str(manifest),
            "--model",
            "x",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: unknown model 'x'; known: counter-pass, counter-inv, counter-live, "
        "counter-deadlock, counter-derived"
    )


def test_missing_jar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TLA2TOOLS_JAR", "/nonexistent/tla2tools.jar")
    result = _invoke("check", "--manifest", str(FIXTURE / "models" / "manifest.json"))
    assert result.exit_code == 3  # a tool error (docs/cli.md), not bad input
    assert result.output.startswith("error: TLA2TOOLS_JAR is set to /nonexistent/tla2tools.jar")
    assert "Traceback" not in result.output and result.output.count("\n") == 1


def test_missing_java(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(TlcSetupError, match="apt-get install openjdk-17-jre-headless"):
        find_java()
    result = _invoke("check", "--manifest", str(FIXTURE / "models" / "manifest.json"))
    assert result.exit_code == 3 and result.output.startswith("error: java not found")


def test_malformed_manifest_cli(tmp_path: Path) -> None:
    bad = tmp_path / "manifest.json"
    bad.write_text('{"models": [{"name": "a"}]}')
    result = _invoke("check", "--manifest", str(bad), "--root", str(tmp_path))
    assert result.exit_code == 2
    assert (
        result.output == "error: model 'a': 'module' is required and must be a non-empty string\n"
    )


def test_timeout(tmp_path: Path) -> None:
    root = _copy_fixture(tmp_path)
    run = run_tlc(root, "Counter", Path("models/MCCounter_pass.cfg"), workers=1, timeout=0.05)
    assert run.timed_out and run.outcome.got == "error: timed out after 0.05 s"
