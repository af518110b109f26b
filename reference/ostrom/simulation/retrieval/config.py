"""What one run of the retrieval experiment is (``RetrievalConfig``).

Why a configuration of its own: the plasticity experiment (``simulation.plasticity``)
asks which value a slot *serves*; this one asks what an agent *retrieves* when it
searches a memory of sentences, and whether it answers with the current value — the
retrieval-to-decision path the interference paper measures (docs/evaluation.md,
"Plasticity at retrieval").  Its workload adds sentences, queries and a retrieval depth,
and it removes the plasticity world's persona leak: there, valid updates came only from
up-to-date agents and conflicts only from stale or adversarial ones, so acceptance
taught reputation who was who.  Here every proposal's submitter is drawn from the whole
population whatever the proposal says, and staleness is a per-(agent, trial) draw, not a
kind of agent.

**Every default was fixed from the written design before any result was looked at**;
the reason for each is beside it.  The protocol runs with its own defaults
(``ostrom.protocol.params.DEFAULTS``) but ``embedding_dim`` (the LSA rank: the node must
accept the experiment's vectors).

Hostile input: a value from a command line or a TOML file either constructs a config or
raises ``ConfigError`` naming the field; never another exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ostrom.protocol.commands import MAX_EMBEDDING
from ostrom.simulation.config import (
    ConfigError,
    check_int_ranges,
    fields_dict,
    is_int,
    is_number,
    parse_policy,
    replace_known,
)
from ostrom.simulation.plasticity.config import (
    DEFAULT_COUNTS,
    DEFAULT_WINDOW,
    PROPOSE_RATE,
    parse_scenario,
    scenario_name,
)

__all__ = [
    "AGENT_KINDS",
    "ATTRIBUTES",
    "CONDITIONS",
    "KINDS",
    "PHRASINGS",
    "POLICY_ROLE",
    "STORES",
    "RetrievalConfig",
    "from_mapping",
]

#: The memories compared (``stores``): the node itself, and three ungoverned baselines.
STORES: Final = ("ostrom", "ungoverned", "add_only_recency", "last_writer_wins")
#: The interference kinds: k proposals of one wrong value for the slot, or of its old value.
KINDS: Final = ("same_slot", "repeated")
#: ``varied``: each sentence's template is drawn (lexical overlap with the query varies
#: between versions, so BM25 prefers some versions for their words, not their age);
#: ``fixed``: every sentence of a slot uses one template (the versions differ only in
#: the value: the lexical-overlap control).
PHRASINGS: Final = ("varied", "fixed")
#: The conditions of the experiment's cells: (order, transient, phrasing).
CONDITIONS: Final[dict[str, tuple[str, bool, str]]] = {
    "after": ("after", False, "varied"),
    "before": ("before", False, "varied"),
    "transient": ("after", True, "varied"),
    "fixed": ("after", False, "fixed"),
}
ORDERS: Final = ("after", "before")
#: The agents' kinds (``world``; staleness is per trial, not a kind).  A plugged policy
#: takes the seats of one of them, ``honest`` when its spec names none.
AGENT_KINDS: Final = ("honest", "adversary")
POLICY_ROLE: Final = "honest"
#: What a slot is about: (entity, attribute) pairs, e.g. "the deploy region of orlan".
#: Two-word attributes share words ("release", "owner") so that facts compete lexically.
ATTRIBUTES: Final = (
    "deploy region",
    "release owner",
    "database port",
    "release codename",
    "retention period",
    "api version",
    "billing owner",
    "cache size",
    "log level",
    "build tool",
    "backup region",
    "api codename",
)

INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    "agents": (12, 10_000),
    "entities": (1, 100_000),
    "rounds": (1, 100_000),
    "trials_per_round": (1, 1_000),
    "window": (1, 10_000),
    "top_k": (1, 100),
    "lsa_rank": (2, 512),
}
MAX_NOISE: Final = 0.5
MAX_COUNT: Final = 64


@dataclass(frozen=True)
class RetrievalConfig:
    """One run's configuration (everything but the seed)."""

    # --- population
    agents: int = 30  # as the plasticity experiment: 6 reviewer panels' worth
    adversary_share: float = 0.0  # the scenario; swept (adv=0.00, adv=0.20)
    stale_prob: float = 0.30  # chance an honest agent still believes a slot's old value
    #   throughout a trial (drawn per agent and trial: staleness is a moment, not a kind)
    reviewer_noise: float = 0.10  # chance an honest judgment is flipped (as plasticity)
    # --- workload
    entities: int = 20  # x 12 attributes = 240 slots, each with a sentence from setup:
    #   every query competes with the 11 other facts about its entity and the 19 other
    #   entities' facts of its attribute
    rounds: int = 96  # 96 - 8 - 23 = 65 start rounds x 2 = 130 trials, >= 6 per cell
    trials_per_round: int = 2
    counts: tuple[int, ...] = DEFAULT_COUNTS  # k: interfering proposals of a trial
    window: int = DEFAULT_WINDOW  # rounds from the valid update to the measurement: every
    #   proposal of the trial has had its formal review and an arbitration (plasticity)
    top_k: int = 5  # retrieval depth: what an agent's context gets
    lsa_rank: int = 32  # dimensions of the dense (LSA) vectors; the node's embedding_dim
    # --- the cell
    store: str = "ostrom"  # one of STORES
    order: str = "after"  # the k proposals after the valid update, or before it
    transient: bool = False  # the interfering proposals are marked transient
    phrasing: str = "varied"  # one of PHRASINGS
    # --- a plugged agent policy (ostrom.simulation.policy, hook ``accepts``): the node's
    # reviewers and arbiters of ROLE decide by it; "" = the model's own reading for all
    policy: str = ""  # MODULE:ATTR[=ROLE], ROLE one of AGENT_KINDS

    def __post_init__(self) -> None:
        if isinstance(self.counts, list):
            object.__setattr__(self, "counts", tuple(self.counts))
        check(self)

    @property
    def scenario(self) -> str:
        return scenario_name(self.adversary_share)

    @property
    def condition(self) -> str:
        for name, cond in CONDITIONS.items():
            if cond == (self.order, self.transient, self.phrasing):
                return name
        marks = [self.order] + (["transient"] if self.transient else []) + [self.phrasing]
        return "+".join(marks)

    @property
    def label(self) -> str:
        return f"{self.store} [{self.condition}]"

    @property
    def max_count(self) -> int:
        return max(self.counts)

    @property
    def start_rounds(self) -> int:
        return max(0, self.rounds - self.max_count - self.window)

    @property
    def cells(self) -> tuple[tuple[str, int], ...]:
        return tuple((kind, k) for kind in KINDS for k in self.counts)

    def with_(self, **changes: Any) -> RetrievalConfig:
        if "scenario" in changes:
            changes = dict(changes)
            changes["adversary_share"] = parse_scenario(changes.pop("scenario"))
        return replace_known(self, changes)

    def with_scenario(self, scenario: str) -> RetrievalConfig:
        return self.with_(scenario=scenario)

    def to_dict(self) -> dict[str, Any]:
        out = fields_dict(self)
        out["label"] = self.label
        out["scenario"] = self.scenario
        return out


