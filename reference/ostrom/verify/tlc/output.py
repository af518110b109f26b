"""Parse TLC's ``-tool`` output into a result: outcome, counts, depth, counterexample trace.

TLC's human output changes between versions; the ``-tool`` mode wraps every message in
``@!@!@STARTMSG code:severity @!@!@`` ... ``@!@!@ENDMSG code @!@!@`` markers, which is stable
enough to parse. Messages nest (an "unexpected exception" message can contain an evaluation
message, even in the middle of a line), so the parser keeps a stack. Text outside any message is
SANY's parser output before model checking starts and ``Print``/``PrintT`` output after it.

The parser is incremental (:meth:`ToolOutputParser.feed` one line at a time) so the runner can
report progress while TLC is still running.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ostrom.verify.tlc.values import Opaque, Value, ValueParseError, parse_value

__all__ = [
    "Message",
    "TlcOutcome",
    "ToolOutputParser",
    "TraceState",
    "parse_state_body",
    "parse_tool_output",
]

# Message codes of TLC 2.15 (tlc2.output.EC / MP) that the classification relies on.
MSG_INVARIANT_VIOLATED = 2110  # "Invariant X is violated."
MSG_INVARIANT_VIOLATED_INITIAL = 2107  # "Invariant X is violated by the initial state:"
MSG_ACTION_PROPERTY_VIOLATED = 2111
MSG_TEMPORAL_VIOLATED = 2116  # "Temporal properties were violated."
MSG_DEADLOCK = 2114
MSG_STATE = 2217
MSG_STUTTERING = 2218
MSG_BACK_TO_STATE = 2122
MSG_PROGRESS = 2200
MSG_STATS = 2199  # "N states generated, M distinct states found, K states left on queue."
MSG_DEPTH = 2194
MSG_STARTING = 2185  # model checking starts: loose text after this is Print output
MSG_SANY_START = 2220
MSG_SANY_END = 2219
MSG_SUCCESS = 2193

_MARKER_RE = re.compile(r"@!@!@(?:STARTMSG (\d+):(\d+)|ENDMSG (\d+)) @!@!@")
_STATE_HEAD_RE = re.compile(
    r"^(\d+): <(.*?)(?: (line \d+, col \d+ to line \d+, col \d+ of module \w+))?>\s*$"
)
_BACK_RE = re.compile(r"^(\d+): Back to state(?::\s*<(.*?)(?: (line .* of module \w+))?>)?")
_STUTTER_RE = re.compile(r"^(\d+): Stuttering")
_INVARIANT_RE = re.compile(r"Invariant (\S+?) is violated")
_ACTION_PROP_RE = re.compile(r"Action property (\S+?) is violated")
_STATS_RE = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found")
_DEPTH_RE = re.compile(r"depth of the complete state graph search is (\d+)")
_CONJUNCT_RE = re.compile(r"^/\\ ([A-Za-z_][A-Za-z0-9_]*) = (.*)$")
_NOISE_RE = re.compile(r"^(Semantic errors:|\*\*\* Errors: \d+)$")
_SINGLE_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*) = (.*)$")

EXIT_OK = 0
EXIT_DEADLOCK = 11
EXIT_SAFETY = 12
EXIT_LIVENESS = 13
EXIT_PARSE = 150
EXIT_CONFIG = 151


@dataclass
class Message:
    """One ``-tool`` message: its code, severity and text lines (nested messages inlined)."""

    code: int
    severity: int
    lines: list[str] = field(default_factory=list)
    children: list[Message] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The message body as one string, trailing blank lines removed."""
        return "\n".join(self.lines).strip("\n")


@dataclass
class TraceState:
    """One state of a counterexample: 0-based index, the action that produced it, the values."""

    index: int
    action: str
    location: str | None
    values: dict[str, Value]


