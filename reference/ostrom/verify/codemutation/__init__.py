"""Code mutation testing of the reference implementation (docs/checking.md, "Code mutation").

Spec mutation (verify/mutate) asks whether the *models* would notice a small mistake in a
spec; this package asks whether the *tests* would notice one in the Python code.  It runs
mutmut over one module of reference/ostrom at a time, with the tests its target file names
(models/mutation/code/<module>.toml), and turns mutmut's per-mutant exit codes into a report
with the survivors' file, line and diff, less the mutants a person has accepted as
equivalent.

The entry points, re-exported here: ``run_target``, ``load_targets`` and the scores
(``load_scores``, ``scores_table``). They load on first use (PEP 562): ``run`` needs the
``mutation`` extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.verify.codemutation.run import run_target
    from ostrom.verify.codemutation.scores import load_scores, scores_table
    from ostrom.verify.codemutation.target import load_target, load_targets

__all__ = [
    "load_scores",
    "load_target",
    "load_targets",
    "run_target",
    "scores_table",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "run_target": "ostrom.verify.codemutation.run:run_target",
    "load_target": "ostrom.verify.codemutation.target:load_target",
    "load_targets": "ostrom.verify.codemutation.target:load_targets",
    "load_scores": "ostrom.verify.codemutation.scores:load_scores",
    "scores_table": "ostrom.verify.codemutation.scores:scores_table",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
