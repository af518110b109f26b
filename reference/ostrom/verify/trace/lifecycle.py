"""Trace validation: ``ostrom validate-trace FILE.jsonl`` checks a log against spec/Lifecycle.tla.

A log (``ostrom-trace/1``, docs/conformance.md "Trace logs") is a header with the parameters
and the initial registry, then one line per command: the command, its result and the public
state after it.  TLC 2.15 has no Json module, so the log is *compiled* into a TLA+ module
(``TraceLog``: a sequence constant of records) that ``spec/LifecycleTrace.tla`` walks with a
cursor, in the style of the EWD998 and CCF trace specs.  TLC then explores every behaviour
of the spec that follows the log; the log is accepted iff one of them consumes it, and
otherwise the deepest step reached is the first one the spec does not allow.

What the compiler does (each function names the TLA+ it feeds):

* parameters become the spec's constants: counts and timeouts as they are, ``tau_*`` and
  ``alpha`` as integer percentages (the spec compares ``A*100 >= tau*(A+R)``; a threshold
  that is not a whole percentage cannot be expressed exactly and the log is refused),
  weights as integers: micro-units divided by their greatest common divisor (every
  comparison of the spec is homogeneous in the weights, so the scaling is exact), checked
  against TLC's 32-bit integers;
* forget confidences become integers ``k`` in units of ``1/ConfUnit``: the reference keeps
  ``micro(c)`` (``Orchestrator._op_forget_vote``), so ``c = micro(c)/10⁶`` exactly, and
  ``ConfUnit = 10⁶ / gcd(10⁶, micro(c) of every accepted vote)`` is the coarsest unit in
  which each is an integer (``_conf_unit``; 1 when every vote has confidence 1 or 0).  The
  cfg overrides Lifecycle.tla's ``ConfUnit`` and ``ForgetConfidences`` (``trace_cfg``);
  the spec compares ``100·ΣW·k ≥ α·ConfUnit·ΣW``, the reference ``ΣW·C ≥ A·ΣW`` in
  micro², the same inequality;
* the registry (header ``setup.agents`` and every ``set_agent`` the log accepts) becomes
  the registry *variables* of ``LifecycleRegVar``, a copy of Lifecycle.tla whose only
  edit is that (``registry_variable_spec``);
* each command becomes a record with the spec action's arguments; ``commit_vote`` gets the
  vote its commitment binds, found by hashing every later reveal of the same voter,
  artifact and round (``resolve_commitments``): the spec's commitment is the triple
  <<voter, round, vote>>;
* each logged state becomes its *view* (``project_artifact``, ``View`` in the spec): what
  the spec and the public state both say about an artifact; only the artifacts whose view
  changed are written per step (``delta``).

Refused as inexpressible (exit 2, with the reason): thresholds that are not whole
percentages, a zero weight, weights (or weights times the confidence unit) too large for
TLC's 32-bit integers, a layer other than ``lifecycle`` or ``community``.
docs/conformance.md "Trace validation" is the user's guide.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, TypeVar

from ostrom import layout
from ostrom.conformance import TRACE_FORMAT
from ostrom.protocol.agents import BARRING, MICRO, micro
from ostrom.protocol.lifecycle import (
    BALLOT_KINDS,
    COMMAND_ACTIONS,
    SINGLE_ACTIONS,
    STATES,
    TRANSIENT,
)
from ostrom.protocol.orchestrator import SCHEMAS
from ostrom.protocol.params import ParamError, Params
from ostrom.protocol.voting import BALLOT_VOTES, BallotKind
from ostrom.verify.tlc.jar import TlcSetupError, find_jar, find_java
from ostrom.verify.tlc.output import TlcOutcome, ToolOutputParser
from ostrom.verify.tlc.runner import stream_process, tlc_command
from ostrom.verify.tlc.values import (
    ModelValue,
    Opaque,
    TlaFunction,
    TlaRecord,
    TlaSet,
    Value,
    ValueParseError,
    parse_value,
)

#: The repository root (reference/ostrom/verify/trace/lifecycle.py -> ../../..).
ROOT: Final = layout.ROOT
SPEC_DIR: Final = ROOT / "spec"
#: The generated copy of Lifecycle.tla with the registry as variables.
REGVAR_MODULE: Final = "LifecycleRegVar"
#: Lifecycle.tla's registry constants that the trace spec turns into variables (Agents
#: stays a constant: every id of the log; an unregistered id is a barred tier-0 agent).
REGISTRY_CONSTANTS: Final = ("Tier", "Weight", "Barred", "Subscriptions", "RepOK")
TRACE_MODULE: Final = "LifecycleTrace"
#: The trace spec of community logs (EXTENDS LifecycleTrace, INSTANCE Sanctions).
COMMUNITY_MODULE: Final = "CommunityTrace"
#: The layers whose logs this module validates, and the spec each is checked against.
TRACE_SPECS: Final = {
    "lifecycle": "spec/Lifecycle.tla",
    "community": "spec/CommunityTrace.tla (spec/Lifecycle.tla, spec/Sanctions.tla, tier rule)",
}
LOG_MODULE: Final = "TraceLog"

#: What a lifecycle verdict names (community verdicts name spec/CommunityTrace.tla).
LIFECYCLE_SPEC: Final = "spec/Lifecycle.tla"

EXIT_ACCEPTED: Final = 0
EXIT_REJECTED: Final = 1
EXIT_UNUSABLE: Final = 2

#: TLC's integers are 32-bit: every product the spec computes must stay below this.
TLC_MAX_INT: Final = 2**31 - 1
NONE: Final = "-"  # Lifecycle.tla's NoAgent / NoSlot; LifecycleTrace.tla's NoView


#: A layer's parsed log type (TraceLog, SanctionsLog, PbftLog).
L = TypeVar("L")


class UnusableLog(Exception):
    """The log cannot be read or cannot be expressed in the spec (exit 2)."""


# --- TLA+ values ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rec:
    """A TLA+ record ``[f |-> v, ...]`` (fields in the given order)."""

    fields: tuple[tuple[str, Any], ...]

    @staticmethod
    def of(**kw: Any) -> Rec:
        return Rec(tuple(kw.items()))

    def get(self, name: str) -> Any:
        return dict(self.fields)[name]


@dataclass(frozen=True)
class Fn:
    """A TLA+ function ``(k1 :> v1 @@ ...)`` (``<<>>`` when empty)."""

    pairs: tuple[tuple[Any, Any], ...]


def tla(value: Any) -> str:
    """``value`` in TLA+ syntax: str, int, bool, frozenset/set (a set), tuple (a sequence),
    Rec, Fn."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(sorted(tla(v) for v in value)) + "}"
    if isinstance(value, tuple):
        return "<<" + ", ".join(tla(v) for v in value) + ">>"
    if isinstance(value, Rec):
        return "[" + ", ".join(f"{k} |-> {tla(v)}" for k, v in value.fields) + "]"
    if isinstance(value, Fn):
        if not value.pairs:
            return "<<>>"
        return "(" + " @@ ".join(f"{tla(k)} :> {tla(v)}" for k, v in value.pairs) + ")"
    raise TypeError(f"no TLA+ spelling for {value!r}")


# --- the derived spec ---------------------------------------------------------------------------


def registry_variable_spec(text: str, module: str = REGVAR_MODULE) -> str:
    """Lifecycle.tla with the registry as variables (LifecycleTrace.tla EXTENDS the result).

    The one mechanical edit: the module is renamed; the lines declaring the
    ``REGISTRY_CONSTANTS`` are dropped from CONSTANTS and declared as VARIABLES instead
    (just before the first ASSUME); every ``ASSUME`` becomes a definition
    ``LifecycleAssumption<k> ==`` (an ASSUME cannot read a variable), the word replaced by
    blanks so that the indentation of its conjunctions is unchanged, and
    ``LifecycleAssumptions`` conjoins them.  Every other line is Lifecycle.tla's.
    """
    lines = text.splitlines()
    head = re.compile(r"^(-+\s*MODULE\s+)Lifecycle(\s+-+)\s*$")
    if not lines or not head.match(lines[0]):
        raise ValueError("spec/Lifecycle.tla does not start with its MODULE line")
    out = [head.sub(rf"\g<1>{module}\g<2>", lines[0])]
    decl = re.compile(r"^\s+(" + "|".join(REGISTRY_CONSTANTS) + r"),\s*(\\\*.*)?$")
    dropped: list[str] = []
    count = 0
    declared = False
    for line in lines[1:]:
        m = decl.match(line)
        if m and not declared:
            dropped.append(m.group(1))
            continue
        if line.startswith("ASSUME"):
            if not declared:
                if sorted(dropped) != sorted(REGISTRY_CONSTANTS):
                    raise ValueError(f"registry constants not found in CONSTANTS: {dropped}")
                out.append(
                    f"VARIABLES {', '.join(REGISTRY_CONSTANTS)}  "
                    "\\* trace validation: the registry (LifecycleTrace.tla)"
                )
                out.append("")
                declared = True
            count += 1
            out.append(f"LifecycleAssumption{count} ==")
            out.append(" " * len("ASSUME") + line[len("ASSUME") :])
            continue
        if line.startswith("====="):
            conj = " /\\ ".join(f"LifecycleAssumption{k}" for k in range(1, count + 1))
            out.append(f"LifecycleAssumptions == {conj}")
        out.append(line)
    if not declared:
        raise ValueError("spec/Lifecycle.tla has no ASSUME after its CONSTANTS")
    return "\n".join(out) + "\n"


