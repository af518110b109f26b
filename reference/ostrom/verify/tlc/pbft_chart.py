"""Message-sequence charts of ``spec/PBFT.tla`` counterexamples (``ostrom explain --sequence``).

``spec/PBFT.tla`` keeps messages as grow-only sets (``pp``, ``prep``, ``com``, ``vc``,
``byzvc``, ``nv``): a message is sent in the step its element first appears, and
"receiving" is reading the set, so there are no deliveries to draw — every message goes to
every other replica at once.  The chart is therefore the sends, step by step, plus what the
spec leaves *implicit* and a reader otherwise cannot see (labs/07 trips on both):

* **derived COMMITs** — in ``Mode = "safety"`` the Byzantine replicas' COMMITs are not
  messages at all: ``ComSenders`` counts every Byzantine replica for a certificate as soon
  as the certificate exists.  The chart draws them, in the step the certificate appears,
  marked ``derived``; they never appear in ``com``.
* **eager COMMITs** — an honest replica sends its COMMIT in the very step in which it
  becomes prepared (``EagerCommits``), which is a PREPARE (its own or another's), a
  ``ByzPrepare`` or entering a view: the chart marks those COMMITs ``eager``.
* **requests and view-0 pre-prepares** — sent at the start (``sent == Requests``; the
  Byzantine primary's ``ByzPrePrepares``): drawn at step 0.

The result is a :class:`ostrom.verify.tlc.sequence.Chart`, so ``render_text``,
``render_mermaid`` and the explorer draw it like a PBFTReplicaSystem chart.  The model's
constants (``N``, ``F``, ``Byz``, ``Mode``, ``ClientRequests``) come from its cfg; without
them the replicas are inferred from the trace and no COMMIT is derived.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ostrom.verify.tlc.sequence import Arrow, Chart, Note, SequenceError, Step
from ostrom.verify.tlc.values import (
    ModelValue,
    TlaFunction,
    TlaRecord,
    TlaSet,
    Value,
    format_value,
    from_itf,
)

__all__ = ["DERIVED", "EAGER", "chart_from_pbft_spec", "is_pbft_spec"]

#: The variables of spec/PBFT.tla (``vars``).
_VARS = ("view", "status", "pp", "prep", "com", "vc", "byzvc", "nv")
#: Notes on the implicit messages (the chart's words; the explorer styles by them).
DERIVED = "derived: ComSenders counts it, it is not in com (Mode safety)"
EAGER = "eager: sent in the step it became prepared (EagerCommits)"
_MAX_REPLICAS = 16


def is_pbft_spec(data: Mapping[str, Any]) -> bool:
    """True if the first state of ``data`` has exactly the variables of spec/PBFT.tla."""
    states = data.get("states")
    if not isinstance(states, list) or not states or not isinstance(states[0], Mapping):
        return False
    return {k for k in states[0] if k != "#meta"} == set(_VARS)


def _elems(value: Value | None, where: str) -> tuple[Value, ...]:
    if isinstance(value, TlaSet):
        return value.elems
    raise SequenceError(f"{where} is not a set")


def _pairs(value: Value | None, where: str) -> dict[Value, Value]:
    if isinstance(value, TlaFunction):
        return dict(value.pairs)
    if isinstance(value, TlaRecord):
        return dict(value.fields)
    if isinstance(value, tuple):
        return {k + 1: v for k, v in enumerate(value)}
    raise SequenceError(f"{where} is not a function")


def _int(value: Value | None, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise SequenceError(f"{where} is not an integer")


def _field(m: Value, name: str, where: str) -> Value:
    if not isinstance(m, TlaRecord) or m.get(name) is None:
        raise SequenceError(f"{where}: a message without field {name!r}")
    value = m.get(name)
    assert value is not None
    return value


def _text(value: Value) -> str:
    return value.name if isinstance(value, ModelValue) else format_value(value).strip('"')


def _vnr(m: Value, where: str) -> tuple[int, int, str]:
    v = _int(_field(m, "v", where), f"{where}.v")
    n = _int(_field(m, "n", where), f"{where}.n")
    return v, n, _text(_field(m, "r", where))


def _certs(state: Mapping[str, Value], f: int, n_replicas: int) -> set[tuple[int, int, str]]:
    """CertSet: pre-prepares with 2f PREPAREs from distinct backups (spec/PBFT.tla)."""
    preps: dict[tuple[int, int, str], set[int]] = {}
    for m in _elems(state["prep"], "prep"):
        key = _vnr(m, "prep")
        preps.setdefault(key, set()).add(_int(_field(m, "src", "prep"), "prep.src"))
    out = set()
    for m in _elems(state["pp"], "pp"):
        key = _vnr(m, "pp")
        backups = preps.get(key, set()) - {key[0] % n_replicas}
        if len(backups) >= 2 * f:
            out.add(key)
    return out


def _label(kind: str, key: tuple[int, int, str]) -> str:
    v, n, r = key
    return f"{kind} v{v} n{n} {r}"


def _certificates_text(value: Value, where: str) -> str:
    certs = sorted(_vnr(c, where) for c in _elems(value, where))
    return "{" + ", ".join(f"v{v} n{n} {r}" for v, n, r in certs) + "}"


def chart_from_pbft_spec(data: Mapping[str, Any], constants: Mapping[str, Value]) -> Chart:
    """The chart of an ITF trace of spec/PBFT.tla; :class:`SequenceError` if it is not one."""
    if not is_pbft_spec(data):
        raise SequenceError(f"not a PBFT.tla trace: the variables are not {', '.join(_VARS)}")
    raw_states = data["states"]
    try:
        states = [{k: from_itf(s[k]) for k in _VARS} for s in raw_states]
    except (KeyError, TypeError, ValueError, RecursionError) as exc:
        raise SequenceError(f"not a PBFT.tla trace: {exc}") from None
    actions = []
    for s in raw_states:
        meta = s.get("#meta")
        action = meta.get("action") if isinstance(meta, Mapping) else None
        actions.append(action if isinstance(action, str) else "?")
    honest = sorted(_int(k, "view's domain") for k in _pairs(states[0]["view"], "view"))
    n_const = constants.get("N")
    if isinstance(n_const, int) and not isinstance(n_const, bool):
        n = n_const
    else:  # inferred: every replica that sends or has a view
        seen = set(honest)
        for st in states:
            for var in ("prep", "com", "vc", "byzvc"):
                seen |= {_int(_field(m, "src", var), var) for m in _elems(st[var], var)}
        n = max(seen) + 1 if seen else 0
    if not 1 <= n <= _MAX_REPLICAS:
        raise SequenceError(f"N = {n} replicas (a chart has 1 to {_MAX_REPLICAS})")
    f_const = constants.get("F")
    f = f_const if isinstance(f_const, int) and not isinstance(f_const, bool) else (n - 1) // 3
    byz_const = constants.get("Byz")
    if isinstance(byz_const, TlaSet):
        byz = sorted(_int(b, "Byz") for b in byz_const.elems)
        honest = [p for p in range(n) if p not in byz]
    else:  # the view of a replica that is not in the trace's view function: none known
        byz = [p for p in range(n) if p not in honest]
    derive = constants.get("Mode") == "safety"
    everyone = tuple(range(n))

    def others(p: int) -> tuple[int, ...]:
        return tuple(q for q in everyone if q != p)

    def new(var: str, k: int) -> list[Value]:
        before = set(_elems(states[k - 1][var], var)) if k > 0 else set()
        return [m for m in _elems(states[k][var], var) if m not in before]

    start: list[Arrow | Note] = []
    requests = constants.get("ClientRequests")
    if isinstance(requests, tuple) and requests:
        start.append(
            Arrow(
                n,
                everyone,
                ("REQUEST " + ", ".join(_text(r) for r in requests),),
                note="all sent at the start (sent == Requests)",
            )
        )
    for m in new("pp", 0):
        key = _vnr(m, "pp")
        start.append(
            Arrow(
                key[0] % n,
                others(key[0] % n),
                (_label("PRE-PREPARE", key),),
                note="sent at the start (ByzPrePrepares)",
            )
        )
    steps = [Step(0, actions[0] or "Init", tuple(start))]
    for k in range(1, len(states)):
        events: list[Arrow | Note] = []
        for m in new("pp", k):
            key = _vnr(m, "pp")
            note = "in the NEW-VIEW's O" if states[k]["nv"] != states[k - 1]["nv"] else ""
            events.append(
                Arrow(key[0] % n, others(key[0] % n), (_label("PRE-PREPARE", key),), note=note)
            )
        for m in new("prep", k):
            src = _int(_field(m, "src", "prep"), "prep.src")
            events.append(Arrow(src, others(src), (_label("PREPARE", _vnr(m, "prep")),)))
        for m in new("com", k):
            src = _int(_field(m, "src", "com"), "com.src")
            note = "" if src in byz else EAGER
            events.append(Arrow(src, others(src), (_label("COMMIT", _vnr(m, "com")),), note=note))
        if derive:
            for key in sorted(_certs(states[k], f, n) - _certs(states[k - 1], f, n)):
                for b in byz:
                    events.append(Arrow(b, others(b), (_label("COMMIT", key),), note=DERIVED))
        for m in new("vc", k):
            src = _int(_field(m, "src", "vc"), "vc.src")
            v = _int(_field(m, "v", "vc"), "vc.v")
            p = _certificates_text(_field(m, "P", "vc"), "vc.P")
            events.append(Arrow(src, others(src), (f"VIEW-CHANGE v{v} P={p}",)))
        for m in new("byzvc", k):
            src = _int(_field(m, "src", "byzvc"), "byzvc.src")
            v = _int(_field(m, "v", "byzvc"), "byzvc.v")
            events.append(
                Arrow(
                    src,
                    others(src),
                    (f"VIEW-CHANGE v{v}",),
                    note="its P is chosen when a NEW-VIEW reads it",
                )
            )
        for m in new("nv", k):
            v = _int(_field(m, "v", "nv"), "nv.v")
            senders = sorted(
                _int(_field(c, "src", "nv.V"), "nv.V.src")
                for c in _elems(_field(m, "V", "nv"), "nv.V")
            )
            o = sorted(
                (_int(_field(x, "n", "nv.O"), "nv.O.n"), _text(_field(x, "r", "nv.O")))
                for x in _elems(_field(m, "O", "nv"), "nv.O")
            )
            o_text = "{" + ", ".join(f"n{n_} {r}" for n_, r in o) + "}"
            v_text = ", ".join(f"r{s}" for s in senders)
            events.append(
                Arrow(
                    v % n, others(v % n), (f"NEW-VIEW v{v} V=VIEW-CHANGEs of {v_text} O={o_text}",)
                )
            )
        views0 = _pairs(states[k - 1]["view"], "view")
        views1 = _pairs(states[k]["view"], "view")
        stat0 = _pairs(states[k - 1]["status"], "status")
        stat1 = _pairs(states[k]["status"], "status")
        for i in honest:
            if views0.get(i) != views1.get(i) or stat0.get(i) != stat1.get(i):
                what = "waits for the NEW-VIEW" if _text(stat1.get(i, "")) == "vc" else "active"
                events.append(
                    Note(i, "o", f"r{i} in view {format_value(views1.get(i, 0))}: {what}")
                )
        steps.append(Step(k, actions[k], tuple(events)))
    meta = data.get("#meta")
    meta = meta if isinstance(meta, Mapping) else {}
    title = ["PBFT counterexample"]
    if isinstance(meta.get("model"), str):
        title.append(f"model {meta['model']}")
    title.append(f"{len(states)} states")
    legend = "c = the client; " + ", ".join(f"r{p}" for p in honest) + " honest"
    if byz:
        legend += f"; {', '.join(f'r{p}' for p in byz)} Byzantine"
    if derive:
        legend += "; Mode safety: the Byzantine COMMITs are derived, not sent (ComSenders)"
    return Chart(
        n,
        tuple(honest),
        " · ".join(title),
        tuple(steps),
        _final(states[-1], honest, byz, derive),
        (legend,),
    )


def _final(
    state: Mapping[str, Value], honest: list[int], byz: list[int], derive: bool
) -> tuple[str, ...]:
    """The last state: each honest replica's view, then every COMMIT certificate's senders."""
    views = _pairs(state["view"], "view")
    status = _pairs(state["status"], "status")
    out = [
        "end: "
        + "; ".join(
            f"r{i} in view {format_value(views.get(i, 0))} ({_text(status.get(i, '?'))})"
            for i in honest
        )
    ]
    senders: dict[tuple[int, int, str], set[int]] = {}
    for m in _elems(state["com"], "com"):
        senders.setdefault(_vnr(m, "com"), set()).add(_int(_field(m, "src", "com"), "com.src"))
    for key in sorted(senders):
        names = [f"r{s}" for s in sorted(senders[key])]
        if derive:
            names += [f"r{b} (derived)" for b in byz]
        out.append(f"  COMMITs for {_label('', key).strip()}: {', '.join(names)}")
    return tuple(out)
