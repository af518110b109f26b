"""Benchmark of ``ostrom log export`` and ``ostrom validate-trace`` on a node's log (issue 42,
items 2 and 4): export bytes and seconds at 1k, 10k and 100k commands, and validate-trace
seconds where it completes within its time limit.

The logs are the node's own: ``bench/service.py``'s workload (32 founders, signed
proposals, a tick by the operator every 50 commands) submitted to ``Node`` (its store,
fsync off), so the log holds what a node under load holds.  The artifacts accumulate (no
artifact leaves the public state), which is what made a trace of whole states grow as the
square of the log.  Each log is built once and cached under ``build/trace_export/``.

Export is timed as ``ostrom log export`` runs it (``service.export.export``: the replay,
the comparison of every observation with the logged one, the deltas).  Validation runs
``validate_file`` exactly as ``ostrom validate-trace FILE`` does, with a time limit
(``--validate-timeout``); a run that does not finish in it is recorded as such, with the
steps TLC had followed by then.  Target: the 100k figure at most 120x the 1k one.

Validation checks a long log in chunks of ``CHUNK_STEPS`` steps (LifecycleTrace.tla:
"Chunks"); each row records the chunk size, the chunks done, the seconds each took and the
load average (the machine is shared), and the JVM options of a chunk's run
(``tlc.CHUNK_JVM``).  ``--validate-only`` re-measures validation and keeps the committed
export rows, and the rows of ``validate_one_line``: the same measurement before the
TraceLog module was written an element a line (SANY's parse time grows with the square of a
line's length), and of ``validate_both_tiers``: before a chunk's JVM ran the first JIT tier
only (docs/conformance.md quotes all three).  A long run: ``--validate 100000
--validate-timeout 40000`` (the limit is the whole log's).

Usage: python bench/trace_export.py [--commands 1000 10000 100000]
       [--validate 1000 ...] [--validate-timeout S] [--validate-only]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from ostrom.service.export import export  # noqa: E402
from ostrom.service.node import Node  # noqa: E402
from ostrom.service.store import Store, StoreError  # noqa: E402
from ostrom.verify.trace.lifecycle_check import CHUNK_STEPS  # noqa: E402
from ostrom.verify.trace.tlc import CHUNK_JVM  # noqa: E402
from ostrom.verify.trace.validate import validate_file  # noqa: E402
from record import RESULTS, save  # noqa: E402
from service import PARAMS, Workload, setup  # noqa: E402

CACHE = ROOT / "build" / "trace_export"
TARGET_RATIO = 120  # issue 42: the 100k figure at most 120x the 1k one


def node_log(n: int) -> Path:
    """A node database holding ``n`` logged commands (built once, then cached)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    db = CACHE / f"node-{n}.db"
    if db.exists():
        try:  # a store of an older schema (or signed otherwise) is rebuilt, not refused
            Store.open(db).close()
            return db
        except StoreError:
            db.unlink()
    part = db.with_name(db.name + ".part")
    for p in part.parent.glob(part.name + "*"):
        p.unlink()
    node = Node.open(part, params=PARAMS, setup=setup(), fsync=False)
    for e in Workload(n, "x").order:
        assert node.submit(e).status == 200
    node.close()
    part.replace(db)
    return db


def measure_export(n: int) -> dict[str, Any]:
    db = node_log(n)
    out = CACHE / f"trace-{n}.jsonl"
    t = time.perf_counter()
    steps = export(db, out)
    seconds = time.perf_counter() - t
    size = out.stat().st_size
    return {
        "commands": n,
        "steps": steps,
        "seconds": round(seconds, 3),
        "bytes": size,
        "bytes_per_command": round(size / n, 1),
        "seconds_per_10k_commands": round(seconds * 10_000 / n, 3),
    }


