"""The trace explorer (``ostrom explore``): ``sources`` reads a trace (an ITF counterexample, a
vector, a log), ``chart`` draws a message chart, ``page`` writes one self-contained HTML
page, ``docfigures`` the docs' figures. The entry points, re-exported here, load on first
use (PEP 562): ``explore`` (the command), ``load`` and ``write_page``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.explore.chart import render_svg
    from ostrom.explore.commands import explore
    from ostrom.explore.page import write_page
    from ostrom.explore.sources import load

__all__ = [
    "explore",
    "load",
    "render_svg",
    "write_page",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "explore": "ostrom.explore.commands:explore",
    "load": "ostrom.explore.sources:load",
    "write_page": "ostrom.explore.page:write_page",
    "render_svg": "ostrom.explore.chart:render_svg",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
