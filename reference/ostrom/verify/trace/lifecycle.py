"""The lifecycle trace compiler: a log of spec/Lifecycle.tla's layer as the TLA+ TraceLog.

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
  against TLC's 32-bit integers; in a community log every weight of every logged registry
  counts (``reg_all_weights``), since Derive hands each of them to the next tally;
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

import math
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ostrom import layout
from ostrom.protocol.agents import BARRING, MICRO, micro
from ostrom.protocol.commands import JOIN, checked_fields, well_formed
from ostrom.protocol.lifecycle import (
    ACTIVE,
    ARBITRATION,
    BALLOT_KINDS,
    COMMIT,
    DISPUTED,
    FORGOTTEN,
    REVEAL,
    STATES,
    TIMED,
    TRANSIENT,
)
from ostrom.protocol.params import ParamError, Params
from ostrom.protocol.params import table as param_table
from ostrom.protocol.voting import BALLOT_VOTES, BallotKind
from ostrom.verify.tlc.values import TlaFunction, TlaRecord, TlaSet, function, record, tla
from ostrom.verify.trace.log import (
    LOG_MODULE,
    NONE,
    Names,
    TraceLog,
    UnusableLog,
    require_steps,
)
from ostrom.verify.trace.regvar import REGVAR_MODULE, registry_variable_spec

__all__ = [
    "VIEW_FIELDS",
    "VIEW_SHOWN",
    "Batch",
    "CompiledLog",
    "Entry",
    "declared_constants",
    "lifecycle_constants",
    "make_batches",
    "pct_gap",
    "project_artifact",
    "spec_constants",
    "spec_view",
    "stage_trace_run",
]

TRACE_MODULE: Final = "LifecycleTrace"
#: The trace spec of community logs (EXTENDS LifecycleTrace, INSTANCE Sanctions).
COMMUNITY_MODULE: Final = "CommunityTrace"
#: TLC's integers are 32-bit: every product the spec computes must stay below this.
TLC_MAX_INT: Final = 2**31 - 1


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
    """The numeric constants of Lifecycle.tla and LifecycleTrace.tla (the rate limits) for
    ``params``: each parameter the table maps to a CONSTANT (``ParamInfo.tla``), a share
    as a whole percentage (WMin is added per batch)."""
    out: dict[str, int] = {}
    for row in param_table():
        if row.tla is None:
            continue
        value = getattr(params, row.name)
        if row.unit == "share":
            out[row.tla] = _percent(row.name, value)
        else:
            assert isinstance(value, int), f"{row.name}: a spec constant is an integer"
            out[row.tla] = value
    return out


def declared_constants(spec: Path | None = None) -> tuple[str, ...]:
    """The CONSTANTS spec/Lifecycle.tla (or ``spec``, a copy of it) declares, in the order of
    its CONSTANTS block (up to ASSUME); ``ValueError`` if it has no such block."""
    text = (spec or layout.SPEC_DIR / "Lifecycle.tla").read_text(encoding="utf-8")
    start, end = text.find("\nCONSTANTS"), text.find("\nASSUME")
    if start < 0 or end < start:
        raise ValueError(f"{spec or 'spec/Lifecycle.tla'}: no CONSTANTS block before ASSUME")
    block = re.sub(r"\\\*[^\n]*", "", text[start + len("\nCONSTANTS") : end])  # \* comments
    return tuple(re.findall(r"[A-Za-z_]\w*", block))


def lifecycle_constants() -> frozenset[str]:
    """The CONSTANTS spec/Lifecycle.tla declares (its CONSTANTS block, up to ASSUME)."""
    return frozenset(declared_constants())


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
    delta: tuple[tuple[str, TlaRecord], ...] = ()
    why: str = ""  # for op "bad": what makes the step impossible
    # community logs only (CommunityTrace.tla): the violations the step's events report,
    # in order, and the logged registry after the step (None: a lifecycle log)
    viol: tuple[tuple[str, str], ...] = ()
    reg: TlaFunction | None = None

    def record(self) -> TlaRecord:
        base = record(
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
            delta=function(self.delta),
        )
        if self.reg is None:
            return base
        return TlaRecord((*base.fields, ("viol", self.viol), ("reg", self.reg)))


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
    """(agent, subscriptions) of a well-formed ``join`` (commands.JOIN; community.py:
    Community._join)."""
    if not isinstance(command, dict) or command.get("op") != JOIN.op:
        return None
    fields = checked_fields(
        command,
        {k: t.check for k, t in JOIN.required.items()},
        {k: t.check for k, t in JOIN.optional.items()},
    )
    if fields is None:
        return None
    return fields["agent"], list(fields.get("subscriptions", []))


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
    """A logged list of ids as the set of their TLA+ spellings."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"expected a list of ids, got {value!r}")
    return frozenset(names(v) for v in value)


