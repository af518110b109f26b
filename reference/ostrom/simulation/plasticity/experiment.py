"""The ``plasticity`` experiment: its cells, scenarios and presentation.

The cells are ``run.plasticity_cells()`` (the four mechanisms × the conditions after,
before and transient), the scenarios the adversary shares of ``run.PLASTICITY_SCENARIOS``
(``adv=0.00`` … ``adv=0.40``), 30 seeds.  The report's own section (``report``) shows
plasticity, stale retention and wrong adoption by interference kind and count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ostrom.simulation.config import ConfigError
from ostrom.simulation.engine import Cell, Experiment, Presentation
from ostrom.simulation.plasticity.config import parse_scenario, scenario_name
from ostrom.simulation.plasticity.report import plots, sections
from ostrom.simulation.plasticity.run import PLASTICITY_SCENARIOS, plasticity_cells

SEEDS: Final = 30

PRESENTATION: Final = Presentation(
    main_metrics=(
        "plasticity",
        "stale_retention",
        "wrong_adoption",
        "time_to_adoption",
        "plasticity_k0",
    ),
    key_metric="plasticity",
    key_axis="plasticity (valid updates served within T rounds, trials closed so far)",
    other_metrics=("plasticity", "wrong_adoption"),
    degradation_from=scenario_name(0.0),
    md_skip_prefixes=(
        "plasticity.",
        "stale_retention.",
        "wrong_adoption.",
        "time_to_adoption.",
        "trials.",
        "mechanism.",
        "censored.",
        "displaced.",
        "dropped",
    ),
    # docs/evaluation.md's plasticity tables read plasticity and wrong adoption per cell
    evidence_skip=(
        "stale_retention.",
        "time_to_adoption.",
        "trials.",
        "mechanism.",
        "censored.",
        "displaced.",
        "dropped",
    ),
    sections=sections,
    plots=plots,
)


def build_plasticity(
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
        raise ConfigError("--artifacts: the plasticity world has slots, not an artifact pool")
    if governance is not None:
        raise ConfigError("--governance: the plasticity experiment defines its own mechanisms")
    names = (
        tuple(scenario_name(parse_scenario(s)) for s in scenarios)
        if scenarios
        else tuple(scenario_name(s) for s in PLASTICITY_SCENARIOS)
    )
    sizes: dict[str, Any] = {}
    if rounds is not None:
        sizes["rounds"] = rounds
    if agents is not None:
        sizes["agents"] = agents
    cells = []
    for label, config, vs in plasticity_cells():
        config = config.with_(**sizes) if sizes else config
        cells.append(Cell(label, config.with_scenario(names[0]), vs))
    n = SEEDS if seeds is None else seeds
    return Experiment(
        name="plasticity",
        description=(
            "update plasticity under same-slot conflict and repeated history: the protocol "
            "and three baselines, conflicts after / before the valid update and marked "
            "transient, by interference count and adversary share"
        ),
        cells=tuple(cells),
        scenarios=names,
        seeds=tuple(range(seed_start, seed_start + n)),
        presentation=PRESENTATION,
    )


__all__ = ["PRESENTATION", "build_plasticity"]
