"""The process cluster under jitter and loss, as an experiment (issue 42 item 0, its
cluster part): shared by property_tests/cluster/test_cluster_congestion.py and the
``congestion_cluster`` row of bench/congestion.py, so the test and the recorded figures
measure the same thing.

A 4-replica cluster whose replica-bound frames all cross the fault-injecting proxy
(cluster/proxy.py) takes a fault-free load, a load under loss and per-frame jitter (which
delays and reorders) on the replica-to-replica links, then the heal, an idle spell and
one more load; the stores are audited at the end.  The cost is what the replicas offered
one another (frames and bytes, counted by the proxy before any loss, the acknowledgement
frames included) per PBFT instance: per sequence number the phase ordered.

Why per instance and not per request.  The primary orders in one PRE-PREPARE every
request waiting when it starts an instance, so how many requests share an instance
depends on timing: an unhurried fault-free load of 16 commands fits in a few instances
(about 5 frames per request), the same load under jitter in more (each instance costs
the same frames whatever its batch holds).  Frames per request then compares batchings,
not what loss and retransmission add; frames per instance does not depend on the batch.
Bytes do (a PRE-PREPARE carries its batch), so bytes stay per request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_world import TIMEOUT_MS, Load, check, command
from ostrom.cluster.config import Address
from ostrom.cluster.proxy import FaultProxy
from ostrom.cluster.supervisor import Cluster, create, free_ports

__all__ = ["IDLE_S", "Faults", "experiment"]

#: Seconds the cluster idles after the heal, its replica-link traffic counted.
IDLE_S = 2.0


@dataclass(frozen=True)
class Faults:
    """What the proxy does to every replica-bound frame while the faults last."""

    loss: float
    jitter_s: float


@dataclass
class Phase:
    """One load's cost on the replica-to-replica links."""

    commands: int
    #: PBFT sequence numbers ordered (and executed by every replica) during the phase
    instances: int
    frames: int
    #: of ``frames``, the acknowledgements (paced by time: one per peer per interval)
    acks: int
    bytes: int
    seconds: float

    @property
    def frames_per_request(self) -> float:
        return self.frames / self.commands

    @property
    def messages_per_instance(self) -> float:
        """Frames that carry a protocol message (acknowledgements left out) per instance:
        the normal case's PRE-PREPAREs, PREPAREs, COMMITs and checkpoints, and what is
        re-sent of them."""
        return (self.frames - self.acks) / self.instances

    @property
    def bytes_per_request(self) -> float:
        return self.bytes / self.commands


def replica_links(proxy: FaultProxy, names: set[str]) -> tuple[int, int, int]:
    """Frames, bytes and acknowledgement frames offered so far between two replicas (the
    front's requests left out: they are the load, not the protocol's cost)."""
    frames = size = 0
    for (src, dst), (f, b) in proxy.offered().items():
        if src in names and dst in names:
            frames, size = frames + f, size + b
    acks = sum(a for (src, dst), a in proxy.acks_offered().items() if {src, dst} <= names)
    return frames, size, acks


def run(
    c: Cluster, proxy: FaultProxy, tag: str, k: int, names: set[str], timeout: float
) -> tuple[Phase, list[dict[str, Any]]]:
    """``k`` signed commands, all acknowledged, their replica-link traffic counted until
    every replica executed them (the count includes the stragglers' catch-up)."""
    f0, b0, a0 = replica_links(proxy, names)
    before = executed_everywhere(c)
    start = time.monotonic()
    load = Load(c.url, [command(c, tag, i) for i in range(k)]).start()
    load.join(timeout=timeout)
    executed = max(int(s["last_executed"]) for s in c.status().values() if s is not None)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        st = c.status()
        if all(s is not None and int(s["last_executed"]) >= executed for s in st.values()):
            break
        time.sleep(0.05)
    f1, b1, a1 = replica_links(proxy, names)
    seconds = time.monotonic() - start
    # every replica executed up to ``executed``: the instances the phase ordered
    return Phase(k, executed - before, f1 - f0, a1 - a0, b1 - b0, seconds), load.acked


