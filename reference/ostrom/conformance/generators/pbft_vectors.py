"""Vectors of the ``pbft`` layer: one replica's inputs and outputs, recorded and hand-built.

``generate_pbft_vectors(out_dir)`` writes ``out_dir/pbft/<action>/<name>.json`` and two
whole-run ITF traces ``out_dir/pbft/traces/*.itf.json``.  Everything is deterministic:
seeded simulations, Ed25519 (deterministic signatures), keys derived from fixed seeds.

Two kinds of vectors:

* **recorded** (the description starts with ``recorded:``; ``source`` is
  ``RECORDED_SOURCE``, ``reference:examples`` until the vector format gains a source for
  simulations): a seeded ``Simulation`` of N = 4, f = 1
  replicas runs with a recording replica class (and the ``"quiet"`` retransmission
  scheduler they were first recorded with); the commands of a vector are exactly the
  inputs the network (and the timer) gave one replica, in order — a prefix of its history
  cut at the step that exercises the vector's action, or the whole history.  Scenarios:
  the normal case with checkpoints, a full window, a silent primary (view change), an
  equivocating primary, a conflicting voter, message loss with retransmission, a scripted
  view change carrying a prepared certificate, and a partitioned replica that catches up
  by state transfer;
* **hand-built** (``source: reference:examples``): signed messages built directly with the
  principals' keys, for every rejection reason, exactly-once execution, out-of-order
  commits, late commits, the back-off of the view-change timer and bad NEW-VIEWs.

In both cases the expectations come from replaying the commands on a fresh ``PBFTLayer``;
for recorded vectors the generator also checks that the replay sends exactly what the
replica sent in the simulation.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final

from ostrom.conformance import VECTOR_FORMAT
from ostrom.conformance.layer import Observation
from ostrom.conformance.pbft_layer import PBFTLayer, command_for, principals, send_event
from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import (
    NULL_DIGEST,
    AnyMessage,
    Commit,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    canonical,
    replica_name,
    request_digest,
    signed_from_tree,
)
from ostrom.consensus.replica import Output, Replica
from ostrom.harness.byzantine import ConflictingVoter, EquivocatingPrimary, Silent, Strategy
from ostrom.harness.network import Faults, Simulation

__all__ = ["ACTIONS", "generate_pbft_vectors", "pbft_vector_specs"]

#: The actions of the pbft layer (one folder each).
ACTIONS: Final = (
    "pre_prepare",
    "prepare",
    "commit",
    "execute",
    "checkpoint",
    "view_change",
    "new_view",
    "state_transfer",
    "reject",
    "timeout",
)

N: Final = 4
F: Final = 1
#: Key seed of the hand-built vectors (the simulations use their own seed).
HAND_SEED: Final = 7
HAND_BASE_TIMEOUT: Final = 100
#: ``source`` of the vectors recorded from simulations.  docs/conformance.md allows only
#: four sources, none of them "reference:simulation"; the description says "recorded:".
RECORDED_SOURCE: Final = "reference:examples"
SIM_BASE_TIMEOUT: Final = 100

SAFE1, SAFE2, QUORUM, LIVE, REPL = (
    "BFT-SAFE-1",
    "BFT-SAFE-2",
    "BFT-QUORUM-1",
    "BFT-LIVE-1",
    "REPL-1",
)

Command = dict[str, Any]


@dataclasses.dataclass
class Spec:
    """One vector before its expectations are computed."""

    action: str
    name: str
    description: str
    properties: list[str]
    source: str
    params: dict[str, Any]
    setup: dict[str, Any]
    commands: list[Command]
    #: per command, the sends recorded in the simulation (checked against the replay)
    recorded: list[list[dict[str, Any]]] | None = None

    @property
    def id(self) -> str:
        return f"pbft/{self.action}/{self.name}"


# --- replay ---------------------------------------------------------------------------------


def replay(
    spec_params: dict[str, Any], setup: dict[str, Any], commands: Sequence[Command]
) -> list[Observation]:
    """The observations of ``commands`` on a fresh reference layer."""
    layer = PBFTLayer()
    layer.reset(spec_params, setup)
    return [layer.step(c) for c in commands]


def _sends(obs: Observation) -> list[dict[str, Any]]:
    return [e for e in obs["events"] if e["event"] == "send"]


def _sent_types(obs: Observation) -> list[str]:
    return [e["message"]["message"]["type"] for e in _sends(obs)]


def _rejects(obs: Observation) -> list[str]:
    return [e["reason"] for e in obs["events"] if e["event"] == "reject"]


def _executes(obs: Observation) -> bool:
    return any(e["event"] == "execute" for e in obs["events"])


Pred = Callable[[Command, Observation], bool]


def sends(kind: str) -> Pred:
    return lambda _c, obs: kind in _sent_types(obs)


def receives(kind: str) -> Pred:
    return lambda c, _o: (
        c.get("op") in ("message", "request") and (c["message"]["message"]["type"] == kind)
    )


def rejects(reason: str) -> Pred:
    return lambda _c, obs: reason in _rejects(obs)


def executes() -> Pred:
    return lambda _c, obs: _executes(obs)


def state_is(key: str, value: Any) -> Pred:
    return lambda _c, obs: obs["state"][key] == value


def op_is(op: str) -> Pred:
    return lambda c, _o: c.get("op") == op


def both(a: Pred, b: Pred) -> Pred:
    return lambda c, o: a(c, o) and b(c, o)


# --- recorded simulations -------------------------------------------------------------------


class _Recorder:
    """Collects every replica's inputs and outputs, and the global order of steps."""

    def __init__(self) -> None:
        self.inputs: dict[int, list[tuple[Command, Output]]] = {}
        self.replicas: list[Replica] = []
        self.steps: list[tuple[int, str]] = []  # (replica, action label)
        self.snapshots: list[list[tuple[int, str, int, int]]] = []

    def factory(self, *args: Any, **kwargs: Any) -> Replica:
        replica = _RecordingReplica(*args, **kwargs)
        replica.recorder = self
        self.replicas.append(replica)
        return replica

    def snapshot(self) -> list[tuple[int, str, int, int]]:
        return [
            (r.view, "normal" if r.active else "vc", r.last_exec, r.stable_seq)
            for r in self.replicas
        ]

    def note(self, replica: Replica, command: Command, out: Output) -> None:
        if not self.snapshots:
            self.snapshots.append([(0, "normal", 0, 0)] * len(self.replicas))
        self.inputs.setdefault(replica.id, []).append((command, out))
        op = command["op"]
        label = op
        if op in ("message", "request"):
            label = f"deliver {command['message']['message']['type']} from "
            label += str(command["message"]["sender"])
        self.steps.append((replica.id, f"{replica_name(replica.id)}: {label}"))
        self.snapshots.append(self.snapshot())