# --- reading a log ------------------------------------------------------------------------------


@dataclass
class LogStep:
    """One logged step: the command as sent, its result, the public state after it."""

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
            docs.append((n, json.loads(ln)))
        except ValueError as exc:
            raise UnusableLog(f"{path}:{n}: not JSON: {exc}") from None
    return docs[0][1], [d for _, d in docs[1:]], [k for k, _ in docs[1:]]


def read_log(path: Path) -> TraceLog:
    """Read an ostrom-trace/1 file; ``UnusableLog`` names the first problem."""
    header, steps, lines = read_jsonl(path)
    return parse_log(str(path), header, steps, lines)


def parse_log(
    name: str, header: Any, steps: Sequence[Any], lines: Sequence[int] | None = None
) -> TraceLog:
    """A log from its parsed header and step objects (``lines``: their line numbers)."""
    if not isinstance(header, dict) or header.get("format") != TRACE_FORMAT:
        raise UnusableLog(f"{name}:1: not an {TRACE_FORMAT} header (format field)")
    layer = header.get("layer")
    if layer not in TRACE_SPECS:
        raise UnusableLog(
            f"{name}:1: layer {layer!r}: only lifecycle and community logs are validated "
            "here (spec/LifecycleTrace.tla, spec/CommunityTrace.tla)"
        )
    params, setup = header.get("params", {}), header.get("setup", {})
    if not isinstance(params, dict) or not isinstance(setup, dict):
        raise UnusableLog(f"{name}:1: params and setup must be objects")
    out: list[LogStep] = []
    for i, doc in enumerate(steps):
        n = lines[i] if lines is not None else i + 2
        if not isinstance(doc, dict) or set(doc) - {"command", "result", "state", "events"}:
            raise UnusableLog(f"{name}:{n}: a step is {{command, result, state}}")
        if "command" not in doc or not isinstance(doc.get("result"), str):
            raise UnusableLog(f"{name}:{n}: a step needs a command and a result string")
        state = doc.get("state")
        if not isinstance(state, dict) or not isinstance(state.get("artifacts"), dict):
            raise UnusableLog(f"{name}:{n}: the state must be a public state (now, artifacts)")
        events = doc.get("events") or []
        if not isinstance(events, list):
            raise UnusableLog(f"{name}:{n}: events must be a list")
        out.append(LogStep(n, doc["command"], doc["result"], state, events))
    return TraceLog(name, dict(params), dict(setup), out, str(layer))


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
    """``log`` as the JSON lines of a trace file (header first)."""
    header = {
        "format": TRACE_FORMAT,
        "layer": log.layer,
        "params": log.params,
        "setup": log.setup,
    }
    out = [json.dumps(header, separators=(",", ":"))]
    for s in log.steps:
        step = {"command": s.command, "result": s.result, "state": s.state}
        if s.events:
            step["events"] = list(s.events)
        out.append(json.dumps(step, separators=(",", ":")))
    return out


# --- names ------------------------------------------------------------------------------------

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


# --- parameters ---------------------------------------------------------------------------------


def _percent(name: str, value: float) -> int:
    m = micro(value)
    if m % 10_000:
        raise UnusableLog(
            f"{name} = {value} is not a whole percentage: spec/Lifecycle.tla compares "
            f"{name} as an integer percentage, so this threshold cannot be expressed exactly"
        )
    return m // 10_000


def spec_constants(params: Params) -> dict[str, int]:
    """The numeric constants of Lifecycle.tla and LifecycleTrace.tla (the rate limits)
    for ``params`` (WMin is added per batch)."""
    return {
        "Reviewers": params.reviewers,
        "Quorum": params.quorum,
        "DisputeReviewers": params.dispute_reviewers,
        "QDispute": params.q_dispute,
        "MinSide": params.tally_min_side,
        "TauAccept": _percent("tau_accept", params.tau_accept),
        "TauReject": _percent("tau_reject", params.tau_reject),
        "TauRetract": _percent("tau_retract", params.tau_retract),
        "Alpha": _percent("alpha", params.alpha),
        "MinActive": max(1, params.min_active_agents),
        "TFast": params.T_fast,
        "TDelib": params.T_delib,
        "TCommit": params.T_commit,
        "TReveal": params.T_reveal,
        "TArb": params.T_arb,
        "MaxDisputes": params.max_disputes,
        "MaxResubmit": params.max_resubmit,
        "Cooldown": params.cooldown,
        # LifecycleTrace.tla's own constants (RATE LIMITS in its header): Lifecycle.tla
        # abstracts the per-round rate limits, the trace spec checks them
        "ProposeRate": params.propose_rate,
        "ProposeRateLimited": params.propose_rate_limited,
        "DisputeRate": params.dispute_rate,
    }


def community_constants(params: Params) -> dict[str, int]:
    """CommunityTrace.tla's constants: spec/Sanctions.tla's (through its INSTANCE) and the
    tier rule's (reputation.py: tier_thresholds, step_tier; thresholds in micro-units)."""
    penalty = micro(params.urgent_penalty)
    if penalty % MICRO:
        raise UnusableLog(
            f"urgent_penalty = {params.urgent_penalty} is not an integer: spec/Sanctions.tla "
            "weighs violations in whole units"
        )
    return {
        "SWindow": params.sanction_window,
        "SSigma1": params.sigma1,
        "SSigma2": params.sigma2,
        "SSigma3": params.sigma3,
        "SSigma4": params.sigma4,
        "SUrgentPenalty": penalty // MICRO,
        "STSusp": params.T_susp,
        "STQuar": params.T_quarantine,
        "Tier1Rep": micro(params.tier1_rep),
        "Tier2Rep": micro(params.tier2_rep),
        "Tier3Rep": micro(params.tier3_rep),
        "Tier1Rounds": params.tier1_rounds,
        "RResubmit": micro(params.r_resubmit),
    }


def _params(log: TraceLog) -> Params:
    try:
        return Params.from_mapping(log.params)
    except (ParamError, TypeError, ValueError) as exc:
        raise UnusableLog(f"{log.name}: bad params: {exc}") from None


# --- commands -------------------------------------------------------------------------------


def well_formed(command: Any) -> tuple[str, dict[str, Any]] | None:
    """``(op, fields)`` if ``command`` passes check 1 of docs/rules.md (orchestrator.SCHEMAS),
    else None (the command is malformed: invalid_input)."""
    if not isinstance(command, dict):
        return None
    op = command.get("op")
    if not isinstance(op, str) or op not in SCHEMAS:
        return None
    required, optional = SCHEMAS[op]
    fields = checked_fields(command, required, optional)
    return None if fields is None else (op, fields)


def checked_fields(
    command: Mapping[str, Any],
    required: Mapping[str, Callable[[object], bool]],
    optional: Mapping[str, Callable[[object], bool]],
) -> dict[str, Any] | None:
    """The command's fields but ``op`` if each passes its check and every required one is
    there; None otherwise (a malformed command)."""
    fields: dict[str, Any] = {}
    for key, value in command.items():
        if key == "op":
            continue
        check = required.get(key) or optional.get(key)
        if check is None or not check(value):
            return None
        fields[key] = value
    if any(k not in fields for k in required):
        return None
    return fields


@dataclass
class Entry:
    """One compiled step (LifecycleTrace.tla: a record of TLLogs[i].steps)."""

    op: str  # a command op, "noop" (refused, not a spec command) or "bad" (no spec step)
    code: str
    check: bool = True
    agent: str = NONE
    artifact: str = NONE
    slot: str = NONE
    vote: str = NONE
    outcome: str = NONE
    conf: int = 0  # forget_vote: the confidence in units of 1/ConfUnit (set by log_module)
    tier: int = 0
    weight: int = 1
    barred: bool = False
    ratelim: bool = False  # sanction rate_limited (LifecycleTrace.tla: rateLimited)
    subs: frozenset[str] = frozenset()
    repok: bool = False
    now: int = 0
    delta: tuple[tuple[str, Rec], ...] = ()
    why: str = ""  # for op "bad": what makes the step impossible
    # community logs only (CommunityTrace.tla): the violations the step's events report,
    # in order, and the logged registry after the step (None: a lifecycle log)
    viol: tuple[tuple[str, str], ...] = ()
    reg: Fn | None = None

    def record(self) -> Rec:
        base = Rec.of(
            op=self.op,
            code=self.code,
            check=self.check,
            agent=self.agent,
            artifact=self.artifact,
            slot=self.slot,
            vote=self.vote,
            outcome=self.outcome,
            conf=self.conf,
            tier=self.tier,
            weight=self.weight,
            barred=self.barred,
            ratelim=self.ratelim,
            subs=self.subs,
            repok=self.repok,
            now=self.now,
            delta=Fn(self.delta),
        )
        if self.reg is None:
            return base
        return Rec((*base.fields, ("viol", self.viol), ("reg", self.reg)))


