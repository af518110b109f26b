"""Trace validation: an implementation's log checked against the TLA+ specs with TLC.

``validate`` is ``ostrom validate-trace`` (the header's layer picks the module); ``log``
reads and writes trace logs; ``tlc`` runs TLC and collects the trace specs' prints;
``verdict`` holds the verdicts and the frame every layer runs its batches through; one
compiler per traced layer: ``lifecycle`` (lifecycle and community logs, run and explained
by ``lifecycle_check``, with ``regvar`` deriving the spec copy they extend), ``sanctions``,
``pbft``.  Nothing here imports ``ostrom.conformance``.

The entry points, re-exported here: ``validate_file`` (one log, its layer read from its
header) and ``Verdict``. They load on first use (PEP 562).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.verify.trace.log import read_log
    from ostrom.verify.trace.validate import validate_file
    from ostrom.verify.trace.verdict import Verdict

__all__ = [
    "Verdict",
    "read_log",
    "validate_file",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "validate_file": "ostrom.verify.trace.validate:validate_file",
    "Verdict": "ostrom.verify.trace.verdict:Verdict",
    "read_log": "ostrom.verify.trace.log:read_log",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
