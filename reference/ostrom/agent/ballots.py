"""The ballots an MCP agent has committed and must reveal: kept in a mode-600 file.

A vote is commit-reveal (docs/rules.md, CR-1): the commit sends only a hash of the vote,
the reason and a fresh salt; the reveal, a phase later, sends them.  An agent behind an
MCP client does not know when the reveal phase opens and its server may be restarted in
between, so the server keeps each ballot in a local file *before* it sends the commit
(a commit whose salt was lost could never be revealed: the vote would be wasted) and
reveals by itself when the phase comes.  The file holds secrets until the reveal (the
vote and reason would let anyone copy or counter it), hence mode 600, written whole and
renamed so a crash leaves the old file or the new one.

``plan`` is the decision, without I/O: given the ballots and the node's public state of
their artifacts, which to reveal now and which are finished (revealed, or a ballot of a
round that is over).  ``BallotBook`` is the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ostrom.client import Ballot
from ostrom.service.identity import create_file

__all__ = ["BallotBook", "BallotFileError", "Plan", "plan"]


class BallotFileError(Exception):
    """The ballot file cannot be read or is not one this module wrote."""


@dataclass(frozen=True)
class Plan:
    """What to do with the kept ballots now: reveal these, forget those."""

    reveal: tuple[str, ...]
    finished: tuple[str, ...]


def plan(agent: str, ballots: Mapping[str, Ballot], artifacts: Mapping[str, Any]) -> Plan:
    """Which of ``ballots`` to reveal now, and which are finished.

    ``artifacts`` is the node's public state of the artifacts (GET /artifacts).  A ballot
    is revealed in its artifact's reveal phase of the round it was committed in, once
    (CR-1: never before the reveal phase, whose commitment binds this round).  It is
    finished when the node has its reveal, when the artifact is gone, or when the
    artifact has moved to another round or out of the ballot (decided, expired): its
    reveal would be refused, and keeping the salt would only keep a secret longer."""
    reveal: list[str] = []
    finished: list[str] = []
    for artifact, ballot in sorted(ballots.items()):
        a = artifacts.get(artifact)
        if not isinstance(a, Mapping):
            finished.append(artifact)
            continue
        revealed = a.get("revealed") or {}
        phase = a.get("phase")
        over = a.get("round") != ballot.round or phase not in ("commit", "reveal")
        if over or (isinstance(revealed, Mapping) and revealed.get(agent)):
            finished.append(artifact)
        elif phase == "reveal":
            reveal.append(artifact)
    return Plan(tuple(reveal), tuple(finished))


class BallotBook:
    """The ballot file of one agent: ``{"agent": ..., "ballots": {artifact: ballot}}``."""

    def __init__(self, path: Path, agent: str) -> None:
        self.path = path
        self.agent = agent
        self.ballots: dict[str, Ballot] = self._load()

    def _load(self) -> dict[str, Ballot]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as exc:
            raise BallotFileError(f"{self.path}: {exc}") from None
        try:
            doc = json.loads(text)
            if not isinstance(doc, dict) or doc.get("agent") != self.agent:
                raise ValueError(f"not a ballot file of agent {self.agent!r}")
            raw = doc["ballots"]
            if not isinstance(raw, dict):
                raise ValueError("ballots is not an object")
            return {
                str(k): Ballot(str(v["vote"]), str(v["reason"]), str(v["salt"]), int(v["round"]))
                for k, v in raw.items()
            }
        except (ValueError, KeyError, TypeError) as exc:
            raise BallotFileError(f"{self.path}: {exc}") from None

    def put(self, artifact: str, ballot: Ballot) -> None:
        """Keep ``ballot`` (durably, before its commit is sent)."""
        self.ballots[artifact] = ballot
        self._save()

    def drop(self, *artifacts: str) -> None:
        """Forget these ballots (revealed, refused or over)."""
        if any(a in self.ballots for a in artifacts):
            for a in artifacts:
                self.ballots.pop(a, None)
            self._save()

    def _save(self) -> None:
        doc = {"agent": self.agent, "ballots": {k: asdict(v) for k, v in self.ballots.items()}}
        tmp = self.path.with_name(self.path.name + ".tmp")
        # a leftover temporary file (or a link planted in its place) is removed, never
        # written through: the secret ballots go into a new private file (create_file)
        tmp.unlink(missing_ok=True)
        create_file(tmp, json.dumps(doc, sort_keys=True).encode())
        os.replace(tmp, self.path)
