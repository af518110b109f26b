"""Conformance vectors from TLC: random behaviours of spec/Lifecycle.tla, replayed on the reference.

``generate_tlc_vectors(out_root)`` writes, under ``out_root`` (the suite, ``vectors/``):

* ``lifecycle/<action>/tlc-sim-<k>.json`` (``source: tlc:simulate``): the first
  ``SIM_VECTORS`` random behaviours of ``models/MCLifecycleSim.tla`` (TLC ``-simulate
  num=SIM_NUM -depth SIM_DEPTH -seed SIM_SEED``, one worker: the same traces on every run),
  each turned into commands and replayed on the reference;
* ``lifecycle/traces/tlc-sim-<k>.itf.json``: the same behaviours in ITF, the action of
  each step in ``#meta.action`` and the command it became in ``#meta.command``;
* ``lifecycle/<action>/tlc-cover-<key>.json`` (``source: tlc:cover``): for every action of
  the spec (Propose … Tick, Timeout, Forget), every row of the transition table and every
  error code of docs/rules.md, the shortest prefix of a simulated behaviour (over all
  ``SIM_NUM``) that takes it; for an error code, that prefix followed by one command the
  reference refuses with the code (and that the spec does not allow, unless the spec
  abstracts the reason: rate limits).

How a behaviour becomes commands (``commands_of``): each agent action is the command of
the same name with the behaviour's arguments; ``Recruit`` is an explicit ``recruit``;
``Tick`` and the ``Timeout``/``Forget`` steps that follow it are one ``tick``.  Digests are
``<artifact>-v<n>``; a commitment is the real sha256 commitment of the behaviour's vote
with a salt derived from the trace and step (``_salt``), revealed with the same salt.

The spec recruits *any* eligible reviewers; the reference draws them by a sha256
sortition seeded by the parameter ``seed`` (rules.md, `recruit`).  For each behaviour the
generator finds the smallest ``seed`` whose sortition draws the behaviour's reviewers
(``_Replay``: each mismatch found by a replay adds a constraint; seeds are searched until
all hold).  Every
other difference between the reference and the spec — a command the reference refuses, a
state that differs — is a disagreement: it is never hidden, ``TlcVectorError`` reports it
(``findings``).  So every vector written here is a behaviour of the spec, replayed
identically by the reference; property_tests/verify/test_validate_trace.py also runs them through
``ostrom validate-trace``.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ostrom import layout
from ostrom.conformance.generators.fileformat import dump
from ostrom.conformance.generators.recorder import Recorder
from ostrom.conformance.layers import LifecycleLayer
from ostrom.conformance.vectors import vector_errors, wire
from ostrom.protocol.agents import micro
from ostrom.protocol.errors import ErrorCode
from ostrom.protocol.lifecycle import ACTION_COMMANDS, TRANSITIONS, slug
from ostrom.protocol.params import Params
from ostrom.protocol.voting import commitment, select_reviewers
from ostrom.verify.tlc.cfg import ParsedCfg, render_cfg
from ostrom.verify.tlc.output import parse_state_body
from ostrom.verify.tlc.values import TlaRecord, TlaSet, Value, to_itf
from ostrom.verify.trace.lifecycle import (
    lifecycle_constants,
    project_artifact,
    spec_constants,
    spec_view,
)
from ostrom.verify.trace.log import Names
from ostrom.verify.trace.tlc import run_java_tlc

__all__ = [
    "COVER_CONSTANTS",
    "DUO",
    "SIM",
    "SIM_VECTORS",
    "SOLO",
    "cover_table",
    "generate_tlc_vectors",
    "sim_cfg",
]

SOURCE_SIM: Final = "tlc:simulate"
SOURCE_COVER: Final = "tlc:cover"
SIM_MODULE: Final = "MCLifecycleSim"
#: MCLifecycleSim.tla's constants naming the transition row a cover run looks for.
COVER_CONSTANTS: Final = ("CoverEvent", "CoverFrom", "CoverTo")
SIM_SEED: Final = 20261
SIM_DEPTH: Final = 40
SIM_NUM: Final = 160
#: Lifecycle.tla's ConfUnit, which the generated MCLifecycleSim cfgs do not override.
SIM_CONF_UNIT: Final = 1
#: How many of the simulated behaviours become tlc:simulate vectors (and ITF traces).
SIM_VECTORS: Final = 12
#: The largest reference seed tried for a behaviour's reviewer draws.
MAX_SEED: Final = 200_000

#: The reference's parameters for the MCLifecycleSim cfgs (non-defaults only), from which
#: sim_cfg writes their constants: w_min 0.5 is the weight unit (WMin 1), and the rate
#: limits never bind (Lifecycle.tla has none).
PARAMS: Final[dict[str, Any]] = {
    "reviewers": 2,
    "quorum": 2,
    "dispute_reviewers": 2,
    "q_dispute": 2,
    "T_fast": 1,
    "T_delib": 1,
    "T_commit": 1,
    "T_reveal": 1,
    "T_arb": 1,
    "max_disputes": 1,
    "max_resubmit": 1,
    "cooldown": 1,
    "min_active_agents": 5,
    "w_min": 0.5,
    "propose_rate": 1000,
    "dispute_rate": 1000,
}
#: The registry of MCLifecycleSim.tla (weights 1 and 2 units of w_min; reputation at or
#: above r_resubmit = 0.5 exactly for RepOK).
AGENTS: Final[list[dict[str, Any]]] = [
    {"id": "a0", "tier": 0, "weight": 0.5, "reputation": 0.6},
    {"id": "a1", "tier": 1, "weight": 0.5, "reputation": 0.6, "subscriptions": ["s1"]},
    {"id": "a2", "tier": 2, "weight": 1.0, "reputation": 0.8},
    {"id": "a3", "tier": 3, "weight": 1.0, "reputation": 0.9},
    {"id": "a4", "tier": 1, "weight": 0.5, "reputation": 0.2},
    {"id": "b", "tier": 2, "weight": 1.0, "reputation": 0.8, "sanction": "suspended"},
]
UNIT: Final = micro(0.5)


@dataclass(frozen=True)
class Setup:
    """A registry of models/MCLifecycleSim.tla: its cfg and the reference's setup.

    ``world`` is the registry's part of the cfg (``Name -> (op, value)``: ``<-`` names an
    operator of MCLifecycleSim.tla); the rest of the cfg is derived (``sim_cfg``)."""

    name: str
    cfg: str
    agents: tuple[str, ...]
    world: dict[str, tuple[str, str]]

    @property
    def entries(self) -> list[dict[str, Any]]:
        return [a for a in AGENTS if a["id"] in self.agents]

    @property
    def eligible(self) -> frozenset[str]:
        """Reviewer-eligible agents (tier >= 1, not barred): the lottery's whole pool."""
        return frozenset(
            a["id"] for a in self.entries if a["tier"] >= 1 and a.get("sanction") is None
        )


