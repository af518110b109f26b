"""Tables, statistics and plots of an experiment's result (``write_report``).

Files written to the output directory:

* ``results.csv``     — one row per configuration × scenario × metric: mean, sd, n, and
  the paired comparison with the configuration's reference (majority vote in the paper):
  mean difference, p (paired t-test), Cohen's d_z, 95% CI of the difference;
* ``comparisons.csv`` — every comparison an experiment asks for (e.g. each ablation vs
  majority and vs the full protocol), one row per configuration × reference × scenario
  × metric;
* ``results.json``    — the experiment (cells with their full configs, seeds), the same
  summary and comparisons, and every run's finals and extras;
* ``results.md``      — a Markdown table per scenario (mean ± sd of precision, recall,
  Gini, FPR; Δ precision vs the reference with its CI, p and d_z), the ablations against
  the full protocol, extras (e.g. ``separation``), and the degradation between scenarios;
* ``runs.csv``        — one row per run: its finals and flattened extras;
* ``precision_by_round_<scenario>.png`` — mean precision per round per configuration,
  with a ±1 SD band across seeds;
* ``degradation.png`` — final precision per configuration in each scenario (how much
  each one loses from ``moderate`` to the harder ones).

Every file depends on the result only (no dates, no timings; PNGs are written without
matplotlib's Software/date metadata), so the same result gives the same bytes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ostrom.simulation.engine import ExperimentResult, Presentation
from ostrom.simulation.stats import Paired, Summary, mean_ci, paired, summarize

#: The paper experiments' presentation: results.md's main columns are the four series,
#: its Δ column and the by-round plot show precision; per-command and per-path counts
#: stay out of results.md (in runs.csv and results.json only: they would make the
#: tables unreadable).
PAPER = Presentation()


def jsonable(x: Any) -> Any:
    """``x`` with NaN -> None, ±inf -> "inf"/"-inf" and tuples -> lists (strict JSON)."""
    if isinstance(x, float):
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [jsonable(v) for v in x]
    return x


# --- statistics -----------------------------------------------------------------------


def summary(result: ExperimentResult, label: str, scenario: str, metric: str) -> Summary:
    return summarize(result.values(label, scenario, metric))


def compare(
    result: ExperimentResult, label: str, versus: str, scenario: str, metric: str
) -> Paired:
    """``label`` against ``versus`` in ``scenario``, paired by seed."""
    return paired(result.values(label, scenario, metric), result.values(versus, scenario, metric))


def summary_rows(result: ExperimentResult) -> list[dict[str, Any]]:
    """One row per label × scenario × metric: mean, sd, n and the comparison with the
    cell's first reference (empty if it has none)."""
    exp = result.experiment
    rows = []
    for cell in exp.cells:
        for scenario in exp.scenarios:
            if not cell.runs_in(scenario):
                continue
            vs = [v for v in cell.vs if exp.cell(v).runs_in(scenario)]
            for metric in result.metrics():
                s = summary(result, cell.label, scenario, metric)
                row: dict[str, Any] = {
                    "label": cell.label,
                    "scenario": scenario,
                    "metric": metric,
                    "mean": s.mean,
                    "sd": s.sd,
                    "n": s.n,
                    "vs": vs[0] if vs else "",
                }
                c = compare(result, cell.label, vs[0], scenario, metric) if vs else None
                row.update(
                    diff=c.diff if c else math.nan,
                    p=c.p if c else math.nan,
                    d_z=c.d_z if c else math.nan,
                    ci_low=c.ci_low if c else math.nan,
                    ci_high=c.ci_high if c else math.nan,
                    n_pairs=c.n if c else 0,
                )
                rows.append(row)
    return rows


