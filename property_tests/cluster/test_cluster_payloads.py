"""A replica's payloads (ostrom/cluster/payloads.py) and what its ``ClusterApp`` does with
them, in process: a node database and a payload file in a temporary directory, batches
executed as a replica executes them.

* the front orders a propose without its payload; the replica gives the payload handed
  for that envelope back, and its node keeps and indexes it as ``ostrom serve`` does;
* a proposal by digest alone stays a pin, even when another envelope handed the payload;
* a payload handed for an envelope that is refused is discarded (a replay of a used
  seq with another payload too), one for an applied envelope is kept (its retry too); a
  forget purges the payload file (FORGET-PURGE: grepped);
* a replica restarted (a fresh node, the same payload file, the history re-executed)
  answers every command as before and holds the same content;
* every reply is the node's reply for the envelope with its payload: the replicas answer
  what a single node answers;
* hostile puts are refused by ``check_put`` (Hypothesis), never kept, never a crash.

Mutants are caught: a replica that gives a payload back by digest alone (a pin gets
content), one that never discards, one whose forget leaves the payload.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from content_world import FORGET_PARAMS, forget, propose, to_active
from ostrom.cluster.app import ClusterApp, batch_operation
from ostrom.cluster.payloads import PayloadError, PayloadStore, check_put, put_request
from ostrom.service.gate import Gate
from ostrom.service.identity import sign_envelope, without_payload
from ostrom.service.node import Node
from service_world import Signer, key, setup

SECRET = "PAYLOAD-FILE-SECRET-0b7d3e19"


def _node(path: Path) -> Node:
    return Node.open(path, params=FORGET_PARAMS, setup=setup(), fsync=False)


def _replica(d: Path, name: str = "r") -> ClusterApp:
    """A fresh node (as at every start) and the durable payload file."""
    for p in d.glob(f"{name}-node*"):
        p.unlink()
    return ClusterApp(_node(d / f"{name}-node.db"), PayloadStore(d / f"{name}-payloads.db"))


def _front(app: ClusterApp, envelopes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the front does: hand each payload, order the envelopes without it."""
    ordered = []
    for e in envelopes:
        put = put_request(e)
        if put is not None:
            assert app.payloads is not None
            app.payloads.put(*check_put(put, FORGET_PARAMS.content_limit))
            e = {**e, "command": without_payload(e["command"])}
        ordered.append(e)
    return ordered