def measure_validate(n: int, timeout: float) -> dict[str, Any]:
    trace = CACHE / f"trace-{n}.jsonl"
    if not trace.exists():
        export(node_log(n), trace)
    followed = [0]
    chunks: list[float] = []  # the monotonic time each chunk started
    cpu: list[float] = []  # and the CPU seconds spent by then (TLC's and this process's)
    load = [os.getloadavg()[0]]

    def cpu_seconds() -> float:
        # CPU time is what a shared machine does not inflate: the wall clock under a load
        # average of 40 on 2 cores is mostly waiting
        used = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            r = resource.getrusage(who)
            used += r.ru_utime + r.ru_stime
        return used

    def progress(text: str) -> None:
        if "steps followed" in text:
            followed[0] = int(text.split()[1].split("/")[0])
        if text.startswith("TLC: chunk "):
            chunks.append(time.perf_counter())
            cpu.append(cpu_seconds())
            load.append(os.getloadavg()[0])
            done = int(text.split("steps ")[1].split("-")[0]) - 1
            followed[0] = max(followed[0], done)
            print(
                f"  {n}: {text} ({chunks[-1] - t:.0f} s, {cpu[-1] - cpu0:.0f} CPU s, "
                f"load {load[-1]:.0f})",
                file=sys.stderr,
                flush=True,
            )

    cpu0 = cpu_seconds()
    t = time.perf_counter()
    verdict = validate_file(trace, timeout=timeout, progress=progress)
    seconds = time.perf_counter() - t
    cpu_total = cpu_seconds() - cpu0
    load.append(os.getloadavg()[0])
    row: dict[str, Any] = {
        "commands": n,
        "status": verdict.status,
        "seconds": round(seconds, 1),
        "steps_followed": verdict.matched if verdict.status == "accepted" else followed[0],
        "tlc_distinct_states": verdict.distinct_states,
        "chunk_steps": CHUNK_STEPS,
        "chunk_jvm_options": list(CHUNK_JVM),
        "chunks": len(chunks),
        "chunk_seconds": [
            round(b - a, 1) for a, b in zip(chunks, [*chunks[1:], t + seconds], strict=True)
        ],
        "cpu_seconds": round(cpu_total, 1),
        "chunk_cpu_seconds": [
            round(b - a, 1) for a, b in zip(cpu, [*cpu[1:], cpu0 + cpu_total], strict=True)
        ],
        "load_average_1min": [round(x, 1) for x in (min(load), max(load))],
    }
    if verdict.status != "accepted":
        row["message"] = verdict.message.splitlines()[0] if verdict.message else ""
    else:
        row["seconds_per_10k_commands"] = round(seconds * 10_000 / n, 1)
        row["cpu_seconds_per_10k_commands"] = round(cpu_total * 10_000 / n, 1)
    return row


def measure(commands: list[int], validate: list[int], timeout: float) -> dict[str, Any]:
    exports = [measure_export(n) for n in commands]
    by_n = {r["commands"]: r for r in exports}
    out: dict[str, Any] = {"workload": "bench/service.py Workload (32 founders, tick every 50)"}
    out["export"] = exports
    if 1_000 in by_n and 100_000 in by_n:
        lo, hi = by_n[1_000], by_n[100_000]
        out["export_target"] = {
            "seconds_100k_over_1k": round(hi["seconds"] / lo["seconds"], 1),
            "bytes_100k_over_1k": round(hi["bytes"] / lo["bytes"], 1),
            "bytes_per_command_100k_over_1k": round(
                hi["bytes_per_command"] / lo["bytes_per_command"], 2
            ),
            "required_at_most": TARGET_RATIO,
        }
    out["validate_timeout_s"] = timeout
    out["validate"] = [measure_validate(n, timeout) for n in validate]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--validate", type=int, nargs="*", default=[1_000, 10_000])
    parser.add_argument("--validate-timeout", type=float, default=3_600.0)
    parser.add_argument(
        "--validate-only", action="store_true", help="keep the committed export rows"
    )
    args = parser.parse_args()
    if not args.validate_only:
        save("trace_export", measure(args.commands, args.validate, args.validate_timeout))
        return
    for n in args.validate:
        row = measure_validate(n, args.validate_timeout)
        # read again: another size may have been measured meanwhile (a second process)
        doc = json.loads((RESULTS / "trace_export.json").read_text(encoding="utf-8"))
        for key in ("benchmark", "python", "machine"):
            doc.pop(key, None)
        rows = {r["commands"]: r for r in doc.get("validate", [])}
        rows[n] = row
        doc["validate"] = [rows[k] for k in sorted(rows)]
        doc["validate_timeout_s"] = args.validate_timeout
        save("trace_export", doc)


if __name__ == "__main__":
    main()
