"""The cluster's throughput (``python bench/cluster.py`` or ``bench/run.py --only cluster``).

What the issue asks, on this machine, in one run:

* **the cluster**: 4 replica processes and the HTTP front (``ostrom cluster``), loaded
  over loopback HTTP by concurrent agents, each posting its pre-signed envelopes one
  after the other (an agent's seqs must arrive in order); commands/s and the p50/p99
  latency of one ``POST /commands``, for batch sizes 1, 16 and 64, with SQLite
  ``synchronous=FULL`` (fsync before every send) and ``OFF``;
* **next to it**, the in-process PBFT simulation at N = 4 (``bench/pbft.py``'s
  ``durability``: no store, SQLite OFF and FULL, and its Ed25519 figures);
* **the Ed25519 bound for batch size B**: the commands/s *this machine* could reach if
  signing and verifying were all the work: its cores divided by the Ed25519 CPU time one
  command costs the whole cluster (the primary, the N-1 backups, and the front's signed
  request and f+1 verified replies per PBFT request).  The signatures and verifications
  are *counted* in real replica processes (the primary r0 and a backup r1 run under
  cProfile in a separate run per B; the call counts of the two Ed25519 primitives divided
  by the commands executed), the cost of one of each is timed here
  (``pbft.ed25519_costs``).  Per command a replica pays the PBFT messages of its batch
  divided by B, plus one verification of the command's own envelope signature (the gate
  checks every envelope on every replica): so the bound rises with B towards
  ``cores / (N * verify)``, never beyond.  The earlier bound was one replica's
  (as if each replica had a core of its own), which overstates by N / cores what N
  replicas sharing the machine's cores could do; that share is still recorded
  (``share_of_per_replica_bound``), and so is the busiest replica's commands per
  CPU-second against it (``share_of_bound_per_replica_cpu_s``);
* **the target** (the issue's): with batching, the cluster reaches at least 50% of the
  bound for its batch size.  Recorded as met or not; where the time goes is the
  cProfile of the primary (by layer), from the same run.

The load generator is a minimal HTTP/1.1 keep-alive client on asyncio streams (httpx
costs more CPU than a replica on this 2-core machine); it shares the cores with the five
server processes, which the figures include.  About three minutes in all.
"""

from __future__ import annotations

import asyncio
import json
import os
import pstats
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import http_load  # noqa: E402
import pbft  # noqa: E402
from ostrom.cluster.supervisor import Cluster, create  # noqa: E402
from ostrom.consensus.crypto import derive_key  # noqa: E402
from ostrom.service.identity import public_hex, sign_envelope  # noqa: E402
from record import save  # noqa: E402

BATCH_SIZES = (1, 16, 64)
SYNCHRONOUS = ("FULL", "OFF")
N = 4
WARMUP_S = 1.5
MEASURE_S = 8.0
PROFILE_S = 5.0
TARGET_SHARE = 0.5  # the issue's: at least 50% of the Ed25519 bound for the batch size
KEY_SEED = b"bench-cluster"
#: propose_rate 1000: an agent may propose up to 1000 times in a round (no tick needed)
PARAMS = "propose_rate = 1000\n"


def concurrency(batch: int) -> int:
    """Agents posting at once: enough to fill a batch of B for several of the front's
    eight PBFT client identities, bounded so the load generator stays light."""
    return min(256, max(16, 4 * batch))


def agents(k: int) -> list[str]:
    return [f"a{i}" for i in range(k)]


def founders_toml(names: list[str]) -> str:
    lines = []
    for a in names:
        key = public_hex(derive_key(KEY_SEED, a))
        lines += ["[[founder]]", f'id = "{a}"', "tier = 2", "reputation = 0.9"]
        lines += ["evidence = 20", f'public_key = "{key}"', ""]
    return "\n".join(lines)


