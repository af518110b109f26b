"""The durable state: what a replica keeps across a crash, and how it restarts from it
(spec/PBFTReplica.tla, section "crash and restart": ``Accepted`` and ``Recover``).

``DurableState`` is the split between the durable and the volatile part of a replica
(its docstring gives the reason for each item); ``Durable.durable_state`` projects a
replica onto it, ``Durable.restore_durable`` rebuilds a fresh replica from one after
``_check_durable`` has checked every signature, certificate and promise in it.  Separate
because no handler calls it: the store (``ostrom.consensus.storage``) does, around the
handlers, so the protocol sections stay the same with or without a disk.
"""

from __future__ import annotations

import dataclasses

from ostrom.consensus.messages import (
    Checkpoint,
    Commit,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Reply,
    Request,
    Signed,
    ViewChange,
    request_digest,
)
from ostrom.consensus.replica.base import ReplicaBase
from ostrom.consensus.replica.helpers import Key3, state_digest

__all__ = ["Durable", "DurableState", "InvalidDurableState", "ReplayMismatch"]


class InvalidDurableState(ValueError):
    """A durable state this replica cannot have written (``Replica.restore_durable``)."""


class ReplayMismatch(InvalidDurableState):
    """Re-executing the durable history does not reproduce a checkpoint this replica
    signed: the application is not deterministic, or it was changed outside the log
    (REPL-1)."""


@dataclasses.dataclass(frozen=True)
class DurableState:
    """What a replica keeps across a crash: what it has promised, and what it derives
    from its promises (``Replica.durable_state``, ``Replica.restore_durable``).

    A replica that restarts must never contradict a message it sent before the crash
    (BFT-SAFE-1 counts on every honest replica keeping its word, crashed or not).  Each
    durable item is here because forgetting it allows one contradiction:

    * ``view``, ``active``: no message of a view below one it moved to, and no vote in a
      view it abandoned with a VIEW-CHANGE; ``new_view_msg`` (the NEW-VIEW of the last
      view it installed): it can still hand that view's proof to a replica waiting for it;
    * ``view_changes``: its *own* VIEW-CHANGEs by view, so that a retransmission repeats
      the same message, with the same certificates, rather than a second, different one;
    * ``pre_prepares``: the PRE-PREPAREs it *sent* (as primary) or *accepted* (and
      prepared, as a backup) — a backup refuses a second one for the same (view, seq);
      the late path's bodies for a view it has left are not promises and are volatile;
      ``next_seq`` and ``assigned``: a primary never assigns a sequence number twice,
      nor a request it has already assigned in this view (BFT-SAFE-1);
    * ``prepares``, ``commits``: its *own* PREPARE and COMMIT votes (and so the
      ``_voted`` index of its own votes), ``sent_commit``: no vote for another digest at a
      (view, seq) where it voted; ``prepared_certs``: its next VIEW-CHANGE carries every
      certificate it committed on (the NEW-VIEW's O keeps committed requests);
    * ``own_checkpoints``, ``checkpoints`` (its *own* CHECKPOINT votes), ``stable_*``:
      no second checkpoint digest for one sequence number, the low watermark (no vote
      below it), and the certified state it serves by state transfer;
    * ``history``: every executed request (seq i+1 at index i).  ``last_exec``, ``chain``,
      ``executed_log``, ``last_ts``, ``last_reply`` and the application state are rebuilt
      by executing it again on a fresh application (deterministic, REPL-1); so that the
      replies re-sign to the very same bytes, ``reply_views`` keeps the view each client's
      last reply was signed in (the only input of a reply not in the history; Ed25519
      signatures are deterministic);
    * ``prepared_log``, ``committed``, ``committed_local``: the monotone observations the
      property tests read; kept so that the safety lemmas do not fail spuriously after a
      restart.

    Volatile (lost at a crash, rebuilt from the network by retransmission and state
    transfer): others' votes, checkpoints and VIEW-CHANGEs, ``to_execute``, ``pending``
    and ``pending_per_client``, ``answered``, ``fetched``, the late path's PRE-PREPAREs,
    ``rejected``, ``progress``, and ``consecutive_view_changes`` (back to 0).  A TLA+
    spec of crash-restart mirrors exactly this split.
    """

    view: int
    active: bool
    new_view_msg: Signed | None
    view_changes: dict[int, Signed]
    pre_prepares: dict[tuple[int, int], Signed]
    next_seq: int
    assigned: frozenset[str]
    prepares: dict[Key3, Signed]
    commits: dict[Key3, Signed]
    sent_commit: dict[tuple[int, int], str]
    prepared_certs: dict[int, PreparedCert]
    own_checkpoints: dict[int, tuple[str, str]]
    checkpoints: dict[int, Signed]
    stable_seq: int
    stable_digest: str
    stable_app_digest: str | None
    stable_proof: tuple[Signed, ...]
    history: tuple[Signed | None, ...]
    reply_views: dict[str, int]
    prepared_log: frozenset[Key3]
    committed: dict[int, frozenset[str]]
    committed_local: frozenset[Key3]


