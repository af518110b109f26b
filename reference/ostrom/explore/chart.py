"""Message-sequence charts for the explorer: one lane per process, one arrow per message.

One model for every trace that has messages: a PBFTReplicaSystem counterexample (through
``verify/tlc/sequence.py``, which reconstructs sends, deliveries and losses from the
states), a counterexample of the Co-Forgetting paper's Algorithm 1 (its messages are
grow-only sets: a new element is a send), and a PBFT conformance vector (one replica's
view: the messages it receives and the ones it sends).  ``render_svg`` draws it: a
broadcast is *one* arrow with a head at each receiver (PREPARE and COMMIT go to every
replica at once), a lost message is dashed and ends in a cross, a Byzantine lane is
dotted.  Each arrow and note carries the step it belongs to (``data-step``), which the
page highlights as the reader steps through the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any

from ostrom.verify.tlc import pbft_chart, sequence
from ostrom.verify.tlc.values import TlaFunction, TlaRecord, TlaSet, Value, format_value, from_itf

__all__ = [
    "Chart",
    "Message",
    "Remark",
    "chart_from_alg1",
    "chart_from_pbft",
    "chart_from_pbft_vector",
    "is_alg1",
    "render_svg",
]


@dataclass(frozen=True)
class Message:
    """``label`` from lane ``sender`` to each lane of ``receivers``, at step ``step``."""

    step: int
    sender: int
    receivers: tuple[int, ...]
    label: str
    lost: bool = False
    note: str = ""
    #: "" for a message the trace sends, or what the spec leaves implicit: "derived" (a
    #: COMMIT that ComSenders counts but no state holds) or "eager" (an honest COMMIT sent
    #: inside the step that prepared it); drawn dotted and named on the arrow
    implicit: str = ""


@dataclass(frozen=True)
class Remark:
    """Something that happens on lane ``lane`` (or everywhere: None) at step ``step``."""

    step: int
    lane: int | None
    text: str


@dataclass
class Chart:
    """Lanes left to right, then the events in order (each a message or a remark)."""

    lanes: list[str]
    byzantine: set[int] = field(default_factory=set)
    events: list[Message | Remark] = field(default_factory=list)

    @property
    def messages(self) -> list[Message]:
        return [e for e in self.events if isinstance(e, Message)]


# --- PBFTReplicaSystem counterexamples (verify/tlc/sequence.py) ------------------------------


def chart_from_pbft(data: Mapping[str, Any], constants: Mapping[str, Value] | None = None) -> Chart:
    """The chart of a PBFT ITF trace (``SequenceError`` if it is not one): of
    spec/PBFTReplicaSystem.tla, or of spec/PBFT.tla with its model's ``constants``
    (verify/tlc/pbft_chart.py: its implicit COMMITs drawn and marked)."""
    if pbft_chart.is_pbft_spec(data):
        src = pbft_chart.chart_from_pbft_spec(data, constants or {})
    else:
        src = sequence.chart_from_itf(data)
    order = list(src.participants)  # the client first, then r0 ...
    lane = {p: i for i, p in enumerate(order)}
    out = Chart(
        [src.name(p) for p in order],
        {lane[p] for p in order if src.byzantine(p)},
    )
    for step in src.steps:
        for e in step.events:
            if isinstance(e, sequence.Arrow):
                implicit = {pbft_chart.DERIVED: "derived", pbft_chart.EAGER: "eager"}
                out.events.append(
                    Message(
                        step.index,
                        lane[e.sender],
                        tuple(lane[r] for r in e.receivers),
                        ", ".join(e.labels),
                        e.lost,
                        e.note,
                        implicit.get(e.note, ""),
                    )
                )
            else:
                out.events.append(
                    Remark(step.index, None if e.actor is None else lane[e.actor], e.text)
                )
    return out


# --- Algorithm 1 (spec/CoForgettingAlg1.tla) -------------------------------------------------

#: message variable -> (wire name, the tuple field that is the sender, or None: the coordinator)
_ALG1_MESSAGES = {
    "props": ("PROPOSE", None),
    "prepares": ("PREPARE", 1),
    "commits": ("COMMIT", 1),
    "vcs": ("VIEW-CHANGE", 0),
}


def is_alg1(data: Mapping[str, Any]) -> bool:
    states = data.get("states")
    if not isinstance(states, list) or not states or not isinstance(states[0], dict):
        return False
    return set(_ALG1_MESSAGES) <= set(states[0])


def _elements(value: Value) -> tuple[Value, ...]:
    return value.elems if isinstance(value, TlaSet) else ()


def _agents(value: Value) -> list[Value]:
    if isinstance(value, TlaFunction):
        return [k for k, _ in value.pairs]
    if isinstance(value, TlaRecord):
        return [k for k, _ in value.fields]
    if isinstance(value, tuple):
        return list(range(1, len(value) + 1))
    return []


def _lookup(value: Value, key: Value) -> Value | None:
    if isinstance(value, TlaFunction):
        return dict(value.pairs).get(key)
    if isinstance(value, TlaRecord):
        return value.get(str(key))
    return None


def chart_from_alg1(data: Mapping[str, Any], constants: Mapping[str, Value]) -> Chart:
    """The chart of an Algorithm 1 counterexample: every new element of a message set is a
    send (PROPOSE from the view's coordinator, ``Coord`` or ``Coord1``, to its recipient;
    the votes and VIEW-CHANGEs to every other agent), every change of ``decided`` a
    remark.  ``constants`` are the model's (its cfg): the coordinators, and ``Byz`` and
    ``Crashed``, whose lanes are marked."""
    states = [{k: from_itf(v) for k, v in s.items() if k != "#meta"} for s in data["states"]]
    agents = _agents(states[0]["view"])
    coords = [constants.get("Coord"), constants.get("Coord1")]
    faulty = set(_elements(constants.get("Byz", TlaSet(()))))
    faulty |= set(_elements(constants.get("Crashed", TlaSet(()))))
    lane = {a: i for i, a in enumerate(agents)}
    chart = Chart([format_value(a).strip('"') for a in agents])
    chart.byzantine = {lane[a] for a in agents if a in faulty}
    for i in range(1, len(states)):
        old, new = states[i - 1], states[i]
        for var, (wire, who) in _ALG1_MESSAGES.items():
            for m in _elements(new[var]):
                if m in _elements(old[var]) or not isinstance(m, tuple) or len(m) < 2:
                    continue
                if who is None:  # <<view, recipient, value>>, from the coordinator of view
                    view = m[0] if isinstance(m[0], int) and m[0] in (0, 1) else 0
                    sender = coords[view]
                    receivers: tuple[int, ...] = (lane[m[1]],) if m[1] in lane else ()
                    label = f"{wire} v{m[0]} {format_value(m[-1])}"
                else:
                    sender = m[who]
                    receivers = tuple(lane[a] for a in agents if a != sender)
                    rest = [format_value(x) for j, x in enumerate(m) if j != who]
                    label = f"{wire} {' '.join(rest)}"
                if sender in lane:
                    chart.events.append(Message(i, lane[sender], receivers, label))
        for a in agents:
            before, after = _lookup(old["decided"], a), _lookup(new["decided"], a)
            if before != after and after is not None:
                chart.events.append(Remark(i, lane[a], f"decides {format_value(after)}"))
    return chart


# --- PBFT conformance vectors (one replica's view) ---------------------------------------------


def chart_from_pbft_vector(doc: Mapping[str, Any]) -> Chart:
    """A PBFT vector's steps as a chart: the replica under test (``setup.id``) in its lane,
    every message it is given arriving from its signer, every message it sends (its
    observation's ``send`` events) leaving it, timeouts and executions as remarks."""
    setup = doc.get("setup", {})
    n = int(setup.get("n", 4))
    me = int(setup.get("id", 0))
    clients = [str(c) for c in setup.get("clients", [])]
    lanes = [f"r{i}" for i in range(n)] + clients
    chart = Chart(lanes)
    index = {name: i for i, name in enumerate(lanes)}
    for k, step in enumerate(doc.get("steps", []), start=1):
        cmd = step.get("command", {})
        if cmd.get("op") == "message":
            msg = cmd.get("message", {})
            inner = msg.get("message", msg) if isinstance(msg, dict) else {}
            sender = str(msg.get("sender", "?")) if isinstance(msg, dict) else "?"
            label = str(inner.get("type", "?")) if isinstance(inner, dict) else "?"
            if sender in index:
                chart.events.append(Message(k, index[sender], (me,), _pbft_label(inner)))
            else:
                chart.events.append(Remark(k, me, f"{label} from {sender}"))
        else:
            chart.events.append(Remark(k, me, str(cmd.get("op", "?"))))
        sends: dict[str, list[int]] = {}  # one message sent to several: one broadcast
        for ev in step.get("expect", {}).get("events", []):
            if not isinstance(ev, dict):
                continue
            if ev.get("event") == "send":
                label = _pbft_label(ev.get("message", {}))
                dest = str(ev.get("dest"))
                if dest in index:
                    sends.setdefault(label, []).append(index[dest])
            elif "event" in ev:
                extra = f" {ev['seq']}" if "seq" in ev else ""
                chart.events.append(Remark(k, me, f"{ev['event']}{extra}"))
        for label, receivers in sends.items():
            chart.events.append(Message(k, me, tuple(receivers), label))
    return chart


def _pbft_label(m: Any) -> str:
    if isinstance(m, dict) and isinstance(m.get("message"), dict):
        m = m["message"]
    if not isinstance(m, dict):
        return "?"
    parts = [str(m.get("type", "?")).upper()]
    for key in ("view", "seq"):
        if key in m:
            parts.append(f"{key[0]}{m[key]}")
    return " ".join(parts)


# --- SVG ------------------------------------------------------------------------------------------

#: The chart's own style, so that the SVG reads the same as a file or inside a page (the
#: explorer's stylesheet adds only the highlighting of the current step).
_STYLE = (
    "svg.msc{background:#fff}"
    "svg.msc text{font:11px monospace;fill:#1d1f21}"
    "svg.msc text.lane-name{font-weight:700;font-size:12px}"
    "svg.msc text.lane-name.byz{fill:#b3261e}"
    "svg.msc line.lane{stroke:#9aa0a6;stroke-width:1.5}"
    "svg.msc g.arrow line{stroke:#3367d6;stroke-width:1.5}"
    "svg.msc g.arrow.lost line{stroke:#888}"
    "svg.msc path.cross{stroke:#b3261e;stroke-width:2}"
    "svg.msc marker path,svg.msc circle.sender{fill:#3367d6}"
    "svg.msc .row-step{fill:#6a6f73}"
    "svg.msc g.remark text{fill:#444;font-style:italic}"
)

_LANE_W = 120
_ROW_H = 26
_TOP = 48
_LEFT = 56


def render_svg(chart: Chart) -> str:
    """The chart as SVG: lanes, then one row per event (its step number on the left)."""
    width = _LEFT + _LANE_W * max(1, len(chart.lanes)) + 260
    height = _TOP + _ROW_H * (len(chart.events) + 1)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="msc" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="message-sequence chart, {len(chart.lanes)} lanes, '
        f'{len(chart.messages)} messages">',
        f"<style>{_STYLE}</style>",
        "<defs>"
        '<marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="9" '
        'markerHeight="9" markerUnits="userSpaceOnUse" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z"/></marker>'
        "</defs>",
    ]

    def x(lane: int) -> int:
        return _LEFT + _LANE_W * lane + _LANE_W // 2

    bottom = height - 8
    # the lane names, in a group the explorer keeps in view while the chart scrolls
    head = [f'<g class="lane-names"><rect x="0" y="0" width="{width}" height="28" fill="#fff"/>']
    for i, name in enumerate(chart.lanes):
        byz = i in chart.byzantine
        label = escape(name) + (" (Byzantine)" if byz else "")
        head.append(
            f'<text class="lane-name{" byz" if byz else ""}" x="{x(i)}" y="20" '
            f'text-anchor="middle">{label}</text>'
        )
    head.append("</g>")
    for i in range(len(chart.lanes)):
        byz = i in chart.byzantine
        dash = ' stroke-dasharray="2,4"' if byz else ""
        out.append(
            f'<line class="lane{" byz" if byz else ""}" x1="{x(i)}" y1="{_TOP - 16}" '
            f'x2="{x(i)}" y2="{bottom}"{dash}/>'
        )
    for row, e in enumerate(chart.events):
        y = _TOP + _ROW_H * row
        out.append(f'<text class="row-step" data-step="{e.step}" x="8" y="{y + 4}">{e.step}</text>')
        if isinstance(e, Message):
            out.append(_arrow(e, y, x))
        else:
            cx = x(e.lane) if e.lane is not None else _LEFT + 4
            anchor = "middle" if e.lane is not None else "start"
            out.append(
                f'<g class="remark" data-step="{e.step}"><text x="{cx}" y="{y + 4}" '
                f'text-anchor="{anchor}">{escape(e.text[:60])}</text></g>'
            )
    out += head  # last: drawn over the rows it scrolls over
    out.append("</svg>")
    return "\n".join(out)


