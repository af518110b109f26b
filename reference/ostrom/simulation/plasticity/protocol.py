"""The protocol as a plasticity mechanism: the stream played on the real ``Community``.

Why the real core: the question is whether *supersession with review* keeps a knowledge
base plastic, so every decision must be the orchestrator's (sortition, commit-reveal
tallies, timeouts, arbitration, supersession), every weight and tier the reputation
book's and every sanction the sanction book's, with the protocol's default parameters
(``DEFAULTS``, only the sortition seed set per run).  The mechanism only plays the
agents:

* **setup** (before round 0, not measured): every agent a founder at tier 1 (as
  ``simulation.protocol.founders``), each slot's initial value proposed into the empty
  slot and activated on the fast track (nobody objects), a few rounds of ticks;
* **each round**: every proposal of the stream is a real ``propose`` (digest = sha256 of
  the value's text; a transient marking travels as the evidence ``("transient",)``).  A
  slot is always occupied, so every one goes to formal review (docs/design.md §3).
  The reviewers the orchestrator drew commit, then reveal, a vote by their reading
  (``mechanisms.judge``, reading the marking from the artifact's public evidence) at
  the round they commit; an artifact in arbitration is decided by a tier-3 agent (not
  its submitter or reviewers) drawn from ``plasticity-arbiters``, reading the same way,
  or left to the status quo if there is none; then ``tick``;
* **served**: the orchestrator's active artifact of the slot (``serve``; LC-SAFE-2: at
  most one), mapped back to its value.

Reputation feedback is the Community's default (votes scored against the decision).
Nobody is lazy or broken here: every reviewer commits and every committed reviewer
reveals.  Two of the protocol's own rules still act, and the run keeps them (``commands``
and ``refused`` in the extras count them): a reviewer whose tier falls to 0 between its
commit and its reveal is refused the reveal (``reveal_vote`` needs tier 1) and reported
``non_reveal`` when the ballot closes; and the stream's proposals of a sanctioned
submitter (or the second one of a submitter rate-limited at σ2) are refused.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ostrom.protocol.commands import Event, Observation
from ostrom.protocol.community import Community, Member
from ostrom.protocol.params import DEFAULTS
from ostrom.protocol.voting import commitment, make_salt
from ostrom.simulation.config import SimConfig
from ostrom.simulation.plasticity.config import PROPOSE_RATE, PlasticityConfig
from ostrom.simulation.plasticity.mechanisms import TRANSIENT, ask, plugged_policy
from ostrom.simulation.plasticity.world import Proposal, World
from ostrom.simulation.world import stream

#: Founders' prior (the paper simulation's: tier 1 at the start).
FOUNDER_REPUTATION = SimConfig().founder_reputation
FOUNDER_EVIDENCE = SimConfig().founder_evidence

#: The reason every vote gives (it is bound into the commitment).
REASON = "assessment"

#: The states in which a review has ended, counted per proposal role.
ENDED = ("active", "rejected", "expired")


def digest(value: str) -> str:
    """The artifact's digest: sha256 of the value's text."""
    return hashlib.sha256(value.encode()).hexdigest()


class ProtocolMechanism:
    """One run of the stream on a ``Community`` (one object per run: no shared state)."""

    def __init__(self, cfg: PlasticityConfig, world: World, seed: int) -> None:
        self.world = world
        self.noise = cfg.reviewer_noise
        self.rng_vote = stream(seed, "plasticity-votes")
        self.rng_salt = stream(seed, "plasticity-salts")
        self.rng_arb = stream(seed, "plasticity-arbiters")
        self.plug = plugged_policy(cfg.policy, seed)
        members = [
            Member(a, tier=1, reputation=FOUNDER_REPUTATION, evidence=FOUNDER_EVIDENCE)
            for a in world.agents
        ]
        self.community = Community(dataclasses.replace(DEFAULTS, seed=seed), members)
        self.value_of: dict[str, str] = {}  # artifact -> value
        self.role_of: dict[str, str] = {}  # artifact -> proposal role
        self.secrets: dict[tuple[str, int, str], tuple[str, str]] = {}  # vote, salt
        self.todo: dict[str, list[str]] = {"commit": [], "reveal": [], "arbitration": []}
        self.counts: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()  # stream proposals the protocol refused
        self.no_arbiter = 0
        self._setup()
        self.offset = self.community.now  # round r of the stream is community round offset + r

    # --- the core -----------------------------------------------------------------------

    def apply(self, command: dict[str, Any]) -> Observation:
        obs = self.community.apply(command)
        self.counts[f"{command['op']}:{obs['result']}"] += 1
        self._events(obs["events"])
        return obs

    def _events(self, events: list[Event]) -> None:
        for ev in events:
            x, to, name = ev.get("artifact"), ev.get("to"), ev.get("event")
            if x is None or to is None or name in ("commit_vote", "reveal_vote"):
                continue
            if to == "commit":  # a formal review's commit phase (also a rerecruit, a revote)
                self.todo["commit"].append(x)
            elif to == "reveal":
                self.todo["reveal"].append(x)
            elif to == "arbitration":
                self.todo["arbitration"].append(x)
            role = self.role_of.get(x)
            if role is not None and to in ENDED and ev.get("from") != "active":
                self.outcomes[f"{role}:{to}"] += 1
            if role is not None and to == "superseded":
                self.outcomes[f"{role}:superseded"] += 1

    def _setup(self) -> None:
        """Each slot's initial value, proposed into the empty slot and fast-tracked."""
        agents = self.world.agents
        per_round = len(agents) * PROPOSE_RATE
        slots = self.world.slots
        for start in range(0, len(slots), per_round):
            for i, slot in enumerate(slots[start : start + per_round]):
                value = self.world.initial[slot]
                x = f"init.{slot}"
                self.value_of[x] = value
                cmd = {
                    "op": "propose",
                    "agent": agents[i % len(agents)],
                    "artifact": x,
                    "slot": slot,
                    "digest": digest(value),
                }
                if self.apply(cmd)["result"] != "ok":
                    raise RuntimeError(f"setup: {x} refused")
            self.apply({"op": "tick"})
        for _ in range(DEFAULTS.T_fast + 1):  # no objection: active at the fast-track timeout
            self.apply({"op": "tick"})
        missing = [s for s in slots if self.served(s) != self.world.initial[s]]
        if missing:
            raise RuntimeError(f"setup: {len(missing)} slots not active, e.g. {missing[0]}")
        self.todo = {k: [] for k in self.todo}

    def _public(self, x: str) -> dict[str, Any]:
        pub = self.community.orchestrator.public_artifact(x)
        assert pub is not None
        return pub

    def _reads(self, agent: str, x: str, pub: dict[str, Any], round: int, ballot: str) -> bool:
        value = self.value_of[x]
        transient = TRANSIENT in (pub["evidence"] or ())
        return ask(
            self.world,
            self.plug,
            ballot,
            agent,
            x,
            pub["slot"],
            value,
            transient,
            round,
            self.rng_vote,
            self.noise,
        )

    # --- one round ----------------------------------------------------------------------

    def step(self, round: int, proposals: Sequence[Proposal]) -> None:
        if self.community.now != self.offset + round:
            raise ValueError(f"round {round}: the community is at {self.community.now}")
        for p in proposals:
            self.value_of[p.id] = p.value
            self.role_of[p.id] = p.role
            cmd: dict[str, Any] = {
                "op": "propose",
                "agent": p.submitter,
                "artifact": p.id,
                "slot": p.slot,
                "digest": digest(p.value),
            }
            if p.transient:
                cmd["evidence"] = [TRANSIENT]
            result = self.apply(cmd)["result"]
            if result != "ok":  # a sanctioned submitter (LC-SAFE-4) or one rate-limited at σ2
                self.refused[f"{p.role}:{result}"] += 1
        todo, self.todo = self.todo, {k: [] for k in self.todo}
        for x in todo["commit"]:
            self._commits(x, round)
        for x in todo["reveal"]:
            self._reveals(x)
        for x in todo["arbitration"]:
            self._arbitrate(x, round)
        self.apply({"op": "tick"})

    def _commits(self, x: str, round: int) -> None:
        pub = self._public(x)
        if pub["phase"] != "commit" or pub["ballot"] != "review":
            return
        rnd = pub["round"]
        for agent in pub["reviewers"]:
            vote = "accept" if self._reads(agent, x, pub, round, "review") else "reject"
            salt = make_salt(self.rng_salt)
            h = commitment(agent, x, rnd, vote, REASON, salt)
            cmd = {"op": "commit_vote", "agent": agent, "artifact": x, "commitment": h}
            if self.apply(cmd)["result"] == "ok":
                self.secrets[(x, rnd, agent)] = (vote, salt)

    def _reveals(self, x: str) -> None:
        pub = self._public(x)
        if pub["phase"] != "reveal":
            return
        rnd = pub["round"]
        for agent in pub["committed"]:
            secret = self.secrets.pop((x, rnd, agent), None)
            if secret is None:
                continue
            vote, salt = secret
            self.apply(
                {
                    "op": "reveal_vote",
                    "agent": agent,
                    "artifact": x,
                    "vote": vote,
                    "reason": REASON,
                    "salt": salt,
                }
            )

    def _arbitrate(self, x: str, round: int) -> None:
        pub = self._public(x)
        if pub["state"] != "arbitration":
            return
        excluded = set(pub["reviewers"]) | {pub["submitter"]}
        pool = sorted(
            a
            for a, r in self.community.agents.items()
            if r.tier >= 3 and not r.barred and a not in excluded
        )
        if not pool:
            self.no_arbiter += 1
            return  # the status quo (rejected) at T_arb
        agent = self.rng_arb.choice(pool)
        outcome = "accept" if self._reads(agent, x, pub, round, "arbitration") else "reject"
        self.apply({"op": "arbitrate", "agent": agent, "artifact": x, "outcome": outcome})

    # --- reading ------------------------------------------------------------------------

    def served(self, slot: str) -> str | None:
        s = self.community.orchestrator.serve(slot)  # LC-SAFE-2: the one active artifact
        return None if s is None else self.value_of[s["artifact"]]

    def extras(self) -> dict[str, Any]:
        rep = self.community.reputation
        kinds = sorted(set(self.world.kind.values()))
        mean_rep = {
            k: round(
                sum(rep.expected(a) for a in self.world.agents if self.world.kind[a] == k)
                / sum(1 for a in self.world.agents if self.world.kind[a] == k),
                6,
            )
            for k in kinds
        }
        return {
            "decisions": dict(sorted(self.outcomes.items())),
            "refused": dict(sorted(self.refused.items())),
            "commands": dict(sorted(self.counts.items())),
            "no_arbiter": self.no_arbiter,
            "mean_reputation": mean_rep,
        }


__all__ = ["FOUNDER_EVIDENCE", "FOUNDER_REPUTATION", "ProtocolMechanism", "digest"]
