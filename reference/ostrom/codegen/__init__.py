"""The generator of every generated file and docs block (``ostrom docs``, ``make generate``):
``registry`` is the one table of them, the other modules render the tables and diagrams it
names. The entry points, re-exported here, load on first use (PEP 562): ``docs`` and
``diagram_cmd`` (the commands), ``REGISTRY``, ``render``, ``stale`` and ``write``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.codegen.commands import docs
    from ostrom.codegen.diagram_command import diagram_cmd
    from ostrom.codegen.registry import REGISTRY, render, stale, write

__all__ = [
    "REGISTRY",
    "diagram_cmd",
    "docs",
    "render",
    "stale",
    "write",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "docs": "ostrom.codegen.commands:docs",
    "diagram_cmd": "ostrom.codegen.diagram_command:diagram_cmd",
    "REGISTRY": "ostrom.codegen.registry:REGISTRY",
    "render": "ostrom.codegen.registry:render",
    "stale": "ostrom.codegen.registry:stale",
    "write": "ostrom.codegen.registry:write",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
