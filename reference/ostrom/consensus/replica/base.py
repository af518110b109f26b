"""The state every section of the replica reads and writes, and the helpers on it.

``ReplicaBase.__init__`` is spec/PBFTReplica.tla's section "the initial state"
(``InitState``): it declares every attribute of a replica with its type, once.  Its
helpers are the spec's sections "parameters" (``Prim``, ``IsPrim``, ``InWin``, ``Late``,
``TimeoutDuration``; ``Q`` is helpers.py's ``quorum``) and "outputs" (``Rej``, ``Send``).
The sections (normal.py, checkpoints.py, view_change.py, durable.py) are mixins over this
class; entry_points.py composes them into ``Replica``.

A section calls into another (execution makes a checkpoint, a stable checkpoint makes
the primary pre-prepare again, a NEW-VIEW installs a checkpoint and accepts
PRE-PREPAREs); those methods are declared below for the type checker only, so that each
call type-checks against the method that answers it, while no section imports another
(.importlinter: acyclic).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ostrom.consensus.crypto import KeyRing, Signer
from ostrom.consensus.messages import (
    MAX_MESSAGE_BYTES,
    AnyMessage,
    PreparedCert,
    PrePrepare,
    Signed,
    ViewChange,
    max_request_bytes,
    replica_name,
)
from ostrom.consensus.replica.app import App, CounterApp
from ostrom.consensus.replica.helpers import (
    GENESIS_CHAIN,
    Key3,
    quorum,
    signer_matches,
    state_digest,
)
from ostrom.consensus.replica.outputs import Output, Send

__all__ = ["ReplicaBase", "Transfer"]


@dataclasses.dataclass
class Transfer:
    """The chunks of one STATE-TRANSFER received from one sender so far: they follow
    ``base`` (this replica's last execution when the first came); ``chain`` is this
    replica's hash chain extended over them.  Executed only once the last chunk arrives
    and the whole chain checks against the certified checkpoint digest it carries."""

    base: int
    requests: list[Signed | None]
    chain: str

    @property
    def position(self) -> int:
        """The sequence number the next chunk follows."""
        return self.base + len(self.requests)


class ReplicaBase:
    """A replica's state and the helpers every section shares (see the module docstring)."""

    def __init__(
        self,
        replica_id: int,
        n: int,
        f: int,
        keyring: KeyRing,
        signer: Signer,
        *,
        app: App | None = None,
        checkpoint_k: int = 16,
        watermark_window: int = 32,
        base_timeout: int = 1000,
        max_request: int | None = None,
        max_message: int = MAX_MESSAGE_BYTES,
    ) -> None:
        if n < 3 * f + 1:
            raise ValueError(f"n={n} < 3f+1 with f={f}")
        if not 0 <= replica_id < n:
            raise ValueError(f"replica id {replica_id} not in 0..{n - 1}")
        if signer.principal != replica_name(replica_id):
            raise ValueError("a replica signs only as itself")
        self.id = replica_id
        self.n, self.f, self.q = n, f, quorum(n, f)
        self.keyring = keyring
        self.signer = signer
        self.app: App = app if app is not None else CounterApp()
        self.checkpoint_k = checkpoint_k
        self.window = watermark_window
        self.base_timeout = base_timeout
        #: The frame limit (encoded bytes of a signed message): no message this replica
        #: sends is larger (test_consensus_message_bounds.py proves it per message type).
        self.max_message = max_message
        #: The largest signed REQUEST (encoded bytes) this replica orders: by default the
        #: one whose largest VIEW-CHANGE and NEW-VIEW still fit a frame
        #: (``messages.max_request_bytes``, one source for the front and the replicas).
        self.max_request = (
            max_request_bytes(n, watermark_window, max_message)
            if max_request is None
            else max_request
        )
        # view
        self.view = 0
        self.active = True  # False between StartViewChange and NewView
        self.consecutive_view_changes = 0
        self.view_changes: dict[int, dict[int, Signed]] = {}
        # The NEW-VIEW of the last view this replica installed.  Kept after it leaves
        # that view: a replica still waiting for it can only enter it with this message
        # (BFT-LIVE-1; retransmit and the answer to a late VIEW-CHANGE send it).
        self.new_view_msg: Signed | None = None
        # normal-case log (garbage collected below the stable checkpoint)
        self.pre_prepares: dict[tuple[int, int], Signed] = {}
        self.prepares: dict[Key3, dict[int, Signed]] = {}
        self.commits: dict[Key3, dict[int, Signed]] = {}
        self.sent_commit: dict[tuple[int, int], str] = {}
        # (kind, view, seq, sender) -> the digests it voted for (one, unless a mutant)
        self._voted: dict[tuple[str, int, int, int], set[str]] = {}
        self.prepared_certs: dict[int, PreparedCert] = {}  # seq -> highest-view certificate
        self.to_execute: dict[int, tuple[str, Signed | None]] = {}
        self.next_seq = 1
        self.pending: dict[str, Signed] = {}  # received, not yet executed (insertion order)
        self.pending_per_client: Counter[str] = Counter()
        self.assigned: set[str] = set()  # digests pre-prepared in this view (primary)
        # execution
        self.last_exec = 0
        self.chain = GENESIS_CHAIN
        self.history: list[Signed | None] = []  # executed requests, seq i+1 at index i
        self.executed_log: list[tuple[int, str]] = []  # (seq, digest), BFT-SAFE-2
        self.last_ts: dict[str, int] = {}
        self.last_reply: dict[str, Signed] = {}
        # checkpoints
        self.stable_seq = 0
        self.stable_digest = state_digest(GENESIS_CHAIN, self.app.digest())
        self.stable_app_digest: str | None = self.app.digest()
        self.stable_proof: tuple[Signed, ...] = ()
        self.checkpoints: dict[int, dict[int, Signed]] = {}
        self.own_checkpoints: dict[int, tuple[str, str]] = {}  # seq -> (chain, app digest)
        # Replicas sent a FETCH-STATE this retransmission period: one each per period,
        # so a lost one is repeated and a lying sender cannot monopolise catching up.
        self.fetched: set[int] = set()
        # Peers answered this retransmission period (("fetch"|"new_view", replica)): one
        # STATE-TRANSFER and one NEW-VIEW per peer per period, whatever it sends.
        self.answered: set[tuple[str, int]] = set()
        # A STATE-TRANSFER cut into frames (checkpoints.py): per sender, the chunks received
        # so far toward one certified checkpoint, not executed until the last one makes
        # the whole chain check against the checkpoint's digest.
        self.transfers: dict[int, Transfer] = {}
        # Peers served a chunk this retransmission period: where the next one starts.
        self.served: dict[int, int] = {}
        # observability (monotone: the property tests read them)
        self.prepared_log: set[Key3] = set()
        self.committed: dict[int, set[str]] = {}  # seq -> digests committed here
        self.committed_local: set[Key3] = set()
        self.rejected: Counter[str] = Counter()
        self.progress = 0  # bumps on execution and on entering a view (timer restart)
        self._out = Output()

    def primary(self, view: int | None = None) -> int:
        return (self.view if view is None else view) % self.n

    @property
    def is_primary(self) -> bool:
        return self.primary() == self.id

    def timeout_duration(self) -> int:
        """Exponential back-off: the timeout doubles per consecutive view change."""
        return self.base_timeout << min(self.consecutive_view_changes, 20)

    def prepared_threshold(self) -> int:
        """Matching prepares (besides the pre-prepare) for *prepared*: ``q-1``."""
        return self.q - 1

    def commit_threshold(self) -> int:
        """Matching commits for *committed-local*: ``q``."""
        return self.q

    def _verify(self, signed: Signed) -> bool:
        return self.keyring.verify(signed)

    def _in_window(self, seq: int) -> bool:
        return self.stable_seq < seq <= self.stable_seq + self.window

    def _late(self, view: int) -> bool:
        """A message of a view this replica has left (or is leaving)."""
        return view < self.view or (view == self.view and not self.active)

    def _oversized(self, request: Signed | None) -> bool:
        """A request beyond ``max_request``: never ordered, prepared or relayed here.

        BFT-LIVE-1: a certificate carrying it could make a VIEW-CHANGE or NEW-VIEW larger
        than a frame, unsendable, and the view change that needs it impossible.  Refused
        by the replica itself, not only by the front, since any client principal (a
        Byzantine one, or a local process holding the front's client key) can send one.
        """
        return request is not None and len(request.encoded) > self.max_request

    def _reject(self, reason: str) -> None:
        self.rejected[reason] += 1

    def _send(self, dest: str, message: AnyMessage) -> Signed:
        signed = self.signer.sign(message)
        self._out.sends.append(Send(dest, signed))
        return signed

    def _take(self) -> Output:
        out, self._out = self._out, Output()
        return out

    def _authentic(self, signed: Signed) -> bool:
        """Signature valid and the signer is who the message says it is."""
        return self._verify(signed) and signer_matches(signed, self.n)

    if TYPE_CHECKING:
        # The seams between the sections: each is defined by the section named and called
        # by another.  Declared for the type checker only (Replica inherits the real ones).

        # normal.py
        def _send_pre_prepare(self) -> None: ...

        def _accept_pre_prepare(self, signed: Signed, pp: PrePrepare) -> None: ...

        def _votes(self, kind: str) -> dict[Key3, dict[int, Signed]]: ...

        def _execute(self) -> None: ...

        def _execute_one(
            self, seq: int, digest: str, req: Signed | None, *, reply: bool
        ) -> dict[str, Any] | None: ...

        # checkpoints.py
        def _make_checkpoint(self, seq: int) -> None: ...

        def _valid_checkpoint_proof(self, proof: Sequence[Signed]) -> tuple[int, str] | None: ...

        def _advance_stable(self, seq: int, digest: str, proof: tuple[Signed, ...]) -> None: ...

        # view_change.py
        def _valid_cert(self, cert: PreparedCert, new_view: int, low: int) -> PrePrepare | None: ...

        def _valid_view_change(self, vc: ViewChange) -> bool: ...
