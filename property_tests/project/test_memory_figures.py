"""docs/service.md quotes bench/results/memory.json (``make bench``, suite ``memory``): its
table is generated from the committed results by ``memory_table``, and this test fails
when the two drift apart (issue 42, item 3: memory per agent and per artifact)."""

from __future__ import annotations

import json
from typing import Any

from ostrom.layout import ROOT

RESULTS = ROOT / "bench" / "results" / "memory.json"
DOC = ROOT / "docs" / "service.md"


def _mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB" if n >= 10e6 else f"{n / 1e6:,.1f} MB"


def memory_table(results: dict[str, Any]) -> str:
    """The Markdown table of docs/service.md "Memory" and the linearity sentence."""
    out = [
        "| node holding | resident memory added | per item | snapshot (per item) "
        "| on disk (per item) | restart |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind in ("agents", "artifacts"):
        for r in results[kind]:
            n = r[kind]
            out.append(
                f"| {n:,} {kind} | {_mb(r['rss_added_bytes'])} "
                f"| {r['rss_added_bytes'] / n / 1e3:,.1f} KB "
                f"| {_mb(r['snapshot_bytes'])} ({r['snapshot_bytes'] / n:,.0f} B) "
                f"| {_mb(r['disk_bytes'])} ({r['disk_bytes'] / n / 1e3:,.1f} KB) "
                f"| {r['open_seconds']:,.1f} s |"
            )
    out.append("")
    for kind, label in (("per_agent", "agent"), ("per_artifact", "artifact")):
        p = results[kind]
        g = p["largest_over_smallest"]
        out.append(
            f"Per {label}, the largest size's figure over the smallest's: resident memory "
            f"{g['rss_bytes_per_item']}×, snapshot {g['snapshot_bytes_per_item']}×, disk "
            f"{g['disk_bytes_per_item']}×, restart time {g['open_ms_per_1k_items']}× "
            f"(linear within {p['linear_within']}×: {'yes' if p['linear'] else 'no'})."
        )
    return "\n".join(out)


def test_docs_memory_figures_are_the_committed_results() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    doc = DOC.read_text(encoding="utf-8")
    assert memory_table(results) in doc, "regenerate docs/service.md's table: memory_table()"


def test_a_changed_figure_is_caught() -> None:
    """The check can fail: one byte more of resident memory changes the table."""
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    results["agents"][0]["rss_added_bytes"] += 10**6
    assert memory_table(results) not in DOC.read_text(encoding="utf-8")
