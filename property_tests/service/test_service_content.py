"""An artifact's content at the node (docs/design.md §11): a propose or resubmit carries its
payload, the node keeps it once per digest beside the log and serves it at
GET /artifacts/{id}/content; a bad payload is a 4xx that changes nothing; and FORGET-PURGE:
once the artifact is forgotten its content is in no file of the database, its terms in
no table of the FTS5 search index (the shadow tables are grepped with the rest) — while a
merely superseded artifact's content stays, retrievable.

Every test drives the real node through its HTTP app (httpx's ASGI transport, no network).
The purge check is shown to fail: each of four broken purges (no delete, no secure_delete,
no WAL checkpoint, no merge of the search index after its delete) leaves the forgotten
content or its terms in some file, and the same grep finds it.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from content_world import FORGET_PARAMS
from content_world import forget as _forget
from content_world import post_all as _post_all
from content_world import propose as _propose
from content_world import to_active as _to_active
from content_world import update as _update
from ostrom.protocol.commands import payload_digest
from ostrom.service.app import create_app
from ostrom.service.dense import to_blob
from ostrom.service.node import Node
from ostrom.service.store import Store
from service_world import Signer, setup


def _node(tmp: Path, **kw: Any) -> Node:
    kw = {"snapshot_every": 3, "snapshot_ratio": 0.0, **kw}  # snapshots in the file too
    return Node.open(tmp / "n.db", params=FORGET_PARAMS, setup=setup(), fsync=False, **kw)


def _run(node: Node, body: Callable[[httpx.AsyncClient], Any]) -> Any:
    async def go() -> Any:
        transport = httpx.ASGITransport(app=create_app(node))
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as c:
            return await body(c)

    return asyncio.run(go())


def _files(tmp: Path) -> Iterator[Path]:
    """Every file of the database: the db, its -wal and -shm (snapshots are rows of it)."""
    yield from sorted(p for p in tmp.iterdir() if p.name.startswith("n.db"))


def _found(tmp: Path, needle: str | bytes) -> list[str]:
    """The database files whose bytes contain ``needle`` (a text: its UTF-8)."""
    raw = needle.encode() if isinstance(needle, str) else needle
    return [p.name for p in _files(tmp) if raw in p.read_bytes()]


SECRET = "FORGET-ME-7c1e9a2b-the-only-copy"
#: A term of SECRET as FTS5 indexes it (case-folded, split on '-'): the bytes the search
#: index's shadow tables (content_fts_data, _idx) hold of it, which must go too.
TOKEN = "7c1e9a2b"
KEPT = "SUPERSEDED-4b8d0f13-still-history"
#: The forgotten artifact's embedding: its numbers as the payload's JSON spells them, and
#: its stored vector (float32 of the unit vector, store.py: content_vec), must go too.
SECRET_VECTOR = [0.7315, -0.2719, 0.5021, 0.3733]
VECTOR_TEXT = "[0.7315,-0.2719,0.5021,0.3733]"
VECTOR_BYTES = to_blob(SECRET_VECTOR)


def _forgotten_and_superseded(tmp: Path) -> tuple[Node, dict[str, Any]]:
    """x (content SECRET) forgotten; old (content KEPT) superseded by new on slot t."""
    node, s = _node(tmp), Signer()

    async def body(c: httpx.AsyncClient) -> dict[str, Any]:
        await _post_all(
            c, _to_active(s, "x", "s", content=SECRET, title="secret", embedding=SECRET_VECTOR)
        )
        before = (await c.get("/artifacts/x/content")).json()
        assert before["content"] == SECRET and before["embedding"] == SECRET_VECTOR
        assert _found(tmp, SECRET), "the grep must see the content before it is forgotten"
        assert _found(tmp, VECTOR_TEXT) and _found(tmp, VECTOR_BYTES), "and its embedding"
        assert _index_holds(node, TOKEN), "the search index holds its terms"
        await _post_all(c, _to_active(s, "old", "t", content=KEPT, tags=["v1"]))
        await _update(c, s, "new", "t", content="the update", tags=["v2"])
        await _post_all(c, _forget(s, "x"))
        states = (await c.get("/artifacts")).json()["artifacts"]
        assert states["x"]["state"] == "forgotten"
        assert states["old"]["state"] == "superseded" and states["new"]["state"] == "active"
        forgotten = await c.get("/artifacts/x/content")
        superseded = await c.get("/artifacts/old/content")
        assert forgotten.status_code == 404
        assert forgotten.json()["error"] == "content_forgotten"
        assert superseded.status_code == 200
        return dict(superseded.json())

    return node, _run(node, body)


def test_forget_purge_the_forgotten_content_is_in_no_database_file(tmp_path: Path) -> None:
    """FORGET-PURGE: after forgetting, no database file (db, -wal, -shm; the snapshots
    are rows of the db) holds a byte of the content, while the node runs and after it
    closes; a superseded artifact's content is still there and served.  The log still
    replays (``--verify``) and exports without it."""
    node, superseded = _forgotten_and_superseded(tmp_path)
    assert superseded["content"] == KEPT and superseded["tags"] == ["v1"]
    assert node.store.snapshots(), "the file has snapshots: they are grepped too"
    assert _found(tmp_path, SECRET) == []  # FORGET-PURGE
    assert _found(tmp_path, TOKEN) == []  # FORGET-PURGE: the FTS5 shadow tables too
    assert _found(tmp_path, VECTOR_TEXT) == []  # FORGET-PURGE: the embedding's numbers
    assert _found(tmp_path, VECTOR_BYTES) == []  # FORGET-PURGE: its stored vector
    assert not _index_holds(node, TOKEN)
    assert _found(tmp_path, KEPT) != []
    node.close()
    assert _found(tmp_path, SECRET) == [] and _found(tmp_path, TOKEN) == []
    assert _found(tmp_path, VECTOR_TEXT) == [] and _found(tmp_path, VECTOR_BYTES) == []
    again = Node.open(tmp_path / "n.db", fsync=False, verify=True)  # the whole log replays
    assert again.content("x").body["error"] == "content_forgotten"
    assert again.content("old").body["content"] == KEPT
    again.close()
    from ostrom.service.export import export

    trace = tmp_path.parent / f"{tmp_path.name}.trace.jsonl"
    assert export(tmp_path / "n.db", trace) == again.last_pos  # ostrom log export replays
    text = trace.read_text(encoding="utf-8")
    assert SECRET not in text and KEPT not in text  # a trace of digests


def _index_holds(node: Node, term: str) -> bool:
    """Whether the FTS5 index matches ``term`` (any payload, whatever its artifact)."""
    return any(True for _ in node.store.matches(f'"{term}"'))


def _no_delete(store: Store, artifact: str) -> int:
    return 0


@pytest.mark.parametrize(
    "mutant",
    ["no_delete", "no_secure_delete", "no_checkpoint", "no_index_merge", "no_vector_delete"],
)
def test_forget_purge_check_catches_a_purge_that_leaves_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutant: str
) -> None:
    """The check above can fail: each broken purge leaves the content (or, without the
    trigger that deletes an embedding with its payload, the embedding) in some file."""
    if mutant == "no_vector_delete":
        import ostrom.service.store as store_module

        trigger = store_module._SCHEMA.index("CREATE TRIGGER content_vec_delete")
        monkeypatch.setattr(store_module, "_SCHEMA", store_module._SCHEMA[:trigger])
        node, _ = _forgotten_and_superseded(tmp_path)
        assert _found(tmp_path, VECTOR_TEXT) + _found(tmp_path, VECTOR_BYTES) != [], mutant
        node.close()
        return
    if mutant == "no_delete":
        monkeypatch.setattr(Store, "_purge", _no_delete)
    elif mutant == "no_checkpoint":
        monkeypatch.setattr(Store, "checkpoint", lambda self: None)
    elif mutant == "no_index_merge":  # FTS5's delete marker beside the old segment
        monkeypatch.setattr(Store, "merge_index", lambda self: None)
    else:
        real_open = Store.open.__func__  # type: ignore[attr-defined]

        def insecure(cls: type[Store], *a: Any, **kw: Any) -> Store:
            store: Store = real_open(cls, *a, **kw)
            store._db.execute("PRAGMA secure_delete=OFF")
            return store

        monkeypatch.setattr(Store, "open", classmethod(insecure))
    node, _ = _forgotten_and_superseded(tmp_path)
    assert _found(tmp_path, SECRET) + _found(tmp_path, TOKEN) != [], mutant
    node.close()


def test_content_round_trip_retry_and_digest_only(tmp_path: Path) -> None:
    """The payload is served as proposed, stored once however often it is proposed, kept
    out of the log (and every log view), and a retry with it is answered from the log."""
    node, s = _node(tmp_path), Signer()
    payload = {"content": "Ångström: 1e-10 m", "title": "unit", "tags": ["si"], "source": "x"}
    e1 = s.env("f1", _propose("f1", "a", "s", **payload))
    e2 = s.env("f2", _propose("f2", "b", "t", **payload))
    e3 = s.env("f3", {"op": "propose", "agent": "f3", "artifact": "c", "slot": "u", "digest": "d"})

    async def body(c: httpx.AsyncClient) -> list[Any]:
        out: list[Any] = []
        for e in (e1, e2, e3, e1):
            out.append((await c.post("/commands", json=e)).json())
        for x in ("a", "b", "c", "nobody"):
            r = await c.get(f"/artifacts/{x}/content")
            out.append((r.status_code, r.json()))
        out.append((await c.get("/log")).json())
        return out

    r1, r2, _r3, retry, a, b, c, nobody, log = _run(node, body)
    other = {**e1["command"], "content": "not what was hashed"}
    forged = node.submit({**e1, "command": other})  # the same seq, another payload
    assert forged.status == 422 and forged.body["error"] == "digest_mismatch"
    assert r1["result"] == r2["result"] == "ok" and retry["retry"] is True
    digest = payload_digest(payload)
    assert a == (200, {"artifact": "a", "digest": digest, **payload})
    assert b[1]["content"] == payload["content"]
    assert node.store.payload_count() == 1  # one digest, stored once
    assert c[0] == 404 and c[1]["error"] == "no_content"
    assert nobody[0] == 404 and nobody[1]["error"] == "not_found"
    assert "content" not in json.dumps(log["entries"][0]["command"])
    assert log["entries"][0]["command"]["digest"] == digest


def test_a_refused_command_keeps_no_payload(tmp_path: Path) -> None:
    """A command the protocol refuses (logged, 200) keeps no payload: nothing would ever
    forget it.  Here a resubmission of an artifact still under review (wrong_phase)."""
    node, s = _node(tmp_path), Signer()
    v2 = {"op": "resubmit", "agent": "f1", "artifact": "a", "content": "v2"}
    v2["digest"] = payload_digest({"content": "v2"})
    node.submit(s.env("f1", _propose("f1", "a", "s", content="v1")))
    r = node.submit(s.env("f1", v2))
    assert r.status == 200 and r.body["result"] == "wrong_phase"
    assert node.content("a").body["content"] == "v1"
    assert node.store.payload_count() == 1


def _bad(tmp: Path, command: dict[str, Any], raw: bytes | None = None) -> tuple[int, str]:
    """Send one signed envelope of f1 (or its raw JSON bytes): the status and code; and
    check that nothing changed (log, state, payloads, f1's seq)."""
    node, s = _node(tmp), Signer()
    node.submit(s.env("f2", _propose("f2", "z", "s", content="before")))
    before = (copy.deepcopy(node.public_state()), node.last_pos, node.store.payload_count())
    env = s.env("f1", command)

    async def body(c: httpx.AsyncClient) -> tuple[int, str]:
        if raw is None:
            r = await c.post("/commands", json=env)
        else:
            sig = env["signature"]
            r = await c.post("/commands", content=raw.replace(b"SIG", sig.encode()))
        return r.status_code, str(r.json().get("error", r.json().get("result")))

    got: tuple[int, str] = _run(node, body)
    assert (node.public_state(), node.last_pos, node.store.payload_count()) == before
    node.close()
    return got


def test_bad_payloads_are_4xx_and_change_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    def t() -> Path:
        return tmp_path_factory.mktemp("bad")

    ok = _propose("f1", "x", "s", content="fine")
    assert _bad(t(), {**ok, "digest": "d"}) == (422, "digest_mismatch")
    assert _bad(t(), {**ok, "digest": payload_digest({"content": "other"})}) == (
        422,
        "digest_mismatch",
    )
    big = _propose("f1", "x", "s", content="é" * 513)  # 1026 bytes > content_limit 1024
    assert _bad(t(), big) == (413, "content_too_large")
    node, s = _node(t()), Signer()
    r = node.submit(s.env("f1", _propose("f1", "x", "s", content="é" * 512)))  # 1024: at it
    assert r.status == 200 and r.body["result"] == "ok"
    node.close()
    for field, value in [
        ("content", 5),
        ("content", ["text"]),
        ("title", "t" * 257),
        ("title", None),
        ("tags", "one"),
        ("tags", [""]),
        ("tags", ["t"] * 33),
        ("tags", [1]),
        ("source", {"url": "x"}),
    ]:
        assert _bad(t(), {**ok, field: value}) == (422, "bad_content"), (field, value)
    # content that is not UTF-8: a lone surrogate (valid JSON, not encodable text); the
    # signature does not cover the payload, so the envelope is authentic all the same
    cmd = _propose("f1", "x", "s", content="PLACEHOLDER")
    s = Signer()
    env = s.env("f1", cmd)
    raw = json.dumps({**env, "signature": "SIG"}).replace("PLACEHOLDER", "\\ud800").encode()
    assert _bad(t(), cmd, raw) == (422, "bad_content")


@pytest.mark.tlc
def test_validate_trace_accepts_the_export_of_a_log_with_purged_content(tmp_path: Path) -> None:
    """``ostrom validate-trace`` on the export of a log whose artifact was forgotten and
    its content purged: the spec is digest-based, and so is the log: TLC follows it."""
    import subprocess
    import sys

    from ostrom.service.export import export

    db = tmp_path / "db"
    db.mkdir()
    node, _ = _forgotten_and_superseded(db)
    node.close()
    export(db / "n.db", tmp_path / "t.jsonl")
    r = subprocess.run(
        [sys.executable, "-m", "ostrom", "validate-trace", str(tmp_path / "t.jsonl")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0 and "ACCEPTED" in r.stdout, r.stdout + r.stderr


def test_forget_purge_shared_content_stays_a_pin_by_digest_does_not(tmp_path: Path) -> None:
    """The choice of docs/design.md §11: content another standing artifact *carried* stays
    when one artifact carrying it is forgotten (it is that artifact's content too); a
    digest-only proposal of the same digest carries nothing and pins nothing."""
    node, s = _node(tmp_path), Signer()
    shared, pinned = "SHARED-5d2e-carried-by-two", "PINNED-9a0c-by-digest-only"

    async def body(c: httpx.AsyncClient) -> None:
        await _post_all(c, _to_active(s, "x1", "s1", content=shared))
        await _post_all(c, [s.env("f3", _propose("f3", "x2", "s2", content=shared))])
        await _post_all(c, _to_active(s, "y1", "s3", content=pinned))
        pin = {"op": "propose", "agent": "f4", "artifact": "y2", "slot": "s4"}
        await _post_all(c, [s.env("f4", {**pin, "digest": payload_digest({"content": pinned})})])
        assert (await c.get("/artifacts/y2/content")).json()["error"] == "no_content"
        await _post_all(c, _forget(s, "x1"))
        await _post_all(c, _forget(s, "y1"))
        states = (await c.get("/artifacts")).json()["artifacts"]
        assert states["x1"]["state"] == states["y1"]["state"] == "forgotten"
        assert (await c.get("/artifacts/x2/content")).json()["content"] == shared

    _run(node, body)
    assert _found(tmp_path, shared) != []
    assert _found(tmp_path, pinned) == []  # FORGET-PURGE: the digest-only y2 kept nothing
    node.close()


def test_old_files_are_refused_and_a_current_file_needs_its_tables(tmp_path: Path) -> None:
    """A database of schema version 1 to 4 (before envelopes named their community, ENV-1)
    is refused with how to move on, never upgraded: its signatures verify under no
    community.  A file that says version 5 without its tables is refused too."""
    import sqlite3

    from ostrom.service.store import StoreError

    node, s = _node(tmp_path), Signer()
    for e in _to_active(s, "a", "s", content="kept words"):
        node.submit(e)
    node.close()
    for version in ("1", "2", "3", "4"):
        db = sqlite3.connect(tmp_path / "n.db")
        db.execute("UPDATE meta SET value = ? WHERE key = 'version'", (version,))
        db.commit()
        db.close()
        with pytest.raises(StoreError, match=f"version {version}, from before envelopes named"):
            Node.open(tmp_path / "n.db", fsync=False)
    db = sqlite3.connect(tmp_path / "n.db")
    db.executescript("UPDATE meta SET value = '5' WHERE key = 'version';")
    db.close()
    node = Node.open(tmp_path / "n.db", fsync=False, verify=True)
    assert node.last_pos == 5
    node.close()
    db = sqlite3.connect(tmp_path / "n.db")
    db.executescript("DROP TABLE reads;")
    db.close()
    with pytest.raises(StoreError, match="not a node database"):
        Node.open(tmp_path / "n.db", fsync=False)