#: The fields of an artifact's view, in the order of LifecycleTrace.tla's View record.
VIEW_FIELDS: Final = (
    "state",
    "slot",
    "submitter",
    "hidden",
    "dispute_count",
    "resubmit_count",
    "content",
    "deadline",
    "ballot",
    "reviewers",
    "committed",
    "revealed",
    "forget_voters",
    "decision",
)
_EVERY_STATE: Final = frozenset(STATES)
#: The states in which the view shows a field (every state for the fields not named);
#: in the others the field is its blank (``VIEW_BLANKS``).  LifecycleTrace.tla's View
#: writes the same conditions (property_tests/verify/test_validate_trace.py compares them).
VIEW_SHOWN: Final[dict[str, frozenset[str]]] = {
    "ballot": TRANSIENT,
    "reviewers": TRANSIENT | {ACTIVE},
    "committed": TRANSIENT,
    "revealed": TRANSIENT,
    "forget_voters": _EVERY_STATE - {FORGOTTEN},
    "decision": frozenset({ACTIVE}),  # LC-SAFE-1: only an active artifact keeps its decision
}
VIEW_BLANKS: Final[dict[str, object]] = {
    "ballot": (NONE, NONE),
    "reviewers": frozenset(),
    "committed": frozenset(),
    "revealed": frozenset(),
    "forget_voters": frozenset(),
    "decision": (NONE, 0, 0, 0, 0),
}
#: The decision paths decided by a tally, and their (winning, losing) sides: the view
#: keeps the tally of these only (LifecycleTrace.tla: DecisionView).
TALLY_PATHS: Final = {"tally": ("accept", "reject"), "dispute_kept": ("keep", "retract")}


def artifact_view(state: str, value: Callable[[str], object]) -> TlaRecord:
    """The view of an artifact in ``state``: what the spec and the public state both say
    about it (LifecycleTrace.tla: View).  ``value(field)`` reads a field from the source
    (a logged public artifact, ``project_artifact``; a spec record, ``spec_view``) and is
    asked only for the fields the view shows in ``state``."""
    return record(
        **{
            f: value(f) if state in VIEW_SHOWN.get(f, _EVERY_STATE) else VIEW_BLANKS[f]
            for f in VIEW_FIELDS
        }
    )


def project_artifact(a: Mapping[str, Any], names: Names, unit: int) -> TlaRecord:
    """The view of one logged artifact (``artifact_view`` of the public state).  ``unit``
    divides the tally weights (micro-units)."""
    st = a["state"]
    if st not in STATES:
        raise ValueError(f"unknown state {st!r}")
    deadline = a["deadline"]
    if deadline is not None and (not isinstance(deadline, int) or isinstance(deadline, bool)):
        raise ValueError(f"deadline {deadline!r}")
    for key in ("hidden",):
        if not isinstance(a[key], bool):
            raise ValueError(f"{key} must be a boolean")
    for key in ("dispute_count", "resubmit_count"):
        if not isinstance(a[key], int) or isinstance(a[key], bool):
            raise ValueError(f"{key} must be an integer")

    def revealed() -> frozenset[tuple[str, str]]:
        if a["revealed"] is None:
            return frozenset()
        if not isinstance(a["revealed"], dict):
            raise ValueError("revealed must be null or an object")
        return frozenset((names(k), str(v)) for k, v in a["revealed"].items())

    fields: dict[str, Callable[[], object]] = {
        "state": lambda: st,
        "slot": lambda: names(str(a["slot"])),
        "submitter": lambda: names(str(a["submitter"])),
        "hidden": lambda: a["hidden"],
        "dispute_count": lambda: a["dispute_count"],
        "resubmit_count": lambda: a["resubmit_count"],
        "content": lambda: a["digest"] is not None,
        "deadline": lambda: -1 if deadline is None else deadline,
        "ballot": lambda: (a["ballot"] or "none", a["phase"] or "none"),
        "reviewers": lambda: _ids(a["reviewers"], names),
        "committed": lambda: _ids(a["committed"], names),
        "revealed": revealed,
        "forget_voters": lambda: _ids(a["forget_voters"], names),
        "decision": lambda: _decision_view(a["decision"], unit),
    }
    return artifact_view(st, lambda f: fields[f]())


