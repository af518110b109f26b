"""The node's throughput (``python bench/service.py`` or ``bench/run.py --only service``).

Commands/s of ``ostrom serve``'s stack (signed envelopes, the gate, the Community, the
SQLite log), each with SQLite's fsync on (synchronous=FULL, the default) and off:
``Node.submit`` in process (no HTTP); one client posting sequentially over loopback HTTP
to ``ostrom serve`` in its own process; four clients posting concurrently (the node
serialises them); with p50/p99 request latency.  Next to them ``Community.apply`` alone
on the same commands: the issue's target is HTTP with fsync off at 25% of it or more.
Also the start-up replay of the log, its export as a trace, and the node with 1,000 and
10,000 registered agents (joins/s, commands/s, the median tick and other command).

The workload is rounds of five founders proposing two artifacts each (the default
propose_rate) and one operator tick: every command is accepted and signed.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "property_tests"))

from ostrom.protocol.community import Community  # noqa: E402
from ostrom.service.export import export  # noqa: E402
from ostrom.service.node import Node  # noqa: E402
from record import save  # noqa: E402
from service_world import FOUNDERS, OPERATOR, PARAMS, Signer, setup  # noqa: E402


def workload(n: int, tag: str = "") -> list[dict[str, Any]]:
    s, i = Signer(), 0
    out: list[dict[str, Any]] = []
    while len(out) < n:
        for f in FOUNDERS:
            for _ in range(2):
                cmd = {"op": "propose", "agent": f, "artifact": f"{tag}a{i}", "slot": f"{tag}s{i}"}
                out.append(s.env(f, {**cmd, "digest": "d"}))
                i += 1
        out.append(s.env(OPERATOR, {"op": "tick"}))
    return out[:n]


def in_process(db: Path, envs: list[dict[str, Any]], fsync: bool) -> float:
    node = Node.open(db, params=PARAMS, setup=setup(), fsync=fsync)
    t = time.perf_counter()
    for e in envs:
        assert node.submit(e).status == 200
    dt = time.perf_counter() - t
    node.close()
    return len(envs) / dt


def raw_apply(envs: list[dict[str, Any]]) -> float:
    """Commands/s of ``Community.apply`` alone on the same commands: no signature, no
    log, no HTTP (the yardstick of the issue's target)."""
    community = Community(PARAMS, [f.member for f in setup().founders])
    t = time.perf_counter()
    for e in envs:
        assert community.apply(e["command"])["result"] == "ok"
    return len(envs) / (time.perf_counter() - t)


def with_agents(db: Path, envs: list[dict[str, Any]], agents: int) -> dict[str, Any]:
    """The node with ``agents`` registered (each by a signed ``join``), then the workload
    in process with fsync off: joins/s, commands/s, and the median tick and other command.
    A tick recomputes every agent's reputation (EigenTrust, docs/reputation.md), so its
    cost grows with the agents; the sortition's does not (bench/sortition.py)."""
    node = Node.open(db, params=PARAMS, setup=setup(), fsync=False)
    s = Signer()
    joins = [s.env(f"j{i}", {"op": "join", "agent": f"j{i}"}, join=True) for i in range(agents)]
    t = time.perf_counter()
    for e in joins:
        assert node.submit(e).status == 200
    join_s = time.perf_counter() - t
    t = time.perf_counter()
    ticks: list[float] = []
    others: list[float] = []
    for e in envs:
        t0 = time.perf_counter()
        assert node.submit(e).status == 200
        (ticks if e["command"]["op"] == "tick" else others).append(time.perf_counter() - t0)
    dt = time.perf_counter() - t
    node.close()
    return {
        "agents": agents,
        "joins_per_s": round(agents / join_s, 1),
        "commands_per_s": round(len(envs) / dt, 1),
        "tick_ms_median": round(1000 * statistics.median(ticks), 2),
        "other_command_ms_median": round(1000 * statistics.median(others), 3),
    }


def founders_file(path: Path) -> Path:
    """service_world's founders and operator in the node's founders file format."""
    lines = []
    for f in setup().founders:
        m = f.member
        lines += ["[[founder]]", f'id = "{m.id}"', f"tier = {m.tier}"]
        lines += [f"reputation = {m.reputation}", f"evidence = {m.evidence}"]
        lines += [f'public_key = "{f.public_key}"', ""]
    for op, pk in setup().operators.items():
        lines += ["[[operator]]", f'id = "{op}"', f'public_key = "{pk}"', ""]
    path.write_text("\n".join(lines))
    return path


def over_http(
    db: Path, envs: list[dict[str, Any]], fsync: bool, clients: int
) -> tuple[float, list[float]]:
    """Commands/s through ``ostrom serve`` (its own process, as a node runs) over
    loopback, posted by ``clients`` threads of this process; each request's latency (s)."""
    cmd = [sys.executable, "-m", "ostrom", "serve", "--db", str(db), "--port", "0"]
    cmd += ["--founders", str(founders_file(db.with_suffix(".toml")))]
    cmd += ["--fsync", "on" if fsync else "off"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "reference")}
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        m = re.search(r"(http://\S+)", proc.stderr.readline())
        if m is None:
            raise RuntimeError("ostrom serve did not start")
        url = m.group(1)
        # each client posts its own agents' envelopes in order (per-agent seqs stay in order)
        by_agent: dict[str, list[dict[str, Any]]] = {}
        for e in envs:
            by_agent.setdefault(e["agent"], []).append(e)
        groups: list[list[dict[str, Any]]] = [[] for _ in range(clients)]
        for k, agent in enumerate(sorted(by_agent)):
            groups[k % clients] += by_agent[agent]
        latencies: list[float] = []

        def post(group: list[dict[str, Any]]) -> None:
            with httpx.Client(base_url=url, timeout=30) as c:
                for e in group:
                    t0 = time.perf_counter()
                    r = c.post("/commands", json=e)
                    latencies.append(time.perf_counter() - t0)
                    assert r.status_code == 200, r.text

        t = time.perf_counter()
        if clients == 1:
            post(envs)
        else:
            threads = [threading.Thread(target=post, args=(g,)) for g in groups]
            for th in threads:
                th.start()
            for th in threads:
                th.join(timeout=600)
        dt = time.perf_counter() - t
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    return len(envs) / dt, latencies


