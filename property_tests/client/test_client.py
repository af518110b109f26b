"""``ostrom.client.Client`` against a real node: uvicorn on a loopback port chosen by the
OS, in a thread, stopped by the fixture; and ``ostrom serve`` itself as a subprocess.
Every wait is bounded."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ostrom import layout
from ostrom.client import Client, ClientError
from ostrom.service.identity import save_key
from ostrom.service.node import Node
from service_world import FOUNDERS, OPERATOR, PARAMS, key, served, setup


@pytest.fixture
def node_url(tmp_path: Path) -> Iterator[tuple[str, Node]]:
    node = Node.open(tmp_path / "n.db", params=PARAMS, setup=setup(), fsync=False)
    with served(node) as url:
        yield url, node


def test_a_ballot_through_clients(node_url: tuple[str, Node]) -> None:
    url, node = node_url
    newcomer = Client(url, "n", key("n"))
    op = Client(url, OPERATOR, key(OPERATOR))
    founders = {f: Client(url, f, key(f)) for f in FOUNDERS}
    assert newcomer.join()["result"] == "ok"
    assert newcomer.propose("x", "s", "d")["result"] == "ok"
    for _ in range(5):
        op.tick()
    assert newcomer.artifact("x")["phase"] == "commit"
    for f, c in founders.items():
        assert c.commit_vote("x", "accept", f"{f} checked it")["result"] == "ok"
    for _ in range(2):
        op.tick()
    for c in founders.values():
        assert c.reveal_vote("x")["result"] == "ok"
    for _ in range(3):
        op.tick()
    assert newcomer.artifact("x")["state"] == "active"
    assert founders["f1"].agent_info()["next_seq"] == 3
    assert len(op.log(limit=1000)) == node.last_pos
    assert op.events(after=node.last_pos, timeout=0.2) == []  # nothing new: bounded wait
    with pytest.raises(ClientError) as exc:
        founders["f1"].tick()
    assert exc.value.code == "not_operator"
    for c in (newcomer, op, *founders.values()):
        c.close()


class _LoseFirstReply(httpx.BaseTransport):
    """Delivers each POST, then (once) drops the reply as if the connection timed out."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.dropped = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.method == "POST" and not self.dropped:
            response.read()
            self.dropped += 1
            raise httpx.ReadTimeout("reply lost", request=request)
        return response


def test_a_retry_after_a_lost_reply_applies_once(node_url: tuple[str, Node]) -> None:
    url, node = node_url
    transport = _LoseFirstReply()
    c = Client(url, "f1", key("f1"), transport=transport, backoff=0.01)
    out = c.propose("a", "s", "d")
    assert transport.dropped == 1 and out["retry"] is True and out["result"] == "ok"
    assert node.last_pos == 1
    assert c.propose("b", "s2", "d")["pos"] == 2  # the next command takes the next seq
    c.close()


def test_an_unreachable_node_is_a_clear_error_and_resync_recovers(
    node_url: tuple[str, Node],
) -> None:
    url, _ = node_url
    dead = Client("http://127.0.0.1:9", "f1", key("f1"), seq=1, retries=1, backoff=0.01, timeout=1)
    with pytest.raises(ClientError) as exc:
        dead.object("x")
    assert exc.value.code == "unreachable"
    fresh = Client("http://127.0.0.1:9", "f1", key("f1"), timeout=1)  # its first read fails
    for call in (fresh.resync, fresh.artifacts, lambda: fresh.object("x")):
        with pytest.raises(ClientError) as exc:
            call()
        assert exc.value.code == "unreachable"
    fresh.close()
    live = Client(url, "f1", key("f1"))
    assert live.resync() == 1
    dead.close()
    live.close()


