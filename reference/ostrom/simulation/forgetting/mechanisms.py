"""The forgetting mechanisms: the protocol on the real orchestrator, and the baselines.

Each mechanism keeps a knowledge base over one world and answers, epoch by epoch, three
calls from ``run``: ``admit`` (items born this epoch enter), ``read`` (a query or a stray
access reads an item: is it still there?) and ``step`` (the epoch's forgetting, returning
the items forgotten).  Accesses are public: ``last_access`` is what every agent's decay
reads.

* ``protocol`` — ``ostrom.protocol.orchestrator.Orchestrator`` with the default
  ``Params``: items are ``propose`` commands (each on its own slot: the fast track, so an
  item is votable from its activation on), agents send ``forget_vote`` commands with the
  confidence their judgment gives (``judges``), and every epoch ends with ``tick``, whose
  ``forget`` events are the decisions: S = Σ w·c ≥ Q = α·Σw over the active agents, and
  none with fewer than ``min_active_agents`` active (FG-1).  Every command is logged, so
  the same run can be replayed under consensus (``consensus``).  Ablations:
  ``no_floor`` (min_active_agents = 1), ``decay_only`` (ω_R = 0), ``relevance_only``
  (ω_D = 0), ``no_confidence`` (every forget vote at confidence 1), ``no_reputation``
  (every agent at weight 1);
* ``keep_all`` — never forgets (the footprint every reduction is measured against);
* ``lru`` — a least-recently-used cache holding, at every epoch, as many items as the
  protocol holds in the same seed (its capacity is the protocol's footprint series): the
  same memory, spent by recency alone;
* ``time_decay`` — no agents and no vote: an item goes when its decay D alone is below θ;
* ``single_curator`` — one agent, drawn by the seed (in the adversarial scenario it may be
  an eraser), forgets at once whatever its own judgment votes to forget;
* ``majority`` — unweighted majority of forget votes: an item goes once more than half of
  the agents have voted to forget it (no weights, no confidence, no population floor).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

from ostrom.protocol.agents import Agent
from ostrom.protocol.lifecycle import FORGET_VOTABLE, FORGOTTEN
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import Params
from ostrom.simulation.forgetting.config import ForgetConfig
from ostrom.simulation.forgetting.judges import Judges
from ostrom.simulation.forgetting.world import World
from ostrom.simulation.world import stream


def protocol_params(cfg: ForgetConfig) -> Params:
    """The protocol's parameters for a run: the defaults, changed only by the ablations."""
    changes: dict[str, Any] = {}
    if "no_floor" in cfg.ablations:
        changes["min_active_agents"] = 1  # FG-1 given up: one agent may forget alone
    if "decay_only" in cfg.ablations:
        changes["omega_R"] = 0.0
    if "relevance_only" in cfg.ablations:
        changes["omega_D"] = 0.0
    return dataclasses.replace(Params(), **changes)


def registry(cfg: ForgetConfig, world: World) -> tuple[Agent, ...]:
    """The orchestrator's agents: every one at tier 1, weighted by the world's weights (all
    at 1.0 with ``no_reputation``)."""
    flat = "no_reputation" in cfg.ablations
    return tuple(Agent(a, tier=1, weight=1.0 if flat else world.weight[a]) for a in world.agents)


class Mechanism(Protocol):
    last_access: dict[str, int]

    def admit(self, t: int, items: Sequence[str]) -> list[str]: ...

    def holds(self, item: str) -> bool: ...

    def step(self, t: int) -> list[str]: ...


def admissions(backlog: deque[str], agents: int, params: Params) -> list[str]:
    """The items that enter this epoch: the protocol lets each agent propose
    ``propose_rate`` items per epoch, so a burst (epoch 0) waits in a backlog.  Every
    mechanism admits by this rule, so all of them hold the same items at every epoch."""
    n = min(len(backlog), agents * params.propose_rate)
    return [backlog.popleft() for _ in range(n)]


class _Base:
    """A knowledge base that holds what it admitted until it forgets it."""

    def __init__(self, agents: int) -> None:
        self.live: set[str] = set()
        self.last_access: dict[str, int] = {}
        self.backlog: deque[str] = deque()
        self.agents = agents

    def admit(self, t: int, items: Sequence[str]) -> list[str]:
        self.backlog.extend(items)
        entered = admissions(self.backlog, self.agents, Params())
        for x in entered:
            self.live.add(x)
            self.last_access[x] = t
        return entered

    def holds(self, item: str) -> bool:
        return item in self.live

    def step(self, t: int) -> list[str]:
        return []

    def _drop(self, items: Sequence[str]) -> list[str]:
        for x in items:
            self.live.discard(x)
        return list(items)


class KeepAll(_Base):
    """Never forgets."""


class TimeDecay(_Base):
    """Forget an item when D(t − last access) < θ: decay alone, no vote."""

    def __init__(self, judges: Judges) -> None:
        super().__init__(len(judges.world.agents))
        self.judges = judges

    def step(self, t: int) -> list[str]:
        theta = self.judges.params.theta
        gone = [
            x for x in sorted(self.live) if self.judges.decay_of(t - self.last_access[x]) < theta
        ]
        return self._drop(gone)


