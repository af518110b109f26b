"""Run TLC on the manifest's models: staging, running, witness configs, progress, comparison.

Usable from Python: :func:`run_tlc` runs one model and returns a :class:`TlcRun` (outcome, counts,
trace, and the raw output lines, e.g. for tests that collect ``PrintT`` output);
:func:`check_models` runs manifest entries plus their reachability witnesses and returns one
:class:`RowResult` per row, which is what ``ostrom check`` prints.

Every run is *staged*: TLC resolves ``EXTENDS`` from the main module's directory, so each run
copies ``spec/*.tla``, ``models/*.tla`` and its cfg (a derived model's generated from its base's,
:func:`~ostrom.verify.tlc.manifest.cfg_text`) into a fresh ``.tlc/runs/<label>-<time>-<n>/``
with its own ``-metadir`` and ``java.io.tmpdir`` — two TLC runs sharing a directory collide
(docs/design.md §12), and the staged copy also pins exactly what was checked.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ostrom import children, layout
from ostrom.verify.tlc.cfg import CfgError, cfg_names, witness_cfg
from ostrom.verify.tlc.itf import write_itf
from ostrom.verify.tlc.jar import find_jar, find_java
from ostrom.verify.tlc.manifest import (
    Manifest,
    ManifestError,
    ModelEntry,
    cfg_text,
    load_manifest,
    save_manifest,
)
from ostrom.verify.tlc.output import Message, TlcOutcome, ToolOutputParser
from ostrom.verify.tlc.witnesses import ProbeRun, is_step_witness, probe_run, reached_witnesses

__all__ = [
    "DEFAULT_WORKERS",
    "RowResult",
    "RunnerError",
    "Streamed",
    "TlcRun",
    "cfg_names",
    "check_models",
    "new_run_dir",
    "progress_text",
    "record_counts",
    "run_model",
    "run_tlc",
    "select_models",
    "stage",
    "stream_process",
    "tlc_command",
    "witness_cfg",
]

DEFAULT_WORKERS = 2
_ERROR_LINES = 20
_PROGRESS_RE = re.compile(
    r"Progress\((\d+)\).*?: ([\d,]+) states generated(?: \(([\d,]+) s/min\))?"
    r".*?([\d,]+) distinct states found.*?([\d,]+) states left on queue"
)


class RunnerError(RuntimeError):
    """A model cannot be run (missing cfg or module, name clash when staging...)."""


ProgressCallback = Callable[[str, str], None]


@dataclass
class TlcRun:
    """One TLC invocation: what it reported and everything needed to inspect it afterwards."""

    label: str
    outcome: TlcOutcome
    exit_code: int
    seconds: float
    run_dir: Path
    cfg_text: str
    output_lines: list[str] = field(default_factory=list)
    print_lines: list[str] = field(default_factory=list)
    timed_out: bool = False


@dataclass
class RowResult:
    """One row of ``ostrom check``: a model or one of its witnesses, against the manifest."""

    name: str
    model: str
    witness: str | None
    expected: str
    got: str
    ok: bool
    distinct_states: int | None
    total_states: int | None
    depth: int | None
    seconds: float
    counterexample: str | None = None
    message: str = ""
    run: TlcRun | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, object]:
        """The row as ``ostrom check --json`` prints it."""
        return {
            "name": self.name,
            "expected": self.expected,
            "got": self.got,
            "ok": self.ok,
            "distinct_states": self.distinct_states,
            "total_states": self.total_states,
            "depth": self.depth,
            "seconds": round(self.seconds, 2),
            "counterexample": self.counterexample,
            "message": self.message,
        }


# ----------------------------------------------------------------------------------------------
# running one model
# ----------------------------------------------------------------------------------------------


#: Staged run directories kept under .tlc/runs (older ones are removed when a run starts).
KEEP_RUNS = 100


def _prune_runs(base: Path) -> None:
    """Keep the newest KEEP_RUNS run directories: every `make check` stages ~50 runs."""
    runs = sorted((p for p in base.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in runs[: max(0, len(runs) - KEEP_RUNS)]:
        shutil.rmtree(old, ignore_errors=True)


def _new_run_dir(root: Path, label: str) -> Path:
    base = layout.scratch(root) / ".tlc" / "runs"  # never into an installed package
    base.mkdir(parents=True, exist_ok=True)
    _prune_runs(base)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    n = 1
    while True:
        candidate = base / f"{label}-{stamp}-{n}"
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            n += 1


def _stage(
    root: Path,
    module: str,
    cfg_name: str,
    cfg_text: str,
    run_dir: Path,
    extra_modules: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
) -> None:
    """Copy spec/ and models/ and write the cfg (and any generated module) into ``run_dir``;
    a module of ``overrides`` (name -> text) is written instead of the tree's file."""
    extra = dict(extra_modules or {})
    replaced = dict(overrides or {})
    sources: dict[str, Path] = {}
    for sub in ("spec", "models"):
        for tla in sorted((root / sub).glob("*.tla")):
            if tla.name in sources:
                raise RunnerError(
                    f"{tla.name} exists in both {sources[tla.name].parent} and {tla.parent}: "
                    "module names must be unique across spec/ and models/"
                )
            sources[tla.name] = tla
    clash = sorted(f"{m}.tla" for m in extra if f"{m}.tla" in sources)
    if clash:
        raise RunnerError(f"generated module {clash[0]} would replace the file of that name")
    if f"{module}.tla" not in sources and module not in extra:
        raise RunnerError(f"module {module} not found: no {module}.tla in spec/ or models/")
    missing = sorted(m for m in replaced if f"{m}.tla" not in sources)
    if missing:
        raise RunnerError(f"no module {missing[0]} in spec/ or models/ to replace")
    for name, src in sources.items():
        if name.removesuffix(".tla") in replaced:
            (run_dir / name).write_text(replaced[name.removesuffix(".tla")], encoding="utf-8")
        else:
            shutil.copyfile(src, run_dir / name)
    for name, text in extra.items():
        (run_dir / f"{name}.tla").write_text(text, encoding="utf-8")
    (run_dir / cfg_name).write_text(cfg_text, encoding="utf-8")
    (run_dir / "meta").mkdir()
    (run_dir / "tmp").mkdir()


