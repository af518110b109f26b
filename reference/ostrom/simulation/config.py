"""What one simulation run is: the population, the workload, the governance mechanism.

Defaults are the paper's §5.2 setup (docs/design.md §10): 100 agents, 1,000 artifacts (50% good,
30% mediocre, 20% bad), 500 rounds, two proposals per round, 5 reviewers, quorum 3,
5 deliberation rounds, 15% feedback noise.  The archetype parameters (how noisy an
honest judgment is, how often a lazy agent shows up, ...) are ours: the paper does not
give them.  They were fixed from the written design before any result was looked at, and
docs/evaluation.md lists them with the reason for each.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Final, TypeVar

from ostrom.protocol.params import DEFAULTS

#: The seven archetypes of the paper, plus ``bloc`` (experiment (b): a coordinated
#: adversary).  docs/evaluation.md describes each one's behaviour.
ARCHETYPES: Final = (
    "honest",
    "sycophant",
    "malicious",
    "strategic",
    "adaptive",
    "broken",
    "lazy",
    "bloc",
)

#: Archetypes that are not honest by intent (used for "adversarial" counts).
ADVERSARIAL: Final = frozenset({"malicious", "strategic", "adaptive", "bloc"})

#: Population mixes (shares of agents).  The paper gives only the honest share (40% /
#: 25%); the rest is split as docs/evaluation.md explains.
MIXES: Final[dict[str, dict[str, float]]] = {
    "moderate": {
        "honest": 0.40,
        "sycophant": 0.15,
        "malicious": 0.10,
        "strategic": 0.10,
        "adaptive": 0.05,
        "broken": 0.10,
        "lazy": 0.10,
    },
    "high": {
        "honest": 0.25,
        "sycophant": 0.15,
        "malicious": 0.20,
        "strategic": 0.10,
        "adaptive": 0.10,
        "broken": 0.10,
        "lazy": 0.10,
    },
    # experiment (b): the same adversity as "moderate", but the malicious, strategic and
    # adaptive agents are one coordinated bloc
    "bloc": {
        "honest": 0.40,
        "sycophant": 0.15,
        "bloc": 0.25,
        "broken": 0.10,
        "lazy": 0.10,
    },
    # experiment (b), under stress: the "high" mix's adversaries as one bloc of 40%
    "bloc_high": {
        "honest": 0.25,
        "sycophant": 0.15,
        "bloc": 0.40,
        "broken": 0.10,
        "lazy": 0.10,
    },
}

#: Governance mechanisms: the protocol and the baselines.  ``majority`` (concealed,
#: simultaneous votes) is the main baseline; ``weighted_majority`` is the same ballot with
#: reputation weights; ``majority_open`` (open votes in sequence, adversaries first) is the
#: weaker variant the first evaluation used, kept to size what that choice was worth.
GOVERNANCE: Final = (
    "protocol",
    "majority",
    "weighted_majority",
    "majority_open",
    "single_curator",
    "ungoverned",
    "weighted_no_deliberation",
)

#: Ablations of the protocol (each removes one component).
#: ``no_reputation`` removes reputation everywhere (weights, tiers and so recruitment);
#: ``no_reputation_weighting`` only flattens the weights (tiers still follow reputation).
ABLATIONS: Final = (
    "no_commit_reveal",
    "no_reputation",
    "no_reputation_weighting",
    "no_sanctions",
    "no_farming_cap",
)

#: Artifact quality classes and their latent quality ranges [lo, hi).
QUALITY_RANGES: Final[dict[str, tuple[float, float]]] = {
    "good": (0.7, 1.0),
    "mediocre": (0.4, 0.7),
    "bad": (0.0, 0.4),
}
#: A perceived quality at or above this is "should be accepted": only good artifacts are
#: (precision counts good artifacts only).
ACCEPT_THRESHOLD: Final = 0.7


#: The integer fields' ranges.  The upper bounds keep a run finite in time and memory
#: (a billion agents or scans per round would run for ever without a word).
INT_RANGES: Final[dict[str, tuple[int, int]]] = {
    "agents": (2, 100_000),
    "artifacts": (1, 10_000_000),
    "rounds": (1, 1_000_000),
    "proposals_per_round": (0, 10_000),
    "reviewers": (1, 1_000),
    "quorum": (1, 1_000),
    "deliberation_rounds": (1, 10_000),
    "adaptive_switch": (0, 1_000_000),
    "dispute_scans": (0, 100_000),
}
#: The largest standard deviation of an agent's reading of a quality in [0, 1].
MAX_NOISE: Final = 10.0
#: The reputation a founder needs to be at tier 1 (the protocol's tier1_rep).
FOUNDER_TIER_REP: Final = DEFAULTS.tier1_rep


class ConfigError(ValueError):
    """A configuration that cannot be run (the message says which field and why)."""


#: A plugged agent policy (``SimConfig.policy``, ``ostrom simulate --policy``):
#: ``MODULE:ATTR[=ARCHETYPE]``, MODULE a dotted module name or a path to a .py file.
_POLICY_SPEC = re.compile(
    r"^(?P<module>[^:=]+):(?P<attr>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)"
    r"(?:=(?P<role>[^=]*))?$"
)
#: The archetype whose agents a plugged policy takes when the spec names none.
DEFAULT_POLICY_ROLE: Final = "honest"


@dataclass(frozen=True)
class PolicySpec:
    """A parsed ``MODULE:ATTR[=ARCHETYPE]``: where a plugged policy is and whose seats it
    takes (``ostrom.simulation.policy`` loads it)."""

    module: str
    attr: str
    role: str

    @property
    def name(self) -> str:
        """How messages and tables name the policy: ``module:attr``."""
        return f"{self.module}:{self.attr}"


def parse_policy(
    spec: object,
    roles: tuple[str, ...] | None = ARCHETYPES,
    default_role: str = DEFAULT_POLICY_ROLE,
) -> PolicySpec:
    """``ConfigError`` for a spec that is not ``MODULE:ATTR[=ARCHETYPE]`` with a known
    archetype (nothing is imported here: a config stays cheap to build and check).  The
    forgetting, plasticity and retrieval models pass their own agent kinds as ``roles``
    (and the one a spec without ``=ROLE`` takes); ``None`` leaves the role to the config
    that holds the spec (its own check has refused a wrong one)."""
    if not isinstance(spec, str):
        raise ConfigError(f"policy: must be a string MODULE:ATTR[=ARCHETYPE], got {spec!r}")
    m = _POLICY_SPEC.match(spec.strip())
    if m is None:
        raise ConfigError(
            f"policy: {spec!r} is not MODULE:ATTR[=ARCHETYPE] (MODULE a module name or a "
            "path to a .py file, ATTR a policy object, class or factory in it)"
        )
    role = m["role"] if m["role"] is not None else default_role
    if roles is not None and role not in roles:
        what = "an archetype" if roles == ARCHETYPES else "an agent kind of this model"
        raise ConfigError(f"policy: {role!r} is not {what} (one of {', '.join(roles)})")
    return PolicySpec(m["module"].strip(), m["attr"], role)


@dataclass(frozen=True)
class SimConfig:
    """One run's configuration (everything but the seed).  Units in the comments."""

    # --- population and workload (paper §5.2)
    scenario: str = "moderate"  # a MIXES key, or "custom" with ``mix``
    mix: tuple[tuple[str, float], ...] = ()  # custom shares (archetype, share); sums to 1
    agents: int = 100
    artifacts: int = 1000
    quality_mix: tuple[float, float, float] = (0.5, 0.3, 0.2)  # good, mediocre, bad
    rounds: int = 500
    proposals_per_round: int = 2
    reviewers: int = 5
    quorum: int = 3
    deliberation_rounds: int = 5
    feedback_noise: float = 0.15  # probability that one piece of reputation evidence (a
    #                              vote's or a submitter's) is flipped
    # --- governance
    governance: str = "protocol"
    ablations: tuple[str, ...] = ()
    feedback: str = "decision"  # "decision" (the paper's rule) or "truth" (experiment (a))
    # --- archetype behaviour (ours; docs/evaluation.md)
    perception_noise: float = 0.10  # sd of an agent's reading of an artifact's quality
    deliberation_noise: float = 0.07  # the same after deliberation (the paper's "binary
    #                                   accuracy improvement")
    sycophant_noise: float = 0.25  # a sycophant's own reading, when it has nothing to copy
    strategic_attack: float = 0.30  # share of ballots a strategic agent votes against
    adaptive_switch: int = 150  # round from which an adaptive agent exploits (rounds)
    bloc_target: float = 0.50  # share of artifacts the bloc votes against the truth
    broken_malfunction: float = 0.30  # probability that a broken agent's message is garbage
    lazy_participation: float = 0.50  # probability that a lazy reviewer commits at all
    lazy_reveal: float = 0.70  # probability that a lazy reviewer who committed reveals
    dispute_scans: int = 2  # (agent, active artifact) pairs considered for a dispute per round
    accept_threshold: float = ACCEPT_THRESHOLD  # a reading at or above it says accept
    #                                           (honest, sycophant and adversary readings;
    #                                           precision still counts good = quality 0.7+)
    reputation_decay: float = DEFAULTS.delta  # the reputation book's evidence decay δ
    #                                          (per round; the protocol's parameter)
    founder_reputation: float = 0.60  # every agent's prior mean (tier 1 at the start)
    founder_evidence: float = 2.0  # the prior's weight (pseudo-observations)
    # --- a plugged agent policy (ostrom.simulation.policy; "" = the archetypes only)
    policy: str = ""  # MODULE:ATTR[=ARCHETYPE]: the agents drawn as ARCHETYPE use it

    def __post_init__(self) -> None:
        check(self)

    @property
    def shares(self) -> dict[str, float]:
        """Archetype -> share of agents."""
        if self.scenario == "custom":
            return dict(self.mix)
        return dict(MIXES[self.scenario])

    @property
    def label(self) -> str:
        """The configuration's name in tables: governance, then ablations."""
        return "+".join((self.governance, *self.ablations)) if self.ablations else self.governance

    def with_(self, **changes: Any) -> SimConfig:
        return replace(self, **changes)

    def with_scenario(self, scenario: str) -> SimConfig:
        """The same configuration with another population mix (``RunConfig``)."""
        return self.with_(scenario=scenario)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "policy" and not v:
                continue  # no plugged policy: the description every result file had before
            if f.name == "mix":
                v = dict(v)
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out


