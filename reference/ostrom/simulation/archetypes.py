"""How each archetype judges an artifact and acts on a ballot (docs/evaluation.md).

An agent never sees an artifact's quality, only a noisy reading of it (``perceive``):
quality plus Gaussian noise of sd ``perception_noise``, or ``deliberation_noise`` after
deliberation (the paper's "binary accuracy improvement": deliberation makes the reading
sharper, nothing more).  A reading at or above ``accept_threshold`` (by default
``ACCEPT_THRESHOLD``, the good/mediocre boundary) says "accept" (or
"keep" on a dispute ballot).  On top of that reading:

* **honest**: votes its reading; objects to a fast-tracked artifact and disputes an
  active one when the reading says reject.
* **sycophant**: imitates the votes it can observe on the ballot (their majority; on a
  tie, the first).  With commit-reveal it observes none while it votes, so it falls back
  on a poor reading of its own (sd ``sycophant_noise``).  It never objects or disputes.
* **malicious**: votes against its (accurate) reading: accepts bad, rejects good; objects
  to and disputes good artifacts.
* **strategic**: honest on most ballots, against its reading on a share
  ``strategic_attack`` of them (camouflage: enough honest votes to keep its reputation).
* **adaptive** (build then exploit): honest before round ``adaptive_switch``, malicious
  from then on.
* **broken**: with probability ``broken_malfunction`` a message is garbage (a malformed
  command, a reveal that does not open its commitment); otherwise a coin flip.
* **lazy**: commits only with probability ``lazy_participation``, reveals a commitment
  only with probability ``lazy_reveal`` (a non-reveal is a violation), and when it votes
  it rubber-stamps (accept / keep) without reading.  Never objects or disputes.
* **bloc** (experiment (b)): all members vote the same way on every ballot: against the
  truth on a share ``bloc_target`` of the artifacts (the same ones for every member, a
  hash of the artifact), with the truth otherwise — so that across rounds they agree with
  each other and with the decisions they sway.

Visibility (``no_commit_reveal``): when votes are public as they are cast, the agents
who gain from that — malicious, bloc, an exploiting adaptive, a strategic agent on an
attacked ballot — vote first (``speaks_first``), which is the threat concealment removes.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from ostrom.simulation.config import SimConfig

#: What an agent does with a ballot: endorse (accept / keep), oppose (reject / retract),
#: stay away, or send garbage (a broken agent's malfunction).
Act = Literal["endorse", "oppose", "abstain", "garbage"]
ENDORSE: Final = "endorse"
OPPOSE: Final = "oppose"
ABSTAIN: Final = "abstain"
GARBAGE: Final = "garbage"


@dataclass(frozen=True)
class Ballot:
    """What an agent faces: one artifact on one ballot, seen at round ``now``."""

    artifact: str
    quality: float  # latent quality in [0, 1)
    good: bool  # the truth precision is measured against
    kind: str  # "review" or "dispute"
    now: int
    deliberated: bool  # a deliberation phase preceded the vote
    visible: tuple[bool, ...] = ()  # endorsements already cast and visible, in order


def perceive(quality: float, sd: float, rng: random.Random) -> float:
    """A noisy reading of ``quality``."""
    return quality + rng.gauss(0.0, sd) if sd > 0 else quality


def reads_endorse(b: Ballot, cfg: SimConfig, rng: random.Random) -> bool:
    """An honest reading: does the agent think the artifact should stay / be accepted?"""
    sd = cfg.deliberation_noise if b.deliberated else cfg.perception_noise
    return perceive(b.quality, sd, rng) >= cfg.accept_threshold


def _draw(seed: int, *key: object) -> float:
    """A uniform draw in [0, 1) that depends only on ``seed`` and ``key`` (shared by
    every agent that asks the same question: how a bloc agrees without talking)."""
    h = hashlib.sha256(repr((seed, *key)).encode()).digest()
    return int.from_bytes(h[:8], "big") / 2**64


def attacks(archetype: str, agent: str, b: Ballot, cfg: SimConfig, seed: int) -> bool:
    """Whether this agent votes against its reading on this ballot (adversaries only)."""
    if archetype == "malicious":
        return True
    if archetype == "adaptive":
        return b.now >= cfg.adaptive_switch
    if archetype == "strategic":
        return _draw(seed, "strategic", agent, b.artifact, b.kind) < (cfg.strategic_attack)
    if archetype == "bloc":
        return _draw(seed, "bloc", b.artifact) < cfg.bloc_target
    return False


def speaks_first(archetype: str, agent: str, b: Ballot, cfg: SimConfig, seed: int) -> bool:
    """Whether the agent, when votes are visible, casts its vote before the others."""
    return archetype in ("malicious", "bloc", "adaptive", "strategic") and attacks(
        archetype, agent, b, cfg, seed
    )


def vote(
    archetype: str, agent: str, b: Ballot, cfg: SimConfig, rng: random.Random, seed: int
) -> Act:
    """The agent's act on a ballot (participation included)."""
    if archetype == "honest":
        return ENDORSE if reads_endorse(b, cfg, rng) else OPPOSE
    if archetype == "sycophant":
        if b.visible:
            yes = sum(b.visible)
            no = len(b.visible) - yes
            follow = b.visible[0] if yes == no else yes > no
            return ENDORSE if follow else OPPOSE
        sd = cfg.sycophant_noise
        return ENDORSE if perceive(b.quality, sd, rng) >= cfg.accept_threshold else OPPOSE
    if archetype in ("malicious", "strategic", "adaptive"):
        honest = reads_endorse(b, cfg, rng)
        return ENDORSE if honest != attacks(archetype, agent, b, cfg, seed) else OPPOSE
    if archetype == "bloc":
        return ENDORSE if b.good != attacks("bloc", agent, b, cfg, seed) else OPPOSE
    if archetype == "broken":
        if rng.random() < cfg.broken_malfunction:
            return GARBAGE
        return ENDORSE if rng.random() < 0.5 else OPPOSE
    if archetype == "lazy":
        return ENDORSE if rng.random() < cfg.lazy_participation else ABSTAIN
    raise ValueError(f"unknown archetype {archetype!r}")


