"""What the explorer shows, read from each kind of file it opens.

Four kinds, told apart by their content (``load``):

* an ITF counterexample of any spec (``ostrom check`` writes them): every state, the
  action TLC names for each step, the variables that changed;
* a conformance vector (``ostrom-vector/1``): each step's command and the state the
  reference expects after it;
* an ``ostrom-trace/1`` log (what ``validate-trace`` reads), optionally with its verdict
  (``ostrom validate-trace --json``): the step it was rejected at is marked, with why;
* a verdict file alone: its log is read from the path the verdict names.

Each becomes a ``Page``: the steps (state, changes, action), the action definitions it
refers to (the TLA+ text and the Python method the spec cites), the lifecycle states the
artifacts are in at each step (for the state diagram), a message-sequence chart for the
traces with messages, and for a violation the property it breaks, in words, from the
property registry (spec/properties.toml).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ostrom.explore import chart as msc
from ostrom.verify import registry
from ostrom.verify.tlc import sequence
from ostrom.verify.tlc.bindings import bind_trace
from ostrom.verify.tlc.constants import model_constants
from ostrom.verify.tlc.definitions import definitions
from ostrom.verify.tlc.explain import describe_changes
from ostrom.verify.tlc.itf import ItfError, read_itf
from ostrom.verify.tlc.pbft_chart import is_pbft_spec
from ostrom.verify.tlc.probe import ProbeError
from ostrom.verify.tlc.values import (
    TlaFunction,
    TlaRecord,
    Value,
    format_pretty,
    format_value,
    from_itf,
)

__all__ = ["ExploreError", "Page", "Step", "load"]


class ExploreError(ValueError):
    """The file is none of the kinds the explorer reads, or is malformed."""


@dataclass
class Step:
    """One step: what happened (``action``), and the state after it."""

    index: int
    action: str
    detail: str = ""  # the command, or the changes in one line
    state: dict[str, str] = field(default_factory=dict)  # variable -> text
    changed: list[str] = field(default_factory=list)  # variables that changed
    changes: list[str] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)  # artifact -> lifecycle state
    note: str = ""
    failed: bool = False
    args: str = ""  # the values the action was taken with (--params), TLA+ text


@dataclass
class Page:
    title: str
    kind: str  # "itf" | "vector" | "log"
    source: str
    steps: list[Step]
    subtitle: str = ""
    loop: int | None = None
    violation: dict[str, str] | None = None
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict)
    chart: msc.Chart | None = None
    lifecycle: bool = False  # show the state diagram

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "subtitle": self.subtitle,
            "kind": self.kind,
            "source": self.source,
            "loop": self.loop,
            "violation": self.violation,
            "definitions": self.definitions,
            "lifecycle": self.lifecycle,
            "messages": len(self.chart.messages) if self.chart else 0,
            "steps": [
                {
                    "index": s.index,
                    "action": s.action,
                    "detail": s.detail,
                    "state": s.state,
                    "changed": s.changed,
                    "changes": s.changes,
                    "states": s.states,
                    "note": s.note,
                    "failed": s.failed,
                    "args": s.args,
                }
                for s in self.steps
            ],
        }


def load(path: Path, verdict: Path | None = None, *, params: bool = False) -> Page:
    """The page of ``path`` (and of its ``verdict``, for a log); with ``params`` each step
    of an ITF trace names the values its action was taken with (TLC finds them:
    verify/tlc/bindings.py)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ExploreError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b" or path.name.endswith((".itf.json", ".itf.json.gz")):
        return _from_itf(path, params)
    text = raw.decode("utf-8", errors="replace")
    first = text.lstrip()[:1]
    if first == "{" and "\n{" not in text.strip():
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            raise ExploreError(f"{path} is not JSON") from None
        if isinstance(doc, dict) and doc.get("format") == "ostrom-vector/1":
            return _from_vector(path, doc)
        if isinstance(doc, dict) and doc.get("format") == "ostrom-validate-trace/1":
            log = Path(str(doc.get("file", "")))
            if not log.is_absolute():
                log = path.parent / log
            return _from_log(log, doc)
        if isinstance(doc, dict) and isinstance(doc.get("states"), list):
            return _from_itf(path, params)
    if first == "{":
        verdict_doc = _read_verdict(verdict) if verdict is not None else None
        return _from_log(path, verdict_doc)
    raise ExploreError(
        f"{path}: not an ITF trace, a conformance vector, an ostrom-trace/1 log or a "
        "validate-trace verdict"
    )


# --- ITF ----------------------------------------------------------------------------------------