def is_int(v: object) -> bool:
    """An ``int`` that is not a ``bool`` (True is an int to Python, not to a config)."""
    return isinstance(v, int) and not isinstance(v, bool)


_C = TypeVar("_C")


def fields_dict(c: Any) -> dict[str, Any]:
    """Every field of the dataclass ``c``, tuples as lists (JSON-able): the ``to_dict`` of
    the experiments' run configurations (``ForgetConfig``, ``PlasticityConfig``,
    ``RetrievalConfig``), each adding what it derives."""
    out: dict[str, Any] = {}
    for f in fields(c):
        v = getattr(c, f.name)
        if f.name == "policy" and not v:
            continue  # no plugged policy: the description every result file had before
        out[f.name] = list(v) if isinstance(v, tuple) else v
    return out


def replace_known(c: _C, changes: Mapping[str, Any]) -> _C:
    """``dataclasses.replace(c, **changes)``, refusing a field ``c`` does not have with a
    ``ConfigError`` that names it and lists the fields (a config file's typo)."""
    names = {f.name for f in fields(c)}  # type: ignore[arg-type]
    unknown = sorted(str(k) for k in changes if k not in names)
    if unknown:
        raise ConfigError(f"{unknown[0]}: unknown field (fields: {sorted(names)})")
    return replace(c, **changes)  # type: ignore[type-var]


