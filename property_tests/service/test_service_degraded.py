"""The degraded mode after a failed append (service/node.py, issue 41 item 9): the node
rebuilds its state once, then refuses every write at once (503 ``db_unavailable`` with
``Retry-After``) without touching the core, the lock or the file, until a probe of the
disk (``Store.probe``) commits; then writes resume.

* N failed writes in a row cost one rebuild, not N; the refused ones reach neither the
  gate nor the store (before the mode, each rebuilt the state from the last snapshot
  under the lock);
* once the disk takes writes again, the state, the log and the whole gate are a node's
  that never saw the failures (the refused commands were never applied);
* the probe really writes: while the disk stays full every probe fails and the wait
  doubles up to ``PROBE_MAX_S``; a probe that wrote nothing would resume writes into the
  full disk (caught: a rebuild per probe);
* ``/health`` and ``/status`` say so, over HTTP the 503 carries ``Retry-After``, and the
  app's prober resumes writes with no write to probe;
* the mutant "degraded mode never entered" is caught (a rebuild per write again).

Acknowledged commands surviving kills: property_tests/service/test_crash.py."""

from __future__ import annotations

import asyncio
import copy
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from ostrom.service.app import create_app
from ostrom.service.gate import Gate
from ostrom.service.node import PROBE_FIRST_S, PROBE_MAX_S, PROBE_MIN_BYTES, Degraded, Node, Reply
from ostrom.service.snapshot import snapshot
from ostrom.service.store import DbUnavailable, Store
from service_world import PARAMS, Signer, setup

_UNLIMITED = 1073741823


class Clock:
    """The node's clock, moved by the test (a probe is due when it passes)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _open(path: Path, clock: Callable[[], float] = time.monotonic, **kw: Any) -> Node:
    return Node.open(
        path,
        params=PARAMS,
        setup=setup(),
        fsync=False,
        clock=clock,
        snapshot_every=4,
        snapshot_ratio=0,
        **kw,
    )


def _propose(s: Signer, i: int) -> dict[str, Any]:
    cmd = {"op": "propose", "agent": "f1", "artifact": f"a{i}", "slot": f"s{i}", "digest": "d"}
    return s.env("f1", {**cmd, "digest": "d" * 2000})


def _fill_disk(node: Node) -> None:
    """The disk is full: the node's connection may not grow the file by a page."""
    db = node.store._db  # the limit is per connection
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count={pages}")


def _free_disk(node: Node) -> None:
    node.store._db.execute(f"PRAGMA max_page_count={_UNLIMITED}")


def _submit(node: Node, s: Signer, i: int, accepted: list[dict[str, Any]]) -> Reply:
    """Propose ``a{i}``; a 200 is kept in ``accepted``, a 503 gives its seq back (the client
    signs it again later, as a client whose command was not applied does)."""
    env = _propose(s, i)
    r = node.submit(env)
    if r.status == 200:
        accepted.append(env)
    else:
        assert r.status == 503 and r.body["error"] == "db_unavailable", r
        s.seq["f1"] -= 1
    return r


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the calls of the gate's admission and the store's append (what a refused
    write must not reach)."""
    calls = {"admit": 0, "append_rows": 0}
    for cls, name in ((Gate, "admit"), (Store, "append_rows")):
        real = getattr(cls, name)

        def counted(self: Any, *a: Any, _real: Any = real, _name: str = name) -> Any:
            calls[_name] += 1
            return _real(self, *a)

        monkeypatch.setattr(cls, name, counted)
    return calls


def _n_failed_writes_cost_one_rebuild(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock, s, accepted = Clock(), Signer(), list[dict[str, Any]]()
    node = _open(tmp / "n.db", clock)
    for i in range(6):  # a snapshot at 4: the rebuild replays from it
        assert _submit(node, s, i, accepted).status == 200
    before, pos = copy.deepcopy(node.public_state()), node.last_pos
    _fill_disk(node)
    first = _submit(node, s, 100, accepted)
    assert first.status == 503 and first.retry_after == PROBE_FIRST_S
    assert node.counts["rebuilds"] == 1
    calls = _counting(monkeypatch)
    replies = [_submit(node, s, i, accepted) for i in range(101, 121)]  # before the probe
    # one rebuild for 21 failed writes; the 20 refused reached neither gate nor store
    assert node.counts["rebuilds"] == 1, node.counts
    assert calls == {"admit": 0, "append_rows": 0}
    assert node.counts["refused"] == 20
    for r in replies:
        assert r.status == 503 and r.retry_after is not None and r.retry_after >= 1
        assert "refused since a failed append" in r.body["detail"]
    assert node.public_state() == before and node.gate.public_state() == before
    assert node.last_pos == pos
    node.close()


def test_n_failed_writes_in_a_row_cost_one_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _n_failed_writes_cost_one_rebuild(tmp_path, monkeypatch)


def test_a_node_that_never_degrades_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutant: the degraded mode is never entered (the failed append's reply is the
    same, the next write goes to the core and the file again).  Every failed write
    rebuilds again, as before the mode: the count sees it."""

    def never(self: Node, err: str, size: int) -> Degraded:
        return Degraded(self.store.last_pos, err, self.clock() + 1.0, 1)

    monkeypatch.setattr(Node, "_degrade", never)
    with pytest.raises(AssertionError):
        _n_failed_writes_cost_one_rebuild(tmp_path, monkeypatch)


