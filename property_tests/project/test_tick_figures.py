"""docs/reputation.md quotes bench/results/tick.json (``make bench``, suite ``tick``): the
table and the EigenTrust figures there are generated from the committed results by
``tick_table`` and ``trust_figures``, and this test fails when the two drift apart."""

from __future__ import annotations

import json
from typing import Any

from ostrom.layout import ROOT

RESULTS = ROOT / "bench" / "results" / "tick.json"
DOC = ROOT / "docs" / "reputation.md"


def _ms(v: float) -> str:
    return f"{v:.1f} ms" if v < 10 else f"{v:,.0f} ms"


def _pair(stats: dict[str, float]) -> str:
    return f"{_ms(stats['median'])}, {_ms(stats['p99'])}"


def tick_table(results: dict[str, Any]) -> str:
    """The Markdown table of docs/reputation.md "What a tick costs"."""
    apply = {r["agents"]: r for r in results["apply"]}
    eager = {r["agents"]: r for r in results["eager"]}
    out = [
        "| agents | node: commands/s (per CPU second) | node: tick, median and p99 (CPU) "
        "| node: tick (wall) | `Community.apply`: tick (CPU) | the eager tick of before (CPU) "
        "| first tick after the joins (CPU) |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results["node"]:
        n = row["agents"]
        e = eager.get(n)
        out.append(
            f"| {n:,} | {row['commands_per_s']:,.0f} ({row['commands_per_cpu_s']:,.0f}) "
            f"| {_pair(row['tick_cpu_ms'])} | {_pair(row['tick_ms'])} "
            f"| {_pair(apply[n]['tick_cpu_ms'])} | {_pair(e['tick_cpu_ms']) if e else '—'} "
            f"| {_ms(row['first_tick_ms']['cpu'])} |"
        )
    t = results["target"]
    out.append("")
    for clock, name in (("cpu", "CPU time"), ("wall", "the wall clock")):
        r = t[clock]
        out.append(
            f"By {name}, the node's tick median at 100k agents is "
            f"{r['tick_median_100k_over_1k']}× the one at 1k (target ≤ "
            f"{t['tick_required_at_most']}×) and its commands/s at 100k "
            f"{r['commands_per_s_100k_over_1k']}× the ones at 1k (target ≥ "
            f"{t['rate_required_at_least']}×): {'met' if r['met'] else 'not met'}."
        )
    return "\n".join(out)


def trust_figures(results: dict[str, Any]) -> str:
    """The EigenTrust figures quoted in the prose: a book's tick after a ballot, CPU median."""
    rows = results["after_a_ballot"]
    times = ", ".join(_ms(r["tick_cpu_ms"]["median"]) for r in rows)
    agents = ", ".join(f"{r['agents']:,}" for r in rows)
    return f"{times} at {agents} agents"


def test_docs_tick_figures_are_the_committed_results() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    doc = DOC.read_text(encoding="utf-8")
    assert tick_table(results) in doc, "regenerate docs/reputation.md's table: tick_table()"
    assert trust_figures(results) in doc, "regenerate the EigenTrust figures: trust_figures()"
