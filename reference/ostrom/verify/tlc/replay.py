"""What TLC 2.15's distributed server leaves unsaid, asked of single-machine TLC.

The server prints a violation found by a worker as its last step only, without naming the
invariant or property it violates (verify/tlc/distributed.py), and it skips temporal
properties without a word.  Both questions are answered by TLC itself, in a TLC run of
a second or two, so that the answer is the spec's, not a guess:

* :func:`name_violation` replays the reported step: a generated module EXTENDS the model's
  and starts in the step's first state (every variable set to its printed value); for a
  two-state report its next-state relation is exactly the step to the second state, checked
  against the model's invariants and properties, and TLC names what the step violates; for
  a one-state report (a deadlock, or an error computing its successors) the spec's own
  next-state relation is taken from that state only (a CONSTRAINT keeps TLC there), and TLC
  says which;
* :func:`has_temporal` runs the model's properties through TLC's front end (a one-step
  simulation): TLC prints "Implied-temporal checking" (message 2212) iff one of them is
  temporal, i.e. not an invariant-like ``[]P`` or an action property ``[][A]_v``, which the
  distributed server does check.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from ostrom.verify.tlc.cfg import CfgError, parse_cfg, render_cfg
from ostrom.verify.tlc.output import TlcOutcome, TraceState
from ostrom.verify.tlc.runner import RunnerError, run_tlc
from ostrom.verify.tlc.text import blank, definitions
from ostrom.verify.tlc.values import (
    ModelValue,
    TlaFunction,
    TlaRecord,
    TlaSet,
    Value,
    format_value,
)

__all__ = [
    "REPLAY_MODULE", "has_temporal", "init_next_of", "name_violation", "next_of", "variables_of",
]  # fmt: skip

REPLAY_MODULE: Final = "OstromReplay"
MSG_TEMPORAL: Final = 2212  # "Implied-temporal checking--satisfiability problem has N branches."
_TIMEOUT: Final = 120.0
#: Sections a replay drops: it starts in the reported state and moves as told.
_DROPPED: Final = ("SPECIFICATION", "INIT", "NEXT", "CONSTRAINTS", "ACTION_CONSTRAINTS",
                   "SYMMETRY", "VIEW")  # fmt: skip
_BOX_NEXT_RE = re.compile(r"\[\]\[\s*([A-Za-z_]\w*)\s*\]_")
#: ``Init /\ ...``: the first conjunct of a spec's definition, when it is a name.
_FIRST_CONJUNCT_RE = re.compile(r"\s*(?:/\\\s*)?([A-Za-z_]\w*)\s*/\\")


def _state(values: Mapping[str, Value], *, primed: bool) -> str:
    mark = "'" if primed else ""
    return "\n".join(f"    /\\ {v}{mark} = {format_value(val)}" for v, val in values.items())


def _model_values(value: Value, into: set[str]) -> None:
    """The model values in ``value`` (``p1`` of ``Procs = {p1, p2}``): the replay module
    declares them as constants, which the cfg sets to themselves, since TLA+ text cannot
    name a model value otherwise."""
    if isinstance(value, ModelValue):
        into.add(value.name)
    elif isinstance(value, TlaSet):
        for v in value.elems:
            _model_values(v, into)
    elif isinstance(value, TlaRecord):
        for _, v in value.fields:
            _model_values(v, into)
    elif isinstance(value, TlaFunction):
        for k, v in value.pairs:
            _model_values(k, into)
            _model_values(v, into)
    elif isinstance(value, tuple):
        for v in value:
            _model_values(v, into)


def _extended(root: Path, module: str, extra: Mapping[str, str] | None) -> list[str]:
    """The texts (comments and strings blanked) of ``module`` and of the modules it
    EXTENDS, directly or not, nearest first, from spec/, models/ and ``extra``."""
    sources = {p.stem: p for sub in ("spec", "models") for p in sorted((root / sub).glob("*.tla"))}
    out: list[str] = []
    todo, seen = [module], set()
    while todo:
        name = todo.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if extra and name in extra:
            text = extra[name]
        elif name in sources:
            text = sources[name].read_text(encoding="utf-8")
        else:
            continue  # a standard module
        masked = blank(text, strings=True)
        out.append(masked)
        for ext in re.findall(r"^EXTENDS\s+(.+)$", masked, re.M):
            todo += [x.strip() for x in ext.split(",")]
    return out


def init_next_of(
    root: Path, module: str, cfg_text: str, extra: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """The model's initial predicate and next-state relation: the cfg's INIT and NEXT,
    else the ``I /\\ [][N]_v`` of its SPECIFICATION's definition (looked up in ``module``
    and what it EXTENDS, following a spec built on another one); None where neither says."""
    cfg = parse_cfg(cfg_text)
    init = next(iter(cfg.sections.get("INIT") or []), None)
    nxt = next(iter(cfg.sections.get("NEXT") or []), None)
    specs = cfg.sections.get("SPECIFICATION") or []
    if (init and nxt) or not specs:
        return init, nxt
    texts = _extended(root, module, extra)
    todo, seen = [specs[0]], set()
    while todo and not (init and nxt):
        spec = todo.pop(0)
        if spec in seen:
            continue
        seen.add(spec)
        for masked in texts:
            body = next((masked[d.start : d.end] for d in definitions(masked)
                         if d.name == spec and not d.params), None)  # fmt: skip
            if body is None:
                continue
            m = _BOX_NEXT_RE.search(body)
            first = _FIRST_CONJUNCT_RE.match(body)
            if m:
                nxt = nxt or m.group(1)
                if first and first.group(1) != m.group(1):
                    init = init or first.group(1)
            else:
                # Spec == OtherSpec: a spec built on another one
                todo += re.findall(r"([A-Za-z_]\w*Spec)\b", body)
            break
    return init, nxt


def next_of(
    root: Path, module: str, cfg_text: str, extra: Mapping[str, str] | None = None
) -> str | None:
    """The model's next-state relation (:func:`init_next_of`)."""
    return init_next_of(root, module, cfg_text, extra)[1]


