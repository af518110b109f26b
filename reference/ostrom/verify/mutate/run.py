"""Run a model against mutants of its spec: which small mistakes would its checks catch?

The model is run first as it is, with its reachability witnesses batched into the same
TLC run (verify/tlc/witnesses.py): it must pass and reach every witness, or there is no
baseline to compare with.  Then each mutant, in its own staged copy of the tree with the
one spec file replaced, with the same checks and witnesses.  A mutant is

``killed``     when TLC reports a violation, a deadlock or an evaluation error, or when a
               witness the unmutated model reaches is no longer reached (the mutant made
               something the model must be able to do impossible);
``invalid``    when it no longer parses (SANY's or the cfg's error: exit 150 or 151);
``timeout``    when it runs past the per-mutant timeout (not counted as killed: a larger
               state space is not a caught mistake);
``survived``   otherwise: every check passes and every witness is reached.

The score is killed / (generated - invalid - accepted equivalent); timeouts count against
it.  Accepted equivalent mutants come from a file per spec (verify/mutate/equivalents.py).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ostrom import layout
from ostrom.verify.mutate.equivalents import Equivalent
from ostrom.verify.mutate.operators import Mutant, mutants
from ostrom.verify.mutate.scope import Scope, scope_of
from ostrom.verify.tlc.manifest import Manifest, ModelEntry, cfg_text
from ostrom.verify.tlc.output import EXIT_CONFIG, EXIT_PARSE
from ostrom.verify.tlc.runner import TlcRun, run_tlc
from ostrom.verify.tlc.witnesses import probe_run, reached_witnesses

__all__ = ["MutantResult", "MutationError", "Report", "mutate_model"]

VERDICTS = ("killed", "survived", "invalid", "timeout", "equivalent")


class MutationError(ValueError):
    """The model cannot be mutation-tested (it does not pass, or reaches no baseline)."""


@dataclass(frozen=True)
class MutantResult:
    mutant: Mutant
    verdict: str
    why: str  # what killed it, or what TLC reported
    distinct_states: int | None
    seconds: float
    reason: str = ""  # for an accepted equivalent: the file's reason

    def to_json(self) -> dict[str, Any]:
        m = self.mutant
        return {
            "id": m.id,
            "operator": m.operator,
            "definition": m.definition,
            "line": m.line,
            "change": m.change,
            "verdict": self.verdict,
            "why": self.why,
            "distinct_states": self.distinct_states,
            "seconds": round(self.seconds, 1),
            **({"reason": self.reason} if self.reason else {}),
        }


@dataclass
class Report:
    model: str
    spec: str
    generated: int  # mutants in scope (before sampling)
    sampled: int
    seed: int | None
    baseline_states: int | None
    witnesses: tuple[str, ...]
    results: list[MutantResult] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # equivalents whose id names another edit

    def count(self, verdict: str) -> int:
        return sum(1 for r in self.results if r.verdict == verdict)

    @property
    def score(self) -> float | None:
        """killed / (run - invalid - equivalent), None if nothing counts."""
        base = len(self.results) - self.count("invalid") - self.count("equivalent")
        return self.count("killed") / base if base > 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "ostrom-mutate/1",
            "model": self.model,
            "spec": self.spec,
            "generated": self.generated,
            "sampled": self.sampled,
            "seed": self.seed,
            "baseline_distinct_states": self.baseline_states,
            "witnesses": list(self.witnesses),
            "counts": {v: self.count(v) for v in VERDICTS},
            "score": None if self.score is None else round(self.score, 4),
            "stale_equivalents": self.stale,
            "mutants": [r.to_json() for r in self.results],
        }


def _classify(run: TlcRun, baseline: set[str], witnesses: Sequence[str]) -> tuple[str, str]:
    outcome = run.outcome
    if run.timed_out:
        return "timeout", outcome.got
    if run.exit_code in (EXIT_PARSE, EXIT_CONFIG):
        return "invalid", (outcome.error_text or outcome.got).splitlines()[0][:200]
    if outcome.kind != "pass":
        return "killed", outcome.got
    lost = [w for w in witnesses if w in baseline and w not in reached_witnesses(run.print_lines)]
    if lost:
        return "killed", f"witness {lost[0]} no longer reached" + (
            f" (and {len(lost) - 1} more)" if len(lost) > 1 else ""
        )
    return "survived", "every check passes and every witness is reached"


def mutate_model(
    manifest: Manifest,
    entry: ModelEntry,
    *,
    spec: str | None = None,
    sample: int | None = None,
    seed: int = 0,
    jobs: int = 1,
    timeout: float | None = None,
    operators: Sequence[str] | None = None,
    only: Sequence[str] | None = None,
    equivalents: Sequence[Equivalent] = (),
    on_result: Callable[[int, int, MutantResult], None] | None = None,
    on_baseline: Callable[[TlcRun], None] | None = None,
) -> Report:
    """Mutation-test ``entry`` (see the module docstring).  ``sample`` mutants are drawn
    with ``seed`` from those in scope (all if None), or ``only`` these ids;
    ``on_result(done, total, result)`` reports each as it finishes."""
    if entry.expect != "pass":
        raise MutationError(
            f"{entry.name} expects {entry.expect}: only a passing model can catch mutants"
        )
    base_cfg = cfg_text(manifest, entry, layout.ROOT)
    scope: Scope = scope_of(entry.module, base_cfg, spec)
    text = scope.path.read_text(encoding="utf-8")
    pool = mutants(text, scope.names)
    if operators is not None:
        pool = [m for m in pool if m.operator in operators]
    generated = len(pool)
    chosen = list(pool)
    if only is not None:
        unknown = sorted(set(only) - {m.id for m in pool})
        if unknown:
            raise MutationError(f"no mutant {unknown[0]!r} in scope (ostrom mutate --list)")
        chosen = [m for m in pool if m.id in set(only)]
    elif sample is not None and sample < len(pool):
        chosen = sorted(random.Random(seed).sample(pool, sample), key=lambda m: m.start)
    witnesses = tuple(entry.witnesses)
    probe = probe_run(entry.module, base_cfg, witnesses, keep_checks=True) if witnesses else None

    def run(label: str, overrides: dict[str, str] | None) -> TlcRun:
        return run_tlc(
            layout.ROOT,
            probe.module if probe else entry.module,
            Path("models") / entry.cfg_name,
            label=label,
            workers=1,
            cfg_text=probe.cfg_text if probe else base_cfg,
            timeout=timeout,
            extra_modules={probe.module: probe.module_text} if probe else None,
            overrides=overrides,
        )

    baseline_run = run(f"mutate-{entry.name}-baseline", None)
    if on_baseline is not None:
        on_baseline(baseline_run)
    if baseline_run.outcome.kind != "pass" or baseline_run.timed_out:
        raise MutationError(
            f"{entry.name} does not pass unmutated ({baseline_run.outcome.got}): no baseline"
        )
    reached = reached_witnesses(baseline_run.print_lines)
    missing = [w for w in witnesses if w not in reached]
    if missing:
        raise MutationError(f"{entry.name} does not reach its witness {missing[0]} unmutated")
    accepted = {e.id: e for e in equivalents}
    report = Report(
        model=entry.name,
        spec=scope.spec,
        generated=generated,
        sampled=len(chosen),
        seed=seed if sample is not None and only is None else None,
        baseline_states=baseline_run.outcome.distinct_states,
        witnesses=witnesses,
    )
    by_id = {m.id: m for m in pool}
    report.stale = sorted(
        f"{e.id}: the file says {e.change!r}, the spec now {by_id[e.id].change!r}"
        for e in equivalents
        if e.id in by_id and by_id[e.id].change != e.change
    ) + sorted(f"{e.id}: no such mutant now" for e in equivalents if e.id not in by_id)
    done = 0
    lock = threading.Lock()

    def one(m: Mutant) -> MutantResult:
        eq = accepted.get(m.id)
        if eq is not None and eq.change == m.change:
            return MutantResult(m, "equivalent", "accepted as equivalent", None, 0.0, eq.reason)
        started = time.monotonic()
        r = run(f"mutate-{entry.name}-{m.definition}", {scope.spec: m.apply(text)})
        verdict, why = _classify(r, reached, witnesses)
        return MutantResult(m, verdict, why, r.outcome.distinct_states, time.monotonic() - started)

    def tracked(m: Mutant) -> MutantResult:
        nonlocal done
        result = one(m)
        with lock:
            done += 1
            if on_result is not None:
                on_result(done, len(chosen), result)
        return result

    if jobs <= 1:
        report.results = [tracked(m) for m in chosen]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as ex:
            report.results = list(ex.map(tracked, chosen))
    return report
