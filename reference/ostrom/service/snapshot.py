"""The gate's whole state as JSON, and back: the node's snapshots (not pickle).

A snapshot must restore *everything* a later command can read — the orchestrator's
artifacts, ballots and counters, the reputation book's evidence, tiers and cached
global trust, the sanction book's windows, the Community's pending arbitrations, the
gate's keys and seqs — or a node restarted from it would diverge from one that never
stopped.  The protocol classes have no serializer, so this module walks their instance
attributes with a tagged JSON encoding:

* JSON scalars as themselves; a float as ``{"$f": repr}`` (exact, and inf/nan too);
* ``{"$list"|"$tuple"|"$set"|"$frozenset": [...]}``, ``{"$dict": [[k, v], ...]}``
  (insertion order kept: the core iterates some dicts in it), ``{"$deque": [...],
  "maxlen": n}``, ``{"$array": [...]}`` (a float64 NumPy vector);
* ``{"$enum": name, "v": value}`` and ``{"$obj": name, "a": {attr: ...}}`` for the classes
  of ``_CLASSES`` only: a snapshot names classes from this allow-list or it does not load
  (hostile file bytes can build nothing else, unlike pickle).

What is not state is not written: the parameters and the founders (the database header
gives them), the ``transitions`` machine, bound methods and callbacks.  ``restore``
builds a fresh gate from the header and writes the data attributes into it, re-adding
each artifact to the machine in its state.  Every other attribute that is callable is
an error (``CodecError``) so a new field that cannot be captured is noticed, not lost.
property_tests/service/test_service_snapshot.py checks restore-and-continue equals never stopped.
"""

from __future__ import annotations

import gc
import math
from collections import deque
from enum import Enum
from typing import Any, Final

import numpy as np

from ostrom.protocol import agents, orchestrator, reputation, sanctions, voting
from ostrom.protocol.community import Community
from ostrom.protocol.params import Params
from ostrom.service.gate import Gate, Setup

__all__ = ["OLDER_FORMATS", "CodecError", "decode", "encode", "older_format", "restore", "snapshot"]


class CodecError(ValueError):
    """A state that cannot be encoded, or a document that is not a snapshot."""


_CLASS_LIST: Final[tuple[type, ...]] = (
    orchestrator.Artifact,
    voting.Ballot,
    voting.Reveal,
    voting.Tally,
    agents.Agent,
    reputation.Beta,
    reputation.EigenTrustResult,
    reputation.TierState,
    reputation.Evidence,
    *reputation.STATE_CLASSES,
    sanctions.AgentRecord,
)
_ENUM_LIST: Final[tuple[type[Enum], ...]] = (
    agents.Sanction,
    sanctions.Violation,
    voting.BallotKind,
    voting.Phase,
)
#: The only classes a snapshot may name.
_CLASSES: Final[dict[str, type]] = {c.__qualname__: c for c in _CLASS_LIST}
_ENUMS: Final[dict[str, type[Enum]]] = {c.__qualname__: c for c in _ENUM_LIST}

#: Attributes that are not state: rebuilt from the header (or the code) on restore.
_SKIP: Final[dict[type, frozenset[str]]] = {
    Community: frozenset({"params", "_truth", "orchestrator", "reputation", "sanctions"}),
    orchestrator.Orchestrator: frozenset({"params", "_machine", "_dispatch"}),
    reputation.ReputationBook: frozenset({"params"}),
    sanctions.SanctionBook: frozenset({"params", "_repair_check"}),
    # what the transitions machine binds to each model: re-bound by add_model on restore
    orchestrator.Artifact: frozenset({"trigger", "may_trigger"}),
}

#: The format of the snapshots this version writes.  Bumped when the state's layout
#: changes (2: the reputation book's lazy tick keeps new attributes): a snapshot of an
#: older format does not restore, and a node replays past it (node.py: replay).
_FORMAT: Final = "ostrom-snapshot/2"
#: The formats earlier versions wrote: skipped on open, compared by their public state
#: only under ``--verify`` (the public state's layout is the protocol's, not the code's).
OLDER_FORMATS: Final = frozenset({"ostrom-snapshot/1"})


def older_format(doc: Any) -> bool:
    """True if ``doc`` (a snapshot row's ``full`` part) was written by an earlier version."""
    return isinstance(doc, dict) and doc.get("format") in OLDER_FORMATS


# --- encoding -------------------------------------------------------------------------------


def encode(value: Any) -> Any:
    """The tagged JSON of ``value`` (``CodecError`` for what it cannot hold).

    Dispatched on the exact type (a snapshot walks every artifact and agent: an
    ``isinstance`` chain per value made it the node's costliest step); a value of any
    other type — a subclass, a class off the allow-list — takes ``_encode_other``."""
    f = _BY_TYPE.get(type(value))
    return f(value) if f is not None else _encode_other(value)


def _same(value: Any) -> Any:
    return value


def _enum(value: Enum) -> dict[str, Any]:
    return {"$enum": type(value).__qualname__, "v": value.value}


def _obj(value: Any) -> dict[str, Any]:
    return {"$obj": type(value).__qualname__, "a": _attrs(value)}


