"""The verification tools' commands: ``ostrom check``, ``explain``, ``tlc``, ``mutate``,
``mutate-code``, ``properties``, ``check-params`` and ``validate-trace``.

``ostrom.cli`` loads each on first use (``ostrom.cli.tools``); the product never
imports them.  The package re-exports nothing: each command is its module's (the module
``check`` holds the command ``check``, and so on), and ``ostrom.verify`` re-exports them.
"""

from __future__ import annotations

__all__: list[str] = []
