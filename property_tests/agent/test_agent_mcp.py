"""``ostrom mcp`` end to end: the SDK's own client drives four MCP servers (real
subprocesses over stdio) against a real ``ostrom serve`` on loopback.

A newcomer joins and remembers a fact; three founder agents find it in their review
queues, vote, and their servers reveal by themselves; the fact is accepted.  An update
of the same slot stays a proposal (the old value current) until it is accepted, then
supersedes it; then the community forgets it and its content is gone.  Hostile tool
arguments are tool errors, never a crash or a traceback.  Everything is bounded in time:
the node and the servers are stopped by the fixtures.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters, stdio_client

from ostrom import layout
from ostrom.client import Client, ClientError
from ostrom.service.identity import load_key, public_hex, save_key
from ostrom.service.search import MAX_K
from service_world import key

FOUNDERS = ("f1", "f2", "f3")
NEWCOMER = "n"
OPERATOR = "op"
#: Forgetting needs min_active_agents active agents (FG-1 bounds it by the weights):
#: four here (the founders and the newcomer), with w_min raised so FG-1 holds.
PARAMS = "min_active_agents = 4\nw_min = 0.4\n"
ENV = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``ostrom serve`` with three founders and an operator; its URL and the key dir."""
    lines = []
    for f in FOUNDERS:
        save_key(key(f), tmp_path / f"{f}.key")
        lines.append(
            f'[[founder]]\nid = "{f}"\ntier = 3\nreputation = 0.95\nevidence = 40\n'
            f'public_key = "{public_hex(key(f))}"\n'
        )
    lines.append(f'[[operator]]\nid = "{OPERATOR}"\npublic_key = "{public_hex(key(OPERATOR))}"\n')
    save_key(key(NEWCOMER), tmp_path / f"{NEWCOMER}.key")
    (tmp_path / "founders.toml").write_text("\n".join(lines))
    (tmp_path / "params.toml").write_text(PARAMS)
    cmd = [
        sys.executable,
        "-m",
        "ostrom",
        "serve",
        "--db",
        str(tmp_path / "n.db"),
        "--founders",
        str(tmp_path / "founders.toml"),
        "--params",
        str(tmp_path / "params.toml"),
        "--port",
        "0",
        "--fsync",
        "off",
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        m = re.search(r"(http://\S+)", line)
        assert m, line
        yield m.group(1), tmp_path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _params(url: str, agent: str, keys: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "ostrom", "mcp", "--url", url, "--agent", agent),
            *("--key", str(keys / f"{agent}.key"), "--reveal-every", "0.1"),
        ],
        env=ENV,
    )


@asynccontextmanager
async def agents(
    url: str, keys: Path, names: tuple[str, ...], errlog: Any = None
) -> AsyncIterator[dict[str, McpClient]]:
    """One MCP session per agent, each with its own ``ostrom mcp`` subprocess."""
    async with AsyncExitStack() as stack:
        out = {}
        for a in names:
            transport = stdio_client(_params(url, a, keys), errlog=errlog or sys.stderr)
            out[a] = await stack.enter_async_context(McpClient(transport, read_timeout_seconds=30))
        yield out


async def call(c: McpClient, tool: str, **args: Any) -> Any:
    """A tool that must succeed: its structured result."""
    r = await c.call_tool(tool, args)
    text = " ".join(getattr(x, "text", "") for x in r.content)
    assert not r.is_error, f"{tool}({args}): {text}"
    return r.structured_content if r.structured_content is not None else json.loads(text)


async def refused(c: McpClient, tool: str, **args: Any) -> str:
    """A tool that must fail: its error text."""
    r = await c.call_tool(tool, args)
    assert r.is_error, f"{tool}({args}) succeeded: {r}"
    return " ".join(getattr(x, "text", "") for x in r.content)