def _progress_text(msg: Message) -> str | None:
    m = _PROGRESS_RE.search(msg.text)
    if m is None:
        return None
    depth, generated, per_min, distinct, queue = m.groups()
    rate = f" · {int(per_min.replace(',', '')) / 60:,.0f} states/s" if per_min else ""
    return f"depth {depth} · {distinct} distinct · {generated} generated{rate} · {queue} on queue"


#: Staging and progress, shared with the other drivers of TLC (distributed.py, simulate.py).
new_run_dir = _new_run_dir
stage = _stage
progress_text = _progress_text


def tlc_command(
    java: Path | str,
    jar: Path | str,
    run_dir: Path,
    module: str,
    cfg: str,
    *,
    workers: int,
    fp: int | None,
    extra: Sequence[str] = (),
    jvm: Sequence[str] = (),
) -> list[str]:
    """The java command line of one TLC run in ``run_dir`` (its own ``-metadir`` and
    ``java.io.tmpdir``: two runs started in the same second would collide otherwise).

    ``-lncheck final``: TLC checks temporal properties on the state graph found so far at
    every progress report (a timer), so which lasso it reports depended on the machine's
    load — lab 06's had 13 states on a busy machine, 14 on an idle one.  Checked once, at
    the end, the counterexample is the same on every run (docs/design.md §12).  ``jvm``:
    options for the JVM itself (trace validation's ``-Xss``)."""
    return [
        str(java),
        "-XX:+UseParallelGC",
        *jvm,
        f"-Djava.io.tmpdir={run_dir / 'tmp'}",
        "-cp",
        str(jar),
        "tlc2.TLC",
        "-tool",
        "-workers",
        str(workers),
        *(["-fp", str(fp)] if fp is not None else []),
        "-lncheck",
        "final",
        *extra,
        "-metadir",
        str(run_dir / "meta"),
        "-config",
        cfg,
        f"{module}.tla",
    ]


@dataclass(frozen=True)
class Streamed:
    """What ``stream_process`` saw: the exit code, every output line, whether it was
    killed for running past its timeout."""

    exit_code: int
    lines: list[str]
    timed_out: bool


