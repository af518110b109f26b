"""What the cluster's fault tests share with the other tests that run a real cluster."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ostrom.cluster.supervisor import Cluster
from ostrom.service.identity import public_hex
from service_world import FOUNDERS, OPERATOR, key

__all__ = ["CONVERGE_S", "converge", "founders_file"]

#: How long the honest replicas may take to agree after the faults stop.
CONVERGE_S = 60.0


def converge(c: Cluster, honest: list[int], at_least: int) -> dict[int, tuple[int, str]]:
    """Wait until every honest replica executed the same number of requests (at least
    ``at_least``) with the same state digest; their (last executed, digest)."""
    deadline = time.monotonic() + CONVERGE_S
    last: dict[int, Any] = {}
    while time.monotonic() < deadline:
        st = c.status()
        last = {i: st[i] for i in honest}
        if all(s is not None for s in last.values()):
            points = {(s["last_executed"], s["app_digest"]) for s in last.values()}
            if len(points) == 1 and next(iter(points))[0] >= at_least:
                return {i: (s["last_executed"], s["app_digest"]) for i, s in last.items()}
        time.sleep(0.1)
    summary = {
        i: None if s is None else (s["view"], s["last_executed"], s["stable_checkpoint"])
        for i, s in last.items()
    }
    raise AssertionError(f"the honest replicas did not converge: {summary}")


def founders_file(path: Path) -> Path:
    """service_world's founders and operator, in the founders file format (a cluster of
    the community whose keys the service tests sign with)."""
    rows = []
    for f in FOUNDERS:
        rows += ["[[founder]]", f'id = "{f}"', "tier = 3", "reputation = 0.95"]
        rows += ["evidence = 40", f'public_key = "{public_hex(key(f))}"', ""]
    rows += ["[[operator]]", f'id = "{OPERATOR}"', f'public_key = "{public_hex(key(OPERATOR))}"']
    path.write_text("\n".join(rows) + "\n")
    return path
