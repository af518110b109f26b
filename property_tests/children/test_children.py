"""The processes a command starts do not outlive it (ostrom/children.py).

A process started with ``spawn`` is registered until it is reaped; ``stop`` ends its
whole process group (what it started too: a TLC JVM's helpers, a driver's workers) with
SIGTERM and, for one that ignores it, SIGKILL after the grace period; ``stop_all`` is
what the CLI's error boundary calls on the way out.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from ostrom import children

# A parent that starts a child in its own process group and ignores SIGTERM itself.
_STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:  # a zombie is gone
        return stat.read().split(") ")[-1][0] != "Z"


def test_a_spawned_process_is_registered_until_reaped() -> None:
    proc = children.spawn([sys.executable, "-c", "pass"])
    assert proc in children.live()
    proc.wait(timeout=30)
    children.reap(proc)
    assert proc not in children.live()


def test_stop_all_ends_every_group_even_one_that_ignores_sigterm() -> None:
    import subprocess

    proc = children.spawn([sys.executable, "-c", _STUBBORN], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    grandchild = int(proc.stdout.readline())
    assert _alive(proc.pid) and _alive(grandchild)
    started = time.monotonic()
    children.stop_all(grace=0.3)
    assert proc.poll() == -signal.SIGKILL  # SIGTERM was ignored: killed after the grace
    deadline = time.monotonic() + 10
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)  # the whole group, not only the process spawned
    assert children.live() == [] and time.monotonic() - started < 10
    proc.stdout.close()


def test_stopping_a_process_that_already_exited_is_harmless() -> None:
    proc = children.spawn([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    children.stop(proc, grace=0.1)
    assert proc not in children.live()