class _RecordingReplica(Replica):
    recorder: _Recorder

    def on_message(self, payload: object) -> Output:
        if not isinstance(payload, Signed):
            raise TypeError("recorded scenarios deliver only signed messages")
        out = super().on_message(payload)
        self.recorder.note(self, command_for(payload), out)
        return out

    def on_timeout(self) -> Output:
        out = super().on_timeout()
        self.recorder.note(self, {"op": "timeout"}, out)
        return out

    def retransmit(self) -> Output:
        out = super().retransmit()
        self.recorder.note(self, {"op": "retransmit"}, out)
        return out


@dataclasses.dataclass
class _Run:
    """A finished simulation: its recorder and how to rebuild one replica's vector."""

    name: str
    seed: int
    params: dict[str, Any]
    clients: list[str]
    byzantine: dict[int, str]
    rec: _Recorder
    sim: Simulation

    def setup(self, rid: int) -> dict[str, Any]:
        return {
            "n": N,
            "f": F,
            "id": rid,
            "key_seed": self.seed,
            "clients": self.clients,
            "base_timeout": SIM_BASE_TIMEOUT,
        }

    def history(self, rid: int) -> tuple[list[Command], list[list[dict[str, Any]]]]:
        cmds = [c for c, _o in self.rec.inputs.get(rid, [])]
        sent = [
            sorted((send_event(s) for s in o.sends), key=canonical)
            for _c, o in self.rec.inputs.get(rid, [])
        ]
        return cmds, sent


def _simulate(
    name: str,
    seed: int,
    *,
    params: dict[str, Any],
    clients: int = 1,
    byzantine: dict[int, Strategy] | None = None,
    faults: Faults | None = None,
    script: Callable[[Simulation], None],
) -> _Run:
    rec = _Recorder()
    sim = Simulation(
        N,
        F,
        seed,
        byzantine=byzantine,
        faults=faults,
        clients=clients,
        checkpoint_k=params.get("checkpoint_k", 16),
        watermark_window=params.get("watermark_window", 32),
        base_timeout=SIM_BASE_TIMEOUT,
        replica_factory=rec.factory,
        # the scheduler these vectors were recorded (and checked against the spec) with:
        # a replica's inputs are valid under either, but a new scheduler is a new history
        retransmission="quiet",
    )
    script(sim)
    return _Run(
        name,
        seed,
        params,
        list(sim.client_names),
        {i: s.name for i, s in sorted((byzantine or {}).items())},
        rec,
        sim,
    )


def _submit_and_run(ops: Sequence[tuple[str, dict[str, Any]]]) -> Callable[[Simulation], None]:
    def script(sim: Simulation) -> None:
        for client, op in ops:
            sim.submit(client, op)
        sim.run(max_steps=20_000)
        if not sim.all_executed():
            raise RuntimeError("a recorded scenario did not execute every request")

    return script


def _ops(k: int, client: str = "c0") -> list[tuple[str, dict[str, Any]]]:
    return [(client, {"op": "add", "key": f"k{i}", "value": i}) for i in range(k)]


def _scripted_view_change(sim: Simulation) -> None:
    """The primary's pre-prepare and every prepare arrive, every commit is lost: each
    replica is prepared but none commits.  Replicas 1 and 3 time out; replica 2 joins on
    f+1 VIEW-CHANGEs; replica 1's NEW-VIEW re-proposes the prepared request."""
    sim.submit("c0", {"op": "add", "key": "k0", "value": 0})
    net = sim.network
    while net.queue:
        env = net.queue[0]
        m = env.payload.message if isinstance(env.payload, Signed) else None
        if isinstance(m, Commit):
            sim.drop(0)
        else:
            sim.deliver(0)
        net.now += 1
    sim.fire_timeout(1)
    sim.fire_timeout(3)
    sim.drain()
    if not sim.all_executed():
        raise RuntimeError("the scripted view change did not execute the request")


