"""Stable error codes (docs/design.md §3) and the exception that carries one.

The codes are part of the protocol: the TLA+ spec, the conformance vectors and every
implementation spell them identically, so they are a ``StrEnum`` whose values are the
wire strings.  ``Refused`` is raised by the orchestrator's check phase, *before* any
mutation, so catching it never leaves a half-applied command behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

__all__ = ["ErrorCode", "Refused"]


class ErrorCode(StrEnum):
    """Why a command was refused, in the order the checks run (docs/rules.md)."""

    INVALID_INPUT = "invalid_input"
    UNKNOWN_AGENT = "unknown_agent"
    UNKNOWN_ARTIFACT = "unknown_artifact"
    SANCTIONED = "sanctioned"
    NOT_ELIGIBLE = "not_eligible"
    WRONG_PHASE = "wrong_phase"
    DUPLICATE = "duplicate"
    BAD_REVEAL = "bad_reveal"
    RATE_LIMITED = "rate_limited"
    LIMIT_REACHED = "limit_reached"
    COOLDOWN = "cooldown"


class Refused(Exception):
    """A command was refused with ``code``; nothing was changed.

    ``events`` carries what the sanctions layer must still learn about a refused command
    (a ``violation`` for an invalid reveal or rate-limit abuse): rules.md reports these in
    the observation instead of storing them, so a refusal stays side-effect free.
    """

    def __init__(self, code: ErrorCode, detail: str = "", events: Sequence[dict[str, Any]] = ()):
        super().__init__(f"{code.value}: {detail}" if detail else code.value)
        self.code = code
        self.detail = detail
        self.events: list[dict[str, Any]] = list(events)
