"""Figures quoted in prose, tied to the committed result files they come from: the
congestion-controlled issue run (docs/consensus.md, bench/results/congestion.json) and
the validation of a node's export, in one TLC run and in chunks (docs/conformance.md,
bench/results/trace_export.json).
A re-run that changes a figure fails here until the prose says the new one."""

from __future__ import annotations

import json
from typing import Any

from ostrom.layout import ROOT


def _results(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (ROOT / "bench" / "results" / f"{name}.json").read_text(encoding="utf-8")
    )
    return data


def _flat(path: str) -> str:
    return " ".join((ROOT / path).read_text(encoding="utf-8").split())


def congestion_sentence(results: dict[str, Any]) -> str:
    runs = {r["faulty"]: r for r in results["issue_run"] if r["clients"] == 3}
    a, s, f = runs["none"], runs["silent"], runs["flood"]
    return (
        f"all {a['executed_min']} requests in {a['ticks']:,} ticks, view {a['view']}, "
        f"{a['messages']:,} messages ({a['messages_per_request']:.1f} per request), "
        f"{a['retransmitted']} retransmissions, {a['queue']} queued at the end; with the "
        f"two highest replicas silent, {s['ticks']:,} ticks and {s['retransmitted']} "
        f"retransmissions; with them flooding VIEW-CHANGEs, {f['ticks']:,} ticks, "
        f"view {f['view']}."
    )


def validate_sentence(results: dict[str, Any]) -> str:
    """The figures before chunks: the whole log in one TLC run."""
    v = {r["commands"]: r for r in results["validate_one_run"]["rows"]}
    return f"{v[500]['seconds']:,.0f} s for 500 commands, {v[1000]['seconds']:,.0f} s for 1,000"


def _whole_chunks(row: dict[str, Any]) -> list[float]:
    """The CPU seconds of the chunks a row finished (a row stopped by its time limit ends
    with the chunk it was in)."""
    per: list[float] = row["chunk_cpu_seconds"]
    return per if row["status"] == "accepted" else per[:-1]


def chunked_sentence(results: dict[str, Any]) -> str:
    """The figures of the chunked check (the 10,000-command row may be partial)."""
    v = {r["commands"]: r for r in results["validate"]}
    a, b = v[1000], v[10000]
    done = _whole_chunks(b)
    later = done[1:]  # the first chunk starts with no artifact carried
    per_10k = sum(later) / len(later) * 10_000 / b["chunk_steps"]
    text = (
        f"1,000 commands: {a['status']} in {a['seconds']:,.0f} s, {a['cpu_seconds']:,.0f} "
        f"CPU seconds ({a['chunks']} chunks of {a['chunk_steps']} steps, load average "
        f"{a['load_average_1min'][0]:.0f}-{a['load_average_1min'][1]:.0f}); 10,000 commands: "
    )
    if b["status"] == "accepted":
        text += f"accepted in {b['seconds']:,.0f} s, {b['cpu_seconds']:,.0f} CPU seconds"
    else:
        text += (
            f"stopped by its time limit after {b['seconds']:,.0f} s with {len(done)} of "
            f"{10_000 // b['chunk_steps']} chunks accepted ({b['steps_followed']:,} steps)"
        )
    return text + (
        f", the chunks after the first {min(later):.0f}-{max(later):.0f} CPU seconds each "
        f"(load average {b['load_average_1min'][0]:.0f}-{b['load_average_1min'][1]:.0f}): "
        f"{per_10k:,.0f} CPU seconds per 10,000 commands"
    )


def test_the_issue_runs_figures_are_the_committed_results() -> None:
    assert congestion_sentence(_results("congestion")) in _flat("docs/consensus.md")


def test_the_export_validation_figures_are_the_committed_results() -> None:
    assert validate_sentence(_results("trace_export")) in _flat("docs/conformance.md")
    assert chunked_sentence(_results("trace_export")) in _flat("docs/conformance.md")


def test_a_changed_figure_is_caught() -> None:
    results = _results("congestion")
    results["issue_run"][0]["ticks"] += 1
    assert congestion_sentence(results) not in _flat("docs/consensus.md")
    export = _results("trace_export")
    export["validate_one_run"]["rows"][0]["seconds"] += 10
    assert validate_sentence(export) not in _flat("docs/conformance.md")
    export = _results("trace_export")
    export["validate"][0]["cpu_seconds"] += 10
    assert chunked_sentence(export) not in _flat("docs/conformance.md")