def _partitioned_catch_up(sim: Simulation) -> None:
    """Replica 3 is cut off while the others execute two requests (checkpoint_k = 1,
    window 1); after healing, a retransmitted stable CHECKPOINT beyond its window makes
    it fetch the certified log (FetchState / StateTransfer) and execute it."""
    others = [replica_name(i) for i in range(3)] + ["c0"]
    sim.partition([others])
    for client, op in _ops(2):
        sim.submit(client, op)
    sim.run(max_steps=20_000, until=lambda: all(r.last_exec >= 2 for r in sim.replicas[:3]))
    sim.heal()
    for i in range(3):
        sim.retransmit(i)
    sim.drain()
    if sim.replicas[3].last_exec != 2:
        raise RuntimeError("the partitioned replica did not catch up")


def _runs() -> dict[str, _Run]:
    small = {"checkpoint_k": 2, "watermark_window": 4}
    return {
        "normal": _simulate("normal", 1, params=small, script=_submit_and_run(_ops(3))),
        "window": _simulate(
            "window",
            1,
            params={"checkpoint_k": 2, "watermark_window": 2},
            clients=3,
            script=_submit_and_run([(f"c{i}", {"op": "add", "key": f"c{i}"}) for i in range(3)]),
        ),
        "silent-primary": _simulate(
            "silent-primary",
            2,
            params=small,
            byzantine={0: Silent()},
            script=_submit_and_run(_ops(2)),
        ),
        "equivocating-primary": _simulate(
            "equivocating-primary",
            0,
            params=small,
            byzantine={0: EquivocatingPrimary()},
            script=_submit_and_run(_ops(1)),
        ),
        "conflicting-voter": _simulate(
            "conflicting-voter",
            0,
            params=small,
            byzantine={3: ConflictingVoter()},
            script=_submit_and_run(_ops(1)),
        ),
        "lossy": _simulate(
            "lossy",
            2,
            params=small,
            faults=Faults(drop=0.15),
            script=_submit_and_run(_ops(2)),
        ),
        "prepared-view-change": _simulate(
            "prepared-view-change", 4, params={}, script=_scripted_view_change
        ),
        "catch-up": _simulate(
            "catch-up",
            5,
            params={"checkpoint_k": 1, "watermark_window": 1},
            script=_partitioned_catch_up,
        ),
    }


def _recorded(
    run: _Run,
    rid: int,
    action: str,
    name: str,
    description: str,
    properties: list[str],
    until: Pred | None = None,
    *,
    occurrence: int = 1,
) -> Spec:
    """Replica ``rid``'s history in ``run``, cut after the ``occurrence``-th step that
    satisfies ``until`` (the whole history when ``until`` is None)."""
    cmds, sent = run.history(rid)
    spec = Spec(
        action,
        name,
        f"recorded: {description}",
        properties,
        RECORDED_SOURCE,
        dict(run.params),
        run.setup(rid),
        cmds,
        sent,
    )
    if until is not None:
        seen = 0
        for i, (c, obs) in enumerate(zip(cmds, replay(spec.params, spec.setup, cmds), strict=True)):
            if until(c, obs):
                seen += 1
                if seen == occurrence:
                    spec.commands, spec.recorded = cmds[: i + 1], sent[: i + 1]
                    break
        else:
            raise RuntimeError(f"{spec.id}: the cut point never occurs")
    return spec


