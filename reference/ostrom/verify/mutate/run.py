"""Run models against mutants of their spec: which small mistakes would their checks catch?

Each model is run first as it is, with its reachability witnesses batched into the same
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

Given several models of the same spec (a suite: models/mutation/<Spec>.toml), a mutant
runs on them in the order given (the cheapest first) until one kills it; a model whose
scope leaves the mutated definition out (its cfg substitutes it) is skipped for it.  It
survives only if every model it ran on let it pass.

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
from ostrom.verify.tlc.witnesses import ProbeRun, probe_run, reached_witnesses

__all__ = ["VERDICTS", "MutantResult", "MutationError", "Report", "mutate_models"]

VERDICTS = ("killed", "survived", "invalid", "timeout", "equivalent")


class MutationError(ValueError):
    """The models cannot be mutation-tested (one does not pass, reaches no baseline, or
    they check different specs)."""


@dataclass(frozen=True)
class MutantResult:
    """What became of one mutant: its verdict, the model that decided it and why."""

    mutant: Mutant
    verdict: str
    why: str  # what killed it, or what TLC reported
    model: str | None  # the model that killed it (or the last it ran on)
    distinct_states: int | None  # of that run
    seconds: float  # over every model it ran on
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
            "model": self.model,
            "distinct_states": self.distinct_states,
            "seconds": round(self.seconds, 1),
            **({"reason": self.reason} if self.reason else {}),
        }


@dataclass
class Report:
    """The outcome of a mutation run over one spec and its models."""

    models: tuple[str, ...]
    spec: str
    generated: int  # mutants in scope (before sampling)
    sampled: int
    seed: int | None
    baseline_states: dict[str, int | None]  # per model
    witnesses: dict[str, tuple[str, ...]]  # per model
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
            "models": list(self.models),
            "spec": self.spec,
            "generated": self.generated,
            "sampled": self.sampled,
            "seed": self.seed,
            "baseline_distinct_states": dict(self.baseline_states),
            "witnesses": {k: list(v) for k, v in self.witnesses.items()},
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
        return "invalid", (outcome.error_text or outcome.got or "?").splitlines()[0][:200]
    if outcome.kind != "pass":
        return "killed", outcome.got
    lost = [w for w in witnesses if w in baseline and w not in reached_witnesses(run.print_lines)]
    if lost:
        return "killed", f"witness {lost[0]} no longer reached" + (
            f" (and {len(lost) - 1} more)" if len(lost) > 1 else ""
        )
    return "survived", "every check passes and every witness is reached"


@dataclass(frozen=True)
class _Model:
    """One model of the suite, staged once: its cfg (with the witness probe) and scope."""

    entry: ModelEntry
    scope: Scope
    cfg: str
    probe: ProbeRun | None

    def run(self, label: str, overrides: dict[str, str] | None, timeout: float | None) -> TlcRun:
        return run_tlc(
            layout.ROOT,
            self.probe.module if self.probe else self.entry.module,
            Path("models") / self.entry.cfg_name,
            label=label,
            workers=1,
            fp=self.entry.fp,
            cfg_text=self.probe.cfg_text if self.probe else self.cfg,
            timeout=timeout,
            extra_modules={self.probe.module: self.probe.module_text} if self.probe else None,
            overrides=overrides,
        )


def _stage(manifest: Manifest, entry: ModelEntry, spec: str | None) -> _Model:
    if entry.expect != "pass":
        raise MutationError(
            f"{entry.name} expects {entry.expect}: only a passing model can catch mutants"
        )
    base_cfg = cfg_text(manifest, entry, layout.ROOT)
    scope = scope_of(entry.module, base_cfg, spec)
    witnesses = tuple(entry.witnesses)
    probe = probe_run(entry.module, base_cfg, witnesses, keep_checks=True) if witnesses else None
    return _Model(entry, scope, base_cfg, probe)


def pool_of(manifest: Manifest, entries: Sequence[ModelEntry], spec: str | None) -> list[Mutant]:
    """The mutants in scope of any of ``entries`` (which must check the same spec)."""
    return _pool([_stage(manifest, e, spec) for e in entries])


def _pool(models: Sequence[_Model]) -> list[Mutant]:
    specs = {m.scope.spec for m in models}
    if len(specs) != 1:
        raise MutationError(
            "the models mutate different specs ("
            + ", ".join(f"{m.entry.name}: {m.scope.spec}" for m in models)
            + "): give --spec or models of one spec"
        )
    text = models[0].scope.path.read_text(encoding="utf-8")
    return mutants(text, {n for m in models for n in m.scope.names})


def mutate_models(
    manifest: Manifest,
    entries: Sequence[ModelEntry],
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
    on_baseline: Callable[[str, TlcRun], None] | None = None,
) -> Report:
    """Mutation-test ``entries`` (see the module docstring).  ``sample`` mutants are drawn
    with ``seed`` from those in scope (all if None), or ``only`` these ids;
    ``on_result(done, total, result)`` reports each as it finishes, ``on_baseline(model,
    run)`` each model's unmutated run."""
    if not entries:
        raise MutationError("no model to run the mutants on")
    models = [_stage(manifest, e, spec) for e in entries]
    pool = _pool(models)
    target = models[0].scope
    text = target.path.read_text(encoding="utf-8")
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
    reached: dict[str, set[str]] = {}
    baseline_states: dict[str, int | None] = {}
    for model in models:
        name = model.entry.name
        base = model.run(f"mutate-{name}-baseline", None, timeout)
        if on_baseline is not None:
            on_baseline(name, base)
        if base.outcome.kind != "pass" or base.timed_out:
            raise MutationError(f"{name} does not pass unmutated ({base.outcome.got}): no baseline")
        reached[name] = reached_witnesses(base.print_lines)
        missing = [w for w in model.entry.witnesses if w not in reached[name]]
        if missing:
            raise MutationError(f"{name} does not reach its witness {missing[0]} unmutated")
        baseline_states[name] = base.outcome.distinct_states
    accepted = {e.id: e for e in equivalents}
    report = Report(
        models=tuple(m.entry.name for m in models),
        spec=target.spec,
        generated=generated,
        sampled=len(chosen),
        seed=seed if sample is not None and only is None else None,
        baseline_states=baseline_states,
        witnesses={m.entry.name: tuple(m.entry.witnesses) for m in models},
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
            return MutantResult(
                m, "equivalent", "accepted as equivalent", None, None, 0.0, eq.reason
            )
        started = time.monotonic()
        mutated = {target.spec: m.apply(text)}
        verdict, why, last, states = "survived", "in the scope of no model", None, None
        timed_out: tuple[str, str, int | None] | None = None
        for model in models:
            if m.definition not in model.scope.names:
                continue
            name = model.entry.name
            r = model.run(f"mutate-{name}-{m.definition}", mutated, timeout)
            verdict, why = _classify(r, reached[name], model.entry.witnesses)
            last, states = name, r.outcome.distinct_states
            if verdict in ("killed", "invalid"):
                break
            if verdict == "timeout":
                timed_out = (name, why, states)
        if verdict == "survived" and timed_out is not None:
            verdict, (last, why, states) = "timeout", timed_out
        return MutantResult(m, verdict, why, last, states, time.monotonic() - started)

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