def comparison_rows(result: ExperimentResult) -> list[dict[str, Any]]:
    """Every comparison a cell asks for, for every scenario and metric."""
    exp = result.experiment
    rows = []
    for cell in exp.cells:
        for versus in cell.vs:
            for scenario in exp.scenarios:
                if not (cell.runs_in(scenario) and exp.cell(versus).runs_in(scenario)):
                    continue
                for metric in result.metrics():
                    c = compare(result, cell.label, versus, scenario, metric)
                    rows.append(
                        {
                            "label": cell.label,
                            "vs": versus,
                            "scenario": scenario,
                            "metric": metric,
                            **{k: getattr(c, k) for k in _PAIRED_FIELDS},
                        }
                    )
    return rows


_PAIRED_FIELDS = (
    "n",
    "mean_a",
    "mean_b",
    "diff",
    "sd_diff",
    "p",
    "d_z",
    "ci_low",
    "ci_high",
)


def run_rows(result: ExperimentResult) -> list[dict[str, Any]]:
    """One row per run: label, scenario, seed and every metric (NaN where absent)."""
    metrics = result.metrics()
    rows = []
    for i, run in enumerate(result.runs):
        row: dict[str, Any] = {
            "label": result.label_of(i),
            "scenario": run.config.scenario,
            "seed": run.seed,
        }
        row.update({m: result.value(run, m) for m in metrics})
        rows.append(row)
    return rows


def results_doc(result: ExperimentResult) -> dict[str, Any]:
    """results.json: the experiment, summary, comparisons and every run (no series)."""
    runs = []
    for i, run in enumerate(result.runs):
        d = run.to_dict(with_series=False)
        d["label"] = result.label_of(i)
        runs.append(d)
    doc = {
        "experiment": result.experiment.to_dict(),
        "metrics": result.metrics(),
        "summary": summary_rows(result),
        "comparisons": comparison_rows(result),
        "runs": runs,
    }
    out: dict[str, Any] = jsonable(doc)
    return out


def single_doc(result: ExperimentResult) -> dict[str, Any]:
    """``ostrom simulate --json`` for one configuration: its config, seeds, the mean/sd/n
    of every final metric, and each run's finals and extras."""
    exp = result.experiment
    cell, scenario = exp.cells[0], exp.scenarios[0]
    doc = {
        "label": cell.label,
        "config": exp.config(cell, scenario).to_dict(),
        "seeds": list(exp.seeds),
        "summary": {
            m: summary(result, cell.label, scenario, m).to_dict() for m in result.metrics()
        },
        "runs": [r.to_dict(with_series=False) for r in result.runs],
    }
    out: dict[str, Any] = jsonable(doc)
    return out


# --- text -----------------------------------------------------------------------------


def number_text(v: float, digits: int = 3) -> str:
    if math.isnan(v):
        return "—"
    if math.isinf(v):
        return "∞" if v > 0 else "−∞"
    return f"{v:.{digits}f}"


def mean_with_ci(
    result: ExperimentResult, label: str, scenario: str, metric: str, digits: int = 3
) -> str:
    """``mean [low, high]``: the mean over seeds with its t-based 95% CI ("—" with no
    value, the mean alone with one)."""
    s = summary(result, label, scenario, metric)
    if s.n == 0:
        return "—"
    lo, hi = mean_ci(s)
    ci = "" if math.isnan(lo) else f" [{number_text(lo, digits)}, {number_text(hi, digits)}]"
    return f"{number_text(s.mean, digits)}{ci}"


def _pm(s: Summary, digits: int = 3) -> str:
    if s.n == 0:
        return "—"
    return f"{number_text(s.mean, digits)} ± {number_text(s.sd, digits)}"


def _p(p: float) -> str:
    if math.isnan(p):
        return "—"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _signed(v: float, digits: int = 3) -> str:
    return number_text(v, digits) if math.isnan(v) or v < 0 else "+" + number_text(v, digits)


def _ci(c: Paired) -> str:
    if math.isnan(c.ci_low):
        return ""
    return f" [{_signed(c.ci_low)}, {_signed(c.ci_high)}]"


