"""The forgetting experiment's own parts of the report: the comparison with the paper's
figures, 95% confidence intervals, consensus success, and footprint / accuracy plots.

``sections`` adds to results.md (after the generic per-scenario tables):

* **Against the paper** — the Co-Forgetting paper's 52% memory reduction, 88% forgetting
  accuracy and 92% consensus success next to ours, each with its 95% CI over seeds
  (docs/evaluation.md says where we agree, where not, and why);
* **95% confidence intervals** — reduction, accuracy and wrongly forgotten items of every
  cell in every scenario (t-based, over seeds);
* **Consensus success** — per consensus cell: mean, minimum over seeds, the decisions
  checked, whether every run executed everything and REPL-1 held.

``plots`` writes ``footprint_by_epoch_<scenario>.png`` (items held, mean ± 1 sd); the
generic report already writes ``accuracy_by_round_<scenario>.png``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Final

from ostrom.simulation.engine import ExperimentResult
from ostrom.simulation.forgetting.config import REFERENCE
from ostrom.simulation.report import (
    md_table,
    mean_with_ci,
    number_text,
    plot_by_round,
    plot_each_scenario,
    summary,
)

#: The paper's headline figures (arXiv 2506.17338, §V): metric -> value.
PAPER: Final = {"reduction": 0.52, "accuracy": 0.88, "consensus_success": 0.92}


def _with_ci(result: ExperimentResult, label: str, scenario: str, metric: str) -> str:
    digits = 1 if metric in ("wrongly_forgotten", "stale_kept") else 3
    return mean_with_ci(result, label, scenario, metric, digits)


def sections(result: ExperimentResult) -> list[str]:
    exp = result.experiment
    lines: list[str] = []
    labels = set(exp.labels)
    if REFERENCE in labels and "honest" in exp.scenarios:
        lines += ["", "## Against the paper", ""]
        lines += [
            f"The paper's figures (four agents, five runs, no error bars) beside ours "
            f"(mean [95% CI] over {len(exp.seeds)} seeds, epoch {_epochs(result)}).",
            "",
        ]
        rows = []
        for metric, name in (
            ("reduction", "memory reduction"),
            ("accuracy", "forgetting accuracy"),
        ):
            row = [name, f"{PAPER[metric]:.2f}"]
            for label, scenario in (
                (REFERENCE, "honest"),
                ("protocol", "honest"),
                (REFERENCE, "four"),
                ("protocol+no_floor [c≥α]", "four"),
            ):
                ok = label in labels and scenario in exp.scenarios
                row.append(_with_ci(result, label, scenario, metric) if ok else "—")
            rows.append(row)
        consensus = [
            c.label for c in exp.cells if c.label.startswith(("protocol [c≥α] [pbft", "alg1"))
        ]
        header = [
            "figure",
            "paper",
            f"{REFERENCE}, honest",
            "protocol, honest",
            f"{REFERENCE}, four",
            "no floor, four",
        ]
        lines += md_table(header, rows)
        if consensus and "consensus" in exp.scenarios:
            lines += ["", f"Consensus success (paper: {PAPER['consensus_success']:.2f}):", ""]
            rows = [
                [label, _with_ci(result, label, "consensus", "consensus_success")]
                for label in consensus
            ]
            lines += md_table(["configuration", "consensus success"], rows)
    lines += ["", "## 95% confidence intervals", ""]
    for scenario in exp.scenarios:
        rows = []
        for cell in exp.cells:
            if cell.runs_in(scenario):
                rows.append(
                    [cell.label]
                    + [
                        _with_ci(result, cell.label, scenario, m)
                        for m in ("reduction", "accuracy", "wrongly_forgotten", "misses")
                    ]
                )
        lines += ["", f"Scenario `{scenario}` (mean [95% CI]):", ""]
        lines += md_table(
            ["configuration", "reduction", "accuracy", "wrongly forgotten", "misses"], rows
        )
    cells = [c for c in exp.cells if c.label.startswith(("protocol [c≥α] [pbft", "alg1"))]
    if cells and "consensus" in exp.scenarios:
        lines += ["", "## Consensus success (scenario `consensus`)", ""]
        rows = []
        for cell in cells:
            vals = result.values(cell.label, "consensus", "consensus_success")
            finite = [v for v in vals if not math.isnan(v)]
            executed = result.values(cell.label, "consensus", "consensus_all_executed")
            repl1 = result.values(cell.label, "consensus", "consensus_repl1")
            decisions = summary(result, cell.label, "consensus", "consensus_decisions")
            rows.append(
                [
                    cell.label,
                    _with_ci(result, cell.label, "consensus", "consensus_success"),
                    number_text(min(finite)) if finite else "—",
                    number_text(decisions.mean, 1),
                    _flags(executed),
                    _flags(repl1),
                ]
            )
        header = [
            "configuration",
            "success [95% CI]",
            "worst seed",
            "items per run",
            "all executed",
            "REPL-1",
        ]
        lines += md_table(header, rows)
    return lines


def _flags(values: list[float]) -> str:
    """``all`` when every run has the flag, ``—`` when none measures it, else ``k/n``."""
    got = [v for v in values if not math.isnan(v)]
    if not got:
        return "—"
    k = sum(v == 1.0 for v in got)
    return "all" if k == len(got) else f"{k}/{len(got)}"


def _epochs(result: ExperimentResult) -> int:
    return max((len(r.series.get("footprint", [])) for r in result.runs), default=0)


def plots(result: ExperimentResult, out: Path) -> list[Path]:
    return plot_each_scenario(result, out, "footprint_by_epoch", plot_footprint)


def plot_footprint(result: ExperimentResult, scenario: str, path: Path) -> None:
    """Items held per epoch per cell (mean ± 1 sd over seeds; Algorithm 1's cells, which
    only re-decide the reference's run, left out)."""
    plot_by_round(
        result,
        scenario,
        path,
        "footprint",
        ylabel="footprint (items held)",
        share=False,
        xlabel="epoch",
        leave_out=("alg1",),
    )


__all__ = ["PAPER", "plot_footprint", "plots", "sections"]
