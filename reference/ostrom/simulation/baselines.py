"""The paper's baselines (§5.3), played by the same agents as the protocol.

* **majority**: each artifact gets ``reviewers`` reviewers drawn uniformly from all agents
  (not the submitter); they vote openly, one after the other (no concealment: the
  sycophant sees the votes cast before its own, and the agents who gain from being seen
  vote first, exactly as in the protocol's ``no_commit_reveal`` ablation); no weights,
  no deliberation, no sanctions.  With at least ``quorum`` votes the strict majority
  decides (a tie rejects); with fewer, the artifact expires.  Its reputation Gini is
  measured on a shadow ``ReputationBook`` fed the same feedback the protocol's would be
  (vote against decision, with noise): the book changes nothing, it only measures.
* **single_curator**: one agent, drawn at the start, decides every artifact with its own
  reading (its archetype's vote); a lazy curator who does not show up lets it expire.
* **ungoverned**: every proposal is accepted.

Baselines have no sanctions: their false-positive rate is not defined (NaN), and the
single curator and ungoverned keep no reputation (Gini NaN).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from ostrom.protocol.params import Params
from ostrom.protocol.reputation import Beta, ReputationBook
from ostrom.simulation import archetypes as arch
from ostrom.simulation.config import SimConfig
from ostrom.simulation.metrics import Tracker, gini, separation
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
    shadow: ReputationBook | None = None
    if cfg.governance == "majority":
        shadow = ReputationBook(Params())
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
                act = arch.vote(kind[curator], curator, b, cfg, rng_vote, seed)
                verdict = {"endorse": "active", "oppose": "rejected"}.get(act, "expired")
            else:
                verdict, votes = _majority(
                    cfg, seed, world.agents, kind, submitter, b, rng_pick, rng_vote
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


def _majority(
    cfg: SimConfig,
    seed: int,
    agents: tuple[str, ...],
    kind: dict[str, str],
    submitter: str,
    b: arch.Ballot,
    rng_pick: Any,
    rng_vote: Any,
) -> tuple[str, dict[str, str]]:
    """One open majority vote: the verdict ("active", "rejected", "expired") and the votes."""
    pool = [a for a in agents if a != submitter]
    reviewers = rng_pick.sample(pool, cfg.reviewers)
    ordered = arch.order(reviewers, kind, b, cfg, rng_vote, seed)
    seen: list[bool] = []
    votes: dict[str, str] = {}
    for agent in ordered:
        view = arch.Ballot(b.artifact, b.quality, b.good, b.kind, b.now, False, tuple(seen))
        act = arch.vote(kind[agent], agent, view, cfg, rng_vote, seed)
        if act in (arch.ENDORSE, arch.OPPOSE):
            seen.append(act == arch.ENDORSE)
            votes[agent] = "accept" if act == arch.ENDORSE else "reject"
    if len(votes) < cfg.quorum:
        return "expired", votes
    yes = sum(1 for v in votes.values() if v == "accept")
    return ("active" if yes > len(votes) - yes else "rejected"), votes


__all__ = ["run_baseline"]