def percentile(xs: list[float], q: float) -> float:
    """The q-quantile (0..1) of ``xs``, in milliseconds."""
    ordered = sorted(xs)
    return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def measure(n: int = 2000) -> dict[str, Any]:
    envs = workload(n)
    out: dict[str, Any] = {"commands": n}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for fsync in (True, False):
            k = "fsync_on" if fsync else "fsync_off"
            out[f"in_process_{k}"] = round(in_process(tmp / f"p{k}.db", envs, fsync), 1)
            for clients in (1, 4):
                name = f"http_{clients}_client{'s' if clients > 1 else ''}_{k}"
                rate, lat = over_http(tmp / f"h{clients}{k}.db", envs, fsync, clients)
                out[name] = round(rate, 1)
                out[f"{name}_p50_ms"] = percentile(lat, 0.50)
                out[f"{name}_p99_ms"] = percentile(lat, 0.99)
        t = time.perf_counter()
        Node.open(tmp / "pfsync_on.db").close()
        out["restart_replay_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        Node.open(tmp / "pfsync_on.db", verify=True).close()
        out["restart_verify_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        export(tmp / "pfsync_on.db", tmp / "t.jsonl")
        out["export_s"] = round(time.perf_counter() - t, 3)
        out["raw_apply"] = round(raw_apply(envs), 1)
        # The target: the node over HTTP with fsync off reaches at least 25% of
        # the in-process apply's throughput.
        best = max(out["http_1_client_fsync_off"], out["http_4_clients_fsync_off"])
        share = best / out["raw_apply"]
        out["http_fsync_off_share_of_apply"] = round(share, 3)
        out["target_25pct_of_apply_met"] = share >= 0.25
        out["registered"] = [
            with_agents(tmp / f"agents{n}.db", workload(n_cmd, "r"), n)
            for n, n_cmd in ((1_000, 1000), (10_000, 1000))
        ]
    return out


if __name__ == "__main__":
    save("service", measure(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
