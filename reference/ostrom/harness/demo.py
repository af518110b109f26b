"""The reviewers' concrete test (docs/design.md §6): PBFT and Algorithm 1 side by side.

The Co-Forgetting review asks for a deterministic experiment: N=4, f=1, 100 memory items
proposed for forgetting, one faulty agent; do all honest agents reach the same keep/forget
outcome for every item?  :func:`run_demo` runs one scenario on both protocols:

* **PBFT** — the replicated orchestrator (:class:`ReplicatedOrchestrator`): every item is
  a real orchestrator command, signed by a client, ordered by PBFT and applied by every
  replica to its own :class:`~ostrom.protocol.orchestrator.Orchestrator`;
* **Algorithm 1** — the seed paper's two-round vote as written (:func:`alg1.run_alg1`,
  unauthenticated), which has no pre-prepare, no sequence numbers and no view change.

Scenarios (:data:`SCENARIOS`; the Algorithm 1 name is :data:`ALG1_SCENARIO`, because the
paper calls the primary the *coordinator*):

====================  ======================  =========================================
demo scenario         Algorithm 1 scenario    faulty replica / agent
====================  ======================  =========================================
``silent-backup``     ``silent-backup``       n-1 (a backup), sends nothing
``silent-primary``    ``silent-coordinator``  0 (the view-0 primary / the coordinator),
                                              sends nothing: PBFT must change view
``conflicting-votes`` ``conflicting-votes``   n-1, votes for conflicting values and
                                              stays reachable (PBFT: ``ConflictingVoter``)
====================  ======================  =========================================

``silent-coordinator`` and ``conflicting-voter`` are accepted as aliases (:data:`ALIASES`).

**The PBFT workload.**  A forget decision needs an artifact that may be voted on, so the
run has two phases, both ordered by PBFT and both in every replica's committed log
(REPL-1 replays the whole log):

1. *setup* (every replica honest): one agent, ``curator`` (tier 1), proposes the artifacts
   ``item-0`` .. ``item-{items-1}`` (each on its own slot, so each takes the fast track),
   with ``tick`` commands until all are ``active`` (the default ``propose_rate`` allows
   2 proposals per round, so there are ~items/2 + 3 ticks);
2. *items* — the measured phase, in which the faulty replica misbehaves from the first
   message on: for each item k a seeded value v_k in {forget, keep} and one command
   ``{"op": "forget_vote", "agent": "curator", "artifact": "item-k", "confidence": c}``
   with c = 1.0 for *forget* and c = 0.0 for *keep* (a vote that can never reach the
   forget quorum Q = alpha · Σw), then one closing ``tick`` on which every orchestrator
   forgets the items whose score reached Q.  (Algorithm 1's coordinator draws its own
   per-item values from the same seed; an item's value does not affect whether it is
   decided.)

The faulty replica behaves honestly during setup and runs its strategy from the start of
the item phase (a Byzantine replica may do anything, including behave well for a while);
this makes the item phase contain the fault, in particular the view change of
``silent-primary``.  All metrics below are of the item phase.

**Metrics** (:class:`Metrics`), per protocol:

* ``decided_items`` — items every honest replica decided.  A PBFT replica has decided
  item k when it executed the item's command and the closing tick; its decision is
  *forget* if ``item-k`` is ``forgotten`` in its orchestrator, *keep* if it is still
  ``active`` (any other state is recorded as itself and would count as a disagreement).
  Algorithm 1: :attr:`alg1.Alg1Report.decided_items`.  ``decided %`` = decided_items /
  items;
* ``disagreements`` — items on which two honest replicas decided differently;
* ``messages`` — messages sent during the item phase.  PBFT: every ``Network.send``
  (client requests and replies, pre-prepare, prepare, commit, checkpoint, view change,
  new view; a replica does not send to itself).  Algorithm 1: every delivery of its
  model, which counts an agent's message to itself (its broadcasts include itself).
  ``messages/item`` = messages / items.  The PBFT count includes retransmissions: the
  simulation's scheduler (``Simulation.run``) has every replica re-send its messages of
  the current view whenever the network goes quiet, which in these runs happens only
  while a silent primary is awaited — most of ``silent-primary``'s extra messages are
  these duplicates (refused as ``replayed``), not VIEW-CHANGE and NEW-VIEW traffic;
* ``view_changes`` — PBFT: the number of distinct views above the item phase's starting
  view that at least one honest replica *installed* (became active in, after sending or
  accepting a NEW-VIEW), observed after every simulation event.  A view that replicas
  timed out of before any NEW-VIEW was installed does not count.  Algorithm 1 has no view
  change: always 0.  ``view changes/item`` = view_changes / items;
* ``seconds`` — wall-clock time of that protocol's run (PBFT: the item phase; the setup's
  requests and seconds are reported apart).

The PBFT item phase ends as soon as every honest replica has executed every request:
messages still in flight then are counted in ``messages``, answers to them are not.

On the PBFT side the result also records REPL-1 (:meth:`ReplicatedOrchestrator.check_repl1`),
whether the honest replicas' executed logs are identical, and how many decisions differ
from the value the client proposed (PBFT's validity: none may).

Everything is deterministic per ``seed``, apart from the wall-clock.  The network loses
no message here (the scheduler only reorders), so retransmission when quiet is all the
liveness machinery these scenarios need besides the view change.

**Attacks** (``ostrom consensus-demo --attack NAME``, :func:`run_attack`).  The same
workload and metrics on PBFT alone, with one replica running a strategy of
:data:`~ostrom.harness.byzantine.STRATEGIES` (the adversary suite, docs/consensus.md)
from the item phase on, placed where it can do harm (:data:`PLACEMENT`): a backup, the
primary of view 0, or the primary of view 1.  The attacks on the view change need one to
happen, and at f = 1 the attacker is the only Byzantine replica, so for them the network
cuts the (honest) primary of view 0 off at the start of the item phase and heals as soon
as every other honest replica has left view 0: a network fault, which PBFT must survive
on top of f Byzantine replicas.  Besides the metrics above, an attack reports its effect:
the rejections it caused at honest replicas, by reason, counted by
:class:`~ostrom.harness.byzantine.RejectionLedger` from the envelopes it sent, and
whether each reason the strategy must cause (``refused_as``) occurred.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from rich.table import Table

from ostrom.consensus.messages import replica_name
from ostrom.consensus.replica import Output, Replica
from ostrom.harness import alg1
from ostrom.harness.byzantine import (
    STRATEGIES,
    ConflictingVoter,
    RejectionLedger,
    Silent,
    Strategy,
)
from ostrom.harness.replicated import ReplicatedOrchestrator
from ostrom.protocol.agents import Agent
from ostrom.protocol.lifecycle import ACTIVE, FORGOTTEN
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import DEFAULTS, Params

__all__ = [
    "ALG1_SCENARIO",
    "ALIASES",
    "ATTACKS",
    "PLACEMENT",
    "SCENARIOS",
    "AttackResult",
    "DemoResult",
    "DemoScenario",
    "render_attack_table",
    "render_table",
    "run_attack",
    "run_demo",
    "scenario_name",
    "to_json",
]

DemoScenario = Literal["silent-backup", "silent-primary", "conflicting-votes"]
SCENARIOS: Final[tuple[DemoScenario, ...]] = (
    "silent-backup",
    "silent-primary",
    "conflicting-votes",
)
#: Algorithm 1 calls the primary the coordinator: the same fault under its name there.
ALG1_SCENARIO: Final[dict[DemoScenario, alg1.Scenario]] = {
    "silent-backup": "silent-backup",
    "silent-primary": "silent-coordinator",
    "conflicting-votes": "conflicting-votes",
}
#: Other names accepted for the scenarios.
ALIASES: Final[dict[str, DemoScenario]] = {
    "silent-coordinator": "silent-primary",
    "conflicting-voter": "conflicting-votes",
}
#: The PBFT strategy of the faulty replica.
STRATEGY: Final[dict[DemoScenario, type[Strategy]]] = {
    "silent-backup": Silent,
    "silent-primary": Silent,
    "conflicting-votes": ConflictingVoter,
}

CURATOR: Final = "curator"
#: The defaults with FG-1's floor lifted: the lone curator forgets what the client asks.
DEMO_PARAMS: Final = dataclasses.replace(DEFAULTS, min_active_agents=1)
CLIENT: Final = "c0"

Decision = str | None  # "forget", "keep", another artifact state, or None: undecided
Progress = Callable[[str], None]


def scenario_name(name: str) -> DemoScenario:
    """The demo scenario ``name`` denotes (an alias is resolved); ValueError if none."""
    name = ALIASES.get(name, name)
    if name not in SCENARIOS:
        raise ValueError(f"unknown scenario {name!r}: one of {', '.join(SCENARIOS)}")
    return name


def faulty_replica(scenario: DemoScenario, n: int) -> int:
    """Replica 0 is the view-0 primary (Algorithm 1's coordinator); n-1 is a backup."""
    return 0 if scenario == "silent-primary" else n - 1


@dataclass(frozen=True)
class Metrics:
    """One protocol's figures for one scenario (see the module docstring)."""

    items: int
    decided_items: int
    disagreements: int
    messages: int
    view_changes: int
    seconds: float

    @property
    def decided_pct(self) -> float:
        return 100.0 * self.decided_items / self.items if self.items else 0.0

    @property
    def messages_per_item(self) -> float:
        return self.messages / self.items if self.items else 0.0

    @property
    def view_changes_per_item(self) -> float:
        return self.view_changes / self.items if self.items else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "decided_items": self.decided_items,
            "decided_pct": self.decided_pct,
            "disagreements": self.disagreements,
            "messages": self.messages,
            "messages_per_item": self.messages_per_item,
            "view_changes": self.view_changes,
            "view_changes_per_item": self.view_changes_per_item,
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class DemoResult:
    """One scenario on both protocols."""

    scenario: DemoScenario
    alg1_scenario: alg1.Scenario
    n: int
    f: int
    seed: int
    faulty: int  # the faulty replica (PBFT) and agent (Algorithm 1)
    strategy: str  # the PBFT strategy of the faulty replica
    pbft: Metrics
    alg1: Metrics
    repl1: bool  # REPL-1 held at every honest replica at the end
    repl1_error: str | None
    logs_identical: bool  # the honest replicas executed the same (seq, digest) log
    invalid_decisions: int  # PBFT decisions that differ from the client's value
    final_views: tuple[int, ...]  # per honest replica
    pbft_decisions: tuple[tuple[Decision, ...], ...]  # per item, per honest replica
    setup_requests: int  # PBFT requests of the setup phase (not measured)
    setup_seconds: float

    @property
    def pbft_ok(self) -> bool:
        """Everything PBFT guarantees held: a False here is a bug, not a finding."""
        p = self.pbft
        return (
            p.decided_items == p.items
            and p.disagreements == 0
            and self.repl1
            and self.logs_identical
            and self.invalid_decisions == 0
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "alg1_scenario": self.alg1_scenario,
            "n": self.n,
            "f": self.f,
            "seed": self.seed,
            "faulty_replica": self.faulty,
            "pbft": {
                **self.pbft.to_json(),
                "strategy": self.strategy,
                "repl1": self.repl1,
                "repl1_error": self.repl1_error,
                "logs_identical": self.logs_identical,
                "invalid_decisions": self.invalid_decisions,
                "final_views": list(self.final_views),
                "setup_requests": self.setup_requests,
                "setup_seconds": self.setup_seconds,
                "ok": self.pbft_ok,
            },
            "alg1": {**self.alg1.to_json(), "authenticated": False},
        }


@dataclass(frozen=True)
class PbftRun:
    """The PBFT side of one scenario: its metrics and what only PBFT can be asked."""

    metrics: Metrics
    strategy: str
    repl1_error: str | None
    logs_identical: bool
    invalid_decisions: int
    final_views: tuple[int, ...]
    decisions: tuple[tuple[Decision, ...], ...]
    setup_requests: int
    setup_seconds: float
    #: rejections at honest replicas caused by the faulty replica's envelopes (item phase)
    refused: dict[str, int] = dataclasses.field(default_factory=dict)


class _Armed(Strategy):
    """Honest until ``armed``, then ``inner``: the fault starts with the item phase."""

    def __init__(self, inner: Strategy) -> None:
        super().__init__()
        self.inner = inner
        self.name = inner.name
        self.armed = False

    def attach(self, replica: Replica, rng: random.Random, n: int) -> None:
        super().attach(replica, rng, n)
        self.inner.attach(replica, rng, n)

    # Armed, every entry point is the inner strategy's: some attacks act on what they
    # receive (they answer a FETCH-STATE, keep messages to replay), not only on what
    # their replica sends.
    def on_message(self, payload: object) -> Output:
        return self.inner.on_message(payload) if self.armed else self.replica.on_message(payload)

    def on_timeout(self) -> Output:
        return self.inner.on_timeout() if self.armed else self.replica.on_timeout()

    def retransmit(self) -> Output:
        return self.inner.retransmit() if self.armed else self.replica.retransmit()

    def transform(self, out: Output) -> Output:
        return self.inner.transform(out) if self.armed else out


def _item(k: int) -> str:
    return f"item-{k}"


def setup_commands(items: int, params: Params, agents: Iterable[Agent]) -> list[dict[str, Any]]:
    """Orchestrator commands that make ``item-0`` .. ``item-{items-1}`` active.

    Proposals go in batches of ``propose_rate`` with a tick after each; then ticks until
    every item is active.  Checked on a local orchestrator, so a parameter set under which
    this does not work is an error here rather than a puzzling demo.
    """
    agents = tuple(agents)
    orch = Orchestrator(params, agents)
    cmds: list[dict[str, Any]] = []

    def do(cmd: dict[str, Any]) -> None:
        obs = orch.apply(dict(cmd))
        if obs["result"] != "ok":
            raise RuntimeError(f"setup command {cmd} refused: {obs['result']}")
        cmds.append(cmd)

    for k in range(items):
        if k and k % params.propose_rate == 0:
            do({"op": "tick"})
        do(
            {
                "op": "propose",
                "agent": CURATOR,
                "artifact": _item(k),
                "slot": f"slot-{k}",
                "digest": f"memory-{k}",
            }
        )
    for _ in range(params.T_fast + 2 + items // params.propose_rate):
        if all(orch.state_of(_item(k)) == ACTIVE for k in range(items)):
            break
        do({"op": "tick"})
    if not all(orch.state_of(_item(k)) == ACTIVE for k in range(items)):
        raise RuntimeError("setup did not make every item active")
    return cmds


def item_commands(values: Sequence[alg1.Value]) -> list[dict[str, Any]]:
    """One forget vote per item (confidence 1: forget, 0: keep), then the closing tick."""
    cmds: list[dict[str, Any]] = [
        {
            "op": "forget_vote",
            "agent": CURATOR,
            "artifact": _item(k),
            "confidence": 1.0 if v == "forget" else 0.0,
        }
        for k, v in enumerate(values)
    ]
    return [*cmds, {"op": "tick"}]


def _decision(state: dict[str, Any], k: int, closing_now: int) -> Decision:
    art = state["artifacts"].get(_item(k))
    if art is None or state["now"] < closing_now or CURATOR not in art["forget_voters"]:
        return None
    if art["state"] == FORGOTTEN:
        return "forget"
    if art["state"] == ACTIVE:
        return "keep"
    return str(art["state"])


def _count(decisions: Sequence[tuple[Decision, ...]]) -> tuple[int, int]:
    decided = sum(all(d is not None for d in ds) for ds in decisions)
    split = sum(len({d for d in ds if d is not None}) > 1 for ds in decisions)
    return decided, split


def run_pbft(
    scenario: DemoScenario,
    items: int = 100,
    seed: int = 0,
    n: int = 4,
    f: int = 1,
    *,
    progress: Progress | None = None,
    max_steps: int | None = None,
) -> PbftRun:
    """The PBFT side of :func:`run_demo`."""
    return _run_items(
        STRATEGY[scenario](),
        faulty_replica(scenario, n),
        scenario,
        items,
        seed,
        n,
        f,
        progress=progress,
        max_steps=max_steps,
    )


def _run_items(
    strategy: Strategy,
    bad: int,
    label: str,
    items: int,
    seed: int,
    n: int,
    f: int,
    *,
    cut_primary: bool = False,
    progress: Progress | None = None,
    max_steps: int | None = None,
) -> PbftRun:
    """Setup (all honest), then the item phase with replica ``bad`` running ``strategy``
    (and, if ``cut_primary``, the view-0 primary cut off until the others left view 0)."""
    start = time.perf_counter()
    # One curator takes every forget decision the client asks for: the demo is about the
    # replicas agreeing on the log, not about who may forget.  FG-1's population floor
    # (min_active_agents, docs/forgetting.md) would refuse a lone forgetter, so the demo
    # lifts it; docs/consensus.md says so.
    params = DEMO_PARAMS
    agents = (Agent(CURATOR, tier=1, weight=1.0),)
    armed = _Armed(strategy)
    ro = ReplicatedOrchestrator(
        n, f, seed, params=params, agents=agents, byzantine={bad: armed}, clients=1
    )
    sim = ro.sim
    ledger = RejectionLedger(sim)
    setup = setup_commands(items, params, agents)
    budget = max_steps if max_steps is not None else 1000 * (len(setup) + items + 10)
    for cmd in setup:
        ro.submit(CLIENT, cmd)
    sim.run(budget, until=sim.all_executed)
    if not sim.all_executed():
        raise RuntimeError("PBFT setup phase did not complete (all replicas honest)")
    closing_now = sum(cmd["op"] == "tick" for cmd in setup) + 1  # `now` after the closing tick
    setup_seconds = time.perf_counter() - start
    start = time.perf_counter()

    rng = random.Random(seed)
    values: list[alg1.Value] = [rng.choice(alg1.VALUES) for _ in range(items)]
    armed.armed = True
    ledger.reset()
    sent0 = sim.network.stats["sent"]
    view0 = max(sim.replicas[i].view for i in sim.honest)
    primary = view0 % n
    if cut_primary:
        if primary == bad:
            raise ValueError("cut_primary cuts off the honest primary: not the attacker")
        rest = [replica_name(i) for i in range(n) if i != primary] + list(sim.clients)
        sim.partition([[replica_name(primary)], rest])
    base_exec = {i: sim.replicas[i].last_exec for i in sim.honest}
    installed: set[int] = set()
    reported = [-1]
    total = items + 1  # the forget votes and the closing tick
    step = max(1, total // 10)

    def observe() -> bool:
        for i in sim.honest:
            r = sim.replicas[i]
            if r.active and r.view > view0:
                installed.add(r.view)
        if progress is not None:
            done = min(sim.replicas[i].last_exec - base_exec[i] for i in sim.honest)
            done = min(done, total)  # a view change may add null requests
            if done // step > reported[0]:
                reported[0] = done // step
                progress(f"pbft {label}: {done}/{total} requests executed at every honest replica")
        return sim.all_executed()

    def others_left() -> bool:
        observe()
        return all(sim.replicas[i].view > view0 for i in sim.honest if i != primary)

    for cmd in item_commands(values):
        ro.submit(CLIENT, cmd)
    if cut_primary:
        sim.run(budget, until=others_left)
        sim.heal()
    sim.run(budget, until=observe)
    observe()

    states = ro.states()
    honest = sim.honest
    decisions = tuple(
        tuple(_decision(states[i], k, closing_now) for i in honest) for k in range(items)
    )
    decided, split = _count(decisions)
    try:
        ro.check_repl1()
        repl1_error: str | None = None
    except AssertionError as exc:
        repl1_error = str(exc)
    logs = [sim.replicas[i].executed_log for i in honest]
    invalid = sum(
        d is not None and d != v for ds, v in zip(decisions, values, strict=True) for d in ds
    )
    metrics = Metrics(
        items=items,
        decided_items=decided,
        disagreements=split,
        messages=sim.network.stats["sent"] - sent0,
        view_changes=len(installed),
        seconds=time.perf_counter() - start,
    )
    return PbftRun(
        metrics=metrics,
        strategy=armed.name,
        repl1_error=repl1_error,
        logs_identical=all(log == logs[0] for log in logs),
        invalid_decisions=invalid,
        final_views=tuple(sim.replicas[i].view for i in honest),
        decisions=decisions,
        setup_requests=len(setup),
        setup_seconds=setup_seconds,
        refused=dict(sorted(ledger.caused(replica_name(bad)).items())),
    )


def run_alg1_side(
    scenario: DemoScenario, items: int = 100, seed: int = 0, n: int = 4, f: int = 1
) -> Metrics:
    """The Algorithm 1 side of :func:`run_demo` (unauthenticated, as the paper writes it)."""
    start = time.perf_counter()
    r = alg1.run_alg1(n, f, items, ALG1_SCENARIO[scenario], seed)
    return Metrics(
        items=items,
        decided_items=r.decided_items,
        disagreements=r.disagreements,
        messages=r.messages,
        view_changes=0,  # Algorithm 1 has no view change
        seconds=time.perf_counter() - start,
    )


def run_demo(
    scenario: str,
    items: int = 100,
    seed: int = 0,
    n: int = 4,
    f: int = 1,
    *,
    progress: Progress | None = None,
) -> DemoResult:
    """Run ``scenario`` (a name of :data:`SCENARIOS` or :data:`ALIASES`) on PBFT and on
    Algorithm 1 with one faulty replica, ``items`` forget decisions, and report both."""
    if items < 1:
        raise ValueError("items must be >= 1")
    if f < 1 or n < 3 * f + 1:
        raise ValueError("the demo needs f >= 1 and n >= 3f+1")
    name = scenario_name(scenario)
    pb = run_pbft(name, items, seed, n, f, progress=progress)
    if progress is not None:
        progress(f"alg1 {ALG1_SCENARIO[name]}: {items} items")
    a1 = run_alg1_side(name, items, seed, n, f)
    return DemoResult(
        scenario=name,
        alg1_scenario=ALG1_SCENARIO[name],
        n=n,
        f=f,
        seed=seed,
        faulty=faulty_replica(name, n),
        strategy=pb.strategy,
        pbft=pb.metrics,
        alg1=a1,
        repl1=pb.repl1_error is None,
        repl1_error=pb.repl1_error,
        logs_identical=pb.logs_identical,
        invalid_decisions=pb.invalid_decisions,
        final_views=pb.final_views,
        pbft_decisions=pb.decisions,
        setup_requests=pb.setup_requests,
        setup_seconds=pb.setup_seconds,
    )


# --- consensus-demo --attack: the adversary suite on the replicated orchestrator ----------

Role = Literal["backup", "primary-0", "primary-1"]


@dataclass(frozen=True)
class Placement:
    """Where an attack runs: its replica's role, and whether the network cuts the honest
    view-0 primary off at the start of the item phase (so that the view changes)."""

    role: Role
    cut_primary: bool = False

    def replica(self, n: int) -> int:
        """A backup is n-1 (a backup in views 0 and 1); the primary of view v is v."""
        return {"backup": n - 1, "primary-0": 0, "primary-1": 1}[self.role]

    def describe(self) -> str:
        where = {
            "backup": "a backup",
            "primary-0": "the primary of view 0",
            "primary-1": "the primary of view 1",
        }[self.role]
        return where + ("; view-0 primary cut off" if self.cut_primary else "")


#: Where each strategy of ``STRATEGIES`` runs in ``consensus-demo --attack``.  The attacks
#: on the view change (fabricated certificates, a lying NEW-VIEW, old views replayed) need
#: one, hence the cut; a lying NEW-VIEW needs its author to be the next primary.
PLACEMENT: Final[dict[str, Placement]] = {
    "silent": Placement("backup"),
    "equivocate": Placement("primary-0"),
    "conflict": Placement("backup"),
    "delay": Placement("backup"),
    "garbage": Placement("primary-0"),
    "checkpoint-lie": Placement("backup"),
    "fake-certificate": Placement("backup", cut_primary=True),
    "bad-new-view": Placement("primary-1", cut_primary=True),
    "replay": Placement("backup", cut_primary=True),
    "tamper": Placement("primary-0"),
    "view-change-flood": Placement("backup"),
    "leaves-one-out": Placement("primary-0"),
}
#: The attacks ``consensus-demo --attack`` accepts: every strategy, in registry order.
ATTACKS: Final[tuple[str, ...]] = tuple(STRATEGIES)


@dataclass(frozen=True)
class AttackResult:
    """One attack on PBFT: the demo's metrics and what the attacker caused."""

    attack: str
    n: int
    f: int
    seed: int
    attacker: int
    placement: Placement
    pbft: Metrics
    repl1: bool
    repl1_error: str | None
    logs_identical: bool
    invalid_decisions: int
    final_views: tuple[int, ...]  # per honest replica
    refused: dict[str, int]  # rejections at honest replicas caused by the attacker
    expected: tuple[str, ...]  # the reasons the strategy must cause (``refused_as``)
    setup_requests: int

    @property
    def pbft_ok(self) -> bool:
        """Everything PBFT guarantees held (as :attr:`DemoResult.pbft_ok`): a False here is
        a bug in the replica, not a success of the attack."""
        p = self.pbft
        return (
            p.decided_items == p.items
            and p.disagreements == 0
            and self.repl1
            and self.logs_identical
            and self.invalid_decisions == 0
        )

    @property
    def refused_as_expected(self) -> bool:
        """Every reason the strategy must cause was seen at an honest replica."""
        return all(self.refused.get(r, 0) > 0 for r in self.expected)

    def to_json(self) -> dict[str, Any]:
        return {
            "attack": self.attack,
            "n": self.n,
            "f": self.f,
            "seed": self.seed,
            "attacker": self.attacker,
            "role": self.placement.role,
            "cut_primary": self.placement.cut_primary,
            "pbft": {
                **self.pbft.to_json(),
                "repl1": self.repl1,
                "repl1_error": self.repl1_error,
                "logs_identical": self.logs_identical,
                "invalid_decisions": self.invalid_decisions,
                "final_views": list(self.final_views),
                "setup_requests": self.setup_requests,
                "ok": self.pbft_ok,
            },
            "refused": dict(self.refused),
            "expected_refusals": list(self.expected),
            "refused_as_expected": self.refused_as_expected,
        }


def run_attack(
    attack: str,
    items: int = 100,
    seed: int = 0,
    n: int = 4,
    f: int = 1,
    *,
    progress: Progress | None = None,
) -> AttackResult:
    """Run the demo's workload on PBFT with one replica running the strategy ``attack``
    (placed by :data:`PLACEMENT`) from the item phase on."""
    if attack not in STRATEGIES:
        raise ValueError(f"unknown attack {attack!r}: one of {', '.join(ATTACKS)}")
    if items < 1:
        raise ValueError("items must be >= 1")
    if f < 1 or n < 3 * f + 1:
        raise ValueError("the demo needs f >= 1 and n >= 3f+1")
    strategy = STRATEGIES[attack]()
    where = PLACEMENT[attack]
    bad = where.replica(n)
    pb = _run_items(
        strategy, bad, attack, items, seed, n, f, cut_primary=where.cut_primary, progress=progress
    )
    return AttackResult(
        attack=attack,
        n=n,
        f=f,
        seed=seed,
        attacker=bad,
        placement=where,
        pbft=pb.metrics,
        repl1=pb.repl1_error is None,
        repl1_error=pb.repl1_error,
        logs_identical=pb.logs_identical,
        invalid_decisions=pb.invalid_decisions,
        final_views=pb.final_views,
        refused=pb.refused,
        expected=strategy.refused_as,
        setup_requests=pb.setup_requests,
    )


def to_json(results: Sequence[DemoResult], attacks: Sequence[AttackResult] = ()) -> dict[str, Any]:
    """The JSON document of ``ostrom consensus-demo --json``."""
    doc: dict[str, Any] = {
        "demo": "co-forgetting reviewers' concrete test (issue 3, item 7)",
        "ok": all(r.pbft_ok for r in results) and all(a.pbft_ok for a in attacks),
        "scenarios": [r.to_json() for r in results],
    }
    if attacks:
        doc["attacks"] = [a.to_json() for a in attacks]
    return doc


def _refusals(refused: dict[str, int]) -> str:
    """``reason count`` pairs, most frequent first."""
    pairs = sorted(refused.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{r} {c}" for r, c in pairs) or "none"


def render_attack_table(results: Sequence[AttackResult]) -> Table:
    """One block per attack: PBFT's metrics and the refusals the attacker caused."""
    first = results[0] if results else None
    title = "The adversary suite: one Byzantine replica against PBFT"
    if first is not None:
        title += (
            f"\nN={first.n}, f={first.f}, {first.pbft.items} forget decisions, seed {first.seed}"
        )
    table = Table(
        title=title,
        caption="refused: rejections at honest replicas caused by the attacker's messages "
        "(* = a reason the attack must cause). Red: a PBFT failure (a bug).",
    )
    table.add_column("attack (attacker)", overflow="fold")
    table.add_column("metric")
    table.add_column("PBFT", overflow="fold")
    for r in results:
        p = r.pbft
        label = f"{r.attack}\nreplica {r.attacker}:\n{r.placement.describe()}"
        marked = {(f"{k}*" if k in r.expected else k): v for k, v in r.refused.items()}
        rows: list[tuple[str, str]] = [
            ("decided %", _bad(f"{p.decided_pct:.1f}", p.decided_items < p.items)),
            ("disagreements", _bad(str(p.disagreements), p.disagreements > 0)),
            (
                "view changes / item",
                f"{p.view_changes_per_item:.2f} ({p.view_changes}); final views "
                + ",".join(str(v) for v in r.final_views),
            ),
            ("messages / item", f"{p.messages_per_item:.1f}"),
            (
                "REPL-1, identical logs",
                _bad("ok" if r.repl1 and r.logs_identical else "FAILED", not r.pbft_ok),
            ),
            ("refused", _refusals(marked)),
            ("wall-clock", f"{p.seconds:.2f} s"),
        ]
        for j, (metric, value) in enumerate(rows):
            table.add_row(label if j == 0 else "", metric, value)
        table.add_section()
    return table


def _bad(text: str, bad: bool) -> str:
    return f"[bold red]{text}[/]" if bad else text


def render_table(results: Sequence[DemoResult]) -> Table:
    """The side-by-side table: per scenario one row per metric, PBFT next to Algorithm 1."""
    first = results[0] if results else None
    title = "The reviewers' concrete test: PBFT vs the paper's Algorithm 1"
    if first is not None:
        title += (
            f"\nN={first.n}, f={first.f}, {first.pbft.items} forget decisions, seed {first.seed}"
        )
    table = Table(
        title=title,
        caption="Algorithm 1 runs unauthenticated, as written; it has no view change. "
        "Red: a failure (PBFT: a bug; Algorithm 1: the expected result).",
    )
    table.add_column("scenario (faulty replica)", overflow="fold")
    table.add_column("metric")
    table.add_column("PBFT", justify="right")
    table.add_column("Algorithm 1", justify="right")
    for r in results:
        p, a = r.pbft, r.alg1
        label = (
            f"{r.scenario}\n(Alg 1: {r.alg1_scenario})\nfaulty: replica {r.faulty} ({r.strategy})"
        )
        rows: list[tuple[str, str, str]] = [
            (
                "decided %",
                _bad(f"{p.decided_pct:.1f}", p.decided_items < p.items),
                _bad(f"{a.decided_pct:.1f}", a.decided_items < a.items),
            ),
            (
                "disagreements",
                _bad(str(p.disagreements), p.disagreements > 0),
                _bad(str(a.disagreements), a.disagreements > 0),
            ),
            ("messages / item", f"{p.messages_per_item:.1f}", f"{a.messages_per_item:.1f}"),
            (
                "view changes / item",
                f"{p.view_changes_per_item:.2f} ({p.view_changes})",
                "— (none exist)",
            ),
            (
                "REPL-1, identical logs",
                _bad("ok" if r.repl1 and r.logs_identical else "FAILED", not r.pbft_ok),
                "—",
            ),
            ("wall-clock", f"{p.seconds:.2f} s", f"{a.seconds:.3f} s"),
        ]
        for j, (metric, pb, al) in enumerate(rows):
            table.add_row(label if j == 0 else "", metric, pb, al)
        table.add_section()
    return table
