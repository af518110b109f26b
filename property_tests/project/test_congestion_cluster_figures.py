"""docs/consensus.md ("Congestion control", "The process cluster") quotes
bench/results/congestion_cluster.json (``python bench/congestion.py --cluster``): its table
is generated from the committed results by ``cluster_table``, and this test fails when the
two drift apart (issue 42 item 0, the cluster part)."""

from __future__ import annotations

import json
from typing import Any

from ostrom.harness.sweep import LOSS_BOUND
from ostrom.layout import ROOT

RESULTS = ROOT / "bench" / "results" / "congestion_cluster.json"
DOC = ROOT / "docs" / "consensus.md"


def cluster_table(results: dict[str, Any]) -> str:
    """The Markdown table of the process cluster under jitter and loss."""
    out = [
        "| faulty | loss | jitter | instances: free, faults "
        "| messages/instance: free, faults (×) | frames/request (×) | bytes/request (×) "
        "| acknowledgements: free, faults | faulted load | idle frames/s, honest: free, healed "
        "| idle to the faulty one, healed: frames/s (repeats), acks/s | view after the heal "
        "| load |",
        "|---|---:|---:|---|---|---|---|---|---:|---|---|---:|---:|",
    ]
    for r in results["rows"]:
        to_faulty = (
            "–"
            if r["faulty"] == "none"
            else f"{r['idle_to_faulty_per_s_healed']} "
            f"({r['idle_repeats_to_faulty_per_s_healed']}), "
            f"{r['idle_acks_to_faulty_per_s_healed']}"
        )
        out.append(
            f"| {r['faulty']} | {r['loss']:.0%} | {r['jitter_ms']:g} ms "
            f"| {r['instances_free']}, {r['instances_faults']} "
            f"| {r['messages_per_instance_free']}, {r['messages_per_instance_faults']} "
            f"({r['ratio_messages_per_instance']}×) "
            f"| {r['frames_per_request_free']}, {r['frames_per_request_faults']} "
            f"({r['ratio_frames']}×) "
            f"| {r['bytes_per_request_free']:,}, {r['bytes_per_request_faults']:,} "
            f"({r['ratio_bytes']}×) "
            f"| {r['acks_free']}, {r['acks_faults']} "
            f"| {r['seconds_faults']} s "
            f"| {r['idle_frames_per_s_free']}, {r['idle_frames_per_s_healed']} "
            f"| {to_faulty} "
            f"| {r['view_healed']} | {r['load_average_before']:g} |"
        )
    return "\n".join(out)


def test_docs_cluster_congestion_figures_are_the_committed_results() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    doc = DOC.read_text(encoding="utf-8")
    assert cluster_table(results) in doc, "regenerate docs/consensus.md's table: cluster_table()"


def test_a_changed_figure_is_caught() -> None:
    """The check can fail: one view more after the heal changes the table."""
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    results["rows"][0]["view_healed"] += 1
    assert cluster_table(results) not in DOC.read_text(encoding="utf-8")


def prose_figures(results: dict[str, Any]) -> list[str]:
    """The figures docs/consensus.md's prose quotes from the rows: the range of the
    fault-free messages per instance of the honest rows, the largest ratio under the
    faults with every replica honest and with a faulty one, and the range of repeats a
    second the idle honest replicas sent a faulty one after the heal."""
    rows = results["rows"]
    honest = [r for r in rows if r["faulty"] == "none"]
    faulty = [r for r in rows if r["faulty"] != "none"]
    free = [r["messages_per_instance_free"] for r in honest]
    worst = max(r["ratio_messages_per_instance"] for r in honest)
    worst_faulty = max(r["ratio_messages_per_instance"] for r in faulty)
    over = sum(r["ratio_messages_per_instance"] > LOSS_BOUND for r in faulty)
    repeats = [r["idle_repeats_to_faulty_per_s_healed"] for r in faulty]
    return [
        f"were {min(free):.1f} to {max(free):.1f} without faults",
        f"at most {worst:.2f} times",
        f"up to {worst_faulty:.2f} times, over the bound in {over} of {len(faulty)} cells",
        f"{min(repeats):g} to {max(repeats):g} repeats a second",
    ]


def test_the_prose_quotes_the_committed_results() -> None:
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    doc = " ".join(DOC.read_text(encoding="utf-8").split())
    for phrase in prose_figures(results):
        assert phrase in doc, f"docs/consensus.md should say {phrase!r} (the committed results)"
    results["rows"][0]["messages_per_instance_free"] = 12.0  # can fail
    assert any(p not in doc for p in prose_figures(results))
