"""The process cluster under jitter and loss (issue 42 item 0, its cluster part;
docs/consensus.md, "Congestion control").

The replica processes retransmit under the simulation's congestion control
(consensus/congestion.py ``Retransmitter``, carried by cluster/replica_process.py: each
message to a peer tracked until the peer's acknowledgement frame names it, re-sent after
the observed timeout with back-off and a per-link budget unless covered or superseded;
the periodic ``Replica.retransmit`` skips what the peer has).  These tests put every
replica-bound frame through the fault-injecting proxy (cluster/proxy.py), faulty on the
replica-to-replica links — loss, and a random hold per frame that delays and reorders —
and show, on a real 4-replica cluster with signed commands:

* liveness after the faults stop: every command sent under the faults is acknowledged,
  and every honest replica executes the same log and passes the audit (BFT-LIVE-1);
* the view stays bounded: after the heal the view does not move while the cluster
  idles, and a further command is answered in the view the cluster healed in;
* the cost is bounded: frames per request on the replica-to-replica links under the
  faults (the proxy's per-link count of what the senders offered, before any loss,
  acknowledgements included) at most ``LOSS_BOUND`` times the fault-free load's, as in
  the simulation's sweep; and an idle cluster sends nothing but the position updates
  (``Retransmitter.acks_due``: at most one per peer per heartbeat, and only after a
  change), counted while it idles after the fault-free load and after the heal.  The
  figures are printed and recorded (bench/congestion.py ``--cluster``:
  bench/results/congestion_cluster.json).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lossy_cluster import IDLE_S, Faults, experiment
from ostrom.harness.sweep import LOSS_BOUND


def idle_bound(n: int, timeout_ms: int) -> float:
    """The most frames per second an idle cluster of ``n`` replicas may send one
    another: each replica tells each peer its position at most once per heartbeat (the
    view-change timeout) and only after it changed, plus one for a change at the edge of
    the ``IDLE_S`` window."""
    return n * (n - 1) * (1000 / timeout_ms + 1 / IDLE_S)


pytestmark = pytest.mark.system


def assert_row(row: dict[str, Any]) -> None:
    """Liveness, a bounded view, a bounded cost (printed and recorded by the bench)."""
    print(row)
    # BFT-LIVE-1: every command was acknowledged (Load.join fails on any refused or
    # unanswered one) and check() audited them at every replica after the heal
    assert row["acknowledged"] == 2 * row["requests"] + 4, row
    assert row["dropped"] > 0, "the faults dropped nothing: the test saw no loss"
    # bounded view: once healed, the view stays where it is (idle, and under new load)
    assert row["view_idle"] == row["view_healed"] == row["view_end"], row
    # the cost: what loss adds is bounded as in the simulation's sweep, and idle is quiet
    assert row["ratio_frames"] <= LOSS_BOUND, row
    bound = idle_bound(row["n"], row["timeout_ms"])
    assert row["idle_frames_per_s_free"] <= bound, row
    assert row["idle_frames_per_s_healed"] <= bound, row


def test_jitter_and_loss_ci(tmp_path: Path) -> None:
    """CI size: 4 replicas, 16 commands without faults and 16 under 10% loss and up to
    20 ms of per-frame jitter (reordering), then the heal."""
    assert_row(experiment(tmp_path, Faults(loss=0.1, jitter_s=0.02), 16))


@pytest.mark.slow
@pytest.mark.parametrize(("loss", "jitter_ms"), [(0.05, 50), (0.2, 20), (0.2, 100)])
def test_jitter_and_loss_larger(tmp_path: Path, loss: float, jitter_ms: int) -> None:
    """Larger: 60 commands per phase, heavier loss and jitter up to the view-change
    timeout's eighth."""
    assert_row(experiment(tmp_path, Faults(loss=loss, jitter_s=jitter_ms / 1000), 60))
