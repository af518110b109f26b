"""``ostrom cluster up|status --audit|down`` and ``ostrom node`` (ostrom/cli/cluster.py)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.cluster.config import load
from ostrom.consensus.crypto import derive_key
from ostrom.service.identity import load_key, public_hex, sign_envelope


def join(agent: str, community: str) -> dict[str, object]:
    key = derive_key(b"cli", agent)
    return sign_envelope(
        key, agent, 1, {"op": "join", "agent": agent}, public_hex(key), community=community
    )


def test_up_status_audit_down(tmp_path: Path) -> None:
    d = tmp_path / "c"
    runner = CliRunner()
    up = runner.invoke(
        main,
        [
            *("cluster", "up", "--dir", str(d), "--seed", "1", "--synchronous", "OFF"),
            *("--byzantine", "3=silent", "--batch-size", "2"),
        ],
    )
    try:
        assert up.exit_code == 0, up.output
        url = up.output.strip().rsplit(" ", 1)[-1]
        community = load(d / "cluster.toml").community  # ENV-1: what envelopes are signed for
        for i in range(5):
            r = httpx.post(url + "/commands", json=join(f"u{i}", community), timeout=60)
            assert r.status_code == 200 and r.json()["result"] == "ok", r.text
        # a retried envelope is answered as the node answers it from its log: the first
        # observation, retry true, nothing applied again (app.Retries) ...
        r = httpx.post(url + "/commands", json=join("u0", community), timeout=60)
        assert r.status_code == 200 and r.json()["result"] == "ok" and r.json()["retry"], r.text
        # ... and the gate's refusals come back as the node's: another envelope with a
        # used seq is 409 replayed
        key = derive_key(b"cli", "u0")
        other = sign_envelope(  # no public_key
            key, "u0", 1, {"op": "join", "agent": "u0"}, community=community
        )
        r = httpx.post(url + "/commands", json=other, timeout=60)
        assert r.status_code == 409 and r.json()["error"] == "replayed", r.text
        unsigned = {"agent": "v", "seq": 1, "command": {"op": "join", "agent": "v"}}
        assert httpx.post(url + "/commands", json=unsigned, timeout=60).status_code == 401
        assert httpx.post(url + "/commands", content=b"\xff{", timeout=10).status_code == 400
        huge = httpx.post(url + "/commands", content=b"x" * (2 << 20), timeout=10)
        assert huge.status_code == 413
        st = runner.invoke(main, ["cluster", "status", "--dir", str(d), "--audit", "--json"])
        assert st.exit_code == 0, st.output
        doc = json.loads(st.output)
        assert doc["audit"]["checks"] == ["BFT-SAFE-1", "acknowledged", "REPL-1"]
        assert sorted(doc["audit"]["replicas"]) == ["0", "1", "2"]  # r3 is Byzantine
        assert doc["replicas"]["3"]["byzantine"] == "silent"
        text = runner.invoke(main, ["cluster", "status", "--dir", str(d)])
        assert "view" in text.output and "byzantine silent" in text.output
        # 5 joins, the retried one and the replayed one: ordered; the unsigned one was
        # refused by the front (cluster/screen.py) and never ordered
        assert "7 commands acknowledged" in text.output, text.output
        assert doc["front"]["stats"]["acknowledged"] == 7
        again = runner.invoke(main, ["cluster", "up", "--dir", str(d)])
        assert again.exit_code != 0 and "already runs" in again.output
    finally:
        down = runner.invoke(main, ["cluster", "down", "--dir", str(d)])
    assert down.exit_code == 0 and "stopped" in down.output
    assert "nothing running" in runner.invoke(main, ["cluster", "down", "--dir", str(d)]).output


def test_clear_errors_without_tracebacks(tmp_path: Path) -> None:
    runner = CliRunner()
    r = runner.invoke(main, ["cluster", "status", "--dir", str(tmp_path)])
    assert r.exit_code == 1 and "cannot read" in r.output and "Traceback" not in r.output
    (tmp_path / "bad.toml").write_text("[cluster]\nn = 'x'\n")
    r = runner.invoke(main, ["node", "--id", "0", "--cluster", str(tmp_path / "bad.toml")])
    assert r.exit_code == 2
    r = runner.invoke(main, ["cluster", "up", "--dir", str(tmp_path / "u"), "--byzantine", "x"])
    assert r.exit_code != 0 and "I=STRATEGY" in r.output


def test_start_cluster_for_benchmarks(tmp_path: Path) -> None:
    """What a benchmark uses: a running cluster, its front URL, a stop."""
    from ostrom.cluster.supervisor import start_cluster

    url, stop = start_cluster(tmp_path, n=4, batch_size=4, synchronous="OFF", seed=2)
    try:
        ops = load_key(tmp_path / "keys" / "ops.key")  # the operator signs a tick
        community = load(tmp_path / "cluster.toml").community
        tick = sign_envelope(ops, "ops", 1, {"op": "tick"}, community=community)
        r = httpx.post(url + "/commands", json=tick)
        assert r.status_code == 200 and r.json()["result"] == "ok", r.text
    finally:
        stop()
    with pytest.raises(httpx.HTTPError):
        httpx.get(url + "/status", timeout=2)


def test_a_damaged_store_refuses_to_start(tmp_path: Path) -> None:
    """A replica whose database is not a store it can restart from stops at once with one
    line (exit 2), and leaves the file as it was: restarting from nothing would be an
    amnesiac restart, a fault."""
    from ostrom.cluster.supervisor import create

    cfg = create(tmp_path, n=4, seed=3)
    db = cfg.replica(1).db
    db.write_bytes(b"not a database at all" * 10)
    r = CliRunner().invoke(main, ["node", "--id", "1", "--cluster", str(cfg.path)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert db.read_bytes() == b"not a database at all" * 10


def test_up_with_a_bad_community_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text("propose_rate = 100000\n")
    (tmp_path / "f.toml").write_text("[[founder]]\nid = 3\n")
    for args in (["--params", "p.toml"], ["--founders", "f.toml"], ["--params", "nope.toml"]):
        r = CliRunner().invoke(
            main,
            ["cluster", "up", "--dir", str(tmp_path / "c"), *args[:1], str(tmp_path / args[1])],
        )
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
        assert "Traceback" not in r.output
        assert not (tmp_path / "c").exists()