def _recorded_specs(runs: dict[str, _Run]) -> list[Spec]:
    nm, win, sp = runs["normal"], runs["window"], runs["silent-primary"]
    eq, cv, lo = runs["equivocating-primary"], runs["conflicting-voter"], runs["lossy"]
    pv, cu = runs["prepared-view-change"], runs["catch-up"]
    normal = "normal case, seed 1, three requests of one client, checkpoint_k 2, window 4"
    silent = "replica 0 (the primary of view 0) is silent; seed 2, two requests"
    return [
        _recorded(
            nm,
            0,
            "pre_prepare",
            "primary-assigns-sequence",
            f"{normal}: the primary receives the first request and pre-prepares it at seq 1",
            [SAFE1],
            sends("PrePrepare"),
        ),
        _recorded(
            nm,
            1,
            "pre_prepare",
            "backup-accepts-and-prepares",
            f"{normal}: a backup accepts the first pre-prepare and broadcasts its PREPARE",
            [SAFE1],
            sends("Prepare"),
        ),
        _recorded(
            nm,
            2,
            "prepare",
            "prepared-sends-commit",
            f"{normal}: a backup becomes prepared (pre-prepare + 2f prepares, in any order "
            "of arrival) and broadcasts COMMIT",
            [SAFE1, QUORUM],
            sends("Commit"),
        ),
        _recorded(
            nm,
            3,
            "commit",
            "committed-local-executes",
            f"{normal}: committed-local (prepared + 2f+1 commits): the request executes and "
            "the reply goes to the client",
            [SAFE1, QUORUM, SAFE2],
            executes(),
        ),
        _recorded(
            nm,
            1,
            "execute",
            "three-requests-in-order",
            f"{normal}: a backup's whole history: three executions in sequence order, a "
            "checkpoint at seq 2",
            [SAFE2, REPL],
        ),
        _recorded(
            nm,
            2,
            "checkpoint",
            "stable-and-garbage-collected",
            f"{normal}: 2f+1 matching CHECKPOINTs for seq 2 make it stable; the watermarks "
            "move to (2, 6]",
            [SAFE2, QUORUM],
            state_is("stable_seq", 2),
        ),
        _recorded(
            win,
            0,
            "checkpoint",
            "full-window-primary-resumes",
            "seed 1, three clients with one request each, checkpoint_k 2, window 2: the "
            "primary fills its window (seqs 1-2), holds the third request, and pre-prepares "
            "it at seq 3 once the checkpoint at seq 2 is stable",
            [SAFE2, LIVE],
        ),
        _recorded(
            sp,
            2,
            "timeout",
            "backup-sends-view-change",
            f"{silent}: the client broadcasts, the backup relays the request to the silent "
            "primary, its timer expires and it sends VIEW-CHANGE for view 1",
            [LIVE],
            op_is("timeout"),
        ),
        _recorded(
            sp,
            1,
            "new_view",
            "new-primary-sends-new-view",
            f"{silent}: replica 1, primary of view 1, collects 2f+1 VIEW-CHANGEs and sends "
            "NEW-VIEW, then pre-prepares the pending request",
            [LIVE, SAFE1],
            sends("NewView"),
        ),
        _recorded(
            sp,
            2,
            "new_view",
            "backup-accepts-new-view",
            f"{silent}: a backup recomputes O from V, accepts the NEW-VIEW and relays the "
            "pending request to the new primary",
            [LIVE, SAFE1],
            both(receives("NewView"), state_is("active", True)),
        ),
        _recorded(
            sp,
            3,
            "execute",
            "after-view-change",
            f"{silent}: a backup's whole history: view change to view 1, both requests "
            "executed there, checkpoint at seq 2 stable",
            [LIVE, SAFE2, REPL],
        ),
        _recorded(
            eq,
            1,
            "reject",
            "equivocating-primary",
            "replica 0, the primary of view 0, equivocates (seed 0, one request): a backup "
            "receives two different PRE-PREPAREs for (0, 1) and refuses the second as "
            "conflicting",
            [SAFE1],
            rejects("conflicting"),
        ),
        _recorded(
            eq,
            3,
            "view_change",
            "equivocating-primary-replaced",
            "replica 0 equivocates (seed 0, one request): a backup's whole history, through "
            "the view change to view 1 where the request executes",
            [SAFE1, LIVE, SAFE2],
        ),
        _recorded(
            cv,
            1,
            "prepare",
            "conflicting-voter",
            "replica 3 votes for conflicting digests and commits before preparing (seed 0, "
            "one request): a backup's whole history; the fake votes never complete a quorum",
            [SAFE1, QUORUM, SAFE2],
        ),
        _recorded(
            lo,
            2,
            "execute",
            "lossy-network-retransmit",
            "15% of messages are lost (seed 2, two requests, checkpoint_k 2, window 4): a "
            "backup's whole history, with retransmissions and replayed duplicates",
            [LIVE, SAFE2],
        ),
        _recorded(
            pv,
            2,
            "view_change",
            "join-on-f-plus-1",
            "seed 4: every replica is prepared at (0, 1) but every COMMIT is lost; replicas "
            "1 and 3 time out; replica 2 joins view 1 on f+1 VIEW-CHANGEs, its own carrying "
            "its prepared certificate",
            [LIVE, SAFE1],
            sends("ViewChange"),
        ),
        _recorded(
            pv,
            1,
            "new_view",
            "re-proposes-prepared-request",
            "seed 4: prepared everywhere at (0, 1), every COMMIT lost, view change: the new "
            "primary's O re-proposes the prepared request at seq 1 in view 1, which then "
            "executes",
            [SAFE1, LIVE, SAFE2],
        ),
        _recorded(
            cu,
            3,
            "state_transfer",
            "lagging-replica-catches-up",
            "seed 5, checkpoint_k 1, window 1: replica 3 is partitioned away while the others "
            "execute two requests; after healing, retransmitted CHECKPOINTs make seqs 1 and 2 "
            "stable while it has executed nothing, so it asks their signers for the certified "
            "log (FetchState), installs the first StateTransfer (hash chain checked against "
            "the certified digest), executes seqs 1-2 and refuses the later answers as stale",
            [SAFE2, LIVE],
        ),
        _recorded(
            cu,
            0,
            "state_transfer",
            "serves-fetch-state",
            "seed 5, checkpoint_k 1, window 1: a replica with stable checkpoint 2 answers a "
            "lagging replica's FetchState with its certified log",
            [SAFE2, LIVE],
            sends("StateTransfer"),
        ),
        _tampered_state_transfer(cu),
    ]


def _tampered_state_transfer(run: _Run) -> Spec:
    """The lagging replica's history with a tampered copy of the StateTransfer (another
    application digest, re-signed by its sender) delivered before the genuine one."""
    cmds, _sent = run.history(3)
    idx = next(
        i
        for i, c in enumerate(cmds)
        if c["op"] == "message" and c["message"]["message"]["type"] == "StateTransfer"
    )
    real = _signed(cmds[idx]["message"])
    st = real.message
    assert isinstance(st, StateTransfer)
    _ring, signers = make_keys(run.seed, principals(N, run.clients))
    bad = dataclasses.replace(st, app_digest="0" * 64)
    forged = signers[real.sender].sign(bad)
    cmds = [*cmds[:idx], command_for(forged), cmds[idx]]
    return Spec(
        "state_transfer",
        "tampered-state-refused",
        "the lagging replica of pbft/state_transfer/lagging-replica-catches-up first "
        "receives a StateTransfer whose application digest was altered (validly signed by "
        "its sender): the hash chain does not match the certified checkpoint digest, it is "
        "refused as tampered, and the genuine one is then installed",
        [SAFE2],
        "reference:examples",
        dict(run.params),
        run.setup(3),
        cmds,
    )


def _signed(tree: dict[str, Any]) -> Signed:
    return signed_from_tree(tree)


# --- hand-built vectors ---------------------------------------------------------------------


