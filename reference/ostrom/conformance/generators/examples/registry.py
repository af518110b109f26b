"""The registry of hand-written histories: ``@example`` registers a script for a layer,
``build_examples`` runs each on a fresh reference adapter."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ostrom.conformance.generators.examples.worlds import CM_PARAMS, LC_PARAMS, MEMBERS, WORLD
from ostrom.conformance.generators.recorder import Recorder

__all__ = ["EXAMPLES", "SOURCE", "Example", "build_examples", "example"]

SOURCE: Final = "reference:examples"
#: The order the layers' histories are built in (within a layer: the order of the scripts).
LAYERS: Final = ("lifecycle", "voting", "reputation", "sanctions", "forgetting", "community")

# --- the registry ---------------------------------------------------------------------------------

Script = Callable[[Recorder], None]


@dataclass(frozen=True)
class Example:
    layer: str
    action: str
    name: str
    properties: tuple[str, ...]
    description: str
    params: Mapping[str, Any]
    setup: Mapping[str, Any]
    script: Script = field(repr=False)


EXAMPLES: Final[list[Example]] = []


_DEFAULTS: Final[dict[str, tuple[dict[str, Any], dict[str, Any]]]] = {
    "lifecycle": (LC_PARAMS, {"agents": WORLD}),
    "community": (CM_PARAMS, {"members": MEMBERS}),
}


def example(
    layer: str,
    action: str,
    name: str,
    properties: Sequence[str],
    description: str,
    *,
    params: Mapping[str, Any] | None = None,
    setup: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Callable[[Script], Script]:
    """Register a script.  ``params``/``setup`` default to the layer's world; ``extra``
    adds parameters to the default ones."""
    p0, s0 = _DEFAULTS.get(layer, ({}, {}))

    def register(script: Script) -> Script:
        p = dict(p0 if params is None else params)
        p.update(extra or {})
        s = dict(s0 if setup is None else setup)
        EXAMPLES.append(Example(layer, action, name, tuple(properties), description, p, s, script))
        return script

    return register


def build_examples() -> list[dict[str, Any]]:
    """Run every script on a fresh reference adapter; the vector documents."""
    out = []
    for ex in sorted(EXAMPLES, key=lambda ex: LAYERS.index(ex.layer)):  # stable
        r = Recorder(
            ex.layer,
            ex.action,
            ex.name,
            ex.description,
            list(ex.properties),
            SOURCE,
            dict(ex.params),
            dict(ex.setup),
        )
        ex.script(r)
        out.append(r.vector())
    return out