_VARIABLES_RE = re.compile(r"^[ \t]*VARIABLES?\b((?:\s*[A-Za-z_]\w*\s*,)*\s*[A-Za-z_]\w*)", re.M)


def variables_of(root: Path, module: str, extra: Mapping[str, str] | None = None) -> list[str]:
    """The variables ``module`` declares, with those of the modules it EXTENDS (an
    INSTANCE's are substituted, not declared), in declaration order."""
    out: list[str] = []
    for masked in reversed(_extended(root, module, extra)):
        for m in _VARIABLES_RE.finditer(masked):
            for name in m.group(1).split(","):
                if name.strip() and name.strip() not in out:
                    out.append(name.strip())
    return out


def _replay_cfg(cfg_text: str, *, keep_checks: bool, title: str, model_values: list[str]) -> str:
    cfg = parse_cfg(cfg_text)
    for name in model_values:
        cfg.constants[name] = ("=", name)
    for key in _DROPPED:
        cfg.sections.pop(key, None)
    if not keep_checks:
        cfg.sections.pop("INVARIANTS", None)
        cfg.sections.pop("PROPERTIES", None)
    cfg.sections["INIT"] = ["OstromReplayFrom"]
    return render_cfg(cfg, title)


def name_violation(
    root: Path,
    module: str,
    cfg_text: str,
    trace: list[TraceState],
    *,
    label: str,
    extra_modules: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> TlcOutcome | None:
    """What single-machine TLC reports for the step a distributed run printed (its last
    one or two states of ``trace``): an ``invariant``, ``property`` or ``deadlock`` outcome
    naming it, an ``error`` one (the successors of a one-state report cannot be computed),
    or None if the replay finds nothing (then the report is not explained)."""
    if not trace:
        return None
    extra = dict(extra_modules or {})
    step = trace[-2:] if len(trace) >= 2 else trace[-1:]
    found: set[str] = set()
    for state in step:
        for value in state.values.values():
            _model_values(value, found)
    try:
        declared = set(parse_cfg(cfg_text).constants)
    except CfgError:
        return None
    model_values = sorted(found - declared)
    lines = [
        f"---- MODULE {REPLAY_MODULE} ----",
        "\\* Generated by ostrom check --distributed (reference/ostrom/verify/tlc/replay.py):",
        "\\* the step TLC's distributed server reported, replayed on one machine.",
        f"EXTENDS {module}, TLC",
        *([f"CONSTANTS {', '.join(model_values)}"] if model_values else []),
        "OstromReplayFrom ==",
        _state(step[0].values, primed=False),
    ]
    if len(step) == 2:
        lines += ["OstromReplayTo ==", _state(step[1].values, primed=True)]
    lines.append("====")
    try:
        if len(step) == 2:
            cfg = _replay_cfg(
                cfg_text, keep_checks=True, title="ostrom: replay of a step",
                model_values=model_values,
            )  # fmt: skip
            cfg += "NEXT\n    OstromReplayTo\n"
            options: tuple[str, ...] = ("-deadlock",)
        else:
            nxt = next_of(root, module, cfg_text, extra)
            if nxt is None:
                return None
            cfg = _replay_cfg(
                cfg_text, keep_checks=False, title="ostrom: replay of a state",
                model_values=model_values,
            )  # fmt: skip
            cfg += f"NEXT\n    {nxt}\nCONSTRAINT\n    OstromReplayFrom\n"
            options = ()
    except CfgError:
        return None
    extra[REPLAY_MODULE] = "\n".join(lines) + "\n"
    try:
        run = run_tlc(
            root,
            REPLAY_MODULE,
            Path(f"{REPLAY_MODULE}.cfg"),
            label=f"{label}--replay",
            workers=1,
            cfg_text=cfg,
            timeout=timeout or _TIMEOUT,
            extra_modules=extra,
            tlc_options=options,
        )
    except RunnerError:
        return None
    outcome = run.outcome
    if outcome.kind in ("invariant", "property", "deadlock", "error"):
        return outcome
    return None


def has_temporal(
    root: Path,
    module: str,
    cfg_text: str,
    *,
    label: str,
    properties: list[str] | None = None,
    extra_modules: Mapping[str, str] | None = None,
) -> bool:
    """Whether the cfg's PROPERTIES (or only ``properties`` of them) include a temporal
    one, which TLC 2.15's distributed server does not check: TLC's own answer (module
    docstring)."""
    cfg = parse_cfg(cfg_text)
    props = cfg.sections.get("PROPERTIES") or []
    if properties is not None:
        props = [p for p in props if p in properties]
    if not props:
        return False
    cfg.sections["PROPERTIES"] = props
    cfg.sections.pop("INVARIANTS", None)
    try:
        run = run_tlc(
            root,
            module,
            Path(f"{module}.cfg"),
            label=f"{label}--temporal",
            workers=1,
            cfg_text=render_cfg(cfg, "ostrom: which properties are temporal"),
            timeout=_TIMEOUT,
            extra_modules=extra_modules,
            tlc_options=("-simulate", "num=1", "-depth", "1"),
        )
    except RunnerError:
        return False
    marker = f"@!@!@STARTMSG {MSG_TEMPORAL}:"
    return any(marker in line for line in run.output_lines)
