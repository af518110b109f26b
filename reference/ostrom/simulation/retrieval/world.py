"""The generative model of the retrieval experiment: facts as sentences, trials, queries.

Why a pure function of (workload, seed): every store must face exactly the same writes
and queries, so that runs of different stores pair by seed.  ``make_world`` never reads
``store``; ``order``, ``transient`` and ``phrasing`` change the stream only in the timing
of the proposals, their marking and their templates.

* **slots** are (entity, attribute) facts: ``entities`` made-up names x ``ATTRIBUTES``.
  Each starts with a value; a value is a made-up word never used for anything else, so a
  sentence's value says which version it is.
* **sentences**: a value is written as a sentence from ``TEMPLATES`` ("The deploy region
  of orlan is vemut.").  With ``phrasing = varied`` each sentence draws its template, so
  the versions of a fact share different words with the query; with ``fixed`` a slot's
  sentences all use one template (the lexical-overlap control).  A transient proposal's
  sentence says so ("For now, ..."), and carries the tag ``transient``.
* **queries**: "What is the deploy region of orlan?" (the words a reader would use).
* **trials** (as the plasticity world): at t0 a slot's truth changes old -> new; the
  valid update (new) and k interfering proposals — ``same_slot``: one wrong value k
  times; ``repeated``: the old value k times — one round apart, after (``after``) or
  before (``before``) the valid update; measured ``window`` rounds after the valid update.
* **agents**: ``adversary`` (a share) or ``honest``.  No agent is stale by kind: each
  honest agent is stale for a trial with probability ``stale_prob`` (it believes the old
  value for the whole trial), drawn per (agent, trial).  **Every proposal's submitter,
  the valid update's and the conflicts' alike, is drawn uniformly from all agents** that
  may still propose in its round: who proposes says nothing about what is true (the
  persona leak of the plasticity world, docs/evaluation.md).
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass

from ostrom.simulation.plasticity.config import PROPOSE_RATE
from ostrom.simulation.retrieval.config import ATTRIBUTES, KINDS, RetrievalConfig
from ostrom.simulation.world import counts as largest_remainder
from ostrom.simulation.world import stream

__all__ = [
    "CONFLICT",
    "INITIAL",
    "TEMPLATES",
    "VALID",
    "Proposal",
    "Trial",
    "World",
    "make_world",
    "sentence",
]

#: The roles of the proposals.
VALID, CONFLICT, INITIAL = "valid", "conflict", "initial"

#: How a fact is written.  They share words with the query ("what is the A of E?") to
#: different degrees: the first repeats it, the last shares only the entity and attribute.
TEMPLATES = (
    "The {attribute} of {entity} is {value}.",
    "{entity} has {value} as its {attribute}.",
    "For {entity} we now use {value}; that is the {attribute} agreed in the last review.",
    "{attribute} ({entity}): {value}",
)
#: The prefix of a transient proposal's sentence.
TRANSIENT_PREFIX = "For now, until further notice: "

_ONSETS = (
    *("b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r"),
    *("s", "t", "v", "z", "br", "dr", "gr", "kr", "pl", "tr", "st"),
)
_VOWELS = ["a", "e", "i", "o", "u"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "m"]


class _Names:
    """Made-up pronounceable words, never repeated (entities and values draw from one
    generator so that a value is never an entity's name)."""

    def __init__(self, seed: int) -> None:
        self.rng = stream(seed, "retrieval-names")
        self.used: set[str] = set(w for a in ATTRIBUTES for w in a.split())
        self.used |= {"what", "is", "the", "of", "for", "has", "as", "its", "we", "now", "use"}

    def new(self) -> str:
        while True:
            syllables = self.rng.choice((2, 2, 3))
            w = "".join(
                self.rng.choice(_ONSETS) + self.rng.choice(_VOWELS) for _ in range(syllables)
            ) + self.rng.choice(_CODAS)
            if w not in self.used:
                self.used.add(w)
                return w


@dataclass(frozen=True)
class Trial:
    slot: str
    kind: str
    k: int
    t0: int  # the truth changes here
    update_round: int  # the valid update's round
    measure_round: int  # the round after which the trial is measured
    old: str
    new: str
    wrong: str  # the competing value of a same_slot trial ("" for repeated)
    index: int


@dataclass(frozen=True)
class Proposal:
    id: str
    round: int  # -1: setup
    slot: str
    value: str
    text: str
    role: str
    submitter: str
    transient: bool
    trial: int  # -1: setup


@dataclass
class World:
    agents: tuple[str, ...]
    kind: dict[str, str]  # agent -> "adversary" | "honest"
    slots: tuple[str, ...]
    about: dict[str, tuple[str, str]]  # slot -> (entity, attribute)
    initial: dict[str, Proposal]
    trials: list[Trial]
    proposals: dict[int, list[Proposal]]  # round -> proposals
    stale: set[tuple[str, int]]  # (agent, trial index): the agent believes the old value
    history: dict[str, tuple[list[int], list[str]]]  # slot -> (change rounds, values)
    trial_at: dict[str, list[tuple[int, int, int]]]  # slot -> (from, to, trial index)
    dropped: int

    def query(self, slot: str) -> str:
        entity, attribute = self.about[slot]
        return f"What is the {attribute} of {entity}?"

    def truth(self, slot: str, round: int) -> str:
        rounds, values = self.history[slot]
        return values[bisect.bisect_right(rounds, round) - 1]

    def trial_of(self, slot: str, round: int) -> int | None:
        for lo, hi, i in self.trial_at.get(slot, ()):
            if lo <= round <= hi:
                return i
        return None

    def belief(self, agent: str, slot: str, round: int) -> str:
        """What an honest agent believes the slot holds: the truth, or during a trial for
        which it is stale, the old value."""
        i = self.trial_of(slot, round)
        if i is not None and (agent, i) in self.stale:
            return self.trials[i].old
        return self.truth(slot, round)


def sentence(
    template: int, entity: str, attribute: str, value: str, transient: bool = False
) -> str:
    text = TEMPLATES[template].format(entity=entity, attribute=attribute, value=value)
    text = text[0].upper() + text[1:]
    return TRANSIENT_PREFIX + text if transient else text


def make_world(cfg: RetrievalConfig, seed: int) -> World:
    """The world of ``seed`` (module docstring)."""
    names = _Names(seed)
    agents = tuple(f"a{i:03d}" for i in range(cfg.agents))
    adversaries, _ = largest_remainder(cfg.agents, (cfg.adversary_share, 1 - cfg.adversary_share))
    order = list(agents)
    stream(seed, "retrieval-kinds").shuffle(order)
    kind = {a: ("adversary" if i < adversaries else "honest") for i, a in enumerate(order)}
    entities = [names.new() for _ in range(cfg.entities)]
    about = {}
    for e, entity in enumerate(entities):
        for j, attribute in enumerate(ATTRIBUTES):
            about[f"s{e:03d}.{j:02d}"] = (entity, attribute)
    slots = tuple(about)
    rng_tpl = stream(seed, "retrieval-templates")
    fixed_tpl = {s: rng_tpl.randrange(len(TEMPLATES)) for s in slots}
    rng_phr = stream(seed, "retrieval-phrasing")

    def text(slot: str, value: str, transient: bool) -> str:
        # one draw per sentence in both phrasings, so that the draws never shift
        drawn = rng_phr.randrange(len(TEMPLATES))
        tpl = drawn if cfg.phrasing == "varied" else fixed_tpl[slot]
        return sentence(tpl, *about[slot], value, transient)

    history: dict[str, tuple[list[int], list[str]]] = {}
    initial: dict[str, Proposal] = {}
    rng_sub = stream(seed, "retrieval-submitters")
    for s in slots:
        v = names.new()
        history[s] = ([-(10**9)], [v])
        initial[s] = Proposal(f"init.{s}", -1, s, v, text(s, v, False), INITIAL, "", False, -1)

    cells = [(kind_, k) for kind_ in KINDS for k in cfg.counts]
    rng_cells = stream(seed, "retrieval-cells")
    rng_slots = stream(seed, "retrieval-slots")
    rng_stale = stream(seed, "retrieval-stale")
    block: deque[tuple[str, int]] = deque()
    free = list(slots)
    held: list[tuple[int, str]] = []  # (release round, slot)
    trials: list[Trial] = []
    proposals: dict[int, list[Proposal]] = {}
    load: dict[int, dict[str, int]] = {}
    stale: set[tuple[str, int]] = set()
    trial_at: dict[str, list[tuple[int, int, int]]] = {}
    dropped = 0
    honest = [a for a in agents if kind[a] == "honest"]

    def submitter(r: int) -> str:
        busy = load.setdefault(r, {})
        pool = [a for a in agents if busy.get(a, 0) < PROPOSE_RATE]
        a = rng_sub.choice(pool)
        busy[a] = busy.get(a, 0) + 1
        return a

    for t in range(cfg.start_rounds):
        for h in [h for h in held if h[0] < t]:
            held.remove(h)
            free.append(h[1])
        for _ in range(cfg.trials_per_round):
            if not block:
                b = list(cells)
                rng_cells.shuffle(b)
                block.extend(b)
            kind_, k = block.popleft()
            if not free:
                dropped += 1
                continue
            slot = free.pop(rng_slots.randrange(len(free)))
            close = t + k + cfg.window
            held.append((close, slot))
            i = len(trials)
            old = history[slot][1][-1]
            new = names.new()
            wrong = names.new() if kind_ == "same_slot" else ""
            upd = t if cfg.order == "after" else t + k
            trial = Trial(slot, kind_, k, t, upd, upd + cfg.window, old, new, wrong, i)
            trials.append(trial)
            history[slot][0].append(t)
            history[slot][1].append(new)
            trial_at.setdefault(slot, []).append((t, close, i))
            for a in honest:
                if rng_stale.random() < cfg.stale_prob:
                    stale.add((a, i))
            rounds = [upd] + [(t + 1 + j) if cfg.order == "after" else (t + j) for j in range(k)]
            for j, r in enumerate(rounds):
                valid = j == 0
                value = new if valid else (wrong if kind_ == "same_slot" else old)
                transient = cfg.transient and not valid
                p = Proposal(
                    f"p{i}.{j}",
                    r,
                    slot,
                    value,
                    text(slot, value, transient),
                    VALID if valid else CONFLICT,
                    submitter(r),
                    transient,
                    i,
                )
                proposals.setdefault(r, []).append(p)
    for r in proposals:
        proposals[r].sort(key=lambda p: p.id)
    return World(
        agents, kind, slots, about, initial, trials, proposals, stale, history, trial_at, dropped
    )