class Durable(ReplicaBase):
    """The durable projection of a replica and its recovery (see the module docstring)."""

    def own_view_changes(self) -> dict[int, Signed]:
        """This replica's own VIEW-CHANGEs that it still holds, by view (durable)."""
        return {v: ms[self.id] for v, ms in self.view_changes.items() if self.id in ms}

    def durable_pre_prepares(self) -> dict[tuple[int, int], Signed]:
        """The PRE-PREPAREs this replica sent (signed by itself: it was the primary) or
        accepted (it holds its own PREPARE for it: ``_accept_pre_prepare`` sends one).

        Those are promises: a backup refuses a second one for the same (view, seq)
        (BFT-SAFE-1).  The bodies the late path keeps for a view this replica has left
        carry no vote of its own, so they are volatile.
        """
        me = self.signer.principal
        out: dict[tuple[int, int], Signed] = {}
        for (v, s), pp in self.pre_prepares.items():
            m = pp.message
            if pp.sender == me or (
                isinstance(m, PrePrepare) and self.id in self.prepares.get((v, s, m.digest), {})
            ):
                out[(v, s)] = pp
        return out

    def own_votes(self, kind: str) -> dict[Key3, Signed]:
        """This replica's own PREPAREs (``kind="prepare"``) or COMMITs (``"commit"``)."""
        return {k: votes[self.id] for k, votes in self._votes(kind).items() if self.id in votes}

    def own_checkpoint_votes(self) -> dict[int, Signed]:
        """This replica's own CHECKPOINT votes, by sequence number."""
        return {s: votes[self.id] for s, votes in self.checkpoints.items() if self.id in votes}

    def reply_views(self) -> dict[str, int]:
        """The view each client's last reply was signed in (see ``DurableState``)."""
        return {
            c: r.message.view for c, r in self.last_reply.items() if isinstance(r.message, Reply)
        }

    def durable_state(self) -> DurableState:
        """The durable projection of this replica, as a copy (see ``DurableState``)."""
        return DurableState(
            view=self.view,
            active=self.active,
            new_view_msg=self.new_view_msg,
            view_changes=self.own_view_changes(),
            pre_prepares=self.durable_pre_prepares(),
            next_seq=self.next_seq,
            assigned=frozenset(self.assigned),
            prepares=self.own_votes("prepare"),
            commits=self.own_votes("commit"),
            sent_commit=dict(self.sent_commit),
            prepared_certs=dict(self.prepared_certs),
            own_checkpoints=dict(self.own_checkpoints),
            checkpoints=self.own_checkpoint_votes(),
            stable_seq=self.stable_seq,
            stable_digest=self.stable_digest,
            stable_app_digest=self.stable_app_digest,
            stable_proof=self.stable_proof,
            history=tuple(self.history),
            reply_views=self.reply_views(),
            prepared_log=frozenset(self.prepared_log),
            committed={s: frozenset(ds) for s, ds in self.committed.items()},
            committed_local=frozenset(self.committed_local),
        )

    def restore_durable(self, state: DurableState) -> None:
        """Rebuild this freshly constructed replica (fresh application) from ``state``.

        Everything is checked before anything changes (``InvalidDurableState``): every
        signed message is authentic, and this replica's own where it must be; every
        certificate and checkpoint proof is valid; the promises agree with one another.
        The history is then executed again on the application: the checkpoints this
        replica signed must come out again (``ReplayMismatch``: discard the replica), and
        each client's last reply is re-signed in the view it was signed in, to the same
        bytes.  Volatile state stays as constructed (empty, ``consecutive_view_changes``
        0): it comes back from the network, by retransmission and state transfer.
        """
        self._check_durable(state)
        for i, req in enumerate(state.history):
            seq = i + 1
            self._execute_one(seq, request_digest(req), req, reply=False)
            own = state.own_checkpoints.get(seq)
            if own is not None and own != (self.chain, self.app.digest()):
                raise ReplayMismatch(
                    f"replica {self.id}: executing the history again does not reproduce "
                    f"its checkpoint at {seq} (REPL-1)"
                )
        for client, view in state.reply_views.items():
            last = self.last_reply.get(client)
            m = None if last is None else last.message
            if not isinstance(m, Reply):
                raise InvalidDurableState(f"replica {self.id}: a reply to {client} never sent")
            if m.view != view:
                self.last_reply[client] = self.signer.sign(dataclasses.replace(m, view=view))
        self.view, self.active = state.view, state.active
        self.new_view_msg = state.new_view_msg
        self.view_changes = {v: {self.id: s} for v, s in state.view_changes.items()}
        self.pre_prepares = dict(state.pre_prepares)
        self.next_seq = state.next_seq
        self.assigned = set(state.assigned)
        self.prepares = {k: {self.id: s} for k, s in state.prepares.items()}
        self.commits = {k: {self.id: s} for k, s in state.commits.items()}
        self._voted = {}
        for kind, table in (("prepare", state.prepares), ("commit", state.commits)):
            for v, s, d in table:
                self._voted.setdefault((kind, v, s, self.id), set()).add(d)
        self.sent_commit = dict(state.sent_commit)
        self.prepared_certs = dict(state.prepared_certs)
        self.own_checkpoints = dict(state.own_checkpoints)
        self.checkpoints = {s: {self.id: c} for s, c in state.checkpoints.items()}
        self.stable_seq, self.stable_digest = state.stable_seq, state.stable_digest
        self.stable_app_digest = state.stable_app_digest
        self.stable_proof = state.stable_proof
        self.prepared_log = set(state.prepared_log)
        self.committed = {s: set(ds) for s, ds in state.committed.items()}
        self.committed_local = set(state.committed_local)
        self.consecutive_view_changes = 0
        if self.durable_state() != state:
            raise InvalidDurableState(f"replica {self.id}: the state does not restore exactly")

    def _check_durable(self, st: DurableState) -> None:
        """``InvalidDurableState`` unless ``st`` is a state this replica could have kept."""
        if self.history or self.view or self.stable_seq or self.pre_prepares or self.view_changes:
            raise InvalidDurableState("restore_durable needs a freshly constructed replica")
        me = self.signer.principal

        def bad(what: str) -> InvalidDurableState:
            return InvalidDurableState(f"replica {self.id}: {what}")

        def authentic(s: Signed) -> bool:
            try:
                return self._authentic(s)
            except (ValueError, TypeError, RecursionError):
                return False

        def client_request(r: Signed | None) -> bool:
            return r is None or (isinstance(r.message, Request) and authentic(r))

        if st.view < 0 or st.next_seq < st.stable_seq + 1 or len(st.history) > 2**62:
            raise bad("counters out of range")
        # the low watermark and the certified state it serves
        if st.stable_seq == 0:
            if st.stable_proof or (st.stable_digest, st.stable_app_digest) != (
                self.stable_digest,
                self.stable_app_digest,
            ):
                raise bad("a stable checkpoint at 0 that is not the initial state")
        elif self._valid_checkpoint_proof(st.stable_proof) != (st.stable_seq, st.stable_digest):
            raise bad(f"stable checkpoint {st.stable_seq} without a valid proof")
        # the view: never a message of a view below it
        nv = st.new_view_msg
        if nv is not None:
            m = nv.message
            if not (
                isinstance(m, NewView)
                and authentic(nv)
                and m.replica == self.primary(m.view)
                and 0 < m.view <= st.view
                and all(isinstance(s.message, ViewChange) and authentic(s) for s in m.view_changes)
                and all(isinstance(s.message, PrePrepare) and authentic(s) for s in m.pre_prepares)
            ):
                raise bad("its NEW-VIEW is not a primary's, or of a later view")
        if st.active and st.view > 0:
            installed = None if nv is None else nv.message
            if not isinstance(installed, NewView) or installed.view != st.view:
                raise bad(f"active in view {st.view} without that view's NEW-VIEW")
        for v, s in st.view_changes.items():
            vc = s.message
            if not (
                isinstance(vc, ViewChange)
                and s.sender == me
                and authentic(s)
                and vc.new_view == v <= st.view
                and self._valid_view_change(vc)
            ):
                raise bad(f"the VIEW-CHANGE for view {v} is not its own valid one")
        # pre-prepares: one per (view, seq), never a sequence number twice (BFT-SAFE-1)
        for (v, seq), s in st.pre_prepares.items():
            pp = s.message
            if not (
                isinstance(pp, PrePrepare)
                and authentic(s)
                and (pp.view, pp.seq) == (v, seq)
                and pp.replica == self.primary(v)
                and pp.digest == request_digest(pp.request)
                and client_request(pp.request)
                and v <= st.view
                and seq > st.stable_seq
            ):
                raise bad(f"the PRE-PREPARE at {(v, seq)} is not a valid primary's")
            if s.sender != me and (v, seq, pp.digest) not in st.prepares:
                raise bad(f"the PRE-PREPARE at {(v, seq)} was neither sent nor prepared by it")
            if s.sender == me and v == st.view and seq >= st.next_seq:
                raise bad(f"next_seq {st.next_seq} is not above its PRE-PREPARE at {seq}")
        # its votes: one digest per (view, seq) (BFT-SAFE-1)
        for table, cls in ((st.prepares, Prepare), (st.commits, Commit)):
            for (v, seq, d), s in table.items():
                vote = s.message
                if not (
                    isinstance(vote, cls)
                    and isinstance(vote, Prepare | Commit)
                    and s.sender == me
                    and authentic(s)
                    and (vote.view, vote.seq, vote.digest) == (v, seq, d)
                    and v <= st.view
                    and seq > st.stable_seq
                ):
                    raise bad(f"the {cls.__name__} at {(v, seq)} is not its own")
        for (v, seq), d in st.sent_commit.items():
            if (v, seq, d) not in st.commits:
                raise bad(f"sent_commit at {(v, seq)} without its COMMIT")
        for seq, cert in st.prepared_certs.items():
            pp = cert.pre_prepare.message if isinstance(cert, PreparedCert) else None
            if not (
                isinstance(cert, PreparedCert)
                and isinstance(pp, PrePrepare)
                and pp.seq == seq
                and self._valid_cert(cert, st.view + 1, st.stable_seq) is not None
            ):
                raise bad(f"the prepared certificate for {seq} is not valid")
        # checkpoints: one digest per sequence number
        for seq in st.own_checkpoints:
            # (below stable_seq too: a state transfer to an older checkpoint than the stable
            # one, while this replica is behind, records the state it reached)
            if not 0 < seq <= len(st.history):
                raise bad(f"a checkpoint at {seq} outside what it executed")
        for seq, s in st.checkpoints.items():
            ck, own = s.message, st.own_checkpoints.get(seq)
            if not (
                isinstance(ck, Checkpoint)
                and s.sender == me
                and authentic(s)
                and ck.seq == seq > st.stable_seq
                and own is not None
                and ck.state_digest == state_digest(*own)
            ):
                raise bad(f"the CHECKPOINT at {seq} is not its own")
        # execution: only client requests (BFT-SAFE-2)
        for i, r in enumerate(st.history):
            if not client_request(r):
                raise bad(f"executed request {i + 1} is not a client's signed request")
        for client, view in st.reply_views.items():
            if not 0 <= view <= st.view:
                raise bad(f"the last reply to {client} is of a view it has not reached")