@dataclass
class TlcOutcome:
    """What one TLC run reported, independent of what the manifest expected.

    ``kind`` is one of ``pass``, ``invariant``, ``property`` (an action property),
    ``liveness`` (a temporal property), ``deadlock``, ``error``;
    ``got`` is the row label the runner compares with the manifest's ``expect``.
    """

    kind: str
    got: str
    distinct_states: int | None = None
    total_states: int | None = None
    depth: int | None = None
    trace: list[TraceState] = field(default_factory=list)
    loop: int | None = None
    loop_action: str | None = None
    stuttering: bool = False
    error_text: str | None = None


def parse_state_body(lines: list[str]) -> dict[str, Value]:
    """Parse the ``/\\ var = value`` lines of one state (values may span several lines).

    A value TLC prints in a form the value parser does not know is kept as :class:`Opaque`
    rather than failing the whole trace.
    """
    chunks: list[tuple[str, list[str]]] = []
    content = [ln for ln in lines if ln.strip()]
    if content and not content[0].startswith("/\\ "):
        m = _SINGLE_RE.match(content[0].strip())
        if m:  # a spec with a single variable: TLC prints "x = 0" without the conjunction
            chunks.append((m.group(1), [m.group(2), *content[1:]]))
            content = []
    for ln in content:
        m = _CONJUNCT_RE.match(ln)
        if m:
            chunks.append((m.group(1), [m.group(2)]))
        elif chunks:
            chunks[-1][1].append(ln)
    values: dict[str, Value] = {}
    for name, parts in chunks:
        text = "\n".join(parts)
        try:
            values[name] = parse_value(text)
        except ValueParseError:
            values[name] = Opaque(" ".join(text.split()))
    return values


