"""The forgetting model's world: items with a hidden ground-truth value over time.

The generative model (docs/evaluation.md, "The world"), a pure function of the seed and the
configuration's world fields — never of the mechanism, so every mechanism of a seed sees
exactly the same items, queries and accesses and runs can be paired by seed:

* **topics** — ``n_topics`` subjects of interest; half are alive at epoch 0, the others
  are born uniformly in the first 80% of the run; each stays of interest for an
  exponential time of mean ``topic_life`` epochs (it may outlive the run).  A topic has a
  vocabulary of ``TOPIC_WORDS`` words and ``slots_per_topic`` slots (entities);
* **items** — a topic's birth brings one item per slot, its *current* version.  While the
  topic lives, a slot's current item is replaced after an exponential time of mean
  ``supersede_every`` (a newer item on the same entity arrives): the old one is then
  **superseded**.  When the topic dies its current items become **stale**.  **Never
  useful** items (junk) arrive at ``junk_rate`` per epoch (a Poisson count; 100 epochs'
  worth at epoch 0).  An item is **useful** from its birth until it is superseded or its
  topic dies;
* **texts** — an item reads ``"<slot> <3 topic words> <3 background words>"``; a version
  shares its slot token and topic with its predecessor, so *lexical relevance cannot tell
  a superseded item from its replacement* — only accesses can (stated, not tuned away).
  Junk is four off-topic content words (``JUNK_WORDS``, which no query uses) and three
  background words: as long as an item, as much background, no subject;
* **queries** — ``queries_per_epoch`` per epoch: a uniformly drawn live topic, a slot by
  Zipf popularity (weight 1/(rank + 1): the tail slots are rarely read, which is what
  makes decay alone dangerous), worded ``"<slot> <2 topic words> <2 background words>"``;
  a query reads (accesses) the slot's current item;
* **stray accesses** — ``stray_per_epoch`` reads of a uniformly drawn item among those
  born so far (browsing noise: stale and junk items are read now and then too).

The hidden label of item x at epoch t is ``label(x, t)``: ``useful``, ``superseded``,
``stale`` or ``never_useful``.  Forgetting x at t is correct iff x is not useful at t;
superseded, stale and never-useful are absorbing, so an item forgotten correctly is never
needed again.

The population: ``n_agents`` agents of the scenario's kinds (largest-remainder counts,
shuffled), each with a voting weight drawn from its kind's range (``WEIGHTS``).  The
weights stand for reputation earned elsewhere — the paper experiment measures whether
reputation separates honest from adversarial agents; here it is assumed that it
partly does, and the ``no_reputation`` ablation measures what that assumption is worth.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ostrom.simulation.forgetting.config import ForgetConfig
from ostrom.simulation.world import counts, stream

#: Words in a topic's vocabulary, and background words shared by every text.
TOPIC_WORDS: Final = 8
BACKGROUND_WORDS: Final = 40
#: Off-topic content words that junk is made of (no query uses them).
JUNK_WORDS: Final = 200
#: Topics born after epoch 0 are born in this leading share of the run.
BIRTH_SPAN: Final = 0.8
#: Epochs' worth of junk present at epoch 0.
INITIAL_JUNK_EPOCHS: Final = 100
#: Voting weight ranges by kind, [lo, hi) (inside the protocol's [w_min, w_max]).
WEIGHTS: Final[dict[str, tuple[float, float]]] = {
    "careful": (0.5, 1.0),
    "sloppy": (0.3, 0.8),
    "eraser": (0.1, 0.5),
}

USEFUL: Final = "useful"
SUPERSEDED: Final = "superseded"
STALE: Final = "stale"
NEVER_USEFUL: Final = "never_useful"
LABELS: Final = (USEFUL, SUPERSEDED, STALE, NEVER_USEFUL)


@dataclass(frozen=True)
class Item:
    """One knowledge item and its hidden timeline."""

    id: str
    slot: str
    topic: int | None  # None: never useful (junk)
    text: str
    born: int  # the epoch it enters the knowledge base
    useful_until: int | None  # first epoch it is no longer useful (None: beyond the run)
    fate: str  # what it becomes at useful_until: superseded or stale (useful: never)

    def useful(self, t: int) -> bool:
        """Is the item valuable at epoch ``t``?  (Only then is forgetting it wrong.)"""
        if self.topic is None or t < self.born:
            return False
        return self.useful_until is None or t < self.useful_until

    def label(self, t: int) -> str:
        if self.topic is None:
            return NEVER_USEFUL
        return USEFUL if self.useful(t) or t < self.born else self.fate


@dataclass(frozen=True)
class Query:
    text: str
    item: str  # the item it reads: the slot's current version at that epoch


@dataclass(frozen=True)
class World:
    """Everything a run draws from its seed (see the module doc)."""

    agents: tuple[str, ...]
    kind: dict[str, str]
    weight: dict[str, float]
    items: tuple[Item, ...]  # in birth order
    arrivals: tuple[tuple[str, ...], ...]  # per epoch, the items born then
    queries: tuple[tuple[Query, ...], ...]  # per epoch
    strays: tuple[tuple[str, ...], ...]  # per epoch, items read at random

    def item(self, x: str) -> Item:
        return self._by_id[x]  # type: ignore[attr-defined,no-any-return]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {i.id: i for i in self.items})


def _exp(rng: random.Random, mean: float) -> float:
    return rng.expovariate(1.0 / mean)


def _words(rng: random.Random, vocab: Sequence[str], k: int) -> list[str]:
    return rng.sample(list(vocab), k)


def _poisson(rng: random.Random, lam: float) -> int:
    """A Poisson draw (Knuth's method for small λ, a rounded normal for large λ)."""
    if lam <= 0:
        return 0
    if lam > 50:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    limit, k, p = math.exp(-lam), 0, rng.random()
    while p > limit:
        k += 1
        p *= rng.random()
    return k


def make_population(
    cfg: ForgetConfig, seed: int
) -> tuple[tuple[str, ...], dict[str, str], dict[str, float]]:
    n = cfg.n_agents
    ids = tuple(f"g{i:03d}" for i in range(n))
    mix = cfg.population.mix
    kinds = [
        k
        for (k, _), c in zip(mix, counts(n, tuple(s for _, s in mix)), strict=True)
        for _ in range(c)
    ]
    stream(seed, "forgetting:population").shuffle(kinds)
    rng = stream(seed, "forgetting:weights")
    weight = {a: round(rng.uniform(*WEIGHTS[k]), 6) for a, k in zip(ids, kinds, strict=True)}
    return ids, dict(zip(ids, kinds, strict=True)), weight


def make_world(cfg: ForgetConfig, seed: int) -> World:
    """The world of ``cfg`` and ``seed`` (the module doc says how it is drawn)."""
    epochs = cfg.epochs
    rng_topics = stream(seed, "forgetting:topics")
    rng_items = stream(seed, "forgetting:items")
    rng_text = stream(seed, "forgetting:texts")
    background = [f"bg{j}" for j in range(BACKGROUND_WORDS)]
    junk_words = [f"jw{j}" for j in range(JUNK_WORDS)]
    vocab = [[f"t{k}w{j}" for j in range(TOPIC_WORDS)] for k in range(cfg.n_topics)]
    items: list[Item] = []
    serial = [0]

    def new_id() -> str:
        serial[0] += 1
        return f"m{serial[0]:05d}"

    alive: list[tuple[int, int]] = []  # (born, ends) per topic
    first = (cfg.n_topics + 1) // 2
    for k in range(cfg.n_topics):
        born = 0 if k < first else rng_topics.randrange(1, max(2, int(epochs * BIRTH_SPAN)))
        ends = born + max(1, math.ceil(_exp(rng_topics, cfg.topic_life)))
        alive.append((born, ends))
        for j in range(cfg.slots_per_topic):
            slot = f"t{k}s{j}"
            t = born
            while t < epochs and t < ends:
                nxt = t + max(1, math.ceil(_exp(rng_items, cfg.supersede_every)))
                text = " ".join(
                    [slot, *_words(rng_text, vocab[k], 3), *_words(rng_text, background, 3)]
                )
                if nxt < ends and nxt < epochs:
                    until, fate = nxt, SUPERSEDED
                elif ends < epochs:
                    until, fate = ends, STALE
                else:
                    until, fate = None, USEFUL
                items.append(Item(new_id(), slot, k, text, t, until, fate))
                t = nxt
    rng_junk = stream(seed, "forgetting:junk")
    for t in range(epochs):
        n = _poisson(rng_junk, cfg.junk * (INITIAL_JUNK_EPOCHS if t == 0 else 1))
        for _ in range(n):
            text = " ".join([*_words(rng_junk, junk_words, 4), *_words(rng_junk, background, 3)])
            jid = new_id()
            items.append(Item(jid, f"junk-{jid}", None, text, t, t, NEVER_USEFUL))
    items.sort(key=lambda i: (i.born, i.id))
    arrivals: list[list[str]] = [[] for _ in range(epochs)]
    for i in items:
        arrivals[i.born].append(i.id)

    # the current version of each slot at each epoch, for the queries
    versions: dict[str, list[Item]] = {}
    for i in items:
        if i.topic is not None:
            versions.setdefault(i.slot, []).append(i)
    rng_q = stream(seed, "forgetting:queries")
    zipf = [1.0 / (j + 1) for j in range(cfg.slots_per_topic)]
    queries: list[tuple[Query, ...]] = []
    strays: list[tuple[str, ...]] = []
    rng_stray = stream(seed, "forgetting:strays")
    born_so_far = 0
    for t in range(epochs):
        live_topics = [k for k, (b, e) in enumerate(alive) if b <= t < e]
        qs: list[Query] = []
        for _ in range(cfg.queries_per_epoch if live_topics else 0):
            k = rng_q.choice(live_topics)
            j = rng_q.choices(range(cfg.slots_per_topic), weights=zipf)[0]
            slot = f"t{k}s{j}"
            current = next(v for v in reversed(versions[slot]) if v.born <= t)
            text = " ".join([slot, *_words(rng_q, vocab[k], 2), *_words(rng_q, background, 1)])
            qs.append(Query(text, current.id))
        queries.append(tuple(qs))
        born_so_far += len(arrivals[t])
        strays.append(
            tuple(items[rng_stray.randrange(born_so_far)].id for _ in range(cfg.stray_per_epoch))
            if born_so_far
            else ()
        )
    agents, kind, weight = make_population(cfg, seed)
    return World(
        agents=agents,
        kind=kind,
        weight=weight,
        items=tuple(items),
        arrivals=tuple(tuple(a) for a in arrivals),
        queries=tuple(queries),
        strays=tuple(strays),
    )


__all__ = [
    "LABELS",
    "NEVER_USEFUL",
    "STALE",
    "SUPERSEDED",
    "USEFUL",
    "WEIGHTS",
    "Item",
    "Query",
    "World",
    "make_population",
    "make_world",
]
