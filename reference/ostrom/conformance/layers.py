"""The reference adapters: one ``layer.Layer`` per layer of the conformance suite.

Each adapter wraps one reference object behind ``reset``/``step`` (docs/conformance.md,
"Layers" and the per-layer tables).  The driver (``python -m ostrom.conformance.driver``), the
vector generator and the replay of committed vectors all go through these adapters, so what the
suite expects is exactly what they observe.

Rules every adapter keeps:

* ``reset(params, setup)`` builds a fresh instance; ``params`` holds only non-default
  parameters (``Params.from_mapping``); a bad parameter or setup raises ``ValueError``
  (the driver answers ``{"type": "error"}``);
* ``step(command)`` never raises for a bad command: a refusal is a ``result`` code
  (``invalid_input``, ``unknown_agent``, ...) with ``state`` as it is;
* observations are JSON-clean (lists, not tuples; strings, not enums; no NaN) and
  deterministic (every mapping is built in sorted order).

The adapters take the class they wrap as an argument, so a mutant
(``ostrom.conformance.mutants``) is a subclass with one bug, wrapped the same way.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Final

from ostrom.conformance.layer import Layer, LayerFactory, Observation
from ostrom.protocol.agents import MAX_TIER, MICRO, Agent, Sanction
from ostrom.protocol.commands import OPS as ORCHESTRATOR_OPS
from ostrom.protocol.commands import is_finite, is_id, is_int, is_text
from ostrom.protocol.community import Community, Member
from ostrom.protocol.encoding import is_hex64
from ostrom.protocol.errors import ErrorCode
from ostrom.protocol.forgetting import RULE, ForgetRule, decay, forget_confidence_micro, keep_score
from ostrom.protocol.forgetting import decide as forget_decide
from ostrom.protocol.lifecycle import STATES
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import ParamError, Params
from ostrom.protocol.reputation import FEEDBACK_MODES, Beta, ReputationBook
from ostrom.protocol.sanctions import SanctionBook, Violation
from ostrom.protocol.voting import (
    ALL_VOTES,
    Tally,
    commitment,
    dispute_verdict,
    review_verdict,
    select_reviewers,
)

__all__ = [
    "ADAPTERS",
    "ADAPTER_CLASSES",
    "CommunityLayer",
    "ForgettingLayer",
    "LifecycleLayer",
    "ReputationLayer",
    "SanctionsLayer",
    "VotingLayer",
    "clean",
    "pbft_available",
]

INVALID: Final = ErrorCode.INVALID_INPUT.value


class Invalid(Exception):
    """A command fails validation: the step's result is ``code``, nothing changes."""

    def __init__(self, code: ErrorCode = ErrorCode.INVALID_INPUT, detail: str = "") -> None:
        super().__init__(detail or code.value)
        self.code = code


# --- JSON cleanliness ---------------------------------------------------------------------


