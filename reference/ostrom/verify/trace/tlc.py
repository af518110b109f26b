"""Running TLC for trace validation: one worker, ``-tool`` output, the ``ostrom-`` prints.

Every layer's trace spec reports through ``PrintT`` values that start with a string
``"ostrom-..."`` (cursor, dead end); ``run_java_tlc`` collects them as values of
verify/tlc/values.py.  ``run_directory`` is where a run is staged (kept with ``--keep``).
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ostrom.verify.tlc.jar import find_jar, find_java
from ostrom.verify.tlc.output import TlcOutcome, ToolOutputParser
from ostrom.verify.tlc.runner import stream_process, tlc_command
from ostrom.verify.tlc.values import Value, ValueParseError, parse_value

__all__ = ["CHUNK_JVM", "TRACE_STACK", "TlcResult", "run_directory", "run_java_tlc"]


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
#: The JVM's thread stack for a trace run: SANY parses the compiled log (one sequence
#: literal of every step) recursively, and the default stack overflowed on a node's
#: export of 1,000 commands (a StackOverflowError before TLC started).  Only reserved
#: address space: memory is committed as the recursion goes.
TRACE_STACK: Final = "-Xss512m"
#: The JVM options of a run of one chunk of a lifecycle or community log (at most
#: lifecycle_check.CHUNK_STEPS steps): the stack above, and only the first JIT tier (C1).
#: Such a run lasts seconds, and the optimising tier's compilations cost more CPU than
#: they give back in it: a chunk of 100 steps of a node's log (196 artifacts) took 10.1 CPU
#: s with both tiers and 5.0-5.6 s with C1 alone (docs/conformance.md "Long logs";
#: bench/results/trace_export.json).  The other runs (a batch of many short logs in one
#: run, the pbft and sanctions layers' logs) may last long and keep both tiers.
CHUNK_JVM: Final = (TRACE_STACK, "-XX:TieredStopAtLevel=1")


def run_java_tlc(
    run_dir: Path,
    module: str,
    cfg: str,
    extra: Sequence[str] = (),
    *,
    timeout: float | None = None,
    on_print: Callable[[Value], None] | None = None,
    jvm: Sequence[str] = (TRACE_STACK,),
) -> TlcResult:
    """Run TLC (one worker, ``-tool``) on ``run_dir/module.tla``; collect the ``PrintT``
    values that are tuples starting with a string ``ostrom-...`` (the prints of
    LifecycleTrace.tla's Watch, or of the simulation model).  ``jvm``: the JVM's options
    (``CHUNK_JVM`` for a short run)."""
    jar, java = find_jar(), find_java()
    run_dir = run_dir.resolve()  # java runs in it: a relative path would resolve twice
    (run_dir / "meta").mkdir(exist_ok=True)
    (run_dir / "tmp").mkdir(exist_ok=True)
    cmd = tlc_command(java, jar, run_dir, module, cfg, workers=1, fp=0, extra=extra, jvm=jvm)
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