def _set(value: set[Any] | frozenset[Any]) -> dict[str, Any]:
    items = sorted((encode(v) for v in value), key=repr)
    return {"$frozenset" if isinstance(value, frozenset) else "$set": items}


def _array(value: Any) -> dict[str, Any]:
    if value.dtype != np.float64 or value.ndim != 1:
        raise CodecError(f"array of {value.dtype}, ndim {value.ndim}: only float64 vectors")
    return {"$array": [repr(float(x)) for x in value]}


_BY_TYPE: Final[dict[type, Any]] = {
    type(None): _same,
    bool: _same,
    str: _same,
    int: _same,
    float: lambda v: {"$f": repr(v)},
    list: lambda v: {"$list": [encode(x) for x in v]},
    tuple: lambda v: {"$tuple": [encode(x) for x in v]},
    set: _set,
    frozenset: _set,
    dict: lambda v: {"$dict": [[encode(k), encode(x)] for k, x in v.items()]},
    deque: lambda v: {"$deque": [encode(x) for x in v], "maxlen": v.maxlen},
    np.ndarray: _array,
    **{cls: _enum for cls in _ENUMS.values()},
    **{cls: _obj for cls in _CLASSES.values()},
}


def _encode_other(value: Any) -> Any:
    """``encode`` for a type outside ``_BY_TYPE``: subclasses of the builtins as their base
    (what ``isinstance`` would say), anything else a ``CodecError``."""
    if isinstance(value, Enum):  # first: a StrEnum is a str too
        raise CodecError(f"enum {type(value).__qualname__} is not in the snapshot allow-list")
    for base in (bool, str, int, float, list, tuple, frozenset, set, dict, deque, np.ndarray):
        if isinstance(value, base):
            return _BY_TYPE[base](value)
    name = type(value).__qualname__
    raise CodecError(f"{type(value).__module__}.{name} is not in the snapshot allow-list")


def _attrs(obj: Any) -> dict[str, Any]:
    skip = _SKIP.get(type(obj), frozenset())
    out: dict[str, Any] = {}
    for k, v in vars(obj).items():
        if k in skip:
            continue
        if callable(v) and not isinstance(v, type):
            raise CodecError(f"{type(obj).__qualname__}.{k} is callable: not state, not skipped")
        out[k] = encode(v)
    return out


def _gate_state(gate: Gate) -> dict[str, Any]:
    """The gate's own state: keys and seqs, and the retired keys and revocations once
    there are any (KEY-1, KEY-2; absent, the snapshot is the one written before key
    rotation existed, so such a snapshot is still this format)."""
    out = {"keys": encode(gate._keys), "last": encode(gate._last)}
    if gate._retired:
        out["retired"] = encode(gate._retired)
    if gate._revoked:
        out["revoked"] = encode(gate._revoked)
    return out


def snapshot(gate: Gate) -> dict[str, Any]:
    """The gate's whole state (``restore`` inverts it, given the same header).

    The cyclic garbage collector is paused during the walk: it builds one small object
    per value of the state, and each collection it would trigger scans the whole heap —
    which holds that state — so a snapshot's cost grew with the square of the state."""
    c = gate.community
    paused = gc.isenabled()
    gc.disable()
    try:
        return {
            "format": _FORMAT,
            "community": _attrs(c),
            "orchestrator": _attrs(c.orchestrator),
            "reputation": _attrs(c.reputation),
            "sanctions": _attrs(c.sanctions),
            "gate": _gate_state(gate),
        }
    finally:
        if paused:
            gc.enable()


# --- decoding -------------------------------------------------------------------------------


def _float(text: Any) -> float:
    if not isinstance(text, str) or len(text) > 40:
        raise CodecError("a float is its repr")
    v = float(text)
    if repr(v) != text and not math.isnan(v):
        raise CodecError(f"{text!r} is not a float's repr")
    return v