def _recovers_as_if_never_failed(tmp: Path) -> tuple[Node, Node]:
    """Writes, a full disk (failed and refused writes, failed probes), the disk freed,
    writes again; and a twin node fed only the accepted commands."""
    clock, s, accepted = Clock(), Signer(), list[dict[str, Any]]()
    node = _open(tmp / "n.db", clock)
    for i in range(5):
        _submit(node, s, i, accepted)
    _fill_disk(node)
    for i in range(5, 12):
        _submit(node, s, i, accepted)
        clock.now += 0.4  # probes come due and fail meanwhile
    assert node.counts["failed_probes"] >= 1
    _free_disk(node)
    clock.now += PROBE_MAX_S
    for i in range(12, 20):
        assert _submit(node, s, i, accepted).status == 200
    assert node.degraded() is None and node.counts["rebuilds"] == 1
    twin = _open(tmp / "twin.db")
    for env in accepted:
        assert twin.submit(copy.deepcopy(env)).status == 200
    return node, twin


def test_after_the_disk_is_freed_the_state_is_a_node_s_that_never_failed(tmp_path: Path) -> None:
    node, twin = _recovers_as_if_never_failed(tmp_path)
    assert node.last_pos == twin.last_pos
    assert node.public_state() == twin.public_state()
    assert snapshot(node.gate) == snapshot(twin.gate)  # the whole state, not only the public
    assert node.log(0, 1000) == twin.log(0, 1000)
    node.close()
    twin.close()
    again = Node.open(tmp_path / "n.db", verify=True)  # and the file replays to it
    assert snapshot(again.gate) == snapshot(Node.open(tmp_path / "twin.db").gate)


def test_a_failed_command_kept_in_the_core_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutant: the one rebuild is skipped, so the failed command stays applied in the
    core while the log never got it.  The comparison with the twin sees it."""
    monkeypatch.setattr(Node, "_rebuild", lambda self: None)
    with pytest.raises(AssertionError):
        node, twin = _recovers_as_if_never_failed(tmp_path)
        assert snapshot(node.gate) == snapshot(twin.gate)


def _probes_while_full(tmp: Path) -> Node:
    clock, s, accepted = Clock(), Signer(), list[dict[str, Any]]()
    node = _open(tmp / "n.db", clock)
    _submit(node, s, 0, accepted)
    _fill_disk(node)
    assert _submit(node, s, 1, accepted).status == 503
    waits = []
    for i in range(2, 10):  # each write as its probe comes due: every probe fails
        d = node._degraded
        assert d is not None
        clock.now = d.probe_at
        r = _submit(node, s, i, accepted)
        assert r.status == 503
        waits.append(r.retry_after)
    assert node.counts["rebuilds"] == 1, node.counts  # the disk is still full: no resume
    assert node.counts["failed_probes"] == 8
    # the wait doubles with every failed probe, up to PROBE_MAX_S
    assert waits == [min(PROBE_MAX_S, PROBE_FIRST_S * 2**k) for k in range(1, 9)]
    return node


def test_while_the_disk_stays_full_every_probe_fails_and_the_wait_doubles(
    tmp_path: Path,
) -> None:
    _probes_while_full(tmp_path).close()


def test_a_probe_that_writes_nothing_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mutant: the probe commits without writing.  It resumes writes into the full
    disk, and each resumed write fails and rebuilds again."""
    monkeypatch.setattr(Store, "probe", lambda self, size: None)
    with pytest.raises(AssertionError):
        _probes_while_full(tmp_path)