def _from_itf(path: Path, params: bool = False) -> Page:
    try:
        data = read_itf(path)
    except ItfError as exc:
        raise ExploreError(str(exc)) from None
    bound: dict[int, list[tuple[str, ...]]] = {}
    if params:
        try:
            bound = bind_trace(data)
        except ProbeError as exc:
            raise ExploreError(f"--params: {exc}") from None
    meta = data.get("#meta") if isinstance(data.get("#meta"), dict) else {}
    assert isinstance(meta, dict)
    try:
        decoded = [{k: from_itf(v) for k, v in s.items() if k != "#meta"} for s in data["states"]]
    except (ValueError, RecursionError) as exc:
        raise ExploreError(f"{path}: {exc}") from None
    steps: list[Step] = []
    previous: dict[str, Value] = {}
    for i, (raw, values) in enumerate(zip(data["states"], decoded, strict=True)):
        smeta = raw.get("#meta") if isinstance(raw.get("#meta"), dict) else {}
        action = str(smeta.get("action", "?")) if isinstance(smeta, dict) else "?"
        changes: list[str] = []
        for name in list(previous) + [k for k in values if k not in previous]:
            if i > 0:
                changes += describe_changes(name, previous.get(name), values.get(name), None)
        changed = [k for k in values if i > 0 and previous.get(k) != values.get(k)]
        steps.append(
            Step(
                index=i,
                action=action,
                detail="; ".join(changes)[:300],
                state={k: format_pretty(v) for k, v in values.items()},
                changed=changed,
                changes=changes,
                states=_artifact_states(values),
                args=", ".join(bound[i][0]) if bound.get(i) else "",
            )
        )
        previous = values
    model = str(meta.get("model", ""))
    expected = str(meta.get("expected", meta.get("outcome", "")))
    page = Page(
        title=f"{model or path.name}: {expected}" if expected else (model or path.name),
        kind="itf",
        source=str(path),
        steps=steps,
        subtitle=f"{len(steps)} states"
        + (f" · witness {meta['witness']}" if meta.get("witness") else ""),
        loop=data.get("loop") if isinstance(data.get("loop"), int) else None,
        lifecycle=any(s.states for s in steps),
    )
    if steps:
        steps[-1].failed = bool(meta.get("witness") is None and expected and expected != "pass")
    page.violation = _violation(expected, witness=bool(meta.get("witness")))
    page.definitions = definitions({s.action for s in steps}, str(meta.get("module", "")))
    try:
        if msc.is_alg1(data):
            page.chart = msc.chart_from_alg1(data, model_constants(model))
        elif ("rs" in data["states"][0] and "chan" in data["states"][0]) or is_pbft_spec(data):
            page.chart = msc.chart_from_pbft(data, model_constants(model))
            if is_pbft_spec(data) and not params:
                _actors_as_arguments(page)
    except (sequence.SequenceError, KeyError, TypeError, ValueError) as exc:
        page.subtitle += f" · no sequence chart: {str(exc)[:120]}"
    return page


def _actors_as_arguments(page: Page) -> None:
    """A spec/PBFT.tla action of one parameter (``Prepare(i)``, ``ByzPrepare(b)``) takes it
    from the replica that acts, which the chart knows without running TLC (``--params``
    does): the sender of the step's first message, or the replica its first remark is
    about (``AcceptNewView`` sends nothing)."""
    assert page.chart is not None
    first: dict[int, int] = {}
    for e in page.chart.events:
        lane = e.sender if isinstance(e, msc.Message) else e.lane
        if lane is not None:
            first.setdefault(e.step, lane)
    for step in page.steps:
        tla = page.definitions.get(step.action, {}).get("tla") or {}
        formals = str(tla.get("params", ""))
        if step.args or not formals or "," in formals or step.index not in first:
            continue
        name = page.chart.lanes[first[step.index]]
        if name.startswith("r") and name[1:].isdigit():
            step.args = name[1:]


def _artifact_states(values: Mapping[str, Value]) -> dict[str, str]:
    """artifact -> lifecycle state, for a Lifecycle.tla state (``art[x].st``)."""
    art = values.get("art")
    out: dict[str, str] = {}
    # a function with string keys is a record to TLC (and so in ITF)
    pairs = (
        art.pairs
        if isinstance(art, TlaFunction)
        else art.fields
        if isinstance(art, TlaRecord)
        else ()
    )
    for key, rec in pairs:
        if isinstance(rec, TlaRecord) and isinstance(rec.get("st"), str):
            st = str(rec.get("st"))
            if st != "none":
                out[format_value(key).strip('"')] = st
    return out


# --- the property registry and the spec's definitions ------------------------------------------


def _violation(name: str, *, witness: bool) -> dict[str, str] | None:
    """The registry's words for a violated invariant or property (None for a pass)."""
    if not name or name in ("pass",) or name.startswith("error"):
        return None
    if witness:
        return {
            "name": name,
            "property": "",
            "statement": f"a reachability witness: TLC reached a state where {name} is "
            "false, so the behaviour it names is reachable (the model's checks are not "
            "vacuous)",
        }
    try:
        props = registry.load()
    except registry.RegistryError:
        props = []
    for p in props:
        if name in p.tla:
            return {"name": name, "property": p.id, "statement": p.statement}
    return {"name": name, "property": "", "statement": f"{name} is violated"}


