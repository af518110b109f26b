"""The generators of the conformance vectors, one family per module.

The vector generators (``ostrom vectors``): ``generate`` plans and writes the suite from the
reference's examples (``examples/``), its random walks (``walks``, ``random_log``), TLC's
behaviours (``tlc_vectors``) and the PBFT replica (``pbft_vectors``). The entry points,
re-exported here, load on first use (PEP 562): ``write_suite`` and ``check_suite``
(``generate.generate`` is named like its module).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.conformance.generators.generate import check_suite, write_suite

__all__ = [
    "check_suite",
    "write_suite",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "write_suite": "ostrom.conformance.generators.generate:write_suite",
    "check_suite": "ostrom.conformance.generators.generate:check_suite",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
