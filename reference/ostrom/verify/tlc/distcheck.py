"""``ostrom check --distributed``: the manifest's rows from TLC's distributed mode.

Each selected model runs on a TLCServer with its workers (verify/tlc/distributed.py), and
its row is what ``ostrom check`` prints (verify/tlc/runner.py's :class:`RowResult`): the
verdict against the manifest's ``expect``, the distinct and total state counts against the
recorded single-machine ones (they must be equal: the same states are found whoever finds
them), and the counterexample.  What TLC 2.15's server does not say is filled in by
single-machine TLC (verify/tlc/replay.py):

* a violation found by a worker is named by replaying the step the server printed; the
  trace saved is that step only (``<model>--distributed.itf.json``), since the server does
  not print the path to it — the single-machine mode gives the whole counterexample;
* temporal properties are not checked by the server: a model whose PROPERTIES include one
  says so in its row, and a model whose expected violation is temporal is not run at all
  (its row is ``not checked``);
* a worker checks invariants and action properties only on the steps that reach a state
  not seen before (``TLCWorker.getNextStates`` checks the new states only): invariants
  lose nothing (every state is new once), but an action property violated only by steps
  into known states is missed, where single-machine TLC checks every step;
* reachability witnesses cannot share the model's run: the witness probe of the normal mode
  keeps its state in TLC's registers (``TLCSet``), which distributed TLC refuses.  So each
  witness gets a distributed run of its own, stopped when the witness is reached: a state
  witness as the run's only invariant, a step witness as the action property
  ``[][W]_<<all variables>>`` (violated by the first step that is not ``W``) on the model
  with the state before each step added as a variable, so that every step of the model
  reaches a new state of that run and the workers check it (above).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ostrom import layout
from ostrom.verify.tlc.cfg import CfgError, cfg_names, parse_cfg, render_cfg, witness_cfg
from ostrom.verify.tlc.distributed import DistributedSetup, run_distributed
from ostrom.verify.tlc.itf import write_itf
from ostrom.verify.tlc.manifest import Manifest, ManifestError, ModelEntry, cfg_text
from ostrom.verify.tlc.output import TlcOutcome
from ostrom.verify.tlc.replay import has_temporal, init_next_of, name_violation, variables_of
from ostrom.verify.tlc.runner import ProgressCallback, RowResult, RunnerError, TlcRun
from ostrom.verify.tlc.witnesses import is_step_witness

__all__ = ["STEP_WITNESS", "check_distributed"]

#: The action property of a step witness's run.
STEP_WITNESS = "OstromStepWitness"
#: The variable a step witness's run adds: the state before the last step.
PREV = "ostromPrev"
_FIRST_ACTION = "(path not reported by distributed TLC)"


#: TLC's boilerplate around an exception's message: not worth a row's message.
_BOILERPLATE = ("TLC threw an unexpected exception", "This was probably caused",
                "See the User Output", "The exception was a")  # fmt: skip


def _detail(text: str, lines: int = 3) -> str:
    """The first ``lines`` informative lines of TLC's error text, joined."""
    stripped = (ln.strip() for ln in text.splitlines())
    kept = [ln for ln in stripped if ln.strip(": ") and not ln.startswith(_BOILERPLATE)]
    return " ".join(kept[:lines])


def _vacuous(entry: ModelEntry, witness: str) -> str:
    return (
        f"witness {witness} holds in every reachable state: what it witnesses is "
        f"unreachable, so the checks of {entry.name} may pass vacuously"
    )


def _name(
    root: Path, entry: ModelEntry, text: str, run: TlcRun, extra: dict[str, str] | None
) -> TlcOutcome:
    """The run's outcome, with a violation the server left unnamed named by TLC."""
    outcome = run.outcome
    if outcome.kind != "unnamed":
        return outcome
    named = name_violation(
        root, entry.module, text, outcome.trace, label=run.label, extra_modules=extra
    )
    if named is None:
        return outcome
    return replace(
        outcome, kind=named.kind, got=named.got, error_text=named.error_text or outcome.error_text
    )


