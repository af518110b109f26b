"""Message-sequence charts of PBFTReplicaSystem counterexamples (``ostrom explain --sequence``).

A TLC counterexample of ``spec/PBFTReplicaSystem.tla`` is a list of whole states: every
replica's full record and every link's queue, 35 states of a few hundred lines each. What
happened in it — who sent what to whom, what got lost, which timer fired, why nothing moves at
the end — has to be reconstructed by diffing states, which ``ostrom explain`` does one variable
at a time. This module does it at the level of the protocol and draws the result as a
message-sequence chart, one lifeline per replica and one for the client, so a liveness defect
can be read (and reviewed in docs) as a picture instead of a diff.

Everything is derived from the state variables, not from the action names, so it works on
any trace of the spec and on hand-written ones (the action name is only displayed):

* **sent** — entries appended to ``chan[<<sender, receiver>>]``; one message appended to
  several links of one sender in one step is one broadcast (drawn as one arrow with a head at
  each receiver). Replies do not travel on links: a replica newly in ``acks[d]`` replied.
* **delivered** — entries removed from a link; the receiver's reaction is the change of its
  ``rs`` record (view entered, active again, prepared, executed, checkpoint stable, votes
  collected, NEW-VIEW forgotten) or "no effect" when its protocol state did not move.
* **lost** — removed while ``lossLeft`` decreases (``Drop``); every output of a step whose
  ``omitsLeft`` decreases (a send omission); what a cut-off replica sends or is sent. Lost
  outputs never reach ``chan``, so they are inferred from the sender's state: the votes it
  promised (``promises``), a new own VIEW-CHANGE (in ``vcs`` or in the V of its new NEW-VIEW),
  a new NEW-VIEW (``nvmsg``), a new own checkpoint (``ownck``), a new reply (``lastreply``), a
  state fetch (``fetched``), an answered fetch or late VIEW-CHANGE (``answered``), a request
  relayed to the primary (``pending``). Anything else a lost step sent is not visible; the
  chart then says "every output lost".
* **timeouts, restarts, partitions, the heal, rounds, client retries** — from the counters
  (``timeoutsLeft``, ``restartsLeft``, ``cut``, ``healed``, ``rounds``, ``retried``).

The final state is annotated with why the run ends there: each replica's view, whether it is
active, whether its view-change timer runs (``PBFTReplica!Waiting``: an inactive replica needs
2f+1 VIEW-CHANGEs for its view before the timer restarts, an active one needs a pending
request), what it executed, and what the client still lacks.

Two renderings: :func:`render_text` (monospace, for the terminal and the docs) and
:func:`render_mermaid` (a Mermaid ``sequenceDiagram``, which GitHub renders).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from ostrom.verify.tlc.itf import read_itf
from ostrom.verify.tlc.values import (
    TlaFunction,
    TlaRecord,
    TlaSet,
    Value,
    format_value,
    from_itf,
)

__all__ = [
    "Arrow",
    "Chart",
    "Note",
    "SequenceError",
    "Step",
    "chart_from_itf",
    "counterexample_charts",
    "counterexample_sections",
    "render",
    "render_mermaid",
    "render_text",
]

FORMATS = ("text", "mermaid")
# message types a replica only ever broadcasts (to every other replica): a missing honest
# receiver that is cut off lost it to the partition
_BROADCAST_TYPES = frozenset({"PrePrepare", "Prepare", "Commit", "Checkpoint", "ViewChange"})
_WIRE_NAMES = {
    "Request": "REQUEST",
    "PrePrepare": "PRE-PREPARE",
    "Prepare": "PREPARE",
    "Commit": "COMMIT",
    "Checkpoint": "CHECKPOINT",
    "ViewChange": "VIEW-CHANGE",
    "NewView": "NEW-VIEW",
    "FetchState": "FETCH-STATE",
    "StateTransfer": "STATE-TRANSFER",
    "Reply": "REPLY",
}
# fields of a replica record the chart cannot do without (the rest default when absent)
_REQUIRED_REPLICA_FIELDS = ("view", "active", "N", "F")
_MAX_REPLICAS = 64  # lifelines beyond this are unreadable (and a hostile N must not allocate)
_TEXT_WIDTH = 64  # wrap a row's text past this many characters (continuation rows)


class SequenceError(ValueError):
    """The document is not a trace of PBFTReplicaSystem, or one of its states is malformed."""


# ----------------------------------------------------------------------------------------------
# The chart
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Arrow:
    """Messages ``labels`` from ``sender`` to each of ``receivers`` (participant numbers: the
    replicas are 0..N-1, the client is N). ``lost``: none of them arrives; ``note`` says why
    (or what kind of send it was: a retransmission, a retry, a duplicate)."""

    sender: int
    receivers: tuple[int, ...]
    labels: tuple[str, ...]
    lost: bool = False
    note: str = ""


@dataclass(frozen=True)
class Note:
    """Something that happens on one lifeline (``actor``) or to the whole system (None).

    ``marker`` is the glyph of the text rendering: ``o`` a replica handles what arrived,
    ``T`` its timer fires, ``R`` it restarts, ``/`` a partition, ``x`` a send omission whose
    messages are unknown, ``=`` the heal, ``.`` a new round."""

    actor: int | None
    marker: str
    text: str


Event = Arrow | Note


@dataclass(frozen=True)
class Step:
    """The events of the transition into state ``index`` (0: what is in flight initially)."""

    index: int
    action: str
    events: tuple[Event, ...]


@dataclass(frozen=True)
class Chart:
    """A counterexample as a message-sequence chart: lifelines, steps, the final state."""

    n: int
    honest: tuple[int, ...]
    title: str
    steps: tuple[Step, ...]
    final: tuple[str, ...]
    legend: tuple[str, ...] = field(default=())

    @property
    def client(self) -> int:
        """The client's participant number (``ClientId`` = N in the spec)."""
        return self.n

    @property
    def participants(self) -> tuple[int, ...]:
        """Lifelines left to right: the client, then the replicas in order."""
        return (self.n, *range(self.n))

    def name(self, p: int) -> str:
        """``c`` for the client, ``rI`` for replica I."""
        return "c" if p == self.n else f"r{p}"

    def byzantine(self, p: int) -> bool:
        """A replica that runs no code in the model (not in ``rs``)."""
        return p != self.n and p not in self.honest


# ----------------------------------------------------------------------------------------------
# Typed access to decoded values (every failure is a SequenceError naming where it was)
# ----------------------------------------------------------------------------------------------


def _is_int(v: object) -> TypeGuard[int]:
    """An integer that is not a boolean (TLA+ has no such confusion; Python does)."""
    return isinstance(v, int) and not isinstance(v, bool)


