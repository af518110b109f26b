"""A node's database backed up while the node writes (docs/deployment.md, "Back up and
restore"): SQLite's online backup of a running node's file is a database that starts
with ``--verify`` (the whole log replayed, every observation and snapshot compared) at
a log position the node had reached, with the node's state at that position."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ostrom.service.identity import sign_envelope
from ostrom.service.node import Node
from service_world import PARAMS, key, setup


def test_an_online_backup_of_a_running_node_restores(tmp_path: Path) -> None:
    db = tmp_path / "n.db"
    node = Node.open(db, params=PARAMS, setup=setup(), fsync=False, snapshot_every=5)
    cid = node.gate.setup.community
    states: dict[int, object] = {}
    try:
        for i in range(12):
            cmd = {"op": "propose", "agent": "f1", "artifact": f"a{i}", "slot": f"s{i}",
                   "digest": "d"}  # fmt: skip
            env = sign_envelope(key("f1"), "f1", i + 1, cmd, community=cid)
            assert node.submit(env).status == 200
            states[node.last_pos] = node.gate.public_state()
            if i == 7:  # the backup, while the node is open and writing
                with sqlite3.connect(db) as src, sqlite3.connect(tmp_path / "copy.db") as dst:
                    src.backup(dst)
    finally:
        node.close()
    copy = Node.open(tmp_path / "copy.db", verify=True, fsync=False)
    try:
        assert copy.last_pos == 8
        assert copy.gate.public_state() == states[8]
    finally:
        copy.close()
