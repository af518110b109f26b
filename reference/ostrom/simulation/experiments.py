"""The built-in experiments of ``ostrom simulate --experiment`` (``ostrom.simulation.commands``
runs them on the engine, ``ostrom.simulation.engine``, which this module re-exports).

Built-in experiments (docs/design.md §10; docs/evaluation.md says what each one tests):

* ``paper``     — the paper's §5.5–5.6: the protocol, six baselines (majority concealed,
  weighted and open, single curator, ungoverned, weighted without deliberation) and five
  ablations, scenarios moderate and high, seeds 1..30 (720 runs);
* ``truth``     — experiment (a): reputation fed by the decision (the paper's rule) or by
  the ground truth, for the protocol, the protocol without commit-reveal and majority;
* ``bloc``      — experiment (b): a coordinated adversary (scenario ``bloc``) against
  ``moderate``, for the protocol, majority (concealed and open), the protocol without
  reputation, without commit-reveal and with ground-truth feedback; reports
  ``separation`` (mean E of the honest agents minus that of the adversaries);
* ``sanctions`` — experiment (c): the protocol over horizons of 500 and 2,000 rounds ×
  broken-agent malfunction rates × lazy reveal rates, to see whether sanctions fire;
* ``sensitivity`` — experiment (d): the protocol and majority vote with each fixed choice
  of ``SENSITIVITY`` at a low and a high value (the tornado of the headline difference);
* ``smoke``     — a tiny version for CI (20 agents, 60 rounds, 3 seeds);
* ``forgetting`` — the Co-Forgetting paper's evaluation against ground truth: the protocol,
  six baselines and four ablations over 500 epochs, and consensus success under PBFT and
  Algorithm 1 with a faulty replica (``ostrom.simulation.forgetting``);
* ``plasticity`` — update plasticity under same-slot interference: the protocol and three
  baselines, conflicts after / before the valid update and marked transient, over
  adversary shares (``ostrom.simulation.plasticity``);
* ``retrieval`` — plasticity at retrieval: what an agent retrieves and answers from the
  governed node's search and from three ungoverned memories after a fact changed under
  interference (``ostrom.simulation.retrieval``).

Every cell is compared with the cells named in its ``vs`` (the first one, majority vote
for the paper, is the table's reference), pairing runs by seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ostrom.simulation.config import (
    ABLATIONS,
    GOVERNANCE,
    MIXES,
    ConfigError,
    SimConfig,
    parse_policy,
)
from ostrom.simulation.engine import (
    Cell,
    Experiment,
    ExperimentResult,
    Presentation,
    RunError,
    RunFn,
    RunSpec,
    metric_value,
    numeric_values,
)
from ostrom.simulation.engine import run_experiment as run_cells
from ostrom.simulation.forgetting.experiment import build_forgetting
from ostrom.simulation.plasticity.experiment import build_plasticity
from ostrom.simulation.retrieval.experiment import build_retrieval
from ostrom.simulation.run import simulate

#: The reference every paper configuration is compared with (§5.5).
REFERENCE = "majority"


# --- built-in experiments -------------------------------------------------------------

#: (label, SimConfig changes, labels compared with)
CellDef = tuple[str, dict[str, Any], tuple[str, ...]]


def _paper_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    cells: list[CellDef] = [("protocol", {}, (REFERENCE,))]
    for g in GOVERNANCE[1:]:
        # weighted-without-deliberation is also the deliberation ablation, and the open
        # majority the baseline choice's size: both are compared with the protocol too
        both = ("weighted_no_deliberation", "majority_open")
        vs: tuple[str, ...] = (REFERENCE, "protocol") if g in both else (REFERENCE,)
        cells.append((g, {"governance": g}, () if g == REFERENCE else vs))
    for a in ABLATIONS:
        vs = (REFERENCE, "protocol")
        if a == "no_reputation":  # the size of the ablation's choice: everywhere vs weights
            vs += ("protocol+no_reputation_weighting",)
        cells.append((f"protocol+{a}", {"ablations": (a,)}, vs))
    return cells


def _truth_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    cells: list[CellDef] = []
    for feedback, tag in (("decision", ""), ("truth", " [truth]")):
        ref = f"{REFERENCE}{tag}"
        changes: dict[str, Any] = {"feedback": feedback}
        vs_protocol = (f"protocol{tag}",)
        cells += [
            (f"protocol{tag}", changes, (ref, "protocol") if tag else (ref,)),
            (
                f"protocol+no_commit_reveal{tag}",
                {**changes, "ablations": ("no_commit_reveal",)},
                (ref, *vs_protocol),
            ),
            (ref, {**changes, "governance": REFERENCE}, ()),
        ]
    return cells


def _bloc_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    return [
        ("protocol", {}, (REFERENCE,)),
        (REFERENCE, {"governance": REFERENCE}, ()),
        ("majority_open", {"governance": "majority_open"}, (REFERENCE, "protocol")),
        ("protocol+no_reputation", {"ablations": ("no_reputation",)}, (REFERENCE, "protocol")),
        (
            "protocol+no_commit_reveal",
            {"ablations": ("no_commit_reveal",)},
            (REFERENCE, "protocol"),
        ),
        ("protocol [truth]", {"feedback": "truth"}, (REFERENCE, "protocol")),
    ]


#: Experiment (c): horizons (rounds), broken-agent malfunction and lazy reveal rates.
SANCTION_HORIZONS = (500, 2000)
SANCTION_MALFUNCTION = (0.1, 0.3, 0.6, 0.9)
SANCTION_LAZY_REVEAL = (0.7, 0.3)


def _sanctions_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    cells: list[CellDef] = []
    for r in (rounds,) if rounds is not None else SANCTION_HORIZONS:
        for bm in SANCTION_MALFUNCTION:
            for lr in SANCTION_LAZY_REVEAL:
                changes = {
                    "governance": "protocol",
                    "ablations": (),
                    "rounds": r,
                    "artifacts": r * base.proposals_per_round,
                    "broken_malfunction": bm,
                    "lazy_reveal": lr,
                }
                cells.append((f"protocol r={r} broken={bm} lazy_reveal={lr}", changes, ()))
    return cells


#: Experiment (d), the sensitivity of the headline (protocol − majority precision) to the
#: fixed choices: field -> (low, high) around the default.  Each level is a plausible
#: alternative fixed before any run, not a tuned value: feedback noise halved-ish and
#: doubled, reading noise halved and doubled, the honest accept threshold moved by 0.05
#: each way, the sycophant's own reading sharper and blunter, the reputation decay halved
#: and doubled, the strategic agent's attack share from 0.1 to 0.5.
SENSITIVITY: dict[str, tuple[float, float]] = {
    "feedback_noise": (0.05, 0.30),
    "perception_noise": (0.05, 0.20),
    "accept_threshold": (0.65, 0.75),
    "sycophant_noise": (0.15, 0.40),
    "reputation_decay": (0.005, 0.02),
    "strategic_attack": (0.10, 0.50),
}


def _sensitivity_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    cells: list[CellDef] = [
        ("protocol", {}, (REFERENCE,)),
        (REFERENCE, {"governance": REFERENCE}, ()),
    ]
    for name, levels in SENSITIVITY.items():
        for v in levels:
            tag = f" {name}={v:g}"
            cells.append((f"{REFERENCE}{tag}", {"governance": REFERENCE, name: v}, ()))
            cells.append((f"protocol{tag}", {name: v}, (f"{REFERENCE}{tag}",)))
    return cells


def _smoke_cells(base: SimConfig, rounds: int | None) -> list[CellDef]:
    small = {"agents": 20, "rounds": 60, "artifacts": 60 * base.proposals_per_round}
    return [
        ("protocol", small, (REFERENCE,)),
        (REFERENCE, {**small, "governance": REFERENCE}, ()),
        (
            "protocol+no_commit_reveal",
            {**small, "ablations": ("no_commit_reveal",)},
            (REFERENCE, "protocol"),
        ),
    ]


#: Seeds of each experiment's full run: what ``make experiments`` runs and the committed
#: evidence (``evaluation/``) holds.  A protocol run costs about 1.5 core-seconds of 500
#: rounds (100 agents); the sizes were cut to what 2 workers could finish on a machine
#: shared at a load average of 10-17, where each worker got under a tenth of a core: the
#: paper's headline keeps 20 seeds, the reviewers' experiments fewer (their CIs say so).
SEEDS: Final[dict[str, int]] = {
    "paper": 20,
    "truth": 5,
    "bloc": 5,
    "sanctions": 2,
    "sensitivity": 3,
}


@dataclass(frozen=True)
class ExperimentDef:
    description: str
    cells: Callable[[SimConfig, int | None], list[CellDef]]
    scenarios: tuple[str, ...]
    seeds: int


EXPERIMENTS: dict[str, ExperimentDef] = {
    "paper": ExperimentDef(
        "the paper's §5.5-5.6: protocol, six baselines, five ablations",
        _paper_cells,
        ("moderate", "high"),
        SEEDS["paper"],
    ),
    "truth": ExperimentDef(
        "(a) reputation fed by the decision (the paper's rule) vs by the ground truth",
        _truth_cells,
        ("moderate", "high"),
        SEEDS["truth"],
    ),
    "bloc": ExperimentDef(
        "(b) a coordinated adversary: does reputation still separate honest agents?",
        _bloc_cells,
        ("bloc", "bloc_high"),
        SEEDS["bloc"],
    ),
    "sanctions": ExperimentDef(
        "(c) horizons long enough for sanctions to fire: broken malfunction x lazy reveal",
        _sanctions_cells,
        ("moderate", "high"),
        SEEDS["sanctions"],
    ),
    "sensitivity": ExperimentDef(
        "(d) the headline's sensitivity to the fixed choices: each one at a low and a high value",
        _sensitivity_cells,
        ("moderate", "high"),
        SEEDS["sensitivity"],
    ),
    "smoke": ExperimentDef(
        "a tiny run of the paper's comparison for CI (20 agents, 60 rounds)",
        _smoke_cells,
        ("moderate", "high"),
        3,
    ),
}


def build_experiment(
    name: str,
    *,
    seeds: int | None = None,
    seed_start: int = 1,
    rounds: int | None = None,
    agents: int | None = None,
    artifacts: int | None = None,
    base: SimConfig | None = None,
    scenarios: Sequence[str] | None = None,
) -> Experiment:
    """The built-in experiment ``name`` with overrides: ``seeds`` (how many, from
    ``seed_start``), ``rounds`` (artifacts follow as rounds × proposals per round unless
    ``artifacts`` is given), ``agents``, a ``base`` config (e.g. from ``--config``; the
    cells change only their own fields of it) and ``scenarios``.  A base with a custom
    mix runs in scenario ``custom`` only, unless ``scenarios`` says otherwise."""
    try:
        spec = EXPERIMENTS[name]
    except KeyError:
        raise ConfigError(f"experiment: {name!r} is not one of {experiment_names()}") from None
    base = base or SimConfig()
    if seeds is not None and seeds < 1:
        raise ConfigError(f"seeds: must be at least 1, got {seeds}")
    sizes: dict[str, Any] = {}
    if agents is not None:
        sizes["agents"] = agents
    if rounds is not None:
        sizes["rounds"] = rounds
        sizes["artifacts"] = rounds * base.proposals_per_round
    if artifacts is not None:
        sizes["artifacts"] = artifacts
    if scenarios is None:
        scenarios = ("custom",) if base.scenario == "custom" else spec.scenarios
    for s in scenarios:
        if s != "custom" and s not in MIXES:
            raise ConfigError(f"scenario: {s!r} is not one of {[*MIXES, 'custom']}")
    cells = []
    for label, changes, vs in spec.cells(base, rounds):
        try:
            config = base.with_(**{**changes, **sizes, "scenario": scenarios[0]})
        except TypeError as exc:  # a field name that SimConfig does not have
            raise ConfigError(f"experiment {name}: {exc}") from None
        cells.append(Cell(label, config, vs))
    n = spec.seeds if seeds is None else seeds
    return Experiment(
        name=name,
        description=spec.description,
        cells=tuple(cells),
        scenarios=tuple(scenarios),
        seeds=tuple(range(seed_start, seed_start + n)),
    )


def single_experiment(config: SimConfig, seeds: Sequence[int]) -> Experiment:
    """One configuration over ``seeds`` (``ostrom simulate`` without ``--experiment``)."""
    label = config.label + (" [truth]" if config.feedback == "truth" else "")
    if config.policy:  # a plugged agent policy: the table says whose decisions these are
        spec = parse_policy(config.policy)
        label += f" [policy {spec.name}={spec.role}]"
    return Experiment(
        name="single",
        description=f"{label} in scenario {config.scenario}",
        cells=(Cell(label, config),),
        scenarios=(config.scenario,),
        seeds=tuple(seeds),
    )


def run_experiment(
    exp: Experiment,
    jobs: int | None = None,
    progress: bool = True,
    run: RunFn = simulate,
) -> ExperimentResult:
    """``engine.run_experiment`` with ``run.simulate`` unless a test injects another."""
    return run_cells(exp, run, jobs=jobs, progress=progress)


class Builder(Protocol):
    """Builds one experiment of its own family (its own configuration type) from the
    command line's sizes: ``rounds`` (epochs), ``agents``, ``artifacts`` (items), the
    seeds, the scenarios to keep, ``governance`` (a subset of the cells) and ``policy``
    (a plugged agent policy, ``MODULE:ATTR[=KIND]``, for every cell)."""

    def __call__(
        self,
        *,
        seeds: int | None,
        seed_start: int,
        rounds: int | None,
        agents: int | None,
        artifacts: int | None,
        scenarios: Sequence[str] | None,
        governance: str | None,
        policy: str | None = None,
    ) -> Experiment: ...


#: Experiments with a configuration of their own (not ``SimConfig``): description, builder.
FAMILIES: dict[str, tuple[str, Builder]] = {
    "forgetting": (
        "the Co-Forgetting evaluation: forgetting measured against ground truth",
        build_forgetting,
    ),
    "plasticity": (
        "update plasticity under same-slot conflict and repeated history",
        build_plasticity,
    ),
    "retrieval": (
        "plasticity at retrieval: the governed node's search against ungoverned memories",
        build_retrieval,
    ),
}


def experiment_names() -> list[str]:
    """Every built-in experiment, sorted (``--experiment``'s choices)."""
    return sorted([*EXPERIMENTS, *FAMILIES])


def describe(name: str) -> str:
    """One line on what experiment ``name`` tests."""
    if name in FAMILIES:
        return FAMILIES[name][0]
    return EXPERIMENTS[name].description


def build_family(
    name: str,
    *,
    seeds: int | None = None,
    seed_start: int = 1,
    rounds: int | None = None,
    agents: int | None = None,
    artifacts: int | None = None,
    scenarios: Sequence[str] | None = None,
    governance: str | None = None,
    policy: str | None = None,
) -> Experiment:
    """Experiment ``name`` of ``FAMILIES`` (``ConfigError`` for an unknown one, a bad size
    or a bad policy spec; the policy itself is loaded by its runs)."""
    try:
        _, builder = FAMILIES[name]
    except KeyError:
        raise ConfigError(f"experiment: {name!r} is not one of {experiment_names()}") from None
    if seeds is not None and seeds < 1:
        raise ConfigError(f"seeds: must be at least 1, got {seeds}")
    return builder(
        seeds=seeds,
        seed_start=seed_start,
        rounds=rounds,
        agents=agents,
        artifacts=artifacts,
        scenarios=scenarios,
        governance=governance,
        policy=policy,
    )


__all__ = [
    "EXPERIMENTS",
    "FAMILIES",
    "REFERENCE",
    "SEEDS",
    "SENSITIVITY",
    "Builder",
    "Cell",
    "Experiment",
    "ExperimentResult",
    "Presentation",
    "RunError",
    "RunFn",
    "RunSpec",
    "build_experiment",
    "build_family",
    "describe",
    "experiment_names",
    "metric_value",
    "numeric_values",
    "run_experiment",
    "single_experiment",
]
