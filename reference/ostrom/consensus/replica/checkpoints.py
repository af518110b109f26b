"""Checkpoints, garbage collection and state transfer (spec/PBFTReplica.tla, section
"checkpoints and state transfer", and the operators of it that execution calls, which the
spec defines in the normal case before their first use; spec/PBFT.tla abstracts all of it
but LogsFrom).

Every ``checkpoint_k`` executions a replica signs a CHECKPOINT of its state; ``q``
matching ones make it stable: the low watermark moves and the log below it is garbage
collected.  A replica behind a stable checkpoint fetches the certified request log
(FETCH-STATE / STATE-TRANSFER, in chunks of at most a frame: ``_chunk``) and replays it
after checking it against the checkpoint's digest.  The chunks are below the spec's
abstraction: nothing the spec sees changes until the last one, and they assembled are
its STATE-TRANSFER (docs/consensus.md, "Bounded messages").  Separate from the normal
case because it bounds the log rather than orders it: TLC checks it with models of its
own (``pbft-replica-checkpoint-ci``).
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
from ostrom.consensus.replica.base import ReplicaBase, Transfer
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
        """Ask ``replica`` for the certified log, at most once per retransmission period
        (from where its chunks so far end, if it is sending one cut into frames)."""
        if replica != self.id and replica not in self.fetched:
            self.fetched.add(replica)
            self._send(replica_name(replica), FetchState(self._position(replica), self.id))

    def _position(self, replica: int) -> int:
        """Where a STATE-TRANSFER from ``replica`` must start: after the chunks it sent
        so far, if they still follow this replica's last execution, else after that."""
        part = self.transfers.get(replica)
        if part is not None and part.base != self.last_exec:
            del self.transfers[replica]  # overtaken: this replica executed meanwhile
            part = None
        return self.last_exec if part is None else part.position

    def _on_fetch_state(self, m: FetchState) -> None:
        if (
            m.after_seq >= self.stable_seq
            or self.last_exec < self.stable_seq
            or self.stable_app_digest is None
        ):
            self._reject("stale_view")
            return
        if ("fetch", m.replica) in self.answered and self.served.get(m.replica) != m.after_seq:
            # one STATE-TRANSFER per peer per retransmission period: a FETCH-STATE of a
            # few hundred bytes must not buy a reply of the whole log every time.  Cut
            # into frames, one pass through the log: the chunk that follows the last one
            # sent this period, nothing sent before again
            self._reject("rate_limited")
            return
        self.answered.add(("fetch", m.replica))
        reqs = self._chunk(m.after_seq, self.stable_app_digest)
        self.served[m.replica] = m.after_seq + len(reqs)
        st = StateTransfer(m.after_seq, reqs, self.stable_app_digest, self.stable_proof, self.id)
        self._send(replica_name(m.replica), st)

    def _chunk(self, after: int, app_digest: str) -> tuple[Signed | None, ...]:
        """The executed requests after ``after`` up to the stable checkpoint, as many as
        keep the signed STATE-TRANSFER within ``max_message`` (at least one: a request
        is within ``max_request``, far below a frame).

        Without the cut, a replica more than a frame of requests behind could never
        catch up: its transfer would be unsendable (BFT-LIVE-1).  The size is exact: an
        envelope's encoding is canonical JSON, a list's that of its items joined by
        commas, and a signature's hex has one length."""
        empty = StateTransfer(after, (), app_digest, self.stable_proof, self.id)
        room = self.max_message - len(Signed(empty, self.signer.principal, bytes(64)).encoded)
        out: list[Signed | None] = []
        for r in self.history[after : self.stable_seq]:
            size = (len(b"null") if r is None else len(r.encoded)) + (1 if out else 0)
            if out and size > room:
                break
            room -= size
            out.append(r)
        return tuple(out)

    def _on_state_transfer(self, m: StateTransfer) -> None:
        # spec/PBFT.tla: LogsFrom; spec/PBFTReplica.tla: OnStateTransfer  (install it)
        position = self._position(m.replica)
        part = self.transfers.get(m.replica)
        if m.after_seq == self.last_exec:
            part = None  # from this replica's last execution: a transfer from its start
        elif m.after_seq != position:
            self._reject("stale")  # an answer to an older FetchState, or to another replica's
            return
        key = self._valid_checkpoint_proof(m.checkpoint_proof)
        if key is None:
            self._reject("bad_state_transfer")
            return
        seq, digest = key
        end = m.after_seq + len(m.requests)
        if seq <= self.last_exec or end > seq or (end < seq and not m.requests):
            self._reject("bad_state_transfer")
            return
        chain = self.chain if part is None else part.chain
        for r in m.requests:
            if r is not None and not (isinstance(r.message, Request) and self._authentic(r)):
                self._reject("forged")
                return
            chain = chain_step(chain, request_digest(r))
        before: list[Signed | None] = [] if part is None else part.requests
        if end < seq:
            # a chunk of a transfer cut into frames: kept, not executed, until the last
            # one lets the whole chain be checked against the certified digest; the next
            # chunk is asked for at once (the sender serves one pass per period)
            self.transfers[m.replica] = Transfer(self.last_exec, [*before, *m.requests], chain)
            self._send(replica_name(m.replica), FetchState(end, self.id))
            return
        self.transfers.pop(m.replica, None)
        if state_digest(chain, m.app_digest) != digest:
            self._reject("tampered")
            return
        self.transfers.clear()
        for r in [*before, *m.requests]:
            s = self.last_exec + 1
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