def test_the_probe_writes_its_size_and_changes_nothing(tmp_path: Path) -> None:
    node = _open(tmp_path / "n.db")
    s, accepted = Signer(), list[dict[str, Any]]()
    _submit(node, s, 0, accepted)
    store = node.store
    with sqlite3.connect(tmp_path / "n.db") as db:
        before = db.execute("SELECT * FROM meta ORDER BY key").fetchall()
    store.probe(PROBE_MIN_BYTES)
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    size = store._db.execute("PRAGMA page_size").fetchone()[0]
    free = store._db.execute("PRAGMA freelist_count").fetchone()[0]
    assert free * size >= PROBE_MIN_BYTES  # its pages were written, then freed
    with sqlite3.connect(tmp_path / "n.db") as db:
        assert db.execute("SELECT * FROM meta ORDER BY key").fetchall() == before
    # a probe larger than the free pages needs the file to grow: refused at the limit
    store._db.execute(f"PRAGMA max_page_count={pages}")
    with pytest.raises(DbUnavailable):
        store.probe(4 * PROBE_MIN_BYTES)
    store.probe(PROBE_MIN_BYTES)  # what the free pages hold still commits
    _free_disk(node)
    assert _submit(node, s, 1, accepted).status == 200
    node.close()
    assert Node.open(tmp_path / "n.db", verify=True).last_pos == 2


def test_health_status_and_retry_after_over_http_and_the_prober_resumes(
    tmp_path: Path,
) -> None:
    """Over HTTP: the refusal carries ``Retry-After``; ``/health`` says ``degraded`` (and
    still answers, as every read does); ``/status`` counts; once the disk is freed, the
    app's prober resumes writes with no write coming to probe."""
    node = _open(tmp_path / "n.db", probe_first=0.05, probe_max=0.2)
    s, accepted = Signer(), list[dict[str, Any]]()
    _submit(node, s, 0, accepted)

    async def body(c: httpx.AsyncClient) -> None:
        assert (await c.get("/health")).json()["status"] == "ok"
        _fill_disk(node)
        for i in (1, 2):
            r = await c.post("/commands", json=_propose(s, i))
            assert r.status_code == 503 and r.json()["error"] == "db_unavailable"
            assert int(r.headers["Retry-After"]) >= 1
        health = (await c.get("/health")).json()
        assert health["status"] == "degraded" and health["last_pos"] == 1
        assert set(health["writes"]) == {"since_pos", "error", "retry_after"}
        assert "full" in health["writes"]["error"]
        writes = (await c.get("/status")).json()["writes"]
        assert writes["degraded"] is not None and writes["rebuilds"] == 1
        assert (await c.get("/artifacts/a0")).status_code == 200  # reads answer
        _free_disk(node)
        for _ in range(100):  # the prober's next probe commits
            if (await c.get("/health")).json()["status"] == "ok":
                break
            await asyncio.sleep(0.05)
        assert (await c.get("/health")).json() == {
            "status": "ok",
            "last_pos": 1,
            "now": node.view().state["now"],
            "community": node.gate.setup.community,
        }
        writes = (await c.get("/status")).json()["writes"]
        assert writes["degraded"] is None and writes["probes"] >= 1
        s.seq["f1"] = node.gate.last_seq("f1")
        assert (await c.post("/commands", json=_propose(s, 3))).status_code == 200

    async def go() -> None:
        app = create_app(node)
        transport = httpx.ASGITransport(app=app)
        client = httpx.AsyncClient(transport=transport, base_url="http://n")
        async with app.router.lifespan_context(app), client as c:  # the prober runs
            await body(c)

    asyncio.run(go())
    assert node.counts["rebuilds"] == 1
    node.close()
