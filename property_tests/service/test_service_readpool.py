"""Admission control for the reads of the file (service/readpool.py).

* ``ReadPool``: at most ``workers`` reads run and ``queue`` wait; one more is refused at
  once (``ReadsBusy``), and a read leaves the count when its thread is done with it, a
  cancelled one included (so the bound cannot leak, up or down);
* the app: with the pool full, ``/log``, ``/search``, ``/slots/{slot}``, a content and
  one artifact are answered 503 ``busy`` with ``Retry-After`` at once, while the reads
  of the public view (``/health``, ``/slots``, ``/artifacts``, ``/agents``) and the
  writes go on; once a thread is free again they are answered as before;
* the reads' CPU is paced to the pool's ``share`` of the time: reads that burn 0.8 CPU
  seconds take at least the time the share allows (a pool without pacing, the mutant,
  runs them in a fraction of it);
* hostile bounds (0 threads, a negative queue, a bool, a share of 0 or nan) are refused
  with ``ValueError``,
  and ``ostrom serve --max-reads 0`` exits with a usage error, never a traceback.
"""

from __future__ import annotations

import asyncio
import math
import threading
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.service import readpool
from ostrom.service.app import create_app
from ostrom.service.identity import canonical
from ostrom.service.node import Node
from ostrom.service.readpool import RETRY_AFTER_S, ReadPool, ReadsBusy
from service_world import FOUNDERS, Signer, setup

#: Reads of the file (the pool's) and of the published view (on the loop, never refused).
FILE_READS = ("/log", "/search?q=alpha", "/slots/s0", "/artifacts/a0/content", "/artifacts/a0")
VIEW_READS = ("/health", "/slots", "/artifacts", "/agents", "/agents/f1")


def test_the_pool_admits_workers_plus_queue_and_refuses_the_next() -> None:
    async def go() -> None:
        pool, gate = ReadPool(1, 1), threading.Event()
        running = asyncio.create_task(pool.run(gate.wait, 10))
        waiting = asyncio.create_task(pool.run(lambda: "second"))
        await asyncio.sleep(0.05)
        assert pool.admitted == 2
        with pytest.raises(ReadsBusy):
            await pool.run(lambda: "third")
        assert (pool.admitted, pool.refused) == (2, 1)
        waiting.cancel()  # cancelled before it started: it leaves the count
        await asyncio.sleep(0.05)
        assert pool.admitted == 1
        gate.set()
        assert await running is True
        await asyncio.sleep(0.05)
        assert pool.admitted == 0
        assert await pool.run(lambda: "again") == "again"
        pool.close()

    asyncio.run(go())


def test_a_cancelled_running_read_holds_its_thread_until_it_ends() -> None:
    async def go() -> None:
        pool, gate = ReadPool(1, 0), threading.Event()
        running = asyncio.create_task(pool.run(gate.wait, 10))
        await asyncio.sleep(0.05)
        running.cancel()  # the client hung up: the thread still reads
        await asyncio.sleep(0.05)
        assert pool.admitted == 1
        with pytest.raises(ReadsBusy):
            await pool.run(lambda: None)
        gate.set()
        await asyncio.sleep(0.1)
        assert pool.admitted == 0
        pool.close()

    asyncio.run(go())