def md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def markdown(result: ExperimentResult) -> str:
    """results.md (see the module doc)."""
    exp = result.experiment
    look = exp.presentation
    main, key = look.main_metrics, look.key_metric
    extras = [
        m for m in result.metrics() if m not in main and not m.startswith(look.md_skip_prefixes)
    ]
    lines = [
        f"# Experiment `{exp.name}`",
        "",
        f"{exp.description}.  Seeds {exp.seeds[0]}..{exp.seeds[-1]} ({len(exp.seeds)}); "
        f"{exp.total} runs.  Mean ± sd over seeds (sd with ddof = 1); Δ is the mean "
        "paired difference (same seeds) with its 95% CI, p the paired t-test, "
        "d_z = mean(Δ)/sd(Δ).",
    ]
    for scenario in exp.scenarios:
        here = [cell for cell in exp.cells if cell.runs_in(scenario)]
        lines += ["", f"## Scenario `{scenario}`", ""]
        header = ["configuration", *main, f"Δ {key} vs", "p", "d_z", "n"]
        rows = []
        for cell in here:
            row = [cell.label]
            row += [_pm(summary(result, cell.label, scenario, m)) for m in main]
            vs = [v for v in cell.vs if exp.cell(v).runs_in(scenario)]
            if vs:
                c = compare(result, cell.label, vs[0], scenario, key)
                row += [f"{_signed(c.diff)}{_ci(c)} vs {vs[0]}", _p(c.p), number_text(c.d_z, 2)]
                row.append(str(c.n))
            else:
                row += ["", "", "", str(summary(result, cell.label, scenario, key).n)]
            rows.append(row)
        lines += md_table(header, rows)
        more = [(cell, v) for cell in here for v in cell.vs[1:] if exp.cell(v).runs_in(scenario)]
        if more:
            lines += ["", f"Against other references ({scenario}):", ""]
            rows = []
            for cell, versus in more:
                row = [cell.label, versus]
                for m in look.other_metrics:
                    c = compare(result, cell.label, versus, scenario, m)
                    row += [f"{_signed(c.diff)}{_ci(c)}", _p(c.p), number_text(c.d_z, 2)]
                rows.append(row)
            header = ["configuration", "vs"]
            for m in look.other_metrics:
                header += [f"Δ {m}", "p", "d_z"]
            lines += md_table(header, rows)
        if extras:
            lines += ["", f"Other measurements ({scenario}; mean ± sd over seeds):", ""]
        for chunk in range(0, len(here) if extras else 0, 6):
            cells = here[chunk : chunk + 6]
            rows = [
                [m, *(_pm(summary(result, c.label, scenario, m)) for c in cells)] for m in extras
            ]
            lines += [*([""] if chunk else []), *md_table(["", *(c.label for c in cells)], rows)]
    start = look.degradation_from
    harder = [s for s in exp.scenarios if s != start]
    if start in exp.scenarios and harder:
        lines += ["", f"## Degradation of {key} from `{start}`", ""]
        header = ["configuration", start]
        for name in harder:
            header += [name, "drop"]
        rows = []
        for cell in exp.cells:
            base = summary(result, cell.label, start, key).mean
            row = [cell.label, number_text(base)]
            for name in harder:
                mean = summary(result, cell.label, name, key).mean
                row += [number_text(mean), number_text(base - mean)]
            rows.append(row)
        lines += md_table(header, rows)
    if look.sections is not None:
        lines += look.sections(result)
    return "\n".join(lines) + "\n"


