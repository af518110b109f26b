"""``ostrom validate-trace FILE``: the layer a log's header names picks its trace module.

The one entry point is the ``ostrom validate-trace`` command
(ostrom/verify/commands/trace.py), which calls ``main``; from Python, ``validate_file``
gives the verdict."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Final

from ostrom.verify.trace.log import header_layer
from ostrom.verify.trace.verdict import Verdict, format_verdict

__all__ = ["LAYER_TRACES", "main", "validate_file"]

#: layer -> the module that validates its logs.  Each has ``validate_file(path, *, keep,
#: timeout, progress) -> Verdict`` and ``validate_paths(paths, *, timeout) -> list[Verdict]``.
LAYER_TRACES: Final[dict[str, str]] = {
    "lifecycle": "ostrom.verify.trace.lifecycle_check",
    "sanctions": "ostrom.verify.trace.sanctions",
    "pbft": "ostrom.verify.trace.pbft",
    "community": "ostrom.verify.trace.lifecycle_check",  # spec/CommunityTrace.tla
}
#: The module of a log whose header names no known layer (it reports the log unusable).
_DEFAULT: Final = LAYER_TRACES["lifecycle"]


def validate_file(
    path: Path,
    *,
    keep: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Verdict:
    """Validate one log file (``ostrom validate-trace FILE``) against the trace spec of
    the layer its header names (``LAYER_TRACES``)."""
    layer = header_layer(path)
    module = importlib.import_module(LAYER_TRACES.get(layer or "", _DEFAULT))
    verdict: Verdict = module.validate_file(path, keep=keep, timeout=timeout, progress=progress)
    return verdict


def main(
    file: Path,
    *,
    as_json: bool = False,
    keep: Path | None = None,
    timeout: float | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int:
    """``ostrom validate-trace``: 0 accepted, 1 rejected, 2 unusable input (or TLC failed)."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr

    def progress(text: str) -> None:
        print(text, file=err, flush=True)

    verdict = validate_file(file, keep=keep, timeout=timeout, progress=progress)
    if as_json:
        print(json.dumps(verdict.to_json(), indent=2), file=out)
    else:
        print(format_verdict(verdict), file=out)
    return verdict.exit_code