def stream_process(
    cmd: Sequence[str], cwd: Path, timeout: float | None, on_line: Callable[[str], None]
) -> Streamed:
    """Run ``cmd`` in ``cwd`` with stderr folded into stdout, hand each output line to
    ``on_line`` as it comes (progress, prints), and kill the process after ``timeout``
    seconds.  ``OSError`` if it cannot start.  Serves every TLC run (``run_tlc`` and
    trace validation's ``run_java_tlc``)."""
    proc = children.spawn(
        list(cmd),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
    )
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(timeout, kill) if timeout else None
    if timer is not None:
        timer.start()
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            lines.append(line)
            on_line(line)
        exit_code = proc.wait()
    except BaseException:
        children.stop(proc, grace=0)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        children.reap(proc)
    return Streamed(exit_code, lines, timed_out.is_set())


def run_tlc(
    root: Path,
    module: str,
    config: Path,
    *,
    label: str | None = None,
    workers: int = DEFAULT_WORKERS,
    fp: int | None = None,
    cfg_text: str | None = None,
    on_progress: ProgressCallback | None = None,
    timeout: float | None = None,
    keep: bool = False,
    extra_modules: Mapping[str, str] | None = None,
    tlc_options: Sequence[str] = (),
    overrides: Mapping[str, str] | None = None,
) -> TlcRun:
    """Stage and run TLC on ``module`` with ``config`` (relative to ``root`` or absolute).

    ``cfg_text`` replaces the cfg's content (witness runs); ``extra_modules`` (name -> text)
    are written beside the staged sources (the witness probe's module, which ``module`` may
    name); ``tlc_options`` are passed to TLC as they are (``ostrom tlc``); ``overrides``
    (name -> text) replace modules of the tree in the staged copy (``ostrom mutate``).
    ``on_progress(label, text)`` gets
    TLC's progress reports while it runs. TLC's scratch state (``meta``, ``tmp``) is deleted
    afterwards unless ``keep``; the staged sources and ``tlc.out`` stay for inspection.
    Raises :class:`~ostrom.verify.tlc.jar.TlcSetupError` or :class:`RunnerError` on bad input.
    """
    jar = find_jar()
    java = find_java()
    cfg_path = config if config.is_absolute() else root / config
    if cfg_text is None:
        try:
            cfg_text = cfg_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RunnerError(f"config {config} not found under {root}") from None
    label = label or module
    run_dir = _new_run_dir(root, label)
    cfg_name = cfg_path.name
    _stage(root, module, cfg_name, cfg_text, run_dir, extra_modules, overrides)
    cmd = tlc_command(
        java, jar, run_dir, module, cfg_name, workers=workers, fp=fp, extra=tlc_options
    )

    def on_message(msg: Message) -> None:
        if on_progress is not None and msg.code == 2200:
            text = _progress_text(msg)
            if text:
                on_progress(label, text)

    parser = ToolOutputParser(on_message=on_message)
    started = time.monotonic()
    try:
        run = stream_process(cmd, run_dir, timeout, parser.feed)
    except OSError as exc:
        raise RunnerError(f"cannot start java ({java}): {exc.strerror}") from None
    exit_code, lines = run.exit_code, run.lines
    seconds = time.monotonic() - started
    (run_dir / "tlc.out").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if not keep:
        shutil.rmtree(run_dir / "meta", ignore_errors=True)
        shutil.rmtree(run_dir / "tmp", ignore_errors=True)
    properties = cfg_names(cfg_text, "PROPERTY", "PROPERTIES")
    outcome = parser.finish(exit_code, properties)
    if run.timed_out:
        outcome = TlcOutcome(
            "error",
            f"error: timed out after {timeout:g} s",
            distinct_states=outcome.distinct_states,
            total_states=outcome.total_states,
        )
    return TlcRun(
        label=label,
        outcome=outcome,
        exit_code=exit_code,
        seconds=seconds,
        run_dir=run_dir,
        cfg_text=cfg_text,
        output_lines=lines,
        print_lines=parser.print_lines,
        timed_out=run.timed_out,
    )


