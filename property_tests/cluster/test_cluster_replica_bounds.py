"""A real replica far behind catches up by a STATE-TRANSFER cut into frames (issue 41,
item 6; docs/security.md).  The attacks on the same bounds that need a running cluster
and no more (an oversized request handed to the replicas, a flood of bad envelopes at
the front) are in test_cluster_hostile.py, on its cluster.

The cluster's frame is made small (``max_frame_bytes``), so that a state of more than
a frame is 40 commands, not a thousand.  Every wait is bounded (``converge``: 60 s).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from cluster_world import converge
from ostrom.cluster.supervisor import Cluster, create, replica_status
from ostrom.consensus.crypto import derive_key
from ostrom.service.identity import public_hex, sign_envelope

pytestmark = pytest.mark.system


FRAME = 512 * 1024  # small: 40 commands of 20 KB are more than a frame


def _padded_join(community: str, i: int, size: int) -> dict[str, Any]:
    k = derive_key(b"bounds-transfer", str(i))
    cmd = {"op": "join", "agent": f"pad{i}", "padding": "P" * size}
    return sign_envelope(k, f"pad{i}", 1, cmd, public_hex(k), community=community)


@pytest.mark.slow
def test_a_replica_more_than_a_frame_behind_catches_up(tmp_path: Path) -> None:
    """A replica killed while the others order 40 requests of 20 KB (more than the
    cluster's frame of 512 KiB), then started again, catches up: its STATE-TRANSFER comes
    in chunks within the frame (with the whole log in one, as before, every receiver
    would refuse the frame and close the connection: garbage_connections).  The small
    variant in make test: test_consensus_replica_bounds.py."""
    d = tmp_path / "c"
    create(
        d,
        n=4,
        seed=10,
        synchronous="OFF",
        checkpoint_k=2,
        watermark_window=4,
        max_frame_bytes=FRAME,
        refusal_burst=10_000,  # the padded joins are refused (and ordered): not the point here
    )
    c = Cluster(d)
    cfg = c.cfg
    try:
        c.start(timeout=60)
        c.kill("r3")

        async def post_all(bodies: list[dict[str, Any]]) -> list[int]:
            async with httpx.AsyncClient(timeout=60) as http:
                rs = await asyncio.gather(*(http.post(c.url + "/commands", json=b) for b in bodies))
                return [r.status_code for r in rs]

        statuses = asyncio.run(
            post_all([_padded_join(cfg.community, i, 20_000) for i in range(40)])
        )
        assert all(s < 500 for s in statuses), statuses
        ahead = converge(c, [0, 1, 2], 40)
        assert next(iter(ahead.values()))[0] * 20_000 > FRAME  # more than a frame behind
        c.restart_replica(3)
        caught = converge(c, [0, 1, 2, 3], next(iter(ahead.values()))[0])
        assert len(set(caught.values())) == 1
        st = replica_status(cfg.replica(3).listen)
        assert st is not None and st["stats"].get("garbage_connections", 0) == 0, st
    finally:
        c.stop()
