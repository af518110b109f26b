"""A deterministic simulated network and the driver that runs replicas and clients on it.

Everything is a discrete-event simulation in *logical* time: one delivery is one tick,
timeouts are deadlines in ticks and fire as explicit events, and every choice (which
ready message goes next, drops, duplicates, delays) comes from a ``random.Random``
seeded by the caller.  The same seed gives the same run, message for message.

The property tests drive the primitives directly (``deliver``, ``drop``, ``duplicate``,
``fire_timeout``, ``partition``...); ``Simulation.run`` is the seeded random scheduler
and ``Simulation.run_fair`` the liveness driver of BFT-LIVE-1: no loss, every message
delivered, retransmission and timeouts when the system goes quiet.

With ``stores=`` every honest replica is a ``storage.DurableReplica`` (its durable state
in SQLite, written before its sends are released), and ``crash(i)`` / ``restart(i)``
take one down (volatile state lost, timer stopped, messages to it dropped) and rebuild
it from its store; ``restart(i, amnesiac=True)`` deletes the store first, a fault.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

from ostrom.consensus.client import Client
from ostrom.consensus.crypto import KeyRing, make_keys
from ostrom.consensus.messages import Request, Signed, replica_name, request_digest
from ostrom.consensus.replica import BROADCAST, App, Output, Replica
from ostrom.consensus.storage import DurableReplica, StoreLocation


class Node(Protocol):
    """What the driver calls on a replica (honest ``Replica`` or a Byzantine wrapper)."""

    def on_message(self, payload: object) -> Output: ...

    def on_timeout(self) -> Output: ...

    def retransmit(self) -> Output: ...


@dataclasses.dataclass(frozen=True)
class Faults:
    """Probabilistic faults of the random scheduler (the tests inject theirs directly)."""

    drop: float = 0.0
    duplicate: float = 0.0
    reorder: bool = True
    max_delay: int = 0


@dataclasses.dataclass
class Envelope:
    uid: int
    src: str
    dst: str
    payload: Signed | bytes
    deliver_at: int


NO_FAULTS: Final = Faults()


class Network:
    """Point-to-point links with loss, duplication, delay, reordering and partitions."""

    def __init__(self, rng: random.Random, faults: Faults | None = None) -> None:
        self.rng = rng
        self.faults = faults or NO_FAULTS
        self.now = 0
        self.queue: list[Envelope] = []
        self.groups: list[frozenset[str]] | None = None
        self.stats: Counter[str] = Counter()
        self._uid = 0

    def connected(self, a: str, b: str) -> bool:
        if self.groups is None:
            return True
        return any(a in g and b in g for g in self.groups)

    def partition(self, groups: Iterable[Iterable[str]]) -> None:
        """Cut every link between different groups (principals in no group are isolated)."""
        self.groups = [frozenset(g) for g in groups]

    def heal(self) -> None:
        self.groups = None

    def send(self, src: str, dst: str, payload: Signed | bytes, delay: int = 0) -> None:
        self.stats["sent"] += 1
        if not self.connected(src, dst):
            self.stats["dropped_partition"] += 1
            return
        if self.faults.drop and self.rng.random() < self.faults.drop:
            self.stats["dropped"] += 1
            return
        copies = 2 if self.faults.duplicate and self.rng.random() < self.faults.duplicate else 1
        for _ in range(copies):
            extra = self.rng.randint(0, self.faults.max_delay) if self.faults.max_delay else 0
            self.enqueue(src, dst, payload, self.now + delay + extra)

    def enqueue(self, src: str, dst: str, payload: Signed | bytes, at: int) -> None:
        self._uid += 1
        self.queue.append(Envelope(self._uid, src, dst, payload, at))

    def ready(self) -> list[int]:
        return [i for i, e in enumerate(self.queue) if e.deliver_at <= self.now]

    def take(self, index: int) -> Envelope:
        return self.queue.pop(index)


AppFactory = Callable[[], App]
ReplicaFactory = Callable[..., Replica]
#: Where replica ``i``'s store lives (``storage.MemoryLocation``, ``FileLocation``...).
StoreFactory = Callable[[int], StoreLocation]


class Simulation:
    """N replicas (some wrapped by Byzantine strategies) and clients on one ``Network``."""

    def __init__(
        self,
        n: int = 4,
        f: int = 1,
        seed: int = 0,
        *,
        byzantine: Mapping[int, Any] | None = None,
        faults: Faults | None = None,
        clients: int = 1,
        app_factory: AppFactory | None = None,
        checkpoint_k: int = 16,
        watermark_window: int = 32,
        base_timeout: int | None = None,
        client_timeout: int | None = None,
        replica_factory: ReplicaFactory = Replica,
        stores: StoreFactory | None = None,
        beyond_f: bool = False,
    ) -> None:
        """``beyond_f=True`` allows more than ``f`` Byzantine replicas: only for the control
        experiment that shows the safety checks can fail (docs/consensus.md, "The
        adversary suite"); PBFT promises nothing then, so the default refuses."""
        self.n, self.f = n, f
        self.rng = random.Random(seed)
        self.client_names = [f"c{i}" for i in range(clients)]
        principals = [replica_name(i) for i in range(n)] + self.client_names
        self.keyring: KeyRing
        self.keyring, signers = make_keys(seed, principals)
        timeout = base_timeout if base_timeout is not None else 60 * n * n

        def new_replica(i: int) -> Replica:
            return replica_factory(
                i,
                n,
                f,
                self.keyring,
                signers[replica_name(i)],
                app=None if app_factory is None else app_factory(),
                checkpoint_k=checkpoint_k,
                watermark_window=watermark_window,
                base_timeout=timeout,
            )

        self._new_replica = new_replica  # a restart builds a fresh replica the same way
        self.replicas = [new_replica(i) for i in range(n)]
        self.byzantine: dict[int, Any] = dict(byzantine or {})
        if len(self.byzantine) > f and not beyond_f:
            raise ValueError(f"{len(self.byzantine)} Byzantine replicas > f={f}")
        for i, strategy in sorted(self.byzantine.items()):
            strategy.attach(self.replicas[i], random.Random(self.rng.getrandbits(64)), n)
        self.honest = [i for i in range(n) if i not in self.byzantine]
        # crash and restart: durable honest replicas (a store each), replicas that are down
        self.stores: dict[int, StoreLocation] = {}
        self.durable: dict[int, DurableReplica] = {}
        self.down: set[int] = set()
        self.restarts: Counter[str] = Counter()
        for i in self.honest if stores is not None else ():
            assert stores is not None
            self.stores[i] = stores(i)
            self.durable[i] = DurableReplica.create(self.replicas[i], self.stores[i])
        self.clients = {c: Client(c, signers[c], self.keyring, n, f) for c in self.client_names}
        self.client_timeout = client_timeout if client_timeout is not None else 2 * timeout
        self.network = Network(random.Random(self.rng.getrandbits(64)), faults)
        self.backlog: dict[str, deque[dict[str, Any]]] = {c: deque() for c in self.clients}
        self.deadlines: dict[str, int] = {}
        self._armed_progress: dict[int, int] = {}
        self._retransmitted_at = -1
        self.executed = 0  # executions at honest replicas (throughput)

    # --- plumbing -----------------------------------------------------------------------

    def node(self, i: int) -> Node:
        return self.byzantine.get(i) or self.durable.get(i) or self.replicas[i]  # type: ignore[no-any-return]

    def route(self, src: str, out: Output) -> None:
        for s in out.sends:
            dests = (
                [replica_name(i) for i in range(self.n) if replica_name(i) != src]
                if s.dest == BROADCAST
                else [s.dest]
            )
            for d in dests:
                if d != src:
                    self.network.send(src, d, s.payload, s.delay)
        if _index(src) in self.honest:
            self.executed += len(out.executed)

    def _rearm(self, i: int) -> None:
        """A replica's view-change timer runs while it waits; progress restarts it."""
        r, name = self.replicas[i], replica_name(i)
        if not r.waiting or i in self.down:
            self.deadlines.pop(name, None)
        elif name not in self.deadlines or self._armed_progress.get(i) != r.progress:
            self.deadlines[name] = self.network.now + r.timeout_duration()
            self._armed_progress[i] = r.progress

    def _rearm_client(self, c: str) -> None:
        cl = self.clients[c]
        if cl.busy:
            self.deadlines.setdefault(c, self.network.now + self.client_timeout)
        else:
            self.deadlines.pop(c, None)
            if self.backlog[c]:
                self.route(c, cl.request(self.backlog[c].popleft()))
                self._rearm_client(c)

    # --- primitives (the tests' adversary uses these) ------------------------------------

    def submit(self, client: str, operation: dict[str, Any]) -> None:
        """Queue ``operation``; the client sends it as soon as it has no outstanding one."""
        self.backlog[client].append(operation)
        self._rearm_client(client)

    def deliver(self, index: int) -> Envelope:
        env = self.network.take(index)
        i = _index(env.dst)
        if i in self.down:
            self.network.stats["dropped_down"] += 1  # the replica is down: lost
            return env
        self.network.stats["delivered"] += 1
        if i is not None:
            self.route(env.dst, self.node(i).on_message(env.payload))
            self._rearm(i)
        elif env.dst in self.clients:
            self.route(env.dst, self.clients[env.dst].on_reply(env.payload))
            self._rearm_client(env.dst)
        return env

    def drop(self, index: int) -> Envelope:
        self.network.stats["dropped"] += 1
        return self.network.take(index)

    def duplicate(self, index: int) -> None:
        e = self.network.queue[index]
        self.network.stats["duplicated"] += 1
        self.network.enqueue(e.src, e.dst, e.payload, e.deliver_at)

    def fire_timeout(self, i: int) -> None:
        self.deadlines.pop(replica_name(i), None)
        if i in self.down:
            return
        self.route(replica_name(i), self.node(i).on_timeout())
        self._rearm(i)

    def fire_client_timeout(self, c: str) -> None:
        self.deadlines.pop(c, None)
        self.route(c, self.clients[c].on_timeout())
        self._rearm_client(c)

    def retransmit(self, i: int) -> None:
        if i in self.down:
            return
        self.route(replica_name(i), self.node(i).retransmit())
        self._rearm(i)

    def partition(self, groups: Iterable[Iterable[str]]) -> None:
        self.network.partition(groups)
        # messages in flight across the cut are lost too
        keep = [e for e in self.network.queue if self.network.connected(e.src, e.dst)]
        self.network.stats["dropped_partition"] += len(self.network.queue) - len(keep)
        self.network.queue = keep

    def heal(self) -> None:
        self.network.heal()

    # --- crash and restart (honest replicas; docs/consensus.md, "Durability and recovery") --

    def crash(self, i: int) -> None:
        """Replica ``i`` stops: its volatile state is gone, its timer stops, and messages
        to it are dropped until it restarts.  Its store, if it has one, survives."""
        if i in self.byzantine:
            raise ValueError(f"replica {i} is Byzantine: crash and restart are for honest ones")
        if i in self.down:
            raise ValueError(f"replica {i} is already down")
        self.down.add(i)
        self.deadlines.pop(replica_name(i), None)
        durable = self.durable.pop(i, None)
        if durable is not None:
            durable.close()
        self.restarts["crash"] += 1

    def restart(self, i: int, *, amnesiac: bool = False) -> None:
        """Bring replica ``i`` back: a fresh replica rebuilt from its store.

        ``amnesiac=True`` deletes the store first (or there is none): the replica restarts
        from nothing, having forgotten every promise it made.  That is a fault, not a
        recovery: with one Byzantine replica it breaks agreement at N = 4, f = 1
        (``test_consensus_durability.test_amnesia_breaks_agreement``).  A store that gives
        no state to restart from raises ``storage.StoreError`` and the replica stays down.
        """
        if i not in self.down:
            raise ValueError(f"replica {i} is not down")
        replica = self._new_replica(i)
        location = self.stores.get(i)
        if amnesiac:
            if location is not None:
                location.destroy()
                self.durable[i] = DurableReplica.create(replica, location)
            self.restarts["amnesiac"] += 1
        elif location is None:
            raise ValueError(f"replica {i} has no store: only an amnesiac restart is possible")
        else:
            self.durable[i] = DurableReplica.recover(replica, location)
            self.restarts["restart"] += 1
        self.replicas[i] = replica
        self.down.discard(i)
        self._armed_progress.pop(i, None)
        self._rearm(i)

    def close(self) -> None:
        """Release every store (in-memory databases are freed; files stay on disk)."""
        for durable in self.durable.values():
            durable.close()
        self.durable.clear()
        for location in self.stores.values():
            location.dispose()

    # --- schedulers ---------------------------------------------------------------------

    def _fire_due(self) -> None:
        for name, at in sorted(self.deadlines.items(), key=lambda kv: (kv[1], kv[0])):
            if at <= self.network.now and self.deadlines.get(name) == at:
                i = _index(name)
                if i is not None:
                    self.fire_timeout(i)
                else:
                    self.fire_client_timeout(name)

    def progress(self) -> int:
        return sum(self.replicas[i].progress for i in self.honest) + sum(
            len(c.results) for c in self.clients.values()
        )

    def step(self) -> bool:
        """One event of the random scheduler; False when nothing is left to happen."""
        net = self.network
        ready = net.ready()
        if ready:
            pick = self.rng.choice(ready) if net.faults.reorder else ready[0]
            self.deliver(pick)
            net.now += 1
            self._fire_due()
            return True
        if not net.queue and not self.deadlines:
            return False
        if not net.queue and self._retransmitted_at != self.progress():
            self._retransmitted_at = self.progress()
            for i in range(self.n):
                self.retransmit(i)
            return True
        net.now = min([e.deliver_at for e in net.queue] + list(self.deadlines.values()))
        self._fire_due()
        return True

    def run(self, max_steps: int = 1_000_000, until: Callable[[], bool] | None = None) -> int:
        """Run the random scheduler until quiescence, ``until()`` or ``max_steps``."""
        steps = 0
        while steps < max_steps and not (until is not None and until()):
            if not self.step():
                break
            steps += 1
        return steps

    def drain(self, max_steps: int = 200_000) -> int:
        """Deliver every message in FIFO order (advancing time over delays); no loss."""
        steps = 0
        net = self.network
        while net.queue and steps < max_steps:
            ready = net.ready()
            if not ready:
                net.now = min(e.deliver_at for e in net.queue)
                continue
            self.deliver(ready[0])
            net.now += 1
            steps += 1
        return steps

    def run_fair(self, max_rounds: int = 12) -> int | None:
        """BFT-LIVE-1's driver: heal, stop injecting faults, and deliver fairly.

        Each round retransmits, lets clients rebroadcast and delivers everything; a round
        without progress fires the view-change timers of the replicas that wait.  Returns
        the number of rounds until every submitted request is executed at every honest
        replica, or None if ``max_rounds`` did not suffice.
        """
        self.heal()
        self.network.faults = Faults(reorder=False)
        for rounds in range(max_rounds + 1):
            self.drain()
            if self.all_executed():
                return rounds
            before = self.progress()
            for i in range(self.n):
                self.retransmit(i)
            for c in self.clients:
                self.fire_client_timeout(c)
            self.drain()
            if self.progress() == before:
                for i in range(self.n):
                    if self.replicas[i].waiting:
                        self.fire_timeout(i)
        return None

    # --- observations -------------------------------------------------------------------

    def sent_requests(self) -> dict[str, Signed]:
        return {request_digest(s): s for c in self.clients.values() for s in c.sent}

    def all_executed(self) -> bool:
        """Every request a client sent is executed at every honest replica and no client
        still waits (its backlog included)."""
        if any(c.busy for c in self.clients.values()) or any(self.backlog.values()):
            return False
        wanted = set(self.sent_requests())
        for i in self.honest:
            done = {request_digest(r) for r in self.replicas[i].history if r is not None}
            if not wanted <= done:
                return False
        return True

    def results(self, client: str) -> list[tuple[int, dict[str, Any]]]:
        return self.clients[client].results


def _index(name: str) -> int | None:
    if name.startswith("r") and name[1:].isdigit():
        return int(name[1:])
    return None


def requests_of(history: Iterable[Signed | None]) -> list[Request]:
    return [r.message for r in history if r is not None and isinstance(r.message, Request)]