async def review_to_decision(
    url: str, founders: dict[str, McpClient], artifact: str, vote: str = "accept"
) -> None:
    """Ticks (the operator's) through deliberation; each founder votes what its queue
    shows; the servers reveal by themselves; ticks to the decision."""
    with Client(url, OPERATOR, key(OPERATOR)) as op:
        for _ in range(5):
            op.tick()
        for name, c in founders.items():
            queue = (await call(c, "review_queue"))["ballots"]
            (ballot,) = [b for b in queue if b["artifact"] == artifact]
            assert ballot["action"] == "vote" and ballot["content"], ballot
            await call(c, "vote", artifact=artifact, vote=vote, reason=f"{name} checked it")
        for _ in range(2):
            op.tick()
        with anyio.fail_after(20):  # the servers' own reveals (every 0.1 s)
            while True:
                revealed = op.artifact(artifact)["revealed"] or {}
                if set(revealed) == set(founders):
                    break
                await anyio.sleep(0.1)
        for _ in range(3):
            op.tick()


def test_remember_review_supersede_forget_through_mcp(node: tuple[str, Path]) -> None:
    url, keys = node

    async def main() -> None:
        async with agents(url, keys, (NEWCOMER, *FOUNDERS)) as a:
            n = a[NEWCOMER]
            founders = {f: a[f] for f in FOUNDERS}
            listed = {t.name: t for t in (await n.list_tools()).tools}
            tools = set(listed)
            # the bound the agent reads is the node's (service/search.py: MAX_K)
            assert f"1 to {MAX_K})" in (listed["search_memory"].description or "")
            assert tools >= {
                "join",
                "search_memory",
                "read_memory",
                "remember",
                "review_queue",
                "vote",
                "dispute",
                "forget_vote",
            }
            assert (await call(n, "join"))["result"] == "ok"
            assert "duplicate" in await refused(n, "join")
            v1 = await call(
                n,
                "remember",
                slot="paris-population",
                content="Paris has 2,102,650 inhabitants (INSEE, 2023).",
                title="Population of Paris",
                tags=["geo"],
            )
            first = v1["artifact"]
            assert (await call(n, "read_memory", id=first))["state"] == "proposed"
            await review_to_decision(url, founders, first)
            got = await call(n, "read_memory", id=first)
            assert got["state"] == "active", got
            assert sorted(got["reviewers"]) == sorted(FOUNDERS)
            assert got["content"]["content"].startswith("Paris has 2,102,650")
            # search finds it, with its provenance
            (hit,) = (await call(n, "search_memory", query="Paris inhabitants"))["hits"]
            assert hit["artifact"] == first and hit["state"] == "active"
            assert hit["submitter"] == NEWCOMER and sorted(hit["reviewers"]) == sorted(FOUNDERS)
            assert hit["decision"]["path"] == "tally" and hit["title"] == "Population of Paris"
            assert hit["content"].startswith("Paris has 2,102,650")

            v2 = await call(
                n,
                "remember",
                slot="paris-population",
                content="Paris has 2,113,705 inhabitants (INSEE, 2024).",
            )
            second = v2["artifact"]
            # proposed, not yet knowledge: the old value is still the slot's (LC-SAFE-2)
            assert (await call(n, "read_memory", id=first))["state"] == "active"
            hits = (await call(n, "search_memory", query="Paris inhabitants"))["hits"]
            assert [h["artifact"] for h in hits] == [first]
            await review_to_decision(url, founders, second)
            assert (await call(n, "read_memory", id=second))["state"] == "active"
            assert (await call(n, "read_memory", id=first))["state"] == "superseded"
            # search returns the new value; include_history marks the old one
            hits = (await call(n, "search_memory", query="Paris inhabitants"))["hits"]
            assert [(h["artifact"], h["supersedes"]) for h in hits] == [(second, first)]
            hits = (
                await call(n, "search_memory", query="Paris inhabitants", include_history=True)
            )["hits"]
            old = {h["artifact"]: h for h in hits}[first]
            assert old["state"] == "superseded" and old["superseded_by"] == second
            assert old["superseded_round"] is not None
            # the slot as a resource: its current value and its history
            r = await n.read_resource("ostrom://slots/paris-population")
            slot = json.loads(r.contents[0].text)  # type: ignore[union-attr]
            assert [h["artifact"] for h in slot["current"]] == [second]
            assert [h["artifact"] for h in slot["history"]] == [first]

            for c in (n, *founders.values()):
                await call(c, "forget_vote", artifact=second)
            with Client(url, OPERATOR, key(OPERATOR)) as op:
                op.tick()
            gone = await call(n, "read_memory", id=second)
            assert gone["state"] == "forgotten", gone
            assert gone["content"] is None and "content_forgotten" in gone["content_missing"]
            hits = (
                await call(n, "search_memory", query="Paris inhabitants", include_history=True)
            )["hits"]
            assert second not in {h["artifact"] for h in hits}
            assert (await call(n, "search_memory", query="2,113,705"))["hits"] == []
            assert "query_syntax" in await refused(n, "search_memory", query="()")
            assert "bad_query" in await refused(n, "search_memory", query="...")
            # this community declares no embedding_dim: a vector is refused with its code
            assert "embeddings_off" in await refused(n, "search_memory", vector=[0.5, 0.5])
            assert "embeddings_off" in await refused(
                n, "remember", slot="s", content="c", embedding=[1.0]
            )
            # the node's refusals are tool errors with its code
            assert "not_found" in await refused(n, "read_memory", id="no-such-artifact")
            assert "bad_argument" in await refused(
                founders["f1"], "vote", artifact=second, vote="maybe", reason="r"
            )

    anyio.run(main)


