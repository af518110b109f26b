"""A run of the protocol on the real core: ``ostrom.protocol.community.Community``.

Every decision is the orchestrator's (lifecycle, tallies, timeouts), every weight and tier
the reputation book's, every sanction the sanction book's: the simulation only plays the
agents, by sending the commands an agent of each archetype would send
(``archetypes``), and measures (``metrics``).  Per round:

1. ``proposals_per_round`` artifacts are proposed, each by a random agent (another one if
   the first is refused: sanctioned or rate-limited);
2. the agents act on what the last tick opened: objections on fast-tracked artifacts,
   commitments on ballots in their commit phase, reveals in the reveal phase, an arbiter's
   decision, and ``dispute_scans`` chances for a tier-2 agent to dispute an active
   artifact;
3. ``tick``; its events move the artifacts, and the metrics are taken.

Ablations change one component and nothing else: ``no_commit_reveal`` makes each vote
visible as it is cast (the commitments are still sent; the sycophant now sees them and
adversaries vote first), ``no_reputation_weighting`` gives every agent the same weight
w_max, ``no_reputation`` also gives every agent the top tier (reputation gates nothing),
``no_sanctions`` records no violation, ``no_farming_cap`` lifts the farming cap.
``weighted_no_deliberation`` is the protocol with the shortest deliberation (1 round,
the parameter's minimum) and no deliberation bonus to the readings.

**Against a live node** (``ostrom simulate --target URL``, docs/service.md): a ``Remote``
answers every command instead of the in-process core, and a *shadow* ``Community`` built
from the same parameters and founders (``node_setup``) answers it too; any difference
between the two observations stops the run (``Divergence``).  The node runs the plain
community, so the run must too: no feedback noise, no ablation, feedback by decision, and
the default repair check (``check_remote_config`` says which field is in the way).  The
agents' choices depend only on their own random streams and on the observations, which
the shadow makes equal, so a run against a node gives exactly the result of the same run
against an in-process community of the same setup
(property_tests/simulation/test_simulation_remote.py plays one against the other, and a node
that differs in one parameter is caught).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ostrom.protocol.agents import MAX_TIER
from ostrom.protocol.commands import Event, Observation
from ostrom.protocol.community import Community, Member, Truth
from ostrom.protocol.params import Params
from ostrom.protocol.reputation import ReputationBook
from ostrom.protocol.sanctions import SanctionBook
from ostrom.protocol.voting import commitment, make_salt
from ostrom.simulation import archetypes as arch
from ostrom.simulation import policy as pol
from ostrom.simulation.config import SimConfig
from ostrom.simulation.metrics import (
    PUNISHED,
    Tracker,
    false_positive_rate,
    gini,
    separation,
)
from ostrom.simulation.policy import Seat, Seats, observe
from ostrom.simulation.result import Progress, RunResult
from ostrom.simulation.world import World, make_world, stream

#: How much larger a level is (for "the worst level an agent ever had").
LEVEL_RANK = {
    "none": 0,
    "quarantined": 0,
    "warned": 1,
    "rate_limited": 2,
    "suspended": 3,
    "banned": 4,
}

#: The probability that an operator's repair of a quarantined broken agent works (then
#: the agent stops malfunctioning); the repair check passes exactly when it worked.
REPAIR_SUCCESS = 0.5


class Remote(Protocol):
    """A node (or cluster) that answers commands: ``apply`` sends one and returns the
    observation the node answered (its ``result`` and ``events``)."""

    def apply(self, command: dict[str, Any]) -> Observation: ...


class Divergence(Exception):
    """The node answered a command differently from the shadow community."""


def check_remote_config(cfg: SimConfig) -> None:
    """Raise ``ValueError`` naming the field that a run against a node cannot honour: the
    node runs the plain ``Community`` (no noise, no ablation, decision feedback)."""
    if cfg.governance != "protocol":
        raise ValueError(f"--target runs the protocol only, not governance {cfg.governance!r}")
    if cfg.ablations:
        raise ValueError("--target runs the protocol as the node does: no ablations")
    if cfg.feedback != "decision":
        raise ValueError("--target: the node scores votes against the decision (feedback)")
    if cfg.feedback_noise != 0:
        raise ValueError(
            "--target: the node has no feedback noise; set feedback_noise = 0 in --config"
        )
    if cfg.reputation_decay != Params().delta:
        raise ValueError("--target: the node decays reputation by its own delta")


def founders(cfg: SimConfig, seed: int) -> list[Member]:
    """The run's agents as the community's founders (every one at tier 1)."""
    return [
        Member(a, tier=1, reputation=cfg.founder_reputation, evidence=cfg.founder_evidence)
        for a in make_world(cfg, seed).agents
    ]


def node_setup(cfg: SimConfig, seed: int) -> tuple[Params, list[Member]]:
    """The parameters and founders a node must be started with for ``--target``."""
    check_remote_config(cfg)
    return protocol_params(cfg, seed), founders(cfg, seed)


def _plain(obs: Observation) -> Any:
    """An observation as it crosses a network: JSON values (tuples become lists)."""
    return json.loads(json.dumps(obs))


def protocol_params(cfg: SimConfig, seed: int) -> Params:
    """The protocol's parameters for a run: the defaults, with the run's workload."""
    delib = 1 if cfg.governance == "weighted_no_deliberation" else cfg.deliberation_rounds
    changes: dict[str, Any] = {
        "reviewers": cfg.reviewers,
        "quorum": cfg.quorum,
        "T_delib": delib,
        "seed": seed,
        "tally_min_side": min(Params().tally_min_side, cfg.quorum),
        "delta": cfg.reputation_decay,
    }
    if "no_farming_cap" in cfg.ablations:
        changes["farm_gain"] = 100.0  # the parameter's maximum: no cap within [w_min, w_max]
    return dataclasses.replace(Params(), **changes)


class Run:
    """One protocol run in progress (one object per run: no shared state)."""

    def __init__(self, cfg: SimConfig, seed: int, remote: Remote | None = None) -> None:
        if remote is not None:
            check_remote_config(cfg)
        self.cfg = cfg
        self.seed = seed
        self.remote = remote
        self.world: World = make_world(cfg, seed)
        self.kind = dict(self.world.archetype)
        self.art = {a.id: a for a in self.world.artifacts}
        self.rng_vote = stream(seed, "votes")
        self.rng_act = stream(seed, "acts")
        self.rng_noise = stream(seed, "feedback-noise")
        self.rng_repair = stream(seed, "repair")
        self.rng_propose = stream(seed, "proposals")
        self.seats = Seats(cfg, seed, self.rng_vote)
        self.visible = "no_commit_reveal" in cfg.ablations
        self.deliberates = cfg.governance != "weighted_no_deliberation"
        self.repaired: set[str] = set()
        self.community = self._community()
        self.tracker = Tracker({a.id: a.good for a in self.world.artifacts})
        self.worst: dict[str, str] = {a: "none" for a in self.world.agents}
        self.quarantined: set[str] = set()
        self.first_sanction: int | None = None
        self.secrets: dict[tuple[str, int, str], tuple[str, str]] = {}  # vote, salt
        self.todo: dict[str, list[str]] = {
            "objection": [],
            "commit": [],
            "reveal": [],
            "arbitration": [],
        }
        self.paths: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.next_artifact = 0

    # --- the core ---------------------------------------------------------------------------

    def _community(self) -> Community:
        if self.remote is not None:  # the shadow of the node: its parameters and founders
            return Community(*node_setup(self.cfg, self.seed))
        cfg, noise, rng = self.cfg, self.cfg.feedback_noise, self.rng_noise

        class NoisyBook(ReputationBook):
            """Vote feedback with noise: each piece of evidence is flipped with
            probability ``feedback_noise`` (the paper's 15%)."""

            def observe(self, agent: str, positive: bool, weight: float = 1.0) -> None:
                if noise and rng.random() < noise:
                    positive = not positive
                super().observe(agent, positive, weight)

        book: type[ReputationBook] = NoisyBook
        if "no_reputation_weighting" in cfg.ablations:

            class FlatBook(NoisyBook):
                """Every agent votes with the same weight (tiers still follow reputation,
                and so do the rights they gate and the recruitment pool)."""

                def weight(self, agent: str) -> float:
                    self._record(agent)
                    return self.params.w_max

            book = FlatBook
        elif "no_reputation" in cfg.ablations:

            class NoReputation(NoisyBook):
                """Reputation gates nothing: every agent votes with weight w_max and holds
                the top tier for good (reviews, disputes, arbitrates; the sortition draws
                from every agent who is not barred).  The book still scores votes, so the
                Gini and separation metrics measure what reputation *would* say; the
                sanction layer's tier cap still applies on top (issue 43, item 1: the
                ablation that removes reputation everywhere, not only from the weights)."""

                def weight(self, agent: str) -> float:
                    self._record(agent)
                    return self.params.w_max

                def tier(self, agent: str, cap: int = MAX_TIER) -> int:
                    self._record(agent)
                    return min(MAX_TIER, cap)

            book = NoReputation

        sanctions: type[SanctionBook] = SanctionBook
        if "no_sanctions" in cfg.ablations:

            class NoSanctions(SanctionBook):
                """Violations are not recorded: nobody is ever sanctioned."""

                def record_events(
                    self, events: Iterable[Mapping[str, Any]], round: int
                ) -> list[Event]:
                    return []

            sanctions = NoSanctions

        truth: Truth | None = None
        if cfg.feedback == "truth":
            good = {a.id: a.good for a in self.world.artifacts}

            def truth(artifact: str, ballot: str) -> str | None:
                g = good.get(artifact)
                if g is None:
                    return None
                if ballot == "dispute":
                    return "keep" if g else "retract"
                return "accept" if g else "reject"

        members = founders(cfg, self.seed)

        def repair_check(agent: str, _round: int) -> bool:
            if self.kind.get(agent) != "broken" or agent in self.repaired:
                return True
            if self.rng_repair.random() < REPAIR_SUCCESS:
                self.repaired.add(agent)
                return True
            return False

        return Community(
            protocol_params(cfg, self.seed),
            members,
            feedback=cfg.feedback,
            truth=truth,
            repair_check=repair_check,
            reputation_cls=book,
            sanctions_cls=sanctions,
        )

    def archetype(self, agent: str) -> str:
        k = self.kind[agent]
        return "honest" if k == "broken" and agent in self.repaired else k

    def seat(self, agent: str) -> Seat:
        """Who decides for ``agent``: its archetype's seat (a plugged policy takes the
        agents drawn as its archetype); a repaired broken agent acts as the built-in
        honest archetype."""
        k = self.kind[agent]
        if k == "broken" and agent in self.repaired:
            return self.seats.builtin["honest"]
        return self.seats.of(k)

    def observe(self, agent: str, b: arch.Ballot) -> pol.Observation:
        return observe(agent, self.archetype(agent), b, self.cfg)

    def apply(self, command: dict[str, Any]) -> Observation:
        obs = self.community.apply(command)
        if self.remote is not None:
            answer = self.remote.apply(command)
            if _plain(answer) != _plain(obs):
                raise Divergence(
                    f"round {self.community.now}: {json.dumps(command)}: the node answered "
                    f"{json.dumps(answer)}, the shadow community {json.dumps(_plain(obs))}"
                )
        self.counts[f"{command['op']}:{obs['result']}"] += 1
        self._events(obs["events"])
        return obs

    def _events(self, events: list[Event]) -> None:
        for ev in events:
            x = ev.get("artifact")
            to = ev.get("to")
            if x is None or to is None:
                continue
            self.tracker.set(x, to)
            name, frm, verdict = ev.get("event"), ev.get("from"), ev.get("verdict")
            if name in ("commit_vote", "reveal_vote"):
                continue  # a vote does not open anything
            if to == "fast_track":
                self.todo["objection"].append(x)
            elif to == "commit" or (to == "disputed" and frm == "active"):
                self.todo["commit"].append(x)
            elif to == "reveal" or (to == "disputed" and verdict == "reveal_phase"):
                self.todo["reveal"].append(x)
            elif to == "arbitration":
                self.todo["arbitration"].append(x)
            if to == "active" and frm != "disputed":
                path = "fast_track" if frm == "fast_track" else str(ev.get("event"))
                self.paths[f"active:{path}"] += 1
            if to in ("rejected", "expired", "retracted"):
                self.paths[to] += 1
            if name == "dispute":
                self.paths["disputes"] += 1

    # --- one round --------------------------------------------------------------------------

    def ballot(self, x: str, kind: str, visible: tuple[bool, ...] = ()) -> arch.Ballot:
        a = self.art[x]
        deliberated = kind == "review" and self.deliberates
        return arch.Ballot(x, a.quality, a.good, kind, self.community.now, deliberated, visible)

    def propose(self) -> None:
        for _ in range(self.cfg.proposals_per_round):
            if self.next_artifact >= len(self.world.artifacts):
                return
            x = self.world.artifacts[self.next_artifact].id
            self.next_artifact += 1
            digest = hashlib.sha256(x.encode()).hexdigest()
            for _try in range(20):
                agent = self.rng_propose.choice(self.world.agents)
                cmd = {"op": "propose", "agent": agent, "artifact": x, "slot": x, "digest": digest}
                if self.apply(cmd)["result"] == "ok":
                    break

    def act(self) -> None:
        todo, self.todo = self.todo, {k: [] for k in self.todo}
        for x in todo["objection"]:
            self.objections(x)
        for x in todo["commit"]:
            self.commits(x)
        for x in todo["reveal"]:
            self.reveals(x)
        for x in todo["arbitration"]:
            self.arbitrate(x)
        self.disputes()

    def _public(self, x: str) -> dict[str, Any]:
        pub = self.community.orchestrator.public_artifact(x)
        assert pub is not None
        return pub

    def objections(self, x: str) -> None:
        pub = self._public(x)
        if pub["state"] != "fast_track":
            return
        b = self.ballot(x, "review")
        for agent in pub["reviewers"]:
            act = self.seat(agent).objects(self.observe(agent, b))
            if act == arch.GARBAGE:
                self.apply({"op": "object", "agent": agent})  # malformed: no artifact
            elif act == arch.OPPOSE:
                self.apply({"op": "object", "agent": agent, "artifact": x})
                return  # one objection sends it to formal review

    def commits(self, x: str) -> None:
        pub = self._public(x)
        if pub["phase"] != "commit":
            return
        kind = pub["ballot"]
        rnd = pub["round"]
        endorse, oppose = ("accept", "reject") if kind == "review" else ("keep", "retract")
        b = self.ballot(x, kind)
        reviewers = list(pub["reviewers"])
        if self.visible:
            reviewers = arch.order(
                reviewers, lambda a: self.seat(a).speaks_first(self.observe(a, b)), self.rng_vote
            )
        else:
            self.rng_vote.shuffle(reviewers)
        seen: list[bool] = []
        for agent in reviewers:
            view = self.ballot(x, kind, tuple(seen) if self.visible else ())
            act = self.seat(agent).vote(self.observe(agent, view))
            if act == arch.ABSTAIN:
                continue
            if act == arch.GARBAGE:
                self.apply({"op": "commit_vote", "agent": agent, "artifact": x, "commitment": "?"})
                continue
            v = endorse if act == arch.ENDORSE else oppose
            salt = make_salt(self.rng_vote)
            h = commitment(agent, x, rnd, v, "assessment", salt)
            if (
                self.apply({"op": "commit_vote", "agent": agent, "artifact": x, "commitment": h})[
                    "result"
                ]
                == "ok"
            ):
                self.secrets[(x, rnd, agent)] = (v, salt)
                seen.append(act == arch.ENDORSE)

    def reveals(self, x: str) -> None:
        pub = self._public(x)
        if pub["phase"] != "reveal":
            return
        rnd = pub["round"]
        b = self.ballot(x, pub["ballot"])
        for agent in pub["committed"]:
            secret = self.secrets.pop((x, rnd, agent), None)
            if secret is None:
                continue
            act = self.seat(agent).reveals(self.observe(agent, b))
            if act == arch.ABSTAIN:
                continue
            v, salt = secret
            if act == arch.GARBAGE:
                salt = "0" * 64 if salt != "0" * 64 else "1" * 64
            self.apply(
                {
                    "op": "reveal_vote",
                    "agent": agent,
                    "artifact": x,
                    "vote": v,
                    "reason": "assessment",
                    "salt": salt,
                }
            )

    def arbitrate(self, x: str) -> None:
        pub = self._public(x)
        if pub["state"] != "arbitration":
            return
        excluded = set(pub["reviewers"]) | {pub["submitter"]}
        agents = self.community.agents
        pool = sorted(
            a for a, r in agents.items() if r.tier >= 3 and not r.barred and a not in excluded
        )
        if not pool:
            self.paths["no_arbiter"] += 1
            return  # status quo at T_arb
        agent = self.rng_act.choice(pool)
        act = self.seat(agent).vote(self.observe(agent, self.ballot(x, "review")))
        if act == arch.ABSTAIN:
            return
        if act == arch.GARBAGE:
            self.apply({"op": "arbitrate", "agent": agent, "artifact": x, "outcome": "?"})
            return
        outcome = "accept" if act == arch.ENDORSE else "reject"
        self.apply({"op": "arbitrate", "agent": agent, "artifact": x, "outcome": outcome})

    def disputes(self) -> None:
        if not self.cfg.dispute_scans:
            return
        active = sorted(x for x, s in self.tracker.state.items() if s == "active")
        if not active:
            return
        agents = self.community.agents
        able = sorted(a for a, r in agents.items() if r.tier >= 2 and not r.barred)
        if not able:
            return
        for _ in range(self.cfg.dispute_scans):
            x = self.rng_act.choice(active)
            agent = self.rng_act.choice(able)
            if agent == self._public(x)["submitter"]:
                continue
            if self.seat(agent).disputes(self.observe(agent, self.ballot(x, "dispute"))):
                self.apply({"op": "dispute", "agent": agent, "artifact": x, "reason": "quality"})

    def observe_sanctions(self) -> None:
        book = self.community.sanctions
        for a in self.world.agents:
            lvl = book.level(a).value
            if lvl == "quarantined":
                self.quarantined.add(a)
            if LEVEL_RANK[lvl] > LEVEL_RANK[self.worst[a]]:
                self.worst[a] = lvl
                if self.first_sanction is None:
                    self.first_sanction = self.community.now

    # --- the run ----------------------------------------------------------------------------

    def run(self, progress: Progress | None = None) -> RunResult:
        cfg = self.cfg
        series: dict[str, list[float]] = {k: [] for k in ("precision", "recall", "gini", "fpr")}
        rep = self.community.reputation
        for r in range(cfg.rounds):
            self.propose()
            self.act()
            self.observe_sanctions()
            self.apply({"op": "tick"})
            self.observe_sanctions()
            series["precision"].append(self.tracker.precision)
            series["recall"].append(self.tracker.recall)
            series["gini"].append(gini(rep.expected(a) for a in self.world.agents))
            series["fpr"].append(false_positive_rate(self.kind, self.worst))
            if progress is not None:
                progress(r + 1, cfg.rounds)
        return self.result(series)

    def result(self, series: dict[str, list[float]]) -> RunResult:
        rep = self.community.reputation
        kinds = sorted(set(self.kind.values()))
        mean_e = {
            k: sum(rep.expected(a) for a in self.world.agents if self.kind[a] == k)
            / sum(1 for a in self.world.agents if self.kind[a] == k)
            for k in kinds
        }
        final = {k: v[-1] for k, v in series.items()}
        final["separation"] = separation(self.kind, {a: rep.expected(a) for a in self.world.agents})
        extras: dict[str, Any] = {
            "mean_reputation": {k: round(v, 6) for k, v in mean_e.items()},
            "sanctioned": dict(
                sorted(
                    Counter(self.kind[a] for a, w in self.worst.items() if w in PUNISHED).items()
                )
            ),
            "warned_or_worse": dict(
                sorted(Counter(self.kind[a] for a, w in self.worst.items() if w != "none").items())
            ),
            "quarantined": dict(sorted(Counter(self.kind[a] for a in self.quarantined).items())),
            "repaired": len(self.repaired),
            "first_sanction_round": self.first_sanction,
            "broken_punished_rate": false_positive_rate(self.kind, self.worst, of="broken"),
            "paths": dict(sorted(self.paths.items())),
            "commands": dict(sorted(self.counts.items())),
            "active": self.tracker.active,
            "settled": self.tracker.settled,
            "proposed": self.next_artifact,
        }
        return RunResult(self.cfg, self.seed, series, final, extras)


def run_protocol(
    cfg: SimConfig, seed: int, progress: Progress | None = None, remote: Remote | None = None
) -> RunResult:
    """The protocol (or an ablation, or weighted-without-deliberation) for one seed; with
    ``remote``, played against a node and checked against the shadow community."""
    return Run(cfg, seed, remote).run(progress)


__all__ = [
    "LEVEL_RANK",
    "REPAIR_SUCCESS",
    "Divergence",
    "Remote",
    "Run",
    "check_remote_config",
    "founders",
    "node_setup",
    "protocol_params",
    "run_protocol",
]
