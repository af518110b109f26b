"""``ostrom conform -- CMD ARGS``: run the conformance vectors against any driver.

The implementation under test is a subprocess speaking the driver protocol of
docs/conformance.md (JSON lines on stdin/stdout; stderr is captured, shown for failures,
never parsed).  The runner

1. checks the suite (``ostrom.conformance.vectors.load_suite``): every file listed in
   ``vectors/MANIFEST.json`` exists and matches its sha256, no file is unlisted, every
   vector is valid; then that every listed file was read (as a vector or an ITF trace);
2. shakes hands with the driver (protocol version, the layers it implements);
3. runs each selected vector of an implemented layer: ``reset``, then its steps, comparing
   every observation (result, events, state) with the expectation and stopping at the first
   diverging step; vectors of other layers are reported *not implemented*, never passed;
4. reports per layer, per action and per property id, and for each failure the vector, the
   first diverging step, its command and a diff of expected vs got.

A driver that crashes, hangs or answers garbage fails that vector as ``crashed``,
``timeout`` or ``malformed``; the runner kills it (its whole process group) and starts a
fresh one for the next vector.  Nothing a driver does can hang or crash the runner.

Exit status of :func:`main`: 0 iff at least one vector ran and every vector of the
implemented layers passed, 1 otherwise, 2 when the suite or the command is unusable.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from ostrom import children
from ostrom.conformance import DRIVER_PROTOCOL, LAYERS, vectors
from ostrom.conformance.junit import write_junit
from ostrom.conformance.report import (
    FAILING,
    REPORT_FORMAT,
    Report,
    Status,
    VectorResult,
    display_path,
    files_read,
)
from ostrom.conformance.vectors import (
    MANIFEST_NAME,
    VECTORS_DIR,
    Difference,
    Suite,
    SuiteError,
    Vector,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "FAILING",
    "REPORT_FORMAT",
    "Difference",
    "Driver",
    "DriverFault",
    "DriverStartError",
    "Report",
    "Suite",
    "SuiteError",
    "Vector",
    "VectorResult",
    "default_vectors_dir",
    "files_read",
    "json_diff",
    "load_suite",
    "main",
    "run_suite",
    "select",
]

#: Seconds the runner waits for each reply (hello, ready, observation) by default.
DEFAULT_TIMEOUT: Final = 10.0
#: The longest reply line the runner reads (a state of the largest vector is ~100 kB).
MAX_REPLY: Final = 4 << 20
TOO_LONG: Final = b"\x00<too long>"
#: After this many timeouts in a row the driver is taken to hang: the remaining vectors
#: are not run (each would wait --timeout and restart it: 51 minutes for the suite).
MAX_TIMEOUTS_IN_A_ROW: Final = 3

#: How much of a driver's stderr is kept (bytes; the oldest half goes when it is full).
_STDERR_KEEP: Final = 1 << 20


# ---------------------------------------------------------------------------- the suite


def default_vectors_dir() -> Path:
    """``vectors/`` of this source tree, or the installed package's copy."""
    return VECTORS_DIR


def load_suite(root: Path) -> Suite:
    """The suite under ``root``, every listed file read (ostrom.conformance.vectors).

    ``vectors.load_suite`` refuses a listed file that is missing or changed, an unlisted
    file and an invalid vector; on top of that the runner checks that every listed file
    came back as a vector or a trace, so no file can be skipped between the two.
    """
    suite = vectors.load_suite(root)
    got = sorted([*(v.rel for v in suite.vectors), *suite.traces])
    if got != sorted(suite.files):
        skipped = sorted(set(suite.files) - set(got))
        raise SuiteError(f"{root}: listed but not read: {', '.join(skipped) or '?'}")
    return suite


