"""Trace logs: the ``ostrom-trace/1`` and ``/2`` formats read, written and named for TLA+.

A log (docs/conformance.md "Trace logs") is a header line (format, layer, params, setup)
and one JSON line per step ({command, result, state, events?}); in ``ostrom-trace/2``
(``TRACE_DELTA_FORMAT``, what ``ostrom log export`` writes) a step carries ``delta``
instead of ``state``: the clock, and the artifacts and registry entries that differ from
the step before (the first step's against the empty state).  This module reads any
layer's file (``read_jsonl``, ``header_layer``), parses the lifecycle and community logs
(``TraceLog``), turns a conformance vector into the log a driver would write for it
(``vector_log``), and spells the log's ids as TLA+ strings (``Names``).  Every layer's
trace module builds on it; nothing here runs TLC.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ostrom.protocol.version import TRACE_DELTA_FORMAT, TRACE_FORMAT

__all__ = [
    "LOG_MODULE",
    "NONE",
    "TRACE_SPECS",
    "Names",
    "TraceLog",
    "UnusableLog",
    "header_layer",
    "log_from_vector",
    "log_lines",
    "parse_log",
    "read_jsonl",
    "read_log",
    "require_steps",
    "vector_log",
]

#: The TLA+ module a compiled lifecycle or sanctions log becomes.
LOG_MODULE: Final = "TraceLog"
#: The layers whose logs ``TraceLog`` holds, and the spec each is checked against.
TRACE_SPECS: Final = {
    "lifecycle": "spec/Lifecycle.tla",
    "community": "spec/CommunityTrace.tla (spec/Lifecycle.tla, spec/Sanctions.tla, tier rule)",
}
NONE: Final = "-"  # Lifecycle.tla's NoAgent / NoSlot; LifecycleTrace.tla's NoView


class UnusableLog(Exception):
    """The log cannot be read or cannot be expressed in the spec (exit 2)."""


@dataclass
class LogStep:
    """One logged step: the command as sent, its result, the public state after it.

    In a delta log (``TraceLog.delta``) ``state["artifacts"]`` holds only the artifacts
    the step changed; ``now`` and ``agents`` are whole (the registry object is shared
    with the step before when nothing in it changed).  The compiler needs no more: an
    artifact's view changes only where the artifact does (lifecycle.py: ``_views``)."""

    line: int  # 1-based line in the file
    command: Any
    result: str
    state: Mapping[str, Any]
    events: Sequence[Any] = ()


@dataclass
class TraceLog:
    """A whole log: header fields and steps (``name`` is how messages refer to it)."""

    name: str
    params: dict[str, Any]
    setup: dict[str, Any]
    steps: list[LogStep]
    layer: str = "lifecycle"  # or "community" (spec/CommunityTrace.tla)
    delta: bool = False  # TRACE_DELTA_FORMAT: a step's artifacts are the changed ones