def _run(app: ClusterApp, ordered: list[dict[str, Any]]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for i in range(0, len(ordered), 3):  # batches of three
        results += app.execute(batch_operation(copy.deepcopy(ordered[i : i + 3])))["results"]
    return results


def _walk(s: Signer) -> list[dict[str, Any]]:
    envs = to_active(s, "x", "s", content=SECRET, title="t")
    envs += to_active(s, "y", "u", content="kept for good")
    # f2 pins the same payload by digest alone; f3's propose is refused by the gate
    envs.append(s.env("f2", propose("f2", "pin", "v", content="kept for good")))
    envs[-1] = {**envs[-1], "command": without_payload(envs[-1]["command"])}
    bad = s.env("f3", propose("f3", "z", "w", content="refused"))
    envs.append({**bad, "seq": 99})  # out of order: refused, nothing applied
    # another envelope with f1's used seq 1 (x's propose): replayed, its payload not kept;
    # and x's own envelope again: a retry, x's payload stays
    replay = propose("f1", "w", "w", content="replay")
    envs.append(sign_envelope(key("f1"), "f1", 1, replay, community=s.community))
    envs.append(envs[0])
    return envs


def _grep(d: Path, needle: str) -> list[str]:
    return sorted(p.name for p in d.iterdir() if needle.encode() in p.read_bytes())


def check(tmp: Path, make: type[ClusterApp]) -> None:
    s = Signer()
    envs = _walk(s)
    node = _node(tmp / "single.db")
    want = [{"status": r.status, "body": r.body} for r in map(node.submit, copy.deepcopy(envs))]
    d = tmp / "replica"
    d.mkdir()
    app = _replica(d)
    app.__class__ = make
    ordered = _front(app, envs)
    assert _run(app, ordered) == want  # the single node's replies
    assert app.node.content("x").body.get("content") == SECRET
    assert app.node.content("y").body.get("content") == "kept for good"
    assert app.node.content("pin").body.get("error") == "no_content"  # a pin stays a pin
    assert app.payloads is not None and app.payloads.count() == 2  # z's was discarded
    assert _grep(d, SECRET)
    # a restart: a fresh node, the same payload file, the history executed again
    app.node.close()
    again = _replica(d)
    again.__class__ = make
    assert _run(again, ordered) == want
    assert again.node.content("x").body.get("content") == SECRET
    forgets = forget(s, "x")
    assert _run(again, _front(again, forgets)) == [
        {"status": r.status, "body": r.body} for r in map(node.submit, copy.deepcopy(forgets))
    ]
    assert again.node.content("x").body.get("error") == "content_forgotten"
    again.node.close()
    assert again.payloads is not None
    again.payloads.close()
    assert _grep(d, SECRET) == []  # FORGET-PURGE: node database and payload file
    assert _grep(d, "kept for good")


def test_payloads_given_back_kept_discarded_and_purged(tmp_path: Path) -> None:
    check(tmp_path, ClusterApp)


class ByDigest(ClusterApp):
    """Mutant: gives a payload back to any envelope with its digest (a pin gets content)."""

    def _give_back(self, command: Any) -> tuple[str, int, str] | None:
        inner = command.get("command") if isinstance(command, dict) else None
        if self.payloads is not None and isinstance(inner, dict) and "digest" in inner:
            row = self.payloads._db.execute(
                "SELECT agent, seq FROM payload WHERE digest = ?", (inner["digest"],)
            ).fetchone()
            if row is not None:
                payload = self.payloads.get(row[0], row[1], inner["digest"])
                command["command"] = {**inner, **(payload or {})}
                return row[0], row[1], inner["digest"]
        return None


class NeverDiscards(ClusterApp):
    """Mutant: keeps the payload of a refused envelope."""

    def _settle(self, handed: Any, replies: Any) -> None:
        super()._settle([None] * len(handed), replies)


class KeepsForgotten(ClusterApp):
    """Mutant: a forget leaves the payload file as it was."""

    def _settle(self, handed: Any, replies: Any) -> None:
        assert self.payloads is not None
        forget, self.payloads.forget = self.payloads.forget, lambda xs: 0  # type: ignore[method-assign,assignment]
        try:
            super()._settle(handed, replies)
        finally:
            self.payloads.forget = forget  # type: ignore[method-assign]


@pytest.mark.parametrize("mutant", [ByDigest, NeverDiscards, KeepsForgotten])
def test_the_check_catches_mutants(tmp_path: Path, mutant: type[ClusterApp]) -> None:
    with pytest.raises(AssertionError):
        check(tmp_path, mutant)


def test_an_unusable_node_database_stops_the_replica(tmp_path: Path) -> None:
    """A write the node database refuses is not answered 503 as on a node: the replica
    stops (its peers applied the command; answering would leave it behind)."""
    from ostrom.cluster.app import ReplicaStoreFailure

    app = _replica(tmp_path)
    app.node.store.close()
    s = Signer()
    with pytest.raises(ReplicaStoreFailure):
        app.execute(batch_operation([s.env("f1", propose("f1", "x", "s", content="c"))]))


def test_the_app_digest_is_the_gates(tmp_path: Path) -> None:
    """The checkpoints' digest of a replica is its gate's public state (REPL-1)."""
    app = _replica(tmp_path)
    assert app.state() == Gate(FORGET_PARAMS, setup()).public_state()


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6), _nested, max_leaves=6
)


@given(
    st.fixed_dictionaries(
        {"agent": _json, "seq": _json, "artifact": _json, "digest": _json, "payload": _json}
    )
    | _json
)
def test_hostile_puts_are_refused(doc: Any) -> None:
    with pytest.raises(PayloadError):
        check_put(doc, FORGET_PARAMS.content_limit)


def test_a_put_must_be_its_digests_preimage() -> None:
    s = Signer()
    env = s.env("f1", propose("f1", "x", "s", content="c", title="t"))
    put = put_request(env)
    assert put is not None
    assert check_put(put, 1024)[4] == {"content": "c", "title": "t"}
    for bad in (
        {**put, "digest": "0" * 64},
        {**put, "payload": {**put["payload"], "content": "other"}},
        {**put, "payload": {**put["payload"], "extra": 1}},
        {**put, "seq": True},
    ):
        with pytest.raises(PayloadError):
            check_put(bad, 1024)
    with pytest.raises(PayloadError, match="content_too_large"):
        check_put(put, 0)