def test_a_vote_is_revealed_by_the_server_after_a_restart(node: tuple[str, Path]) -> None:
    """The vote, reason and salt are in the mode-600 ballot file before the commit is
    sent; a server started again reveals them in the reveal phase, then drops them."""
    url, keys = node
    ballots = keys / "f3.key.ballots.json"

    async def main() -> None:
        with Client(url, NEWCOMER, key(NEWCOMER)) as n, Client(url, OPERATOR, key(OPERATOR)) as op:
            n.join()
            n.propose("x", "s", content="a fact")
            for _ in range(5):
                op.tick()
            async with agents(url, keys, ("f3",)) as a:
                await call(a["f3"], "vote", artifact="x", vote="accept", reason="checked")
            assert ballots.stat().st_mode & 0o777 == 0o600
            kept = json.loads(ballots.read_text())
            assert kept["ballots"]["x"]["vote"] == "accept"  # the salt survives the exit
            for _ in range(2):
                op.tick()
            assert not (op.artifact("x")["revealed"] or {}).get("f3")
            async with agents(url, keys, ("f3",)):
                with anyio.fail_after(20):
                    while not (op.artifact("x")["revealed"] or {}).get("f3"):
                        await anyio.sleep(0.1)
            assert op.artifact("x")["revealed"]["f3"] == "accept"
            with anyio.fail_after(5):  # the revealed ballot is dropped from the file
                while json.loads(ballots.read_text())["ballots"]:
                    await anyio.sleep(0.1)

    anyio.run(main)


#: The tools and the names of their arguments (and a name no tool has).
TOOLS = {
    "join": (),
    "search_memory": ("query", "k", "include_history", "vector"),
    "read_memory": ("id",),
    "remember": ("slot", "content", "title", "tags", "embedding"),
    "review_queue": (),
    "vote": ("artifact", "vote", "reason"),
    "dispute": ("artifact", "reason"),
    "forget_vote": ("artifact", "confidence"),
}

_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["accept", "reject", "x", "", "\x00", "NEAR(a b)", '"', "a" * 70_000]),
)


def _nested(v: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(v, max_size=3) | st.dictionaries(st.text(max_size=5), v, max_size=3)


_value = st.recursive(_scalar, _nested, max_leaves=6)


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from([*TOOLS, "no_such_tool"]))
    names = [*TOOLS.get(name, ()), "extra"]
    args = {k: draw(_value) for k in draw(st.lists(st.sampled_from(names), unique=True))}
    return name, args