class _Hand:
    """Principals with keys from ``HAND_SEED``: sign, forge, and build commands."""

    def __init__(self, clients: Sequence[str] = ("c0", "c1")) -> None:
        self.clients = list(clients)
        self.ring, self.signers = make_keys(HAND_SEED, principals(N, self.clients))

    def setup(self, rid: int) -> dict[str, Any]:
        return {
            "n": N,
            "f": F,
            "id": rid,
            "key_seed": HAND_SEED,
            "clients": self.clients,
            "base_timeout": HAND_BASE_TIMEOUT,
        }

    def sign(self, who: str | int, message: AnyMessage) -> Signed:
        name = replica_name(who) if isinstance(who, int) else who
        return self.signers[name].sign(message)

    def forge(self, claimed: str, real: str, message: AnyMessage) -> Signed:
        """``message`` in ``claimed``'s name, signed with ``real``'s key."""
        return Signed(message, claimed, self.signers[real].sign(message).signature)

    def req(self, client: str, ts: int, key: str) -> Signed:
        return self.sign(client, Request(client, ts, {"op": "add", "key": key, "value": ts}))

    def pp(self, view: int, seq: int, req: Signed | None, by: int | None = None) -> Signed:
        by = view % N if by is None else by
        return self.sign(by, PrePrepare(view, seq, request_digest(req), req, by))

    def prep(self, view: int, seq: int, req: Signed | None, r: int) -> Signed:
        return self.sign(r, Prepare(view, seq, request_digest(req), r))

    def commit(self, view: int, seq: int, req: Signed | None, r: int) -> Signed:
        return self.sign(r, Commit(view, seq, request_digest(req), r))

    def vc(self, new_view: int, r: int) -> Signed:
        return self.sign(r, ViewChange(new_view, 0, (), (), r))


def msg(signed: Signed) -> Command:
    return command_for(signed)


TIMEOUT: Final[Command] = {"op": "timeout"}


def _hand(
    action: str,
    name: str,
    description: str,
    properties: list[str],
    setup: dict[str, Any],
    commands: Iterable[Command],
    params: dict[str, Any] | None = None,
) -> Spec:
    return Spec(
        action,
        name,
        description,
        properties,
        "reference:examples",
        dict(params or {}),
        setup,
        list(commands),
    )


