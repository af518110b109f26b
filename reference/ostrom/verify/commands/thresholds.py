"""``ostrom check-params``: the Z3 threshold theorems for a parameter file (docs/thresholds.md)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ostrom.cli.exits import BadInput
from ostrom.protocol.params import ParamError, param_range

if TYPE_CHECKING:
    from ostrom.verify import thresholds as thresholds_t

__all__ = ["check_params"]


@click.command(name="check-params")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option(
    "--general",
    is_flag=True,
    help="Also prove every theorem for all parameter values the table allows.",
)
@click.option(
    "--min-active-agents",
    type=click.IntRange(*param_range("min_active_agents")),
    default=None,
    help="Check FG-1 as if the file set min_active_agents (the forget rule's smallest "
    "population of non-barred agents) to this value.",
)
def check_params(
    file: Path | None, as_json: bool, general: bool, min_active_agents: int | None
) -> None:
    """Prove every threshold theorem (Z3) for FILE.toml, or for the defaults.

    Keys of FILE are the parameter names (e.g. w_min, w_max, quorum, tau_accept); keys not
    given take their defaults.  Unknown keys, wrong types, out-of-range values and the
    relations no theorem states (quorum > reviewers, w_min > w_max, ...) are errors that
    name them (exit 2, nothing on stdout).  tau_reject >= tau_accept, unordered tier
    thresholds and non-increasing sanction thresholds load, so that their theorems
    (TALLY-1, TIER-MONO, SAN-MONO) refute them with a counterexample.

    Prints one row per check (TALLY-1, REP-1, REP-2, FG-1, BFT-QUORUM-1, TIER-MONO,
    SAN-MONO), then each failure's counterexample in plain words (which agents, which
    weights, what goes wrong, replayed through voting.py or the orchestrator's
    arithmetic), then the bounds the theorems derive.  Contrast checks (the paper's plain
    decay rule, a flat 2f+1 PBFT quorum) are expected to be refuted.

    Exit status: 0 if every check is as expected, 1 if any is refuted or unknown.
    docs/thresholds.md says what each theorem states.
    """
    from ostrom.verify import thresholds  # z3 loads only for this command

    try:
        p = thresholds.load_params(file)
    except ParamError as exc:
        raise BadInput(str(exc)) from None
    results = thresholds.prove_all(p, min_active_agents=min_active_agents)
    general_results = thresholds.prove_general() if general else []
    bounds = thresholds.derived_bounds(p, min_active_agents=min_active_agents)
    failed = thresholds.failures([*results, *general_results])
    source = str(file) if file else "defaults"
    if as_json:
        doc: dict[str, object] = {
            "params": source,
            "ok": not failed,
            "summary": _summary(results),
            "bounds": bounds,
            "results": [r.to_dict() for r in results],
        }
        if general:
            doc["general"] = [r.to_dict() for r in general_results]
        click.echo(json.dumps(doc, indent=2))
    else:
        console = Console(width=max(110, Console().width))
        console.print(_results_table(f"check-params: {source}", results))
        if general:
            console.print(_results_table("for all parameter values in range", general_results))
        if failed:
            click.echo("\nCounterexamples (plain words):")
            for r in failed:
                click.echo(click.style(f"  ✗ {r.name}: {r.title}", fg="red"))
                click.echo(textwrap.fill(r.explanation, 100, initial_indent=" " * 4,
                                         subsequent_indent=" " * 4))  # fmt: skip
        click.echo("\nDerived bounds:")
        for line in _bound_lines(bounds):
            click.echo(textwrap.fill(line, 100, initial_indent="  ", subsequent_indent=" " * 4))
        s = _summary([*results, *general_results])
        summary = (
            f"\n{s['proved']} proved, {s['expected_refutations']} refuted as expected "
            f"(contrasts), {s['failed']} failed"
        )
        click.echo(click.style(summary, fg="red" if failed else "green"))
    if failed:
        sys.exit(1)


def _summary(results: list[thresholds_t.TheoremResult]) -> dict[str, int]:
    return {
        "checks": len(results),
        "proved": sum(r.status == "proved" for r in results),
        "expected_refutations": sum(r.ok and r.status == "refuted" for r in results),
        "failed": sum(not r.ok for r in results),
    }


def _results_table(title: str, results: list[thresholds_t.TheoremResult]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("property", "check", "claim", "result", "ms"):
        table.add_column(col, overflow="fold", justify="right" if col == "ms" else "left")
    for r in results:
        if not r.ok:
            result = Text(r.status.value.upper(), style="bold red")
        elif r.status == "refuted":
            result = Text("refuted (expected)", style="green")
        else:
            result = Text(r.status.value, style="green")
        table.add_row(r.id, r.check, Text(r.title), result, f"{r.seconds * 1000:.0f}")
    return table


def _bound_lines(b: dict[str, object]) -> list[str]:
    def n(x: object) -> str:
        return "∞" if x is None else f"{x:.4g}" if isinstance(x, float) else str(x)

    limits = b["tally_ratio_limits"]
    assert isinstance(limits, dict)
    ratios = (
        f"below {n(limits['review-lone-accept'])} (lone accept), below "
        f"{n(limits['review-lone-reject'])} (lone reject), below "
        f"{n(limits['dispute-lone-retract'])} (lone retract), at most "
        f"{n(limits['dispute-lone-keep'])} (lone keep)"
    )
    side = b["tally_min_side"]
    if isinstance(side, int) and side >= 2:
        tally = (
            f"TALLY-1: tally_min_side = {side}: no side of one voter wins, whatever the weights "
            f"(w_max/w_min = {n(b['tally_weight_ratio'])})"
        )
        if b["tally_lone_keep_by_heads"]:
            tally += (
                "; but q_dispute ≤ tally_min_side: a lone keeper holds a dispute against "
                "q_dispute − 1 retracters, too few to retract"
            )
        tally += f"; without the side rule w_max/w_min would have to stay {ratios}"
    else:
        tally = (
            f"TALLY-1: tally_min_side = {side} (no side rule): w_max/w_min = "
            f"{n(b['tally_weight_ratio'])}; no single agent decides while it is {ratios}"
        )
    return [
        tally,
        f"REP-2 Sybils needed to overturn: review {n(b['sybil_review_bound'])} "
        f"(spare seats {b['sybil_review_seats']}), dispute {n(b['sybil_dispute_bound'])} "
        f"(spare seats {b['sybil_dispute_seats']})",
        f"FG-1 population: min_active_agents = {b['forget_min_active_agents']}; no lone "
        f"forgetter from {n(b['forget_least_population_no_lone_forgetter'])} active agents "
        f"(exact: what min_active_agents must reach), docs/design.md §5's Q > w_max from "
        f"{n(b['forget_least_population_quorum_above_w_max'])} (sufficient, not needed)",
    ]
