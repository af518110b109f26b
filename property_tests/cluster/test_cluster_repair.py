"""Peer repair of payloads (cluster/payloads.py, "Repair") and the payload file's bound.

The front orders a propose or resubmit once ``n - f`` replicas kept its payload, so a
replica may execute it without (it was down, the put was lost).  In process, four
replicas' ``ClusterApp`` over temporary files execute the same batches; the front hands
the payloads to three of them only, and the batch marks the commands that had one:

* the fourth executes them without the payload, answers a content read 503
  ``content_pending`` meanwhile, and fetches the payloads from its peers (``Repair``),
  after which its content table, its search answers and its content reads are the
  others' (compared in full);
* a Byzantine peer that serves other bytes is refused (counted in ``lies``) and the
  next peer asked; a peer that refuses is passed over;
* a peer refuses to serve a forgotten artifact's payload, a payload wanted for an
  artifact forgotten before it came is never fetched, and one fetched and then
  forgotten is purged from every file (FORGET-PURGE: grepped);
* the payload file refuses a put beyond its bound in bytes, and keeps nothing of it;
* hostile fetch requests and answers (Hypothesis) are refused, never kept, never a crash.

Mutants are caught: a repair that trusts a peer's bytes, a replica that never wants what
it lacks, a peer that serves a forgotten payload.

Against real replica processes over loopback (``slow``: five processes, a kill and a
restart): a replica killed while content is proposed comes back, repairs, and its
content table and its search and content answers are the others'; with a Byzantine peer
(a process holding that replica's key and serving wrong bytes) among those it asks.
The put channel's authentication is tested on a running cluster in
test_cluster_hostile.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cluster_world import converge, founders_file
from content_world import FORGET_PARAMS, forget, propose, to_active
from ostrom.cluster.app import ClusterApp, batch_operation, carried_of, commands_of
from ostrom.cluster.keys import load_ring
from ostrom.cluster.payloads import (
    PayloadFull,
    PayloadStore,
    Repair,
    Wanted,
    check_put,
    fetch_answer,
    put_request,
)
from ostrom.cluster.supervisor import Cluster, create, replica_status
from ostrom.cluster.wire import FETCH, READ, authenticate, frame, hello, parse_hello, read_one
from ostrom.protocol.commands import payload_digest
from ostrom.protocol.lifecycle import FORGOTTEN
from ostrom.service.identity import without_payload
from ostrom.service.node import Node
from ostrom.service.reads import Read, answer
from service_world import Signer, setup

SECRET = "REPAIRED-THEN-FORGOTTEN-5c1e"
PEERS = ["r0", "r1", "r2"]
ME = "r3"


def _node(path: Path) -> Node:
    return Node.open(path, params=FORGET_PARAMS, setup=setup(), fsync=False)


def _replicas(d: Path, make: type[ClusterApp] = ClusterApp) -> dict[str, ClusterApp]:
    out = {}
    for name in [*PEERS, ME]:
        others = [p for p in [*PEERS, ME] if p != name]
        repair = Repair(others, FORGET_PARAMS.content_limit, FORGET_PARAMS.embedding_dim)
        app = make(_node(d / f"{name}-node.db"), PayloadStore(d / f"{name}-payloads.db"), repair)
        out[name] = app
    return out


def _order(apps: dict[str, ClusterApp], envs: list[dict[str, Any]], missed: set[str]) -> None:
    """The front: hand each payload to every replica but those in ``missed``, order the
    envelopes without it in batches of three (the carried ones marked), execute them on
    every replica."""
    ordered: list[tuple[dict[str, Any], bool]] = []
    for e in envs:
        put = put_request(e)
        if put is not None:
            for name, app in apps.items():
                if name not in missed:
                    assert app.payloads is not None
                    app.payloads.put(*check_put(put, FORGET_PARAMS.content_limit, 4))
            e = {**e, "command": without_payload(e["command"])}
        ordered.append((e, put is not None))
    for i in range(0, len(ordered), 3):
        chunk = ordered[i : i + 3]
        op = batch_operation([e for e, _ in chunk], [k for k, (_, c) in enumerate(chunk) if c])
        results = [app.execute(copy.deepcopy(op)) for app in apps.values()]
        assert all(r == results[0] for r in results)  # the replicas answer alike


Liar = Callable[[Wanted], Any]


def _forgotten(app: ClusterApp) -> Callable[[str], bool]:
    def is_forgotten(x: str) -> bool:
        art = app.node.gate.community.orchestrator.public_artifact(x)
        return art is not None and art["state"] == FORGOTTEN

    return is_forgotten


def _repair(apps: dict[str, ClusterApp], liars: dict[str, Liar] | None = None) -> int:
    """Drive ``ME``'s repair to its end as the replica process does, each peer answering
    with ``fetch_answer`` over its own files (a liar with what it likes); the fetches."""
    me = apps[ME]
    assert me.repair is not None
    now, asked = 0.0, 0
    for _ in range(100):
        if not me.repair.wanted:
            break
        for w, peer in me.repair.asks(now, 4):
            asked += 1
            liar = (liars or {}).get(peer)
            if liar is not None:
                doc = liar(w)
            else:
                store = apps[peer].payloads
                assert store is not None
                doc = fetch_answer(
                    json.loads(json.dumps(w.request())), store.get, _forgotten(apps[peer])
                )
            payload = me.repair.answer(w, peer, doc, now)
            if payload is not None:
                me.repaired(w, payload)
        now += 5.0
    return asked


def content_table(db: Path | sqlite3.Connection) -> list[Any]:
    """A node database's content, as rows that do not depend on insertion order: each
    payload by digest (its FTS row and vector with it), and which artifact carried which."""
    con = (
        db
        if isinstance(db, sqlite3.Connection)
        else sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    )
    try:
        payloads = con.execute(
            "SELECT c.digest, c.content, c.title, c.tags, c.source, v.embedding, f.content "
            "FROM content c LEFT JOIN content_vec v ON v.id = c.id "
            "LEFT JOIN content_fts f ON f.rowid = c.id ORDER BY c.digest"
        ).fetchall()
        carried = con.execute(
            "SELECT artifact, digest FROM artifact_content ORDER BY 1, 2"
        ).fetchall()
        return [payloads, carried]
    finally:
        if con is not db:
            con.close()


def _reads(app: ClusterApp, artifacts: list[str], words: list[str]) -> list[Any]:
    """What a replica answers: each artifact's content read, and a search per word (with
    and without history)."""
    out: list[Any] = []
    for x in artifacts:
        a = answer(app.node, Read.of("content", artifact=x))
        out.append((a.status, a.body))
    for q in words:
        for include in (None, "history"):
            a = answer(app.node, Read.of("search", q=q, include=include))
            out.append((a.status, a.body))
    return out


def _walk(s: Signer) -> list[dict[str, Any]]:
    envs = to_active(s, "x", "s", content="alpha kept " + SECRET, title="t", tags=["a"])
    envs += to_active(s, "y", "u", content="beta kept for good", embedding=[1.0, 0.0, 0.0, 0.0])
    envs.append(s.env("f2", propose("f2", "z", "v", content="gamma proposed")))
    # a pin of y's payload: stays without content on every replica (nothing carried)
    pin = s.env("f3", propose("f3", "pin", "w", content="beta kept for good"))
    envs.append({**pin, "command": without_payload(pin["command"])})
    return envs


ARTIFACTS = ["x", "y", "z", "pin"]
WORDS = ["alpha", "beta", "gamma", "kept"]


def check(
    tmp: Path, make: type[ClusterApp] = ClusterApp, liars: dict[str, Liar] | None = None
) -> None:
    apps = _replicas(tmp, make)
    s = Signer()
    _order(apps, _walk(s), missed={ME})
    me = apps[ME]
    assert me.repair is not None
    assert me.repair.pending() == {"x", "y", "z"}  # the pin is not wanted
    pending = me.read(Read.of("content", artifact="x"))
    assert (pending.status, pending.body["error"]) == (503, "content_pending")
    _repair(apps, liars)
    assert not me.repair.wanted
    want_table = content_table(apps["r0"].node.store._db)
    want_reads = _reads(apps["r0"], ARTIFACTS, WORDS)
    assert want_reads[3][1]["error"] == "no_content"  # the pin
    for name, app in apps.items():
        assert content_table(app.node.store._db) == want_table, name
        assert _reads(app, ARTIFACTS, WORDS) == want_reads, name
        assert app.node.search_index_agrees(), name
    # a restart of the repaired replica: its payload file gives back what it fetched
    me.node.close()
    for p in tmp.glob(f"{ME}-node*"):
        p.unlink()
    again = make(_node(tmp / f"{ME}-node.db"), me.payloads, Repair(PEERS, 1024, 4))
    apps[ME] = again
    for e in _replayed(apps["r0"]):
        again.execute(e)
    assert again.repair is not None and not again.repair.wanted
    assert content_table(again.node.store._db) == want_table


def _replayed(app: ClusterApp) -> list[dict[str, Any]]:
    """The batches ``app`` executed, as a restarted replica executes its history again
    (here: each logged envelope as a batch of one, marked carried if it carried)."""
    out = []
    for e in app.node.store.entries(0):
        cmd = e.envelope.get("command", {})
        carried = cmd.get("op") == "propose" and e.envelope.get("agent") != "f3"
        out.append(batch_operation([e.envelope], [0] if carried else []))
    return out


def test_a_replica_that_missed_payloads_repairs_them_from_its_peers(tmp_path: Path) -> None:
    check(tmp_path)


def _wrong_bytes(w: Wanted) -> Any:
    return {"payload": {"content": "forged by a Byzantine peer"}}


def test_a_byzantine_peer_cannot_make_it_keep_other_bytes(tmp_path: Path) -> None:
    liars: dict[str, Liar] = {"r0": _wrong_bytes, "r1": lambda w: {"error": "none"}}
    check(tmp_path, liars=liars)
    # r0's bytes were refused every time it was asked (it is every third payload's first)
    apps_repair = Repair(PEERS, 1024, 4)
    w = Wanted("f1", 1, "x", "0" * 64)
    apps_repair.want(w)
    [(got, peer)] = apps_repair.asks(0.0, 4)
    assert peer == "r0"
    assert apps_repair.answer(got, peer, _wrong_bytes(got), 0.0) is None
    assert apps_repair.lies == {"r0": 1}
    assert apps_repair.asks(0.0, 4) == [(w, "r1")]  # the next peer


def test_every_peer_refusing_waits_then_asks_again() -> None:
    r = Repair(PEERS, 1024)
    w = Wanted("f1", 1, "x", "0" * 64)
    r.want(w)
    for peer in PEERS:
        [(got, asked)] = r.asks(0.0, 4)
        assert asked == peer
        assert r.answer(got, asked, None, 0.0) is None  # no answer (down, stalled)
    assert r.asks(0.0, 4) == []  # a whole round failed: it waits
    assert r.asks(10.0, 4) == [(w, "r0")]
    assert r.refusals == {p: 1 for p in PEERS}


def test_forgotten_payloads_are_never_served_fetched_or_kept(tmp_path: Path) -> None:
    """FORGET-PURGE across repair: (1) x's payload, repaired, then x forgotten: purged
    from every file of the repaired replica; (2) z wanted, then forgotten before any peer
    answered: dropped, never fetched; (3) a peer that executed the forget refuses it."""
    apps = _replicas(tmp_path)
    s = Signer()
    envs = to_active(s, "x", "s", content=SECRET)
    envs += to_active(s, "z", "v", content="zeta " + SECRET[::-1])
    _order(apps, envs, missed={ME})
    me = apps[ME]
    assert me.repair is not None
    want_z = next(a.wanted for a in me.repair.wanted.values() if a.wanted.artifact == "z")
    # only x is repaired for now
    store = apps["r0"].payloads
    assert store is not None
    w_x = next(a.wanted for a in me.repair.wanted.values() if a.wanted.artifact == "x")
    assert me.repaired(
        w_x, fetch_answer(w_x.request(), store.get, _forgotten(apps["r0"]))["payload"]
    )
    assert answer(me.node, Read.of("content", artifact="x")).body.get("content") == SECRET
    _order(apps, forget(s, "x") + forget(s, "z"), missed=set())
    assert not me.repair.wanted  # z dropped: never fetched
    assert me.repaired(want_z, {"content": "zeta " + SECRET[::-1]}) is False
    answered = fetch_answer(want_z.request(), store.get, _forgotten(apps["r0"]))
    assert answered == {"error": "forgotten"}
    # a peer that had not executed the forget yet but is asked about a forgotten one
    late = fetch_answer(want_z.request(), lambda *a: {"content": "x"}, lambda x: True)
    assert late == {"error": "forgotten"}
    for app in apps.values():
        app.node.close()
        assert app.payloads is not None
        app.payloads.close()
    for p in tmp_path.iterdir():
        data = p.read_bytes()
        assert SECRET.encode() not in data and SECRET[::-1].encode() not in data, p.name


class Trusting(Repair):
    """Mutant: keeps whatever a peer answers."""

    def answer(self, w: Wanted, peer: str, doc: object, now: float) -> dict[str, Any] | None:
        a = self.wanted.get((w.agent, w.seq, w.digest))
        if a is not None:
            a.in_flight = False
        payload = doc.get("payload") if isinstance(doc, dict) else None
        return dict(payload) if isinstance(payload, dict) else None


class NeverWants(ClusterApp):
    """Mutant: executes without the payload and never asks for it."""

    def _lacks(self, lacking: Any, replies: Any) -> None:
        return None


def test_the_checks_catch_mutants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "never").mkdir()
    with pytest.raises(AssertionError):
        check(tmp_path / "never", NeverWants)
    (tmp_path / "trusting").mkdir()
    monkeypatch.setattr(f"{__name__}.Repair", Trusting)
    with pytest.raises(AssertionError):
        check(tmp_path / "trusting", liars={"r0": _wrong_bytes})
    monkeypatch.undo()
    (tmp_path / "serves").mkdir()
    real = fetch_answer

    def serves(request: object, lookup: Any, forgotten: Any) -> dict[str, Any]:
        return real(request, lookup, lambda x: False)  # serves a forgotten artifact's

    monkeypatch.setattr(f"{__name__}.fetch_answer", serves)
    with pytest.raises(AssertionError):
        test_forgotten_payloads_are_never_served_fetched_or_kept(tmp_path / "serves")


def test_the_payload_file_is_bounded_in_bytes(tmp_path: Path) -> None:
    store = PayloadStore(tmp_path / "p.db", max_bytes=200)
    store.put("f1", 1, "x", "d1", {"content": "a" * 100})
    used = store.bytes
    assert used == len(json.dumps({"content": "a" * 100}))
    with pytest.raises(PayloadFull, match="payload_bytes"):
        store.put("f1", 2, "y", "d2", {"content": "b" * 100})
    assert (store.count(), store.bytes) == (1, used)  # nothing of the refused put
    store.put("f1", 1, "x", "d1", {"content": "a" * 150})  # a replacement counts once
    store.discard("f1", 1, "d1")
    assert (store.count(), store.bytes) == (0, 0)
    store.put("f2", 1, "z", "d3", {"content": "c" * 50})
    store.put("f2", 2, "z", "d4", {"content": "c" * 50})
    store.forget(["z"])
    assert store.bytes == 0
    store.put("f3", 1, "w", "d5", {"content": "é" * 40})  # bytes, not characters
    store.close()
    again = PayloadStore(tmp_path / "p.db", max_bytes=200)
    assert again.bytes == len(json.dumps({"content": "é" * 40}, ensure_ascii=False).encode())


def test_a_batch_names_its_carried_commands() -> None:
    op = batch_operation(["a", "b", "c"], [2, 0])
    assert commands_of(op) == ["a", "b", "c"] and carried_of(op) == {0, 2}
    assert batch_operation(["a"]) == {"batch": ["a"]}  # no marker when nothing carried
    assert carried_of(batch_operation(["a"])) == frozenset()
    assert commands_of({"batch": ["a"], "other": 1}) == [{"batch": ["a"], "other": 1}]
    assert carried_of({"batch": ["a"], "payloads": [True, "1"]}) == frozenset()


# --- real replica processes -------------------------------------------------------------


async def _replica_read(c: Cluster, i: int, read: Read) -> tuple[int, dict[str, Any]]:
    """One replica's answer to ``read`` over its read channel."""
    rc = c.cfg.replica(i)
    reader, writer = await asyncio.open_connection(rc.dial.host, rc.dial.port)
    try:
        writer.write(hello(READ) + frame(json.dumps(read.to_json()).encode()))
        await writer.drain()
        data = await asyncio.wait_for(read_one(reader), 10)
        assert data is not None
        doc = json.loads(data)
        return doc["status"], doc["body"]
    finally:
        writer.close()


