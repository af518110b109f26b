"""``ostrom simulate --node-setup`` then ``--target``: the evaluation model played against a
real ``ostrom serve`` process over loopback, every observation checked against the shadow
community (cli/target.py); a node started with other parameters is caught at once.

The smoke size here (20 agents, 12 rounds: about 150 signed commands) runs in make test;
the comparison itself is tested in-process by test_simulation_remote.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from click.testing import CliRunner

from ostrom import layout
from ostrom.cli.main import main

SMOKE = "agents = 20\nrounds = 12\nartifacts = 24\nfeedback_noise = 0.0\n"
ENV = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def ostrom(*args: str, cwd: Path) -> Ran:
    """The CLI in this process (only the node is a separate process here)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        r = CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    return Ran(r.exit_code, r.stdout, r.stderr)


@contextmanager
def serving(cwd: Path, *args: str) -> Iterator[str]:
    """``ostrom serve`` on an ephemeral loopback port; its URL; stopped on exit."""
    cmd = [sys.executable, "-m", "ostrom", "serve", "--port", "0", "--fsync", "off", *args]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=ENV, cwd=cwd)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the startup line; the finally bounds a hang
        m = re.search(r"(http://\S+)", line)
        assert m, line
        yield m.group(1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_a_run_against_a_live_node_matches_the_shadow(tmp_path: Path) -> None:
    (tmp_path / "smoke.toml").write_text(SMOKE)
    r = ostrom(
        "simulate", "--config", "smoke.toml", "--seed-start", "2", "--node-setup", "s", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    setup = ["--founders", "s/founders.toml", "--params", "s/params.toml", "--db", "s/node.db"]
    with serving(tmp_path, *setup) as url:
        run = ["simulate", "--config", "smoke.toml", "--seed-start", "2"]
        run += ["--target", url, "--quiet"]
        r = ostrom(*run, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "every observation matched" in r.stdout
        # The same run again: every envelope is byte-identical (keys from the seed, seqs
        # from 1, deterministic Ed25519), so the node answers each from its log as a retry
        # and applies nothing; the answers still match the shadow.
        before = httpx.get(url + "/health", timeout=10).json()["last_pos"]
        again = ostrom(*run, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert httpx.get(url + "/health", timeout=10).json()["last_pos"] == before > 100


def test_a_node_with_other_parameters_is_caught(tmp_path: Path) -> None:
    (tmp_path / "smoke.toml").write_text(SMOKE)
    assert (
        ostrom(
            "simulate",
            "--config",
            "smoke.toml",
            "--seed-start",
            "2",
            "--node-setup",
            "s",
            cwd=tmp_path,
        ).returncode
        == 0
    )
    params = (tmp_path / "s" / "params.toml").read_text()
    (tmp_path / "s" / "params.toml").write_text(re.sub(r"(?m)^seed = \d+", "seed = 99", params))
    setup = ["--founders", "s/founders.toml", "--params", "s/params.toml", "--db", "s/node.db"]
    with serving(tmp_path, *setup) as url:
        r = ostrom(
            "simulate",
            "--config",
            "smoke.toml",
            "--seed-start",
            "2",
            "--target",
            url,
            "--quiet",
            cwd=tmp_path,
        )
    assert r.returncode == 1
    assert "the node answered" in r.stderr and "Traceback" not in r.stderr


def test_what_a_node_cannot_run_is_refused_before_any_command(tmp_path: Path) -> None:
    (tmp_path / "noisy.toml").write_text("agents = 20\nrounds = 5\nartifacts = 10\n")
    for args in (
        ["--config", "noisy.toml", "--target", "http://127.0.0.1:9"],  # feedback noise 0.15
        ["--ablation", "no_sanctions", "--target", "http://127.0.0.1:9"],
        ["--seeds", "3", "--target", "http://127.0.0.1:9"],
        ["--target", "http://127.0.0.1:9", "--node-setup", "x"],
    ):
        r = ostrom("simulate", *args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists()


def test_an_unreachable_target_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "smoke.toml").write_text(SMOKE)
    r = ostrom(
        "simulate",
        "--config",
        "smoke.toml",
        "--target",
        "http://127.0.0.1:9",
        "--quiet",
        cwd=tmp_path,
    )
    assert r.returncode == 1 and "unreachable" in r.stderr and "Traceback" not in r.stderr