def test_hostile_tool_arguments_are_tool_errors_never_a_crash(
    node: tuple[str, Path],
) -> None:
    """Every call answers (a result or a tool error), the server stays up, and nothing it
    writes to stderr is a traceback."""
    url, keys = node
    errlog = (keys / "mcp.stderr").open("w+")
    with anyio.from_thread.start_blocking_portal() as portal:
        session = portal.wrap_async_context_manager(agents(url, keys, (NEWCOMER,), errlog))
        with session as a:
            c = a[NEWCOMER]
            portal.call(call, c, "join")

            @settings(max_examples=150, deadline=None, database=None)
            @given(tool_calls())
            def one(tc: tuple[str, dict[str, Any]]) -> None:
                name, args = tc
                r = portal.call(c.call_tool, name, args)
                texts = [getattr(x, "text", "") for x in r.content]
                if r.is_error:
                    assert texts and all(t and "Traceback" not in t for t in texts), r

            one()
            assert portal.call(call, c, "review_queue") == {"ballots": []}
    errlog.seek(0)
    log = errlog.read()
    assert "Traceback" not in log, log[-2000:]


def test_a_lone_surrogate_is_a_tool_error(node: tuple[str, Path], tmp_path: Path) -> None:
    """JSON can carry a lone surrogate (``"\\ud800"``) that the SDK's own client cannot
    send: the server is driven in process here, where the argument arrives as it is."""
    from ostrom.agent import BallotBook, Memory
    from ostrom.agent.server import build_server

    url, _ = node

    async def main() -> None:
        with Client(url, NEWCOMER, key(NEWCOMER)) as client:
            server = build_server(Memory(client, BallotBook(tmp_path / "b.json", NEWCOMER)))
            async with McpClient(server) as c:
                for tool, args in (
                    ("remember", {"slot": "s", "content": "a\ud800b"}),
                    ("remember", {"slot": "s", "content": "c", "tags": ["\udfff"]}),
                    ("read_memory", {"id": "\ud800"}),
                    ("vote", {"artifact": "x", "vote": "accept", "reason": "\udc80"}),
                ):
                    assert "lone surrogate" in await refused(c, tool, **args)

    anyio.run(main)


def test_the_streamable_http_transport(node: tuple[str, Path]) -> None:
    """``--transport streamable-http``: the same tools at http://HOST:PORT/mcp."""
    url, keys = node
    with socket.socket() as s:  # a free port (the server binds it right after)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [*_params(url, NEWCOMER, keys).args, "--transport", "streamable-http"]
    proc = subprocess.Popen(
        [sys.executable, *cmd, "--port", str(port)], env=ENV, stderr=subprocess.DEVNULL
    )

    async def main() -> None:
        with anyio.fail_after(30):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    await anyio.sleep(0.1)
            async with McpClient(f"http://127.0.0.1:{port}/mcp") as c:
                assert (await call(c, "join"))["result"] == "ok"
                out = await call(c, "remember", slot="s", content="over HTTP")
                assert (await call(c, "read_memory", id=out["artifact"]))["state"] == "proposed"

    try:
        anyio.run(main)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.slow  # an MCP server process (15 s); test_agent_keyfile.py is the fast twin
def test_rotate_key_replaces_the_key_file_once_the_node_bound_it(
    node: tuple[str, Path],
) -> None:
    """KEY-1 through MCP: the tool binds a fresh key on the node, then replaces the key
    file (mode 600, no ``.next`` left); the agent goes on writing with it, and the old
    key writes nothing."""
    url, keys = node
    path = keys / f"{NEWCOMER}.key"

    async def main() -> None:
        async with agents(url, keys, (NEWCOMER,)) as a:
            n = a[NEWCOMER]
            assert (await call(n, "join"))["result"] == "ok"
            out = await call(n, "rotate_key")
            assert out["public_key"] == public_hex(load_key(path)) != public_hex(key(NEWCOMER))
            assert not path.with_name(path.name + ".next").exists()
            assert path.stat().st_mode & 0o777 == 0o600
            await call(n, "remember", slot="after-rotation", content="written with the new key")

    anyio.run(main)
    with Client(url, NEWCOMER, key(NEWCOMER)) as old:
        with pytest.raises(ClientError) as refused_old:
            old.send({"op": "forget_vote", "agent": NEWCOMER, "artifact": "x"})
        assert refused_old.value.code == "key_retired"
