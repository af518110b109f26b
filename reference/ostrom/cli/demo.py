"""``ostrom serve --demo DIR``: a community that works from the first minute.

``ostrom serve`` alone starts a community without founders, where nobody may review and
nothing is ever accepted (docs/service.md).  A newcomer wants to see governed memory work
first: ``--demo DIR`` writes three founders with their keys (alice, bob, carol), a
founders file and parameters sized for three agents into DIR, and serves the community
from DIR/node.db; started again with the same DIR it serves the same community (nothing
is overwritten).  It prints the three ``ostrom mcp`` lines and the MCP client JSON
(docs/agents.md), and writes that JSON to DIR/mcp.json.

Why a flag of ``serve`` rather than an ``ostrom init``: the newcomer's first step is one
command that leaves a running community, and the same command resumes it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from ostrom.service.identity import (
    KeyFileError,
    create_file,
    load_key,
    new_key,
    public_hex,
    save_key,
)

__all__ = [
    "DEMO_FOUNDERS",
    "DEMO_PARAMS",
    "DEMO_TICK",
    "Demo",
    "DemoError",
    "connect_text",
    "mcp_config",
    "prepare",
]

#: The demo's founders: three agents that review one another (tier 3, trusted).
DEMO_FOUNDERS = ("alice", "bob", "carol")

#: The demo's parameters (a params file), each for a community of three agents:
#: a ballot has at most two reviewers (the submitter does not review), so the quorum is
#: two; the commit phase lasts 30 ticks (a minute at the demo's 2-second ticks) so an LLM
#: agent has time to read and vote; forgetting needs min_active_agents active agents, and
#: FG-1 ((1 - alpha) w_max < alpha (min_active_agents - 1) w_min) holds with w_min 0.6.
DEMO_PARAMS = """\
# ostrom serve --demo: parameters for a community of three founders (ostrom params FILE)
quorum = 2
q_dispute = 2
T_commit = 30
T_reveal = 5
min_active_agents = 3
w_min = 0.6
"""

#: The demo's tick interval (seconds) unless --tick-interval says otherwise.
DEMO_TICK = 2.0


class DemoError(Exception):
    """DIR cannot hold the demo (a file in the way, a key that does not load)."""


@dataclass(frozen=True)
class Demo:
    """The demo's files in DIR."""

    dir: Path
    db: Path
    founders: Path
    params: Path
    keys: dict[str, Path]


def prepare(directory: Path) -> Demo:
    """Write the demo into ``directory`` (created), or check the one that is there."""
    d = directory.resolve()
    demo = Demo(
        d,
        d / "node.db",
        d / "founders.toml",
        d / "params.toml",
        {a: d / f"{a}.key" for a in DEMO_FOUNDERS},
    )
    if d.exists() and not d.is_dir():
        raise DemoError(f"{directory}: not a directory")
    if demo.founders.exists():  # written before: the same community again
        for a, path in demo.keys.items():
            try:
                load_key(path)
            except KeyFileError as exc:
                raise DemoError(f"{a}'s key: {exc}") from None
        return demo
    in_the_way = [p for p in (demo.db, demo.params, *demo.keys.values()) if p.exists()]
    if in_the_way:
        raise DemoError(f"{in_the_way[0]}: exists, but {demo.founders} does not (not a demo)")
    try:
        d.mkdir(parents=True, exist_ok=True)
        rows = []
        for a, path in demo.keys.items():
            key = new_key()
            save_key(key, path)
            rows.append(
                f'[[founder]]\nid = "{a}"\ntier = 3\nreputation = 0.95\nevidence = 40\n'
                f'public_key = "{public_hex(key)}"\n'
            )
        create_file(demo.params, DEMO_PARAMS.encode(), 0o644)
        create_file(demo.founders, "\n".join(rows).encode(), 0o644)  # last: the marker
    except OSError as exc:
        raise DemoError(f"{directory}: {exc.strerror or exc}") from None
    return demo


def mcp_config(demo: Demo, url: str) -> dict[str, object]:
    """The MCP client configuration (Claude Desktop's and Claude Code's ``mcpServers``)."""
    return {
        "mcpServers": {
            f"ostrom-{a}": {
                "command": sys.executable,
                "args": ["-m", "ostrom", "mcp", "--url", url, "--agent", a, "--key", str(k)],
            }
            for a, k in demo.keys.items()
        }
    }


def connect_text(demo: Demo, url: str) -> str:
    """What ``serve --demo`` prints once it listens (and writes DIR/mcp.json)."""
    config = json.dumps(mcp_config(demo, url), indent=2)
    mcp = demo.dir / "mcp.json"
    mcp.unlink(missing_ok=True)  # rewritten for this URL; a link in its place is not followed
    create_file(mcp, (config + "\n").encode(), 0o644)
    lines = [
        f"ostrom demo community: {len(demo.keys)} founders in {demo.dir}, serving {url}",
        "",
        "Connect three MCP agents (each is one MCP server, started by the MCP client):",
        *(f"  ostrom mcp --url {url} --agent {a} --key {k}" for a, k in demo.keys.items()),
        "",
        f"MCP client configuration ({demo.dir / 'mcp.json'}; docs/agents.md):",
        config,
    ]
    return "\n".join(lines)
