"""PBFT reference benchmark: throughput, messages per request and the cost of signing.

Everything runs on the deterministic, seeded simulated network of
``ostrom.consensus.network`` (logical time, no real I/O), so seconds are the CPU cost of
the replicas, the clients, Ed25519 and the simulator itself.  The replicated service is
the protocol tests' ``CounterApp`` (the orchestrator is benchmarked on its own).

* **throughput** — ``CLIENTS`` clients, one outstanding request each, submit ``requests``
  operations; the clock stops when every honest replica has executed every one of them.
  N = 4, 7, 10, 13 (f = (N-1)//3), with no faulty replica, a silent backup (the last
  replica) and a silent primary (replica 0: a view change before anything executes);
* **messages per request** — every message handed to the network, by type, and its
  wire bytes (``Signed.encoded``, computed after the clock stops), against the normal-case
  count of Castro & Liskov without batching: request 1, pre-prepare N-1, prepare
  (N-1)^2, commit N(N-1), reply N, checkpoint N(N-1)/K per request (K = checkpoint
  interval); a silent replica's own sends (prepare N-1, commit N-1, reply 1, checkpoint
  (N-1)/K) are taken out of the expectation, messages *to* it stay in;
* **cost of signing** — the same runs with the Ed25519 primitives replaced by stubs
  (the canonical encoding is still computed), with verification memoised as shipped
  (``crypto._verify`` is an LRU cache shared by the replicas of one process, so a
  broadcast is verified once, not once per receiver) and with memoisation switched off
  (what a deployment pays: every receiver verifies); plus one cProfile run for N=4
  giving the share of each layer.  The patches are applied to the running process only
  and undone afterwards; the reference code is not changed;
* **durability** — the same N = 4 workload (``DURABILITY_REQUESTS``, no faults) with the
  replicas durable (``storage.DurableReplica``: each step's durable state committed to
  its own SQLite file before its sends are released) with ``synchronous=FULL`` (an
  fsync per transaction), with ``synchronous=OFF`` (the OS writes when it likes), and
  without a store; the files live in a temporary directory, on the disk the benchmark
  runs on, and are deleted afterwards.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ostrom.consensus import crypto
from ostrom.consensus.byzantine import Silent
from ostrom.consensus.messages import AnyMessage, Signed
from ostrom.consensus.network import Simulation, StoreFactory
from ostrom.consensus.storage import FileLocation

SEED = 1
CLIENTS = 4
CHECKPOINT_K = 16  # Simulation's default, stated for the theoretical count
SIZES = (4, 7, 10, 13)
# chosen so that each run takes a few seconds on one core
REQUESTS = {4: 1000, 7: 1000, 10: 500, 13: 300}
SCENARIOS = ("none", "silent-backup", "silent-primary")
CRYPTO_RUNS = {4: 1000, 13: 200}  # N -> requests for the signing-cost comparison
PROFILE_REQUESTS = 300
DURABILITY_REQUESTS = 200  # an fsync costs milliseconds: a few hundred transactions/s
DURABILITY_MODES = ("none", "synchronous=OFF", "synchronous=FULL")


def faulty_replicas(n: int, scenario: str) -> dict[int, Silent]:
    if scenario == "none":
        return {}
    if scenario == "silent-backup":
        return {n - 1: Silent()}
    if scenario == "silent-primary":
        return {0: Silent()}
    raise ValueError(scenario)


def expected_messages(n: int, silent: bool) -> dict[str, float]:
    """Normal-case messages per request (no batching); a silent replica sends nothing."""
    k = CHECKPOINT_K
    exp = {
        "Request": 1.0,
        "PrePrepare": n - 1.0,
        "Prepare": (n - 1.0) ** 2,
        "Commit": n * (n - 1.0),
        "Reply": float(n),
        "Checkpoint": n * (n - 1.0) / k,
    }
    if silent:  # the silent replica is a backup in the view that executes
        exp["Prepare"] -= n - 1
        exp["Commit"] -= n - 1
        exp["Reply"] -= 1
        exp["Checkpoint"] -= (n - 1) / k
    return exp


# --- crypto modes (process-local patches, undone on exit) ----------------------------------

_ZERO_SIGNATURE = bytes(64)


def _stub_sign(self: crypto.Signer, message: AnyMessage) -> Signed:
    message.encoded  # noqa: B018  (keep the canonical-encoding cost of a real signature)
    return Signed(message, self.principal, _ZERO_SIGNATURE)


def _stub_verify(public: bytes, data: bytes, signature: bytes) -> bool:
    return len(signature) == 64


@contextmanager
def crypto_mode(mode: str) -> Iterator[None]:
    """``ed25519`` (as shipped), ``ed25519-every-receipt`` (no memoised verify) or
    ``stub`` (no signing or verifying at all)."""
    original_verify = crypto._verify
    original_sign = crypto.Signer.sign
    original_verify.cache_clear()  # same seed, same signatures: no hits from an earlier run
    try:
        if mode == "ed25519-every-receipt":
            crypto._verify = original_verify.__wrapped__  # type: ignore[assignment]
        elif mode == "stub":
            crypto._verify = _stub_verify  # type: ignore[assignment]
            crypto.Signer.sign = _stub_sign  # type: ignore[method-assign]
        elif mode != "ed25519":
            raise ValueError(mode)
        yield
    finally:
        crypto._verify = original_verify
        crypto.Signer.sign = original_sign  # type: ignore[method-assign]


# --- one run ------------------------------------------------------------------------------


def run_once(
    n: int,
    scenario: str,
    requests: int,
    *,
    profile: cProfile.Profile | None = None,
    stores: StoreFactory | None = None,
) -> dict[str, Any]:
    """Submit ``requests`` operations, run until every honest replica executed them all
    (durable replicas if ``stores`` says where their databases live)."""
    f = (n - 1) // 3
    sim = Simulation(
        n,
        f,
        SEED,
        byzantine=faulty_replicas(n, scenario),
        clients=CLIENTS,
        checkpoint_k=CHECKPOINT_K,
        stores=stores,
    )
    sent: list[Signed | bytes] = []
    network_send = sim.network.send

    def counting_send(src: str, dst: str, payload: Signed | bytes, delay: int = 0) -> None:
        sent.append(payload)
        network_send(src, dst, payload, delay)

    sim.network.send = counting_send  # type: ignore[method-assign]
    names = list(sim.clients)
    per_client = Counter(names[k % len(names)] for k in range(requests))
    honest = [sim.replicas[i] for i in sim.honest]

    def done() -> bool:  # O(clients x replicas): Simulation.all_executed is O(history)
        return all(r.last_ts.get(c, 0) == m for r in honest for c, m in per_client.items())

    if profile is not None:
        profile.enable()
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(requests):
        sim.submit(names[k % len(names)], {"op": "bench", "k": k})
    steps = sim.run(50_000_000, until=done)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if profile is not None:
        profile.disable()
    if not done():
        raise SystemExit(f"pbft benchmark N={n} {scenario}: not every request executed")
    logs = [r.executed_log for r in honest]
    shortest = min(len(log) for log in logs)
    if any(log[:shortest] != logs[0][:shortest] for log in logs):
        raise SystemExit(f"pbft benchmark N={n} {scenario}: honest logs disagree (BFT-SAFE-2)")
    transactions = sum(d.store.transactions for d in sim.durable.values())
    sim.close()

    by_type: Counter[str] = Counter()
    wire_bytes = 0
    for p in sent:
        if isinstance(p, Signed):
            by_type[type(p.message).__name__] += 1
            wire_bytes += len(p.encoded)
        else:
            by_type["bytes"] += 1
            wire_bytes += len(p)
    silent = scenario != "none"
    expected = expected_messages(n, silent)
    measured_total = len(sent) / requests
    expected_total = sum(expected.values())
    rejected: Counter[str] = Counter()
    for r in honest:
        rejected.update(r.rejected)
    row: dict[str, Any] = {
        "n": n,
        "f": f,
        "faulty": scenario,
        "clients": CLIENTS,
        "requests": requests,
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "requests_per_s": round(requests / seconds, 1),
        "requests_per_cpu_s": round(requests / cpu, 1),
        "messages": len(sent),
        "messages_per_request": round(measured_total, 2),
        "expected_messages_per_request": round(expected_total, 2),
        "measured_over_expected": round(measured_total / expected_total, 3),
        "messages_per_request_by_type": {
            t: round(c / requests, 2) for t, c in sorted(by_type.items())
        },
        "expected_by_type": {t: round(v, 2) for t, v in expected.items()},
        "bytes_per_request": round(wire_bytes / requests),
        "deliveries": steps,
        "logical_ticks": sim.network.now,
        "final_view": max(r.view for r in honest),
        "view_change_messages": by_type["ViewChange"],
        # a replica left behind a stable checkpoint fetches the certified log (no loss here:
        # random delivery order alone lets a replica that no quorum needs fall behind)
        "state_transfer_messages": by_type["StateTransfer"],
        "null_requests_executed": sum(x is None for x in honest[0].history),
        "rejected_at_honest_replicas": dict(sorted(rejected.items())),
    }
    if stores is not None:
        row["store_transactions"] = transactions
        row["store_transactions_per_request"] = round(transactions / requests, 2)
    return row


def throughput() -> list[dict[str, Any]]:
    rows = []
    for n in SIZES:
        for scenario in SCENARIOS:
            with crypto_mode("ed25519"):
                rows.append(run_once(n, scenario, REQUESTS[n]))
    return rows


def signing_cost() -> list[dict[str, Any]]:
    """CPU seconds per crypto mode (no faults); crypto share = 1 - stub / mode (CPU time,
    which other processes on the machine disturb less than wall-clock time)."""
    rows = []
    for n, requests in CRYPTO_RUNS.items():
        seconds: dict[str, float] = {}
        for mode in ("ed25519", "ed25519-every-receipt", "stub"):
            with crypto_mode(mode):
                info_before = crypto._verify
                r = run_once(n, "none", requests)
                cache = info_before.cache_info() if mode == "ed25519" else None
            seconds[mode] = r["cpu_seconds"]
            row: dict[str, Any] = {
                "n": n,
                "mode": mode,
                "requests": requests,
                "seconds": r["seconds"],
                "cpu_seconds": r["cpu_seconds"],
                "requests_per_s": r["requests_per_s"],
                "requests_per_cpu_s": r["requests_per_cpu_s"],
            }
            if cache is not None:
                row["verify_calls"] = cache.hits + cache.misses
                row["ed25519_verifications"] = cache.misses
            rows.append(row)
        for row in rows[-3:]:
            if row["mode"] != "stub":
                row["crypto_share"] = round(1 - seconds["stub"] / row["cpu_seconds"], 3)
    return rows


def _layer(key: tuple[str, int, str]) -> str:
    path, _line, name = key
    if "ed25519" in name.lower() or "cryptography" in path or path.endswith("crypto.py"):
        return "crypto (Ed25519, memoised verify)"
    if path.endswith("consensus/network.py"):
        return "simulator (network.py)"
    if path.endswith(("consensus/replica.py", "consensus/client.py")):
        return "replica and client logic"
    if path.endswith("consensus/messages.py") or "/json/" in path or "json" in name:
        return "messages and canonical JSON"
    if path.endswith("pbft.py"):
        return "benchmark harness"
    return "other (builtins, hashing, dataclasses)"


def profile_shares() -> dict[str, Any]:
    """cProfile one N=4 fault-free run; share of own time per layer."""
    prof = cProfile.Profile()
    with crypto_mode("ed25519"):
        run_once(4, "none", PROFILE_REQUESTS, profile=prof)
    stats: dict[Any, Any] = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.values())
    layers: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    for key, (_cc, nc, tottime, _ct, _callers) in stats.items():
        layers[_layer(key)] += tottime
        if key[0] == "~" and "Ed25519PrivateKey" in key[2] and "'sign'" in key[2]:
            calls["ed25519_sign"] += nc
        if key[0] == "~" and "Ed25519PublicKey" in key[2] and "'verify'" in key[2]:
            calls["ed25519_verify"] += nc
    return {
        "n": 4,
        "requests": PROFILE_REQUESTS,
        "profiled_seconds": round(total, 3),
        "share_of_time": {k: round(v / total, 3) for k, v in layers.most_common()},
        "calls_per_request": {k: round(v / PROFILE_REQUESTS, 2) for k, v in calls.items()},
    }


def _file_stores(directory: Path, synchronous: str) -> StoreFactory:
    return lambda i: FileLocation(directory / f"r{i}.sqlite3", synchronous=synchronous)


def durability(requests: int = DURABILITY_REQUESTS) -> list[dict[str, Any]]:
    """Requests per second at N = 4 without a store, and with every replica durable
    (SQLite files, one transaction per step that changes the durable state, written
    before the step's sends are released) with fsync off and on.  Wall-clock seconds
    include the waits for the disk, which CPU seconds do not."""
    rows: list[dict[str, Any]] = []
    for mode in DURABILITY_MODES:
        with tempfile.TemporaryDirectory(prefix="ostrom-pbft-bench-") as d:
            directory = Path(d)
            stores = None if mode == "none" else _file_stores(directory, mode.split("=")[1])
            with crypto_mode("ed25519"):
                r = run_once(4, "none", requests, stores=stores)
            size = sum(p.stat().st_size for p in directory.iterdir())
        row = {
            "n": 4,
            "store": mode,
            "requests": requests,
            "seconds": r["seconds"],
            "cpu_seconds": r["cpu_seconds"],
            "requests_per_s": r["requests_per_s"],
            "requests_per_cpu_s": r["requests_per_cpu_s"],
        }
        if mode != "none":
            row["transactions_per_request"] = r["store_transactions_per_request"]
            row["database_bytes_per_request"] = round(size / requests)
        rows.append(row)
    for row in rows:
        row["throughput_vs_no_store"] = round(row["requests_per_s"] / rows[0]["requests_per_s"], 3)
    return rows


def measure(log: Callable[[str], None] = print) -> dict[str, Any]:
    t0 = time.perf_counter()
    load_before = os.getloadavg()[0]
    log("pbft: throughput and messages per request ...")
    rows = throughput()
    log("pbft: cost of signing ...")
    crypto_rows = signing_cost()
    log("pbft: profile ...")
    prof = profile_shares()
    log("pbft: durability (SQLite, fsync on and off) ...")
    durable_rows = durability()
    return {
        "seed": SEED,
        "clients": CLIENTS,
        "checkpoint_k": CHECKPOINT_K,
        "app": "CounterApp",
        "network": "Simulation, random delivery order, no loss",
        "throughput": rows,
        "signing_cost": crypto_rows,
        "profile": prof,
        "durability": durable_rows,
        "benchmark_seconds": round(time.perf_counter() - t0, 1),
        # other work on the machine inflates wall-clock seconds; CPU seconds are given too
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


SHORT = {"none": "-", "silent-backup": "backup", "silent-primary": "primary"}


def print_tables(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="PBFT on the simulated network: requests executed at every honest replica")
    cols = ("N", "f", "silent", "req", "wall s", "req/s", "cpu s", "req/cpu-s", "msg/req")
    for col in (*cols, "theory", "meas/th", "KiB/req", "xfers", "view"):
        t.add_column(col, justify="left" if col == "silent" else "right")
    for r in data["throughput"]:
        t.add_row(
            str(r["n"]),
            str(r["f"]),
            SHORT[r["faulty"]],
            str(r["requests"]),
            f"{r['seconds']:.2f}",
            f"{r['requests_per_s']:.0f}",
            f"{r['cpu_seconds']:.2f}",
            f"{r['requests_per_cpu_s']:.0f}",
            f"{r['messages_per_request']:.1f}",
            f"{r['expected_messages_per_request']:.1f}",
            f"{r['measured_over_expected']:.3f}",
            f"{r['bytes_per_request'] / 1024:.1f}",
            str(r["state_transfer_messages"]),
            str(r["final_view"]),
        )
    c = Table(title="Cost of signing (no faults; share from CPU seconds)")
    for col in ("N", "crypto", "req", "wall s", "cpu s", "req/cpu-s", "crypto share"):
        c.add_column(col, justify="left" if col == "crypto" else "right")
    for r in data["signing_cost"]:
        share = r.get("crypto_share")
        c.add_row(
            str(r["n"]),
            r["mode"],
            str(r["requests"]),
            f"{r['seconds']:.2f}",
            f"{r['cpu_seconds']:.2f}",
            f"{r['requests_per_cpu_s']:.0f}",
            "" if share is None else f"{share:.0%}",
        )
    p = data["profile"]
    pt = Table(title=f"cProfile, N=4, {p['requests']} requests: share of own time")
    pt.add_column("layer")
    pt.add_column("share", justify="right")
    for k, v in p["share_of_time"].items():
        pt.add_row(k, f"{v:.0%}")
    dt = Table(title="Durability, N=4: each step's durable state in SQLite before its sends")
    for col in ("store", "req", "wall s", "req/s", "cpu s", "req/cpu-s", "txn/req", "vs none"):
        dt.add_column(col, justify="left" if col == "store" else "right")
    for r in data.get("durability", []):
        dt.add_row(
            r["store"],
            str(r["requests"]),
            f"{r['seconds']:.2f}",
            f"{r['requests_per_s']:.0f}",
            f"{r['cpu_seconds']:.2f}",
            f"{r['requests_per_cpu_s']:.0f}",
            f"{r.get('transactions_per_request', 0):.1f}",
            f"{r['throughput_vs_no_store']:.2f}",
        )
    console = Console(width=max(Console().width, 120))  # piped output defaults to 80
    for table in (t, c, pt, dt):
        console.print(table)