def check_int_ranges(
    c: object, ranges: Mapping[str, tuple[int, int]], optional: Iterable[str] = ()
) -> None:
    """``ConfigError`` naming the first field of ``ranges`` that is not an integer in its
    range (a field in ``optional`` may also be None).  One check for every run
    configuration: ``SimConfig``, ``ForgetConfig``, ``PlasticityConfig``."""
    may_be_none = set(optional)
    for name, (lo, hi) in ranges.items():
        v = getattr(c, name)
        if v is None and name in may_be_none:
            continue
        if not is_int(v) or not lo <= v <= hi:
            raise ConfigError(f"{name}: must be an integer in {lo}..{hi:,}, got {v!r}")


def is_number(v: object) -> bool:
    """An ``int`` or ``float`` that is not a ``bool`` (NaN and infinities included: each
    check says whether it wants them finite).  The one such test of every run
    configuration: ``SimConfig``, ``ForgetConfig``, ``PlasticityConfig``,
    ``RetrievalConfig``, and the answers of a plugged policy."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def check(c: SimConfig) -> None:
    """Refuse a configuration that cannot be run, naming the field."""
    for name in ("scenario", "governance", "feedback"):
        if not isinstance(getattr(c, name), str):
            raise ConfigError(f"{name}: must be a string, got {getattr(c, name)!r}")
    if not isinstance(c.mix, tuple) or not all(
        isinstance(e, tuple) and len(e) == 2 and isinstance(e[0], str) and is_number(e[1])
        for e in c.mix
    ):
        raise ConfigError(
            f"mix: must be archetype = share pairs with numeric shares, got {c.mix!r}"
        )
    if c.mix and c.scenario != "custom":
        raise ConfigError(
            f"mix: a custom mix needs scenario 'custom' (scenario is {c.scenario!r}); "
            "leave scenario out of a config file that has a [mix] table"
        )
    if not isinstance(c.quality_mix, tuple) or not all(is_number(v) for v in c.quality_mix):
        raise ConfigError(
            f"quality_mix: three numbers (good, mediocre, bad), got {c.quality_mix!r}"
        )
    if not isinstance(c.ablations, tuple) or not all(isinstance(a, str) for a in c.ablations):
        raise ConfigError(f"ablations: a list of names, got {c.ablations!r}")
    for f in fields(c):
        if f.type in ("float", "int") and not is_number(getattr(c, f.name)):
            raise ConfigError(f"{f.name}: must be a number, got {getattr(c, f.name)!r}")
    if c.scenario != "custom" and c.scenario not in MIXES:
        raise ConfigError(f"scenario: {c.scenario!r} is not one of {[*MIXES, 'custom']}")
    if c.scenario == "custom":
        if not c.mix:
            raise ConfigError("scenario 'custom' needs a mix (archetype -> share)")
        for name, share in c.mix:
            if name not in ARCHETYPES:
                raise ConfigError(f"mix: unknown archetype {name!r} (one of {ARCHETYPES})")
            if not 0.0 <= share <= 1.0:
                raise ConfigError(f"mix: share of {name} must be in [0, 1], got {share}")
        if abs(sum(s for _, s in c.mix) - 1.0) > 1e-9:
            raise ConfigError(f"mix: shares must sum to 1, got {sum(s for _, s in c.mix)}")
    for f in fields(c):
        v = getattr(c, f.name)
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(f"{f.name}: must be a finite number, got {v!r}")
    check_int_ranges(c, INT_RANGES)
    if c.quorum > c.reviewers:
        raise ConfigError(f"quorum ({c.quorum}) cannot exceed reviewers ({c.reviewers})")
    if c.reviewers >= c.agents:
        raise ConfigError(f"reviewers ({c.reviewers}) must be fewer than agents ({c.agents})")
    probs = (
        "feedback_noise",
        "strategic_attack",
        "bloc_target",
        "broken_malfunction",
        "lazy_participation",
        "lazy_reveal",
        "founder_reputation",
        "accept_threshold",
        "reputation_decay",
    )
    for name in probs:
        v = getattr(c, name)
        if not isinstance(v, int | float) or not 0.0 <= v <= 1.0:
            raise ConfigError(f"{name}: must be a probability in [0, 1], got {v!r}")
    for name in ("perception_noise", "deliberation_noise", "sycophant_noise"):
        v = getattr(c, name)
        if not isinstance(v, int | float) or not 0 <= v <= MAX_NOISE:
            raise ConfigError(
                f"{name}: must be a standard deviation in [0, {MAX_NOISE}] (of a quality "
                f"in [0, 1]), got {v!r}"
            )
    if c.founder_reputation < FOUNDER_TIER_REP:
        raise ConfigError(
            f"founder_reputation: every agent starts at tier 1, which needs a reputation of "
            f"at least tier1_rep = {FOUNDER_TIER_REP} (the protocol's parameter), got "
            f"{c.founder_reputation!r}"
        )
    if c.founder_evidence < 2.0:
        raise ConfigError(
            f"founder_evidence: at least 2 (the uniform prior), got {c.founder_evidence}"
        )
    if len(c.quality_mix) != 3 or abs(sum(c.quality_mix) - 1.0) > 1e-9 or min(c.quality_mix) < 0:
        raise ConfigError(
            f"quality_mix: three shares (good, mediocre, bad) summing to 1, got {c.quality_mix}"
        )
    if c.governance not in GOVERNANCE:
        raise ConfigError(f"governance: {c.governance!r} is not one of {GOVERNANCE}")
    for a in c.ablations:
        if a not in ABLATIONS:
            raise ConfigError(f"ablations: {a!r} is not one of {ABLATIONS}")
    if c.ablations and c.governance != "protocol":
        raise ConfigError("ablations apply to the protocol only")
    if c.feedback not in ("decision", "truth"):
        raise ConfigError(f"feedback: {c.feedback!r} is not 'decision' or 'truth'")
    if c.policy != "":
        role = parse_policy(c.policy).role
        if role not in population(c):
            raise ConfigError(
                f"policy: no agent is {role} in scenario {c.scenario} with {c.agents} agents "
                "(the policy would never decide)"
            )
    needed = c.rounds * c.proposals_per_round
    if c.artifacts < needed:
        raise ConfigError(
            f"artifacts ({c.artifacts}) must cover rounds x proposals_per_round ({needed})"
        )


def load_config(path: Path, base: SimConfig | None = None) -> SimConfig:
    """A config from a TOML file: top-level fields of ``SimConfig``, and a ``[mix]`` table
    (archetype = share) which makes the scenario ``custom``.  Unknown keys are refused."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not TOML: {exc}") from None
    return from_mapping(doc, base, where=str(path))