#: The simulated registry, and the two small ones of the BFS cover runs (retraction and
#: what follows it; a dispute kept while another artifact took the slot).
def _world(prefix: str, artifacts: str, slots: str, barred: str, rep_ok: str) -> dict[str, Any]:
    ops = ("Agents", "Tier", "Weight", "Subscriptions", "Proposals", "ForgetVotes")
    world = {name: ("<-", f"{prefix}{name}") for name in ops}
    values = {"Artifacts": artifacts, "Slots": slots, "Barred": barred, "RepOK": rep_ok}
    return world | {name: ("=", value) for name, value in values.items()}


_SIM_WORLD: Final = _world("Sim", '{"x1", "x2", "x3"}', '{"s1", "s2"}', '{"b"}',
                           '{"a0", "a1", "a2", "a3"}')  # fmt: skip
SIM: Final = Setup("sim", f"{SIM_MODULE}.cfg", ("a0", "a1", "a2", "a3", "a4", "b"), _SIM_WORLD)
SOLO: Final = Setup(
    "solo",
    f"{SIM_MODULE}_solo.cfg",
    SIM.agents,
    _SIM_WORLD
    | {
        "Proposals": ("<-", "SoloProposals"),
        "ForgetVotes": ("<-", "SoloForgetVotes"),
        "Artifacts": ("=", '{"x1"}'),
        "Slots": ("=", '{"s1"}'),
    },
)
DUO: Final = Setup(
    "duo",
    f"{SIM_MODULE}_duo.cfg",
    ("a0", "a2", "a3"),
    _world("Duo", '{"x1", "x2"}', '{"s1"}', "{}", '{"a0", "a2", "a3"}'),
)
#: What each registry's cfg says about itself (its header).
_HEADERS: Final = {
    "sim": "Random simulation of spec/Lifecycle.tla for the tlc:simulate vectors.",
    "solo": "Cover runs (BFS with INVARIANT NotCovered), solo registry: x1 alone, forget "
    "votes from a2 and a3.",
    "duo": "Cover runs (BFS with INVARIANT NotCovered), duo registry: a0, a2, a3; x1 and "
    "x2 in s1, forget votes from a2.",
}


def sim_cfg(setup: Setup, cover: tuple[str, str, str] = ("-", "-", "-")) -> str:
    """The cfg of ``setup``'s registry, generated: its ``world``, the transition row a
    cover run looks for, and Lifecycle.tla's parameters as ``PARAMS`` gives them (through
    the parameter table's CONSTANT names: spec_constants), WMin 1 (the weight unit)."""
    spec = spec_constants(Params.from_mapping(PARAMS))
    declared = lifecycle_constants()
    cfg = ParsedCfg(
        constants={
            **{n: ("=", f'"{v}"') for n, v in zip(COVER_CONSTANTS, cover, strict=True)},
            **setup.world,
            "WMin": ("=", "1"),
            **{name: ("=", str(value)) for name, value in spec.items() if name in declared},
        },
        sections={"INIT": ["SimInit"], "NEXT": ["SimNext"]},
    )
    header = (
        f"{_HEADERS[setup.name]}\nGenerated by ostrom.conformance.generators.tlc_vectors"
        ".sim_cfg (models/MCLifecycleSim.tla; the reference replays with tlc_vectors.PARAMS)."
    )
    return render_cfg(cfg, header)


#: Every error code of docs/rules.md, in the enum's (the check list's) order.
ERROR_CODES: Final = tuple(code.value for code in ErrorCode)
#: Property ids a vector exercises, by the transition rows and error codes it contains.
_ROW_PROPERTIES: Final = {
    "active": "LC-SAFE-1",
    "supersede": "LC-SAFE-2",
    "dispute": "LC-SAFE-3",
    "urgent_report": "LC-SAFE-5",
    "forget": "LC-SAFE-6",
    "reveal_vote": "CR-2",
}
_CODE_PROPERTIES: Final = {
    "sanctioned": "LC-SAFE-4",
    "not_eligible": "LC-SAFE-4",
    "bad_reveal": "CR-2",
    "limit_reached": "LC-SAFE-3",
}