def test_ostrom_serve_starts_answers_and_refuses_bad_files(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}
    cmd = [
        sys.executable,
        "-m",
        "ostrom",
        "serve",
        "--db",
        str(tmp_path / "n.db"),
        "--port",
        "0",
        "--fsync",
        "off",
        "--tick-interval",
        "0.2",
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the startup line (bounded by the kill below)
        m = re.search(r"DB at log position 0; (http://\S+)", line)
        assert m, line
        deadline = time.monotonic() + 10
        while httpx.get(m.group(1) + "/health", timeout=5).json()["last_pos"] < 2:
            assert time.monotonic() < deadline, "the node did not tick by itself"
            time.sleep(0.1)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    assert (tmp_path / "n.db.operator.key").exists()
    (tmp_path / "bad.toml").write_text('[[founder]]\nid = "a"\ntier = 9\n')
    for extra in (["--founders", str(tmp_path / "bad.toml")], ["--params", "/nonexistent"]):
        r = subprocess.run(
            [*cmd[:5], str(tmp_path / "other.db"), *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert r.returncode == 2 and r.stderr.startswith("error: "), r.stderr
        assert "Traceback" not in r.stderr
        assert not (tmp_path / "other.db").exists()


def _example_agent() -> Any:
    spec = importlib.util.spec_from_file_location("example_agent", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


EXAMPLE = layout.ROOT / "examples" / "agent.py"


def test_the_example_agent_joins_proposes_and_reviews(
    node_url: tuple[str, Node], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, node = node_url
    agent = _example_agent()
    for who in ("n", *FOUNDERS):
        save_key(key(who), tmp_path / f"{who}.key")

    def run(who: str, *args: str) -> int:
        return int(
            agent.main(["--url", url, "--agent", who, "--key", str(tmp_path / f"{who}.key"), *args])
        )

    assert run("n", "join") == 0
    assert run("n", "propose", "x", "s", "d") == 0
    op = Client(url, OPERATOR, key(OPERATOR))
    for _ in range(5):
        op.tick()
    # each founder's review commits in the commit phase and reveals in the reveal phase
    # (one Client each: the committed vote and salt live in the client object)
    clients = {f: Client(url, f, key(f)) for f in FOUNDERS}
    for c in clients.values():
        agent.review(c, rounds=1, wait=0)
    for _ in range(2):
        op.tick()
    for c in clients.values():
        agent.review(c, rounds=1, wait=0)
    for _ in range(3):
        op.tick()
    assert node.public_state()["artifacts"]["x"]["state"] == "active"
    assert "commit accept ok" in capsys.readouterr().out
    assert run("n", "propose", "x", "s", "d") == 1  # duplicate: exit 1
    for c in (op, *clients.values()):
        c.close()


class _Busy503First(httpx.BaseTransport):
    """Answers the first POST with the node's 503 without delivering it (the database
    was busy: nothing applied), then delivers."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.busy = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and not self.busy:
            self.busy += 1
            return httpx.Response(
                503, json={"error": "db_unavailable", "detail": "locked"}, request=request
            )
        return self.inner.handle_request(request)


def test_a_503_is_retried_with_the_same_envelope(node_url: tuple[str, Node]) -> None:
    url, node = node_url
    transport = _Busy503First()
    c = Client(url, "f1", key("f1"), transport=transport, backoff=0.01)
    out = c.propose("a", "s", "d")
    assert transport.busy == 1 and out["retry"] is False and out["pos"] == 1
    assert node.gate.last_seq("f1") == 1
    c.close()


def test_two_clients_of_one_agent_resync_instead_of_failing(node_url: tuple[str, Node]) -> None:
    """Two processes signing for f1: the second's seq is stale, the node refuses it as
    replayed (its envelope was not applied), the client reads the seq back and re-signs."""
    url, node = node_url
    a, b = Client(url, "f1", key("f1")), Client(url, "f1", key("f1"))
    assert a.resync() == b.resync() == 1
    assert a.propose("a", "s", "d")["pos"] == 1
    assert b.propose("b", "s2", "d")["pos"] == 2  # seq 1 was taken: resynced to 2
    assert node.gate.last_seq("f1") == 2 and set(node.public_state()["artifacts"]) == {"a", "b"}
    a.close()
    b.close()


def test_content_through_the_client(node_url: tuple[str, Node]) -> None:
    """propose(content=...) computes the digest; content() reads the payload back; a
    resubmission's payload replaces it once accepted; a retry with a payload after a
    lost reply is answered from the log (which holds no payload); a wrong digest and a
    digest-only artifact are the node's codes."""
    url, _ = node_url
    newcomer = Client(url, "n", key("n"))
    op = Client(url, OPERATOR, key(OPERATOR))
    founders = {f: Client(url, f, key(f)) for f in FOUNDERS}
    assert newcomer.join()["result"] == "ok"
    author, reviewers = founders["f2"], [c for f, c in founders.items() if f != "f2"]
    assert founders["f1"].propose("base", "s", content="the slot's value")["result"] == "ok"
    for _ in range(4):  # fast track: active after T_fast; the slot is taken
        op.tick()
    assert author.propose("x", "s", content="v1: first draft", tags=["draft"])["result"] == "ok"
    got = newcomer.content("x")
    assert (got["content"], got["tags"]) == ("v1: first draft", ["draft"])
    for _ in range(5):
        op.tick()
    for c in reviewers:
        assert c.commit_vote("x", "reject", "not yet")["result"] == "ok"
    for _ in range(2):
        op.tick()
    for c in reviewers:
        assert c.reveal_vote("x")["result"] == "ok"
    for _ in range(3):
        op.tick()
    assert newcomer.artifact("x")["state"] == "rejected"
    for _ in range(20):  # the resubmission cooldown
        op.tick()
    out = author.resubmit("x", content="v2: revised", title="Revised")
    assert out["result"] == "ok", out
    assert newcomer.content("x") == {
        "artifact": "x",
        "digest": newcomer.artifact("x")["digest"],
        "content": "v2: revised",
        "title": "Revised",
    }
    with pytest.raises(ClientError) as exc:
        newcomer.propose("y", "t", "not-the-digest", content="text")
    assert exc.value.code == "digest_mismatch"
    assert founders["f3"].propose("z", "u", "d")["result"] == "ok"
    with pytest.raises(ClientError) as exc:
        newcomer.content("z")
    assert exc.value.code == "no_content"
    transport = _LoseFirstReply()
    f4 = Client(url, "f4", key("f4"), transport=transport, backoff=0.01)
    out = f4.propose("w", "v", content="sent twice, applied once")
    assert transport.dropped == 1 and out["retry"] is True and out["result"] == "ok"
    assert f4.content("w")["content"] == "sent twice, applied once"
    for c in (newcomer, op, f4, *founders.values()):
        c.close()


def test_search_and_slot_through_the_client(node_url: tuple[str, Node]) -> None:
    """Client.search (GET; POST for a query over 1 KiB) and Client.slot against a real
    node: a founder's fast-tracked value is found with its provenance; errors are
    ClientErrors with the node's code, by either form."""
    url, _ = node_url
    f1, op = Client(url, "f1", key("f1")), Client(url, OPERATOR, key(OPERATOR))
    assert f1.propose("x", "paris/population", content="Paris has 2.1 million")["result"] == "ok"
    assert f1.search("paris")["hits"] == []  # fast track: not active yet (READ-1)
    for _ in range(4):
        op.tick()
    found = f1.search("Paris million", k=5)
    assert [h["artifact"] for h in found["hits"]] == ["x"]
    assert found["hits"][0]["decision"]["path"] == "fast_track"
    long = "paris " + "word " * 300  # over 1 KiB: sent as POST /search
    assert [h["artifact"] for h in f1.search(long, include_history=True)["hits"]] == ["x"]
    assert f1.search("paris", slot="other")["hits"] == []
    slot = f1.slot("paris/population")
    assert [h["artifact"] for h in slot["current"]] == ["x"] and slot["history"] == []
    assert f1.artifact("x")["reads"]["returned"] == 2
    for q, k, code in (
        ("*", 10, "query_syntax"),
        ("paris", 0, "bad_query"),
        ("...", 10, "bad_query"),
        ("(" * 2000, 10, "query_syntax"),  # sent as POST /search
    ):
        with pytest.raises(ClientError) as err:
            f1.search(q, k=k)
        assert err.value.code == code, (q[:10], k)
    with pytest.raises(ClientError) as err:
        f1.search("x" * 5000)
    assert err.value.code == "query_too_large"