def select(
    candidates: Iterable[Vector],
    layers: Sequence[str] = (),
    actions: Sequence[str] = (),
    properties: Sequence[str] = (),
) -> list[Vector]:
    """The vectors matching every given filter (any value of one filter), in run order.

    An action matches as ``dispute`` or as ``lifecycle/dispute``.
    """
    out = [
        v
        for v in candidates
        if (not layers or v.layer in layers)
        and (not actions or v.action in actions or f"{v.layer}/{v.action}" in actions)
        and (not properties or any(p in properties for p in v.properties))
    ]
    return sorted(out, key=_order)


def _order(v: Vector) -> tuple[int, str, str]:
    rank = LAYERS.index(v.layer) if v.layer in LAYERS else len(LAYERS)
    return rank, v.layer, v.id


# ---------------------------------------------------------------------------- comparing


def _align(expected: Any, got: Any) -> Any:
    """``got`` with numbers that match (within tolerance) replaced by the expected ones, so
    that a diff shows only real differences."""
    if isinstance(expected, dict) and isinstance(got, dict):
        return {k: _align(expected[k], v) if k in expected else v for k, v in got.items()}
    if isinstance(expected, list) and isinstance(got, list):
        return [_align(e, g) for e, g in zip(expected, got, strict=False)] + got[len(expected) :]
    if _is_number(expected) and _is_number(got) and not vectors.compare(expected, got):
        return expected
    return got


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def json_diff(expected: Any, got: Any, context: int = 3) -> str:
    """A unified diff of the pretty-printed, key-sorted JSON of expected and got."""

    def lines(value: Any) -> list[str]:
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return "\n".join(
        difflib.unified_diff(
            lines(expected),
            lines(_align(expected, got)),
            "expected",
            "got",
            n=context,
            lineterm="",
        )
    )


# ---------------------------------------------------------------------------- the driver


class DriverFault(Exception):
    """The driver failed a request: ``status`` is crashed, timeout or malformed."""

    def __init__(self, status: Status, message: str) -> None:
        super().__init__(message)
        self.status: Status = status
        self.message = message


class DriverStartError(Exception):
    """The driver cannot be started or fails the first handshake (exit status 2)."""


@dataclass(frozen=True)
class Hello:
    implementation: str
    layers: tuple[str, ...]


def _pump_lines(stream: IO[bytes], sink: queue.Queue[bytes | None]) -> None:
    """Each line the driver writes, into ``sink``; a line over ``MAX_REPLY`` bytes is
    kept as its first ``MAX_REPLY`` bytes plus ``TOO_LONG`` (the rest is read and dropped:
    a 200 MB line must not cost 200 MB), which ``Driver.request`` reports as malformed."""
    try:
        while True:
            line = stream.readline(MAX_REPLY + 1)
            if not line:
                break
            if len(line) > MAX_REPLY and not line.endswith(b"\n"):
                while True:  # drop the rest of this line, a megabyte at a time
                    more = stream.readline(1 << 20)
                    if not more or more.endswith(b"\n"):
                        break
                line = line[:MAX_REPLY] + TOO_LONG
            sink.put(line)
    except (OSError, ValueError):
        pass
    finally:
        sink.put(None)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_reply(raw: bytes) -> Any:
    """A driver's reply line as JSON, strictly: ``ValueError`` for anything that is not
    JSON or that only Python's parser accepts (NaN, Infinity, numbers that overflow to
    them), and for a nesting too deep to parse (a driver's garbage must not reach the
    report, whose JSON every other tool must be able to read)."""
    if raw.endswith(TOO_LONG):
        raise ValueError(f"a line over {MAX_REPLY:,} bytes")
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError("nested too deeply") from None


