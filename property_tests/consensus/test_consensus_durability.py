"""Durable PBFT replicas: crash and restart, torn writes, the amnesia fault, recovery.

docs/consensus.md, "Durability and recovery".  A replica writes its durable state
(``replica.DurableState``) to SQLite before anything it sends is released
(``storage.DurableReplica``); a restart rebuilds it from there.  These tests check:

1. crash and restart of any honest replica, the primary included, several times per run,
   with a Byzantine replica active: agreement after every step (BFT-SAFE-1/2), no
   restarted replica contradicts what it released before, everything executes after
   the network heals (BFT-LIVE-1);
2. torn writes: a database whose last transaction was cut short restarts in exactly the
   state before that transaction (whose sends were never released), and then never
   contradicts what it had released; a WAL or main file cut anywhere gives a state the
   replica really had, or a typed ``StoreError`` — never half a record;
3. the amnesiac restart (the store deleted) is a fault: a schedule at N = 4, f = 1 where
   it and one Byzantine replica break agreement, and the same schedule with the database
   intact, which keeps it;
4. recovery, one rule at a time: the restored durable state is the one before the crash,
   a restarted replica refuses a conflicting PRE-PREPARE, does not assign a sequence
   number twice, keeps its view, carries its certificates in its next VIEW-CHANGE, signs
   the same replies; writes come before sends, and only when something durable changed;
   a store that is not this replica's, of another version, altered or missing is refused.
"""

from __future__ import annotations

import random
import sqlite3
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_consensus_stateful import check_safety_1, check_safety_2