def envelopes(names: list[str], per_agent: int, community: str) -> dict[str, list[bytes]]:
    """Each agent's proposals for ``community``, signed in advance (the load generator
    only posts)."""
    out: dict[str, list[bytes]] = {}
    for a in names:
        key = derive_key(KEY_SEED, a)
        bodies = []
        for k in range(per_agent):
            cmd = {"op": "propose", "agent": a, "artifact": f"{a}-{k}", "slot": f"{a}-s{k}"}
            env = sign_envelope(key, a, k + 1, {**cmd, "digest": "d"}, community=community)
            bodies.append(json.dumps(env, separators=(",", ":")).encode())
        out[a] = bodies
    return out


# --- load (the minimal HTTP/1.1 client of bench/http_load.py) -------------------------------


async def load(
    url: str, work: dict[str, list[bytes]], seconds: float, pids: dict[str, int]
) -> dict[str, Any]:
    """``http_load.load`` with one stream per agent, and the commands per CPU-second of
    the busiest replica."""
    row = await http_load.load(url, list(work.values()), seconds, pids, WARMUP_S)
    used = row["cpu_seconds"]
    row["commands_per_replica_cpu_s"] = round(
        row["commands"] / max(1e-9, max(used[f"r{i}"] for i in range(N))), 1
    )
    return row


# --- one cluster run -----------------------------------------------------------------------


class ProfiledCluster(Cluster):
    """A cluster whose replicas ``profiled`` run under cProfile with a CPU-time clock
    (``bench/replica_profile.py``; stats written on their clean SIGTERM stop)."""

    def __init__(self, directory: Path, profiled: tuple[int, ...] = ()) -> None:
        super().__init__(directory)
        self.profiled = profiled

    def start_replica(self, i: int, byzantine: str | None = None, *, detach: bool = False) -> None:
        if i not in self.profiled:
            super().start_replica(i, byzantine, detach=detach)
            return
        # bench/replica_profile.py: cProfile with a CPU clock (bench/ on the path)
        bench = str(ROOT / "bench")
        if bench not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join(
                p for p in (bench, os.environ.get("PYTHONPATH")) if p
            )
        args = ["replica_profile", str(self.dir / f"r{i}.prof"), "--cluster"]
        self._spawn(f"r{i}", [*args, str(self.config_path), "--id", str(i)], detach=detach)


def run_cluster(
    directory: Path,
    batch: int,
    synchronous: str,
    seconds: float,
    profiled: tuple[int, ...] = (),
    timeout_ms: int = 1000,
) -> tuple[dict[str, Any], ProfiledCluster]:
    names = agents(concurrency(batch))
    (directory / "in").mkdir(parents=True)
    (directory / "in" / "founders.toml").write_text(founders_toml(names))
    (directory / "in" / "params.toml").write_text(PARAMS)
    create(
        directory / "c",
        n=N,
        batch_size=batch,
        synchronous=synchronous,
        base_timeout_ms=timeout_ms,
        seed=1,
        founders_file=directory / "in" / "founders.toml",
        params_file=directory / "in" / "params.toml",
    )
    c = ProfiledCluster(directory / "c", profiled)
    # enough envelopes per agent for the whole run at a generous rate
    per_agent = min(1000, max(50, int(4000 * seconds / len(names))))
    work = envelopes(names, per_agent, c.cfg.community)
    try:
        c.start(timeout=60)
        pids = {k: p.pid for k, p in c.procs.items()}
        row = asyncio.run(load(c.url, work, seconds, pids))
        front = json.loads(_get(c.url + "/status"))
        st = c.status()
    finally:
        codes = c.stop(timeout=30)
    executed = {i: s["last_executed"] if s else None for i, s in st.items()}
    row |= {
        "n": N,
        "batch_size": batch,
        "synchronous": synchronous,
        "agents": len(names),
        "front_requests": front["stats"].get("requests"),
        "front_commands": front["stats"].get("commands"),
        "commands_per_pbft_request": round(
            front["stats"].get("commands", 0) / max(1, front["stats"].get("requests", 1)), 2
        ),
        "pbft_requests_executed": executed,
        "clean_stop": all(code == 0 for code in codes.values()),
    }
    return row, c