def _decision_view(d: Any, unit: int) -> tuple[Any, ...]:
    """LifecycleTrace.tla: DecisionView of an active artifact.  A tally weight that is no
    multiple of ``unit`` cannot be a sum of the registry's weights: it is written -1
    (never equal)."""
    if not isinstance(d, dict) or not isinstance(d.get("path"), str):
        raise ValueError("an active artifact needs a decision with a path")
    path = d["path"]
    sides = TALLY_PATHS.get(path)
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


def spec_view(r: TlaRecord, now: int) -> TlaRecord:
    """The view of a spec artifact record at clock ``now`` (``artifact_view`` of
    Lifecycle.tla's record, as LifecycleTrace.tla's View computes it); equal to
    ``project_artifact`` of the reference's public artifact when the two agree."""

    def g(name: str) -> Any:
        return r.get(name)

    def elems(v: Any) -> tuple[Any, ...]:
        if not isinstance(v, TlaSet):
            raise ValueError(f"expected a set, got {v!r}")
        return v.elems

    st, rnd = str(g("st")), g("round")
    # LifecycleTrace.tla: BallotView, for the transient states
    ballots = {COMMIT: "review", REVEAL: "review", ARBITRATION: "review", DISPUTED: "dispute"}
    phases = {COMMIT: COMMIT, REVEAL: REVEAL, ARBITRATION: "closed"}

    def decision() -> tuple[Any, ...]:
        d = g("decision")
        if not isinstance(d, TlaRecord):
            raise ValueError(f"decision {d!r}")
        how = str(d.get("how"))
        if how not in TALLY_PATHS:
            return (how, 0, 0, 0, 0)
        return (how, d.get("acc"), d.get("rej"), d.get("nacc"), d.get("nrej"))

    fields: dict[str, Callable[[], object]] = {
        "state": lambda: st,
        "slot": lambda: str(g("slot")),
        "submitter": lambda: str(g("sub")),
        "hidden": lambda: bool(g("hidden")),
        "dispute_count": lambda: g("disputes"),
        "resubmit_count": lambda: g("resubs"),
        "content": lambda: bool(g("content")),
        "deadline": lambda: now + int(g("timer")) if st in TIMED else -1,
        "ballot": lambda: (
            ballots.get(st, "none"),
            str(g("dphase")) if st == DISPUTED else phases.get(st, "none"),
        ),
        "reviewers": lambda: frozenset(str(e) for e in elems(g("reviewers"))),
        "committed": lambda: frozenset(str(c[0]) for c in elems(g("commits")) if c[1] == rnd),
        "revealed": lambda: frozenset(
            (str(c[0]), str(c[2])) for c in elems(g("reveals")) if c[1] == rnd
        ),
        # fvotes: <<voter, confidence>>
        "forget_voters": lambda: frozenset(str(v[0]) for v in elems(g("fvotes"))),
        "decision": decision,
    }
    return artifact_view(st, lambda f: fields[f]())


