"""Where a name of a TLA+ model is defined: its module, then what it EXTENDS or INSTANCEs.

Several specs of the tree define the same names (``Timeout``, ``TypeOK``, ``Next``), so a
definition is looked up the way SANY resolves it for the model in question: the model's
module first, then its EXTENDS and INSTANCE targets, breadth first (spec/ and models/).
"""

from __future__ import annotations

import re
from pathlib import Path

from ostrom import layout

__all__ = ["search_order", "used_modules"]


def _files() -> dict[str, Path]:
    return {f.stem: f for f in [*layout.SPEC_DIR.glob("*.tla"), *layout.MODELS_DIR.glob("*.tla")]}


def search_order(module: str) -> list[Path]:
    """The .tla files of ``module`` and of the modules it uses, nearest first; every other
    module of spec/ and models/ after them (for a trace that names no module).  A module
    that is neither in spec/ nor in models/ (``ostrom tlc`` of a spec of one's own, such as
    the writing labs' docs/labs/writing/solutions/Slots.tla) gets nothing: the tree's specs
    define names it uses too (``Activate``, ``BindingInv``), with other parameters and
    other bodies, and would be shown as its own."""
    if module and module not in _files():
        return []
    order = used_modules(module)
    return order + [f for _, f in sorted(_files().items()) if f not in order]


def used_modules(module: str) -> list[Path]:
    """The .tla files of ``module`` and of the modules it EXTENDS or INSTANCEs (directly
    or not), nearest first."""
    files = _files()
    order: list[Path] = []
    todo = [module]
    while todo:
        m = todo.pop(0)
        if m not in files or files[m] in order:
            continue
        order.append(files[m])
        text = files[m].read_text(encoding="utf-8")
        for ext in re.findall(r"^EXTENDS\s+(.+)$", text, re.M):
            todo += [x.strip() for x in ext.split(",")]
        todo += re.findall(r"INSTANCE\s+(\w+)", text)
    return order
