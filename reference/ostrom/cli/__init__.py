"""The ``ostrom`` command: one entry point per subcommand.

The API, re-exported here (the command itself is ``ostrom.cli.main.main``, named like its
module): ``PRODUCT_COMMANDS`` and
``TOOL_COMMANDS``, the exit codes (``ExitCode``, ``EXIT_CODES``) and the errors a command
raises to exit with one (``BadInput``, ``ToolError``). They load on first use (PEP 562): a
tool imports ``ostrom.cli.exits`` and must not load every product command with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.cli.exits import EXIT_CODES, BadInput, ExitCode, ToolError
    from ostrom.cli.extras import install_hint
    from ostrom.cli.main import PRODUCT_COMMANDS
    from ostrom.cli.tools import TOOL_COMMANDS, ToolCommand

__all__ = [
    "EXIT_CODES",
    "PRODUCT_COMMANDS",
    "TOOL_COMMANDS",
    "BadInput",
    "ExitCode",
    "ToolCommand",
    "ToolError",
    "install_hint",
]

#: Where each name of ``__all__`` is defined ("module:attribute"), imported on first use.
_LAZY: dict[str, str] = {
    "PRODUCT_COMMANDS": "ostrom.cli.main:PRODUCT_COMMANDS",
    "TOOL_COMMANDS": "ostrom.cli.tools:TOOL_COMMANDS",
    "ToolCommand": "ostrom.cli.tools:ToolCommand",
    "ExitCode": "ostrom.cli.exits:ExitCode",
    "EXIT_CODES": "ostrom.cli.exits:EXIT_CODES",
    "BadInput": "ostrom.cli.exits:BadInput",
    "ToolError": "ostrom.cli.exits:ToolError",
    "install_hint": "ostrom.cli.extras:install_hint",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = _LAZY[name].partition(":")
    return getattr(importlib.import_module(module), attribute)
