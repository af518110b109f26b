"""The front's reads and its handling of payloads (ostrom/cluster/front.py), in process:
a ``Front`` of a 4-replica configuration whose replicas are stand-ins answering what the
test says (no process, no socket).

* a plain read is one replica's word (a Byzantine one can lie), and sticks to the replica
  that answered until it fails;
* ``consistent=1`` answers only what ``f+1`` replicas answer at one position: never an
  answer fewer replicas gave (Hypothesis over any mix of answers), asking again while
  they disagree, 503 ``not_consistent`` after the deadline, ``no_replica`` if none answers;
* a bad payload is refused before anything is handed or ordered; too few replicas keeping
  a payload orders nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from content_world import propose
from ostrom.cluster import front as front_module
from ostrom.cluster.config import ClusterConfig, ReplicaConfig
from ostrom.cluster.front import Front
from ostrom.cluster.supervisor import create
from ostrom.service.identity import public_hex, without_payload
from ostrom.service.reads import Answer, Read
from service_world import Signer, key

Reply = tuple[int, dict[str, Any], int] | None


@pytest.fixture(scope="module")
def cfg(tmp_path_factory: pytest.TempPathFactory) -> ClusterConfig:
    return create(tmp_path_factory.mktemp("reads"), n=4, seed=7)


def _front(
    cfg: ClusterConfig, answers: list[dict[str, Reply]], front: Front | None = None
) -> Front:
    """A front (``front``, or a new one) whose replica i answers ``answers[k][ri]`` on its
    k-th round of asking (the last round repeats)."""
    front = front if front is not None else Front(cfg)
    asked: dict[str, int] = {}

    async def ask(rc: ReplicaConfig, read: Read) -> Reply:
        k = asked.get(rc.name, 0)
        asked[rc.name] = k + 1
        return answers[min(k, len(answers) - 1)].get(rc.name)

    front._ask = ask  # type: ignore[method-assign]
    return front


def _read(front: Front, consistent: bool) -> Answer:
    return asyncio.run(front.read(Read.of("health"), consistent))


def test_a_plain_read_is_one_replicas_word(cfg: ClusterConfig) -> None:
    lie = (200, {"now": 999}, 7)
    front = _front(cfg, [{"r0": lie, "r1": (200, {"now": 1}, 7), "r2": (200, {"now": 1}, 7)}])
    a = _read(front, False)
    assert (a.body, a.position, a.source) == ({"now": 999}, 7, "r0")  # r0 lies: believed
    c = _read(front, True)
    assert (c.body, c.position, c.source) == ({"now": 1}, 7, "r1,r2")  # f+1 agree


def test_plain_reads_stick_to_a_replica_until_it_fails(cfg: ClusterConfig) -> None:
    front = _front(cfg, [{"r1": (200, {}, 3), "r2": (200, {}, 4)}])
    assert _read(front, False).source == "r1"  # r0 does not answer: the next one
    assert _read(front, False).source == "r1"  # and it stays there


def test_consistent_reads_ask_again_then_give_up(
    cfg: ClusterConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(front_module, "_CONSISTENT_S", 0.3)
    monkeypatch.setattr(front_module, "_POLL_S", 0.01)
    moving: dict[str, Reply] = {"r0": (200, {}, 4), "r1": (200, {}, 5), "r2": (200, {}, 6)}
    settled: dict[str, Reply] = {"r0": (200, {}, 6), "r1": (200, {}, 6), "r2": (200, {}, 6)}
    a = _read(_front(cfg, [moving, moving, settled]), True)
    assert a.status == 200 and a.position == 6
    a = _read(_front(cfg, [moving]), True)
    assert (a.status, a.body["error"], a.position) == (503, "not_consistent", None)
    a = _read(_front(cfg, [{}]), True)
    assert (a.status, a.body["error"]) == (503, "no_replica")
    assert _read(_front(cfg, [{}]), False).body["error"] == "no_replica"


_answer = st.sampled_from([None, (200, {"v": 1}, 5), (200, {"v": 2}, 5), (200, {"v": 1}, 6)])


@pytest.fixture(scope="module")
def one_front(cfg: ClusterConfig) -> Front:
    return Front(cfg)


@settings(deadline=None)
@given(answers=st.lists(_answer, min_size=4, max_size=4))
def test_a_consistent_answer_is_what_f_plus_1_replicas_gave(
    cfg: ClusterConfig, one_front: Front, answers: list[Reply]
) -> None:
    front = _front(cfg, [{f"r{i}": a for i, a in enumerate(answers)}], one_front)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(front_module, "_CONSISTENT_S", 0.0)  # one round of asking
        got = _read(front, True)
    if got.status == 200:
        givers = [i for i, a in enumerate(answers) if a == (200, got.body, got.position)]
        assert len(givers) >= cfg.f + 1
        assert got.source == ",".join(f"r{i}" for i in givers)
    else:
        counts = [answers.count(a) for a in answers if a is not None]
        assert max(counts, default=0) <= cfg.f  # no answer had f+1 replicas


def test_a_bad_payload_is_refused_before_anything_is_handed(cfg: ClusterConfig) -> None:
    front = _front(cfg, [{}])
    handed: list[Any] = []

    async def hand(put: dict[str, Any]) -> int:
        handed.append(put)
        return 2  # fewer than n - f = 3

    front._hand = hand  # type: ignore[method-assign]
    front.keys["f1"] = public_hex(key("f1"))  # as if the replicas had told the front
    s = Signer(cfg.community)  # ENV-1: the cluster's own community
    good = s.env("f1", propose("f1", "x", "s", content="c"))
    bad = {**good, "command": {**good["command"], "content": "not the digest's"}}

    async def go() -> tuple[Any, Any]:
        return await front.submit(bad), await front.submit(good)

    refused, unkept = asyncio.run(go())
    assert (refused.status, refused.body["error"]) == (422, "digest_mismatch")
    assert (unkept.status, unkept.body["error"]) == (503, "no_replica")
    assert len(handed) == 1 and handed[0]["payload"] == {"content": "c"}
    assert front.queue.empty()  # nothing was ordered
    # a payload of an envelope no replica would take as a put (its artifact is not an
    # id): not handed, the envelope ordered without it (the Community refuses it, as on
    # a node)
    odd = s.env("f1", {**propose("f1", "y", "s", content="c"), "artifact": 7})

    async def order() -> Any:
        task = asyncio.ensure_future(front.submit(odd))
        await asyncio.sleep(0.05)
        queued = front.queue.get_nowait().command
        task.cancel()
        return queued

    assert asyncio.run(order()) == {**odd, "command": without_payload(odd["command"])}
    assert len(handed) == 1


def test_a_plain_read_passes_over_a_replica_still_fetching_the_content(
    cfg: ClusterConfig,
) -> None:
    """A replica that executed a proposal without its payload and is fetching it answers
    503 ``content_pending`` (cluster/payloads.py, "Repair"): the front asks the next
    replica, and answers the pending reply only if every replica is pending."""
    pending = (503, {"error": "content_pending", "detail": "fetching"}, 5)
    content = Read.of("content", artifact="x")
    front = _front(cfg, [{"r0": pending, "r1": (200, {"content": "c"}, 5)}])
    a = asyncio.run(front.read(content, False))
    assert (a.status, a.body, a.source) == (200, {"content": "c"}, "r1")
    front = _front(cfg, [{f"r{i}": pending for i in range(4)}])
    a = asyncio.run(front.read(content, False))
    assert (a.status, a.body["error"], a.source) == (503, "content_pending", "r0")