class TlcVectorError(Exception):
    """Generation failed, or the reference disagrees with the spec (``findings``)."""

    def __init__(self, message: str, findings: Sequence[str] = ()) -> None:
        super().__init__(message + "".join(f"\n  {f}" for f in findings))
        self.findings = list(findings)


# --- simulating ---------------------------------------------------------------------------------


@dataclass
class SimState:
    """One state of a simulated behaviour: the action that led to it and the variables."""

    hist: tuple[Any, ...]
    values: dict[str, Value]

    @property
    def art(self) -> dict[str, TlaRecord]:
        a = self.values["art"]
        assert isinstance(a, TlaRecord)
        return {k: v for k, v in a.fields if isinstance(v, TlaRecord)}

    @property
    def ticking(self) -> bool:
        return bool(self.values["ticking"])

    @property
    def rows(self) -> set[tuple[str, str, str]]:
        le = self.values["lastEvent"]
        assert isinstance(le, TlaSet)
        return {tuple(r) for r in le.elems if isinstance(r, tuple)}  # type: ignore[misc]


_STATE_RE = re.compile(r"^STATE_(\d+) ==\s*$", re.M)


def read_sim_file(path: Path) -> list[SimState]:
    """The states of one trace file TLC's ``-simulate file=...`` wrote."""
    text = path.read_text(encoding="utf-8")
    marks = list(_STATE_RE.finditer(text))
    out: list[SimState] = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else text.rfind("====")
        values = parse_state_body(text[m.end() : end].splitlines())
        hist = values.get("hist")
        if not isinstance(hist, tuple):
            raise TlcVectorError(f"{path.name}: state {i + 1} has no hist")
        out.append(SimState(hist, values))
    return out


def _stage(work: Path) -> None:
    work.mkdir(parents=True, exist_ok=True)
    for src in ("spec/Lifecycle.tla", "spec/LifecycleTable.tla", f"models/{SIM_MODULE}.tla"):
        shutil.copyfile(layout.ROOT / src, work / Path(src).name)
    for setup in (SIM, SOLO, DUO):
        (work / setup.cfg).write_text(sim_cfg(setup), encoding="utf-8")


def cover_run(work: Path, setup: Setup, row: tuple[str, str, str]) -> list[SimState] | None:
    """TLC's shortest behaviour of ``setup``'s registry that takes ``row`` (BFS with the
    invariant NotCovered), or None if none does."""
    _stage(work)
    cfg = f"cover-{setup.name}-{'-'.join(row)}.cfg"
    (work / cfg).write_text(sim_cfg(setup, row) + "INVARIANT NotCovered\n", encoding="utf-8")
    res = run_java_tlc(work, SIM_MODULE, cfg)
    if res.outcome.kind == "pass":
        return None
    if res.outcome.kind != "invariant" or not res.outcome.trace:
        raise TlcVectorError(f"cover run {cfg} failed: {res.error}")
    out = []
    for st in res.outcome.trace:
        hist = st.values.get("hist")
        if not isinstance(hist, tuple):
            raise TlcVectorError(f"cover run {cfg}: a state has no hist")
        out.append(SimState(hist, dict(st.values)))
    return out


def simulate(
    work: Path, num: int = SIM_NUM, depth: int = SIM_DEPTH, seed: int = SIM_SEED
) -> list[list[SimState]]:
    """Run TLC's simulation of models/MCLifecycleSim.tla; the behaviours, in file order."""
    work.mkdir(parents=True, exist_ok=True)
    _stage(work)
    out = work / "traces"
    out.mkdir(exist_ok=True)
    res = run_java_tlc(
        work,
        SIM_MODULE,
        f"{SIM_MODULE}.cfg",
        ["-simulate", f"file={out / 'tr'},num={num}", "-depth", str(depth), "-seed", str(seed)],
    )
    if res.error is not None:
        raise TlcVectorError(f"TLC simulation failed: {res.error}")
    files = sorted(out.glob("tr_*"), key=lambda p: [int(n) for n in re.findall(r"\d+", p.name)])
    if len(files) != num:
        raise TlcVectorError(f"TLC wrote {len(files)} traces, not {num}")
    return [read_sim_file(p) for p in files]


# --- behaviours as commands ---------------------------------------------------------------------


@dataclass
class SimStep:
    """One command's worth of a behaviour: the spec steps it stands for."""

    first: int  # index of the first state it produces
    last: int  # index of the state after it
    hists: list[tuple[Any, ...]]
    rows: set[tuple[str, str, str]]

    @property
    def action(self) -> str:
        return str(self.hists[0][0])

    @property
    def op(self) -> str:
        return ACTION_COMMANDS[self.action]

    @property
    def actions(self) -> set[str]:
        return {str(h[0]) for h in self.hists}


def commands_of(trace: Sequence[SimState]) -> list[SimStep]:
    """Group a behaviour's steps into commands (a Tick with its Timeout/Forget steps is one
    ``tick``); a trailing tick that the simulation cut before its due steps ended is dropped.
    The steps are those of models/MCLifecycleSim.tla's SimNext, named by ``hist``.
    """
    out: list[SimStep] = []
    i = 1
    while i < len(trace):
        h = trace[i].hist
        j = i
        if h[0] == "Tick":
            while j + 1 < len(trace) and trace[j + 1].hist[0] in ("Timeout", "Forget"):
                j += 1
            if trace[j].ticking:  # something still due: the tick is incomplete
                break
        rows: set[tuple[str, str, str]] = set()
        for k in range(i, j + 1):
            rows |= trace[k].rows
        out.append(SimStep(i, j, [trace[k].hist for k in range(i, j + 1)], rows))
        i = j + 1
    return out


def _salt(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, ("ostrom-tlc", *parts))).encode()).hexdigest()


def _view_diff(spec: TlaRecord, ref: TlaRecord) -> list[str]:
    s, r = dict(spec.fields), dict(ref.fields)
    return [k for k in s if s[k] != r[k]]


# --- replaying on the reference ------------------------------------------------------------------


@dataclass
class Constraint:
    """The reference's sortition must draw ``chosen`` for (artifact, round) from the
    eligible agents minus ``excluded`` (the draw indexes all eligible agents, so both are
    kept, not only the pool)."""

    artifact: str
    round: int
    eligible: tuple[str, ...]
    excluded: frozenset[str]
    k: int
    chosen: frozenset[str]

    @property
    def pool(self) -> frozenset[str]:
        """The candidates: eligible agents not excluded."""
        return frozenset(self.eligible) - self.excluded

    def holds(self, seed: int) -> bool:
        got = select_reviewers(
            seed, self.artifact, self.round, self.eligible, self.excluded, self.k
        )
        return frozenset(got) == self.chosen


@dataclass
class Played:
    """A replay: the commands sent (with their observations) up to the first divergence."""

    seed: int
    commands: list[dict[str, Any]] = field(default_factory=list)
    matched: int = 0  # commands whose result was ok and whose state matched the spec's
    divergence: str | None = None  # a disagreement (not a lottery draw)
    draws: list[Constraint] = field(default_factory=list)  # lottery mismatches at `matched`
    states: list[dict[str, Any]] = field(default_factory=list)  # reference states before


class _Replay:
    """Replays one behaviour's commands on the reference (LifecycleLayer, the driver's
    adapter) with a given seed, comparing each state with the spec's."""

    def __init__(
        self, trace: Sequence[SimState], steps: Sequence[SimStep], tag: str, setup: Setup
    ) -> None:
        self.trace = trace
        self.steps = steps
        self.tag = tag
        self.setup = setup

    def command(self, k: int, ref: Mapping[str, Any], secrets: dict[Any, Any]) -> dict[str, Any]:
        """The command of step k, given the reference's public state before it."""
        h = self.steps[k].hists[0]
        name, args = str(h[0]), [str(a) for a in h[1:]]
        arts = ref["artifacts"]
        if name == "Tick":
            return {"op": "tick"}
        if name == "Recruit":
            return {"op": "recruit", "artifact": args[0]}
        a, x = args[0], args[1]
        if name == "Propose":
            return {
                "op": "propose",
                "agent": a,
                "artifact": x,
                "slot": args[2],
                "digest": f"{x}-v1",
            }
        if name == "Resubmit":
            n = arts[x]["resubmit_count"] + 2
            return {"op": "resubmit", "agent": a, "artifact": x, "digest": f"{x}-v{n}"}
        if name == "Object":
            return {"op": "object", "agent": a, "artifact": x}
        if name == "ForgetVote":
            # confidence k / ConfUnit; the sim models keep Lifecycle.tla's ConfUnit = 1 and
            # vote with k = 1, the reference's default (so the command leaves it out)
            k = int(h[3])
            fv: dict[str, Any] = {"op": "forget_vote", "agent": a, "artifact": x}
            return fv if k == SIM_CONF_UNIT else {**fv, "confidence": k / SIM_CONF_UNIT}
        if name in ("Dispute", "UrgentReport"):
            return {
                "op": ACTION_COMMANDS[name],
                "agent": a,
                "artifact": x,
                "reason": f"{a} doubts {x}",
            }
        if name == "Arbitrate":
            return {"op": "arbitrate", "agent": a, "artifact": x, "outcome": args[2]}
        rnd = arts[x]["round"]
        if name == "CommitVote":
            vote, reason = args[2], f"{a} votes {args[2]} on {x}"
            salt = _salt(self.tag, k, a, x)
            secrets[(a, x, rnd)] = (vote, reason, salt)
            return {
                "op": "commit_vote",
                "agent": a,
                "artifact": x,
                "commitment": commitment(a, x, rnd, vote, reason, salt),
            }
        if name == "RevealVote":
            vote, reason, salt = secrets[(a, x, rnd)]
            return {
                "op": "reveal_vote",
                "agent": a,
                "artifact": x,
                "vote": args[2],
                "reason": reason,
                "salt": salt,
            }
        raise TlcVectorError(f"{self.tag}: no command for {name}")

    def run(
        self,
        seed: int,
        params: Mapping[str, Any] | None = None,
        probe: Callable[[int, Any, Mapping[str, Any], Mapping[str, TlaRecord]], None] | None = None,
    ) -> Played:
        layer = LifecycleLayer()
        layer.reset(
            wire({**(params or PARAMS), "seed": seed}), wire({"agents": self.setup.entries})
        )
        ref: dict[str, Any] = wire(layer.orchestrator.public_state())
        played = Played(seed)
        secrets: dict[Any, Any] = {}
        names = Names()
        now = 0
        for k, step in enumerate(self.steps):
            spec_before = self.trace[step.first - 1].art
            if probe is not None:
                probe(k, layer, ref, spec_before)
            cmd = self.command(k, ref, secrets)
            obs = wire(layer.step(wire(cmd)))
            played.states.append(ref)
            played.commands.append(cmd)
            if obs["result"] != "ok":
                played.divergence = (
                    f"{self.tag} step {k + 1} ({step.action}): the spec takes "
                    f"{_hist_text(step.hists[0])}, the reference answers {obs['result']} to "
                    f"{json.dumps(cmd)}"
                )
                return played
            if step.action == "Tick":
                now += 1
            spec_after = self.trace[step.last].art
            new = obs["state"]["artifacts"]
            problems: list[str] = []
            for x, rec in spec_after.items():
                if rec.get("st") == "none":
                    if x in new:
                        problems.append(f"{x} exists only in the reference")
                    continue
                if x not in new:
                    problems.append(f"{x} exists only in the spec")
                    continue
                diff = _view_diff(spec_view(rec, now), project_artifact(new[x], names, UNIT))
                draw = self._draw(step, x, cmd, ref, spec_before, rec, new)
                if diff == ["reviewers"] and len(draw.pool) > draw.k:
                    played.draws.append(draw)  # the lottery drew others: another seed
                elif diff:
                    problems.append(f"{x}: {', '.join(diff)} differ")
            if problems or played.draws:
                if problems:
                    played.divergence = (
                        f"{self.tag} step {k + 1} ({_hist_text(step.hists[0])}): the reference's "
                        f"state differs from the spec's: {'; '.join(problems)}"
                    )
                return played
            ref = obs["state"]
            played.matched = k + 1
        return played

    def _draw(
        self,
        step: SimStep,
        x: str,
        cmd: Mapping[str, Any],
        ref_before: Mapping[str, Any],
        spec_before: Mapping[str, TlaRecord],
        spec_after: TlaRecord,
        ref_after: Mapping[str, Any],
    ) -> Constraint:
        """The lottery constraint of a reviewer draw the reference made differently."""
        sub = str(spec_after.get("sub"))
        chosen = frozenset(str(e) for e in spec_after.get("reviewers").elems)  # type: ignore[union-attr]
        rnd = int(ref_after[x]["round"])
        eligible = tuple(sorted(self.setup.eligible))
        if step.action in ("Dispute", "UrgentReport"):
            before = frozenset(ref_before["artifacts"][x]["reviewers"])
            excluded = before | {sub, str(cmd["agent"])}
            return Constraint(x, rnd, eligible, excluded, int(PARAMS["dispute_reviewers"]), chosen)
        if step.action == "Recruit":
            return Constraint(x, rnd, eligible, frozenset({sub}), int(PARAMS["reviewers"]), chosen)
        # a re-recruitment inside a tick: fresh reviewers of this review
        reviewed = spec_before[x].get("reviewed")
        assert isinstance(reviewed, TlaSet)
        excluded = frozenset({str(e) for e in reviewed.elems} | {sub})
        return Constraint(x, rnd, eligible, excluded, int(PARAMS["reviewers"]), chosen)


def _hist_text(h: Sequence[Any]) -> str:
    return f"{h[0]}({', '.join(map(str, h[1:]))})" if len(h) > 1 else str(h[0])


def find_seed(replay: _Replay) -> Played:
    """The smallest seed whose lottery draws every reviewer set of the behaviour, found by
    adding the constraint of each mismatching draw; the replay with it."""
    constraints: list[Constraint] = []
    seed = 0
    while True:
        played = replay.run(seed)
        if played.divergence is not None or not played.draws:
            return played
        constraints += played.draws
        seed = next(
            (s for s in range(seed + 1, MAX_SEED) if all(c.holds(s) for c in constraints)), -1
        )
        if seed < 0:
            raise TlcVectorError(f"{replay.tag}: no seed below {MAX_SEED} draws its reviewers")


# --- vectors -------------------------------------------------------------------------------------


@dataclass
class Behaviour:
    """A behaviour of the spec (simulated, or a BFS cover run's) with its commands and the
    seed that replays it."""

    index: int
    trace: list[SimState]
    steps: list[SimStep]
    played: Played
    setup: Setup = SIM
    origin: str = ""

    @property
    def tag(self) -> str:
        return f"sim-{self.index}" if self.setup is SIM else f"{self.setup.name}-{self.index}"


def _properties(steps: Iterable[SimStep], code: str | None = None) -> list[str]:
    props: set[str] = set()
    for s in steps:
        for ev, _src, dst in s.rows:
            for key in (ev, dst):
                if key in _ROW_PROPERTIES:
                    props.add(_ROW_PROPERTIES[key])
    if code in _CODE_PROPERTIES:
        props.add(_CODE_PROPERTIES[code])
    return sorted(props)


def _record(
    setup: Setup,
    layer_params: Mapping[str, Any],
    seed: int,
    action: str,
    name: str,
    description: str,
    source: str,
    properties: list[str],
    commands: Sequence[Mapping[str, Any]],
    notes: Sequence[str | None],
) -> dict[str, Any]:
    params = {**layer_params, "seed": seed}
    rec = Recorder(
        "lifecycle",
        action,
        name,
        description,
        properties,
        source,
        params,
        {"agents": setup.entries},
    )
    for cmd, note in zip(commands, notes, strict=True):
        rec.do(dict(cmd), expect=None, note=note)
    return rec.vector()


def _notes(steps: Sequence[SimStep]) -> list[str | None]:
    return ["spec: " + "; ".join(_hist_text(h) for h in s.hists) for s in steps]


