"""Renderings of the transition table: the docs' state diagram and the TLA+ table module.

Both are generated from ``lifecycle.TRANSITIONS`` so that the diagram a newcomer reads and
the rows TLC checks (``TableInv`` in ``spec/Lifecycle.tla``) are the table the code runs.
``ostrom docs`` writes them (``ostrom.codegen.registry``), and its test fails when a
committed copy is stale.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict

from ostrom.protocol.lifecycle import (
    AGENT_COMMANDS,
    NEW,
    SINGLE_ACTIONS,
    STABLE,
    STATES,
    TRANSITIONS,
    Row,
)
from ostrom.protocol.params import markdown_table

__all__ = ["FORMATS", "to_dot", "to_guard_table", "to_mermaid", "to_svg", "to_tla_table"]

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
    """SVG rendered by Graphviz's ``dot`` (Debian's ``graphviz``; `make generate` installs it)."""
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "Graphviz's `dot` is not installed: run `make generate` (it installs Debian's "
            "graphviz) or use --format dot / --format mermaid"
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
        "(* by `ostrom docs` (make generate); property_tests/codegen/test_generated.py    *)\n"
        "(* checks that this file is current. Lifecycle.tla's TableInv requires every     *)\n"
        "(* step TLC takes to be one of these rows; the cross-check test requires every   *)\n"
        "(* row be reached.                                                               *)\n"
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


FORMATS.update({"guards": to_guard_table, "params": markdown_table})
