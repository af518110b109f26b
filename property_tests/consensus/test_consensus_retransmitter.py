"""The cluster's congestion control, sans-IO (docs/consensus.md, "Congestion control";
issue 42 item 0): ``congestion.Retransmitter``, which the replica processes carry, and
the acknowledgement frame it travels in (cluster/wire.py).

1. a message offered to a peer is re-sent after the timeout, then with the back-off,
   until acknowledged; an acknowledged one never again, and its first-copy delay is a
   sample (Karn's rule: a re-sent one's is not);
2. what the peer's position covers, and what the replica no longer holds, is dropped, not
   re-sent; a periodic copy of an acknowledged, outstanding or covered message is
   skipped (BFT-LIVE-1 without the idle cluster's window every period);
3. towards a peer that never acknowledges, at most ``LINK_BUDGET`` copies per window;
4. the receiver's half: acknowledgements wait at most ``ACK_DELAY`` ticks and go in one
   frame; a position alone is told at most once per heartbeat, and never while nothing
   changes (an idle replica sends nothing);
5. the view-change timer's basis is the ``f+1``-th largest observed timeout, never
   below the replica's own: ``f`` peers that claim huge timeouts cannot stretch it;
6. the acknowledgement frame round-trips, and any bytes parse to an ``Ack`` or None.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.cluster.wire import ACK_MAGIC, MAX_ACK_TIMEOUT, FrameError, ack_frame, parse_ack
from ostrom.consensus.congestion import (
    ACK_BATCH,
    ACK_DELAY,
    KEY_BYTES,
    LINK_BUDGET,
    Retransmitter,
    message_key,
    waited_timeout,
)
from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import Checkpoint, Commit, Signed, ViewChange

KEYS, SIGNERS = make_keys(0, ["r0", "r1"])


def commit(seq: int) -> Signed:
    return SIGNERS["r0"].sign(Commit(view=0, seq=seq, digest="d" * 64, replica=0))


def rt() -> Retransmitter:
    return Retransmitter(initial=100, at_least=200, memory=3200, heartbeat=800)


def always(dst: str, payload: Signed | bytes) -> bool:
    return True


def resent(t: Retransmitter, now: int) -> list[bytes]:
    return [r.data for r in t.due(now, always)]


# --- 1. timers and acknowledgements ------------------------------------------------------


def test_resent_with_back_off_until_acknowledged() -> None:
    t, m = rt(), commit(1)
    assert t.offer("r1", m, m.encoded, 0)
    assert resent(t, 99) == []
    assert resent(t, 100) == [m.encoded]  # one timeout (the initial 100)
    assert resent(t, 299) == []
    assert resent(t, 300) == [m.encoded]  # then two timeouts: the back-off
    t.acknowledged("r1", (message_key(m.encoded),), 0, 0, 350)
    assert resent(t, 10_000) == []
    assert t.estimator.samples == 0  # Karn: a re-sent message's acknowledgement is ambiguous


def test_a_first_copy_acknowledged_is_a_sample() -> None:
    t, m = rt(), commit(1)
    t.offer("r1", m, m.encoded, 10)
    t.acknowledged("r1", (message_key(m.encoded),), 0, 0, 40)
    assert (t.estimator.samples, t.observed()) == (1, 30 + 4 * 15 + 1)


# --- 2. covered, superseded, periodic ----------------------------------------------------


def test_covered_and_superseded_are_dropped() -> None:
    t, a, b = rt(), commit(1), commit(2)
    t.offer("r1", a, a.encoded, 0)
    t.offer("r1", b, b.encoded, 0)
    t.acknowledged("r1", (), 1, 0, 5)  # the peer executed 1: covers a
    assert [r.data for r in t.due(100, lambda d, p: p is not b)] == []
    assert (t.stats["covered"], t.stats["superseded"], t.unacked) == (1, 1, {})


def test_periodic_copies_skip_what_the_peer_has() -> None:
    t, a, b, c = rt(), commit(1), commit(2), commit(3)
    t.offer("r1", a, a.encoded, 0)
    t.acknowledged("r1", (message_key(a.encoded),), 0, 0, 5)
    assert not t.offer("r1", a, a.encoded, 10, periodic=True)  # acknowledged
    t.offer("r1", b, b.encoded, 10)
    assert not t.offer("r1", b, b.encoded, 20, periodic=True)  # on its own timer
    t.acknowledged("r1", (), 3, 0, 25)
    assert not t.offer("r1", c, c.encoded, 30, periodic=True)  # covered
    vc = SIGNERS["r0"].sign(ViewChange(1, 0, (), (), 0))
    assert t.offer("r1", vc, vc.encoded, 30, periodic=True)  # missing: sent, tracked
    assert t.stats["resend_skipped"] == 3


def test_a_checkpoint_is_covered_by_the_stable_checkpoint() -> None:
    t = rt()
    cp = SIGNERS["r0"].sign(Checkpoint(seq=8, state_digest="a" * 64, replica=0))
    t.offer("r1", cp, cp.encoded, 0)
    t.acknowledged("r1", (), 9, 0, 5)
    assert resent(t, 100) == [cp.encoded]  # executed past it, not yet stable
    t.acknowledged("r1", (), 9, 8, 150)
    assert resent(t, 10_000) == []


# --- 3. the budget ------------------------------------------------------------------------


def test_a_silent_peer_gets_at_most_the_budget_per_window() -> None:
    t = rt()
    msgs = [commit(s) for s in range(1, 41)]
    for m in msgs:
        t.offer("r1", m, m.encoded, 0)
    assert len(resent(t, 100)) == LINK_BUDGET
    assert t.stats["deferred"] == 40 - LINK_BUDGET
    assert resent(t, 150) == []  # the same window (the timeout, 100)
    assert len(resent(t, 200)) == LINK_BUDGET  # the next window


# --- 4. the receiver's half ---------------------------------------------------------------


def test_acknowledgements_are_delayed_and_batched() -> None:
    t, peers = rt(), ("r1", "r2")
    for p in peers:
        t.told(p, 0, 0, 0)
    a, b = commit(1), commit(2)
    t.received("r1", a.encoded, 0)
    t.received("r1", b.encoded, 5)
    assert list(t.acks_due(ACK_DELAY - 1, 0, 0, peers)) == []
    keys = (message_key(a.encoded), message_key(b.encoded))
    assert list(t.acks_due(ACK_DELAY, 0, 0, peers)) == [("r1", keys)]
    assert list(t.acks_due(ACK_DELAY + 1, 0, 0, peers)) == []


def test_many_owed_go_at_once() -> None:
    t = rt()
    t.told("r1", 0, 0, 0)
    for s in range(ACK_BATCH + 3):
        t.received("r1", commit(s + 1).encoded, 0)
    sent = list(t.acks_due(0, 0, 0, ("r1",)))
    assert [len(k) for _p, k in sent] == [ACK_BATCH]


def test_an_idle_replica_sends_nothing_but_a_heartbeat_after_a_change() -> None:
    t, peers = rt(), ("r1", "r2")
    for p in peers:
        t.told(p, 0, 0, 0)
    # nothing changes: nothing, however long
    assert [x for now in range(0, 100_000, 10) for x in t.acks_due(now, 0, 0, peers)] == []
    # the position moves: each peer told once, after the heartbeat period, then silence
    told = [x for now in range(0, 100_000, 10) for x in t.acks_due(now, 5, 0, peers)]
    assert told == [("r1", ()), ("r2", ())]


# --- 5. the timer's basis ------------------------------------------------------------------


def test_the_timer_waits_for_the_slower_peers_but_not_for_f_liars() -> None:
    assert waited_timeout(30, [], 1) == 30
    assert waited_timeout(30, [140, 50], 1) == 50  # the 2nd largest of 30, 140, 50
    assert waited_timeout(30, [140, 50], 0) == 140
    assert waited_timeout(300, [140, 50], 1) == 300  # never below its own
    # f = 2 peers claiming 2^32 - 1 ms: the timer follows the correct ones
    assert waited_timeout(30, [2**32 - 1, 2**32 - 1, 60, 40], 2) == 60


def test_peers_timeouts_come_from_their_acknowledgements() -> None:
    t = rt()
    m = commit(1)
    t.offer("r1", m, m.encoded, 0)
    assert t.waited(1) is None  # not measured: the timer stays the replica's own
    t.acknowledged("r1", (message_key(m.encoded),), 0, 0, 20, timeout=500)
    t.acknowledged("r2", (), 0, 0, 20, timeout=900)
    own = t.observed()
    assert own is not None and own < 500
    assert t.waited(1) == 500 and t.waited(0) == 900


# --- 6. the frame ---------------------------------------------------------------------------


@settings(max_examples=50)
@given(
    keys=st.lists(st.binary(min_size=KEY_BYTES, max_size=KEY_BYTES), max_size=4),
    executed=st.integers(0, 2**63 - 1),
    stable=st.integers(0, 2**63 - 1),
    timeout=st.integers(0, MAX_ACK_TIMEOUT),
)
def test_the_acknowledgement_frame_round_trips(
    keys: list[bytes], executed: int, stable: int, timeout: int
) -> None:
    ack = parse_ack(ack_frame(tuple(keys), executed, stable, timeout))
    assert ack is not None
    got = (ack.keys, ack.executed, ack.stable, ack.timeout)
    assert got == (tuple(keys), executed, stable, timeout)


@settings(max_examples=50)
@given(data=st.binary(max_size=400))
def test_any_bytes_parse_or_give_none(data: bytes) -> None:
    for payload in (data, ACK_MAGIC + data):
        ack = parse_ack(payload)
        assert ack is None or (ack.executed >= 0 and ack.stable >= 0)


def test_a_full_acknowledgement_round_trips_and_one_more_key_is_refused() -> None:
    keys = tuple(k.to_bytes(KEY_BYTES, "big") for k in range(ACK_BATCH))
    ack = parse_ack(ack_frame(keys, 9, 8, 70))
    assert ack is not None and ack.keys == keys
    with pytest.raises(FrameError):
        ack_frame((*keys, keys[0]), 9, 8)


def test_malformed_acknowledgements_are_none() -> None:
    good = ack_frame((b"k" * KEY_BYTES,), 3, 2)
    assert parse_ack(good) is not None
    assert parse_ack(good[:-1]) is None  # a key cut short
    assert parse_ack(good + b"x") is None  # trailing bytes
    assert parse_ack(ack_frame((), -1, 0)) is None  # a negative position
    assert parse_ack(b'{"sig": "..."}') is None  # a message, not an acknowledgement
