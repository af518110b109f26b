"""Start a command as a terminal starts a foreground job: with SIGINT at its default.

A process started as a background job of a non-interactive shell (``make test &`` in a
script, ``nohup``, some CI runners) has SIGINT ignored, and an ignored signal stays ignored
across ``exec``: Python then installs no ``KeyboardInterrupt`` handler, and a child sent
Ctrl-C by a test carries on.  The tests that check what Ctrl-C does (exit 130, no
traceback, no process left behind) start their command with this, so they test the
command and not the way the test suite itself was started.
"""

from __future__ import annotations

import signal
import subprocess
from typing import Any

__all__ = ["popen_foreground"]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen_foreground(cmd: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(cmd, **kwargs)`` with SIGINT at its default in the child."""
    return subprocess.Popen(cmd, preexec_fn=_default_sigint, **kwargs)
