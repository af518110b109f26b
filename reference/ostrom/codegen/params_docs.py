"""Renderings of the parameter table (``ostrom.protocol.params``) outside the docs' tables:
the JavaScript driver's table and the defaults file (``ostrom docs`` writes them)."""

from __future__ import annotations

from ostrom.protocol.params import table

__all__ = ["defaults_toml", "js_params"]


def js_params() -> str:
    """The JavaScript driver's parameter table (drivers/js/params.js: ``name: [kind,
    default, lo, hi]``): the driver checks a vector's ``params`` as ``Params.from_mapping``
    does, against the same rows."""

    def bound(v: float | None) -> str:
        return "INF" if v is None else str(int(v)) if float(v).is_integer() else repr(v)

    lines = []
    for p in table():
        kind = "floats" if isinstance(p.default, tuple) else type(p.default).__name__
        default = repr(list(p.default)) if isinstance(p.default, tuple) else repr(p.default)
        lines.append(f"  {p.name}: ['{kind}', {default}, {bound(p.lo)}, {bound(p.hi)}],")
    return "\n".join(lines) + "\n"


#: The comment heading examples/params/defaults.toml.
_DEFAULTS_HEADER = """\
# The docs/design.md §8 defaults, spelled out: every key of the parameter table
# (ostrom.protocol.params), generated from it by `ostrom docs` (make generate).  A parameter
# file may give any subset; keys left out take these values, unknown keys are an error
# that names them.  Check a file with:  ostrom check-params examples/params/defaults.toml
#
# Z3's verdict on these defaults (docs/thresholds.md): every theorem holds.  TALLY-1 needs
# the side rule (tally_min_side = 2): with w_max/w_min = 10 weights alone would let one
# reviewer at w_max outvote a quorum's other reviewers at w_min.  FG-1 needs the population
# floor (min_active_agents = 12): with 11 active agents one at w_max forgets alone.

"""


def defaults_toml() -> str:
    """examples/params/defaults.toml: every parameter at its default, with its meaning."""
    lines = []
    for p in table():
        value = repr(list(p.default)) if isinstance(p.default, tuple) else repr(p.default)
        unit = f" [{p.unit}]" if p.unit else ""
        lines.append(f"{p.name} = {value}  # {p.doc}{unit}")
    return _DEFAULTS_HEADER + "\n".join(lines) + "\n"
