"""Counterexamples in plain words: micro-unit numbers as decimals, agents and their weights."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Final

from ostrom.protocol.agents import MICRO

__all__ = []


def _dec(x: int | Fraction, scale: int = MICRO) -> str:
    """A micro-unit integer (or exact fraction) as a short decimal: 100000 → ``0.1``."""
    f = Fraction(x) / scale
    d = f.denominator
    for prime in (2, 5):
        while d % prime == 0:
            d //= prime
    if d == 1:  # a terminating decimal: print it exactly
        return format((Decimal(f.numerator) / Decimal(f.denominator)).normalize(), "f")
    return f"{float(f):.6g}"


def _num(x: Fraction) -> int | float:
    """JSON-ready number: an int when integral, else a float."""
    return int(x) if x.denominator == 1 else float(x)


def _share(yes: int, total: int) -> str:
    return "undefined (no weight)" if total == 0 else f"{yes / total:.6g}"


def _split(total: int, count: int, lo: int, hi: int) -> list[int]:
    """``count`` integer weights in [lo, hi] summing to ``total``, as even as possible."""
    if count <= 0:
        return []
    base, extra = divmod(total, count)
    out = [base + (1 if i < extra else 0) for i in range(count)]
    assert all(lo <= w <= hi for w in out) and sum(out) == total, (total, count, lo, hi)
    return out


def _agents(ws: Sequence[int], start: int = 1, prefix: str = "a") -> str:
    """``a2 and a3 (weight 0.1 each)``, ``a2…a5 (weight 0.1 each)``, ``a2 (0.1), a3 (0.4)``."""
    if not ws:
        return "no other agent"
    last = start + len(ws) - 1
    if len(set(ws)) == 1:
        if len(ws) == 1:
            return f"{prefix}{start} (weight {_dec(ws[0])})"
        join = " and " if len(ws) == 2 else "…"
        return f"{prefix}{start}{join}{prefix}{last} (weight {_dec(ws[0])} each)"
    return ", ".join(f"{prefix}{start + i} ({_dec(x)})" for i, x in enumerate(ws))


_VERDICT_WORDS: Final = {"undecided": "undecided (arbitration)"}