from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import (
    Checkpoint,
    Commit,
    NewView,
    Prepare,
    PrePrepare,
    Reply,
    Request,
    Signed,
    ViewChange,
    canonical,
    decode,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica import BROADCAST, DurableState, Output, Replica, Send
from ostrom.consensus.storage import (
    DurableReplica,
    FileLocation,
    MemoryLocation,
    StoreCorrupt,
    StoreError,
    StoreMismatch,
    StoreMissing,
    StoreVersionError,
    chain_step,
    main,
    row_hash,
)
from ostrom.harness.byzantine import ConflictingVoter, EquivocatingPrimary, Strategy
from ostrom.harness.network import Faults, Simulation, StoreFactory

NEVER = 10**9  # timers fire only when a test fires them


@pytest.fixture
def store_dir() -> Iterator[Path]:
    """A directory for database files, removed afterwards (pytest's tmp_path is kept)."""
    with tempfile.TemporaryDirectory(prefix="ostrom-stores-") as d:
        yield Path(d)


def file_stores(directory: Path, synchronous: str = "OFF") -> StoreFactory:
    """One database file per replica.  ``OFF``: a process crash loses nothing committed
    (what these tests model); fsync matters only for power loss (the benchmark)."""
    return lambda i: FileLocation(directory / f"r{i}.sqlite3", synchronous=synchronous)


# --- what a replica released, and whether it contradicts itself -----------------------------


class Released:
    """Every signed message handed to the network, in order (what left each replica)."""

    def __init__(self, sim: Simulation) -> None:
        self.messages: list[Signed] = []
        send = sim.network.send

        def spy(src: str, dst: str, payload: Signed | bytes, delay: int = 0) -> None:
            if isinstance(payload, Signed) and payload.sender == src:
                self.messages.append(payload)
            send(src, dst, payload, delay)

        sim.network.send = spy  # type: ignore[method-assign]

    def contradictions(self, replica: int) -> list[str]:
        return contradictions(self.messages, replica)


def contradictions(messages: Iterable[Signed], replica: int) -> list[str]:
    """What ``replica`` signed that contradicts something else it signed, in release order.

    An honest replica keeps its word, crashed or not (BFT-SAFE-1 rests on it): one
    PRE-PREPARE, PREPARE and COMMIT digest per (view, seq), one CHECKPOINT digest per
    seq, one VIEW-CHANGE and NEW-VIEW per view, one reply per client timestamp; no
    normal-case message of a view below one it moved to, unless it is one it had
    signed before moving (a retransmission); and every VIEW-CHANGE carries a
    certificate (of that view or a later one) for every sequence number above its stable
    checkpoint that it committed on.
    """
    me = replica_name(replica)
    said: dict[tuple[Any, ...], object] = {}
    found: list[str] = []
    moved = 0
    commits: set[tuple[int, int]] = set()
    for s in messages:
        m = s.message
        if s.sender != me:
            continue
        key: tuple[Any, ...] | None = None
        value: object = None
        if isinstance(m, PrePrepare | Prepare | Commit):
            key, value = (type(m).__name__, m.view, m.seq), m.digest
            # a vote first signed after leaving its view is a new promise in a view the
            # replica has abandoned; re-sending one it signed before (retransmission of
            # old-view votes, BFT-LIVE-1) repeats the same signed statement
            if m.view < moved and (key not in said or said[key] != value):
                found.append(f"{type(m).__name__} of view {m.view} after moving to {moved}")
            if isinstance(m, Commit):
                commits.add((m.view, m.seq))
        elif isinstance(m, Checkpoint):
            key, value = ("Checkpoint", m.seq), m.state_digest
        elif isinstance(m, ViewChange):
            key, value = ("ViewChange", m.new_view), m
            moved = max(moved, m.new_view)
            carried: dict[int, int] = {}
            for cert in m.prepared:
                pp = cert.pre_prepare.message
                assert isinstance(pp, PrePrepare)
                carried[pp.seq] = pp.view
            for v, seq in commits:
                if v < m.new_view and seq > m.last_stable_seq and carried.get(seq, -1) < v:
                    found.append(f"VIEW-CHANGE({m.new_view}) without its certificate at {seq}")
        elif isinstance(m, NewView):
            key, value = ("NewView", m.view), m
            moved = max(moved, m.view)
        elif isinstance(m, Reply):
            key, value = ("Reply", m.client, m.timestamp), canonical(m.result)
        if key is None:
            continue
        if key in said and said[key] != value:
            found.append(f"two different {key}")
        said.setdefault(key, value)
    return list(dict.fromkeys(found))  # a broadcast is sent once per destination


# --- 1. crash and restart under a Byzantine replica -----------------------------------------


ATTACKS: dict[str, Callable[[], dict[int, Strategy]]] = {
    "equivocating-primary": lambda: {0: EquivocatingPrimary()},
    "conflicting-voter": lambda: {3: ConflictingVoter()},
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
@pytest.mark.parametrize("seed", range(5))
def test_crash_and_restart_keep_agreement(attack: str, seed: int, store_dir: Path) -> None:
    """BFT-SAFE-1/2 after every step and BFT-LIVE-1 after heal, with random crashes and
    restarts of any honest replica (the primary of the current view three times in four),
    several per run, while a Byzantine replica attacks.  A crash with the store intact is
    no Byzantine fault: safety holds although a crashed and a Byzantine replica are two
    faulty ones at f = 1.  Every restart must give back the state of the crash, and no
    replica may ever contradict what it released."""
    sim = Simulation(
        4,
        1,
        seed,
        byzantine=ATTACKS[attack](),
        clients=2,
        checkpoint_k=2,
        watermark_window=4,
        stores=file_stores(store_dir),
    )
    released = Released(sim)
    rng = random.Random(seed)
    crashed: dict[int, DurableState] = {}
    submitted = primary_crashes = 0

    def replaced(i: int) -> bool:
        """A crashed primary stays down until the others have left its view (or nothing
        is left to happen): the run must show primaries being replaced, not only
        restarted before anyone noticed (since backups relay PRE-PREPAREs, a short
        outage of the primary often goes unnoticed)."""
        up = [j for j in sim.honest if j not in sim.down]
        return all(sim.replicas[j].view % sim.n != i for j in up)

    try:
        for _step in range(4000):
            if submitted < 14 and rng.random() < 0.03:
                sim.submit(f"c{submitted % 2}", {"op": "x", "k": submitted})
                submitted += 1
            if not sim.down and rng.random() < 0.02:
                views = [sim.replicas[i].view for i in sim.honest]
                primary = max(views) % sim.n
                up = [i for i in sim.honest if i not in sim.down]
                i = primary if primary in up and rng.random() < 0.75 else rng.choice(up)
                primary_crashes += i == primary
                crashed[i] = sim.replicas[i].durable_state()
                sim.crash(i)
            elif sim.down and rng.random() < 0.03 and replaced(min(sim.down)):
                i = min(sim.down)
                sim.restart(i)
                assert sim.replicas[i].durable_state() == crashed.pop(i)
            moved = sim.step()
            check_safety_1(sim)
            check_safety_2(sim)
            if not moved and sim.down:
                i = min(sim.down)
                sim.restart(i)
                assert sim.replicas[i].durable_state() == crashed.pop(i)
        for i in sorted(sim.down):
            sim.restart(i)
            assert sim.replicas[i].durable_state() == crashed.pop(i)
        rounds = sim.run_fair(12)
        check_safety_1(sim)
        check_safety_2(sim)
        assert rounds is not None, (
            f"BFT-LIVE-1: views {[r.view for r in sim.replicas]}, "
            f"executed {[r.last_exec for r in sim.replicas]}"
        )
        # at least the three honest primaries crashed while primary (a Byzantine primary,
        # which cannot crash here, ends the rotation once the view reaches it)
        assert sim.restarts["restart"] >= 10 and primary_crashes >= 3, (
            sim.restarts,
            [r.view for r in sim.replicas],
        )
        assert max(r.view for r in sim.replicas) >= 1  # crashed primaries were replaced
        for i in sim.honest:
            assert released.contradictions(i) == [], f"replica {i} contradicted itself"
    finally:
        sim.close()


def test_crashes_include_the_primary(store_dir: Path) -> None:
    """The primary of view 0 crashes after assigning sequence numbers; the others change
    view; it restarts in view 0 (its promises intact), joins, and everything executes."""
    sim = Simulation(4, 1, 2, clients=2, stores=file_stores(store_dir))
    released = Released(sim)
    try:
        for k in range(4):
            sim.submit(f"c{k % 2}", {"op": "x", "k": k})
        sim.run(40)  # some pre-prepares of view 0 are out
        assert sim.replicas[0].next_seq > 1
        crashed = sim.replicas[0].durable_state()
        sim.crash(0)
        sim.run(100_000, until=lambda: min(sim.replicas[i].view for i in (1, 2, 3)) >= 1)
        sim.restart(0)
        assert sim.replicas[0].durable_state() == crashed
        assert sim.run_fair(12) is not None
        check_safety_1(sim)
        check_safety_2(sim)
        assert sim.replicas[0].view >= 1
        assert all(released.contradictions(i) == [] for i in range(4))
    finally:
        sim.close()


# --- 2. torn writes -------------------------------------------------------------------------


def wal_commit_ends(wal: bytes) -> list[int]:
    """The byte offsets just past each commit frame of a WAL file's current generation
    (SQLite's format: a 32-byte header, then frames of a 24-byte header and one page;
    a commit frame records the database size, and frames of an older generation carry
    other salts)."""
    if len(wal) < 32:
        return []
    page_size = struct.unpack(">I", wal[8:12])[0]
    salts = wal[16:24]
    frame = 24 + page_size
    ends: list[int] = []
    off = 32
    while off + frame <= len(wal):
        (commit_size,) = struct.unpack(">I", wal[off + 4 : off + 8])
        if wal[off + 8 : off + 16] != salts:
            break
        off += frame
        if commit_size:
            ends.append(off)
    return ends


class Image:
    """The files of a crashed replica's store (the main database and its WAL)."""

    def __init__(self, db: Path) -> None:
        self.db = db.read_bytes()
        wal = Path(f"{db}-wal")
        self.wal = wal.read_bytes() if wal.exists() else b""

    def install(self, db: Path, *, db_size: int | None = None, wal_size: int | None = None) -> None:
        """Write the image at ``db``, each file cut to the given size."""
        Path(f"{db}-shm").unlink(missing_ok=True)
        db.write_bytes(self.db[:db_size])
        Path(f"{db}-wal").write_bytes(self.wal[:wal_size])


def recover(sim: Simulation, i: int, db: Path) -> Replica:
    """A fresh replica ``i`` rebuilt from ``db`` (closed again afterwards)."""
    replica = sim._new_replica(i)
    DurableReplica.recover(replica, FileLocation(db)).close()
    return replica


class TornRun:
    """A run whose victim replica crashes in the middle of a step: its transaction is
    committed, the step's sends are never released.  ``states[b]`` is the victim's
    durable state after its transaction ``b``; ``image`` its files at the crash."""

    def __init__(self, directory: Path, seed: int, victim: int = 1, *, fold: bool = False) -> None:
        self.victim = victim
        directory.mkdir()
        self.sim = Simulation(
            4,
            1,
            seed,
            clients=2,
            checkpoint_k=2,
            watermark_window=4,
            faults=Faults(reorder=False),
            base_timeout=NEVER,
            client_timeout=NEVER,
            stores=file_stores(directory),
        )
        self.released = Released(self.sim)
        self.db = directory / f"r{victim}.sqlite3"
        node = self.sim.durable[victim]
        self.states: dict[int, DurableState] = {node.store.batch: node.replica.durable_state()}
        rng = random.Random(seed)
        for k in range(6):
            self.sim.submit(f"c{k % 2}", {"op": "x", "k": k})
        for step in range(400):
            if step == 150:  # the main file gets some transactions, the WAL the later ones
                node.store.conn.execute("PRAGMA wal_checkpoint").fetchall()
            queue = self.sim.network.queue
            if not queue:
                break
            self.sim.deliver(rng.randrange(len(queue)))
            self.states[node.store.batch] = node.replica.durable_state()
        # the crash: the next message to the victim that changes its durable state; the
        # transaction commits, the outputs are lost with the process
        self.sim.submit("c0", {"op": "last"})
        self.sim.fire_client_timeout("c0")
        for _ in range(10_000):
            env = self.sim.network.queue[0]
            if env.dst != f"r{victim}":
                self.sim.deliver(0)
                self.states[node.store.batch] = node.replica.durable_state()
                continue
            env = self.sim.network.take(0)
            before = node.store.batch
            out = node.on_message(env.payload)
            if node.store.batch != before:
                self.states[node.store.batch] = node.replica.durable_state()
                break
            self.sim.route(f"r{victim}", out)
        self.last = node.store.batch
        if fold:  # everything into the main file, the WAL emptied
            node.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        self.image = Image(self.db)
        self.sim.crash(victim)

    def cut(self, directory: Path, **sizes: int) -> Path:
        db = directory / "cut.sqlite3"
        self.image.install(db, **sizes)
        return db


def test_torn_last_transaction_restarts_before_it(store_dir: Path) -> None:
    """The victim's last transaction is torn at every frame boundary and at random bytes
    inside its WAL frames: the store opens in exactly the state before it (whose outputs
    were all released), and the victim, restarted from it inside the run, never
    contradicts what it released; everything executes after heal (BFT-SAFE-1/2,
    BFT-LIVE-1)."""
    run = TornRun(store_dir / "run", seed=4)
    ends = wal_commit_ends(run.image.wal)
    assert ends, "the WAL holds the last transaction"
    start = ends[-2] if len(ends) >= 2 else 32  # 32: the first of a WAL generation
    rng = random.Random(4)
    cuts = sorted({start, ends[-1] - 1, *(rng.randrange(start, ends[-1]) for _ in range(20))})
    scratch = store_dir / "cuts"
    scratch.mkdir()
    for size in cuts:
        replica = recover(run.sim, run.victim, run.cut(scratch, wal_size=size))
        assert replica.durable_state() == run.states[run.last - 1], f"WAL cut at {size}"
    replica = recover(run.sim, run.victim, run.cut(scratch, wal_size=ends[-1]))
    assert replica.durable_state() == run.states[run.last]  # whole: nothing is lost
    # the victim restarts inside the run from a store torn in its last transaction
    run.image.install(run.db, wal_size=cuts[len(cuts) // 2])
    sim = run.sim
    try:
        sim.restart(run.victim)
        assert sim.replicas[run.victim].durable_state() == run.states[run.last - 1]
        assert sim.run_fair(12) is not None
        check_safety_1(sim)
        check_safety_2(sim)
        for i in sim.honest:
            assert run.released.contradictions(i) == []
    finally:
        sim.close()


@pytest.mark.parametrize("target", ["wal", "db"])
def test_files_cut_anywhere_give_a_real_state_or_a_typed_refusal(
    target: str, store_dir: Path
) -> None:
    """The WAL or the main file cut at random byte offsets (and at 0, and at its length):
    the replica restarts in a state it really had after some committed transaction, or
    the store is refused with a ``StoreError``.  Never another exception, never a state
    it never had (half a record).  The WAL is cut while it holds the last transactions;
    the main file after the WAL was folded into it (so that it holds everything).  A cut
    below the last transaction is media loss, not a torn write: restarting from it is
    amnesia of the lost transactions, which is why a deployment keeps its WAL with
    ``synchronous=FULL`` on a disk that keeps its writes."""
    run = TornRun(store_dir / "run", seed=7, fold=target == "db")
    data = run.image.wal if target == "wal" else run.image.db
    rng = random.Random(7)
    sizes = sorted({0, len(data), *(rng.randrange(len(data) + 1) for _ in range(40))})
    known = list(run.states.values())
    scratch = store_dir / "cuts"
    scratch.mkdir()
    outcomes: dict[str, int] = {}
    for size in sizes:
        db = run.cut(scratch, **{f"{target}_size": size})
        try:
            replica = recover(run.sim, run.victim, db)
        except StoreError as exc:
            outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
            continue
        assert replica.durable_state() in known, f"{target} cut at {size}: a state never had"
        outcomes["recovered"] = outcomes.get("recovered", 0) + 1
    assert outcomes.get("recovered", 0) > 0, outcomes
    if target == "db":
        assert sum(v for k, v in outcomes.items() if k != "recovered") > 0, outcomes
    run.sim.close()


# --- 3. the amnesia fault -------------------------------------------------------------------


class DoubleVoter(Strategy):
    """Byzantine: PREPAREs and COMMITs every PRE-PREPARE of a primary that reaches it,
    also a second one for a (view, seq) it already voted on (signed as itself only)."""

    name = "double-voter"

    def on_message(self, payload: object) -> Output:
        out = self.replica.on_message(payload)
        m = payload.message if isinstance(payload, Signed) else None
        r = self.replica
        if isinstance(m, PrePrepare) and isinstance(payload, Signed) and r.keyring.verify(payload):
            for cls in (Prepare, Commit):
                vote = self.sign(cls(m.view, m.seq, m.digest, r.id))
                out.sends.append(Send(BROADCAST, vote))
        return out


def amnesia_schedule(*, amnesiac: bool) -> tuple[Simulation, Released]:
    """N = 4, f = 1: replica 0 is the honest primary of view 0, replica 3 is Byzantine
    (``DoubleVoter``), replicas 1 and 2 are honest.

    1. c0's request A: replica 0 assigns it sequence number 1.  Everything to replica 2
       is lost; replicas 0, 1 and 3 prepare and commit A, and 0 and 1 execute it.
    2. Replica 0 crashes and restarts: from its store, or with the store deleted.
    3. c1's request B reaches replica 0, and every message is delivered.
    """
    sim = Simulation(
        4,
        1,
        0,
        byzantine={3: DoubleVoter()},
        clients=2,
        faults=Faults(reorder=False),
        base_timeout=NEVER,
        client_timeout=NEVER,
        stores=lambda i: MemoryLocation(),
    )
    released = Released(sim)
    sim.submit("c0", {"op": "A"})
    sim.deliver_where(deliver=lambda e: e.dst != "r2", drop=lambda e: e.dst == "r2")
    assert [sim.replicas[i].last_exec for i in (0, 1, 2)] == [1, 1, 0]
    sim.crash(0)
    sim.restart(0, amnesiac=amnesiac)
    sim.submit("c1", {"op": "B"})
    sim.deliver_where(deliver=lambda e: True)
    return sim, released


def test_amnesia_breaks_agreement() -> None:
    """The amnesiac restart is a fault.  Replica 0 forgot that it assigned sequence
    number 1 to A and assigns it to B; replica 2 never saw A, and the Byzantine replica
    votes for both.  Replica 1 committed A at 1, replica 2 commits B at 1: two honest
    replicas disagree (BFT-SAFE-1), with one Byzantine replica at f = 1, because the
    amnesiac one contradicted its own PRE-PREPARE."""
    sim, released = amnesia_schedule(amnesiac=True)
    try:
        r1, r2 = sim.replicas[1], sim.replicas[2]
        assert r1.executed_log[0][1] != r2.executed_log[0][1]
        assert {d for ds in (r1.committed[1], r2.committed[1]) for d in ds} == {
            r1.executed_log[0][1],
            r2.executed_log[0][1],
        }
        with pytest.raises(AssertionError, match=r"BFT-SAFE-1: .* 2 requests at \(0, 1\)"):
            check_safety_1(sim)
        assert released.contradictions(0) == [
            "two different ('PrePrepare', 0, 1)",
            "two different ('Commit', 0, 1)",
        ]
        assert released.contradictions(1) == released.contradictions(2) == []
    finally:
        sim.close()


def test_the_same_schedule_with_the_database_keeps_agreement() -> None:
    """The same schedule, replica 0 restarted from its store: it knows sequence number 1
    is A's and gives B number 2; agreement holds, nobody contradicts itself, and after
    heal both requests execute everywhere (replica 2 learns A by retransmission)."""
    sim, released = amnesia_schedule(amnesiac=False)
    try:
        check_safety_1(sim)
        check_safety_2(sim)
        pp = sim.replicas[0].pre_prepares
        assert sorted(s for v, s in pp) == [1, 2]
        assert sim.run_fair(12) is not None
        check_safety_1(sim)
        check_safety_2(sim)
        assert all(released.contradictions(i) == [] for i in (0, 1, 2))
    finally:
        sim.close()


# --- 4. recovery, one rule at a time --------------------------------------------------------


class World:
    """Four durable replicas driven by hand (no network), each with an in-memory store."""

    def __init__(self, **kw: Any) -> None:
        names = [replica_name(i) for i in range(4)] + ["c0", "c1"]
        self.ring, self.signers = make_keys(7, names)
        self.kw = kw
        self.locations = [MemoryLocation() for _ in range(4)]
        self.nodes = [DurableReplica.create(self.fresh(i), self.locations[i]) for i in range(4)]
        self.ts = 0

    def fresh(self, i: int) -> Replica:
        return Replica(i, 4, 1, self.ring, self.signers[replica_name(i)], **self.kw)

    def r(self, i: int) -> Replica:
        return self.nodes[i].replica

    def restart(self, i: int) -> DurableReplica:
        """Crash replica ``i`` and rebuild it from its store; the durable state must be
        the one it crashed with."""
        before = self.r(i).durable_state()
        self.nodes[i].close()
        self.nodes[i] = DurableReplica.recover(self.fresh(i), self.locations[i])
        assert self.r(i).durable_state() == before
        return self.nodes[i]

    def request(self, op: str, client: str = "c0") -> Signed:
        self.ts += 1
        return self.signers[client].sign(Request(client, self.ts, {"op": op}))

    def pre_prepare(self, view: int, seq: int, req: Signed | None) -> Signed:
        primary = view % 4
        pp = PrePrepare(view, seq, request_digest(req), req, primary)
        return self.signers[replica_name(primary)].sign(pp)

    def vote(self, kind: type, i: int, view: int, seq: int, req: Signed | None) -> Signed:
        return self.signers[replica_name(i)].sign(kind(view, seq, request_digest(req), i))

    def close(self) -> None:
        for node, loc in zip(self.nodes, self.locations, strict=True):
            node.close()
            loc.dispose()


def sent(out: Output, kind: type) -> list[Any]:
    return [
        s.payload.message
        for s in out.sends
        if isinstance(s.payload, Signed) and isinstance(s.payload.message, kind)
    ]


@pytest.fixture
def world() -> Iterator[World]:
    w = World()
    yield w
    w.close()


def test_restarted_backup_refuses_a_conflicting_pre_prepare(world: World) -> None:
    """BFT-SAFE-1: the PRE-PREPARE it accepted (and prepared) survives the crash, so an
    equivocating primary's second one for (0, 1) is refused and gets no PREPARE."""
    a, b = world.request("a"), world.request("b", "c1")
    out = world.nodes[1].on_message(world.pre_prepare(0, 1, a))
    assert [p.digest for p in sent(out, Prepare)] == [request_digest(a)]
    node = world.restart(1)
    out = node.on_message(world.pre_prepare(0, 1, b))
    assert sent(out, Prepare) == []
    assert node.replica.rejected["conflicting"] == 1
    out = node.on_message(world.pre_prepare(0, 1, a))
    assert sent(out, Prepare) == [] and node.replica.rejected["replayed"] == 1


def test_restarted_primary_does_not_assign_a_sequence_number_twice(world: World) -> None:
    """BFT-SAFE-1: the primary's next_seq and assigned requests survive: a new request
    gets number 2, and the first one, sent again by its client, is not assigned again."""
    a, b = world.request("a"), world.request("b", "c1")
    out = world.nodes[0].on_message(a)
    assert [(p.seq, p.digest) for p in sent(out, PrePrepare)] == [(1, request_digest(a))]
    node = world.restart(0)
    out = node.on_message(b)
    assert [(p.seq, p.digest) for p in sent(out, PrePrepare)] == [(2, request_digest(b))]
    out = node.on_message(a)  # the client retransmits A
    assert sent(out, PrePrepare) == []
    assert set(node.replica.pre_prepares) == {(0, 1), (0, 2)}


def test_restarted_replica_keeps_its_view(world: World) -> None:
    """No message of a view below one it moved to: a replica that sent VIEW-CHANGE(1)
    restarts in view 1, changing view; it refuses view 0's PRE-PREPARE and repeats the
    very same VIEW-CHANGE when it retransmits."""
    a = world.request("a")
    world.nodes[1].on_message(a)
    out = world.nodes[1].on_timeout()
    (vc,) = [
        s.payload
        for s in out.sends
        if isinstance(s.payload, Signed) and isinstance(s.payload.message, ViewChange)
    ]
    node = world.restart(1)
    assert (node.replica.view, node.replica.active) == (1, False)
    out = node.on_message(world.pre_prepare(0, 1, a))
    assert out.sends == [] and node.replica.rejected["stale_view"] == 1
    again = [
        s.payload
        for s in node.retransmit().sends
        if isinstance(s.payload, Signed) and s.payload == vc
    ]
    assert again and again[0].signature == vc.signature


def test_restarted_replica_carries_its_certificates(world: World) -> None:
    """Its next VIEW-CHANGE carries the prepared certificate of the request it committed
    on before the crash (the NEW-VIEW's O must keep it)."""
    a = world.request("a")
    node = world.nodes[1]
    out = node.on_message(world.pre_prepare(0, 1, a))
    out.extend(node.on_message(world.vote(Prepare, 2, 0, 1, a)))  # prepared: pp + 2f
    assert [c.seq for c in sent(out, Commit)] == [1]
    node = world.restart(1)
    assert node.replica.pending == {}  # volatile: the request comes back from its client
    node.on_message(a)
    out = node.on_timeout()
    (vc,) = sent(out, ViewChange)
    certs = [(c.pre_prepare.message.seq, c.pre_prepare.message.digest) for c in vc.prepared]
    assert certs == [(1, request_digest(a))]


def test_restart_forgets_the_volatile_state(world: World) -> None:
    """Others' votes, pending requests and the back-off are gone; own votes stay."""
    a = world.request("a")
    node = world.nodes[1]
    node.on_message(a)
    node.on_message(world.pre_prepare(0, 1, a))
    node.on_message(world.vote(Prepare, 2, 0, 1, a))
    node.on_timeout()
    r = world.restart(1).replica
    assert r.pending == {} and r.to_execute == {} and r.consecutive_view_changes == 0
    assert [set(v) for v in r.prepares.values()] == [{1}]
    assert r.view_changes == {1: {1: r.view_changes[1][1]}}


def test_restart_re_signs_the_same_replies(store_dir: Path) -> None:
    """The application state and the last replies come back by executing the history
    again; each reply is re-signed in the view it was signed in (c0's in view 1, c1's in
    view 2), to the same bytes: a retransmitted request gets the same answer.  Primaries
    crash here: replica 0 in view 0, replica 1 in view 1."""
    sim = Simulation(4, 1, 5, clients=2, stores=file_stores(store_dir))
    try:
        sim.crash(0)
        sim.submit("c0", {"op": "a"})
        sim.run(200_000)
        sim.restart(0)
        sim.crash(1)
        sim.submit("c1", {"op": "b"})
        sim.run(200_000)
        sim.restart(1)
        assert sim.run_fair(12) is not None
        r3 = sim.replicas[3]
        assert r3.reply_views() == {"c0": 1, "c1": 2}
        replies, app = dict(r3.last_reply), r3.app.digest()
        sim.crash(3)
        sim.restart(3)
        assert sim.replicas[3].last_reply == replies
        assert sim.replicas[3].app.digest() == app
    finally:
        sim.close()


def test_write_before_send(world: World) -> None:
    """A step whose write fails releases nothing: the exception reaches the caller in
    place of the output, and the store still holds the state before the step."""
    a = world.request("a")
    node = world.nodes[1]
    before = node.replica.durable_state()

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    node.store._commit = disk_full  # type: ignore[method-assign]
    with pytest.raises(OSError, match="disk full"):
        node.on_message(world.pre_prepare(0, 1, a))
    with pytest.raises(StoreError, match="stopped after a failed write"):
        node.retransmit()  # fail-stop: its memory is ahead of its store
    restarted = DurableReplica.recover(world.fresh(1), world.locations[1])
    assert restarted.replica.durable_state() == before
    world.nodes[1] = restarted


def test_writes_only_when_something_durable_changed(world: World) -> None:
    """One transaction per step that changes the durable state; none for a step that
    does not (a retransmission, a refused or repeated message, others' votes)."""
    a = world.request("a")
    node = world.nodes[1]
    batch = node.store.batch
    node.on_message(world.pre_prepare(0, 1, a))
    assert node.store.batch == batch + 1
    b = world.request("b", "c1")
    for payload in (world.pre_prepare(0, 1, a), b"garbage", world.vote(Prepare, 2, 0, 2, b)):
        node.on_message(payload)
    node.retransmit()
    assert node.store.batch == batch + 1


# --- the store refuses what it cannot vouch for ---------------------------------------------


def _file_node(directory: Path, i: int = 1) -> tuple[World, Path, DurableReplica]:
    w = World()
    db = directory / f"r{i}.sqlite3"
    node = DurableReplica.create(w.fresh(i), FileLocation(db, synchronous="OFF"))
    a = w.request("a")
    node.on_message(w.pre_prepare(0, 1, a))
    node.on_message(w.vote(Prepare, 2, 0, 1, a))
    node.on_message(w.vote(Prepare, 3, 0, 1, a))
    node.close()
    return w, db, node


def _reseal(db: Path) -> None:
    """Recompute the last batch's state hash and chain link after an edit, as a bug or an
    attacker that knows the format would: only the record-level checks remain."""
    conn = sqlite3.connect(db, isolation_level=None)
    rows = conn.execute("SELECT kind, key, value FROM record").fetchall()
    total = sum(row_hash(k, key, v) for k, key, v in rows) % (1 << 256)
    batches = conn.execute("SELECT n, chain FROM batch ORDER BY n DESC LIMIT 2").fetchall()
    (n, _), (_, prev) = batches
    state = f"{total:064x}"
    link = chain_step(prev, n, state, len(rows))
    conn.execute(
        "UPDATE batch SET rows = ?, state_hash = ?, chain = ? WHERE n = ?",
        (len(rows), state, link, n),
    )
    conn.close()


def _edit(db: Path, sql: str, *args: object) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(sql, args)
    conn.close()


def test_store_refusals(store_dir: Path) -> None:
    """Each way a store can be unusable gives its typed error with a clear message."""
    w, db, _ = _file_node(store_dir)
    node = DurableReplica.recover(w.fresh(1), FileLocation(db))
    assert node.replica.sent_commit  # it prepared (0, 1) and committed on it
    node.close()
    with pytest.raises(StoreMismatch, match="replica = 1"):
        DurableReplica.recover(w.fresh(2), FileLocation(db))
    with pytest.raises(StoreMissing, match="no database file"):
        DurableReplica.recover(w.fresh(1), FileLocation(store_dir / "absent.sqlite3"))
    (store_dir / "empty.sqlite3").write_bytes(b"")
    with pytest.raises(StoreMissing, match="amnesiac"):
        DurableReplica.recover(w.fresh(1), FileLocation(store_dir / "empty.sqlite3"))
    (store_dir / "noise.sqlite3").write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreCorrupt, match="not a readable SQLite database"):
        DurableReplica.recover(w.fresh(1), FileLocation(store_dir / "noise.sqlite3"))
    with pytest.raises(StoreError, match="already holds"):
        DurableReplica.create(w.fresh(1), FileLocation(db))
    _edit(db, "PRAGMA user_version = 99")
    with pytest.raises(StoreVersionError, match="schema version 99"):
        DurableReplica.recover(w.fresh(1), FileLocation(db))


@pytest.mark.parametrize(
    ("edit", "reseal", "error"),
    [
        # a record changed behind the store's back: the state hash sees it
        (
            "UPDATE record SET value = CAST(value || x'20' AS BLOB) WHERE kind = 'prepare'",
            False,
            "torn",
        ),
        ("DELETE FROM record WHERE kind = 'commit'", False, "torn or altered"),
        # ... and if the hash is recomputed, the records themselves are checked
        (
            'UPDATE record SET value = CAST(replace(CAST(value AS TEXT), \'"op":"a"\','
            " '\"op\":\"z\"') AS BLOB) WHERE kind = 'pre_prepare'",
            True,
            "signature does not verify",
        ),
        ("DELETE FROM record WHERE kind = 'prepare'", True, "neither sent nor prepared"),
        ("UPDATE record SET key = '[0,2]' WHERE kind = 'pre_prepare'", True, "not a valid"),
        (
            "UPDATE record SET value = x'37' WHERE kind = 'scalar' AND key = '\"active\"'",
            True,
            "unexpected value",
        ),
        ("DELETE FROM batch", False, "no committed transaction"),
    ],
)
def test_altered_stores_are_refused(edit: str, reseal: bool, error: str, store_dir: Path) -> None:
    w, db, _ = _file_node(store_dir)
    _edit(db, edit)
    if reseal:
        _reseal(db)
    with pytest.raises(StoreCorrupt, match=error):
        DurableReplica.recover(w.fresh(1), FileLocation(db))


def test_command_line_check(store_dir: Path) -> None:
    """``python -m ostrom.consensus.storage`` says whether a replica could restart from a
    store, and why not, without a traceback."""
    _w, db, _ = _file_node(store_dir)
    args = ["--replica", "1", "--seed", "7", "--clients", "2"]
    assert main([str(db), *args]) == 0
    db.write_bytes(db.read_bytes()[:1000])
    Path(f"{db}-wal").unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "ostrom.consensus.storage", str(db), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("refused: Store"), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_decoded_records_are_the_wire_encoding(store_dir: Path) -> None:
    """Signed records are stored as ``messages.encode`` writes them (the fast envelope
    encoding of storage.py is byte-identical), so ``decode`` reads them back."""
    _w, db, _ = _file_node(store_dir)
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT value FROM record WHERE kind IN ('pre_prepare', 'prepare')")
    values = [v for (v,) in rows]
    conn.close()
    assert len(values) == 2
    assert all(decode(v).encoded == v for v in values)


def test_amnesiac_restart_without_a_store_is_possible_and_a_restart_is_not() -> None:
    sim = Simulation(4, 1, 0)
    sim.crash(2)
    with pytest.raises(ValueError, match="only an amnesiac restart"):
        sim.restart(2)
    sim.restart(2, amnesiac=True)
    assert sim.restarts["amnesiac"] == 1
    with pytest.raises(ValueError, match="not down"):
        sim.restart(2)


def test_wal_parser_sees_every_transaction(store_dir: Path) -> None:
    """The WAL parser the torn-write tests rely on reads the format SQLite writes: one
    commit frame per transaction."""
    w = World()
    db = store_dir / "w.sqlite3"
    node = DurableReplica.create(w.fresh(1), FileLocation(db, synchronous="OFF"))
    batches = [node.store.batch]
    for k in range(5):
        node.on_message(w.pre_prepare(0, k + 1, w.request(f"x{k}")))
        batches.append(node.store.batch)
    image = Image(db)
    node.close()
    assert len(wal_commit_ends(image.wal)) == len(set(batches))