def _answers(c: Cluster, i: int, artifacts: list[str], words: list[str]) -> list[Any]:
    reads = [Read.of("content", artifact=x) for x in artifacts]
    reads += [Read.of("search", q=q, include=inc) for q in words for inc in (None, "history")]
    return [asyncio.run(_replica_read(c, i, r)) for r in reads]


def _wait(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what}")


async def _byzantine_fetch_server(c: Cluster, i: int, served: list[int]) -> asyncio.Server:
    """A process in replica ``i``'s place that proves it is ``i`` (it holds its key) and
    answers every fetch with bytes that are not the payload."""
    rc = c.cfg.replica(i)
    ring = load_ring(c.cfg.keys)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            first = await read_one(reader, 256)
            if first is None or parse_hello(first) != FETCH:
                return
            others = {r.name for r in c.cfg.replicas} - {rc.name}
            await authenticate(reader, writer, FETCH, rc.name, ring, lambda s: s in others)
            request = await read_one(reader)
            if request is not None:
                served.append(1)
                writer.write(frame(b'{"payload": {"content": "forged by a Byzantine peer"}}'))
                await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, rc.listen.host, rc.listen.port, reuse_address=True)


@pytest.mark.slow
@pytest.mark.system
def test_a_killed_replica_repairs_its_content_from_its_peers(tmp_path: Path) -> None:
    """r3 is killed while content is proposed (the front hands each payload to r0..r2:
    n - f = 3 kept it, the command is ordered); r2 is then replaced by a process that
    holds r2's key and serves wrong bytes to every fetch; r3 restarts, catches up,
    lacks the payloads, and fetches them from r0, r1 and the liar.  Afterwards r3's
    content table, content reads and searches are r0's and r1's; the liar's bytes are
    nowhere."""
    create(
        tmp_path / "c", n=4, seed=11, synchronous="OFF", founders_file=founders_file(tmp_path / "f")
    )
    c = Cluster(tmp_path / "c")
    s = Signer(c.cfg.community)
    contents = {f"a{i}": f"doc{i} repaired words number{i}" for i in range(8)}
    try:
        c.start(timeout=60)
        c.kill("r3")
        with httpx.Client(timeout=30) as http:
            for k, (x, text) in enumerate(contents.items()):
                f = f"f{1 + k % 4}"  # two each: within a founder's rate per round
                r = http.post(
                    c.url + "/commands", json=s.env(f, propose(f, x, f"s{x}", content=text))
                )
                assert r.status_code == 200 and r.json()["result"] == "ok", r.text
            pin = s.env("f5", propose("f5", "pin", "p", content="pinned"))
            r = http.post(
                c.url + "/commands", json={**pin, "command": without_payload(pin["command"])}
            )
            assert r.status_code == 200, r.text
            last = converge(c, [0, 1, 2], 1)
        c.kill("r2")
        served: list[int] = []

        async def run() -> None:
            server = await _byzantine_fetch_server(c, 2, served)
            try:
                c.start_replica(3)
                await asyncio.to_thread(c.wait_replica, 3)

                def repaired() -> bool:
                    st = replica_status(c.cfg.replica(3).listen)
                    return (
                        st is not None
                        and st["last_executed"] >= next(iter(last.values()))[0]
                        and st["payloads_wanted"] == 0
                    )

                await asyncio.to_thread(_wait, repaired, 60, "r3 executed and repaired")
            finally:
                server.close()

        asyncio.run(run())
        artifacts, words = [*contents, "pin"], ["repaired", "doc3", "number5", "pinned"]
        want = _answers(c, 0, artifacts, words)
        for (status, body), (x, text) in zip(want, contents.items(), strict=False):
            assert (status, body["artifact"], body["content"]) == (200, x, text)
        assert want[8][1]["error"] == "no_content"
        for i in (1, 3):
            assert _answers(c, i, artifacts, words) == want, f"r{i}"
        st3 = replica_status(c.cfg.replica(3).listen)
        assert st3 is not None and st3["stats"]["repaired"] == len(contents)
        assert served, "the Byzantine peer was never asked"
    finally:
        c.stop()
    tables = [content_table(c.cfg.replica(i).node_db) for i in (0, 1, 3)]
    assert tables[0] == tables[1] == tables[2]
    assert len(tables[0][0]) == len(contents)  # one payload per proposal; the pin has none
    for p in (tmp_path / "c").glob("r3*"):
        assert b"forged by a Byzantine peer" not in p.read_bytes()


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6), _nested, max_leaves=6
)
_fields = st.fixed_dictionaries(
    {"agent": _json | st.just("f1"), "seq": _json | st.just(1), "artifact": _json, "digest": _json}
)


@given(_fields | _json | st.fixed_dictionaries({"payload": _json}))
def test_hostile_fetches_and_answers_are_refused(doc: Any) -> None:
    """Whatever a peer sends on the fetch channel: an error, never a payload it was not
    asked for, never an exception (the lookup holds one for (f1, 1) only).  Whatever a
    peer answers a fetch with: kept only if it is the digest's preimage (none of these
    is: the digest is of a payload no strategy makes)."""
    held = {"content": "held"}
    got = fetch_answer(doc, lambda a, s, d: held if (a, s) == ("f1", 1) else None, lambda x: False)
    assert set(got) in ({"error"}, {"payload"})
    if "payload" in got:
        assert Wanted.from_json(doc).agent == "f1"
    r = Repair(PEERS, 1024, 4)
    w = Wanted("f1", 1, "x", payload_digest({"content": "the one"}))
    r.want(w)
    [(asked, peer)] = r.asks(0.0, 1)
    assert r.answer(asked, peer, doc, 0.0) is None
    assert r.is_wanted(w)
