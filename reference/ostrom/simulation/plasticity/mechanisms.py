"""The mechanisms that decide which value each slot serves, all behind one interface.

Why one interface: the experiment's claim is a comparison, so every mechanism must
consume the same stream (``world.Proposal`` lists, round by round) and be read the same
way (``served(slot)`` after each round).  ``Mechanism`` is that interface
(``run.make_mechanism`` builds the one a config names).  Every mechanism starts with
each slot serving its initial value.

* ``LastWriterWins``: the newest proposal for a slot is served at once;
* ``LatestStable``: the paper's own retrieval rule, "use the latest applicable stable
  update": the newest proposal for the slot that is *not marked transient* is served at
  once (a newer non-transient proposal contradicts it).  Without transient markings it
  is exactly last-writer-wins — which is the reviewers' point: under that rule a later
  conflict *is* the right answer;
* ``Majority``: an unweighted majority of a panel (below);
* ``ProtocolMechanism`` (``plasticity.protocol``): the real ``Community``.

``judge`` is the one rule by which every agent reads a proposal, for the protocol's
reviewers and the majority's panels alike (and the retrieval experiment's reviewers);
``ask`` is how a mechanism asks for a reading: ``judge``, unless a plugged policy
(``PlasticityConfig.policy``, hook ``accepts``) holds the agent's kind.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ostrom.simulation.plasticity.config import (
    AGENT_KINDS,
    POLICY_ROLE,
    REVIEWERS,
    PlasticityConfig,
)
from ostrom.simulation.plasticity.world import Proposal, World
from ostrom.simulation.policy import Plug, UpdateObservation, plug
from ostrom.simulation.world import stream

#: The evidence entry that marks a proposal as transient (it travels in the protocol's
#: ``propose`` command and in the baselines' ``Proposal.transient``).
TRANSIENT = "transient"


class Mechanism(Protocol):
    """What the run loop needs of a mechanism."""

    def step(self, round: int, proposals: Sequence[Proposal]) -> None:
        """Consume the proposals submitted in ``round`` and finish the round."""

    def served(self, slot: str) -> str | None:
        """The value ``slot`` serves after the last round stepped (None: nothing)."""

    def extras(self) -> dict[str, Any]:
        """Counts of the run worth reporting (ints, floats, None; nested mappings)."""


class Minds(Protocol):
    """What ``judge`` reads of a world (the plasticity and the retrieval worlds alike):
    each agent's kind, the truth, and what an agent believes."""

    @property
    def kind(self) -> Mapping[str, str]: ...

    def truth(self, slot: str, round: int) -> str: ...

    def belief(self, agent: str, slot: str, round: int) -> str: ...


def judge(
    world: Minds,
    agent: str,
    slot: str,
    value: str,
    transient: bool,
    round: int,
    rng: random.Random,
    noise: float,
) -> bool:
    """Does ``agent`` accept ``value`` for ``slot`` in ``round``?

    * an **adversary** accepts every wrong value (its own side's: the conflicts and the
      unrelated wrong values) and rejects the true one (the valid update);
    * an **honest** agent accepts iff the value is what it believes the slot holds (the
      truth if up to date, the previous value while a stale agent lags) and the
      proposal is not marked transient; the judgment is flipped with probability
      ``noise`` (one draw of ``rng`` per honest judgment when ``noise`` > 0).
    """
    if world.kind[agent] == "adversary":
        return value != world.truth(slot, round)
    right = value == world.belief(agent, slot, round) and not transient
    if noise > 0 and rng.random() < noise:
        right = not right
    return right


def ask(
    world: Minds,
    plugged: Plug | None,
    ballot: str,
    agent: str,
    artifact: str,
    slot: str,
    value: str,
    transient: bool,
    round: int,
    rng: random.Random,
    noise: float,
) -> bool:
    """``agent``'s reading of ``value`` for ``slot`` on a ``ballot`` (``review``,
    ``arbitration`` or ``panel``): the plugged policy's if it holds the agent's kind (the
    run's ``rng`` is then not drawn), else ``judge``'s."""
    kind = world.kind[agent]
    if plugged is None or kind != plugged.role:
        return judge(world, agent, slot, value, transient, round, rng, noise)
    belief = world.belief(agent, slot, round)
    obs = UpdateObservation(
        agent, kind, artifact, slot, value, transient, round, belief, ballot, noise
    )
    return plugged.seat.accepts(obs)


