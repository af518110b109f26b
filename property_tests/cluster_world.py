"""What the cluster's fault tests share with the other tests that run a real cluster."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from ostrom.cluster.audit import audit
from ostrom.cluster.supervisor import Cluster
from ostrom.consensus.crypto import derive_key
from ostrom.service.identity import public_hex, sign_envelope
from service_world import FOUNDERS, OPERATOR, key

__all__ = [
    "CONVERGE_S",
    "LOAD_S",
    "TIMEOUT_MS",
    "Load",
    "check",
    "command",
    "converge",
    "founders_file",
    "primary",
]

TIMEOUT_MS = 800  # the view-change timeout: short, for quick recovery on loopback
LOAD_S = 90.0


def command(c: Cluster, tag: str, i: int) -> dict[str, Any]:
    """A distinct signed envelope per call (the join of a new agent, under its own key,
    for cluster ``c``'s community: the body ``ostrom serve`` takes; it changes the state)."""
    agent = f"{tag}{i}"
    key = derive_key(b"test-cluster-faults", agent)
    join = {"op": "join", "agent": agent}
    community = c.cfg.community
    return sign_envelope(key, agent, 1, join, public_key=public_hex(key), community=community)


class Load:
    """Posts commands concurrently from a thread; records what was acknowledged."""

    def __init__(self, url: str, commands: list[dict[str, Any]], concurrency: int = 8) -> None:
        self.url, self.commands, self.concurrency = url, commands, concurrency
        self.acked: list[dict[str, Any]] = []
        self.failed: list[tuple[dict[str, Any], str]] = []
        self.ack_times: list[float] = []
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        sem = asyncio.Semaphore(self.concurrency)
        async with httpx.AsyncClient(timeout=LOAD_S) as http:

            async def one(cmd: dict[str, Any]) -> None:
                async with sem:
                    try:
                        r = await http.post(self.url + "/commands", json=cmd)
                    except httpx.HTTPError as exc:
                        self.failed.append((cmd, repr(exc)))
                        return
                    if r.status_code == 200:
                        body = r.json()
                        assert body["result"] == "ok", body
                        self.acked.append(cmd)
                        self.ack_times.append(time.monotonic())
                    else:
                        self.failed.append((cmd, r.text))

            await asyncio.gather(*(one(c) for c in self.commands))

    def start(self) -> Load:
        self._thread.start()
        return self

    def wait_acked(self, k: int, timeout: float = LOAD_S) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < k and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.acked) >= k, f"only {len(self.acked)} acknowledged in {timeout}s"

    def join(self, timeout: float = LOAD_S) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the load did not finish in time"
        assert not self.failed, self.failed[:3]


def primary(c: Cluster, honest: list[int]) -> int:
    views = [int(s["view"]) for i, s in c.status().items() if i in honest and s is not None]
    return max(views) % c.cfg.n


def check(c: Cluster, honest: list[int], acked: list[dict[str, Any]], at_least: int) -> None:
    live = converge(c, honest, at_least)
    codes = c.stop()  # the audit reads the stores of stopped replicas (or of live ones)
    assert all(code == 0 for code in codes.values()), f"not a clean stop on SIGTERM: {codes}"
    report = audit(c.cfg, honest, acknowledged=acked, live=live)
    for i in honest:
        r = report["replicas"][i]
        assert r["commands"] >= len(acked)
        # the live digest was compared: the store ends where the running replica reported
        assert (r["last_executed"], r["state_digest"]) == live[i]


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