def _counts(entry: ModelEntry, outcome: TlcOutcome) -> str | None:
    """A mismatch with the recorded single-machine counts (depth is not compared: the
    server's is not the BFS depth)."""
    for key, label in (("distinct_states", "state count"), ("total_states", "total state count")):
        want, got = getattr(entry, key), getattr(outcome, key)
        if want is not None and got is not None and got != want:
            return (
                f"{label} differs from the single-machine run: manifest {want}, got {got} "
                f"(distributed TLC must find the same states; compare with "
                f"`ostrom check --model {entry.name}`)"
            )
    return None


def _save(
    out: Path, entry: ModelEntry, outcome: TlcOutcome, expected: str, *, fragment: bool
) -> str | None:
    """Save the trace as ITF; a ``fragment`` (the step a worker's report printed) gets
    its first state's action, which TLC prints as ``Initial predicate``, corrected."""
    if not outcome.trace:
        return None
    trace = list(outcome.trace)
    if fragment:
        trace[0] = replace(trace[0], action=_FIRST_ACTION)
    meta: dict[str, object] = {
        "model": entry.name,
        "module": entry.module,
        "config": entry.source,
        "witness": None,
        "expected": expected,
        "mode": "distributed",
    }
    if fragment:
        meta["fragment"] = (
            "the violating step (or deadlocked state) only: TLC 2.15's distributed server "
            "does not print the path to it"
        )
    path = write_itf(
        out / f"{entry.name}--distributed.itf.json", replace(outcome, trace=trace), meta
    )
    return str(path)


def _temporal(root: Path, entry: ModelEntry, text: str) -> list[str]:
    """The cfg's temporal properties (TLC's answer: verify/tlc/replay.py): one TLC run for
    each, after one for all of them when there are many."""
    props = cfg_names(text, "PROPERTY", "PROPERTIES")
    if len(props) > 3 and not has_temporal(root, entry.module, text, label=entry.name):
        return []  # many properties, none temporal: one TLC run says so
    return [
        p for p in props if has_temporal(root, entry.module, text, label=entry.name, properties=[p])
    ]


def _model_row(
    root: Path,
    entry: ModelEntry,
    text: str,
    setup: DistributedSetup,
    *,
    out: Path,
    timeout: float | None,
    on_progress: ProgressCallback | None,
    on_ready: Callable[[str, int], None] | None,
) -> RowResult:
    expected = entry.expect
    props = cfg_names(text, "PROPERTY", "PROPERTIES")
    temporal = _temporal(root, entry, text)
    if expected in temporal:
        return RowResult(
            name=entry.name, model=entry.name, witness=None, expected=expected,
            got="not checked", ok=False, distinct_states=None, total_states=None,
            depth=None, seconds=0.0,
            message=f"{expected} is a temporal property, which TLC 2.15's distributed "
            f"mode does not check: `ostrom check --model {entry.name}` checks it",
        )  # fmt: skip
    drun = run_distributed(
        root, entry.module, entry.cfg_name, text, label=entry.name, setup=setup,
        fp=entry.fp, timeout=timeout, on_progress=on_progress, on_ready=on_ready,
    )  # fmt: skip
    run = drun.run
    fragment = run.outcome.kind == "unnamed"
    outcome = _name(root, entry, text, run, None)
    run.outcome = outcome
    ok = outcome.got == expected
    notes: list[str] = []
    if not ok:
        notes.append(f"expected {expected}, got {outcome.got}")
        if entry.mutant and outcome.kind == "pass":
            notes[-1] = f"mutant not caught: expected {expected}, but every check passed"
        if outcome.kind == "pass" and expected in props:
            notes.append(
                f"TLC 2.15's distributed workers check {expected} only on the steps that "
                f"reach a state not seen before: `ostrom check --model {entry.name}` checks "
                "every step"
            )
        elif outcome.kind == "unnamed":
            notes.append(
                "the distributed server printed a violating step without naming it, and "
                f"replaying it did not say what it violates: `ostrom check --model "
                f"{entry.name}` does"
            )
        elif outcome.kind == "error" and outcome.error_text:
            notes[-1] = f"expected {expected}, but TLC failed: {_detail(outcome.error_text)}"
    elif outcome.kind == "pass":
        mismatch = _counts(entry, outcome)
        if mismatch:
            ok = False
            notes.append(mismatch)
    if temporal and outcome.kind != "error":
        notes.append(
            f"not checked: {', '.join(temporal)} (temporal: TLC 2.15's distributed mode "
            f"skips them; `ostrom check --model {entry.name}` checks them)"
        )
    stepwise = [p for p in props if p not in temporal and p != expected]
    if stepwise and outcome.kind == "pass":
        notes.append(
            f"{', '.join(stepwise)}: checked only on the steps that reach a state not seen "
            "before (TLC 2.15's distributed workers)"
        )
    if outcome.kind == "pass" and outcome.total_states is None:
        notes.append(
            "total states unknown: a worker of another machine took part (TLC 2.15's "
            "server miscounts them; each worker prints its share as `Computed: N`)"
        )
    counterexample = _save(out, entry, outcome, expected, fragment=fragment)
    if counterexample and fragment:
        notes.append(
            "the counterexample is the violating step (or deadlocked state) only: TLC "
            "2.15's distributed server does not print the path to it; `ostrom check "
            f"--model {entry.name}` gives it whole"
        )
    return RowResult(
        name=entry.name, model=entry.name, witness=None, expected=expected, got=outcome.got,
        ok=ok, distinct_states=outcome.distinct_states, total_states=outcome.total_states,
        depth=None, seconds=run.seconds, counterexample=counterexample,
        message="; ".join(notes), run=run,
    )  # fmt: skip


