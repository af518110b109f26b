"""``ostrom mcp``: one agent's MCP server, the community as its governed memory.

The ``mcp`` SDK is imported inside the command only, so that every other command starts
without loading it.  Bad arguments and files are one line and exit 2; a node that is not
up yet is not an error (the tools say ``unreachable`` until it is).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from ostrom.service.identity import KeyFileError, load_key

__all__ = ["mcp"]


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.command()
@click.option(
    "--url", default="http://127.0.0.1:8000", show_default=True, help="The node's address."
)
@click.option("--agent", required=True, help="This agent's id in the community.")
@click.option(
    "--key",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="This agent's private key file (ostrom keygen, or ostrom serve --demo).",
)
@click.option(
    "--ballots",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where the committed votes wait for their reveal (mode 600; default: KEY.ballots.json).",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "streamable-http"]),
    default="stdio",
    show_default=True,
    help="stdio: launched by the MCP client; streamable-http: listen on --host/--port.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="(streamable-http)")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True)
@click.option(
    "--reveal-every",
    type=click.FloatRange(min=0.05),
    default=2.0,
    show_default=True,
    help="Seconds between the server's checks for votes to reveal.",
)
def mcp(
    url: str,
    agent: str,
    key: Path,
    ballots: Path | None,
    transport: str,
    host: str,
    port: int,
    reveal_every: float,
) -> None:
    """Serve one agent's governed memory to an MCP client (Claude Desktop, Claude Code, ...).

    Tools: join, search_memory, read_memory, remember, review_queue, vote, dispute,
    forget_vote; resources: ostrom://slots/{slot}.  Every command is signed with KEY as
    AGENT; votes are committed at once and revealed by this server in the reveal phase,
    across restarts (the --ballots file).  docs/agents.md has the client configuration.

    \b
    Example (an MCP client runs it):
      ostrom mcp --url http://127.0.0.1:8000 --agent alice --key demo/alice.key
    """
    from ostrom.agent.ballots import BallotBook, BallotFileError
    from ostrom.agent.memory import Memory
    from ostrom.client import Client, ClientError

    if not agent or len(agent) > 256:
        _fail("--agent must be 1 to 256 characters")
    if not url.startswith(("http://", "https://")):
        _fail(f"--url must be an http:// or https:// address, not {url[:80]!r}")
    try:
        private = load_key(key)
    except KeyFileError as exc:
        _fail(str(exc))
    try:
        book = BallotBook(ballots or key.with_name(key.name + ".ballots.json"), agent)
    except BallotFileError as exc:
        _fail(str(exc))
    from ostrom.agent.keyfile import recover_key_file
    from ostrom.agent.server import build_server  # the mcp SDK, loaded here only

    with Client(url, agent, private) as client:
        try:  # a rotation that stopped before its key file was replaced
            recover_key_file(client, key)
        except (KeyFileError, ClientError, OSError) as exc:
            _fail(f"{key}: {exc}")
        server = build_server(Memory(client, book, key), reveal_every=reveal_every)
        if transport == "stdio":
            server.run("stdio")
        else:
            server.run("streamable-http", host=host, port=port)
