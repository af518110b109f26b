"""The paper's baselines (§5.3), played by the same agents as the protocol.

* **majority** (the main baseline): each artifact gets ``reviewers`` reviewers drawn
  uniformly from all agents (not the submitter); they vote *concealed and simultaneously*
  (nobody sees another's vote, so the sycophant falls back on its own poor reading and no
  adversary can lead), with no weights, no deliberation, no sanctions.  With at least
  ``quorum`` votes the strict majority decides (a tie rejects); with fewer, the artifact
  expires.  This is the like-for-like comparison (issue 43, item 1): the protocol's own
  ballots are concealed too, so the difference is what the protocol adds, not what a
  visible ballot takes away.
* **weighted_majority**: the same concealed ballot, each vote weighted by the voter's
  weight in a ``ReputationBook`` fed the protocol's feedback (vote against decision, with
  the feedback noise; ``truth`` under ground-truth feedback).  The classic weighted
  majority: reputation without the lifecycle (no tiers, recruitment, deliberation,
  disputes or sanctions).  A tie in weight rejects.
* **majority_open** (the weaker variant the first evaluation used): the ballot of
  ``majority`` cast openly, one vote after the other; the agents who gain from being seen
  vote first and the sycophant copies what it sees, exactly as in the protocol's
  ``no_commit_reveal`` ablation.  Kept and labelled, so that the share of the protocol's
  advantage that came from this choice can be stated.
* **single_curator**: one agent, drawn at the start, decides every artifact with its own
  reading (its archetype's vote); a lazy curator who does not show up lets it expire.
* **ungoverned**: every proposal is accepted.

The majority ballots keep a ``ReputationBook`` fed the same feedback: for ``majority``
and ``majority_open`` it is a *shadow* that changes nothing and only measures the Gini and
separation the paper reports; for ``weighted_majority`` it supplies the weights.

Baselines have no sanctions: their false-positive rate is not defined (NaN), and the
single curator and ungoverned keep no reputation (Gini NaN).
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Any

from ostrom.protocol.params import Params
from ostrom.protocol.reputation import Beta, ReputationBook
from ostrom.simulation import archetypes as arch
from ostrom.simulation.config import SimConfig
from ostrom.simulation.metrics import Tracker, gini, separation
from ostrom.simulation.policy import Seats, observe
from ostrom.simulation.result import SERIES, Progress, RunResult
from ostrom.simulation.world import make_world, stream


def run_baseline(cfg: SimConfig, seed: int, progress: Progress | None = None) -> RunResult:
    """Run one of the baselines (``cfg.governance``) for one seed."""
    world = make_world(cfg, seed)
    kind = world.archetype
    tracker = Tracker({a.id: a.good for a in world.artifacts})
    rng_vote = stream(seed, "votes")
    rng_pick = stream(seed, "reviewers")
    rng_noise = stream(seed, "feedback-noise")
    curator = stream(seed, "curator").choice(world.agents)
    seats = Seats(cfg, seed, rng_vote)
    shadow: ReputationBook | None = None
    if cfg.governance in MAJORITIES:
        shadow = ReputationBook(dataclasses.replace(Params(), delta=cfg.reputation_decay))
        for a in world.agents:
            shadow.add(a, prior=Beta(cfg.founder_reputation, cfg.founder_evidence), tier=1)
    series: dict[str, list[float]] = {k: [] for k in SERIES}
    decisions: Counter[str] = Counter()
    nxt = 0
    for r in range(cfg.rounds):
        for _ in range(cfg.proposals_per_round):
            if nxt >= len(world.artifacts):
                break
            art = world.artifacts[nxt]
            nxt += 1
            submitter = rng_pick.choice(world.agents)
            b = arch.Ballot(art.id, art.quality, art.good, "review", r, False)
            if cfg.governance == "ungoverned":
                verdict = "active"
            elif cfg.governance == "single_curator":
                role = kind[curator]
                act = seats.of(role).vote(observe(curator, role, b, cfg))
                verdict = {"endorse": "active", "oppose": "rejected"}.get(act, "expired")
            else:
                verdict, votes = _majority(
                    cfg, seats, world.agents, kind, submitter, b, rng_pick, rng_vote, shadow
                )
                if shadow is not None and verdict != "expired":
                    decided = "accept" if verdict == "active" else "reject"
                    for agent, v in votes.items():
                        positive = v == decided
                        if cfg.feedback == "truth":
                            positive = v == ("accept" if art.good else "reject")
                        if rng_noise.random() < cfg.feedback_noise:
                            positive = not positive
                        shadow.observe(agent, positive)
            decisions[verdict] += 1
            tracker.set(art.id, verdict)
        if shadow is not None:
            shadow.tick()
        series["precision"].append(tracker.precision)
        series["recall"].append(tracker.recall)
        series["gini"].append(
            gini(shadow.expected(a) for a in world.agents) if shadow is not None else math.nan
        )
        series["fpr"].append(math.nan)
        if progress is not None:
            progress(r + 1, cfg.rounds)
    final: dict[str, float] = {k: v[-1] for k, v in series.items()}
    extras: dict[str, Any] = {
        "decisions": dict(sorted(decisions.items())),
        "proposed": nxt,
        "active": tracker.active,
        "settled": tracker.settled,
    }
    if cfg.governance == "single_curator":
        extras["curator"] = {"agent": curator, "archetype": kind[curator]}
    final["separation"] = (
        separation(kind, {a: shadow.expected(a) for a in world.agents})
        if shadow is not None
        else math.nan
    )
    return RunResult(cfg, seed, series, final, extras)


#: The majority ballots (``_majority``): concealed, concealed and weighted, open.
MAJORITIES = ("majority", "weighted_majority", "majority_open")


def _majority(
    cfg: SimConfig,
    seats: Seats,
    agents: tuple[str, ...],
    kind: dict[str, str],
    submitter: str,
    b: arch.Ballot,
    rng_pick: Any,
    rng_vote: Any,
    book: ReputationBook | None,
) -> tuple[str, dict[str, str]]:
    """One majority ballot of ``cfg.governance``: the verdict ("active", "rejected",
    "expired") and the votes.  Concealed ballots show every voter nothing (``visible``
    stays empty) and are cast in the sampled order; the open one is cast in
    ``archetypes.order`` with each vote visible to those after it."""
    pool = [a for a in agents if a != submitter]
    reviewers = rng_pick.sample(pool, cfg.reviewers)
    open_ballot = cfg.governance == "majority_open"
    ordered = reviewers
    if open_ballot:
        ordered = arch.order(
            reviewers,
            lambda a: seats.of(kind[a]).speaks_first(observe(a, kind[a], b, cfg)),
            rng_vote,
        )
    seen: list[bool] = []
    votes: dict[str, str] = {}
    for agent in ordered:
        view = arch.Ballot(b.artifact, b.quality, b.good, b.kind, b.now, False, tuple(seen))
        act = seats.of(kind[agent]).vote(observe(agent, kind[agent], view, cfg))
        if act in (arch.ENDORSE, arch.OPPOSE):
            if open_ballot:
                seen.append(act == arch.ENDORSE)
            votes[agent] = "accept" if act == arch.ENDORSE else "reject"
    if len(votes) < cfg.quorum:
        return "expired", votes
    if cfg.governance == "weighted_majority":
        assert book is not None
        yes_w = sum(book.weight(a) for a, v in votes.items() if v == "accept")
        no_w = sum(book.weight(a) for a, v in votes.items() if v == "reject")
        return ("active" if yes_w > no_w else "rejected"), votes
    yes = sum(1 for v in votes.values() if v == "accept")
    return ("active" if yes > len(votes) - yes else "rejected"), votes


__all__ = ["MAJORITIES", "run_baseline"]
