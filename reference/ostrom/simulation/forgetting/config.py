"""What one run of the forgetting model is: the population, the world, the mechanism.

Every default here was fixed from the written design (docs/evaluation.md, "Collective
forgetting against ground truth") before any result was looked at; the protocol's own
parameters (θ, ω_D, ω_R, the decay scales, α, the FG-1 floor) are ``Params``' defaults and
are never changed by this model except by the ablations, each of which changes one thing.

Scenarios are population presets (``SCENARIOS``): ``honest`` (20 agents, careful and
sloppy), ``adversarial`` (20 agents, a quarter of them *erasers* who vote to forget what is
still valuable), ``four`` (the paper's four agents — below FG-1's population floor of 12,
so the protocol may forget nothing there: the floor's price, shown, not hidden) and
``consensus`` (12 agents on a smaller world, sized so that every command of a run can be
ordered by PBFT within the experiment's time budget).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Final

from ostrom.simulation.config import (
    ConfigError,
    check_int_ranges,
    fields_dict,
    is_number,
    parse_policy,
)

#: The mechanisms: the protocol and the five baselines that are not the protocol.
MECHANISMS: Final = (
    "protocol",
    "keep_all",
    "lru",
    "time_decay",
    "single_curator",
    "majority",
)

#: The mechanisms in which agents vote (the vote rule matters to them only).
AGENT_MECHANISMS: Final = frozenset({"protocol", "single_curator", "majority"})

#: Changes to the protocol, each removing one component (``no_floor`` is the issue's
#: "protocol without the population floor" baseline; the other four are ablations).
ABLATIONS: Final = ("no_floor", "decay_only", "relevance_only", "no_confidence", "no_reputation")

#: Where the protocol's commands are executed: one sans-IO orchestrator (``local``), the
#: replicated orchestrator under PBFT (N = 4, f = 1, one faulty replica), or the
#: Co-Forgetting paper's Algorithm 1 deciding the same forget decisions.
GOVERNANCE: Final = ("local", "pbft", "alg1")

#: The faulty replica of a ``pbft`` or ``alg1`` run: a silent backup, a silent primary
#: (Algorithm 1: coordinator), a backup that sends conflicting votes while reachable.
FAULTS: Final = ("silent-backup", "silent-primary", "equivocating")

#: When an honest agent sends its (final) forget vote: as soon as its keep score is below
#: θ, as docs/forgetting.md's agent side says (``at_threshold``), or only once its
#: confidence has reached α (``at_alpha``): a forget vote cannot be raised later, and
#: with every agent voting a decision needs the weighted mean confidence to reach α.
VOTE_RULES: Final = ("at_threshold", "at_alpha")

#: Agent kinds.  ``careful`` and ``sloppy`` are honest with little and much judgment
#: noise; ``eraser`` votes forget, with full confidence, on what is still useful.
KINDS: Final = ("careful", "sloppy", "eraser")
#: The kind whose agents a plugged policy (``policy``) takes when its spec names none.
POLICY_ROLE: Final = "careful"


@dataclass(frozen=True)
class Population:
    """A scenario: how many agents, of which kinds, and how big the world is."""

    agents: int
    mix: tuple[tuple[str, float], ...]  # kind -> share
    topics: int  # topics over the run (half of them alive at epoch 0)
    junk_rate: float  # never-useful items arriving per epoch


SCENARIOS: Final[dict[str, Population]] = {
    "honest": Population(20, (("careful", 0.85), ("sloppy", 0.15)), 16, 0.1),
    "adversarial": Population(20, (("careful", 0.60), ("sloppy", 0.15), ("eraser", 0.25)), 16, 0.1),
    "four": Population(4, (("careful", 1.0),), 16, 0.1),
    "consensus": Population(12, (("careful", 0.85), ("sloppy", 0.15)), 8, 0.05),
}

#: Integer fields and their ranges (the upper bounds keep a run finite).
INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    "epochs": (1, 100_000),
    "agents": (1, 10_000),
    "topics": (1, 10_000),
    "slots_per_topic": (1, 1_000),
    "queries_per_epoch": (0, 10_000),
    "stray_per_epoch": (0, 10_000),
    "sweep_every": (1, 10_000),
    "context_window": (1, 10_000),
}
#: Float fields and their ranges.
FLOAT_RANGES: Final[dict[str, tuple[float, float]]] = {
    "topic_life": (1.0, 1e6),
    "supersede_every": (1.0, 1e6),
    "junk_rate": (0.0, 100.0),
    "noise_careful": (0.0, 10.0),
    "noise_sloppy": (0.0, 10.0),
}


@dataclass(frozen=True)
class ForgetConfig:
    """One run of the forgetting model (docs/evaluation.md lists each field's reason).

    ``agents``, ``topics`` and ``junk_rate`` of ``None`` take the scenario's value."""

    scenario: str = "honest"
    mechanism: str = "protocol"
    ablations: tuple[str, ...] = ()
    governance: str = "local"
    fault: str = "silent-backup"
    vote_rule: str = "at_threshold"
    epochs: int = 500  # the paper's 500 epochs; one epoch is one orchestrator tick
    agents: int | None = None
    topics: int | None = None
    junk_rate: float | None = None
    slots_per_topic: int = 12  # entities per topic; one current item each
    topic_life: float = 600.0  # mean epochs a topic stays of interest (exponential)
    supersede_every: float = 300.0  # mean epochs until a slot's current item is replaced
    queries_per_epoch: int = 6  # accesses by the community's queries, per epoch
    stray_per_epoch: int = 1  # accesses to a uniformly random live item (browsing noise)
    sweep_every: int = 10  # an agent assesses the items it has not voted on every N epochs
    context_window: int = 20  # R is relevance to the queries of the last N epochs
    noise_careful: float = 0.10  # sd of a careful agent's error on R
    noise_sloppy: float = 0.30  # sd of a sloppy agent's error on R
    # a plugged agent policy (ostrom.simulation.policy, hook ``forgets``): the agents of
    # KIND cast their forget votes by it; "" = every agent by its kind's rule (judges)
    policy: str = ""  # MODULE:ATTR[=KIND]

    def __post_init__(self) -> None:
        check(self)

    @property
    def population(self) -> Population:
        return SCENARIOS[self.scenario]

    @property
    def n_agents(self) -> int:
        return self.agents if self.agents is not None else self.population.agents

    @property
    def n_topics(self) -> int:
        return self.topics if self.topics is not None else self.population.topics

    @property
    def junk(self) -> float:
        return self.junk_rate if self.junk_rate is not None else self.population.junk_rate

    @property
    def label(self) -> str:
        """The configuration's name in tables."""
        if self.governance == "alg1":
            return f"alg1 [{self.fault}]"
        name = "+".join((self.mechanism, *self.ablations))
        if self.vote_rule == "at_alpha" and self.mechanism in AGENT_MECHANISMS:
            name += " [c≥α]"
        return f"{name} [pbft: {self.fault}]" if self.governance == "pbft" else name

    def with_(self, **changes: Any) -> ForgetConfig:
        try:
            return replace(self, **changes)
        except TypeError as exc:  # a field this class does not have
            raise ConfigError(f"forgetting: {exc}") from None

    def with_scenario(self, scenario: str) -> ForgetConfig:
        return self.with_(scenario=scenario)

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


#: The experiment's reference cell, with which every other is compared by seed: the
#: protocol, honest agents voting once their confidence reaches α (its label).  The one
#: definition: the experiment's cells, its report and docs/evaluation.md's tables use it.
REFERENCE: Final = "protocol [c≥α]"


def check(c: ForgetConfig) -> None:
    """Raise ``ConfigError`` naming the first field that is not valid."""
    for name, choices in (
        ("scenario", tuple(SCENARIOS)),
        ("mechanism", MECHANISMS),
        ("governance", GOVERNANCE),
        ("fault", FAULTS),
        ("vote_rule", VOTE_RULES),
    ):
        v = getattr(c, name)
        if not isinstance(v, str) or v not in choices:
            raise ConfigError(f"{name}: {v!r} is not one of {list(choices)}")
    if not isinstance(c.ablations, tuple) or not all(isinstance(a, str) for a in c.ablations):
        raise ConfigError(f"ablations: must be a tuple of names, got {c.ablations!r}")
    for a in c.ablations:
        if a not in ABLATIONS:
            raise ConfigError(f"ablations: {a!r} is not one of {list(ABLATIONS)}")
    if len(set(c.ablations)) != len(c.ablations):
        raise ConfigError(f"ablations: listed twice in {list(c.ablations)}")
    if c.ablations and c.mechanism != "protocol":
        raise ConfigError(f"ablations: change the protocol only, not {c.mechanism!r}")
    if {"decay_only", "relevance_only"} <= set(c.ablations):
        raise ConfigError("ablations: decay_only and relevance_only leave no keep score")
    if c.governance != "local" and (c.mechanism != "protocol" or c.ablations):
        raise ConfigError(f"governance {c.governance!r}: runs the plain protocol only")
    if c.policy != "":
        parse_policy(c.policy, KINDS, POLICY_ROLE)
    check_int_ranges(c, INT_RANGES, optional=("agents", "topics"))
    for name, (flo, fhi) in FLOAT_RANGES.items():
        v = getattr(c, name)
        if v is None and name == "junk_rate":
            continue
        if not is_number(v) or not math.isfinite(v) or not flo <= v <= fhi:
            raise ConfigError(f"{name}: must be a number in [{flo}, {fhi}], got {v!r}")


__all__ = [
    "ABLATIONS",
    "AGENT_MECHANISMS",
    "FAULTS",
    "FLOAT_RANGES",
    "GOVERNANCE",
    "INT_RANGES",
    "KINDS",
    "MECHANISMS",
    "POLICY_ROLE",
    "REFERENCE",
    "SCENARIOS",
    "VOTE_RULES",
    "ForgetConfig",
    "Population",
    "check",
]
