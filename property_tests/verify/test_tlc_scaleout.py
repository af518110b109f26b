"""``ostrom check --distributed`` and ``--simulate`` against the real TLC (docs/checking.md,
"Scale-out: TLC's distributed mode and simulation").

The distributed runs use loopback workers on a copy of the tree's specs and models, with a
manifest of a few of the real entries: ``sanctions-ci`` must give the verdict and the
distinct and total state counts recorded for the single-machine run, with two workers; the
mutant ``sanctions-mutant-expire-late`` must be reported violating ``WindowInv`` (which
TLC 2.15's distributed server does not name: ostrom replays the step), with its step saved
as ITF; a model whose expected violation is temporal is ``not checked`` (the server skips
temporal properties).  Every run is bounded in time (a run that hangs fails the test, and
is stopped), and no JVM it started may be left afterwards, also after Ctrl-C or when a
worker cannot start.  A simulation gives a ``simulated`` row, catches a mutant with a
counterexample, and repeats itself for a seed.  Bad option combinations are one line and
exit 2 without Java (those tests are not marked ``tlc``: conftest fails them if TLC starts).

The four tests of the loopback run share about 40 seconds of TLC that re-prove TLC's own
distributed mode on models ``make test`` checks anyway, and only the deep runs use the mode:
they are ``slow`` (``make test-slow``); the worker's command line, Ctrl-C and a worker that
does not start stay in ``make test``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from foreground import popen_foreground
from ostrom.cli.main import main
from ostrom.verify.tlc import distributed
from ostrom.verify.tlc.distcheck import PREV, STEP_WITNESS, _witness_run
from ostrom.verify.tlc.jar import find_jar
from ostrom.verify.tlc.manifest import cfg_text, load_manifest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parents[1] / "fixtures" / "tla"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "reference")}
RUN_LIMIT = 150.0  # seconds: far above what these runs take; a hang fails instead of hanging
RECORDED = {m["name"]: m for m in json.loads((ROOT / "models/manifest.json").read_text())["models"]}
MODELS = ("sanctions-ci", "sanctions-mutant-expire-late", "sanctions-mutant-never-release")
#: the witnesses of sanctions-ci the distributed test runs: step witnesses, the harder kind (the
#: run checks a generated action property), and NeverProbationEndsStep's step only returns to
#: states seen before, which TLC 2.15's workers never check without ``ostromPrev``; all 19
#: witnesses would take a minute
WITNESSES = ["NeverStrategicWarnsStep", "NeverProbationEndsStep"]
#: the fixture's deadlocking counter, for the one-state report of the distributed server
DEADLOCK = next(
    m
    for m in json.loads((FIXTURE / "models/manifest.json").read_text())["models"]
    if m["name"] == "counter-deadlock"
)


def _tree(dest: Path) -> Path:
    """The tree's specs and models with a manifest of ``MODELS`` (sanctions-ci's witnesses
    cut to ``WITNESSES``) and the fixture's ``counter-deadlock``."""
    root = dest / "repo"
    for sub, patterns in (("spec", ("*.tla",)), ("models", ("*.tla", "*.cfg"))):
        (root / sub).mkdir(parents=True)
        for pattern in patterns:
            for f in (ROOT / sub).glob(pattern):
                shutil.copyfile(f, root / sub / f.name)
    shutil.copyfile(FIXTURE / "spec" / "Counter.tla", root / "spec" / "Counter.tla")
    shutil.copyfile(FIXTURE / DEADLOCK["config"], root / DEADLOCK["config"])
    entries = [dict(RECORDED[name]) for name in MODELS]
    entries[0]["witnesses"] = WITNESSES
    entries.append({**DEADLOCK, "deep": False})
    (root / "models" / "manifest.json").write_text(json.dumps({"models": entries}))
    return root


