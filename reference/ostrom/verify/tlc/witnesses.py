"""A model's reachability witnesses checked in one TLC run instead of one run each.

A witness is an invariant that must be *violated*: ``NeverForgottenInv`` says no artifact
is ever forgotten, and TLC reporting it violated shows that forgetting is reachable, so the
model's checks of forgetting are not vacuous (docs/checking.md).  Checked one run per
witness, a model with 18 witnesses costs 18 JVM starts and 18 partial searches of the same
state space; on two cores those starts were most of the time of ``make test``'s TLC rows.

Here the witnesses are folded into one invariant, ``OstromWitnessProbe``, that always holds
and prints ``<<"ostrom-witness", "W">>`` the first time a state violates witness ``W``
(TLC's registers, ``TLCSet``/``TLCGet``, remember which were printed; the initial predicate
or the specification is wrapped to clear them, because TLC refuses to read a register
that was never set; a witness once printed is not evaluated again: TLC evaluates a
conjunction from the left).  The probe lives in a generated module that EXTENDS the model's::

    ---- MODULE MCLifecycleWitnesses ----
    EXTENDS MCLifecycle, TLC
    OstromWitnessInit == TLCSet(1000, FALSE) /\\ ... /\\ Init
    OstromWitnessProbe ==
        /\\ (~TLCGet(1000) /\\ ~NeverActiveInv) =>
               (TLCSet(1000, TRUE) /\\ PrintT(<<"ostrom-witness", "NeverActiveInv">>))
        ...

For a model expected to pass, the probe rides along in the model's own run (its
invariants and properties are kept, the state counts do not change: an invariant that
holds prunes nothing).  For a model expected to fail, the model's run stops at the
violation before the whole space is explored, so its witnesses get one run of their own
with the probe as the only invariant, as the one-by-one witness runs had.  A witness is
reached iff its line was printed; one that was not is reported exactly as before (the
model's checks may pass vacuously), or as not checked if the run ended early.

A *step witness* (its name ends in ``Step``) is an action formula instead, over a step's
states before and after: ``NeverAcceptAtThresholdStep`` says no tally ever accepts at
exactly tau_accept, which no state shows once the ballot is closed.  TLC refuses an
action as an invariant, so step witnesses go into ``OstromWitnessStepProbe``, an
ACTION_CONSTRAINT that always holds (it prunes nothing) and prints the same line for the
first step that violates one.

The one-run-per-witness mode is kept (``ostrom check --witness-traces``): only it saves
the path to each witness as an ITF trace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ostrom.verify.tlc.cfg import CfgError, parse_cfg, render_cfg

__all__ = [
    "PROBE",
    "REGISTER_BASE",
    "STEP_PROBE",
    "ProbeRun",
    "is_step_witness",
    "probe_run",
    "reached_witnesses",
]


def is_step_witness(name: str) -> bool:
    """A step witness is an action formula (checked per step, not per state)."""
    return name.endswith("Step")


#: The always-true invariant that reports the witnesses.
PROBE = "OstromWitnessProbe"
#: The always-true action constraint that reports the step witnesses.
STEP_PROBE = "OstromWitnessStepProbe"
#: TLC register of the first witness (the trace specs use registers 1..n for their logs;
#: the probe keeps clear of them).
REGISTER_BASE = 1000
_TAG = "ostrom-witness"
_LINE_RE = re.compile(r'^\s*<<"' + _TAG + r'", "([A-Za-z0-9_]+)">>\s*$')


@dataclass(frozen=True)
class ProbeRun:
    """What a probe run stages: the generated module (name and text) and its cfg."""

    module: str
    module_text: str
    cfg_text: str
    witnesses: tuple[str, ...] = ()  # the witnesses it reports


def probe_run(
    module: str, base_cfg: str, witnesses: Sequence[str], *, keep_checks: bool
) -> ProbeRun:
    """The probe module for ``module``'s ``witnesses`` and the cfg that runs it.

    The cfg is ``base_cfg`` with its INIT or SPECIFICATION replaced by the wrapped one and
    ``OstromWitnessProbe`` added to the invariants; without ``keep_checks`` the base's
    invariants and properties are dropped first (a liveness property could otherwise fail
    first and end the run before the witnesses are reached).  ``CfgError`` if the cfg has
    neither INIT nor SPECIFICATION, or names no witness."""
    if not witnesses:
        raise CfgError("a probe run needs at least one witness")
    cfg = parse_cfg(base_cfg)
    regs = [REGISTER_BASE + i for i in range(len(witnesses))]
    clear = " /\\ ".join(f"TLCSet({r}, FALSE)" for r in regs)
    if cfg.sections.get("SPECIFICATION"):
        (spec,) = cfg.sections["SPECIFICATION"][:1]
        start = f"OstromWitnessSpec == {clear} /\\ {spec}"
        cfg.sections["SPECIFICATION"] = ["OstromWitnessSpec"]
    elif cfg.sections.get("INIT"):
        (init,) = cfg.sections["INIT"][:1]
        start = f"OstromWitnessInit == {clear} /\\ {init}"
        cfg.sections["INIT"] = ["OstromWitnessInit"]
    else:
        raise CfgError("the cfg has neither INIT nor SPECIFICATION")
    if not keep_checks:
        cfg.sections.pop("INVARIANTS", None)
        cfg.sections.pop("PROPERTIES", None)
    states = [(r, w) for r, w in zip(regs, witnesses, strict=True) if not is_step_witness(w)]
    steps = [(r, w) for r, w in zip(regs, witnesses, strict=True) if is_step_witness(w)]
    if states:
        cfg.sections.setdefault("INVARIANTS", []).append(PROBE)
    if steps:
        cfg.sections.setdefault("ACTION_CONSTRAINTS", []).append(STEP_PROBE)
    name = f"{module}Witnesses"
    lines = [
        f"---- MODULE {name} ----",
        "\\* Generated by ostrom check (reference/ostrom/verify/tlc/witnesses.py): the",
        f"\\* reachability witnesses of {module}, reported in one run.",
        f"EXTENDS {module}, TLC",
        start,
    ]
    for probe, group in ((PROBE, states), (STEP_PROBE, steps)):
        if not group:
            continue
        lines.append(f"{probe} ==")
        for r, w in group:
            lines.append(
                f"    /\\ (~TLCGet({r}) /\\ ~{w}) => "
                f'(TLCSet({r}, TRUE) /\\ PrintT(<<"{_TAG}", "{w}">>))'
            )
    lines.append("====")
    header = f"ostrom: {len(witnesses)} reachability witness(es) of {module} in one run"
    return ProbeRun(name, "\n".join(lines) + "\n", render_cfg(cfg, header), tuple(witnesses))


def reached_witnesses(print_lines: Iterable[str]) -> set[str]:
    """The witnesses a probe run printed (each worker prints its own first sighting)."""
    out: set[str] = set()
    for line in print_lines:
        m = _LINE_RE.match(line)
        if m:
            out.add(m.group(1))
    return out
