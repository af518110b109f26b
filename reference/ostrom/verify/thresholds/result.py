"""The outcome of one checked claim: proved, refuted (with a counterexample) or unknown."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ostrom.protocol.params import Params

__all__ = ["Status", "Theorem", "TheoremResult"]


class Status(StrEnum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class TheoremResult:
    """One checked claim.  ``ok`` compares the status with the expected one (contrasts
    are expected to be refuted); ``counterexample`` is JSON-ready, empty when proved."""

    id: str
    check: str
    theorem: str
    title: str
    statement: str
    status: Status
    expected: Status
    explanation: str
    counterexample: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == self.expected

    @property
    def name(self) -> str:
        """``ID/check``, unique within one run."""
        return f"{self.id}/{self.check}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "check": self.check,
            "theorem": self.theorem,
            "title": self.title,
            "statement": self.statement,
            "status": self.status.value,
            "expected": self.expected.value,
            "ok": self.ok,
            "explanation": self.explanation,
            "counterexample": self.counterexample,
            "facts": self.facts,
            "seconds": round(self.seconds, 4),
        }


Theorem = Callable[[Params | None], list[TheoremResult]]