def decode(doc: Any, depth: int = 0) -> Any:
    """Inverse of ``encode``; anything else is ``CodecError`` (never another exception)."""
    if depth > 64:
        raise CodecError("nested too deep")
    if doc is None or (isinstance(doc, bool | str | int) and not isinstance(doc, float)):
        return doc
    if not isinstance(doc, dict) or len(doc) not in (1, 2):
        raise CodecError(f"not a snapshot value: {str(doc)[:80]}")
    d = depth + 1
    try:
        if set(doc) == {"$f"}:
            return _float(doc["$f"])
        if set(doc) == {"$list"}:
            return [decode(v, d) for v in _seq(doc["$list"])]
        if set(doc) == {"$tuple"}:
            return tuple(decode(v, d) for v in _seq(doc["$tuple"]))
        if set(doc) == {"$set"}:
            return {decode(v, d) for v in _seq(doc["$set"])}
        if set(doc) == {"$frozenset"}:
            return frozenset(decode(v, d) for v in _seq(doc["$frozenset"]))
        if set(doc) == {"$dict"}:
            pairs = [_seq(p) for p in _seq(doc["$dict"])]
            if any(len(p) != 2 for p in pairs):
                raise CodecError("a dict is a list of [key, value] pairs")
            return {decode(k, d): decode(v, d) for k, v in pairs}
        if set(doc) == {"$deque", "maxlen"}:
            maxlen = doc["maxlen"]
            if maxlen is not None and (not isinstance(maxlen, int) or maxlen < 0):
                raise CodecError("a deque's maxlen is a non-negative integer or null")
            return deque((decode(v, d) for v in _seq(doc["$deque"])), maxlen=maxlen)
        if set(doc) == {"$array"}:
            return np.array([_float(x) for x in _seq(doc["$array"])], dtype=np.float64)
        if set(doc) == {"$enum", "v"}:
            cls = _ENUMS.get(doc["$enum"]) if isinstance(doc["$enum"], str) else None
            if cls is None:
                raise CodecError(f"enum {str(doc['$enum'])[:40]} is not in the allow-list")
            return cls(doc["v"])
        if set(doc) == {"$obj", "a"}:
            name = doc["$obj"]
            ocls = _CLASSES.get(name) if isinstance(name, str) else None
            if ocls is None:
                raise CodecError(f"class {str(name)[:40]} is not in the allow-list")
            obj: Any = object.__new__(ocls)
            _fill(obj, doc["a"], d)
            return obj
    except (TypeError, ValueError) as exc:
        if isinstance(exc, CodecError):
            raise
        raise CodecError(str(exc)) from None
    raise CodecError(f"unknown tag(s) {sorted(doc)[:3]}")


def _seq(v: Any) -> list[Any]:
    if not isinstance(v, list):
        raise CodecError("expected a list")
    return v


def _fill(obj: Any, attrs: Any, depth: int = 0) -> None:
    """Set ``obj``'s attributes from an encoded ``{name: value}`` (frozen dataclasses too)."""
    if not isinstance(attrs, dict):
        raise CodecError("attributes are an object")
    expected = _fields(type(obj))
    if expected is not None and set(attrs) != expected:
        raise CodecError(f"{type(obj).__qualname__}: attributes {sorted(attrs)[:5]} ...")
    for k, v in attrs.items():
        if not isinstance(k, str) or k.startswith("__"):
            raise CodecError("attribute names are plain strings")
        object.__setattr__(obj, k, decode(v, depth))


def _fields(cls: type) -> set[str] | None:
    import dataclasses

    if dataclasses.is_dataclass(cls):
        return {f.name for f in dataclasses.fields(cls)}
    return None


def restore(params: Params, setup: Setup, doc: Any) -> Gate:
    """A gate built from the header, then given the snapshot's state (``CodecError`` if
    ``doc`` is not one, or names attributes the fresh objects do not have)."""
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
        raise CodecError(f"not an {_FORMAT} document")
    want = {"format", "community", "orchestrator", "reputation", "sanctions", "gate"}
    if set(doc) != want:
        raise CodecError(f"a snapshot has exactly {sorted(want)}")
    gate = Gate(params, setup)
    c = gate.community
    for obj, key in (
        (c, "community"),
        (c.orchestrator, "orchestrator"),
        (c.reputation, "reputation"),
        (c.sanctions, "sanctions"),
    ):
        attrs = doc[key]
        if not isinstance(attrs, dict):
            raise CodecError(f"{key}: attributes are an object")
        known = set(vars(obj)) - _SKIP.get(type(obj), frozenset())
        if set(attrs) != known:
            raise CodecError(f"{key}: attributes differ from this reference's")
        _fill(obj, attrs)
    orch = c.orchestrator
    arts = vars(orch)["_artifacts"]
    if not isinstance(arts, dict) or not all(
        isinstance(a, orchestrator.Artifact) for a in arts.values()
    ):
        raise CodecError("orchestrator._artifacts holds artifacts")
    machine = vars(orch)["_machine"]
    for art in arts.values():
        state = vars(art).get("state")
        if not isinstance(state, str) or state not in machine.states:
            raise CodecError(f"artifact state {str(state)[:40]!r}")
        machine.add_model(art, initial=state)
    g = doc["gate"]
    if not isinstance(g, dict) or not {"keys", "last"} <= set(g) <= _GATE_KEYS:
        raise CodecError("gate: {keys, last[, retired][, revoked]}")
    keys, last = decode(g["keys"]), decode(g["last"])
    retired = decode(g["retired"]) if "retired" in g else {}
    revoked = decode(g["revoked"]) if "revoked" in g else set()
    if not isinstance(keys, dict) or not isinstance(last, dict):
        raise CodecError("gate keys and seqs are dicts")
    if not isinstance(retired, dict) or not all(
        isinstance(v, list) and all(isinstance(k, str) for k in v) for v in retired.values()
    ):
        raise CodecError("gate retired keys: a dict of lists of keys")
    if not isinstance(revoked, set) or not all(isinstance(a, str) for a in revoked):
        raise CodecError("gate revoked: a set of agents")
    gate._keys = keys
    gate._last = last
    gate._retired = retired
    gate._revoked = revoked
    return gate


#: The keys of a snapshot's gate state (``_gate_state``).
_GATE_KEYS: Final = frozenset({"keys", "last", "retired", "revoked"})
