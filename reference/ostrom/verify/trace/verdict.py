"""Verdicts of trace validation: accepted, rejected at a step, unusable, error.

``Verdict`` and ``Failure`` are what ``ostrom validate-trace`` reports for every layer
(``format_verdict`` for people, ``to_json`` for tools); ``validate_batches``,
``validate_paths_with`` and ``validate_file_with`` are the frame each layer's trace module
runs its compiled batches through (one TLC run per batch, a verdict per log).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from ostrom.verify.tlc.values import ModelValue, Opaque, TlaFunction, TlaRecord, TlaSet
from ostrom.verify.trace.log import TRACE_SPECS, Names, UnusableLog
from ostrom.verify.trace.tlc import run_directory

__all__ = [
    "FIELD_NAMES",
    "LIFECYCLE_SPEC",
    "Failure",
    "Verdict",
    "format_verdict",
    "plain_value",
    "validate_batches",
    "validate_file_with",
    "validate_paths_with",
]

EXIT_ACCEPTED: Final = 0
EXIT_REJECTED: Final = 1
EXIT_UNUSABLE: Final = 2
EXIT_TOOL_ERROR: Final = 3  # docs/cli.md
#: What a lifecycle verdict names (community verdicts name spec/CommunityTrace.tla).
LIFECYCLE_SPEC: Final = TRACE_SPECS["lifecycle"]

#: A layer's parsed log type (TraceLog, SanctionsLog, PbftLog).
L = TypeVar("L")


@dataclass
class Failure:
    """The first step of a log that no behaviour of the spec gets past."""

    step: int  # 0-based index among the steps
    line: int  # line of the log file
    command: Any
    result: str
    kind: str  # "command" | "refusal" | "state" | "not-a-spec-command"
    action: str  # the spec action expected
    message: str
    differences: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "line": self.line,
            "command": self.command,
            "result": self.result,
            "kind": self.kind,
            "action": self.action,
            "message": self.message,
            "differences": self.differences,
        }


@dataclass
class Verdict:
    """What validate-trace says about one log."""

    name: str
    status: str  # "accepted" | "rejected" | "unusable" | "error"
    steps: int
    matched: int  # steps every one of which some behaviour follows
    message: str
    failure: Failure | None = None
    seconds: float = 0.0
    distinct_states: int | None = None
    spec: str = LIFECYCLE_SPEC  # the spec the log was checked against

    @property
    def exit_code(self) -> int:
        return {
            "accepted": EXIT_ACCEPTED,
            "rejected": EXIT_REJECTED,
            "error": EXIT_TOOL_ERROR,  # TLC or Java failed, or --timeout: no verdict
        }.get(self.status, EXIT_UNUSABLE)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "ostrom-validate-trace/1",
            "file": self.name,
            "spec": self.spec,
            "status": self.status,
            "accepted": self.status == "accepted",
            "steps": self.steps,
            "matched": self.matched,
            "message": self.message,
            "failure": None if self.failure is None else self.failure.to_json(),
            "seconds": round(self.seconds, 2),
            "distinct_states": self.distinct_states,
        }


def plain_value(value: Any, names: Names) -> Any:
    """A TLC value as plain Python for messages (sets sorted lists, ids un-aliased)."""
    if isinstance(value, TlaSet):
        items = [plain_value(v, names) for v in value.elems]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, tuple):
        return [plain_value(v, names) for v in value]
    if isinstance(value, TlaRecord):
        return {k: plain_value(v, names) for k, v in value.fields}
    if isinstance(value, TlaFunction):
        return {str(plain_value(k, names)): plain_value(v, names) for k, v in value.pairs}
    if isinstance(value, ModelValue | Opaque):
        return str(value)
    if isinstance(value, str):
        return names.orig(value)
    return value


FIELD_NAMES: Final = {
    "content": "digest (null once forgotten)",
    "ballot": "(ballot, phase)",
    "revealed": "revealed (voter, vote)",
    "decision": "decision (path, winner weight, loser weight, winner voters, loser voters)",
}


def validate_batches(
    logs: Sequence[Any],
    batches: Sequence[Any],
    unusable: Mapping[int, str],
    run_batch: Callable[[Path, Any], Mapping[int, Verdict]],
    *,
    keep: Path | None,
    prefix: str,
    spec: str,
) -> list[Verdict]:
    """A verdict for each of ``logs``: ``unusable`` ones (index -> why) as such, the rest
    from ``run_batch(run_dir, batch)`` (one TLC run per batch; its keys index
    ``batch.logs``, whose ``.log`` is one of ``logs``)."""
    verdicts: dict[int, Verdict] = {
        i: Verdict(logs[i].name, "unusable", len(logs[i].steps), 0, msg, spec=spec)
        for i, msg in unusable.items()
    }
    index = {id(log): i for i, log in enumerate(logs)}  # by identity: equal logs stay apart
    for b, batch in enumerate(batches):
        label = f"batch-{b + 1}" if len(batches) > 1 else "trace"
        with run_directory(keep, label, prefix) as run_dir:
            for k, v in run_batch(run_dir, batch).items():
                verdicts[index[id(batch.logs[k].log)]] = v
    return [verdicts[i] for i in range(len(logs))]


def validate_paths_with(
    read: Callable[[Path], L],
    validate: Callable[..., list[Verdict]],
    paths: Sequence[Path],
    timeout: float | None,
    spec: str,
) -> list[Verdict]:
    """``validate_paths`` of a layer's trace module: read each file with ``read``, validate
    the readable ones together with ``validate``; a verdict per path, in order."""
    logs: list[L] = []
    verdicts: dict[int, Verdict] = {}
    for i, p in enumerate(paths):
        try:
            logs.append(read(p))
        except UnusableLog as exc:
            verdicts[i] = Verdict(str(p), "unusable", 0, 0, str(exc), spec=spec)
    ok = iter(validate(logs, timeout=timeout))
    return [verdicts[i] if i in verdicts else next(ok) for i in range(len(paths))]


def validate_file_with(
    read: Callable[[Path], L],
    validate: Callable[..., list[Verdict]],
    path: Path,
    spec: str,
    *,
    keep: Path | None,
    timeout: float | None,
    progress: Callable[[str], None] | None,
) -> Verdict:
    """``validate_file`` of a layer's trace module (``ostrom validate-trace FILE``)."""
    started = time.monotonic()
    try:
        log = read(path)
    except UnusableLog as exc:
        return Verdict(str(path), "unusable", 0, 0, str(exc), spec=spec)
    if progress is not None:
        progress(f"compiling {len(getattr(log, 'steps', ()))} steps of {path}")
    verdict = validate([log], keep=keep, timeout=timeout, progress=progress)[0]
    verdict.seconds = time.monotonic() - started
    return verdict


