"""Trace validation of the sanctions layer: a log checked against spec/Sanctions.tla.

``ostrom validate-trace FILE.jsonl`` dispatches here when the log's header says
``"layer": "sanctions"`` (``trace.LAYER_TRACES``).  As for the lifecycle (trace.py), the log
is compiled into a TLA+ module ``TraceLog`` (a sequence constant) that
``spec/SanctionsTrace.tla`` walks with a cursor; TLC follows the one behaviour of
Sanctions.tla the log allows, and the first step no behaviour gets past is the deepest
cursor reached.

The mapping (SanctionsTrace.tla's header says the same from the spec's side):

* parameters become Sanctions.tla's constants: ``sanction_window`` is W, ``sigma1..4``,
  ``T_susp``, ``T_quarantine`` as they are; ``urgent_penalty`` must be a whole number
  (the spec weighs every other kind 1; a fractional penalty is refused as unusable);
  MaxPerRound (a workload bound, not a rule) is the largest number of records of a log of
  the batch, so it never disables a Record;
* the repair check is the setup's: ``unrepaired`` agents fail every check, the others pass;
* ``record`` at round r (default: now) is r - now Ticks then Record; ``tick`` to round r
  (default: now + 1) is r - now Ticks (the round a command leaves out is taken from the
  logged clock before the step, which the spec has matched by then);
* a refused command changes nothing, and must be a refusal the reference is required to
  make: a malformed command (SanctionsLayer's checks), a record before now, a tick to a
  round not after now;
* each logged state becomes, per agent with a record, (level, rank, window_count in units
  of one violation): only the agents whose view changed are written per step (``delta``,
  ``gone``);
* logged events, if present, are compared with the events the spec's steps give.

Refused as inexpressible (exit 2, with the reason): a fractional ``urgent_penalty``, params
the reference refuses, an unknown setup key, a window above ``MAX_WINDOW`` rounds (TLC's
stack, see there) or more than ``MAX_TICKS`` rounds in one log (TLC takes one state per
round, about 1 ms each with W = 50).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ostrom import layout
from ostrom.protocol.agents import MICRO, micro
from ostrom.protocol.commands import checked_fields, is_id, is_int
from ostrom.protocol.params import ParamError, Params
from ostrom.protocol.sanctions import Violation
from ostrom.protocol.version import TRACE_FORMAT
from ostrom.verify.tlc.jar import TlcSetupError
from ostrom.verify.tlc.values import TlaFunction, TlaRecord, TlaSet, Value, function, record, tla
from ostrom.verify.trace.log import (
    LOG_MODULE,
    Names,
    UnusableLog,
    read_jsonl,
    require_steps,
    vector_log,
)
from ostrom.verify.trace.tlc import TlcResult, run_java_tlc
from ostrom.verify.trace.verdict import (
    Failure,
    Verdict,
    format_verdict,
    validate_batches,
    validate_file_with,
    validate_paths_with,
)

SPEC: Final = "spec/Sanctions.tla"
TRACE_MODULE: Final = "SanctionsTrace"
NONE: Final = "-"  # SanctionsTrace.tla's NoValue
KINDS: Final = frozenset(k.value for k in Violation)
#: The largest window the compiler accepts: Sanctions.tla's SumAges recurses once per age of
#: the window, and TLC's default Java stack overflows a little above 70 (measured).
MAX_WINDOW: Final = 64
#: The most rounds one log may advance: TLC takes one state per round.
MAX_TICKS: Final = 100_000
#: The field names of a logged agent and how a message spells them.
FIELDS: Final = ("level", "rank", "window_count")

__all__ = [
    "SanctionsLog",
    "UnusableLog",
    "format_verdict",
    "log_from_vector",
    "parse_log",
    "read_log",
    "validate_file",
    "validate_logs",
    "validate_paths",
]


# --- reading a log ------------------------------------------------------------------------------


@dataclass
class Step:
    """One logged step: the command as sent, its result, the state and events after it."""

    line: int
    command: Any
    result: str
    state: Any
    events: Any = None  # None: not logged


@dataclass
class SanctionsLog:
    """A whole sanctions log (``name`` is how messages refer to it)."""

    name: str
    params: dict[str, Any]
    setup: dict[str, Any]
    steps: list[Step]


def read_log(path: Path) -> SanctionsLog:
    """Read an ostrom-trace/1 sanctions log; ``UnusableLog`` names the first problem."""
    header, steps, lines = read_jsonl(path)
    return parse_log(str(path), header, steps, lines)


def parse_log(
    name: str, header: Any, steps: Sequence[Any], lines: Sequence[int] | None = None
) -> SanctionsLog:
    """A log from its parsed header and step objects (``lines``: their line numbers)."""
    if not isinstance(header, dict) or header.get("format") != TRACE_FORMAT:
        raise UnusableLog(f"{name}:1: not an {TRACE_FORMAT} header (format field)")
    if header.get("layer") != "sanctions":
        raise UnusableLog(
            f"{name}:1: layer {header.get('layer')!r}: this validator checks sanctions logs "
            f"({SPEC})"
        )
    params, setup = header.get("params", {}), header.get("setup", {})
    if not isinstance(params, dict) or not isinstance(setup, dict):
        raise UnusableLog(f"{name}:1: params and setup must be objects")
    out: list[Step] = []
    for i, doc in enumerate(steps):
        n = lines[i] if lines is not None else i + 2
        if not isinstance(doc, dict) or set(doc) - {"command", "result", "state", "events"}:
            raise UnusableLog(f"{name}:{n}: a step is {{command, result, state, events?}}")
        if "command" not in doc or not isinstance(doc.get("result"), str) or "state" not in doc:
            raise UnusableLog(f"{name}:{n}: a step needs a command, a result string and a state")
        out.append(Step(n, doc["command"], doc["result"], doc["state"], doc.get("events")))
    return SanctionsLog(name, dict(params), dict(setup), out)


def log_from_vector(doc: Mapping[str, Any]) -> SanctionsLog:
    """The trace log of a sanctions vector: its commands, results, events and states."""
    header, steps = vector_log(doc)
    return parse_log(str(doc.get("id", "vector")), header, steps)


def log_lines(log: SanctionsLog) -> list[str]:
    """``log`` as the JSON lines of a trace file (header first)."""
    header = {"format": TRACE_FORMAT, "layer": "sanctions", "params": log.params}
    header["setup"] = log.setup
    out = [json.dumps(header, separators=(",", ":"))]
    for s in log.steps:
        step: dict[str, Any] = {"command": s.command, "result": s.result, "state": s.state}
        if s.events is not None:
            step["events"] = s.events
        out.append(json.dumps(step, separators=(",", ":")))
    return out


# --- names ----------------------------------------------------------------------------------


class AgentNames(Names):
    """``trace.Names``, and ``tick`` is aliased too (Sanctions.tla's Tick_ is no agent)."""

    def __call__(self, ident: str) -> str:
        got = self.to.get(ident)
        if got is not None:
            return got
        if ident == "tick":
            self.to[ident] = "#tick"
            self.back["#tick"] = ident
            return "#tick"
        return super().__call__(ident)


# --- compiling ------------------------------------------------------------------------------


def well_formed(command: Any) -> tuple[str, dict[str, Any]] | None:
    """``(op, fields)`` if SanctionsLayer accepts the command's shape, else None (a
    malformed command: invalid_input)."""
    if not isinstance(command, dict):
        return None
    op = command.get("op")
    checks: dict[str, Callable[[object], bool]]
    if op == "record":
        checks = {"agent": is_id, "kind": lambda v: isinstance(v, str) and v in KINDS}
    elif op == "tick":
        checks = {}
    else:
        return None
    optional: dict[str, Callable[[object], bool]] = {
        "round": lambda v: is_int(v) and v >= 0  # type: ignore[operator]
    }
    fields = checked_fields(command, checks, optional)
    return None if fields is None else (op, fields)


@dataclass
class Entry:
    """One compiled step (SanctionsTrace.tla: a record of TLLogs[i].steps)."""

    op: str  # "record", "tick", "noop" (a malformed command refused), "bad" (no spec step)
    code: str
    agent: str = NONE
    kind: str = NONE
    round: int = 0
    now: int = 0
    delta: tuple[tuple[str, TlaRecord], ...] = ()
    gone: frozenset[str] = frozenset()
    events: tuple[TlaRecord, ...] = ()
    checkev: bool = False
    why: str = ""  # for op "bad"
    ticks: int = 0  # Ticks before the step's action (for messages)

    def record(self) -> TlaRecord:
        return record(
            op=self.op,
            code=self.code,
            agent=self.agent,
            kind=self.kind,
            round=self.round,
            now=self.now,
            delta=function(self.delta),
            gone=self.gone,
            events=self.events,
            checkev=self.checkev,
        )


@dataclass
class Compiled:
    log: SanctionsLog
    constants: dict[str, int]
    unrepaired: frozenset[str]
    agents: set[str]
    entries: list[Entry]
    records: int  # record commands in the log (MaxPerRound of the batch)
    raw: list[dict[str, Any]] = field(default_factory=list)  # logged agents per step


def spec_constants(log: SanctionsLog) -> dict[str, int]:
    """Sanctions.tla's constants for the log's params (MaxPerRound is the batch's)."""
    try:
        params = Params.from_mapping(log.params)
    except (ParamError, TypeError, ValueError) as exc:
        raise UnusableLog(f"{log.name}: bad params: {exc}") from None
    up = micro(params.urgent_penalty)
    if up % MICRO:
        raise UnusableLog(
            f"{log.name}: urgent_penalty = {params.urgent_penalty} is not a whole number: "
            f"{SPEC} weighs an unfounded urgent report UrgentPenalty (an integer) and every "
            "other kind 1, so this weight cannot be expressed"
        )
    if params.sanction_window > MAX_WINDOW:
        raise UnusableLog(
            f"{log.name}: sanction_window = {params.sanction_window}: {SPEC} sums the window "
            "by a recursion one level per round (SumAges), which overflows TLC's stack for long "
            f"windows; at most {MAX_WINDOW} rounds are supported"
        )
    return {
        "W": params.sanction_window,
        "Sigma1": params.sigma1,
        "Sigma2": params.sigma2,
        "Sigma3": params.sigma3,
        "Sigma4": params.sigma4,
        "UrgentPenalty": up // MICRO,
        "TSusp": params.T_susp,
        "TQuar": params.T_quarantine,
    }


def _unrepaired(log: SanctionsLog) -> list[str]:
    extra = set(log.setup) - {"unrepaired"}
    if extra:
        raise UnusableLog(f"{log.name}: setup: unknown key(s) {', '.join(sorted(extra))}")
    got = log.setup.get("unrepaired", [])
    if not isinstance(got, list) or not all(is_id(a) for a in got):
        raise UnusableLog(f"{log.name}: setup: unrepaired must be a list of agent ids")
    return list(got)


def _agent_view(v: Any) -> TlaRecord | None:
    """A logged agent as (level, rank, window_count in units of one violation); None if it
    is not an agent's sanctions state.  A count that is no whole number of violations
    cannot be the spec's: it is written -1 (never equal)."""
    if not isinstance(v, dict) or set(v) != set(FIELDS):
        return None
    level, rank, count = v["level"], v["rank"], v["window_count"]
    if not isinstance(level, str) or not is_int(rank) or not is_int(count):
        return None
    return record(level=level, rank=rank, window_count=count // MICRO if count % MICRO == 0 else -1)


def _event(ev: Any, names: AgentNames) -> TlaRecord:
    """A logged event as SanctionsTrace.tla's Ev record (an unknown shape never matches)."""
    keys = {"event", "agent", "from", "to", "cause"}
    if (
        isinstance(ev, dict)
        and set(ev) <= keys
        and {"event", "agent"} <= set(ev)
        and all(isinstance(v, str) for v in ev.values())
    ):
        return record(
            event=ev["event"],
            agent=names(ev["agent"]),
            **{"from": ev.get("from", NONE)},
            to=ev.get("to", NONE),
            cause=ev.get("cause", NONE),
        )
    return record(
        event="unrecognised: " + json.dumps(ev, sort_keys=True, default=str),
        agent=NONE,
        **{"from": NONE},
        to=NONE,
        cause=NONE,
    )


def compile_log(log: SanctionsLog, names: AgentNames) -> Compiled:
    """The entries of ``log`` (SanctionsTrace.tla reads them as TLLogs[i].steps)."""
    constants = spec_constants(log)
    unrepaired = _unrepaired(log)
    require_steps(log.name, log.steps)  # after the header's own problems
    agents: set[str] = set(unrepaired)
    entries: list[Entry] = []
    raw: list[dict[str, Any]] = []
    prev_now = 0
    last: dict[str, TlaRecord] = {}
    total = 0
    records = 0
    for step in log.steps:
        parsed = well_formed(step.command)
        code = step.result
        e: Entry
        if parsed is None:
            if code == "ok":
                e = Entry(
                    "bad",
                    code,
                    why="the command is malformed (invalid_input for SanctionsLayer), yet the "
                    "log accepts it",
                )
            else:
                e = Entry("noop", code)
        else:
            op, f = parsed
            rnd = f.get("round", prev_now if op == "record" else prev_now + 1)
            e = Entry(op, code, round=rnd)
            if op == "record":
                records += 1
                agents.add(f["agent"])
                e.agent, e.kind = names(f["agent"]), f["kind"]
            if code == "ok":
                e.ticks = max(0, rnd - prev_now)
                total += e.ticks
                if total > MAX_TICKS:
                    raise UnusableLog(
                        f"{log.name}:{step.line}: the log advances more than {MAX_TICKS} "
                        "rounds: the trace spec takes one TLC state per round"
                    )
        # the logged state after the step
        state = step.state
        problem = None
        views: dict[str, TlaRecord] = {}
        if not isinstance(state, dict) or set(state) != {"now", "agents"}:
            problem = "it is not {now, agents}"
        elif not is_int(state["now"]):
            problem = f"state.now is {state['now']!r}, not an integer"
        elif not isinstance(state["agents"], dict):
            problem = "state.agents is not an object"
        else:
            for a, v in state["agents"].items():
                view = _agent_view(v)
                if view is None:
                    problem = f"agent {a!r}: {json.dumps(v, default=str)} is not {{{FIELDS}}}"
                    break
                views[names(a)] = view
                agents.add(a)
        if problem is None and step.events is not None and not isinstance(step.events, list):
            problem = "events is not a list"
        if problem is not None:
            entries.append(
                Entry(
                    "bad",
                    code,
                    why="the logged state after this step is not a sanctions state "
                    f"(SanctionsLayer: now, agents of level, rank, window_count): {problem}",
                )
            )
            raw.append({})
            break
        raw.append(dict(state["agents"]))
        e.now = state["now"]
        prev_now = state["now"]
        e.delta = tuple((a, v) for a, v in sorted(views.items()) if last.get(a) != v)
        e.gone = frozenset(a for a in last if a not in views)
        last = views
        if step.events is not None:
            e.checkev = True
            e.events = tuple(_event(ev, names) for ev in step.events)
        entries.append(e)
    return Compiled(log, constants, frozenset(unrepaired), agents, entries, records, raw)


@dataclass
class Batch:
    """Logs with the same constants, checked in one TLC run."""

    logs: list[Compiled]
    names: AgentNames
    constants: dict[str, int]


def make_batches(logs: Sequence[SanctionsLog]) -> tuple[list[Batch], dict[int, str]]:
    """Compile ``logs`` and group them by constants; unusable logs by index with the reason."""
    names = AgentNames()
    unusable: dict[int, str] = {}
    groups: dict[tuple[int, ...], list[Compiled]] = {}
    for i, log in enumerate(logs):
        try:
            c = compile_log(log, names)
        except UnusableLog as exc:
            unusable[i] = str(exc)
            continue
        groups.setdefault(tuple(c.constants.values()), []).append(c)
    batches = []
    for members in groups.values():
        consts = dict(members[0].constants)
        consts["MaxPerRound"] = max(1, *(c.records for c in members))
        batches.append(Batch(members, names, consts))
    return batches, unusable


# --- writing the modules ---------------------------------------------------------------------


def log_module(batch: Batch) -> str:
    """The TraceLog module of ``batch`` (SanctionsTrace.tla EXTENDS it)."""
    n = batch.names
    agents = sorted({a for c in batch.logs for a in c.agents})
    lines = [
        f"---- MODULE {LOG_MODULE} ----",
        "\\* Generated by ostrom validate-trace (reference/ostrom/verify/trace/sanctions.py)",
        "\\* from: " + ", ".join(c.log.name.replace("\n", " ") for c in batch.logs),
        "EXTENDS Integers, TLC",
        f"TLAgents == {tla(frozenset(n(a) for a in agents))}",
        "\\* the agents in the reference's order (sorted ids)",
        f"TLOrder == {tla(tuple(n(a) for a in agents))}",
        "TLLogs == <<",
    ]
    for k, c in enumerate(batch.logs):
        lines.append(f"  \\* log {k + 1}: {c.log.name}")
        unrep = tla(frozenset(n(a) for a in c.unrepaired))
        lines.append(f"  [unrepaired |-> {unrep}, steps |-> <<")
        for j, e in enumerate(c.entries):
            sep = "," if j + 1 < len(c.entries) else ""
            lines.append(f"    {tla(e.record())}{sep}")
        lines.append("  >>]" + ("," if k + 1 < len(batch.logs) else ""))
    lines += [">>", "===="]
    return "\n".join(lines) + "\n"


def trace_cfg(batch: Batch) -> str:
    """The TLC configuration of a trace run."""
    lines = [
        "\\* Generated by ostrom validate-trace (sanctions)",
        "INIT TraceInit",
        "NEXT TraceNext",
        "CONSTANTS",
        "    Agents <- TLAgents",
        "    Kinds <- TraceKinds",
    ]
    lines += [f"    {k} = {v}" for k, v in batch.constants.items()]
    lines += ["INVARIANT Watch", ""]
    return "\n".join(lines)


def stage_trace_run(run_dir: Path, batch: Batch) -> None:
    """Write Sanctions.tla, SanctionsTrace.tla, TraceLog.tla and the cfg into ``run_dir``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in ("Sanctions.tla", f"{TRACE_MODULE}.tla"):
        shutil.copyfile(layout.SPEC_DIR / name, run_dir / name)
    (run_dir / f"{LOG_MODULE}.tla").write_text(log_module(batch), encoding="utf-8")
    (run_dir / f"{TRACE_MODULE}.cfg").write_text(trace_cfg(batch), encoding="utf-8")


# --- verdicts ---------------------------------------------------------------------------------


def _py(value: Any, names: Names) -> Any:
    """A TLC value as plain Python (sets sorted lists, ids un-aliased)."""
    if isinstance(value, TlaSet):
        return sorted((_py(v, names) for v in value.elems), key=lambda v: json.dumps(v))
    if isinstance(value, tuple):
        return [_py(v, names) for v in value]
    if isinstance(value, TlaRecord):
        return {k: _py(v, names) for k, v in value.fields}
    if isinstance(value, TlaFunction):
        return {str(_py(k, names)): _py(v, names) for k, v in value.pairs}
    if isinstance(value, str):
        return names.orig(value)
    return value


def _events_py(evs: Any) -> list[dict[str, Any]]:
    """Spec or compiled events as the log spells them (no "-" fields)."""
    if isinstance(evs, dict):  # a sequence printed as a function
        evs = [evs[k] for k in sorted(evs, key=int)]
    order = ("event", "agent", "from", "to", "cause")
    return [{k: ev[k] for k in order if ev.get(k, NONE) != NONE} for ev in evs]


def _action_text(e: Entry, names: Names) -> str:
    ticks = f"{e.ticks} Tick{'s' if e.ticks != 1 else ''}" if e.ticks else ""
    if e.op == "record" and e.code == "ok":
        rec = f"Record({names.orig(e.agent)}, {e.kind})"
        return f"{ticks}, then {rec}" if ticks else rec
    if e.op == "tick" and e.code == "ok":
        return ticks or "Tick (none: the round is not after now)"
    if e.op == "bad":
        return "none (not a step of the spec)"
    return "none (a refusal leaves the state unchanged)"


def _describe(
    c: Compiled, names: Names, cursor: int, phase: str, why: Value
) -> tuple[str, str, list[dict[str, Any]]]:
    """(kind, message, differences) of a dead end (SanctionsTrace.tla: Why)."""
    e = c.entries[cursor]
    w = _py(why, names)
    if e.op == "bad":
        return "not-a-spec-command", e.why, []
    if not isinstance(w, dict):
        return "command", "no behaviour of the spec takes this step", []
    if w.get("kind") == "state":
        diffs: list[dict[str, Any]] = []
        spec_now, log_now = w["now"]
        if spec_now != log_now:
            diffs.append({"artifact": None, "field": "now", "spec": spec_now, "log": log_now})
        raw = c.raw[cursor] if cursor < len(c.raw) else {}
        for a in w["spec_only"]:
            diffs.append({"artifact": a, "field": "has a record", "spec": True, "log": False})
        for a in w["log_only"]:
            diffs.append({"artifact": a, "field": "has a record", "spec": False, "log": True})
        diff = w["diff"] if isinstance(w["diff"], dict) else {}  # <<>>: no agent differs
        for a, fields in sorted(diff.items()):
            for f in FIELDS:
                if f not in fields:
                    continue
                s, lg = fields[f]
                if f == "window_count":  # back to the log's micro-units
                    s = s * MICRO
                    lg = raw.get(a, {}).get(f, lg)
                diffs.append({"artifact": a, "field": f, "spec": s, "log": lg})
        if w.get("events"):
            spec_ev, log_ev = w["events"]
            diffs.append(
                {
                    "artifact": None,
                    "field": "events",
                    "spec": _events_py(spec_ev),
                    "log": _events_py(log_ev),
                }
            )
        for d in diffs:  # the subject is an agent here (trace.format_verdict reads "artifact")
            d["agent"] = d["artifact"]
        parts = [
            (f"{d['artifact']}." if d["artifact"] else "")
            + f"{d['field']}: spec {json.dumps(d['spec'])}, log {json.dumps(d['log'])}"
            for d in diffs
        ]
        if e.code != "ok":
            head = f"the command was refused ({e.code}), so the state must not change, but"
        else:
            head = f"after {_action_text(e, names)}"
        return (
            "state",
            f"{head} the logged state differs from the spec's: " + "; ".join(parts),
            diffs,
        )
    now = w.get("now")
    if w.get("kind") == "command":
        if e.op == "record":
            return (
                "command",
                f"a record at round {e.round} while the spec is at round {now}: no step of "
                f"{SPEC} goes back in time (the reference refuses it: invalid_input)",
                [],
            )
        return (
            "command",
            f"a tick to round {e.round} while the spec is at round {now}: a tick must advance "
            "the clock (the reference refuses it: invalid_input)",
            [],
        )
    what = f"Record({names.orig(e.agent)}, {e.kind})" if e.op == "record" else "Tick"
    return (
        "refusal",
        f"refused ({e.code}), but the command is well-formed and round {e.round} is "
        f"{'not before' if e.op == 'record' else 'after'} the spec's round {now}: "
        f"{SPEC} takes {what} here",
        [],
    )


def _nat(v: Value) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"expected an integer from TLC, got {v!r}")
    return v


def _verdict(c: Compiled, status: str, message: str, seconds: float = 0.0) -> Verdict:
    return Verdict(c.log.name, status, len(c.log.steps), 0, message, seconds=seconds, spec=SPEC)


def _verdicts(batch: Batch, res: TlcResult) -> dict[int, Verdict]:
    """Each log's verdict from the prints of SanctionsTrace.tla's Watch."""
    top: dict[int, int] = {}
    dead: dict[int, list[tuple[int, str, Value]]] = {}
    for v in res.prints:
        if not isinstance(v, tuple) or len(v) < 3:
            continue
        k, cur = _nat(v[1]) - 1, _nat(v[2])
        if v[0] == "ostrom-cursor":
            top[k] = max(top.get(k, -1), cur)
        elif v[0] == "ostrom-deadend" and len(v) == 5:
            dead.setdefault(k, []).append((cur, str(v[3]), v[4]))
    out: dict[int, Verdict] = {}
    share = res.seconds / max(1, len(batch.logs))
    for k, c in enumerate(batch.logs):
        n = len(c.log.steps)
        if res.error is not None and top.get(k, -1) < n:
            out[k] = _verdict(c, "error", f"TLC failed: {res.error}", share)
            continue
        if k not in top:
            out[k] = _verdict(
                c, "unusable", f"the assumptions of {SPEC} do not hold for this log", share
            )
            continue
        reached = top[k]
        if reached >= n:
            out[k] = Verdict(
                c.log.name,
                "accepted",
                n,
                n,
                f"accepted: all {n} steps are a behaviour of {SPEC}",
                seconds=share,
                distinct_states=res.distinct_states,
                spec=SPEC,
            )
            continue
        step, e = c.log.steps[reached], c.entries[reached]
        ends = [d for d in dead.get(k, []) if d[0] == reached]
        if ends:
            kind, msg, diffs = _describe(c, batch.names, reached, ends[0][1], ends[0][2])
        elif e.op == "bad":
            kind, msg, diffs = "not-a-spec-command", e.why, []
        else:
            kind, msg, diffs = "command", "no behaviour of the spec gets past this step", []
        failure = Failure(
            reached,
            step.line,
            step.command,
            step.result,
            kind,
            _action_text(e, batch.names),
            msg,
            diffs,
        )
        out[k] = Verdict(
            c.log.name,
            "rejected",
            n,
            reached,
            f"rejected at step {reached + 1} of {n} (line {step.line}): {msg}",
            failure,
            share,
            res.distinct_states,
            spec=SPEC,
        )
    return out


def _run_batch(
    run_dir: Path, batch: Batch, timeout: float | None, progress: Callable[[str], None] | None
) -> dict[int, Verdict]:
    try:
        stage_trace_run(run_dir, batch)
    except (OSError, ValueError) as exc:
        return {
            k: _verdict(c, "error", f"cannot stage the trace run: {exc}")
            for k, c in enumerate(batch.logs)
        }
    total = sum(len(c.entries) for c in batch.logs)
    if progress is not None:
        progress(f"TLC: {len(batch.logs)} log(s), {total} steps ({run_dir})")
    try:
        res = run_java_tlc(
            run_dir, TRACE_MODULE, f"{TRACE_MODULE}.cfg", ["-deadlock"], timeout=timeout
        )
    except TlcSetupError as exc:
        return {k: _verdict(c, "error", str(exc)) for k, c in enumerate(batch.logs)}
    if progress is not None:
        progress(f"TLC: finished in {res.seconds:.1f} s, {res.distinct_states} distinct states")
    return _verdicts(batch, res)


def validate_logs(
    logs: Sequence[SanctionsLog],
    *,
    keep: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Verdict]:
    """Validate every log (batched by constants, one TLC run per batch); a verdict each."""
    batches, unusable = make_batches(logs)
    return validate_batches(
        logs,
        batches,
        unusable,
        lambda run_dir, batch: _run_batch(run_dir, batch, timeout, progress),
        keep=keep,
        prefix="ostrom-sanctions-trace-",
        spec=SPEC,
    )


def validate_paths(paths: Sequence[Path], *, timeout: float | None = None) -> list[Verdict]:
    """Validate sanctions log files (batched); a verdict each (``trace.LAYER_TRACES``)."""
    return validate_paths_with(read_log, validate_logs, paths, timeout, SPEC)


def validate_file(
    path: Path,
    *,
    keep: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Verdict:
    """Validate one sanctions log file (``ostrom validate-trace FILE``)."""
    return validate_file_with(
        read_log, validate_logs, path, SPEC, keep=keep, timeout=timeout, progress=progress
    )