def _witness_run(
    root: Path, entry: ModelEntry, base: str, witness: str
) -> tuple[str, str, dict[str, str] | None]:
    """The module, cfg and generated modules of one witness's distributed run.

    A step witness runs on the model with one more variable, ``ostromPrev``: the state
    (or, under a VIEW, the view) before the last step.  A state of that run is a step of
    the model's, so a step into a state the model has seen before still reaches a state
    the run has not, and the workers, which check action properties only on new states,
    check every step the single-machine run checks.  The run has as many states as the
    model has distinct steps; it stops at the first step that reaches the witness.
    """
    if not is_step_witness(witness):
        return entry.module, witness_cfg(base, witness), None
    variables = variables_of(root, entry.module)
    init, nxt = init_next_of(root, entry.module, base)
    if not variables or not init or not nxt:
        raise RunnerError(
            f"{entry.name}: cannot find the VARIABLES, the initial predicate and the next-state "
            f"relation of {entry.module} for the step witness {witness}"
        )
    cfg = parse_cfg(base)
    view = next(iter(cfg.sections.get("VIEW") or []), None)
    state = f"<<{', '.join(variables)}>>"
    name = f"{entry.module}StepWitness"
    lines = [
        f"---- MODULE {name} ----",
        "\\* Generated by ostrom check --distributed (reference/ostrom/verify/tlc/distcheck.py):",
        f"\\* step witness {witness} as an action property, on the model's steps as states.",
        f"EXTENDS {entry.module}",
        f"VARIABLE {PREV}",
        f"OstromInit == {init} /\\ {PREV} = <<>>",
        f"OstromNext == {nxt} /\\ {PREV}' = {view or state}",
        f"{STEP_WITNESS} == [][{witness}]_{state}",
    ]
    if view:
        lines.append(f"OstromView == <<{view}, {PREV}>>")
        cfg.sections["VIEW"] = ["OstromView"]
    lines.append("====")
    for key in ("SPECIFICATION", "INVARIANTS"):
        cfg.sections.pop(key, None)
    cfg.sections["INIT"] = ["OstromInit"]
    cfg.sections["NEXT"] = ["OstromNext"]
    cfg.sections["PROPERTIES"] = [STEP_WITNESS]
    module = "\n".join(lines) + "\n"
    return name, render_cfg(cfg, f"ostrom: step witness {witness}"), {name: module}