@dataclass
class RegEntry:
    """A registry entry as the reference keeps it (micro-units)."""

    tier: int
    weight: int
    reputation: int
    sanction: str
    subscriptions: frozenset[str]


def _merge_entry(old: RegEntry | None, fields: Mapping[str, Any], params: Params) -> RegEntry:
    """The entry after ``set_agent`` (docs/rules.md "Further choices": fields left out keep
    their value; a new agent starts at w_min, reputation 0, sanction none), which
    LifecycleTrace.tla's SetAgent gives the registry variables."""
    weight = fields.get("weight")
    rep = fields.get("reputation")
    subs = fields.get("subscriptions")
    return RegEntry(
        tier=int(fields["tier"]),
        weight=micro(weight)
        if weight is not None
        else (old.weight if old else micro(params.w_min)),
        reputation=micro(rep) if rep is not None else (old.reputation if old else 0),
        sanction=str(fields.get("sanction") or (old.sanction if old else "none")),
        subscriptions=frozenset(subs)
        if subs is not None
        else (old.subscriptions if old else frozenset()),
    )


def _community_setup(log: TraceLog, params: Params) -> dict[str, RegEntry]:
    """The registry a community starts with (community.py: Community.__init__): each
    member at its tier, weight w_min (the first tick computes weights), no sanction, E the
    founder's prior mean (0.5, the uniform prior, for a tier-0 member)."""
    extra = set(log.setup) - {"members"}
    if extra:
        raise UnusableLog(f"{log.name}: setup: unknown key(s) {', '.join(sorted(extra))}")
    members = log.setup.get("members", [])
    if not isinstance(members, list):
        raise UnusableLog(f"{log.name}: setup.members must be a list")
    reg: dict[str, RegEntry] = {}
    for m in members:
        ok = isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"] not in reg
        tier = m.get("tier", 0) if isinstance(m, dict) else None
        rep = m.get("reputation", 0.5) if isinstance(m, dict) else None
        subs = m.get("subscriptions", []) if isinstance(m, dict) else None
        if (
            not ok
            or not isinstance(tier, int)
            or not 0 <= tier <= 3
            or not isinstance(rep, int | float)
            or not isinstance(subs, list)
            or not all(isinstance(x, str) for x in subs)
        ):
            raise UnusableLog(f"{log.name}: setup: bad member {m!r}")
        assert isinstance(m, dict)
        reg[m["id"]] = RegEntry(
            tier=tier,
            weight=micro(params.w_min),
            reputation=micro(rep) if tier > 0 else micro(0.5),
            sanction="none",
            subscriptions=frozenset(subs),
        )
    return reg


def _join_fields(command: Any) -> tuple[str, list[str]] | None:
    """(agent, subscriptions) of a well-formed ``join`` (community.py: Community._join)."""
    if not isinstance(command, dict) or command.get("op") != "join":
        return None
    subs = command.get("subscriptions", [])
    agent = command.get("agent")
    if (
        set(command) - {"op", "agent", "subscriptions"}
        or not isinstance(agent, str)
        or not 0 < len(agent) <= 256
        or not isinstance(subs, list)
        or not all(isinstance(x, str) and 0 < len(x) <= 256 for x in subs)
    ):
        return None
    return agent, subs


def _violations(events: Sequence[Any], names: Names) -> tuple[tuple[str, str], ...]:
    """The violations a step's events report, in order (sanctions.py: record_events):
    ``violation`` and ``penalty`` events, their kind as spec/Sanctions.tla names it."""
    from ostrom.protocol.sanctions import ORCHESTRATOR_KINDS

    out: list[tuple[str, str]] = []
    for ev in events:
        if (
            isinstance(ev, dict)
            and ev.get("event") in ("violation", "penalty")
            and ev.get("kind") in ORCHESTRATOR_KINDS
            and isinstance(ev.get("agent"), str)
        ):
            out.append((names(ev["agent"]), ORCHESTRATOR_KINDS[ev["kind"]].value))
    return tuple(out)


def _setup_entries(log: TraceLog, params: Params) -> dict[str, RegEntry]:
    if log.layer == "community":
        return _community_setup(log, params)
    setup = log.setup
    extra = set(setup) - {"agents"}
    if extra:
        raise UnusableLog(f"{log.name}: setup: unknown key(s) {', '.join(sorted(extra))}")
    agents = setup.get("agents", [])
    if not isinstance(agents, list):
        raise UnusableLog(f"{log.name}: setup.agents must be a list")
    reg: dict[str, RegEntry] = {}
    for entry in agents:
        cmd = {"op": "set_agent", **(entry if isinstance(entry, dict) else {})}
        cmd.pop("id", None)
        cmd["agent"] = entry.get("id") if isinstance(entry, dict) else None
        parsed = well_formed(cmd)
        if parsed is None or not _weight_ok(parsed[1], params):
            raise UnusableLog(f"{log.name}: setup: bad agent entry {entry!r}")
        fields = parsed[1]
        reg[fields["agent"]] = _merge_entry(reg.get(fields["agent"]), fields, params)
    return reg


def _weight_ok(fields: Mapping[str, Any], params: Params) -> bool:
    w = fields.get("weight")
    return w is None or micro(params.w_min) <= micro(w) <= micro(params.w_max)


# --- views ----------------------------------------------------------------------------------


def _ids(value: Any, names: Names) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of ids, got {value!r}")
    return frozenset(names(v) for v in value)


def project_artifact(a: Mapping[str, Any], names: Names, unit: int) -> Rec:
    """The view of one logged artifact (LifecycleTrace.tla: View, which computes the same
    from the spec's record).  ``unit`` divides the tally weights (micro-units)."""
    st = a["state"]
    if st not in STATES:
        raise ValueError(f"unknown state {st!r}")
    transient = st in TRANSIENT
    ballot = (a["ballot"] or "none", a["phase"] or "none") if transient else (NONE, NONE)
    revealed: frozenset[tuple[str, str]] = frozenset()
    if transient and a["revealed"] is not None:
        if not isinstance(a["revealed"], dict):
            raise ValueError("revealed must be null or an object")
        revealed = frozenset((names(k), str(v)) for k, v in a["revealed"].items())
    deadline = a["deadline"]
    if deadline is not None and (not isinstance(deadline, int) or isinstance(deadline, bool)):
        raise ValueError(f"deadline {deadline!r}")
    for key in ("hidden",):
        if not isinstance(a[key], bool):
            raise ValueError(f"{key} must be a boolean")
    for key in ("dispute_count", "resubmit_count"):
        if not isinstance(a[key], int) or isinstance(a[key], bool):
            raise ValueError(f"{key} must be an integer")
    return Rec.of(
        state=st,
        slot=names(str(a["slot"])),
        submitter=names(str(a["submitter"])),
        hidden=a["hidden"],
        dispute_count=a["dispute_count"],
        resubmit_count=a["resubmit_count"],
        content=a["digest"] is not None,
        deadline=-1 if deadline is None else deadline,
        ballot=ballot,
        reviewers=_ids(a["reviewers"], names) if st in TRANSIENT | {"active"} else frozenset(),
        committed=_ids(a["committed"], names) if transient else frozenset(),
        revealed=revealed,
        forget_voters=frozenset() if st == "forgotten" else _ids(a["forget_voters"], names),
        decision=_decision_view(st, a["decision"], unit),
    )


def _decision_view(st: str, d: Any, unit: int) -> tuple[Any, ...]:
    """LifecycleTrace.tla: DecisionView.  A tally weight that is no multiple of ``unit``
    cannot be a sum of the registry's weights: it is written -1 (never equal)."""
    if st != "active":
        return (NONE, 0, 0, 0, 0)
    if not isinstance(d, dict) or not isinstance(d.get("path"), str):
        raise ValueError("an active artifact needs a decision with a path")
    path = d["path"]
    sides = {"tally": ("accept", "reject"), "dispute_kept": ("keep", "retract")}.get(path)
    if sides is None:
        return (path, 0, 0, 0, 0)
    t = d.get("tally")
    if not isinstance(t, dict):
        raise ValueError(f"decision path {path} without a tally")
    win, lose = sides

    def w(key: str) -> int:
        v = t[key]
        return v // unit if isinstance(v, int) and v % unit == 0 else -1

    return (path, w(win), w(lose), int(t[f"{win}_voters"]), int(t[f"{lose}_voters"]))


