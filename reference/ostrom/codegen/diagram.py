"""Renderings of the transition table: the docs' state diagram and the TLA+ table module.

Both are generated from ``lifecycle.TRANSITIONS`` so that the diagram a newcomer reads and
the rows TLC checks (``TableInv`` in ``spec/Lifecycle.tla``) are the table the code runs.
Tests regenerate them and fail when a committed copy is stale.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

from ostrom.docblocks import replace_block
from ostrom.protocol import commands
from ostrom.protocol.lifecycle import (
    AGENT_COMMANDS,
    NEW,
    SINGLE_ACTIONS,
    STABLE,
    STATES,
    TRANSITIONS,
    Row,
)

_TRANSIENT_COLOUR = "#fff7d6"
_STABLE_COLOUR = "#dff0d8"
_TERMINAL_COLOUR = "#e0e0e0"


def _label(rows: list[Row]) -> str:
    parts = []
    for r in rows:
        parts.append(r.event if r.verdict is None else f"{r.event} [{r.verdict}]")
    return "\\n".join(parts)


def _grouped() -> dict[tuple[str, str], list[Row]]:
    """Rows between the same two states share one edge (labels stacked)."""
    edges: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in TRANSITIONS:
        edges[(row.source, row.dest)].append(row)
    return edges


def to_dot() -> str:
    """Graphviz DOT of the lifecycle: stable states green, transient yellow, self-loops kept."""
    lines = [
        "// generated from reference/ostrom/protocol/lifecycle.py by `ostrom diagram --format dot`",
        "digraph lifecycle {",
        '  graph [rankdir=LR, fontname="Helvetica", nodesep=0.4, ranksep=0.6];',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
        f'  "{NEW}" [shape=point, width=0.15, label=""];',
    ]
    for state in STATES:
        if state == "forgotten":
            colour = _TERMINAL_COLOUR
        elif state in STABLE:
            colour = _STABLE_COLOUR
        else:
            colour = _TRANSIENT_COLOUR
        lines.append(f'  "{state}" [fillcolor="{colour}"];')
    for (source, dest), rows in _grouped().items():
        style = ', style="dashed"' if all(r.source == r.dest for r in rows) else ""
        lines.append(f'  "{source}" -> "{dest}" [label="{_label(rows)}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_mermaid() -> str:
    """Mermaid ``stateDiagram-v2`` (renders on code hosts without any binary)."""
    lines = ["stateDiagram-v2"]
    for (source, dest), rows in _grouped().items():
        src = "[*]" if source == NEW else source
        label = ", ".join(
            r.event if r.verdict is None else f"{r.event} [{r.verdict}]" for r in rows
        )
        lines.append(f"    {src} --> {dest} : {label}")
    return "\n".join(lines) + "\n"


def to_svg() -> str:
    """SVG rendered by Graphviz's ``dot`` (Debian package ``graphviz``; `make docs` installs it)."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "Graphviz's `dot` is not installed: run `make docs` (it installs Debian's graphviz) "
            "or use --format dot / --format mermaid"
        )
    done = subprocess.run(
        [dot, "-Tsvg"], input=to_dot(), capture_output=True, text=True, check=True
    )
    return done.stdout


def to_tla_table() -> str:
    """The TLA+ module ``LifecycleTable``: the table's (event, source, dest) triples, and
    the command -> action map of ``lifecycle.EVENTS`` that LifecycleTrace.tla reads."""
    body = ",\n".join(f'    <<"{r.event}", "{r.source}", "{r.dest}">>' for r in TRANSITIONS)
    actions = ",\n".join(f'    {op} |-> "{action}"' for op, action in SINGLE_ACTIONS.items())
    agents = ", ".join(f'"{op}"' for op in AGENT_COMMANDS)
    return (
        "---------------------------- MODULE LifecycleTable ----------------------------\n"
        "(* Generated from reference/ostrom/protocol/lifecycle.py (TRANSITIONS, EVENTS)   *)\n"
        "(* by `ostrom diagram --format tla`; property_tests/codegen/test_diagram.py      *)\n"
        "(* checks that this file is current. Lifecycle.tla's TableInv requires every    *)\n"
        "(* step TLC takes to be one of these rows; the cross-check test requires every  *)\n"
        "(* row be reached.                                                              *)\n"
        "TableRows == {\n"
        f"{body}\n"
        "}\n"
        "(* The spec action of each command whose step is one action (EVENTS: action,    *)\n"
        "(* command). LifecycleTrace.tla's Act takes it; a test checks Act against it.    *)\n"
        "CommandAction == [\n"
        f"{actions}\n"
        "]\n"
        '(* The commands an agent sends (EVENTS: actor "agent").                         *)\n'
        f"AgentCommands == {{{agents}}}\n"
        "================================================================================\n"
    )


