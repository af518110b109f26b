"""The plasticity experiment's own parts of the report.

``sections`` adds to results.md:

* **Plasticity by interference count** — per scenario, per cell: plasticity at each k for
  same-slot conflicts and repeated history (unrelated controls beside them at the
  largest k), then the drop from k = 0 to the largest k with its 95% CI over seeds — the
  paper's headline contrast (0.34–0.50 at k = 8 for its lexical agents);
* **Wrong adoption, stale retention and time to adoption at the largest k** — per
  scenario, per cell (time to adoption over the trials that adopted);
* **Where it stops** — the protocol's plasticity at k = 0 and at the largest k, and the
  share of seeds whose k = 0 plasticity fell below one half, by adversary share.

``plots`` writes ``plasticity_by_k_<scenario>.png``: plasticity against k for each cell,
same-slot conflicts solid, repeated history dashed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Final

from ostrom.simulation.engine import ExperimentResult
from ostrom.simulation.report import (
    md_table,
    mean_with_ci,
    number_text,
    palette,
    plot_each_scenario,
    save_png,
    summary,
)

KINDS_SHOWN: Final = ("same_slot", "repeated")


def _counts(result: ExperimentResult) -> tuple[int, ...]:
    counts: tuple[int, ...] = result.experiment.cells[0].config.counts
    return counts


def _mean(result: ExperimentResult, label: str, scenario: str, metric: str) -> str:
    return number_text(summary(result, label, scenario, metric).mean, 2)


def _ci(result: ExperimentResult, label: str, scenario: str, metric: str) -> str:
    return mean_with_ci(result, label, scenario, metric, 2)


def sections(result: ExperimentResult) -> list[str]:
    exp = result.experiment
    counts = _counts(result)
    top = max(counts)
    lines = ["", "## Plasticity by interference count", ""]
    lines += [
        "Mean over seeds of the per-run share of valid updates served within the window, "
        f"by kind and count k; `drop` is plasticity at k = 0 minus same-slot and repeated "
        f"trials at k = {top} (mean [95% CI] over seeds).",
    ]
    for scenario in exp.scenarios:
        header = ["configuration"]
        for kind in KINDS_SHOWN:
            header += [f"{kind} k={k}" for k in counts]
        header += [f"unrelated k={top}", "drop"]
        rows = []
        for cell in exp.cells:
            row = [cell.label]
            for kind in KINDS_SHOWN:
                row += [
                    _mean(result, cell.label, scenario, f"plasticity.{kind}.k{k}") for k in counts
                ]
            row.append(_mean(result, cell.label, scenario, f"plasticity.unrelated.k{top}"))
            row.append(_ci(result, cell.label, scenario, "plasticity_drop"))
            rows.append(row)
        lines += ["", f"Scenario `{scenario}`:", ""]
        lines += md_table(header, rows)
    lines += ["", f"## Wrong adoption, stale retention and time to adoption at k = {top}", ""]
    for scenario in exp.scenarios:
        header = ["configuration"]
        for kind in KINDS_SHOWN:
            header += [f"wrong {kind}", f"stale {kind}", f"rounds to adopt {kind}"]
        rows = []
        for cell in exp.cells:
            row = [cell.label]
            for kind in KINDS_SHOWN:
                row += [
                    _mean(result, cell.label, scenario, f"wrong_adoption.{kind}.k{top}"),
                    _mean(result, cell.label, scenario, f"stale_retention.{kind}.k{top}"),
                    _mean(result, cell.label, scenario, f"time_to_adoption.{kind}.k{top}"),
                ]
            rows.append(row)
        lines += ["", f"Scenario `{scenario}`:", ""]
        lines += md_table(header, rows)
    protocol = [c.label for c in exp.cells if c.config.mechanism == "protocol"]
    if protocol:
        lines += ["", "## Where it stops: the protocol by adversary share", ""]
        header = ["scenario"]
        for label in protocol:
            header += [f"{label} k=0", f"k={top}", "seeds < 0.5"]
        rows = []
        for scenario in exp.scenarios:
            row = [scenario]
            for label in protocol:
                k0 = result.values(label, scenario, "plasticity_k0")
                low = sum(1 for v in k0 if not math.isnan(v) and v < 0.5)
                at_top = [
                    _mean(result, label, scenario, f"plasticity.{kind}.k{top}")
                    for kind in KINDS_SHOWN
                ]
                row += [
                    _ci(result, label, scenario, "plasticity_k0"),
                    " / ".join(at_top),
                    f"{low}/{len(k0)}",
                ]
            rows.append(row)
        lines += md_table(header, rows)
        lines += ["", f"(k={top}: same-slot / repeated.)"]
    return lines


def plots(result: ExperimentResult, out: Path) -> list[Path]:
    return plot_each_scenario(result, out, "plasticity_by_k", plot_by_k)


def plot_by_k(result: ExperimentResult, scenario: str, path: Path) -> None:
    """Plasticity against k per cell: same-slot solid, repeated dashed (mean over seeds)."""
    from matplotlib.figure import Figure

    exp = result.experiment
    counts = _counts(result)
    fig = Figure(figsize=(11, 5.5))
    ax = fig.add_subplot()
    for colour, cell in zip(palette(len(exp.cells)), exp.cells, strict=True):
        for kind, style in (("same_slot", "-"), ("repeated", "--")):
            ys = [
                summary(result, cell.label, scenario, f"plasticity.{kind}.k{k}").mean
                for k in counts
            ]
            ax.plot(
                counts,
                ys,
                style,
                color=colour,
                linewidth=1.3,
                marker="o",
                markersize=3,
                label=cell.label if kind == "same_slot" else None,
            )
    ax.set_title(f"{exp.name}: plasticity by k, {scenario} (solid same-slot, dashed repeated)")
    ax.set_xticks(list(counts))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("interfering proposals k")
    ax.set_ylabel("plasticity (mean over seeds)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    save_png(fig, path)


__all__ = ["plot_by_k", "plots", "sections"]