def clean(value: Any) -> Any:
    """A JSON-ready deep copy: tuples/sets -> lists (sets sorted), enums -> values,
    numpy scalars -> Python numbers, mapping keys -> str.  NaN and infinities are refused
    (JSON has no spelling for them)."""
    if isinstance(value, Enum):
        return clean(value.value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"observation holds a non-finite number {value!r}")
        return float(value)
    if isinstance(value, Mapping):
        return {str(clean(k)): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    if isinstance(value, set | frozenset):
        return [clean(v) for v in sorted(value)]
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return clean(item())
    raise TypeError(f"not JSON-ready: {value!r}")


def observation(result: str, events: Sequence[Mapping[str, Any]], state: Any) -> Observation:
    """An observation, cleaned."""
    return {"result": result, "events": clean(list(events)), "state": clean(state)}


def build_params(params: Mapping[str, Any]) -> Params:
    """``Params.from_mapping`` with the error a driver reports (``ValueError``)."""
    if not isinstance(params, Mapping):
        raise ValueError("params must be an object")
    try:
        return Params.from_mapping(params)
    except ParamError as exc:
        raise ValueError(f"bad params: {exc}") from exc


# --- argument checks (protocol/commands.py: one place, so every layer spells invalid_input
# the same) ------------------------------------------------------------------------------


def _fields(
    command: Mapping[str, Any], required: Mapping[str, Callable[[object], bool]], optional: Any = ()
) -> dict[str, Any]:
    """Check ``command`` has exactly the required keys (plus any optional ones, a mapping of
    the same kind) and every value passes its check; return the fields without ``op``."""
    opt: Mapping[str, Callable[[object], bool]] = dict(optional)
    out: dict[str, Any] = {}
    for key, value in command.items():
        if key == "op":
            continue
        check = required.get(key) or opt.get(key)
        if check is None:
            raise Invalid(detail=f"unexpected field {key!r}")
        if not check(value):
            raise Invalid(detail=f"bad {key}: {value!r}")
        out[key] = value
    missing = [k for k in required if k not in out]
    if missing:
        raise Invalid(detail=f"missing {', '.join(missing)}")
    return out


def _op(command: object, ops: Sequence[str]) -> tuple[str, Mapping[str, Any]]:
    if not isinstance(command, Mapping):
        raise Invalid(detail="command is not an object")
    op = command.get("op")
    if not isinstance(op, str) or op not in ops:
        raise Invalid(detail=f"unknown op {op!r}")
    return op, command


def _list_of(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _micro_weight(v: object) -> bool:
    return is_int(v) and v >= 0  # type: ignore[operator]


# --- the layers -----------------------------------------------------------------------------


class _Base:
    """What every adapter shares: the name, the op list, the error codes it can answer."""

    name: str
    #: every command op of the layer (the vectors' ``action`` folders)
    ops: ClassVar[tuple[str, ...]]
    #: every result code other than ``ok`` that the layer can answer
    errors: ClassVar[tuple[str, ...]]
    params: Params

    def step(self, command: Mapping[str, Any]) -> Observation:
        try:
            op, cmd = _op(command, self.ops)
            return self._step(op, cmd)
        except Invalid as exc:
            return observation(exc.code.value, [], self._state())

    def _step(self, op: str, command: Mapping[str, Any]) -> Observation:  # pragma: no cover
        raise NotImplementedError

    def _state(self) -> Any:
        return None


class LifecycleLayer(_Base):
    """``lifecycle``: the orchestrator; state = ``Orchestrator.public_state()``.

    setup: ``{"agents": [{"id", "tier", "weight"?, "reputation"?, "sanction"?,
    "subscriptions"?}]}`` — registry entries, entered as ``set_agent`` would.
    """

    name = "lifecycle"
    ops = ORCHESTRATOR_OPS
    errors = tuple(c.value for c in ErrorCode)

    def __init__(self, orchestrator_cls: type[Orchestrator] = Orchestrator) -> None:
        self._cls = orchestrator_cls
        self.params = Params()
        self.orchestrator = orchestrator_cls(self.params)

    def reset(self, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        self.params = build_params(params)
        _only(setup, {"agents"})
        orch = self._cls(self.params)
        for entry in _entries(setup.get("agents", []), "agents"):
            cmd = {"op": "set_agent", **{k: v for k, v in entry.items() if k != "id"}}
            cmd["agent"] = entry.get("id")
            res = orch.apply(cmd)["result"]
            if res != "ok":
                raise ValueError(f"setup: bad agent entry {entry!r} ({res})")
        self.orchestrator = orch

    def step(self, command: Mapping[str, Any]) -> Observation:
        obs = self.orchestrator.apply(command)
        return observation(obs["result"], obs["events"], self._state())

    def _state(self) -> Any:
        return self.orchestrator.public_state()


def _only(setup: Mapping[str, Any], keys: set[str]) -> None:
    if not isinstance(setup, Mapping):
        raise ValueError("setup must be an object")
    extra = sorted(set(setup) - keys)
    if extra:
        raise ValueError(f"setup: unknown key(s) {', '.join(extra)}")


def _entries(value: object, what: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(e, Mapping) for e in value):
        raise ValueError(f"setup: {what} must be a list of objects")
    return list(value)


class VotingLayer(_Base):
    """``voting``: the pure functions of ``ostrom.protocol.voting``; state = the value returned.

    Thresholds and weights are integers in micro-units (``round(x · 10^6)``), as the
    orchestrator uses them.  No setup; params are not read (every argument is explicit).
    """

    name = "voting"
    ops = ("commitment", "select_reviewers", "review_verdict", "dispute_verdict")
    errors = (INVALID,)

    def __init__(self) -> None:
        self.params = Params()

    def reset(self, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        self.params = build_params(params)
        _only(setup, set())

    def _step(self, op: str, command: Mapping[str, Any]) -> Observation:
        nat = lambda v: is_int(v) and v >= 0  # noqa: E731
        pos = lambda v: is_int(v) and v >= 1  # noqa: E731
        share = lambda v: is_int(v) and 0 <= v <= MICRO  # noqa: E731
        if op == "commitment":
            f = _fields(
                command,
                {
                    "voter": is_id,
                    "artifact": is_id,
                    "round": nat,
                    "vote": lambda v: v in ALL_VOTES,
                    "reason": is_text,
                    "salt": is_hex64,
                },
            )
            value: Any = commitment(
                f["voter"], f["artifact"], f["round"], f["vote"], f["reason"], f["salt"]
            )
        elif op == "select_reviewers":
            f = _fields(
                command,
                {
                    "seed": nat,
                    "artifact": is_id,
                    "round": nat,
                    "eligible": _list_of(is_id),
                    "k": nat,
                },
                {"excluded": _list_of(is_id)},
            )
            if len(set(f["eligible"])) != len(f["eligible"]):
                raise Invalid(detail="eligible agents repeat")
            # the sortition indexes the eligible agents sorted by code point: any order given
            value = list(
                select_reviewers(
                    f["seed"],
                    f["artifact"],
                    f["round"],
                    sorted(f["eligible"]),
                    frozenset(f.get("excluded", ())),
                    f["k"],
                )
            )
        elif op == "review_verdict":
            f = _fields(
                command,
                {
                    "accept": _list_of(_micro_weight),
                    "reject": _list_of(_micro_weight),
                    "quorum": pos,
                    "tau_accept": share,
                    "tau_reject": share,
                    "min_side": pos,
                },
            )
            tally = Tally.of(f["accept"], f["reject"])
            value = review_verdict(
                tally, f["quorum"], f["tau_accept"], f["tau_reject"], f["min_side"]
            )
        else:  # dispute_verdict
            f = _fields(
                command,
                {
                    "retract": _list_of(_micro_weight),
                    "keep": _list_of(_micro_weight),
                    "q_dispute": pos,
                    "tau_retract": share,
                    "min_side": pos,
                },
            )
            tally = Tally.of(f["retract"], f["keep"])
            value = dispute_verdict(tally, f["q_dispute"], f["tau_retract"], f["min_side"])
        return observation("ok", [], value)


def _prior(v: object) -> bool:
    return (
        isinstance(v, Mapping)
        and set(v) == {"mean", "total"}
        and is_finite(v["mean"])
        and is_finite(v["total"])
    )


class ReputationLayer(_Base):
    """``reputation``: a ``ReputationBook``; state = round, per-agent E, total evidence
    weight, weight (micro) and tier fixed at the last tick, global trust.

    setup: ``{"pretrusted": [ids]?, "feedback": "decision" | "truth"?}``.
    """

    name = "reputation"
    ops = ("add", "observe", "record_votes", "tick")
    errors = (INVALID, ErrorCode.UNKNOWN_AGENT.value, ErrorCode.DUPLICATE.value)

    def __init__(self, book_cls: type[ReputationBook] = ReputationBook) -> None:
        self._cls = book_cls
        self.params = Params()
        self.book = book_cls(self.params)

    def reset(self, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        self.params = build_params(params)
        _only(setup, {"pretrusted", "feedback"})
        pretrusted = setup.get("pretrusted", [])
        feedback = setup.get("feedback", "decision")
        if not _list_of(is_id)(pretrusted):
            raise ValueError("setup: pretrusted must be a list of agent ids")
        if feedback not in FEEDBACK_MODES:
            raise ValueError(f"setup: feedback must be one of {FEEDBACK_MODES}")
        self.book = self._cls(self.params, pretrusted=pretrusted, feedback=feedback)

    def _known(self, agent: str) -> None:
        if agent not in self.book.agents:
            raise Invalid(ErrorCode.UNKNOWN_AGENT, agent)

    def _step(self, op: str, command: Mapping[str, Any]) -> Observation:
        book = self.book
        events: list[dict[str, Any]] = []
        unit = lambda v: is_finite(v) and v >= 0  # noqa: E731
        if op == "add":
            f = _fields(
                command,
                {"agent": is_id},
                {"tier": lambda v: is_int(v) and 0 <= v <= MAX_TIER, "prior": _prior},
            )
            prior = None
            if "prior" in f:
                try:
                    prior = Beta(float(f["prior"]["mean"]), float(f["prior"]["total"]))
                except ValueError as exc:
                    raise Invalid(detail=str(exc)) from exc
            if f["agent"] in book.agents:
                raise Invalid(ErrorCode.DUPLICATE, f["agent"])
            try:
                book.add(f["agent"], prior=prior, tier=f.get("tier", 0))
            except ValueError as exc:  # a founder's E below its tier's threshold
                raise Invalid(detail=str(exc)) from exc
        elif op == "observe":
            f = _fields(
                command,
                {"agent": is_id, "positive": lambda v: isinstance(v, bool)},
                {"weight": unit},
            )
            self._known(f["agent"])
            book.observe(f["agent"], f["positive"], float(f.get("weight", 1.0)))
        elif op == "record_votes":
            vote = lambda v: v is None or v in ALL_VOTES  # noqa: E731
            f = _fields(
                command,
                {
                    "votes": lambda v: (
                        isinstance(v, Mapping)
                        and all(is_id(k) and x in ALL_VOTES for k, x in v.items())
                    ),
                    "decision": vote,
                },
                {"truth": vote, "weight": unit},
            )
            for agent in sorted(f["votes"]):
                self._known(agent)
            applied = book.record_votes(
                dict(f["votes"]), f["decision"], f.get("truth"), float(f.get("weight", 1.0))
            )
            events = [{"event": "evidence", **ev.to_dict()} for ev in applied]
        else:  # tick
            _fields(command, {})
            book.tick()
        return observation("ok", events, self._state())

    def _state(self) -> Any:
        book = self.book
        trust = book.global_trust()
        return {
            "round": book.round,
            "agents": {
                a: {
                    "E": book.expected(a),
                    "total": book.beta(a).total,
                    "weight_micro": book.weight_micro(a),
                    "tier": book.tier(a),
                    "trust": trust[a],
                }
                for a in book.agents
            },
        }


class SanctionsLayer(_Base):
    """``sanctions``: a ``SanctionBook``; state = now and, per agent with a record, level,
    rank and the weighted window count (micro-units).

    setup: ``{"unrepaired": [ids]?}`` — agents whose repair check fails at the end of every
    quarantine period (everyone else passes it).
    """

    name = "sanctions"
    ops = ("record", "tick")
    errors = (INVALID,)

    def __init__(self, book_cls: type[SanctionBook] = SanctionBook) -> None:
        self._cls = book_cls
        self.params = Params()
        self.book = book_cls(self.params)

    def reset(self, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        self.params = build_params(params)
        _only(setup, {"unrepaired"})
        unrepaired = setup.get("unrepaired", [])
        if not _list_of(is_id)(unrepaired):
            raise ValueError("setup: unrepaired must be a list of agent ids")
        broken = frozenset(unrepaired)
        self.book = self._cls(self.params, lambda agent, _round: agent not in broken)

    def _step(self, op: str, command: Mapping[str, Any]) -> Observation:
        book = self.book
        nat = lambda v: is_int(v) and v >= 0  # noqa: E731
        if op == "record":
            kinds = {k.value for k in Violation}
            f = _fields(command, {"agent": is_id, "kind": lambda v: v in kinds}, {"round": nat})
            rnd = f.get("round", book.now)
            if rnd < book.now:
                raise Invalid(detail=f"round {rnd} is before now {book.now}")
            events = book.record(f["agent"], f["kind"], rnd)
        else:  # tick
            f = _fields(command, {}, {"round": nat})
            rnd = f.get("round", book.now + 1)
            if rnd <= book.now:
                raise Invalid(detail=f"round {rnd} is not after now {book.now}")
            events = book.tick(rnd)
        return observation("ok", events, self._state())

    def _state(self) -> Any:
        book = self.book
        return {
            "now": book.now,
            "agents": {
                a: {
                    "level": book.level(a).value,
                    "rank": book.rank(a),
                    "window_count": book.window_count(a),
                }
                for a in book.agents()
            },
        }


@dataclass(frozen=True)
class _ForgetArtifact:
    id: str
    state: str
    hidden: bool
    forget_votes: Mapping[str, int] = field(default_factory=dict)


def _forget_artifact(v: object) -> bool:
    if not isinstance(v, Mapping) or not {"id", "state"} <= set(v):
        return False
    if not set(v) <= {"id", "state", "hidden", "forget_votes"}:
        return False
    votes = v.get("forget_votes", {})
    return (
        is_id(v["id"])
        and v["state"] in STATES
        and isinstance(v.get("hidden", False), bool)
        and isinstance(votes, Mapping)
        and all(is_id(k) and is_int(c) and 0 <= c <= MICRO for k, c in votes.items())
    )


_SANCTION_NAMES: Final = frozenset(s.value for s in Sanction)


def _forget_agent(v: object) -> bool:
    if not isinstance(v, Mapping) or not {"id", "tier", "weight"} <= set(v):
        return False
    if not set(v) <= {"id", "tier", "weight", "sanction"}:
        return False
    return (
        is_id(v["id"])
        and is_int(v["tier"])
        and 0 <= v["tier"] <= MAX_TIER
        and is_finite(v["weight"])
        and v["weight"] >= 0
        and v.get("sanction", "none") in _SANCTION_NAMES
    )


class ForgettingLayer(_Base):
    """``forgetting``: the forget decision and the agent side's formulas; stateless.

    ``decide`` takes the artifacts (id, state, hidden, forget votes in micro-units) and the
    registry (id, tier, weight, sanction) and answers one decision per artifact, in the
    order given; ``decay``, ``keep_score`` and ``forget_confidence`` are the agent side
    under the layer's params.  No setup.
    """

    name = "forgetting"
    ops = ("decide", "decay", "keep_score", "forget_confidence")
    errors = (INVALID,)

    def __init__(self, rule: ForgetRule = RULE) -> None:
        self._rule = rule
        self.params = Params()

    def reset(self, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        self.params = build_params(params)
        _only(setup, set())

    def _step(self, op: str, command: Mapping[str, Any]) -> Observation:
        p = self.params
        nonneg = lambda v: is_finite(v) and v >= 0  # noqa: E731
        unit = lambda v: is_finite(v) and 0 <= v <= 1  # noqa: E731
        value: Any
        if op == "decide":
            f = _fields(
                command,
                {"artifacts": _list_of(_forget_artifact), "agents": _list_of(_forget_agent)},
                {"min_active": lambda v: is_int(v) and v >= 0},
            )
            ids = [a["id"] for a in f["agents"]]
            if len(set(ids)) != len(ids):
                raise Invalid(detail="agent ids repeat")
            arts = [
                _ForgetArtifact(
                    a["id"], a["state"], a.get("hidden", False), dict(a.get("forget_votes", {}))
                )
                for a in f["artifacts"]
            ]
            agents = [
                Agent(
                    a["id"], a["tier"], float(a["weight"]), 0.0, Sanction(a.get("sanction", "none"))
                )
                for a in f["agents"]
            ]
            decisions = forget_decide(
                arts, agents, p, self._rule, min_active=f.get("min_active", p.min_active_agents)
            )
            value = [
                {
                    "artifact": d.artifact,
                    "score_micro2": d.score,
                    "quorum_micro2": d.quorum,
                    "voters": d.voters,
                    "reached": d.reached,
                    "blocked": d.blocked,
                    "forget": d.forget,
                }
                for d in decisions
            ]
        elif op == "decay":
            f = _fields(command, {"elapsed": nonneg})
            value = decay(float(f["elapsed"]), p.decay_scales, p.decay_weights)
        elif op == "keep_score":
            f = _fields(command, {"decay": nonneg, "relevance": unit})
            value = keep_score(float(f["decay"]), float(f["relevance"]), p.omega_D, p.omega_R)
        else:  # forget_confidence
            f = _fields(command, {"keep": nonneg})
            value = forget_confidence_micro(float(f["keep"]), p.theta)
        return observation("ok", [], value)


def _member(entry: Mapping[str, Any]) -> Member:
    keys = {"id", "tier", "reputation", "evidence", "pretrusted", "subscriptions"}
    extra = sorted(set(entry) - keys)
    if extra:
        raise ValueError(f"setup: member has unknown key(s) {', '.join(extra)}")
    subs = entry.get("subscriptions", [])
    ok = (
        is_id(entry.get("id"))
        and is_int(entry.get("tier", 0))
        and 0 <= entry.get("tier", 0) <= MAX_TIER
        and is_finite(entry.get("reputation", 0.5))
        and is_finite(entry.get("evidence", 2.0))
        and isinstance(entry.get("pretrusted", False), bool)
        and _list_of(is_id)(subs)
    )
    if not ok:
        raise ValueError(f"setup: bad member {dict(entry)!r}")
    return Member(
        id=entry["id"],
        tier=entry.get("tier", 0),
        reputation=float(entry.get("reputation", 0.5)),
        evidence=float(entry.get("evidence", 2.0)),
        pretrusted=entry.get("pretrusted", False),
        subscriptions=frozenset(subs),
    )


class CommunityLayer(_Base):
    """``community``: orchestrator + reputation + sanctions with a derived registry;
    state = ``Community.public_state()`` (the artifacts and the registry).

    setup: ``{"members": [{"id", "tier"?, "reputation"?, "evidence"?, "pretrusted"?,
    "subscriptions"?}]}`` (``community.Member``; tier > 0 makes a founder).
    """

    name = "community"
    ops = (*(op for op in ORCHESTRATOR_OPS if op != "set_agent"), "join")
    errors = tuple(c.value for c in ErrorCode)

    def __init__(self, factory: Callable[..., Community] = Community) -> None:
        self._factory = factory
        self.params = Params()
        self.community = factory(self.params)

    def reset(self, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        self.params = build_params(params)
        _only(setup, {"members"})
        members = [_member(e) for e in _entries(setup.get("members", []), "members")]
        self.community = self._factory(self.params, members)

    def step(self, command: Mapping[str, Any]) -> Observation:
        obs = self.community.apply(command)
        return observation(obs["result"], obs["events"], self._state())

    def _state(self) -> Any:
        return self.community.public_state()


def _pbft_factory() -> Layer:
    module = importlib.import_module("ostrom.conformance.pbft_layer")
    layer: Layer = module.PBFTLayer()
    return layer


def pbft_available() -> bool:
    """Whether the PBFT replica adapter (``ostrom.conformance.pbft_layer``) exists."""
    return importlib.util.find_spec("ostrom.conformance.pbft_layer") is not None


def _adapters() -> dict[str, LayerFactory]:
    out: dict[str, LayerFactory] = {
        "lifecycle": LifecycleLayer,
        "voting": VotingLayer,
        "reputation": ReputationLayer,
        "sanctions": SanctionsLayer,
        "forgetting": ForgettingLayer,
        "community": CommunityLayer,
    }
    if pbft_available():
        out["pbft"] = _pbft_factory  # imported only when a pbft layer is built
    return out


#: layer name -> factory of its reference adapter, in ``LAYERS`` order.
ADAPTERS: Final[dict[str, LayerFactory]] = _adapters()

#: The adapters' classes (for docs and coverage: ``ops`` and ``errors`` of each layer).
ADAPTER_CLASSES: Final[dict[str, type[_Base]]] = {
    "lifecycle": LifecycleLayer,
    "voting": VotingLayer,
    "reputation": ReputationLayer,
    "sanctions": SanctionsLayer,
    "forgetting": ForgettingLayer,
    "community": CommunityLayer,
}
