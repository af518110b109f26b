"""The node's throughput (``python bench/service.py`` or ``bench/run.py --only service``).

What issue 14 asks, on this machine, in one run:

* ``Community.apply`` alone on the workload's commands (no signature, no log, no HTTP):
  the yardstick;
* ``Node.submit`` in process (signatures, the gate, the SQLite log), fsync on and off;
* ``ostrom serve`` in its own process over loopback HTTP, with one stream of requests
  and with 16 concurrent streams, fsync on and off: commands/s, p50/p99 latency, the
  server's CPU seconds per command, and how the group commit grouped them;
* the target: over HTTP with fsync off, at least 25% of ``Community.apply``'s commands/s;
* the cost as the log grows: ``Node.submit`` and ``Community.apply`` over the first 1k,
  10k and 100k commands (a snapshot's cost grows with the state; the snapshot policy is
  what keeps the write path's cost flat);
* start-up (replay from the latest snapshot, and ``--verify``: the whole log), the
  export as a trace at 500, 1k and 2k commands (ostrom-trace/2: each step carries a
  delta of the state, so it grows with the log; bench/trace_export.py goes to 100k).
  The node with 1,000, 10,000 and 100,000 agents is bench/tick.py's (what a tick costs
  as the community grows).

The workload: 32 founders (tier 2) each proposing an artifact into a slot of its own
(``propose_rate`` 1000: an agent may propose many times a round), and the operator's
tick after every 50 commands (a tick recomputes reputations and runs the timers).
Every envelope is signed in advance; the load generator (bench/http_load.py) only posts.
Each stream posts its agents' envelopes in order (an agent's seqs must arrive in order).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import http_load  # noqa: E402
from ostrom.consensus.crypto import derive_key  # noqa: E402
from ostrom.protocol.community import Community, Member  # noqa: E402
from ostrom.protocol.params import Params  # noqa: E402
from ostrom.service.export import export  # noqa: E402
from ostrom.service.gate import Founder, Setup  # noqa: E402
from ostrom.service.identity import canonical, public_hex, sign_envelope  # noqa: E402
from ostrom.service.node import Node  # noqa: E402
from record import save  # noqa: E402

SEED = b"bench-service"
FOUNDERS = tuple(f"f{i}" for i in range(32))
OPERATOR = "op"
TICK_EVERY = 50
PARAMS = Params(propose_rate=1000)
STREAMS = (1, 16)
WARMUP_S = 1.0
MEASURE_S = 8.0
TARGET_SHARE = 0.25  # the issue's: HTTP with fsync off at >= 25% of Community.apply
GROWTH = (1_000, 10_000, 100_000)


#: The benchmark community's id (every envelope is signed for it: ENV-1).
COMMUNITY = "be" * 16


def setup() -> Setup:
    founders = tuple(
        Founder(Member(f, tier=2, reputation=0.9, evidence=20.0), public_hex(derive_key(SEED, f)))
        for f in FOUNDERS
    )
    return Setup(founders, {OPERATOR: public_hex(derive_key(SEED, OPERATOR))}, COMMUNITY)


def newcomer_join(i: int) -> dict[str, Any]:
    """The signed ``join`` of the i-th newcomer, ``j{i}`` (the benches that grow the
    community: tick, memory)."""
    agent = f"j{i}"
    key = derive_key(SEED, agent)
    cmd = {"op": "join", "agent": agent}
    return sign_envelope(key, agent, 1, cmd, public_hex(key), community=COMMUNITY)


class Workload:
    """``n`` signed envelopes in one global order, and the same split by sender."""

    def __init__(self, n: int, tag: str = "") -> None:
        keys = {p: derive_key(SEED, p) for p in (*FOUNDERS, OPERATOR)}
        seq = dict.fromkeys(keys, 0)
        self.order: list[dict[str, Any]] = []
        i = 0
        while len(self.order) < n:
            if len(self.order) % TICK_EVERY == TICK_EVERY - 1:
                sender, cmd = OPERATOR, {"op": "tick"}
            else:
                sender = FOUNDERS[i % len(FOUNDERS)]
                cmd = {"op": "propose", "agent": sender, "artifact": f"{tag}a{i}"}
                cmd |= {"slot": f"{tag}s{i}", "digest": "d"}
                i += 1
            seq[sender] += 1
            env = sign_envelope(keys[sender], sender, seq[sender], cmd, community=COMMUNITY)
            self.order.append(env)

    def streams(self, k: int) -> list[list[bytes]]:
        """The envelopes as ``k`` request streams: each sender's in its order, the senders
        dealt round-robin to the streams (one stream: the global order)."""
        if k == 1:
            return [[canonical(e) for e in self.order]]
        senders = sorted({e["agent"] for e in self.order})
        slot = {a: j % k for j, a in enumerate(senders)}
        out: list[list[bytes]] = [[] for _ in range(k)]
        for e in self.order:
            out[slot[e["agent"]]].append(canonical(e))
        return out


def raw_apply(envs: list[dict[str, Any]]) -> float:
    """Commands/s of ``Community.apply`` alone on the same commands: no signature, no
    log, no HTTP (the yardstick of the issue's target)."""
    community = Community(PARAMS, [f.member for f in setup().founders])
    t = time.perf_counter()
    for e in envs:
        assert community.apply(e["command"])["result"] == "ok"
    return len(envs) / (time.perf_counter() - t)


def apply_window(envs: list[dict[str, Any]], start: int, end: int) -> float:
    """Commands/s of ``Community.apply`` over ``envs[start:end]``, after applying the
    ``start`` commands before them untimed: the yardstick for an HTTP run that measured
    those commands (the state grows with the log, and so does a command's cost: a
    yardstick over the first 3,000 commands flattered ``apply`` by up to 40%)."""
    community = Community(PARAMS, [f.member for f in setup().founders])
    for e in envs[:start]:
        community.apply(e["command"])
    t = time.perf_counter()
    for e in envs[start:end]:
        assert community.apply(e["command"])["result"] == "ok"
    return (end - start) / (time.perf_counter() - t)


def in_process(db: Path, envs: list[dict[str, Any]], fsync: bool) -> float:
    node = Node.open(db, params=PARAMS, setup=setup(), fsync=fsync)
    t = time.perf_counter()
    for e in envs:
        assert node.submit(e).status == 200
    dt = time.perf_counter() - t
    node.close()
    return len(envs) / dt


def founders_file(path: Path) -> Path:
    """The founders and the operator in the node's founders file format."""
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


def over_http(db: Path, work: Workload, fsync: bool, streams: int) -> dict[str, Any]:
    """``ostrom serve`` in its own process, loaded by ``streams`` concurrent streams for
    MEASURE_S seconds (after WARMUP_S); what ``http_load.load`` reports, plus the server's
    commands per CPU-second."""
    params = db.with_suffix(".params.toml")
    params.write_text(f"propose_rate = {PARAMS.propose_rate}\n")
    cmd = [sys.executable, "-m", "ostrom", "serve", "--db", str(db), "--port", "0"]
    cmd += ["--founders", str(founders_file(db.with_suffix(".toml"))), "--params", str(params)]
    cmd += ["--fsync", "on" if fsync else "off"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "reference")}
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        m = re.search(r"(http://\S+)", proc.stderr.readline())
        if m is None:
            raise RuntimeError("ostrom serve did not start")
        out = asyncio.run(
            http_load.load(
                m.group(1), work.streams(streams), MEASURE_S, {"node": proc.pid}, WARMUP_S
            )
        )
        out["log_length"] = json.loads(urllib.request.urlopen(m.group(1) + "/health").read())[
            "last_pos"
        ]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    out["commands_per_server_cpu_s"] = round(
        out["commands"] / max(1e-9, out["cpu_seconds"]["node"]), 1
    )
    return out


