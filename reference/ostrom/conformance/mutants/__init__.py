"""Mutants: deliberate bugs that the checks must catch, one registry for all of them.

:mod:`.registry` lists every mutant once (name ``<layer>-<bug>``, layer, property ids, and where
it is played: TLC models, a Hypothesis mutant, a driver mutant); :mod:`.drivers` holds the driver
mutants (``python -m ostrom.conformance.driver --mutant NAME``), whose ``MUTANTS`` the kill
matrix runs. The drivers import every layer, so they are loaded on first use: the Hypothesis
mutant modules read the registry alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ostrom.conformance.mutants.drivers import MUTANTS, Mutant, mutant

__all__ = ["MUTANTS", "Mutant", "mutant"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ostrom.conformance.mutants import drivers

        return getattr(drivers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
