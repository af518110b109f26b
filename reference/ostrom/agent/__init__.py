"""Agents through the Model Context Protocol: ``ostrom mcp`` (docs/agents.md).

``Memory`` (agent/memory.py) is what the tools do, over one ``Client``; ``BallotBook``
(agent/ballots.py) keeps the committed votes to reveal, across restarts; the MCP server
(agent/server.py, loaded only by ``ostrom mcp``: it needs the ``mcp`` SDK) is the thin
face an MCP client talks to.
"""

from ostrom.agent.ballots import BallotBook, BallotFileError, Plan, plan
from ostrom.agent.memory import VOTES, Memory, MemoryRefused

__all__ = ["VOTES", "BallotBook", "BallotFileError", "Memory", "MemoryRefused", "Plan", "plan"]
