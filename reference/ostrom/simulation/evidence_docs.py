"""docs/evaluation.md's result tables, computed from the committed evidence (issue 43, items
2 and 5).

Every table is a pure function of ``evaluation/<experiment>/runs.csv`` and ``meta.json``
(``ostrom.simulation.evidence``).  ``ostrom simulate --tables`` writes them all to
``evaluation/tables.md``, each between ``BEGIN table: evaluation-NAME`` and ``END table:``
markers; ``ostrom docs`` copies each into docs/evaluation.md's generated block of that
name (the codegen registry's ``evaluation-*`` entries; codegen does not import the
evaluation model, it reads the file).
Two checks hold the chain: property_tests/simulation/test_simulation_evidence.py fails
when ``evaluation/tables.md`` differs from what the evidence gives, and ``ostrom docs
--check`` when docs/evaluation.md differs from ``evaluation/tables.md``.

The statistics are the reviewers' (``ostrom.simulation.stats``): mean ± SD over seeds; a
paired difference with its 95% paired-bootstrap CI and the sign-flip permutation p-value,
Holm-adjusted across every comparison of its table (both scenarios: one family per
table); a cell whose outcomes look bimodal (Sarle's coefficient above 5/9) is marked † and
reported with its median and range as well, since its mean describes no seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ostrom.simulation.evidence import EVIDENCE_DIR, Evidence, EvidenceError, load_evidence
from ostrom.simulation.forgetting.config import REFERENCE as FORGETTING_REFERENCE
from ostrom.simulation.forgetting.experiment import CONSENSUS_SCENARIO as CONSENSUS
from ostrom.simulation.forgetting.experiment import MAIN_SCENARIOS as FORGETTING_MAIN_SCENARIOS
from ostrom.simulation.forgetting.report import PAPER as FORGETTING_PAPER
from ostrom.simulation.stats import BIMODAL_BC, bimodality, holm, quantiles, robust, summarize

#: The file the tables are written to, relative to the repository root.
TABLES: Final = EVIDENCE_DIR / "tables.md"
#: Block names are ``evaluation-<name>`` in both files.
PREFIX: Final = "evaluation-"

#: The Deliberative Curation paper's own figures (its §5.5-5.6, Table 2), the only numbers
#: of these tables that do not come from the evidence.
PAPER_PRECISION: Final = {
    ("protocol", "moderate"): 0.826,
    ("protocol", "high"): 0.807,
    ("majority", "moderate"): 0.791,
    ("majority", "high"): 0.740,
}

#: Display names of the paper experiment's cells, in table order.
NAMES: Final = {
    "protocol": "protocol",
    "majority": "majority, concealed simultaneous votes (the reference)",
    "weighted_majority": "weighted majority, concealed",
    "majority_open": "majority, open sequential votes (the weaker variant)",
    "single_curator": "single curator",
    "ungoverned": "ungoverned",
    "weighted_no_deliberation": "weighted, no deliberation",
    "protocol+no_commit_reveal": "protocol without commit-reveal",
    "protocol+no_reputation": "protocol without reputation (weights, tiers, recruitment)",
    "protocol+no_reputation_weighting": "protocol without reputation weighting only",
    "protocol+no_sanctions": "protocol without sanctions",
    "protocol+no_farming_cap": "protocol without farming cap",
}


def _name(label: str) -> str:
    return NAMES.get(label, label)


def _num(v: float, signed: bool = False, digits: int = 3) -> str:
    if math.isnan(v):
        return "—"
    text = f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"
    return text.replace("-", "−")


def _p(p: float) -> str:
    if math.isnan(p):
        return "—"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _cell(values: Sequence[float], digits: int = 3) -> str:
    """Mean ± SD; for a bimodal outcome also † median [min, max]."""
    s = summarize(values)
    if s.n == 0:
        return "—"

    def num(v: float) -> str:
        return _num(v, digits=digits)

    text = num(s.mean) if s.n < 2 or s.sd == 0 else f"{num(s.mean)} ± {num(s.sd)}"
    bc = bimodality(values)
    if not math.isnan(bc) and bc > BIMODAL_BC:
        lo, _, med, _, hi = quantiles(values)
        text += f" † (median {num(med)}, {num(lo)}–{num(hi)})"
    return text


@dataclass(frozen=True)
class _Comparison:
    """One row-and-column of a comparison table: a − b in one scenario."""

    a: str
    b: str
    scenario: str
    diff: float
    lo: float
    hi: float
    p: float
    n: int


def _compare(ev: Evidence, pairs: Sequence[tuple[str, str, str]], metric: str) -> list[_Comparison]:
    """(a, b, scenario) -> the robust comparison of a − b, Holm-adjusted across ``pairs``."""
    out = []
    for a, b, scenario in pairs:
        r = robust(ev.values(a, scenario, metric), ev.values(b, scenario, metric))
        out.append(_Comparison(a, b, scenario, r.diff, r.ci_low, r.ci_high, r.p, r.n))
    adjusted = holm([c.p for c in out])
    return [
        _Comparison(c.a, c.b, c.scenario, c.diff, c.lo, c.hi, p, c.n)
        for c, p in zip(out, adjusted, strict=True)
    ]


def _diff_text(c: _Comparison, digits: int = 3) -> str:
    def num(v: float) -> str:
        return _num(v, True, digits)

    return (
        f"{num(c.diff)} [{num(c.lo)}, {num(c.hi)}], p_Holm {_p(c.p)}"
        if not math.isnan(c.lo)
        else num(c.diff)
    )


def _comparison_table(
    ev: Evidence,
    rows: Sequence[tuple[str, str, str]],
    metric: str,
    scenarios: Sequence[str],
    digits: int = 3,
) -> list[str]:
    """Rows (title, a, b): a − b per scenario, one Holm family for the whole table."""
    pairs = [(a, b, s) for _, a, b in rows for s in scenarios if ev.has(a, s) and ev.has(b, s)]
    found = {(c.a, c.b, c.scenario): c for c in _compare(ev, pairs, metric)}
    lines = [
        "| comparison | " + " | ".join(scenarios) + " |",
        "|---|" + "---|" * len(scenarios),
    ]
    for title, a, b in rows:
        cells = [
            _diff_text(found[(a, b, s)], digits) if (a, b, s) in found else "" for s in scenarios
        ]
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return lines


def _seeds_note(ev: Evidence) -> str:
    seeds = ev.seeds
    commit = str(ev.meta.get("commit", "unknown"))[:10]
    dirty = " (with uncommitted changes)" if ev.meta.get("uncommitted_changes") else ""
    return (
        f"*Evidence: `evaluation/{ev.directory or ev.name}/` — {ev.meta.get('runs')} runs, seeds "
        f"{seeds[0]}..{seeds[-1]}, commit `{commit}`{dirty}; `{' '.join(ev.meta['command'])}`.*"
    )


# --- the paper experiment ----------------------------------------------------------------


def paper_precision(ev: Evidence) -> list[str]:
    lines = [
        "| configuration | ours, moderate | ours, high | paper, moderate | paper, high |",
        "|---|---|---|---|---|",
    ]
    for label in ev.labels:
        ours = [_cell(ev.values(label, s, "precision")) for s in ("moderate", "high")]
        paper = [
            _num(PAPER_PRECISION[(label, s)]) if (label, s) in PAPER_PRECISION else ""
            for s in ("moderate", "high")
        ]
        lines.append(f"| {_name(label)} | " + " | ".join([*ours, *paper]) + " |")
    return [*lines, "", _seeds_note(ev)]


def paper_comparisons(ev: Evidence) -> list[str]:
    rows = [
        ("protocol − majority (concealed)", "protocol", "majority"),
        ("protocol − weighted majority", "protocol", "weighted_majority"),
        (
            "protocol − majority (open, the first evaluation's baseline)",
            "protocol",
            "majority_open",
        ),
        (
            "majority (open) − majority (concealed): the baseline choice",
            "majority_open",
            "majority",
        ),
        ("weighted majority − majority", "weighted_majority", "majority"),
        ("without commit-reveal − protocol", "protocol+no_commit_reveal", "protocol"),
        ("without reputation − protocol", "protocol+no_reputation", "protocol"),
        (
            "without reputation weighting only − protocol",
            "protocol+no_reputation_weighting",
            "protocol",
        ),
        (
            "without reputation − without weighting only: the ablation choice",
            "protocol+no_reputation",
            "protocol+no_reputation_weighting",
        ),
        ("without sanctions − protocol", "protocol+no_sanctions", "protocol"),
        ("without farming cap − protocol", "protocol+no_farming_cap", "protocol"),
        ("weighted, no deliberation − protocol", "weighted_no_deliberation", "protocol"),
    ]
    return _comparison_table(ev, rows, "precision", ("moderate", "high"))


def paper_choices(ev: Evidence) -> list[str]:
    """How much of the headline each modelling choice is: the share of the protocol's
    advantage over the open majority that the concealed majority already has, and the
    ablation's effect with reputation removed everywhere against weights only."""
    lines = ["| choice | moderate | high |", "|---|---|---|"]

    def mean(label: str, s: str) -> float:
        return summarize(ev.values(label, s, "precision")).mean

    shares, abl = [], []
    for s in ("moderate", "high"):
        old = mean("protocol", s) - mean("majority_open", s)
        new = mean("protocol", s) - mean("majority", s)
        shares.append(
            f"{_num(old, True)} → {_num(new, True)}: "
            f"{_num(100 * (old - new) / old, digits=0)}% of it was the baseline's ballot"
            if old
            else "—"
        )
        weights = mean("protocol+no_reputation_weighting", s) - mean("protocol", s)
        full = mean("protocol+no_reputation", s) - mean("protocol", s)
        abl.append(f"{_num(weights, True)} (weights only) → {_num(full, True)} (everywhere)")
    lines.append("| protocol − majority: open → concealed ballot | " + " | ".join(shares) + " |")
    lines.append("| removing reputation: weights only → everywhere | " + " | ".join(abl) + " |")
    return lines


