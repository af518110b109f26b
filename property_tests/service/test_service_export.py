"""``ostrom log export``: a node's log, with a restart in the middle, is a community trace
that ``ostrom validate-trace`` accepts (TLC: marked ``tlc``); an export whose log does not
replay fails loudly instead of writing a trace."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom import layout
from ostrom.service.export import ExportError, export
from ostrom.service.node import REDACTED, Node
from ostrom.service.store import Store
from service_world import PARAMS, Signer, commit_phase, decided, setup

ENV = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}


def _workload(db: Path) -> int:
    s = Signer()
    envs = commit_phase(s) + decided(s)
    node = Node.open(
        db, params=PARAMS, setup=setup(), fsync=False, snapshot_every=4, snapshot_ratio=0
    )
    for e in envs[:9]:
        assert node.submit(e).status == 200
    node.close()  # a restart in the middle: the rest goes to the rebuilt node
    node = Node.open(db, verify=True, fsync=False, snapshot_every=4, snapshot_ratio=0)
    for e in envs[9:]:
        assert node.submit(e).status == 200
    node.close()
    return len(envs)


def test_export_writes_header_and_one_step_per_logged_command(tmp_path: Path) -> None:
    n = _workload(tmp_path / "n.db")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "ostrom",
            "log",
            "export",
            "--db",
            str(tmp_path / "n.db"),
            "-o",
            str(tmp_path / "t.jsonl"),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert lines[0]["format"] == "ostrom-trace/1" and lines[0]["layer"] == "community"
    assert len(lines) == n + 1
    # CR-1: the raw log keeps the refused early reveal as sent, the export redacts it as
    # every output path does (node.public_command): no vote, reason or salt in the file
    early = [
        s["command"]
        for s in lines[1:]
        if s["command"].get("op") == "reveal_vote" and s["result"] == "wrong_phase"
    ]
    assert early and all(c[f] == REDACTED for c in early for f in ("vote", "reason", "salt")), early
    # ... and nothing of the secret is in the file until its reveal is accepted (an
    # accepted reveal, in the reveal phase, is public: the same salt then appears)
    store = Store.open(tmp_path / "n.db")
    entries = list(store.entries())
    store.close()
    text = (tmp_path / "t.jsonl").read_text().splitlines()
    secret = False
    for k, e in enumerate(entries):
        c = e.envelope["command"]
        if c.get("op") == "reveal_vote" and e.result == "wrong_phase":
            secret = True
            upto = "\n".join(text[: k + 2])  # the header, then the steps up to this one
            assert c["salt"] not in upto and c["reason"] not in upto, k
    assert secret


def test_a_log_that_does_not_replay_is_not_exported(tmp_path: Path) -> None:
    _workload(tmp_path / "n.db")
    with sqlite3.connect(tmp_path / "n.db") as db:
        db.execute(
            'UPDATE log SET observation=replace(observation, \'"result":"ok"\', '
            '\'"result":"ok","x":1\') WHERE pos=3'
        )
    with pytest.raises(ExportError, match="does not replay"):
        export(tmp_path / "n.db", tmp_path / "t.jsonl")
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.tlc
def test_validate_trace_accepts_the_nodes_log_across_a_restart(tmp_path: Path) -> None:
    _workload(tmp_path / "n.db")
    export(tmp_path / "n.db", tmp_path / "t.jsonl")
    r = subprocess.run(
        [sys.executable, "-m", "ostrom", "validate-trace", str(tmp_path / "t.jsonl")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ACCEPTED" in r.stdout + r.stderr


@pytest.mark.tlc
def test_validate_trace_rejects_a_trace_of_a_misbehaving_node(tmp_path: Path) -> None:
    """The mutation: a node whose tally came out the other way (the artifact rejected
    where the votes accepted it).  The check above could not pass such a log."""
    _workload(tmp_path / "n.db")
    export(tmp_path / "n.db", tmp_path / "t.jsonl")
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    docs = [json.loads(x) for x in lines]
    k = next(
        i
        for i, d in enumerate(docs[1:], 1)
        if d["state"]["artifacts"].get("x", {}).get("state") == "active"
    )
    docs[k]["state"]["artifacts"]["x"]["state"] = "rejected"
    (tmp_path / "bad.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    r = subprocess.run(
        [sys.executable, "-m", "ostrom", "validate-trace", str(tmp_path / "bad.jsonl")],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=600,
    )
    assert r.returncode == 1, r.stdout + r.stderr


@settings(max_examples=50)
@given(
    st.lists(
        st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=8)), min_size=1, max_size=3
    )
)
def test_export_of_a_damaged_file_writes_a_trace_or_fails_cleanly(
    tmp_path_factory: pytest.TempPathFactory, damage: list[Any]
) -> None:
    d = tmp_path_factory.mktemp("x")
    _workload(d / "n.db")
    data = bytearray((d / "n.db").read_bytes())
    for offset, chunk in damage:
        at = offset % len(data)
        data[at : at + len(chunk)] = chunk
    (d / "n.db").write_bytes(bytes(data))
    try:
        export(d / "n.db", d / "t.jsonl")
    except ExportError:
        assert not (d / "t.jsonl").exists()
