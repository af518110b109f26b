"""Group commit in a cluster replica process (``Node.deliver_all``).

The frames of one read run through the pure replica and are committed in one SQLite
transaction before anything they produced is released: write before send (BFT-SAFE-1)
still holds, and the replica sends exactly what it sends when it commits after every
frame (Ed25519 signatures are deterministic, so the bytes are the same).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ostrom.cluster.app import batch_operation
from ostrom.cluster.config import load
from ostrom.cluster.keys import load_signer
from ostrom.cluster.replica_process import Node
from ostrom.cluster.supervisor import create
from ostrom.consensus.messages import Request


class Recorder:
    """A link that records each frame with the store's last transaction at that moment."""

    def __init__(self, node: Node, log: list[tuple[str, bytes, int]], name: str) -> None:
        self.node, self.log, self.name = node, log, name

    def send(self, payload: bytes) -> None:
        assert self.node.durable is not None
        self.log.append((self.name, payload, self.node.durable.store.batch))


def run(directory: Path, grouped: bool) -> tuple[list[tuple[str, bytes, int]], int, int]:
    create(directory, n=4, seed=7, synchronous="OFF")
    cfg = load(directory / "cluster.toml")
    node = Node(cfg, 0)  # the primary: each request makes a PRE-PREPARE
    log: list[tuple[str, bytes, int]] = []
    node.links = {p: Recorder(node, log, p) for p in ("r1", "r2", "r3", "front")}  # type: ignore[misc]
    frames = []
    for i, client in enumerate(cfg.client_names[:3]):
        signer = load_signer(cfg.keys, client)
        frames.append(signer.sign(Request(client, 1, batch_operation([{"k": i}]))).encoded)
    assert node.durable is not None
    before = node.durable.store.batch

    async def go() -> None:
        if grouped:
            node.deliver_all(frames)
        else:
            for data in frames:
                node.deliver_all([data])

    asyncio.run(go())
    after = node.durable.store.batch
    node.durable.close()
    return log, before, after


def test_one_transaction_for_the_frames_of_a_read_and_nothing_sent_before_it(
    tmp_path: Path,
) -> None:
    log, before, after = run(tmp_path / "grouped", grouped=True)
    assert after == before + 1  # one transaction for three requests
    assert len(log) == 3 * 3  # three PRE-PREPAREs to three backups
    assert all(batch == after for _, _, batch in log)  # every send after the commit


def test_grouped_sends_what_one_at_a_time_sends(tmp_path: Path) -> None:
    grouped, _, _ = run(tmp_path / "grouped", grouped=True)
    single, before, after = run(tmp_path / "single", grouped=False)
    assert after == before + 3  # a transaction per frame
    assert [(d, p) for d, p, _ in grouped] == [(d, p) for d, p, _ in single]
