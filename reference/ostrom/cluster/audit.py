"""Checks on a cluster's durable logs: BFT-SAFE-1, acknowledged commands, REPL-1.

After faults (kills, a Byzantine replica, a partition) the tests, and ``ostrom cluster
status --audit``, read what each honest replica *promised on disk*: its executed history,
from its SQLite store (``ReplicaStore.load``: every record decoded and every signature
verified against the key ring; a store that does not check out is an audit failure).
The store is read from a consistent snapshot (SQLite's backup API), so a running
replica can be audited.

* **BFT-SAFE-1** (``check_safety``): no two honest replicas executed different requests
  at the same sequence number.
* **Acknowledged** (``check_acknowledged``): every command the front acknowledged (``f+1``
  matching replies) is in the committed log of every honest replica given.
* **REPL-1** (``check_repl1``): each honest replica's state, replayed from its committed
  log batch by batch on a fresh core (``app.execute_operation``: the gate the replica's
  node runs, without the node's database), equals the single node's replay of the same
  commands one by one on a fresh core; and where the running replica reported its state
  digest at that point of its log (its node's gate), it equals the replay's too.

Each check raises ``AuditError`` naming the replica and sequence number; each is shown
to fail on a doctored log in test_cluster_audit.py.
"""

from __future__ import annotations

import copy
import dataclasses
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ostrom.cluster.app import commands_of, core_factory, execute_operation, state_digest
from ostrom.cluster.config import ClusterConfig
from ostrom.cluster.keys import load_ring
from ostrom.cluster.payloads import ordered_form
from ostrom.consensus.application import Core, CoreFactory, committed_operations
from ostrom.consensus.crypto import KeyRing, Signer
from ostrom.consensus.messages import Request, Signed, canonical, replica_name, request_digest
from ostrom.consensus.replica import Replica
from ostrom.consensus.storage import ReplicaStore, StoreError, StoreMissing

__all__ = [
    "AuditError",
    "Execute",
    "ReplicaLog",
    "audit",
    "check_acknowledged",
    "check_repl1",
    "check_safety",
    "committed_commands",
    "read_log",
]


class AuditError(AssertionError):
    """A property does not hold on the logs; the message says where."""


@dataclasses.dataclass(frozen=True)
class ReplicaLog:
    """What one replica's store holds that the checks read."""

    replica: int
    history: tuple[Signed | None, ...]
    view: int
    stable_seq: int

    @property
    def last_executed(self) -> int:
        return len(self.history)


class _Snapshot:
    """A ``StoreLocation`` over an in-memory copy of a database file."""

    def __init__(self, path: str) -> None:
        self.name = path
        self.path = path

    def connect(self, *, create: bool) -> sqlite3.Connection:
        import os

        if not os.path.exists(self.path):
            raise StoreMissing(f"{self.name}: no database file")
        src = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=5)
        try:
            mem = sqlite3.connect(":memory:", isolation_level=None)
            src.backup(mem)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.name}: cannot copy ({exc})") from exc
        finally:
            src.close()
        return mem

    def release(self, conn: sqlite3.Connection) -> None:
        conn.close()

    def destroy(self) -> None:  # never: an audit reads only
        pass

    def dispose(self) -> None:
        pass


def read_log(cfg: ClusterConfig, i: int, ring: KeyRing | None = None) -> ReplicaLog:
    """Replica ``i``'s durable log (``AuditError`` if its store is missing or refused)."""
    ring = ring if ring is not None else load_ring(cfg.keys)
    # the store needs a replica for its configuration and key ring only: no private key
    shell = Replica(
        i,
        cfg.n,
        cfg.f,
        ring,
        Signer(replica_name(i), Ed25519PrivateKey.generate()),
        checkpoint_k=cfg.checkpoint_k,
        watermark_window=cfg.watermark_window,
    )
    try:
        store = ReplicaStore(_Snapshot(str(cfg.replica(i).db)), shell, create=False)
        try:
            state = store.load()
        finally:
            store.close()
    except (StoreError, sqlite3.Error) as exc:
        raise AuditError(f"replica {i}: its store is refused: {exc}") from exc
    return ReplicaLog(i, tuple(state.history), state.view, state.stable_seq)


def _read_logs(cfg: ClusterConfig, honest: Iterable[int]) -> dict[int, ReplicaLog]:
    ring = load_ring(cfg.keys)
    return {i: read_log(cfg, i, ring) for i in sorted(honest)}


# --- the checks ----------------------------------------------------------------------------


