"""Option types shared by the subcommands, so that every command validates alike.

Click's ``FloatRange`` lets ``nan`` through (it compares false with every bound) and
``inf`` where there is no upper bound; a timeout of ``inf`` then overflowed the clock
and one of ``nan`` disabled it.  ``Seconds`` takes a finite, positive duration with an
upper bound, and ``Finite`` any finite number in a range; both name the option in their
message (docs/cli.md, "Input").  ``REFUSAL_RATE`` is the one type of the refusal budget's
rate, for ``serve`` and ``cluster up`` alike (a rate of ``nan`` made the budget refuse to
start: an internal error, exit 3).
"""

from __future__ import annotations

import math
import sys
from typing import Any, Final

import click
from rich.console import Console

__all__ = ["REFUSAL_RATE", "SECONDS", "Finite", "Seconds", "console"]

#: The longest duration an option takes: about 11.6 days.
_MAX_SECONDS: Final = 1e6


class Finite(click.ParamType[float]):
    """A finite float in ``[lo, hi]`` (``lo`` excluded with ``lo_open``)."""

    name = "number"

    def __init__(self, lo: float, hi: float, *, lo_open: bool = False) -> None:
        self.lo, self.hi, self.lo_open = lo, hi, lo_open

    def describe(self) -> str:
        return f"{'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float) and math.isfinite(value):
            v = value
        else:
            try:
                v = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if v < self.lo or (self.lo_open and v == self.lo) or v > self.hi:
            self.fail(f"{value!r} is not in {self.describe()}", param, ctx)
        return v

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "NUMBER"


class Seconds(Finite):
    """A duration in seconds: finite, above 0, at most ``_MAX_SECONDS``."""

    name = "seconds"

    def __init__(self) -> None:
        super().__init__(0.0, _MAX_SECONDS, lo_open=True)

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "SECONDS"


SECONDS: Final = Seconds()

#: A refusal budget's refill rate (ADM-2), in refused commands per second: above 0, finite.
REFUSAL_RATE: Final = Finite(0.0, 1e9, lo_open=True)


def console(piped_width: int) -> Console:
    """A console as wide as the terminal, or ``piped_width`` when stdout is not one (a
    pipe or a log has no width: rich's 80 columns would fold every long cell)."""
    return Console() if sys.stdout.isatty() else Console(width=piped_width)
