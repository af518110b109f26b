"""``ostrom check --simulate``: the manifest's models by TLC's random simulation.

For a model too large to exhaust, TLC's ``-simulate num=N -depth D -seed S`` generates N
random behaviours of up to D steps each and checks every state of them against the
invariants, every step against the action properties, and each behaviour against the
temporal properties.  A violation is reported exactly as the normal mode reports one (the
same classification, exit code and counterexample, saved as
``<model>--simulate.itf.json``); no violation proves nothing, so such a row says
``simulated``, never ``pass``, and a mutant no simulation caught is a failure.

What TLC 2.15 does and prints, found by running it (docs/checking.md, "Scale-out"):

* it runs one simulation worker here (``-workers 1``): each TLC worker runs N behaviours
  from a seed drawn from ``-seed``, and which worker reports first is a race, so one worker
  is what makes a seed repeat;
* at the end it prints only ``Progress(-1) ...: K states generated, -1 distinct states
  found`` (message 2209): K counts every successor TLC computed and checked (all successors
  of the action it picked at each step, not only the one it took); the number of behaviours
  is not printed: a run that ends without a violation has generated all N of them (the
  worker's loop), one stopped by a violation says nothing, so ``traces`` is then unknown;
  after a violation the worker goes on until it is stopped, so K varies a little between
  runs that found one (the counterexample does not);
* temporal properties are checked on each behaviour with a stuttering step allowed at every
  state (``LiveCheck.checkTrace``): a violation found is a real behaviour (a loop in the
  trace, or stuttering where fairness allows it), but a behaviour cut at depth D proves no
  temporal property.

Reachability witnesses are not checked here: the witness probe (verify/tlc/witnesses.py)
keeps its state in TLC's registers, set while the initial states are computed, and TLC
2.15's simulation workers do not see registers set there (``TLCGet(1000) was undefined``);
a witness not met in N random behaviours would prove nothing anyway.  The normal mode
checks them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ostrom import layout
from ostrom.verify.tlc.itf import write_itf
from ostrom.verify.tlc.manifest import Manifest, ManifestError, ModelEntry, cfg_text
from ostrom.verify.tlc.output import ToolOutputParser
from ostrom.verify.tlc.runner import ProgressCallback, RowResult, RunnerError, run_tlc

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_SEED",
    "DEFAULT_TRACES",
    "SIMULATED",
    "SimRow",
    "check_simulated",
    "simulate_options",
    "states_generated",
]

DEFAULT_TRACES: Final = 1000
DEFAULT_DEPTH: Final = 100  # TLC's own default
DEFAULT_SEED: Final = 1
#: What a simulation row reports when no behaviour violated anything.
SIMULATED: Final = "simulated"
MSG_SIMULATION_STATS: Final = 2209  # Progress(-1) ...: K states generated, -1 distinct ...
MSG_SIMULATION_SUMMARY: Final = 2210  # The number of states generated: K ...
_GENERATED_RE = re.compile(r"([\d,]+) states generated")
_SUMMARY_RE = re.compile(r"number of states generated: ([\d,]+)")


#: TLC's boilerplate around an exception's message: not worth a row's message.
_BOILERPLATE = ("TLC threw an unexpected exception", "This was probably caused",
                "See the User Output", "The exception was a")  # fmt: skip


def _detail(text: str, lines: int = 3) -> str:
    """The first ``lines`` informative lines of TLC's error text, joined."""
    stripped = (ln.strip() for ln in text.splitlines())
    kept = [ln for ln in stripped if ln.strip(": ") and not ln.startswith(_BOILERPLATE)]
    return " ".join(kept[:lines])


@dataclass
class SimRow(RowResult):
    """A row of ``ostrom check --simulate``: a model row plus the behaviours explored
    (``total_states`` holds the states generated, as TLC prints them)."""

    traces: int | None = None
    depth_bound: int = DEFAULT_DEPTH
    seed: int = DEFAULT_SEED

    def to_json(self) -> dict[str, object]:
        """The row as ``ostrom check --simulate --json`` prints it: the model row's keys
        (``distinct_states`` is null: a simulation counts no distinct states) plus
        ``traces``, ``states_generated``, ``depth_bound`` and ``seed``."""
        out = super().to_json()
        out.update(
            traces=self.traces,
            states_generated=self.total_states,
            depth_bound=self.depth_bound,
            seed=self.seed,
        )
        return out


def simulate_options(traces: int, depth: int, seed: int) -> list[str]:
    """TLC's options for N behaviours of up to ``depth`` steps from ``seed``."""
    return ["-simulate", f"num={traces}", "-depth", str(depth), "-seed", str(seed)]


