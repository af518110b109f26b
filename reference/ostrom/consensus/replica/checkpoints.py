"""Checkpoints, garbage collection and state transfer (spec/PBFTReplica.tla, section
"checkpoints and state transfer", and the operators of it that execution calls, which the
spec defines in the normal case before their first use; spec/PBFT.tla abstracts all of it
but LogsFrom).

Every ``checkpoint_k`` executions a replica signs a CHECKPOINT of its state; ``q``
matching ones make it stable: the low watermark moves and the log below it is garbage
collected.  A replica behind a stable checkpoint fetches the certified request log
(FETCH-STATE / STATE-TRANSFER) and replays it after checking it against the checkpoint's
digest.  Separate from the normal case because it bounds the log rather than orders it:
TLC checks it with models of its own (``pbft-replica-checkpoint-ci``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ostrom.consensus.messages import (
    Checkpoint,
    FetchState,
    Request,
    Signed,
    StateTransfer,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica.base import ReplicaBase
from ostrom.consensus.replica.helpers import chain_step, state_digest
from ostrom.consensus.replica.outputs import BROADCAST, Executed

__all__ = ["Checkpoints"]


class Checkpoints(ReplicaBase):
    """Checkpoints, stable checkpoints and state transfer (see the module docstring)."""

    def _make_checkpoint(self, seq: int) -> None:
        # spec/PBFTReplica.tla: MakeCheckpoint  (send CHECKPOINT after executing a multiple of K)
        app_digest = self.app.digest()
        self.own_checkpoints[seq] = (self.chain, app_digest)
        ck = Checkpoint(seq, state_digest(self.chain, app_digest), self.id)
        signed = self._send(BROADCAST, ck)
        self._record_checkpoint(signed, ck)

    def _on_checkpoint(self, signed: Signed, ck: Checkpoint) -> None:
        # spec/PBFTReplica.tla: OnCheckpoint  (collect matching checkpoints; stable at q)
        if ck.seq <= self.stable_seq:
            self._reject("stale_view")
            return
        if ck.seq % self.checkpoint_k != 0:
            self._reject("invalid")
            return
        if ck.seq > self.stable_seq + self.window:
            self._reject("out_of_window")
            if ck.seq > self.last_exec:
                # far behind: ask the sender for its certified log (StateTransfer)
                self._fetch_from(ck.replica)
            return
        self._record_checkpoint(signed, ck)

    def _record_checkpoint(self, signed: Signed, ck: Checkpoint) -> None:
        votes = self.checkpoints.setdefault(ck.seq, {})
        old = votes.get(ck.replica)
        if old is not None:
            if old.message == ck:
                self._reject("replayed")
                return
            # BFT-LIVE-1: the sender signed two digests for one sequence number.  Its
            # first vote (a lie that arrived first) must not keep its genuine vote, relayed
            # in another replica's stable proof, from counting: the second vote replaces
            # the first when it completes a certificate, i.e. with q-1 matching votes of
            # others (q signatures then prove the checkpoint, whatever this sender also
            # signed).  Otherwise it is refused, and nothing is stored for it.
            others = sum(
                1
                for r, s in votes.items()
                if r != ck.replica
                and isinstance(s.message, Checkpoint)
                and s.message.state_digest == ck.state_digest
            )
            if others + 1 < self.q:
                self._reject("conflicting")
                return
        votes[ck.replica] = signed
        matching = [
            s
            for s in votes.values()
            if isinstance(s.message, Checkpoint) and s.message.state_digest == ck.state_digest
        ]
        if len(matching) >= self.q and ck.seq > self.stable_seq:
            self._advance_stable(ck.seq, ck.state_digest, tuple(matching))

    def _valid_checkpoint_proof(self, proof: Sequence[Signed]) -> tuple[int, str] | None:
        """``q`` authentic CHECKPOINTs from distinct replicas for one (seq, digest)."""
        seen: set[int] = set()
        key: tuple[int, str] | None = None
        for s in proof:
            m = s.message
            if not isinstance(m, Checkpoint) or not self._authentic(s) or m.replica in seen:
                return None
            if key is not None and key != (m.seq, m.state_digest):
                return None
            key = (m.seq, m.state_digest)
            seen.add(m.replica)
        if key is None or len(seen) < self.q:
            return None
        return key

    def _advance_stable(self, seq: int, digest: str, proof: tuple[Signed, ...]) -> None:
        """A stable checkpoint: move the low watermark and garbage-collect the log."""
        # spec/PBFTReplica.tla: AdvanceStable  (stable checkpoint, garbage collection)
        self.stable_seq, self.stable_digest = seq, digest
        self.stable_proof = tuple(sorted(proof, key=lambda s: s.sender))
        own = self.own_checkpoints.get(seq)
        self.stable_app_digest = (
            own[1] if own is not None and state_digest(*own) == digest else None
        )
        self.pre_prepares = {k: v for k, v in self.pre_prepares.items() if k[1] > seq}
        self.prepares = {k: v for k, v in self.prepares.items() if k[1] > seq}
        self.commits = {k: v for k, v in self.commits.items() if k[1] > seq}
        self._voted = {k: v for k, v in self._voted.items() if k[2] > seq}
        self.sent_commit = {k: v for k, v in self.sent_commit.items() if k[1] > seq}
        self.prepared_certs = {s: c for s, c in self.prepared_certs.items() if s > seq}
        self.checkpoints = {s: c for s, c in self.checkpoints.items() if s > seq}
        self.own_checkpoints = {s: c for s, c in self.own_checkpoints.items() if s >= seq}
        self.next_seq = max(self.next_seq, seq + 1)
        if self.last_exec < seq:
            self.to_execute = {s: e for s, e in self.to_execute.items() if s > seq}
            self._fetch()
        elif self.active and self.is_primary:
            self._send_pre_prepare()

    def _fetch(self) -> None:
        # spec/PBFT.tla: LogsFrom; spec/PBFTReplica.tla: FetchTo  (state transfer)
        for s in self.stable_proof:
            m = s.message
            if isinstance(m, Checkpoint):
                self._fetch_from(m.replica)

    def _fetch_from(self, replica: int) -> None:
        """Ask ``replica`` for the certified log, at most once per retransmission period."""
        if replica != self.id and replica not in self.fetched:
            self.fetched.add(replica)
            self._send(replica_name(replica), FetchState(self.last_exec, self.id))

    def _on_fetch_state(self, m: FetchState) -> None:
        if (
            m.after_seq >= self.stable_seq
            or self.last_exec < self.stable_seq
            or self.stable_app_digest is None
        ):
            self._reject("stale_view")
            return
        if ("fetch", m.replica) in self.answered:
            # one STATE-TRANSFER per peer per retransmission period: a FETCH-STATE of a
            # few hundred bytes must not buy a reply of the whole log every time
            self._reject("rate_limited")
            return
        self.answered.add(("fetch", m.replica))
        reqs = tuple(self.history[m.after_seq : self.stable_seq])
        st = StateTransfer(m.after_seq, reqs, self.stable_app_digest, self.stable_proof, self.id)
        self._send(replica_name(m.replica), st)

    def _on_state_transfer(self, m: StateTransfer) -> None:
        # spec/PBFT.tla: LogsFrom; spec/PBFTReplica.tla: OnStateTransfer  (install it)
        if m.after_seq != self.last_exec:
            self._reject("stale")  # an answer to an older FetchState, or to another replica's
            return
        key = self._valid_checkpoint_proof(m.checkpoint_proof)
        if key is None:
            self._reject("bad_state_transfer")
            return
        seq, digest = key
        if seq != m.after_seq + len(m.requests) or seq <= self.last_exec:
            self._reject("bad_state_transfer")
            return
        chain = self.chain
        for r in m.requests:
            if r is not None and not (isinstance(r.message, Request) and self._authentic(r)):
                self._reject("forged")
                return
            chain = chain_step(chain, request_digest(r))
        if state_digest(chain, m.app_digest) != digest:
            self._reject("tampered")
            return
        for i, r in enumerate(m.requests):
            s = m.after_seq + 1 + i
            d = request_digest(r)
            self.committed.setdefault(s, set()).add(d)
            result = self._execute_one(s, d, r, reply=False)
            self._out.executed.append(Executed(s, r, result))
        self.own_checkpoints[seq] = (self.chain, m.app_digest)
        if seq > self.stable_seq:
            self._advance_stable(seq, digest, m.checkpoint_proof)
        elif seq == self.stable_seq:
            # the stable checkpoint's application state is now ours to serve; an older
            # certified state (seq < stable_seq) is not the stable one, and serving its
            # digest as the stable state's would make every STATE-TRANSFER we send fail
            self.stable_app_digest = m.app_digest
        self.to_execute = {s: e for s, e in self.to_execute.items() if s > self.last_exec}
        self._execute()