def reveals(archetype: str, cfg: SimConfig, rng: random.Random) -> Act:
    """Whether a committed reviewer reveals: ``endorse`` = reveal correctly, ``abstain`` =
    never reveal (non-reveal), ``garbage`` = a reveal that does not open the commitment."""
    if archetype == "lazy":
        return ENDORSE if rng.random() < cfg.lazy_reveal else ABSTAIN
    if archetype == "broken" and rng.random() < cfg.broken_malfunction:
        return GARBAGE
    return ENDORSE


def objects(
    archetype: str, agent: str, b: Ballot, cfg: SimConfig, rng: random.Random, seed: int
) -> Act:
    """On a fast-tracked artifact: ``oppose`` = object, ``garbage`` = a malformed message,
    anything else = let it through.  Sycophants and lazy agents never object."""
    if archetype in ("sycophant", "lazy"):
        return ABSTAIN
    if archetype == "broken":
        return GARBAGE if rng.random() < cfg.broken_malfunction else ABSTAIN
    return OPPOSE if vote(archetype, agent, b, cfg, rng, seed) == OPPOSE else ABSTAIN


def disputes(
    archetype: str, agent: str, b: Ballot, cfg: SimConfig, rng: random.Random, seed: int
) -> bool:
    """Whether the agent disputes an active artifact it looks at (``b.kind`` "dispute")."""
    if archetype in ("sycophant", "lazy", "broken"):
        return False
    return vote(archetype, agent, b, cfg, rng, seed) == OPPOSE


def order(reviewers: Sequence[str], first: Callable[[str], bool], rng: random.Random) -> list[str]:
    """The order in which reviewers cast visible votes: those who gain from being seen
    first (``first``: an agent's ``speaks_first``, which the run asks of its policy),
    then everyone else, each group shuffled."""
    leading = [a for a in reviewers if first(a)]
    rest = [a for a in reviewers if a not in leading]
    rng.shuffle(leading)
    rng.shuffle(rest)
    return leading + rest


__all__ = [
    "ABSTAIN",
    "ENDORSE",
    "GARBAGE",
    "OPPOSE",
    "Act",
    "Ballot",
    "attacks",
    "disputes",
    "objects",
    "order",
    "perceive",
    "reads_endorse",
    "reveals",
    "speaks_first",
    "vote",
]