def test_a_full_pool_answers_busy_and_spares_the_view_and_the_writes(tmp_path: Path) -> None:
    node, signer = Node.open(tmp_path / "n.db", setup=setup(), fsync=False), Signer()
    pool, gate = ReadPool(1, 0), threading.Event()

    async def go() -> None:
        transport = httpx.ASGITransport(app=create_app(node, reads=pool))
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as c:
            held = asyncio.create_task(pool.run(gate.wait, 10))  # the one thread, busy
            await asyncio.sleep(0.05)
            for path in FILE_READS:
                r = await c.get(path)
                assert (r.status_code, r.json()["error"]) == (503, "busy"), path
                assert r.headers["Retry-After"] == str(RETRY_AFTER_S)
            for path in VIEW_READS:
                assert (await c.get(path)).status_code == 200, path
            f = FOUNDERS[0]
            cmd = {"op": "propose", "agent": f, "artifact": "a0", "slot": "s0", "digest": "d"}
            w = await c.post("/commands", content=canonical(signer.env(f, cmd)))
            assert (w.status_code, w.json()["result"]) == (200, "ok")
            status = (await c.get("/status")).json()["reads"]
            assert status == {
                "max_reads": 1,
                "read_queue": 0,
                "read_share": readpool.DEFAULT_READ_SHARE,
                "admitted": 1,
                "refused": len(FILE_READS),
            }
            gate.set()
            await held
            await asyncio.sleep(0.05)
            for path in FILE_READS:
                assert (await c.get(path)).status_code in (200, 404), path

    try:
        asyncio.run(go())
    finally:
        pool.close()
        node.close()


class _Clock:
    """The pool's clocks, by hand: the time that passes, this thread's CPU, and a sleep
    that lets the time pass (so the pacing is checked whatever the machine's load)."""

    def __init__(self) -> None:
        self.now, self.cpu, self.slept = 0.0, 0.0, 0.0

    def monotonic(self) -> float:
        return self.now

    def thread_time(self) -> float:
        return self.cpu

    def sleep(self, seconds: float) -> None:
        self.slept += seconds
        self.now += seconds

    def read(self, cpu: float) -> None:
        """A read that holds the CPU for ``cpu`` seconds (as much time passes)."""
        self.cpu += cpu
        self.now += cpu


@pytest.mark.parametrize("paced", [True, False])
def test_the_reads_cpu_is_paced_to_the_share(monkeypatch: pytest.MonkeyPatch, paced: bool) -> None:
    """Reads of 0.1 CPU seconds back to back on a pool of share 0.25: their CPU stays
    within the bucket's burst, ``share`` of the time that passed, and one read's overdraw.
    The mutant (a bucket that never runs dry) uses all the time it is given."""
    clock, share, each, burst = _Clock(), 0.25, 0.1, readpool._BURST_S
    monkeypatch.setattr(readpool, "time", clock)
    if not paced:
        monkeypatch.setattr(readpool, "_BURST_S", math.inf)
    pool = ReadPool(1, 0, share)
    try:
        for _ in range(40):
            pool._paced(clock.read, each)
    finally:
        pool.close()
    bound = burst + share * clock.now + each
    assert (clock.cpu <= bound) is paced, (clock.cpu, clock.now, clock.slept)
    if paced:  # and it does not sleep more than it must
        assert clock.cpu >= share * clock.now, (clock.cpu, clock.now)


@pytest.mark.parametrize(
    ("workers", "queue", "share"),
    [
        (0, 1, 0.5),
        (-1, 1, 0.5),
        (1, -1, 0.5),
        (True, 1, 0.5),
        (1, 1.5, 0.5),
        (1, 1, 0),
        (1, 1, -0.5),
        (1, 1, math.nan),
        (1, 1, math.inf),
        (1, 1, True),
        (1, 1, "0.5"),
    ],
)
def test_hostile_bounds_are_refused(workers: object, queue: object, share: object) -> None:
    with pytest.raises(ValueError):
        ReadPool(workers, queue, share)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "flag",
    [("--max-reads", "0"), ("--read-queue", "-1"), ("--read-share", "0"), ("--read-share", "nan")],
)
def test_serve_refuses_a_bound_out_of_range(tmp_path: Path, flag: tuple[str, str]) -> None:
    result = CliRunner().invoke(main, ["serve", "--db", str(tmp_path / "n.db"), *flag])
    assert result.exit_code == 2, result.output  # click's usage error, no traceback
    assert isinstance(result.exception, SystemExit)
    assert flag[0] in result.output or "read share" in result.output
