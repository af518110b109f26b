"""Renderings of the parameter table (``ostrom.protocol.params``): every copy of a parameter's
default, range, meaning, spec CONSTANT and model value outside params.py is made here.

A lifecycle parameter is one row of ``Params``; from that row ``ostrom docs`` writes the
docs' tables (docs/lifecycle.md: all of them; docs/rules.md: those the lifecycle rules read,
with the spec CONSTANT of each), the JavaScript driver's table, the defaults file, and the
values of the base configuration of every lifecycle model, models/MCLifecycle_ci.cfg
(``model`` and ``why`` of each row whose CONSTANT spec/Lifecycle.tla declares).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ostrom.protocol.params import MARKDOWN_COLUMNS, ParamInfo, Params, markdown_cells, table
from ostrom.verify.trace.lifecycle import declared_constants, spec_constants

__all__ = ["defaults_toml", "js_params", "lifecycle_table", "model_constants"]


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
        if p.choices:  # a word: its choices stand where a number's bounds do
            lines.append(f"  {p.name}: ['{kind}', {default}, {list(p.choices)!r}, INF],")
            continue
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
        if isinstance(p.default, str):
            value = json.dumps(p.default)  # a TOML basic string
        unit = f" [{p.unit}]" if p.unit else ""
        lines.append(f"{p.name} = {value}  # {p.doc}{unit}")
    return _DEFAULTS_HEADER + "\n".join(lines) + "\n"


def lifecycle_table(spec: Path) -> str:
    """docs/rules.md's parameter table: the rows the lifecycle rules read
    (``ParamInfo.lifecycle``), with the CONSTANT that stands for each in ``spec``
    (spec/Lifecycle.tla) or, for the rate limits it abstracts, in spec/LifecycleTrace.tla."""
    declared = set(declared_constants(spec))

    def constant(p: ParamInfo) -> str:
        if p.tla is None:
            return "—"
        return f"`{p.tla}`" if p.tla in declared else f"`{p.tla}` (LifecycleTrace.tla)"

    columns = (*MARKDOWN_COLUMNS, "spec CONSTANT")
    lines = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    lines += [
        "| " + " | ".join([*markdown_cells(p), constant(p)]) + " |" for p in table() if p.lifecycle
    ]
    return "\n".join(lines) + "\n"


#: A cfg comment line inside CONSTANTS.
_COMMENT = "    \\* "


def _number(v: object) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def model_constants(spec: Path) -> str:
    """The parameter constants of models/MCLifecycle_ci.cfg (its generated block): each
    CONSTANT of ``spec`` (spec/Lifecycle.tla) that a row of the table stands for, in the
    spec's order, at the row's ``model`` value, under a comment with the row's ``why``.
    ``ValueError`` names a row whose constant has no model value, or a model value whose
    constant the spec does not declare: either would be a cfg TLC refuses."""
    order = declared_constants(spec)
    rows = {p.tla: p for p in table() if p.tla is not None}
    missing = [p.name for c, p in rows.items() if c in order and p.model is None]
    extra = [p.name for p in table() if p.model is not None and p.tla not in order]
    problems = []
    if missing:
        problems.append(f"no model value for {', '.join(missing)}")
    if extra:
        problems.append(f"a model value but no constant in {spec.name}: {', '.join(extra)}")
    if problems:
        raise ValueError(f"the parameter table's model column: {'; '.join(problems)}")
    values = spec_constants(
        Params.from_mapping({p.name: p.model for p in table() if p.model is not None})
    )
    lines: list[str] = []
    for name in order:
        p = rows.get(name)
        if p is None:
            continue  # a constant of the model's world (Agents, Weight, WMin, ...)
        value = _number(p.model) + (f" = {values[name]}%" if p.unit == "share" else "")
        default = "the default" if p.model == p.default else f"default {_number(p.default)}"
        note = f"{p.name} = {value} ({default}): {p.why}"
        lines += textwrap.wrap(
            note, 96, initial_indent=_COMMENT, subsequent_indent=_COMMENT, break_on_hyphens=False
        )
        lines.append(f"    {name} = {values[name]}")
    return "\n".join(lines) + "\n"
