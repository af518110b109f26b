"""Algorithm 1 of the Co-Forgetting paper (arXiv 2506.17338): a deterministic, sans-IO model.

This is the *flawed* two-round vote the paper calls PBFT, modelled as written (docs/design.md §6,
ALG1-FAIL-1; the TLA+ version is ``spec/CoForgettingAlg1.tla``, explained in ``docs/alg1.md``):

* a coordinator sends ``PROPOSE(item, v)``, v in {forget, keep}, to every agent;
* an agent sends ``PREPARE(item, v)`` for the first proposal it receives (one prepare vote);
* line 8: on ``>= 2f`` identical PREPAREs (distinct senders, its own included) it sends
  ``COMMIT(item, v)``; read as an upon-rule, for *every* value that reaches the threshold
  (``commit_once=True`` is the other reading: at most one COMMIT per item);
* on ``>= 2f+1`` identical COMMITs it decides v (once, and only after it committed itself);
* no pre-prepare, no sequence numbers (the item id names the instance), no view change
  (:meth:`Agent.on_timeout` does nothing: there is nothing Algorithm 1 could do), and no
  authentication (``authenticated=False``: a Byzantine agent may send under any identity).

:class:`Agent` is the honest agent: ``on_message``/``on_timeout`` return an :class:`Output`
(messages to send, decision taken) and never do I/O. :func:`run_alg1` runs N agents over a
small simulated network whose delivery order comes only from a seeded :class:`random.Random`,
for the reviewers' scenarios (:data:`SCENARIOS`), and reports what happened.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

__all__ = ["VALUES", "Agent", "Config", "Kind", "Message", "Scenario", "Value", "run_alg1"]

Value = Literal["forget", "keep"]
VALUES: tuple[Value, Value] = ("forget", "keep")

Scenario = Literal[
    "silent-backup",  # (a) the faulty agent is a backup and sends nothing
    "silent-coordinator",  # (b) the faulty agent is the coordinator and sends nothing
    "conflicting-votes",  # (c) a faulty backup votes both ways, stays reachable, may forge
    "equivocating-coordinator",  # the faulty coordinator proposes forget to some, keep to others
]
SCENARIOS: tuple[Scenario, ...] = (
    "silent-backup",
    "silent-coordinator",
    "conflicting-votes",
    "equivocating-coordinator",
)


def other(value: Value) -> Value:
    """The opposite decision."""
    return "keep" if value == "forget" else "forget"


class Kind(Enum):
    PROPOSE = "propose"
    PREPARE = "prepare"
    COMMIT = "commit"


@dataclass(frozen=True)
class Message:
    """One message. ``sender`` is the identity it *claims*: without authentication a
    Byzantine agent may put any agent there. ``dest`` is the recipient."""

    kind: Kind
    item: int
    sender: int
    dest: int
    value: Value


@dataclass(frozen=True)
class Config:
    """N agents, f faults; thresholds default to the paper's (2f prepares, 2f+1 commits)."""

    n: int
    f: int
    coordinator: int = 0
    prepare_quorum: int | None = None
    commit_quorum: int | None = None
    commit_once: bool = False

    @property
    def pq(self) -> int:
        return 2 * self.f if self.prepare_quorum is None else self.prepare_quorum

    @property
    def cq(self) -> int:
        return 2 * self.f + 1 if self.commit_quorum is None else self.commit_quorum


@dataclass
class Output:
    """What a handler asks the environment to do: send ``messages``; ``decision`` is set
    when the agent decided in this step."""

    messages: list[Message] = field(default_factory=list)
    decision: Value | None = None


@dataclass
class _ItemState:
    prepared: Value | None = None
    committed: set[Value] = field(default_factory=set)
    decided: Value | None = None
    prepare_votes: dict[Value, set[int]] = field(default_factory=lambda: {v: set() for v in VALUES})
    commit_votes: dict[Value, set[int]] = field(default_factory=lambda: {v: set() for v in VALUES})


