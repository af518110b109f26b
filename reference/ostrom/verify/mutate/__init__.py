"""Spec mutation (``ostrom mutate``): operators make small edits of a spec, ``run`` checks each
mutant with the models a suite names, ``suite`` and ``equivalents`` read the suites and the
accepted equivalents, ``scope`` what a model checks. The entry points, re-exported here,
load on first use (PEP 562): ``mutate_models``, ``mutants``, ``load_suite``,
``scores_table``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.verify.mutate.operators import mutants
    from ostrom.verify.mutate.run import mutate_models
    from ostrom.verify.mutate.suite import load_suite, scores_table

__all__ = [
    "load_suite",
    "mutants",
    "mutate_models",
    "scores_table",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "mutate_models": "ostrom.verify.mutate.run:mutate_models",
    "mutants": "ostrom.verify.mutate.operators:mutants",
    "load_suite": "ostrom.verify.mutate.suite:load_suite",
    "scores_table": "ostrom.verify.mutate.suite:scores_table",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
