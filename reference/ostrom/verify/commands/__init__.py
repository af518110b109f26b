"""The verification tools' commands: ``ostrom check``, ``explain``, ``tlc``, ``mutate``,
``mutate-code``, ``properties``, ``check-params`` and ``validate-trace``.

``ostrom.cli`` loads each on first use (``ostrom.cli.tools``); the product never
imports them.
"""
