"""How close issue 14's two throughput targets can come, on this machine, in this design.

``python bench/ceiling.py`` or ``bench/run.py --only ceiling`` (about half a minute).

Both targets compare a whole service with a part of its work: the node's commands/s over
HTTP with ``Community.apply`` alone (target: at least 25%), the cluster's with the rate at
which the machine could do nothing but the cluster's Ed25519 work (target: at least 50%
with batching).  Each command must pay some costs that no implementation of the design
can leave out.  This benchmark measures three of them on this machine, in one run:

* ``apply_us``: one ``Community.apply`` of the service benchmark's workload (its first
  10,000 commands: proposals by 32 founders, a tick every 50 commands), CPU time;
* ``verify_us`` and ``sign_us``: one Ed25519 verification and signature (libsodium);
* ``http_us``: the server CPU of one request to a Starlette endpoint that does nothing
  (uvicorn with httptools and uvloop, as ``ostrom serve`` runs), posted by the same load
  generator as the service benchmark (16 keep-alive streams).

and computes the best share each target could reach if every *other* cost were zero —
no SQLite, no JSON encoding, no gate, no snapshot, no PBFT logic, no frames:

* node: ``apply / (apply + verify + http)``: every command is verified once and arrives
  in one request;
* cluster (N = 4 at batch size B, with the Ed25519 operations per command that
  ``bench/cluster.py`` counted in real replica processes, ``bench/results/cluster.json``):
  ``E / (E + N * apply + http)``, where ``E`` is the cluster's Ed25519 time per command
  (each replica verifies every envelope and its share of the batch's PBFT messages, the
  front signs one request and verifies f + 1 replies per batch); every replica executes
  every command, and the front answers each over HTTP.

A ceiling under the target means the target is out of reach for this design here, by
arithmetic, whatever is optimised; over it, the distance to the measured figure is what
the rest of the work costs.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import http_load  # noqa: E402
import pbft  # noqa: E402
import service  # noqa: E402
from ostrom.protocol.community import Community  # noqa: E402
from ostrom.service.identity import canonical  # noqa: E402
from record import RESULTS, save  # noqa: E402

N = 4
COMMANDS = 10_000
HTTP_STREAMS = 16
HTTP_SECONDS = 4.0
NODE_TARGET = 0.25
CLUSTER_TARGET = 0.5

#: A Starlette app whose one endpoint reads the body and answers {"result": "ok"}: what
#: any request to the node costs before the node does anything.
TRIVIAL_SERVER = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def commands(request):
    await request.body()
    return JSONResponse({"result": "ok", "events": []})

app = Starlette(routes=[Route("/commands", commands, methods=["POST"])])
config = uvicorn.Config(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
server = uvicorn.Server(config)
server.run()
"""


def apply_us() -> float:
    """CPU microseconds of one ``Community.apply`` on the service workload."""
    envs = service.Workload(COMMANDS).order
    community = Community(service.PARAMS, [f.member for f in service.setup().founders])
    c0 = time.process_time()
    for e in envs:
        community.apply(e["command"])
    return (time.process_time() - c0) / len(envs) * 1e6


def http_us() -> dict[str, Any]:
    """Server CPU microseconds of one request to an endpoint that does nothing."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-c", TRIVIAL_SERVER, str(port)])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the trivial server did not start") from None
                time.sleep(0.05)
        body = canonical(service.Workload(1).order[0])
        streams = [[body] * 200_000 for _ in range(HTTP_STREAMS)]
        out = asyncio.run(
            http_load.load(f"http://127.0.0.1:{port}", streams, HTTP_SECONDS, {"server": proc.pid})
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    cpu = out["cpu_seconds"]["server"]
    return {
        "requests_per_s": out["commands_per_s"],
        "server_cpu_us_per_request": round(cpu / max(1, out["commands"]) * 1e6, 1),
        "load_average_1min": out["load_average_1min"],
    }


def cluster_counts() -> dict[str, dict[str, float]]:
    """Ed25519 operations per command by batch size, as bench/cluster.py counted them."""
    import json

    doc = json.loads((RESULTS / "cluster.json").read_text(encoding="utf-8"))
    out: dict[str, dict[str, float]] = {}
    for b, row in doc["ed25519_bound"].items():
        p, k = row["replicas"]["primary"], row["replicas"]["backup"]
        out[b] = {
            "primary_signatures": p["signatures_per_command"],
            "primary_verifications": p["verifications_per_command"],
            "backup_signatures": k["signatures_per_command"],
            "backup_verifications": k["verifications_per_command"],
            "commands_per_pbft_request": row["commands_per_pbft_request"] or 1.0,
        }
    return out


def measure() -> dict[str, Any]:
    cost = pbft.ed25519_costs()
    a = apply_us()
    http = http_us()
    h = http["server_cpu_us_per_request"]
    v, s = cost["verify_us"], cost["sign_us"]
    node = a / (a + v + h)
    f = (N - 1) // 3
    cluster: dict[str, Any] = {}
    for b, c in cluster_counts().items():
        per_request = max(1.0, c["commands_per_pbft_request"])
        e = (
            c["primary_signatures"] * s
            + c["primary_verifications"] * v
            + (N - 1) * (c["backup_signatures"] * s + c["backup_verifications"] * v)
            + (s + (f + 1) * v) / per_request
        )
        ceiling = e / (e + N * a + h)
        cluster[b] = {
            "ed25519_us_per_command": round(e, 1),
            "apply_us_per_command_all_replicas": round(N * a, 1),
            "ceiling_share_of_bound": round(ceiling, 3),
            "target": CLUSTER_TARGET,
            "reachable": ceiling >= CLUSTER_TARGET,
        }
    return {
        "apply_us": round(a, 1),
        "ed25519": cost,
        "http": http,
        "node": {
            "ceiling_share_of_apply": round(node, 3),
            "target": NODE_TARGET,
            "reachable": node >= NODE_TARGET,
        },
        "cluster_n4": cluster,
        "cpus": os.cpu_count(),
    }


if __name__ == "__main__":
    save("ceiling", measure())
