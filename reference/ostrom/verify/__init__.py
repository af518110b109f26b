"""Verification tools: TLC and its output, trace validation per layer, the Z3 threshold
theorems, the property registry. Imports the protocol and consensus, never conformance.

The entry points, re-exported here: the ``ostrom`` commands (``check``, ``explain``,
``mutate_code``, ``properties``, ``check_params``, ``validate_trace``; ``tlc`` and
``mutate`` are named like subpackages and stay in ``commands``),
``check_models`` and ``run_tlc`` (TLC on the manifest), ``THEOREMS`` (the Z3 theorems) and
the property registry's ``load_properties``. They load on first use (PEP 562): each needs
its own tool (Java, Z3, mutmut).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.verify.commands.check import check, explain
    from ostrom.verify.commands.mutate_code import mutate_code
    from ostrom.verify.commands.properties import properties
    from ostrom.verify.commands.thresholds import check_params
    from ostrom.verify.commands.trace import validate_trace
    from ostrom.verify.registry import load as load_properties
    from ostrom.verify.thresholds import THEOREMS
    from ostrom.verify.tlc import check_models, run_tlc

__all__ = [
    "THEOREMS",
    "check",
    "check_models",
    "check_params",
    "explain",
    "load_properties",
    "mutate_code",
    "properties",
    "run_tlc",
    "validate_trace",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "check": "ostrom.verify.commands.check:check",
    "explain": "ostrom.verify.commands.check:explain",
    "mutate_code": "ostrom.verify.commands.mutate_code:mutate_code",
    "properties": "ostrom.verify.commands.properties:properties",
    "check_params": "ostrom.verify.commands.thresholds:check_params",
    "validate_trace": "ostrom.verify.commands.trace:validate_trace",
    "check_models": "ostrom.verify.tlc:check_models",
    "run_tlc": "ostrom.verify.tlc:run_tlc",
    "THEOREMS": "ostrom.verify.thresholds:THEOREMS",
    "load_properties": "ostrom.verify.registry:load",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