def _arrow(m: Message, y: int, x: Any) -> str:
    """One message: a line from the sender to the farthest receiver on each side, a head
    at every receiver (a broadcast is one arrow), the label above it."""
    x0 = x(m.sender)
    cls = "arrow lost" if m.lost else f"arrow {m.implicit}" if m.implicit else "arrow"
    parts = [
        f'<g class="{cls}" data-step="{m.step}" data-from="{m.sender}" '
        f'data-to="{" ".join(map(str, m.receivers))}">'
    ]
    dash = ' stroke-dasharray="5,4"' if m.lost else ' stroke-dasharray="2,3"' if m.implicit else ""
    parts.append(f'<circle class="sender" cx="{x0}" cy="{y}" r="3"/>')  # where it leaves
    for r in m.receivers:
        x1 = x(r)
        if x1 == x0:
            continue
        parts.append(f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}"{dash} marker-end="url(#head)"/>')
        if m.lost:
            parts.append(
                f'<path class="cross" d="M{x1 - 4},{y - 4} L{x1 + 4},{y + 4} '
                f'M{x1 - 4},{y + 4} L{x1 + 4},{y - 4}"/>'
            )
    xs = [x(r) for r in m.receivers] + [x0]
    mid = (min(xs) + max(xs)) // 2
    text = m.label + (f" ({m.note})" if m.note else "")
    shown = m.label + f" ({m.implicit})" if m.implicit else text
    parts.append(f'<text x="{mid}" y="{y - 5}" text-anchor="middle">{escape(shown[:70])}</text>')
    parts.append(f"<title>{escape(text)}</title></g>")
    return "".join(parts)
