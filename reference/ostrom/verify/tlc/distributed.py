"""Run one model on TLC's own distributed mode: a ``TLCServer`` and ``TLCWorker`` processes.

TLC 2.15 ships it in the jar (``tlc2.tool.distributed``).  The server parses the spec,
computes the initial states, keeps the state queue and the fingerprint set, and hands blocks
of states to workers over Java RMI; each worker fetches the spec from the server, computes
successors and checks invariants.  What the jar takes and does, found by running it
(docs/checking.md, "Scale-out"):

* the server takes TLC's own options (``-config``, ``-metadir``, ``-fp``, ``-tool``,
  ``-deadlock``); system properties set the RMI registry port
  (``tlc2.tool.distributed.TLCServer.port``, 10997 by default, read by the workers too), the
  progress interval (``...TLCServer.report``, ms) and a worker's threads
  (``tlc2.tool.distributed.TLCWorker.threadCount``, all cores by default);
  ``java.rmi.server.hostname`` is the address each JVM puts in its RMI stubs;
* a worker takes the server's host name and retries until the server is ready (message
  7000), so workers are started only once it is; when the search ends the server tells each
  registered worker to exit, and the worker prints ``Computed: N`` (the successors it
  generated) on its way out;
* the server's ``states generated`` is miscounted (``NextStateResult.getStatesComputedDelta``
  subtracts the number of fingerprint servers, 1, where it means the number of states
  returned), so it is neither the single-machine figure nor repeatable: the total here is
  the initial states plus the workers' ``Computed`` figures, which equals the single-machine
  total, and it is unknown (None) when a worker of another machine took part;
* the depth it reports is the longest path the workers happened to take, not the BFS depth:
  it is dropped;
* a violation found by a worker is printed as "The behavior up to this point is:" and the
  violating step only (the predecessor mislabelled ``Initial predicate``): neither the name
  of the invariant or property nor the path from an initial state (kind ``unnamed`` here;
  verify/tlc/replay.py names it).  A deadlock prints the one state.  A violation by an
  initial state is named (message 2102);
* temporal properties are skipped without a word, and ``TLCGet``/``TLCSet`` are refused.

Every process runs in a process group of its own (``ostrom.children``) and is stopped when
the run ends, fails, times out or is interrupted.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ostrom import children
from ostrom.verify.tlc.cfg import cfg_names
from ostrom.verify.tlc.jar import find_jar, find_java
from ostrom.verify.tlc.output import (
    EXIT_PARSE,
    Message,
    TlcOutcome,
    ToolOutputParser,
    TraceState,
    parse_state_body,
)
from ostrom.verify.tlc.runner import (
    ProgressCallback,
    RunnerError,
    TlcRun,
    new_run_dir,
    progress_text,
    stage,
)

__all__ = [
    "DEFAULT_PORT",
    "LOOPBACK",
    "MAX_WORKERS",
    "DistributedRun",
    "DistributedSetup",
    "DistributedStartError",
    "run_distributed",
    "worker_command",
]

#: TLC's own registry port (what a worker on another machine uses unless told otherwise).
DEFAULT_PORT: Final = 10997
LOOPBACK: Final = "127.0.0.1"
#: More local worker processes than this is a typo, not a plan (each is a JVM).
MAX_WORKERS: Final = 64
#: TLC's progress interval in distributed mode (TLC's own default is one minute).
REPORT_MS: Final = 10_000
#: How long workers get to exit after the server has told them to.
WORKER_EXIT_GRACE: Final = 15.0

MSG_SERVER_READY: Final = 7000
MSG_WORKER_REGISTERED: Final = 7001
MSG_BEHAVIOR: Final = 2121  # "The behavior up to this point is:"
MSG_INITIAL_STATE_ERROR: Final = 2102  # "Error: ... While working on the initial state:"
MSG_PARSE_FAILED: Final = 3002  # "Parsing or semantic analysis failed."
#: The server has the result: a violation's trace, a worker's statistics, the summary.
_FINISHING: Final = frozenset({MSG_BEHAVIOR, 7003, 2193, 2199})

_PROP = "tlc2.tool.distributed"
_COMPUTED_RE = re.compile(r"Computed: (\d+) and a cache hit ratio")
_INIT_RE = re.compile(r"Finished computing initial states: (\d+) distinct state")
_INVARIANT_RE = re.compile(r"Invariant (\S+?)\.? is violated")
_PORT_ERRORS = ("Port already in use", "java.net.BindException", "ExportException")


class DistributedStartError(RunnerError):
    """The server or a worker could not start (a port in use, a worker that cannot reach the
    server); the message is one line."""


@dataclass(frozen=True)
class DistributedSetup:
    """Where and how the processes run: ``workers`` local worker processes (one thread
    each; 0 = the workers run on other machines), the server's address as the workers
    reach it (``host``) and its registry ``port`` (None: a free one, for local workers
    only)."""

    workers: int = 2
    host: str = LOOPBACK
    port: int | None = None

    @property
    def remote(self) -> bool:
        """Workers of other machines may take part (the server is not on loopback only)."""
        return self.host != LOOPBACK or self.workers == 0


@dataclass
class DistributedRun:
    """A distributed TLC run: the run as ``run_tlc`` reports one, plus what the workers did."""

    run: TlcRun
    port: int
    registered: int  # worker threads that registered with the server
    computed: list[int | None] = field(default_factory=list)  # per local worker


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def _jvm(java: Path | str, tmp: Path, host: str, port: int) -> list[str]:
    return [
        str(java),
        "-XX:+UseParallelGC",
        f"-Djava.io.tmpdir={tmp}",
        f"-Djava.rmi.server.hostname={host}",
        f"-D{_PROP}.TLCServer.port={port}",
    ]


def server_command(
    java: Path | str, jar: Path | str, run_dir: Path, module: str, cfg: str, *,
    host: str, port: int, fp: int | None,
) -> list[str]:  # fmt: skip
    """The TLCServer command line of a run staged in ``run_dir`` (its own metadir and tmpdir,
    as every TLC run here: verify/tlc/runner.py)."""
    return [
        *_jvm(java, run_dir / "tmp", host, port),
        f"-D{_PROP}.TLCServer.report={REPORT_MS}",
        "-cp",
        str(jar),
        f"{_PROP}.TLCServer",
        "-tool",
        *(["-fp", str(fp)] if fp is not None else []),
        "-metadir",
        str(run_dir / "meta"),
        "-config",
        cfg,
        f"{module}.tla",
    ]


def worker_command(
    java: Path | str, jar: Path | str, server: str, port: int, *,
    own_host: str = LOOPBACK, tmp: Path | None = None, threads: int | None = 1,
) -> list[str]:  # fmt: skip
    """A TLCWorker command line: ``own_host`` is the address the server calls it back at,
    ``threads`` its worker threads (None: all cores, TLC's default)."""
    return [
        str(java),
        "-XX:+UseParallelGC",
        *([f"-Djava.io.tmpdir={tmp}"] if tmp is not None else []),
        f"-Djava.rmi.server.hostname={own_host}",
        f"-D{_PROP}.TLCServer.port={port}",
        *([f"-D{_PROP}.TLCWorker.threadCount={threads}"] if threads is not None else []),
        "-cp",
        str(jar),
        f"{_PROP}.TLCWorker",
        server,
    ]


class _Reader:
    """Reads one process's output lines in a thread of its own (a JVM blocks when its pipe
    is full), handing each to ``on_line``."""

    def __init__(self, proc: subprocess.Popen[str], on_line: Callable[[str], None]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._on_line = on_line
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.rstrip("\n")
            self.lines.append(line)
            self._on_line(line)

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)


def _spawn(cmd: list[str], cwd: Path) -> subprocess.Popen[str]:
    proc: subprocess.Popen[str] = children.spawn(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
    )
    return proc


def _last_words(lines: list[str]) -> str:
    """The last meaningful line of a process's output, for a one-line error."""
    skip = ("@!@!@", "Usage:", "Exception in thread")
    meaningful = [ln.strip() for ln in lines if ln.strip() and not ln.startswith(skip)]
    return meaningful[-1] if meaningful else "no output"


def run_distributed(
    root: Path,
    module: str,
    cfg_name: str,
    cfg_text: str,
    *,
    label: str,
    setup: DistributedSetup,
    fp: int | None = None,
    timeout: float | None = None,
    extra_modules: Mapping[str, str] | None = None,
    on_progress: ProgressCallback | None = None,
    on_ready: Callable[[str, int], None] | None = None,
) -> DistributedRun:
    """Stage ``module`` with ``cfg_text`` (as ``run_tlc`` does), start the server, start
    ``setup.workers`` local workers once it is ready, and wait for the search to end (or
    ``timeout`` seconds).  ``on_ready(label, port)`` is called when the server accepts
    workers (to tell remote workers where to connect).  Raises
    :class:`DistributedStartError` if the server cannot open its port or a worker does not
    start, ``TlcSetupError`` without java or the jar; a spec TLC refuses is an ``error``
    outcome, as in ``run_tlc``."""
    jar = find_jar()
    java = find_java()
    run_dir = new_run_dir(root, label)
    stage(root, module, cfg_name, cfg_text, run_dir, extra_modules)
    auto_port = setup.port is None
    try:
        for attempt in range(3 if auto_port else 1):
            port = setup.port if setup.port is not None else _free_port()
            try:
                return _run(
                    java, jar, run_dir, module, cfg_name, cfg_text,
                    label=label, setup=setup, port=port, fp=fp, timeout=timeout,
                    on_progress=on_progress, on_ready=on_ready,
                )  # fmt: skip
            except _PortInUse:
                if auto_port and attempt < 2:
                    shutil.rmtree(run_dir / "meta", ignore_errors=True)
                    continue  # another process took the free port first: pick another
                raise DistributedStartError(
                    f"the TLC server cannot listen on port {port}: it is in use (choose "
                    "another with --distributed-port)"
                ) from None
    finally:  # TLC's scratch state; the staged sources and tlc.out stay, as run_tlc's
        shutil.rmtree(run_dir / "meta", ignore_errors=True)
        shutil.rmtree(run_dir / "tmp", ignore_errors=True)
    raise AssertionError("unreachable")  # pragma: no cover


class _PortInUse(Exception):
    pass


def _run(
    java: Path,
    jar: Path,
    run_dir: Path,
    module: str,
    cfg_name: str,
    cfg_text: str,
    *,
    label: str,
    setup: DistributedSetup,
    port: int,
    fp: int | None,
    timeout: float | None,
    on_progress: ProgressCallback | None,
    on_ready: Callable[[str, int], None] | None,
) -> DistributedRun:
    ready = threading.Event()
    finishing = threading.Event()
    registered = [0]

    def on_message(msg: Message) -> None:
        if msg.code == MSG_SERVER_READY:
            ready.set()
        elif msg.code == MSG_WORKER_REGISTERED:
            registered[0] += 1
        elif msg.code in _FINISHING:
            finishing.set()
        elif on_progress is not None and msg.code == 2200:
            text = progress_text(msg)
            if text:
                on_progress(label, text)

    parser = ToolOutputParser(on_message=on_message)
    lock = threading.Lock()

    def feed(line: str) -> None:
        with lock:
            parser.feed(line)

    for sub in ("meta", "tmp"):
        (run_dir / sub).mkdir(exist_ok=True)
    cmd = server_command(java, jar, run_dir, module, cfg_name, host=setup.host, port=port, fp=fp)
    started = time.monotonic()
    deadline = started + timeout if timeout else None
    procs: list[subprocess.Popen[str]] = []
    workers: list[_Reader] = []
    timed_out = False
    try:
        try:
            server = _Reader(_spawn(cmd, run_dir), feed)
        except OSError as exc:
            raise DistributedStartError(f"cannot start java ({java}): {exc.strerror}") from None
        procs.append(server.proc)
        # the server parses the spec and computes the initial states before it is ready
        while not ready.is_set() and server.proc.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                timed_out = True
                break
            ready.wait(0.05)
        if ready.is_set():
            if on_ready is not None:
                on_ready(label, port)
            for k in range(setup.workers):
                tmp = run_dir / "tmp" / f"worker{k + 1}"
                tmp.mkdir(parents=True, exist_ok=True)
                wcmd = worker_command(java, jar, LOOPBACK, port, tmp=tmp)
                try:
                    workers.append(_Reader(_spawn(wcmd, run_dir), _ignore))
                except OSError as exc:
                    raise DistributedStartError(
                        f"cannot start TLC worker {k + 1} ({java}): {exc.strerror}"
                    ) from None
                procs.append(workers[-1].proc)
            timed_out = _wait(server, workers, finishing, deadline, remote=setup.remote)
        if timed_out:
            children.stop(server.proc, grace=2)
            exit_code = -9
        else:
            exit_code = server.proc.wait()
        server.join(5)
        if not ready.is_set() and any(e in ln for ln in server.lines for e in _PORT_ERRORS):
            raise _PortInUse
        # told to exit by the server, each worker prints what it computed on its way out
        grace_end = time.monotonic() + WORKER_EXIT_GRACE
        for w in workers:
            try:
                w.proc.wait(timeout=max(0.0, grace_end - time.monotonic()))
            except subprocess.TimeoutExpired:
                children.stop(w.proc, grace=2)
            w.join(5)
    finally:
        for proc in procs:
            children.stop(proc, grace=2)
    seconds = time.monotonic() - started
    lines = list(server.lines)
    with open(run_dir / "tlc.out", "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
        for k, w in enumerate(workers):
            out.write(f"\n---- worker {k + 1} ----\n" + "\n".join(w.lines) + "\n")
    computed = [_computed(w.lines) for w in workers]
    with lock:
        outcome = classify(parser, exit_code, cfg_names(cfg_text, "PROPERTY", "PROPERTIES"))
    _fill_total(outcome, parser, computed, registered[0])
    if timed_out:
        outcome = TlcOutcome(
            "error",
            f"error: timed out after {timeout:g} s",
            distinct_states=outcome.distinct_states,
        )
    run = TlcRun(
        label=label,
        outcome=outcome,
        exit_code=exit_code,
        seconds=seconds,
        run_dir=run_dir,
        cfg_text=cfg_text,
        output_lines=lines,
        print_lines=parser.print_lines,
        timed_out=timed_out,
    )
    return DistributedRun(run, port, registered[0], computed)


def _ignore(line: str) -> None:
    """Worker lines are only kept (``_Reader.lines``)."""


def _wait(
    server: _Reader,
    workers: list[_Reader],
    finishing: threading.Event,
    deadline: float | None,
    *,
    remote: bool,
) -> bool:
    """Wait for the server to end; True if ``deadline`` passed first.  A local worker that
    ends before it started is an error, and so is every local worker gone while the server
    still waits for work (it would wait for ever); once the server is finishing (it has
    reported the result, then tells the workers to exit) workers may end first."""
    while server.proc.poll() is None:
        if deadline is not None and time.monotonic() > deadline:
            return True
        if not finishing.is_set():
            ended = [w for w in workers if w.proc.poll() is not None]
            for k, w in enumerate(workers):
                if w in ended and not _registered(w):
                    w.join(2)
                    raise DistributedStartError(
                        f"TLC worker {k + 1} did not start: {_last_words(w.lines)}"
                    )
            all_gone = bool(workers) and len(ended) == len(workers) and not remote
            # the server may be about to say it is finishing: give it a moment
            if all_gone and not finishing.wait(5.0) and server.proc.poll() is None:
                raise DistributedStartError(
                    "every TLC worker ended before the search did "
                    f"(worker 1: {_last_words(workers[0].lines)})"
                )
        time.sleep(0.05)
    return False


def _registered(worker: _Reader) -> bool:
    return any("TLC worker with" in ln and "ready" in ln for ln in worker.lines)


def _computed(lines: list[str]) -> int | None:
    total = None
    for line in lines:
        m = _COMPUTED_RE.search(line)
        if m:
            total = (total or 0) + int(m.group(1))
    return total


def classify(
    parser: ToolOutputParser, exit_code: int, properties: list[str] | None = None
) -> TlcOutcome:
    """The outcome of a TLCServer's ``-tool`` output: as single-machine TLC's
    (verify/tlc/output.py), except that a violation found by a worker is ``unnamed`` (its
    step is the trace) and one by an initial state is named from message 2102.  A spec
    that does not parse ends the server with an exception (not TLC's exit code 150), so
    the parse error is recognised by its message (3002, nested in the exception's)."""
    # the server prints its banner as plain text (TLC's as message 2262): not SANY's report
    parser.loose_before_start = [
        ln for ln in parser.loose_before_start if not ln.startswith("TLC2 TLC Server")
    ]
    nested = [c.code for m in parser.messages for c in m.children]
    if MSG_PARSE_FAILED in nested:
        exit_code = EXIT_PARSE
    outcome = parser.finish(exit_code, properties)
    if outcome.kind != "error":
        return outcome
    for msg in parser.messages:
        if msg.code == MSG_INITIAL_STATE_ERROR:
            m = _INVARIANT_RE.search(msg.text)
            if m:
                body = msg.lines
                at = next((i for i, ln in enumerate(body) if "initial state" in ln), None)
                values = parse_state_body(body[at + 1 :]) if at is not None else {}
                return TlcOutcome(
                    "invariant",
                    m.group(1),
                    distinct_states=outcome.distinct_states,
                    total_states=outcome.total_states,
                    trace=_initial(values),
                )
    if any(msg.code == MSG_BEHAVIOR for msg in parser.messages) and outcome.trace:
        return TlcOutcome(
            "unnamed",
            "violation (unnamed by distributed TLC)",
            distinct_states=outcome.distinct_states,
            total_states=outcome.total_states,
            trace=outcome.trace,
        )
    text = outcome.error_text or ""
    if "TLCSet" in text or "TLCGet" in text:
        outcome.got = (
            "error: the model uses TLCGet/TLCSet, which distributed TLC 2.15 does not "
            "support (check it without --distributed)"
        )
    return outcome


def _initial(values: dict[str, Any]) -> list[TraceState]:
    return [TraceState(0, "Initial predicate", None, values)] if values else []


def _fill_total(
    outcome: TlcOutcome,
    parser: ToolOutputParser,
    computed: list[int | None],
    registered: int,
) -> None:
    """Replace the server's miscounted total by the initial states plus what every worker
    computed, when every worker that took part is a local one that said; depth is dropped
    (module docstring)."""
    outcome.depth = None
    inits = None
    for msg in parser.messages:
        m = _INIT_RE.search(msg.text)
        if m:
            inits = int(m.group(1))
    own = all(c is not None for c in computed) and registered == len(computed)
    if inits is not None and computed and own:
        outcome.total_states = inits + sum(c or 0 for c in computed)
    else:
        outcome.total_states = None
