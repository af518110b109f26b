"""Lifecycle steps the histories of several layers share: propose, commit and reveal a
ballot, tick, dispute, and assertions on an artifact's state."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ostrom.conformance.generators.examples.worlds import WEIGHT
from ostrom.conformance.generators.recorder import Recorder
from ostrom.conformance.layer import Observation
from ostrom.protocol.voting import commitment

__all__ = [
    "arbiter",
    "art",
    "ballot",
    "by_weight",
    "commit",
    "dispute",
    "fast_active",
    "formal_commit",
    "propose",
    "reveal",
    "reviewers",
    "salt",
    "state_is",
    "tick",
    "to_arbitration",
]


def salt(agent: str, k: int = 0) -> str:
    """A fixed salt per agent (and variant k): 64 lowercase hex digits."""
    return hashlib.sha256(f"salt|{agent}|{k}".encode()).hexdigest()


def art(r: Recorder, x: str) -> dict[str, Any]:
    a: dict[str, Any] = r.state["artifacts"][x]
    return a


def propose(
    r: Recorder, agent: str, x: str, slot: str = "s", expect: str = "ok", **extra: Any
) -> Observation:
    cmd = {"op": "propose", "agent": agent, "artifact": x, "slot": slot, "digest": f"{x}-v1"}
    return r.do({**cmd, **extra}, expect)


def tick(r: Recorder, n: int = 1, note: str | None = None) -> Observation:
    obs = r.do({"op": "tick"}, note=note)
    for _ in range(n - 1):
        obs = r.do({"op": "tick"})
    return obs


def commit(
    r: Recorder,
    agent: str,
    x: str,
    vote: str,
    *,
    k: int = 0,
    round: int | None = None,
    expect: str = "ok",
    note: str | None = None,
) -> Observation:
    rnd = art(r, x)["round"] if round is None else round
    c = commitment(agent, x, rnd, vote, f"{agent} says {vote}", salt(agent, k))
    return r.do({"op": "commit_vote", "agent": agent, "artifact": x, "commitment": c}, expect, note)


def reveal(
    r: Recorder,
    agent: str,
    x: str,
    vote: str,
    *,
    k: int = 0,
    expect: str = "ok",
    note: str | None = None,
) -> Observation:
    cmd = {
        "op": "reveal_vote",
        "agent": agent,
        "artifact": x,
        "vote": vote,
        "reason": f"{agent} says {vote}",
        "salt": salt(agent, k),
    }
    return r.do(cmd, expect, note)


def reviewers(r: Recorder, x: str) -> list[str]:
    return list(art(r, x)["reviewers"])


def by_weight(r: Recorder, x: str) -> list[str]:
    """The open ballot's reviewers, heaviest first (ties by id)."""
    return sorted(reviewers(r, x), key=lambda a: (-WEIGHT.get(a, 0.0), a))


def ballot(
    r: Recorder, x: str, votes: Sequence[str | None], *, reveal_all: bool = True
) -> Observation:
    """Commit ``votes`` (one per reviewer, heaviest first; None: abstain), close the commit
    phase, reveal, close the reveal phase; the closing tick's observation."""
    cast = [(a, v) for a, v in zip(by_weight(r, x), votes, strict=False) if v is not None]
    for a, v in cast:
        commit(r, a, x, v)
    tick(r, note="the commit phase closes: the votes may be revealed")
    if reveal_all:
        for a, v in cast:
            reveal(r, a, x, v)
    return tick(r, note="the reveal phase closes: the tally decides")


def fast_active(r: Recorder, x: str, agent: str = "fay", slot: str = "s") -> None:
    """``x`` proposed by a tier-1 agent on a free slot: fast track, active 2 ticks later."""
    propose(r, agent, x, slot)
    tick(r, 2)
    r.check(art(r, x)["state"] == "active", f"{x} should be active")


def formal_commit(r: Recorder, x: str, agent: str = "ivy", slot: str = "s") -> None:
    """``x`` proposed by the newcomer: formal review, in its commit phase after one tick."""
    propose(r, agent, x, slot)
    tick(r, note="recruited (formal: tier-0 submitter); T_delib = 1 closes deliberation")
    r.check(art(r, x)["state"] == "commit", f"{x} should be in commit")


def state_is(r: Recorder, x: str, state: str) -> None:
    r.check(art(r, x)["state"] == state, f"{x} is {art(r, x)['state']}, expected {state}")


def arbiter(r: Recorder, x: str) -> str:
    """A tier-3 agent who may arbitrate ``x`` (not a reviewer, not the submitter)."""
    a = art(r, x)
    for cand in ("ana", "ben", "kim"):
        if cand not in a["reviewers"] and cand != a["submitter"]:
            return cand
    raise AssertionError("no arbiter")  # pragma: no cover


def to_arbitration(r: Recorder, x: str) -> None:
    """A formal review whose tally is undecided: heaviest accepts alone against one reject."""
    formal_commit(r, x)
    ballot(r, x, ["accept", "reject", None])
    state_is(r, x, "arbitration")


def dispute(r: Recorder, x: str, agent: str = "dan", expect: str = "ok") -> Observation:
    return r.do({"op": "dispute", "agent": agent, "artifact": x, "reason": "outdated"}, expect)


# ============================================================================================
