"""The world a run starts from, drawn from its seed: the population and the artifacts."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ostrom.simulation.config import QUALITY_RANGES, SimConfig, population


def stream(seed: int, name: str) -> random.Random:
    """An independent random stream for one purpose (votes, noise, proposals, ...): a
    change in how one purpose draws does not shift the draws of another."""
    return random.Random(f"ostrom-sim:{seed}:{name}")


@dataclass(frozen=True)
class Artifact:
    id: str
    quality_class: str  # "good", "mediocre" or "bad"
    quality: float  # latent, in [0, 1)

    @property
    def good(self) -> bool:
        return self.quality_class == "good"


@dataclass(frozen=True)
class World:
    agents: tuple[str, ...]  # ids, sorted
    archetype: dict[str, str]  # id -> archetype
    artifacts: tuple[Artifact, ...]  # in proposal order


def counts(total: int, shares: tuple[float, ...]) -> list[int]:
    """``total`` split by ``shares`` with the largest-remainder rule (sums to total)."""
    exact = [s * total for s in shares]
    out = [int(x) for x in exact]
    for i in sorted(range(len(shares)), key=lambda i: (-(exact[i] - out[i]), i))[
        : total - sum(out)
    ]:
        out[i] += 1
    return out


def make_world(cfg: SimConfig, seed: int) -> World:
    """Agents ``a000``... with their archetypes shuffled, and ``cfg.artifacts`` artifacts
    with exactly the quality mix's counts, in a shuffled order."""
    width = max(3, len(str(cfg.agents - 1)))
    ids = tuple(f"a{i:0{width}d}" for i in range(cfg.agents))
    kinds = population(cfg)
    stream(seed, "population").shuffle(kinds)
    rng = stream(seed, "artifacts")
    classes = [
        c
        for c, n in zip(
            ("good", "mediocre", "bad"), counts(cfg.artifacts, cfg.quality_mix), strict=True
        )
        for _ in range(n)
    ]
    rng.shuffle(classes)
    awidth = max(4, len(str(cfg.artifacts - 1)))
    arts = tuple(
        Artifact(f"x{i:0{awidth}d}", c, rng.uniform(*QUALITY_RANGES[c]))
        for i, c in enumerate(classes)
    )
    return World(ids, dict(zip(ids, kinds, strict=True)), arts)


__all__ = ["Artifact", "World", "counts", "make_world", "stream"]
