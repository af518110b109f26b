"""What one layer of the reference looks like to the driver: reset, then steps.

Each layer adapter wraps one reference object (``Orchestrator``, ``ReputationBook``, ...)
behind the same two calls, so the driver, the vector generator and the trace logger never
know which layer they drive.  ``step`` never raises for a bad command: a refusal is a
``result`` code, exactly as the driver protocol says (docs/conformance.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ostrom.protocol import commands

__all__ = ["Layer", "LayerFactory", "Observation"]


class Observation(commands.Observation):
    """The normative reply to one command: the orchestrator's result code and events, and
    the layer's public state after it."""

    state: Any


class Layer(Protocol):
    """One layer of the protocol under test (reference adapter or mutant)."""

    name: str

    def reset(self, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        """A fresh instance: ``params`` are non-default parameters (the table's defaults
        apply to the rest); ``setup`` is the layer's initial world (docs/conformance.md)."""
        ...

    def step(self, command: Mapping[str, Any]) -> Observation:
        """Apply one command; never raises for bad input."""
        ...


#: layer name -> factory of its reference adapter (filled by ostrom.conformance.layers).
LayerFactory = Callable[[], Layer]