def paper_other(ev: Evidence) -> list[str]:
    metrics = ("recall", "gini", "fpr", "separation")
    lines = [
        "| configuration | scenario | " + " | ".join(metrics) + " |",
        "|---|---|" + "---|" * len(metrics),
    ]
    for label in ev.labels:
        for s in ("moderate", "high"):
            vals = [summarize(ev.values(label, s, m)).mean for m in metrics]
            lines.append(
                f"| {_name(label)} | {s} | "
                + " | ".join(
                    _num(v, signed=m == "separation") for v, m in zip(vals, metrics, strict=True)
                )
                + " |"
            )
    return lines


# --- (a) ground-truth feedback -----------------------------------------------------------


def truth_table(ev: Evidence) -> list[str]:
    lines = [
        "| configuration | moderate, decision | moderate, truth | high, decision | high, truth |",
        "|---|---|---|---|---|",
    ]
    for label in ("protocol", "protocol+no_commit_reveal", "majority"):
        cells = [
            _cell(ev.values(f"{label}{tag}", s, "precision"))
            for s in ("moderate", "high")
            for tag in ("", " [truth]")
        ]
        lines.append(f"| {_name(label)} | " + " | ".join(cells) + " |")
    rows = [
        ("protocol − majority, decision feedback", "protocol", "majority"),
        ("protocol − majority, truth feedback", "protocol [truth]", "majority [truth]"),
        ("protocol: truth − decision", "protocol [truth]", "protocol"),
        (
            "without commit-reveal − protocol, decision",
            "protocol+no_commit_reveal",
            "protocol",
        ),
        (
            "without commit-reveal − protocol, truth",
            "protocol+no_commit_reveal [truth]",
            "protocol [truth]",
        ),
    ]
    return [
        *lines,
        "",
        *_comparison_table(ev, rows, "precision", ("moderate", "high")),
        "",
        _seeds_note(ev),
    ]


