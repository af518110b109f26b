"""``ostrom simulate --node-setup`` then ``--target``: the evaluation model played against a
real ``ostrom serve`` process over loopback, every observation checked against the shadow
community (simulation/target.py); a node started with other parameters is caught at once.  The
same run against a 4-replica cluster started with the same files (``ostrom cluster up
--founders --params``), and, ``slow``, with a backup killed -9 and restarted mid-run.

The smoke size here (20 agents, 12 rounds: about 150 signed commands) runs in make test;
the comparison itself is tested in-process by test_simulation_remote.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
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
        run += ["--target", url, "--node-setup", "s", "--quiet"]
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
            "--node-setup",
            "s",
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
        ["--target", "http://127.0.0.1:9", "--node-setup", "x"],  # x has no run key
        ["--target", "http://127.0.0.1:9"],  # no setup: no keys to sign with
    ):
        r = ostrom("simulate", *args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("error: ") and "Traceback" not in r.stderr
    assert not (tmp_path / "x").exists()


def test_an_unreachable_target_is_a_clear_error(tmp_path: Path) -> None:
    _setup(tmp_path)
    r = ostrom(
        "simulate",
        "--config",
        "smoke.toml",
        "--seed-start",
        "2",
        "--target",
        "http://127.0.0.1:9",
        "--node-setup",
        "s",
        "--quiet",
        cwd=tmp_path,
    )
    assert r.returncode == 1 and "unreachable" in r.stderr and "Traceback" not in r.stderr


def test_the_runs_keys_are_not_the_seeds(tmp_path: Path) -> None:
    """docs/security.md, keys: the founders of a node setup sign with keys derived from a
    fresh secret (run.key, mode 600), not from the small, public seed alone: two setups of
    one seed have other founders, the keys the seed alone gives (how they were made
    before) are in neither, and a setup is never overwritten."""
    from ostrom.consensus.crypto import derive_key
    from ostrom.service.identity import public_hex

    (tmp_path / "smoke.toml").write_text(SMOKE)
    for d in ("a", "b"):
        r = ostrom(
            "simulate",
            "--config",
            "smoke.toml",
            "--seed-start",
            "2",
            "--node-setup",
            d,
            cwd=tmp_path,
        )
        assert r.returncode == 0, r.stderr
        assert (tmp_path / d / "run.key").stat().st_mode & 0o077 == 0
    a, b = ((tmp_path / d / "founders.toml").read_text() for d in ("a", "b"))
    keys = [set(re.findall(r'public_key = "([0-9a-f]{64})"', t)) for t in (a, b)]
    assert keys[0] and keys[1] and not keys[0] & keys[1]
    ids = [*re.findall(r'(?m)^id = "([^"]+)"', a), "sim-operator"]
    from_seed = {public_hex(derive_key(b"ostrom-simulate-target/1|2", i)) for i in ids}
    assert len(from_seed) == len(keys[0]) and not from_seed & (keys[0] | keys[1])
    again = ostrom(
        "simulate", "--config", "smoke.toml", "--seed-start", "2", "--node-setup", "a", cwd=tmp_path
    )
    assert again.returncode == 2 and "File exists" in again.stderr
    assert (tmp_path / "a" / "founders.toml").read_text() == a


# --- the same run against a cluster ------------------------------------------------------


def _setup(tmp_path: Path) -> None:
    (tmp_path / "smoke.toml").write_text(SMOKE)
    r = ostrom(
        "simulate", "--config", "smoke.toml", "--seed-start", "2", "--node-setup", "s", cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr


def _digests(tmp_path: Path) -> dict[str, tuple[int, str]]:
    st = ostrom("cluster", "status", "--dir", "c", "--json", cwd=tmp_path)
    assert st.returncode == 0, st.stderr
    return {
        i: (s["last_executed"], s["app_digest"])
        for i, s in json.loads(st.stdout)["replicas"].items()
    }


def test_a_run_against_a_cluster_matches_the_shadow(tmp_path: Path) -> None:
    """The node's files run unchanged on a cluster of 4, and the front answers every
    command as the node does: the run matches; the same run again is answered as
    retries (app.Retries) and changes no replica's state; the stores pass the audit."""
    _setup(tmp_path)
    up = ostrom(
        *("cluster", "up", "--dir", "c", "--seed", "1", "--synchronous", "OFF"),
        *("--founders", "s/founders.toml", "--params", "s/params.toml"),
        cwd=tmp_path,
    )
    try:
        assert up.returncode == 0, up.stderr + up.stdout
        url = up.stdout.strip().rsplit(" ", 1)[-1]
        run = ["simulate", "--config", "smoke.toml", "--seed-start", "2", "--target", url]
        run += ["--node-setup", "s"]
        r = ostrom(*run, "--quiet", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "every observation matched" in r.stdout
        before = _digests(tmp_path)
        again = ostrom(*run, "--quiet", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        after = _digests(tmp_path)
        # every retry was ordered (one more request each), none changed the state
        assert {d for _, d in after.values()} == {d for _, d in before.values()}
        assert len({d for _, d in after.values()}) == 1
        audit = ostrom("cluster", "status", "--dir", "c", "--audit", "--json", cwd=tmp_path)
        assert audit.returncode == 0, audit.stdout
        assert json.loads(audit.stdout)["audit"]["checks"] == [
            "BFT-SAFE-1",
            "acknowledged",
            "REPL-1",
        ]
    finally:
        ostrom("cluster", "down", "--dir", "c", cwd=tmp_path)


@pytest.mark.slow
def test_a_run_against_a_cluster_survives_a_backup_killed_mid_run(tmp_path: Path) -> None:
    """kill -9 of a backup while the run is in flight, then its restart: the run still
    matches the shadow (f = 1: the other three go on), and the restarted replica catches
    up to the same state (audited on the durable stores)."""
    from cluster_world import converge
    from ostrom.cluster.audit import audit
    from ostrom.cluster.supervisor import Cluster, create

    _setup(tmp_path)
    s = tmp_path / "s"
    create(
        tmp_path / "c",
        n=4,
        seed=1,
        synchronous="NORMAL",
        base_timeout_ms=800,
        founders_file=s / "founders.toml",
        params_file=s / "params.toml",
    )
    c = Cluster(tmp_path / "c")
    sim: subprocess.Popen[str] | None = None
    try:
        c.start(timeout=60)
        cmd = [sys.executable, "-m", "ostrom", "simulate", "--config", "smoke.toml"]
        cmd += ["--seed-start", "2", "--target", c.url, "--node-setup", "s", "--quiet"]
        sim = subprocess.Popen(
            cmd, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # a third of the run acknowledged
            st = httpx.get(c.url + "/status", timeout=5).json()
            if st["stats"].get("acknowledged", 0) >= 50:
                break
            time.sleep(0.05)
        c.kill("r2")  # view 0: r0 is the primary, r2 a backup
        time.sleep(1.0)
        c.restart_replica(2)
        out, err = sim.communicate(timeout=240)
        assert sim.returncode == 0, err
        assert "every observation matched" in out
        acked = httpx.get(c.url + "/status", timeout=5).json()["stats"]["acknowledged"]
        live = converge(c, [0, 1, 2, 3], acked)
        c.stop()
        report = audit(c.cfg, [0, 1, 2, 3], live=live)
        assert {r["state_digest"] for r in report["replicas"].values()} == {
            d for _, d in live.values()
        }
    finally:
        if sim is not None and sim.poll() is None:
            sim.kill()
            sim.wait(10)
        c.stop()