def print_summary(result: ExperimentResult) -> None:
    """A rich table of one configuration's final metrics (mean ± sd, n) on stdout."""
    from rich.console import Console
    from rich.table import Table

    exp = result.experiment
    cell, scenario = exp.cells[0], exp.scenarios[0]
    seeds = exp.seeds
    title = (
        f"{cell.label} — scenario {scenario}, {len(seeds)} seed"
        f"{'s' if len(seeds) > 1 else ''} ({seeds[0]}..{seeds[-1]})"
    )
    table = Table(title=title)
    for col, justify in (("metric", "left"), ("mean", "right"), ("sd", "right"), ("n", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for m in result.metrics():
        s = summary(result, cell.label, scenario, m)
        table.add_row(m, number_text(s.mean), number_text(s.sd), str(s.n))
    Console().print(table)


# --- files ----------------------------------------------------------------------------


def _cell(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return repr(v)
    return str(v)


def _csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_cell(r.get(c, "")) for c in columns])
    return buf.getvalue()


def series_matrix(
    result: ExperimentResult, label: str, scenario: str, metric: str
) -> np.ndarray[Any, Any]:
    runs = result.get(label, scenario)
    length = max((len(r.series.get(metric, [])) for r in runs), default=0)
    out = np.full((len(runs), length), np.nan)
    for i, r in enumerate(runs):
        values = [math.nan if v is None else v for v in r.series.get(metric, [])]
        out[i, : len(values)] = values
    return out


def save_png(fig: Any, path: Path) -> None:
    fig.savefig(path, format="png", dpi=100, metadata={"Software": None})


def plot_precision_by_round(
    result: ExperimentResult, scenario: str, path: Path, metric: str | None = None
) -> None:
    """Mean ``metric`` (default: the presentation's key metric) per round per cell, with a
    ±1 SD band across seeds, on a [0, 1] axis."""
    plot_by_round(result, scenario, path, metric)


def plot_by_round(
    result: ExperimentResult,
    scenario: str,
    path: Path,
    metric: str | None = None,
    *,
    ylabel: str | None = None,
    share: bool = True,
    xlabel: str = "round",
    leave_out: tuple[str, ...] = (),
) -> None:
    """Mean ``metric`` per round per cell (every cell of ``scenario`` whose label does not
    start with one of ``leave_out``), with a ±1 SD band across seeds; ``share``: the metric
    is a share, drawn on [0, 1] with its band clipped there."""
    from matplotlib.figure import Figure

    exp = result.experiment
    key = metric or exp.presentation.key_metric
    cells = [c for c in exp.cells if c.runs_in(scenario) and not c.label.startswith(leave_out)]
    fig = Figure(figsize=(9, 5.5))
    ax = fig.add_subplot()
    for colour, cell in zip(palette(len(cells)), cells, strict=True):
        x = series_matrix(result, cell.label, scenario, key)
        if x.size == 0:
            continue
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(x, axis=0)
            sd = np.nanstd(x, axis=0, ddof=1) if x.shape[0] > 1 else np.zeros_like(mean)
        rounds = np.arange(1, mean.size + 1)
        ax.plot(rounds, mean, color=colour, linewidth=1.3, label=cell.label)
        lo, hi = mean - sd, mean + sd
        if share:
            lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
        ax.fill_between(rounds, lo, hi, color=colour, alpha=0.15, linewidth=0)
    seeds = len(exp.seeds)
    ax.set_title(f"{exp.name}: {key} by {xlabel}, {scenario} (mean ± 1 sd, {seeds} seeds)")
    if share:
        ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel or exp.presentation.key_axis)
    ax.grid(alpha=0.3)
    ncol = 2 if len(cells) > 6 else 1
    if share:
        ax.legend(fontsize=7, loc="lower right", ncol=ncol)
    else:
        ax.legend(fontsize=7, loc="upper left", ncol=ncol)
    fig.tight_layout()
    save_png(fig, path)


