"""What one run of the update-plasticity experiment is (``PlasticityConfig``).

Why a configuration of its own: the experiment adapts the "Controlled Memory Interference"
design (docs/evaluation.md, "Update plasticity under memory interference") to a governed
knowledge base, and its workload (slots, trials, interference counts, a measurement
window, stale agents) has nothing in common with the paper's curation workload of
``SimConfig``.

**Every default below was fixed from the written design before any result was looked
at**; the reason for each is in the comment beside it (and in docs/evaluation.md).  The
protocol itself runs with its own defaults (``ostrom.protocol.params.DEFAULTS``): the
experiment measures the protocol as specified, not a tuned one.

Hostile input: a value from a command line or a TOML file either constructs a config or
raises ``ConfigError`` naming the field (``__post_init__``, ``with_``, ``from_mapping``);
never another exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ostrom.protocol.params import DEFAULTS
from ostrom.simulation.config import (
    ConfigError,
    check_int_ranges,
    fields_dict,
    is_int,
    is_number,
    parse_policy,
    replace_known,
)
from ostrom.simulation.world import counts as largest_remainder

#: The mechanisms that decide which value a slot serves (``mechanisms``).
MECHANISMS: Final = ("protocol", "last_writer_wins", "majority", "latest_stable")

#: Whether the k interfering proposals of a trial come after or before its valid update.
ORDERS: Final = ("after", "before")

#: The interference kinds (``world``); k = 0 trials of each kind are the baseline.
KINDS: Final = ("same_slot", "repeated", "unrelated")
#: The agents' kinds (``world``): up to date, outdated (stale) and adversarial.  A plugged
#: policy takes the seats of one of them, ``honest`` when its spec names none.
AGENT_KINDS: Final = ("honest", "stale", "adversary")
POLICY_ROLE: Final = "honest"

#: The interference counts of the paper's composition sweep (its count 8 is the headline).
DEFAULT_COUNTS: Final = (0, 1, 2, 4, 8)

#: One uncontested formal review, from proposal to the tally: deliberation, then the
#: commit and reveal phases (docs/design.md §3): 5 + 2 + 2 = 9 rounds at the defaults.
FORMAL_REVIEW: Final = DEFAULTS.T_delib + DEFAULTS.T_commit + DEFAULTS.T_reveal

#: The default window T (rounds from a trial's valid update to its measurement):
#: a formal review (9) + an arbitration if the tally is undecided (T_arb = 5) + the
#: spacing of the last interfering proposal of order "after" (max K = 8 rounds after the
#: valid update) + the round in which that decision lands (1) = 23.  So every proposal of
#: a trial, the last conflict included, has had a full formal review (and an arbitration)
#: before the window closes: the protocol is not favoured by measuring before the
#: conflicts are decided.  An uncontested valid update is active 8 rounds after its
#: proposal (``FORMAL_REVIEW`` - 1): it fits with 15 rounds to spare.
DEFAULT_WINDOW: Final = FORMAL_REVIEW + DEFAULTS.T_arb + max(DEFAULT_COUNTS) + 1

#: The protocol's per-agent proposal limit; the stream never makes an agent exceed it
#: (a refusal would be an artefact of the workload, not a decision of the protocol).
PROPOSE_RATE: Final = DEFAULTS.propose_rate

#: The reviewers per proposal (the protocol's default; the majority panel has this size).
REVIEWERS: Final = DEFAULTS.reviewers

#: Integer fields and their ranges (the upper bounds keep a run finite).
INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    "agents": (12, 10_000),
    "slots": (1, 1_000_000),
    "rounds": (1, 100_000),
    "trials_per_round": (1, 1_000),
    "window": (1, 10_000),
    "stale_lag": (0, 100_000),
}
#: The largest interference count (a trial's k proposals are one round apart).
MAX_COUNT: Final = 256
#: The largest reviewer noise: an honest reviewer wrong more often than not is not honest.
MAX_NOISE: Final = 0.5


def scenario_name(adversary_share: float) -> str:
    """The scenario a run belongs to, named by its adversary share: ``adv=0.20``."""
    return f"adv={adversary_share:.2f}"


def parse_scenario(name: object) -> float:
    """The adversary share a scenario name stands for (``adv=0.20`` -> 0.2)."""
    if not isinstance(name, str) or not name.startswith("adv="):
        raise ConfigError(f"scenario: must look like 'adv=0.20', got {name!r}")
    try:
        share = float(name[4:])
    except ValueError:
        raise ConfigError(f"scenario: must look like 'adv=0.20', got {name!r}") from None
    return share


@dataclass(frozen=True)
class PlasticityConfig:
    """One run's configuration (everything but the seed).  Units in the comments."""

    # --- population
    agents: int = 30  # a realistic small community: 6 reviewer panels' worth, >= 12
    adversary_share: float = 0.20  # share of adversarial agents (the scenario); swept
    stale_share: float = 0.30  # share of the *honest* agents who are stale; 0.3 gives 9
    #   stale agents at adv=0.00, enough to send the conflicts within the rate limit
    stale_lag: int = DEFAULT_WINDOW  # rounds a stale agent keeps believing a slot's
    #   previous value after it changes: the whole window, so that every vote of a trial
    #   sees the same beliefs whatever the order (no order effect through staleness)
    reviewer_noise: float = 0.10  # probability that an honest judgment is flipped
    # --- workload
    slots: int = 200  # (entity, attribute) slots; about 113 are held by open trials in
    #   the steady state (at most ~126), so a trial practically never waits for a free
    #   slot (``World.dropped`` counts those that never start)
    rounds: int = 128  # measured rounds: 97 start rounds x 2 = 194 trials, >= 12 per cell
    trials_per_round: int = 2  # trials started per round
    counts: tuple[int, ...] = DEFAULT_COUNTS  # interference counts K; must contain 0
    window: int = DEFAULT_WINDOW  # T: rounds from the valid update to the measurement
    # --- the condition
    mechanism: str = "protocol"  # one of MECHANISMS
    order: str = "after"  # "after": the k proposals follow the valid update; "before"
    transient: bool = False  # the interfering proposals are marked transient
    # --- a plugged agent policy (ostrom.simulation.policy, hook ``accepts``): the agents
    # of ROLE review (and arbitrate, and sit on majority panels) by it; "" = the model's
    # own reading (``mechanisms.judge``) for everyone
    policy: str = ""  # MODULE:ATTR[=ROLE], ROLE one of AGENT_KINDS

    def __post_init__(self) -> None:
        if isinstance(self.counts, list):
            object.__setattr__(self, "counts", tuple(self.counts))  # from TOML or JSON
        check(self)

    # --- names ----------------------------------------------------------------------------

    @property
    def scenario(self) -> str:
        """The scenario (the adversary share): ``adv=0.20``."""
        return scenario_name(self.adversary_share)

    @property
    def condition(self) -> str:
        """``after``, ``before``, ``transient`` (after + marked) or ``before+transient``."""
        if not self.transient:
            return self.order
        return "transient" if self.order == "after" else f"{self.order}+transient"

    @property
    def label(self) -> str:
        """The name in tables: ``protocol [after]``, ``latest_stable [transient]``."""
        return f"{self.mechanism} [{self.condition}]"

    # --- derived workload ---------------------------------------------------------------

    @property
    def max_count(self) -> int:
        return max(self.counts)

    @property
    def start_rounds(self) -> int:
        """Rounds in which a trial may start: it must close (at most max K + T rounds
        later) within the run."""
        return max(0, self.rounds - self.max_count - self.window)

    @property
    def trials(self) -> int:
        """Trials in the stream (fewer start if slots ran out: ``World.dropped``)."""
        return self.start_rounds * self.trials_per_round

    @property
    def cells(self) -> tuple[tuple[str, int], ...]:
        """The (kind, k) cells every run measures."""
        return tuple((kind, k) for kind in KINDS for k in self.counts)

    @property
    def population(self) -> dict[str, int]:
        """How many agents of each kind: ``adversary``, ``stale`` (honest, outdated) and
        ``honest`` (up to date); largest remainder, summing to ``agents``."""
        adversaries, honest_all = largest_remainder(
            self.agents, (self.adversary_share, 1.0 - self.adversary_share)
        )
        stale, honest = largest_remainder(honest_all, (self.stale_share, 1.0 - self.stale_share))
        return {"honest": honest, "stale": stale, "adversary": adversaries}

    # --- changes --------------------------------------------------------------------------

    def with_(self, **changes: Any) -> PlasticityConfig:
        """A copy with ``changes`` (validated); ``scenario="adv=0.30"`` sets the share."""
        if "scenario" in changes:
            changes = dict(changes)
            changes["adversary_share"] = parse_scenario(changes.pop("scenario"))
        return replace_known(self, changes)

    def with_scenario(self, scenario: str) -> PlasticityConfig:
        """The same configuration in another scenario (adversary share)."""
        return self.with_(scenario=scenario)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: every field (tuples become lists), plus the label and scenario."""
        out = fields_dict(self)
        out["label"] = self.label
        out["scenario"] = self.scenario
        return out


def from_mapping(doc: Mapping[str, Any], base: PlasticityConfig | None = None) -> PlasticityConfig:
    """A config from a mapping (a TOML table, parsed JSON): unknown keys are refused."""
    if not isinstance(doc, Mapping):
        raise ConfigError(f"config: must be a table of fields, got {doc!r}")
    return (base or PlasticityConfig()).with_(**{str(k): v for k, v in doc.items()})


def check(c: PlasticityConfig) -> None:
    """Refuse a configuration that cannot be run, naming the field."""
    check_int_ranges(c, INT_RANGES)
    shares: tuple[tuple[str, float], ...] = (
        ("adversary_share", 1.0),
        ("stale_share", 1.0),
        ("reviewer_noise", MAX_NOISE),
    )
    for name, top in shares:
        x = getattr(c, name)
        if not is_number(x) or not math.isfinite(x) or not 0.0 <= x <= top:
            raise ConfigError(f"{name}: must be a number in [0, {top}], got {x!r}")
    if not isinstance(c.counts, tuple) or not c.counts or not all(is_int(k) for k in c.counts):
        raise ConfigError(f"counts: must be a non-empty list of integers, got {c.counts!r}")
    if any(not 0 <= k <= MAX_COUNT for k in c.counts):
        raise ConfigError(f"counts: every count must be in 0..{MAX_COUNT}, got {c.counts!r}")
    if list(c.counts) != sorted(set(c.counts)):
        raise ConfigError(f"counts: must be distinct and ascending, got {c.counts!r}")
    if 0 not in c.counts:
        raise ConfigError(f"counts: must contain 0 (the baseline), got {c.counts!r}")
    if not isinstance(c.mechanism, str) or c.mechanism not in MECHANISMS:
        raise ConfigError(f"mechanism: must be one of {MECHANISMS}, got {c.mechanism!r}")
    if not isinstance(c.order, str) or c.order not in ORDERS:
        raise ConfigError(f"order: must be one of {ORDERS}, got {c.order!r}")
    if not isinstance(c.transient, bool):
        raise ConfigError(f"transient: must be true or false, got {c.transient!r}")
    if c.policy != "":
        parse_policy(c.policy, AGENT_KINDS, POLICY_ROLE)
    if c.window < c.max_count:
        raise ConfigError(
            f"window: must be at least max(counts) = {c.max_count}, so that a trial is "
            f"measured after its last interfering proposal (order 'after'), got {c.window}"
        )
    if c.rounds <= c.max_count + c.window:
        raise ConfigError(
            f"rounds: must exceed max(counts) + window = {c.max_count + c.window} so that a "
            f"trial can start and close within the run, got {c.rounds}"
        )
    if c.slots < 1 + c.max_count:
        raise ConfigError(
            f"slots: an 'unrelated' trial of count {c.max_count} needs {1 + c.max_count} "
            f"slots (its own and one per proposal), got {c.slots}"
        )
    pop = c.population
    if pop["honest"] < 1:
        raise ConfigError(
            "adversary_share: leaves no up-to-date honest agent to propose the valid updates "
            f"(population {pop})"
        )
    # The stream keeps every agent within the protocol's proposal limit; the pools must
    # be large enough for the busiest round (docs/evaluation.md).
    if pop["honest"] * PROPOSE_RATE < c.trials_per_round * len(c.counts):
        raise ConfigError(
            f"trials_per_round: {c.trials_per_round} trials per round need "
            f"{c.trials_per_round * len(c.counts)} valid updates in a round at most, more "
            f"than {pop['honest']} up-to-date honest agents may propose ({PROPOSE_RATE} each)"
        )
    conflicting = pop["stale"] + pop["adversary"]
    if c.max_count > 0 and conflicting * PROPOSE_RATE < c.trials_per_round * c.max_count:
        raise ConfigError(
            f"stale_share: the {conflicting} stale and adversarial agents may send "
            f"{conflicting * PROPOSE_RATE} proposals a round ({PROPOSE_RATE} each), fewer than "
            f"the {c.trials_per_round * c.max_count} interfering proposals of the busiest "
            f"round (trials_per_round x max(counts)); raise stale_share or adversary_share"
        )


__all__ = [
    "AGENT_KINDS",
    "DEFAULT_COUNTS",
    "DEFAULT_WINDOW",
    "FORMAL_REVIEW",
    "KINDS",
    "MECHANISMS",
    "ORDERS",
    "POLICY_ROLE",
    "PROPOSE_RATE",
    "REVIEWERS",
    "PlasticityConfig",
    "check",
    "from_mapping",
    "largest_remainder",
    "parse_scenario",
    "scenario_name",
]