def check_safety(logs: Mapping[int, ReplicaLog]) -> None:
    """BFT-SAFE-1: at every sequence number, every honest replica that executed it
    executed the same request (compared by request digest; null requests included)."""
    first: dict[int, tuple[int, str]] = {}
    for i, log in sorted(logs.items()):
        for k, req in enumerate(log.history):
            seq, d = k + 1, request_digest(req)
            seen = first.setdefault(seq, (i, d))
            if seen[1] != d:
                raise AuditError(
                    f"BFT-SAFE-1: replicas {seen[0]} and {i} executed different requests "
                    f"at sequence number {seq}"
                )


def committed_commands(log: ReplicaLog) -> list[Any]:
    """The commands a replica's committed log carries, in execution order (batches
    flattened, a client's request counted once: PBFT's exactly-once rule)."""
    return [c for op in committed_operations(log.history) for c in commands_of(op)]


def check_acknowledged(logs: Mapping[int, ReplicaLog], acknowledged: Iterable[Any]) -> None:
    """Every acknowledged command is in the committed log of every replica of ``logs``
    (in the form the front ordered it: ``ordered_form``)."""
    want = [canonical(ordered_form(c)) for c in acknowledged]
    for i, log in sorted(logs.items()):
        have = {canonical(c) for c in committed_commands(log)}
        missing = [w for w in want if w not in have]
        if missing:
            raise AuditError(
                f"acknowledged: replica {i} has not executed {len(missing)} acknowledged "
                f"command(s), e.g. {missing[0][:120]!r}"
            )


Execute = Callable[[Core, Any], dict[str, Any]]


def _replica_state(
    log: ReplicaLog, factory: CoreFactory, execute: Execute = execute_operation
) -> dict[str, Any]:
    """The state a replica holds after its log: a fresh core executing its committed
    operations as the replica does."""
    core = factory()
    for op in committed_operations(log.history):
        execute(core, copy.deepcopy(op))
    return core.public_state()


def _single_node_state(commands: Iterable[Any], factory: CoreFactory) -> dict[str, Any]:
    """The single node's replay: one fresh core applying the commands one by one."""
    core = factory()
    for c in commands:
        core.apply(copy.deepcopy(c))
    return core.public_state()


def check_repl1(
    logs: Mapping[int, ReplicaLog],
    factory: CoreFactory,
    live: Mapping[int, tuple[int, str]] | None = None,
    *,
    execute: Execute = execute_operation,
) -> dict[int, str]:
    """REPL-1 on every log; ``live`` maps a replica to ``(last_executed, app_digest)`` as
    its running process reported it, checked when it is at that point of its log.
    Returns each replica's state digest."""
    digests: dict[int, str] = {}
    for i, log in sorted(logs.items()):
        got = _replica_state(log, factory, execute)
        want = _single_node_state(committed_commands(log), factory)
        if got != want:
            raise AuditError(
                f"REPL-1: replica {i}'s state after its log (executed {log.last_executed}) "
                "differs from the single node's replay of the same commands"
            )
        digests[i] = state_digest(got)
        if live is not None and i in live:
            at, digest = live[i]
            if at == log.last_executed and digest != digests[i]:
                raise AuditError(
                    f"REPL-1: replica {i} reported state {digest[:12]} at {at}, "
                    f"its log replays to {digests[i][:12]}"
                )
    return digests


def audit(
    cfg: ClusterConfig,
    honest: Iterable[int],
    *,
    acknowledged: Iterable[Any] = (),
    live: Mapping[int, tuple[int, str]] | None = None,
) -> dict[str, Any]:
    """Every check on the honest replicas' stores; ``AuditError`` at the first failure,
    else a summary (per replica: view, executed, stable checkpoint, state digest)."""
    logs = _read_logs(cfg, honest)
    check_safety(logs)
    check_acknowledged(logs, acknowledged)
    digests = check_repl1(logs, core_factory(cfg), live)
    return {
        "replicas": {
            i: {
                "view": log.view,
                "last_executed": log.last_executed,
                "stable_checkpoint": log.stable_seq,
                "commands": len(committed_commands(log)),
                "state_digest": digests[i],
            }
            for i, log in logs.items()
        },
        "checks": ["BFT-SAFE-1", "acknowledged", "REPL-1"],
    }


def _requests_of(log: ReplicaLog) -> list[Request]:
    """The requests of a log (null requests left out)."""
    return [s.message for s in log.history if s is not None and isinstance(s.message, Request)]