def _hand_specs() -> list[Spec]:
    h = _Hand()
    a1, b1 = h.req("c0", 1, "a"), h.req("c1", 1, "b")
    da = request_digest(a1)
    specs: list[Spec] = []
    # -- the normal case of replica 1, then a replayed request ---------------------------
    normal = [
        msg(a1),
        msg(h.pp(0, 1, a1)),
        msg(h.prep(0, 1, a1, 2)),
        msg(h.prep(0, 1, a1, 3)),
        msg(h.commit(0, 1, a1, 0)),
        msg(h.commit(0, 1, a1, 2)),
        msg(h.commit(0, 1, a1, 3)),
    ]
    specs.append(
        _hand(
            "reject",
            "replayed-request-resends-reply",
            "replica 1 executes c0's request (timestamp 1) at seq 1; the same request again "
            "is refused as replayed and the signed REPLY is sent to the client again; a "
            "request with an older timestamp (0) is refused as replayed without a reply",
            [SAFE2],
            h.setup(1),
            [*normal, msg(a1), msg(h.req("c0", 0, "old"))],
        )
    )
    # -- forged messages ------------------------------------------------------------------
    fake_prep = Prepare(0, 1, da, 2)
    specs.append(
        _hand(
            "reject",
            "forged-votes",
            "replica 1 has prepared-for a1 at (0, 1); PREPAREs claimed by replica 2 but "
            "signed with replica 3's key, sent under r3's name for replica 2, and from a "
            "replica id outside 0..n-1 are refused as forged and do not count; replica 2's "
            "genuine PREPARE completes the certificate and replica 1 commits",
            [SAFE1, SAFE2],
            h.setup(1),
            [
                msg(a1),
                msg(h.pp(0, 1, a1)),
                msg(h.forge("r2", "r3", fake_prep)),
                msg(h.sign(3, fake_prep)),
                msg(h.forge("r9", "r3", Prepare(0, 1, da, 9))),
                msg(h.prep(0, 1, a1, 2)),
            ],
        )
    )
    fake_req = Request("c0", 5, {"op": "add", "key": "forged", "value": 0})
    specs.append(
        _hand(
            "reject",
            "forged-client-requests",
            "the primary (replica 0) refuses as forged: a request in c0's name signed with "
            "replica 1's key, a request whose client is a replica, and a request from a "
            "client without a key; it pre-prepares c1's genuine request",
            [SAFE2],
            h.setup(0),
            [
                msg(h.forge("c0", "r1", fake_req)),
                msg(h.sign(2, Request("r2", 1, {"op": "add", "key": "r2", "value": 0}))),
                msg(h.forge("c9", "c1", Request("c9", 1, {"op": "add", "key": "c9"}))),
                msg(b1),
            ],
        )
    )
    specs.append(
        _hand(
            "reject",
            "tampered-pre-prepare",
            "replica 2 refuses a PRE-PREPARE whose digest is not its request's (tampered) "
            "and one carrying a forged request (forged); the genuine one is accepted",
            [SAFE1, SAFE2],
            h.setup(2),
            [
                msg(h.sign(0, PrePrepare(0, 1, request_digest(b1), a1, 0))),
                msg(h.sign(0, PrePrepare(0, 1, fake_req.msg_digest, _forged_req(h), 0))),
                msg(h.pp(0, 1, a1)),
            ],
        )
    )
    specs.append(
        _hand(
            "reject",
            "replayed-messages",
            "replica 3 receives the same PRE-PREPARE, PREPARE and COMMIT twice: the second "
            "copies are refused as replayed and counted once",
            [SAFE1, QUORUM],
            h.setup(3),
            [
                msg(h.pp(0, 1, a1)),
                msg(h.pp(0, 1, a1)),
                msg(h.prep(0, 1, a1, 1)),
                msg(h.prep(0, 1, a1, 1)),
                msg(h.commit(0, 1, a1, 1)),
                msg(h.commit(0, 1, a1, 1)),
            ],
        )
    )
    specs.append(
        _hand(
            "reject",
            "out-of-window",
            "window 4, no stable checkpoint (watermarks (0, 4]): a PRE-PREPARE at seq 5, a "
            "PREPARE at seq 6 and a COMMIT at seq 9 are refused as out_of_window; seq 4 is "
            "accepted",
            [SAFE1],
            h.setup(1),
            [
                msg(h.pp(0, 5, a1)),
                msg(h.prep(0, 6, a1, 2)),
                msg(h.commit(0, 9, a1, 2)),
                msg(h.pp(0, 4, a1)),
            ],
            params={"watermark_window": 4},
        )
    )
    specs.append(
        _hand(
            "reject",
            "stale-and-future-view",
            "replica 2 times out on a pending request and leaves view 0 (inactive in view 1): "
            "PRE-PREPARE and PREPARE of view 0 and a PREPARE of view 1 before its NEW-VIEW "
            "are refused as stale_view; a PREPARE of view 3 as future_view",
            [SAFE1, LIVE],
            h.setup(2),
            [
                msg(a1),
                TIMEOUT,
                msg(h.pp(0, 1, a1)),
                msg(h.prep(0, 1, a1, 3)),
                msg(h.prep(1, 1, a1, 3)),
                msg(h.prep(3, 1, a1, 1)),
            ],
        )
    )
    specs.append(
        _hand(
            "reject",
            "not-primary-not-backup",
            "a PRE-PREPARE of view 0 from replica 2 (not the primary) is refused as "
            "not_primary, a PREPARE from replica 0 (the primary of view 0) as not_backup",
            [SAFE1],
            h.setup(1),
            [msg(h.pp(0, 1, a1, by=2)), msg(h.prep(0, 1, a1, 0))],
        )
    )
    specs.append(
        _hand(
            "reject",
            "conflicting-pre-prepare",
            "replica 1 accepts the primary's PRE-PREPARE for c0's request at (0, 1) and "
            "prepares it; a second PRE-PREPARE for (0, 1) with c1's request (an equivocating "
            "primary) is refused as conflicting and NOT prepared; PREPAREs of replicas 2 and "
            "3 for the second digest make nobody prepared here.  A replica that prepares "
            "twice in a view sends a second PREPARE at step 2",
            [SAFE1],
            h.setup(1),
            [
                msg(h.pp(0, 1, a1)),
                msg(h.pp(0, 1, b1)),
                msg(h.prep(0, 1, b1, 2)),
                msg(h.prep(0, 1, b1, 3)),
            ],
        )
    )
    good = h.prep(0, 1, a1, 2).tree()
    specs.append(
        _hand(
            "reject",
            "malformed-messages",
            "messages that are JSON objects but not well-typed signed envelopes (missing "
            "fields, an unknown type, a bad digest, a non-hex signature, an extra field) are "
            "refused as malformed; the result is ok: malformed input is the network's, not a "
            "bad command",
            [SAFE2],
            h.setup(1),
            [
                {"op": "message", "message": {"type": "Signed", "message": {"type": "Prepare"}}},
                {"op": "message", "message": {"hello": "world"}},
                {"op": "message", "message": _with(good, message={"type": "Vote"})},
                {
                    "op": "message",
                    "message": _with(good, message=_with(good["message"], digest="xyz")),
                },
                {"op": "message", "message": _with(good, signature="zz")},
                {"op": "message", "message": _with(good, extra=1)},
            ],
        )
    )
    specs.append(
        _hand(
            "reject",
            "invalid-commands",
            "commands that are not well-formed get invalid_input and change nothing: an "
            "unknown op, a message that is not an object, a missing message, extra fields, "
            "a request op carrying a PREPARE",
            [],
            h.setup(1),
            [
                {"op": "deliver"},
                {"op": "message", "message": "not an object"},
                {"op": "message"},
                {"op": "timeout", "replica": 1},
                {"op": "request", "message": good},
                msg(a1),
            ],
        )
    )
    # -- view changes ---------------------------------------------------------------------
    specs += _view_change_specs(h)
    # -- execution --------------------------------------------------------------------------
    b2, a2 = h.req("c1", 2, "b2"), h.req("c0", 2, "a2")
    specs.append(
        _hand(
            "execute",
            "out-of-order-commits",
            "checkpoint_k 2: replica 1 commits seq 2 before seq 1; seq 2 waits, and both "
            "execute in order in the step that commits seq 1, followed by the checkpoint "
            "at seq 2",
            [SAFE2, REPL],
            h.setup(1),
            [
                msg(h.pp(0, 1, a1)),
                msg(h.pp(0, 2, b1)),
                msg(h.prep(0, 2, b1, 2)),
                msg(h.prep(0, 2, b1, 3)),
                msg(h.commit(0, 2, b1, 0)),
                msg(h.commit(0, 2, b1, 2)),
                msg(h.commit(0, 2, b1, 3)),
                msg(h.prep(0, 1, a1, 2)),
                msg(h.prep(0, 1, a1, 3)),
                msg(h.commit(0, 1, a1, 0)),
                msg(h.commit(0, 1, a1, 2)),
                msg(h.commit(0, 1, a1, 3)),
            ],
            params={"checkpoint_k": 2},
        )
    )
    specs.append(
        _hand(
            "execute",
            "stale-timestamp-skipped",
            "exactly-once per client timestamp: c0's request with timestamp 2 commits at "
            "seq 1, its request with timestamp 1 at seq 2; seq 2 executes as a no-op "
            "(result null, no reply) but still enters the log",
            [SAFE2, REPL],
            h.setup(2),
            _committed_at(h, 2, [(1, a2), (2, a1)]),
        )
    )
    specs.append(
        _hand(
            "commit",
            "late-commits-after-timeout",
            "replica 1 prepares c0's request and commits, then times out before the commits "
            "arrive; in view 1 (inactive) it still executes on 2f+1 COMMITs of view 0, which "
            "prove the request committed",
            [SAFE1, LIVE, SAFE2],
            h.setup(1),
            [
                msg(a1),
                msg(h.pp(0, 1, a1)),
                msg(h.prep(0, 1, a1, 2)),
                msg(h.prep(0, 1, a1, 3)),
                TIMEOUT,
                msg(h.commit(0, 1, a1, 0)),
                msg(h.commit(0, 1, a1, 2)),
                msg(h.commit(0, 1, a1, 3)),
            ],
        )
    )
    specs.append(
        _hand(
            "pre_prepare",
            "primary-orders-two-clients",
            "the primary pre-prepares requests in arrival order (seq 1, 2, 3); a second copy "
            "of a request it has already ordered changes nothing",
            [SAFE1],
            h.setup(0),
            [msg(a1), msg(b1), msg(a1), msg(b2)],
        )
    )
    return specs


