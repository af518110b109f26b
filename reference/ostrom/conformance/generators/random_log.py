"""Seeded random trace logs of the reference orchestrator (for benchmarks and tests).

``random_lifecycle_log(n, seed)`` drives ``LifecycleLayer`` (the reference driver's
lifecycle adapter) with ``n`` commands chosen from the public state: mostly commands an
honest agent would send (reviewers commit and reveal with the right salt, a tier-3 agent
arbitrates, submitters resubmit), with a share of refused ones (a wrong salt, a vote in the
wrong phase, a second commitment, a low-tier dispute, an unknown artifact) and ticks.  The
result is an ostrom-trace/1 log (``trace.TraceLog``), exactly what ``python -m
ostrom.conformance.driver --log`` writes for the same commands; ``bench/trace.py`` times ``ostrom
validate-trace`` on a 1,000-step one.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Final

from ostrom.conformance import TRACE_FORMAT
from ostrom.conformance.layers import LifecycleLayer
from ostrom.conformance.vectors import wire
from ostrom.protocol.voting import commitment
from ostrom.verify.trace.log import TraceLog, parse_log

__all__ = ["random_lifecycle_log"]

#: The parameters of the random logs (only what differs from the defaults).
PARAMS: Final[dict[str, Any]] = {
    "reviewers": 3,
    "quorum": 2,
    "dispute_reviewers": 3,
    "q_dispute": 2,
    "T_fast": 2,
    "T_delib": 1,
    "T_commit": 1,
    "T_reveal": 1,
    "T_arb": 2,
    "max_disputes": 2,
    "max_resubmit": 1,
    "cooldown": 1,
    "min_active_agents": 6,
    "propose_rate": 3,
}
#: Ten agents of every tier and weight, one of them suspended.
AGENTS: Final[list[dict[str, Any]]] = [
    {"id": "ana", "tier": 3, "weight": 1.0, "reputation": 0.9},
    {"id": "ben", "tier": 3, "weight": 0.8, "reputation": 0.9},
    {"id": "cat", "tier": 2, "weight": 0.7, "reputation": 0.8, "subscriptions": ["s1"]},
    {"id": "dan", "tier": 2, "weight": 0.6, "reputation": 0.7},
    {"id": "eve", "tier": 1, "weight": 0.5, "reputation": 0.6},
    {"id": "fay", "tier": 1, "weight": 0.4, "reputation": 0.6, "subscriptions": ["s2"]},
    {"id": "gus", "tier": 1, "weight": 0.3, "reputation": 0.4},
    {"id": "hal", "tier": 0, "weight": 0.1, "reputation": 0.6},
    {"id": "ivy", "tier": 0, "weight": 0.1, "reputation": 0.2},
    {"id": "max", "tier": 2, "weight": 0.9, "reputation": 0.8, "sanction": "suspended"},
]
SLOTS: Final = ("s1", "s2", "s3")


def _salt(seed: int, *parts: object) -> str:
    return hashlib.sha256("|".join(map(str, (seed, *parts))).encode()).hexdigest()


class _Walker:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.layer = LifecycleLayer()
        self.layer.reset(wire(PARAMS), wire({"agents": AGENTS}))
        self.state: dict[str, Any] = self.layer.orchestrator.public_state()
        self.ids = [a["id"] for a in AGENTS]
        self.tier = {a["id"]: a["tier"] for a in AGENTS}
        self.next_art = 0
        #: (agent, artifact, round) -> (vote, reason, salt) of each commitment sent
        self.secrets: dict[tuple[str, str, int], tuple[str, str, str]] = {}
        self.steps: list[dict[str, Any]] = []

    def arts(self, *states: str) -> list[tuple[str, dict[str, Any]]]:
        return [(x, a) for x, a in self.state["artifacts"].items() if a["state"] in states]

    def command(self) -> dict[str, Any]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.18:
            return {"op": "tick"}
        if roll < 0.6:  # reviewers do their duty first: reveal, then commit
            duty = self._reveal() or self._commit(duty=True)
            if duty is not None:
                return duty
        choices = [
            self._propose,
            self._commit,
            self._reveal,
            self._object,
            self._arbitrate,
            self._dispute,
            self._forget,
            self._resubmit,
            self._junk,
        ]
        weights = [1.5, 2, 2, 1, 2, 1.5, 1.5, 1, 1]
        for _ in range(5):
            cmd = rng.choices(choices, weights)[0]()
            if cmd is not None:
                return cmd
        return {"op": "tick"}

    def _propose(self) -> dict[str, Any] | None:
        rng = self.rng
        if rng.random() < 0.15 and self.state["artifacts"]:
            x = rng.choice(sorted(self.state["artifacts"]))  # duplicate
        else:
            self.next_art += 1
            x = f"x{self.next_art}"
        return {
            "op": "propose",
            "agent": rng.choice(self.ids),
            "artifact": x,
            "slot": rng.choice(SLOTS),
            "digest": f"{x}-v1",
        }

    def _commit(self, duty: bool = False) -> dict[str, Any] | None:
        rng = self.rng
        open_ = self.arts("commit") + [
            (x, a) for x, a in self.arts("disputed") if a["phase"] == "commit"
        ]
        if duty:
            open_ = [(x, a) for x, a in open_ if set(a["reviewers"]) - set(a["committed"])]
        if not open_:
            return None
        x, a = rng.choice(open_)
        voters = [v for v in a["reviewers"] if v not in a["committed"]] or a["reviewers"]
        if not duty and (not voters or rng.random() < 0.05):
            voters = self.ids  # not a reviewer: not_eligible
        v = rng.choice(voters)
        kind = ("accept", "reject") if a["state"] == "commit" else ("retract", "keep")
        vote = rng.choices(kind, (3, 2))[0]
        reason = f"{v} on {x}"
        salt = _salt(self.seed, len(self.steps), v, x)
        self.secrets[(v, x, a["round"])] = (vote, reason, salt)
        return {
            "op": "commit_vote",
            "agent": v,
            "artifact": x,
            "commitment": commitment(v, x, a["round"], vote, reason, salt),
        }

    def _reveal(self) -> dict[str, Any] | None:
        rng = self.rng
        open_ = self.arts("reveal") + [
            (x, a) for x, a in self.arts("disputed") if a["phase"] == "reveal"
        ]
        if not open_:
            return None
        x, a = rng.choice(open_)
        mine = [v for v in a["committed"] if (v, x, a["round"]) in self.secrets]
        fresh = [v for v in mine if v not in (a["revealed"] or {})]
        if fresh and rng.random() < 0.9:
            mine = fresh
        if not mine:
            return None
        v = rng.choice(mine)
        vote, reason, salt = self.secrets[(v, x, a["round"])]
        if rng.random() < 0.07:
            salt = _salt(self.seed, "wrong", len(self.steps))  # bad_reveal
        return {
            "op": "reveal_vote",
            "agent": v,
            "artifact": x,
            "vote": vote,
            "reason": reason,
            "salt": salt,
        }

    def _object(self) -> dict[str, Any] | None:
        ft = self.arts("fast_track")
        if not ft:
            return None
        x, _ = self.rng.choice(ft)
        return {"op": "object", "agent": self.rng.choice(self.ids), "artifact": x}

    def _arbitrate(self) -> dict[str, Any] | None:
        arb = self.arts("arbitration")
        if not arb:
            return None
        x, _ = self.rng.choice(arb)
        outcome = self.rng.choice(("accept", "reject", "revote"))
        return {
            "op": "arbitrate",
            "agent": self.rng.choice(["ana", "ben", "cat"]),
            "artifact": x,
            "outcome": outcome,
        }

    def _dispute(self) -> dict[str, Any] | None:
        act = self.arts("active")
        if not act:
            return None
        x, _ = self.rng.choice(act)
        op = self.rng.choice(("dispute", "dispute", "urgent_report"))
        return {"op": op, "agent": self.rng.choice(self.ids), "artifact": x, "reason": "r"}

    def _forget(self) -> dict[str, Any] | None:
        done = self.arts("active", "superseded", "rejected", "expired", "retracted", "disputed")
        if not done:
            return None
        x, _ = self.rng.choice(done)
        return {"op": "forget_vote", "agent": self.rng.choice(self.ids), "artifact": x}

    def _resubmit(self) -> dict[str, Any] | None:
        back = self.arts("rejected", "expired", "retracted")
        if not back:
            return None
        x, a = self.rng.choice(back)
        n = a["resubmit_count"] + 2
        return {"op": "resubmit", "agent": a["submitter"], "artifact": x, "digest": f"{x}-v{n}"}

    def _junk(self) -> dict[str, Any] | None:
        junk: list[dict[str, Any]] = [
            {"op": "object", "agent": "nobody", "artifact": "x1"},
            {"op": "recruit", "artifact": "nope"},
            {"op": "tick", "now": 3},
            {"op": "dispute", "agent": "hal", "artifact": "x1", "reason": "r"},
            {"op": "commit_vote", "agent": "ana", "artifact": "x1", "commitment": "00"},
        ]
        return self.rng.choice(junk)

    def run(self, n: int) -> TraceLog:
        for _ in range(n):
            cmd = self.command()
            obs = wire(self.layer.step(wire(cmd)))
            self.state = obs["state"]
            self.steps.append({"command": cmd, "result": obs["result"], "state": obs["state"]})
        header = {
            "format": TRACE_FORMAT,
            "layer": "lifecycle",
            "params": PARAMS,
            "setup": {"agents": AGENTS},
        }
        return parse_log(f"random-{n}-seed-{self.seed}", header, self.steps)


def random_lifecycle_log(n: int, seed: int = 0) -> TraceLog:
    """A log of ``n`` random commands on the reference (deterministic in ``seed``)."""
    return _Walker(seed).run(n)