class Driver:
    """One driver process: JSON lines in and out, a timeout on every reply.

    The process runs in its own session, so :meth:`kill` ends it with every child it
    started.  stdout is read by a thread into a queue (so a silent driver cannot block the
    runner); stderr by another into a bounded buffer.
    """

    def __init__(self, argv: Sequence[str], timeout: float) -> None:
        self.argv = list(argv)
        self.timeout = timeout
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._err = bytearray()
        self._err_base = 0  # absolute offset of self._err[0]
        self._err_lock = threading.Lock()
        self._err_thread: threading.Thread | None = None

    # -- process
    @property
    def running(self) -> bool:
        return self._proc is not None

    def start(self) -> Hello:
        """Start the process and shake hands; raises :class:`DriverFault`."""
        try:
            self._proc = children.spawn(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise DriverStartError(f"cannot run {self.argv[0]!r}: {exc.strerror or exc}") from exc
        self._lines = queue.Queue()
        assert self._proc.stdout is not None and self._proc.stderr is not None
        threading.Thread(
            target=_pump_lines, args=(self._proc.stdout, self._lines), daemon=True
        ).start()
        self._err_thread = threading.Thread(
            target=self._pump_stderr, args=(self._proc.stderr,), daemon=True
        )
        self._err_thread.start()
        reply = self.request({"type": "hello", "protocol": DRIVER_PROTOCOL}, "hello")
        if reply.get("protocol") != DRIVER_PROTOCOL:
            raise DriverFault(
                "malformed",
                f"the driver speaks protocol {reply.get('protocol')!r}, "
                f"the runner {DRIVER_PROTOCOL!r}",
            )
        layers = reply.get("layers")
        if not isinstance(layers, list) or not all(isinstance(x, str) for x in layers):
            raise DriverFault("malformed", 'the hello reply needs "layers": a list of strings')
        impl = reply.get("implementation")
        return Hello(impl if isinstance(impl, str) else "unnamed", tuple(layers))

    def _pump_stderr(self, stream: IO[bytes]) -> None:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._err_lock:
                self._err += chunk
                if len(self._err) > _STDERR_KEEP:
                    drop = len(self._err) - _STDERR_KEEP // 2
                    del self._err[:drop]
                    self._err_base += drop

    def stderr_mark(self) -> int:
        with self._err_lock:
            return self._err_base + len(self._err)

    def stderr_since(self, mark: int) -> str:
        """The driver's stderr from ``mark`` on (as much as is still kept)."""
        if self._proc is not None and self._proc.poll() is not None and self._err_thread:
            self._err_thread.join(timeout=1.0)  # an exited driver: take all it wrote
        else:
            time.sleep(0.02)  # let the reader catch up with what was just written
        with self._err_lock:
            start = max(0, mark - self._err_base)
            return bytes(self._err[start:]).decode("utf-8", errors="replace")

    def kill(self) -> None:
        """End the driver and its process group; reap it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        children.reap(proc)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self._err_thread is not None:
            self._err_thread.join(timeout=1.0)
        if proc.stderr is not None:
            with contextlib.suppress(OSError):
                proc.stderr.close()

    def stop(self) -> None:
        """Say ``bye``, give the driver a moment to exit by itself, then :meth:`kill`."""
        proc = self._proc
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.write(b'{"type": "bye"}\n')
            proc.stdin.close()
            proc.wait(timeout=min(self.timeout, 2.0))
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def check_idle(self) -> None:
        """Raise :class:`DriverFault` if the driver wrote a line nobody asked for (or has
        ended its output) since its last reply: one request, exactly one reply."""
        try:
            raw = self._lines.get_nowait()
        except queue.Empty:
            return
        if raw is None:
            raise DriverFault(
                "crashed", f"the driver ended its output between requests ({self._exit_text()})"
            )
        raise DriverFault("malformed", f"a line no request asked for: {_clip(raw)}")

    def _exit_text(self) -> str:
        proc = self._proc
        if proc is None:
            return "not running"
        try:
            code = proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return "it closed its stdout but is still running"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    # -- protocol
    def request(self, message: Mapping[str, Any], reply_type: str) -> dict[str, Any]:
        """Send one line, read one reply of ``reply_type``; raise :class:`DriverFault`.

        An ``error`` reply is returned as is (the caller decides what it means).
        """
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise DriverFault("crashed", "the driver is not running")
        self.check_idle()
        try:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
        except (OSError, ValueError):
            raise DriverFault(
                "crashed", f"the driver stopped reading its stdin ({self._exit_text()})"
            ) from None
        try:
            raw = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            raise DriverFault(
                "timeout", f"no reply to {message['type']!r} within {self.timeout:g} s"
            ) from None
        if raw is None:
            raise DriverFault(
                "crashed",
                f"the driver ended its output instead of answering {message['type']!r} "
                f"({self._exit_text()})",
            )
        try:
            reply = parse_reply(raw)
        except ValueError as exc:
            raise DriverFault(
                "malformed",
                f"the reply is not one JSON object on one line ({exc}): {_clip(raw)}",
            ) from None
        if not isinstance(reply, dict):
            raise DriverFault("malformed", f"the reply is not a JSON object: {_clip(raw)}")
        kind = reply.get("type")
        if kind != reply_type and kind != "error":
            raise DriverFault(
                "malformed",
                f"expected a reply of type {reply_type!r}, got type {kind!r}: {_clip(raw)}",
            )
        if kind == "error" and message["type"] != "reset":
            raise DriverFault(
                "malformed",
                f"expected a reply of type {reply_type!r}, got an error: "
                f"{reply.get('message', '')}",
            )
        return reply


def _clip(raw: bytes, limit: int = 200) -> str:
    text = raw.decode("utf-8", errors="replace").rstrip("\n")
    return repr(text if len(text) <= limit else text[:limit] + "…")


# ---------------------------------------------------------------------------- running


def _observed(reply: Mapping[str, Any]) -> dict[str, Any]:
    """The observation's result, events and state; DriverFault if it lacks one."""
    if not isinstance(reply.get("result"), str):
        raise DriverFault("malformed", 'the observation has no "result" string')
    if not isinstance(reply.get("events"), list):
        raise DriverFault("malformed", 'the observation has no "events" list')
    if "state" not in reply:
        raise DriverFault("malformed", 'the observation has no "state"')
    return {k: reply[k] for k in ("result", "events", "state")}


def _run_vector(driver: Driver, res: VectorResult) -> None:
    """Reset, then the steps; fills ``res`` as it goes (a DriverFault leaves it at the step)."""
    vector = res.vector
    reply = driver.request(
        {
            "type": "reset",
            "layer": vector.layer,
            "params": vector.doc["params"],
            "setup": vector.doc["setup"],
        },
        "ready",
    )
    if reply.get("type") == "error":
        res.status = "failed"
        res.message = f"the driver refused the reset: {reply.get('message', '')}"
        return
    for i, step in enumerate(vector.doc["steps"]):
        res.step, res.command = i, step["command"]
        reply = driver.request({"type": "step", "command": step["command"]}, "observation")
        got = _observed(reply)
        res.steps_run = i + 1
        # the vectors' own rule (ostrom.conformance.vectors.compare_step): result first,
        # then events, then state; integers exact, floats within FLOAT_TOLERANCE
        differences = vectors.compare_step(step["expect"], got)
        if differences:
            res.status = "failed"
            res.difference = differences[0]
            more = f" (and {len(differences) - 1} more)" if len(differences) > 1 else ""
            res.message = f"first difference at {differences[0]}{more}"
            expect = {k: step["expect"][k] for k in ("result", "events", "state")}
            res.diff = json_diff(expect, got)
            return
    driver.check_idle()  # a surplus reply to the last step is this vector's fault
    res.step = res.command = None


def run_suite(
    suite: Suite,
    command: Sequence[str],
    *,
    layers: Sequence[str] = (),
    actions: Sequence[str] = (),
    properties: Sequence[str] = (),
    timeout: float = DEFAULT_TIMEOUT,
    fail_fast: bool = False,
    on_hello: Callable[[Hello, list[Vector]], None] | None = None,
    on_start: Callable[[Vector], None] | None = None,
    on_result: Callable[[VectorResult], None] | None = None,
) -> Report:
    """Run the selected vectors of ``suite`` against the driver ``command``.

    Raises :class:`DriverStartError` if the command cannot be started or fails the first
    handshake; every later failure of the driver is a vector's result.
    """
    started = time.monotonic()
    chosen = select(suite.vectors, layers, actions, properties)
    driver = Driver(command, timeout)
    mark = driver.stderr_mark()
    try:
        hello = driver.start()
    except DriverFault as exc:
        tail = driver.stderr_since(mark).strip()
        driver.kill()
        detail = f"\ndriver stderr:\n{_indent(_tail(tail, 20))}" if tail else ""
        message = f"the handshake failed: {exc.status}: {exc.message}{detail}"
        raise DriverStartError(message) from exc
    report = Report(suite, list(command), hello.implementation, hello.layers, len(chosen))
    unknown = [x for x in hello.layers if x not in LAYERS]
    if unknown:
        report.warnings.append(f"the driver names layers the suite does not know: {unknown}")
    if on_hello is not None:
        on_hello(hello, chosen)
    timeouts = 0  # in a row
    try:
        for vector in chosen:
            if on_start is not None:
                on_start(vector)
            t0 = time.monotonic()
            mark = driver.stderr_mark()
            res = VectorResult(vector, "passed")
            if vector.layer not in hello.layers:
                res.status = "not_implemented"
            elif timeouts >= MAX_TIMEOUTS_IN_A_ROW:
                res.status = "timeout"
                res.message = (
                    f"not run: the driver timed out on the {timeouts} vectors before this one "
                    "in a row, so it is taken to hang"
                )
            else:
                try:
                    if not driver.running:
                        try:
                            driver.start()
                        except DriverFault as exc:
                            exc.message = f"restarting the driver: {exc.message}"
                            raise
                        mark = driver.stderr_mark()
                    _run_vector(driver, res)
                except DriverFault as exc:
                    res.status, res.message = exc.status, exc.message
                    res.stderr = driver.stderr_since(mark)
                    driver.kill()  # a fresh driver for the next vector
                else:
                    if res.failing:
                        res.stderr = driver.stderr_since(mark)
            if vector.layer in hello.layers and not res.message.startswith("not run:"):
                timeouts = timeouts + 1 if res.status == "timeout" else 0
            res.seconds = time.monotonic() - t0
            report.results.append(res)
            if on_result is not None:
                on_result(res)
            if fail_fast and res.failing:
                report.stopped_early = len(report.results) < len(chosen)
                break
    finally:
        driver.stop()
        report.seconds = time.monotonic() - started
    return report


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _tail(text: str, lines: int) -> str:
    parts = text.splitlines()
    if len(parts) <= lines:
        return text
    return "\n".join([f"… ({len(parts) - lines} earlier lines)", *parts[-lines:]])


# ---------------------------------------------------------------------------- output


def failure_lines(report: Report, res: VectorResult, *, verbose: bool = False) -> list[str]:
    """A failure, readable: vector and file, the diverging step, the difference, stderr."""
    v = res.vector
    lines = [
        f"{res.status.upper()} {v.id} ({display_path(report.suite.root / v.rel)})",
        f"  {res.headline()}",
    ]
    if res.message:
        lines.append(f"  {res.message}")
    if res.diff:
        diff = res.diff.splitlines()
        limit = len(diff) if verbose else 60
        lines += ["  " + line for line in diff[:limit]]
        if len(diff) > limit:
            lines.append(f"  … {len(diff) - limit} more diff lines (-v or --json shows them)")
    stderr = res.stderr.strip()
    if stderr:
        keep = 200 if verbose else 15
        cut = stderr.count("\n") >= keep
        lines.append(f"  driver stderr (last {keep} lines):" if cut else "  driver stderr:")
        lines.append(_indent(_tail(stderr, keep)))
    return lines


def suite_line(report: Report) -> str:
    s = report.suite
    return (
        f"read {files_read(s)} of the {len(s.files)} files listed in "
        f"{display_path(s.root / MANIFEST_NAME)} ({_plural(len(s.vectors), 'vector')}, "
        f"{_plural(len(s.traces), 'trace')}); selected {report.selected}, ran {report.ran}"
        + (" (stopped at the first failure: --fail-fast)" if report.stopped_early else "")
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def totals_line(report: Report) -> str:
    t = report.totals()
    failing = ", ".join(f"{t[s]} {s}" for s in ("failed", "crashed", "timeout", "malformed"))
    return (
        f"{t['passed']} passed, {failing}, {t['not_implemented']} not implemented "
        f"({report.seconds:.1f} s)"
    )


def _summary_table(title: str, counts: Mapping[str, Mapping[str, int]], first: str) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column(first, no_wrap=True)
    for col in ("passed", "failed", "not implemented"):
        table.add_column(col, justify="right", no_wrap=True)
    for name, c in counts.items():
        failed = f"[red]{c['failed']}[/red]" if c["failed"] else "0"
        table.add_row(name, str(c["passed"]), failed, str(c["not_implemented"]))
    return table


def print_text_report(report: Report, *, verbose: bool = False) -> None:
    """The summary tables, every failure, the suite check line; on stdout."""
    from rich.console import Console
    from rich.text import Text

    console = Console() if sys.stdout.isatty() else Console(width=160)
    console.print(
        f"{report.implementation} (layers: {', '.join(report.driver_layers) or 'none'}) "
        f"via: {' '.join(report.command)}",
        markup=False,
        highlight=False,
    )
    console.print(_summary_table("per layer", report.by_layer(), "layer"))
    console.print(_summary_table("per action", report.by_action(), "action"))
    props = report.by_property()
    if props:
        console.print(_summary_table("per property id", props, "property"))
    failures = [r for r in report.results if r.failing]
    for res in failures:
        console.print()
        for line in failure_lines(report, res, verbose=verbose):
            stripped = line.lstrip()
            style = None
            if stripped.startswith(("+++", "---")):
                style = "bold"
            elif stripped.startswith("+"):
                style = "green"
            elif stripped.startswith("-"):
                style = "red"
            elif line.startswith(tuple(s.upper() for s in FAILING)):
                style = "bold red"
            console.print(Text(line, style=style or ""), soft_wrap=True)
    for warning in report.warnings:
        console.print(Text(f"warning: {warning}", style="yellow"), soft_wrap=True)
    console.print()
    console.print(suite_line(report), markup=False, highlight=False, soft_wrap=True)
    style = "green" if report.ok else "red"
    console.print(Text(totals_line(report), style=style), soft_wrap=True)
    if report.ran == 0:
        console.print(
            Text("no vector ran: the driver implements none of the selected layers", style="red"),
            soft_wrap=True,
        )


class _Progress:
    """Progress on stderr: a rich bar on a terminal, plain lines otherwise."""

    def __init__(self, verbose: bool) -> None:
        from rich.console import Console

        self.verbose = verbose
        self.console = Console(stderr=True, soft_wrap=True)
        self.tty = self.console.is_terminal
        self._bar: Any = None
        self._task: Any = None
        self._layer: str | None = None
        self._layer_counts: dict[str, int] = {}
        self._layer_t0 = 0.0

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end_layer()
        if self._bar is not None:
            self._bar.stop()

    def line(self, text: str, style: str | None = None) -> None:
        from rich.text import Text

        target = self._bar.console if self._bar is not None else self.console
        target.print(Text(text, style=style or ""))

    def hello(self, hello: Hello, chosen: list[Vector]) -> None:
        self.line(
            f"conform: {hello.implementation} implements "
            f"{', '.join(hello.layers) or 'no layer'}; {len(chosen)} vectors selected"
        )
        if self.tty:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]conform"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                console=self.console,
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=len(chosen))

    def start(self, vector: Vector) -> None:
        if vector.layer != self._layer:
            self._end_layer()
            self._layer, self._layer_t0 = vector.layer, time.monotonic()
            self._layer_counts = {}
        if self._bar is not None:
            self._bar.update(self._task, description=vector.id)

    def result(self, res: VectorResult) -> None:
        key = "failed" if res.failing else res.status
        self._layer_counts[key] = self._layer_counts.get(key, 0) + 1
        if self._bar is not None:
            self._bar.advance(self._task)
        if res.failing:
            self.line(f"{res.status.upper()} {res.vector.id}: {res.headline()}", "red")
        elif self.verbose:
            self.line(f"{res.status} {res.vector.id} ({res.seconds * 1000:.0f} ms)")

    def _end_layer(self) -> None:
        if self._layer is None:
            return
        c = self._layer_counts
        self.line(
            f"conform: {self._layer}: {c.get('passed', 0)} passed, {c.get('failed', 0)} failed, "
            f"{c.get('not_implemented', 0)} not implemented "
            f"({time.monotonic() - self._layer_t0:.1f} s)"
        )
        self._layer = None