def read_jsonl(path: Path) -> tuple[Any, list[Any], list[int]]:
    """A log file's header, its step objects and their line numbers (blank lines skipped);
    ``UnusableLog`` names the first problem.  Shared by every layer's trace module."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UnusableLog(f"{path}: cannot read: {exc}") from None
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines:
        raise UnusableLog(f"{path}: empty file (a header line is required)")
    docs: list[tuple[int, Any]] = []
    for n, ln in lines:
        try:
            docs.append((n, json.loads(ln, parse_constant=_no_constant)))
        except RecursionError:
            raise UnusableLog(f"{path}:{n}: nested too deeply") from None
        except ValueError as exc:
            raise UnusableLog(f"{path}:{n}: not JSON: {exc}") from None
    return docs[0][1], [d for _, d in docs[1:]], [k for k, _ in docs[1:]]


def require_steps(name: str, steps: Sequence[Any]) -> None:
    """``UnusableLog`` for a log with a header and no step: nothing to check, and
    "ACCEPTED" would say nothing (every layer's reader calls this after its header)."""
    if not steps:
        raise UnusableLog(f"{name}: only a header, no step to validate")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_log(path: Path) -> TraceLog:
    """Read an ostrom-trace/1 file; ``UnusableLog`` names the first problem."""
    header, steps, lines = read_jsonl(path)
    return parse_log(str(path), header, steps, lines)


def parse_log(
    name: str, header: Any, steps: Sequence[Any], lines: Sequence[int] | None = None
) -> TraceLog:
    """A log from its parsed header and step objects (``lines``: their line numbers)."""
    fmt = header.get("format") if isinstance(header, dict) else None
    if not isinstance(header, dict) or fmt not in (TRACE_FORMAT, TRACE_DELTA_FORMAT):
        raise UnusableLog(
            f"{name}:1: not an {TRACE_FORMAT} header (format field; {TRACE_DELTA_FORMAT}, "
            "states as deltas, is read too)"
        )
    layer = header.get("layer")
    if layer not in TRACE_SPECS:
        raise UnusableLog(
            f"{name}:1: layer {layer!r}: only lifecycle and community logs are validated "
            "here (spec/LifecycleTrace.tla, spec/CommunityTrace.tla)"
        )
    params, setup = header.get("params", {}), header.get("setup", {})
    if not isinstance(params, dict) or not isinstance(setup, dict):
        raise UnusableLog(f"{name}:1: params and setup must be objects")
    delta = fmt == TRACE_DELTA_FORMAT
    key = "delta" if delta else "state"
    agents: dict[str, Any] = {}
    out: list[LogStep] = []
    for i, doc in enumerate(steps):
        n = lines[i] if lines is not None else i + 2
        if not isinstance(doc, dict) or set(doc) - {"command", "result", key, "events"}:
            raise UnusableLog(f"{name}:{n}: a step is {{command, result, {key}}}")
        if "command" not in doc or not isinstance(doc.get("result"), str):
            raise UnusableLog(f"{name}:{n}: a step needs a command and a result string")
        state = doc.get(key)
        if not isinstance(state, dict) or not isinstance(state.get("artifacts"), dict):
            raise UnusableLog(f"{name}:{n}: the {key} must be a public state (now, artifacts)")
        if delta:
            moved = state.get("agents", {})
            if not isinstance(moved, dict):
                raise UnusableLog(f"{name}:{n}: the delta's agents must be an object")
            if moved:
                agents = {**agents, **moved}
            state = {**state, "agents": agents}
        events = doc.get("events") or []
        if not isinstance(events, list):
            raise UnusableLog(f"{name}:{n}: events must be a list")
        out.append(LogStep(n, doc["command"], doc["result"], state, events))
    return TraceLog(name, dict(params), dict(setup), out, str(layer), delta)


def vector_log(doc: Mapping[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A vector as a trace log's header and steps (its commands, results, events and
    expected states): what a driver running it with ``--log`` would write."""
    steps = [
        {
            "command": s["command"],
            "result": s["expect"]["result"],
            "state": s["expect"]["state"],
            "events": s["expect"].get("events", []),
        }
        for s in doc["steps"]
    ]
    header = {
        "format": TRACE_FORMAT,
        "layer": doc.get("layer"),
        "params": doc.get("params", {}),
        "setup": doc.get("setup", {}),
    }
    return header, steps


def log_from_vector(doc: Mapping[str, Any]) -> TraceLog:
    """The trace log of a lifecycle vector: its commands, results and expected states."""
    header, steps = vector_log(doc)
    return parse_log(str(doc.get("id", "vector")), header, steps)


def log_lines(log: TraceLog) -> list[str]:
    """``log`` as the JSON lines of a trace file (header first), in its own format."""
    header = {
        "format": TRACE_DELTA_FORMAT if log.delta else TRACE_FORMAT,
        "layer": log.layer,
        "params": log.params,
        "setup": log.setup,
    }
    out = [json.dumps(header, separators=(",", ":"))]
    agents: Mapping[str, Any] = {}
    for s in log.steps:
        step: dict[str, Any] = {"command": s.command, "result": s.result}
        if log.delta:
            now = s.state.get("agents", {})
            moved = {a: g for a, g in now.items() if agents.get(a) != g}
            step["delta"] = {**s.state, "agents": moved}
            agents = now
        else:
            step["state"] = s.state
        if s.events:
            step["events"] = list(s.events)
        out.append(json.dumps(step, separators=(",", ":")))
    return out


_SAFE_ID = re.compile(r"[A-Za-z0-9_.:/@+=-]+")


class Names:
    """Agent, artifact and slot ids as TLA+ strings: an id is kept if it is plain ASCII
    (``_SAFE_ID``) and not ``-`` (Lifecycle.tla's NoAgent/NoSlot), else aliased ``#k``
    (``#`` never occurs in a kept id).  ``back`` maps a spelling back to the id."""

    def __init__(self) -> None:
        self.to: dict[str, str] = {}
        self.back: dict[str, str] = {}

    def __call__(self, ident: str) -> str:
        got = self.to.get(ident)
        if got is not None:
            return got
        name = ident if _SAFE_ID.fullmatch(ident) and ident != NONE else f"#{len(self.to)}"
        self.to[ident] = name
        self.back[name] = ident
        return name

    def orig(self, name: Any) -> Any:
        return self.back.get(name, name) if isinstance(name, str) else name


def header_layer(path: Path) -> str | None:
    """The ``layer`` of a log's header line (None if it cannot be read)."""
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    header = json.loads(line)
                    layer = header.get("layer") if isinstance(header, dict) else None
                    return layer if isinstance(layer, str) else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return None