# --- (b) a coordinated bloc --------------------------------------------------------------


def bloc_table(ev: Evidence) -> list[str]:
    scen = ("bloc", "bloc_high")
    lines = [
        "| configuration | `bloc`: precision | separation | seeds captured "
        "| `bloc_high`: precision | separation | seeds captured |",
        "|---|---|---|---|---|---|---|",
    ]
    for label in ev.labels:
        cells = []
        for s in scen:
            sep = ev.values(label, s, "separation")
            captured = sum(1 for v in sep if not math.isnan(v) and v < 0)
            cells += [
                _cell(ev.values(label, s, "precision")),
                _num(summarize(sep).mean, True),
                f"{captured} / {len(sep)}",
            ]
        lines.append(f"| {_name(label)} | " + " | ".join(cells) + " |")
    rows = [
        ("protocol − majority (concealed)", "protocol", "majority"),
        ("protocol − majority (open)", "protocol", "majority_open"),
        ("without reputation − protocol", "protocol+no_reputation", "protocol"),
        ("without commit-reveal − protocol", "protocol+no_commit_reveal", "protocol"),
        ("ground-truth feedback − protocol", "protocol [truth]", "protocol"),
    ]
    return [
        *lines,
        "",
        *_comparison_table(ev, rows, "precision", scen),
        "",
        _seeds_note(ev),
    ]


# --- (c) sanctions -----------------------------------------------------------------------


def _range(values: Sequence[float], digits: int = 1) -> str:
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return "—"
    lo, hi = min(finite), max(finite)
    return (
        _num(lo, digits=digits)
        if round(lo, digits) == round(hi, digits)
        else (f"{_num(lo, digits=digits)}–{_num(hi, digits=digits)}")
    )


def _count_mean(ev: Evidence, label: str, scenario: str, metric: str) -> float:
    """Mean over seeds of ``metric``; a count by category (``sanctioned.broken``) that no
    run of the experiment had is 0, as ``engine.metric_value`` has it, not missing."""
    if metric not in ev.metrics:
        prefix = metric.rpartition(".")[0]
        return 0.0 if prefix and any(m.startswith(prefix + ".") for m in ev.metrics) else math.nan
    return summarize(ev.values(label, scenario, metric)).mean


