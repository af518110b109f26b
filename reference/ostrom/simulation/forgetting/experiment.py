"""The ``forgetting`` experiment: its cells, scenarios and presentation.

Cells (docs/evaluation.md, "Collective forgetting against ground truth"), each run in the
``honest``, ``adversarial`` and ``four`` scenarios and compared, by seed, with the
reference ``protocol [c≥α]``:

* ``protocol [c≥α]`` — the protocol, honest agents sending their final forget vote once
  their confidence reaches α (the reference);
* ``protocol`` — the protocol with docs/forgetting.md's agent rule as written (vote as soon
  as C < θ): the vote is final, so its confidence is frozen near 0;
* the baselines ``keep_all``, ``lru`` (the reference's footprint as its capacity),
  ``time_decay``, ``single_curator [c≥α]``, ``majority [c≥α]``, and
  ``protocol+no_floor [c≥α]``;
* the ablations ``decay_only``, ``relevance_only``, ``no_confidence`` and
  ``no_reputation`` of the reference.

And in the ``consensus`` scenario (12 agents, a smaller world): the reference run locally,
under PBFT with each fault, and Algorithm 1 with each fault (``consensus``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ostrom.simulation.config import ConfigError
from ostrom.simulation.engine import Cell, Experiment, Presentation
from ostrom.simulation.forgetting.config import FAULTS, REFERENCE, SCENARIOS, ForgetConfig
from ostrom.simulation.forgetting.report import plots, sections

MAIN_SCENARIOS: Final = ("honest", "adversarial", "four")
CONSENSUS_SCENARIO: Final = "consensus"
SEEDS: Final = 30

PRESENTATION: Final = Presentation(
    main_metrics=(
        "reduction",
        "accuracy",
        "precision",
        "recall",
        "wrongly_forgotten",
        "stale_kept",
        "decisions_per_epoch",
    ),
    key_metric="accuracy",
    key_axis="accuracy (status agrees with the ground-truth label)",
    other_metrics=("reduction", "wrongly_forgotten"),
    degradation_from=None,
    md_skip_prefixes=("admitted_by_label.", "consensus_"),
    # docs/evaluation.md's forgetting tables read the consensus figures and the useful
    # share of the admitted items per run: the evidence keeps every number a run gives
    evidence_skip=(),
    sections=sections,
    plots=plots,
)


def _cells() -> list[tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]]:
    """(config changes, vs, scenarios) per cell; the label is the config's."""
    alpha: dict[str, Any] = {"vote_rule": "at_alpha"}
    main = MAIN_SCENARIOS
    ref = (REFERENCE,)
    cells: list[tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]] = [
        (alpha, (), (*main, CONSENSUS_SCENARIO)),
        ({}, ref, main),
        ({"mechanism": "keep_all"}, ref, main),
        ({"mechanism": "lru", **alpha}, ref, main),
        ({"mechanism": "time_decay"}, ref, main),
        ({"mechanism": "single_curator", **alpha}, ref, main),
        ({"mechanism": "majority", **alpha}, ref, main),
        ({"ablations": ("no_floor",), **alpha}, ref, main),
    ]
    for a in ("decay_only", "relevance_only", "no_confidence", "no_reputation"):
        cells.append(({"ablations": (a,), **alpha}, ref, main))
    for governance in ("pbft", "alg1"):
        for fault in FAULTS:
            changes = {"governance": governance, "fault": fault, **alpha}
            cells.append((changes, (), (CONSENSUS_SCENARIO,)))
    return cells


def build_forgetting(
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
    """The experiment, sized by the command line: ``rounds`` are epochs, ``agents``
    overrides every scenario's population, ``policy`` plugs an agent policy into every
    cell; ``governance`` ``pbft`` or ``alg1`` keeps only the consensus cells (and the
    reference they are checked against)."""
    if artifacts is not None:
        raise ConfigError("--artifacts: the forgetting world draws its own items (use --rounds)")
    keep = tuple(scenarios) if scenarios else (*MAIN_SCENARIOS, CONSENSUS_SCENARIO)
    for s in keep:
        if s not in SCENARIOS:
            raise ConfigError(f"scenario: {s!r} is not one of {list(SCENARIOS)}")
    if governance not in (None, "pbft", "alg1"):
        raise ConfigError(
            f"--governance: the forgetting experiment takes pbft or alg1, not {governance!r}"
        )
    sizes: dict[str, Any] = {}
    if rounds is not None:
        sizes["epochs"] = rounds
    if agents is not None:
        sizes["agents"] = agents
    if policy is not None:
        sizes["policy"] = policy
    cells: list[Cell] = []
    for changes, vs, where in _cells():
        config = ForgetConfig().with_(**changes, **sizes)
        if governance in ("pbft", "alg1") and config.governance not in (governance, "local"):
            continue
        if governance in ("pbft", "alg1") and config.governance == "local":
            if config.label != REFERENCE:
                continue
            where = (CONSENSUS_SCENARIO,)  # the run the consensus cells are checked against
        here = tuple(s for s in where if s in keep)
        if not here:
            continue
        cells.append(Cell(config.label, config.with_scenario(here[0]), vs, here))
    labels = {c.label for c in cells}
    cells = [
        Cell(c.label, c.config, tuple(v for v in c.vs if v in labels), c.scenarios) for c in cells
    ]
    if not cells:
        raise ConfigError(f"no forgetting cell runs in scenarios {list(keep)}")
    used = tuple(s for s in keep if any(c.runs_in(s) for c in cells))
    n = SEEDS if seeds is None else seeds
    return Experiment(
        name="forgetting",
        description=(
            "collective forgetting against ground truth: the protocol, six baselines and "
            "four ablations over 500 epochs, and consensus success under PBFT and "
            "Algorithm 1 with one faulty replica of four"
        ),
        cells=tuple(cells),
        scenarios=used,
        seeds=tuple(range(seed_start, seed_start + n)),
        presentation=PRESENTATION,
    )


__all__ = ["CONSENSUS_SCENARIO", "MAIN_SCENARIOS", "PRESENTATION", "build_forgetting"]
