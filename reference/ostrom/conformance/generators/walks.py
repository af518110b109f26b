"""Histories found by derandomized Hypothesis random walks (source ``reference:hypothesis``).

For each layer a walker draws commands that fit the current state (mostly valid, now and
then wrong: another salt, the wrong phase, a stranger, junk) and runs them on the
reference adapter.  Every step is classified into *coverage keys* — a transition row
``(event, from, to)``, an error code, a violation kind, a sanction change, a tier change,
a verdict — and the first history that reaches a key not seen before is kept, cut at
that step.  Histories that reach several new keys at once become one vector, named
after the first key.

Hypothesis runs with ``derandomize=True`` and no database, so the same examples are drawn
on every run: ``ostrom vectors --check`` compares them byte for byte.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from ostrom.conformance.generators.examples.worlds import CM_PARAMS, LC_PARAMS, MEMBERS, WORLD
from ostrom.conformance.generators.recorder import GenerationError, Recorder
from ostrom.conformance.layer import Layer
from ostrom.conformance.layers import ADAPTER_CLASSES, ADAPTERS
from ostrom.conformance.vectors import wire
from ostrom.protocol.lifecycle import slug
from ostrom.protocol.voting import commitment

__all__ = ["build_walks"]

SOURCE: Final = "reference:hypothesis"

Command = Any
Key = tuple[str, ...]
#: (data, walker memory, state) -> command
Draw = Callable[[st.DataObject, "Memory", Any], Command]


@dataclass
class Memory:
    """What a walker remembers between steps (agents are stateless; the walker plays them):
    the votes it committed, the agents that joined, a counter for fresh names."""

    votes: dict[tuple[str, int, str], tuple[str, str]]
    joined: list[str]
    n: int = 0


@dataclass(frozen=True)
class Walk:
    layer: str
    params: Mapping[str, Any]
    setup: Mapping[str, Any]
    draw: Draw
    keys: Callable[[Command, Mapping[str, Any]], list[Key]]
    properties: Callable[[Key], list[str]]
    steps: int
    examples: int


def _salt(agent: str, k: int) -> str:
    return hashlib.sha256(f"walk|{agent}|{k}".encode()).hexdigest()


# --- lifecycle and community ----------------------------------------------------------------------

_IDS: Final = ("x", "y", "z")
_SLOTS: Final = ("s", "t")


def _agents_of(state: Any, memory: Memory, base: Sequence[str]) -> list[str]:
    return [*base, *memory.joined]


def _useful(state: Any, mem: Memory) -> list[tuple[str, str, str]]:
    """(op, artifact, agent) moves that the state invites: the reviewers' votes of open
    ballots, objections, arbitrations, disputes, resubmissions, forget votes."""
    out: list[tuple[str, str, str]] = []
    for x, a in sorted(state["artifacts"].items()):
        st_, phase = a["state"], a["phase"]
        if phase == "commit" and st_ in ("commit", "disputed"):
            out += [("commit_vote", x, r) for r in a["reviewers"] if r not in a["committed"]]
        if phase == "reveal" and st_ in ("reveal", "disputed"):
            done = a["revealed"] or {}
            out += [("reveal_vote", x, r) for r in a["committed"] if r not in done]
        if st_ == "fast_track":
            out += [("object", x, r) for r in a["reviewers"][:1]]
        if st_ == "arbitration":
            out += [("arbitrate", x, "")]
        if st_ == "active":
            out += [("dispute", x, ""), ("urgent_report", x, ""), ("forget_vote", x, "")]
        if st_ in ("rejected", "expired", "retracted"):
            out += [("resubmit", x, a["submitter"]), ("forget_vote", x, "")]
        if st_ == "superseded":
            out += [("forget_vote", x, "")]
    return out


def _lifecycle_draw(base_agents: Sequence[str], community: bool) -> Draw:
    def draw(data: st.DataObject, mem: Memory, state: Any) -> Command:
        agents = _agents_of(state, mem, base_agents)
        arts: dict[str, Any] = state["artifacts"]
        agent = data.draw(st.sampled_from(agents))
        useful = _useful(state, mem)
        x = data.draw(st.sampled_from(_IDS))
        who = ""
        if useful and data.draw(st.integers(0, 9)) < 6:
            op, x, who = data.draw(st.sampled_from(useful))
        else:
            ops = ["tick"] * 5 + ["propose"] * 2 + ["commit_vote", "reveal_vote", "object"]
            ops += ["arbitrate", "dispute", "urgent_report", "resubmit", "forget_vote", "junk"]
            ops += ["join"] if community else ["set_agent"]
            op = data.draw(st.sampled_from(ops))
        who = who or agent
        a = arts.get(x)
        if op == "tick":
            return {"op": "tick"}
        if op == "junk":
            return data.draw(
                st.sampled_from(
                    [
                        {"op": "propose", "agent": agent, "artifact": 1},
                        {"op": "tick", "now": 3},
                        {"op": "commit_vote", "agent": agent, "artifact": x, "commitment": "z"},
                        {"op": "object", "agent": "ghost", "artifact": x},
                    ]
                )
            )
        if op == "join":
            mem.n += 1
            name = f"new{mem.n}"
            mem.joined.append(name)
            return {"op": "join", "agent": name}
        if op == "set_agent":
            sanction = data.draw(st.sampled_from(["none", "none", "rate_limited", "suspended"]))
            tier = data.draw(st.integers(0, 3))
            return {"op": "set_agent", "agent": agent, "tier": tier, "sanction": sanction}
        if op == "propose":
            slot = data.draw(st.sampled_from(_SLOTS))
            return {"op": "propose", "agent": agent, "artifact": x, "slot": slot, "digest": f"{x}1"}
        if op == "resubmit":
            mem.n += 1
            return {"op": "resubmit", "agent": who, "artifact": x, "digest": f"{x}{mem.n}"}
        if op == "commit_vote":
            dispute = a is not None and a["ballot"] == "dispute"
            values = ["retract", "keep"] if dispute else ["accept", "reject"]
            vote = data.draw(st.sampled_from(values))
            rnd = a["round"] if a is not None else 1
            salt = _salt(who, rnd)
            mem.votes[(x, rnd, who)] = (vote, salt)
            c = commitment(who, x, rnd, vote, "", salt)
            return {"op": "commit_vote", "agent": who, "artifact": x, "commitment": c}
        if op == "reveal_vote":
            rnd = a["round"] if a is not None else 1
            vote, salt = mem.votes.get((x, rnd, who), ("accept", _salt(who, rnd)))
            if data.draw(st.integers(0, 9)) == 0:
                salt = _salt(who, rnd + 100)  # a wrong salt now and then
            return {
                "op": "reveal_vote",
                "agent": who,
                "artifact": x,
                "vote": vote,
                "reason": "",
                "salt": salt,
            }
        if op == "arbitrate":
            outcome = data.draw(st.sampled_from(["accept", "reject", "revote"]))
            return {"op": "arbitrate", "agent": agent, "artifact": x, "outcome": outcome}
        if op == "object":
            return {"op": "object", "agent": who, "artifact": x}
        if op in ("dispute", "urgent_report"):
            return {"op": op, "agent": agent, "artifact": x, "reason": "r"}
        return {"op": "forget_vote", "agent": agent, "artifact": x}

    return draw


def _lifecycle_keys(command: Command, obs: Mapping[str, Any]) -> list[Key]:
    keys: list[Key] = []
    if obs["result"] != "ok":
        keys.append(("error", obs["result"]))
    for ev in obs["events"]:
        if "from" in ev and "to" in ev and ev["event"] != "sanction":
            keys.append(("row", ev["event"], ev["from"], ev["to"]))
        elif ev["event"] in ("violation", "penalty"):
            keys.append(("violation", ev["kind"]))
        elif ev["event"] == "sanction":
            keys.append(("sanction", ev["to"], ev["cause"]))
    return keys


_EVENT_PROPS: Final[dict[str, list[str]]] = {
    "propose": ["LC-SAFE-4"],
    "recruit": ["LC-SAFE-1"],
    "object": ["LC-SAFE-1"],
    "commit_vote": ["CR-1"],
    "reveal_vote": ["CR-2"],
    "timeout": ["LC-LIVE-1", "LC-SAFE-1"],
    "arbitrate": ["LC-SAFE-1", "LC-SAFE-4"],
    "dispute": ["LC-SAFE-3"],
    "urgent_report": ["LC-SAFE-5", "LC-SAFE-3"],
    "resubmit": ["LC-SAFE-3"],
    "supersede": ["LC-SAFE-2"],
    "forget_vote": ["LC-SAFE-6"],
    "forget": ["LC-SAFE-6", "FG-1"],
}
_ERROR_PROPS: Final[dict[str, list[str]]] = {
    "bad_reveal": ["CR-2"],
    "limit_reached": ["LC-SAFE-3"],
}


def _lifecycle_props(key: Key) -> list[str]:
    if key[0] == "row":
        return ["LC-SAFE-2", *_EVENT_PROPS.get(key[1], [])]
    if key[0] == "error":
        return ["LC-SAFE-4", *_ERROR_PROPS.get(key[1], [])]
    if key[0] == "sanction":
        return ["SAN-1", "SAN-2", "LC-SAFE-4"]
    return ["SAN-2"]


# --- sanctions ------------------------------------------------------------------------------------

_KINDS: Final = (
    "invalid_reveal",
    "non_reveal",
    "rate_limit",
    "frivolous_dispute",
    "unfounded_urgent",
    "malformed",
)


def _sanctions_draw(data: st.DataObject, mem: Memory, state: Any) -> Command:
    if data.draw(st.integers(0, 3)) == 0:
        jump = data.draw(st.sampled_from([1, 1, 1, 2, 4]))
        return {"op": "tick", "round": state["now"] + jump} if jump > 1 else {"op": "tick"}
    agent = data.draw(st.sampled_from(["ana", "bot", "bob"]))
    kind = data.draw(st.sampled_from(_KINDS))
    if agent == "bot" and data.draw(st.booleans()):
        kind = "malformed"
    return {"op": "record", "agent": agent, "kind": kind}


def _sanctions_keys(command: Command, obs: Mapping[str, Any]) -> list[Key]:
    keys: list[Key] = []
    for ev in obs["events"]:
        if ev["event"] == "sanction":
            keys.append(("sanction", ev["from"], ev["to"], ev["cause"]))
        else:
            keys.append((str(ev["event"]),))
    return keys


def _sanctions_props(key: Key) -> list[str]:
    if "quarantined" in key or key[0] in ("quarantine_renewed", "reclassified"):
        return ["SAN-1", "SAN-2"]
    return ["SAN-2"]


# --- reputation -----------------------------------------------------------------------------------


def _reputation_draw(data: st.DataObject, mem: Memory, state: Any) -> Command:
    agents = sorted(state["agents"])
    choice = data.draw(st.integers(0, 9))
    if not agents or choice == 0:
        mem.n += 1
        return {"op": "add", "agent": f"a{mem.n}"}
    if choice <= 3:
        return {"op": "tick"}
    if choice <= 6:
        return {
            "op": "observe",
            "agent": data.draw(st.sampled_from(agents)),
            "positive": data.draw(st.booleans()),
            "weight": data.draw(st.sampled_from([1, 2, 5])),
        }
    voters = data.draw(st.lists(st.sampled_from(agents), min_size=1, max_size=4, unique=True))
    votes = {v: data.draw(st.sampled_from(["accept", "reject"])) for v in sorted(voters)}
    return {
        "op": "record_votes",
        "votes": votes,
        "decision": data.draw(st.sampled_from(["accept", "reject"])),
    }


def _reputation_keys(command: Command, obs: Mapping[str, Any]) -> list[Key]:
    return []  # classified with the state before the step: see _Tiers


def _reputation_props(key: Key) -> list[str]:
    return ["REP-1", "REP-2"]


# --- the engine -----------------------------------------------------------------------------------


def explore(walk: Walk) -> dict[Key, list[Command]]:
    """Run the walk; the first history (cut at that step) reaching each coverage key."""
    found: dict[Key, list[Command]] = {}
    factory = ADAPTERS[walk.layer]

    @settings(
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=walk.examples,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        layer: Layer = factory()
        layer.reset(wire(walk.params), wire(walk.setup))
        mem = Memory({}, [])
        state = wire(getattr(layer, "_state")())  # noqa: B009
        history: list[Command] = []
        n = data.draw(st.integers(4, walk.steps))
        for _ in range(n):
            cmd = wire(walk.draw(data, mem, state))
            obs = wire(layer.step(cmd))
            history.append(cmd)
            keys = _step_keys(walk, cmd, state, obs)
            for key in keys:
                if key not in found or len(history) < len(found[key]):
                    found[key] = list(history)  # the shortest history, first among equals
            state = obs["state"]

    run()
    return {key: shrink(walk, key, history) for key, history in found.items()}


def _step_keys(walk: Walk, command: Command, before: Any, obs: Mapping[str, Any]) -> list[Key]:
    if walk.layer == "reputation":
        return _tier_keys(before, obs["state"])
    return walk.keys(command, obs)


def reaches(walk: Walk, history: Sequence[Command], key: Key) -> bool:
    """Does replaying ``history`` reach ``key`` at its last step?"""
    layer = ADAPTERS[walk.layer]()
    layer.reset(wire(walk.params), wire(walk.setup))
    state = wire(getattr(layer, "_state")())  # noqa: B009
    keys: list[Key] = []
    for cmd in history:
        obs = wire(layer.step(cmd))
        keys = _step_keys(walk, cmd, state, obs)
        state = obs["state"]
    return key in keys


def shrink(walk: Walk, key: Key, history: list[Command]) -> list[Command]:
    """Drop every step (last to first, one pass) whose removal still reaches ``key`` at
    the end: the vector shows what it is named for, and little else."""
    out = list(history)
    for i in range(len(out) - 2, -1, -1):
        candidate = out[:i] + out[i + 1 :]
        if reaches(walk, candidate, key):
            out = candidate
    return out


def _tier_keys(before: Any, after: Any) -> list[Key]:
    keys: list[Key] = []
    for a, rec in after["agents"].items():
        old = before["agents"].get(a)
        if old is not None and old["tier"] != rec["tier"]:
            keys.append(("tier", str(old["tier"]), str(rec["tier"])))
        if old is not None and old["weight_micro"] < rec["weight_micro"]:
            keys.append(("weight", "rises"))
        if old is not None and old["weight_micro"] > rec["weight_micro"]:
            keys.append(("weight", "falls"))
    return keys


def _slug(key: Key) -> str:
    return slug(*key)


def _vectors(walk: Walk, found: Mapping[Key, list[Command]]) -> list[dict[str, Any]]:
    by_history: dict[str, list[Key]] = {}
    histories: dict[str, list[Command]] = {}
    for key in sorted(found):
        h = found[key]
        sig = repr(h)
        by_history.setdefault(sig, []).append(key)
        histories[sig] = h
    out = []
    for sig, keys in sorted(by_history.items(), key=lambda kv: kv[1][0]):
        history = histories[sig]
        last = history[-1]
        action = last.get("op") if isinstance(last, dict) else None
        if not isinstance(action, str) or action not in _ACTIONS[walk.layer]:
            raise GenerationError(f"{walk.layer}: a walk ends in a command without an op")
        name = "walk-" + _slug(keys[0])
        shown = ", ".join("/".join(k) for k in keys)
        props = sorted({p for k in keys for p in walk.properties(k)})
        r = Recorder(
            walk.layer,
            action,
            name,
            f"The shortest history a random walk found that reaches {shown}, shrunk to the "
            "steps it needs.",
            props,
            SOURCE,
            dict(walk.params),
            dict(walk.setup),
        )
        for cmd in history:
            r.do(cmd, expect=None)
        out.append(r.vector())
    return out


def _actions(layer: str) -> frozenset[str]:
    return frozenset(ADAPTER_CLASSES[layer].ops)


_ACTIONS: Final[dict[str, frozenset[str]]] = {
    name: _actions(name) for name in ("lifecycle", "community", "sanctions", "reputation")
}

_LC_AGENTS: Final = tuple(a["id"] for a in WORLD)
_CM_AGENTS: Final = tuple(m["id"] for m in MEMBERS)

WALKS: Final[tuple[Walk, ...]] = (
    Walk(
        "lifecycle",
        {**LC_PARAMS, "min_active_agents": 6, "max_disputes": 1, "cooldown": 1},
        {"agents": WORLD},
        _lifecycle_draw(_LC_AGENTS, community=False),
        _lifecycle_keys,
        _lifecycle_props,
        steps=30,
        examples=300,
    ),
    Walk(
        "community",
        {**CM_PARAMS, "min_active_agents": 6, "cooldown": 1},
        {"members": MEMBERS},
        _lifecycle_draw(_CM_AGENTS, community=True),
        _lifecycle_keys,
        _lifecycle_props,
        steps=30,
        examples=200,
    ),
    Walk(
        "sanctions",
        {"sanction_window": 6, "T_susp": 3, "T_quarantine": 3},
        {"unrepaired": ["bob"]},
        _sanctions_draw,
        _sanctions_keys,
        _sanctions_props,
        steps=30,
        examples=100,
    ),
    Walk(
        "reputation",
        {"tier1_rounds": 2, "farm_window": 3, "delta": 0.1},
        {"pretrusted": ["a1"]},
        _reputation_draw,
        _reputation_keys,
        _reputation_props,
        steps=30,
        examples=100,
    ),
)


def build_walks() -> list[dict[str, Any]]:
    """Every walk's vectors, in walk order."""
    out: list[dict[str, Any]] = []
    for walk in WALKS:
        out += _vectors(walk, explore(walk))
    return out