def _get(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as resp:  # loopback
        data: bytes = resp.read()
        return data


# --- Ed25519 counts and where the time goes ------------------------------------------------

LAYERS = (
    ("crypto (Ed25519)", ("cryptography", "nacl", "ed25519", "crypto.py", "identity.py")),
    ("start-up (imports)", ("importlib", "<frozen", "marshal", "compile", "_imp.", "enum.py")),
    ("SQLite store", ("sqlite3", "storage.py")),
    ("encoding (JSON, canonical, message checks)", ("json", "messages.py")),
    ("copying (deepcopy)", ("copy.py",)),
    ("PBFT replica logic", ("consensus/replica/",)),
    (
        "the community (gate, protocol, state machines)",
        ("ostrom/protocol", "gate.py", "cluster/app.py", "transitions", "orchestrator"),
    ),
    ("asyncio and sockets", ("asyncio", "socket", "selectors", "wire.py", "links.py")),
)


def _layer(key: tuple[str, int, str]) -> str:
    path, _, name = key
    text = f"{path} {name}".lower()
    if "ed25519" in text or "cryptography" in text or "/nacl/" in text:
        return LAYERS[0][0]
    for layer, marks in LAYERS:
        if any(m in path for m in marks) or any(m in name for m in marks):
            return layer
    return "other"


def profile_counts(path: Path, commands: int) -> dict[str, Any]:
    """Ed25519 calls per command and the share of CPU per layer in one replica's profile."""
    st = pstats.Stats(str(path))
    calls: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    total = 0.0
    for key, (_cc, nc, tt, _ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        if key[0] == "~" and "Ed25519PrivateKey" in key[2] and "'sign'" in key[2]:
            calls["sign"] += nc
        if key[2] == "ed25519_verify" and key[0].endswith("crypto.py"):  # libsodium's
            calls["verify"] += nc
        layers[_layer(key)] += tt
        total += tt
    top = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:12]  # type: ignore[attr-defined]
    return {
        "top_functions_by_own_cpu": [
            f"{round(100 * tt / total, 1)}% {Path(k[0]).name}:{k[1]}({k[2]})"
            for k, (_cc, _nc, tt, _ct, _callers) in top
        ],
        "signatures_per_command": round(calls["sign"] / commands, 3),
        "verifications_per_command": round(calls["verify"] / commands, 3),
        "profiled_cpu_s": round(total, 2),
        "cpu_share_by_layer": {
            k: round(v / total, 3) for k, v in sorted(layers.items(), key=lambda kv: -kv[1])
        },
    }


def ed25519_bound(batch: int, tmp: Path, cost: dict[str, float]) -> dict[str, Any]:
    """The bounds for batch size ``batch``, from the Ed25519 calls counted in the primary
    and a backup (run under cProfile, sync OFF; the other backups do what r1 does) and
    the front's (one signed request per PBFT request, at least f+1 replies verified).

    * ``bound_commands_per_s_machine`` (the bound): the machine's cores divided by the
      Ed25519 CPU time one command costs the whole cluster (the primary, N-1 backups and
      the front): what this machine could do if signing and verifying were all the work;
    * ``bound_commands_per_replica_cpu_s``: what one replica could do on a core of its
      own (the slower of primary and backup).  The earlier bound: it compared the
      cluster's commands/s with one replica's core, overstating by N/cores (2x on 2
      cores) what 4 replicas sharing the machine could reach."""
    # a profiled primary is slow: a long view-change timeout keeps it the primary
    row, c = run_cluster(tmp, batch, "OFF", PROFILE_S, profiled=(0, 1), timeout_ms=10_000)
    commands = row["front_commands"] or 1
    per: dict[str, Any] = {}
    for i, role in ((0, "primary"), (1, "backup")):
        counts = profile_counts(c.dir / f"r{i}.prof", commands)
        s, v = counts["signatures_per_command"], counts["verifications_per_command"]
        counts["ed25519_us_per_command"] = round(s * cost["sign_us"] + v * cost["verify_us"], 2)
        counts["bound_commands_per_cpu_s"] = round(1e6 / counts["ed25519_us_per_command"], 1)
        per[role] = counts
    bound = min(
        per["primary"]["bound_commands_per_cpu_s"], per["backup"]["bound_commands_per_cpu_s"]
    )
    cmds_per_request = max(1.0, row["commands_per_pbft_request"] or 1.0)
    f = (N - 1) // 3
    front_us = (cost["sign_us"] + (f + 1) * cost["verify_us"]) / cmds_per_request
    cluster_us = (
        per["primary"]["ed25519_us_per_command"]
        + (N - 1) * per["backup"]["ed25519_us_per_command"]
        + front_us
    )
    cores = os.cpu_count() or 1
    return {
        "batch_size": batch,
        "profiled_run_commands": commands,
        "commands_per_pbft_request": row["commands_per_pbft_request"],
        "replicas": per,
        "front_ed25519_us_per_command": round(front_us, 2),
        "cluster_ed25519_us_per_command": round(cluster_us, 2),
        "cores": cores,
        "bound_commands_per_replica_cpu_s": bound,
        "bound_commands_per_s_machine": round(cores * 1e6 / cluster_us, 1),
    }


def measure(log: Any = print) -> dict[str, Any]:
    t_start = time.monotonic()
    log("cluster: Ed25519 costs and the in-process PBFT simulation (bench/pbft.py) ...")
    cost = pbft.ed25519_costs()
    with pbft.crypto_mode("ed25519"):
        in_process = pbft.durability()
    bounds: dict[int, dict[str, Any]] = {}
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ostrom-bench-cluster-") as d:
        for b in BATCH_SIZES:
            log(f"cluster: Ed25519 counts at batch size {b} (r0, r1 under cProfile) ...")
            bounds[b] = ed25519_bound(b, Path(d) / f"profile-{b}", cost)
        # FULL and OFF alternate per batch size: a change in the machine's other load
        # during the run then falls on both modes alike (the earlier order, every FULL
        # run first, once made OFF look slower than FULL: it ran later, with less CPU)
        for b in BATCH_SIZES:
            for sync in SYNCHRONOUS:
                log(f"cluster: batch size {b}, synchronous={sync} ...")
                row, _ = run_cluster(Path(d) / f"run-{b}-{sync}", b, sync, MEASURE_S)
                bound = bounds[b]["bound_commands_per_s_machine"]
                per_replica = bounds[b]["bound_commands_per_replica_cpu_s"]
                row["ed25519_bound"] = bound
                row["share_of_bound"] = round(row["commands_per_s"] / bound, 3)
                # the old definition's share: commands/s against one replica's own core
                row["share_of_per_replica_bound"] = round(row["commands_per_s"] / per_replica, 3)
                # commands per CPU-second of the busiest replica against one replica's
                # bound: robust to other work on the machine
                row["share_of_bound_per_replica_cpu_s"] = round(
                    row["commands_per_replica_cpu_s"] / per_replica, 3
                )
                row["target_met"] = row["share_of_bound"] >= TARGET_SHARE
                runs.append(row)
    batched = [r for r in runs if r["batch_size"] > 1]
    return {
        "n": N,
        "cpus": os.cpu_count(),
        "ed25519": cost,
        "cluster": runs,
        "ed25519_bound": {str(b): v for b, v in bounds.items()},
        "in_process_pbft_n4": in_process,
        "target": {
            "statement": "with batching, at least 50% of the Ed25519 bound for its batch size",
            "met_by": [
                f"B={r['batch_size']} {r['synchronous']}" for r in batched if r["target_met"]
            ],
            "not_met_by": [
                f"B={r['batch_size']} {r['synchronous']}" for r in batched if not r["target_met"]
            ],
        },
        "seconds": round(time.monotonic() - t_start, 1),
    }


def print_table(data: dict[str, Any]) -> None:
    print("B   sync  commands/s  p50 ms  p99 ms  cmds/request  bound  share  target")
    for r in data["cluster"]:
        print(
            f"{r['batch_size']:<3} {r['synchronous']:<5} {r['commands_per_s']:>10} "
            f"{r['latency_p50_ms']:>7} {r['latency_p99_ms']:>7} "
            f"{r['commands_per_pbft_request']:>13} {r['ed25519_bound']:>6} "
            f"{r['share_of_bound']:>6} {'met' if r['target_met'] else 'NOT met'}"
        )


if __name__ == "__main__":
    result = measure()
    save("cluster", result)
    print_table(result)