def states_generated(lines: Sequence[str]) -> int | None:
    """The states generated that TLC printed last (message 2209, else 2210)."""
    parser = ToolOutputParser()
    for line in lines:
        parser.feed(line)
    parser.finish(0)
    found: int | None = None
    for msg in parser.messages:
        m = None
        if msg.code == MSG_SIMULATION_STATS:
            m = _GENERATED_RE.search(msg.text)
        elif msg.code == MSG_SIMULATION_SUMMARY:
            m = _SUMMARY_RE.search(msg.text)
        if m:
            found = int(m.group(1).replace(",", ""))
    return found


def _simulate(
    manifest: Manifest,
    root: Path,
    entry: ModelEntry,
    *,
    traces: int,
    depth: int,
    seed: int,
    out: Path,
    timeout: float | None,
    on_progress: ProgressCallback | None,
) -> SimRow:
    try:
        base = cfg_text(manifest, entry, root)
    except ManifestError as exc:
        raise RunnerError(str(exc)) from None
    run = run_tlc(
        root,
        entry.module,
        Path("models") / entry.cfg_name,
        label=f"{entry.name}--simulate",
        workers=1,
        fp=entry.fp,
        cfg_text=base,
        on_progress=on_progress,
        timeout=timeout,
        tlc_options=simulate_options(traces, depth, seed),
    )
    outcome = run.outcome
    text = outcome.error_text or ""
    if outcome.kind == "error" and re.search(r"TLCGet\(\d+\) was undefined", text):
        outcome.got = (
            "error: the model sets TLC registers (TLCSet) in its initial predicate, which "
            "TLC 2.15's simulation does not carry over (check it without --simulate)"
        )
    expected = entry.expect
    bounds = f"{traces:,} random behaviours of up to {depth} steps (seed {seed})"
    got = SIMULATED if outcome.kind == "pass" else outcome.got
    ok = (outcome.kind == "pass" and expected == "pass") or got == expected
    notes: list[str] = []
    if outcome.kind == "pass" and expected != "pass":
        notes.append(
            f"{'mutant ' if entry.mutant else ''}not caught: expected {expected}, but no "
            f"violation in {bounds}; a simulation proves nothing (try more --traces or a "
            "larger --depth)"
        )
    elif outcome.kind == "error":
        notes.append(f"expected {expected}, but TLC failed: {_detail(text)}")
    elif not ok:
        notes.append(f"expected {expected}, got {outcome.got}")
    counterexample = None
    if any(state.values for state in outcome.trace):  # an error before any state has none
        path = write_itf(
            out / f"{entry.name}--simulate.itf.json",
            outcome,
            {
                "model": entry.name,
                "module": entry.module,
                "config": entry.source,
                "witness": None,
                "expected": expected,
                "mode": "simulate",
                "simulate": {"traces": traces, "depth": depth, "seed": seed},
            },
        )
        counterexample = str(path)
    return SimRow(
        name=entry.name,
        model=entry.name,
        witness=None,
        expected=expected,
        got=got,
        ok=ok,
        distinct_states=None,
        total_states=states_generated(run.output_lines),
        depth=None,
        seconds=run.seconds,
        counterexample=counterexample,
        message="; ".join(notes),
        run=run,
        traces=traces if outcome.kind == "pass" else None,
        depth_bound=depth,
        seed=seed,
    )


def check_simulated(
    manifest: Manifest,
    root: Path,
    entries: Sequence[ModelEntry],
    *,
    traces: int = DEFAULT_TRACES,
    depth: int = DEFAULT_DEPTH,
    seed: int = DEFAULT_SEED,
    out_dir: Path | None = None,
    timeout: float | None = None,
    on_start: Callable[[str, str], None] | None = None,
    on_progress: ProgressCallback | None = None,
    on_row: Callable[[RowResult], None] | None = None,
    on_end: Callable[[str], None] | None = None,
) -> list[SimRow]:
    """One :class:`SimRow` per entry, each from one TLC simulation of ``traces``
    behaviours of up to ``depth`` steps from ``seed`` (module docstring); callbacks as
    ``check_models``'s."""
    out = out_dir if out_dir is not None else layout.scratch(root) / ".tlc" / "counterexamples"
    rows: list[SimRow] = []
    for entry in entries:
        label = f"{entry.name}--simulate"
        if on_start is not None:
            on_start(label, f"{entry.name} (simulation)")
        try:
            row = _simulate(
                manifest, root, entry, traces=traces, depth=depth, seed=seed, out=out,
                timeout=timeout, on_progress=on_progress,
            )  # fmt: skip
        finally:
            if on_end is not None:
                on_end(label)
        rows.append(row)
        if on_row is not None:
            on_row(row)
    return rows
