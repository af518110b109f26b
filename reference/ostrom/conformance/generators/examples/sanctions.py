"""Hand-written sanctions histories: offences, graduated sanctions and their expiry (SAN-*)."""

from __future__ import annotations

from typing import Any

from ostrom.conformance.generators.examples.registry import example
from ostrom.conformance.generators.recorder import Recorder

__all__ = []


def _rec(r: Recorder, agent: str, kind: str, n: int = 1, **kw: Any) -> None:
    for _ in range(n):
        r.do({"op": "record", "agent": agent, "kind": kind, **kw})


@example(
    "sanctions",
    "record",
    "ladder-to-ban",
    ["SAN-2", "LC-SAFE-4"],
    "Strategic violations climb the ladder: warned at 3, rate-limited at 5, suspended at 8, "
    "banned at 12 (in the window); a ban is terminal.",
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "rate_limit", 12)
    _rec(r, "ana", "rate_limit")


@example(
    "sanctions",
    "tick",
    "window-expiry",
    ["SAN-2"],
    "Violations leave the window after sanction_window rounds (5 here) and the level falls "
    "with them.",
    params={"sanction_window": 5},
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "non_reveal", 3)
    r.do({"op": "tick", "round": 4})
    r.do({"op": "tick"})
    r.do({"op": "tick"})


@example(
    "sanctions",
    "tick",
    "suspension-ends",
    ["SAN-2"],
    "σ3 suspends for T_susp rounds (4 here); then the level is what the window gives, at most σ2.",
    params={"T_susp": 4},
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "frivolous_dispute", 8)
    for _ in range(4):
        r.do({"op": "tick"})


@example(
    "sanctions",
    "record",
    "urgent-penalty-weighs-three",
    ["SAN-2"],
    "An unfounded urgent report counts urgent_penalty = 3 violations: one of them warns.",
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "unfounded_urgent")
    _rec(r, "ana", "unfounded_urgent")


@example(
    "sanctions",
    "record",
    "malfunction-quarantined",
    ["SAN-1"],
    "Violations that are mostly malformed messages look like malfunction: quarantine "
    "instead of a warning; while quarantined the level never rises; after T_quarantine (3 "
    "here) the repaired agent is released with a clean slate.",
    params={"T_quarantine": 3},
)
def _(r: Recorder) -> None:
    _rec(r, "bot", "malformed", 3)
    _rec(r, "bot", "malformed", 6)
    for _ in range(3):
        r.do({"op": "tick"})


@example(
    "sanctions",
    "tick",
    "unrepaired-quarantine-renewed",
    ["SAN-1"],
    "An agent that fails its repair check stays quarantined for another T_quarantine.",
    params={"T_quarantine": 2},
    setup={"unrepaired": ["bot"]},
)
def _(r: Recorder) -> None:
    _rec(r, "bot", "invalid_reveal", 3)
    for _ in range(4):
        r.do({"op": "tick"})


@example(
    "sanctions",
    "record",
    "probation-reclassifies",
    ["SAN-1", "SAN-2"],
    "A violation during probation after a quarantine marks the agent strategic: its next "
    "malformed messages escalate on the ladder instead of quarantining it again.",
    params={"T_quarantine": 2},
)
def _(r: Recorder) -> None:
    _rec(r, "bot", "malformed", 3)
    r.do({"op": "tick", "round": 2})
    _rec(r, "bot", "malformed", 3)


@example(
    "sanctions",
    "record",
    "future-round-and-refusals",
    ["SAN-2"],
    "A record may name a later round (the book advances to it first); an earlier round, an "
    "unknown kind or a missing agent is `invalid_input`; so is a tick that does not advance.",
)
def _(r: Recorder) -> None:
    _rec(r, "ana", "non_reveal", round=3)
    _rec(r, "ana", "non_reveal")
    r.do({"op": "record", "agent": "ana", "kind": "non_reveal", "round": 1}, "invalid_input")
    r.do({"op": "record", "agent": "ana", "kind": "rudeness"}, "invalid_input")
    r.do({"op": "record", "kind": "malformed"}, "invalid_input")
    r.do({"op": "tick", "round": 3}, "invalid_input")