def from_mapping(
    doc: Mapping[str, Any], base: SimConfig | None = None, where: str = "config"
) -> SimConfig:
    """``SimConfig`` fields from a mapping (a ``mix`` table makes the scenario custom)."""
    base = base or SimConfig()
    names = {f.name for f in fields(SimConfig)}
    changes: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "mix" and isinstance(value, Mapping) and not value:
            continue  # an empty mix table: no custom mix
        if key == "mix":
            if not isinstance(value, Mapping):
                raise ConfigError(f"{where}: mix must be a table of archetype = share")
            mix = []
            for k, v in value.items():
                if not is_number(v):
                    raise ConfigError(f"{where}: mix: share of {k} must be a number, got {v!r}")
                mix.append((str(k), float(v)))
            changes["mix"] = tuple(sorted(mix))
            if doc.get("scenario", "custom") != "custom":
                raise ConfigError(
                    f"{where}: a [mix] table makes the scenario custom; scenario = "
                    f"{doc['scenario']!r} contradicts it"
                )
            changes["scenario"] = "custom"
        elif key not in names:
            raise ConfigError(f"{where}: unknown field {key!r} (fields: {sorted(names)})")
        elif isinstance(value, list):
            changes[key] = tuple(value)
        else:
            changes[key] = value
    try:
        return replace(base, **changes)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def population(c: SimConfig) -> list[str]:
    """The archetype of each of ``c.agents`` agents, in a fixed order (largest remainder:
    the counts are the shares of ``c.agents``, rounded so they sum to it)."""
    shares = c.shares
    exact = {a: shares[a] * c.agents for a in ARCHETYPES if shares.get(a, 0) > 0}
    counts = {a: int(v) for a, v in exact.items()}
    rest = c.agents - sum(counts.values())
    for a in sorted(exact, key=lambda a: (-(exact[a] - counts[a]), ARCHETYPES.index(a)))[:rest]:
        counts[a] += 1
    return [a for a in ARCHETYPES for _ in range(counts.get(a, 0))]


__all__ = [
    "ABLATIONS",
    "ACCEPT_THRESHOLD",
    "ADVERSARIAL",
    "ARCHETYPES",
    "DEFAULT_POLICY_ROLE",
    "GOVERNANCE",
    "MIXES",
    "QUALITY_RANGES",
    "ConfigError",
    "PolicySpec",
    "SimConfig",
    "check_int_ranges",
    "fields_dict",
    "from_mapping",
    "is_int",
    "is_number",
    "load_config",
    "parse_policy",
    "population",
    "replace_known",
]