def build_behaviours(traces: Sequence[list[SimState]]) -> tuple[list[Behaviour], list[str]]:
    """Every simulated behaviour replayed (with its seed), and the disagreements found."""
    out: list[Behaviour] = []
    findings: list[str] = []
    for i, trace in enumerate(traces):
        b = replay_behaviour(i, trace, SIM)
        if b.played.divergence is not None:
            findings.append(b.played.divergence)
        out.append(b)
    return out, findings


def replay_behaviour(
    index: int, trace: list[SimState], setup: Setup, origin: str = ""
) -> Behaviour:
    """A behaviour's commands replayed on the reference with the seed that draws its
    reviewers (``find_seed``)."""
    steps = commands_of(trace)
    tag = f"sim-{index}" if setup is SIM else f"{setup.name}-{index}"
    played = find_seed(_Replay(trace, steps, tag, setup))
    return Behaviour(index, trace, steps, played, setup, origin)


def _key_slug(key: str) -> str:
    return slug(key)


def cover_keys(step: SimStep) -> list[str]:
    """What a command covers: its spec actions and its transition rows."""
    keys = [f"action-{a}" for a in sorted(step.actions)]
    keys += [f"row-{e}-{s}-{d}" for e, s, d in sorted(step.rows)]
    return keys


def _row_of(key: str) -> tuple[str, str, str]:
    """The table row of a ``row-`` cover key."""
    for row in _table_rows():
        if key == f"row-{row[0]}-{row[1]}-{row[2]}":
            return row
    raise KeyError(key)


def _table_rows() -> list[tuple[str, str, str]]:
    """The transition table's rows, in spec/LifecycleTable.tla's order (generated from it)."""
    return [(r.event, r.source, r.dest) for r in TRANSITIONS]


def all_cover_keys() -> list[str]:
    """Every key the cover set must have: each action, table row and error code."""
    keys = [f"action-{a}" for a in ACTION_COMMANDS]
    keys += [f"row-{e}-{s}-{d}" for e, s, d in _table_rows()]
    keys += [f"error-{c}" for c in ERROR_CODES]
    return keys


# --- error probes ------------------------------------------------------------------------------


def _probes(
    code: str, ref: Mapping[str, Any], spec: Mapping[str, TlaRecord], proposers: Sequence[str]
) -> list[dict[str, Any]]:
    """Commands that the reference should refuse with ``code`` in this state (``proposers``:
    the agents who proposed or resubmitted in this round)."""
    arts: Mapping[str, Any] = ref["artifacts"]
    out: list[dict[str, Any]] = []
    if code == "invalid_input":
        out.append({"op": "propose", "agent": "a0", "artifact": "x1", "slot": "s1"})
    elif code == "unknown_agent":
        out.append(
            {"op": "propose", "agent": "zed", "artifact": "x9", "slot": "s1", "digest": "x9-v1"}
        )
    elif code == "unknown_artifact":
        out.append({"op": "object", "agent": "a1", "artifact": "x9"})
    elif code == "sanctioned":
        out.append(
            {"op": "propose", "agent": "b", "artifact": "x9", "slot": "s1", "digest": "x9-v1"}
        )
    elif code == "rate_limited":  # by an agent who proposed or resubmitted this round
        for a in proposers:
            out.append(
                {"op": "propose", "agent": a, "artifact": "x9", "slot": "s2", "digest": "x9-v1"}
            )
    for x, a in sorted(arts.items()):
        st, rec = a["state"], spec.get(x)
        if code == "not_eligible":
            out.append({"op": "object", "agent": "a0", "artifact": x})
        elif (
            code == "wrong_phase"
            and st != "fast_track"
            and a["submitter"] != "a1"
            and (a["slot"] == "s1")
        ):
            out.append({"op": "object", "agent": "a1", "artifact": x})
        elif code == "duplicate":
            out.append(
                {
                    "op": "propose",
                    "agent": a["submitter"],
                    "artifact": x,
                    "slot": a["slot"],
                    "digest": f"{x}-dup",
                }
            )
        elif code == "bad_reveal" and (
            st == "reveal" or (st == "disputed" and a["phase"] == "reveal")
        ):
            kind = ("accept", "reject") if st == "reveal" else ("retract", "keep")
            commits = rec.get("commits") if rec is not None else None
            rnd = rec.get("round") if rec is not None else None
            bound = {
                str(c[0]): str(c[2])
                for c in (commits.elems if isinstance(commits, TlaSet) else ())
                if isinstance(c, tuple) and c[1] == rnd
            }
            for v in a["committed"]:
                if v in (a["revealed"] or {}) or v not in bound:
                    continue
                vote = kind[1] if bound[v] == kind[0] else kind[0]  # not the committed one
                out.append(
                    {
                        "op": "reveal_vote",
                        "agent": v,
                        "artifact": x,
                        "vote": vote,
                        "reason": "?",
                        "salt": _salt("probe", v, x),
                    }
                )
        elif code == "limit_reached" and st == "active" and a["dispute_count"] >= 1:
            out.append({"op": "dispute", "agent": "a2", "artifact": x, "reason": "again"})
        elif code in ("limit_reached", "cooldown") and st in ("rejected", "expired", "retracted"):
            # a second resubmission (max_resubmit is 1), or one inside the cooldown
            cool = rec.get("cool") if rec is not None else 0
            if (code == "limit_reached") == (a["resubmit_count"] >= 1) and (
                code == "limit_reached" or (isinstance(cool, int) and cool > 0)
            ):
                out.append(
                    {"op": "resubmit", "agent": a["submitter"], "artifact": x, "digest": f"{x}-v9"}
                )
    return out


