"""The cluster as real processes on loopback, under faults (docs/cluster.md, "Faults").

Each test starts N replica processes and the front, drives commands through
``POST /commands`` while it injects a fault — ``kill -9`` of a backup, then of the
primary, a replica started ``--byzantine``, a partition made by the fault-injecting
proxy — then heals (restart, heal), waits until every honest replica has executed the
same log, and audits the *durable* stores (cluster/audit.py): BFT-SAFE-1, every
acknowledged command executed by every honest replica, REPL-1 (the replayed state equals
the single node's replay, and the digest the running replica reported).

Every wait is bounded; the processes are stopped in the fixture's finaliser whatever
happens.  The CI sizes are small (4 replicas, a few dozen commands); the ``slow`` run
is larger.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cluster_world import LOAD_S, TIMEOUT_MS, Load, check, command, converge, primary
from ostrom.cluster.audit import AuditError, audit
from ostrom.cluster.config import Address
from ostrom.cluster.proxy import FaultProxy
from ostrom.cluster.supervisor import Cluster, create, free_ports
from ostrom.harness.byzantine import STRATEGIES

#: a whole experiment or real OS processes: make test runs these, make test-fast does not
pytestmark = pytest.mark.system

# --- harness -------------------------------------------------------------------------------


@pytest.fixture
def clusters() -> Iterator[list[Cluster]]:
    made: list[Cluster] = []
    yield made
    for c in made:
        c.stop()


def new_cluster(
    made: list[Cluster], path: Path, *, byzantine: dict[int, str] | None = None, **opts: Any
) -> Cluster:
    opts.setdefault("base_timeout_ms", TIMEOUT_MS)
    opts.setdefault("synchronous", "NORMAL")
    opts.setdefault("seed", 11)
    create(path, **opts)
    c = Cluster(path)
    made.append(c)
    c.start(byzantine, timeout=60)
    return c


# --- the faults ----------------------------------------------------------------------------


def test_kill_a_backup_then_the_primary(tmp_path: Path, clusters: list[Cluster]) -> None:
    """``kill -9`` of a backup under load, restart; then of the primary, restart.  The
    view changes, no acknowledged command is lost, and the stores pass the audit."""
    c = new_cluster(clusters, tmp_path, batch_size=4, synchronous="FULL")
    honest = [0, 1, 2, 3]
    load = Load(c.url, [command(c, "a", i) for i in range(30)]).start()
    load.wait_acked(8)
    c.kill("r3")  # a backup of view 0
    load.join()
    c.restart_replica(3)
    p = primary(c, honest)
    load2 = Load(c.url, [command(c, "b", i) for i in range(30)]).start()
    load2.wait_acked(8)
    c.kill(f"r{p}")
    killed_at = time.monotonic()
    probe = command(c, "probe", 0)
    r = httpx.post(c.url + "/commands", json=probe, timeout=LOAD_S)
    recovery = time.monotonic() - killed_at
    assert r.status_code == 200, r.text
    load2.join()
    alive = [i for i in honest if i != p]
    assert primary(c, alive) != p, "the killed primary is still the primary"
    print(f"a command sent after kill -9 of the primary r{p} answered in {recovery:.2f}s")
    c.restart_replica(p)
    load2.acked.append(probe)
    check(c, honest, load.acked + load2.acked, at_least=1)


def test_a_byzantine_replica(tmp_path: Path, clusters: list[Cluster]) -> None:
    """The view-0 primary equivocates (``--byzantine equivocate``): the honest three
    agree, answer every command, and their stores pass the audit."""
    c = new_cluster(clusters, tmp_path, byzantine={0: "equivocate"}, batch_size=2)
    honest = [1, 2, 3]
    load = Load(c.url, [command(c, "z", i) for i in range(24)]).start()
    load.join()
    st = [s for i, s in c.status().items() if i in honest and s is not None]
    refused = sum(s["rejected"].get("conflicting", 0) for s in st)
    moved = max(s["view"] for s in st)
    assert refused or moved, "the equivocation left no trace at the honest replicas"
    check(c, honest, load.acked, at_least=1)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy(tmp_path: Path, clusters: list[Cluster], strategy: str) -> None:
    """Each strategy of harness/byzantine.py in the view-0 primary's process."""
    c = new_cluster(clusters, tmp_path, byzantine={0: strategy}, batch_size=2)
    load = Load(c.url, [command(c, "s", i) for i in range(16)]).start()
    load.join()
    check(c, [1, 2, 3], load.acked, at_least=1)


def test_a_partition_then_heal(tmp_path: Path, clusters: list[Cluster]) -> None:
    """The proxy cuts the primary off from the backups under load; the backups change
    view and go on; after the heal the old primary catches up, and the audit passes."""
    dial = free_ports(4)
    cfg = create(
        tmp_path, dial_ports=dial, base_timeout_ms=TIMEOUT_MS, synchronous="NORMAL", seed=3
    )
    proxy = FaultProxy(
        {r.name: (Address(r.dial.host, r.dial.port), r.listen) for r in cfg.replicas}, seed=1
    )
    try:
        c = Cluster(tmp_path)
        clusters.append(c)
        c.start(timeout=60)
        honest = [0, 1, 2, 3]
        load = Load(c.url, [command(c, "p", i) for i in range(40)]).start()
        load.wait_acked(6)
        proxy.partition({"r0"}, {"r1", "r2", "r3"})
        load.wait_acked(25)  # progress without the old primary
        st = c.status()
        assert all((s := st[i]) is not None and s["view"] > 0 for i in (1, 2, 3)), st
        proxy.heal()
        load.join()
        assert proxy.stats["dropped"] > 0
        check(c, honest, load.acked, at_least=1)
    finally:
        proxy.close()


