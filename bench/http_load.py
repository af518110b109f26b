"""A minimal HTTP/1.1 load generator for the node and the cluster benchmarks.

httpx costs more CPU per request than the node spends on one on this 2-core machine, so
a benchmark that posts with it measures its own client.  This one writes pre-encoded
request bodies on keep-alive connections (asyncio streams, one coroutine per stream)
and reads only the status line, the Content-Length and the body: a few microseconds per
request.  Each stream posts its bodies in order and waits for each answer (an agent's
seqs must arrive in order), so the concurrency is the number of streams.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Stream:
    """What one stream saw: latencies (s) of the requests started in the measured window,
    the results by name (an HTTP error as ``HTTP 503: db_unavailable``)."""

    latencies: list[float] = field(default_factory=list)
    results: Counter[str] = field(default_factory=Counter)


async def post_all(
    host: str, port: int, bodies: list[bytes], stop_at: float, warm_until: float
) -> Stream:
    """Post ``bodies`` in order on one keep-alive connection until ``stop_at`` (monotonic
    time); the requests started before ``warm_until`` are not measured.  A non-200 ends
    the stream (the agent's next seq would be out of order) and is counted, not hidden."""
    reader, writer = await asyncio.open_connection(host, port)
    out = Stream()
    try:
        for body in bodies:
            t0 = time.monotonic()
            if t0 >= stop_at:
                break
            head = (
                f"POST /commands HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n"
            ).encode()
            writer.write(head + body)
            status = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            data = await reader.readexactly(length)
            code = int(status.split()[1])
            measured = t0 >= warm_until
            if code != 200:
                if measured:
                    out.results[f"HTTP {code}: {json.loads(data).get('error')}"] += 1
                break
            if measured:
                out.results[str(json.loads(data)["result"])] += 1
                out.latencies.append(time.monotonic() - t0)
    finally:
        writer.close()
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def load(
    url: str,
    streams: list[list[bytes]],
    seconds: float,
    pids: dict[str, int],
    warmup: float = 1.0,
) -> dict[str, Any]:
    """Run ``streams`` against ``url`` for ``warmup`` + ``seconds``; commands/s, latency
    percentiles, results, and the CPU seconds each process of ``pids`` (and this one, the
    load generator) used in the measured window."""
    host, port = url.removeprefix("http://").split(":")
    start = time.monotonic()
    warm_until, stop_at = start + warmup, start + warmup + seconds
    cpu: dict[str, float] = {}

    async def sample() -> None:
        await asyncio.sleep(max(0.0, warm_until - time.monotonic()))
        cpu.update({k: cpu_seconds(p) for k, p in pids.items()})
        cpu["load generator"] = time.process_time()

    sampler = asyncio.get_running_loop().create_task(sample())
    done = await asyncio.gather(
        *(post_all(host, int(port), bodies, stop_at, warm_until) for bodies in streams)
    )
    await sampler
    measured = time.monotonic() - warm_until
    used = {k: cpu_seconds(p) - cpu[k] for k, p in pids.items()}
    used["load generator"] = time.process_time() - cpu["load generator"]
    lat = sorted(x for d in done for x in d.latencies)
    results: Counter[str] = Counter()
    for d in done:
        results.update(d.results)
    return {
        "commands": len(lat),
        "seconds": round(measured, 2),
        "commands_per_s": round(len(lat) / measured, 1),
        "latency_p50_ms": round(1000 * lat[len(lat) // 2], 2) if lat else None,
        "latency_p99_ms": round(1000 * lat[int(len(lat) * 0.99)], 2) if lat else None,
        "latency_mean_ms": round(1000 * statistics.fmean(lat), 2) if lat else None,
        "results": dict(results),
        # the cores are shared (the servers, the load generator, anything else running)
        "cpu_seconds": {k: round(v, 2) for k, v in sorted(used.items())},
        # the share of the machine's CPU the servers and the load generator got: below 1,
        # the rest went to other work (or the servers were idle)
        "cpu_share_of_machine": round(
            sum(used.values()) / max(1e-9, measured * (os.cpu_count() or 1)), 3
        ),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