def _registry_view(reg: Any, names: Names, unit: int) -> TlaFunction:
    """The logged registry of a community state (CommunityTrace.tla: E.reg): per agent
    its tier, weight (in ``unit``), sanction and E (``reputation_micro``)."""
    if not isinstance(reg, dict):
        raise ValueError("a community state needs an agents object")
    out: list[tuple[str, TlaRecord]] = []
    for a, g in sorted(reg.items()):
        tier, weight, sanction, rep = g["tier"], g["weight"], g["sanction"], g["reputation_micro"]
        if not isinstance(tier, int) or isinstance(tier, bool) or not isinstance(sanction, str):
            raise ValueError(f"agent {a!r}: tier {tier!r}, sanction {sanction!r}")
        if not isinstance(rep, int) or isinstance(rep, bool):
            raise ValueError(f"agent {a!r}: reputation_micro {rep!r} is not an integer")
        if not isinstance(weight, int | float) or isinstance(weight, bool):
            raise ValueError(f"agent {a!r}: weight {weight!r}")
        w = micro(weight)
        # Derive (CommunityTrace.tla) copies these weights into the spec's Weight, which
        # its tallies sum: a placeholder here would be tallied as if it were a weight (a
        # -1 for every weight that was no multiple of a too coarse unit once made a 1-1
        # tie accept). _unit divides every positive logged weight; anything else is no
        # weight of a public state (docs/rules.md: in [w_min, w_max]).
        if w <= 0:
            raise ValueError(f"agent {a!r}: weight {weight!r} is not positive")
        if w % unit:
            raise ValueError(f"agent {a!r}: weight {weight!r} is no multiple of the unit")
        out.append((names(a), record(tier=tier, weight=w // unit, sanction=sanction, rep=rep)))
    return function(tuple(out))


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

    prev: Mapping[str, Any] = {}  # every artifact's logged state before the step
    known: dict[str, Any] = {}
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
        arts = step.state.get("artifacts", {})
        if log.delta:  # the step's artifacts are the changed ones: keep the others
            known.update(arts if isinstance(arts, dict) else {})
            prev = known
        else:
            prev = arts
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
    #: community logs: the largest logged weight (micro) of each agent (``_check_range``)
    reg_weights: dict[str, int] = field(default_factory=dict)
    #: community logs: every positive weight (micro) any logged registry holds. The unit
    #: must divide each of them, not only each agent's largest: a weight that is no
    #: multiple of the unit cannot be written in it (``_unit``, ``_registry_view``).
    reg_all_weights: set[int] = field(default_factory=set)
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
    require_steps(log.name, log.steps)  # after the header's own problems
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
        last: object = None
        for step in log.steps:
            reg = step.state.get("agents")
            if reg is last:  # a delta log shares an unchanged registry: seen already
                continue
            last = reg
            for a, g in reg.items() if isinstance(reg, dict) else ():
                w = g.get("weight") if isinstance(g, dict) else None
                if isinstance(w, int | float) and not isinstance(w, bool) and micro(w) > 0:
                    out.reg_weights[a] = max(out.reg_weights.get(a, 0), micro(w))
                    out.reg_all_weights.add(micro(w))
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
        weights += sorted(c.reg_all_weights)
    if any(w <= 0 for w in weights):
        raise UnusableLog("a weight (or w_min) of 0: spec/Lifecycle.tla assumes positive weights")
    return math.gcd(*weights)


def _views(c: CompiledLog, names: Names, unit: int) -> None:
    """Fill every entry's ``now`` and ``delta`` (the artifacts whose view changed).

    A logged state that is not a public state (a field missing or of the wrong type) is
    the implementation's error, not the log's: that step becomes one the spec cannot take
    (op ``bad``), and the steps after it are dropped."""
    last: dict[str, TlaRecord] = {}
    reg_seen: tuple[object, TlaFunction] | None = None  # a shared registry: its view
    for k, (e, step) in enumerate(zip(c.entries, c.log.steps, strict=True)):
        now = step.state.get("now")
        problem = (
            None
            if isinstance(now, int) and not isinstance(now, bool)
            else (f"state.now is {now!r}, not an integer")
        )
        delta: list[tuple[str, TlaRecord]] = []
        if problem is None and c.log.layer == "community":
            e.viol = _violations(step.events, names)
            c.agents.update(names.orig(a) for a, _ in e.viol)
            reg = step.state.get("agents")
            try:
                if reg_seen is not None and reg_seen[0] is reg:
                    e.reg = reg_seen[1]
                else:
                    e.reg = _registry_view(reg, names, unit)
                    reg_seen = (reg, e.reg)
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
    """Every value the trace spec computes must fit TLC's 32-bit ints.

    The largest are the forget rule's sums, ``Σ w·k`` and ``ConfUnit·Σ w`` (weights in
    ``unit``, confidences in 1/ConfUnit); the percentage comparisons do not multiply
    them by 100 in a trace run (LifecycleTrace.tla: TraceAtLeastPct, mirrored by
    ``pct_gap``), so ``ConfUnit·Σ w`` below 2^31 is the whole condition.
    """
    top: dict[str, int] = {a: e.weight for a, e in c.initial.items()}
    for a, w in c.reg_weights.items():
        top[a] = max(top.get(a, 0), w)
    for i, w in c.set_weights.items():
        raw = c.log.steps[i].command.get("agent")
        top[raw] = max(top.get(raw, 0), w)
    total = (sum(top.values()) + micro(c.params.w_min) * max(1, len(top))) // unit
    cu = c.conf_unit
    if cu * total > TLC_MAX_INT:
        raise UnusableLog(
            f"{c.log.name}: the weights in units of {unit / MICRO:g} sum to {total}"
            + (
                f" and the forget votes' confidences need the unit 1/{cu} to be exact "
                f"(spec/Lifecycle.tla: ConfUnit), so the forget rule's sums reach "
                f"ConfUnit x total = {cu * total}"
                if cu > 1
                else ""
            )
            + ": too large for TLC's 32-bit integers (below 2^31)"
        )


def pct_gap(a: int, p: int, b: int) -> int:
    """The sign of ``a·100 − p·b`` (−1, 0, 1) computed as LifecycleTrace.tla's PctGap.

    The trace spec compares shares this way because TLC's integers are 32-bit and the
    products ``a·100`` and ``p·b`` leave them long before ``a`` and ``b`` do: with
    ``b = 100·q + m``, ``a·100 − p·b = 100·(a − p·q) − p·m`` and ``0 ≤ p·m ≤ 9900``.
    Every intermediate value stays within ``max(a, b, 9900)`` in magnitude (for
    ``0 ≤ p ≤ 100``); property_tests/verify/test_validate_trace.py checks it equal to the
    products.
    """
    d = a - p * (b // 100)
    pm = p * (b % 100)
    if d >= 100:
        return 1
    if d < 0:
        return -1
    return (d * 100 > pm) - (d * 100 < pm)


# --- writing the modules ---------------------------------------------------------------------


def scale_entries(batch: Batch, c: CompiledLog) -> None:
    """Put ``c``'s entries in the batch's units (idempotent): set_agent weights divided by
    the weight unit, subscriptions restricted to the batch's slots, forget confidences in
    units of 1/ConfUnit."""
    slotset = {batch.names(s) for d in batch.logs for s in d.slots}
    unit = batch.unit
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


def _head_record(batch: Batch, c: CompiledLog, agents: Sequence[str]) -> TlaRecord:
    """The initial registry of ``c`` (LifecycleTrace.tla: TraceInit reads it)."""
    n = batch.names
    unit = batch.unit
    slotset = {n(s) for d in batch.logs for s in d.slots}
    wmin = micro(batch.logs[0].params.w_min) // unit
    reg = {n(a): e for a, e in c.initial.items()}
    tier = function(tuple((a, reg[a].tier if a in reg else 0) for a in agents))
    weight = function(tuple((a, reg[a].weight // unit if a in reg else wmin) for a in agents))
    barred = frozenset(a for a in agents if a not in reg or reg[a].sanction in BARRING)
    subs = function(
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
    return record(
        registered=frozenset(reg),
        tier=tier,
        weight=weight,
        barred=barred,
        ratelim=ratelim,
        subs=subs,
        repok=repok,
    )


def artifact_rank(batch: Batch) -> dict[str, int]:
    """TLArtRank: every artifact of the batch (TLA+ spelling) -> its rank, 1, 2, ..."""
    every = sorted({batch.names(x) for c in batch.logs for x in c.artifacts})
    return {x: i + 1 for i, x in enumerate(every)}


def _src(value: object) -> str:
    """``value`` as TLA+ source for a TraceLog module: one element a line (SANY's parse
    time grows with the square of a line's length: values.format_value)."""
    return tla(value, lines=True)


def _module_head(
    batch: Batch,
    sources: str,
    agents: Sequence[str],
    arts: Sequence[str],
    slots: Iterable[str],
    rank: Mapping[str, int],
) -> list[str]:
    """The constants every TraceLog module starts with (``arts``: a sorted subset of
    ``rank``'s, which ranks them as in the whole batch)."""
    unit = batch.unit
    wmin = micro(batch.logs[0].params.w_min) // unit
    return [
        f"---- MODULE {LOG_MODULE} ----",
        "\\* Generated by ostrom validate-trace (reference/ostrom/verify/trace/lifecycle.py)",
        "\\* from: " + sources,
        f"\\* weights in units of {unit} micro ({unit / MICRO:g})",
        "EXTENDS Integers, TLC",
        f"TLAgents == {_src(frozenset(agents))}",
        f"TLArtifacts == {_src(frozenset(arts))}",
        f"TLSlots == {_src(frozenset(slots))}",
        f"TLWMin == {wmin}",
        f"TLConfUnit == {batch.conf_unit}",
        "TLArtRank == " + _src(function(tuple((x, rank[x]) for x in arts))),
    ]


def _workload_lines(entries: Sequence[Entry]) -> list[str]:
    """The arguments of every propose and forget_vote entry (LifecycleTrace.tla:
    TLProposals, TLForgetVotes): Act(E) asks only about these."""
    props = frozenset((e.agent, e.artifact, e.slot) for e in entries if e.op == "propose")
    votes = frozenset((e.agent, e.artifact) for e in entries if e.op == "forget_vote")
    return [f"TLLogProposals == {_src(props)}", f"TLLogForgetVotes == {_src(votes)}"]


def batch_agents(batch: Batch) -> list[str]:
    """Agents of the batch's runs (TLAgents): every id a log names, in TLA+ spelling."""
    return sorted({batch.names(a) for c in batch.logs for a in c.agents})


def log_module(batch: Batch) -> str:
    """The TraceLog module of ``batch`` (LifecycleTrace.tla EXTENDS it)."""
    n = batch.names
    agents = batch_agents(batch)
    arts = sorted({n(x) for c in batch.logs for x in c.artifacts})
    slots = sorted({n(s) for c in batch.logs for s in c.slots})
    lines = _module_head(
        batch,
        ", ".join(c.log.name.replace("\n", " ") for c in batch.logs),
        agents,
        arts,
        slots,
        artifact_rank(batch),
    )
    lines.append("TLStarts == {}  \\* the run starts at the log's start (TraceInit)")
    lines.append("TLLogs == <<")
    for k, c in enumerate(batch.logs):
        scale_entries(batch, c)
        head = _head_record(batch, c, agents)
        lines.append(f"  \\* log {k + 1}: {c.log.name}")
        lines.append("  " + _src(head)[:-1] + ", steps |-> <<")
        for j, e in enumerate(c.entries):
            sep = "," if j + 1 < len(c.entries) else ""
            lines.append(f"    {_src(e.record())}{sep}")
        lines.append("  >>]" + ("," if k + 1 < len(batch.logs) else ""))
    lines.append(">>")
    lines += _workload_lines([e for c in batch.logs for e in c.entries])
    lines.append("====")
    return "\n".join(lines) + "\n"


@dataclass
class Chunk:
    """Steps ``lo``..``hi - 1`` of one log, checked in one TLC run (LifecycleTrace.tla:
    "Chunks"): the artifacts and slots the run holds, and, for every chunk but the first,
    the states it starts from (TLStarts) and the logged view and clock at its boundary."""

    lo: int
    hi: int
    artifacts: frozenset[str]  # TLA+ spellings
    slots: frozenset[str]
    rank: Mapping[str, int]  # artifact_rank of the batch
    starts: tuple[TlaRecord, ...] = ()  # () for the first chunk (TraceInit)
    expected: TlaFunction = field(default_factory=lambda: function(()))
    now: int = 0


def chunk_module(batch: Batch, c: CompiledLog, chunk: Chunk) -> str:
    """The TraceLog module of one chunk of ``c`` (the only log of its run; its entries
    scaled already: ``scale_entries``)."""
    agents = batch_agents(batch)
    lines = _module_head(
        batch,
        f"{c.log.name.replace(chr(10), ' ')}, steps {chunk.lo + 1}-{chunk.hi}",
        agents,
        sorted(chunk.artifacts),
        sorted(chunk.slots),
        chunk.rank,
    )
    entries = c.entries[chunk.lo : chunk.hi]
    if chunk.lo == 0:
        lines.append("TLStarts == {}  \\* the run starts at the log's start (TraceInit)")
        lines.append("TLLogs == <<")
        lines.append("  " + _src(_head_record(batch, c, agents))[:-1] + ", steps |-> <<")
    else:
        lines.append(f"TLStarts == {_src(frozenset(chunk.starts))}")
        lines.append("TLLogs == <<")
        lines.append(f"  [now |-> {chunk.now}, expected |-> {_src(chunk.expected)}, steps |-> <<")
    for j, e in enumerate(entries):
        sep = "," if j + 1 < len(entries) else ""
        lines.append(f"    {_src(e.record())}{sep}")
    lines.append("  >>]")
    lines.append(">>")
    lines += _workload_lines(entries)
    lines.append("====")
    return "\n".join(lines) + "\n"


def trace_cfg(batch: Batch, chunk: Chunk | None = None) -> str:
    """The TLC configuration of a trace run (of one chunk of a log: ``chunk``)."""
    consts = dict(batch.constants)
    consts["WMin"] = micro(batch.logs[0].params.w_min) // batch.unit
    community = batch.module == COMMUNITY_MODULE
    init = "CTraceInit" if community else "TraceInit"
    if chunk is not None and chunk.lo > 0:
        init = "CChunkInit" if community else "ChunkInit"
    invariants = ["CWatch" if community else "Watch"]
    if chunk is not None:
        invariants.append("CChunkEnd" if community else "ChunkEnd")
    lines = [
        "\\* Generated by ostrom validate-trace",
        f"INIT {init}",
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
        "    AtLeastPct <- TraceAtLeastPct",
        "    AtMostPct <- TraceAtMostPct",
    ]
    lines += [f"    {k} = {v}" for k, v in consts.items()]
    lines += [f"INVARIANT {inv}" for inv in invariants] + [""]
    return "\n".join(lines)


def stage_trace_run(
    run_dir: Path, batch: Batch, chunk: tuple[CompiledLog, Chunk] | None = None
) -> None:
    """Write the four modules and the cfg of a trace run into ``run_dir`` (of one chunk of
    one log of the batch: ``chunk``)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    spec = (layout.SPEC_DIR / "Lifecycle.tla").read_text(encoding="utf-8")
    (run_dir / f"{REGVAR_MODULE}.tla").write_text(registry_variable_spec(spec), encoding="utf-8")
    copied = ["LifecycleTable.tla", f"{TRACE_MODULE}.tla"]
    if batch.module == COMMUNITY_MODULE:
        copied += ["Sanctions.tla", f"{COMMUNITY_MODULE}.tla"]
    for name in copied:
        shutil.copyfile(layout.SPEC_DIR / name, run_dir / name)
    text = log_module(batch) if chunk is None else chunk_module(batch, *chunk)
    (run_dir / f"{LOG_MODULE}.tla").write_text(text, encoding="utf-8")
    cfg = trace_cfg(batch, None if chunk is None else chunk[1])
    (run_dir / f"{batch.module}.cfg").write_text(cfg, encoding="utf-8")
