"""The siege's figures in docs/security.md, tied to bench/results/siege.json (bench/siege.py,
``make bench``): a re-run that changes a figure fails here until the table says the new one."""

from __future__ import annotations

import json
from typing import Any

from ostrom.layout import ROOT

RESULTS = ROOT / "bench" / "results" / "siege.json"


def _results() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RESULTS.read_text(encoding="utf-8"))
    return data


def _doc() -> str:
    return " ".join((ROOT / "docs" / "security.md").read_text(encoding="utf-8").split())


def siege_sentence(r: dict[str, Any]) -> str:
    free, hit = r["attack_free"], r["under_attack"]
    reads = hit["reader_answers"]
    return (
        f"without attackers {free['honest_commands_per_s']:,.0f} honest commands/s "
        f"(p99 {free['latency_p99_ms']:,.0f} ms, load average {free['load_average_1min']:.0f}); "
        f"under attack {hit['honest_commands_per_s']:,.0f} (p99 {hit['latency_p99_ms']:,.0f} ms, "
        f"load average {hit['load_average_1min']:.0f}): {r['honest_share_under_attack']:.0%} "
        f"of the attack-free figure, target {r['target_share']:.0%} "
        f"{'met' if r['target_met'] else 'missed'}. The Sybil flood got "
        f"{hit['sybil_answers'].get('HTTP 403', 0):,} 403 and "
        f"{hit['sybil_answers'].get('HTTP 429', 0):,} 429; the slow clients opened "
        f"{hit['slow_clients'].get('opened', 0):,} connections, "
        f"{hit['slow_clients'].get('closed by the node', 0):,} closed by the node; "
        f"{hit['honest_answers'].get('connection closed', 0):,} honest connections were "
        f"closed by the node or reset (the command sent again); the readers got "
        f"{reads.get('HTTP 200', 0):,} 200 and {reads.get('HTTP 503', 0):,} 503 `busy`"
    )


def cpu_sentence(r: dict[str, Any]) -> str:
    """Where the CPU went: the node's with and without the attack, the attackers' own."""
    free, hit = r["attack_free"]["cpu_seconds"], r["under_attack"]["cpu_seconds"]
    return (
        f"The node used {hit['node']:.1f} CPU s under attack against {free['node']:.1f} "
        f"without; the slow clients' process {hit['slow']:.1f}, the Sybil flood's "
        f"{hit['sybil']:.1f}, the readers' {hit['readers']:.1f}."
    )


def test_the_siege_figures_are_the_committed_results() -> None:
    r = _results()
    assert r["target_met"] == (r["honest_share_under_attack"] >= r["target_share"])
    assert siege_sentence(r) in _doc()
    assert cpu_sentence(r) in _doc()


def test_a_changed_siege_figure_is_caught() -> None:
    r = _results()
    r["under_attack"]["honest_commands_per_s"] += 10
    assert siege_sentence(r) not in _doc()
    r["under_attack"]["cpu_seconds"]["slow"] += 0.1
    assert cpu_sentence(r) not in _doc()
