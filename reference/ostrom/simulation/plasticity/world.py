"""The generative model of the plasticity experiment: agents, slots and the stream of trials.

Why a pure function of (workload, seed): every mechanism must face *exactly* the same
proposals, so that runs of different mechanisms pair by seed.  ``make_world`` reads only
the workload fields of the config (population, slots, rounds, trials, counts, window,
order, transient) and never ``mechanism``; ``order`` and ``transient`` change the stream
by design, and only in the timing of the proposals (``order``) or their marking
(``transient``): the slots, values, kinds, counts and — unless the proposal limit binds —
the submitters are the same draws in every condition.

The model (docs/evaluation.md):

* **agents** ``a000``...: ``adversary``, ``stale`` (honest, but it keeps believing a
  slot's previous value for ``stale_lag`` rounds after the slot changes) and ``honest``
  (up to date), in the counts ``PlasticityConfig.population`` gives, shuffled;
* **slots** ``s000``... each start with a value ``<slot>:v0`` (the world's truth);
* **trials**: in each of the first ``start_rounds`` rounds, ``trials_per_round`` trials
  start, their (kind, k) cells taken from a seeded balanced order (shuffled blocks of
  every cell, so the counts per cell differ by at most one).  A trial takes a slot that
  no open trial holds; at its start round t0 the slot's truth changes old -> new; one
  up-to-date honest agent proposes the valid update (new), and k other proposals
  interfere, of the trial's kind:

  - ``same_slot``: k proposals of one wrong value ``<slot>:w<n>`` for the same slot
    (the paper's "k repetitions of a competing value");
  - ``repeated``: k proposals of the old value again (the paper's repeated history);
  - ``unrelated``: k proposals of a wrong value for k *other* slots (free ones, held by
    the trial until it closes), whose truth does not change: the same load, not about
    the trial's slot (the control);
  - k = 0: the valid update alone (the baseline).

  Order ``after``: the valid update at t0, the k proposals at t0+1 ... t0+k.  Order
  ``before``: the k proposals at t0 ... t0+k-1, the valid update at t0+k.  The truth
  changes at t0 in both orders.  A trial is measured ``window`` rounds after its valid
  update (``window`` >= max K: after its last proposal) and holds its slots until
  t0 + k + window in both orders (so that the slot draws do not depend on the order).
  A trial that finds no free slot waits for the next round; one that could no longer
  close within the run is dropped (``dropped``).
* **submitters** of interfering proposals are drawn uniformly from the stale and the
  adversarial agents together (so their mix is the population's: at adv=0.00 every
  conflict comes from a stale honest agent), the valid update's from the up-to-date
  honest agents; each proposal draws from its own stream, redrawing while the drawn agent
  already sent ``PROPOSE_RATE`` proposals in that round (the protocol's limit, which the
  config guarantees can be honoured).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from ostrom.simulation.plasticity.config import KINDS, PROPOSE_RATE, PlasticityConfig
from ostrom.simulation.world import stream

#: The roles of the proposals in a trial.
VALID, CONFLICT, UNRELATED = "valid", "conflict", "unrelated"

#: Redraws of a submitter before taking the first agent of the pool that may still propose.
MAX_REDRAWS = 64


@dataclass(frozen=True)
class Proposal:
    """One proposal of the stream: ``value`` into ``slot`` by ``submitter`` at ``round``."""

    id: str  # artifact id, unique in the run
    round: int
    slot: str
    value: str
    submitter: str
    transient: bool  # marked transient (the interfering proposals in that condition)
    trial: int  # the trial it belongs to
    role: str  # VALID, CONFLICT or UNRELATED


@dataclass(frozen=True)
class Trial:
    """One trial: the slot's truth changes ``old`` -> ``new`` at ``t0``; the valid update
    is proposed at ``t_valid`` and the trial is measured after round ``close``."""

    index: int
    kind: str
    k: int
    slot: str
    old: str
    new: str
    wrong: str | None  # the same_slot conflicts' value
    t0: int
    t_valid: int
    close: int  # t_valid + window
    others: tuple[str, ...]  # the unrelated proposals' slots

    @property
    def cell(self) -> tuple[str, int]:
        return (self.kind, self.k)


@dataclass(frozen=True)
class World:
    """Everything a run's mechanisms see, and the truth and beliefs they are judged by."""

    agents: tuple[str, ...]  # sorted
    kind: Mapping[str, str]  # agent -> "honest" | "stale" | "adversary"
    slots: tuple[str, ...]
    initial: Mapping[str, str]  # slot -> value at round 0
    trials: tuple[Trial, ...]
    proposals: tuple[Proposal, ...]  # in submission order (round, then creation)
    changes: Mapping[str, tuple[tuple[int, str, str], ...]]  # slot -> (t0, old, new)...
    stale_lag: int
    dropped: int  # trials of the balanced order that never started

    def truth(self, slot: str, round: int) -> str:
        """The slot's true value during ``round``."""
        ch = self.changes.get(slot, ())
        i = bisect.bisect_right([t for t, _, _ in ch], round)
        return ch[i - 1][2] if i else self.initial[slot]

    def belief(self, agent: str, slot: str, round: int) -> str:
        """What ``agent`` believes the slot's value is during ``round``: the truth, except
        that a stale agent still believes the previous value for ``stale_lag`` rounds
        after a change."""
        if self.kind[agent] != "stale":
            return self.truth(slot, round)
        ch = self.changes.get(slot, ())
        i = bisect.bisect_right([t for t, _, _ in ch], round)
        if not i:
            return self.initial[slot]
        t0, old, new = ch[i - 1]
        return old if round < t0 + self.stale_lag else new

    def by_round(self, rounds: int) -> list[list[Proposal]]:
        """The proposals of each round 0 .. rounds-1."""
        out: list[list[Proposal]] = [[] for _ in range(rounds)]
        for p in self.proposals:
            out[p.round].append(p)
        return out