def plot_degradation(result: ExperimentResult, path: Path) -> None:
    from matplotlib.figure import Figure

    exp = result.experiment
    key = exp.presentation.key_metric
    start = exp.presentation.degradation_from or exp.scenarios[0]
    scenarios = [start, *(s for s in exp.scenarios if s != start)]
    labels = exp.labels
    fig = Figure(figsize=(max(7.0, 0.9 * len(labels) + 2), 5.5))
    ax = fig.add_subplot()
    width = 0.8 / len(scenarios)
    x = np.arange(len(labels))
    colours = palette(len(scenarios))
    for k, (s, colour) in enumerate(zip(scenarios, colours, strict=True)):
        stats = [summary(result, label, s, key) for label in labels]
        means = np.array([st.mean for st in stats])
        sds = np.array([0.0 if math.isnan(st.sd) else st.sd for st in stats])
        ax.bar(x + (k - (len(scenarios) - 1) / 2) * width, means, width, yerr=sds,
               color=colour, label=s, capsize=2)  # fmt: skip
    for i, label in enumerate(labels):
        base = summary(result, label, start, key).mean
        drops = [base - summary(result, label, s, key).mean for s in scenarios[1:]]
        text = "\n".join(
            f"−{d:.3f}" if d >= 0 else f"+{-d:.3f}" for d in drops if not math.isnan(d)
        )
        if text:
            ax.annotate(text, (x[i], 1.0), ha="center", va="bottom", fontsize=7,
                        xycoords=("data", "axes fraction"))  # fmt: skip
    ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(f"final {key} (mean ± 1 sd)")
    ax.set_title(f"{exp.name}: final {key} by scenario (drop from {start} above)", pad=24)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_png(fig, path)


def palette(n: int) -> list[Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def write_report(result: ExperimentResult, out: Path) -> list[Path]:
    """Write every file of the module doc into ``out`` (created); return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def text(name: str, content: str) -> None:
        path = out / name
        path.write_text(content, encoding="utf-8", newline="\n")
        written.append(path)

    summary_cols = ["label", "scenario", "metric", "mean", "sd", "n", "vs", "diff", "p", "d_z",
                    "ci_low", "ci_high", "n_pairs"]  # fmt: skip
    text("results.csv", _csv(summary_rows(result), summary_cols))
    compare_cols = ["label", "vs", "scenario", "metric", *_PAIRED_FIELDS]
    text("comparisons.csv", _csv(comparison_rows(result), compare_cols))
    text("runs.csv", _csv(run_rows(result), ["label", "scenario", "seed", *result.metrics()]))
    text("results.json", json.dumps(results_doc(result), indent=2, allow_nan=False) + "\n")
    text("results.md", markdown(result))
    look = result.experiment.presentation
    written += plot_each_scenario(result, out, f"{look.key_metric}_by_round", plot_by_round)
    start = look.degradation_from
    if start in result.experiment.scenarios and len(result.experiment.scenarios) > 1:
        path = out / "degradation.png"
        plot_degradation(result, path)
        written.append(path)
    if look.plots is not None:
        written += look.plots(result, out)
    return written


#: Draws one plot of ``result`` in ``scenario`` into ``path``.
ScenarioPlot = Callable[[ExperimentResult, str, Path], None]


def plot_each_scenario(
    result: ExperimentResult, out: Path, stem: str, draw: ScenarioPlot
) -> list[Path]:
    """``draw`` once per scenario into ``<out>/<stem>_<scenario>.png``; the paths."""
    written = []
    for scenario in result.experiment.scenarios:
        path = out / f"{stem}_{file_part(scenario)}.png"
        draw(result, scenario, path)
        written.append(path)
    return written


def file_part(name: str) -> str:
    """``name`` safe in a file name (scenario names such as ``adv=0.20``)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


__all__ = [
    "compare",
    "comparison_rows",
    "file_part",
    "jsonable",
    "markdown",
    "md_table",
    "mean_with_ci",
    "number_text",
    "palette",
    "plot_by_round",
    "plot_degradation",
    "plot_each_scenario",
    "plot_precision_by_round",
    "print_summary",
    "results_doc",
    "run_rows",
    "save_png",
    "series_matrix",
    "single_doc",
    "summary",
    "summary_rows",
    "write_report",
]
