"""Recording a history: a ``Recorder`` drives one fresh reference adapter and keeps each
step with what the reference observed, so every expectation of a vector *is* the reference.

The hand-written examples, the random walks and the TLC-sourced vectors all record through
it; ``GenerationError`` stops generation when a script's expectation is not met.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ostrom.conformance import VECTOR_FORMAT
from ostrom.conformance.generators.fileformat import compact
from ostrom.conformance.layer import Layer, Observation
from ostrom.conformance.layers import ADAPTERS
from ostrom.conformance.vectors import wire

__all__ = ["GenerationError", "Recorder"]


class GenerationError(Exception):
    """A scenario did not go as its script says (the reference changed, or the script is
    wrong): generation stops rather than write a vector that shows something else."""


@dataclass
class Recorder:
    """Drives one fresh reference adapter and records each step with its observation."""

    layer: str
    action: str
    name: str
    description: str
    properties: list[str]
    source: str
    params: dict[str, Any]
    setup: dict[str, Any]
    factory: Callable[[], Layer] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    last: Observation | None = None

    def __post_init__(self) -> None:
        if self.factory is None:
            self.factory = ADAPTERS[self.layer]
        self.adapter = self.factory()
        self.adapter.reset(wire(self.params), wire(self.setup))

    @property
    def id(self) -> str:
        return f"{self.layer}/{self.action}/{self.name}"

    def do(self, command: Any, expect: str | None = "ok", note: str | None = None) -> Observation:
        """Apply ``command``; if ``expect`` is given the result must be that code."""
        obs: Observation = wire(self.adapter.step(wire(command)))
        if expect is not None and obs["result"] != expect:
            raise GenerationError(
                f"{self.id}: step {len(self.steps)} {compact(command)[:200]}: expected "
                f"{expect}, got {obs['result']}"
            )
        step: dict[str, Any] = {"command": wire(command)}
        if note:
            step["note"] = note
        step["expect"] = {"result": obs["result"], "events": obs["events"], "state": obs["state"]}
        self.steps.append(step)
        self.last = obs
        return obs

    @property
    def state(self) -> Any:
        """The state after the last step (a layer's initial state before any)."""
        if self.last is not None:
            return self.last["state"]
        return wire(getattr(self.adapter, "_state")())  # noqa: B009

    def check(self, condition: bool, message: str) -> None:
        if not condition:
            raise GenerationError(f"{self.id}: step {len(self.steps)}: {message}")

    def vector(self) -> dict[str, Any]:
        if not self.steps:
            raise GenerationError(f"{self.id}: no steps")
        return {
            "format": VECTOR_FORMAT,
            "id": self.id,
            "layer": self.layer,
            "action": self.action,
            "properties": sorted(set(self.properties)),
            "source": self.source,
            "description": self.description,
            "params": self.params,
            "setup": self.setup,
            "steps": self.steps,
        }
