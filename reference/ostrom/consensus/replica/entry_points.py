"""``Replica``: the sections composed, with the entry points the I/O around it calls
(spec/PBFTReplica.tla, section "entry points": ``OnMessage``, ``Waiting``, ``OnTimeout``,
``Retransmit``, ``Step``).

``on_message`` authenticates a message and hands it to its section's handler
(normal.py, checkpoints.py, view_change.py); ``on_timeout`` starts a view change;
``retransmit`` re-sends what peers may have lost, from every section's log.  Each returns
the step's ``Output``.  Separate because it is the only part that dispatches across the
sections, as the spec's ``OnMessage`` and ``Step`` do.
"""

from __future__ import annotations

from ostrom.consensus.messages import (
    Checkpoint,
    Commit,
    FetchState,
    Malformed,
    NewView,
    Prepare,
    PrePrepare,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    decode,
    replica_name,
)
from ostrom.consensus.replica.base import ReplicaBase
from ostrom.consensus.replica.checkpoints import Checkpoints
from ostrom.consensus.replica.durable import Durable
from ostrom.consensus.replica.normal import NormalCase
from ostrom.consensus.replica.outputs import BROADCAST, Output, Send
from ostrom.consensus.replica.view_change import ViewChanges

__all__ = ["Replica"]


class Replica(NormalCase, Checkpoints, ViewChanges, Durable, ReplicaBase):
    """One PBFT replica; see the package docstring (``ostrom.consensus.replica``) for the
    protocol it runs and its modules for each section."""

    @property
    def waiting(self) -> bool:
        """True while the view-change timer should run.

        In an active view: while a request this replica knows of is not executed.  During
        a view change: only once ``q`` replicas want the new view (PBFT §4.5.2), so a
        replica that timed out alone waits for the others instead of running ahead into
        ever higher views that no quorum will join.
        """
        if not self.active:
            return len(self.view_changes.get(self.view, {})) >= self.q
        return bool(self.pending)

    def on_request(self, signed: Signed) -> Output:
        return self.on_message(signed)

    def on_message(self, payload: object) -> Output:
        """Handle one message from the network (bytes are decoded first)."""
        if isinstance(payload, bytes):
            try:
                payload = decode(payload)
            except Malformed:
                self._reject("malformed")
                return self._take()
        if not isinstance(payload, Signed):
            self._reject("malformed")
            return self._take()
        try:
            authentic = self._authentic(payload)
        except (ValueError, TypeError, RecursionError):
            # an in-process envelope whose message has no canonical encoding (a lone
            # surrogate, a value JSON cannot carry): the wire decoder refuses the same
            self._reject("malformed")
            return self._take()
        if not authentic:
            self._reject("forged")
            return self._take()
        m = payload.message
        if isinstance(m, Request):
            self._on_request(payload, m)
        elif isinstance(m, PrePrepare):
            self._on_pre_prepare(payload, m)
        elif isinstance(m, Prepare):
            self._on_prepare(payload, m)
        elif isinstance(m, Commit):
            self._on_commit(payload, m)
        elif isinstance(m, Checkpoint):
            self._on_checkpoint(payload, m)
        elif isinstance(m, ViewChange):
            self._on_view_change(payload, m)
        elif isinstance(m, NewView):
            self._on_new_view(payload, m)
        elif isinstance(m, FetchState):
            self._on_fetch_state(m)
        elif isinstance(m, StateTransfer):
            self._on_state_transfer(m)
        else:
            self._reject("unexpected")
        return self._take()

    def on_timeout(self) -> Output:
        """The view-change timer expired."""
        # spec/PBFT.tla: Timeout
        if self.waiting:
            self._send_view_change(self.view + 1)
        return self._take()

    def retransmit(self) -> Output:
        """Re-send this replica's own signed messages that peers may have lost.

        PBFT's liveness assumes that messages are retransmitted until delivered; this is
        that retransmission, bounded to the current view and window.  Duplicates are
        harmless: receivers refuse and count them as ``replayed``.  A call also opens a
        new retransmission period: each peer may again get one STATE-TRANSFER and one
        NEW-VIEW from us, and a FETCH-STATE that was lost goes out again.
        """
        # spec/PBFTReplica.tla: Retransmit
        self.answered.clear()
        self.served.clear()
        self.fetched.clear()
        out = self._out
        if not self.active:
            # our VIEW-CHANGE, and the signed ones we hold for this view and the one we
            # left: they let a replica that missed some reach the quorum that moved us
            for v in (self.view - 1, self.view):
                for _r, vc in sorted(self.view_changes.get(v, {}).items()):
                    out.sends.append(Send(BROADCAST, vc))
        if self.new_view_msg is not None:
            # BFT-LIVE-1: also after leaving its view.  A replica still waiting for this
            # NEW-VIEW (it was lost) cannot enter the view otherwise, and with fewer than
            # 2f+1 VIEW-CHANGEs of its own it has no timer running either (issue: the
            # view change that never completes).
            out.sends.append(Send(BROADCAST, self.new_view_msg))
        # BFT-LIVE-1: every PRE-PREPARE we accepted, not only our own, and our own votes,
        # of every view the log still holds (above the stable checkpoint, inside the
        # window), not only the current one.  A primary that leaves one backup out would
        # otherwise leave it without the request body while the others commit (the
        # relayed message keeps the primary's signature, so the relay cannot change
        # it); and a replica that committed in view v and moved on alone to v+1 would
        # withhold the commit a peer still in view v needs, a peer that lost its log in
        # a restart (found by TLC: models/MCPBFTReplicaSystem_faults.cfg).  Votes are
        # signed for their view, so re-sending an old one promises nothing new.
        for _k, pp in sorted(self.pre_prepares.items(), key=lambda kv: kv[0]):
            out.sends.append(Send(BROADCAST, pp))
        for log in (self.prepares, self.commits):
            for (_v, _s, _d), votes in sorted(log.items(), key=lambda kv: kv[0]):
                if self.id in votes:
                    out.sends.append(Send(BROADCAST, votes[self.id]))
        for proof in self.stable_proof:
            out.sends.append(Send(BROADCAST, proof))
        for _seq, votes in sorted(self.checkpoints.items()):
            if self.id in votes:
                out.sends.append(Send(BROADCAST, votes[self.id]))
        if self.active and not self.is_primary:
            for req in self.pending.values():
                out.sends.append(Send(replica_name(self.primary()), req))
        if self.last_exec < self.stable_seq:
            self._fetch()
        return self._take()