class Lru(_Base):
    """Hold at most ``capacity[t]`` items; evict the least recently read (then oldest id)."""

    def __init__(self, agents: int, capacity: Sequence[int]) -> None:
        super().__init__(agents)
        self.capacity = capacity

    def step(self, t: int) -> list[str]:
        excess = len(self.live) - self.capacity[t]
        if excess <= 0:
            return []
        order = sorted(self.live, key=lambda x: (self.last_access[x], x))
        return self._drop(order[:excess])


class SingleCurator(_Base):
    """One agent's judgment, executed at once."""

    def __init__(self, judges: Judges, world: World, seed: int) -> None:
        super().__init__(len(world.agents))
        self.judges = judges
        self.curator = stream(seed, "forgetting:curator").choice(world.agents)

    def step(self, t: int) -> list[str]:
        j, a = self.judges, self.curator
        if not j.sweeps(a, t):
            return []
        gone = [x for x in sorted(self.live) if j.confidence(a, x, t, self.last_access[x]) > 0]
        return self._drop(gone)


class Majority(_Base):
    """Forget once more than half of all agents have voted forget (votes are final)."""

    def __init__(self, judges: Judges, world: World) -> None:
        super().__init__(len(world.agents))
        self.judges = judges
        self.names = world.agents
        self.votes: dict[str, set[str]] = {}

    def step(self, t: int) -> list[str]:
        j = self.judges
        held = sorted(self.live)
        for a in self.names:
            if not j.sweeps(a, t):
                continue
            for x in held:
                voters = self.votes.setdefault(x, set())
                if a not in voters and j.confidence(a, x, t, self.last_access[x]) > 0:
                    voters.add(a)
        half = len(self.names) / 2
        gone = [x for x in held if len(self.votes.get(x, ())) > half]
        return self._drop(gone)


class ProtocolKB:
    """The protocol: every decision is the real orchestrator's (see the module doc)."""

    def __init__(self, cfg: ForgetConfig, world: World, judges: Judges) -> None:
        self.params = protocol_params(cfg)
        self.agents = registry(cfg, world)
        self.world = world
        self.judges = judges
        self.orchestrator = Orchestrator(self.params, self.agents)
        self.log: list[dict[str, Any]] = []  # every command, in order (consensus replays it)
        self.forgets: list[tuple[int, str]] = []  # (orchestrator now after the tick, item)
        self.state: dict[str, str] = {}
        self.votable: set[str] = set()
        self.voted: dict[str, set[str]] = {a: set() for a in world.agents}
        self.backlog: deque[str] = deque()
        self.last_access: dict[str, int] = {}
        self.refused = 0

    def apply(self, command: dict[str, Any]) -> list[dict[str, Any]]:
        self.log.append(command)
        obs = self.orchestrator.apply(command)
        if obs["result"] != "ok":
            self.refused += 1
        events: list[dict[str, Any]] = list(obs["events"])
        for ev in events:
            x, to = ev.get("artifact"), ev.get("to")
            if x is None or to is None:
                continue
            self.state[x] = to
            if to in FORGET_VOTABLE:
                self.votable.add(x)
            else:
                self.votable.discard(x)
        return events

    def admit(self, t: int, items: Sequence[str]) -> list[str]:
        """Propose the epoch's items; each agent may propose ``propose_rate`` per epoch, so
        a burst (epoch 0) waits in a backlog and enters over the next epochs."""
        self.backlog.extend(items)
        entered = admissions(self.backlog, len(self.world.agents), self.params)
        rate = self.params.propose_rate
        for k, x in enumerate(entered):
            item = self.world.item(x)
            digest = hashlib.sha256(item.text.encode()).hexdigest()
            self.apply(
                {
                    "op": "propose",
                    "agent": self.world.agents[k // rate],
                    "artifact": x,
                    "slot": item.slot,
                    "digest": digest,
                }
            )
            self.last_access[x] = t
        return entered

    def holds(self, item: str) -> bool:
        return item in self.state and self.state[item] != FORGOTTEN

    def step(self, t: int) -> list[str]:
        j = self.judges
        for a in self.world.agents:
            if not j.sweeps(a, t):
                continue
            mine = self.voted[a]
            for x in sorted(self.votable - mine):
                conf = j.confidence(a, x, t, self.last_access[x])
                if conf > 0:
                    mine.add(x)
                    self.apply(
                        {
                            "op": "forget_vote",
                            "agent": a,
                            "artifact": x,
                            "confidence": conf / 1_000_000,
                        }
                    )
        events = self.apply({"op": "tick"})
        gone = [str(ev["artifact"]) for ev in events if ev.get("event") == "forget"]
        now = self.orchestrator.now
        self.forgets += [(now, x) for x in gone]
        return gone


__all__ = [
    "KeepAll",
    "Lru",
    "Majority",
    "Mechanism",
    "ProtocolKB",
    "SingleCurator",
    "TimeDecay",
    "protocol_params",
    "registry",
]
