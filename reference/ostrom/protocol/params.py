"""The parameter table: one typed table of every protocol parameter (docs/design.md §8).

Each parameter has a Python identifier (also its key in parameter files and vectors),
a default, a unit, an allowed range and a sentence saying what it controls.  The same
table renders the docs' parameter chapter (``ostrom params``), so code and docs cannot
drift.  ``Params`` is immutable; ``Params.from_mapping`` validates everything at once
and names every bad key, so a bad file changes nothing.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ostrom.protocol.commands import MAX_EMBEDDING

__all__ = [
    "DEFAULTS",
    "MARKDOWN_COLUMNS",
    "ParamError",
    "ParamInfo",
    "Params",
    "markdown_cells",
    "markdown_table",
    "param_range",
    "range_problems",
    "range_text",
    "table",
]


class ParamError(ValueError):
    """A parameter file or mapping is invalid; the message names every problem."""


#: Why the CI models give every deadline one round (``ParamInfo.why``).
_ONE_ROUND = "one round, the shortest deadline: every timeout is due at the next tick"


def _p(
    default: Any,
    unit: str,
    lo: float | None,
    hi: float | None,
    doc: str,
    tla: str | None = None,
    *,
    model: Any = None,
    why: str = "",
    lifecycle: bool | None = None,
    choices: tuple[str, ...] = (),
) -> Any:
    """One row: ``tla`` is the parameter's CONSTANT in spec/Lifecycle.tla (or in
    spec/LifecycleTrace.tla for the rate limits, which Lifecycle.tla abstracts), where shares
    are whole percentages (``spec_constants``); ``model`` is its value in the lifecycle's CI
    models and ``why`` the reason for that value (``ParamInfo``); ``lifecycle`` says the
    lifecycle rules read it, which every parameter with a ``tla`` constant does."""
    if lifecycle is None:
        lifecycle = tla is not None
    if (model is None) != (not why):
        raise AssertionError(f"a model value needs its reason, and a reason its value: {doc}")
    meta = {"unit": unit, "lo": lo, "hi": hi, "doc": doc, "tla": tla, "model": model,
            "why": why, "lifecycle": lifecycle, "choices": choices}  # fmt: skip
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Params:
    """Protocol parameters with docs/design.md §8 defaults. Time is in rounds (ticks).

    Two parameters are not in the source design; each repairs a threshold theorem that its
    weights break (docs/design.md §8, docs/thresholds.md): ``tally_min_side``, the side rule
    of TALLY-1 (a side wins a tally only with that many voters), and ``min_active_agents``,
    FG-1's population floor (no forget decision with fewer active agents).  ``tally_min_side``
    may not exceed ``quorum`` or ``q_dispute`` (a relation, refused like ``quorum >
    reviewers``: a unanimous quorum must be able to decide); ``tally_min_side =
    q_dispute`` is allowed but fails TALLY-1 (a lone keeper against too few retracters).
    """

    # review
    reviewers: int = _p(
        5,
        "agents",
        1,
        1000,
        "reviewers recruited per artifact",
        tla="Reviewers",
        model=2,
        why="two reviewers per ballot keep the state space small; with tally_min_side 2 only a "
        "unanimous ballot decides, a split goes to arbitration",
    )
    quorum: int = _p(
        3,
        "reveals",
        1,
        1000,
        "valid reveals needed for a tally to decide",
        tla="Quorum",
        model=2,
        why="both reviewers must reveal (quorum may not exceed reviewers)",
    )
    T_fast: int = _p(
        3, "rounds", 1, 10_000, "fast-track objection window", tla="TFast", model=1, why=_ONE_ROUND
    )
    T_delib: int = _p(
        5, "rounds", 1, 10_000, "deliberation phase length", tla="TDelib", model=1, why=_ONE_ROUND
    )
    T_commit: int = _p(
        2, "rounds", 1, 10_000, "commit phase length", tla="TCommit", model=1, why=_ONE_ROUND
    )
    T_reveal: int = _p(
        2, "rounds", 1, 10_000, "reveal phase length", tla="TReveal", model=1, why=_ONE_ROUND
    )
    T_arb: int = _p(
        5,
        "rounds",
        1,
        10_000,
        "arbitration deadline; status quo (rejected) after it",
        tla="TArb",
        model=1,
        why=_ONE_ROUND,
    )
    tau_accept: float = _p(
        0.60,
        "share",
        0.0,
        1.0,
        "weighted accept share at or above which a tally accepts",
        tla="TauAccept",
        model=0.60,
        why="a 2:1 weight split (a2 or a3 against a1) passes it on weight alone, which only "
        "the side rule stops",
    )
    tau_reject: float = _p(
        0.40,
        "share",
        0.0,
        1.0,
        "weighted accept share at or below which a tally rejects",
        tla="TauReject",
        model=0.40,
        why="the mirror image: a 1:2 weight split rejects on weight alone, which only the "
        "side rule stops",
    )
    tally_min_side: int = _p(
        2,
        "voters",
        1,
        1000,
        "fewest voters a side needs to win a tally (at most quorum and q_dispute); a lone "
        "heavy vote cannot decide (TALLY-1)",
        tla="MinSide",
        model=2,
        why="with two reviewers only a unanimous ballot decides; a split goes to arbitration, "
        "a 2:1 weight split (a2 or a3 against a1) too: the side rule at work",
    )
    # disputes
    dispute_reviewers: int = _p(
        7,
        "agents",
        1,
        1000,
        "fresh reviewers recruited for a dispute",
        tla="DisputeReviewers",
        model=2,
        why="a retraction needs two fresh dispute reviewers, and this registry leaves at most "
        "one (models/MCLifecycle.tla says why): every dispute here keeps; lifecycle-ci-solo "
        "adds a fifth reviewer-tier agent a4 and reaches retraction (a4 in the two-artifact "
        "model: over a million states)",
    )
    q_dispute: int = _p(
        5,
        "reveals",
        1,
        1000,
        "valid reveals needed for a dispute tally",
        tla="QDispute",
        model=2,
        why="at least tally_min_side (a parameter relation), hence 2",
    )
    tau_retract: float = _p(
        0.67,
        "share",
        0.0,
        1.0,
        "weighted retract share at or above which a dispute retracts",
        tla="TauRetract",
        model=0.67,
        why="the documented two-thirds; lifecycle-boundary retracts at exactly its threshold "
        "(60 there)",
    )
    max_disputes: int = _p(
        2,
        "disputes",
        0,
        1000,
        "disputes (and urgent reports) per artifact, ever",
        tla="MaxDisputes",
        model=1,
        why="one dispute or urgent report per artifact keeps the model small; "
        "lifecycle-defaults checks the default 2",
    )
    dispute_rate: int = _p(
        1,
        "per round",
        0,
        1000,
        "disputes and urgent reports one agent may open per round",
        tla="DisputeRate",
    )
    urgent_penalty: float = _p(
        3.0, "x", 1.0, 100.0, "penalty of an unfounded urgent report, in frivolous-dispute units"
    )
    # resubmission
    max_resubmit: int = _p(
        2,
        "resubmissions",
        0,
        1000,
        "resubmissions per artifact, ever",
        tla="MaxResubmit",
        model=1,
        why="one resubmission per artifact keeps the model small; lifecycle-defaults checks "
        "the default 2",
    )
    cooldown: int = _p(
        20,
        "rounds",
        0,
        100_000,
        "wait after rejected/expired/retracted before resubmitting",
        tla="Cooldown",
        model=1,
        why="the shortest wait that is still a wait: a resubmission is refused in the round "
        "its artifact stopped, and allowed from the next",
    )
    r_resubmit: float = _p(
        0.5, "reputation", 0.0, 1.0, "submitter reputation needed to resubmit", lifecycle=True
    )
    # rate limits (σ2 lowers the proposal rate)
    propose_rate: int = _p(
        2,
        "per round",
        1,
        1000,
        "proposals and resubmissions per agent per round",
        tla="ProposeRate",
    )
    propose_rate_limited: int = _p(
        1, "per round", 0, 1000, "the same under sanction level σ2", tla="ProposeRateLimited"
    )
    # reputation and weights
    delta: float = _p(0.01, "per round", 0.0, 1.0, "evidence decay factor")
    eigentrust_a: float = _p(
        0.15, "weight", 0.0, 1.0, "EigenTrust weight of the pre-trusted seed vector"
    )
    w_min: float = _p(
        0.1, "weight", 0.0, 1.0, "smallest voting weight (newcomers, Sybils)", lifecycle=True
    )
    w_max: float = _p(1.0, "weight", 0.0, 100.0, "largest voting weight", lifecycle=True)
    farm_window: int = _p(
        10, "rounds", 1, 100_000, "farming-cap window: weight gain is bounded over this many rounds"
    )
    farm_gain: float = _p(
        0.1, "weight", 0.0, 100.0, "farming cap: most an agent's weight may rise within farm_window"
    )
    tier1_rep: float = _p(0.55, "reputation", 0.0, 1.0, "expected reputation for tier 1")
    tier1_rounds: int = _p(10, "rounds", 0, 100_000, "time in tier 0 before tier 1")
    tier2_rep: float = _p(0.70, "reputation", 0.0, 1.0, "expected reputation for tier 2")
    tier3_rep: float = _p(0.85, "reputation", 0.0, 1.0, "expected reputation for tier 3")
    # sanctions
    sanction_window: int = _p(
        50, "rounds", 1, 100_000, "sliding window W over which violations count"
    )
    sigma1: int = _p(3, "violations", 1, 1000, "violations in W for σ1 (warning)")
    sigma2: int = _p(5, "violations", 1, 1000, "violations in W for σ2 (rate-limited)")
    sigma3: int = _p(8, "violations", 1, 1000, "violations in W for σ3 (suspended)")
    sigma4: int = _p(12, "violations", 1, 1000, "violations in W for σ4 (banned)")
    T_susp: int = _p(50, "rounds", 1, 100_000, "suspension length")
    T_quarantine: int = _p(50, "rounds", 1, 100_000, "quarantine length before the repair check")
    # forgetting
    omega_D: float = _p(0.5, "weight", 0.0, 1.0, "keep-score weight of temporal decay")
    omega_R: float = _p(0.5, "weight", 0.0, 1.0, "keep-score weight of relevance")
    theta: float = _p(0.3, "score", 0.0, 1.0, "keep score below which an agent votes forget")
    decay_scales: tuple[float, ...] = _p(
        (10.0, 100.0, 1000.0), "rounds", 0.0, None, "decay time scales S_k"
    )
    decay_weights: tuple[float, ...] = _p((0.5, 0.3, 0.2), "weight", 0.0, 1.0, "decay weights γ_k")
    alpha: float = _p(
        0.5,
        "share",
        0.0,
        1.0,
        "forget quorum Q = alpha · Σ w over active agents",
        tla="Alpha",
        model=0.5,
        why="the forget votes of a2 and a3 (weight 4) reach alpha times the non-barred weight (6)",
    )
    min_active_agents: int = _p(
        12,
        "agents",
        1,
        1_000_000,
        "no forget decision while fewer agents are active (not barred); FG-1 needs "
        "(1 − alpha)·w_max < alpha·(min_active_agents − 1)·w_min: 12 at the defaults",
        tla="MinActive",
        model=4,
        why="the four non-barred agents, so forgetting is reachable; the registry is constant, "
        "and any value above 4 would block every forget decision",
    )
    # consensus
    checkpoint_k: int = _p(16, "requests", 1, 1_000_000, "PBFT checkpoint interval K")
    watermark_window: int = _p(32, "requests", 1, 1_000_000, "PBFT high-low watermark window")
    # the node
    content_limit: int = _p(
        64 * 1024,
        "bytes",
        0,
        16 * 1024 * 1024,
        "most UTF-8 bytes of an artifact's content a node accepts (a propose or resubmit "
        "over it: 413 content_too_large, nothing changed); the protocol never reads it",
    )
    refused_row_bytes: int = _p(
        8 * 1024,
        "bytes",
        1024,
        16 * 1024 * 1024,
        "largest refused command a node logs as sent (its envelope without payload, canonical "
        "JSON): above it, one refused invalid_input, rate_limited or bad_reveal is logged as "
        "its SHA-256 only, and one refused without a violation is answered 413 "
        "oversized_refusal and not logged (ROW-1); the protocol never reads it",
    )
    embedding_dim: int = _p(
        0,
        "floats",
        0,
        MAX_EMBEDDING,
        "the community's embedding dimension: a propose or resubmit may carry an embedding of "
        "exactly this many finite numbers, and a search a query vector of as many (dense "
        "retrieval, docs/design.md §11); 0: dense retrieval off, an embedding is refused "
        "(422 embeddings_off); the protocol never reads it",
    )
    join_mode: str = _p(
        "open",
        "",
        None,
        None,
        "who may join (a key not yet registered): open, anyone; pow, a key with a proof of "
        "work of join_pow_bits bits over the community id and the key; invite, a key an "
        "operator signed an invitation for (403 admission_required otherwise); the protocol "
        "never reads it",
        choices=("open", "pow", "invite"),
    )
    join_pow_bits: int = _p(
        20,
        "bits",
        0,
        64,
        "join_mode = pow: the leading zero bits of SHA-256 a join's proof needs (about "
        "2^bits hashes to find, one to check)",
    )
    # determinism
    seed: int = _p(
        0, "", 0, None, "seed of reviewer selection (sha256-based, portable)", lifecycle=True
    )

    def __post_init__(self) -> None:
        problems = list(range_problems(self))
        problems += _relation_problems(self)
        if problems:
            raise ParamError("; ".join(problems))

    # --- construction -----------------------------------------------------------------

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Params:
        """Build from a mapping; unknown keys and wrong types are errors naming the keys."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - set(known))
        problems: list[str] = []
        if unknown:
            problems.append(f"unknown parameter(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for name, value in data.items():
            if name not in known:
                continue
            default = known[name].default
            try:
                values[name] = _coerce(name, value, default)
            except ParamError as exc:
                problems.append(str(exc))
        if problems:
            raise ParamError("; ".join(problems))
        return cls(**values)

    @classmethod
    def from_toml(cls, path: str | Path) -> Params:
        """Load a parameter file (keys are the identifiers of this table)."""
        p = Path(path)
        try:
            with p.open("rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError as exc:
            raise ParamError(f"{p}: no such file") from exc
        except OSError as exc:  # a directory, no permission: one line, never a traceback
            raise ParamError(f"{p}: cannot read: {exc.strerror or exc}") from exc
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ParamError(f"{p}: not valid TOML: {exc}") from exc
        if "params" not in data:
            return cls.from_mapping(data)
        flat = data["params"]
        if not isinstance(flat, dict):
            raise ParamError(f"{p}: [params] must be a table")
        others = sorted(k for k in data if k != "params")
        if others:  # silently ignored before: a typo beside [params] passed unnoticed
            raise ParamError(
                f"{p}: keys outside the [params] table: {', '.join(others)} (put every "
                "parameter under [params], or write the file without the table)"
            )
        return cls.from_mapping(flat)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (tuples become lists)."""
        return {
            f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v
            for f in dataclasses.fields(self)
        }


@dataclass(frozen=True)
class ParamInfo:
    """One row of the parameter table, for docs and ``ostrom params``."""

    name: str
    default: Any
    unit: str
    lo: float | None
    hi: float | None
    doc: str
    #: the CONSTANT that stands for it in the lifecycle specs, if any
    tla: str | None = None
    #: its value in the lifecycle's CI models (the base configuration
    #: models/MCLifecycle_ci.cfg, whose generated block is made from this column; the
    #: manifest's derived models override some of them), in the units of ``default``
    model: Any = None
    #: why the models use ``model`` (a value that fits a model, or why the default does)
    why: str = ""
    #: the lifecycle rules read it (docs/rules.md's generated table lists it)
    lifecycle: bool = False
    #: a parameter whose values are words: the words it may take (``lo`` and ``hi`` None)
    choices: tuple[str, ...] = ()


def table() -> list[ParamInfo]:
    """The parameter table in declaration order."""
    return [
        ParamInfo(
            f.name,
            f.default,
            f.metadata["unit"],
            f.metadata["lo"],
            f.metadata["hi"],
            f.metadata["doc"],
            f.metadata["tla"],
            f.metadata["model"],
            f.metadata["why"],
            f.metadata["lifecycle"],
            f.metadata["choices"],
        )
        for f in dataclasses.fields(Params)
    ]


def param_range(name: str) -> tuple[int, int]:
    """The range of an integer parameter of the table (a command's option takes it)."""
    row = next(r for r in table() if r.name == name)
    assert row.lo is not None and row.hi is not None
    return int(row.lo), int(row.hi)


#: The columns of :func:`markdown_cells`.
MARKDOWN_COLUMNS = ("name", "default", "unit", "range", "meaning")


def markdown_cells(p: ParamInfo) -> list[str]:
    """One row's Markdown cells (``MARKDOWN_COLUMNS``): every table of parameters in the docs
    renders its rows with these."""
    default = ", ".join(f"{v:g}" for v in p.default) if isinstance(p.default, tuple) else p.default
    return [f"`{p.name}`", str(default), p.unit, range_text(p), p.doc]


def range_text(p: ParamInfo) -> str:
    """A row's range as the docs and ``ostrom params`` show it: ``[lo, hi]``, or the
    words a word-valued parameter may take."""
    if p.choices:
        return "{" + ", ".join(p.choices) + "}"
    hi = "∞" if p.hi is None else f"{p.hi:g}"
    lo = "" if p.lo is None else f"{p.lo:g}"
    return f"[{lo}, {hi}]"


def markdown_table() -> str:
    """The parameter table as Markdown (``ostrom params --markdown``; the docs embed it)."""
    lines = ["| " + " | ".join(MARKDOWN_COLUMNS) + " |", "|---" * len(MARKDOWN_COLUMNS) + "|"]
    lines += ["| " + " | ".join(markdown_cells(p)) + " |" for p in table()]
    return "\n".join(lines) + "\n"


def _coerce(name: str, value: Any, default: Any) -> Any:
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise ParamError(f"{name}: expected a word, got {value!r}")
    if isinstance(default, bool) or isinstance(value, bool):
        raise ParamError(f"{name}: expected a number, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, int):
            return value
        raise ParamError(f"{name}: expected an integer, got {value!r}")
    if isinstance(default, float):
        if isinstance(value, int | float):
            return float(value)
        raise ParamError(f"{name}: expected a number, got {value!r}")
    if isinstance(default, tuple):
        if isinstance(value, list | tuple) and all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in value
        ):
            return tuple(float(v) for v in value)
        raise ParamError(f"{name}: expected a list of numbers, got {value!r}")
    raise ParamError(f"{name}: unsupported value {value!r}")  # pragma: no cover


#: The parameters the protocol computes with in integer micro-units (``agents.micro``): a
#: value below 0.5e-6 would silently become 0 there, so it is refused.
_MICRO_PARAMS = frozenset(
    {"alpha", "farm_gain", "r_resubmit", "tau_accept", "tau_reject", "tau_retract",
     "urgent_penalty", "w_max", "w_min"}
)  # fmt: skip


def range_problems(p: Params) -> list[str]:
    out = []
    for f in dataclasses.fields(p):
        lo, hi = f.metadata["lo"], f.metadata["hi"]
        value = getattr(p, f.name)
        if f.metadata["choices"]:
            if value not in f.metadata["choices"]:
                out.append(f"{f.name}={value!r} is not one of {', '.join(f.metadata['choices'])}")
            continue
        for v in value if isinstance(value, tuple) else (value,):
            if isinstance(v, float) and math.isnan(v):  # NaN compares false with every bound
                out.append(f"{f.name}={value!r} is not a number")
                break
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                out.append(f"{f.name}={value!r} outside [{lo}, {hi if hi is not None else '∞'}]")
                break
            if f.name in _MICRO_PARAMS and isinstance(v, float) and v != 0 and abs(v) < 0.5e-6:
                # the protocol computes these in micro-units (agents.micro): it would be 0
                out.append(f"{f.name}={value!r} is below the protocol's resolution 1e-06")
                break
    return out


def _relation_problems(p: Params) -> list[str]:
    out = []
    if p.tau_reject >= p.tau_accept:
        out.append(
            f"tau_reject ({p.tau_reject}) must be below tau_accept ({p.tau_accept})"
        )  # TALLY-1
    if p.quorum > p.reviewers:
        out.append(f"quorum ({p.quorum}) exceeds reviewers ({p.reviewers}): no tally could decide")
    if p.q_dispute > p.dispute_reviewers:
        out.append(f"q_dispute ({p.q_dispute}) exceeds dispute_reviewers ({p.dispute_reviewers})")
    # The side rule (TALLY-1): a side wins only with tally_min_side voters.  Above a quorum
    # a unanimous quorum could not decide: the quorum would silently rise to tally_min_side
    # (and above the reviewers no tally could ever decide, nor any dispute retract).
    if p.tally_min_side > p.quorum:
        out.append(
            f"tally_min_side ({p.tally_min_side}) exceeds quorum ({p.quorum}): "
            "a unanimous quorum could not decide a review"
        )
    if p.tally_min_side > p.q_dispute:
        out.append(
            f"tally_min_side ({p.tally_min_side}) exceeds q_dispute ({p.q_dispute}): "
            "a unanimous dispute quorum could not retract"
        )
    if p.w_min > p.w_max:
        out.append(f"w_min ({p.w_min}) exceeds w_max ({p.w_max})")
    if not p.tier1_rep <= p.tier2_rep <= p.tier3_rep:
        out.append("tier thresholds must be non-decreasing: tier1_rep <= tier2_rep <= tier3_rep")
    if not p.sigma1 < p.sigma2 < p.sigma3 < p.sigma4:
        out.append("sanction levels must rise strictly: sigma1 < sigma2 < sigma3 < sigma4")
    if p.propose_rate_limited > p.propose_rate:
        out.append("propose_rate_limited must not exceed propose_rate (σ2 lowers the limit)")
    if len(p.decay_scales) != len(p.decay_weights):
        out.append("decay_scales and decay_weights must have the same length")
    return out


#: The default parameters: every row of the table at its default (docs/lifecycle.md).
DEFAULTS = Params()