def _mapping(value: Value, where: str) -> dict[Value, Value]:
    """A TLA+ function as a dict: TLC prints one with domain 1..n as a sequence, one with
    string keys as a record, the empty one as ``<<>>``."""
    if isinstance(value, TlaFunction):
        return dict(value.pairs)
    if isinstance(value, tuple):
        return {i + 1: v for i, v in enumerate(value)}
    if isinstance(value, TlaRecord):
        return {k: v for k, v in value.fields}
    raise SequenceError(f"{where} is not a function: {_short(value)}")


def _elems(value: Value, where: str) -> tuple[Value, ...]:
    """The elements of a set (or of a sequence)."""
    if isinstance(value, TlaSet):
        return value.elems
    if isinstance(value, tuple):
        return value
    raise SequenceError(f"{where} is not a set: {_short(value)}")


def _seq(value: Value, where: str) -> tuple[Value, ...]:
    if isinstance(value, tuple):
        return value
    if isinstance(value, TlaFunction) and not value.pairs:
        return ()
    raise SequenceError(f"{where} is not a sequence: {_short(value)}")


def _int(value: Value | None, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise SequenceError(f"{where} is not an integer: {_short(value)}")
    return value


def _bool(value: Value | None, where: str) -> bool:
    if not isinstance(value, bool):
        raise SequenceError(f"{where} is not a boolean: {_short(value)}")
    return value


def _short(value: Value | None, limit: int = 60) -> str:
    if value is None:
        return "(missing)"
    text = format_value(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rec(value: Value) -> TlaRecord | None:
    return value if isinstance(value, TlaRecord) else None


def _fget(value: Value | None, name: str) -> Value | None:
    """Field ``name`` of a record, None for anything else (messages may be anything)."""
    return value.get(name) if isinstance(value, TlaRecord) else None


def _fint(value: Value | None, name: str) -> int | None:
    got = _fget(value, name)
    return got if _is_int(got) else None


def _fstr(value: Value | None, name: str) -> str | None:
    got = _fget(value, name)
    return got if isinstance(got, str) else None


# ----------------------------------------------------------------------------------------------
# Snapshots: the variables of one state, checked and typed
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Replica:
    """The parts of one honest replica's record (PBFTReplica.tla) the chart reads."""

    rid: int
    raw: TlaRecord
    view: int
    active: bool
    n: int
    f: int

    def get(self, name: str) -> Value | None:
        return self.raw.get(name)

    def items(self, name: str) -> tuple[Value, ...]:
        """A set- or sequence-valued field, empty when absent (a hand-made trace may omit it)."""
        value = self.raw.get(name)
        if value is None:
            return ()
        if isinstance(value, TlaSet):
            return value.elems
        if isinstance(value, tuple):
            return value
        if isinstance(value, TlaFunction) and not value.pairs:
            return ()
        raise SequenceError(f"rs[{self.rid}].{name} is not a set or sequence: {_short(value)}")

    def number(self, name: str, default: int = 0) -> int:
        value = self.raw.get(name)
        return default if value is None else _int(value, f"rs[{self.rid}].{name}")

    @property
    def quorum(self) -> int:
        """2f+1 for n = 3f+1 (``PBFTReplica!Q``)."""
        return (self.n + self.f + 2) // 2

    def core(self) -> TlaRecord:
        """The protocol state (``PBFTReplicaSystem!Core`` and ``Clean``): without the rate
        limits of the retransmission period, the back-off counter and a step's outputs."""
        skip = {"answered", "fetched", "cvc", "out", "rej", "exe"}
        return TlaRecord(tuple((k, v) for k, v in self.raw.fields if k not in skip))


@dataclass(frozen=True)
class _Snapshot:
    replicas: dict[int, _Replica]
    chan: dict[tuple[int, int], tuple[Value, ...]]
    counters: dict[str, int]
    cut: frozenset[int]
    healed: bool
    rt: dict[int, bool]
    changed: bool
    rounds: int
    retried: bool
    acks: dict[str, frozenset[int]]
    promises: frozenset[Value]


_COUNTERS = (
    "lossLeft",
    "omitsLeft",
    "reorderLeft",
    "dupLeft",
    "partitionsLeft",
    "timeoutsLeft",
    "restartsLeft",
)


def _decode(state: Mapping[str, Any], name: str, index: int) -> Value | None:
    if name not in state:
        return None
    try:
        return from_itf(state[name])
    except (ValueError, TypeError, RecursionError) as exc:
        raise SequenceError(f"state {index}: variable {name} is not an ITF value ({exc})") from None


def _snapshot(state: Mapping[str, Any], index: int) -> _Snapshot:
    where = f"state {index}"
    missing = [v for v in ("rs", "chan") if v not in state]
    if missing:
        have = ", ".join(sorted(k for k in state if k != "#meta")[:12]) or "none"
        raise SequenceError(
            f"not a PBFTReplicaSystem trace: {where} has no variable "
            f"{' or '.join(missing)} (its variables: {have})"
        )
    rs_value = _decode(state, "rs", index)
    assert rs_value is not None
    replicas: dict[int, _Replica] = {}
    for key, rec in _mapping(rs_value, f"{where}: rs").items():
        if not _is_int(key):
            raise SequenceError(f"{where}: rs is indexed by {_short(key)}, not a replica number")
        rid = key
        if not isinstance(rec, TlaRecord):
            raise SequenceError(f"{where}: rs[{rid}] is not a replica record: {_short(rec)}")
        for fname in _REQUIRED_REPLICA_FIELDS:
            if rec.get(fname) is None:
                raise SequenceError(f"{where}: rs[{rid}] has no field {fname}")
        replicas[rid] = _Replica(
            rid,
            rec,
            _int(rec.get("view"), f"{where}: rs[{rid}].view"),
            _bool(rec.get("active"), f"{where}: rs[{rid}].active"),
            _int(rec.get("N"), f"{where}: rs[{rid}].N"),
            _int(rec.get("F"), f"{where}: rs[{rid}].F"),
        )
    if not replicas:
        raise SequenceError(f"{where}: rs has no replica")
    chan_value = _decode(state, "chan", index)
    assert chan_value is not None
    chan: dict[tuple[int, int], tuple[Value, ...]] = {}
    for key, queue in _mapping(chan_value, f"{where}: chan").items():
        sender, receiver = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        if not (_is_int(sender) and _is_int(receiver)):
            raise SequenceError(
                f"{where}: chan is indexed by {_short(key)}, not <<sender, receiver>>"
            )
        chan[(sender, receiver)] = _seq(queue, f"{where}: chan[{_short(key)}]")
    counters: dict[str, int] = {}
    for name in _COUNTERS:
        value = _decode(state, name, index)
        if value is not None:
            counters[name] = _int(value, f"{where}: {name}")

    def opt(name: str) -> Value | None:
        return _decode(state, name, index)

    cut_v, healed_v, changed_v = opt("cut"), opt("healed"), opt("changed")
    rounds_v, retried_v, rt_v, acks_v, prom_v = (
        opt("rounds"),
        opt("retried"),
        opt("rt"),
        opt("acks"),
        opt("promises"),
    )
    cut = (
        frozenset(_int(x, f"{where}: cut") for x in _elems(cut_v, f"{where}: cut"))
        if cut_v is not None
        else frozenset()
    )
    rt: dict[int, bool] = {}
    if rt_v is not None:
        for k, v in _mapping(rt_v, f"{where}: rt").items():
            rt[_int(k, f"{where}: rt's domain")] = _bool(v, f"{where}: rt")
    acks: dict[str, frozenset[int]] = {}
    if acks_v is not None:
        for k, v in _mapping(acks_v, f"{where}: acks").items():
            acks[k if isinstance(k, str) else format_value(k)] = frozenset(
                _int(x, f"{where}: acks") for x in _elems(v, f"{where}: acks")
            )
    return _Snapshot(
        replicas=replicas,
        chan=chan,
        counters=counters,
        cut=cut,
        healed=_bool(healed_v, f"{where}: healed") if healed_v is not None else False,
        rt=rt,
        changed=_bool(changed_v, f"{where}: changed") if changed_v is not None else False,
        rounds=_int(rounds_v, f"{where}: rounds") if rounds_v is not None else 0,
        retried=_bool(retried_v, f"{where}: retried") if retried_v is not None else False,
        acks=acks,
        promises=frozenset(_elems(prom_v, f"{where}: promises"))
        if prom_v is not None
        else frozenset(),
    )


# ----------------------------------------------------------------------------------------------
# Labels
# ----------------------------------------------------------------------------------------------


def _req_id(value: Value | None) -> str:
    """A request by its id (``d``): ``a``; the null request ``null``; anything else by type."""
    d = _fget(value, "d")
    if isinstance(d, str):
        return d
    t = _fget(value, "t")
    if isinstance(t, str):
        return t
    return _short(value, 20)


def _digest(value: Value | None) -> str:
    """A state digest (the spec's abstraction: the history it certifies) as ``[a,b]``."""
    if isinstance(value, tuple):
        return "[" + ",".join(_req_id(x) for x in value) + "]"
    return _short(value, 24)


def _label(
    message: Value, replies: Mapping[tuple[str, int], str], sender: int | None = None
) -> str:
    """A short wire-level name: ``PRE-PREPARE v0 n1 a``, ``VIEW-CHANGE v1``, ``CHECKPOINT n1
    [a]``. ``replies`` maps (client, timestamp) to request id, since a REPLY names neither.
    A message signed by another replica than its ``sender`` (a relayed VIEW-CHANGE or
    PRE-PREPARE) says whose it is: ``VIEW-CHANGE v1 of r2``."""
    t = _fget(message, "t")
    if not isinstance(t, str):
        return _short(message, 32)
    name = _WIRE_NAMES.get(t, t.upper())
    v, n = _fint(message, "v"), _fint(message, "n")
    parts = [name]
    if t in ("PrePrepare", "Prepare", "Commit"):
        parts += [f"v{v}", f"n{n}", _req_id(message)]
    elif t == "Request":
        parts.append(_req_id(message))
    elif t == "Checkpoint":
        parts += [f"n{n}", _digest(_fget(message, "sd"))]
    elif t == "ViewChange":
        parts.append(f"v{_fint(message, 'nv')}")
        s = _fint(message, "s")
        if s:
            parts.append(f"s{s}")
        certs = _fget(message, "P")
        if isinstance(certs, tuple) and certs:
            parts.append("P[" + ",".join(_cert(c) for c in certs) + "]")
    elif t == "NewView":
        parts.append(f"v{v}")
        o = _fget(message, "O")
        if isinstance(o, tuple) and o:
            parts.append("O[" + ",".join(f"n{_fint(p, 'n')} {_req_id(p)}" for p in o) + "]")
    elif t == "FetchState":
        parts.append(f"after n{_fint(message, 'after')}")
    elif t == "StateTransfer":
        after = _fint(message, "after") or 0
        reqs = _fget(message, "reqs")
        count = len(reqs) if isinstance(reqs, tuple) else 0
        parts.append(f"n{after + 1}..n{after + count} {_digest(reqs)}")
    elif t == "Reply":
        c, ts = _fstr(message, "c"), _fint(message, "ts")
        parts.append(replies.get((c or "", ts or 0), f"{c} ts{ts}"))
    signer = _fint(message, "r")
    if sender is not None and signer is not None and signer != sender and t != "Reply":
        parts.append(f"of r{signer}")
    if _fget(message, "sok") is False:
        parts.append("(forged)")
    if t == "PrePrepare" and _fget(message, "dok") is False:
        parts.append("(bad digest)")
    return " ".join(parts)


def _cert(cert: Value) -> str:
    pp = _fget(cert, "pp")
    return f"n{_fint(pp, 'n')} {_req_id(pp) if pp is not None else '?'}"


def _vote_label(p: Value) -> str:
    """A promise ``[t, v, n, d, r]`` (a vote the replica sent) as its message label."""
    t = _fstr(p, "t") or "?"
    return f"{_WIRE_NAMES.get(t, t)} v{_fint(p, 'v')} n{_fint(p, 'n')} {_fstr(p, 'd')}"


# ----------------------------------------------------------------------------------------------
# Diffing links
# ----------------------------------------------------------------------------------------------


def _link_diff(
    old: tuple[Value, ...], new: tuple[Value, ...]
) -> tuple[list[tuple[int, Value]], list[Value]]:
    """How ``old`` became ``new``: (removed messages with their positions, appended messages).

    In this spec one step either removes from a link (a delivery or a drop: the head, or one
    message out of order) or appends to it (a send, a duplicate, a retry), never both on one
    link; the general case falls back to a longest common subsequence."""
    if old == new:
        return [], []
    if new[: len(old)] == old:
        return [], list(new[len(old) :])
    if len(new) == len(old) - 1:
        for k in range(len(old)):
            if old[:k] + old[k + 1 :] == new:
                return [(k, old[k])], []
    for p in range(1, len(old) + 1):
        keep = len(old) - p
        if new[:keep] == old[p:] and (keep > 0 or not new):
            return [(i, old[i]) for i in range(p)], list(new[keep:])
    # fallback: longest common subsequence, earliest removals first
    rows, cols = len(old), len(new)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            table[i][j] = (
                table[i + 1][j + 1] + 1
                if old[i] == new[j]
                else max(table[i + 1][j], table[i][j + 1])
            )
    removed: list[tuple[int, Value]] = []
    appended: list[Value] = []
    i = j = 0
    while i < rows and j < cols:
        if old[i] == new[j]:
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            removed.append((i, old[i]))
            i += 1
        else:
            appended.append(new[j])
            j += 1
    removed += [(k, old[k]) for k in range(i, rows)]
    appended += list(new[j:])
    return removed, appended


# ----------------------------------------------------------------------------------------------
# Building the chart
# ----------------------------------------------------------------------------------------------


@dataclass
class _Context:
    n: int
    honest: tuple[int, ...]
    replies: dict[tuple[str, int], str]

    def name(self, p: int) -> str:
        return "c" if p == self.n else f"r{p}"

    def names(self, ps: Iterable[int]) -> str:
        return ", ".join(self.name(p) for p in sorted(ps))


def _sends(
    ctx: _Context, appended: Mapping[tuple[int, int], list[Value]]
) -> list[tuple[int, list[tuple[Value, tuple[int, ...]]]]]:
    """Per sender, its messages in sending order with the receivers of each (a broadcast is
    the same message appended to several of its links in one step)."""
    by_sender: dict[int, list[tuple[Value, list[int]]]] = {}
    for (s, r), msgs in sorted(appended.items()):
        entries = by_sender.setdefault(s, [])
        seen: dict[Value, int] = {}
        for m in msgs:
            occurrence = seen.get(m, 0)
            seen[m] = occurrence + 1
            matches = [e for e in entries if e[0] == m]
            if occurrence < len(matches) and r not in matches[occurrence][1]:
                matches[occurrence][1].append(r)
            else:
                entries.append((m, [r]))
    return [(s, [(m, tuple(rs)) for m, rs in entries]) for s, entries in by_sender.items()]


def _group_arrows(
    sender: int,
    items: Sequence[tuple[str, tuple[int, ...]]],
    *,
    lost: bool = False,
    note: str = "",
) -> list[Arrow]:
    """Consecutive messages of one sender to the same receivers share one arrow."""
    arrows: list[Arrow] = []
    for label, receivers in items:
        if arrows and arrows[-1].receivers == receivers:
            last = arrows[-1]
            arrows[-1] = Arrow(sender, receivers, (*last.labels, label), lost, note)
        else:
            arrows.append(Arrow(sender, receivers, (label,), lost, note))
    return arrows


def _view_changes(rep: _Replica) -> dict[int, frozenset[int]]:
    """The VIEW-CHANGE senders a replica holds, per new view."""
    out: dict[int, set[int]] = {}
    for vc in rep.items("vcs"):
        nv, r = _fint(vc, "nv"), _fint(vc, "r")
        if nv is not None and r is not None:
            out.setdefault(nv, set()).add(r)
    return {k: frozenset(v) for k, v in out.items()}


def _checkpoint_votes(rep: _Replica) -> dict[int, dict[str, frozenset[int]]]:
    """The CHECKPOINT votes a replica holds: per sequence number, senders per digest."""
    out: dict[int, dict[str, set[int]]] = {}
    for ck in rep.items("cks"):
        n, r = _fint(ck, "n"), _fint(ck, "r")
        if n is not None and r is not None:
            out.setdefault(n, {}).setdefault(_digest(_fget(ck, "sd")), set()).add(r)
    return {n: {d: frozenset(s) for d, s in per.items()} for n, per in out.items()}


def _votes_text(ctx: _Context, per: Mapping[str, frozenset[int]]) -> str:
    return " · ".join(f"{d} from {ctx.names(s)}" for d, s in sorted(per.items()))


def _nv(rep: _Replica) -> TlaRecord | None:
    nv = _rec(rep.get("nvmsg") or TlaRecord(()))
    return nv if nv is not None and nv.get("t") == "NewView" else None


def _own_vcs(rep: _Replica) -> set[Value]:
    """The replica's own VIEW-CHANGEs it holds, in ``vcs`` or in the V of its NEW-VIEW."""
    found = {vc for vc in rep.items("vcs") if _fint(vc, "r") == rep.rid}
    nv = _nv(rep)
    if nv is not None and _fint(nv, "r") == rep.rid:
        v = nv.get("V")
        if isinstance(v, tuple):
            found |= {vc for vc in v if _fint(vc, "r") == rep.rid}
    return found


def _hist(rep: _Replica) -> tuple[Value, ...]:
    return rep.items("hist")


def _reaction(ctx: _Context, old: _Replica, new: _Replica, *, transfer: bool) -> list[str]:
    """What changed in a replica's protocol state, in the protocol's words."""
    out: list[str] = []
    if (old.view, old.active) != (new.view, new.active):
        primary = new.view % new.n
        if new.active:
            out.append(f"installs view {new.view} (primary {ctx.name(primary)})")
        else:
            out.append(f"moves to view {new.view}, waits for its NEW-VIEW")
    if _nv(old) is not None and _nv(new) is None:
        out.append(f"forgets the NEW-VIEW of v{_fint(_nv(old), 'v')}")
    old_plog = set(old.items("plog"))
    for entry in new.items("plog"):
        if entry not in old_plog and isinstance(entry, tuple) and len(entry) == 3:
            v, n, d = entry
            out.append(f"prepared v{v} n{n} {d if isinstance(d, str) else _short(d, 12)}")
    old_hist, new_hist = _hist(old), _hist(new)
    if new_hist[: len(old_hist)] == old_hist and len(new_hist) > len(old_hist):
        done = [
            f"n{len(old_hist) + k + 1} {_req_id(q)}"
            for k, q in enumerate(new_hist[len(old_hist) :])
        ]
        verb = "installs" if transfer else "executes"
        out.append(f"{verb} {', '.join(done)}" + (" (state transfer)" if transfer else ""))
    elif new_hist != old_hist:
        out.append(f"its log is now {_digest(new_hist)} (was {_digest(old_hist)})")
    if new.number("stable") > old.number("stable"):
        out.append(f"checkpoint n{new.number('stable')} stable")
    old_vcs, new_vcs = _view_changes(old), _view_changes(new)
    for nv_, senders in sorted(new_vcs.items()):
        if nv_ >= new.view and senders - old_vcs.get(nv_, frozenset()) and senders != {new.rid}:
            out.append(
                f"VIEW-CHANGE v{nv_} from {ctx.names(senders)} ({len(senders)} of {new.quorum})"
            )
    old_cks, new_cks = _checkpoint_votes(old), _checkpoint_votes(new)
    for n, per in sorted(new_cks.items()):
        if per != old_cks.get(n) and n > new.number("stable"):
            out.append(f"CHECKPOINT n{n} votes: {_votes_text(ctx, per)}")
    old_pending = {_req_id(q) for q in old.items("pending")}
    waiting = [_req_id(q) for q in new.items("pending") if _req_id(q) not in old_pending]
    if waiting:
        out.append(f"waits for {', '.join(waiting)}")
    if not out:
        out.append("no effect" if old.core() == new.core() else "records it")
    return out


def _inferred_sends(
    ctx: _Context,
    old: _Replica,
    new: _Replica,
    promised: Iterable[Value],
    delivered: Sequence[Value],
    transfer: bool,
) -> list[tuple[str, tuple[int, ...]]]:
    """What replica ``new.rid`` sent in a step whose outputs never reached ``chan`` (see the
    module docstring), as (label, intended receivers among the honest replicas and client).
    ``delivered``: the messages it handled in the step (a backup relays a REQUEST to the
    primary only when the REQUEST itself made it pending, not a PRE-PREPARE carrying it)."""
    me = new.rid
    others = tuple(r for r in ctx.honest if r != me)
    out: list[tuple[str, tuple[int, ...]]] = []
    for vc in sorted(_own_vcs(new) - _own_vcs(old), key=format_value):
        out.append((_label(vc, ctx.replies), others))
    nv_new, nv_old = _nv(new), _nv(old)
    if nv_new is not None and nv_new != nv_old and _fint(nv_new, "r") == me:
        out.append((_label(nv_new, ctx.replies), others))
    for p in sorted(promised, key=format_value):
        out.append((_vote_label(p), others))
    old_ck = {_fint(o, "n") for o in old.items("ownck")}
    for o in new.items("ownck"):
        n = _fint(o, "n")
        if n is not None and n not in old_ck:
            out.append((f"CHECKPOINT n{n} {_digest(_fget(o, 'h'))}", others))
    if not transfer:
        old_last = _mapping(old.get("lastreply") or TlaRecord(()), "lastreply")
        for c, rp in _mapping(new.get("lastreply") or TlaRecord(()), "lastreply").items():
            if rp != old_last.get(c) and _fget(rp, "t") == "Reply":
                out.append((_label(rp, ctx.replies), (ctx.n,)))
    old_fetched = set(old.items("fetched"))
    for r in new.items("fetched"):
        if r not in old_fetched and _is_int(r) and r in ctx.honest:
            out.append((f"FETCH-STATE after n{new.number('lastexec')}", (r,)))
    old_answered = set(old.items("answered"))
    for a in new.items("answered"):
        if a in old_answered or not (isinstance(a, tuple) and len(a) == 2 and _is_int(a[1])):
            continue
        to = a[1]
        if to not in ctx.honest:
            continue
        if a[0] == "fetch":
            out.append(("STATE-TRANSFER", (to,)))
        elif a[0] == "new_view" and nv_new is not None:
            out.append((_label(nv_new, ctx.replies), (to,)))
    primary = new.view % new.n
    if new.active and primary != me and primary in ctx.honest:
        old_pending = {_req_id(q) for q in old.items("pending")}
        requested = {_req_id(m) for m in delivered if _fget(m, "t") == "Request"}
        carried = {_req_id(_fget(m, "req")) for m in delivered if _fget(m, "t") == "PrePrepare"}
        for q in new.items("pending"):
            d = _req_id(q)
            if d not in old_pending and d in requested - carried:
                out.append((_label(q, ctx.replies), (primary,)))
    return out


def _actor(
    ctx: _Context,
    prev: _Snapshot,
    cur: _Snapshot,
    delivered_to: Sequence[int],
    senders: Sequence[int],
) -> int | None:
    """The honest replica that took the step: the receiver of what was delivered, else the
    one that retransmitted, else one whose state changed, else a sender."""
    if delivered_to:
        return delivered_to[0]
    for r in ctx.honest:
        if cur.rt.get(r) and not prev.rt.get(r):
            return r
    changed = [
        r for r in ctx.honest if r in prev.replicas and prev.replicas[r].raw != cur.replicas[r].raw
    ]
    if changed:
        return changed[0]
    honest_senders = [s for s in senders if s in ctx.honest]
    return honest_senders[0] if honest_senders else None


def _decreased(prev: _Snapshot, cur: _Snapshot, counter: str) -> bool:
    return counter in prev.counters and cur.counters.get(counter, 0) < prev.counters[counter]


def _step_events(ctx: _Context, action: str, prev: _Snapshot, cur: _Snapshot) -> list[Event]:
    events: list[Event] = []
    removed: dict[tuple[int, int], list[tuple[int, Value]]] = {}
    appended: dict[tuple[int, int], list[Value]] = {}
    for link in sorted(set(prev.chan) | set(cur.chan)):
        rem, app = _link_diff(prev.chan.get(link, ()), cur.chan.get(link, ()))
        if rem:
            removed[link] = rem
        if app:
            appended[link] = app

    dropped = _decreased(prev, cur, "lossLeft")
    omitted = _decreased(prev, cur, "omitsLeft")
    duplicated = _decreased(prev, cur, "dupLeft")
    timed_out = action == "FireTimeout" or _decreased(prev, cur, "timeoutsLeft")
    restarted = action == "Restart" or _decreased(prev, cur, "restartsLeft")
    retransmitted = [r for r in ctx.honest if cur.rt.get(r) and not prev.rt.get(r)]

    # whole-system events first: they explain the rows that follow
    if cur.healed and not prev.healed:
        events.append(Note(None, "=", "network heals (GST): nothing is lost from here on"))
    if cur.rounds > prev.rounds:
        events.append(Note(None, ".", f"round {cur.rounds} (the last round changed some state)"))
    for j in sorted(cur.cut - prev.cut):
        events.append(Note(j, "/", f"{ctx.name(j)} is cut off: what it sends or is sent is lost"))
    for j in sorted(prev.cut - cur.cut):
        if not (cur.healed and not prev.healed):
            events.append(Note(j, "/", f"{ctx.name(j)} reconnects"))

    delivered_to: list[int] = []
    transfer = False
    for (s, r), rem in sorted(removed.items()):
        labels = tuple(_label(m, ctx.replies, s) for _, m in rem)
        if dropped:
            events.append(Arrow(s, (r,), labels, lost=True, note="dropped in transit"))
            continue
        delivered_to.append(r)
        transfer = transfer or any(_fget(m, "t") == "StateTransfer" for _, m in rem)

    send_senders = sorted({s for (s, _r) in appended})
    actor = _actor(ctx, prev, cur, delivered_to, send_senders)

    # the actor's reaction: to what was delivered, to its timer, to a restart
    if actor is not None and actor in prev.replicas and actor in cur.replicas:
        old, new = prev.replicas[actor], cur.replicas[actor]
        reaction = _reaction(ctx, old, new, transfer=transfer)
        if delivered_to:
            got = _arrivals(ctx, removed, actor)
            events.append(Note(actor, "o", f"gets {got}: {'; '.join(reaction)}"))
        elif timed_out:
            events.append(Note(actor, "T", f"timer fires: {'; '.join(reaction)}"))
        elif restarted:
            lost_state = _volatile_loss(old, new)
            events.append(
                Note(
                    actor,
                    "R",
                    f"crashes and restarts from its database (view {new.view}, executed "
                    f"n{new.number('lastexec')}){lost_state}",
                )
            )
        elif retransmitted:
            if not any(s == actor for s, _r in appended):
                events.append(Note(actor, "o", "retransmits: nothing to send"))
        elif old.raw != new.raw:
            events.append(Note(actor, "o", f"{action}: {'; '.join(reaction)}"))

        # outputs that never reached a link
        promised = [p for p in cur.promises - prev.promises if _fint(p, "r") == actor]
        if omitted or actor in prev.cut:
            why = "send omission" if omitted else f"{ctx.name(actor)} is cut off"
            delivered = [m for (_s, r), rem in removed.items() if r == actor for _k, m in rem]
            inferred = _inferred_sends(ctx, old, new, promised, delivered, transfer)
            if inferred:
                events += _group_arrows(actor, inferred, lost=True, note=why)
            elif omitted:
                events.append(Note(actor, "x", "every output of this step is lost (send omission)"))

    # what was appended to links
    if duplicated:
        note = "duplicated by the network"
    elif retransmitted:
        note = "retransmission"
    elif action == "ClientRetry" or (cur.retried and not prev.retried):
        note = "client retry"
    else:
        note = ""
    for s, items in _sends(ctx, appended):
        kind = "Byzantine" if s not in ctx.honest and s != ctx.n else note
        labelled = [(_label(m, ctx.replies, s), rs) for m, rs in items]
        events += _group_arrows(s, labelled, note=kind)
        if s in ctx.honest and prev.cut and s not in prev.cut and not duplicated:
            cut_lost = [
                (
                    _label(m, ctx.replies, s),
                    tuple(
                        j for j in sorted(prev.cut) if j in ctx.honest and j != s and j not in rs
                    ),
                )
                for m, rs in items
                if _fget(m, "t") in _BROADCAST_TYPES
            ]
            cut_lost = [(label, rs) for label, rs in cut_lost if rs]
            events += _group_arrows(s, cut_lost, lost=True, note="cut off")

    # replies reach the client when they are sent (they do not travel on links)
    for d in sorted(cur.acks):
        for r in sorted(cur.acks[d] - prev.acks.get(d, frozenset())):
            events.append(Arrow(r, (ctx.n,), (f"REPLY {d}",)))

    # anyone else whose state moved or who got messages (not in a step of this spec, but a
    # hand-made or future trace may have one)
    for r in ctx.honest:
        if r == actor or r not in prev.replicas or r not in cur.replicas:
            continue
        old, new = prev.replicas[r], cur.replicas[r]
        what = "; ".join(_reaction(ctx, old, new, transfer=False))
        if r in delivered_to:
            events.append(Note(r, "o", f"gets {_arrivals(ctx, removed, r)}: {what}"))
        elif old.raw != new.raw:
            events.append(Note(r, "o", f"{action}: {what}"))
    if not events:
        events.append(Note(None, " ", "(no visible change)"))
    return events


def _arrivals(
    ctx: _Context, removed: Mapping[tuple[int, int], list[tuple[int, Value]]], receiver: int
) -> str:
    """What ``receiver`` took off its links in one step: ``X, Y from r0`` (per link)."""
    parts = []
    for (s, r), rem in sorted(removed.items()):
        if r != receiver:
            continue
        in_order = [k for k, _ in rem] == list(range(len(rem)))
        labels = ", ".join(_label(m, ctx.replies, s) for _, m in rem)
        parts.append(f"{labels} from {ctx.name(s)}" + ("" if in_order else " (out of order)"))
    return "; ".join(parts)


def _volatile_loss(old: _Replica, new: _Replica) -> str:
    lost = []
    for name, what in (
        ("pending", "pending requests"),
        ("prepares", "votes"),
        ("commits", "votes"),
        ("vcs", "VIEW-CHANGEs"),
        ("cks", "checkpoint votes"),
    ):
        if len(new.items(name)) < len(old.items(name)) and what not in lost:
            lost.append(what)
    if len(_hist(new)) < len(_hist(old)):
        lost.append("its executed log (amnesia)")
    return f"; forgets {', '.join(lost)}" if lost else ""


def _initial_events(ctx: _Context, snap: _Snapshot) -> list[Event]:
    appended = {link: list(q) for link, q in snap.chan.items() if q}
    events: list[Event] = []
    for s, items in _sends(ctx, appended):
        events += _group_arrows(
            s, [(_label(m, ctx.replies, s), rs) for m, rs in items], note="in flight"
        )
    if not events:
        events.append(Note(None, " ", "nothing in flight"))
    return events


def _waiting(rep: _Replica) -> tuple[bool, str]:
    """``PBFTReplica!Waiting`` and why: whether the replica's view-change timer runs."""
    if not rep.active:
        have = _view_changes(rep).get(rep.view, frozenset())
        runs = len(have) >= rep.quorum
        names = ", ".join(f"r{r}" for r in sorted(have)) or "nobody"
        return runs, (
            f"VIEW-CHANGE v{rep.view} from {names} ({len(have)} of {rep.quorum}): "
            + ("timer runs" if runs else "timer stopped")
        )
    pending = [_req_id(q) for q in rep.items("pending")]
    if pending:
        return True, f"pending {', '.join(pending)}: timer runs"
    return False, "nothing pending: no timer"


def _final(
    ctx: _Context, snap: _Snapshot, index: int, meta: Mapping[str, Any], loop: Any
) -> list[str]:
    lines: list[str] = []
    outcome = meta.get("outcome")
    if outcome == "deadlock":
        lines.append(f"final state {index}: deadlock (no step is enabled)")
    elif isinstance(outcome, str) and outcome:
        lines.append(f"final state {index}: {outcome} violated")
    else:
        lines.append(f"final state {index}")
    requests = sorted(set(snap.acks) | {d for d in ctx.replies.values()})
    timers: list[int] = []
    for r in ctx.honest:
        if r not in snap.replicas:
            continue
        rep = snap.replicas[r]
        state = "active" if rep.active else "not active"
        runs, why = _waiting(rep)
        if runs:
            timers.append(r)
        hist = [_req_id(q) for q in _hist(rep)]
        executed = ", ".join(f"n{k + 1} {d}" for k, d in enumerate(hist)) or "nothing"
        extra = ""
        for n, per in sorted(_checkpoint_votes(rep).items()):
            if n > rep.number("stable"):
                votes = _votes_text(ctx, per)
                extra += f" · CHECKPOINT n{n} votes {votes} ({rep.quorum} matching needed)"
        lines.append(
            f"  {ctx.name(r)}: view {rep.view} {state}, {why} · executed {executed} · "
            f"stable n{rep.number('stable')}{extra}"
        )
    f = next(iter(snap.replicas.values())).f
    for d in requests:
        got = snap.acks.get(d, frozenset())
        lines.append(
            f"  client: request {d} has replies from {ctx.names(got) if got else 'nobody'} "
            f"({f + 1} needed)"
        )
    in_flight = sum(len(q) for q in snap.chan.values())
    net = ["healed" if snap.healed else "not healed"]
    net.append(f"{in_flight} message(s) in flight" if in_flight else "nothing in flight")
    if snap.healed:
        net.append(
            f"round {snap.rounds}" + (", changing state" if snap.changed else ", nothing changed")
        )
    if snap.retried:
        net.append("the client retried and nothing changed")
    lines.append("  network: " + ", ".join(net))
    unexecuted = {
        d: [
            r
            for r in ctx.honest
            if r in snap.replicas and d not in {_req_id(q) for q in _hist(snap.replicas[r])}
        ]
        for d in requests
    }
    missing = {d: rs for d, rs in unexecuted.items() if rs}
    done = all(len(snap.acks.get(d, frozenset())) >= f + 1 for d in snap.acks)
    quiet = (
        snap.healed
        and not in_flight
        and all(snap.rt.get(r, False) for r in ctx.honest)
        and not snap.changed
    )
    if quiet and not timers and (done or snap.retried):
        why = (
            "stuck: nothing in flight, a whole round of retransmissions changed nothing, "
            "no view-change timer runs"
        )
        why += ", the client has its replies" if done else ", the client's retry changed nothing"
        if missing:
            why += "; yet " + "; ".join(
                f"{d} is not executed at {ctx.names(rs)}" for d, rs in missing.items()
            )
        lines.append("  " + why)
    elif snap.healed and snap.changed and not in_flight:
        lines.append(f"  the round bound is reached with round {snap.rounds} still changing state")
    if isinstance(loop, int) and not isinstance(loop, bool):
        via = f" via {meta['loop_action']}" if isinstance(meta.get("loop_action"), str) else ""
        lines.append(f"  then back to state {loop}{via}, forever")
    return lines


def chart_from_itf(data: Mapping[str, Any]) -> Chart:
    """The chart of an ITF trace of PBFTReplicaSystem; :class:`SequenceError` if it is not one."""
    if not isinstance(data, Mapping):
        raise SequenceError("not an ITF trace: the document is not an object")
    states = data.get("states")
    if not isinstance(states, list) or not states:
        raise SequenceError('not an ITF trace: no "states" list, or an empty one')
    snaps: list[_Snapshot] = []
    actions: list[str] = []
    indices: list[int] = []
    for i, state in enumerate(states):
        if not isinstance(state, Mapping):
            raise SequenceError(f"not an ITF trace: state {i} is not an object")
        snaps.append(_snapshot(state, i))
        smeta = state.get("#meta")
        action = smeta.get("action") if isinstance(smeta, Mapping) else None
        actions.append(action if isinstance(action, str) else "?")
        index = smeta.get("index") if isinstance(smeta, Mapping) else None
        indices.append(index if isinstance(index, int) and not isinstance(index, bool) else i)
    first = snaps[0]
    n = next(iter(first.replicas.values())).n
    if not 1 <= n <= _MAX_REPLICAS:
        raise SequenceError(f"state 0: N = {n} replicas (a chart has 1 to {_MAX_REPLICAS})")
    for k, snap in enumerate(snaps):
        if set(snap.replicas) != set(first.replicas):
            raise SequenceError(
                f"state {k}: rs has replicas {sorted(snap.replicas)}, "
                f"state 0 has {sorted(first.replicas)}"
            )
        for r, rep in snap.replicas.items():
            if rep.n != n or not 0 <= r < n:
                raise SequenceError(
                    f"state {k}: rs[{r}] does not belong to a system of {n} replicas"
                )
        for s, r in snap.chan:
            if not (0 <= s <= n and 0 <= r < n):
                raise SequenceError(
                    f"state {k}: chan has a link <<{s}, {r}>>, but the replicas are "
                    f"0..{n - 1} and the client is {n}"
                )
    honest = tuple(sorted(first.replicas))
    replies: dict[tuple[str, int], str] = {}
    for snap in snaps:
        for queue in snap.chan.values():
            for m in queue:
                _note_request(replies, m)
        for rep in snap.replicas.values():
            for q in (*_hist(rep), *rep.items("pending")):
                _note_request(replies, q)
    ctx = _Context(n, honest, replies)
    steps = [Step(indices[0], actions[0], tuple(_initial_events(ctx, first)))]
    for k in range(1, len(snaps)):
        steps.append(
            Step(
                indices[k], actions[k], tuple(_step_events(ctx, actions[k], snaps[k - 1], snaps[k]))
            )
        )
    meta = data.get("#meta")
    meta = meta if isinstance(meta, Mapping) else {}
    title_parts = ["PBFTReplicaSystem counterexample"]
    if isinstance(meta.get("model"), str):
        title_parts.append(f"model {meta['model']}")
    title_parts.append(f"{len(states)} states")
    byz = [p for p in range(n) if p not in honest]
    legend = "c = the client; " + ", ".join(f"r{p}" for p in honest) + " honest"
    if byz:
        legend += f"; {', '.join(f'r{p}' for p in byz)} Byzantine"
        legend += " (runs no code: messages to it are not modelled)"
    final = _final(ctx, snaps[-1], indices[-1], meta, data.get("loop"))
    return Chart(n, honest, " · ".join(title_parts), tuple(steps), tuple(final), (legend,))


def _note_request(table: dict[tuple[str, int], str], m: Value) -> None:
    if _fget(m, "t") == "Request":
        c, ts, d = _fstr(m, "c"), _fint(m, "ts"), _fstr(m, "d")
        if c is not None and ts is not None and d is not None:
            table.setdefault((c, ts), d)


# ----------------------------------------------------------------------------------------------
# Text rendering
# ----------------------------------------------------------------------------------------------

_COL = 4  # characters per lifeline


def _wrap(text: str, width: int) -> list[str]:
    """Wrap at spaces into lines of at most ``width``, continuations indented by two (so a
    long row stays inside its text column instead of running off a docs page)."""
    words = text.split(" ")
    lines: list[str] = []
    current = ""
    for word in words:
        candidate = f"{current} {word}" if current else word
        if len(candidate) > width and current:
            lines.append(current)
            current = "  " + word
        else:
            current = candidate
    lines.append(current)
    return lines


def _grid(chart: Chart) -> list[str]:
    width = _COL * len(chart.participants) - (_COL - 1)
    cells = [" "] * width
    for k, p in enumerate(chart.participants):
        cells[k * _COL] = ":" if chart.byzantine(p) else "|"
    return cells


def _pos(chart: Chart, p: int) -> int:
    return chart.participants.index(p) * _COL


def _arrow_cells(chart: Chart, arrow: Arrow) -> str:
    cells = _grid(chart)
    s = _pos(chart, arrow.sender)
    ends = [_pos(chart, r) for r in arrow.receivers]
    lo, hi = min([s, *ends]), max([s, *ends])
    line = "~" if arrow.lost else "-"
    for x in range(lo, hi + 1):
        cells[x] = line
    for e in ends:
        cells[e] = "x" if arrow.lost else (">" if e > s else "<")
    cells[s] = "*"
    return "".join(cells)


def _note_cells(chart: Chart, note: Note) -> str:
    cells = _grid(chart)
    if note.actor is None:
        if note.marker.strip():
            cells = [note.marker if c == " " or c in "|:" else c for c in cells]
    else:
        cells[_pos(chart, note.actor)] = note.marker
    return "".join(cells)


def _arrow_text(chart: Chart, arrow: Arrow) -> str:
    text = ", ".join(arrow.labels)
    if arrow.lost:
        text += f"  [lost: {arrow.note}]" if arrow.note else "  [lost]"
    elif arrow.note:
        text += f"  [{arrow.note}]"
    return text


def render_text(chart: Chart) -> str:
    """The chart in monospace: a column per lifeline, a row per event, the text on the right.

    ``*-->`` a message sent (a head at each receiver), ``*~~x`` lost, ``o`` a replica handles
    what arrived (its reaction follows), ``T`` its timer fires, ``R`` it restarts, ``/`` a
    partition, ``=`` the heal, ``.`` a new round after the heal."""
    action_w = max([len(s.action) for s in chart.steps] + [6])
    prefix_w = 5 + 1 + action_w + 2
    head = _grid(chart)
    header_cells = [" "] * (len(head) + 4)
    for p in chart.participants:
        name = chart.name(p)
        x = _pos(chart, p)
        for k, ch in enumerate(name):
            header_cells[x + k] = ch
    out = [chart.title, *chart.legend]
    out.append(
        "legend: *--> sent (a head per receiver)  *~~x lost  o handles what arrived  "
        "T timer fires  R restart  / partition  = heal  . new round"
    )
    out.append("")
    out.append(f"{'step':>5} {'action':<{action_w}}  " + "".join(header_cells).rstrip())
    for step in chart.steps:
        first = True
        for event in step.events:
            if isinstance(event, Arrow):
                cells, text = _arrow_cells(chart, event), _arrow_text(chart, event)
            else:
                cells, text = _note_cells(chart, event), event.text
            for k, piece in enumerate(_wrap(text, _TEXT_WIDTH)):
                left = f"{step.index:>5} {step.action:<{action_w}}  " if first else " " * prefix_w
                grid = cells if k == 0 else "".join(_grid(chart))
                out.append((left + grid + "   " + piece).rstrip())
                first = False
    out.append("")
    out += list(chart.final)
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------
# Mermaid rendering
# ----------------------------------------------------------------------------------------------


def _mermaid_escape(text: str) -> str:
    out = []
    for ch in text:
        if ch == "#":
            out.append("#35;")
        elif ch == ";":
            out.append("#59;")
        elif ch == "<":
            out.append("#lt;")
        elif ch == ">":
            out.append("#gt;")
        else:
            out.append(ch)
    return "".join(out)


def render_mermaid(chart: Chart) -> str:
    """The chart as a Mermaid ``sequenceDiagram``: one arrow per receiver (``->>`` sent,
    ``-->>`` retransmitted, duplicated or in flight initially, ``-x`` lost), a note on the
    lifeline for what a replica does, a note across all lifelines for each step."""
    names = {p: chart.name(p) for p in chart.participants}
    first, last = names[chart.participants[0]], names[chart.participants[-1]]
    out = ["sequenceDiagram"]
    out.append(f"    %% {_mermaid_escape(chart.title)}")
    for p in chart.participants:
        if p == chart.client:
            out.append(f"    participant {names[p]} as client")
        elif chart.byzantine(p):
            out.append(f"    participant {names[p]} as {names[p]} (Byzantine)")
        else:
            out.append(f"    participant {names[p]}")
    for step in chart.steps:
        out.append(f"    Note over {first},{last}: {step.index} · {_mermaid_escape(step.action)}")
        for event in step.events:
            if isinstance(event, Arrow):
                text = _mermaid_escape(_arrow_text(chart, event))
                if event.lost:
                    arrow = "-x"
                elif event.note in ("retransmission", "duplicated by the network", "in flight"):
                    arrow = "-->>"
                else:
                    arrow = "->>"
                for r in event.receivers:
                    out.append(f"    {names[event.sender]}{arrow}{names[r]}: {text}")
            elif event.actor is None:
                if event.text:
                    out.append(f"    Note over {first},{last}: {_mermaid_escape(event.text)}")
            else:
                out.append(f"    Note over {names[event.actor]}: {_mermaid_escape(event.text)}")
    final = "<br/>".join(_mermaid_escape(line.strip()) for line in chart.final)
    out.append(f"    Note over {first},{last}: {final}")
    return "\n".join(out) + "\n"


def render(chart: Chart, fmt: str) -> str:
    """``render_text`` or ``render_mermaid`` by name (``text`` | ``mermaid``)."""
    if fmt == "text":
        return render_text(chart)
    if fmt == "mermaid":
        return render_mermaid(chart)
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


# ----------------------------------------------------------------------------------------------
# The committed pictures (ostrom docs)
# ----------------------------------------------------------------------------------------------

DOCS_DIR = Path("docs") / "counterexamples"


def _trace_stem(path: Path) -> str:
    return path.name.split(".itf.json")[0]


def _section(trace: Path, data: Mapping[str, Any], chart: Chart) -> str:
    stem = _trace_stem(trace)
    meta = data.get("#meta")
    meta = meta if isinstance(meta, Mapping) else {}
    facts = []
    if isinstance(meta.get("model"), str):
        facts.append(f"Model `{meta['model']}`")
    outcome = meta.get("outcome")
    if isinstance(outcome, str):
        facts.append(f"{outcome} violated" if outcome != "deadlock" else "deadlock")
    facts.append(f"{len(chart.steps)} states")
    return (
        f"### {stem}\n\n"
        f"{', '.join(facts)}: [`{trace.name}`]({trace.name}) (ITF), "
        f"[`{stem}.txt`]({stem}.txt) (text chart), [`{stem}.mmd`]({stem}.mmd) (Mermaid).\n\n"
        f"<!-- svg: {stem}.svg -->\n```mermaid\n{render_mermaid(chart)}```\n"
    )


def _charts(root: Path) -> list[tuple[Path, Mapping[str, Any], Chart]]:
    """Each trace committed in docs/counterexamples/ (sorted), read, with its chart."""
    folder = root / DOCS_DIR
    out: list[tuple[Path, Mapping[str, Any], Chart]] = []
    for trace in sorted({*folder.glob("*.itf.json.gz"), *folder.glob("*.itf.json")}):
        data = read_itf(trace)
        try:
            out.append((trace, data, chart_from_itf(data)))
        except SequenceError as exc:
            raise SequenceError(f"{trace}: {exc}") from None
    return out


def counterexample_charts(root: Path) -> dict[Path, str]:
    """The charts of the traces committed in docs/counterexamples/, with the content each
    must have: ``NAME.txt`` and ``NAME.mmd`` per ``NAME.itf.json[.gz]``, so a picture cannot
    drift from its trace or from this module (``ostrom docs`` writes them)."""
    out: dict[Path, str] = {}
    for trace, _data, chart in _charts(root):
        stem = _trace_stem(trace)
        out[trace.parent / f"{stem}.txt"] = render_text(chart)
        out[trace.parent / f"{stem}.mmd"] = render_mermaid(chart)
    return out


def counterexample_sections(root: Path) -> str:
    """The body of docs/counterexamples/README.md's generated block: a section per trace,
    with its Mermaid picture (which GitHub renders)."""
    return "\n".join(_section(trace, data, chart) for trace, data, chart in _charts(root))
