"""The ``plasticity`` experiment: its cells, scenarios and presentation.

The cells are ``run.plasticity_cells()`` (the four mechanisms × the conditions after,
before and transient), the scenarios the adversary shares of ``run.PLASTICITY_SCENARIOS``
(``adv=0.00`` … ``adv=0.40``), 30 seeds.  The report's own section (``report``) shows
plasticity, stale retention and wrong adoption by interference kind and count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol, Self

from ostrom.simulation.config import ConfigError
from ostrom.simulation.engine import Cell, Experiment, Presentation
from ostrom.simulation.plasticity.config import parse_scenario, scenario_name
from ostrom.simulation.plasticity.report import plots, sections
from ostrom.simulation.plasticity.run import PLASTICITY_SCENARIOS, plasticity_cells
from ostrom.simulation.result import RunConfig

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


class Sized(RunConfig, Protocol):
    """A run configuration that the command line's sizes change (``with_``)."""

    def with_(self, **changes: Any) -> Self: ...


def build_by_share(
    *,
    name: str,
    description: str,
    cells: Sequence[tuple[str, Sized, tuple[str, ...]]],
    shares: Sequence[float],
    default_seeds: int,
    presentation: Presentation,
    no_artifacts: str,
    no_governance: str,
    seeds: int | None,
    seed_start: int,
    rounds: int | None,
    agents: int | None,
    artifacts: int | None,
    scenarios: Sequence[str] | None,
    governance: str | None,
    policy: str | None,
) -> Experiment:
    """An experiment whose scenarios are adversary shares (``adv=0.20``): the plasticity
    and the retrieval experiments, each ``cells`` (label, config, labels it is compared
    with) sized by the command line (``rounds``, ``agents``, ``policy``; ``scenarios``
    by name, by default ``shares``).  ``--artifacts`` and ``--governance`` mean nothing
    to them: a ``ConfigError`` says so (``no_artifacts``, ``no_governance``)."""
    if artifacts is not None:
        raise ConfigError(no_artifacts)
    if governance is not None:
        raise ConfigError(no_governance)
    names = (
        tuple(scenario_name(parse_scenario(s)) for s in scenarios)
        if scenarios
        else tuple(scenario_name(s) for s in shares)
    )
    changes: dict[str, Any] = {}
    if rounds is not None:
        changes["rounds"] = rounds
    if agents is not None:
        changes["agents"] = agents
    if policy is not None:
        changes["policy"] = policy
    built = []
    for label, config, vs in cells:
        config = config.with_(**changes) if changes else config
        built.append(Cell(label, config.with_scenario(names[0]), vs))
    n = default_seeds if seeds is None else seeds
    return Experiment(
        name=name,
        description=description,
        cells=tuple(built),
        scenarios=names,
        seeds=tuple(range(seed_start, seed_start + n)),
        presentation=presentation,
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
    policy: str | None = None,
) -> Experiment:
    """The experiment, sized by the command line (``rounds``, ``agents``, ``policy``: a
    plugged agent policy for every cell; ``scenarios`` by name, ``adv=<share>``)."""
    return build_by_share(
        name="plasticity",
        description=(
            "update plasticity under same-slot conflict and repeated history: the protocol "
            "and three baselines, conflicts after / before the valid update and marked "
            "transient, by interference count and adversary share"
        ),
        cells=plasticity_cells(),
        shares=PLASTICITY_SCENARIOS,
        default_seeds=SEEDS,
        presentation=PRESENTATION,
        no_artifacts="--artifacts: the plasticity world has slots, not an artifact pool",
        no_governance="--governance: the plasticity experiment defines its own mechanisms",
        seeds=seeds,
        seed_start=seed_start,
        rounds=rounds,
        agents=agents,
        artifacts=artifacts,
        scenarios=scenarios,
        governance=governance,
        policy=policy,
    )


__all__ = ["PRESENTATION", "Sized", "build_by_share", "build_plasticity"]