def format_verdict(v: Verdict) -> str:
    """The human report of one verdict."""
    if v.status == "accepted":
        return (
            f"ACCEPTED {v.name}: all {v.steps} steps are a behaviour of {v.spec} "
            f"({v.seconds:.1f} s)"
        )
    if v.status != "rejected" or v.failure is None:
        return f"{v.status.upper()} {v.name}: {v.message}"
    f = v.failure
    lines = [
        f"REJECTED {v.name}: step {f.step + 1} of {v.steps} (line {f.line}) is not allowed "
        f"by {v.spec}"
        + (f"; steps 1-{f.step} are allowed" if f.step else "")
        + f" ({v.seconds:.1f} s)",
        f"  command: {json.dumps(f.command, sort_keys=True)}",
        f"  result:  {f.result}",
        f"  expected spec step: {f.action}",
    ]
    if f.differences:
        lines.append("  state after the step, spec vs log:")
        for d in f.differences:
            where = f"{d['artifact']}." if d["artifact"] else ""
            name = FIELD_NAMES.get(d["field"], d["field"])
            lines.append(
                f"    {where}{name}: spec {json.dumps(d['spec'])}, log {json.dumps(d['log'])}"
            )
    else:
        lines.append(f"  why: {f.message}")
    return "\n".join(lines)
