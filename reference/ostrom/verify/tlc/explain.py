"""Render a saved ITF counterexample as one row per step, showing only what changed.

A TLC trace prints every variable of every state; in a model with a dozen variables the one
that moved is hard to spot. Here each step shows its action and the changed variables as
``old -> new``; for records and functions only the changed fields/keys (``votes[a2]: 0 -> 1``),
for sets the elements added and removed. Lassos get a marker at the state the loop returns to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ostrom.verify.tlc.values import TlaFunction, TlaRecord, TlaSet, Value, format_value, from_itf

__all__ = ["ExplainError", "describe_changes", "explain_itf"]

_MAX_ARG = 40  # characters of an argument in the step table (--step shows it whole)
_MAX_VALUE = 80


def _short(value: Value | None, limit: int | None = _MAX_VALUE) -> str:
    if value is None:
        return "(unset)"
    text = format_value(value)
    if limit is not None and len(text) > limit:
        return text[: limit - 1] + "…"
    return text


def describe_changes(
    path: str, old: Value | None, new: Value | None, limit: int | None = _MAX_VALUE
) -> list[str]:
    """Compact descriptions of how ``old`` became ``new``, descending into records/functions
    (each value cut at ``limit`` characters; None: whole, as the explorer shows them)."""
    if old == new:
        return []
    if isinstance(old, TlaRecord) and isinstance(new, TlaRecord):
        out: list[str] = []
        keys = [k for k, _ in old.fields] + [k for k, _ in new.fields if old.get(k) is None]
        for field in keys:
            out += describe_changes(f"{path}.{field}", old.get(field), new.get(field), limit)
        return out
    if isinstance(old, TlaFunction) and isinstance(new, TlaFunction):
        old_map = dict(old.pairs)
        new_map = dict(new.pairs)
        fkeys = list(old_map) + [k for k in new_map if k not in old_map]
        out = []
        for fkey in fkeys:
            out += describe_changes(
                f"{path}[{format_value(fkey)}]", old_map.get(fkey), new_map.get(fkey), limit
            )
        return out
    if isinstance(old, TlaSet) and isinstance(new, TlaSet):
        added = [e for e in new.elems if e not in old.elems]
        removed = [e for e in old.elems if e not in new.elems]
        parts = []
        if added:
            parts.append("+" + _short(TlaSet(tuple(added)), limit))
        if removed:
            parts.append("-" + _short(TlaSet(tuple(removed)), limit))
        return [f"{path}: {' '.join(parts)}"]
    return [f"{path}: {_short(old, limit)} -> {_short(new, limit)}"]


class ExplainError(ValueError):
    """A --step or --var the trace does not have."""


def _matches(path: str, var: str | None) -> bool:
    """Whether a change path (``art[x1].commits``) is of variable ``var``, or of a field or
    key path under it (``art[x1]``)."""
    return var is None or path == var or path.startswith((var + ".", var + "["))


def explain_itf(
    data: dict[str, Any],
    *,
    full: bool = False,
    step: int | None = None,
    var: str | None = None,
    signatures: Mapping[str, str] | None = None,
    bindings: Mapping[int, Sequence[tuple[str, ...]]] | None = None,
) -> list[str]:
    """The lines ``ostrom explain`` prints for an ITF document (already shape-checked).

    ``var`` keeps the changes of one variable (or of one field or key path under it, as
    ``art[x1]``); ``step`` prints one step whole: the action, then every changed
    variable before and after in full.  ``signatures`` (action -> its formal parameters,
    from the spec) names each step's action with them: ``CommitVote(a, x, v)``, whose
    values the changes show (``art.x1.commits: +{<<"a1", 1, "accept">>}``); ``bindings``
    (step index -> the argument values that take it, verify/tlc/bindings.py) names it with
    its actual arguments instead: ``CommitVote("a1", "x1", "accept")``."""
    sig = dict(signatures or {})
    bound = dict(bindings or {})
    index_of = {id(s): i for i, s in enumerate(data["states"])}

    def _action(state: dict[str, Any], limit: int | None = _MAX_ARG) -> str:
        name = _action_name(state)
        args = bound.get(index_of.get(id(state), -1))
        if args:
            more = f" (or {len(args) - 1} more)" if len(args) > 1 else ""
            shown = [
                a if limit is None or len(a) <= limit else a[: limit - 1] + "…" for a in args[0]
            ]
            return f"{name}({', '.join(shown)}){more}"
        return f"{name}({sig[name]})" if sig.get(name) else name

    states: list[dict[str, Any]] = data["states"]
    meta = data.get("#meta", {}) if isinstance(data.get("#meta"), dict) else {}
    loop = data.get("loop")
    decoded = [{k: from_itf(v) for k, v in st.items() if k != "#meta"} for st in states]
    names = list(dict.fromkeys(k for d in decoded for k in d))
    if var is not None and var.split(".")[0].split("[")[0] not in names:
        raise ExplainError(f"no variable {var!r} in the trace (its variables: {', '.join(names)})")
    if step is not None and not 0 <= step < len(states):
        raise ExplainError(f"no step {step}: the trace has states 0..{len(states) - 1}")
    if step is not None:
        return _one_step(states, decoded, step, var, _action)
    lines: list[str] = []
    header = []
    for key in ("model", "witness", "outcome"):
        if meta.get(key):
            header.append(f"{key}: {meta[key]}")
    header.append(
        f"{len(states)} states" + (f", loops back to state {loop}" if loop is not None else "")
    )
    lines.append(" · ".join(header))
    previous: dict[str, Value] = {}
    width = max([len(_action(s)) for s in states] + [6])
    for i, (state, values) in enumerate(zip(states, decoded, strict=True)):
        smeta = state.get("#meta", {}) if isinstance(state.get("#meta"), dict) else {}
        index = smeta.get("index", i)
        marker = "⟲" if loop is not None and i == loop else " "
        if i == 0:
            lines.append(f"{index:>4}{marker} {_action(state):<{width}}")
            for name, value in values.items():
                if _matches(name, var) or (var is not None and var.startswith(name)):
                    lines.append(f"        {name} = {_short(value, None if full else _MAX_VALUE)}")
        else:
            changes: list[str] = []
            for name in list(previous) + [k for k in values if k not in previous]:
                changes += describe_changes(name, previous.get(name), values.get(name))
            changes = [c for c in changes if _matches(c.split(":")[0], var)]
            if var is not None and not changes:
                previous = values
                continue  # the step does not touch the variable asked for
            text = "; ".join(changes) if changes else "(no change)"
            lines.append(f"{index:>4}{marker} {_action(state):<{width}}  {text}")
        previous = values
    if meta.get("stuttering"):
        lines.append("      then stutters forever (no further step is taken)")
    elif loop is not None:
        via = f" via {meta['loop_action']}" if meta.get("loop_action") else ""
        lines.append(f"      ⟲ back to state {loop}{via}: the behaviour repeats from there forever")
    return lines


def _one_step(
    states: list[dict[str, Any]],
    decoded: list[dict[str, Value]],
    step: int,
    var: str | None,
    _action: Any,
) -> list[str]:
    state = states[step]
    smeta = state.get("#meta", {}) if isinstance(state.get("#meta"), dict) else {}
    lines = [f"step {step}: {_action(state, None)}"]
    if isinstance(smeta.get("location"), str):
        lines.append(f"  at {smeta['location']}")
    new = decoded[step]
    old = decoded[step - 1] if step > 0 else {}
    changes = []
    for name in list(old) + [k for k in new if k not in old]:
        changes += describe_changes(name, old.get(name), new.get(name))
    changes = [c for c in changes if _matches(c.split(":")[0], var)]
    lines.append("  changed: " + ("; ".join(changes) if changes else "nothing"))
    for name, value in new.items():
        if var is not None and not (_matches(name, var) or var.startswith(name)):
            continue
        if step > 0 and old.get(name) == value:
            continue
        if step > 0:
            lines.append(
                f"  {name} before = {format_value(old[name]) if name in old else '(unset)'}"
            )
        lines.append(f"  {name} {'after ' if step > 0 else ''}= {format_value(value)}")
    return lines


def _action_name(state: dict[str, Any]) -> str:
    smeta = state.get("#meta")
    if isinstance(smeta, dict) and isinstance(smeta.get("action"), str):
        return str(smeta["action"])
    return "?"