def _javas(under: Path) -> list[str]:
    """The command lines of live JVMs started for runs under ``under``."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "java" in cmd and str(under) in cmd:
            found.append(cmd)
    return found


def _ostrom(*args: str, limit: float = RUN_LIMIT) -> subprocess.CompletedProcess[str]:
    """``ostrom ARGS`` in a process of its own, failed (and stopped: SIGTERM makes it stop
    its JVMs) if it takes longer than ``limit`` seconds."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ostrom", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        pytest.fail(f"ostrom {' '.join(args)} ran for more than {limit:g} s:\n{err[-3000:]}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _check(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    manifest = root / "models" / "manifest.json"
    return _ostrom("check", "--manifest", str(manifest), "--root", str(root), *args)


def _rows(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in json.loads(result.stdout)["models"]}


# ---------------------------------------------------------------------------------------------
# distributed mode
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loopback(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str], float]:
    """The three models (and two witnesses) on a server with two local workers, once."""
    root = _tree(tmp_path_factory.mktemp("distributed"))
    started = time.monotonic()
    result = _check(root, "--distributed", "2", "--json", "--out", str(root / "cex"))
    return root, result, time.monotonic() - started


@pytest.mark.tlc
@pytest.mark.slow  # the loopback run: make test-slow
def test_two_workers_give_the_single_machine_counts(
    loopback: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    root, result, seconds = loopback
    doc = json.loads(result.stdout)
    assert doc["mode"] == "distributed" and doc["workers"] == 2
    row = _rows(result)["sanctions-ci"]
    recorded = RECORDED["sanctions-ci"]
    assert (row["got"], row["ok"]) == ("pass", True), row
    assert row["distinct_states"] == recorded["distinct_states"] == 7189
    assert row["total_states"] == recorded["total_states"] == 18650
    # TLC 2.15's distributed server skips temporal properties: the row says which
    assert "not checked: QuarantineEndsProp" in row["message"]
    assert not _javas(root), "a JVM outlived ostrom check --distributed"
    assert seconds < RUN_LIMIT


@pytest.mark.tlc
@pytest.mark.slow  # the loopback run: make test-slow
def test_witnesses_get_distributed_runs_of_their_own(
    loopback: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    rows = _rows(loopback[1])
    for witness in WITNESSES:
        row = rows[f"sanctions-ci/{witness}"]
        assert (row["expected"], row["got"], row["ok"]) == (witness, witness, True), row


@pytest.mark.tlc
@pytest.mark.slow  # the loopback run: make test-slow
def test_a_mutant_is_reported_as_in_the_normal_mode(
    loopback: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    result = loopback[1]
    rows = _rows(result)
    row = rows["sanctions-mutant-expire-late"]
    assert (row["expected"], row["got"], row["ok"]) == ("WindowInv", "WindowInv", True), row
    trace = json.loads(Path(row["counterexample"]).read_text())
    assert trace["#meta"]["mode"] == "distributed" and trace["#meta"]["outcome"] == "WindowInv"
    assert len(trace["states"]) == 2  # the violating step: the server prints no more
    explained = CliRunner().invoke(main, ["explain", row["counterexample"]])
    assert explained.exit_code == 0 and "TickAny" in explained.stdout, explained.output
    # a temporal expectation cannot be checked there, and is not run
    live = rows["sanctions-mutant-never-release"]
    assert (live["got"], live["ok"]) == ("not checked", False)
    assert "temporal property" in live["message"]
    assert result.returncode == 1, result.stderr  # that row is not what the manifest expects
    assert "Traceback" not in result.stderr


@pytest.mark.tlc
@pytest.mark.slow  # the loopback run: make test-slow
def test_a_deadlock_is_named_from_the_state_the_server_printed(
    loopback: tuple[Path, subprocess.CompletedProcess[str], float],
) -> None:
    row = _rows(loopback[1])["counter-deadlock"]
    assert (row["expected"], row["got"], row["ok"]) == ("deadlock", "deadlock", True), row
    trace = json.loads(Path(row["counterexample"]).read_text())
    assert len(trace["states"]) == 1  # the deadlocked state: the server prints no more


@pytest.mark.tlc
def test_a_remote_worker_runs_the_printed_command(tmp_path: Path) -> None:
    """--distributed 0: the server only; the command it prints, run as printed (with the
    worker's address and the jar filled in), is a worker that completes the run."""
    root = _tree(tmp_path)
    manifest = root / "models" / "manifest.json"
    cmd = [sys.executable, "-m", "ostrom", "check", "--manifest", str(manifest), "--root",
           str(root), "--model", "sanctions-mutant-expire-late", "--distributed", "0",
           "--timeout", "100", "--json", "--out", str(tmp_path / "cex")]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    worker = None
    try:
        assert proc.stderr is not None
        line = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and "while java" not in line:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
        m = re.match(r"\s*while (java .*); do sleep 1; done", line)
        assert m, f"no worker command printed: {line!r}"
        jar = find_jar()
        words = m.group(1).replace("WORKER_ADDRESS", "127.0.0.1").split()
        words = [str(jar) if w == jar.name else w for w in words]
        words.insert(1, f"-Djava.io.tmpdir={tmp_path}")  # where it unpacks the spec it fetches
        worker = subprocess.run(words, capture_output=True, text=True, timeout=60)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
    assert worker is not None and "Computed:" in worker.stdout, worker
    row = json.loads(out)["models"][0]
    assert (row["got"], row["ok"], proc.returncode) == ("WindowInv", True, 0), err
    assert not _javas(root)


@pytest.mark.tlc
def test_ctrl_c_stops_server_and_workers(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    manifest = root / "models" / "manifest.json"
    cmd = [sys.executable, "-m", "ostrom", "check", "--manifest", str(manifest), "--root",
           str(root), "--model", "sanctions-ci", "--distributed", "2"]  # fmt: skip
    proc = popen_foreground(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if sum("TLCWorker" in c for c in _javas(root)) == 2:
                break
            time.sleep(0.1)
        assert sum("TLCWorker" in c for c in _javas(root)) == 2, "the workers did not start"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and b"Traceback" not in err, err
    time.sleep(0.3)
    assert not _javas(root), "a JVM outlived the interrupted check"


@pytest.mark.tlc
def test_a_worker_that_does_not_start_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> list[str]:
        return [sys.executable, "-c", "print('Error: no route to the server')"]

    monkeypatch.setattr(distributed, "worker_command", broken)
    root = _tree(tmp_path)
    manifest = root / "models" / "manifest.json"
    r = CliRunner().invoke(main, ["check", "--manifest", str(manifest), "--root", str(root),
                                  "--model", "sanctions-mutant-expire-late", "--distributed",
                                  "1"])  # fmt: skip
    assert r.exit_code == 3, r.output
    # one line (the blank line before it is the progress display's, on stderr)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == ["error: TLC worker 1 did not start: Error: no route to the server"]
    assert not _javas(root), "the server outlived its failed worker"


# ---------------------------------------------------------------------------------------------
# simulation
# ---------------------------------------------------------------------------------------------


@pytest.mark.tlc
def test_simulation_reports_simulated_and_catches_a_mutant(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    args = ("--simulate", "--traces", "100", "--depth", "30", "--seed", "7", "--json",
            "--model", "sanctions-ci", "--model", "sanctions-mutant-expire-late")  # fmt: skip
    first = _check(root, *args, "--out", str(tmp_path / "a"))
    second = _check(root, *args, "--out", str(tmp_path / "b"))
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert doc["mode"] == "simulate"
    rows = _rows(first)
    sim = rows["sanctions-ci"]
    assert (sim["got"], sim["ok"], sim["traces"]) == ("simulated", True, 100), sim
    assert sim["states_generated"] > 100 and sim["distinct_states"] is None
    caught = rows["sanctions-mutant-expire-late"]
    assert (caught["got"], caught["ok"]) == ("WindowInv", True), caught
    trace = json.loads(Path(caught["counterexample"]).read_text())
    assert trace["#meta"]["mode"] == "simulate" and trace["states"]
    # the same seed gives the same behaviours: the same row, the same counterexample (the
    # states generated of a run stopped by a violation vary: TLC's worker goes on a little
    # until it is stopped)
    again = _rows(second)
    assert {**again["sanctions-ci"], "seconds": 0} == {**sim, "seconds": 0}
    assert again["sanctions-mutant-expire-late"]["got"] == "WindowInv"
    other = json.loads(Path(again["sanctions-mutant-expire-late"]["counterexample"]).read_text())
    assert other["states"] == trace["states"]
    assert not _javas(root)


@pytest.mark.tlc
def test_a_mutant_no_behaviour_caught_fails(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    r = _check(root, "--model", "sanctions-mutant-expire-late", "--simulate", "--traces", "1",
               "--depth", "1", "--json", "--out", str(tmp_path / "cex"))  # fmt: skip
    row = _rows(r)["sanctions-mutant-expire-late"]
    assert (row["got"], row["ok"], r.returncode) == ("simulated", False, 1), r.stderr
    assert "not caught" in row["message"] and "proves nothing" in row["message"]


# ---------------------------------------------------------------------------------------------
# options: refused before Java starts (no `tlc` marker: conftest fails a test that starts TLC)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--distributed", "2", "--simulate"], "--distributed and --simulate do not combine"),
        (["--simulate", "--record"], "--record does not combine with --simulate"),
        (["--distributed", "2", "--record"], "--record does not combine with --distributed"),
        (["--distributed", "1", "--witness-traces"], "--witness-traces does not combine"),
        (["--simulate", "--jobs", "2"], "--jobs does not combine with --simulate"),
        (["--simulate", "--workers", "2"], "--workers does not combine with --simulate"),
        (["--distributed", "-1"], "--distributed takes a whole number in [0, 64], got -1"),
        (["--distributed", "65"], "--distributed takes a whole number in [0, 64], got 65"),
        (["--distributed", "100000"], "--distributed takes a whole number in [0, 64]"),
        (["--simulate", "--traces", "0"], "--traces takes a whole number in [1, "),
        (["--simulate", "--depth", "0"], "--depth takes a whole number in [1, "),
        (["--simulate", "--seed", str(2**63)], "--seed takes a whole number in"),
        (["--traces", "5"], "--traces is an option of --simulate"),
        (["--seed", "5"], "--seed is an option of --simulate"),
        (["--distributed-host", "h"], "--distributed-host is an option of --distributed"),
        (["--distributed", "1", "--distributed-port", "80"], "--distributed-port takes"),
        (["--distributed", "0", "--distributed-host", ""], "--distributed-host takes a host"),
        (["--distributed", "2", "--jobs", "2"], "--jobs does not combine with --distributed"),
        (["--distributed", "2", "--workers", "1"], "--workers does not combine"),
    ],
)
def test_bad_combinations_are_one_line(args: list[str], message: str) -> None:
    manifest = FIXTURE / "models" / "manifest.json"
    r = CliRunner().invoke(main, ["check", "--manifest", str(manifest), *args])
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    assert message in r.stderr, r.stderr


def test_help_explains_both_modes() -> None:
    r = CliRunner().invoke(main, ["check", "--help"])
    text = " ".join(r.output.split())
    for words in ("--distributed N", "--distributed-host HOST", "--simulate", "--traces N",
                  "--depth D", "--seed S", "temporal properties", "proves nothing",
                  "'simulated', not 'pass'", "Witnesses are not checked"):  # fmt: skip
        assert words in text, words


def test_a_step_witness_run_carries_the_state_before_the_step() -> None:
    """The generated module of a step witness: the model's Init and Next found through its
    SPECIFICATION, and ``ostromPrev`` set to the state before each step (to the view under
    a VIEW), so that every step of the model is a new state of the run."""
    manifest = load_manifest(ROOT / "models/manifest.json")
    entry = next(e for e in manifest.models if e.name == "sanctions-ci")
    base = cfg_text(manifest, entry, ROOT)
    module, cfg, extra = _witness_run(ROOT, entry, base, "NeverProbationEndsStep")
    assert extra is not None and module in extra
    text = extra[module]
    assert f"OstromInit == Init /\\ {PREV} = <<>>" in text
    assert f"OstromNext == Next /\\ {PREV}' = <<" in text
    assert f"{STEP_WITNESS} == [][NeverProbationEndsStep]_<<" in text
    assert "SPECIFICATION" not in cfg and "INVARIANT" not in cfg
    assert "INIT\n    OstromInit" in cfg or "INIT OstromInit" in cfg, cfg