def _forged_req(h: _Hand) -> Signed:
    req = Request("c0", 5, {"op": "add", "key": "forged", "value": 0})
    return h.forge("c0", "r0", req)


def _with(tree: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = dict(tree)
    out.update(changes)
    return out


def _committed_at(h: _Hand, rid: int, slots: list[tuple[int, Signed]]) -> list[Command]:
    """Pre-prepare, 2f prepares and 2f+1 commits for each (seq, request), as replica
    ``rid`` of view 0 receives them."""
    cmds: list[Command] = []
    others = [r for r in range(1, N) if r != rid]
    for seq, req in slots:
        cmds.append(msg(h.pp(0, seq, req)))
        cmds += [msg(h.prep(0, seq, req, r)) for r in others]
        cmds += [msg(h.commit(0, seq, req, r)) for r in [0, *others]]
    return cmds


def _view_change_specs(h: _Hand) -> list[Spec]:
    a1 = h.req("c0", 1, "a")
    specs: list[Spec] = []
    specs.append(
        _hand(
            "timeout",
            "idle-timer-does-nothing",
            "the view-change timer runs only while a request is pending: a timeout on an "
            "idle replica does nothing; after a request arrives the timer runs and a timeout "
            "sends VIEW-CHANGE for view 1",
            [LIVE],
            h.setup(3),
            [TIMEOUT, msg(a1), TIMEOUT],
        )
    )
    specs.append(
        _hand(
            "timeout",
            "exponential-back-off",
            "replica 2 times out to view 1; with 2f+1 VIEW-CHANGEs for view 1 but no NEW-VIEW "
            "its timer runs again at twice the base timeout; it times out to view 2, of "
            "which it is the primary: with the VIEW-CHANGEs of replicas 0 and 1 it sends "
            "NEW-VIEW and pre-prepares the pending request; a timeout there takes it to view "
            "3 (eight times the base), where replica 3's NEW-VIEW makes it active again and "
            "it relays the request to the new primary; the timeout stays multiplied until "
            "something executes",
            [LIVE],
            h.setup(2),
            [
                msg(a1),
                TIMEOUT,
                msg(h.vc(1, 0)),
                msg(h.vc(1, 3)),
                TIMEOUT,
                msg(h.vc(2, 0)),
                msg(h.vc(2, 1)),
                TIMEOUT,
                msg(h.vc(3, 0)),
                msg(h.vc(3, 3)),
                msg(h.sign(3, NewView(3, (h.vc(3, 0), h.vc(3, 2), h.vc(3, 3)), (), 3))),
            ],
        )
    )
    v1 = (h.vc(1, 0), h.vc(1, 1), h.vc(1, 3))
    wrong_o = (h.sign(1, PrePrepare(1, 1, request_digest(a1), a1, 1)),)
    null_o = (h.sign(1, PrePrepare(1, 1, NULL_DIGEST, None, 1)),)
    specs.append(
        _hand(
            "reject",
            "bad-new-view",
            "replica 2 has left view 0; refused: a NEW-VIEW for view 1 from replica 3 (not "
            "its primary: not_primary), one with 2f VIEW-CHANGEs, one whose O is not the O "
            "that V implies (a request where V has no certificate), one whose O is the null "
            "request for a seq above every certificate (bad_new_view); then the genuine "
            "NEW-VIEW (V without certificates, O empty) is accepted",
            [SAFE1],
            h.setup(2),
            [
                msg(a1),
                TIMEOUT,
                msg(h.sign(3, NewView(1, v1, (), 3))),
                msg(h.sign(1, NewView(1, v1[:2], (), 1))),
                msg(h.sign(1, NewView(1, v1, wrong_o, 1))),
                msg(h.sign(1, NewView(1, v1, null_o, 1))),
                msg(h.sign(1, NewView(1, v1, (), 1))),
            ],
        )
    )
    bad_cert_vc = ViewChange(
        1,
        0,
        (),
        (_cert(h, a1, voters=[2]),),
        3,
    )
    specs.append(
        _hand(
            "reject",
            "bad-view-change",
            "replica 1 (primary of view 1) refuses VIEW-CHANGEs whose prepared certificate "
            "has only one PREPARE, or that claim a stable checkpoint at seq 2 without its "
            "proof (bad_view_change); two genuine ones from replicas 0 and 3 make it join "
            "(f+1) and, with its own, send NEW-VIEW",
            [SAFE1, LIVE],
            h.setup(1),
            [
                msg(h.sign(3, bad_cert_vc)),
                msg(h.sign(0, ViewChange(1, 2, (), (), 0))),
                msg(h.vc(1, 0)),
                msg(h.vc(1, 3)),
            ],
        )
    )
    return specs


def _cert(h: _Hand, req: Signed, *, voters: list[int]) -> PreparedCert:
    return PreparedCert(h.pp(0, 1, req), tuple(h.prep(0, 1, req, r) for r in voters))


# --- ITF traces -----------------------------------------------------------------------------


def _itf(run: _Run, description: str) -> dict[str, Any]:
    from ostrom.verify.tlc.itf import ITF_DESCRIPTION

    def fmap(values: Sequence[Any]) -> dict[str, Any]:
        return {"#map": [[i, v] for i, v in enumerate(values)]}

    states: list[dict[str, Any]] = []
    actions = ["Init", *(label for _r, label in run.rec.steps)]
    for index, (snap, action) in enumerate(zip(run.rec.snapshots, actions, strict=True)):
        states.append(
            {
                "#meta": {"index": index, "action": action},
                "view": fmap([s[0] for s in snap]),
                "status": fmap([s[1] for s in snap]),
                "last_exec": fmap([s[2] for s in snap]),
                "stable": fmap([s[3] for s in snap]),
            }
        )
    return {
        "#meta": {
            "format": "ITF",
            "format-description": ITF_DESCRIPTION,
            "generated-by": (
                "ostrom.conformance.generators.pbft_vectors (harness.network.Simulation)"
            ),
            "description": description,
            "n": N,
            "f": F,
            "seed": run.seed,
            "params": run.params,
            "byzantine": {str(i): s for i, s in run.byzantine.items()},
            "vars-meaning": {
                "view": "replica -> current view (spec/PBFT.tla: view)",
                "status": 'replica -> "normal" or "vc" (spec/PBFT.tla: status)',
                "last_exec": "replica -> highest executed sequence number",
                "stable": "replica -> sequence number of its stable checkpoint",
            },
        },
        "vars": ["view", "status", "last_exec", "stable"],
        "states": states,
    }


# --- assembly -------------------------------------------------------------------------------


def pbft_vector_specs() -> list[Spec]:
    """Every pbft vector, before expectations (for tests that need the commands only)."""
    return _all()[0]


def _all() -> tuple[list[Spec], dict[str, _Run]]:
    runs = _runs()
    specs = _recorded_specs(runs) + _hand_specs()
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise RuntimeError("duplicate pbft vector ids")
    for s in specs:
        if s.action not in ACTIONS:
            raise RuntimeError(f"{s.id}: unknown action")
    return specs, runs


def build_vector(spec: Spec) -> dict[str, Any]:
    """The vector document of ``spec``: expectations from a replay on the reference."""
    observations = replay(spec.params, spec.setup, spec.commands)
    if spec.recorded is not None:
        for i, (obs, sent) in enumerate(zip(observations, spec.recorded, strict=True)):
            if _sends(obs) != sent:
                raise RuntimeError(f"{spec.id}: step {i} replays differently from the run")
    return {
        "format": VECTOR_FORMAT,
        "id": spec.id,
        "layer": "pbft",
        "action": spec.action,
        "properties": spec.properties,
        "source": spec.source,
        "description": spec.description,
        "params": spec.params,
        "setup": spec.setup,
        "steps": [
            {"command": c, "expect": dict(o)}
            for c, o in zip(spec.commands, observations, strict=True)
        ],
    }


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"


def generate_pbft_vectors(out_dir: Path) -> list[Path]:
    """Write every pbft vector and trace under ``out_dir/pbft``; return the paths written.

    ``out_dir`` is the suite's ``vectors/`` folder.  Stale ``.json`` files under
    ``out_dir/pbft`` (vectors no longer generated) are removed, so the folder holds
    exactly what this function wrote.
    """
    root = out_dir / "pbft"
    specs, runs = _all()
    docs: dict[Path, str] = {}
    for spec in specs:
        docs[root / spec.action / f"{spec.name}.json"] = _dump(build_vector(spec))
    traces = {
        "normal-case": (runs["normal"], "normal case: three requests, checkpoint at seq 2"),
        "silent-primary": (
            runs["silent-primary"],
            "replica 0, primary of view 0, is silent: view change to view 1, two requests",
        ),
    }
    for name, (run, description) in traces.items():
        docs[root / "traces" / f"{name}.itf.json"] = _dump(_itf(run, description))
    if root.exists():
        for old in root.rglob("*.json"):
            if old not in docs:
                old.unlink()
    for path, text in docs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return sorted(docs)
