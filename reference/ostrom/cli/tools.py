"""The tools' commands, as names: what ``ostrom`` offers beyond the product.

The product (``ostrom.protocol``, ``consensus``, ``service``, ``cluster``, ``client``
and this command) never imports a tool (``.importlinter``, contract "product-no-tools").
The tools that check it — model checking, mutation, conformance, the explorer, the
site, the evaluation model, the generators of the docs, the consensus test harness —
plug into the command by the names below: each is imported when its command is run (or
its ``--help`` asked for), so ``pip install ostrom`` runs a node, a cluster and the
client without any tool's dependencies, and a tool whose extra is missing stops with
one line naming the extra (cli/extras.py).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Final

import click

__all__ = ["TOOL_COMMANDS", "ToolCommand", "load"]


@dataclasses.dataclass(frozen=True)
class ToolCommand:
    """Where a tool's command lives, the extra it needs, and its line in ``ostrom --help``
    (the command's own first docstring line; property_tests/cli checks they agree)."""

    target: str  # "module:attribute"
    extra: str | None
    summary: str


#: Every tool command of ``ostrom``, by name.
TOOL_COMMANDS: Final[dict[str, ToolCommand]] = {
    "check": ToolCommand(
        "ostrom.verify.commands.check:check",
        "check",
        "Model-check the manifest's models (and their reachability witnesses) with TLC.",
    ),
    "check-params": ToolCommand(
        "ostrom.verify.commands.thresholds:check_params",
        "check",
        "Prove every threshold theorem (Z3) for FILE.toml, or for the defaults.",
    ),
    "conform": ToolCommand(
        "ostrom.conformance.commands:conform",
        "check",
        "Run the conformance vectors against an implementation: ostrom conform -- CMD ARGS.",
    ),
    "consensus-demo": ToolCommand(
        "ostrom.harness.commands:consensus_demo",
        None,
        "The reviewers' concrete test: PBFT vs the Co-Forgetting paper's Algorithm 1.",
    ),
    "diagram": ToolCommand(
        "ostrom.codegen.diagram_command:diagram_cmd",
        None,
        "Render the lifecycle transition table (one table, many views).",
    ),
    "docs": ToolCommand(
        "ostrom.codegen.commands:docs",
        "check",
        "Regenerate every generated file and docs block (make generate).",
    ),
    "explain": ToolCommand(
        "ostrom.verify.commands.check:explain",
        "check",
        "Print a saved ITF counterexample: one row per step with the variables that changed.",
    ),
    "explore": ToolCommand(
        "ostrom.explore.commands:explore",
        "check",
        "Write one self-contained HTML page for a trace, to step through in a browser.",
    ),
    "mutate": ToolCommand(
        "ostrom.verify.commands.mutate:mutate",
        "check",
        "Mutation-test passing manifest MODELS: run them against small edits of their spec.",
    ),
    "mutate-code": ToolCommand(
        "ostrom.verify.commands.mutate_code:mutate_code",
        "mutation",
        "Mutation-test reference/ostrom's modules: run their tests against small edits.",
    ),
    "properties": ToolCommand(
        "ostrom.verify.commands.properties:properties",
        "check",
        "Print which checker checks which property id (TLC, Hypothesis, Z3, mutants).",
    ),
    "simulate": ToolCommand(
        "ostrom.simulation.target:simulate",
        "sim",
        "Run the evaluation model: the paper's agent-based simulation (docs/design.md §10).",
    ),
    "site": ToolCommand(
        "ostrom.site.commands:site",
        "site",
        "Build docs/ into a static site with MkDocs, search and explorer pages included.",
    ),
    "tlc": ToolCommand(
        "ostrom.verify.commands.tlc:tlc",
        "check",
        "Run TLC on SPEC with CFG: any spec, ad hoc, as `ostrom check` runs the manifest's.",
    ),
    "validate-trace": ToolCommand(
        "ostrom.verify.commands.trace:validate_trace",
        "check",
        "Check an ostrom-trace/1 log against the TLA+ spec of its layer.",
    ),
    "vectors": ToolCommand(
        "ostrom.conformance.commands:vectors_cmd",
        "check",
        "Regenerate the reference's conformance vectors, deterministically (make vectors).",
    ),
}


def load(name: str) -> click.Command:
    """The tool command ``name``, imported now (``ModuleNotFoundError`` if its extra is
    missing; the command group turns that into one line naming the extra)."""
    module, _, attribute = TOOL_COMMANDS[name].target.partition(":")
    command = getattr(importlib.import_module(module), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{TOOL_COMMANDS[name].target} is not a click command")
    return command