def growth(tmp: Path, work: Workload) -> list[dict[str, Any]]:
    """``Node.submit`` (fsync off) and ``Community.apply`` per command over the first 1k,
    10k and 100k commands of one growing log: the write path's cost must not grow with
    the history (snapshots are what could make it)."""
    node = Node.open(tmp / "growth.db", params=PARAMS, setup=setup(), fsync=False)
    community = Community(PARAMS, [f.member for f in setup().founders])
    out, done = [], 0
    node_s = apply_s = 0.0
    for upto in GROWTH:
        chunk = work.order[done:upto]
        t = time.perf_counter()
        for e in chunk:
            assert node.submit(e).status == 200
        node_s = time.perf_counter() - t
        t = time.perf_counter()
        for e in chunk:
            community.apply(e["command"])
        apply_s = time.perf_counter() - t
        out.append(
            {
                "commands": f"{done + 1}..{upto}",
                "node_submit_per_s": round(len(chunk) / node_s, 1),
                "apply_per_s": round(len(chunk) / apply_s, 1),
                "snapshots_so_far": len(node.store.snapshots()),
            }
        )
        done = upto
    node.close()
    return out


def export_cost(tmp: Path) -> list[dict[str, Any]]:
    """``ostrom log export`` of logs of 500, 1,000 and 2,000 commands.  A trace step holds
    the state as a delta against the step before: the export's time and size grow with
    the log's length (when a step held the whole state, they grew with its square)."""
    out = []
    for n in (500, 1_000, 2_000):
        db = tmp / f"export{n}.db"
        node = Node.open(db, params=PARAMS, setup=setup(), fsync=False)
        for e in Workload(n, "x").order:
            node.submit(e)
        node.close()
        t = time.perf_counter()
        export(db, tmp / "t.jsonl")
        dt = time.perf_counter() - t
        size = (tmp / "t.jsonl").stat().st_size
        out.append({"commands": n, "seconds": round(dt, 3), "megabytes": round(size / 1e6, 1)})
    return out