@dataclass
class CoverHit:
    """The shortest prefix found for a cover key (and the probe of an error key)."""

    behaviour: int
    length: int  # commands of the behaviour
    probe: dict[str, Any] | None = None
    params: dict[str, Any] | None = None


class _Prober:
    """The probe of one error code along one behaviour's replay (``_Replay.run``)."""

    def __init__(self, code: str, index: int, limit: int | None, params: dict[str, Any]):
        self.code, self.index, self.limit, self.params = code, index, limit, params
        self.hit: CoverHit | None = None

    def __call__(self, k: int, layer: Any, ref: Mapping[str, Any], spec: Any) -> None:
        if self.hit is not None or (self.limit is not None and k >= self.limit):
            return
        counts: Mapping[str, int] = getattr(layer.orchestrator, "_proposals", {})
        proposers = sorted(a for a, n in counts.items() if n >= 1)
        for cmd in _probes(self.code, ref, spec, proposers):
            obs = wire(layer.step(wire(cmd)))
            if obs["result"] == self.code:
                self.hit = CoverHit(self.index, k, cmd, self.params)
                return
            if obs["result"] == "ok":  # not a refusal after all: the state moved on
                raise _ProbeAccepted(json.dumps(cmd))


def find_error_hits(behaviours: Sequence[Behaviour]) -> dict[str, CoverHit]:
    """For each error code, the shortest matched prefix after which a probe gets it
    (rate_limited with ``propose_rate`` 1, the only parameter that differs)."""
    hits: dict[str, CoverHit] = {}
    for code in ERROR_CODES:
        params = {**PARAMS, "propose_rate": 1} if code == "rate_limited" else dict(PARAMS)
        for b in behaviours:
            best = hits.get(f"error-{code}")
            prober = _Prober(code, b.index, None if best is None else best.length, params)
            try:
                replay = _Replay(b.trace, b.steps[: b.played.matched], b.tag, b.setup)
                replay.run(b.played.seed, params, prober)
            except _ProbeAccepted:
                continue
            if prober.hit is not None and (best is None or prober.hit.length < best.length):
                hits[f"error-{code}"] = prober.hit
            if prober.hit is not None and prober.hit.length == 0:
                break
    return hits


class _ProbeAccepted(Exception):
    pass


# --- writing -----------------------------------------------------------------------------------


def _owned(root: Path) -> list[Path]:
    """The files of ``root`` this generator owns: tlc-* vectors and ITF traces."""
    lc = root / "lifecycle"
    if not lc.is_dir():
        return []
    return sorted(
        [p for p in lc.glob("*/tlc-*.json") if p.parent.name != "traces"]
        + list((lc / "traces").glob("tlc-*.itf.json"))
    )


def _itf(b: Behaviour, n: int) -> dict[str, Any]:
    """Behaviour ``b`` (its first ``n`` commands) in ITF, with each step's command."""
    steps = b.steps[:n]
    last = steps[-1].last if steps else 0
    cmd_at: dict[int, Mapping[str, Any]] = {
        s.first: c for s, c in zip(steps, b.played.commands[:n], strict=True)
    }
    states = []
    var_names = ["art", "ticking", "lastEvent", "unguarded", "hist"]
    for i, st in enumerate(b.trace[: last + 1]):
        meta: dict[str, Any] = {"index": i, "action": _hist_text(st.hist) if i else "Init"}
        if i in cmd_at:
            meta["command"] = dict(cmd_at[i])
        doc: dict[str, Any] = {"#meta": meta}
        doc.update({k: to_itf(st.values[k]) for k in var_names if k in st.values})
        states.append(doc)
    return {
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "generated-by": "ostrom.conformance.generators.tlc_vectors (TLC -simulate)",
            "model": f"models/{SIM_MODULE}.tla",
            "simulate": {"seed": SIM_SEED, "depth": SIM_DEPTH, "num": SIM_NUM, "trace": b.index},
            "reference_seed": b.played.seed,
            "vector": f"lifecycle/{steps[-1].op}/tlc-{b.tag}" if steps else None,
        },
        "vars": var_names,
        "states": states,
    }


