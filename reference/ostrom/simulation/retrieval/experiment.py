"""The ``retrieval`` experiment: its cells, scenarios and presentation.

Cells: the four stores (``config.STORES``) × the four conditions (``config.CONDITIONS``:
conflicts after the valid update, before it, after and marked transient, after with
fixed phrasing); each baseline is compared with ostrom in the same condition.  Scenarios:
no adversaries and a fifth of them (``adv=0.00``, ``adv=0.20``).  10 seeds by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ostrom.simulation.config import ConfigError
from ostrom.simulation.engine import Cell, Experiment, Presentation
from ostrom.simulation.plasticity.config import parse_scenario, scenario_name
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
) -> Experiment:
    """The experiment, sized by the command line (``rounds``, ``agents``; ``scenarios``
    by name, ``adv=<share>``)."""
    if artifacts is not None:
        raise ConfigError("--artifacts: the retrieval world has facts, not an artifact pool")
    if governance is not None:
        raise ConfigError("--governance: the retrieval experiment compares its own stores")
    names = (
        tuple(scenario_name(parse_scenario(s)) for s in scenarios)
        if scenarios
        else tuple(scenario_name(s) for s in RETRIEVAL_SCENARIOS)
    )
    sizes: dict[str, Any] = {}
    if rounds is not None:
        sizes["rounds"] = rounds
    if agents is not None:
        sizes["agents"] = agents
    cells = []
    for label, config, vs in retrieval_cells():
        config = config.with_(**sizes) if sizes else config
        cells.append(Cell(label, config.with_scenario(names[0]), vs))
    n = SEEDS if seeds is None else seeds
    return Experiment(
        name="retrieval",
        description=(
            "plasticity at retrieval: what an agent retrieves and answers after a fact "
            "changed under interference, from the governed node and three ungoverned memories"
        ),
        cells=tuple(cells),
        scenarios=names,
        seeds=tuple(range(seed_start, seed_start + n)),
        presentation=PRESENTATION,
    )
