"""Which values an action of a trace was taken with: ``CommitVote("a1", "x1", "accept")``.

TLC's trace names each step's action but not the values its parameters had (TLC 2.15 has
no ``TLCGet("action")``), and ``ostrom explain --params`` should not guess them from the
diff.  So TLC is asked: for step k, which values of the action's parameters make the
action lead from state k-1 to state k exactly?  The candidates come from where the spec
calls the action — ``\\E a \\in Agents, x \\in Artifacts : ... CommitVote(a, x, v)`` — so
each bound variable ranges over the domain the spec itself gives it, evaluated in the
state the step starts from; a value is the answer when the action, taken with it from
state k-1, can land exactly in state k.  Every call site of
the action is tried (the union is taken: a binding is right or wrong by the action's
definition alone, the call sites only supply candidates).  One TLC run answers every step
(verify/tlc/probe.py stages it): the states the steps start from are the initial states of
a module whose next-state relation takes each step by its action with every candidate and
prints those that land in the trace's next state.  (Not ``ENABLED`` in an invariant: TLC
evaluates an ``ENABLED`` of PBFTReplicaSystem's delivery steps for minutes, while as a
next-state relation it is as fast as model checking.)

Call sites are read from the text of the model's modules (comments and strings blanked):
an argument's variables are bound by the nearest ``\\E``/``\\A`` before the call in the same
definition, or are parameters of that definition, bound in turn where it is called.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ostrom.verify.tlc.modules import used_modules
from ostrom.verify.tlc.probe import ProbeError, model_of, run_probe, tagged_prints
from ostrom.verify.tlc.text import Definition, blank, definitions
from ostrom.verify.tlc.values import Value, format_value, from_itf

__all__ = ["CallSite", "bind_trace", "call_sites", "scan_binders"]

_TAG = "ostrom-bind"
_IDENT = re.compile(r"[A-Za-z_]\w*")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")", "]", "}"}
_KEYWORDS = {"IN", "LET", "IF", "THEN", "ELSE", "CASE", "OTHER", "TRUE", "FALSE", "SUBSET",
             "UNION", "DOMAIN", "EXCEPT", "CHOOSE", "ENABLED", "UNCHANGED"}  # fmt: skip


@dataclass(frozen=True)
class CallSite:
    """One call of the action: its argument texts, and the bound variables they use with
    their domains, outermost first."""

    args: tuple[str, ...]
    binders: tuple[tuple[str, str], ...]


def _split_top(text: str, stop: str) -> tuple[list[tuple[int, int]], int]:
    """``text`` (strings blanked) split at top-level commas up to the first top-level
    ``stop`` character: (the parts' spans, the offset of ``stop``, or -1)."""
    depth, i, start = 0, 0, 0
    parts: list[tuple[int, int]] = []
    while i < len(text):
        two = text[i : i + 2]
        if two == "<<":
            depth += 1
            i += 2
            continue
        if two == ">>":
            depth -= 1
            i += 2
            continue
        c = text[i]
        if depth == 0 and c == stop and text[i : i + 2] != "::":
            parts.append((start, i))
            return parts, i
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            if depth == 0:
                parts.append((start, i))
                return parts, i if c == stop else -1
            depth -= 1
        elif c == "," and depth == 0:
            parts.append((start, i))
            start = i + 1
        i += 1
    return parts, -1


def scan_binders(text: str, masked: str | None = None) -> list[tuple[str, str, int]]:
    """Every variable bound by ``\\E``/``\\A`` (``\\exists``/``\\forall``) with a domain in
    ``text`` (``masked``: the same with strings blanked): (name, domain, offset of the
    quantifier), in order."""
    masked = blank(text, strings=True) if masked is None else masked
    out: list[tuple[str, str, int]] = []
    for m in re.finditer(r"\\(E|A|exists|forall)(?![\w])", masked):
        spans, end = _split_top(masked[m.end() :], ":")
        if end < 0:
            continue
        pending: list[str] = []
        for a, b in spans:
            part = text[m.end() + a : m.end() + b]
            if "\\in" in part:
                names, _, dom = part.partition("\\in")
                pending += [n.strip() for n in names.split(",")]
                dom = " ".join(dom.split())
                for name in pending:
                    if _IDENT.fullmatch(name):
                        out.append((name, dom, m.start()))
                pending = []
            else:
                pending.append(part.strip())
    return out


@functools.lru_cache(maxsize=64)
def _parsed(path: Path, mtime_ns: int) -> tuple[str, str, tuple[Definition, ...]]:
    """A module's text with comments blanked, the same with strings blanked too, and its
    definitions: read once per version of the file, however many actions and enclosing
    definitions ``call_sites`` looks up in it."""
    del mtime_ns  # part of the cache key only
    text = blank(path.read_text(encoding="utf-8"), strings=False)
    masked = blank(text, strings=True)
    return text, masked, tuple(definitions(masked))


def call_sites(action: str, module: str, *, _depth: int = 0) -> list[CallSite]:
    """Where the modules of ``module`` call ``action`` with arguments whose bound
    variables all have a domain (see the module docstring).  A call that passes a
    parameter of the definition it is in (``HonestStep(a) == ... Commit(a, v)``) takes
    that parameter's candidates from the calls of that definition, three levels deep."""
    sites: list[CallSite] = []
    for path in used_modules(module):
        text, masked, defs = _parsed(path, path.stat().st_mtime_ns)
        for d in defs:
            if d.name == action:
                continue
            body, mbody = text[d.start : d.end], masked[d.start : d.end]
            for call in re.finditer(rf"(?<![\w!.]){re.escape(action)}\s*\(", mbody):
                site, free = _site(body, mbody, call, set(d.params))
                if site is None:
                    continue
                if not free:
                    sites.append(site)
                elif _depth < 3:
                    for outer in call_sites(d.name, module, _depth=_depth + 1):
                        joined = _join(outer, list(d.params), site)
                        if joined is not None:
                            sites.append(joined)
    return list(dict.fromkeys(sites))


def _join(outer: CallSite, formals: list[str], inner: CallSite) -> CallSite | None:
    """``inner`` (a call inside a definition with ``formals``) with those formals bound by
    the definition's call ``outer``; None when names clash or the arities differ."""
    if len(outer.args) != len(formals):
        return None
    binders = list(outer.binders)
    names = {n for n, _ in binders}
    for formal, arg in zip(formals, outer.args, strict=True):
        if formal == arg and formal in names:
            continue  # \E a \in Honest : HonestStep(a): the outer binder is the formal
        if formal in names:
            return None
        binders.append((formal, f"{{{arg}}}"))
        names.add(formal)
    if any(n in names for n, _ in inner.binders):
        return None
    return CallSite(inner.args, tuple(binders) + inner.binders)


def _site(
    body: str, mbody: str, call: re.Match[str], formals: set[str]
) -> tuple[CallSite | None, bool]:
    """The call at ``call`` in the definition ``body`` (``mbody``: strings blanked), and
    whether its arguments use a parameter of that definition (then its binders are
    completed by the caller)."""
    spans, end = _split_top(mbody[call.end() :], ")")
    if end < 0:
        return None, False
    args = [" ".join(body[call.end() + a : call.end() + b].split()) for a, b in spans]
    margs = [mbody[call.end() + a : call.end() + b] for a, b in spans]
    bound: dict[str, tuple[str, int]] = {}
    for name, dom, at in scan_binders(body[: call.start()], mbody[: call.start()]):
        bound[name] = (dom, at)  # the nearest enclosing binder of the name wins
    needed: set[str] = set()
    free = False
    todo = [w for a in margs for w in _IDENT.findall(a)]
    while todo:
        w = todo.pop()
        if w in needed or w in _KEYWORDS:
            continue
        if w in bound:
            needed.add(w)
            todo += _IDENT.findall(bound[w][0])
        elif w in formals:
            free = True
    binders = tuple((n, bound[n][0]) for n in sorted(needed, key=lambda n: (bound[n][1], n)))
    return CallSite(tuple(args), binders), free


def _disjunct(action: str, site: CallSite, k: int, variables: list[str]) -> str:
    """The disjunct of ``OstromNext`` that takes step ``k`` of the trace by ``site``'s call
    of ``action`` with each candidate of its bound variables, and prints the arguments of
    each one that lands exactly in the trace's next state."""
    names = [n for n, _ in site.binders]
    if names:
        cands = f"{{<<{', '.join(names)}>> : {names[-1]} \\in {site.binders[-1][1]}}}"
        for n, dom in reversed(site.binders[:-1]):
            cands = f"UNION {{{cands} : {n} \\in {dom}}}"
        let = "LET " + " ".join(f"{n} == ostromTup[{i}]" for i, n in enumerate(names, 1)) + " IN"
    else:
        cands, let = "{<<>>}", ""
    args = ", ".join(site.args)
    return "\n".join(
        [
            f"    \\/ /\\ OstromT[{k}] = OstromCur",
            f"       /\\ \\E ostromTup \\in {cands} : {let}",
            f"            /\\ {action}({args})",
            *[f"            /\\ {v}' = OstromT[{k + 1}].{v}" for v in variables],
            f'            /\\ PrintT(<<"{_TAG}", {k}, <<{args}>>>>)',
        ]
    )


def _module(
    model_module: str,
    decoded: list[dict[str, Value]],
    steps: dict[int, list[str]],
    variables: list[str],
) -> str:
    """The probe module: every state a step starts from is initial, and ``OstromNext``
    takes each such step by its action (1-based: step k goes from ``OstromT[k]`` to
    ``OstromT[k + 1]``)."""
    records = [
        "[" + ", ".join(f"{v} |-> {format_value(st[v])}" for v in variables) + "]" for st in decoded
    ]
    lines = [
        "---- MODULE OstromProbe ----",
        f"EXTENDS {model_module}, TLC",
        "OstromT == <<",
        ",\n".join("  " + r for r in records),
        ">>",
        "OstromCur == [" + ", ".join(f"{v} |-> {v}" for v in variables) + "]",
        f"OstromSteps == {{{', '.join(str(k) for k in sorted(steps))}}}",
        "OstromInit == \\E ostromK \\in OstromSteps :",
        *[f"    /\\ {v} = OstromT[ostromK].{v}" for v in variables],
        "OstromNext ==",
    ]
    for k in sorted(steps):
        lines += steps[k]
    lines.append("====")
    return "\n".join(lines) + "\n"


def bind_trace(data: dict[str, Any], *, timeout: float = 120.0) -> dict[int, list[tuple[str, ...]]]:
    """For each step of the ITF ``data`` (its index in ``states``) whose action takes
    parameters and is called where the spec gives them domains: every tuple of argument
    values (TLA+ text) that takes that step.  Raises :class:`ProbeError`."""
    model = model_of(data)
    states = data["states"]
    decoded = [{k: from_itf(v) for k, v in st.items() if k != "#meta"} for st in states]
    variables = list(decoded[0]) if decoded else []
    if any(list(d) != variables for d in decoded):
        raise ProbeError("the trace's states do not all have the same variables")
    sites: dict[str, list[CallSite]] = {}
    steps: dict[int, list[str]] = {}
    for j in range(1, len(states)):
        smeta = states[j].get("#meta")
        action = smeta.get("action") if isinstance(smeta, dict) else None
        if not isinstance(action, str) or not _IDENT.fullmatch(action):
            continue
        if action not in sites:
            sites[action] = [s for s in call_sites(action, model.module) if s.args]
        if sites[action]:
            steps[j] = [_disjunct(action, s, j, variables) for s in sites[action]]
    if not steps:
        return {}
    lines = run_probe(
        model,
        _module(model.module, decoded, steps, variables),
        init="OstromInit",
        probe=None,
        label="bind",
        title="ostrom explain --params: the values each step's action was taken with",
        timeout=timeout,
    )
    found: dict[int, set[tuple[str, ...]]] = {}
    for printed in tagged_prints(lines, _TAG):
        if len(printed) == 2 and isinstance(printed[0], int) and isinstance(printed[1], tuple):
            found.setdefault(printed[0], set()).add(tuple(format_value(x) for x in printed[1]))
    return {k: sorted(v) for k, v in found.items()}