def test_the_audit_sees_a_replica_that_missed_commands(
    tmp_path: Path, clusters: list[Cluster]
) -> None:
    """The acknowledged check can fail on real stores: a replica killed before the load
    and never restarted has not executed the acknowledged commands."""
    c = new_cluster(clusters, tmp_path, batch_size=4)
    c.kill("r3")
    load = Load(c.url, [command(c, "m", i) for i in range(6)]).start()
    load.join()
    converge(c, [0, 1, 2], at_least=1)  # f+1 replies may come before the third executes
    c.stop()
    audit(c.cfg, [0, 1, 2], acknowledged=load.acked)
    with pytest.raises(AuditError, match="replica 3 has not executed"):
        audit(c.cfg, [0, 1, 2, 3], acknowledged=load.acked)


@pytest.mark.slow
def test_repeated_kills_under_load(tmp_path: Path, clusters: list[Cluster]) -> None:
    """Larger: 300 commands, every replica killed and restarted in turn under load."""
    c = new_cluster(clusters, tmp_path, batch_size=8)
    honest = [0, 1, 2, 3]
    load = Load(c.url, [command(c, "r", i) for i in range(300)], concurrency=16).start()
    for k, i in enumerate([1, 0, 2, 3, 1]):
        load.wait_acked(40 * (k + 1), timeout=120)
        c.kill(f"r{i}")
        time.sleep(0.5)
        c.restart_replica(i)
    load.join(timeout=300)
    check(c, honest, load.acked, at_least=1)


@pytest.mark.slow
def test_lossy_slow_links(tmp_path: Path, clusters: list[Cluster]) -> None:
    """Every replica-bound frame crosses the proxy, 10% of them dropped and each delayed
    by 2 ms: retransmission (when nothing progresses) and the re-offered refusals keep
    the cluster live, and the audit passes."""
    dial = free_ports(4)
    cfg = create(
        tmp_path, dial_ports=dial, base_timeout_ms=TIMEOUT_MS, synchronous="NORMAL", seed=4
    )
    proxy = FaultProxy(
        {r.name: (Address(r.dial.host, r.dial.port), r.listen) for r in cfg.replicas}, seed=2
    )
    try:
        c = Cluster(tmp_path)
        clusters.append(c)
        c.start(timeout=60)
        proxy.set_drop(0.1)
        proxy.set_delay(0.002)
        load = Load(c.url, [command(c, "l", i) for i in range(40)]).start()
        load.join(timeout=180)
        proxy.set_drop(0.0)
        assert proxy.stats["dropped"] > 0
        check(c, [0, 1, 2, 3], load.acked, at_least=1)
    finally:
        proxy.close()


@pytest.mark.slow
def test_seven_replicas_lose_two(tmp_path: Path, clusters: list[Cluster]) -> None:
    """n = 7, f = 2: the primary and a backup killed together under load, restarted."""
    c = new_cluster(clusters, tmp_path, n=7, batch_size=4)
    honest = list(range(7))
    load = Load(c.url, [command(c, "h", i) for i in range(60)]).start()
    load.wait_acked(15)
    c.kill("r0")
    c.kill("r4")
    load.join(timeout=180)
    c.restart_replica(0)
    c.restart_replica(4)
    check(c, honest, load.acked, at_least=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_random_fault_schedule(tmp_path: Path, clusters: list[Cluster], seed: int) -> None:
    """A seeded random schedule under load: at each step one replica is killed and
    restarted, or cut off by the proxy and healed (never more than f = 1 faulty at a
    time), with lost frames now and then; then the audit."""
    import random

    rng = random.Random(seed)
    dial = free_ports(4)
    cfg = create(
        tmp_path, dial_ports=dial, base_timeout_ms=TIMEOUT_MS, synchronous="NORMAL", seed=seed
    )
    proxy = FaultProxy(
        {r.name: (Address(r.dial.host, r.dial.port), r.listen) for r in cfg.replicas}, seed=seed
    )
    try:
        c = Cluster(tmp_path)
        clusters.append(c)
        c.start(timeout=60)
        load = Load(c.url, [command(c, f"x{seed}_", i) for i in range(120)]).start()
        for step in range(6):
            load.wait_acked(15 * (step + 1), timeout=120)
            victim = rng.randrange(4)
            if rng.random() < 0.5:
                c.kill(f"r{victim}")
                time.sleep(rng.uniform(0.1, 1.5))
                c.restart_replica(victim)
            else:
                others = {f"r{i}" for i in range(4)} - {f"r{victim}"}
                proxy.partition({f"r{victim}"}, others)
                proxy.set_drop(rng.choice([0.0, 0.05]))
                time.sleep(rng.uniform(0.5, 2.0))
                proxy.heal()
                proxy.set_drop(0.0)
        load.join(timeout=240)
        check(c, [0, 1, 2, 3], load.acked, at_least=1)
    finally:
        proxy.close()


@pytest.mark.slow
def test_kill_the_front(tmp_path: Path, clusters: list[Cluster]) -> None:
    """``kill -9`` of the front under load: the replicas are untouched; a restarted front
    (new timestamps, above the old: the wall clock) is answered, and the audit passes."""
    c = new_cluster(clusters, tmp_path, batch_size=4)
    load = Load(c.url, [command(c, "k", i) for i in range(40)]).start()
    load.wait_acked(10)
    c.kill("front")
    load._thread.join(LOAD_S)
    acked = list(load.acked)  # what the old front acknowledged before it died
    c.start_front()
    c.wait_ready(30)
    load2 = Load(c.url, [command(c, "q", i) for i in range(20)]).start()
    load2.join()
    check(c, [0, 1, 2, 3], acked + load2.acked, at_least=1)
