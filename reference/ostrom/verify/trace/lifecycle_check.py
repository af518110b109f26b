"""Lifecycle and community logs checked with TLC, and why a rejected one is rejected.

``validate_logs`` compiles the logs (verify/trace/lifecycle.py), runs TLC once per batch on
spec/LifecycleTrace.tla (or spec/CommunityTrace.tla) and reads the verdict of each log from
the prints of the trace spec's ``Watch``: accepted iff its cursor reached the end, else
rejected at the deepest cursor, with the message ``_describe`` writes from the spec's
``Why`` (the action expected, the refusal the spec would not give, the fields that differ).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from ostrom.protocol.lifecycle import COMMAND_ACTIONS, SINGLE_ACTIONS
from ostrom.verify.tlc.jar import TlcSetupError
from ostrom.verify.tlc.values import TlaFunction, TlaRecord, TlaSet, Value, function
from ostrom.verify.trace.lifecycle import (
    Batch,
    Chunk,
    CompiledLog,
    Entry,
    artifact_rank,
    make_batches,
    scale_entries,
    stage_trace_run,
)
from ostrom.verify.trace.log import NONE, TRACE_SPECS, Names, TraceLog, read_log
from ostrom.verify.trace.tlc import CHUNK_JVM, TlcResult, run_java_tlc
from ostrom.verify.trace.verdict import (
    FIELD_NAMES,
    LIFECYCLE_SPEC,
    Failure,
    Verdict,
    plain_value,
    validate_batches,
    validate_file_with,
    validate_paths_with,
)

__all__ = ["CHUNK_STEPS", "validate_logs"]

#: Steps per TLC run of a long log (LifecycleTrace.tla: "Chunks"): a log longer than this
#: is checked in chunks, each starting from the states the previous one ended in.  A run
#: costs a start-up (the JVM, SANY, the TraceLog module) plus its steps, each step what
#: the artifacts the chunk holds cost: the chunk's own and those carried into it.  In the
#: node workload of bench/trace_export.py about 100 are carried, so a chunk of 250 steps
#: held about 350 artifacts and one of 100 about 200; fewer steps would pay the start-up
#: more often for little less.
CHUNK_STEPS: Final = 100

#: How a message names the spec steps of the commands that are not one action
#: (lifecycle.COMMAND_ACTIONS: tick; set_agent has none; CommunityTrace.tla's Join).
_OTHER_ACTIONS: Final = {
    "tick": f"{COMMAND_ACTIONS['tick'][0]} (with the due Recruit, "
    + " and ".join(COMMAND_ACTIONS["tick"][1:])
    + " steps)",
    "set_agent": "set_agent (the registry variables)",
    "join": "Join",
}


def _action_text(e: Entry, names: Names) -> str:
    if e.op in ("tick", "set_agent", "noop", "bad"):
        return _OTHER_ACTIONS.get(e.op, e.op)
    args = [a for a in (e.agent, e.artifact, e.slot) if a != NONE]
    if e.op in ("commit_vote", "reveal_vote") and e.vote != NONE:
        args.append(e.vote if e.vote != "*" else "some vote")
    if e.op == "arbitrate":
        args.append(e.outcome)
    shown = ", ".join(str(names.orig(a)) for a in args)
    if e.op == "forget_vote":
        shown += f", {e.conf}"  # the confidence in units of 1/ConfUnit
    return f"{SINGLE_ACTIONS.get(e.op) or _OTHER_ACTIONS[e.op]}({shown})"


def _as_map(v: Any) -> dict[Any, Any]:
    """A TLA+ function as a dict.  TLC prints the empty function as ``<<>>`` (it is the
    empty sequence too), which ``plain_value`` reads as an empty list: a step whose only
    difference is the clock, or whose agents are none, has one."""
    if isinstance(v, dict):
        return v
    if isinstance(v, list | tuple) and not v:
        return {}
    raise TypeError(f"not a TLA+ function: {v!r}")


def _describe(
    c: CompiledLog, names: Names, cursor: int, phase: str, why: Value
) -> tuple[str, str, list[dict[str, Any]]]:
    """(kind, message, differences) of a dead end (LifecycleTrace.tla: Why)."""
    e = c.entries[cursor]
    w = plain_value(why, names)
    action = _action_text(e, names)
    if e.op == "bad":
        return "not-a-spec-command", e.why, []
    if isinstance(w, dict) and w.get("kind") == "registry":
        return _registry_failure(e, w, action)
    if e.op == "join" and isinstance(w, dict):
        if e.code == "ok":
            return "command", f"{action}: the agent is already registered", []
        return "refusal", f"refused as {e.code}, but the agent is not registered", []
    if isinstance(w, dict) and w.get("kind") == "state":
        diffs: list[dict[str, Any]] = []
        spec_now, log_now = w["now"]
        if spec_now != log_now:
            diffs.append({"artifact": None, "field": "now", "spec": spec_now, "log": log_now})
        for x in w["spec_only"]:
            diffs.append({"artifact": x, "field": "exists", "spec": True, "log": False})
        for x in w["log_only"]:
            diffs.append({"artifact": x, "field": "exists", "spec": False, "log": True})
        for x, fields in sorted(_as_map(w["diff"]).items()):
            # when the lifecycle state differs, the rest of the view follows from it
            fields = _as_map(fields)
            order = ["state"] if "state" in fields else sorted(fields)
            for f in order:
                s, lg = fields[f]
                diffs.append({"artifact": x, "field": f, "spec": s, "log": lg})
        parts = [
            (f"{d['artifact']}." if d["artifact"] else "")
            + f"{FIELD_NAMES.get(d['field'], d['field'])}: spec {json.dumps(d['spec'])}, "
            f"log {json.dumps(d['log'])}"
            for d in diffs
        ]
        if e.code != "ok":
            head = f"the command was refused ({e.code}), so the state must not change, but"
        elif e.op == "tick":
            head = "after Tick and the due Recruit/Timeout/Forget steps"
        else:
            head = f"after {action}"
        return (
            "state",
            f"{head} the logged state differs from the spec's: " + "; ".join(parts),
            diffs,
        )
    if not isinstance(w, dict):
        return "command", f"no behaviour of the spec takes {action} here", []
    view = _spec_view_text(w)
    rate = _rate_text(e, w)
    if w.get("kind") == "command":
        if not w.get("in_domain"):
            if (
                e.op != "propose"
                and isinstance(w.get("artifact"), dict)
                and (w["artifact"].get("st") == "none")
            ):
                return "command", f"{action}: the artifact does not exist in the spec", []
            return "command", f"{action}: the agent is not in the registry", []
        if w.get("enabled") and rate is not None and rate[0] >= rate[1]:
            return (
                "command",
                f"{action} exceeds the per-round rate limit: the agent has {rate[2]} "
                f"{rate[0]} time(s) this round, the limit is {rate[1]}{view}",
                [],
            )
        return "command", f"the spec does not allow {action} here{view}", []
    # a refusal
    if e.op == "tick":
        return "refusal", f"refused a tick ({e.code}): the spec's Tick is always possible", []
    if e.code == "unknown_agent":
        return "refusal", f"refused as unknown_agent, but the agent is registered{view}", []
    if e.code == "unknown_artifact":
        return "refusal", f"refused as unknown_artifact, but the artifact exists{view}", []
    if not w.get("in_domain"):
        msg = f"refused as {e.code}, but the spec cannot even evaluate {action}"
        if isinstance(w.get("agent"), dict) and not w["agent"].get("registered"):
            msg += " (the agent is not registered: unknown_agent comes first)"
        elif isinstance(w.get("artifact"), dict) and w["artifact"].get("st") == "none":
            msg += " (the artifact does not exist: unknown_artifact comes first)"
        return "refusal", msg, []
    if e.code == "rate_limited" and w.get("enabled") and rate is not None:
        return (
            "refusal",
            f"refused as rate_limited, but the agent has {rate[2]} only {rate[0]} time(s) "
            f"this round, below its limit {rate[1]} (a refused command must not count){view}",
            [],
        )
    return "refusal", f"refused as {e.code}, but the spec allows {action} here{view}", []


def _rate_text(e: Entry, w: Mapping[str, Any]) -> tuple[int, int, str] | None:
    """(count, limit, what) of the rate limit ``e`` is under (Why's ``rate``), or None."""
    rate = w.get("rate")
    if e.op not in ("propose", "resubmit", "dispute", "urgent_report") or not isinstance(
        rate, list
    ):
        return None
    what = "proposed or resubmitted" if e.op in ("propose", "resubmit") else "disputed or reported"
    return int(rate[0]), int(rate[1]), what


def _registry_failure(
    e: Entry, w: Mapping[str, Any], action: str
) -> tuple[str, str, list[dict[str, Any]]]:
    """A community step after which the logged registry is not the derived one
    (CommunityTrace.tla: CWhy, kind "registry")."""
    diffs: list[dict[str, Any]] = []
    for a in sorted(set(w["logged"]) ^ set(w["registered"])):
        diffs.append(
            {
                "artifact": None,
                "field": f"agents.{a}",
                "spec": a in w["registered"],
                "log": a in w["logged"],
            }
        )
    for a, fields in sorted(_as_map(w["diff"]).items()):
        for f, (spec, log) in sorted(_as_map(fields).items()):
            diffs.append({"artifact": None, "field": f"agents.{a}.{f}", "spec": spec, "log": log})
    parts = [
        f"{d['field']}: spec {json.dumps(d['spec'])}, log {json.dumps(d['log'])}" for d in diffs
    ]
    head = "the step" if e.op in ("noop", "bad") else action
    why = {
        "sanction": "the level spec/Sanctions.tla gives for the violations the events report",
        "tier": "the tier rule over the logged reputation",
        "weight": "weights change only at a tick",
    }
    reasons = sorted(
        {why[d["field"].rsplit(".", 1)[-1]] for d in diffs if d["field"].count(".") == 2}
    )
    return (
        "state",
        f"after {head} the logged registry differs from the derived one "
        f"({'; '.join(reasons) or 'registered agents'}): " + "; ".join(parts),
        diffs,
    )


def _spec_view_text(w: Mapping[str, Any]) -> str:
    """The spec's record of the artifact and the agent's registry entry, briefly."""
    parts: list[str] = []
    a = w.get("artifact")
    if isinstance(a, dict):
        keep = (
            "st",
            "slot",
            "sub",
            "hidden",
            "timer",
            "dphase",
            "round",
            "reviewers",
            "reviewed",
            "commits",
            "reveals",
            "fvotes",
            "disputes",
            "resubs",
            "cool",
            "rerecruited",
            "revoted",
        )
        parts.append(
            "spec artifact: " + ", ".join(f"{k}={json.dumps(a[k])}" for k in keep if k in a)
        )
    g = w.get("agent")
    if isinstance(g, dict):
        parts.append("spec registry entry: " + json.dumps(g, sort_keys=True))
    if w.get("due"):
        parts.append("a timeout or forget is due")
    return " (" + "; ".join(parts) + ")" if parts else ""


def validate_logs(
    logs: Sequence[TraceLog],
    *,
    keep: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
    chunk_steps: int = CHUNK_STEPS,
) -> list[Verdict]:
    """Validate every log (batched by constants, one TLC run per batch; a log longer than
    ``chunk_steps`` alone, in chunks of that many steps); a verdict each."""
    if chunk_steps < 1:
        raise ValueError(f"chunk_steps must be positive, not {chunk_steps}")
    batches, unusable = make_batches(logs)
    return validate_batches(
        logs,
        batches,
        unusable,
        lambda run_dir, batch: _run_batch(run_dir, batch, timeout, progress, chunk_steps),
        keep=keep,
        prefix="ostrom-trace-",
        spec=LIFECYCLE_SPEC,
    )


def _run_batch(
    run_dir: Path,
    batch: Batch,
    timeout: float | None,
    progress: Callable[[str], None] | None,
    chunk_steps: int = CHUNK_STEPS,
) -> dict[int, Verdict]:
    """The verdicts of a batch: the logs of at most ``chunk_steps`` steps in one TLC run,
    each longer one in chunks (``_run_chunked``)."""
    long = [k for k, c in enumerate(batch.logs) if len(c.entries) > chunk_steps]
    if not long:
        return _run_whole(run_dir, batch, timeout, progress)
    out: dict[int, Verdict] = {}
    short = [c for c in batch.logs if len(c.entries) <= chunk_steps]
    if short:
        rest = Batch(short, batch.names, batch.unit, batch.constants, batch.conf_unit)
        for k, v in _run_whole(run_dir / "short", rest, timeout, progress).items():
            out[batch.logs.index(short[k])] = v
    for k in long:
        out[k] = _run_chunked(run_dir / f"log-{k + 1}", batch, k, timeout, progress, chunk_steps)
    return out


def _run_whole(
    run_dir: Path, batch: Batch, timeout: float | None, progress: Callable[[str], None] | None
) -> dict[int, Verdict]:
    """Every log of the batch in one TLC run."""
    try:
        stage_trace_run(run_dir, batch)
    except (OSError, ValueError) as exc:  # e.g. Lifecycle.tla's CONSTANTS no longer as expected
        return {
            k: _error(c, f"cannot stage the trace run: {exc}") for k, c in enumerate(batch.logs)
        }
    total = sum(len(c.entries) for c in batch.logs)
    tops: dict[int, int] = {}
    last_report = [0.0]

    def on_print(v: Value) -> None:
        if progress is None or not isinstance(v, tuple) or v[0] != "ostrom-cursor":
            return
        tops[_nat(v[1])] = _nat(v[2])
        now = time.monotonic()
        if now - last_report[0] >= 1.0:
            last_report[0] = now
            progress(f"TLC: {sum(tops.values())}/{total} steps followed")

    if progress is not None:
        progress(f"TLC: {len(batch.logs)} log(s), {total} steps ({run_dir})")
    try:
        res = run_java_tlc(
            run_dir,
            batch.module,
            f"{batch.module}.cfg",
            ["-deadlock"],
            timeout=timeout,
            on_print=on_print,
        )
    except TlcSetupError as exc:
        return {k: _error(c, str(exc)) for k, c in enumerate(batch.logs)}
    if progress is not None:
        progress(f"TLC: finished in {res.seconds:.1f} s, {res.distinct_states} distinct states")
    return _verdicts(batch, res)


def _fields(v: Value) -> dict[str, Value]:
    if not isinstance(v, TlaRecord):
        raise TypeError(f"expected a record from TLC, got {str(v)[:200]}")
    return dict(v.fields)


def _by_name(v: Value) -> dict[str, Value]:
    """A TLA+ function over artifact names: TLC prints it as a record (the names are
    identifiers), or as ``(k :> v @@ ...)``, the empty one as ``<<>>``."""
    if isinstance(v, tuple) and not v:
        return {}
    if isinstance(v, TlaRecord):
        return dict(v.fields)
    if not isinstance(v, TlaFunction):
        raise TypeError(f"expected a function from TLC, got {str(v)[:200]}")
    return {str(k): x for k, x in v.pairs}


def _slot(r: Value) -> str | None:
    return str(r.get("slot")) if isinstance(r, TlaRecord) else None


def _run_chunked(
    run_dir: Path,
    batch: Batch,
    k: int,
    timeout: float | None,
    progress: Callable[[str], None] | None,
    chunk_steps: int,
) -> Verdict:
    """The verdict of the batch's log ``k``, checked in chunks of ``chunk_steps`` steps
    (LifecycleTrace.tla: "Chunks"): each chunk's TLC run starts from every state the
    previous one ended in (ChunkEnd prints them, ChunkInit starts from them and checks
    them against the logged state at the boundary again) and holds only the artifacts
    its steps can touch; the Frozen records it leaves out are kept here, unchanged, until
    a chunk includes them again.  Accepted iff every chunk is; else the verdict of the
    first chunk that is not, its step numbers counted from the start of the log."""
    c = batch.logs[k]
    n = len(c.log.steps)
    started = time.monotonic()
    scale_entries(batch, c)
    rank = artifact_rank(batch)
    every = {batch.names(x) for x in c.artifacts}
    subscribed = {s for e in c.entries for s in e.subs} | {
        batch.names(s) for g in c.initial.values() for s in g.subscriptions
    }
    views: dict[str, Any] = {}  # the logged view of every artifact, at the boundary
    now = 0
    kept: dict[str, tuple[Value, Value]] = {}  # Frozen artifacts left out: (art, history)
    active_in: dict[str, set[str]] = {}  # slot -> the kept active artifacts in it
    active_slot: dict[str, str] = {}  # and the other way round
    log_slots = {batch.names(s) for s in c.slots}
    carried: set[str] = set()  # artifacts whose records are given per start state
    starts: list[dict[str, Value]] = []  # the end states of the chunk before
    states = 0
    chunks = (len(c.entries) + chunk_steps - 1) // chunk_steps
    for number, lo in enumerate(range(0, len(c.entries), chunk_steps), 1):
        hi = min(lo + chunk_steps, len(c.entries))
        entries = c.entries[lo:hi]
        named = {e.artifact for e in entries} | {x for e in entries for x, _ in e.delta}
        arts = carried | (named & every)
        slots = {e.slot for e in entries if e.op == "propose"} | {
            s for st in starts for x in carried if (s := _slot(_by_name(st["art"])[x]))
        }
        slots |= {s for x in arts if x in kept and (s := _slot(kept[x][0]))}
        arts |= {x for s in slots for x in active_in.get(s, ())}  # ActiveIn(s) reads them
        slots |= {s for x in arts if x in kept and (s := _slot(kept[x][0]))}
        slots = (slots | subscribed) & log_slots
        chunk = Chunk(lo, hi, frozenset(arts), frozenset(slots), rank)
        if lo > 0:
            chunk.starts = tuple(_start(st, arts, carried, kept) for st in starts)
            chunk.expected = function(tuple((x, views[x]) for x in sorted(arts) if x in views))
            chunk.now = now
        sub = CompiledLog(
            TraceLog(c.log.name, c.log.params, c.log.setup, c.log.steps[lo:hi], c.log.layer),
            c.params,
            c.constants,
            c.initial,
            entries,
            {},
            c.artifacts,
            c.slots,
            c.agents,
        )
        one = Batch([sub], batch.names, batch.unit, batch.constants, batch.conf_unit)
        if progress is not None:
            progress(
                f"TLC: chunk {number}/{chunks}, steps {lo + 1}-{hi} of {n}, {len(arts)} artifact(s)"
            )
        left = None if timeout is None else timeout - (time.monotonic() - started)
        if left is not None and left <= 0:
            return _error(c, f"TLC timed out after {timeout:g} s", time.monotonic() - started)
        # one directory per log: with --keep, the last chunk run (the failing one) stays
        try:
            stage_trace_run(run_dir, batch, (c, chunk))
            res = run_java_tlc(
                run_dir,
                batch.module,
                f"{batch.module}.cfg",
                ["-deadlock"],
                timeout=left,
                jvm=CHUNK_JVM,
            )
        except (OSError, ValueError) as exc:
            return _error(c, f"cannot stage the trace run: {exc}")
        except TlcSetupError as exc:
            return _error(c, str(exc))
        states += res.distinct_states or 0
        seconds = time.monotonic() - started
        if res.timed_out and timeout is not None:  # the limit is the whole log's
            return _error(
                c, f"TLC timed out after {timeout:g} s, in chunk {number} of {chunks}", seconds
            )
        verdict = _verdicts(one, res)[0]
        for v in res.prints:  # ChunkBoundary's: what differs (the verdict is an error)
            if isinstance(v, tuple) and v and v[0] == "ostrom-boundary" and len(v) == 4:
                shown = json.dumps(plain_value(v[3], batch.names), sort_keys=True)
                verdict.message += (
                    f" (chunk {number}, before step {lo + 1}: clock spec/log "
                    f"{plain_value(v[2], batch.names)}, views spec/log {shown[:2000]})"
                )
        if verdict.status != "accepted":
            return _shifted(verdict, c, lo, n, seconds, states)
        ends = [v for v in res.prints if isinstance(v, tuple) and v and v[0] == "ostrom-end"]
        if not ends:
            return _error(c, f"TLC printed no end state of chunk {number}", seconds)
        starts = []
        for v in ends:
            st = _fields(v[2])
            if len(v) > 3:  # CommunityTrace.tla: CChunkEnd
                st |= _fields(v[3])
            if st not in starts:
                starts.append(st)
        for e in entries:  # the logged view at the next boundary
            views.update(e.delta)
            now = e.now
        carried = set()
        for x in arts:
            recs = {(_by_name(st["art"])[x], _by_name(st["history"])[x]) for st in starts}
            frozen = all(x in _names(st["frozen"]) for st in starts)
            kept.pop(x, None)
            if x in active_slot:
                active_in[active_slot.pop(x)].discard(x)
            if len(recs) == 1 and frozen:
                (rec,) = recs
                kept[x] = rec
                if isinstance(rec[0], TlaRecord) and rec[0].get("st") == "active":
                    active_slot[x] = str(rec[0].get("slot"))
                    active_in.setdefault(active_slot[x], set()).add(x)
            else:
                carried.add(x)
    seconds = time.monotonic() - started
    return Verdict(
        c.log.name,
        "accepted",
        n,
        n,
        f"accepted: all {n} steps are a behaviour of {TRACE_SPECS[batch.layer]}",
        seconds=seconds,
        distinct_states=states,
        spec=TRACE_SPECS[batch.layer],
    )


def _names(v: Value) -> set[str]:
    if isinstance(v, TlaSet):
        return {str(x) for x in v.elems}
    if isinstance(v, tuple) and not v:
        return set()
    raise TypeError(f"expected a set from TLC, got {str(v)[:200]}")


def _start(
    st: Mapping[str, Value],
    arts: set[str],
    carried: set[str],
    kept: Mapping[str, tuple[Value, Value]],
) -> TlaRecord:
    """A start state of a chunk (LifecycleTrace.tla: ChunkStart): an end state of the chunk
    before, its ``art`` and ``history`` over the chunk's artifacts seen before."""
    art, hist = _by_name(st["art"]), _by_name(st["history"])
    seen = sorted(x for x in arts if x in carried or x in kept)
    fields = {key: v for key, v in st.items() if key not in ("art", "history", "frozen")}
    fields["art"] = function(tuple((x, art[x] if x in carried else kept[x][0]) for x in seen))
    fields["history"] = function(tuple((x, hist[x] if x in carried else kept[x][1]) for x in seen))
    return TlaRecord(tuple(sorted(fields.items())))


def _shifted(v: Verdict, c: CompiledLog, lo: int, n: int, seconds: float, states: int) -> Verdict:
    """A chunk's verdict as the whole log's: its steps counted from the log's start."""
    v.seconds, v.distinct_states, v.steps = seconds, states, n
    if v.status != "rejected" or v.failure is None:
        v.name = c.log.name
        return v
    f = v.failure
    f.step += lo
    v.matched = f.step
    v.message = f"rejected at step {f.step + 1} of {n} (line {f.line}): {f.message}"
    return v


def _nat(v: Value) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"expected an integer from TLC, got {v!r}")
    return v