def build_documents(
    traces: Sequence[list[SimState]], work: Path
) -> tuple[dict[str, dict[str, Any]], dict[str, str], list[str]]:
    """Every document to write (path under the suite -> JSON document), the cover table
    (key -> vector id) and the disagreements between the reference and the spec."""
    behaviours, findings = build_behaviours(traces)
    docs: dict[str, dict[str, Any]] = {}
    cover: dict[str, str] = {}
    # (a) the first SIM_VECTORS behaviours, as far as the reference follows them
    for b in behaviours[:SIM_VECTORS]:
        n = b.played.matched
        if n == 0:
            continue
        steps = b.steps[:n]
        action = steps[-1].op
        name = f"tlc-{b.tag}"
        desc = (
            f"TLC random simulation (models/{SIM_MODULE}.tla, -simulate -seed {SIM_SEED} "
            f"-depth {SIM_DEPTH}, behaviour {b.index}): {n} commands; the reference's reviewer "
            f"lottery draws the behaviour's reviewers with seed {b.played.seed}. ITF: "
            f"lifecycle/traces/{name}.itf.json."
        )
        doc = _record(
            SIM,
            PARAMS,
            b.played.seed,
            action,
            name,
            desc,
            SOURCE_SIM,
            _properties(steps),
            b.played.commands[:n],
            _notes(steps),
        )
        docs[f"lifecycle/{action}/{name}.json"] = doc
        docs[f"lifecycle/traces/{name}.itf.json"] = _itf(b, n)
    # (b) the cover set: the shortest matched prefix for each action and row ...
    hits: dict[str, CoverHit] = {}
    for b in behaviours:
        for k, step in enumerate(b.steps[: b.played.matched]):
            for key in cover_keys(step):
                if key not in hits or k + 1 < hits[key].length:
                    hits[key] = CoverHit(b.index, k + 1)
    # ... the rows random simulation did not take: BFS on a small registry ...
    for key in all_cover_keys():
        if key in hits or not key.startswith("row-"):
            continue
        row = _row_of(key)
        setups = (SOLO, DUO) if "retracted" in row else (DUO, SOLO)
        for setup in setups:
            trace = cover_run(work, setup, row)
            if trace is None:
                continue
            origin = f"TLC's BFS counterexample of NotCovered on {setup.cfg} ({', '.join(row)})"
            b = replay_behaviour(len(behaviours), trace, setup, origin)
            if b.played.divergence is not None:
                findings.append(b.played.divergence)
            behaviours.append(b)
            for k, step in enumerate(b.steps[: b.played.matched]):
                for kk in cover_keys(step):
                    if kk not in hits or k + 1 < hits[kk].length:
                        hits[kk] = CoverHit(b.index, k + 1)
            break
    # ... and each error code
    hits.update(find_error_hits(behaviours))
    by_prefix: dict[tuple[int, int, str], list[str]] = {}
    for key in all_cover_keys():
        if key not in hits:
            continue
        h = hits[key]
        probe = json.dumps(h.probe, sort_keys=True) if h.probe else ""
        by_prefix.setdefault((h.behaviour, h.length, probe), []).append(key)
    for (bi, n, _), keys in sorted(by_prefix.items(), key=lambda kv: kv[1][0]):
        b = behaviours[bi]
        h = hits[keys[0]]
        steps = b.steps[:n]
        commands = list(b.played.commands[:n])
        notes = _notes(steps)
        code = None
        if h.probe is not None:
            code = keys[0].removeprefix("error-")
            commands.append(h.probe)
            notes.append(f"refused with {code}: the spec does not take it (or abstracts it)")
        action = str(h.probe["op"]) if h.probe is not None else steps[-1].op
        name = f"tlc-cover-{_key_slug(keys[0])}"
        origin = b.origin or (
            f"the simulated behaviours (models/{SIM_MODULE}.tla, -simulate -seed {SIM_SEED}, "
            f"behaviour {bi})"
        )
        desc = (
            f"TLC cover set: the shortest prefix of {origin}, {n} commands, that "
            f"covers {', '.join(keys)}"
            + (f", then a command refused with {code}" if code else "")
            + f"; reviewer lottery seed {b.played.seed}."
        )
        params = h.params or PARAMS
        doc = _record(
            b.setup,
            params,
            b.played.seed,
            action,
            name,
            desc,
            SOURCE_COVER,
            _properties(steps, code),
            commands,
            notes,
        )
        rel = f"lifecycle/{action}/{name}.json"
        docs[rel] = doc
        for key in keys:
            cover[key] = doc["id"]
    return docs, cover, findings


def generate_tlc_vectors(out_root: Path, *, work: Path | None = None) -> list[Path]:
    """Write the TLC-sourced lifecycle vectors and ITF traces under ``out_root`` (the suite
    folder, e.g. vectors/) and remove the stale ones it owns; the paths written.

    Deterministic: the same bytes on every run.  Does not touch MANIFEST.json (the caller,
    e.g. generate.write_suite, rebuilds it).  Raises ``TlcVectorError`` when the reference
    disagrees with the spec on a behaviour, or when a cover key is not reached.
    """
    tmp = None
    if work is None:
        tmp = Path(tempfile.mkdtemp(prefix="ostrom-tlc-vectors-"))
        work = tmp
    try:
        traces = simulate(work)
        docs, cover, findings = build_documents(traces, work)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if findings:
        raise TlcVectorError("the reference disagrees with the spec", findings)
    missing = [k for k in all_cover_keys() if k not in cover]
    if missing:
        raise TlcVectorError("cover keys not reached by the simulation", missing)
    for rel, doc in docs.items():
        if not rel.endswith(".itf.json"):
            errors = vector_errors(doc, rel)
            if errors:
                raise TlcVectorError(f"{rel}: invalid vector", errors)
    written: list[Path] = []
    for old in _owned(out_root):
        if old.relative_to(out_root).as_posix() not in docs:
            old.unlink()
    for rel, doc in sorted(docs.items()):
        path = out_root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = dump(doc) if not rel.endswith(".itf.json") else json.dumps(doc, indent=1) + "\n"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def cover_table(out_root: Path) -> dict[str, list[str]]:
    """key -> ids of the tlc:* vectors under ``out_root`` whose description names it."""
    table: dict[str, list[str]] = {k: [] for k in all_cover_keys()}
    for p in _owned(out_root):
        if p.name.endswith(".itf.json"):
            continue
        doc = json.loads(p.read_text(encoding="utf-8"))
        for key in table:
            if re.search(rf"\b{re.escape(key)}\b", doc["description"]):
                table[key].append(doc["id"])
    return table


def main() -> int:  # pragma: no cover - a developer's entry point
    started = time.monotonic()
    paths = generate_tlc_vectors(layout.source_tree("regenerating the TLC vectors") / "vectors")
    print(f"{len(paths)} files in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