def _registry_view(reg: Any, names: Names, unit: int) -> Fn:
    """The logged registry of a community state (CommunityTrace.tla: E.reg): per agent
    its tier, weight (in ``unit``), sanction and E (``reputation_micro``)."""
    if not isinstance(reg, dict):
        raise ValueError("a community state needs an agents object")
    out: list[tuple[str, Rec]] = []
    for a, g in sorted(reg.items()):
        tier, weight, sanction, rep = g["tier"], g["weight"], g["sanction"], g["reputation_micro"]
        if not isinstance(tier, int) or isinstance(tier, bool) or not isinstance(sanction, str):
            raise ValueError(f"agent {a!r}: tier {tier!r}, sanction {sanction!r}")
        if not isinstance(rep, int) or isinstance(rep, bool):
            raise ValueError(f"agent {a!r}: reputation_micro {rep!r} is not an integer")
        if not isinstance(weight, int | float) or isinstance(weight, bool):
            raise ValueError(f"agent {a!r}: weight {weight!r}")
        w = micro(weight)
        out.append(
            (
                names(a),
                Rec.of(
                    tier=tier, weight=w // unit if w % unit == 0 else -1, sanction=sanction, rep=rep
                ),
            )
        )
    return Fn(tuple(out))


# --- commitments ------------------------------------------------------------------------------


def resolve_commitments(log: TraceLog, names: Names) -> tuple[dict[int, str], set[int]]:
    """The vote each accepted ``commit_vote`` binds (step index -> vote), and the refused
    ``bad_reveal`` steps the spec cannot tell from a valid reveal (index set).

    A commitment binds the vote of the first later reveal of the same voter, artifact and
    ballot round (the round of the logged state before the step) whose
    ``voting.commitment`` hash equals it, if that vote belongs to the ballot (LifecycleTrace
    feeds it to CommitVote).  A commitment no reveal opens is, for the lifecycle, one that
    is never revealed (Lifecycle.tla header): it is given a ballot vote that no reveal of it
    carries, so no reveal can open it in the spec either.  A ``bad_reveal`` carrying the
    bound vote (wrong salt, reason or round) is one the spec allows: the spec abstracts
    hashes, so that refusal is not checked against ENABLED.
    """
    from ostrom.protocol.voting import commitment

    prev: Mapping[str, Any] = {}
    commits: list[tuple[int, str, str, Any, str, str]] = []  # idx, agent, art, round, hash, st
    reveals: list[tuple[int, str, str, Any, str, str]] = []  # idx, agent, art, round, vote, hash
    for i, step in enumerate(log.steps):
        parsed = well_formed(step.command)
        if parsed is not None and parsed[0] in ("commit_vote", "reveal_vote"):
            op, f = parsed
            pre = prev.get(f["artifact"])
            rnd = pre.get("round") if isinstance(pre, dict) else None
            st = pre.get("state") if isinstance(pre, dict) else None
            if op == "commit_vote" and step.result == "ok":
                commits.append((i, f["agent"], f["artifact"], rnd, f["commitment"], str(st)))
            elif op == "reveal_vote" and isinstance(rnd, int) and not isinstance(rnd, bool):
                h = commitment(f["agent"], f["artifact"], rnd, f["vote"], f["reason"], f["salt"])
                reveals.append((i, f["agent"], f["artifact"], rnd, f["vote"], h))
        prev = step.state.get("artifacts", {})
    bound: dict[int, str] = {}
    for i, agent, art, rnd, h, st in commits:
        ballot = BALLOT_VOTES[BallotKind(BALLOT_KINDS.get(st, "review"))]
        later = [r for r in reveals if r[0] > i and r[1:4] == (agent, art, rnd)]
        opened = [r[4] for r in later if r[5] == h and r[4] in ballot]
        if opened:
            bound[i] = opened[0]
        else:
            tried = {r[4] for r in later}
            bound[i] = next((v for v in ballot if v not in tried), ballot[0])
    abstracted: set[int] = set()
    for j, agent, art, rnd, vote, _h in reveals:
        if log.steps[j].result != "bad_reveal":
            continue
        before = [c for c in commits if c[0] < j and (c[1], c[2], c[3]) == (agent, art, rnd)]
        if before and bound[before[-1][0]] == vote:
            abstracted.add(j)
    return bound, abstracted


# --- compiling --------------------------------------------------------------------------------

#: Results the spec cannot judge: the command was refused for a reason it abstracts
#: (none since LifecycleTrace.tla checks the rate limits: ``rate_limited`` is checked).
_ABSTRACT_CODES: Final[frozenset[str]] = frozenset()


@dataclass
class CompiledLog:
    """One log compiled: initial registry and entries (weights in micro until scaled)."""

    log: TraceLog
    params: Params
    constants: dict[str, int]
    initial: dict[str, RegEntry]
    entries: list[Entry]
    set_weights: dict[int, int]  # entry index -> micro weight of an accepted set_agent
    artifacts: set[str]
    slots: set[str]
    agents: set[str]
    raw_states: list[dict[str, Any]] = field(default_factory=list)
    #: community logs: the largest logged weight (micro) of each agent
    reg_weights: dict[str, int] = field(default_factory=dict)
    #: forget_vote entry index -> (confidence in micro, accepted)
    confs: dict[int, tuple[int, bool]] = field(default_factory=dict)
    #: Lifecycle.tla's ConfUnit for the accepted confidences (``_conf_unit``)
    conf_unit: int = 1


def compile_log(log: TraceLog, names: Names) -> CompiledLog:
    """The entries of ``log`` (LifecycleTrace.tla reads them as TLLogs[i].steps); the views
    are filled by ``_views`` once the weight unit of the batch is known."""
    params = _params(log)
    community = log.layer == "community"
    try:
        constants = spec_constants(params)
        if community:
            constants |= community_constants(params)
    except UnusableLog as exc:
        raise UnusableLog(f"{log.name}: {exc}") from None
    initial = _setup_entries(log, params)
    registry = dict(initial)
    bound, abstracted = resolve_commitments(log, names)
    entries: list[Entry] = []
    set_weights: dict[int, int] = {}
    confs: dict[int, tuple[int, bool]] = {}
    arts: set[str] = set()
    slots: set[str] = set()
    agents: set[str] = set(initial)
    for i, step in enumerate(log.steps):
        parsed = well_formed(step.command)
        code = step.result
        joined = _join_fields(step.command) if community else None
        if joined is not None:
            agents.add(joined[0])
            e = Entry("join", code, agent=names(joined[0]))
            e.subs = frozenset(names(x) for x in joined[1])
            if code not in ("ok", "duplicate"):
                e.op, e.check = "noop", False
            entries.append(e)
            continue
        if community and parsed is not None and parsed[0] == "set_agent" and code == "ok":
            why = "the community derives its registry: set_agent must be refused"
            entries.append(Entry("bad", code, why=why))
            continue
        if parsed is None:
            if code == "ok":
                entries.append(
                    Entry(
                        "bad",
                        code,
                        why="the command is malformed (invalid_input "
                        "in docs/rules.md), yet the log accepts it",
                    )
                )
            else:
                entries.append(Entry("noop", code, check=False))
            continue
        op, f = parsed
        agent = f.get("agent")
        if isinstance(agent, str):
            agents.add(agent)
        if "artifact" in f:
            arts.add(f["artifact"])
        e = Entry(op, code)
        if op != "set_agent" and isinstance(agent, str):
            e.agent = names(agent)
        if "artifact" in f:
            e.artifact = names(f["artifact"])
        if op == "propose":
            slots.add(f["slot"])
            e.slot = names(f["slot"])
        elif op == "commit_vote":
            e.vote = bound.get(i, "*")
        elif op == "reveal_vote":
            e.vote = f["vote"]
            e.check = i not in abstracted
        elif op == "arbitrate":
            e.outcome = f["outcome"]
        elif op == "forget_vote":
            # the reference keeps micro(confidence) (Orchestrator._op_forget_vote)
            confs[i] = (micro(f.get("confidence", 1)), code == "ok")
        elif op == "resubmit" and code == "duplicate":
            e.check = False  # content (digest, evidence) is abstracted: revised by assumption
        elif op == "set_agent":
            if code == "ok":
                agent = str(f["agent"])
                new = _merge_entry(registry.get(agent), f, params)
                registry[agent] = new
                e.agent = names(agent)
                e.tier, e.barred = new.tier, new.sanction in BARRING
                e.ratelim = new.sanction == "rate_limited"
                e.subs = frozenset(names(s) for s in new.subscriptions)
                e.repok = new.reputation >= micro(params.r_resubmit)
                set_weights[i] = new.weight
            else:
                e.op, e.check = "noop", False  # refused: the registry is unchanged
        if code in _ABSTRACT_CODES:
            e.check = False
        if code == "invalid_input" and op == "set_agent":
            e.op, e.check = "noop", False
        entries.append(e)
    out = CompiledLog(log, params, constants, initial, entries, set_weights, arts, slots, agents)
    out.confs = confs
    out.conf_unit = _conf_unit(cm for cm, accepted in confs.values() if accepted)
    if community:
        for step in log.steps:
            reg = step.state.get("agents")
            for a, g in reg.items() if isinstance(reg, dict) else ():
                w = g.get("weight") if isinstance(g, dict) else None
                if isinstance(w, int | float) and not isinstance(w, bool) and micro(w) > 0:
                    out.reg_weights[a] = max(out.reg_weights.get(a, 0), micro(w))
    return out