# ----------------------------------------------------------------------------------------------
# manifest rows
# ----------------------------------------------------------------------------------------------


def select_models(manifest: Manifest, names: Sequence[str], deep: bool) -> list[ModelEntry]:
    """Entries named in ``names`` (any depth), else every non-deep one (plus deep if ``deep``)."""
    if names:
        unknown = [n for n in names if manifest.get(n) is None]
        if unknown:
            known = ", ".join(manifest.names()) or "(none)"
            raise RunnerError(f"unknown model {', '.join(map(repr, unknown))}; known: {known}")
        return [m for m in manifest.models if m.name in names]
    return [m for m in manifest.models if deep or not m.deep]


def _compare_counts(entry: ModelEntry, outcome: TlcOutcome) -> str | None:
    """A mismatch message if the run's counts differ from the recorded ones.

    With several workers, which path first reaches a state (and so the depth TLC reports)
    depends on the race between them; the state counts do not. Depth is then not compared.
    """
    keys = [("distinct_states", "state count"), ("total_states", "total state count")]
    if (entry.workers or 1) == 1:
        keys.append(("depth", "depth"))
    for key, label in keys:
        want = getattr(entry, key)
        got = getattr(outcome, key)
        if want is not None and got != want:
            return (
                f"{label} changed: manifest {want}, got {got} — if intended, run "
                f"`ostrom check --model {entry.name} --record`"
            )
    return None


def _counts_comparable(entry: ModelEntry, outcome: TlcOutcome) -> bool:
    """Counts of a complete search are deterministic; those of a safety violation only when
    pinned (one worker, fixed fingerprint seed). A liveness violation never: TLC checks
    temporal properties on a timer while the search runs, so how many states it has found
    when it reports the violation varies from run to run."""
    if outcome.kind == "liveness":
        return False
    return outcome.kind == "pass" or entry.pinned


def _row(
    entry: ModelEntry,
    run: TlcRun,
    *,
    witness: str | None,
    out_dir: Path,
    record: bool,
) -> RowResult:
    outcome = run.outcome
    expected = witness or entry.expect
    name = f"{entry.name}/{witness}" if witness else entry.name
    ok = outcome.got == expected
    message = ""
    if not ok:
        message = f"expected {expected}, got {outcome.got}"
        if witness is not None and outcome.kind == "pass":
            message = (
                f"witness {witness} holds in every reachable state: what it witnesses is "
                f"unreachable, so the checks of {entry.name} may pass vacuously"
            )
        elif entry.mutant and witness is None and outcome.kind == "pass":
            message = f"mutant not caught: expected {expected}, but every check passed"
        elif outcome.kind == "error" and outcome.error_text:
            detail = outcome.error_text.splitlines()[:_ERROR_LINES]
            message = f"expected {expected}, but TLC failed:\n  " + "\n  ".join(detail)
    elif witness is None and not record and _counts_comparable(entry, outcome):
        mismatch = _compare_counts(entry, outcome)
        if mismatch:
            ok, message = False, mismatch
    counterexample = None
    if outcome.trace:
        file_label = f"{entry.name}--{witness}" if witness else entry.name
        path = write_itf(
            out_dir / f"{file_label}.itf.json",
            outcome,
            {
                "model": entry.name,
                "module": entry.module,
                "config": entry.source,
                "witness": witness,
                "expected": expected,
            },
        )
        counterexample = str(path)
    return RowResult(
        name=name,
        model=entry.name,
        witness=witness,
        expected=expected,
        got=outcome.got,
        ok=ok,
        distinct_states=outcome.distinct_states,
        total_states=outcome.total_states,
        depth=outcome.depth,
        seconds=run.seconds,
        counterexample=counterexample,
        message=message,
        run=run,
    )


@dataclass(frozen=True)
class _Task:
    """One TLC run of ``check_models`` and the rows it answers: the model's own row
    (``main``), one witness row (``witness``, the one-run-per-witness mode), or the rows
    of every witness of the entry (``probe``: witnesses.py)."""

    entry: ModelEntry
    cfg_text: str
    main: bool = True
    witness: str | None = None
    probe: ProbeRun | None = None

    @property
    def label(self) -> str:
        if self.witness:
            return f"{self.entry.name}--{self.witness}"
        return self.entry.name if self.main else f"{self.entry.name}--witnesses"

    @property
    def title(self) -> str:
        n = len(self.entry.witnesses)
        if self.witness:
            return f"{self.entry.name}/{self.witness}"
        if self.probe is None:
            return self.entry.name
        if self.main:
            return f"{self.entry.name} (+{n} witnesses)"
        return f"{self.entry.name}/witnesses"


