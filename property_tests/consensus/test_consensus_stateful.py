"""Stateful property tests of PBFT and the replicated orchestrator (docs/design.md §6, §7).

A Hypothesis ``RuleBasedStateMachine`` is the network adversary: it decides which
message is delivered next, which is dropped or duplicated, when a replica's or a
client's timer fires, when the network partitions and heals; before the run it picks up
to ``f`` Byzantine replicas and their strategy (silent, equivocating primary,
conflicting voter, delayed, garbage).  Clients submit orchestrator commands; every
replica applies its committed log to its own ``Orchestrator``.  Checkpoints are every 2
requests with a window of 4, so garbage collection, watermarks and state transfer are
exercised in short runs.  In half of the runs the honest replicas are durable (an
in-memory SQLite store each) and the adversary also crashes them, the primary included,
and restarts them from their stores (up to ``f`` down at once besides the Byzantine ones;
docs/consensus.md, "Durability and recovery"); a restarted replica must come back with
exactly the durable state it crashed with.

Every assertion message starts with the property id it checks; ``test_consensus_mutants``
relies on that to tell which property caught a mutant:

* BFT-SAFE-1 (after every step): no two honest replicas commit different requests at one
  sequence number.  The check includes the two lemmas agreement rests on (Castro &
  Liskov, TOCS 2002, §4.5 and appendix): honest replicas never *prepare* different
  requests at one (view, seq), and a request committed-local at an honest replica is
  prepared at ``q - f`` honest replicas;
* BFT-SAFE-2 (after every step): honest executed logs are prefixes of one another, and
  every executed request was signed by a client of the run;
* REPL-1 (after every step): each honest replica's orchestrator state equals the state
  of a fresh orchestrator applying that replica's committed log in order;
* BFT-LIVE-1 (at the end of every run): after the adversarial prefix the network heals
  and delivers fairly; every submitted request must then be executed by every honest
  replica within ``LIVE_ROUNDS`` rounds of retransmission and timeouts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, ClassVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from lifecycle_world import AGENTS, PARAMS
from mutant_check import run_machine
from ostrom.consensus.application import OrchestratorApp, committed_operations, reference_state
from ostrom.consensus.messages import replica_name, request_digest
from ostrom.consensus.replica import DurableState, ReplayMismatch, Replica
from ostrom.consensus.storage import MemoryLocation, StoreCorrupt
from ostrom.harness.byzantine import STRATEGIES
from ostrom.harness.network import Faults, Simulation

# The reachability test at the end reads what the machines above recorded in this
# process: the whole module runs on one xdist worker, in file order (--dist loadfile,
# conftest.py).

OPS: list[dict[str, Any]] = [
    {"op": "propose", "agent": "d1", "artifact": "x0", "slot": "s0", "digest": "d0"},
    {"op": "propose", "agent": "a1", "artifact": "x1", "slot": "s0", "digest": "d1"},
    {"op": "propose", "agent": "r1", "artifact": "x2", "slot": "s1", "digest": "d2"},
    {"op": "object", "agent": "a2", "artifact": "x0"},
    {"op": "recruit", "artifact": "x1"},
    {"op": "tick"},
    {"op": "forget_vote", "agent": "a1", "artifact": "x0"},
    {"op": "bogus"},  # refused by every orchestrator alike
]
STRATEGY_NAMES = sorted(STRATEGIES)
LIVE_ROUNDS = 12

#: What the ci runs reached, across examples (read by ``test_pbft_reaches``).
REACHED: Counter[str] = Counter()


class PBFTMachine(RuleBasedStateMachine):
    """The adversary and the checks; subclasses change N/F or the replica code."""

    N: ClassVar[int] = 4
    F: ClassVar[int] = 1
    CLIENTS: ClassVar[int] = 2
    REPLICA: ClassVar[type[Replica]] = Replica

    def __init__(self) -> None:
        super().__init__()
        self.sim: Simulation | None = None
        self._repl_checked: dict[int, tuple[int, dict[str, Any]]] = {}
        self._crashed: dict[int, DurableState] = {}  # down replica -> its state at the crash
        self._restarted_at: dict[int, int] = {}  # restarted replica -> last_exec then

    @initialize(
        # replica 0, the first primary, is faulty more often: equivocation needs it; so is
        # replica 1, the primary of view 1: the NEW-VIEW attack (bad-new-view) needs it
        faulty=st.lists(
            st.one_of(st.just(0), st.just(1), st.integers(0, 6)), max_size=2, unique=True
        ),
        kinds=st.lists(st.sampled_from(STRATEGY_NAMES), min_size=2, max_size=2),
        seed=st.integers(0, 2**16),
        ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=4),
        durable=st.booleans(),
    )
    def setup(
        self, faulty: list[int], kinds: list[str], seed: int, ops: list[Any], durable: bool
    ) -> None:
        ids = [x for x in faulty if x < self.N][: self.F]
        byz = {i: STRATEGIES[kinds[k]]() for k, i in enumerate(ids)}
        for i, s in byz.items():
            REACHED[f"byzantine:{s.name}{':primary' if i == 0 else ''}"] += 1
        self.sim = Simulation(
            self.N,
            self.F,
            seed,
            byzantine=byz,
            faults=Faults(reorder=False),
            clients=self.CLIENTS,
            app_factory=lambda: OrchestratorApp(PARAMS, AGENTS),
            checkpoint_k=2,
            watermark_window=4,
            base_timeout=10**9,  # timers fire only when the adversary says so
            client_timeout=10**9,
            replica_factory=self.REPLICA,
            # in half of the runs every honest replica is durable, so that any may crash
            # and restart: in-memory SQLite (the same SQL, transactions and validation as
            # a file, without fsync; torn files are test_consensus_durability's).  The
            # other half runs at the old cost, without stores.
            stores=(lambda i: MemoryLocation()) if durable else None,
        )
        for k, op in enumerate(ops):
            self.sim.submit(f"c{k % self.CLIENTS}", dict(op))

    @property
    def s(self) -> Simulation:
        assert self.sim is not None
        return self.sim

    # --- the adversary --------------------------------------------------------------------

    @rule(client=st.integers(0, 1), op=st.sampled_from(OPS))
    def submit(self, client: int, op: dict[str, Any]) -> None:
        if sum(len(b) for b in self.s.backlog.values()) < 4:
            self.s.submit(f"c{client % self.CLIENTS}", dict(op))

    @precondition(lambda self: self.sim is not None and bool(self.sim.network.queue))
    @rule(picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=30))
    def deliver(self, picks: list[int]) -> None:
        for p in picks:
            q = self.s.network.queue
            if q:
                self.s.deliver(p % len(q))

    @precondition(lambda self: self.sim is not None and bool(self.sim.network.queue))
    @rule(pick=st.integers(0, 10**6))
    def drop(self, pick: int) -> None:
        self.s.drop(pick % len(self.s.network.queue))

    @precondition(lambda self: self.sim is not None and bool(self.sim.network.queue))
    @rule(pick=st.integers(0, 10**6))
    def duplicate(self, pick: int) -> None:
        self.s.duplicate(pick % len(self.s.network.queue))

    @rule(replica=st.integers(0, 10**6))
    def timeout(self, replica: int) -> None:
        self.s.fire_timeout(replica % self.N)

    @rule(client=st.integers(0, 1))
    def client_timeout(self, client: int) -> None:
        self.s.fire_client_timeout(f"c{client % self.CLIENTS}")

    @rule(replica=st.integers(0, 10**6))
    def retransmit(self, replica: int) -> None:
        self.s.retransmit(replica % self.N)

    @rule(isolated=st.integers(0, 10**6))
    def partition(self, isolated: int) -> None:
        cut = replica_name(isolated % self.N)
        rest = [replica_name(i) for i in range(self.N)] + list(self.s.clients)
        self.s.partition([[cut], [p for p in rest if p != cut]])

    @rule()
    def heal(self) -> None:
        self.s.heal()

    # A crash with the store intact is not a Byzantine fault: safety must hold however many
    # honest replicas crash (here up to F at once, besides the Byzantine ones: with one of
    # each at N = 4 nothing can commit until a restart), and every down replica is restarted
    # before the liveness check.  One rule for both, and a crash for one draw in four, so
    # that replicas are up most of the time: the runs must still commit, checkpoint and
    # change views between crashes (the other witnesses of MUST_REACH).
    @precondition(lambda self: self.sim is not None and bool(self.sim.stores))
    @rule(pick=st.integers(0, 10**6), restart=st.booleans())
    def crash_or_restart(self, pick: int, restart: bool) -> None:
        down = sorted(self.s.down)
        if down and (restart or len(down) >= self.F):
            self._restart(down[pick % len(down)])
            return
        if pick % 4:
            return
        up = [i for i in self.s.honest if i not in self.s.down]
        i = up[pick % len(up)]
        r = self.s.replicas[i]
        REACHED["crashed:primary" if r.is_primary else "crashed"] += 1
        self._crashed[i] = r.durable_state()
        self.s.crash(i)

    def _restart(self, i: int) -> None:
        """Rebuild replica ``i`` from its store; it must come back with exactly the durable
        state it crashed with (or it could contradict what it sent)."""
        try:
            self.s.restart(i)
        except StoreCorrupt as exc:
            if isinstance(exc.__cause__, ReplayMismatch):
                raise AssertionError(f"REPL-1: {exc}") from exc
            raise
        r = self.s.replicas[i]
        assert r.durable_state() == self._crashed.pop(i), (
            f"BFT-SAFE-1: replica {i} restarted with another durable state than it crashed with"
        )
        REACHED["restarted:primary" if r.is_primary else "restarted"] += 1
        self._restarted_at[i] = r.last_exec

    # --- the checks -----------------------------------------------------------------------

    @invariant()
    def agreement(self) -> None:
        if self.sim is None:
            return
        check_safety_1(self.s)

    @invariant()
    def prefixes(self) -> None:
        if self.sim is None:
            return
        check_safety_2(self.s)

    @invariant()
    def replicated_state(self) -> None:
        if self.sim is None:
            return
        self._check_repl1()

    def _check_repl1(self) -> None:
        """REPL-1 for every honest replica. The replay of the committed log is cached per
        last executed sequence number; the orchestrator is compared on every call, so a bug
        that changes it without executing anything is caught too."""
        for i in self.s.honest:
            r = self.s.replicas[i]
            if i not in self._repl_checked or self._repl_checked[i][0] != r.last_exec:
                want = reference_state(committed_operations(r.history), PARAMS, AGENTS)
                self._repl_checked[i] = (r.last_exec, want)
            app = r.app
            assert isinstance(app, OrchestratorApp)
            assert app.orchestrator.public_state() == self._repl_checked[i][1], (
                f"REPL-1: replica {i}'s orchestrator differs from its committed log"
            )

    def teardown(self) -> None:
        if self.sim is None:
            return
        s = self.s
        try:
            for i in sorted(s.down):  # BFT-LIVE-1 is about replicas that are up
                self._restart(i)
            note_reached(s)
            rounds = s.run_fair(LIVE_ROUNDS)
            # and what the fair rounds reached: the checks below cover those states too (a
            # stable checkpoint needs K executions and 2f+1 CHECKPOINTs delivered, which a
            # run's adversarial part alone reached only for some pools of draws)
            note_reached(s)
            check_safety_1(s)
            check_safety_2(s)
            self._check_repl1()  # before BFT-LIVE-1: a diverged replica can stall checkpoints
            assert rounds is not None, (
                f"BFT-LIVE-1: requests not executed at every honest replica after "
                f"{LIVE_ROUNDS} fair rounds (views {[r.view for r in s.replicas]}, "
                f"executed {[r.last_exec for r in s.replicas]}, byzantine {s.byzantine})"
            )
            REACHED["live"] += 1
            for i, at in self._restarted_at.items():
                if s.replicas[i].last_exec > at:
                    REACHED["restarted_then_executed"] += 1
        finally:
            s.close()


def check_safety_1(s: Simulation) -> None:
    """BFT-SAFE-1 and the two lemmas it rests on (see the module docstring)."""
    honest = [s.replicas[i] for i in s.honest]
    by_seq: dict[int, set[str]] = {}
    prepared: dict[tuple[int, int], set[str]] = {}
    for r in honest:
        for seq, ds in r.committed.items():
            by_seq.setdefault(seq, set()).update(ds)
        for v, seq, d in r.prepared_log:
            prepared.setdefault((v, seq), set()).add(d)
    for (v, seq), ds in prepared.items():
        assert len(ds) <= 1, f"BFT-SAFE-1: honest replicas prepared {len(ds)} requests at {v, seq}"
    for seq, ds in by_seq.items():
        assert len(ds) <= 1, f"BFT-SAFE-1: honest replicas committed {len(ds)} requests at {seq}"
    need = honest[0].q - s.f if honest else 0
    for r in honest:
        for key in r.committed_local:
            n = sum(key in h.prepared_log for h in honest)
            assert n >= need, (
                f"BFT-SAFE-1: replica {r.id} committed {key[:2]} prepared at only {n} honest"
            )


def check_safety_2(s: Simulation) -> None:
    """BFT-SAFE-2: honest executed logs are prefixes of one another; client provenance."""
    logs = [s.replicas[i].executed_log for i in s.honest]
    longest = max(logs, key=len, default=[])
    for log in logs:
        assert log == longest[: len(log)], "BFT-SAFE-2: honest executed logs diverge"
    sent = s.sent_requests()
    for i in s.honest:
        for req in s.replicas[i].history:
            if req is not None:
                assert request_digest(req) in sent, (
                    f"BFT-SAFE-2: replica {i} executed a request no client sent"
                )


def note_reached(s: Simulation) -> None:
    for i in s.honest:
        r = s.replicas[i]
        if r.view > 0 and r.active:
            REACHED["view_change_completed"] += 1
        if r.stable_seq > 0:
            REACHED["stable_checkpoint"] += 1
        if r.last_exec > 0:
            REACHED["executed"] += 1
        for reason in r.rejected:
            REACHED[f"rejected:{reason}"] += 1
        if any(d and len(d) == 1 for d in r.committed.values()):
            REACHED["committed"] += 1


class PBFTMachine7(PBFTMachine):
    """N = 7, f = 2: two Byzantine replicas at once."""

    N: ClassVar[int] = 7
    F: ClassVar[int] = 2


def test_pbft_n4() -> None:
    """The first machine of the file: ``REACHED`` starts empty here, so ``test_pbft_reaches``
    counts only this module's two machines, not the subclasses of other modules (attacks,
    mutants) that ran before in the same process."""
    REACHED.clear()
    run_machine(PBFTMachine)


def test_pbft_n7() -> None:
    """A third of the examples: each step costs about twice as much with seven replicas."""
    run_machine(PBFTMachine7, max_examples=max(1, settings().max_examples // 3))


#: What the runs must reach, or the safety checks prove nothing (docs/design.md §7 witnesses).
MUST_REACH = (
    "executed",
    "committed",
    "stable_checkpoint",
    "view_change_completed",
    "live",
    "byzantine:equivocate:primary",
    "byzantine:silent:primary",
    "rejected:forged",
    "rejected:conflicting",
    "rejected:stale_view",
    "rejected:replayed",
    "rejected:out_of_window",
    # the adversary suite (byzantine.py).  Here only what every run reaches; the attacks
    # that need their attacker in place and a few deliveries (bad_view_change,
    # bad_new_view, bad_state_transfer) have their witnesses in test_consensus_attacks.py,
    # which runs one machine per attack: this one's draws of a strategy are too lumpy.
    # So do malformed (garbage) and superseded (view-change-flood): whether this machine
    # draws those strategies in its examples depended on Hypothesis's pool of constants
    # (conftest.py), and they are the attack machine's witnesses garbage:malformed and
    # view-change-flood:superseded, caused by the attacker (test_attack_machine_reaches).
    "rejected:tampered",  # tamper (and garbage) as primary
    "crashed:primary",
    "restarted",
    "restarted:primary",
    "restarted_then_executed",
)


@pytest.mark.budget  # holds at the ci profile's budget: make test-fast skips it
def test_pbft_reaches() -> None:
    """Runs after the machines (file order): their histories reached every witness."""
    missing = [w for w in MUST_REACH if REACHED[w] == 0]
    assert not missing, f"the PBFT runs never reached {missing}: {dict(REACHED)}"
