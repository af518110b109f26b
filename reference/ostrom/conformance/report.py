"""What an ``ostrom conform`` run found: one ``VectorResult`` per vector, the ``Report`` of
the whole run and its ``--json`` form (``REPORT_FORMAT``).

Shared by the runner that fills it and the outputs that render it (the text report, the
JSON report, ``junit``), so that neither output depends on running a driver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from ostrom.conformance import DRIVER_PROTOCOL, FLOAT_TOLERANCE
from ostrom.conformance.vectors import Difference, Suite, Vector

__all__ = [
    "FAILING",
    "REPORT_FORMAT",
    "Report",
    "Status",
    "VectorResult",
    "display_path",
    "files_read",
]

#: ``"format"`` of the ``--json`` report.
REPORT_FORMAT: Final = "ostrom-conform-report/1"
Status = Literal["passed", "failed", "crashed", "timeout", "malformed", "not_implemented"]
#: The statuses that fail a run (all but ``passed`` and ``not_implemented``).
FAILING: Final = frozenset({"failed", "crashed", "timeout", "malformed"})


def files_read(suite: Suite) -> int:
    return len(suite.vectors) + len(suite.traces)


def short(value: Any, limit: int = 120) -> str:
    """``value`` as one line of JSON, cut at ``limit`` characters."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def display_path(path: Path) -> str:
    """``path`` relative to the current directory when it is below it, else absolute."""
    absolute = path.resolve()
    try:
        return absolute.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(absolute)


@dataclass
class VectorResult:
    """What happened to one vector."""

    vector: Vector
    status: Status
    steps_run: int = 0
    seconds: float = 0.0
    step: int | None = None  # index of the first diverging step (None: at reset, or passed)
    command: Any = None  # the diverging step's command (any JSON value)
    message: str = ""
    difference: Difference | None = None  # the first one (result, events, state)
    diff: str = ""
    stderr: str = ""

    @property
    def failing(self) -> bool:
        return self.status in FAILING

    def headline(self) -> str:
        """One line: what failed, where."""
        where = (
            "at reset"
            if self.step is None
            else f"at step {self.step} of {len(self.vector.steps)}: {short(self.command, 200)}"
        )
        return f"{self.status} {where}"

    def to_json(self) -> dict[str, Any]:
        v = self.vector
        failure: dict[str, Any] | None = None
        if self.failing:
            d = self.difference
            failure = {
                "step": self.step,
                "command": self.command,
                "message": self.message,
                "path": d.path if d else None,
                "expected": d.expected if d else None,
                "got": d.got if d else None,
                "diff": self.diff,
                "stderr": self.stderr,
            }
        return {
            "id": v.id,
            "layer": v.layer,
            "action": v.action,
            "properties": list(v.properties),
            "file": v.rel,
            "status": self.status,
            "steps": len(v.steps),
            "steps_run": self.steps_run,
            "seconds": round(self.seconds, 4),
            "failure": failure,
        }


@dataclass
class Report:
    """The whole run."""

    suite: Suite
    command: list[str]
    implementation: str
    driver_layers: tuple[str, ...]
    selected: int
    results: list[VectorResult] = field(default_factory=list)
    stopped_early: bool = False
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return sum(r.status != "not_implemented" for r in self.results)

    @property
    def ok(self) -> bool:
        return self.ran > 0 and not any(r.failing for r in self.results)

    def counts(self, key: Callable[[VectorResult], Iterable[str]]) -> dict[str, dict[str, int]]:
        """``{group: {passed, failed, not_implemented}}``; a vector counts in each group."""
        out: dict[str, dict[str, int]] = {}
        for r in self.results:
            for group in key(r):
                c = out.setdefault(group, {"passed": 0, "failed": 0, "not_implemented": 0})
                c["failed" if r.failing else r.status] += 1
        return out

    def by_layer(self) -> dict[str, dict[str, int]]:
        return self.counts(lambda r: [r.vector.layer])

    def by_action(self) -> dict[str, dict[str, int]]:
        return self.counts(lambda r: [f"{r.vector.layer}/{r.vector.action}"])

    def by_property(self) -> dict[str, dict[str, int]]:
        return dict(sorted(self.counts(lambda r: r.vector.properties).items()))

    def totals(self) -> dict[str, int]:
        statuses: dict[str, int] = {
            s: 0 for s in ("passed", "failed", "crashed", "timeout", "malformed", "not_implemented")
        }
        for r in self.results:
            statuses[r.status] += 1
        return statuses

    def to_json(self) -> dict[str, Any]:
        return {
            "format": REPORT_FORMAT,
            "ok": self.ok,
            "command": self.command,
            "protocol": DRIVER_PROTOCOL,
            "implementation": self.implementation,
            "driver_layers": list(self.driver_layers),
            "suite": {
                "dir": str(self.suite.root),
                "files_listed": len(self.suite.files),
                "files_read": files_read(self.suite),
                "vector_files": len(self.suite.vectors),
                "trace_files": len(self.suite.traces),
                "selected": self.selected,
                "ran": self.ran,
                "stopped_early": self.stopped_early,
            },
            "float_tolerance": FLOAT_TOLERANCE,
            "seconds": round(self.seconds, 3),
            "totals": self.totals(),
            "summary": {
                "layers": self.by_layer(),
                "actions": self.by_action(),
                "properties": self.by_property(),
            },
            "warnings": self.warnings,
            "vectors": [r.to_json() for r in self.results],
        }