FORMATS = {"dot": to_dot, "mermaid": to_mermaid, "svg": to_svg, "tla": to_tla_table}


def to_guard_table() -> str:
    """Markdown guard table: who may cause each event and which refusals it can give."""
    from ostrom.protocol.lifecycle import EVENTS

    lines = [
        "| event | caused by | min tier | role | refusals (in check order) |",
        "|---|---|---|---|---|",
    ]
    for spec in EVENTS.values():
        tier = "—" if spec.min_tier is None else str(spec.min_tier)
        errors = ", ".join(f"`{e}`" for e in spec.errors) or "—"
        lines.append(f"| `{spec.event}` | {spec.actor} | {tier} | {spec.role} | {errors} |")
    return "\n".join(lines) + "\n"


def to_param_table() -> str:
    """Markdown parameter table (docs/design.md §8), from ``ostrom.protocol.params``."""
    from ostrom.protocol.params import markdown_table

    return markdown_table()


def to_js_params() -> str:
    """The JavaScript driver's parameter table (drivers/js/params.js: ``name: [kind,
    default, lo, hi]``), from ``ostrom.protocol.params``: the driver checks a vector's
    ``params`` as ``Params.from_mapping`` does, against the same rows."""
    from ostrom.protocol.params import table

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
# (ostrom.protocol.params), generated from it by `ostrom docs` (make docs).  A parameter
# file may give any subset; keys left out take these values, unknown keys are an error
# that names them.  Check a file with:  ostrom check-params examples/params/defaults.toml
#
# Z3's verdict on these defaults (docs/thresholds.md): every theorem holds.  TALLY-1 needs
# the side rule (tally_min_side = 2): with w_max/w_min = 10 weights alone would let one
# reviewer at w_max outvote a quorum's other reviewers at w_min.  FG-1 needs the population
# floor (min_active_agents = 12): with 11 active agents one at w_max forgets alone.

"""


def to_params_toml() -> str:
    """examples/params/defaults.toml: every parameter at its default, with its meaning."""
    from ostrom.protocol.params import table

    lines = []
    for p in table():
        value = repr(list(p.default)) if isinstance(p.default, tuple) else repr(p.default)
        unit = f" [{p.unit}]" if p.unit else ""
        lines.append(f"{p.name} = {value}  # {p.doc}{unit}")
    return _DEFAULTS_HEADER + "\n".join(lines) + "\n"


FORMATS.update({"guards": to_guard_table, "params": to_param_table})


def update_generated(root: Path, *, svg: bool = True) -> list[Path]:
    """Rewrite every generated file and docs block under ``root``; return what changed."""
    import re

    changed: list[Path] = []

    def write(path: Path, content: str) -> None:
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content, encoding="utf-8")
            changed.append(path)

    write(root / "spec" / "LifecycleTable.tla", to_tla_table())
    write(root / "schema" / "command.schema.json", commands.schema_text())
    write(root / "docs" / "img" / "lifecycle.dot", to_dot())
    if svg:
        write(root / "docs" / "img" / "lifecycle.svg", to_svg())
    chapter = root / "docs" / "lifecycle.md"
    text = chapter.read_text(encoding="utf-8")
    text = re.sub(
        r"```mermaid\n.*?```",
        lambda _m: "```mermaid\n" + to_mermaid() + "```",
        text,
        count=1,
        flags=re.S,
    )
    text = replace_block(text, "guards", to_guard_table())
    text = replace_block(text, "params", to_param_table())
    write(chapter, text)
    write(root / "examples" / "params" / "defaults.toml", to_params_toml())
    js = root / "drivers" / "js" / "params.js"
    write(js, replace_block(js.read_text(encoding="utf-8"), "params", to_js_params(), "// {}"))
    return changed
