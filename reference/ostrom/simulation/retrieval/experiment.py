"""The ``retrieval`` experiment: its cells, scenarios and presentation.

Cells: the four stores (``config.STORES``) × the four conditions (``config.CONDITIONS``:
conflicts after the valid update, before it, after and marked transient, after with
fixed phrasing); each baseline is compared with ostrom in the same condition.  Scenarios:
no adversaries and a fifth of them (``adv=0.00``, ``adv=0.20``).  10 seeds by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ostrom.simulation.engine import Experiment, Presentation
from ostrom.simulation.plasticity.config import scenario_name
from ostrom.simulation.plasticity.experiment import build_by_share
from ostrom.simulation.retrieval.config import CONDITIONS, STORES, RetrievalConfig
from ostrom.simulation.retrieval.run import KEY

__all__ = ["PRESENTATION", "RETRIEVAL_SCENARIOS", "SEEDS", "build_retrieval", "retrieval_cells"]

SEEDS: Final = 10
RETRIEVAL_SCENARIOS: Final = (0.0, 0.2)

PRESENTATION: Final = Presentation(
    main_metrics=(
        KEY,
        "lexical.top.acc",
        "lexical.hit",
        "dense.store.acc",
        "dense.hit",
        "history.store.acc",
        "history.top.acc",
    ),
    key_metric=KEY,
    key_axis="answered with the current value (lexical retrieval, the store's reader)",
    other_metrics=(KEY, "lexical.hit"),
    degradation_from=scenario_name(0.0),
    md_skip_prefixes=("lexical.", "dense.", "history.", "trials", "dropped", "commands."),
    # the committed evidence keeps every figure by mode, reader and cell (the tables read
    # them) and leaves out the node's command counts
    evidence_skip=("commands.",),
)


def retrieval_cells() -> list[tuple[str, RetrievalConfig, tuple[str, ...]]]:
    """(label, config, labels it is compared with): every store in every condition, each
    baseline vs ostrom in the same condition."""
    cells: list[tuple[str, RetrievalConfig, tuple[str, ...]]] = []
    for order, transient, phrasing in CONDITIONS.values():
        base = RetrievalConfig(order=order, transient=transient, phrasing=phrasing)
        for store in STORES:
            cfg = base.with_(store=store)
            vs: tuple[str, ...] = () if store == "ostrom" else (base.label,)
            cells.append((cfg.label, cfg, vs))
    return cells


def build_retrieval(
    *,
    seeds: int | None,
    seed_start: int,
    rounds: int | None,
    agents: int | None,
    artifacts: int | None,
    scenarios: Sequence[str] | None,
    governance: str | None,
    policy: str | None = None,
) -> Experiment:
    """The experiment, sized by the command line (``rounds``, ``agents``, ``policy``: a
    plugged agent policy for every cell; ``scenarios`` by name, ``adv=<share>``)."""
    return build_by_share(
        name="retrieval",
        description=(
            "plasticity at retrieval: what an agent retrieves and answers after a fact "
            "changed under interference, from the governed node and three ungoverned memories"
        ),
        cells=retrieval_cells(),
        shares=RETRIEVAL_SCENARIOS,
        default_seeds=SEEDS,
        presentation=PRESENTATION,
        no_artifacts="--artifacts: the retrieval world has facts, not an artifact pool",
        no_governance="--governance: the retrieval experiment compares its own stores",
        seeds=seeds,
        seed_start=seed_start,
        rounds=rounds,
        agents=agents,
        artifacts=artifacts,
        scenarios=scenarios,
        governance=governance,
        policy=policy,
    )