def sanctions_table(ev: Evidence) -> list[str]:
    cols = (
        ("lazy agents at σ2+", "sanctioned.lazy", 1),
        ("broken quarantined", "quarantined.broken", 1),
        ("broken punished (σ2+)", "sanctioned.broken", 1),
        ("honest at σ1+", "warned_or_worse.honest", 1),
        ("honest FPR (σ2+)", "fpr", 3),
        ("first sanction (round)", "first_sanction_round", 0),
        ("precision", "precision", 3),
    )
    lines = [
        "| mix, horizon | lazy reveal | " + " | ".join(c[0] for c in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    groups: dict[tuple[str, int, float], list[str]] = {}
    for label in ev.labels:
        cfg = ev.config(label)
        for s in ev.scenarios:
            groups.setdefault((s, int(cfg["rounds"]), float(cfg["lazy_reveal"])), []).append(label)
    for (s, rounds, lazy), labels in groups.items():
        cells = [_range([_count_mean(ev, lab, s, m) for lab in labels], d) for _, m, d in cols]
        lines.append(f"| {s}, {rounds:,} | {lazy:g} | " + " | ".join(cells) + " |")
    return [
        *lines,
        "",
        "(Means over seeds; ranges over the broken agents' malfunction rates.)",
        "",
        _seeds_note(ev),
    ]


# --- (d) sensitivity ---------------------------------------------------------------------


@dataclass(frozen=True)
class Swing:
    """The headline (protocol − majority precision) at one level of one fixed choice."""

    factor: str
    level: float
    scenario: str
    diff: float
    lo: float
    hi: float


def sensitivity_swings(ev: Evidence) -> list[Swing]:
    """Every (factor, level, scenario) of the sensitivity experiment, with the base
    (factor ``""``) first in each scenario."""
    out: list[Swing] = []
    for s in ev.scenarios:
        r = robust(ev.values("protocol", s, "precision"), ev.values("majority", s, "precision"))
        out.append(Swing("", math.nan, s, r.diff, r.ci_low, r.ci_high))
        for label in ev.labels:
            if not label.startswith("protocol "):
                continue
            factor, _, level = label.removeprefix("protocol ").partition("=")
            r = robust(
                ev.values(label, s, "precision"),
                ev.values(f"majority {factor}={level}", s, "precision"),
            )
            out.append(Swing(factor, float(level), s, r.diff, r.ci_low, r.ci_high))
    return out


def sensitivity_table(ev: Evidence) -> list[str]:
    swings = sensitivity_swings(ev)
    lines = [
        "| scenario | fixed choice (default) | low value: protocol − majority | "
        "high value: protocol − majority | swing |",
        "|---|---|---|---|---|",
    ]
    for s in ev.scenarios:
        base = next(w for w in swings if w.scenario == s and not w.factor)
        lines.append(
            f"| {s} | none (every default) | {_num(base.diff, True)} "
            f"[{_num(base.lo, True)}, {_num(base.hi, True)}] | | |"
        )
        factors = dict.fromkeys(w.factor for w in swings if w.scenario == s and w.factor)
        rows = []
        for f in factors:
            lo, hi = sorted(
                (w for w in swings if w.scenario == s and w.factor == f), key=lambda w: w.level
            )
            default = ev.config("protocol").get(f)
            rows.append((abs(hi.diff - lo.diff), f, default, lo, hi))
        for swing, f, default, lo, hi in sorted(rows, key=lambda r: -r[0]):
            lines.append(
                f"| {s} | `{f}` ({default:g}) | {lo.level:g}: {_num(lo.diff, True)} "
                f"[{_num(lo.lo, True)}, {_num(lo.hi, True)}] | {hi.level:g}: "
                f"{_num(hi.diff, True)} [{_num(hi.lo, True)}, {_num(hi.hi, True)}] | "
                f"{_num(swing)} |"
            )
    return [*lines, "", _seeds_note(ev)]


def tornado_plot(ev: Evidence, path: Path) -> None:
    """The tornado of ``sensitivity_table``: per scenario, one bar per fixed choice from
    the headline at its low value to the headline at its high value, widest first, around
    the headline at the defaults."""
    from matplotlib.figure import Figure

    from ostrom.simulation.report import save_png

    swings = sensitivity_swings(ev)
    fig = Figure(figsize=(10, 4.5))
    for i, s in enumerate(ev.scenarios):
        ax = fig.add_subplot(1, len(ev.scenarios), i + 1)
        base = next(w for w in swings if w.scenario == s and not w.factor)
        factors = dict.fromkeys(w.factor for w in swings if w.scenario == s and w.factor)
        bars = []
        for f in factors:
            lo, hi = sorted(
                (w for w in swings if w.scenario == s and w.factor == f), key=lambda w: w.level
            )
            bars.append((abs(hi.diff - lo.diff), f, lo, hi))
        bars.sort(key=lambda b: b[0])
        for y, (_, _f, lo, hi) in enumerate(bars):
            ax.barh(y, lo.diff - base.diff, left=base.diff, color="#4c72b0", height=0.6)
            ax.barh(y, hi.diff - base.diff, left=base.diff, color="#dd8452", height=0.6)
        ax.set_yticks(range(len(bars)), [b[1] for b in bars], fontsize=8)
        ax.axvline(base.diff, color="black", linewidth=1)
        ax.set_title(f"{s}: protocol − majority precision", fontsize=9)
        ax.set_xlabel("blue: low value, orange: high value", fontsize=8)
        ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    save_png(fig, path)


# --- update plasticity -------------------------------------------------------------------

PLASTICITY_MECHANISMS: Final = ("protocol", "majority", "last_writer_wins", "latest_stable")
PLASTICITY_COUNTS: Final = (0, 1, 2, 4, 8)


def _drop(values: Sequence[float]) -> str:
    """Mean [95% bootstrap CI] of per-seed drops (a one-sample CI: the paired comparison
    of the drops with zero)."""
    r = robust(values, [0.0] * len(values))
    if math.isnan(r.ci_low):
        return _num(r.diff, digits=2)
    return f"{_num(r.diff, digits=2)} [{_num(r.ci_low, digits=2)}, {_num(r.ci_high, digits=2)}]"


def plasticity_by_k(ev: Evidence) -> list[str]:
    """No adversaries, conflicts after the valid update: plasticity by kind and k."""
    s = "adv=0.00"
    lines = [
        "| mechanism | same-slot k = 0 / 1 / 2 / 4 / 8 | repeated k = 0 / 1 / 2 / 4 / 8 "
        "| unrelated k = 8 | drop |",
        "|---|---|---|---|---|",
    ]
    for mech in PLASTICITY_MECHANISMS:
        label = f"{mech} [after]"
        if not ev.has(label, s):
            continue

        def row(kind: str, counts: Sequence[int], label: str = label) -> str:
            return " / ".join(
                _num(_mean(ev.values(label, s, f"plasticity.{kind}.k{k}")), digits=2)
                for k in counts
            )

        drop = _drop(ev.values(label, s, "plasticity_drop"))
        lines.append(
            f"| {mech} | {row('same_slot', PLASTICITY_COUNTS)} | "
            f"{row('repeated', PLASTICITY_COUNTS)} | {row('unrelated', (8,))} | {drop} |"
        )
    return [*lines, "", _seeds_note(ev)]


def plasticity_controls(ev: Evidence) -> list[str]:
    """The drop (k = 0 minus k = 8) in each condition, by mechanism and adversary share."""
    conditions = ("after", "before", "transient")
    lines = ["| mechanism | adv | " + " | ".join(conditions) + " |", "|---|---|---|---|---|"]
    for mech in PLASTICITY_MECHANISMS:
        for s in ("adv=0.00", "adv=0.20"):
            cells = [
                _drop(ev.values(f"{mech} [{c}]", s, "plasticity_drop"))
                if ev.has(f"{mech} [{c}]", s)
                else ""
                for c in conditions
            ]
            if any(cells):
                lines.append(f"| {mech} | {s[4:]} | " + " | ".join(cells) + " |")
    return [*lines, "", _seeds_note(ev)]


def plasticity_threshold(ev: Evidence) -> list[str]:
    """The protocol, conflicts after the valid update, by adversary share."""
    lines = [
        "| adversary share | k = 0 | k = 8 same-slot / repeated | seeds < 0.5 at k = 0 "
        "| before, k = 0 | wrong adoption, same-slot k = 8 |",
        "|---|---|---|---|---|---|",
    ]
    scenarios = sorted(
        {sc for (label, sc) in ev.rows if label == "protocol [after]"}, key=lambda x: x
    )
    for s in scenarios:
        k0 = ev.values("protocol [after]", s, "plasticity_k0")
        r = robust(k0, [0.0] * len(k0))
        k0_text = (
            f"{_num(r.diff, digits=2)} [{_num(r.ci_low, digits=2)}, {_num(r.ci_high, digits=2)}]"
        )
        k8 = " / ".join(
            _num(_mean(ev.values("protocol [after]", s, f"plasticity.{kind}.k8")), digits=2)
            for kind in ("same_slot", "repeated")
        )
        low = sum(1 for v in k0 if v < 0.5)
        before = (
            _num(_mean(ev.values("protocol [before]", s, "plasticity_k0")), digits=2)
            if ev.has("protocol [before]", s)
            else "—"
        )
        wrong = _num(
            _mean(ev.values("protocol [after]", s, "wrong_adoption.same_slot.k8")), digits=2
        )
        lines.append(f"| {s[4:]} | {k0_text} | {k8} | {low}/{len(k0)} | {before} | {wrong} |")
    return [*lines, "", _seeds_note(ev)]


# --- plasticity at retrieval -------------------------------------------------------------

#: The retrieval experiment's stores and conditions, in table order.
RETRIEVAL_STORES: Final = ("ostrom", "ungoverned", "add_only_recency", "last_writer_wins")
RETRIEVAL_CONDITIONS: Final = ("after", "before", "transient", "fixed")
RETRIEVAL_SCENARIOS: Final = ("adv=0.00", "adv=0.20")


def _mean(values: Sequence[float]) -> float:
    s = summarize(values)
    return s.mean if s.n else math.nan


def retrieval_table(ev: Evidence) -> list[str]:
    """The decomposition, conflicts after the valid update: is the current value
    retrieved (hit@k), and does each reader answer with it, per mode."""
    cols = (
        ("lexical: retrieved", "lexical.hit"),
        ("lexical: top hit right", "lexical.top.acc"),
        ("lexical: store's reader right", "lexical.store.acc"),
        ("dense: retrieved", "dense.hit"),
        ("dense: store's reader right", "dense.store.acc"),
        ("with history: top hit right", "history.top.acc"),
        ("with history: store's reader right", "history.store.acc"),
    )
    lines = [
        "| store | adversaries | " + " | ".join(c for c, _ in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for store in RETRIEVAL_STORES:
        label = f"{store} [after]"
        for s in RETRIEVAL_SCENARIOS:
            if not ev.has(label, s):
                continue
            cells = [_cell(ev.values(label, s, m)) for _, m in cols]
            lines.append(f"| {store} | {s[4:]} | " + " | ".join(cells) + " |")
    return [*lines, "", _seeds_note(ev)]


def retrieval_by_k(ev: Evidence) -> list[str]:
    """The store's reader by interference count (lexical, after), and the drop from
    k = 0 to the largest k (both kinds pooled) with its paired CI."""
    kinds = ("same_slot", "repeated")
    counts = (0, 1, 2, 4, 8)
    lines = [
        "| store | adversaries | same-slot k = 0 / 1 / 2 / 4 / 8 | repeated k = 0 / 1 / 2 / 4 / 8 "
        "| drop k = 0 → 8 |",
        "|---|---|---|---|---|",
    ]
    for store in RETRIEVAL_STORES:
        label = f"{store} [after]"
        for s in RETRIEVAL_SCENARIOS:
            if not ev.has(label, s):
                continue
            parts = []
            for kind in kinds:
                means = [
                    _mean(ev.values(label, s, f"lexical.store.acc.{kind}.k{k}")) for k in counts
                ]
                parts.append(" / ".join(_num(m, digits=2) for m in means))

            def pooled(k: int, label: str = label, s: str = s) -> list[float]:
                a, b = (ev.values(label, s, f"lexical.store.acc.{kd}.k{k}") for kd in kinds)
                return [(x + y) / 2 for x, y in zip(a, b, strict=True)]

            r = robust(pooled(0), pooled(8))
            drop = (
                f"{_num(r.diff, True, 2)} [{_num(r.ci_low, True, 2)}, {_num(r.ci_high, True, 2)}]"
                if not math.isnan(r.ci_low)
                else _num(r.diff, True, 2)
            )
            lines.append(f"| {store} | {s[4:]} | " + " | ".join(parts) + f" | {drop} |")
    return [*lines, "", _seeds_note(ev)]


def retrieval_controls(ev: Evidence) -> list[str]:
    """The store's reader (lexical) in every condition, and ostrom minus each baseline
    per condition (one Holm family: every row, both scenarios)."""
    lines = [
        "| store | adversaries | " + " | ".join(RETRIEVAL_CONDITIONS) + " |",
        "|---|---|" + "---|" * len(RETRIEVAL_CONDITIONS),
    ]
    for store in RETRIEVAL_STORES:
        for s in RETRIEVAL_SCENARIOS:
            cells = [
                _cell(ev.values(f"{store} [{c}]", s, "lexical.store.acc"))
                if ev.has(f"{store} [{c}]", s)
                else ""
                for c in RETRIEVAL_CONDITIONS
            ]
            if any(cells):
                lines.append(f"| {store} | {s[4:]} | " + " | ".join(cells) + " |")
    rows = [
        (f"ostrom − {b}, {c}", f"ostrom [{c}]", f"{b} [{c}]")
        for c in RETRIEVAL_CONDITIONS
        for b in RETRIEVAL_STORES[1:]
    ]
    return [
        *lines,
        "",
        *_comparison_table(ev, rows, "lexical.store.acc", RETRIEVAL_SCENARIOS),
        "",
        _seeds_note(ev),
    ]


# --- collective forgetting ---------------------------------------------------------------

#: Display names of the forgetting experiment's cells (the others show their label).
FORGETTING_NAMES: Final = {
    FORGETTING_REFERENCE: f"{FORGETTING_REFERENCE} (reference)",
    "protocol": "protocol (vote at C < θ, as documented)",
    "lru": "lru (the reference's footprint)",
}
#: The per-scenario table's columns: (header, metric, decimals).
FORGETTING_COLUMNS: Final = (
    ("reduction", "reduction", 3),
    ("accuracy", "accuracy", 3),
    ("precision", "precision", 3),
    ("recall", "recall", 3),
    ("wrongly forgotten", "wrongly_forgotten", 1),
    ("misses", "misses", 1),
)
#: The consensus cells' faults, in table order, with their names in the tables.
FORGETTING_FAULTS: Final = (
    ("silent-backup", "silent backup", "silent backup"),
    ("silent-primary", "silent primary", "silent coordinator"),
    ("equivocating", "equivocating replica", "equivocating agent"),
)


def _fname(label: str) -> str:
    return FORGETTING_NAMES.get(label, label)


def _seeded(values: Sequence[float], digits: int) -> str:
    """``_cell``, saying over how many seeds when some runs do not measure the metric
    (precision is NaN in a run that forgets nothing)."""
    known = sum(1 for v in values if not math.isnan(v))
    text = _cell(values, digits)
    return text if known in (0, len(values)) else f"{text} ({known} of {len(values)} seeds)"


def _mean_ci(values: Sequence[float], digits: int = 3, percent: bool = False) -> str:
    """Mean [95% bootstrap CI of the mean] (``robust`` against zero: the seeds resampled);
    as a percentage with ``percent``."""
    scale, unit = (100.0, "%") if percent else (1.0, "")
    r = robust([v * scale for v in values], [0.0] * len(values))
    mean = _num(r.diff, digits=digits) + (unit if not math.isnan(r.diff) else "")
    if math.isnan(r.ci_low):
        return mean
    return f"{mean} [{_num(r.ci_low, digits=digits)}, {_num(r.ci_high, digits=digits)}]"


def _percent(values: Sequence[float]) -> str:
    m = _mean(values)
    return "—" if math.isnan(m) else f"{_num(100 * m, digits=1)}%"


def _per_run(ev: Evidence, scenario: str) -> str:
    """What the reference admitted per run in ``scenario``: every mechanism of a seed admits
    the same items."""
    admitted = ev.values(FORGETTING_REFERENCE, scenario, "admitted")
    useful = ev.values(FORGETTING_REFERENCE, scenario, "admitted_by_label.useful")
    share = _mean([u / a for u, a in zip(useful, admitted, strict=True) if a])
    agents = _mean(ev.values(FORGETTING_REFERENCE, scenario, "agents"))
    return (
        f"Scenario `{scenario}`: {agents:.0f} agents; {_mean(admitted):.0f} items admitted per "
        f"run on average, {100 * share:.1f}% of them still useful at the last epoch (so "
        f"keeping everything scores that accuracy)."
    )


def _forgetting_scenario(scenario: str) -> Callable[[Evidence], list[str]]:
    def render(ev: Evidence) -> list[str]:
        lines = [
            "| configuration | " + " | ".join(h for h, _, _ in FORGETTING_COLUMNS) + " |",
            "|---|" + "---|" * len(FORGETTING_COLUMNS),
        ]
        for label in ev.labels:
            if ev.has(label, scenario):
                cells = [
                    _seeded(ev.values(label, scenario, m), d) for _, m, d in FORGETTING_COLUMNS
                ]
                lines.append(f"| {_fname(label)} | " + " | ".join(cells) + " |")
        return [*lines, "", _per_run(ev, scenario), "", _seeds_note(ev)]

    render.__name__ = f"forgetting_{scenario}"
    render.__doc__ = f"Every cell in scenario ``{scenario}``: mean ± SD over seeds."
    return render


def _vs_reference(ev: Evidence, metric: str, digits: int) -> list[str]:
    rows = [
        (f"{_fname(label)} − reference", label, FORGETTING_REFERENCE)
        for label in ev.labels
        if label != FORGETTING_REFERENCE
        and any(ev.has(label, s) for s in FORGETTING_MAIN_SCENARIOS)
    ]
    return [
        *_comparison_table(ev, rows, metric, FORGETTING_MAIN_SCENARIOS, digits),
        "",
        _seeds_note(ev),
    ]


def forgetting_accuracy_vs_reference(ev: Evidence) -> list[str]:
    """Each cell's accuracy minus the reference's, paired by seed (one Holm family)."""
    return _vs_reference(ev, "accuracy", 3)


def forgetting_wrong_vs_reference(ev: Evidence) -> list[str]:
    """Each cell's wrongly forgotten items minus the reference's (one Holm family)."""
    return _vs_reference(ev, "wrongly_forgotten", 1)


def _consensus_cells(ev: Evidence) -> list[tuple[str, str]]:
    """(label, name) of the consensus cells: PBFT per fault, then Algorithm 1 per fault."""
    pbft = [
        (f"{FORGETTING_REFERENCE} [pbft: {f}]", f"PBFT, {name}") for f, name, _ in FORGETTING_FAULTS
    ]
    alg1 = [(f"alg1 [{f}]", f"Algorithm 1, {name}") for f, _, name in FORGETTING_FAULTS]
    return [(label, name) for label, name in (*pbft, *alg1) if ev.has(label, CONSENSUS)]


def forgetting_consensus(ev: Evidence) -> list[str]:
    """Consensus success per fault, with what each fault cost."""
    s = CONSENSUS
    lines = [
        "| configuration | success, mean [95% CI] | worst seed | items per run | every request "
        "executed | REPL-1 | messages per command | final view | items split |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, name in _consensus_cells(ev):
        success = ev.values(label, s, "consensus_success")
        finite = [v for v in success if not math.isnan(v)]
        view = [v for v in ev.values(label, s, "consensus_final_view") if not math.isnan(v)]
        cells = [
            _mean_ci(success),
            _num(min(finite)) if finite else "—",
            _num(_mean(ev.values(label, s, "consensus_decisions")), digits=1),
            _flags(ev.values(label, s, "consensus_all_executed")),
            _flags(ev.values(label, s, "consensus_repl1")),
            _num(_mean(ev.values(label, s, "consensus_messages_per_command")), digits=1),
            _range(view, 0),
            _num(_mean(ev.values(label, s, "alg1_disagreements")), digits=1),
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ref = FORGETTING_REFERENCE
    forgotten = [
        a * r
        for a, r in zip(ev.values(ref, s, "admitted"), ev.values(ref, s, "reduction"), strict=True)
    ]
    pbft = [label for label, _ in _consensus_cells(ev) if "[pbft" in label]
    commands = _mean(ev.values(pbft[0], s, "consensus_commands")) if pbft else math.nan
    candidates = _mean(ev.values(pbft[0], s, "consensus_decisions")) if pbft else math.nan
    return [
        *lines,
        "",
        f"The workload: the reference's command log in `{s}`, {commands:,.0f} commands per run "
        f"on average, with {candidates:.1f} candidates (items that got a forget vote), of which "
        f"the local run forgot {_mean(forgotten):.1f}. Means over seeds; final view: the "
        f"honest replicas' highest view at the end, over the seeds; items split: Algorithm "
        f"1's items on which the honest agents decided differently.",
        "",
        _seeds_note(ev),
    ]


def _flags(values: Sequence[float]) -> str:
    """``all n`` when every run has the flag, ``—`` when none measures it, else ``k/n``."""
    got = [v for v in values if not math.isnan(v)]
    if not got:
        return "—"
    k = sum(v == 1.0 for v in got)
    return f"all {k}" if k == len(got) else f"{k}/{len(got)}"


def forgetting_paper(ev: Evidence) -> list[str]:
    """The Co-Forgetting paper's three figures beside ours (percent, mean [95% CI])."""
    ref = FORGETTING_REFERENCE
    columns = (
        (ref, "honest"),
        ("protocol", "honest"),
        (ref, "four"),
        ("protocol+no_floor [c≥α]", "four"),
    )
    lines = [
        "| figure | paper | reference, honest | as documented (vote at C < θ), honest "
        "| reference, four agents | without the floor, four agents |",
        "|---|---|---|---|---|---|",
    ]
    for metric, name in (("reduction", "memory reduction"), ("accuracy", "forgetting accuracy")):
        cells = [
            _mean_ci(ev.values(label, s, metric), 1, percent=True) if ev.has(label, s) else "—"
            for label, s in columns
        ]
        paper = f"{100 * FORGETTING_PAPER[metric]:.0f}%"
        lines.append(f"| {name} | {paper} | " + " | ".join(cells) + " |")
    pbft = [
        f"{name.removeprefix('PBFT, ')} "
        f"{_percent(ev.values(label, CONSENSUS, 'consensus_success'))}"
        for label, name in _consensus_cells(ev)
        if "[pbft" in label
    ]
    alg1 = [
        f"{name.removeprefix('Algorithm 1, ')} "
        f"{_percent(ev.values(label, CONSENSUS, 'consensus_success'))}"
        for label, name in _consensus_cells(ev)
        if label.startswith("alg1")
    ]
    lines.append(
        f"| consensus success, f = 1 of 4 | {100 * FORGETTING_PAPER['consensus_success']:.0f}% "
        f"| PBFT ({CONSENSUS} scenario): {', '.join(pbft)} | | Algorithm 1 ({CONSENSUS} "
        f"scenario): {', '.join(alg1)} | |"
    )
    return [*lines, "", _seeds_note(ev)]


# --- all of it ---------------------------------------------------------------------------

#: block name -> (evidence directory, renderer).  docs/evaluation.md has one block of each
#: name.  The directory is the experiment's name, except ``sanctions2k``: the sanctions
#: experiment at its 2,000-round horizon (``--rounds 2000``), whose evidence sits beside the
#: 500-round one so that each horizon is one command and one committed run.
BLOCKS: Final[dict[str, tuple[str, Callable[[Evidence], list[str]]]]] = {
    "paper-precision": ("paper", paper_precision),
    "paper-comparisons": ("paper", paper_comparisons),
    "paper-choices": ("paper", paper_choices),
    "paper-other": ("paper", paper_other),
    "truth": ("truth", truth_table),
    "bloc": ("bloc", bloc_table),
    "sanctions": ("sanctions", sanctions_table),
    "sanctions-2000": ("sanctions2k", sanctions_table),
    "sensitivity": ("sensitivity", sensitivity_table),
    "plasticity-by-k": ("plasticity", plasticity_by_k),
    "plasticity-controls": ("plasticity", plasticity_controls),
    "plasticity-threshold": ("plasticity", plasticity_threshold),
    "retrieval": ("retrieval", retrieval_table),
    "retrieval-by-k": ("retrieval", retrieval_by_k),
    "retrieval-controls": ("retrieval", retrieval_controls),
    "forgetting-honest": ("forgetting", _forgetting_scenario("honest")),
    "forgetting-adversarial": ("forgetting", _forgetting_scenario("adversarial")),
    "forgetting-four": ("forgetting", _forgetting_scenario("four")),
    "forgetting-accuracy-vs-reference": ("forgetting", forgetting_accuracy_vs_reference),
    "forgetting-wrong-vs-reference": ("forgetting", forgetting_wrong_vs_reference),
    "forgetting-consensus": ("forgetting", forgetting_consensus),
    "forgetting-paper": ("forgetting", forgetting_paper),
}

#: Where the plot drawn from the sensitivity evidence goes (relative to the repository
#: root): ``tornado.png`` in the chapter's image directory, once that evidence exists.
IMAGES: Final = Path("docs/img/evaluation")
TORNADO: Final = IMAGES / "tornado.png"


def render_tables(root: Path) -> str:
    """``evaluation/tables.md`` as the evidence under ``root`` gives it."""
    cache: dict[str, Evidence] = {}
    parts = [
        "# The evaluation's tables, generated from the evidence in this directory",
        "",
        "Made by `ostrom simulate --tables` (ostrom.simulation.evidence_docs); `ostrom docs`",
        "copies each block into docs/evaluation.md.  Do not edit by hand.",
        "",
    ]
    for name, (experiment, render) in BLOCKS.items():
        directory = root / EVIDENCE_DIR / experiment
        if experiment not in cache and directory.exists():
            cache[experiment] = load_evidence(directory)
        if experiment in cache:
            body = "\n".join(render(cache[experiment]))
        else:  # said in the chapter, not hidden: the table waits for its evidence
            body = (
                f"*No committed evidence for this table yet: `evaluation/{experiment}/` is "
                f"missing (`make experiments` writes it).*"
            )
        parts += [
            f"<!-- BEGIN table: {PREFIX}{name} -->",
            body,
            f"<!-- END table: {PREFIX}{name} -->",
            "",
        ]
    return "\n".join(parts)


def write_tables(root: Path) -> list[Path]:
    """Write ``evaluation/tables.md`` and the tornado plot from the evidence under
    ``root`` (``EvidenceError`` if an experiment's evidence is malformed; a missing one
    leaves its tables saying so, and no plot without the sensitivity evidence)."""
    text = render_tables(root)
    tables = root / TABLES
    tables.write_text(text, encoding="utf-8")
    sensitivity = root / EVIDENCE_DIR / "sensitivity"
    if not sensitivity.exists():
        return [tables]
    tornado = root / TORNADO
    tornado.parent.mkdir(parents=True, exist_ok=True)
    tornado_plot(load_evidence(sensitivity), tornado)
    return [tables, tornado]


__all__ = [
    "BLOCKS",
    "PAPER_PRECISION",
    "PREFIX",
    "TABLES",
    "TORNADO",
    "EvidenceError",
    "Swing",
    "render_tables",
    "sensitivity_swings",
    "tornado_plot",
    "write_tables",
]