def _tasks(entry: ModelEntry, base_text: str, witness_traces: bool) -> list[_Task]:
    """The runs of one entry: its own, and its witnesses batched (a passing model's in its
    own run, another's in one run of their own) or, with ``witness_traces``, one each."""
    ws = list(entry.witnesses)
    if not ws:
        return [_Task(entry, base_text)]
    if witness_traces:
        # a step witness is an action: TLC takes no action as an INVARIANT, so the step
        # witnesses still share one probe run (they get no trace of their own)
        steps = [w for w in ws if is_step_witness(w)]
        tasks = [_Task(entry, base_text)] + [
            _Task(entry, witness_cfg(base_text, w), main=False, witness=w)
            for w in ws
            if not is_step_witness(w)
        ]
        if steps:
            try:
                probe = probe_run(entry.module, base_text, steps, keep_checks=False)
            except CfgError as exc:
                raise RunnerError(f"{entry.name}: {exc}") from None
            tasks.append(_Task(entry, probe.cfg_text, main=False, probe=probe))
        return tasks
    try:
        if entry.expect == "pass":
            probe = probe_run(entry.module, base_text, ws, keep_checks=True)
            return [_Task(entry, probe.cfg_text, probe=probe)]
        probe = probe_run(entry.module, base_text, ws, keep_checks=False)
    except CfgError as exc:
        raise RunnerError(f"{entry.name}: {exc}") from None
    return [_Task(entry, base_text), _Task(entry, probe.cfg_text, main=False, probe=probe)]


def _probe_row(entry: ModelEntry, run: TlcRun, witness: str, reached: set[str]) -> RowResult:
    """A witness's row from a probe run: reached iff the probe printed it."""
    outcome = run.outcome
    message = ""
    if witness in reached:
        got = witness
    elif outcome.kind == "pass":
        got = "pass"
        message = (
            f"witness {witness} holds in every reachable state: what it witnesses is "
            f"unreachable, so the checks of {entry.name} may pass vacuously"
        )
    else:
        got = "not checked"
        message = (
            f"not reached before the run ended with {outcome.got} (the whole state space "
            "was not explored)"
        )
    return RowResult(
        name=f"{entry.name}/{witness}",
        model=entry.name,
        witness=witness,
        expected=witness,
        got=got,
        ok=witness in reached,
        distinct_states=None,
        total_states=None,
        depth=None,
        seconds=0.0,
        message=message,
        run=run,
    )


