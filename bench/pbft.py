"""PBFT reference benchmark: throughput, messages per request and the cost of signing.

Everything runs on the deterministic, seeded simulated network of
``ostrom.harness.network`` (logical time, no real I/O), so seconds are the CPU cost of
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
  runs on, and are deleted afterwards.  Next to them, from the same run, the **Ed25519
  bound**: the requests per second this machine could reach if signing and verifying
  were the only work (Ed25519 signatures and verifications per request, counted in the
  run without a store, times their cost measured here);
* **retransmission** — view changes per 1,000 requests with 0, 5 and 20% of the messages
  lost (no faulty replica, random delivery order, ``RETRANSMISSION_SEEDS``), for the
  earlier scheduler (``retransmission="quiet"``: every replica retransmits when nothing
  is in flight) and the timer-driven one (a timer per message with back-off; docs/
  consensus.md, "Retransmission"), from the same seeds; with the messages, the
  retransmissions and the logical ticks per request that recovering costs.
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
from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import NULL_DIGEST, AnyMessage, Commit, Signed, ViewChange
from ostrom.consensus.storage import FileLocation
from ostrom.harness.byzantine import Silent
from ostrom.harness.network import Faults, Retransmission, Simulation, StoreFactory

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
ED25519_SAMPLES = 3000  # signatures and verifications timed for the Ed25519 bound
LOSS_RATES = (0.0, 0.05, 0.20)
SCHEDULERS: tuple[Retransmission, ...] = ("quiet", "timer")
RETRANSMISSION_SEEDS = (1, 2, 3)
# requests per run: 1,000 at N = 4 (3,000 per point); N = 7 costs about 3 times as much
RETRANSMISSION_REQUESTS = {4: 1000, 7: 500}
RETRANSMISSION_MAX_STEPS = 3_000_000  # a run that stalls stops at quiescence, long before


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
    seed: int = SEED,
    loss: float = 0.0,
    retransmission: Retransmission = "timer",
    must_finish: bool = True,
) -> dict[str, Any]:
    """Submit ``requests`` operations, run until every honest replica executed them all
    (durable replicas if ``stores`` says where their databases live; ``loss`` of the
    messages dropped, retransmitted by the ``retransmission`` scheduler).  A run that
    does not finish is an error unless ``must_finish`` is False (the earlier scheduler
    can stall: see ``retransmission_view_changes``)."""
    f = (n - 1) // 3
    sim = Simulation(
        n,
        f,
        seed,
        byzantine=faulty_replicas(n, scenario),
        faults=Faults(drop=loss) if loss else None,
        clients=CLIENTS,
        checkpoint_k=CHECKPOINT_K,
        stores=stores,
        retransmission=retransmission,
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
    steps = sim.run(50_000_000 if must_finish else RETRANSMISSION_MAX_STEPS, until=done)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if profile is not None:
        profile.disable()
    finished = done()
    if not finished and must_finish:
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
    honest_names = {f"r{i}" for i in sim.honest}
    timeouts = {  # a VIEW-CHANGE signed by an honest replica: its view-change timer expired
        (p.sender, p.message.new_view)
        for p in sent
        if isinstance(p, Signed) and isinstance(p.message, ViewChange) and p.sender in honest_names
    }
    stats = sim.network.stats
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
        "finished": finished,
        # requests executed at every honest replica (the workload's, not null requests)
        "executed_everywhere": min(sum(r.last_ts.get(c, 0) for c in per_client) for r in honest),
        "client_results": sum(len(c.results) for c in sim.clients.values()),
        # views installed: the highest view an honest replica is active in
        "view_changes": max((r.view for r in honest if r.active), default=0),
        "timeouts": len(timeouts),
        "dropped": stats["dropped"],
        "retransmitted": stats["retransmitted"],
        "periodic_retransmissions": stats["periodic_retransmissions"],
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
    crypto_paths = ("cryptography", "/nacl/")
    if "ed25519" in name.lower() or any(c in path for c in crypto_paths) or "crypto.py" in path:
        return "crypto (Ed25519, memoised verify)"
    if path.endswith("harness/network.py"):
        return "simulator (network.py)"
    if "/consensus/replica/" in path or path.endswith("consensus/client.py"):
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
        if key[2] == "ed25519_verify" and key[0].endswith("crypto.py"):  # libsodium's
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


def ed25519_costs(samples: int = ED25519_SAMPLES) -> dict[str, float]:
    """CPU microseconds of one Ed25519 signature and one verification (no memoisation)
    of a COMMIT, the most common message; Ed25519's cost hardly depends on the length
    of a message this short."""
    _ring, signers = make_keys(SEED, ["r0"])
    signer = signers["r0"]
    message = Commit(0, 1, NULL_DIGEST, 0)
    data = message.encoded
    public = crypto.public_bytes(signer._key)
    c0 = time.process_time()
    for _ in range(samples):
        signed = signer.sign(message)
    sign_s = (time.process_time() - c0) / samples
    verify = crypto._verify.__wrapped__  # the primitive, not the memoised cache
    c0 = time.process_time()
    for _ in range(samples):
        assert verify(public, data, signed.signature)
    verify_s = (time.process_time() - c0) / samples
    return {"sign_us": round(sign_s * 1e6, 1), "verify_us": round(verify_s * 1e6, 1)}


@contextmanager
def counting_signatures(counter: Counter[str]) -> Iterator[None]:
    """Count ``Signer.sign`` calls into ``counter["signatures"]`` (undone on exit)."""
    original = crypto.Signer.sign

    def sign(self: crypto.Signer, message: AnyMessage) -> Signed:
        counter["signatures"] += 1
        return original(self, message)

    crypto.Signer.sign = sign  # type: ignore[method-assign]
    try:
        yield
    finally:
        crypto.Signer.sign = original  # type: ignore[method-assign]


def durability(requests: int = DURABILITY_REQUESTS) -> dict[str, Any]:
    """Requests per second at N = 4 without a store, and with every replica durable
    (SQLite files, one transaction per step that changes the durable state, written
    before the step's sends are released) with fsync off and on; and, from the same
    run, the Ed25519 bound.  Wall-clock seconds include the waits for the disk, which
    CPU seconds do not.

    The bound is 1 / (signatures per request x the cost of one + verifications per
    request x the cost of one): the requests per CPU-second if signing and verifying were
    the only work.  ``memoised`` counts the Ed25519 verifications the simulation makes
    (one per distinct message, as shipped); ``every_receipt`` one per message received,
    what replicas on separate machines pay."""
    rows: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    for mode in DURABILITY_MODES:
        with tempfile.TemporaryDirectory(prefix="ostrom-pbft-bench-") as d:
            directory = Path(d)
            stores = None if mode == "none" else _file_stores(directory, mode.split("=")[1])
            with crypto_mode("ed25519"):
                if mode == "none":
                    with counting_signatures(counts):
                        r = run_once(4, "none", requests, stores=stores)
                    cache = crypto._verify.cache_info()
                    counts["verifications"] = cache.misses
                    counts["verify_calls"] = cache.hits + cache.misses
                else:
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
    cost = ed25519_costs()
    per_request = {k: counts[k] / requests for k in ("signatures", "verifications", "verify_calls")}
    sign_s, verify_s = cost["sign_us"] / 1e6, cost["verify_us"] / 1e6

    def bound(verifications: float) -> float:
        return round(1 / (per_request["signatures"] * sign_s + verifications * verify_s), 1)

    return {
        "rows": rows,
        "ed25519": {
            **cost,
            "signatures_per_request": round(per_request["signatures"], 2),
            "verifications_per_request": round(per_request["verifications"], 2),
            "verify_calls_per_request": round(per_request["verify_calls"], 2),
            "bound_requests_per_cpu_s": {
                "memoised": bound(per_request["verifications"]),
                "every_receipt": bound(per_request["verify_calls"]),
            },
        },
    }


def retransmission_view_changes() -> dict[str, Any]:
    """View changes per 1,000 requests with 0, 5 and 20% of the messages lost and no
    faulty replica, for each retransmission scheduler, from the same seeds.

    ``view_changes`` counts views installed (the highest view an honest replica is
    active in); ``timeouts`` counts VIEW-CHANGEs signed by honest replicas (a replica
    whose timer expired, whether or not a view change followed: one that times out
    alone leaves the others without it).  Both are per 1,000 requests submitted; a run
    that stalls (``finished`` False) stops at quiescence and is reported as it stands,
    its costs (messages, retransmissions, ticks, CPU) per request it executed at every
    honest replica."""
    runs: list[dict[str, Any]] = []
    for n, requests in RETRANSMISSION_REQUESTS.items():
        for loss in LOSS_RATES:
            for scheduler in SCHEDULERS:
                for seed in RETRANSMISSION_SEEDS:
                    with crypto_mode("ed25519"):
                        r = run_once(
                            n,
                            "none",
                            requests,
                            seed=seed,
                            loss=loss,
                            retransmission=scheduler,
                            must_finish=False,
                        )
                    done = max(1, r["executed_everywhere"])  # a stalled run: what it did
                    runs.append(
                        {
                            "n": n,
                            "loss": loss,
                            "scheduler": scheduler,
                            "seed": seed,
                            "requests": requests,
                            "finished": r["finished"],
                            "executed_everywhere": r["executed_everywhere"],
                            "view_changes": r["view_changes"],
                            "timeouts": r["timeouts"],
                            "view_changes_per_1000": round(1000 * r["view_changes"] / requests, 1),
                            "timeouts_per_1000": round(1000 * r["timeouts"] / requests, 1),
                            # per request executed at every honest replica
                            "messages_per_request": round(r["messages"] / done, 1),
                            "dropped_per_request": round(r["dropped"] / done, 2),
                            "retransmitted_per_request": round(r["retransmitted"] / done, 2),
                            "logical_ticks_per_request": round(r["logical_ticks"] / done, 1),
                            "cpu_seconds": r["cpu_seconds"],
                            "requests_per_cpu_s": round(done / r["cpu_seconds"], 1),
                        }
                    )
    summary: list[dict[str, Any]] = []
    for n in RETRANSMISSION_REQUESTS:
        for loss in LOSS_RATES:
            for scheduler in SCHEDULERS:
                group = [
                    r for r in runs if (r["n"], r["loss"], r["scheduler"]) == (n, loss, scheduler)
                ]
                summary.append(
                    {
                        "n": n,
                        "loss": loss,
                        "scheduler": scheduler,
                        "runs": len(group),
                        "finished": sum(r["finished"] for r in group),
                        **{
                            f"{k}_mean": round(sum(r[k] for r in group) / len(group), 2)
                            for k in (
                                "view_changes_per_1000",
                                "timeouts_per_1000",
                                "messages_per_request",
                                "retransmitted_per_request",
                                "logical_ticks_per_request",
                                "requests_per_cpu_s",
                            )
                        },
                        "view_changes_per_1000": [r["view_changes_per_1000"] for r in group],
                        "timeouts_per_1000": [r["timeouts_per_1000"] for r in group],
                    }
                )
    return {
        "seeds": list(RETRANSMISSION_SEEDS),
        "requests": {str(n): k for n, k in RETRANSMISSION_REQUESTS.items()},
        "summary": summary,
        "runs": runs,
    }


def measure(log: Callable[[str], None] = print) -> dict[str, Any]:
    t0 = time.perf_counter()
    load_before = os.getloadavg()[0]
    log("pbft: throughput and messages per request ...")
    rows = throughput()
    log("pbft: cost of signing ...")
    crypto_rows = signing_cost()
    log("pbft: profile ...")
    prof = profile_shares()
    log("pbft: durability (SQLite, fsync on and off) and the Ed25519 bound ...")
    durable = durability()
    log("pbft: view changes under loss, per retransmission scheduler ...")
    loss = retransmission_view_changes()
    return {
        "seed": SEED,
        "clients": CLIENTS,
        "checkpoint_k": CHECKPOINT_K,
        "app": "CounterApp",
        "network": "Simulation, random delivery order, no loss (but in retransmission), "
        "timer-driven retransmission",
        "throughput": rows,
        "signing_cost": crypto_rows,
        "profile": prof,
        "durability": durable["rows"],
        "ed25519_bound": durable["ed25519"],
        "retransmission": loss,
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
    tables = [t, c, pt, dt]
    bound = data.get("ed25519_bound")
    if bound is not None:
        bt = Table(title="Ed25519 bound, N=4, same run: requests/CPU-s if signatures were all")
        for col in ("sign µs", "verify µs", "sig/req", "verif/req", "memoised", "every receipt"):
            bt.add_column(col, justify="right")
        b = bound["bound_requests_per_cpu_s"]
        bt.add_row(
            f"{bound['sign_us']:.0f}",
            f"{bound['verify_us']:.0f}",
            f"{bound['signatures_per_request']:.1f}",
            f"{bound['verifications_per_request']:.1f}",
            f"{b['memoised']:.0f}",
            f"{b['every_receipt']:.0f}",
        )
        tables.append(bt)
    loss = data.get("retransmission")
    if loss is not None:
        lt = Table(title="View changes per 1,000 requests under loss (no faulty replica)")
        heads = ("N", "loss", "scheduler", "finished", "views/1000", "timeouts/1000")
        for col in (*heads, "msg/req", "retx/req", "ticks/req", "req/cpu-s"):
            lt.add_column(col, justify="left" if col == "scheduler" else "right")
        for r in loss["summary"]:
            lt.add_row(
                str(r["n"]),
                f"{r['loss']:.0%}",
                r["scheduler"],
                f"{r['finished']}/{r['runs']}",
                f"{r['view_changes_per_1000_mean']:.1f} {r['view_changes_per_1000']}",
                f"{r['timeouts_per_1000_mean']:.1f} {r['timeouts_per_1000']}",
                f"{r['messages_per_request_mean']:.1f}",
                f"{r['retransmitted_per_request_mean']:.2f}",
                f"{r['logical_ticks_per_request_mean']:.0f}",
                f"{r['requests_per_cpu_s_mean']:.0f}",
            )
        tables.append(lt)
    console = Console(width=max(Console().width, 120))  # piped output defaults to 80
    for table in tables:
        console.print(table)
