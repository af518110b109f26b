"""Keys and processes of a cluster directory under a careless operator or a local attacker
(docs/security.md, keys), against the real ``ostrom`` command.

* ``cluster up`` on a directory that holds a cluster (after ``cluster down``) used to
  rewrite every key, the founders' private keys included, beside the old databases; it
  is refused now, and ``--reuse`` starts the cluster that is there, keys unchanged;
* ``cluster down`` used to signal whatever pids ``pids.json`` named; it signals only a
  process it started (start time and command line), so a pids.json naming another
  process, or one that reused a pid, leaves it alone;
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner, Result

from ostrom.cli.main import main
from ostrom.cluster.supervisor import create


def ostrom(*args: str) -> Result:
    """The command in this process (its cluster processes are real, detached ones)."""
    return CliRunner().invoke(main, list(args))


def files(directory: Path) -> dict[str, bytes]:
    """Every key, the ring, the founders file and the configuration, by name."""
    out = {p.name: p.read_bytes() for p in (directory / "keys").iterdir()}
    for name in ("founders.toml", "cluster.toml"):
        out[name] = (directory / name).read_bytes()
    return out


@pytest.mark.system
def test_up_never_rewrites_a_cluster_and_reuse_restarts_it(tmp_path: Path) -> None:
    d = tmp_path / "c"
    first = ostrom("cluster", "up", "--dir", str(d), "--synchronous", "OFF")
    try:
        assert first.exit_code == 0, first.output
        url = first.output.strip().rsplit(" ", 1)[-1]
        assert httpx.get(url + "/status", timeout=10).status_code == 200
    finally:
        assert ostrom("cluster", "down", "--dir", str(d)).exit_code == 0
    before = files(d)
    assert any(p.name.endswith(".sqlite3") for p in d.iterdir())
    again = ostrom("cluster", "up", "--dir", str(d))
    assert again.exit_code == 2 and "holds a cluster already" in again.output, again.output
    assert "Traceback" not in again.output
    shaped = ostrom("cluster", "up", "--dir", str(d), "--reuse", "--replicas", "7")
    assert shaped.exit_code == 2 and "--replicas" in shaped.output, shaped.output
    assert files(d) == before, "a refused up changed the cluster's files"
    reused = ostrom("cluster", "up", "--dir", str(d), "--reuse")
    try:
        assert reused.exit_code == 0, reused.output
        url = reused.output.strip().rsplit(" ", 1)[-1]
        assert httpx.get(url + "/status", timeout=10).status_code == 200
    finally:
        down = ostrom("cluster", "down", "--dir", str(d))
    assert down.exit_code == 0 and "stopped" in down.output, down.output
    assert files(d) == before


@pytest.mark.system
def test_down_signals_only_processes_it_started(tmp_path: Path) -> None:
    """pids.json naming a process ``cluster up`` did not start: the old format (a bare
    pid) and the new one with the process's true start time (anyone can read it in
    /proc): neither is signalled."""
    create(tmp_path, n=4, seed=3)
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = Path(f"/proc/{victim.pid}/stat").read_text()
        start_ticks = start[start.rindex(")") + 2 :].split()[19]
        for pids in (
            {"r0": victim.pid},
            {"r0": {"pid": victim.pid, "start": start_ticks}},
            {"front": {"pid": 1, "start": "0"}},
        ):
            (tmp_path / "pids.json").write_text(json.dumps(pids))
            out = ostrom("cluster", "down", "--dir", str(tmp_path))
            assert out.exit_code == 0 and "nothing running" in out.output, (pids, out.output)
            assert victim.poll() is None, (
                f"cluster down signalled a process it did not start: {pids}"
            )
    finally:
        victim.kill()
        victim.wait(10)
