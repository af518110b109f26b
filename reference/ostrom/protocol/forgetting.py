"""Collective forgetting (docs/design.md §5): keep scores, forget votes and the forget decision.

Forgetting has two sides, and this module is the single place that computes either:

* **the agent side** — what one agent computes privately before it votes: multi-scale
  decay ``D`` over the artifact's last access, relevance ``R`` from a pluggable scorer,
  keep score ``C = ω_D·D + ω_R·R``, and, when ``C < θ``, a forget vote with confidence
  ``c = (θ − C)/θ``.  The result is a ``forget_vote`` command (``Assessment.command``);
  the orchestrator never votes (docs/design.md §3), it only records the vote;
* **the orchestrator side** — what the orchestrator computes at a tick from the recorded
  votes: forget score ``S = Σ w_i·c_i`` over the forget voters, dynamic quorum
  ``Q = α·Σ w_j`` over *all* active agents, and the decision ``S ≥ Q`` (and ``S > 0``)
  (``decide``).  A decision is executed only by firing the lifecycle's ``forget`` row
  (``Orchestrator._forget``), so ``forgotten`` stays terminal with a tombstone, and in a
  replicated deployment only as part of a PBFT-committed ``tick`` (REPL-1).

Why integers on the orchestrator side: replicas (and implementations in other languages)
must take the *same* decision at the threshold.  Weights and confidences are micro-units
(``agents.micro``), so ``S`` and ``Q`` are exact integers in micro² (10⁻¹² weight units)
and ``S ≥ Q`` is decided without any float (as ``voting.py`` does for tallies).  The agent
side is private to each agent and may use floats; only its output, the confidence, crosses
into the protocol, and it is produced in micro-units so that it round-trips exactly.

"Active" (the agents whose weight makes up ``Q``) is the orchestrator's definition: an
agent in the registry whose sanction is not barring (not suspended, banned or
quarantined), at the tick that decides.  Its weight is ``Agent.weight_micro`` (tier 0
counts at ``w_min``).  A vote by an agent that is barred at the tick counts 0 (its vote is
kept and counts again if the bar is lifted), exactly as the quorum leaves it out.

FG-1 (no single agent can make an artifact forgotten) is *not* implied by the rule alone:
it holds for a population of ``N`` active agents iff ``(1 − α)·w_max < α·(N − 1)·w_min``
(derivation in ``fg1_holds``).  At the defaults that means ``N ≥ 12``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from ostrom.protocol.agents import MICRO, Agent, micro
from ostrom.protocol.lifecycle import DISPUTED, FORGETTABLE, RETRACTED
from ostrom.protocol.params import Params

__all__ = [
    "BLOCK_DISPUTED",
    "BLOCK_HIDDEN",
    "BLOCK_POPULATION",
    "BLOCK_STATE",
    "LEXICAL",
    "MICRO2",
    "RULE",
    "ArtifactStatus",
    "Assessment",
    "ForgetDecision",
    "ForgetRule",
    "ForgetView",
    "LexicalScorer",
    "RelevanceScorer",
    "active_weights",
    "assess",
    "blocker",
    "checked_relevance",
    "decay",
    "decay_bound",
    "decide",
    "fg1_holds",
    "fg1_margin",
    "fg1_min_active",
    "forget_candidates",
    "forget_confidence",
    "forget_confidence_micro",
    "forget_quorum",
    "forget_score",
    "keep_bound",
    "keep_score",
    "tokens",
]

#: micro² per weight unit: ``S`` and ``Q`` are weight × confidence in micro-units squared.
MICRO2: Final = MICRO * MICRO

#: Why an artifact may not be forgotten now (``blocker``); ``None`` means it may.
BLOCK_DISPUTED: Final = "disputed"
BLOCK_HIDDEN: Final = "hidden_under_review"
BLOCK_STATE: Final = "not_forgettable"
BLOCK_POPULATION: Final = "too_few_active"  # only with decide(..., min_active=N)


# --- agent side: decay ----------------------------------------------------------------------


def decay(elapsed: float, scales: Sequence[float], weights: Sequence[float]) -> float:
    """Multi-scale decay ``D = Σ_k γ_k · exp(−elapsed / S_k)``; dimensionless, in [0, Σγ].

    ``elapsed = t − t_last`` is in rounds, as are the scales ``S_k``.  Several scales
    instead of one: an artifact read once a week and one read once a year should both
    decay, but on different clocks; a single exponential must pick one of them.

    Edge cases the parameter table allows: ``S_k = 0`` counts its ``γ_k`` only in the
    round of access (the limit of ``exp(−Δ/S)`` as ``S → 0``), ``S_k = ∞`` never decays.
    ``math.fsum`` (correctly rounded) makes ``D`` order-independent, never above
    ``fsum(γ)`` and non-increasing in ``elapsed`` also in floating point.  A negative or
    NaN ``elapsed`` (an access in the future) is a caller's bug and raises ``ValueError``.
    """
    if math.isnan(elapsed) or elapsed < 0:
        raise ValueError(f"elapsed time must be >= 0 rounds, got {elapsed!r}")
    if len(scales) != len(weights):
        raise ValueError("decay_scales and decay_weights must have the same length")
    terms: list[float] = []
    for s, g in zip(scales, weights, strict=True):
        if math.isnan(s) or s < 0 or math.isnan(g) or g < 0:
            raise ValueError(f"decay scale {s!r} and weight {g!r} must be >= 0")
        if s == math.inf:
            terms.append(g)
        elif s == 0:
            terms.append(g if elapsed == 0 else 0.0)
        else:
            terms.append(g * math.exp(-elapsed / s))
    return math.fsum(terms)


def decay_bound(params: Params) -> float:
    """``Σ γ_k``: the decay of an artifact accessed this very round (the top of D's range)."""
    return math.fsum(params.decay_weights)


def keep_bound(params: Params) -> float:
    """The top of the keep score's range: ``ω_D·Σγ + ω_R`` (1.0 at the defaults)."""
    return math.fsum((params.omega_D * decay_bound(params), params.omega_R))


# --- agent side: relevance ------------------------------------------------------------------


class RelevanceScorer(Protocol):
    """How relevant an artifact's text is to a context, as a number in [0, 1].

    The context is what the agent was recently asked or read (queries, accessed texts),
    most recent last.  Any scorer fits: the default is lexical (``LexicalScorer``); an
    embedding model can be plugged in by a caller that owns it.  A scorer must be
    deterministic (same inputs, same output): replaying a simulation must replay its votes.
    """

    def __call__(self, text: str, context: Sequence[str]) -> float: ...


_TOKEN: Final = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens: NFKC-normalised, case-folded runs of letters and digits.

    NFKC + casefold so that "Straße", "STRASSE" and full-width letters match; the regex is
    Unicode-aware so that non-Latin text is not reduced to nothing.
    """
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


@dataclass(frozen=True)
class LexicalScorer:
    """TF-IDF cosine between the artifact text and the context (pure Python, no model).

    ``R = cos(v(text), v(context))`` where ``v`` weighs raw term counts by the smoothed
    inverse document frequency ``idf(t) = ln((1 + n)/(1 + df(t))) + 1`` over the ``n``
    documents at hand (the text and each context item), and the context vector sums the
    term counts of all context items.  Vectors are non-negative, so ``R ∈ [0, 1]``: 0 when
    no word is shared (or either side is empty), 1 when the text *is* the context.

    Why lexical: the co-forgetting paper's relevance came from DistilBERT and was never
    defined as a number (range, pooling, normalisation against D); this one is a formula
    any implementation can reproduce, needs no download and makes the tests deterministic.
    Why IDF: words every document shares ("the", the slot's entity name) say little about
    relevance; smoothing keeps every idf ≥ 1 so a shared word never counts negatively.

    Determinism: counts are integers and every float sum is ``math.fsum`` over the terms,
    so the result does not depend on the order of the context items, on dict order or on
    ``PYTHONHASHSEED``.  (``math.log`` may differ in the last bit between C libraries; R
    is an agent's private input, and only its rounded confidence enters the protocol.)
    """

    idf: bool = True

    def __call__(self, text: str, context: Sequence[str]) -> float:
        doc = Counter(tokens(text))
        items = [Counter(tokens(c)) for c in context]
        query: Counter[str] = Counter()
        for item in items:
            query.update(item)
        if not doc or not query:
            return 0.0
        if self.idf:
            docs = [doc, *items]
            df: Counter[str] = Counter()
            for d in docs:
                df.update(d.keys())
            n = len(docs)
            idf = {t: math.log((1 + n) / (1 + k)) + 1.0 for t, k in df.items()}
        else:
            idf = dict.fromkeys(doc.keys() | query.keys(), 1.0)
        dot = math.fsum(doc[t] * idf[t] * query[t] * idf[t] for t in doc.keys() & query.keys())
        if dot == 0.0:
            return 0.0
        norm2_doc = math.fsum((k * idf[t]) ** 2 for t, k in doc.items())
        norm2_query = math.fsum((k * idf[t]) ** 2 for t, k in query.items())
        # one square root of the product: identical vectors give exactly 1.0
        return min(1.0, max(0.0, dot / math.sqrt(norm2_doc * norm2_query)))


#: The default scorer (docs/design.md §5: "lexical, no model download").
LEXICAL: Final = LexicalScorer()


def checked_relevance(r: float) -> float:
    """A scorer's output, refused unless it is a finite number in [0, 1].

    The keep score's range, and so the meaning of θ, rests on ``R ∈ [0, 1]``; a plugged-in
    scorer that breaks this must fail loudly, not vote with a nonsense confidence.
    """
    if not isinstance(r, int | float) or isinstance(r, bool) or not 0.0 <= r <= 1.0:
        raise ValueError(f"relevance must be a number in [0, 1], got {r!r}")
    return float(r)


# --- agent side: keep score and the vote -----------------------------------------------------


def keep_score(d: float, r: float, omega_D: float, omega_R: float) -> float:
    """``C = ω_D·D + ω_R·R``, in [0, ω_D·Σγ + ω_R]: high means "keep".

    A weighted *sum* (not a product): an artifact that is stale but still relevant, or
    fresh but off-topic, keeps part of its score, so neither signal alone erases it.
    """
    return math.fsum((omega_D * d, omega_R * r))


def forget_confidence_micro(keep: float, theta: float) -> int:
    """Confidence of a forget vote in micro-units: ``⌊(Θ − K)·10⁶ / Θ⌋`` if ``K < Θ``, else 0.

    ``K = micro(C)`` and ``Θ = micro(θ)``: the vote condition ``C < θ`` and the confidence
    ``c = (θ − C)/θ`` are evaluated on integers, so the agent's vote and the number it sends
    are the same in every implementation given the same keep score.  ``c`` is 0 at the
    threshold and 1 at ``C = 0`` (nothing left to keep); the floor never overstates it.
    With ``Θ = 0`` nothing is below the threshold: no agent ever votes.  Always in [0, 10⁶].
    """
    k, t = micro(keep), micro(theta)
    if t <= 0 or k >= t:
        return 0
    return min(MICRO, (t - max(k, 0)) * MICRO // t)


def forget_confidence(keep: float, theta: float) -> float:
    """``forget_confidence_micro`` as a number in [0, 1] (``micro`` of it round-trips)."""
    return forget_confidence_micro(keep, theta) / MICRO


@dataclass(frozen=True)
class Assessment:
    """One agent's view of one artifact: the numbers behind its vote (for observability)."""

    elapsed: float  # rounds since the last access
    decay: float  # D, in [0, Σγ]
    relevance: float  # R, in [0, 1]
    keep: float  # C = ω_D·D + ω_R·R
    confidence_micro: int  # c in micro-units; > 0 iff the agent votes forget

    @property
    def forget(self) -> bool:
        """Does the agent vote forget?  (``C < θ``, evaluated in micro-units.)"""
        return self.confidence_micro > 0

    @property
    def confidence(self) -> float:
        return self.confidence_micro / MICRO

    def command(self, agent: str, artifact: str) -> dict[str, Any] | None:
        """The ``forget_vote`` command this assessment calls for, or ``None`` (keep)."""
        if not self.forget:
            return None
        return {
            "op": "forget_vote",
            "agent": agent,
            "artifact": artifact,
            "confidence": self.confidence,
        }


def assess(
    text: str,
    context: Sequence[str],
    now: float,
    last_access: float,
    params: Params,
    scorer: RelevanceScorer = LEXICAL,
) -> Assessment:
    """Everything one agent computes about one artifact before it votes (docs/design.md §5)."""
    elapsed = now - last_access
    d = decay(elapsed, params.decay_scales, params.decay_weights)
    r = checked_relevance(scorer(text, context))
    c = keep_score(d, r, params.omega_D, params.omega_R)
    return Assessment(elapsed, d, r, c, forget_confidence_micro(c, params.theta))


# --- orchestrator side: who may be forgotten -------------------------------------------------


class ArtifactStatus(Protocol):
    """What ``forget_candidates`` reads of an artifact (``orchestrator.Artifact`` fits)."""

    @property
    def id(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def hidden(self) -> bool: ...


class ForgetView(ArtifactStatus, Protocol):
    """What ``decide`` reads: the status plus the recorded votes (voter → confidence, micro)."""

    @property
    def forget_votes(self) -> Mapping[str, int]: ...


def blocker(state: str, hidden: bool) -> str | None:
    """Why an artifact in ``state`` may not be forgotten now, or ``None`` if it may.

    LC-SAFE-6: never while ``disputed`` (the decision waits for the dispute; votes may
    still be cast).  Never while *hidden under review*: hidden and not yet resolved
    against the artifact.  In the orchestrator a hidden flag outlives its review only
    when the review retracted the artifact (a failed review clears it, LC-SAFE-5), so
    ``hidden`` together with any state but ``retracted`` is a pending review (or an
    inconsistent state), and the conservative answer is "not now".  A hidden
    ``retracted`` artifact may be forgotten: its review is over, and erasing reported
    content is exactly what forgetting is for.  Every other state must be a forgettable
    one (``lifecycle.FORGETTABLE``): transient states are still being decided and
    ``forgotten`` is terminal.
    """
    if state == DISPUTED:  # LC-SAFE-6
        return BLOCK_DISPUTED
    if hidden and state != RETRACTED:  # LC-SAFE-6 with LC-SAFE-5: hidden under review
        return BLOCK_HIDDEN
    if state not in FORGETTABLE:  # transient, or already forgotten (terminal)
        return BLOCK_STATE
    return None


# --- orchestrator side: score, quorum, decision ----------------------------------------------


def active_weights(agents: Iterable[Agent], w_min: float) -> dict[str, int]:
    """Weights (micro) of the *active* agents: registered and not barred at this tick.

    The same set the orchestrator has always used for ``Q``: an agent that is suspended,
    banned or quarantined can cast no vote, so it must not inflate the quorum either;
    every other agent counts, voter or not, tier 0 at ``w_min`` (REP-2).
    """
    return {a.id: a.weight_micro(w_min) for a in agents if not a.barred}


def forget_score(votes: Mapping[str, int], weights: Mapping[str, int]) -> int:
    """``S = Σ w_i·c_i`` over the forget voters, in micro² (a barred voter's weight is 0)."""
    return sum(weights.get(voter, 0) * c for voter, c in votes.items())


def forget_quorum(weights: Mapping[str, int], alpha: float) -> int:
    """``Q = α·Σ w_j`` over all active agents, in micro² (``micro(α)`` × Σ micro weights).

    Over *all* active agents, not over those who voted: a quorum of the voters alone is
    a fraction of whoever showed up, so a lone voter would be its own quorum (FG-1; the
    mutant ``QuorumOverVoters`` shows the test catching exactly that).
    """
    return micro(alpha) * sum(weights.values())


class ForgetRule:
    """The decision rule, one overridable step per method.

    Only ``property_tests/forgetting_mutants.py`` subclasses it (one deliberate bug
    each), to show that the property tests can fail; everything else uses ``RULE``.
    """

    def weights(self, agents: Iterable[Agent], w_min: float) -> dict[str, int]:
        return active_weights(agents, w_min)

    def score(self, votes: Mapping[str, int], weights: Mapping[str, int]) -> int:
        return forget_score(votes, weights)

    def quorum(self, votes: Mapping[str, int], weights: Mapping[str, int], alpha: float) -> int:
        return forget_quorum(weights, alpha)  # FG-1: every active agent, voter or not

    def tally(
        self, votes: Mapping[str, int], weights: Mapping[str, int], alpha: float
    ) -> tuple[int, int, bool]:
        """``(S, Q, reached)`` with ``reached = S ≥ Q and S > 0``, all integers.

        ``S > 0`` as well: with ``Q = 0`` (``α = 0``, or every agent barred) a vote of
        weight or confidence 0, or the stale vote of a now-barred agent, would otherwise
        meet the quorum and erase content nobody active asked to erase.
        """
        s = self.score(votes, weights)
        q = self.quorum(votes, weights, alpha)
        return s, q, s > 0 and s >= q

    def blocker(self, state: str, hidden: bool) -> str | None:
        return blocker(state, hidden)


RULE: Final = ForgetRule()


@dataclass(frozen=True)
class ForgetDecision:
    """The forget decision for one artifact at one tick, with its numbers.

    ``score`` and ``quorum`` are micro² integers (divide by ``MICRO2`` for weight units);
    ``reached`` is ``S ≥ Q`` (and ``S > 0``); ``blocked`` says why a reached decision must
    wait (``None``: it may be executed).  ``forget`` is what the orchestrator executes.
    """

    artifact: str
    state: str
    score: int
    quorum: int
    voters: int  # votes that counted: cast by agents active at this tick
    reached: bool
    blocked: str | None

    @property
    def forget(self) -> bool:
        return self.reached and self.blocked is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with ``S`` and ``Q`` also in weight units, for logs and demos."""
        return {
            "artifact": self.artifact,
            "state": self.state,
            "score_micro2": self.score,
            "quorum_micro2": self.quorum,
            "score": self.score / MICRO2,
            "quorum": self.quorum / MICRO2,
            "voters": self.voters,
            "reached": self.reached,
            "blocked": self.blocked,
            "forget": self.forget,
        }


def _checked_votes(art: ForgetView) -> Mapping[str, int]:
    votes = art.forget_votes
    for voter, c in votes.items():
        # FG-1 rests on c <= 1: a larger confidence would let one vote outweigh the quorum.
        if not isinstance(c, int) or not 0 <= c <= MICRO:
            raise ValueError(f"{art.id}: confidence of {voter} is {c!r}, not in [0, {MICRO}]")
    return votes


def forget_candidates(artifacts: Iterable[ArtifactStatus], rule: ForgetRule = RULE) -> list[str]:
    """Ids of the artifacts a forget decision may end *now*, in the order given.

    Never one that is ``disputed`` or hidden under review (LC-SAFE-6), never a transient
    or ``forgotten`` one.  Agents may still vote on a disputed artifact (the orchestrator
    records it, rules.md); such votes wait until the dispute has closed.
    """
    return [a.id for a in artifacts if rule.blocker(a.state, a.hidden) is None]


def decide(
    artifacts: Iterable[ForgetView],
    agents: Iterable[Agent],
    params: Params,
    rule: ForgetRule = RULE,
    *,
    min_active: int | None = None,
) -> list[ForgetDecision]:
    """The forget decision for each artifact (in the order given) under one registry.

    Active weights and ``Q`` are computed once for the whole call: every artifact decided
    at a tick sees the same quorum.  The caller executes exactly the decisions with
    ``forget`` true, through the lifecycle's ``forget`` row; a ``reached`` but ``blocked``
    decision is re-evaluated when the blocker clears (the orchestrator's forget watch).

    ``min_active`` (off by default, so the rule is docs/design.md §5's as written) blocks every
    decision while fewer agents are active: with ``min_active ≥ fg1_min_active(params)``
    FG-1 holds for *every* population, not only for the large ones (see ``fg1_holds``).
    It exists for a ``min_active_agents`` parameter, which the table does not have yet.
    """
    weights = rule.weights(agents, params.w_min)
    too_few = min_active is not None and len(weights) < min_active  # FG-1
    out: list[ForgetDecision] = []
    for art in artifacts:
        votes = _checked_votes(art)
        s, q, reached = rule.tally(votes, weights, params.alpha)
        counted = sum(1 for v in votes if v in weights)
        why = rule.blocker(art.state, art.hidden) or (BLOCK_POPULATION if too_few else None)
        out.append(ForgetDecision(art.id, art.state, s, q, counted, reached, why))
    return out


# --- FG-1: when no single agent can forget -------------------------------------------------


def fg1_margin(weights: Mapping[str, int], alpha: float) -> int:
    """``Q − max_i w_i·10⁶`` in micro² for this active population; FG-1 holds iff it is > 0.

    A single voter ``i`` contributes at most ``w_i·c_i ≤ w_i·10⁶`` (confidence ≤ 1), and
    ``Q`` does not depend on who votes, so no single agent can reach ``Q`` iff the heaviest
    active agent cannot.  (With no agent of positive weight no vote has ``S > 0``: FG-1
    holds vacuously and the margin is reported as ``Q + 1``.)
    """
    q = forget_quorum(weights, alpha)
    heaviest = max((w for w in weights.values() if w > 0), default=0)
    return q - heaviest * MICRO if heaviest > 0 else q + 1


def fg1_holds(params: Params, n_active: int) -> bool:
    """FG-1 for *every* population of ``n_active`` active agents under ``params``.

    Derivation (integers: ``M = 10⁶``, ``A = micro(α)``, ``W⁻ = micro(w_min)``,
    ``W⁺ = micro(w_max)``; every active weight lies in ``[W⁻, W⁺]``).  Agent ``i`` forgets
    alone iff ``W_i·C_i > 0`` and ``W_i·C_i ≥ A·(W_i + Σ_{j≠i} W_j)`` (``Q`` counts ``i``
    too).  The left side is largest at ``C_i = M``; the right side is smallest with the
    ``N − 1`` others at ``W⁻``.  So ``i`` can forget alone iff
    ``W_i·(M − A) ≥ A·(N − 1)·W⁻`` for some admissible ``W_i > 0``.  That is linear in
    ``W_i``, so an endpoint decides: for ``α ≤ 1`` the worst is ``W_i = W⁺``, and

        FG-1 for all populations of N  ⇔  W⁺·(M − A) < A·(N − 1)·W⁻
                                       ⇔  (1 − α)·w_max < α·(N − 1)·w_min   (in reals)
                                       ⇔  α·(w_max + (N − 1)·w_min) > w_max,

    i.e. the smallest quorum a population containing a ``w_max`` agent can have exceeds
    ``w_max`` (docs/design.md §5's "Q > w_max", read with the voter inside ``Q``).  It is exact (the
    population "one agent at ``w_max``, ``N − 1`` at ``w_min``, confidence 1" attains
    it), and monotone in ``N``.  The simpler ``α·N·w_min > w_max`` is sufficient but not
    necessary.  It fails for ``N = 1`` whenever ``α ≤ 1`` (a lone agent is its own
    quorum) and for every ``N`` when ``α = 0`` or ``w_min = 0``.
    """
    if n_active < 1:
        return True  # no agent: nobody to forget alone
    lo, hi, a = micro(params.w_min), micro(params.w_max), micro(params.alpha)
    if hi <= 0:
        return True  # every weight is 0: no vote has S > 0
    others = (n_active - 1) * lo
    # the endpoints of the admissible positive weights (linear in W_i: one of them is worst)
    return all(w * MICRO < a * (w + others) for w in {hi, max(lo, 1)})


def fg1_min_active(params: Params) -> int | None:
    """The smallest ``N`` from which FG-1 holds for every population of ``N`` or more
    active agents, or ``None`` if no population size suffices (``α = 0`` or ``w_min = 0``).

    From ``W⁺·(M − A) < A·(N − 1)·W⁻``: ``N = ⌊W⁺·(M − A) / (A·W⁻)⌋ + 2``.  At the
    defaults (α 0.5, w_min 0.1, w_max 1.0): 12; with 11 active agents, one at ``w_max``
    and ten at ``w_min``, ``S = Q = 1.0`` exactly and one vote forgets.
    """
    lo, hi, a = micro(params.w_min), micro(params.w_max), micro(params.alpha)
    if hi <= 0 or a > MICRO:
        return 1
    if a == 0 or lo == 0:
        return None
    return hi * (MICRO - a) // (a * lo) + 2