class Agent:
    """An honest agent running Algorithm 1 (one instance per item)."""

    def __init__(self, ident: int, config: Config) -> None:
        self.ident = ident
        self.config = config
        self._items: dict[int, _ItemState] = {}

    def _state(self, item: int) -> _ItemState:
        return self._items.setdefault(item, _ItemState())

    def decided(self, item: int) -> Value | None:
        return self._state(item).decided

    def _broadcast(self, kind: Kind, item: int, value: Value) -> list[Message]:
        return [Message(kind, item, self.ident, d, value) for d in range(self.config.n)]

    def propose(self, item: int, value: Value) -> Output:
        """The coordinator's first step: PROPOSE to every agent (itself included)."""
        if self.ident != self.config.coordinator:
            return Output()
        return Output(self._broadcast(Kind.PROPOSE, item, value))

    def on_message(self, msg: Message) -> Output:
        st = self._state(msg.item)
        out = Output()
        if msg.kind is Kind.PROPOSE:
            if msg.sender == self.config.coordinator and st.prepared is None:
                st.prepared = msg.value
                out.messages += self._broadcast(Kind.PREPARE, msg.item, msg.value)
        elif msg.kind is Kind.PREPARE:
            st.prepare_votes[msg.value].add(msg.sender)
        else:
            st.commit_votes[msg.value].add(msg.sender)
        self._advance(msg.item, st, out)
        return out

    def on_timeout(self, item: int) -> Output:
        """Algorithm 1 has no view change: a timeout changes nothing and sends nothing."""
        del item
        return Output()

    def _advance(self, item: int, st: _ItemState, out: Output) -> None:
        cfg = self.config
        if st.prepared is not None:  # line 8, for every value that reaches 2f
            for v in VALUES:
                if v in st.committed or (cfg.commit_once and st.committed):
                    continue
                if len(st.prepare_votes[v]) >= cfg.pq:
                    st.committed.add(v)
                    out.messages += self._broadcast(Kind.COMMIT, item, v)
        if st.decided is None and st.committed:
            for v in VALUES:
                if len(st.commit_votes[v]) >= cfg.cq:
                    st.decided = v
                    out.decision = v
                    break


