"""``Memory``: what the MCP tools do, as plain calls over one ``Client`` (docs/agents.md).

The MCP server (agent/server.py) is a thin face over this class: every tool is one
method here, every refusal one ``MemoryRefused`` whose text the MCP client shows the
agent.  Nothing here decides a protocol question: the node does (its gate and the
Community), and the client signs and retries.  What this layer adds is what an agent
behind an MCP client cannot do for itself: a fresh artifact id per memory, the review
queue with each ballot's content, and the reveal of its votes when their phase comes,
across restarts (agent/ballots.py keeps them).

The client is not safe for concurrent use (it sequences the agent's commands), and an
MCP server runs tools on worker threads: one lock serialises every call.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ostrom.agent.ballots import BallotBook, plan
from ostrom.agent.keyfile import rotate_key_file
from ostrom.client import Ballot, Client, ClientError
from ostrom.service.identity import KeyFileError
from ostrom.service.search import MAX_K

__all__ = ["MAX_K", "VOTES", "Memory", "MemoryRefused"]

#: The values of ``vote`` an agent may give (a review ballot's two sides).
VOTES = ("accept", "reject")

_T = TypeVar("_T")


class MemoryRefused(Exception):
    """The node refused (its error code and text), the protocol said no (its result), or
    an argument is out of range: shown to the agent as a tool error."""


class Memory:
    """One agent's governed memory: its client, its ballot file, one lock."""

    def __init__(self, client: Client, book: BallotBook, key_path: Path | None = None) -> None:
        self.client = client
        self.book = book
        #: the agent's key file (``rotate_key`` replaces it); None: no rotation
        self.key_path = key_path
        self._lock = threading.Lock()
        client.ballots.update(book.ballots)  # the commits of a previous run, to reveal

    # --- the plumbing ----------------------------------------------------------------------

    def _call(self, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` under the lock, the node's refusals as ``MemoryRefused``."""
        with self._lock:
            try:
                return fn()
            except ClientError as exc:
                raise MemoryRefused(f"{exc.code}: {exc.detail}") from None

    @staticmethod
    def _ok(out: dict[str, Any]) -> dict[str, Any]:
        """A command's answer; a protocol refusal (``result`` other than ``ok``) is a tool
        error that names it, so an agent never takes a refused command for a done one."""
        if out.get("result") != "ok":
            raise MemoryRefused(f"refused by the protocol: {out.get('result')}")
        return {"result": "ok", "pos": out.get("pos"), "events": out.get("events", [])}

    # --- the tools -------------------------------------------------------------------------

    def join(self) -> dict[str, Any]:
        return self._call(lambda: self._ok(self.client.join()))

    def rotate_key(self) -> dict[str, Any]:
        """Replace the agent's key by a fresh one, on the node (rotate_key, KEY-1) and in
        its key file (agent/keyfile.py: the file is replaced only once the node bound it)."""
        path = self.key_path
        if path is None:
            raise MemoryRefused("no_key_file: this server was started without a key file")

        def rotate() -> dict[str, Any]:
            try:
                return {"result": "ok", "public_key": rotate_key_file(self.client, path)}
            except (KeyFileError, OSError) as exc:
                raise MemoryRefused(f"key_file: {exc}") from None

        return self._call(rotate)

    def search(
        self,
        query: str | None,
        k: int = 10,
        include_history: bool = False,
        slot: str | None = None,
        vector: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """The node's governed search (current knowledge unless history is asked for): by
        words, by a query ``vector`` (dense retrieval), or both fused."""
        if not 1 <= k <= MAX_K:
            raise MemoryRefused(f"bad_argument: k must be in [1, {MAX_K}]")
        if query is None and vector is None:
            raise MemoryRefused("bad_argument: a search needs a query, a vector, or both")
        return self._call(
            lambda: self.client.search(
                query, k=k, include_history=include_history, slot=slot, vector=vector
            )
        )

    def read(self, artifact: str) -> dict[str, Any]:
        """An artifact's public state (slot, state, submitter, decision, reviewers, ...)
        and its content, or why there is none (``no_content``, ``content_forgotten``)."""

        def read() -> dict[str, Any]:
            out = dict(self.client.artifact(artifact))
            try:
                out["content"] = self.client.content(artifact)
            except ClientError as exc:
                if exc.code == "unreachable":
                    raise
                out["content"] = None
                out["content_missing"] = f"{exc.code}: {exc.detail}"
            return out

        return self._call(read)

    def slot(self, slot: str) -> dict[str, Any]:
        """A slot's current value and history (GET /slots/{slot})."""
        return self._call(lambda: self.client.slot(slot))

    def remember(
        self,
        slot: str,
        content: str,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        source: str | None = None,
        embedding: Sequence[float] | None = None,
    ) -> dict[str, Any]:
        """Propose ``content`` for ``slot`` under a fresh artifact id (with an
        ``embedding`` of the community's dimension, for dense retrieval).  On a slot with
        an active value this is an update: it supersedes that value only if it is accepted
        (LC-SAFE-2), never by being proposed."""
        artifact = f"m-{secrets.token_hex(8)}"
        tag_list = None if tags is None else list(tags)
        vector = None if embedding is None else list(embedding)

        def propose() -> dict[str, Any]:
            out = self._ok(
                self.client.propose(
                    artifact,
                    slot,
                    content=content,
                    title=title,
                    tags=tag_list,
                    source=source,
                    embedding=vector,
                )
            )
            return {"artifact": artifact, "slot": slot, **out}

        return self._call(propose)

    def review_queue(self) -> list[dict[str, Any]]:
        """The ballots this agent is recruited for and has not finished: each with its
        artifact id, phase and content (``action``: ``vote`` in the commit phase before
        a commit, else ``wait_reveal``, the server reveals by itself)."""

        def queue() -> list[dict[str, Any]]:
            me = self.client.agent
            arts = self.client.artifacts()["artifacts"]
            out: list[dict[str, Any]] = []
            for x, a in sorted(arts.items()):
                if me not in a.get("reviewers", []) or a.get("phase") not in ("commit", "reveal"):
                    continue
                if (a.get("revealed") or {}).get(me):
                    continue
                committed = me in a.get("committed", [])
                if a["phase"] == "reveal" and not committed:
                    continue  # too late to vote
                try:
                    c = self.client.content(x)
                    fields = ("content", "title", "tags", "source")
                    body: dict[str, Any] = {k: c[k] for k in fields if k in c}
                except ClientError as exc:
                    if exc.code == "unreachable":
                        raise
                    body = {"content": None, "content_missing": f"{exc.code}: {exc.detail}"}
                out.append(
                    {
                        "artifact": x,
                        "slot": a.get("slot"),
                        "submitter": a.get("submitter"),
                        "round": a.get("round"),
                        "ballot": a.get("ballot"),
                        "phase": a["phase"],
                        "action": "wait_reveal" if committed else "vote",
                        **body,
                    }
                )
            return out

        return self._call(queue)

    def vote(self, artifact: str, vote: str, reason: str) -> dict[str, Any]:
        """Commit ``vote`` on ``artifact``: the ballot is in the ballot file before the
        commit is sent, and is revealed by ``reveal_due`` in the reveal phase (CR-1)."""
        if vote not in VOTES:
            raise MemoryRefused(f"bad_argument: vote must be one of {', '.join(VOTES)}")

        def commit() -> dict[str, Any]:
            before = self.book.ballots.get(artifact)  # a commit of this round, if any
            try:
                out = self.client.commit_vote(artifact, vote, reason, keep=self.book.put)
            except ClientError as exc:
                if exc.code != "unreachable":
                    self._restore(artifact, before)
                raise
            if out.get("result") != "ok":
                self._restore(artifact, before)
            return {
                "artifact": artifact,
                **self._ok(out),
                "reveal": "automatic, in the reveal phase",
            }

        return self._call(commit)

    def _restore(self, artifact: str, before: Ballot | None) -> None:
        """A commit the node refused (or may not have received: ``unreachable`` — then
        its salt is kept, for the node may hold it): the ballot file as it was."""
        if before is not None:
            self.book.put(artifact, before)
        else:
            self.book.drop(artifact)

    def dispute(self, artifact: str, reason: str) -> dict[str, Any]:
        return self._call(lambda: self._ok(self.client.dispute(artifact, reason)))

    def forget_vote(self, artifact: str, confidence: float | None = None) -> dict[str, Any]:
        if confidence is not None and not 0.0 <= confidence <= 1.0:
            raise MemoryRefused("bad_argument: confidence must be in [0, 1]")
        return self._call(lambda: self._ok(self.client.forget_vote(artifact, confidence)))

    # --- the reveals -----------------------------------------------------------------------

    def reveal_due(self) -> list[dict[str, Any]]:
        """Reveal every kept ballot whose reveal phase is open; drop the finished ones.
        Called before each tool and every few seconds by the server."""
        with self._lock:
            if not self.book.ballots:
                return []
            try:
                arts: Mapping[str, Any] = self.client.artifacts()["artifacts"]
            except ClientError:
                return []  # the node is away: the next call tries again
            p = plan(self.client.agent, self.book.ballots, arts)
            done: list[dict[str, Any]] = []
            for x in p.reveal:
                self.client.ballots[x] = self.book.ballots[x]
                try:
                    out = self.client.reveal_vote(x)
                except ClientError:
                    continue  # unreachable or refused: the plan decides again next time
                done.append({"artifact": x, "result": out.get("result")})
                if out.get("result") == "ok":
                    self.book.drop(x)
                    self.client.ballots.pop(x, None)
            self.book.drop(*p.finished)
            for x in p.finished:
                self.client.ballots.pop(x, None)
            return done