def _conf_unit(confs: Iterable[int]) -> int:
    """ConfUnit of Lifecycle.tla for these confidences (micro): the smallest unit ``1/u``
    in which each is an integer, ``u = 10⁶ / gcd(10⁶, c…)`` (exact: ``c/10⁶ = k/u``)."""
    return MICRO // math.gcd(MICRO, *confs)


def _unit(compiled: Sequence[CompiledLog]) -> int:
    """The weight unit of a batch: the gcd of every weight it uses (micro-units)."""
    weights: list[int] = []
    for c in compiled:
        weights.append(micro(c.params.w_min))
        weights += [e.weight for e in c.initial.values()]
        weights += list(c.set_weights.values())
        weights += list(c.reg_weights.values())
    if any(w <= 0 for w in weights):
        raise UnusableLog("a weight (or w_min) of 0: spec/Lifecycle.tla assumes positive weights")
    return math.gcd(*weights)


def _views(c: CompiledLog, names: Names, unit: int) -> None:
    """Fill every entry's ``now`` and ``delta`` (the artifacts whose view changed).

    A logged state that is not a public state (a field missing or of the wrong type) is
    the implementation's error, not the log's: that step becomes one the spec cannot take
    (op ``bad``), and the steps after it are dropped."""
    last: dict[str, Rec] = {}
    for k, (e, step) in enumerate(zip(c.entries, c.log.steps, strict=True)):
        now = step.state.get("now")
        problem = (
            None
            if isinstance(now, int) and not isinstance(now, bool)
            else (f"state.now is {now!r}, not an integer")
        )
        delta: list[tuple[str, Rec]] = []
        if problem is None and c.log.layer == "community":
            e.viol = _violations(step.events, names)
            c.agents.update(names.orig(a) for a, _ in e.viol)
            try:
                e.reg = _registry_view(step.state.get("agents"), names, unit)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                problem = f"agents: {type(exc).__name__} {exc}"
        for x, a in step.state["artifacts"].items():
            if problem is not None:
                break
            try:
                view = project_artifact(a, names, unit)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                problem = f"artifact {x!r}: {type(exc).__name__} {exc}"
                break
            c.artifacts.add(x)
            c.slots.add(str(a["slot"]))
            key = names(x)
            if last.get(key) != view:
                delta.append((key, view))
                last[key] = view
        if problem is not None:
            c.entries[k:] = [
                Entry(
                    "bad",
                    step.result,
                    why=(
                        f"the logged state after this step is not a public state "
                        f"(docs/conformance.md): {problem}"
                    ),
                )
            ]
            c.set_weights = {i: w for i, w in c.set_weights.items() if i < k}
            c.confs = {i: v for i, v in c.confs.items() if i < k}
            return
        e.now = int(now)  # type: ignore[arg-type]
        e.delta = tuple(delta)


@dataclass
class Batch:
    """Logs with the same constants, checked in one TLC run."""

    logs: list[CompiledLog]
    names: Names
    unit: int
    constants: dict[str, int]
    conf_unit: int = 1  # Lifecycle.tla's ConfUnit (the same for every log: make_batches)

    @property
    def layer(self) -> str:
        return self.logs[0].log.layer

    @property
    def module(self) -> str:
        """The trace spec this batch runs (its INIT/NEXT/INVARIANT: ``trace_cfg``)."""
        return COMMUNITY_MODULE if self.layer == "community" else TRACE_MODULE


def make_batches(logs: Sequence[TraceLog]) -> tuple[list[Batch], dict[int, str]]:
    """Compile ``logs`` and group them by constants; unusable logs are returned by index
    with their message instead."""
    names = Names()
    unusable: dict[int, str] = {}
    groups: dict[tuple[Any, ...], list[tuple[int, CompiledLog]]] = {}
    for i, log in enumerate(logs):
        try:
            c = compile_log(log, names)
        except UnusableLog as exc:
            unusable[i] = str(exc)
            continue
        key = (log.layer, *c.constants.values(), micro(c.params.w_min), c.conf_unit)
        groups.setdefault(key, []).append((i, c))
    batches: list[Batch] = []
    for members in groups.values():
        good: list[CompiledLog] = []
        for i, c in members:
            try:
                _unit([c])
                good.append(c)
            except UnusableLog as exc:
                unusable[i] = str(exc)
        if not good:
            continue
        unit = _unit(good)
        ok: list[CompiledLog] = []
        for c in good:
            try:
                _views(c, names, unit)
                _check_range(c, unit)
                ok.append(c)
            except UnusableLog as exc:
                unusable[logs.index(c.log)] = str(exc)
        if ok:
            batches.append(Batch(ok, names, unit, dict(ok[0].constants), ok[0].conf_unit))
    return batches, unusable


def _check_range(c: CompiledLog, unit: int) -> None:
    """Every product the spec computes (A*100, tau*(A+R), and the forget rule's
    100·ΣW·k and alpha·ConfUnit·ΣW) must fit TLC's ints."""
    top: dict[str, int] = {a: e.weight for a, e in c.initial.items()}
    for a, w in c.reg_weights.items():
        top[a] = max(top.get(a, 0), w)
    for i, w in c.set_weights.items():
        raw = c.log.steps[i].command.get("agent")
        top[raw] = max(top.get(raw, 0), w)
    total = (sum(top.values()) + micro(c.params.w_min) * max(1, len(top))) // unit
    if 100 * total > TLC_MAX_INT:
        raise UnusableLog(
            f"{c.log.name}: the weights in units of {unit / MICRO:g} sum to {total}: "
            "too large for TLC's 32-bit integers (100 x total must stay below 2^31)"
        )
    cu = c.conf_unit
    if 100 * cu * total > TLC_MAX_INT:
        raise UnusableLog(
            f"{c.log.name}: the forget votes' confidences need the unit 1/{cu} to be exact "
            f"(spec/Lifecycle.tla: ConfUnit), and with the weights in units of "
            f"{unit / MICRO:g} summing to {total} the forget rule's products "
            f"(100 x ConfUnit x total = {100 * cu * total}) are too large for TLC's 32-bit "
            "integers (below 2^31)"
        )


# --- writing the modules ---------------------------------------------------------------------


