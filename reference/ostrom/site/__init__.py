"""The documentation site (``ostrom site``, ``make site``): ``build`` stages docs/ with the
explorer pages and runs MkDocs. The entry points, re-exported here, load on first use (PEP
562): ``site`` (the command) and ``build_site``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.site.build import build_site
    from ostrom.site.commands import site

__all__ = [
    "build_site",
    "site",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "site": "ostrom.site.commands:site",
    "build_site": "ostrom.site.build:build_site",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
