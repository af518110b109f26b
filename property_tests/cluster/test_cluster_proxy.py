"""The fault-injecting proxy's jitter and its per-link traffic count (cluster/proxy.py), on
its own: a sender and a receiver over loopback, no cluster.  The cluster's congestion test
(test_cluster_congestion.py) relies on both: jitter must reorder the frames of one TCP
connection (TCP alone never does) and lose none, and ``offered`` must count every frame
and byte the sender wrote, lost or not (the cost per request is read from it)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from ostrom.cluster.config import Address
from ostrom.cluster.proxy import FaultProxy
from ostrom.cluster.supervisor import free_ports
from ostrom.cluster.wire import FrameDecoder, ack_frame, frame, hello
from ostrom.consensus.congestion import KEY_BYTES

FRAMES = 200


def numbered() -> list[bytes]:
    return [f"m{i:04d}".encode() for i in range(FRAMES)]


def through_proxy(
    jitter: float,
    drop: float = 0.0,
    src: str = "r0",
    scope: set[str] | None = None,
    payloads: list[bytes] | None = None,
) -> tuple[list[bytes], FaultProxy]:
    """``FRAMES`` frames (``payloads``, numbered ones by default) from ``src`` to "r1"
    through a proxy (its faults limited to ``scope``); what "r1" received (its hello
    first), and the proxy (closed)."""
    payloads = numbered() if payloads is None else payloads
    assert len(payloads) == FRAMES
    listen, upstream = free_ports(2)
    server = socket.create_server(("127.0.0.1", upstream))
    got: list[bytes] = []
    done = threading.Event()

    def receive() -> None:
        conn, _ = server.accept()
        decoder = FrameDecoder()
        conn.settimeout(10)
        # with loss, no count to wait for: the hello, then what arrives until the close
        want = 1 if drop > 0 else FRAMES + 1
        with conn:
            while len(got) < want:
                data = conn.recv(1 << 16)
                if not data:
                    break
                got.extend(decoder.feed(data))
            done.set()
            if drop > 0:
                while data := conn.recv(1 << 16):
                    got.extend(decoder.feed(data))

    t = threading.Thread(target=receive, daemon=True)
    t.start()
    proxy = FaultProxy({"r1": (Address("127.0.0.1", listen), Address("127.0.0.1", upstream))})
    try:
        proxy.limit_to(scope)
        proxy.set_jitter(jitter)
        proxy.set_drop(drop)
        with socket.create_connection(("127.0.0.1", listen)) as out:
            out.sendall(hello(src))
            for payload in payloads:
                out.sendall(frame(payload))
            if drop > 0:
                time.sleep(0.3)
            else:
                assert done.wait(10), f"only {len(got)} frames arrived"
    finally:
        proxy.close()
        server.close()
    t.join(10)
    return got, proxy


def test_jitter_reorders_and_loses_nothing() -> None:
    got, proxy = through_proxy(jitter=0.02)
    sent = [f"m{i:04d}".encode() for i in range(FRAMES)]
    assert sorted(got[1:]) == sent, "a jittered frame was lost or duplicated"
    assert got[1:] != sent, "20 ms of jitter on 200 frames reordered nothing"
    assert proxy.offered()[("r0", "r1")] == (FRAMES, sum(len(p) for p in sent))


def test_without_jitter_the_order_is_kept() -> None:
    got, proxy = through_proxy(jitter=0.0)
    assert got[1:] == [f"m{i:04d}".encode() for i in range(FRAMES)]
    assert proxy.offered()[("r0", "r1")][0] == FRAMES


def test_lost_frames_are_counted_as_offered() -> None:
    """What the sender wrote is its cost, whether or not the network delivered it."""
    got, proxy = through_proxy(jitter=0.0, drop=0.5)
    assert 0 < proxy.stats["dropped"] < FRAMES
    assert len(got) - 1 == FRAMES - proxy.stats["dropped"]
    assert proxy.offered()[("r0", "r1")][0] == FRAMES


def test_faults_limited_to_the_replica_links() -> None:
    """``limit_to``: the front's frames to a replica pass untouched (in order, none lost)
    while loss and jitter apply between replicas, and they are counted all the same."""
    replicas = {"r0", "r1"}
    got, proxy = through_proxy(jitter=0.02, drop=0.5, src="front", scope=replicas)
    assert got[1:] == [f"m{i:04d}".encode() for i in range(FRAMES)]
    assert proxy.stats["dropped"] == 0
    assert proxy.offered()[("front", "r1")][0] == FRAMES
    _, proxy = through_proxy(jitter=0.0, drop=0.5, src="r0", scope=replicas)
    assert proxy.stats["dropped"] > 0


def test_acknowledgements_are_counted_apart() -> None:
    """``acks_offered`` counts the acknowledgement frames among those offered (the
    congestion test's cost per instance leaves them out: they are paced by time), and
    only those: a message frame is not one, however short."""
    acks = {i for i in range(FRAMES) if i % 7 == 3}
    payloads = [
        ack_frame((bytes([i]) * KEY_BYTES,), i, 0) if i in acks else f"m{i:04d}".encode()
        for i in range(FRAMES)
    ]
    got, proxy = through_proxy(jitter=0.0, payloads=payloads)
    assert got[1:] == payloads
    assert proxy.offered()[("r0", "r1")] == (FRAMES, sum(len(p) for p in payloads))
    assert proxy.acks_offered() == {("r0", "r1"): len(acks)}
    _, proxy = through_proxy(jitter=0.0)
    assert proxy.acks_offered() == {}


def test_repeated_frames_are_counted_apart() -> None:
    """``repeats_offered``: a frame whose bytes the sender offered on the link before is
    a repeat (a retransmission); acknowledgements never are, however alike."""
    firsts = [f"m{i:04d}".encode() for i in range(FRAMES - 40)]
    again = firsts[:20]
    acks = [ack_frame((), 5, 0)] * 20
    payloads = firsts + again + acks
    got, proxy = through_proxy(jitter=0.0, payloads=payloads)
    assert got[1:] == payloads
    assert proxy.repeats_offered() == {("r0", "r1"): len(again)}
    assert proxy.acks_offered() == {("r0", "r1"): len(acks)}


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    """``free_ports`` draws below the kernel's ephemeral range, where no outgoing
    connection takes a port between the draw and the bind (a clean-clone run lost a
    cluster test to "address already in use" when they came from port 0)."""
    text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii")
    low = int(text.split()[0])
    for _ in range(20):
        ports = free_ports(6)
        assert len(set(ports)) == 6
        assert all(p < low for p in ports) or low - 20_000 < 1_000, ports
        for p in ports:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p))
