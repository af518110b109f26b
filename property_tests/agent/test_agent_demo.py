"""``ostrom serve --demo DIR``: three founders with keys, a community where review works,
and the MCP configuration it prints is one an MCP client can use as it is: alice's memory
is accepted (fast track), bob's update of it is reviewed by alice and carol through their
MCP servers and supersedes it.  The same DIR serves the same community again."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client as McpClient
from mcp.client.stdio import StdioServerParameters, stdio_client

from ostrom import layout
from ostrom.cli.main import main as cli

ENV = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}


def _start(directory: Path) -> tuple[subprocess.Popen[str], str]:
    cmd = [sys.executable, "-m", "ostrom", "serve", "--demo", str(directory)]
    cmd += ["--port", "0", "--fsync", "off", "--tick-interval", "0.2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    m = re.search(r"serving (http://\S+)", first)
    assert m, first
    return proc, m.group(1)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
    return out


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    proc, url = _start(tmp_path / "demo")
    try:
        yield tmp_path / "demo", url
    finally:
        _stop(proc)


async def _call(c: McpClient, tool: str, **args: Any) -> Any:
    r = await c.call_tool(tool, args)
    assert not r.is_error, f"{tool}: {r.content}"
    return r.structured_content


def test_the_demo_community_reviews_through_the_printed_mcp_config(
    demo: tuple[Path, str],
) -> None:
    directory, url = demo
    config = json.loads((directory / "mcp.json").read_text())["mcpServers"]
    assert set(config) == {"ostrom-alice", "ostrom-bob", "ostrom-carol"}
    for k in ("alice", "bob", "carol"):
        assert (directory / f"{k}.key").stat().st_mode & 0o777 == 0o600
        assert url in config[f"ostrom-{k}"]["args"]

    async def main() -> None:
        async with AsyncExitStack() as stack:
            agents = {}
            for name, spec in config.items():
                params = StdioServerParameters(
                    command=spec["command"], args=[*spec["args"], "--reveal-every", "0.1"], env=ENV
                )
                agents[name.removeprefix("ostrom-")] = await stack.enter_async_context(
                    McpClient(stdio_client(params), read_timeout_seconds=30)
                )
            alice, bob = agents["alice"], agents["bob"]
            first = (await _call(alice, "remember", slot="lunch", content="Lunch is at noon."))[
                "artifact"
            ]
            with anyio.fail_after(30):  # a founder's first value: the fast track
                while (await _call(alice, "read_memory", id=first))["state"] != "active":
                    await anyio.sleep(0.2)
            second = (await _call(bob, "remember", slot="lunch", content="Lunch is at one."))[
                "artifact"
            ]
            with anyio.fail_after(30):  # alice and carol review it, their servers reveal
                voted: set[str] = set()
                while (await _call(bob, "read_memory", id=second))["state"] != "active":
                    for name in ("alice", "carol"):
                        queue = (await _call(agents[name], "review_queue"))["ballots"]
                        if name not in voted and any(
                            b["artifact"] == second and b["action"] == "vote" for b in queue
                        ):
                            await _call(
                                agents[name], "vote", artifact=second, vote="accept", reason="ok"
                            )
                            voted.add(name)
                    await anyio.sleep(0.2)
            assert voted == {"alice", "carol"}
            assert (await _call(bob, "read_memory", id=first))["state"] == "superseded"
            hits = (await _call(bob, "search_memory", query="lunch"))["hits"]
            assert [h["artifact"] for h in hits] == [second]
            # two of the three forget it (the demo's min_active_agents and alpha)
            for name in ("alice", "carol"):
                await _call(agents[name], "forget_vote", artifact=second)
            with anyio.fail_after(30):
                while (await _call(bob, "read_memory", id=second))["state"] != "forgotten":
                    await anyio.sleep(0.2)
            assert (await _call(bob, "search_memory", query="lunch"))["hits"] == []

    anyio.run(main)


def test_the_same_dir_serves_the_same_community_and_bad_dirs_are_refused(
    tmp_path: Path,
) -> None:
    proc, _ = _start(tmp_path / "demo")
    _stop(proc)
    keys = {p.name: p.read_bytes() for p in (tmp_path / "demo").glob("*.key")}
    proc, _ = _start(tmp_path / "demo")  # again: nothing rewritten
    _stop(proc)
    assert {p.name: p.read_bytes() for p in (tmp_path / "demo").glob("*.key")} == keys
    (tmp_path / "file").write_text("")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "alice.key").write_text("")
    for args in (
        ["--demo", str(tmp_path / "file")],
        ["--demo", str(tmp_path / "half")],
        ["--demo", str(tmp_path / "demo"), "--db", str(tmp_path / "x.db")],
        ["--demo", str(tmp_path / "demo"), "--founders", str(tmp_path / "f.toml")],
    ):
        r = CliRunner().invoke(cli, ["serve", *args])
        assert r.exit_code == 2 and "rror: " in r.output, (args, r.output)  # ours or click's
        assert "Traceback" not in r.output
    assert not (tmp_path / "x.db").exists()
