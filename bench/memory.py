"""Memory per agent and per artifact, snapshot size and restart time (``python bench/memory.py``,
``run.py --only memory``).

Issue 42, item 3: the node's resident memory must grow linearly with what it holds, and we
must know by how much.  Each figure comes from a fresh OS process, so one row's garbage
never counts in the next:

* ``agents``: a node (fsync off) into which 10,000 and then 100,000 agents join by signed
  ``join`` envelopes (group commits of 256), the last join carrying a snapshot
  (``snapshot_every`` = the number of joins, a fixed interval); then a second process opens
  the database (restores that snapshot, nothing to replay) and reports its resident set
  (``VmRSS``) against the same process's before opening, the snapshot's bytes, the
  database's bytes on disk, and the seconds the open took;
* ``artifacts``: the same opening of the search benchmark's stores of 10,000 and 100,000
  artifacts (bench/search.py: generated text of about 1.2 KB each, superseded versions and
  proposals under review among them; built once and cached under ``build/search/``; the
  1,000,000 one only with ``--artifacts``, it takes more than half an hour to build);
* ``per_item``: resident bytes per agent and per artifact at each size, and the ratio of
  the largest size's figure to the smallest's (1.0 is linear; the target is within 2).

The resident set is read from ``/proc/self/status`` (Linux): ``VmRSS`` after a full
collection, and ``VmHWM``, the peak, which includes what opening needed on the way.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from ostrom.service.node import Node  # noqa: E402
from record import save  # noqa: E402
from service import PARAMS, newcomer_join, setup  # noqa: E402

AGENTS = (10_000, 100_000)
ARTIFACTS = (10_000, 100_000)
GROUP = 256
LINEAR_WITHIN = 2.0  # the per-item cost at the largest size within 2x of the smallest's


def _status() -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of this process, in bytes."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def _disk(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())


def child_build_agents(db: Path, n: int) -> dict[str, Any]:
    """Join ``n`` agents into a new node at ``db``; the last join carries a snapshot."""
    node = Node.open(
        db, params=PARAMS, setup=setup(), fsync=False, snapshot_every=n, snapshot_ratio=0
    )
    t = time.perf_counter()
    batch: list[dict[str, Any]] = []
    for i in range(n):
        batch.append(newcomer_join(i))
        if len(batch) == GROUP or i == n - 1:
            for r in node.submit_many(batch):
                if r.status != 200 or r.body.get("result") != "ok":
                    raise SystemExit(f"a join was refused: {r.body}")
            batch.clear()
    seconds = time.perf_counter() - t
    snapshot = node.store.snapshot_bytes
    node.close()
    return {"build_seconds": round(seconds, 1), "snapshot_bytes": snapshot}


def child_open(db: Path) -> dict[str, Any]:
    """Open ``db`` in this fresh process: seconds, snapshot bytes, resident memory."""
    gc.collect()
    before = _status()
    t = time.perf_counter()
    node = Node.open(db, fsync=False)
    seconds = time.perf_counter() - t
    gc.collect()
    after = _status()
    out = {
        "open_seconds": round(seconds, 2),
        "snapshot_bytes": node.store.snapshot_bytes,
        "replayed_commands": len(node._envelopes),
        "rss_before_bytes": before["VmRSS"],
        "rss_bytes": after["VmRSS"],
        "rss_added_bytes": after["VmRSS"] - before["VmRSS"],
        "peak_rss_bytes": after["VmHWM"],
    }
    node.close()
    return out


def _child(*args: str) -> dict[str, Any]:
    """Run this file's ``--child`` in a fresh interpreter; its JSON answer."""
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"memory bench child {args} failed:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def agents_row(tmp: Path, n: int) -> dict[str, Any]:
    db = tmp / f"agents-{n}.db"
    built = _child("build-agents", str(db), str(n))
    opened = _child("open", str(db))
    return {"agents": n, **built, "disk_bytes": _disk(db), **opened}


def artifacts_row(n: int) -> dict[str, Any]:
    from search import cached_store  # bench/search.py: builds and caches the store

    db, info = cached_store(n)
    opened = _child("open", str(db))
    return {
        "artifacts": n,
        "commands": info["commands"],
        "disk_bytes": _disk(db),
        **opened,
    }


def per_item(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Resident bytes (and snapshot bytes) per item at each size, and the growth of the
    per-item figure from the smallest size to the largest."""
    sizes = [
        {
            key: r[key],
            "rss_bytes_per_item": round(r["rss_added_bytes"] / r[key]),
            "snapshot_bytes_per_item": round(r["snapshot_bytes"] / r[key]),
            "disk_bytes_per_item": round(r["disk_bytes"] / r[key]),
            "open_ms_per_1k_items": round(1000 * r["open_seconds"] / (r[key] / 1000), 1),
        }
        for r in rows
    ]
    first, last = sizes[0], sizes[-1]
    growth = {
        m: round(last[m] / first[m], 2) if first[m] else None
        for m in (
            "rss_bytes_per_item",
            "snapshot_bytes_per_item",
            "disk_bytes_per_item",
            "open_ms_per_1k_items",
        )
    }
    return {
        "sizes": sizes,
        "largest_over_smallest": growth,
        "linear_within": LINEAR_WITHIN,
        # a figure that is 0 at the smallest size (no snapshot yet) has no ratio
        "linear": all(g <= LINEAR_WITHIN for g in growth.values() if g is not None),
    }


def measure(
    agents: tuple[int, ...] = AGENTS, artifacts: tuple[int, ...] = ARTIFACTS
) -> dict[str, Any]:
    load = os.getloadavg()[0]  # the restart times are wall clock: say how busy the machine was
    with tempfile.TemporaryDirectory() as d:
        agent_rows = []
        for n in agents:
            print(f"memory: {n:,} agents", file=sys.stderr, flush=True)
            agent_rows.append(agents_row(Path(d), n))
    artifact_rows = []
    for n in artifacts:
        print(f"memory: {n:,} artifacts", file=sys.stderr, flush=True)
        artifact_rows.append(artifacts_row(n))
    return {
        "load_average_before": round(load, 2),
        "agents": agent_rows,
        "artifacts": artifact_rows,
        "per_agent": per_item(agent_rows, "agents"),
        "per_artifact": per_item(artifact_rows, "artifacts"),
    }


def _sizes(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of sizes: {text!r}") from None
    if len(out) < 2 or any(x < 1 for x in out) or list(out) != sorted(set(out)):
        raise argparse.ArgumentTypeError("give two or more increasing positive sizes")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agents", type=_sizes, default=AGENTS, help="e.g. 10000,100000")
    ap.add_argument("--artifacts", type=_sizes, default=ARTIFACTS, help="e.g. 100000,1000000")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "build-agents":
            print(json.dumps(child_build_agents(Path(rest[0]), int(rest[1]))))
        elif kind == "open":
            print(json.dumps(child_open(Path(rest[0]))))
        else:
            ap.error(f"unknown child {kind!r}")
        return
    save("memory", measure(args.agents, args.artifacts))


if __name__ == "__main__":
    main()