def measure() -> dict[str, Any]:
    n_http = 40_000  # more than MEASURE_S seconds can post at the rates seen
    work = Workload(n_http)
    first = work.order[:10_000]
    out: dict[str, Any] = {"founders": len(FOUNDERS), "tick_every": TICK_EVERY}
    out["raw_apply"] = round(raw_apply(first), 1)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for fsync in (True, False):
            k = "fsync_on" if fsync else "fsync_off"
            out[f"in_process_{k}"] = round(in_process(tmp / f"p{k}.db", first, fsync), 1)
            for streams in STREAMS:
                # the yardstick again right after: this machine's speed drifts by a
                # factor up to 1.5 over minutes (other tenants), so a share is taken
                # between two figures measured a few seconds apart
                row = over_http(tmp / f"h{streams}{k}.db", work, fsync, streams)
                # the yardstick right after, over the commands the run measured (the
                # last ones of its log: the warm-up's come first); with 16 streams
                # their order is not the global one, but their mix is
                end = row["log_length"]
                apply_now = apply_window(work.order, end - row["commands"], end)
                row["apply_over_the_same_commands"] = round(apply_now, 1)
                row["share_of_apply"] = round(row["commands_per_s"] / apply_now, 3)
                out[f"http_{streams}_streams_{k}"] = row
        best = max(out[f"http_{s}_streams_fsync_off"]["share_of_apply"] for s in STREAMS)
        out["target"] = {
            "http_fsync_off_best_share_of_apply": best,
            "required": TARGET_SHARE,
            "met": best >= TARGET_SHARE,
        }
        t = time.perf_counter()
        Node.open(tmp / "pfsync_on.db").close()
        out["restart_10k_s"] = round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        Node.open(tmp / "pfsync_on.db", verify=True).close()
        out["restart_10k_verify_s"] = round(time.perf_counter() - t, 3)
        out["export"] = export_cost(tmp)
        out["growth"] = growth(tmp, Workload(GROWTH[-1], "g"))
    return out


if __name__ == "__main__":
    save("service", measure())