def check_models(
    manifest: Manifest,
    root: Path,
    entries: Sequence[ModelEntry],
    *,
    workers: int = DEFAULT_WORKERS,
    out_dir: Path | None = None,
    record: bool = False,
    on_start: Callable[[str, str], None] | None = None,
    on_progress: ProgressCallback | None = None,
    on_row: Callable[[RowResult], None] | None = None,
    on_end: Callable[[str], None] | None = None,
    timeout: float | None = None,
    jobs: int = 1,
    witness_traces: bool = False,
) -> list[RowResult]:
    """Run each entry and its witnesses; return one :class:`RowResult` per row (the model,
    then each witness in the manifest's order).

    The witnesses of an entry are checked in one TLC run (witnesses.py), or with
    ``witness_traces`` one run each, which also saves each witness's trace.  Entries that
    pin ``workers`` and ``fp`` run exactly so (their counts must be stable); others use
    ``workers``. With ``record`` the counts are not compared (they are about to be written
    by :func:`record_counts`). ``jobs`` TLC runs go at once (rows keep their order).

    Callbacks, for progress output: ``on_start(label, title)`` when a TLC run starts,
    ``on_progress(label, text)`` as it reports, ``on_row(row)`` for each row it answers,
    ``on_end(label)`` once it is done.
    """
    out = out_dir if out_dir is not None else layout.scratch(root) / ".tlc" / "counterexamples"
    tasks: list[_Task] = []
    for entry in entries:
        try:
            base_text = cfg_text(manifest, entry, root)
        except ManifestError as exc:
            raise RunnerError(str(exc)) from None
        tasks += _tasks(entry, base_text, witness_traces)

    def run_one(task: _Task) -> list[RowResult]:
        entry = task.entry
        if on_start is not None:
            on_start(task.label, task.title)
        probe = task.probe
        run = run_tlc(
            root,
            probe.module if probe else entry.module,
            Path("models") / entry.cfg_name,
            label=task.label,
            workers=entry.workers if entry.workers is not None else workers,
            fp=entry.fp,
            cfg_text=task.cfg_text,
            on_progress=on_progress,
            timeout=timeout,
            extra_modules={probe.module: probe.module_text} if probe else None,
        )
        rows: list[RowResult] = []
        if task.main:
            rows.append(_row(entry, run, witness=None, out_dir=out, record=record))
        if task.witness:
            rows.append(_row(entry, run, witness=task.witness, out_dir=out, record=record))
        if probe is not None:
            reached = reached_witnesses(run.print_lines)
            rows += [_probe_row(entry, run, w, reached) for w in probe.witnesses]
        if on_end is not None:
            on_end(task.label)
        if on_row is not None:
            for row in rows:
                on_row(row)
        return rows

    if jobs <= 1:
        return [r for t in tasks for r in run_one(t)]
    # TLC runs are separate JVMs in separate staging directories: running `jobs` of them at
    # once is safe, and single-worker pinned models leave cores idle otherwise.
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return [r for rows in pool.map(run_one, tasks) for r in rows]


def record_counts(manifest: Manifest, rows: Sequence[RowResult]) -> list[str]:
    """Write the measured counts of the passing model rows into the manifest file.

    Only rows that reported what the manifest expects are recorded (a failing run's counts are
    not a baseline); counts of a violation found with unpinned workers are left null because
    they vary between runs. Returns one line per recorded model, for the user.
    """
    notes: list[str] = []
    for row in rows:
        entry = manifest.get(row.model)
        if row.witness is not None or entry is None or row.run is None:
            continue
        if row.got != row.expected:
            notes.append(f"{row.name}: not recorded (expected {row.expected}, got {row.got})")
            continue
        comparable = _counts_comparable(entry, row.run.outcome)
        changes: list[str] = []
        for key in ("distinct_states", "total_states", "depth"):
            value = getattr(row, key) if comparable else None
            if entry.raw.get(key) != value:
                changes.append(f"{key} {entry.raw.get(key)} -> {value}")
            entry.raw[key] = value
            setattr(entry, key, value)
        entry.raw["seconds"] = round(row.seconds, 1)
        entry.seconds = entry.raw["seconds"]
        notes.append(f"{row.name}: recorded" + (f" ({', '.join(changes)})" if changes else ""))
    save_manifest(manifest)
    return notes


def run_model(
    root: Path,
    name: str,
    *,
    manifest_path: Path | None = None,
    workers: int = DEFAULT_WORKERS,
    on_progress: ProgressCallback | None = None,
    timeout: float | None = None,
) -> TlcRun:
    """Run the manifest model ``name`` (its own cfg, no witnesses) and return the raw run.

    For tests and scripts that need more than the row, e.g. the ``PrintT`` output of the
    lifecycle model (``run_model(root, "lifecycle-ci").print_lines``). Pinned ``workers``/``fp``
    of the entry win over ``workers``.
    """

    manifest = load_manifest(manifest_path or root / "models" / "manifest.json")
    entry = select_models(manifest, [name], deep=True)[0]
    try:
        text = cfg_text(manifest, entry, root)
    except ManifestError as exc:
        raise RunnerError(str(exc)) from None
    return run_tlc(
        root,
        entry.module,
        Path("models") / entry.cfg_name,
        cfg_text=text,
        label=entry.name,
        workers=entry.workers if entry.workers is not None else workers,
        fp=entry.fp,
        on_progress=on_progress,
        timeout=timeout,
    )