def executed_everywhere(c: Cluster) -> int:
    """The highest sequence number every replica executed (the previous phase waited for
    them all, so this is where the next phase's instances start)."""
    return min(int(s["last_executed"]) for s in c.status().values() if s is not None)


def idle(proxy: FaultProxy, names: set[str]) -> float:
    """Frames per second on the replica links while no command is sent for ``IDLE_S``:
    what retransmission costs a quiet cluster (position updates only, once each peer
    acknowledged everything)."""
    f0, _, _ = replica_links(proxy, names)
    time.sleep(IDLE_S)
    return round((replica_links(proxy, names)[0] - f0) / IDLE_S, 1)


def views(c: Cluster) -> list[int]:
    return [int(s["view"]) for s in c.status().values() if s is not None]


def experiment(path: Path, faults: Faults, k: int, *, seed: int = 5) -> dict[str, Any]:
    """A fault-free load, then a load under ``faults``, heal, idle, one more load; the
    audit at the end.  Returns the figures (the bench row)."""
    dial = free_ports(4)
    cfg = create(path, dial_ports=dial, base_timeout_ms=TIMEOUT_MS, synchronous="NORMAL", seed=seed)
    names = {r.name for r in cfg.replicas}
    proxy = FaultProxy(
        {r.name: (Address(r.dial.host, r.dial.port), r.listen) for r in cfg.replicas}, seed=seed
    )
    c = Cluster(path)
    try:
        c.start(timeout=60)
        free, acked = run(c, proxy, "f", k, names, timeout=60)
        idle_free = idle(proxy, names)
        proxy.limit_to(names)  # the replica links: the front's requests pass untouched
        proxy.set_drop(faults.loss)
        proxy.set_jitter(faults.jitter_s)
        view_before = max(views(c))
        lossy, acked_lossy = run(c, proxy, "j", k, names, timeout=120)
        dropped = proxy.stats["dropped"]
        proxy.set_drop(0.0)
        proxy.set_jitter(0.0)
        view_healed = max(views(c))
        idle_healed = idle(proxy, names)
        view_idle = max(views(c))
        _, acked_after = run(c, proxy, "h", 4, names, timeout=60)
        view_end = max(views(c))
        check(c, [0, 1, 2, 3], acked + acked_lossy + acked_after, at_least=1)
    finally:
        c.stop()
        proxy.close()
    return {
        "n": 4,
        "requests": k,
        "loss": faults.loss,
        "jitter_ms": round(faults.jitter_s * 1000, 1),
        "timeout_ms": TIMEOUT_MS,
        "dropped": dropped,
        "instances_free": free.instances,
        "instances_faults": lossy.instances,
        "messages_per_instance_free": round(free.messages_per_instance, 2),
        "messages_per_instance_faults": round(lossy.messages_per_instance, 2),
        "ratio_messages_per_instance": round(
            lossy.messages_per_instance / free.messages_per_instance, 3
        ),
        "acks_free": free.acks,
        "acks_faults": lossy.acks,
        "frames_per_request_free": round(free.frames_per_request, 2),
        "frames_per_request_faults": round(lossy.frames_per_request, 2),
        "bytes_per_request_free": round(free.bytes_per_request),
        "bytes_per_request_faults": round(lossy.bytes_per_request),
        "ratio_frames": round(lossy.frames_per_request / free.frames_per_request, 3),
        "ratio_bytes": round(lossy.bytes_per_request / free.bytes_per_request, 3),
        "seconds_free": round(free.seconds, 2),
        "seconds_faults": round(lossy.seconds, 2),
        "idle_frames_per_s_free": idle_free,
        "idle_frames_per_s_healed": idle_healed,
        "view_before": view_before,
        "view_healed": view_healed,
        "view_idle": view_idle,
        "view_end": view_end,
        "acknowledged": len(acked) + len(acked_lossy) + len(acked_after),
    }
