"""Trace validation of the ``pbft`` layer: one replica's log against spec/PBFTReplica.tla.

``ostrom validate-trace FILE`` dispatches here (``trace.LAYER_TRACES``) when the log's
header says ``"layer": "pbft"``.  The log (``ostrom-trace/1``: a header with ``params`` and
``setup``, then per step the command, its result, the replica's public state and its
events) is compiled into the TLA+ module ``PBFTTraceLog``, which
``spec/PBFTReplicaTrace.tla`` walks with a cursor; spec/PBFTReplica.tla is a
deterministic transition function of one honest replica, so a step is accepted iff the
spec's step produces exactly the logged rejections, executions, sent messages and state.

What stays outside TLA+ and is done here (spec/PBFTReplica.tla's header is the contract):

* wire formats and cryptography: every signed envelope is parsed (``signed_from_tree``)
  and verified with the keys derived from ``setup.key_seed``; the spec gets an *abstract
  message*, a record with the type, the protocol fields and ``sok`` (the signature is
  valid and the signer is the principal the message names), and for a PRE-PREPARE ``dok``
  (its digest is its request's).  A command whose message is not a well-typed envelope is
  ``[t |-> "malformed"]``;
* digests: a request digest becomes a request id (the first 16 hex digits; the null
  request is ``"null"``); a state digest, an execution chain and an application digest
  become the history they hash (a sequence of abstract requests; for the application
  digest, the requests applied), found among the histories the log itself shows (every
  prefix of its executions, and of each state transfer it receives); a digest matching
  none is an opaque token that equals nothing the spec computes;
* ``DRank``: the order of the hex request digests (a tie-break of PBFT's O).

Refused as unusable (exit 2): a header or step that is not a pbft log, parameters or a
setup the layer would not build, ``n > 10`` (the spec orders by replica number where the
replica orders by the name ``r<i>``, which agree only below 10), an event or state that is
not the layer's.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ostrom import layout
from ostrom.consensus.crypto import KeyRing, make_keys
from ostrom.consensus.messages import (
    NULL_DIGEST,
    Checkpoint,
    Commit,
    FetchState,
    Malformed,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Reply,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    canonical,
    request_digest,
    sha256_hex,
    signed_from_tree,
)
from ostrom.consensus.principals import (
    DEFAULT_BASE_TIMEOUT,
    DEFAULT_CLIENTS,
    principals,
)
from ostrom.consensus.replica import GENESIS_CHAIN, chain_step, signer_matches, state_digest
from ostrom.protocol.params import ParamError, Params
from ostrom.protocol.version import TRACE_FORMAT
from ostrom.verify.tlc.jar import TlcSetupError
from ostrom.verify.tlc.values import (
    ModelValue,
    Opaque,
    TlaFunction,
    TlaRecord,
    TlaSet,
    Value,
    record,
    tla,
)
from ostrom.verify.trace.log import (
    UnusableLog,
    read_jsonl,
    require_steps,
    vector_log,
)
from ostrom.verify.trace.tlc import run_directory, run_java_tlc
from ostrom.verify.trace.verdict import (
    Failure,
    Verdict,
    validate_file_with,
    validate_paths_with,
)

__all__ = [
    "SPEC",
    "PbftLog",
    "log_from_vector",
    "read_log",
    "validate_file",
    "validate_logs",
    "validate_paths",
]

SPEC: Final = "spec/PBFTReplica.tla"
TRACE_MODULE: Final = "PBFTReplicaTrace"
REPLICA_MODULE: Final = "PBFTReplica"
LOG_MODULE: Final = "PBFTTraceLog"
#: The public state of the layer (PBFTLayer.state), in the spec's Observed order.
STATE_KEYS: Final = (
    "view",
    "active",
    "primary",
    "last_exec",
    "exec_chain",
    "app_digest",
    "stable_seq",
    "stable_digest",
    "low",
    "high",
    "pending",
    "timer",
    "timeout",
)
NULL_ID: Final = "null"
NULL_REQ: Final = record(t="null", d=NULL_ID)


# --- reading a log ------------------------------------------------------------------------


@dataclass
class PbftStep:
    line: int
    command: Any
    result: str
    state: Mapping[str, Any]
    events: list[Any]


@dataclass
class PbftLog:
    name: str
    params: dict[str, Any]
    setup: dict[str, Any]
    steps: list[PbftStep]


def parse_log(
    name: str, header: Any, steps: Sequence[Any], lines: Sequence[int] | None = None
) -> PbftLog:
    if not isinstance(header, dict) or header.get("format") != TRACE_FORMAT:
        raise UnusableLog(f"{name}:1: not an {TRACE_FORMAT} header (format field)")
    if header.get("layer") != "pbft":
        raise UnusableLog(f"{name}:1: layer {header.get('layer')!r} is not pbft")
    params, setup = header.get("params", {}), header.get("setup", {})
    if not isinstance(params, dict) or not isinstance(setup, dict):
        raise UnusableLog(f"{name}:1: params and setup must be objects")
    out: list[PbftStep] = []
    for i, doc in enumerate(steps):
        n = lines[i] if lines is not None else i + 2
        if not isinstance(doc, dict) or set(doc) - {"command", "result", "state", "events"}:
            raise UnusableLog(f"{name}:{n}: a step is {{command, result, state, events}}")
        if "command" not in doc or not isinstance(doc.get("result"), str):
            raise UnusableLog(f"{name}:{n}: a step needs a command and a result string")
        state, events = doc.get("state"), doc.get("events", [])
        if not isinstance(state, dict) or set(state) != set(STATE_KEYS):
            raise UnusableLog(f"{name}:{n}: the state is not the pbft layer's public state")
        if not isinstance(events, list):
            raise UnusableLog(f"{name}:{n}: events must be a list")
        out.append(PbftStep(n, doc["command"], doc["result"], state, events))
    return PbftLog(name, dict(params), dict(setup), out)


def read_log(path: Path) -> PbftLog:
    """Read a pbft ostrom-trace/1 file; ``UnusableLog`` names the first problem."""
    header, steps, lines = read_jsonl(path)
    return parse_log(str(path), header, steps, lines)


def log_from_vector(doc: Mapping[str, Any]) -> PbftLog:
    """The trace log of a pbft vector: its commands and expected results, events, states."""
    header, steps = vector_log(doc)
    return parse_log(str(doc.get("id", "vector")), header, steps)


# --- abstraction ----------------------------------------------------------------------------


def rid(digest: str) -> str:
    """The request id of a request digest (PBFTReplica.tla: `d`)."""
    return NULL_ID if digest == NULL_DIGEST else digest[:16]


def opaque(hexdigest: Any) -> tuple[TlaRecord]:
    """A digest that hashes no history the log shows: equals nothing the spec computes."""
    return (record(t="opaque", x=str(hexdigest)[:16]),)


class Abstractor:
    """Abstract messages and digests of one log (PBFTReplica.tla's header)."""

    def __init__(self, n: int, keyring: KeyRing) -> None:
        self.n = n
        self.keyring = keyring
        self.requests: dict[str, Signed] = {}  # request digest -> a signed request
        self.digests: set[str] = set()  # every request digest named
        self.sd: dict[str, tuple[Any, ...]] = {}  # state digest -> history
        self.chain: dict[str, tuple[Any, ...]] = {GENESIS_CHAIN: ()}
        self.app: dict[str, tuple[Any, ...]] = {}

    def authentic(self, s: Signed) -> bool:  # Replica._authentic
        return self.keyring.verify(s) and signer_matches(s, self.n)

    # collecting requests (for the histories) --------------------------------------------
    def collect(self, obj: Any) -> None:
        if isinstance(obj, Signed):
            if isinstance(obj.message, Request):
                d = request_digest(obj)
                self.digests.add(d)
                if self.authentic(obj):
                    self.requests.setdefault(d, obj)
            self.collect(obj.message)
        elif isinstance(obj, PreparedCert):
            self.collect(obj.pre_prepare)
            for p in obj.prepares:
                self.collect(p)
        elif isinstance(obj, tuple):
            for x in obj:
                self.collect(x)
        elif isinstance(obj, PrePrepare | Prepare | Commit):
            self.digests.add(obj.digest)
            if isinstance(obj, PrePrepare):
                self.collect(obj.request)
        elif isinstance(obj, ViewChange):
            self.collect(obj.checkpoint_proof)
            self.collect(obj.prepared)
        elif isinstance(obj, NewView):
            self.collect(obj.view_changes)
            self.collect(obj.pre_prepares)
        elif isinstance(obj, StateTransfer):
            self.collect(obj.requests)
            self.collect(obj.checkpoint_proof)

    def add_history(self, reqs: Sequence[Signed | None]) -> None:
        """Register every prefix of the history ``reqs`` (chain, app and state digests)."""
        chain = GENESIS_CHAIN
        app = GENESIS_CHAIN
        last_ts: dict[str, int] = {}
        hist: list[Any] = []
        applied: list[Any] = []
        self.app.setdefault(app, ())
        self.sd.setdefault(state_digest(chain, app), ())
        for r in reqs:
            chain = chain_step(chain, request_digest(r))
            hist.append(self.request(r))
            if r is not None and isinstance(r.message, Request):
                m = r.message
                if m.timestamp > last_ts.get(m.client, 0):
                    last_ts[m.client] = m.timestamp
                    app = sha256_hex(app.encode() + canonical(m.operation))
                    applied.append(self.request(r))
            self.chain.setdefault(chain, tuple(hist))
            self.app.setdefault(app, tuple(applied))
            self.sd.setdefault(state_digest(chain, app), tuple(hist))

    # abstract values ---------------------------------------------------------------------
    def request(self, r: Signed | None) -> TlaRecord:
        if r is None:
            return NULL_REQ
        return self.message(r)

    def message(self, s: Signed) -> TlaRecord:
        m = s.message
        ok = self.authentic(s)
        if isinstance(m, Request):
            return record(t="Request", c=m.client, ts=m.timestamp, d=rid(request_digest(s)), sok=ok)
        if isinstance(m, PrePrepare):
            return record(
                t="PrePrepare",
                v=m.view,
                n=m.seq,
                d=rid(m.digest),
                r=m.replica,
                req=self.request(m.request),
                dok=m.digest == request_digest(m.request),
                sok=ok,
            )
        if isinstance(m, Prepare | Commit):
            return record(t=m.TAG, v=m.view, n=m.seq, d=rid(m.digest), r=m.replica, sok=ok)
        if isinstance(m, Checkpoint):
            sd = self.sd.get(m.state_digest, opaque(m.state_digest))
            return record(t="Checkpoint", n=m.seq, sd=sd, r=m.replica, sok=ok)
        if isinstance(m, ViewChange):
            return record(
                t="ViewChange",
                nv=m.new_view,
                s=m.last_stable_seq,
                proof=tuple(self.message(p) for p in m.checkpoint_proof),
                P=tuple(self.cert(c) for c in m.prepared),
                r=m.replica,
                sok=ok,
            )
        if isinstance(m, NewView):
            return record(
                t="NewView",
                v=m.view,
                V=tuple(self.message(x) for x in m.view_changes),
                O=tuple(self.message(x) for x in m.pre_prepares),
                r=m.replica,
                sok=ok,
            )
        if isinstance(m, FetchState):
            return record(t="FetchState", after=m.after_seq, r=m.replica, sok=ok)
        if isinstance(m, StateTransfer):
            return record(
                t="StateTransfer",
                after=m.after_seq,
                reqs=tuple(self.request(r) for r in m.requests),
                app=self.app.get(m.app_digest, opaque(m.app_digest)),
                proof=tuple(self.message(p) for p in m.checkpoint_proof),
                r=m.replica,
                sok=ok,
            )
        if isinstance(m, Reply):
            res = m.result.get("n") if isinstance(m.result, dict) else None
            return record(
                t="Reply",
                v=m.view,
                ts=m.timestamp,
                c=m.client,
                r=m.replica,
                res=res if isinstance(res, int) and not isinstance(res, bool) else -2,
                sok=ok,
            )
        return record(t=type(m).__name__, sok=False)  # PreparedCert: never authentic

    def cert(self, c: PreparedCert) -> TlaRecord:
        return record(
            pp=self.message(c.pre_prepare), preps=tuple(self.message(p) for p in c.prepares)
        )


# --- compiling a log --------------------------------------------------------------------------


def _nat(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


@dataclass
class Compiled:
    log: PbftLog
    cfg: TlaRecord
    steps: list[TlaRecord]
    digests: set[str]


def _setup(log: PbftLog) -> tuple[int, int, int, int, list[str], int, Params]:
    try:
        p = Params.from_mapping(log.params)
    except ParamError as exc:
        raise UnusableLog(f"{log.name}: bad params: {exc}") from None
    s = log.setup
    n, f, i, seed = (s.get(k) for k in ("n", "f", "id", "key_seed"))
    if not (_nat(n) and _nat(f) and _nat(i) and _nat(seed)):
        raise UnusableLog(f"{log.name}: setup needs natural numbers n, f, id and key_seed")
    assert isinstance(n, int) and isinstance(f, int) and isinstance(i, int)
    assert isinstance(seed, int)
    if n < 3 * f + 1 or not 0 <= i < n:
        raise UnusableLog(f"{log.name}: setup n={n}, f={f}, id={i}: not a replica the layer builds")
    if n > 10:
        raise UnusableLog(
            f"{log.name}: n={n} > 10: the replica orders proofs by the name r<i>, the spec by "
            "the number i; they agree only for n <= 10"
        )
    clients = s.get("clients", list(DEFAULT_CLIENTS))
    if not isinstance(clients, list) or not all(isinstance(c, str) and c for c in clients):
        raise UnusableLog(f"{log.name}: setup.clients must be a list of names")
    base = s.get("base_timeout", DEFAULT_BASE_TIMEOUT)
    if not _nat(base) or base == 0 or base * 2**20 > 2**31 - 1:
        raise UnusableLog(
            f"{log.name}: setup.base_timeout {base!r}: must be positive and base x 2^20 must "
            "fit TLC's 32-bit integers"
        )
    return n, f, i, seed, clients, base, p


def _parse_signed(tree: Any) -> Signed | None:
    try:
        return signed_from_tree(tree)
    except (Malformed, RecursionError, TypeError, ValueError):
        return None


def _command(cmd: Any) -> tuple[str, Signed | None]:
    """(op, message): op "invalid" for a command PBFTLayer.step refuses, "msg" with None
    for a message that is not a well-typed envelope (the replica counts it malformed)."""
    if not isinstance(cmd, Mapping):
        return "invalid", None
    op = cmd.get("op")
    if op in ("request", "message") and set(cmd) == {"op", "message"}:
        tree = cmd["message"]
        if not isinstance(tree, dict):
            return "invalid", None
        if op == "request":
            inner = tree.get("message")
            if not isinstance(inner, dict) or inner.get("type") != "Request":
                return "invalid", None
        return "msg", _parse_signed(tree)
    if op in ("timeout", "retransmit") and set(cmd) == {"op"}:
        return str(op), None
    return "invalid", None


def compile_log(log: PbftLog) -> Compiled:
    n, f, i, seed, clients, base, p = _setup(log)
    require_steps(log.name, log.steps)  # after the header's own problems
    keyring, _ = make_keys(seed, principals(n, clients))
    ab = Abstractor(n, keyring)
    # first pass: every signed message of the log (commands and sent messages)
    parsed: list[tuple[str, Signed | None, list[tuple[str, Signed]]]] = []
    executed: list[str] = []
    transfers: list[StateTransfer] = []
    for st in log.steps:
        op, msg = _command(st.command)
        if msg is not None:
            ab.collect(msg)
            if isinstance(msg.message, StateTransfer):
                transfers.append(msg.message)
        sends: list[tuple[str, Signed]] = []
        for ev in st.events:
            if not isinstance(ev, dict) or ev.get("event") not in ("reject", "execute", "send"):
                raise UnusableLog(f"{log.name}:{st.line}: not a pbft event: {ev!r}")
            if ev["event"] == "send":
                s = _parse_signed(ev.get("message"))
                if s is None or not isinstance(ev.get("dest"), str):
                    raise UnusableLog(f"{log.name}:{st.line}: a sent message is not a signed one")
                ab.collect(s)
                sends.append((ev["dest"], s))
            elif ev["event"] == "execute":
                if not _nat(ev.get("seq")) or not isinstance(ev.get("digest"), str):
                    raise UnusableLog(f"{log.name}:{st.line}: an execute event needs seq, digest")
                executed.append(ev["digest"])
        parsed.append((op, msg, sends))

    def body(d: str) -> Signed | None:
        return None if d == NULL_DIGEST else ab.requests.get(d)

    history = [body(d) for d in executed]
    ab.add_history(history)
    for t in transfers:
        ab.add_history([*history[: t.after_seq], *t.requests])

    steps: list[TlaRecord] = []
    for st, (op, msg, sends) in zip(log.steps, parsed, strict=True):
        if op == "msg":
            inp = record(op="msg", m=record(t="malformed") if msg is None else ab.message(msg))
        else:
            inp = record(op=op)
        rej = tuple(str(ev.get("reason")) for ev in st.events if ev.get("event") == "reject")
        exe = tuple(
            record(n=ev["seq"], d=rid(ev["digest"]), res=_result(ev.get("result")))
            for ev in st.events
            if ev.get("event") == "execute"
        )
        out = tuple(record(dest=dest, m=ab.message(s)) for dest, s in sends)
        steps.append(
            record(inp=inp, res=st.result, rej=rej, exe=exe, out=out, obs=_observed(st, ab, log))
        )
    cfg = record(
        n=n,
        f=f,
        id=i,
        k=p.checkpoint_k,
        w=p.watermark_window,
        base=base,
        clients=frozenset(clients),
    )
    return Compiled(log, cfg, steps, ab.digests)


def _result(res: Any) -> int:
    if res is None:
        return -1
    k = res.get("n") if isinstance(res, dict) else None
    return k if isinstance(k, int) and not isinstance(k, bool) else -2


def _observed(st: PbftStep, ab: Abstractor, log: PbftLog) -> TlaRecord:
    s = st.state
    for k in STATE_KEYS:
        v = s[k]
        if k in ("exec_chain", "app_digest", "stable_digest"):
            if not isinstance(v, str):
                raise UnusableLog(f"{log.name}:{st.line}: state.{k} is not a digest")
        elif k in ("active", "timer"):
            if not isinstance(v, bool):
                raise UnusableLog(f"{log.name}:{st.line}: state.{k} is not a boolean")
        elif not _nat(v) or v > 2**31 - 1:
            raise UnusableLog(f"{log.name}:{st.line}: state.{k} is not a natural number")
    fields: dict[str, Any] = {k: s[k] for k in STATE_KEYS}
    fields["exec_chain"] = ab.chain.get(s["exec_chain"], opaque(s["exec_chain"]))
    fields["app_digest"] = ab.app.get(s["app_digest"], opaque(s["app_digest"]))
    fields["stable_digest"] = ab.sd.get(s["stable_digest"], opaque(s["stable_digest"]))
    return record(**fields)


# --- modules ----------------------------------------------------------------------------------


def log_module(logs: Sequence[Compiled]) -> str:
    digests = sorted({d for c in logs for d in c.digests} - {NULL_DIGEST})
    ranks: dict[str, int] = {NULL_ID: 0}
    for k, d in enumerate(digests):
        ranks.setdefault(rid(d), k + 1)
    lines = [
        f"---- MODULE {LOG_MODULE} ----",
        "\\* Generated by ostrom validate-trace (reference/ostrom/verify/trace/pbft.py)",
        "\\* from: " + ", ".join(c.log.name.replace("\n", " ") for c in logs),
        "EXTENDS Integers, TLC",
        "TLDRank == " + _fn(ranks),
        "TLLogs == <<",
    ]
    for k, c in enumerate(logs):
        lines.append(f"  \\* log {k + 1}: {c.log.name}")
        lines.append(f"  [cfg |-> {tla(c.cfg)}, steps |-> <<")
        for j, e in enumerate(c.steps):
            lines.append("    " + tla(e) + ("," if j + 1 < len(c.steps) else ""))
        lines.append("  >>]" + ("," if k + 1 < len(logs) else ""))
    lines += [">>", "===="]
    return "\n".join(lines) + "\n"


def _fn(pairs: Mapping[str, int]) -> str:
    return "(" + " @@ ".join(f"{tla(k)} :> {v}" for k, v in sorted(pairs.items())) + ")"


def trace_cfg() -> str:
    return "\n".join(
        [
            "\\* Generated by ostrom validate-trace (pbft)",
            "INIT TraceInit",
            "NEXT TraceNext",
            "CONSTANTS",
            "    DRank <- TLDRank",
            "INVARIANT Watch",
            "",
        ]
    )


def stage(run_dir: Path, logs: Sequence[Compiled]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    for m in (REPLICA_MODULE, TRACE_MODULE):
        shutil.copyfile(layout.SPEC_DIR / f"{m}.tla", run_dir / f"{m}.tla")
    (run_dir / f"{LOG_MODULE}.tla").write_text(log_module(logs), encoding="utf-8")
    (run_dir / f"{TRACE_MODULE}.cfg").write_text(trace_cfg(), encoding="utf-8")


# --- verdicts -------------------------------------------------------------------------------------


def _py(value: Any) -> Any:
    """A TLC value as plain Python (for messages)."""
    if isinstance(value, TlaSet):
        items = [_py(v) for v in value.elems]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
    if isinstance(value, tuple):
        return [_py(v) for v in value]
    if isinstance(value, TlaRecord):
        return {k: _py(v) for k, v in value.fields}
    if isinstance(value, TlaFunction):
        return {json.dumps(_py(k), default=str): _py(v) for k, v in value.pairs}
    if isinstance(value, ModelValue | Opaque):
        return str(value)
    return value


def _short(v: Any) -> str:
    text = json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= 400 else text[:400] + "..."


def _describe(why: Any) -> tuple[str, str, list[dict[str, Any]]]:
    w = _py(why)
    if not isinstance(w, dict):
        return "command", "no behaviour of the spec gets past this step", []
    diffs: list[dict[str, Any]] = []
    parts: list[str] = []
    spec_res, log_res = w.get("result", ["?", "?"])
    if spec_res != log_res:
        diffs.append({"artifact": None, "field": "result", "spec": spec_res, "log": log_res})
        parts.append(f"result: spec {spec_res}, log {log_res}")
    if w.get("rej"):
        s, lg = w["rej"]
        diffs.append({"artifact": None, "field": "rejections", "spec": s, "log": lg})
        parts.append(f"rejections: spec {_short(s)}, log {_short(lg)}")
    if w.get("exe"):
        s, lg = w["exe"]
        diffs.append({"artifact": None, "field": "executions", "spec": s, "log": lg})
        parts.append(f"executions: spec {_short(s)}, log {_short(lg)}")
    so, lo = w.get("out_spec_only") or [], w.get("out_log_only") or []
    counts = w.get("out_counts") or [0, 0]
    if so or lo or counts[0] != counts[1]:
        if so:
            diffs.append({"artifact": None, "field": "sent, spec only", "spec": so, "log": None})
        if lo:
            diffs.append({"artifact": None, "field": "sent, log only", "spec": None, "log": lo})
        if counts[0] != counts[1]:
            diffs.append(
                {"artifact": None, "field": "sent count", "spec": counts[0], "log": counts[1]}
            )
        parts.append(
            f"sent messages: {counts[0]} by the spec, {counts[1]} in the log; "
            f"the spec's step also sends {_short(so)}; the log also sends {_short(lo)}"
        )
    for f, pair in sorted((w.get("state") or {}).items()):
        s, lg = pair
        diffs.append({"artifact": None, "field": f, "spec": s, "log": lg})
        parts.append(f"state.{f}: spec {_short(s)}, log {_short(lg)}")
    kind = "state" if w.get("state") and len(parts) == len(w["state"]) else "command"
    return kind, "the spec's step differs from the log: " + "; ".join(parts), diffs


def _action(step: PbftStep) -> str:
    op, msg = _command(step.command)
    if op == "msg":
        t = "malformed" if msg is None else type(msg.message).__name__
        return f"Deliver({t})"
    return {"timeout": "Timeout", "retransmit": "Retransmission"}.get(op, "invalid_input")


def _verdicts(
    logs: Sequence[Compiled],
    prints: Sequence[Value],
    error: str | None,
    seconds: float,
    states: int | None,
) -> list[Verdict]:
    top: dict[int, int] = {}
    dead: dict[int, tuple[int, Value]] = {}
    for v in prints:
        if not isinstance(v, tuple) or len(v) < 3:
            continue
        k, cur = v[1], v[2]
        if not isinstance(k, int) or not isinstance(cur, int):
            continue
        if v[0] == "ostrom-cursor":
            top[k - 1] = max(top.get(k - 1, -1), cur)
        elif v[0] == "ostrom-deadend" and len(v) == 4:
            dead[k - 1] = (cur, v[3])
    share = seconds / max(1, len(logs))
    out: list[Verdict] = []
    for k, c in enumerate(logs):
        n = len(c.log.steps)
        reached = top.get(k, -1)
        if error is not None and reached < n:
            out.append(
                Verdict(c.log.name, "error", n, 0, f"TLC failed: {error}", seconds=share, spec=SPEC)
            )
            continue
        if reached >= n:
            out.append(
                Verdict(
                    c.log.name,
                    "accepted",
                    n,
                    n,
                    f"accepted: all {n} steps are steps of {SPEC}",
                    seconds=share,
                    distinct_states=states,
                    spec=SPEC,
                )
            )
            continue
        reached = max(reached, 0)
        step = c.log.steps[reached]
        if k in dead and dead[k][0] == reached:
            kind, msg, diffs = _describe(dead[k][1])
        else:
            kind, msg, diffs = "command", "no behaviour of the spec gets past this step", []
        failure = Failure(
            reached, step.line, step.command, step.result, kind, _action(step), msg, diffs
        )
        out.append(
            Verdict(
                c.log.name,
                "rejected",
                n,
                reached,
                f"rejected at step {reached + 1} of {n} (line {step.line}): {msg}",
                failure,
                share,
                states,
                spec=SPEC,
            )
        )
    return out


def validate_logs(
    logs: Sequence[PbftLog],
    *,
    keep: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Verdict]:
    """Validate pbft logs (one TLC run for all of them); a verdict each."""
    verdicts: dict[int, Verdict] = {}
    compiled: list[tuple[int, Compiled]] = []
    for i, log in enumerate(logs):
        try:
            compiled.append((i, compile_log(log)))
        except UnusableLog as exc:
            verdicts[i] = Verdict(log.name, "unusable", len(log.steps), 0, str(exc), spec=SPEC)
    if compiled:
        good = [c for _, c in compiled]
        with run_directory(keep, "pbft-trace", "ostrom-pbft-trace-") as run_dir:
            try:
                stage(run_dir, good)
                if progress is not None:
                    total = sum(len(c.steps) for c in good)
                    progress(f"TLC: {len(good)} pbft log(s), {total} steps ({run_dir})")
                res = run_java_tlc(
                    run_dir, TRACE_MODULE, f"{TRACE_MODULE}.cfg", ["-deadlock"], timeout=timeout
                )
                got = _verdicts(good, res.prints, res.error, res.seconds, res.distinct_states)
            except (TlcSetupError, OSError) as exc:
                got = [
                    Verdict(c.log.name, "error", len(c.log.steps), 0, str(exc), spec=SPEC)
                    for c in good
                ]
        for (i, _), v in zip(compiled, got, strict=True):
            verdicts[i] = v
    return [verdicts[i] for i in range(len(logs))]


def validate_paths(paths: Sequence[Path], *, timeout: float | None = None) -> list[Verdict]:
    """Validate pbft log files (one TLC run); a verdict each (``LAYER_TRACES`` interface)."""
    return validate_paths_with(read_log, validate_logs, paths, timeout, SPEC)


def validate_file(
    path: Path,
    *,
    keep: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Verdict:
    """Validate one pbft log file (``ostrom validate-trace FILE``; ``parse_log`` refuses a
    header of another layer)."""
    return validate_file_with(
        read_log, validate_logs, path, SPEC, keep=keep, timeout=timeout, progress=progress
    )
