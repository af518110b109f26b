"""Why an invariant is false in a counterexample's last state: which conjunct, for what.

``ostrom explain --why`` asks TLC itself, so the answer is the spec's, not a re-implementation
of it.  The invariant's definition is split as it is written: a conjunction list
(``/\\ A`` bullets at one column) gives one part per bullet, a leading ``\\A x \\in S :``
gives the values of ``x`` for which the body is false, and both together the values for
each bullet.  A generated module EXTENDS the model's module, starts in exactly the last
state of the trace (every variable set to its value there, printed in TLA+), never moves,
and checks one always-true invariant that prints each part's verdict with ``PrintT``;
TLC runs it with the model's own constants (verify/tlc/probe.py stages it).  The bullets
are taken with their columns unchanged (TLA+'s conjunction lists are
indentation-sensitive): the bullet's ``/\\`` becomes two spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ostrom.verify.tlc.modules import search_order
from ostrom.verify.tlc.probe import ProbeError, model_of, run_probe, tagged_prints
from ostrom.verify.tlc.values import Value, format_value, from_itf, parse_value

__all__ = ["Part", "WhyError", "split_invariant", "why"]

_TAG = "ostrom-why"


class WhyError(ProbeError):
    """The trace does not say enough to ask TLC (no model, no invariant, no definition)."""


@dataclass(frozen=True)
class Part:
    """One conjunct (or the whole body) of the invariant: its text and its verdict."""

    index: int
    text: str
    false_for: str  # "" when the part holds; "FALSE" for a closed one, else the values
    var: str = ""  # the variable of the invariant's leading \\A, if any


def _definition(name: str, module: str) -> str:
    order = search_order(module)
    for f in order:
        lines = f.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if re.match(rf"^{re.escape(name)}\s*==", line):
                body = [line]
                for more in lines[i + 1 :]:
                    if not more.strip() or re.match(r"^[A-Za-z_]\w*(\(.*\))?\s*==", more):
                        break
                    body.append(more)
                return "\n".join(re.sub(r"\\\*.*$", "", b) for b in body)
    raise WhyError(f"no definition of {name} in {module} or the modules it extends")


def _bullets(lines: list[str]) -> list[list[str]]:
    """A conjunction list's bullets (each with its continuation lines), or [] if the text
    is not one."""
    first = next((ln for ln in lines if ln.strip()), "")
    col = len(first) - len(first.lstrip())
    if not first.lstrip().startswith("/\\"):
        return []
    out: list[list[str]] = []
    for ln in lines:
        if not ln.strip():
            continue
        indent = len(ln) - len(ln.lstrip())
        if indent == col and ln.lstrip().startswith("/\\"):
            out.append([ln[:col] + "  " + ln[col + 2 :]])
        elif indent > col and out:
            out[-1].append(ln)
        else:
            return []
    return out


def split_invariant(text: str) -> tuple[tuple[str, str] | None, list[str]]:
    """(binder, parts) of a definition ``Name == body``: ``binder`` is (variable, set) of a
    leading ``\\A x \\in S :``, the parts the body's bullets (one part: the whole body);
    every line keeps its column."""
    head, _, rest = text.partition("==")
    first, _, more = rest.partition("\n")
    lines = ([" " * (len(head) + 2) + first] if first.strip() else []) + more.splitlines()
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        raise WhyError(f"cannot read the definition {head.strip()}")
    binder = None
    m = re.match(r"^\s*\\A\s+(\w+)\s+\\in\s+([^:]+?)\s*:", lines[0])
    if m:
        binder = (m.group(1), m.group(2).strip())
        lines[0] = " " * m.end() + lines[0][m.end() :]
        if not lines[0].strip():
            lines = lines[1:]
    bullets = _bullets(lines)
    parts = ["\n".join(b) for b in bullets] if bullets else ["\n".join(lines)]
    return binder, parts


def _module_text(module: str, variables: dict[str, Value], binder: Any, parts: list[str]) -> str:
    names = list(variables)
    init = "\n".join(f"    /\\ {v} = {format_value(val)}" for v, val in variables.items())
    out = [
        "---- MODULE OstromProbe ----",
        f"EXTENDS {module}, TLC",
        "OstromInit ==",
        init,
        f"OstromNext == UNCHANGED <<{', '.join(names)}>>",
    ]
    for k, part in enumerate(parts, start=1):
        if binder is None:
            out += [f"OstromPart{k} ==", part]
        else:
            out += [f"OstromPart{k}({binder[0]}) ==", part]
    probe = []
    for k in range(1, len(parts) + 1):
        if binder is None:
            probe.append(f'    /\\ PrintT(<<"{_TAG}", {k}, OstromPart{k}>>)')
        else:
            var, dom = binder
            probe.append(
                f'    /\\ PrintT(<<"{_TAG}", {k}, {{{var} \\in {dom} : ~OstromPart{k}({var})}}>>)'
            )
    out += ["OstromWhyProbe ==", *probe, "===="]
    return "\n".join(out) + "\n"


def why(data: dict[str, Any], *, timeout: float = 120.0) -> tuple[str, list[Part]]:
    """(invariant, its parts with their verdicts) for the last state of the ITF ``data``."""
    meta = data.get("#meta") if isinstance(data.get("#meta"), dict) else {}
    assert isinstance(meta, dict)
    name = str(meta.get("expected") or meta.get("outcome") or "")
    if not re.fullmatch(r"[A-Za-z_]\w*", name) or name in ("pass", "deadlock"):
        raise WhyError("the trace names no violated invariant (#meta.expected)")
    if data.get("loop") is not None:
        raise WhyError(f"{name} is a temporal property: the trace is a lasso, not a bad state")
    try:
        model = model_of(data)
        binder, parts = split_invariant(_definition(name, model.module))
        last = {k: from_itf(v) for k, v in data["states"][-1].items() if k != "#meta"}
        lines = run_probe(
            model,
            _module_text(model.module, last, binder, parts),
            init="OstromInit",
            probe="OstromWhyProbe",
            label="why",
            title=f"ostrom explain --why: {name} in the last state",
            timeout=timeout,
        )
    except ProbeError as exc:
        raise WhyError(str(exc)) from None
    verdicts: dict[int, Value] = {}
    for printed in tagged_prints(lines, _TAG):
        if len(printed) == 2 and isinstance(printed[0], int):
            verdicts[printed[0]] = printed[1]
    if len(verdicts) != len(parts):
        raise WhyError(f"TLC could not evaluate {name} in the last state")
    out = []
    for k, part in enumerate(parts, start=1):
        v = verdicts[k]
        if binder is None:
            false_for = "" if v is True else format_value(v)
        else:
            false_for = "" if v == parse_value("{}") else format_value(v)
        text = "\n".join(ln.rstrip() for ln in part.splitlines()).strip()
        out.append(Part(k, text, false_for, binder[0] if binder else ""))
    return name, out
