"""The adversary suite: each Byzantine strategy against PBFT, and the control beyond f.

For every strategy of ``byzantine.STRATEGIES`` (docs/consensus.md, "The adversary suite"):
the attack runs in the position ``demo.PLACEMENT`` gives it (with the honest view-0
primary cut off when the attack is on the view change), the honest replicas refuse it for
the reasons the strategy names (``refused_as``, attributed to the attacker's envelopes by
``RejectionLedger``), BFT-SAFE-1 and BFT-SAFE-2 hold after every step, and every request
executes at every honest replica once the network heals (BFT-LIVE-1, ``run_fair``).  Then
one test per attack of what its defeat must look like (a fabricated certificate of each
kind is refused on its own, the view change moves past a lying new primary, a flood
forces no view change...), ``consensus-demo --attack`` through click, and the control: two
colluding replicas at N = 4 (f + 1) make honest replicas commit different requests at one
sequence number, and ``check_safety_1`` sees it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, precondition, rule
from test_consensus_stateful import OPS, PBFTMachine, check_safety_1, check_safety_2

from mutant_check import run_machine
from ostrom.cli.main import main
from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import (
    NULL_DIGEST,
    Checkpoint,
    FetchState,
    NewView,
    Prepare,
    PrePrepare,
    Signed,
    ViewChange,
    replica_name,
)
from ostrom.harness import demo
from ostrom.harness.byzantine import (
    FAKE_CERTIFICATES,
    NEW_VIEW_LIES,
    STRATEGIES,
    CheckpointLiar,
    DoubleVoter,
    EquivocatingColluder,
    FakeCertificates,
    LeavesOneOut,
    NewViewLiar,
    RejectionLedger,
    Silent,
    ViewChangeFlood,
)
from ostrom.harness.network import Faults, Simulation

# The reachability test at the end reads what the machines above recorded in this
# process: the whole module runs on one xdist worker, in file order (--dist loadfile,
# conftest.py).

STEPS = 200_000
NEVER = 10**9  # timers fire only when a test fires them
NEW_ATTACKS = (
    "checkpoint-lie",
    "fake-certificate",
    "bad-new-view",
    "replay",
    "tamper",
    "view-change-flood",
)
#: The attacks the stateful attack machine runs: the adversary suite, and garbage, whose
#: refusals (malformed, forged) the general machine's lumpy draws of a strategy may miss.
MACHINE_ATTACKS = (*NEW_ATTACKS, "garbage")

Observer = Callable[[Simulation], None]


def attack_run(
    attack: str,
    *,
    n: int = 4,
    f: int = 1,
    seed: int = 0,
    requests: int = 8,
    reorder: bool = False,
    observe: Observer | None = None,
) -> tuple[Simulation, RejectionLedger, int]:
    """Run ``attack`` as ``demo.PLACEMENT`` places it: two clients submit ``requests``
    operations; if the placement says so, the honest view-0 primary is cut off until the
    other honest replicas have left view 0.  BFT-SAFE-1/2 are checked before every step
    (``observe`` too), and BFT-LIVE-1 at the end, after the network heals."""
    where = demo.PLACEMENT[attack]
    bad = where.replica(n)
    sim = Simulation(
        n,
        f,
        seed,
        byzantine={bad: STRATEGIES[attack]()},
        faults=Faults(reorder=reorder),
        clients=2,
        checkpoint_k=2,
        watermark_window=4,
    )
    ledger = RejectionLedger(sim)

    def checked() -> bool:
        check_safety_1(sim)  # BFT-SAFE-1
        check_safety_2(sim)  # BFT-SAFE-2
        if observe is not None:
            observe(sim)
        return sim.all_executed()

    if where.cut_primary:
        rest = [replica_name(i) for i in range(1, n)] + list(sim.clients)
        sim.partition([[replica_name(0)], rest])
    for k in range(requests):
        sim.submit(f"c{k % 2}", {"op": k})
    if where.cut_primary:
        sim.run(
            STEPS,
            until=lambda: checked() or all(sim.replicas[i].view > 0 for i in sim.honest if i),
        )
        assert all(sim.replicas[i].view > 0 for i in sim.honest if i), "no view change"
        sim.heal()
    sim.run(STEPS, until=checked)
    rounds = sim.run_fair(12)
    checked()
    assert rounds is not None, (
        f"BFT-LIVE-1: {attack}: views {[r.view for r in sim.replicas]}, "
        f"executed {[r.last_exec for r in sim.replicas]}"
    )
    return sim, ledger, bad


# --- every strategy: refused for its reasons, safe, live -----------------------------------


def test_every_strategy_is_placed_and_documented() -> None:
    assert set(demo.PLACEMENT) == set(STRATEGIES) == set(demo.ATTACKS)
    for name, cls in STRATEGIES.items():
        assert cls.name == name
        doc = " ".join((cls.__doc__ or "").split())
        assert doc.strip(), f"{name} has no docstring"
        if name in NEW_ATTACKS:
            assert cls.refused_as, f"{name} names no rejection reason"
            assert "Defeated by" in doc and "Probes" in doc, f"{name}: rule or property"
    help_text = CliRunner().invoke(main, ["consensus-demo", "--help"]).output
    for name in STRATEGIES:
        assert name in help_text


@pytest.mark.parametrize(("n", "f"), [(4, 1), (7, 2)])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("attack", list(STRATEGIES))
def test_attack_is_refused_and_pbft_holds(attack: str, seed: int, n: int, f: int) -> None:
    sim, ledger, bad = attack_run(attack, n=n, f=f, seed=seed, reorder=seed > 0)
    caused = ledger.caused(replica_name(bad))
    for reason in STRATEGIES[attack].refused_as:
        assert caused[reason] > 0, f"{attack} caused no {reason}: {dict(caused)}"
    assert sim.all_executed()


# --- the stateful adversary, with an attacker always in place -------------------------------

#: Per attack: examples run, and the reasons it caused at honest replicas (``ledger``).
ATTACKS_REACHED: Counter[str] = Counter()


class AttackMachine(PBFTMachine):
    """``PBFTMachine`` (all its adversary rules and checks: BFT-SAFE-1/2 and REPL-1 after
    every step, BFT-LIVE-1 at the end) with exactly one Byzantine replica, running the
    attack ``ATTACK`` where ``consensus-demo`` places it.  The general machine samples
    every strategy and position, its examples seldom deliver much, and it changes view
    seldom, so an attack that needs a view change into its own view (a lying NEW-VIEW)
    rarely completes within its prefixes; here the attacker is always in place (one
    machine per attack: Hypothesis's draws are lumpy), two more rules make sure what it
    sends gets read and views change, and the ledger tells what it caused."""

    ATTACK: ClassVar[str] = "checkpoint-lie"

    @initialize(
        seed=st.integers(0, 2**16),
        ops=st.lists(st.sampled_from(OPS), min_size=1, max_size=4),
        durable=st.booleans(),
    )
    def setup(self, seed: int, ops: list[Any], durable: bool) -> None:  # another initialize
        self.attack = self.ATTACK
        self.attacker = demo.PLACEMENT[self.attack].replica(self.N)
        PBFTMachine.setup(
            self,
            faulty=[self.attacker],
            kinds=[self.attack, self.attack],
            seed=seed,
            ops=ops,
            durable=durable,
        )
        self.ledger = RejectionLedger(self.s)

    @precondition(lambda self: self.sim is not None and bool(self.sim.network.queue))
    @rule()
    def deliver_all(self) -> None:
        """Everything in flight is delivered, in order (what the attacks send gets read)."""
        self.s.drain()

    @precondition(lambda self: self.sim is not None)
    @rule()
    def depose_primary(self) -> None:
        """One adversary step aimed at a view change (the general machine's examples
        seldom deliver enough for one): the primary of the highest view an honest replica
        is in is cut off, the clients broadcast their requests, everything in flight is
        delivered, every waiting replica's timer fires, and everything is delivered
        again.  ``heal`` undoes the cut."""
        s = self.s
        view = max(s.replicas[i].view for i in s.honest)
        cut = replica_name(view % self.N)
        rest = [replica_name(i) for i in range(self.N)] + list(s.clients)
        s.partition([[cut], [p for p in rest if p != cut]])
        for c in s.clients:
            s.fire_client_timeout(c)
        s.drain()
        for i in range(self.N):
            s.fire_timeout(i)  # only a waiting replica acts on it
        s.drain()

    def teardown(self) -> None:
        if self.sim is None:
            return
        super().teardown()  # BFT-LIVE-1 after the fair rounds, then the checks
        ATTACKS_REACHED[self.attack] += 1
        for reason in self.ledger.caused(replica_name(self.attacker)):
            ATTACKS_REACHED[f"{self.attack}:{reason}"] += 1
        liar = self.s.byzantine[self.attacker]
        if isinstance(liar, NewViewLiar) and liar.lies:
            ATTACKS_REACHED["bad-new-view:lied-about-O"] += 1  # not only the premature one


def _machine(attack: str) -> type[AttackMachine]:
    return type(  # one class per attack: its own stream of examples
        f"AttackMachine_{attack.replace('-', '_')}", (AttackMachine,), {"ATTACK": attack}
    )


@pytest.mark.parametrize("attack", MACHINE_ATTACKS)
def test_attack_machine(attack: str) -> None:
    """A fifteenth of the profile's examples per attack (seven attacks: 7/15 in all)."""
    run_machine(_machine(attack), max_examples=max(1, settings().max_examples // 15))


@pytest.mark.budget  # holds at the ci profile's budget: make test-fast skips it
def test_attack_machine_reaches() -> None:
    """Runs after the machine (file order): every attack ran and caused each of its
    reasons at an honest replica in some example, or the machine proves nothing about it."""
    missing = [
        f"{a}:{r}"
        for a in MACHINE_ATTACKS
        for r in ("", *STRATEGIES[a].refused_as)
        if ATTACKS_REACHED[f"{a}:{r}" if r else a] == 0
    ]
    # beyond ``refused_as``: the lie about O itself (not only the premature NEW-VIEW), and
    # a false STATE-TRANSFER read by a victim
    for extra in ("bad-new-view:lied-about-O", "checkpoint-lie:bad_state_transfer"):
        if ATTACKS_REACHED[extra] == 0:
            missing.append(extra)
    assert not missing, f"the attack machine never reached {missing}: {dict(ATTACKS_REACHED)}"


# --- checkpoint lies -----------------------------------------------------------------------


def test_checkpoint_lies_neither_stabilise_nor_block_a_lagging_victim() -> None:
    """BFT-LIVE-1, BFT-SAFE-2.  A victim of the liar is partitioned away while the others
    execute and make checkpoints stable; its vote store holds the liar's lies for those
    numbers (sent ahead of time).  After the heal it must catch up to the genuine state,
    and no honest replica ever takes a digest that only the liar signed as stable."""
    n, f, liar = 4, 1, 3
    strategy = CheckpointLiar()
    sim = Simulation(
        n,
        f,
        5,
        byzantine={liar: strategy},
        faults=Faults(reorder=False),
        checkpoint_k=2,
        watermark_window=4,
    )
    ledger = RejectionLedger(sim)
    victim = int(strategy.victims[0][1:])
    sim.retransmit(liar)  # the lies ahead go out first
    sim.drain()
    held = sim.replicas[victim].checkpoints
    assert {s for s, votes in held.items() if liar in votes} == {2, 4}
    others = [replica_name(i) for i in range(n) if i != victim] + ["c0"]
    sim.partition([[replica_name(victim)], others])
    for k in range(6):
        sim.submit("c0", {"op": k})
    sim.run(STEPS)
    assert sim.replicas[victim].last_exec == 0
    rounds = sim.run_fair(12)
    assert rounds is not None and sim.replicas[victim].last_exec >= 6
    digests = {(i, sim.replicas[i].stable_seq): sim.replicas[i].stable_digest for i in sim.honest}
    by_seq: dict[int, set[str]] = {}
    for (_i, seq), d in digests.items():
        by_seq.setdefault(seq, set()).add(d)
    assert all(len(ds) == 1 for ds in by_seq.values()), by_seq
    check_safety_1(sim)
    check_safety_2(sim)
    assert ledger.caused(replica_name(liar))["out_of_window"] > 0


@pytest.mark.parametrize("lagging", [False, True])
def test_false_state_transfers_are_refused(lagging: bool) -> None:
    """BFT-SAFE-2.  The liar's far-future CHECKPOINT makes a victim ask it for state (one
    FETCH-STATE); its STATE-TRANSFER (null requests under the genuine stable proof, or a
    "proof" of its own lie) is refused and nothing is installed.  ``lagging``: the victim
    is behind the liar's stable checkpoint, so the genuine proof is one it could use."""
    n, liar_id = 4, 3
    liar = CheckpointLiar()
    sim = Simulation(
        n,
        1,
        7,
        byzantine={liar_id: liar},
        faults=Faults(reorder=False),
        checkpoint_k=2,
        watermark_window=4,
        base_timeout=NEVER,
        client_timeout=NEVER,
    )
    victim = sim.replicas[int(liar.victims[0][1:])]
    others = [replica_name(i) for i in range(n) if i != victim.id]
    if lagging:
        sim.partition([[replica_name(victim.id)], [*others, "c0"]])
    for k in range(2):
        sim.submit("c0", {"op": k})
    sim.run(STEPS, until=lambda: all(sim.replicas[int(r[1:])].stable_seq == 2 for r in others))
    assert victim.last_exec == (0 if lagging else 2)
    before = (victim.last_exec, victim.stable_seq, victim.chain)
    refusals: set[str] = set()
    for attempt in range(8):
        far = liar.sign(Checkpoint(10 + 2 * attempt, "ab" * 32, liar_id))
        victim.retransmit()  # a new period: it may fetch from the liar again
        fetches = [
            s.payload
            for s in victim.on_message(far).sends
            if isinstance(s.payload, Signed) and isinstance(s.payload.message, FetchState)
        ]
        assert len(fetches) == 1 and fetches[0].message == FetchState(victim.last_exec, victim.id)
        (answer,) = liar.on_message(fetches[0]).sends
        seen = victim.rejected.copy()
        assert victim.on_message(answer.payload).executed == []
        refusals |= set(victim.rejected - seen)
    assert (victim.last_exec, victim.stable_seq, victim.chain) == before
    assert "bad_state_transfer" in refusals
    assert refusals <= {"bad_state_transfer", "tampered"}
    if lagging:
        assert "tampered" in refusals  # a genuine proof, a log that does not chain to it


# --- fabricated prepared certificates ---------------------------------------------------------


def _world_with_certificates() -> tuple[Simulation, FakeCertificates]:
    """Four replicas (the forger is 3) that executed three requests: checkpoint 2 is
    stable, seq 3 has a prepared certificate above it, seqs 1-2 certificates below it."""
    forger = FakeCertificates()
    sim = Simulation(
        4,
        1,
        2,
        byzantine={3: forger},
        faults=Faults(reorder=False),
        checkpoint_k=2,
        watermark_window=4,
    )
    for k in range(3):
        sim.submit("c0", {"op": k})
    sim.run(STEPS, until=sim.all_executed)
    assert all(r.stable_seq == 2 and r.last_exec == 3 for r in sim.replicas)
    assert 3 in sim.replicas[3].prepared_certs
    forger.transform(sim.replicas[3].retransmit())  # let it snapshot its certificates
    return sim, forger


@pytest.mark.parametrize("kind", FAKE_CERTIFICATES)
def test_each_fabricated_certificate_is_refused(kind: str) -> None:
    """BFT-SAFE-1.  A VIEW-CHANGE that is genuine but for one fabricated certificate is
    ``bad_view_change`` at an honest replica, and is not kept; the genuine one is kept."""
    sim, forger = _world_with_certificates()
    r3 = sim.replicas[3]
    certs = tuple(c for s, c in sorted(r3.prepared_certs.items()) if s > r3.stable_seq)
    genuine = ViewChange(1, r3.stable_seq, r3.stable_proof, certs, 3)
    fake = forger.fake_view_change(genuine, kind)
    assert fake != genuine
    honest = sim.replicas[1]
    before = honest.rejected["bad_view_change"]  # the forger's eager fakes, while building
    honest.on_message(forger.sign(fake))
    assert honest.rejected["bad_view_change"] == before + 1
    assert 3 not in honest.view_changes.get(1, {})
    honest.on_message(forger.sign(genuine))
    assert 3 in honest.view_changes[1]  # the rejection was the fake's, not the world's


def test_new_views_re_propose_only_prepared_requests() -> None:
    """BFT-SAFE-1.  Under the forger, every request a NEW-VIEW installed at an honest
    replica re-proposes was prepared (by the honest code of some replica) in an earlier
    view at that sequence number: a fake certificate never reaches O."""
    installed: list[NewView] = []

    def collect(sim: Simulation) -> None:
        for i in sim.honest:
            nv = sim.replicas[i].new_view_msg
            if nv is not None and isinstance(nv.message, NewView) and nv.message not in installed:
                installed.append(nv.message)

    for seed in range(4):
        installed.clear()
        sim, ledger, bad = attack_run("fake-certificate", seed=seed, observe=collect)
        assert ledger.caused(replica_name(bad))["bad_view_change"] > 0
        assert installed
        prepared = {key for r in sim.replicas for key in r.prepared_log}
        for nv in installed:
            for s in nv.pre_prepares:
                pp = s.message
                assert isinstance(pp, PrePrepare)
                if pp.digest != NULL_DIGEST:
                    assert any((v, pp.seq, pp.digest) in prepared for v in range(nv.view)), (
                        f"NEW-VIEW {nv.view} re-proposes an unprepared request at {pp.seq}"
                    )


# --- a lying new primary -------------------------------------------------------------------


@pytest.mark.parametrize("how", NEW_VIEW_LIES)
def test_each_new_view_lie_is_refused(how: str) -> None:
    """BFT-SAFE-1.  Backups recompute O: a NEW-VIEW whose O nulls, substitutes or omits a
    re-proposed request (the request of a highest-view certificate), or adds one, is
    ``bad_new_view``; the genuine NEW-VIEW the liar's replica computed is accepted."""
    liar = NewViewLiar(how)
    sim = Simulation(
        4,
        1,
        1,
        byzantine={1: liar},
        faults=Faults(reorder=False),
        checkpoint_k=2,
        watermark_window=4,
        base_timeout=NEVER,
        client_timeout=NEVER,
    )
    for k in range(5):
        sim.submit("c0", {"op": k})
    sim.run(STEPS, until=sim.all_executed)
    assert all(5 in r.prepared_certs and r.stable_seq == 4 for r in sim.replicas)
    premature = [sim.replicas[i].rejected["bad_new_view"] for i in (2, 3)]
    assert premature == [1, 1]  # its premature NEW-VIEW (V: its own VIEW-CHANGE only)
    # the primary is cut off; a new request reaches the others, who time out into view 1
    sim.partition([["r0"], ["r1", "r2", "r3", "c0"]])
    sim.submit("c0", {"op": "x"})
    sim.fire_client_timeout("c0")
    sim.drain()
    for i in (2, 3):
        sim.fire_timeout(i)
    sim.drain()
    r1 = sim.replicas[1]
    genuine = r1.new_view_msg
    assert (r1.view, r1.active) == (1, True) and genuine is not None
    (lie,) = liar.lies.values()
    assert isinstance(genuine.message, NewView) and isinstance(lie.message, NewView)
    want = [s.message for s in genuine.message.pre_prepares]
    got = [s.message for s in lie.message.pre_prepares]
    assert any(isinstance(pp, PrePrepare) and pp.digest != NULL_DIGEST for pp in want)
    if how == "omit":
        assert len(got) == len(want) - 1
    elif how == "add":
        assert got[:-1] == want
    else:
        (diff,) = [(a, b) for a, b in zip(want, got, strict=True) if a != b]
        assert isinstance(diff[1], PrePrepare)
        assert (diff[1].digest == NULL_DIGEST) == (how == "null")
    for i in (2, 3):
        h = sim.replicas[i]
        assert h.rejected["bad_new_view"] == 2  # and now the lie about O
        assert (h.view, h.active) == (1, False)
    sim.replicas[2].on_message(genuine)
    assert (sim.replicas[2].view, sim.replicas[2].active) == (1, True)


def test_view_change_moves_past_a_lying_new_primary() -> None:
    """BFT-LIVE-1.  No honest replica ever installs the liar's view; they all end in a
    later view, and every request executes."""
    installed: set[tuple[int, int]] = set()  # (view, NEW-VIEW author) installed by honest

    def collect(sim: Simulation) -> None:
        for i in sim.honest:
            r = sim.replicas[i]
            nv = r.new_view_msg
            if r.active and nv is not None and isinstance(nv.message, NewView):
                installed.add((nv.message.view, nv.message.replica))

    for seed in range(4):
        installed.clear()
        sim, ledger, liar = attack_run("bad-new-view", seed=seed, observe=collect)
        assert ledger.caused(replica_name(liar))["bad_new_view"] > 0
        assert all(author != liar for _v, author in installed), installed
        assert all(sim.replicas[i].view >= 2 for i in sim.honest)


# --- replays ---------------------------------------------------------------------------------


def test_replayed_old_views_change_nothing() -> None:
    """BFT-SAFE-1, BFT-LIVE-1.  Old-view traffic replayed in view 1 is refused; it moves
    no honest replica to another view and the honest logs stay equal."""
    for seed in range(3):
        sim, ledger, bad = attack_run("replay", seed=seed, requests=10)
        caused = ledger.caused(replica_name(bad))
        assert caused["stale_view"] > 10, dict(caused)
        assert {sim.replicas[i].view for i in sim.honest} == {1}
        logs = [sim.replicas[i].executed_log for i in sim.honest]
        assert all(log == logs[0] for log in logs)


# --- tampering -------------------------------------------------------------------------------


def test_tampered_fields_are_forged_and_a_tampered_request_is_tampered() -> None:
    """BFT-SAFE-2.  As primary the tamperer's PRE-PREPAREs come first with the request's
    operation changed under the client's signature (``tampered``: the digest is not the
    request's) and every message with a field changed under the signature it had
    (``forged``); every executed request is one a client signed."""
    sim, ledger, bad = attack_run("tamper", requests=10)
    caused = ledger.caused(replica_name(bad))
    assert caused["forged"] > 10 and caused["tampered"] > 0, dict(caused)
    sent = {s.message.msg_digest for c in sim.clients.values() for s in c.sent}
    for i in sim.honest:
        for req in sim.replicas[i].history:
            assert req is None or req.message.msg_digest in sent


# --- VIEW-CHANGE floods ------------------------------------------------------------------------


def test_a_flood_forces_no_view_change_and_stays_bounded() -> None:
    """BFT-LIVE-1.  A valid VIEW-CHANGE for an ever higher view after every input (well
    over a hundred): no honest replica leaves view 0, and each holds at most one
    VIEW-CHANGE of the flooder at any time."""
    held: list[int] = []

    def count(sim: Simulation) -> None:
        for i in sim.honest:
            held.append(sum(3 in ms for ms in sim.replicas[i].view_changes.values()))

    sim, ledger, bad = attack_run("view-change-flood", requests=20, observe=count)
    flooder = sim.byzantine[bad]
    assert isinstance(flooder, ViewChangeFlood) and flooder.sent > 100
    assert ledger.caused(replica_name(bad))["superseded"] > 50
    assert {sim.replicas[i].view for i in sim.honest} == {0}
    assert max(held) == 1


def test_a_flood_plus_one_honest_timeout_joins_the_smallest_view() -> None:
    """The f+1 rule counts the flooder's one VIEW-CHANGE (any Byzantine replica may add
    its vote to an honest replica's), but a replica joins the *smallest* later view
    wanted, not the flood's."""
    flooder = ViewChangeFlood()
    sim = Simulation(
        4,
        1,
        0,
        byzantine={3: flooder},
        faults=Faults(reorder=False),
        base_timeout=NEVER,
        client_timeout=NEVER,
    )
    sim.submit("c0", {"op": 0})
    sim.run(STEPS, until=sim.all_executed)
    for _ in range(20):
        sim.retransmit(3)  # 20 more flooded VIEW-CHANGEs
    sim.drain()
    assert flooder.flooded > 20
    assert {sim.replicas[i].view for i in sim.honest} == {0}
    sim.partition([["r0"], ["r1", "r2", "r3", "c0"]])
    sim.submit("c0", {"op": 1})
    sim.fire_client_timeout("c0")
    sim.drain()
    sim.fire_timeout(2)  # one honest replica times out: VIEW-CHANGE(1)
    sim.drain()
    assert [sim.replicas[i].view for i in (1, 2)] == [1, 1]
    assert sim.run_fair(12) is not None
    assert max(sim.replicas[i].view for i in sim.honest) <= 2
    check_safety_1(sim)
    check_safety_2(sim)


# --- a finding, fixed: a primary that leaves one backup out --------------------------------


def test_primary_leaving_one_backup_out_is_relayed_the_pre_prepare() -> None:
    """BFT-LIVE-1 within f.  N = 4, one request, replica 0 Byzantine only in whom its
    PRE-PREPAREs go to: backup 3 gets 2f prepares and 2f+1 commits but no pre-prepare,
    no pending request (no timer), and nobody wants a view change.  Found by this suite;
    fixed by relaying every accepted PRE-PREPARE of the view on retransmission (the
    primary's signature travels with it).  Before the fix replica 3 stayed at 0."""
    sim = Simulation(4, 1, 0, byzantine={0: LeavesOneOut()}, faults=Faults(reorder=False))
    sim.submit("c0", {"op": 0})
    rounds = sim.run_fair(12)
    check_safety_1(sim)
    check_safety_2(sim)
    r3 = sim.replicas[3]
    assert rounds is not None, (
        f"BFT-LIVE-1: replica 3 executed {r3.last_exec} of 1 request after 12 fair rounds"
    )
    assert [r.last_exec for r in sim.replicas] == [1, 1, 1, 1]
    assert {r.view for r in sim.replicas[1:]} == {0}  # no view change was needed


def test_left_out_backup_executes_everything_with_checkpoints() -> None:
    """With K = 4 and six requests the left-out backup executes all six (before the fix it
    fetched the state up to the stable checkpoint at 4 and stayed there)."""
    sim = Simulation(
        4, 1, 0, byzantine={0: LeavesOneOut()}, faults=Faults(reorder=False), checkpoint_k=4
    )
    for k in range(6):
        sim.submit("c0", {"op": k})
    assert sim.run_fair(12) is not None
    check_safety_1(sim)
    check_safety_2(sim)
    assert [r.last_exec for r in sim.replicas] == [6, 6, 6, 6]


# --- the ledger ----------------------------------------------------------------------------


def test_ledger_blames_the_envelope_not_the_claimed_sender() -> None:
    """A message forged in replica 1's name by replica 3 is blamed on replica 3."""
    sim = Simulation(4, 1, 0, byzantine={3: Silent()}, faults=Faults(reorder=False))
    ledger = RejectionLedger(sim)
    _ring, signers = make_keys(0, ["r3"])
    vote = signers["r3"].sign(Prepare(0, 1, "ab" * 32, 1))
    forged = Signed(vote.message, "r1", vote.signature)
    sim.network.send("r3", "r0", forged)
    sim.drain()
    assert ledger.caused("r3") == {"forged": 1}
    assert ledger.caused("r1") == {}


# --- consensus-demo --attack ---------------------------------------------------------------


@pytest.mark.parametrize("attack", NEW_ATTACKS)
def test_demo_attack_on_the_replicated_orchestrator(attack: str) -> None:
    r = demo.run_attack(attack, items=4, seed=0)
    assert r.pbft_ok, r.to_json()
    assert r.refused_as_expected, r.refused
    assert r.attacker == demo.PLACEMENT[attack].replica(4)
    if demo.PLACEMENT[attack].cut_primary:
        assert r.pbft.view_changes >= 1
    if attack == "bad-new-view":
        assert all(v >= 2 for v in r.final_views)  # moved past the liar (view 1)
    if attack == "view-change-flood":
        assert r.pbft.view_changes == 0


def test_cli_attack_json_and_table() -> None:
    result = CliRunner().invoke(
        main,
        ["consensus-demo", "--items", "3", "--attack", "bad-new-view", "--attack", "replay"],
    )
    assert result.exit_code == 0, result.output
    assert "bad-new-view" in result.stdout and "bad_new_view*" in result.stdout
    assert "Algorithm 1" not in result.stdout  # --attack alone runs no scenario
    result = CliRunner().invoke(
        main, ["consensus-demo", "--items", "3", "--attack", "checkpoint-lie", "--json"]
    )
    assert result.exit_code == 0, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    assert doc["ok"] is True and doc["scenarios"] == []
    (a,) = doc["attacks"]
    assert a["attack"] == "checkpoint-lie" and a["attacker"] == 3
    assert a["pbft"]["ok"] is True and a["pbft"]["decided_pct"] == 100.0
    assert a["refused_as_expected"] is True
    assert set(a["expected_refusals"]) <= set(a["refused"])


def test_cli_attack_fails_when_pbft_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PBFT failure under attack is a bug: exit status 1."""
    real = demo.run_attack

    def broken(*args: Any, **kwargs: Any) -> demo.AttackResult:
        import dataclasses

        return dataclasses.replace(real(*args, **kwargs), repl1=False)

    monkeypatch.setattr(demo, "run_attack", broken)
    result = CliRunner().invoke(
        main, ["consensus-demo", "--items", "2", "--attack", "silent", "--json"]
    )
    assert result.exit_code == 1
    assert json.loads(result.stdout)["ok"] is False


# --- the control: f + 1 Byzantine replicas -----------------------------------------------------


def test_more_than_f_byzantine_needs_the_opt_in() -> None:
    with pytest.raises(ValueError, match="Byzantine replicas > f"):
        Simulation(4, 1, 0, byzantine={0: Silent(), 3: Silent()})


def test_control_f_plus_one_colluders_break_agreement() -> None:
    """The checks can see a violation.  At N = 4 (f = 1) two colluding replicas, an
    equivocating primary and a replica that prepares and commits both digests, give each
    of two honest backups a full certificate for a different request at sequence number
    1: both commit and execute it, and ``check_safety_1`` raises BFT-SAFE-1."""
    sim = Simulation(
        4,
        1,
        0,
        byzantine={0: EquivocatingColluder(), 3: DoubleVoter()},
        beyond_f=True,
        faults=Faults(reorder=False),
        clients=2,
        base_timeout=10**9,
        client_timeout=10**9,
    )
    sim.submit("c0", {"op": "a"})
    sim.submit("c1", {"op": "b"})
    sim.drain()
    r1, r2 = sim.replicas[1], sim.replicas[2]
    assert r1.committed[1] and r2.committed[1] and r1.committed[1] != r2.committed[1]
    assert r1.history[0] != r2.history[0]  # two requests executed at seq 1
    with pytest.raises(AssertionError, match=r"^BFT-SAFE-1"):
        check_safety_1(sim)
    with pytest.raises(AssertionError, match=r"^BFT-SAFE-2"):
        check_safety_2(sim)


def test_control_one_colluder_alone_is_harmless() -> None:
    """The same colluding primary with an honest replica 3 (within f): nothing breaks."""
    sim = Simulation(
        4,
        1,
        0,
        byzantine={0: EquivocatingColluder()},
        faults=Faults(reorder=False),
        clients=2,
    )
    sim.submit("c0", {"op": "a"})
    sim.submit("c1", {"op": "b"})
    sim.drain()
    check_safety_1(sim)
    assert sim.run_fair(12) is not None
    check_safety_1(sim)
    check_safety_2(sim)
