"""A small seeded run of the reputation layer, and the plot of docs/reputation.md.

``simulate`` is a pure function of its arguments and the seeded generator passed in
(sans-IO: no clock, no global random state), so the figure is reproducible: 30 agents —
honest, a coordinated malicious bloc, and "build then exploit" agents that vote honestly
until ``switch`` and with the bloc afterwards — review two artifacts per round with the
protocol's weighted tally (``voting.review_verdict``), and the book scores every revealed
vote against the decision (the paper's rule) or against ground truth.

``python -m ostrom.codegen.reputation_plot [OUT.png]`` draws expected reputation and voting weight
per archetype under both feedback modes (matplotlib, imported only here).
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from pathlib import Path

from ostrom.protocol.agents import micro
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.protocol.reputation import ReputationBook
from ostrom.protocol.voting import Tally, review_verdict

__all__ = ["group_mean", "simulate"]

ARCHETYPES = ("honest", "malicious", "build-then-exploit")
COLOURS = {"honest": "#1b7837", "malicious": "#b2182b", "build-then-exploit": "#e08214"}


@dataclass(frozen=True)
class Run:
    """Per-agent series, index 0 being the state before the first round."""

    archetype: dict[str, str]
    expected: dict[str, list[float]]
    weight: dict[str, list[float]]
    tier: dict[str, list[int]]
    switch: int
    feedback: str
    w_max: float


def _vote(kind: str, truth: str, rnd: int, switch: int, accuracy: float, rng: random.Random) -> str:
    """An archetype's vote on an artifact whose correct verdict is ``truth``."""
    wrong = "reject" if truth == "accept" else "accept"
    if kind == "malicious" or (kind == "build-then-exploit" and rnd > switch):
        return wrong  # the bloc always votes against the truth, so its members agree
    return truth if rng.random() < accuracy else wrong


def simulate(
    rng: random.Random,
    params: Params = DEFAULTS,
    *,
    rounds: int = 300,
    honest: int = 12,
    malicious: int = 9,
    exploiters: int = 9,
    switch: int = 150,
    artifacts: int = 2,
    accuracy: float = 0.85,
    good_share: float = 0.5,
    pretrusted: int = 3,
    feedback: str = "decision",
) -> Run:
    """Run ``rounds`` rounds and return every agent's E, weight and tier after each.

    Reviewers are drawn uniformly (``rng.sample``); a tier-0 reviewer counts at w_min, as
    in the orchestrator (``Agent.weight_micro``).  An undecided tally gets no feedback
    (arbitration is not simulated).  The first ``pretrusted`` honest agents seed p.
    """
    kinds = {f"h{i:02d}": "honest" for i in range(honest)}
    kinds |= {f"m{i:02d}": "malicious" for i in range(malicious)}
    kinds |= {f"x{i:02d}": "build-then-exploit" for i in range(exploiters)}
    names = sorted(kinds)
    book = ReputationBook(
        params, names, pretrusted=[f"h{i:02d}" for i in range(pretrusted)], feedback=feedback
    )
    exp = {n: [book.expected(n)] for n in names}
    wts = {n: [book.weight(n)] for n in names}
    tiers = {n: [book.tier(n)] for n in names}
    w_min = micro(params.w_min)
    for rnd in range(1, rounds + 1):
        for _ in range(artifacts):
            truth = "accept" if rng.random() < good_share else "reject"
            reviewers = sorted(rng.sample(names, params.reviewers))
            votes = {r: _vote(kinds[r], truth, rnd, switch, accuracy, rng) for r in reviewers}

            def w(r: str) -> int:
                return w_min if book.tier(r) == 0 else book.weight_micro(r)

            yes = [w(r) for r in reviewers if votes[r] == "accept"]
            no = [w(r) for r in reviewers if votes[r] == "reject"]
            verdict = review_verdict(
                Tally.of(yes, no),
                params.quorum,
                micro(params.tau_accept),
                micro(params.tau_reject),
                params.tally_min_side,
            )
            decision = verdict if verdict in ("accept", "reject") else None
            book.record_votes(votes, decision, truth=truth)
        book.tick()
        for n in names:
            exp[n].append(book.expected(n))
            wts[n].append(book.weight(n))
            tiers[n].append(book.tier(n))
    return Run(kinds, exp, wts, tiers, switch, feedback, params.w_max)


def group_mean(run: Run, series: dict[str, list[float]], kind: str) -> list[float]:
    """Mean of ``series`` over the agents of archetype ``kind``, round by round."""
    members = [n for n, k in run.archetype.items() if k == kind]
    return [
        sum(series[n][t] for n in members) / len(members) for t in range(len(series[members[0]]))
    ]


def plot(runs: list[Run], out: Path) -> None:
    """Draw E and weight (columns) per feedback mode (rows) into ``out`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 2, figsize=(11, 3.6 * len(runs)), squeeze=False)
    for row, run in enumerate(runs):
        for col, (label, series) in enumerate(
            (("expected reputation E", run.expected), ("voting weight", run.weight))
        ):
            ax = axes[row][col]
            for name, kind in sorted(run.archetype.items()):
                ax.plot(series[name], color=COLOURS[kind], lw=0.6, alpha=0.25)
            for kind in ARCHETYPES:
                ax.plot(group_mean(run, series, kind), color=COLOURS[kind], lw=2.2, label=kind)
            ax.axvline(run.switch, color="grey", ls="--", lw=0.8)
            ax.set_title(f"{label} — feedback against the {run.feedback}", fontsize=10)
            ax.set_xlabel("round")
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylim(0.0, 1.0)
                ax.axhline(0.5, color="black", lw=0.5)
            else:
                ax.set_ylim(0.0, 1.05 * run.w_max)
        axes[row][0].legend(loc="lower left", fontsize=8)
    fig.suptitle(
        "12 honest, 9 malicious (a bloc), 9 build-then-exploit (switch at the dashed line); "
        "seeded run, thick = mean",
        fontsize=10,
    )
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100, metadata={"Software": None})
    plt.close(fig)


def summary(run: Run) -> dict[str, dict[str, float]]:
    """Final mean E and weight per archetype (quoted in docs/reputation.md)."""
    return {
        kind: {
            "E": round(group_mean(run, run.expected, kind)[-1], 3),
            "weight": round(group_mean(run, run.weight, kind)[-1], 3),
        }
        for kind in ARCHETYPES
    }


def main(argv: list[str] | None = None) -> None:
    """``[OUT.png]``: an option (``--help``, ``-h``, anything that starts with ``-``) is
    never taken for the output path (a ``--help.png`` once landed in the repository)."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: python -m ostrom.codegen.reputation_plot [OUT.png]", file=sys.stderr)
        raise SystemExit(2)
    out = Path(args[0] if args else "docs/img/reputation.png")
    runs = [simulate(random.Random(7), feedback=mode) for mode in ("decision", "truth")]
    plot(runs, out)
    for run in runs:
        print(run.feedback, summary(run))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