def _error(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def main(
    command: Sequence[str],
    *,
    vectors_dir: Path | None = None,
    layers: Sequence[str] = (),
    actions: Sequence[str] = (),
    properties: Sequence[str] = (),
    as_json: bool = False,
    junit: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    fail_fast: bool = False,
    verbose: bool = False,
) -> int:
    """``ostrom conform``: returns the exit status (0 all passed, 1 not, 2 unusable input)."""
    if not command:
        return _error("no driver command: ostrom conform [OPTIONS] -- CMD ARGS...")
    bad = [x for x in layers if x not in LAYERS]
    if bad:
        return _error(f"unknown layer {', '.join(bad)} (the layers: {', '.join(LAYERS)})")
    if shutil.which(command[0]) is None:
        if Path(command[0]).is_file():
            return _error(
                f"cannot run {command[0]!r}: not executable (chmod +x it, or give its "
                f"interpreter: ostrom conform -- python3 {command[0]})"
            )
        return _error(f"cannot run {command[0]!r}: no such command or file")
    root = vectors_dir if vectors_dir is not None else default_vectors_dir()
    try:
        suite = load_suite(root)
    except SuiteError as exc:
        return _error(f"refusing the suite: {exc}")
    known_actions = {v.action for v in suite.vectors} | {
        f"{v.layer}/{v.action}" for v in suite.vectors
    }
    bad = [a for a in actions if a not in known_actions]
    if bad:
        some = ", ".join(sorted({v.action for v in suite.vectors}))
        return _error(f"unknown action {', '.join(map(repr, bad))} (the suite's actions: {some})")
    known_props = {p for v in suite.vectors for p in v.properties}
    bad = [x for x in properties if x not in known_props]
    if bad:
        return _error(
            f"no vector exercises property {', '.join(map(repr, bad))} (the suite's: "
            f"{', '.join(sorted(known_props))})"
        )
    try:
        with _Progress(verbose) as progress:
            report = run_suite(
                suite,
                command,
                layers=layers,
                actions=actions,
                properties=properties,
                timeout=timeout,
                fail_fast=fail_fast,
                on_hello=progress.hello,
                on_start=progress.start,
                on_result=progress.result,
            )
    except DriverStartError as exc:
        return _error(str(exc))
    if report.selected == 0:
        report.warnings.append("no vector matches the --layer/--action/--property filters")
    junit_error = None
    if junit is not None:
        try:
            write_junit(report, junit)
        except OSError as exc:
            junit_error = f"cannot write {junit}: {exc.strerror or exc}"
    if as_json:
        print(json.dumps(report.to_json(), indent=2, ensure_ascii=False, allow_nan=False))
    else:
        print_text_report(report, verbose=verbose)
    if as_json:
        print(suite_line(report), file=sys.stderr)
        print(totals_line(report), file=sys.stderr)
    if junit_error is not None:
        return _error(junit_error)
    return 0 if report.ok else 1