def _ids(prefix: str, n: int) -> tuple[str, ...]:
    width = max(3, len(str(n - 1)))
    return tuple(f"{prefix}{i:0{width}d}" for i in range(n))


def balanced_order(cfg: PlasticityConfig, seed: int, n: int) -> list[tuple[str, int]]:
    """``n`` cells in a seeded balanced order: shuffled blocks of every (kind, k)."""
    rng = stream(seed, "plasticity-cells")
    out: list[tuple[str, int]] = []
    while len(out) < n:
        block = list(cfg.cells)
        rng.shuffle(block)
        out += block
    return out[:n]


def make_world(cfg: PlasticityConfig, seed: int) -> World:
    """The world of a run: a pure function of the config's workload fields and the seed
    (never of ``cfg.mechanism``)."""
    agents = _ids("a", cfg.agents)
    pop = cfg.population
    kinds = [k for k in ("honest", "stale", "adversary") for _ in range(pop[k])]
    stream(seed, "plasticity-population").shuffle(kinds)
    kind = dict(zip(agents, kinds, strict=True))
    slots = _ids("s", cfg.slots)
    initial = {s: f"{s}:v0" for s in slots}
    current = dict(initial)  # slot -> its true value now
    version = dict.fromkeys(slots, 0)  # the slot's last value number (v and w share it)
    free_since = dict.fromkeys(slots, 0)  # first round a slot may start a new trial
    rng_slots = stream(seed, "plasticity-slots")
    queue = deque(balanced_order(cfg, seed, cfg.trials))
    trials: list[Trial] = []
    # (round, trial, seq, slot, value, role): submitters are drawn below, per round
    pending: list[tuple[int, int, int, str, str, str]] = []
    changes: dict[str, list[tuple[int, str, str]]] = {}
    for r in range(cfg.start_rounds):
        for _ in range(cfg.trials_per_round):
            if not queue:
                break
            kind_, k = queue[0]
            need = 1 + (k if kind_ == "unrelated" else 0)
            free = [s for s in slots if free_since[s] <= r]
            if len(free) < need:
                break  # waits for the next round (FIFO: the balanced order is kept)
            queue.popleft()
            chosen = rng_slots.sample(free, need)
            slot, others = chosen[0], tuple(sorted(chosen[1:]))
            idx = len(trials)
            old = current[slot]
            version[slot] += 1
            new = current[slot] = f"{slot}:v{version[slot]}"
            wrong = None
            if kind_ == "same_slot" and k:
                version[slot] += 1
                wrong = f"{slot}:w{version[slot]}"
            t_valid = r if cfg.order == "after" else r + k
            close = t_valid + cfg.window
            first = r + 1 if cfg.order == "after" else r
            trial = Trial(idx, kind_, k, slot, old, new, wrong, r, t_valid, close, others)
            trials.append(trial)
            changes.setdefault(slot, []).append((r, old, new))
            for s in chosen:  # held as long in both orders, so the slot draws are the same
                free_since[s] = r + k + cfg.window + 1
            pending.append((t_valid, idx, 0, slot, new, VALID))
            for j in range(k):
                if kind_ == "same_slot":
                    assert wrong is not None
                    pending.append((first + j, idx, j + 1, slot, wrong, CONFLICT))
                elif kind_ == "repeated":
                    pending.append((first + j, idx, j + 1, slot, old, CONFLICT))
                else:
                    other = others[j]
                    version[other] += 1
                    value = f"{other}:w{version[other]}"
                    pending.append((first + j, idx, j + 1, other, value, UNRELATED))
    pending.sort(key=lambda e: (e[0], e[1], e[2]))
    honest = [a for a in agents if kind[a] == "honest"]
    conflicting = [a for a in agents if kind[a] in ("stale", "adversary")]
    sent: dict[tuple[int, str], int] = {}
    proposals: list[Proposal] = []
    for rnd, idx, seq, slot, value, role in pending:
        pool = honest if role == VALID else conflicting
        rng = stream(seed, f"plasticity-submitter:{idx}:{seq}")
        agent = rng.choice(pool)
        tries = 0
        while sent.get((rnd, agent), 0) >= PROPOSE_RATE:
            tries += 1
            if tries >= MAX_REDRAWS:  # deterministic completion; the config makes it exist
                agent = next(a for a in pool if sent.get((rnd, a), 0) < PROPOSE_RATE)
                break
            agent = rng.choice(pool)
        sent[(rnd, agent)] = sent.get((rnd, agent), 0) + 1
        transient = cfg.transient and role != VALID
        proposals.append(
            Proposal(f"p{idx:05d}.{seq:03d}", rnd, slot, value, agent, transient, idx, role)
        )
    return World(
        agents=agents,
        kind=kind,
        slots=slots,
        initial=initial,
        trials=tuple(trials),
        proposals=tuple(proposals),
        changes={s: tuple(v) for s, v in changes.items()},
        stale_lag=cfg.stale_lag,
        dropped=len(queue),
    )


__all__ = [
    "CONFLICT",
    "KINDS",
    "UNRELATED",
    "VALID",
    "Proposal",
    "Trial",
    "World",
    "balanced_order",
    "make_world",
]