def from_mapping(doc: Mapping[str, Any], base: RetrievalConfig | None = None) -> RetrievalConfig:
    """A config from a mapping (a TOML table, parsed JSON): unknown keys are refused."""
    if not isinstance(doc, Mapping):
        raise ConfigError(f"config: must be a table of fields, got {doc!r}")
    return (base or RetrievalConfig()).with_(**{str(k): v for k, v in doc.items()})


def check(c: RetrievalConfig) -> None:
    """Refuse a configuration that cannot be run, naming the field."""
    check_int_ranges(c, INT_RANGES)
    for name, top in (
        ("adversary_share", 1.0),
        ("stale_prob", 1.0),
        ("reviewer_noise", MAX_NOISE),
    ):
        x = getattr(c, name)
        if not is_number(x) or not math.isfinite(x) or not 0.0 <= x <= top:
            raise ConfigError(f"{name}: must be a number in [0, {top}], got {x!r}")
    if not isinstance(c.counts, tuple) or not c.counts or not all(is_int(k) for k in c.counts):
        raise ConfigError(f"counts: must be a non-empty list of integers, got {c.counts!r}")
    if any(not 0 <= k <= MAX_COUNT for k in c.counts) or list(c.counts) != sorted(set(c.counts)):
        raise ConfigError(f"counts: distinct, ascending, each in 0..{MAX_COUNT}: {c.counts!r}")
    if 0 not in c.counts:
        raise ConfigError(f"counts: must contain 0 (the baseline), got {c.counts!r}")
    for name, allowed in (("store", STORES), ("order", ORDERS), ("phrasing", PHRASINGS)):
        v = getattr(c, name)
        if not isinstance(v, str) or v not in allowed:
            raise ConfigError(f"{name}: must be one of {allowed}, got {v!r}")
    if not isinstance(c.transient, bool):
        raise ConfigError(f"transient: must be true or false, got {c.transient!r}")
    if c.policy != "":
        parse_policy(c.policy, AGENT_KINDS, POLICY_ROLE)
    if c.window < c.max_count:
        raise ConfigError(f"window: must be at least max(counts) = {c.max_count}, got {c.window}")
    if c.rounds <= c.max_count + c.window:
        raise ConfigError(
            f"rounds: must exceed max(counts) + window = {c.max_count + c.window}, got {c.rounds}"
        )
    # each round's proposals (one per open trial still proposing: at most trials_per_round
    # x (1 + max K)) must fit the protocol's rate limit, or refusals would be artefacts
    busiest = c.trials_per_round * (c.max_count + 1)
    if busiest > c.agents * PROPOSE_RATE:
        raise ConfigError(
            f"agents: {c.agents} agents may send {c.agents * PROPOSE_RATE} proposals a round, "
            f"the busiest round may need {busiest}"
        )
    held = c.trials_per_round * (c.max_count + c.window + 1)  # slots held by open trials
    if c.entities * len(ATTRIBUTES) < 2 * held:
        raise ConfigError(
            f"entities: {c.entities * len(ATTRIBUTES)} slots, but open trials hold up to {held}"
            " (at least twice as many slots are needed, or trials would wait for slots)"
        )
    if c.lsa_rank > MAX_EMBEDDING:
        raise ConfigError(f"lsa_rank: at most {MAX_EMBEDDING}, got {c.lsa_rank}")
