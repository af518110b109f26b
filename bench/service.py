"""The node's throughput (``python bench/service.py`` or ``bench/run.py --only service``).

Commands/s of ``ostrom serve``'s stack — signed envelopes, the gate, the Community, the
SQLite log — measured three ways, each with SQLite's fsync on (synchronous=FULL, the
default) and off: ``Node.submit`` in process (no HTTP), one client posting sequentially
over loopback HTTP to uvicorn, and four clients posting concurrently (the node serialises
them).  Also the start-up replay of the resulting log and its export as a trace.

The workload is rounds of five founders proposing two artifacts each (the default
propose_rate) and one operator tick: every command is accepted and signed.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "property_tests"))

from ostrom.service.app import create_app  # noqa: E402
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


def over_http(db: Path, envs: list[dict[str, Any]], fsync: bool, clients: int) -> float:
    node = Node.open(db, params=PARAMS, setup=setup(), fsync=fsync)
    server = uvicorn.Server(
        uvicorn.Config(create_app(node), host="127.0.0.1", port=0, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    # each client posts its own agents' envelopes in order (per-agent seqs stay in order)
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for e in envs:
        by_agent.setdefault(e["agent"], []).append(e)
    groups: list[list[dict[str, Any]]] = [[] for _ in range(clients)]
    for k, agent in enumerate(sorted(by_agent)):
        groups[k % clients] += by_agent[agent]

    def post(group: list[dict[str, Any]]) -> None:
        with httpx.Client(base_url=url, timeout=30) as c:
            for e in group:
                r = c.post("/commands", json=e)
                assert r.status_code == 200, r.text

    t = time.perf_counter()
    if clients == 1:
        with httpx.Client(base_url=url, timeout=30) as c:
            for e in envs:
                assert c.post("/commands", json=e).status_code == 200
    else:
        threads = [threading.Thread(target=post, args=(g,)) for g in groups]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=600)
    dt = time.perf_counter() - t
    server.should_exit = True
    thread.join(timeout=10)
    node.close()
    return len(envs) / dt


def measure(n: int = 2000) -> dict[str, Any]:
    envs = workload(n)
    out: dict[str, Any] = {"commands": n}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for fsync in (True, False):
            k = "fsync_on" if fsync else "fsync_off"
            out[f"in_process_{k}"] = round(in_process(tmp / f"p{k}.db", envs, fsync), 1)
            out[f"http_1_client_{k}"] = round(over_http(tmp / f"h{k}.db", envs, fsync, 1), 1)
            out[f"http_4_clients_{k}"] = round(over_http(tmp / f"c{k}.db", envs, fsync, 4), 1)
        t = time.perf_counter()
        Node.open(tmp / "pfsync_on.db").close()
        out["restart_replay_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        Node.open(tmp / "pfsync_on.db", verify=True).close()
        out["restart_verify_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        export(tmp / "pfsync_on.db", tmp / "t.jsonl")
        out["export_s"] = round(time.perf_counter() - t, 3)
    return out


if __name__ == "__main__":
    save("service", measure(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