def log_module(batch: Batch) -> str:
    """The TraceLog module of ``batch`` (LifecycleTrace.tla EXTENDS it)."""
    n = batch.names
    unit = batch.unit
    agents = sorted({n(a) for c in batch.logs for a in c.agents})
    arts = sorted({n(x) for c in batch.logs for x in c.artifacts})
    slots = sorted({n(s) for c in batch.logs for s in c.slots})
    wmin = micro(batch.logs[0].params.w_min) // unit
    lines = [
        f"---- MODULE {LOG_MODULE} ----",
        "\\* Generated by ostrom validate-trace (reference/ostrom/verify/trace/lifecycle.py)",
        "\\* from: " + ", ".join(c.log.name.replace("\n", " ") for c in batch.logs),
        f"\\* weights in units of {unit} micro ({unit / MICRO:g})",
        "EXTENDS Integers, TLC",
        f"TLAgents == {tla(frozenset(agents))}",
        f"TLArtifacts == {tla(frozenset(arts))}",
        f"TLSlots == {tla(frozenset(slots))}",
        f"TLWMin == {wmin}",
        f"TLConfUnit == {batch.conf_unit}",
        "TLArtRank == " + tla(Fn(tuple((x, i + 1) for i, x in enumerate(arts)))),
        "TLLogs == <<",
    ]
    for k, c in enumerate(batch.logs):
        slotset = set(slots)
        reg = {n(a): e for a, e in c.initial.items()}
        tier = Fn(tuple((a, reg[a].tier if a in reg else 0) for a in agents))
        weight = Fn(tuple((a, reg[a].weight // unit if a in reg else wmin) for a in agents))
        barred = frozenset(a for a in agents if a not in reg or reg[a].sanction in BARRING)
        subs = Fn(
            tuple(
                (
                    a,
                    frozenset(n(s) for s in reg[a].subscriptions if n(s) in slotset)
                    if a in reg
                    else frozenset(),
                )
                for a in agents
            )
        )
        rep = micro(c.params.r_resubmit)
        repok = frozenset(a for a in agents if a in reg and reg[a].reputation >= rep)
        ratelim = frozenset(a for a in agents if a in reg and reg[a].sanction == "rate_limited")
        for i, w in c.set_weights.items():
            c.entries[i].weight = w // unit
            c.entries[i].subs = frozenset(s for s in c.entries[i].subs if s in slotset)
        for e in c.entries:
            if e.op == "join":
                e.subs = frozenset(s for s in e.subs if s in slotset)
        # the confidences in units of 1/ConfUnit: exact for every accepted vote (the unit
        # divides them: _conf_unit); a refused vote's is rounded down (ForgetVote's
        # enabledness does not depend on it, only on its range 0..ConfUnit)
        per = MICRO // batch.conf_unit
        for i, (cm, _accepted) in c.confs.items():
            c.entries[i].conf = cm // per
        head = Rec.of(
            registered=frozenset(reg),
            tier=tier,
            weight=weight,
            barred=barred,
            ratelim=ratelim,
            subs=subs,
            repok=repok,
        )
        lines.append(f"  \\* log {k + 1}: {c.log.name}")
        lines.append("  " + tla(head)[:-1] + ", steps |-> <<")
        for j, e in enumerate(c.entries):
            sep = "," if j + 1 < len(c.entries) else ""
            lines.append(f"    {tla(e.record())}{sep}")
        lines.append("  >>]" + ("," if k + 1 < len(batch.logs) else ""))
    lines += [">>", "===="]
    return "\n".join(lines) + "\n"


def trace_cfg(batch: Batch) -> str:
    """The TLC configuration of a trace run."""
    consts = dict(batch.constants)
    consts["WMin"] = micro(batch.logs[0].params.w_min) // batch.unit
    community = batch.module == COMMUNITY_MODULE
    lines = [
        "\\* Generated by ostrom validate-trace",
        "INIT CTraceInit" if community else "INIT TraceInit",
        "NEXT CTraceNext" if community else "NEXT TraceNext",
        "CONSTANTS",
        "    Agents <- TLAgents",
        "    Artifacts <- TLArtifacts",
        "    Slots <- TLSlots",
        "    Proposals <- TLProposals",
        "    ForgetVotes <- TLForgetVotes",
        "    ConfUnit <- TLConfUnit",
        "    ForgetConfidences <- TLForgetConfidences",
        "    Picks <- TracePicks",
        '    Mutation = "none"',
    ]
    lines += [f"    {k} = {v}" for k, v in consts.items()]
    lines += ["INVARIANT CWatch" if community else "INVARIANT Watch", ""]
    return "\n".join(lines)


# --- running TLC -------------------------------------------------------------------------------


@dataclass
class TlcResult:
    exit_code: int
    seconds: float
    prints: list[Value]
    error: str | None  # None: TLC finished without an error or a violation
    timed_out: bool
    distinct_states: int | None
    run_dir: Path
    outcome: TlcOutcome


_OSTROM_PRINT: Final = re.compile(r'<<\s*"ostrom-')


def run_java_tlc(
    run_dir: Path,
    module: str,
    cfg: str,
    extra: Sequence[str] = (),
    *,
    timeout: float | None = None,
    on_print: Callable[[Value], None] | None = None,
) -> TlcResult:
    """Run TLC (one worker, ``-tool``) on ``run_dir/module.tla``; collect the ``PrintT``
    values that are tuples starting with a string ``ostrom-...`` (the prints of
    LifecycleTrace.tla's Watch, or of the simulation model)."""
    jar, java = find_jar(), find_java()
    run_dir = run_dir.resolve()  # java runs in it: a relative path would resolve twice
    (run_dir / "meta").mkdir(exist_ok=True)
    (run_dir / "tmp").mkdir(exist_ok=True)
    cmd = tlc_command(java, jar, run_dir, module, cfg, workers=1, fp=0, extra=extra)
    parser = ToolOutputParser()
    prints: list[Value] = []
    pending: list[str] | None = None  # the lines so far of a multi-line ostrom print

    def on_line(line: str) -> None:
        nonlocal pending
        before = len(parser.print_lines)
        parser.feed(line)
        for text in parser.print_lines[before:]:
            # a long value is printed over several lines ("<< " first): join them
            if pending is not None:
                pending.append(text)
            elif _OSTROM_PRINT.match(text):
                pending = [text]
            else:
                continue
            try:
                value = parse_value(" ".join(pending))
            except ValueParseError:
                if len(pending) > 10_000:
                    pending = None
                continue
            pending = None
            prints.append(value)
            if on_print is not None:
                on_print(value)

    started = time.monotonic()
    run = stream_process(cmd, run_dir, timeout, on_line)
    exit_code, lines = run.exit_code, run.lines
    (run_dir / "tlc.out").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.rmtree(run_dir / "meta", ignore_errors=True)
    shutil.rmtree(run_dir / "tmp", ignore_errors=True)
    outcome = parser.finish(exit_code)
    error = None
    if run.timed_out:
        error = f"TLC timed out after {timeout:g} s"
    elif outcome.kind != "pass":
        error = outcome.error_text or outcome.got
    return TlcResult(
        exit_code,
        time.monotonic() - started,
        prints,
        error,
        run.timed_out,
        outcome.distinct_states,
        run_dir,
        outcome,
    )


def stage_trace_run(run_dir: Path, batch: Batch) -> None:
    """Write the four modules and the cfg of a trace run into ``run_dir``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    spec = (SPEC_DIR / "Lifecycle.tla").read_text(encoding="utf-8")
    (run_dir / f"{REGVAR_MODULE}.tla").write_text(registry_variable_spec(spec), encoding="utf-8")
    copied = ["LifecycleTable.tla", f"{TRACE_MODULE}.tla"]
    if batch.module == COMMUNITY_MODULE:
        copied += ["Sanctions.tla", f"{COMMUNITY_MODULE}.tla"]
    for name in copied:
        shutil.copyfile(SPEC_DIR / name, run_dir / name)
    (run_dir / f"{LOG_MODULE}.tla").write_text(log_module(batch), encoding="utf-8")
    (run_dir / f"{batch.module}.cfg").write_text(trace_cfg(batch), encoding="utf-8")


# --- verdicts -------------------------------------------------------------------------------------


@dataclass
class Failure:
    """The first step of a log that no behaviour of the spec gets past."""

    step: int  # 0-based index among the steps
    line: int  # line of the log file
    command: Any
    result: str
    kind: str  # "command" | "refusal" | "state" | "not-a-spec-command"
    action: str  # the spec action expected
    message: str
    differences: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "line": self.line,
            "command": self.command,
            "result": self.result,
            "kind": self.kind,
            "action": self.action,
            "message": self.message,
            "differences": self.differences,
        }


@dataclass
class Verdict:
    """What validate-trace says about one log."""

    name: str
    status: str  # "accepted" | "rejected" | "unusable" | "error"
    steps: int
    matched: int  # steps every one of which some behaviour follows
    message: str
    failure: Failure | None = None
    seconds: float = 0.0
    distinct_states: int | None = None
    spec: str = LIFECYCLE_SPEC  # the spec the log was checked against

    @property
    def exit_code(self) -> int:
        return {"accepted": EXIT_ACCEPTED, "rejected": EXIT_REJECTED}.get(
            self.status, EXIT_UNUSABLE
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "ostrom-validate-trace/1",
            "file": self.name,
            "spec": self.spec,
            "status": self.status,
            "accepted": self.status == "accepted",
            "steps": self.steps,
            "matched": self.matched,
            "message": self.message,
            "failure": None if self.failure is None else self.failure.to_json(),
            "seconds": round(self.seconds, 2),
            "distinct_states": self.distinct_states,
        }


def _py(value: Any, names: Names) -> Any:
    """A TLC value as plain Python for messages (sets sorted lists, ids un-aliased)."""
    if isinstance(value, TlaSet):
        items = [_py(v, names) for v in value.elems]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, tuple):
        return [_py(v, names) for v in value]
    if isinstance(value, TlaRecord):
        return {k: _py(v, names) for k, v in value.fields}
    if isinstance(value, TlaFunction):
        return {str(_py(k, names)): _py(v, names) for k, v in value.pairs}
    if isinstance(value, ModelValue | Opaque):
        return str(value)
    if isinstance(value, str):
        return names.orig(value)
    return value


_FIELD_NAMES: Final = {
    "content": "digest (null once forgotten)",
    "ballot": "(ballot, phase)",
    "revealed": "revealed (voter, vote)",
    "decision": "decision (path, winner weight, loser weight, winner voters, loser voters)",
}


#: How a message names the spec steps of the commands that are not one action
#: (lifecycle.COMMAND_ACTIONS: tick; set_agent has none; CommunityTrace.tla's Join).
_OTHER_ACTIONS: Final = {
    "tick": f"{COMMAND_ACTIONS['tick'][0]} (with the due Recruit, "
    + " and ".join(COMMAND_ACTIONS["tick"][1:])
    + " steps)",
    "set_agent": "set_agent (the registry variables)",
    "join": "Join",
}


def _action_text(e: Entry, names: Names) -> str:
    if e.op in ("tick", "set_agent", "noop", "bad"):
        return _OTHER_ACTIONS.get(e.op, e.op)
    args = [a for a in (e.agent, e.artifact, e.slot) if a != NONE]
    if e.op in ("commit_vote", "reveal_vote") and e.vote != NONE:
        args.append(e.vote if e.vote != "*" else "some vote")
    if e.op == "arbitrate":
        args.append(e.outcome)
    shown = ", ".join(str(names.orig(a)) for a in args)
    if e.op == "forget_vote":
        shown += f", {e.conf}"  # the confidence in units of 1/ConfUnit
    return f"{SINGLE_ACTIONS.get(e.op) or _OTHER_ACTIONS[e.op]}({shown})"


def _describe(
    c: CompiledLog, names: Names, cursor: int, phase: str, why: Value
) -> tuple[str, str, list[dict[str, Any]]]:
    """(kind, message, differences) of a dead end (LifecycleTrace.tla: Why)."""
    e = c.entries[cursor]
    w = _py(why, names)
    action = _action_text(e, names)
    if e.op == "bad":
        return "not-a-spec-command", e.why, []
    if isinstance(w, dict) and w.get("kind") == "registry":
        return _registry_failure(e, w, action)
    if e.op == "join" and isinstance(w, dict):
        if e.code == "ok":
            return "command", f"{action}: the agent is already registered", []
        return "refusal", f"refused as {e.code}, but the agent is not registered", []
    if isinstance(w, dict) and w.get("kind") == "state":
        diffs: list[dict[str, Any]] = []
        spec_now, log_now = w["now"]
        if spec_now != log_now:
            diffs.append({"artifact": None, "field": "now", "spec": spec_now, "log": log_now})
        for x in w["spec_only"]:
            diffs.append({"artifact": x, "field": "exists", "spec": True, "log": False})
        for x in w["log_only"]:
            diffs.append({"artifact": x, "field": "exists", "spec": False, "log": True})
        for x, fields in sorted(w["diff"].items()):
            # when the lifecycle state differs, the rest of the view follows from it
            order = ["state"] if "state" in fields else sorted(fields)
            for f in order:
                s, lg = fields[f]
                diffs.append({"artifact": x, "field": f, "spec": s, "log": lg})
        parts = [
            (f"{d['artifact']}." if d["artifact"] else "")
            + f"{_FIELD_NAMES.get(d['field'], d['field'])}: spec {json.dumps(d['spec'])}, "
            f"log {json.dumps(d['log'])}"
            for d in diffs
        ]
        if e.code != "ok":
            head = f"the command was refused ({e.code}), so the state must not change, but"
        elif e.op == "tick":
            head = "after Tick and the due Recruit/Timeout/Forget steps"
        else:
            head = f"after {action}"
        return (
            "state",
            f"{head} the logged state differs from the spec's: " + "; ".join(parts),
            diffs,
        )
    if not isinstance(w, dict):
        return "command", f"no behaviour of the spec takes {action} here", []
    view = _spec_view_text(w)
    rate = _rate_text(e, w)
    if w.get("kind") == "command":
        if not w.get("in_domain"):
            if (
                e.op != "propose"
                and isinstance(w.get("artifact"), dict)
                and (w["artifact"].get("st") == "none")
            ):
                return "command", f"{action}: the artifact does not exist in the spec", []
            return "command", f"{action}: the agent is not in the registry", []
        if w.get("enabled") and rate is not None and rate[0] >= rate[1]:
            return (
                "command",
                f"{action} exceeds the per-round rate limit: the agent has {rate[2]} "
                f"{rate[0]} time(s) this round, the limit is {rate[1]}{view}",
                [],
            )
        return "command", f"the spec does not allow {action} here{view}", []
    # a refusal
    if e.op == "tick":
        return "refusal", f"refused a tick ({e.code}): the spec's Tick is always possible", []
    if e.code == "unknown_agent":
        return "refusal", f"refused as unknown_agent, but the agent is registered{view}", []
    if e.code == "unknown_artifact":
        return "refusal", f"refused as unknown_artifact, but the artifact exists{view}", []
    if not w.get("in_domain"):
        msg = f"refused as {e.code}, but the spec cannot even evaluate {action}"
        if isinstance(w.get("agent"), dict) and not w["agent"].get("registered"):
            msg += " (the agent is not registered: unknown_agent comes first)"
        elif isinstance(w.get("artifact"), dict) and w["artifact"].get("st") == "none":
            msg += " (the artifact does not exist: unknown_artifact comes first)"
        return "refusal", msg, []
    if e.code == "rate_limited" and w.get("enabled") and rate is not None:
        return (
            "refusal",
            f"refused as rate_limited, but the agent has {rate[2]} only {rate[0]} time(s) "
            f"this round, below its limit {rate[1]} (a refused command must not count){view}",
            [],
        )
    return "refusal", f"refused as {e.code}, but the spec allows {action} here{view}", []


def _rate_text(e: Entry, w: Mapping[str, Any]) -> tuple[int, int, str] | None:
    """(count, limit, what) of the rate limit ``e`` is under (Why's ``rate``), or None."""
    rate = w.get("rate")
    if e.op not in ("propose", "resubmit", "dispute", "urgent_report") or not isinstance(
        rate, list
    ):
        return None
    what = "proposed or resubmitted" if e.op in ("propose", "resubmit") else "disputed or reported"
    return int(rate[0]), int(rate[1]), what


def _registry_failure(
    e: Entry, w: Mapping[str, Any], action: str
) -> tuple[str, str, list[dict[str, Any]]]:
    """A community step after which the logged registry is not the derived one
    (CommunityTrace.tla: CWhy, kind "registry")."""
    diffs: list[dict[str, Any]] = []
    for a in sorted(set(w["logged"]) ^ set(w["registered"])):
        diffs.append(
            {
                "artifact": None,
                "field": f"agents.{a}",
                "spec": a in w["registered"],
                "log": a in w["logged"],
            }
        )
    for a, fields in sorted(w["diff"].items()):
        for f, (spec, log) in sorted(fields.items()):
            diffs.append({"artifact": None, "field": f"agents.{a}.{f}", "spec": spec, "log": log})
    parts = [
        f"{d['field']}: spec {json.dumps(d['spec'])}, log {json.dumps(d['log'])}" for d in diffs
    ]
    head = "the step" if e.op in ("noop", "bad") else action
    why = {
        "sanction": "the level spec/Sanctions.tla gives for the violations the events report",
        "tier": "the tier rule over the logged reputation",
        "weight": "weights change only at a tick",
    }
    reasons = sorted(
        {why[d["field"].rsplit(".", 1)[-1]] for d in diffs if d["field"].count(".") == 2}
    )
    return (
        "state",
        f"after {head} the logged registry differs from the derived one "
        f"({'; '.join(reasons) or 'registered agents'}): " + "; ".join(parts),
        diffs,
    )


def _spec_view_text(w: Mapping[str, Any]) -> str:
    """The spec's record of the artifact and the agent's registry entry, briefly."""
    parts: list[str] = []
    a = w.get("artifact")
    if isinstance(a, dict):
        keep = (
            "st",
            "slot",
            "sub",
            "hidden",
            "timer",
            "dphase",
            "round",
            "reviewers",
            "reviewed",
            "commits",
            "reveals",
            "fvotes",
            "disputes",
            "resubs",
            "cool",
            "rerecruited",
            "revoted",
        )
        parts.append(
            "spec artifact: " + ", ".join(f"{k}={json.dumps(a[k])}" for k in keep if k in a)
        )
    g = w.get("agent")
    if isinstance(g, dict):
        parts.append("spec registry entry: " + json.dumps(g, sort_keys=True))
    if w.get("due"):
        parts.append("a timeout or forget is due")
    return " (" + "; ".join(parts) + ")" if parts else ""


@contextmanager
def run_directory(keep: Path | None, label: str, prefix: str) -> Iterator[Path]:
    """Where a TLC run is staged: ``keep/label`` (emptied first, kept afterwards) or a
    temporary directory removed afterwards."""
    if keep is not None:
        run_dir = keep / label
        if run_dir.exists():
            shutil.rmtree(run_dir)
    else:
        run_dir = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield run_dir
    finally:
        if keep is None:
            shutil.rmtree(run_dir, ignore_errors=True)


def validate_batches(
    logs: Sequence[Any],
    batches: Sequence[Any],
    unusable: Mapping[int, str],
    run_batch: Callable[[Path, Any], Mapping[int, Verdict]],
    *,
    keep: Path | None,
    prefix: str,
    spec: str,
) -> list[Verdict]:
    """A verdict for each of ``logs``: ``unusable`` ones (index -> why) as such, the rest
    from ``run_batch(run_dir, batch)`` (one TLC run per batch; its keys index
    ``batch.logs``, whose ``.log`` is one of ``logs``)."""
    verdicts: dict[int, Verdict] = {
        i: Verdict(logs[i].name, "unusable", len(logs[i].steps), 0, msg, spec=spec)
        for i, msg in unusable.items()
    }
    index = {id(log): i for i, log in enumerate(logs)}  # by identity: equal logs stay apart
    for b, batch in enumerate(batches):
        label = f"batch-{b + 1}" if len(batches) > 1 else "trace"
        with run_directory(keep, label, prefix) as run_dir:
            for k, v in run_batch(run_dir, batch).items():
                verdicts[index[id(batch.logs[k].log)]] = v
    return [verdicts[i] for i in range(len(logs))]


def validate_paths_with(
    read: Callable[[Path], L],
    validate: Callable[..., list[Verdict]],
    paths: Sequence[Path],
    timeout: float | None,
    spec: str,
) -> list[Verdict]:
    """``validate_paths`` of a layer's trace module: read each file with ``read``, validate
    the readable ones together with ``validate``; a verdict per path, in order."""
    logs: list[L] = []
    verdicts: dict[int, Verdict] = {}
    for i, p in enumerate(paths):
        try:
            logs.append(read(p))
        except UnusableLog as exc:
            verdicts[i] = Verdict(str(p), "unusable", 0, 0, str(exc), spec=spec)
    ok = iter(validate(logs, timeout=timeout))
    return [verdicts[i] if i in verdicts else next(ok) for i in range(len(paths))]


def validate_file_with(
    read: Callable[[Path], L],
    validate: Callable[..., list[Verdict]],
    path: Path,
    spec: str,
    *,
    keep: Path | None,
    timeout: float | None,
    progress: Callable[[str], None] | None,
) -> Verdict:
    """``validate_file`` of a layer's trace module (``ostrom validate-trace FILE``)."""
    started = time.monotonic()
    try:
        log = read(path)
    except UnusableLog as exc:
        return Verdict(str(path), "unusable", 0, 0, str(exc), spec=spec)
    if progress is not None:
        progress(f"compiling {len(getattr(log, 'steps', ()))} steps of {path}")
    verdict = validate([log], keep=keep, timeout=timeout, progress=progress)[0]
    verdict.seconds = time.monotonic() - started
    return verdict


def validate_logs(
    logs: Sequence[TraceLog],
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
        prefix="ostrom-trace-",
        spec=LIFECYCLE_SPEC,
    )


def _run_batch(
    run_dir: Path, batch: Batch, timeout: float | None, progress: Callable[[str], None] | None
) -> dict[int, Verdict]:
    try:
        stage_trace_run(run_dir, batch)
    except (OSError, ValueError) as exc:  # e.g. Lifecycle.tla's CONSTANTS no longer as expected
        return {
            k: _error(c, f"cannot stage the trace run: {exc}") for k, c in enumerate(batch.logs)
        }
    total = sum(len(c.entries) for c in batch.logs)
    tops: dict[int, int] = {}
    last_report = [0.0]

    def on_print(v: Value) -> None:
        if progress is None or not isinstance(v, tuple) or v[0] != "ostrom-cursor":
            return
        tops[_nat(v[1])] = _nat(v[2])
        now = time.monotonic()
        if now - last_report[0] >= 1.0:
            last_report[0] = now
            progress(f"TLC: {sum(tops.values())}/{total} steps followed")

    if progress is not None:
        progress(f"TLC: {len(batch.logs)} log(s), {total} steps ({run_dir})")
    try:
        res = run_java_tlc(
            run_dir,
            batch.module,
            f"{batch.module}.cfg",
            ["-deadlock"],
            timeout=timeout,
            on_print=on_print,
        )
    except TlcSetupError as exc:
        return {k: _error(c, str(exc)) for k, c in enumerate(batch.logs)}
    if progress is not None:
        progress(f"TLC: finished in {res.seconds:.1f} s, {res.distinct_states} distinct states")
    return _verdicts(batch, res)


def _nat(v: Value) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"expected an integer from TLC, got {v!r}")
    return v


def _error(c: CompiledLog, message: str, seconds: float = 0.0) -> Verdict:
    return Verdict(c.log.name, "error", len(c.log.steps), 0, message, seconds=seconds)


def _verdicts(batch: Batch, res: TlcResult) -> dict[int, Verdict]:
    """The verdict of each log of the batch from the prints of LifecycleTrace.tla's Watch:
    accepted iff its cursor reached the end, else rejected at the deepest cursor."""
    top: dict[int, int] = {}
    dead: dict[int, list[tuple[int, str, Value]]] = {}
    for v in res.prints:
        if not isinstance(v, tuple) or len(v) < 3:
            continue
        k = _nat(v[1]) - 1
        cur = _nat(v[2])
        if v[0] == "ostrom-cursor":
            top[k] = max(top.get(k, -1), cur)
        elif v[0] == "ostrom-deadend" and len(v) == 5:
            dead.setdefault(k, []).append((cur, str(v[3]), v[4]))
    out: dict[int, Verdict] = {}
    share = res.seconds / max(1, len(batch.logs))
    spec = TRACE_SPECS[batch.layer]
    for k, c in enumerate(batch.logs):
        n = len(c.log.steps)
        if res.error is not None and top.get(k, -1) < n:
            out[k] = _error(c, f"TLC failed: {res.error}", share)
            continue
        if k not in top:
            out[k] = Verdict(
                c.log.name,
                "unusable",
                n,
                0,
                "the spec's assumptions (LifecycleAssumptions of spec/Lifecycle.tla) do not "
                "hold for this log's parameters and registry",
                seconds=share,
            )
            continue
        reached = top[k]
        if reached >= n:
            out[k] = Verdict(
                c.log.name,
                "accepted",
                n,
                n,
                f"accepted: all {n} steps are a behaviour of {spec}",
                seconds=share,
                distinct_states=res.distinct_states,
                spec=spec,
            )
            continue
        ends = [d for d in dead.get(k, []) if d[0] == reached]
        step = c.log.steps[reached]
        if ends:
            kind, msg, diffs = _describe(c, batch.names, reached, ends[0][1], ends[0][2])
            others = {_describe(c, batch.names, reached, p, w)[1] for _, p, w in ends[1:]}
            others.discard(msg)
            if others:
                msg += " (other behaviours end here too: " + " | ".join(sorted(others)) + ")"
        else:
            kind, msg, diffs = "command", "no behaviour of the spec gets past this step", []
        failure = Failure(
            reached,
            step.line,
            step.command,
            step.result,
            kind,
            _action_text(c.entries[reached], batch.names),
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
            spec,
        )
    return out


#: layer -> the module that validates its logs.  Each has ``validate_file(path, *, keep,
#: timeout, progress) -> Verdict`` and ``validate_paths(paths, *, timeout) -> list[Verdict]``.
LAYER_TRACES: Final[dict[str, str]] = {
    "lifecycle": __name__,
    "sanctions": "ostrom.verify.trace.sanctions",
    "pbft": "ostrom.verify.trace.pbft",
    "community": __name__,  # spec/CommunityTrace.tla, compiled here too
}


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


def validate_paths(paths: Sequence[Path], *, timeout: float | None = None) -> list[Verdict]:
    """Validate lifecycle log files (batched); a verdict each (``LAYER_TRACES`` interface)."""
    return validate_paths_with(read_log, validate_logs, paths, timeout, LIFECYCLE_SPEC)


def validate_file(
    path: Path,
    *,
    keep: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Verdict:
    """Validate one log file (``ostrom validate-trace FILE``) against the trace spec of
    the layer its header names (``LAYER_TRACES``)."""
    layer = header_layer(path)
    if layer in LAYER_TRACES and LAYER_TRACES[layer] != __name__:
        other = importlib.import_module(LAYER_TRACES[layer])
        verdict: Verdict = other.validate_file(path, keep=keep, timeout=timeout, progress=progress)
        return verdict
    return validate_file_with(
        read_log, validate_logs, path, LIFECYCLE_SPEC, keep=keep, timeout=timeout, progress=progress
    )


# --- the command line ------------------------------------------------------------------------


def format_verdict(v: Verdict) -> str:
    """The human report of one verdict."""
    if v.status == "accepted":
        return (
            f"ACCEPTED {v.name}: all {v.steps} steps are a behaviour of {v.spec} "
            f"({v.seconds:.1f} s)"
        )
    if v.status != "rejected" or v.failure is None:
        return f"{v.status.upper()} {v.name}: {v.message}"
    f = v.failure
    lines = [
        f"REJECTED {v.name}: step {f.step + 1} of {v.steps} (line {f.line}) is not allowed "
        f"by {v.spec}"
        + (f"; steps 1-{f.step} are allowed" if f.step else "")
        + f" ({v.seconds:.1f} s)",
        f"  command: {json.dumps(f.command, sort_keys=True)}",
        f"  result:  {f.result}",
        f"  expected spec step: {f.action}",
    ]
    if f.differences:
        lines.append("  state after the step, spec vs log:")
        for d in f.differences:
            where = f"{d['artifact']}." if d["artifact"] else ""
            name = _FIELD_NAMES.get(d["field"], d["field"])
            lines.append(
                f"    {where}{name}: spec {json.dumps(d['spec'])}, log {json.dumps(d['log'])}"
            )
    else:
        lines.append(f"  why: {f.message}")
    return "\n".join(lines)


def main(
    file: Path,
    *,
    as_json: bool = False,
    keep: Path | None = None,
    timeout: float | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """``ostrom validate-trace``: 0 accepted, 1 rejected, 2 unusable input (or TLC failed)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr

    def progress(text: str) -> None:
        print(text, file=err, flush=True)

    verdict = validate_file(file, keep=keep, timeout=timeout, progress=progress)
    if as_json:
        print(json.dumps(verdict.to_json(), indent=2), file=out)
    else:
        print(format_verdict(verdict), file=out)
    return verdict.exit_code


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ostrom.verify.trace.lifecycle")
    p.add_argument("file", type=Path)
    p.add_argument("--json", action="store_true")
    p.add_argument("--keep", type=Path, default=None)
    p.add_argument("--timeout", type=float, default=None)
    return p


def _cli(argv: Iterable[str] | None = None) -> int:  # pragma: no cover
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    return main(args.file, as_json=args.json, keep=args.keep, timeout=args.timeout)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_cli())