# --- vectors and logs -------------------------------------------------------------------------


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """``value``'s leaves by JSON path (``artifacts.x.state``), for diffs."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out |= _flat(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    return {prefix: value}


def _json_changes(old: Any, new: Any) -> list[str]:
    a, b = _flat(old), _flat(new)
    out = []
    for key in list(a) + [k for k in b if k not in a]:
        if a.get(key, "(unset)") != b.get(key, "(unset)"):
            before = json.dumps(a[key]) if key in a else "(unset)"
            after = json.dumps(b[key]) if key in b else "(unset)"
            out.append(f"{key}: {before[:60]} -> {after[:60]}")
    return out


def _lifecycle_states(state: Any) -> dict[str, str]:
    arts = state.get("artifacts") if isinstance(state, dict) else None
    if not isinstance(arts, dict):
        return {}
    return {
        str(x): str(a["state"])
        for x, a in arts.items()
        if isinstance(a, dict) and isinstance(a.get("state"), str)
    }


def _command_text(cmd: Any) -> str:
    if not isinstance(cmd, dict):
        return json.dumps(cmd)[:200]
    shown = {k: v for k, v in cmd.items() if k not in ("op", "salt", "commitment", "signature")}
    return ", ".join(f"{k}={json.dumps(v)[:40]}" for k, v in shown.items())


def _json_steps(commands: list[Any], states: list[Any]) -> list[Step]:
    from ostrom.protocol.lifecycle import COMMAND_ACTIONS

    steps = []
    previous: Any = {}
    for i, (cmd, state) in enumerate(zip(commands, states, strict=True)):
        op = cmd.get("op", "?") if isinstance(cmd, dict) else "?"
        actions = COMMAND_ACTIONS.get(str(op), ())
        action = actions[0] if len(actions) == 1 else str(op)
        top = state if isinstance(state, dict) else {"state": state}
        prev_top = previous if isinstance(previous, dict) else {}
        steps.append(
            Step(
                index=i + 1,
                action=action,
                detail=f"{op}({_command_text(cmd)})",
                state={k: json.dumps(v, indent=1, sort_keys=True) for k, v in top.items()},
                changed=[k for k in top if prev_top.get(k) != top.get(k)],
                changes=_json_changes(previous, state),
                states=_lifecycle_states(state),
            )
        )
        previous = state
    return steps


def _from_vector(path: Path, doc: Mapping[str, Any]) -> Page:
    raw_steps = doc.get("steps")
    if not isinstance(raw_steps, list) or not all(isinstance(s, dict) for s in raw_steps):
        raise ExploreError(f"{path}: a vector's steps are a list of objects")
    commands = [s.get("command") for s in raw_steps]
    states = [(s.get("expect") or {}).get("state") for s in raw_steps]
    steps = _json_steps(commands, states)
    for step, raw in zip(steps, raw_steps, strict=True):
        result = (raw.get("expect") or {}).get("result")
        if result not in (None, "ok"):
            step.note = f"refused: {result}"
        if isinstance(raw.get("note"), str):
            step.note = (step.note + " · " if step.note else "") + raw["note"]
    layer = str(doc.get("layer", ""))
    page = Page(
        title=str(doc.get("id", path.name)),
        kind="vector",
        source=str(path),
        steps=steps,
        subtitle=f"{layer} vector · {doc.get('description', '')}",
        lifecycle=layer in ("lifecycle", "community"),
    )
    page.definitions = definitions({s.action for s in steps})
    if layer == "pbft":
        page.chart = msc.chart_from_pbft_vector(doc)
    return page


def _read_verdict(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ExploreError(f"{path}: not a verdict file: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != "ostrom-validate-trace/1":
        raise ExploreError(f"{path}: not an ostrom-validate-trace/1 verdict (--json)")
    return doc


def _from_log(path: Path, verdict: Mapping[str, Any] | None) -> Page:
    try:
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    except (OSError, ValueError, RecursionError) as exc:
        raise ExploreError(f"{path}: not an ostrom-trace/1 log: {exc}") from None
    if not lines or not isinstance(lines[0], dict) or lines[0].get("format") != "ostrom-trace/1":
        raise ExploreError(f"{path}: not an ostrom-trace/1 log (no header line)")
    body = [x for x in lines[1:] if isinstance(x, dict)]
    steps = _json_steps([x.get("command") for x in body], [x.get("state") for x in body])
    for step, raw in zip(steps, body, strict=True):
        if raw.get("result") not in (None, "ok"):
            step.note = f"refused: {raw.get('result')}"
    layer = str(lines[0].get("layer", ""))
    page = Page(
        title=path.name,
        kind="log",
        source=str(path),
        steps=steps,
        subtitle=f"{layer} log · {len(steps)} steps",
        lifecycle=layer in ("lifecycle", "community"),
    )
    page.definitions = definitions({s.action for s in steps})
    if verdict is not None:
        status = str(verdict.get("status", ""))
        page.subtitle += f" · validate-trace: {status.upper()}"
        failure = verdict.get("failure")
        if isinstance(failure, dict) and isinstance(failure.get("step"), int):
            k = failure["step"]
            if 0 <= k < len(steps):
                steps[k].failed = True
                steps[k].note = str(failure.get("message", ""))
            page.violation = {
                "name": f"step {k + 1} is not a step of {verdict.get('spec', 'the spec')}",
                "property": str(failure.get("kind", "")),
                "statement": str(failure.get("message", "")),
            }
    return page