def plugged_policy(spec: str, seed: int, experiment: str = "plasticity") -> Plug | None:
    """The plug of a run whose config says ``policy = spec`` (None for none)."""
    return plug(spec, AGENT_KINDS, POLICY_ROLE, experiment, seed)


class _Served:
    """The slots' served values, starting from the initial ones."""

    def __init__(self, world: World) -> None:
        self.value: dict[str, str | None] = dict(world.initial)
        self.counts: Counter[str] = Counter()

    def served(self, slot: str) -> str | None:
        return self.value.get(slot)

    def extras(self) -> dict[str, Any]:
        return {"decisions": dict(sorted(self.counts.items()))}


class LastWriterWins(_Served):
    """The newest proposal for a slot is served, at once."""

    def step(self, round: int, proposals: Sequence[Proposal]) -> None:
        for p in proposals:
            self.value[p.slot] = p.value
            self.counts[f"{p.role}:served"] += 1


class LatestStable(_Served):
    """The newest proposal for a slot not marked transient is served, at once."""

    def step(self, round: int, proposals: Sequence[Proposal]) -> None:
        for p in proposals:
            if p.transient:
                self.counts[f"{p.role}:skipped"] += 1
                continue
            self.value[p.slot] = p.value
            self.counts[f"{p.role}:served"] += 1


class Majority(_Served):
    """Unweighted majority of a panel, decided in the proposal's round.

    Each proposal is judged by a panel of ``REVIEWERS`` agents (the protocol's panel
    size) drawn uniformly from every agent but the submitter; each votes by its own
    reading (``judge``, with the same reviewer noise as the protocol's reviewers); an
    accepted proposal (a strict majority of the panel: 3 of 5) is served at once, so
    accepted proposals replace each other in decision (= submission) order.  No
    commit-reveal, no reputation weights, no deliberation, no sanctions.

    Why this is the fair analogue of ``simulation.baselines``'s majority: that baseline
    is the same panel (``reviewers`` drawn uniformly, not the submitter), deciding in
    the proposal's round by a strict majority, without weights, deliberation or
    sanctions; it votes openly, which matters there only through the sycophant (who
    copies the votes it sees).  Here nobody's reading depends on another's vote, so an
    open vote and a concealed one give the same decisions: commit-reveal would change
    nothing, and the panel is all there is to compare.  Every panelist votes (no lazy
    agents), so the quorum is always met.
    """

    def __init__(self, cfg: PlasticityConfig, world: World, seed: int) -> None:
        super().__init__(world)
        self.world = world
        self.noise = cfg.reviewer_noise
        self.rng_pick = stream(seed, "plasticity-majority-panels")
        self.rng_vote = stream(seed, "plasticity-votes")
        self.plug = plugged_policy(cfg.policy, seed)

    def step(self, round: int, proposals: Sequence[Proposal]) -> None:
        for p in proposals:
            pool = [a for a in self.world.agents if a != p.submitter]
            panel = self.rng_pick.sample(pool, REVIEWERS)
            yes = sum(
                ask(
                    self.world,
                    self.plug,
                    "panel",
                    a,
                    p.id,
                    p.slot,
                    p.value,
                    p.transient,
                    round,
                    self.rng_vote,
                    self.noise,
                )
                for a in panel
            )
            if yes > REVIEWERS - yes:
                self.value[p.slot] = p.value
                self.counts[f"{p.role}:accepted"] += 1
            else:
                self.counts[f"{p.role}:rejected"] += 1


__all__ = [
    "TRANSIENT",
    "LastWriterWins",
    "LatestStable",
    "Majority",
    "Mechanism",
    "Minds",
    "ask",
    "judge",
    "plugged_policy",
]