def _error(c: CompiledLog, message: str, seconds: float = 0.0) -> Verdict:
    return Verdict(c.log.name, "error", len(c.log.steps), 0, message, seconds=seconds)


def _verdicts(batch: Batch, res: TlcResult) -> dict[int, Verdict]:
    """The verdict of each log of the batch from the prints of LifecycleTrace.tla's Watch:
    accepted iff its cursor reached the end, else rejected at the deepest cursor."""
    top: dict[int, int] = {}
    dead: dict[int, list[tuple[int, str, Value]]] = {}
    for v in res.prints:
        if not isinstance(v, tuple) or len(v) < 3 or v[0] in ("ostrom-end", "ostrom-boundary"):
            continue
        k = _nat(v[1]) - 1
        cur = _nat(v[2])
        if v[0] == "ostrom-cursor":
            top[k] = max(top.get(k, -1), cur)
        elif v[0] == "ostrom-deadend" and len(v) == 5:
            dead.setdefault(k, []).append((cur, str(v[3]), v[4]))
    out: dict[int, Verdict] = {}
    share = res.seconds / max(1, len(batch.logs))
    spec = TRACE_SPECS[batch.layer]
    for k, c in enumerate(batch.logs):
        n = len(c.log.steps)
        if res.error is not None and top.get(k, -1) < n:
            out[k] = _error(c, f"TLC failed: {res.error}", share)
            continue
        if k not in top:
            out[k] = Verdict(
                c.log.name,
                "unusable",
                n,
                0,
                "the spec's assumptions (LifecycleAssumptions of spec/Lifecycle.tla) do not "
                "hold for this log's parameters and registry",
                seconds=share,
            )
            continue
        reached = top[k]
        if reached >= n:
            out[k] = Verdict(
                c.log.name,
                "accepted",
                n,
                n,
                f"accepted: all {n} steps are a behaviour of {spec}",
                seconds=share,
                distinct_states=res.distinct_states,
                spec=spec,
            )
            continue
        ends = [d for d in dead.get(k, []) if d[0] == reached]
        step = c.log.steps[reached]
        if ends:
            kind, msg, diffs = _describe(c, batch.names, reached, ends[0][1], ends[0][2])
            others = {_describe(c, batch.names, reached, p, w)[1] for _, p, w in ends[1:]}
            others.discard(msg)
            if others:
                msg += " (other behaviours end here too: " + " | ".join(sorted(others)) + ")"
        else:
            kind, msg, diffs = "command", "no behaviour of the spec gets past this step", []
        failure = Failure(
            reached,
            step.line,
            step.command,
            step.result,
            kind,
            _action_text(c.entries[reached], batch.names),
            msg,
            diffs,
        )
        out[k] = Verdict(
            c.log.name,
            "rejected",
            n,
            reached,
            f"rejected at step {reached + 1} of {n} (line {step.line}): {msg}",
            failure,
            share,
            res.distinct_states,
            spec,
        )
    return out


def validate_paths(paths: Sequence[Path], *, timeout: float | None = None) -> list[Verdict]:
    """Validate lifecycle log files (batched); a verdict each (``LAYER_TRACES`` interface)."""
    return validate_paths_with(read_log, validate_logs, paths, timeout, LIFECYCLE_SPEC)


def validate_file(
    path: Path,
    *,
    keep: Path | None = None,
    timeout: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Verdict:
    """Validate one lifecycle or community log file (validate.LAYER_TRACES interface)."""
    return validate_file_with(
        read_log, validate_logs, path, LIFECYCLE_SPEC, keep=keep, timeout=timeout, progress=progress
    )