class Faulty:
    """The faulty agent of a scenario. ``silent`` sends nothing. Otherwise it stays
    reachable and, for each item, sends both values: to a seeded half of the honest agents
    (the victims) the opposite of the coordinator's value, to the rest that value. Without
    authentication (``forge``) it signs the victims' votes with 2f+1 identities (its own
    and 2f honest agents'), so the forged COMMITs alone reach the commit threshold."""

    def __init__(
        self, ident: int, config: Config, honest: list[int], *, silent: bool, forge: bool
    ) -> None:
        self.ident = ident
        self.config = config
        self.honest = honest
        self.silent = silent
        self.forge = forge
        self._started: set[int] = set()

    def _victims(self, rng: random.Random) -> set[int]:
        k = max(1, len(self.honest) // 2)
        return set(rng.sample(self.honest, k))

    def propose(self, item: int, value: Value, rng: random.Random) -> list[Message]:
        """As the coordinator: forget to some agents, keep to the others; then votes both ways."""
        if self.silent:
            return []
        victims = self._victims(rng)
        out = [
            Message(Kind.PROPOSE, item, self.ident, d, other(value) if d in victims else value)
            for d in self.honest
        ]
        for kind in (Kind.PREPARE, Kind.COMMIT):
            out += [Message(kind, item, self.ident, d, v) for d in self.honest for v in VALUES]
        self._started.add(item)
        return out

    def on_message(self, msg: Message, rng: random.Random) -> list[Message]:
        if self.silent or msg.kind is not Kind.PROPOSE or msg.item in self._started:
            return []
        self._started.add(msg.item)
        v = msg.value
        victims = self._victims(rng)
        cq = self.config.cq
        others = [a for a in range(self.config.n) if a != self.ident]
        names = [self.ident] + (rng.sample(others, cq - 1) if self.forge else [])
        out: list[Message] = []
        for d in self.honest:
            value = other(v) if d in victims else v
            for kind in (Kind.PREPARE, Kind.COMMIT):
                out += [Message(kind, msg.item, s, d, value) for s in names]
        return out


@dataclass(frozen=True)
class Alg1Report:
    """What :func:`run_alg1` observed: every number comes from running the model."""

    n: int
    f: int
    scenario: Scenario
    seed: int
    authenticated: bool
    items: int
    decided_items: int  # items every honest agent decided
    undecided_items: int  # items some honest agent never decided
    disagreements: int  # items two honest agents decided differently
    messages: int  # messages sent (deliveries), all items
    decisions: tuple[tuple[Value | None, ...], ...]  # per item, per honest agent

    @property
    def decided_pct(self) -> float:
        return 100.0 * self.decided_items / self.items if self.items else 0.0

    @property
    def messages_per_item(self) -> float:
        return self.messages / self.items if self.items else 0.0


def _deliver_all(
    queue: list[Message],
    agents: dict[int, Agent],
    faulty: Faulty,
    rng: random.Random,
) -> int:
    """Deliver until nothing is in flight, in a seeded random order; return the count."""
    delivered = 0
    while queue:
        msg = queue.pop(rng.randrange(len(queue)))
        delivered += 1
        if msg.dest in agents:
            queue += agents[msg.dest].on_message(msg).messages
        elif msg.dest == faulty.ident:
            queue += faulty.on_message(msg, rng)
    return delivered


def run_alg1(
    n: int,
    f: int,
    items: int,
    scenario: Scenario,
    seed: int,
    *,
    authenticated: bool = False,
    commit_once: bool = False,
    prepare_quorum: int | None = None,
    values: Sequence[Value] | None = None,
) -> Alg1Report:
    """Run Algorithm 1 on ``items`` items with one faulty agent (scenario) and report.

    The coordinator is agent 0; the faulty agent is agent n-1 (a backup) or, in the
    coordinator scenarios, agent 0. An honest coordinator proposes a seeded random value per
    item. Messages are delivered reliably in a seeded random order; when nothing is in flight
    every undecided honest agent times out (Algorithm 1 does nothing then) and the item ends.

    ``values`` (one per item) fixes what the coordinator proposes instead of the seeded draw
    (the forgetting experiment proposes the decisions of a protocol run); the draw is still
    made, so the delivery order is the same either way.
    """
    if values is not None and len(values) != items:
        raise ValueError(f"values: {len(values)} values for {items} items")
    if n < 3 * f + 1 or f < 1:
        raise ValueError("Algorithm 1 needs f >= 1 and n >= 3f+1")
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}")
    rng = random.Random(seed)
    config = Config(n, f, prepare_quorum=prepare_quorum, commit_once=commit_once)
    bad = 0 if scenario in ("silent-coordinator", "equivocating-coordinator") else n - 1
    honest = [a for a in range(n) if a != bad]
    agents = {a: Agent(a, config) for a in honest}
    faulty = Faulty(
        bad,
        config,
        honest,
        silent=scenario.startswith("silent"),
        forge=not authenticated,
    )
    messages = 0
    decisions: list[tuple[Value | None, ...]] = []
    for item in range(items):
        value: Value = rng.choice(VALUES)
        if values is not None:
            value = values[item]
        if bad == config.coordinator:
            queue = faulty.propose(item, value, rng)
        else:
            queue = agents[config.coordinator].propose(item, value).messages
        messages += _deliver_all(queue, agents, faulty, rng)
        for a in honest:
            if agents[a].decided(item) is None:
                queue += agents[a].on_timeout(item).messages
        messages += _deliver_all(queue, agents, faulty, rng)
        decisions.append(tuple(agents[a].decided(item) for a in honest))
    return Alg1Report(
        n=n,
        f=f,
        scenario=scenario,
        seed=seed,
        authenticated=authenticated,
        items=items,
        decided_items=sum(all(d is not None for d in ds) for ds in decisions),
        undecided_items=sum(any(d is None for d in ds) for ds in decisions),
        disagreements=sum(len(_decided(ds)) > 1 for ds in decisions),
        messages=messages,
        decisions=tuple(decisions),
    )


def _decided(ds: Iterable[Value | None]) -> set[Value]:
    return {d for d in ds if d is not None}


def main() -> None:  # pragma: no cover - a demo: python -m ostrom.harness.alg1
    for scenario in SCENARIOS:
        for authenticated in (False, True):
            r = run_alg1(4, 1, 100, scenario, seed=1, authenticated=authenticated)
            print(
                f"{scenario:26} authenticated={authenticated!s:5} decided {r.decided_pct:5.1f}% "
                f"disagreements {r.disagreements:3} messages/item {r.messages_per_item:5.1f}"
            )


if __name__ == "__main__":  # pragma: no cover
    main()