def _witness_row(
    root: Path,
    entry: ModelEntry,
    base: str,
    witness: str,
    setup: DistributedSetup,
    *,
    timeout: float | None,
    on_progress: ProgressCallback | None,
    on_ready: Callable[[str, int], None] | None,
) -> RowResult:
    try:
        module, text, extra = _witness_run(root, entry, base, witness)
    except CfgError as exc:
        raise RunnerError(f"{entry.name}: {exc}") from None
    label = f"{entry.name}--{witness}"
    drun = run_distributed(
        root, module, entry.cfg_name, text, label=label, setup=setup, fp=entry.fp,
        timeout=timeout, extra_modules=extra, on_progress=on_progress, on_ready=on_ready,
    )  # fmt: skip
    outcome = drun.run.outcome
    # the witness is the run's only check: a step the server reports violates it (one
    # state alone is a deadlock or an error computing its successors)
    stepped = outcome.kind == "unnamed" and len(outcome.trace) >= 2
    named = outcome.kind in ("invariant", "property") and outcome.got in (witness, STEP_WITNESS)
    reached = stepped or named
    got = witness if reached else outcome.got
    message = "" if reached else f"expected {witness}, got {outcome.got}"
    if outcome.kind == "pass":
        message = _vacuous(entry, witness)
    elif not reached and outcome.kind == "unnamed":
        got = "deadlock"
        message = f"a deadlock (or an error) stopped the run before {witness} was reached"
    return RowResult(
        name=f"{entry.name}/{witness}", model=entry.name, witness=witness, expected=witness,
        got=got, ok=reached, distinct_states=None, total_states=None, depth=None,
        seconds=drun.run.seconds, message=message, run=drun.run,
    )  # fmt: skip


def _not_checked(entry: ModelEntry, witness: str, failed: RowResult) -> RowResult:
    return RowResult(
        name=f"{entry.name}/{witness}", model=entry.name, witness=witness, expected=witness,
        got="not checked", ok=False, distinct_states=None, total_states=None, depth=None,
        seconds=0.0, message=f"not run: the run of {entry.name} failed ({failed.got})",
    )  # fmt: skip


def check_distributed(
    manifest: Manifest,
    root: Path,
    entries: Sequence[ModelEntry],
    *,
    setup: DistributedSetup,
    out_dir: Path | None = None,
    witnesses: bool = True,
    timeout: float | None = None,
    on_start: Callable[[str, str], None] | None = None,
    on_progress: ProgressCallback | None = None,
    on_row: Callable[[RowResult], None] | None = None,
    on_end: Callable[[str], None] | None = None,
    on_ready: Callable[[str, int], None] | None = None,
) -> list[RowResult]:
    """One row per entry and (with ``witnesses``) per reachability witness, as
    ``check_models`` returns them, each from a distributed TLC run (module docstring);
    the runs go one at a time (they share the port and, on loopback, the cores).
    Callbacks as ``check_models``'s, plus ``on_ready(label, port)`` when a run's server
    accepts workers."""
    out = out_dir if out_dir is not None else layout.scratch(root) / ".tlc" / "counterexamples"
    rows: list[RowResult] = []
    for entry in entries:
        try:
            base = cfg_text(manifest, entry, root)
        except ManifestError as exc:
            raise RunnerError(str(exc)) from None
        todo: list[str | None] = [None, *(entry.witnesses if witnesses else [])]
        failed: RowResult | None = None
        for witness in todo:
            label = f"{entry.name}--{witness}" if witness else entry.name
            if witness is not None and failed is not None:
                # the model's own run failed (TLCGet/TLCSet, a parse error): each witness's
                # would fail alike; do not pay a distributed run for each
                row = _not_checked(entry, witness, failed)
                rows.append(row)
                if on_row is not None:
                    on_row(row)
                continue
            if on_start is not None:
                on_start(label, f"{entry.name}/{witness}" if witness else entry.name)
            try:
                if witness is None:
                    row = _model_row(
                        root, entry, base, setup, out=out, timeout=timeout,
                        on_progress=on_progress, on_ready=on_ready,
                    )  # fmt: skip
                else:
                    row = _witness_row(
                        root, entry, base, witness, setup, timeout=timeout,
                        on_progress=on_progress, on_ready=on_ready,
                    )  # fmt: skip
            finally:
                if on_end is not None:
                    on_end(label)
            if witness is None and row.run is not None and row.run.outcome.kind == "error":
                failed = row
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows
