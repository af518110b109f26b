"""One service face for a node and a cluster (service/app.py over cluster/front.py).

A real ``ostrom cluster up`` of 4 replica processes and a front over loopback (stopped by
``ostrom cluster down``), with the founders and parameters of the node's content tests,
and the same walk as on a node (content_world.py, through HTTP): a proposal with content
reviewed to acceptance by the founders, found by search through the front with its
provenance, consistent reads agreeing, an update through formal review, a forget.  Every
replica's node database and payload file hold the content; after the forget no file of
the cluster (PBFT stores, node databases, payload files, their WALs) holds the forgotten
content's bytes.  ``Client.resync`` and the client's reads, and ``ostrom mcp --url``
(slow: a subprocess of the SDK), against the front.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from content_world import FORGET_PARAMS, forget, post_all, to_active, update
from ostrom import layout
from ostrom.cli.main import main
from ostrom.client import Client
from ostrom.cluster.config import load
from ostrom.service.identity import save_key
from ostrom.service.openapi import POSITION_HEADER, SOURCE_HEADER, openapi
from service_world import OPERATOR, Signer, key, setup

pytestmark = [pytest.mark.system]

SECRET = "CLUSTER-FORGET-ME-5e0c2d71-only-copy"
ROME = "Rome has 2.8 million inhabitants"
NAPLES = "Naples has 0.9 million inhabitants"
KEPT = "Paris has 2.1 million inhabitants"


def _founders_toml() -> str:
    """service_world.setup() as a founders file (service/founders.py)."""
    lines = []
    for f in setup().founders:
        m = f.member
        lines += [
            "[[founder]]",
            f'id = "{m.id}"',
            f"tier = {m.tier}",
            f'public_key = "{f.public_key}"',
            f"reputation = {m.reputation}",
            f"evidence = {m.evidence}",
            "",
        ]
    for op, pk in setup().operators.items():
        lines += ["[[operator]]", f'id = "{op}"', f'public_key = "{pk}"', ""]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    d = tmp_path_factory.mktemp("face")
    (d / "founders.toml").write_text(_founders_toml())
    (d / "params.toml").write_text(
        f"min_active_agents = {FORGET_PARAMS.min_active_agents}\n"
        f"content_limit = {FORGET_PARAMS.content_limit}\n"
    )
    c = d / "c"
    runner = CliRunner()
    up = runner.invoke(
        main,
        [
            *("cluster", "up", "--dir", str(c), "--seed", "5", "--synchronous", "OFF"),
            *("--batch-size", "4", "--founders", str(d / "founders.toml")),
            *("--params", str(d / "params.toml")),
        ],
    )
    try:
        assert up.exit_code == 0, up.output
        yield up.output.strip().rsplit(" ", 1)[-1], c
    finally:
        down = runner.invoke(main, ["cluster", "down", "--dir", str(c)])
        assert down.exit_code == 0, down.output


def _run(url: str, body: Any) -> Any:
    async def go() -> Any:
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:
            return await body(c)

    return asyncio.run(go())


def _grep(directory: Path, needle: str) -> list[str]:
    raw = needle.encode()
    return sorted(p.name for p in directory.iterdir() if p.is_file() and raw in p.read_bytes())


def test_the_walk_through_a_cluster_front(cluster: tuple[str, Path]) -> None:
    url, d = cluster
    cfg = load(d / "cluster.toml")
    s = Signer(cfg.community)  # ENV-1: the cluster's own community

    async def body(c: httpx.AsyncClient) -> None:
        # a proposal with content, reviewed to acceptance (fast track, no objection)
        replies = await post_all(c, to_active(s, "pop", "paris/population", content=KEPT))
        assert [r["pos"] for r in replies] == list(range(1, 6))  # the node's reply, pos too
        r = await c.get("/search", params={"q": "paris inhabitants"})
        assert r.status_code == 200, r.text
        hits = r.json()["hits"]
        assert [h["artifact"] for h in hits] == ["pop"]
        assert hits[0]["content"] == KEPT and hits[0]["submitter"] == "f1"
        assert hits[0]["decision"] == {"path": "fast_track", "verdict": "accept"}
        assert hits[0]["submitter_tier"] == 3 and hits[0]["activated_round"] is not None
        assert int(r.headers[POSITION_HEADER]) == r.json()["position"] == 5
        assert r.headers[SOURCE_HEADER] in {rc.name for rc in cfg.replicas}
        # consistent=1: f+1 replicas agree at one position, and it says which
        r = await c.get("/search", params={"q": "paris inhabitants", "consistent": "1"})
        assert r.status_code == 200, r.text
        assert r.json()["hits"][0]["artifact"] == "pop"
        agreed = r.headers[SOURCE_HEADER].split(",")
        assert len(agreed) >= cfg.f + 1 and int(r.headers[POSITION_HEADER]) == 5
        # every read of the table answers through the front
        for path in ("/artifacts", "/agents", "/slots", "/slots/paris/population", "/log"):
            got = await c.get(path, params={"consistent": "1"})
            assert got.status_code == 200, (path, got.text)
        content = (await c.get("/artifacts/pop/content")).json()
        assert content["content"] == KEPT
        missing = await c.get("/artifacts/nope")
        assert missing.status_code == 404 and missing.json()["error"] == "not_found"
        bad = await c.get("/search", params={"q": "x", "consistent": "2"})
        assert bad.status_code == 422 and bad.json()["error"] == "bad_query"
        events = (await c.get("/events", params={"after": 4, "timeout": 5})).json()
        assert [e["pos"] for e in events["entries"]] == [5]
        assert (await c.get("/openapi.json")).json() == openapi()
        # an update through formal review, then the forget of a secret
        await update(c, s, "pop2", "paris/population", content="Paris has 2.2 million")
        await post_all(c, to_active(s, "x", "s", content=SECRET))
        assert (await c.get("/artifacts/x/content")).json()["content"] == SECRET
        # the grep sees the content where it is kept: every replica's node and payload
        # files, and never its PBFT store (the ordered command carries the digest only)
        held = _grep(d, SECRET)
        for rc in cfg.replicas:
            for f in (rc.node_db, rc.payload_db):  # the file or its WAL
                assert [n for n in held if n.startswith(f.name)], (f.name, held)
            assert not [n for n in held if n.startswith(rc.db.name)], held
        await post_all(c, forget(s, "x"))
        gone = await c.get("/artifacts/x/content", params={"consistent": "1"})
        assert gone.status_code == 404 and gone.json()["error"] == "content_forgotten"
        assert (await c.get("/search", params={"q": "5e0c2d71"})).json()["hits"] == []

    _run(url, body)
    # FORGET-PURGE on every replica: no file of the cluster (PBFT stores, node databases,
    # payload files, their WALs, the processes' logs) holds the forgotten content ...
    assert _grep(d, SECRET) == []
    # ... while a content not forgotten is still in every replica's node and payloads
    for rc in cfg.replicas:
        assert KEPT.encode() in rc.node_db.read_bytes(), rc.name
        assert KEPT.encode() in rc.payload_db.read_bytes(), rc.name


def test_the_client_against_a_cluster(cluster: tuple[str, Path]) -> None:
    """``Client.resync`` reads the next seq through the front (a fresh client knows none);
    the client proposes with content, reads it back, and follows the log."""
    url, _ = cluster
    with Client(url, "f4", key("f4")) as client:
        seq = client.resync()
        assert seq == client.agent_info()["next_seq"] >= 1
        sent = client.propose("naples", "naples/population", content=NAPLES)
        assert sent["result"] == "ok" and client.resync() == seq + 1
        assert client.content("naples")["content"] == NAPLES
        assert client.artifact("naples")["state"] == "proposed"
        (entry,) = client.log(sent["pos"] - 1, 1)
        assert entry["pos"] == sent["pos"] and entry["agent"] == "f4"
        assert [e["pos"] for e in client.events(sent["pos"] - 1, timeout=5)] == [sent["pos"]]
        assert client.search("naples")["hits"] == []  # proposed: not current knowledge


@pytest.mark.slow
def test_mcp_against_a_cluster_front(cluster: tuple[str, Path], tmp_path: Path) -> None:
    """``ostrom mcp --url <front>`` (a real subprocess, the SDK's client over stdio):
    remember proposes with content (the payload handed to the replicas), read_memory
    reads it back from a replica; once active, search finds it with its provenance."""
    import anyio
    from mcp import Client as McpClient
    from mcp.client.stdio import StdioServerParameters, stdio_client

    url, _ = cluster
    save_key(key("f2"), tmp_path / "f2.key")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "ostrom", "mcp", "--url", url, "--agent", "f2"),
            *("--key", str(tmp_path / "f2.key")),
        ],
        env={**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")},
    )

    async def call(c: McpClient, tool: str, **args: Any) -> Any:
        r = await c.call_tool(tool, args)
        text = " ".join(getattr(x, "text", "") for x in r.content)
        assert not r.is_error, f"{tool}({args}): {text}"
        return r.structured_content if r.structured_content is not None else json.loads(text)

    async def main() -> None:
        with anyio.fail_after(60):
            async with McpClient(stdio_client(params), read_timeout_seconds=30) as c:
                made = await call(c, "remember", slot="rome/population", content=ROME)
                got = await call(c, "read_memory", id=made["artifact"])
                assert got["state"] == "proposed" and got["content"]["content"] == ROME
                with Client(url, OPERATOR, key(OPERATOR)) as ops:
                    for _ in range(4):  # a founder's proposal: fast track, no objection
                        ops.tick()
                (hit,) = (await call(c, "search_memory", query="Rome"))["hits"]
                assert hit["artifact"] == made["artifact"] and hit["state"] == "active"
                assert hit["decision"]["path"] == "fast_track" and hit["submitter"] == "f2"
                assert hit["content"] == ROME

    anyio.run(main)


def test_status_names_the_cluster(cluster: tuple[str, Path]) -> None:
    url, _ = cluster
    doc = httpx.get(url + "/status", timeout=10).json()
    assert doc["kind"] == "cluster" and doc["n"] == 4 and doc["f"] == 1
    assert json.loads(json.dumps(doc)) == doc