class ToolOutputParser:
    """Incremental parser of ``-tool`` output; call :meth:`feed` per line, then :meth:`finish`."""

    def __init__(self, on_message: Callable[[Message], None] | None = None) -> None:
        self.messages: list[Message] = []
        self.loose_before_start: list[str] = []
        self.print_lines: list[str] = []
        self._stack: list[Message] = []
        self._started = False
        self._on_message = on_message

    def feed(self, line: str) -> None:
        """Consume one output line (without its newline)."""
        pos = 0
        for m in _MARKER_RE.finditer(line):
            self._text(line[pos : m.start()], partial=True)
            pos = m.end()
            if m.group(1) is not None:
                self._stack.append(Message(int(m.group(1)), int(m.group(2))))
            else:
                self._close()
        rest = line[pos:]
        if pos == 0:
            self._text(rest, partial=False)
        elif rest.strip():
            self._text(rest, partial=True)

    def _text(self, text: str, *, partial: bool) -> None:
        if partial and not text.strip():
            return
        if self._stack:
            self._stack[-1].lines.append(text)
        elif self._started:
            self.print_lines.append(text)
        else:
            self.loose_before_start.append(text)

    def _close(self) -> None:
        if not self._stack:
            return
        msg = self._stack.pop()
        if self._stack:
            parent = self._stack[-1]
            parent.children.append(msg)
            parent.lines.extend(msg.lines)
        else:
            self.messages.append(msg)
            if msg.code == MSG_STARTING:
                self._started = True
        if self._on_message is not None:
            self._on_message(msg)

    def finish(self, exit_code: int, properties: list[str] | None = None) -> TlcOutcome:
        """Classify the run; ``properties`` are the cfg's PROPERTY names (to name a liveness
        violation, since TLC 2.15 only says "Temporal properties were violated")."""
        while self._stack:
            self._close()
        outcome = self._classify(exit_code, properties or [])
        self._fill_counts(outcome)
        self._fill_trace(outcome)
        return outcome

    def _classify(self, exit_code: int, properties: list[str]) -> TlcOutcome:
        for msg in self.messages:
            if msg.code in (MSG_INVARIANT_VIOLATED, MSG_INVARIANT_VIOLATED_INITIAL):
                m = _INVARIANT_RE.search(msg.text)
                if m:
                    return TlcOutcome("invariant", m.group(1).rstrip("."))
            if msg.code == MSG_ACTION_PROPERTY_VIOLATED or (
                msg.severity == 1 and _ACTION_PROP_RE.search(msg.text)
            ):
                m = _ACTION_PROP_RE.search(msg.text)
                if m:
                    return TlcOutcome("property", m.group(1).rstrip("."))
            if msg.code == MSG_TEMPORAL_VIOLATED:
                name = properties[0] if len(properties) == 1 else "liveness"
                return TlcOutcome("liveness", name)
            if msg.code == MSG_DEADLOCK:
                return TlcOutcome("deadlock", "deadlock")
        if exit_code == EXIT_OK and not self._errors():
            return TlcOutcome("pass", "pass")
        text = self._error_text(exit_code)
        summary = [ln for ln in text.splitlines() if not _NOISE_RE.match(ln)][:3]
        first = " ".join(summary) if summary else f"TLC exited with code {exit_code}"
        return TlcOutcome("error", f"error: {first}", error_text=text)

    def _errors(self) -> list[Message]:
        return [m for m in self.messages if m.severity == 1]

    def _error_text(self, exit_code: int) -> str:
        """The most useful error text: SANY's report for parse errors, else TLC's messages."""
        parts: list[str] = []
        if exit_code == EXIT_PARSE or any(m.code == 3002 for m in self.messages):
            skip = ("Parsing file", "Semantic processing", "tla2sany.semantic.AbortException")
            sany = [
                ln.strip()
                for ln in self.loose_before_start
                if ln.strip() and not ln.startswith(skip) and not ln.startswith("*** Abort")
            ]
            if sany:
                return "\n".join(sany)
        for msg in self._errors():
            body = [ln.strip() for ln in msg.lines if ln.strip()]
            parts.extend(body)
        if not parts:
            parts = [ln.strip() for ln in self.loose_before_start if ln.strip()][-5:]
        return "\n".join(parts)

    def _fill_counts(self, outcome: TlcOutcome) -> None:
        for msg in self.messages:
            if msg.code == MSG_STATS:
                m = _STATS_RE.search(msg.text)
                if m:
                    outcome.total_states = int(m.group(1).replace(",", ""))
                    outcome.distinct_states = int(m.group(2).replace(",", ""))
            elif msg.code == MSG_DEPTH:
                m = _DEPTH_RE.search(msg.text)
                if m:
                    outcome.depth = int(m.group(1))

    def _fill_trace(self, outcome: TlcOutcome) -> None:
        for msg in self.messages:
            lines = [ln for ln in msg.lines]
            if msg.code == MSG_STATE and lines:
                head = _STATE_HEAD_RE.match(lines[0].strip())
                if head is None:
                    continue
                action, location = head.group(2), head.group(3)
                outcome.trace.append(
                    TraceState(
                        int(head.group(1)) - 1, action, location, parse_state_body(lines[1:])
                    )
                )
            elif msg.code == MSG_INVARIANT_VIOLATED_INITIAL and not outcome.trace:
                outcome.trace.append(
                    TraceState(0, "Initial predicate", None, parse_state_body(lines[1:]))
                )
            elif msg.code == MSG_BACK_TO_STATE and lines:
                back = _BACK_RE.match(lines[0].strip())
                if back:
                    outcome.loop = int(back.group(1)) - 1
                    outcome.loop_action = back.group(2)
            elif msg.code == MSG_STUTTERING:
                outcome.stuttering = True
        if outcome.stuttering and outcome.trace and outcome.loop is None:
            outcome.loop = outcome.trace[-1].index


def parse_tool_output(
    lines: list[str], exit_code: int, properties: list[str] | None = None
) -> tuple[TlcOutcome, list[str]]:
    """Parse complete ``-tool`` output; return the outcome and the Print/PrintT lines."""
    parser = ToolOutputParser()
    for line in lines:
        parser.feed(line)
    return parser.finish(exit_code, properties), parser.print_lines
