"""The processes a command starts, so that none outlives it.

``ostrom check`` runs TLC JVMs, ``ostrom conform`` a driver, ``ostrom validate-trace`` TLC:
each is started through ``spawn``, in a session of its own (so its own children share
its process group), and registered until it is reaped.  When a command ends — normally,
interrupted or terminated (the CLI's error boundary, ``ostrom.cli.exits``) —
``stop_all`` signals every registered process group (SIGTERM, then SIGKILL after a grace
period) so that a CI timeout that kills ``ostrom`` does not leave a JVM or a driver
running.  Processes meant to outlive the command (``ostrom cluster up``'s replicas) are
not started through here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["live", "reap", "spawn", "stop", "stop_all"]

_lock = threading.Lock()
_live: set[subprocess.Popen[Any]] = set()


def spawn(cmd: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(cmd, **kwargs)`` in a new session, registered until ``reap``."""
    kwargs.setdefault("start_new_session", True)
    proc: subprocess.Popen[Any] = subprocess.Popen(list(cmd), **kwargs)
    with _lock:
        _live.add(proc)
    return proc


def reap(proc: subprocess.Popen[Any]) -> None:
    """Forget ``proc`` (it has exited, or its owner stopped it)."""
    with _lock:
        _live.discard(proc)


def live() -> list[subprocess.Popen[Any]]:
    """The registered processes that have not been reaped."""
    with _lock:
        return list(_live)


def stop(proc: subprocess.Popen[Any], grace: float = 2.0) -> None:
    """Stop ``proc`` and its process group: SIGTERM, then SIGKILL after ``grace`` s."""
    if proc.poll() is None:
        _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
    _signal_group(proc, signal.SIGKILL)  # what the process itself started, too
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        proc.wait(timeout=5)
    reap(proc)


def stop_all(grace: float = 2.0) -> None:
    """Stop every registered process (the CLI's boundary calls this on the way out)."""
    for proc in live():
        stop(proc, grace)


def _signal_group(proc: subprocess.Popen[Any], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError, OSError):
        with contextlib.suppress(OSError):
            if proc.poll() is None:
                proc.send_signal(sig)
