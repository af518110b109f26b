"""Reputation: Beta evidence with decay, EigenTrust, voting weight, tiers, vote feedback.

docs/design.md §2 in code (docs/reputation.md explains every formula with numbers):

* **local reputation** is a Beta(α, β) with α = r + 1, β = s + 1 and expectation
  E = α / (α + β).  Once per round both parameters are scaled by (1 − δ), with a floor
  α + β ≥ 2 that keeps the ratio (``decay``): E is unchanged for an inactive agent
  (REP-1) while the weight of its evidence shrinks.  The rule of the paper's wording,
  scaling the *counts* r and s (``plain_decay``), pulls E towards 1/2 and is kept only to
  show that it breaks REP-1;
* **global trust** is EigenTrust over the agreement graph: t = (1 − a) Cᵀ t + a p, where
  ``a = Params.eigentrust_a`` is the share of every iteration's mass that returns to the
  pre-trusted peers p (``eigentrust``);
* **voting weight** is w_min + (w_max − w_min) · E′ · g with E′ = clip(2E − 1) the
  evidence above the uninformed prior and g = clip(N · tᵢ) the trust relative to the
  uniform share, in integer micro-units, and may rise by at most ``farm_gain`` within any
  ``farm_window`` rounds (the farming cap);
* **tiers** follow E with a time-in-tier requirement, demote as soon as E falls below
  the tier's threshold, and are capped on read by the sanction layer;
* **vote feedback** scores each revealed vote against the decision (the paper's rule)
  or against ground truth (``feedback="truth"``), as evidence.

Sans-IO and deterministic: no clock, no entropy, no I/O; every iteration order is sorted,
so two runs fed the same commands hold the same state bit for bit.  Weight and tier change
only at ``tick`` (once per round, from the global trust computed then), so every vote of a
round is weighed with the same numbers and the farming cap is a statement about one series
per agent; E and global trust are live views.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

import numpy as np
import numpy.typing as npt

from ostrom.protocol.agents import MAX_TIER, micro
from ostrom.protocol.params import DEFAULTS, Params

__all__ = [
    "EIGENTRUST_MAX_ITER",
    "EIGENTRUST_TOL",
    "FEEDBACK_MODES",
    "PRIOR_WEIGHT",
    "STATE_CLASSES",
    "Beta",
    "EigenTrustResult",
    "Evidence",
    "Feedback",
    "ReputationBook",
    "TierState",
    "decay",
    "eigentrust",
    "eigentrust_iteration_bound",
    "farm_capped",
    "global_score",
    "local_score",
    "plain_decay",
    "raw_weight_micro",
    "settled_tier",
    "step_tier",
    "tier_thresholds",
    "vote_feedback",
]

FloatArray = npt.NDArray[np.float64]

#: α + β of the uniform prior Beta(1, 1): the floor of the decay rule (REP-1).
PRIOR_WEIGHT: Final = 2.0
#: EigenTrust stops when the L1 change of one iteration is below this ...
EIGENTRUST_TOL: Final = 1e-12
#: ... or after this many iterations (reported as not converged).  With a ≥ 0.03 the
#: contraction bound (``eigentrust_iteration_bound``) is below it at EIGENTRUST_TOL.
EIGENTRUST_MAX_ITER: Final = 1000

Feedback = Literal["decision", "truth"]
FEEDBACK_MODES: Final[tuple[str, ...]] = get_args(Feedback)


# --- local reputation: Beta with decay ----------------------------------------------------


@dataclass(frozen=True)
class Beta:
    """A Beta(α, β) reputation, stored as its mean E and total weight n = α + β.

    This is an exact reparametrisation (α = E·n, β = (1 − E)·n), chosen because the decay
    rule changes only n: E is then unchanged *bit for bit* in floating point, so REP-1 holds
    in the implementation exactly, not up to rounding.  (Stored as α and β, scaling both by
    0.99 moves α/(α+β) by one ulp in about 40% of random cases.)

    Invariant: n ≥ 2 (the uniform prior's weight; evidence only adds, decay floors at 2)
    and 0 ≤ E ≤ 1, so α, β ≥ 0.  After the floor α or β may be below 1 (r < 0): the
    parameters stay a valid Beta, the "counts" reading does not.
    """

    mean: float = 0.5
    total: float = PRIOR_WEIGHT

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and 0.0 <= self.mean <= 1.0):
            raise ValueError(f"Beta mean must be in [0, 1], got {self.mean!r}")
        if not (math.isfinite(self.total) and self.total >= PRIOR_WEIGHT):
            raise ValueError(f"Beta total weight must be finite and >= 2, got {self.total!r}")

    @classmethod
    def from_params(cls, alpha: float, beta: float) -> Beta:
        """Beta(α, β) from its parameters (α, β > 0, α + β ≥ 2)."""
        if not (alpha > 0.0 and beta > 0.0 and math.isfinite(alpha) and math.isfinite(beta)):
            raise ValueError(f"Beta parameters must be positive and finite: {alpha!r}, {beta!r}")
        return cls(alpha / (alpha + beta), alpha + beta)

    @classmethod
    def from_counts(cls, r: float, s: float) -> Beta:
        """The Beta of r positive and s negative observations: Beta(r + 1, s + 1)."""
        return cls.from_params(r + 1.0, s + 1.0)

    @property
    def alpha(self) -> float:
        return self.mean * self.total

    @property
    def beta(self) -> float:
        return (1.0 - self.mean) * self.total

    @property
    def expected(self) -> float:
        """E = α / (α + β)."""
        return self.mean

    def observe(self, positive: bool, weight: float = 1.0) -> Beta:
        """Add one observation of ``weight`` to α (positive) or β (negative)."""
        _check_weight(weight)
        if weight == 0.0:
            return self
        total = self.total + weight
        alpha = self.alpha + (weight if positive else 0.0)
        return Beta(min(1.0, max(0.0, alpha / total)), total)

    def to_dict(self) -> dict[str, float]:
        return {"alpha": self.alpha, "beta": self.beta, "expected": self.mean, "total": self.total}


def decay(b: Beta, delta: float) -> Beta:
    """One round of evidence decay, the rule REP-1 is proved for (verify/thresholds/decay.py, Z3).

    α′ = k·α, β′ = k·β with k = 1 − δ, unless (1 − δ)(α + β) < 2, in which case
    k = 2 / (α + β) so that α′ + β′ = 2 (the uniform prior's weight).  Both parameters are
    scaled by the same k, so E = α/(α+β) is unchanged (REP-1) while the weight of
    evidence n = α + β shrinks to at least 2: old evidence counts less against new, and an
    inactive agent is neither punished nor rewarded for being inactive.
    """
    _check_delta(delta)
    total = (1.0 - delta) * b.total
    if total < PRIOR_WEIGHT:  # the floor: scale to α + β = 2 instead, ratio kept
        total = PRIOR_WEIGHT
    return Beta(b.mean, total)  # REP-1: the mean is carried over untouched


def plain_decay(b: Beta, delta: float) -> Beta:
    """The PLAIN rule r′ = (1 − δ)·r, s′ = (1 − δ)·s — it VIOLATES REP-1; do not use it.

    Kept (and tested) because it is the natural reading of "evidence decays by (1 − δ)":
    since α = r + 1 and β = s + 1, the prior's pseudo-counts do not decay while the
    evidence does, so E′ − E = −δ·(r − s) / ((r + s + 2)·((1 − δ)(r + s) + 2)): for δ > 0
    every agent with r ≠ s drifts towards 1/2 (docs/reputation.md has the numbers).
    """
    _check_delta(delta)
    r, s = b.alpha - 1.0, b.beta - 1.0
    return Beta.from_counts((1.0 - delta) * r, (1.0 - delta) * s)


def _check_delta(delta: float) -> None:
    if not 0.0 <= delta <= 1.0:
        raise ValueError(f"delta must be in [0, 1], got {delta!r}")


def _check_weight(weight: float) -> None:
    if not (math.isfinite(weight) and weight >= 0.0):
        raise ValueError(f"evidence weight must be finite and >= 0, got {weight!r}")


# --- global trust: EigenTrust -------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class EigenTrustResult:
    """Global trust (sums to 1), iterations used, whether the tolerance was met, and the
    L1 change of the last iteration (the evidence for ``converged``)."""

    trust: FloatArray
    iterations: int
    converged: bool
    residual: float


def eigentrust(
    n: int,
    src: Sequence[int] | npt.ArrayLike,
    dst: Sequence[int] | npt.ArrayLike,
    weight: Sequence[float] | npt.ArrayLike,
    pretrust: Sequence[float] | npt.ArrayLike,
    a: float,
    *,
    tol: float = EIGENTRUST_TOL,
    max_iter: int = EIGENTRUST_MAX_ITER,
) -> EigenTrustResult:
    """EigenTrust global trust by power iteration on a sparse edge list.

    Edge k says peer ``src[k]`` has local trust ``weight[k] ≥ 0`` in ``dst[k]`` (repeated
    edges add up).  Rows are normalised: c_ij = s_ij / Σ_j s_ij.  A peer whose outgoing
    trust sums to 0 (a *dangling* peer: it trusts nobody yet) uses the pre-trusted vector
    p as its row, as in the EigenTrust paper; networkx's pagerank does the same when
    ``dangling`` is left unset (its default is the personalization vector).  Then, from
    t₀ = p::

        t_{k+1} = (1 − a) · Cᵀ t_k + a · p

    ``a`` is the weight of the pre-trusted seed vector: a = 0.15 means that 15% of each
    iteration's trust mass returns to the pre-trusted peers (in PageRank terms, the
    teleport probability; networkx's ``alpha`` is 1 − a).  For a > 0 the map is a (1 − a)
    contraction in L1, so the fixed point is unique and iteration stops within
    ``eigentrust_iteration_bound(a, tol)`` steps; for a = 0 it may not converge
    (a periodic graph), which ``converged=False`` reports after ``max_iter``.

    Cost per iteration is O(n + edges) (two ``bincount``s): no dense n×n matrix.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"eigentrust_a must be in [0, 1], got {a!r}")
    if max_iter < 1 or not tol > 0.0:
        raise ValueError("max_iter must be >= 1 and tol > 0")
    s = np.asarray(src, dtype=np.intp).ravel()
    d = np.asarray(dst, dtype=np.intp).ravel()
    w = np.asarray(weight, dtype=np.float64).ravel()
    p = np.asarray(pretrust, dtype=np.float64).ravel()
    if not s.shape == d.shape == w.shape:
        raise ValueError("src, dst and weight must have the same length")
    if p.shape != (n,):
        raise ValueError(f"pretrust must have length n={n}")
    if n == 0:
        return EigenTrustResult(np.zeros(0), 0, True, 0.0)
    if s.size and (s.min() < 0 or d.min() < 0 or s.max() >= n or d.max() >= n):
        raise ValueError("edge endpoints must be in range(n)")
    if not (np.all(np.isfinite(w)) and np.all(w >= 0.0)):
        raise ValueError("local trust weights must be finite and >= 0")
    if not (np.all(np.isfinite(p)) and np.all(p >= 0.0) and p.sum() > 0.0):
        raise ValueError("pretrust must be >= 0 with a positive sum")
    p = p / p.sum()

    out = np.bincount(s, weights=w, minlength=n)
    dangling = out <= 0.0
    inv = np.zeros(n)
    np.divide(1.0, out, out=inv, where=~dangling)
    c = w * inv[s]  # row-normalised local trust c_ij, one entry per edge

    t = p.copy()
    residual = math.inf
    iterations = 0
    while iterations < max_iter and not residual < tol:
        iterations += 1
        flow = np.bincount(d, weights=c * t[s], minlength=n)  # (Cᵀ t) over real rows
        nxt = (1.0 - a) * (flow + t[dangling].sum() * p) + a * p  # dangling rows are p
        residual = float(np.abs(nxt - t).sum())
        t = nxt
    t.setflags(write=False)  # the result may be cached and shared: read-only
    return EigenTrustResult(t, iterations, residual < tol, residual)


def eigentrust_iteration_bound(a: float, tol: float = EIGENTRUST_TOL) -> int | None:
    """Iterations after which ``eigentrust`` has certainly met ``tol`` (None for a = 0).

    The first step moves t by at most 2(1 − a) in L1 (two distributions, scaled by 1 − a),
    and each later step by (1 − a) times the previous one, so the change at step k is at
    most 2(1 − a)^k < tol once k > log(tol/2) / log(1 − a).
    """
    if a <= 0.0:
        return None
    if a >= 1.0:
        return 1
    return math.floor(math.log(tol / 2.0) / math.log(1.0 - a)) + 1


# --- voting weight and the farming cap ----------------------------------------------------


def local_score(e: float) -> float:
    """E′ = clip(2E − 1, 0, 1): evidence above the uninformed prior (E = 1/2 gives 0)."""
    return min(1.0, max(0.0, 2.0 * e - 1.0))


def global_score(trust: float, n_agents: int) -> float:
    """g = clip(N · tᵢ, 0, 1): global trust relative to the uniform share 1/N."""
    return min(1.0, max(0.0, n_agents * trust))


def raw_weight_micro(e: float, trust: float, n_agents: int, params: Params = DEFAULTS) -> int:
    """w = w_min + (w_max − w_min) · E′ · g, in integer micro-units (``agents.micro``).

    The product, not a mix, because *both* signals must vouch for an agent: a fresh
    identity (E = 1/2) gets exactly w_min whatever its trust (REP-2's entry clause), and a
    clique whose members rate each other well but receive no trust from the pre-trusted
    part of the graph (g ≈ 0) stays at w_min too.  It is monotone in E and in tᵢ and has
    no mixing parameter to tune or prove.  E′·g ∈ [0, 1], so w ∈ [w_min, w_max].
    """
    lo, hi = micro(params.w_min), micro(params.w_max)
    # REP-2: local_score(1/2) = 0, so an identity without evidence weighs exactly w_min
    return lo + round((hi - lo) * local_score(e) * global_score(trust, n_agents))


def farm_capped(raw: int, history: Iterable[int], gain: int) -> int:
    """The farming cap: ``min(raw, min(history) + gain)`` (micro-units).

    ``history`` holds the agent's weights of the last ``farm_window`` rounds, so for every
    earlier round u inside the window w(t) ≤ w(u) + farm_gain: weight rises by at most
    ``farm_gain`` within any window and by ⌈Δt / farm_window⌉ · farm_gain over Δt rounds.
    Falling is never capped.  The result stays in [w_min, w_max] because ``raw`` and every
    history entry do.
    """
    floor = min(history, default=None)
    return raw if floor is None else min(raw, floor + gain)


# --- tiers ------------------------------------------------------------------------------


def tier_thresholds(params: Params = DEFAULTS) -> tuple[float, float, float, float]:
    """E needed for tiers 0..3 (tier 0 needs nothing)."""
    return (0.0, params.tier1_rep, params.tier2_rep, params.tier3_rep)


def settled_tier(e: float, params: Params = DEFAULTS) -> int:
    """The tier an agent holding E long enough ends in: max{k : E ≥ threshold_k}."""
    th = tier_thresholds(params)
    return max(k for k in range(MAX_TIER + 1) if e >= th[k])


@dataclass(frozen=True)
class TierState:
    """An agent's tier and, for each j, ``held[j]``: consecutive rounds (ending now) spent
    at tier ≥ j.  ``held[0]`` is the agent's age in rounds."""

    tier: int = 0
    held: tuple[int, ...] = (0,) * (MAX_TIER + 1)


def step_tier(state: TierState, e: float, params: Params = DEFAULTS) -> TierState:
    """One round of the tier rule (docs/design.md §2, §8), applied at ``tick`` with the new E.

    * promotion, one tier per round: to k + 1 when E ≥ threshold_{k+1} and the agent has
      spent ``tier1_rounds`` consecutive rounds at tier ≥ k — for tier 1 that is the
      newcomer's time in tier 0, and tier 3 takes at least 3 · tier1_rounds rounds from
      registration (a fresh identity cannot jump to dispute or arbitration rights);
    * demotion, at once and as far as needed: to the highest tier j ≤ k with
      E ≥ threshold_j.  ``held`` counters of tiers above the new tier restart at 0; the
      ones below keep counting, so an agent dipping from tier 2 to 1 regains tier 2 as
      soon as E recovers, while one dropping to tier 0 must serve tier 1's time again.

    This is monotone in E pathwise: if E_a ≥ E_b at every tick, tier_a ≥ tier_b at every
    tick (tested), because held_a ≥ held_b follows from tier_a ≥ tier_b by induction.
    """
    th = tier_thresholds(params)
    tier = state.tier
    held = tuple(h + 1 if tier >= j else 0 for j, h in enumerate(state.held))
    if tier < MAX_TIER and e >= th[tier + 1] and held[tier] >= params.tier1_rounds:
        new = tier + 1
    elif e >= th[tier]:
        new = tier
    else:
        new = max(j for j in range(tier) if e >= th[j])  # th[0] = 0: j = 0 always qualifies
    return TierState(new, tuple(h if j <= new else 0 for j, h in enumerate(held)))


# --- vote feedback -----------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Evidence:
    """One observation about an agent: positive (to α) or negative (to β), with a weight."""

    agent: str
    positive: bool
    weight: float = 1.0

    def to_dict(self) -> dict[str, object]:
        return {"agent": self.agent, "positive": self.positive, "weight": self.weight}


def vote_feedback(
    votes: Mapping[str, str],
    *,
    decision: str | None,
    truth: str | None = None,
    mode: str = "decision",
    weight: float = 1.0,
) -> list[Evidence]:
    """Score every revealed vote: positive if it equals the reference, negative otherwise.

    ``votes`` maps voter → revealed vote value (``accept``/``reject`` or
    ``retract``/``keep``); ``decision`` and ``truth`` are expressed as the vote value they
    correspond to.  ``mode="decision"`` is the paper's rule (agreement with the final
    decision: cheap, but it rewards agreeing with a majority that is wrong);
    ``mode="truth"`` scores against ground truth where a simulation knows it.  A missing
    reference (no decision yet, an undecided tally, unknown truth) gives no evidence.
    Sorted by agent, so the order of evidence is deterministic.
    """
    if mode not in FEEDBACK_MODES:
        raise ValueError(f"feedback mode must be one of {FEEDBACK_MODES}, got {mode!r}")
    _check_weight(weight)
    reference = decision if mode == "decision" else truth
    if reference is None:
        return []
    return [Evidence(agent, vote == reference, weight) for agent, vote in sorted(votes.items())]


# --- the book --------------------------------------------------------------------------


@dataclass
class _Record:
    """One agent's state, stored as of two rounds (docs/reputation.md, "What a tick costs").

    ``beta`` is current as of round ``decayed``: the decay of the rounds since is applied
    when the Beta is next read or changed, one round at a time exactly as ``tick`` would
    have (REP-1: decay never moves E, so E is always current).  ``tier`` and ``history``
    are current as of round ``since``: an agent the book has *settled* (its next tick
    would repeat its weight and tier) is not ticked, and each round since ``since``
    appends its weight to the history and adds one to its ``held`` counters up to its tier.
    """

    beta: Beta
    tier: TierState
    weight: int  # micro-units, fixed at the last tick
    history: deque[int]  # weights of the last farm_window rounds (farming cap)
    joined: int
    decayed: int = 0
    since: int = 0


@dataclass
class _Pair:
    agree: float = 0.0
    disagree: float = 0.0


#: The classes a ``ReputationBook``'s state is made of besides the public ones: the
#: service's snapshot codec allow-lists them by name (ostrom/service/snapshot.py).
STATE_CLASSES: Final[tuple[type, ...]] = (_Record, _Pair)


class ReputationBook:
    """Every agent's reputation state; commands in, numbers out, no I/O.

    ``observe`` and ``record_votes`` add evidence (and agreement); ``tick`` is one round:
    decay (REP-1), global trust, weights under the farming cap, tiers.  ``expected`` and
    ``global_trust`` are live views; ``weight`` and ``tier`` are the values fixed at the
    last tick.  The ``_decay``, ``_cap`` and ``_step_tier`` hooks exist so that the
    mutants of property_tests/reputation_mutants.py can change one rule each.

    A tick costs what changed, not who exists (docs/reputation.md, "What a tick costs"):
    it computes the agents in ``_live`` only — the ones whose evidence changed, whose
    weight or tier is still moving, and, when global trust changed, the ones whose
    weight depends on it (E > ½).  Every other agent is *settled*: with E, its trust and
    the number of agents unchanged, its next tick would give the same weight and tier, so
    its rounds are replayed on read (``_Record``).  The numbers are the ones an eager tick
    over every agent computes, bit for bit: property_tests/protocol/test_lazy_tick.py
    checks it against that tick on random histories.
    """

    def __init__(
        self,
        params: Params = DEFAULTS,
        agents: Iterable[str] = (),
        pretrusted: Iterable[str] = (),
        feedback: str = "decision",
    ) -> None:
        if feedback not in FEEDBACK_MODES:
            raise ValueError(f"feedback must be one of {FEEDBACK_MODES}, got {feedback!r}")
        self.params = params
        self._pretrusted = frozenset(pretrusted)
        self.feedback = feedback
        self.round = 0
        self._agents: dict[str, _Record] = {}
        self._names: list[str] = []  # the agents, sorted: EigenTrust's index order
        self._pairs: dict[tuple[str, str], _Pair] = {}
        self._trust: EigenTrustResult | None = None
        self._live: set[str] = set()  # the agents the next tick computes
        self._informed: set[str] = set()  # E > 1/2: the weights global trust moves
        self._trust_version = 0  # bumped whenever global trust must be recomputed ...
        self._ticked_version = 0  # ... and the version the last tick's weights used
        for agent in agents:
            self.add(agent)

    # --- commands ------------------------------------------------------------------------

    def add(self, agent: str, *, prior: Beta | None = None, tier: int = 0) -> None:
        """Register ``agent``: prior Beta(1, 1), tier 0, weight w_min (REP-2's entry).

        ``prior`` and ``tier`` are for a community's *founders* only: with every agent
        at tier 0 nobody could review (tier ≥ 1), so no reputation could ever be earned.
        A founder starts at ``tier`` with its time in tier served and a prior whose E
        supports that tier (checked: the tier rule would demote it at the first tick
        otherwise).  Its weight is w_min until the first tick computes it, and that
        first computation is not held back by the farming cap.
        """
        if agent in self._agents:
            raise ValueError(f"agent {agent!r} already registered")
        beta = Beta() if prior is None else prior
        if not 0 <= tier <= MAX_TIER:
            raise ValueError(f"tier must be in 0..{MAX_TIER}, got {tier!r}")
        if beta.mean < tier_thresholds(self.params)[tier]:
            raise ValueError(
                f"{agent}: E = {beta.mean} is below tier {tier}'s threshold "
                f"{tier_thresholds(self.params)[tier]}"
            )
        served = self.params.tier1_rounds
        state = (
            TierState()
            if prior is None and tier == 0
            else TierState(tier, tuple(served if j <= tier else 0 for j in range(MAX_TIER + 1)))
        )
        w = micro(self.params.w_min)
        # a founder's first weight is not capped (its prior was given, not farmed): its
        # history starts empty; everyone else's starts at w_min, the farming cap's floor
        history = deque([] if prior is not None else [w], maxlen=self.params.farm_window)
        self._agents[agent] = _Record(beta, state, w, history, self.round, self.round, self.round)
        bisect.insort(self._names, agent)
        if prior is not None or not self._tier_settled(state.tier, beta.mean):
            self._live.add(agent)  # its first tick computes it, then it settles
        # else a newcomer is settled at once: E = 1/2 gives E′ = 0, so its raw weight is
        # w_min whatever its trust (REP-2), the cap's floor is w_min, and tier 0 holds
        # while E is below tier 1's threshold — its first tick would change nothing
        self._note_evidence(agent, beta)
        self._invalidate_trust()  # N and p change: every trust-dependent weight may

    def observe(self, agent: str, positive: bool, weight: float = 1.0) -> None:
        """Add one observation about ``agent`` (weight ≥ 0) to α or β."""
        rec = self._record(agent)
        rec.beta = self._beta_at(rec, self.round).observe(positive, weight)
        rec.decayed = self.round
        self._live.add(agent)  # E moved: its weight and tier follow at the next tick
        self._note_evidence(agent, rec.beta)

    def record_votes(
        self,
        votes: Mapping[str, str],
        decision: str | None,
        truth: str | None = None,
        weight: float = 1.0,
    ) -> list[Evidence]:
        """A ballot's revealed votes: agreement between every pair of voters, then vote
        feedback in the book's ``feedback`` mode; returns the evidence applied."""
        voters = sorted(votes)
        for v in voters:
            self._record(v)
        evidence = vote_feedback(
            votes, decision=decision, truth=truth, mode=self.feedback, weight=weight
        )
        for i, vi in enumerate(voters):
            for vj in voters[i + 1 :]:
                pair = self._pairs.setdefault((vi, vj), _Pair())
                if votes[vi] == votes[vj]:
                    pair.agree += 1.0
                else:
                    pair.disagree += 1.0
        if len(voters) > 1:
            self._invalidate_trust()
        for ev in evidence:
            self.observe(ev.agent, ev.positive, ev.weight)
        return evidence

    def tick(self) -> list[str]:
        """One round: decay, global trust, weights (farming cap), tiers — in that order.

        Returns the agents it computed, sorted: every agent whose weight or tier may have
        changed is among them (the Community syncs only these into the registry).

        Agreement counts decay by the same (1 − δ).  That rescales every local trust row
        by one factor, which row normalisation cancels, so the cached global trust stays
        valid across a tick without new agreement.  The Betas decay on read (``_Record``).
        """
        self.round += 1
        keep = 1.0 - self.params.delta
        for pair in self._pairs.values():
            pair.agree *= keep
            pair.disagree *= keep
        trust = self._global().trust
        if self._ticked_version != self._trust_version:
            # global trust or N changed: raw weight w_min + (w_max − w_min)·E′·g moves
            # for every agent with E′ > 0; for the others it is w_min whatever g is
            self._ticked_version = self._trust_version
            self._live |= self._informed
        n = len(self._names)
        gain = micro(self.params.farm_gain)
        ticked = sorted(self._live)
        for name in ticked:
            rec = self._agents[name]
            self._settle(rec, self.round - 1)
            rec.beta = self._beta_at(rec, self.round)  # REP-1
            rec.decayed = self.round
            e = rec.beta.mean
            raw = raw_weight_micro(e, float(trust[self._position(name)]), n, self.params)
            rec.weight = self._cap(raw, rec.history, gain)  # farming cap (docs/design.md §2)
            rec.history.append(rec.weight)
            rec.tier = self._step_tier(rec.tier, e)
            rec.since = self.round
            if rec.weight == raw and self._tier_settled(rec.tier.tier, e):
                self._live.discard(name)
        return ticked

    # --- views ---------------------------------------------------------------------------

    @property
    def agents(self) -> tuple[str, ...]:
        return tuple(self._names)

    @property
    def pretrusted(self) -> frozenset[str]:
        """The agents whose registered members make up p (fixed at construction)."""
        return self._pretrusted

    def beta(self, agent: str) -> Beta:
        rec = self._record(agent)
        return self._beta_at(rec, self.round)

    def expected(self, agent: str) -> float:
        """E = α / (α + β), live."""
        return self.beta(agent).mean

    def weight_micro(self, agent: str) -> int:
        """Voting weight fixed at the last tick, in micro-units."""
        return self._record(agent).weight

    def weight(self, agent: str) -> float:
        """Voting weight fixed at the last tick, in [w_min, w_max]."""
        return self._record(agent).weight / 1_000_000

    def tier(self, agent: str, cap: int = MAX_TIER) -> int:
        """Tier fixed at the last tick, capped by ``cap`` (the sanction layer's cap).

        The cap applies on read: the reputation-earned tier keeps evolving underneath, so
        lifting a sanction restores it at once.
        """
        if not 0 <= cap <= MAX_TIER:
            raise ValueError(f"tier cap must be in 0..{MAX_TIER}, got {cap!r}")
        return min(self._record(agent).tier.tier, cap)

    def global_trust(self) -> dict[str, float]:
        """EigenTrust global trust of every agent (sums to 1), live, sorted by agent."""
        t = self._global().trust
        return {name: float(t[i]) for i, name in enumerate(self._names)}

    def pretrust_vector(self) -> FloatArray:
        """p: uniform over the registered pre-trusted agents, or over everyone if none is
        registered (then every agent keeps a/N of the trust)."""
        n = len(self._names)
        p = np.zeros(n, dtype=np.float64)
        for name in self.pretrusted:
            if name in self._agents:
                p[self._position(name)] = 1.0
        if not p.any():
            p[:] = 1.0
        return p / p.sum() if n else p

    def trust_result(self) -> EigenTrustResult:
        """The EigenTrust computation behind ``global_trust`` (iterations, convergence)."""
        return self._global()

    def local_trust(self) -> dict[tuple[str, str], float]:
        """s_ij = max(agree − disagree, 0) for every pair with positive trust (symmetric;
        EigenTrust's "satisfactory minus unsatisfactory" with agreement as satisfaction)."""
        return {
            key: pair.agree - pair.disagree
            for key, pair in sorted(self._pairs.items())
            if pair.agree > pair.disagree
        }

    def snapshot(self) -> dict[str, Any]:
        """JSON-ready state: agents sorted by id, pairs sorted, floats as they are."""
        res = self._global()
        trust = res.trust
        agents: dict[str, Any] = {}
        for i, name in enumerate(self._names):
            rec = self._agents[name]
            state, history = self._replayed(rec, self.round)
            agents[name] = {
                **self._beta_at(rec, self.round).to_dict(),
                "weight": rec.weight / 1_000_000,
                "weight_micro": rec.weight,
                "weight_history": history,
                "tier": state.tier,
                "held": list(state.held),
                "joined": rec.joined,
                "trust": float(trust[i]),
            }
        return {
            "round": self.round,
            "feedback": self.feedback,
            "pretrusted": sorted(self.pretrusted),
            "agents": agents,
            "agreement": [
                [i, j, pair.agree, pair.disagree] for (i, j), pair in sorted(self._pairs.items())
            ],
            "eigentrust": {
                "iterations": res.iterations,
                "converged": res.converged,
                "residual": res.residual,
            },
        }

    # --- hooks (one rule each; the mutants override them) --------------------------------

    def _decay(self, b: Beta) -> Beta:
        return decay(b, self.params.delta)  # REP-1

    def _cap(self, raw: int, history: Iterable[int], gain: int) -> int:
        return farm_capped(raw, history, gain)

    def _step_tier(self, state: TierState, e: float) -> TierState:
        return step_tier(state, e, self.params)

    # --- internals -----------------------------------------------------------------------

    def _record(self, agent: str) -> _Record:
        try:
            return self._agents[agent]
        except KeyError:
            raise KeyError(f"unknown agent {agent!r}") from None

    def _position(self, agent: str) -> int:
        """The agent's index in EigenTrust's vectors (sorted order), in O(log N)."""
        return bisect.bisect_left(self._names, agent)

    def _invalidate_trust(self) -> None:
        self._trust = None
        self._trust_version += 1

    def _note_evidence(self, agent: str, beta: Beta) -> None:
        """Keep ``_informed`` = the agents whose raw weight depends on global trust."""
        if local_score(beta.mean) > 0.0:
            self._informed.add(agent)
        else:
            self._informed.discard(agent)

    def _beta_at(self, rec: _Record, round: int) -> Beta:
        """``rec.beta`` with the decay of the rounds up to ``round`` applied, one at a time
        as an eager tick applies them (so the floats are the same).  A Beta the rule
        leaves unchanged (the floor α + β = 2, or δ = 0) stays so: the loop stops there,
        so a catch-up costs at most the rounds the evidence takes to reach the floor."""
        b = rec.beta
        for _ in range(round - rec.decayed):
            after = self._decay(b)  # REP-1
            if after == b:
                break
            b = after
        return b

    def _tier_settled(self, tier: int, e: float) -> bool:
        """With E held, ``step_tier`` keeps ``tier`` for ever: no promotion is possible
        (top tier, or E below the next threshold) and no demotion (E at least this one's)."""
        th = tier_thresholds(self.params)
        return e >= th[tier] and (tier == MAX_TIER or e < th[tier + 1])

    def _replayed(self, rec: _Record, round: int) -> tuple[TierState, list[int]]:
        """A settled agent's tier state and weight history at ``round``: each round since
        ``since`` ran step_tier with the tier unchanged (``held`` + 1 up to the tier) and
        appended the same weight (the farming cap no longer binds)."""
        k = round - rec.since
        if k <= 0:
            return rec.tier, list(rec.history)
        t = rec.tier
        state = TierState(t.tier, tuple(h + k if j <= t.tier else 0 for j, h in enumerate(t.held)))
        history = deque(rec.history, maxlen=rec.history.maxlen)
        history.extend([rec.weight] * min(k, self.params.farm_window))
        return state, list(history)

    def _settle(self, rec: _Record, round: int) -> None:
        """Bring a settled agent's tier state and history to ``round`` (before ticking it)."""
        if round > rec.since:
            state, history = self._replayed(rec, round)
            rec.tier = state
            rec.history = deque(history, maxlen=self.params.farm_window)
            rec.since = round

    def _global(self) -> EigenTrustResult:
        if self._trust is None:
            src: list[int] = []
            dst: list[int] = []
            w: list[float] = []
            for (i, j), s in self.local_trust().items():
                pi, pj = self._position(i), self._position(j)
                src += [pi, pj]
                dst += [pj, pi]
                w += [s, s]
            self._trust = eigentrust(
                len(self._names), src, dst, w, self.pretrust_vector(), self.params.eigentrust_a
            )
        return self._trust
