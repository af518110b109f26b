"""The MCP server of one agent: the community as its governed memory (docs/agents.md).

Each tool is one ``Memory`` method (agent/memory.py) and nothing more; a refusal is a
tool error whose text is the node's error code and detail (or the protocol's result),
so an LLM agent reads why.  Slots are resources (``ostrom://slots/{slot}``).  Before
each tool call and every ``reveal_every`` seconds the server reveals the agent's
committed votes whose reveal phase is open (agent/ballots.py keeps them across
restarts), so an agent only ever says what it thinks: ``vote(artifact, accept, why)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from ostrom import __version__
from ostrom.agent.memory import Memory, MemoryRefused

__all__ = ["INSTRUCTIONS", "build_server"]

#: What the MCP client shows the model about this server.
INSTRUCTIONS = """\
A governed shared memory (ostrom). Knowledge counts only once other agents accepted it in
review. search_memory returns current knowledge (include_history: superseded versions too,
marked), read_memory one artifact with its provenance. remember proposes a memory for a
slot (a topic key): it is not knowledge until reviewed, and on a slot with a value it is an
update that replaces the old value only if accepted. review_queue lists the proposals you
are asked to review: read each, then vote accept or reject with a reason (your vote stays
secret until the reveal phase; this server reveals it for you). dispute challenges an
accepted artifact; forget_vote asks the community to forget one (its content is deleted).
Call join once before anything else."""


def build_server(memory: Memory, *, reveal_every: float = 2.0) -> MCPServer[None]:
    """The MCP server over ``memory`` (it reveals due votes every ``reveal_every`` s)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer[None]) -> AsyncIterator[None]:
        async def reveals() -> None:
            while True:
                await asyncio.to_thread(memory.reveal_due)
                await asyncio.sleep(reveal_every)

        task = asyncio.create_task(reveals())
        try:
            yield None
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    server: MCPServer[None] = MCPServer(
        "ostrom",
        instructions=INSTRUCTIONS,
        version=__version__,
        lifespan=lifespan,
        log_level="WARNING",
    )

    def run(fn: Any, *args: Any) -> Any:
        """A tool's call: the due reveals first, then the method; refusals as tool errors."""
        for a in args:
            for text in a if isinstance(a, list) else [a]:
                if isinstance(text, str) and not _encodable(text):
                    raise ToolError("bad_argument: a text is not valid Unicode (lone surrogate)")
        memory.reveal_due()
        try:
            return fn(*args)
        except MemoryRefused as exc:
            raise ToolError(str(exc)) from None

    @server.tool()
    def join() -> dict[str, Any]:
        """Join the community with this agent's key (once, before anything else)."""
        return run(memory.join)  # type: ignore[no-any-return]

    @server.tool()
    def rotate_key() -> dict[str, Any]:
        """Replace this agent's key by a fresh one (for instance when the old one may
        have leaked): the node binds the new key, then the key file is replaced."""
        return run(memory.rotate_key)  # type: ignore[no-any-return]

    @server.tool()
    def search_memory(
        query: str | None = None,
        k: int = 10,
        include_history: bool = False,
        vector: list[float] | None = None,
    ) -> dict[str, Any]:
        """Search the community's current knowledge (accepted, not superseded, not
        forgotten) for ``query`` (plain words): at most ``k`` hits (1 to 100), each with
        its content and provenance (who proposed it, who reviewed it, how it was decided,
        what it superseded).  ``include_history``: superseded versions too, each marked
        with what replaced it.  ``vector``: a query embedding of the community's dimension
        (dense retrieval; with a query too, both rankings are fused)."""
        return run(memory.search, query, k, include_history, None, vector)  # type: ignore[no-any-return]

    @server.tool()
    def remember(
        slot: str,
        content: str,
        title: str | None = None,
        tags: list[str] | None = None,
        embedding: list[float] | None = None,
    ) -> dict[str, Any]:
        """Propose ``content`` as a memory for ``slot`` (a topic key, e.g.
        paris-population), with an optional title and tags, and an optional
        ``embedding`` of the community's dimension (for dense retrieval).  It becomes
        knowledge only once accepted in review; on a slot that has a value it is an update
        that replaces it only then.  Returns the new artifact's id."""
        return run(memory.remember, slot, content, title, tags, None, embedding)  # type: ignore[no-any-return]

    @server.tool()
    def read_memory(id: str) -> dict[str, Any]:
        """One artifact, by its id: its state (proposed, active, superseded, forgotten,
        ...), its slot, submitter, decision and reviewers, and its content."""
        return run(memory.read, id)  # type: ignore[no-any-return]

    @server.tool()
    def review_queue() -> dict[str, Any]:
        """The proposals this agent is asked to review, each with its artifact id,
        content and action (vote, or wait_reveal when already voted)."""
        return {"ballots": run(memory.review_queue)}

    @server.tool()
    def vote(artifact: str, vote: str, reason: str) -> dict[str, Any]:
        """Vote ``accept`` or ``reject`` on a proposal from review_queue (``artifact``, its
        id), with the ``reason`` in a sentence: the vote is committed now (secret) and
        revealed by this server in the reveal phase."""
        return run(memory.vote, artifact, vote, reason)  # type: ignore[no-any-return]

    @server.tool()
    def dispute(artifact: str, reason: str) -> dict[str, Any]:
        """Challenge an accepted artifact (it goes back to review)."""
        return run(memory.dispute, artifact, reason)  # type: ignore[no-any-return]

    @server.tool()
    def forget_vote(artifact: str, confidence: float | None = None) -> dict[str, Any]:
        """Vote to forget an artifact (``confidence`` in [0, 1], optional): once enough of
        the community agrees, it is forgotten and its content deleted from the node."""
        return run(memory.forget_vote, artifact, confidence)  # type: ignore[no-any-return]

    @server.resource(
        "ostrom://slots/{slot}",
        name="slot",
        description="A slot's current value and its history, in order.",
        mime_type="application/json",
    )
    def slot(slot: str) -> str:
        try:
            return json.dumps(memory.slot(slot), sort_keys=True)
        except MemoryRefused as exc:
            raise ResourceError(str(exc)) from None

    return server


def _encodable(text: str) -> bool:
    """JSON lets a client send a lone surrogate (``"\\ud800"``); no node accepts it as
    UTF-8, and the client could not even encode it: refused here, as the tool's error."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
