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

__all__ = ["IDLE_S", "STRATEGY", "Faults", "Idle", "experiment"]

#: Seconds the cluster idles after the heal, its replica-link traffic counted.
IDLE_S = 2.0
#: The simulation sweep's kinds of faulty replica (``ostrom.harness.sweep.FAULTY``) and the
#: strategy the highest replica runs for each (harness/byzantine.py; None: honest).
STRATEGY: dict[str, str | None] = {"none": None, "silent": "silent", "flood": "view-change-flood"}


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


def replica_links(
    proxy: FaultProxy, names: set[str], senders: set[str] | None = None
) -> tuple[int, int, int]:
    """Frames, bytes and acknowledgement frames offered so far to the replicas ``names``
    (the front's requests left out: they are the load, not the protocol's cost) by
    ``senders`` (default: ``names``; the experiment passes the honest replicas: a
    flooder's frames are the attack, not what the protocol's retransmission costs)."""
    senders = names if senders is None else senders
    frames = size = 0
    for (src, dst), (f, b) in proxy.offered().items():
        if src in senders and dst in names:
            frames, size = frames + f, size + b
    acks = sum(
        a for (src, dst), a in proxy.acks_offered().items() if src in senders and dst in names
    )
    return frames, size, acks


def run(
    c: Cluster,
    proxy: FaultProxy,
    tag: str,
    k: int,
    names: set[str],
    honest: dict[int, str],
    timeout: float,
) -> tuple[Phase, list[dict[str, Any]]]:
    """``k`` signed commands, all acknowledged, the honest replicas' traffic on the
    replica links counted until every honest replica executed them (the count includes
    the stragglers' catch-up)."""
    senders = set(honest.values())
    f0, b0, a0 = replica_links(proxy, names, senders)
    before = executed_everywhere(c, honest)
    start = time.monotonic()
    load = Load(c.url, [command(c, tag, i) for i in range(k)]).start()
    load.join(timeout=timeout)
    executed = max(positions(c, honest))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if min(positions(c, honest), default=-1) >= executed:
            break
        time.sleep(0.05)
    f1, b1, a1 = replica_links(proxy, names, senders)
    seconds = time.monotonic() - start
    # every replica executed up to ``executed``: the instances the phase ordered
    return Phase(k, executed - before, f1 - f0, a1 - a0, b1 - b0, seconds), load.acked


def positions(c: Cluster, honest: dict[int, str]) -> list[int]:
    """The last executed sequence number of each honest replica that answers (a replica
    that does not answer is left out: ``run`` then waits for it until its deadline)."""
    st = c.status()
    return [int(s["last_executed"]) for i, s in st.items() if i in honest and s is not None]


def executed_everywhere(c: Cluster, honest: dict[int, str]) -> int:
    """The highest sequence number every honest replica executed (the previous phase
    waited for them all, so this is where the next phase's instances start)."""
    return min(positions(c, honest))


@dataclass(frozen=True)
class Idle:
    """Frames per second the honest replicas offered while no command was sent for
    ``IDLE_S``: among themselves (position updates only, once each peer acknowledged
    everything), and towards the faulty replica: acknowledgements (a flooder's messages
    are owed them) apart from the rest, and of the rest the repeats (copies of what it
    never acknowledged; the others are first copies, such as PRE-PREPAREs relayed by the
    periodic ``Replica.retransmit``)."""

    honest: float
    to_faulty: float
    repeats_to_faulty: float
    acks_to_faulty: float


def idle(proxy: FaultProxy, names: set[str], senders: set[str]) -> Idle:
    """What an idle spell of ``IDLE_S`` costs (``Idle``)."""
    faulty = names - senders

    def counts() -> tuple[int, int, int, int]:
        honest = replica_links(proxy, senders, senders)[0]
        to_faulty, _, acks = replica_links(proxy, faulty, senders)
        repeats = sum(
            r for (s, d), r in proxy.repeats_offered().items() if s in senders and d in faulty
        )
        return honest, to_faulty - acks, repeats, acks

    before = counts()
    time.sleep(IDLE_S)
    after = counts()
    h, t, r, a = (round((y - x) / IDLE_S, 1) for x, y in zip(before, after, strict=True))
    return Idle(h, t, r, a)


def views(c: Cluster, honest: dict[int, str]) -> list[int]:
    return [int(s["view"]) for i, s in c.status().items() if i in honest and s is not None]


def experiment(
    path: Path, faults: Faults, k: int, *, seed: int = 5, faulty: str = "none"
) -> dict[str, Any]:
    """A fault-free load, then a load under ``faults``, heal, idle, one more load; the
    audit of the honest replicas at the end.  ``faulty`` (``FAULTY``, as the simulation's
    sweep): the highest replica is honest, silent, or floods VIEW-CHANGEs, in both loads.
    Returns the figures (the bench row)."""
    if faulty not in STRATEGY:
        raise ValueError(f"faulty must be one of {sorted(STRATEGY)}, not {faulty!r}")
    dial = free_ports(4)
    cfg = create(path, dial_ports=dial, base_timeout_ms=TIMEOUT_MS, synchronous="NORMAL", seed=seed)
    names = {r.name for r in cfg.replicas}
    bad = max(r.id for r in cfg.replicas)
    strategy = STRATEGY[faulty]
    honest = {r.id: r.name for r in cfg.replicas if strategy is None or r.id != bad}
    senders = set(honest.values())
    proxy = FaultProxy(
        {r.name: (Address(r.dial.host, r.dial.port), r.listen) for r in cfg.replicas}, seed=seed
    )
    c = Cluster(path)
    try:
        c.start(None if strategy is None else {bad: strategy}, timeout=60)
        free, acked = run(c, proxy, "f", k, names, honest, timeout=60)
        idle_free = idle(proxy, names, senders)
        proxy.limit_to(names)  # the replica links: the front's requests pass untouched
        proxy.set_drop(faults.loss)
        proxy.set_jitter(faults.jitter_s)
        view_before = max(views(c, honest))
        lossy, acked_lossy = run(c, proxy, "j", k, names, honest, timeout=120)
        dropped = proxy.stats["dropped"]
        proxy.set_drop(0.0)
        proxy.set_jitter(0.0)
        view_healed = max(views(c, honest))
        idle_healed = idle(proxy, names, senders)
        view_idle = max(views(c, honest))
        _, acked_after = run(c, proxy, "h", 4, names, honest, timeout=60)
        view_end = max(views(c, honest))
        check(c, sorted(honest), acked + acked_lossy + acked_after, at_least=1)
    finally:
        c.stop()
        proxy.close()
    return {
        "n": 4,
        "faulty": faulty,
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
        "idle_frames_per_s_free": idle_free.honest,
        "idle_frames_per_s_healed": idle_healed.honest,
        "idle_to_faulty_per_s_free": idle_free.to_faulty,
        "idle_to_faulty_per_s_healed": idle_healed.to_faulty,
        "idle_repeats_to_faulty_per_s_free": idle_free.repeats_to_faulty,
        "idle_repeats_to_faulty_per_s_healed": idle_healed.repeats_to_faulty,
        "idle_acks_to_faulty_per_s_free": idle_free.acks_to_faulty,
        "idle_acks_to_faulty_per_s_healed": idle_healed.acks_to_faulty,
        "view_before": view_before,
        "view_healed": view_healed,
        "view_idle": view_idle,
        "view_end": view_end,
        "acknowledged": len(acked) + len(acked_lossy) + len(acked_after),
    }
