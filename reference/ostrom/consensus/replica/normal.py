"""The normal case: requests, PRE-PREPARE, PREPARE, COMMIT, and execution in sequence order
(spec/PBFTReplica.tla, section "normal case"; spec/PBFT.tla's PrePrepare, Prepare,
EagerCommits, CommittedAt and OwnLog).

The primary of the view assigns sequence numbers; *prepared* is the pre-prepare plus
``q-1`` matching PREPAREs of distinct backups, *committed-local* is prepared plus ``q``
matching COMMITs; a COMMIT of a view this replica has left still proves a decision (the
late path).  Committed requests execute in sequence order, each once per client
timestamp.  This is the protocol when no replica is faulty; the other sections only
bound its log (checkpoints.py) and replace its primary (view_change.py).
"""

from __future__ import annotations

from typing import Any

from ostrom.consensus.messages import (
    NULL_DIGEST,
    Commit,
    Prepare,
    PreparedCert,
    PrePrepare,
    Reply,
    Request,
    Signed,
    canonical,
    replica_name,
    request_digest,
    sha256_hex,
)
from ostrom.consensus.replica.base import ReplicaBase
from ostrom.consensus.replica.helpers import Key3, chain_step
from ostrom.consensus.replica.outputs import BROADCAST, Executed, Send

__all__ = ["NormalCase"]


class NormalCase(ReplicaBase):
    """The normal-case handlers and execution (see the module docstring)."""

    def _on_request(self, signed: Signed, req: Request) -> None:
        # spec/PBFT.tla: PrePrepare  (enabled by a sent request; backups relay it)
        if self._oversized(signed):
            self._reject("too_large")  # BFT-LIVE-1: not pending, relayed nor ordered
            return
        if req.timestamp <= self.last_ts.get(req.client, 0):
            self._reject("replayed")
            last = self.last_reply.get(req.client)
            lm = None if last is None else last.message
            if last is not None and isinstance(lm, Reply) and lm.timestamp == req.timestamp:
                self._out.sends.append(Send(req.client, last))
            return
        added = self._add_pending(signed)
        if self.active and self.is_primary:
            self._send_pre_prepare()
        elif self.active and added:
            self._out.sends.append(Send(replica_name(self.primary()), signed))

    def _add_pending(self, signed: Signed) -> bool:
        """Keep a client request until it executes (it drives the primary's ordering, the
        relay to the primary and the view-change timer).

        Only a *fresh* request is kept: one whose timestamp is above the last executed for
        its client.  An executed request brought back by a late PRE-PREPARE must not start
        the timer again (it caused view changes while idle).  At most ``window`` requests
        per client are kept (a PBFT client has one outstanding; more are counted as
        ``rate_limited``).  True if the request is new here.
        """
        m = signed.message
        if not isinstance(m, Request) or m.timestamp <= self.last_ts.get(m.client, 0):
            return False
        d = request_digest(signed)
        if d in self.pending:
            return False
        if self.pending_per_client[m.client] >= self.window:
            self._reject("rate_limited")
            return False
        self.pending[d] = signed
        self.pending_per_client[m.client] += 1
        return True

    def _send_pre_prepare(self) -> None:
        """The primary pre-prepares pending requests, in arrival order, within the window."""
        # spec/PBFT.tla: PrePrepare
        for d, req in list(self.pending.items()):
            if d in self.assigned:
                continue
            if self.next_seq > self.stable_seq + self.window:
                return
            pp = PrePrepare(self.view, self.next_seq, d, req, self.id)
            self.next_seq += 1
            self.assigned.add(d)
            signed = self._send(BROADCAST, pp)
            self.pre_prepares[(pp.view, pp.seq)] = signed

    def _view_ok(self, view: int) -> bool:
        """Normal-case messages are accepted only in the current, active view."""
        if view < self.view:
            self._reject("stale_view")
            return False
        if view > self.view:
            self._reject("future_view")
            return False
        if not self.active:
            self._reject("stale_view")  # the view is being abandoned (StartViewChange)
            return False
        return True

    def _valid_request(self, pp: PrePrepare) -> bool:
        """The pre-prepare's digest is its request's, and the request is a client's."""
        if pp.digest != request_digest(pp.request):
            self._reject("tampered")
            return False
        if pp.request is not None and not (
            isinstance(pp.request.message, Request) and self._authentic(pp.request)
        ):
            self._reject("forged")
            return False
        if self._oversized(pp.request):
            # BFT-LIVE-1: a primary that orders an oversized request gets no PREPARE
            # from an honest backup, so no certificate can carry it into a VIEW-CHANGE
            self._reject("too_large")
            return False
        return True

    def accepts_conflicting_pre_prepare(self) -> bool:
        """PBFT: a backup accepts at most one pre-prepare per (view, seq).  (Mutant hook.)"""
        return False

    def _on_pre_prepare(self, signed: Signed, pp: PrePrepare) -> None:
        # spec/PBFT.tla: Prepare  (a backup accepts a pre-prepare and prepares)
        if pp.replica != self.primary(pp.view):
            self._reject("not_primary")
            return
        if self._late(pp.view):
            self._reject("stale_view")
            if self._in_window(pp.seq) and pp.seq > self.last_exec and self._valid_request(pp):
                # keep the body (late commits may decide it) in the pre-prepare log, where
                # it starts no timer, if the view is one this replica has left (not the
                # one it is changing to: that view's PRE-PREPAREs come again after its
                # NEW-VIEW); the request is pending only if it is fresh
                if pp.view < self.view:
                    self.pre_prepares.setdefault((pp.view, pp.seq), signed)
                if pp.request is not None:
                    self._add_pending(pp.request)
                for (v, s, d), votes in list(self.commits.items()):
                    if (s, d) == (pp.seq, pp.digest) and votes:
                        self._check_late_committed(v, s, d)
            return
        if not self._view_ok(pp.view):
            return
        if not self._in_window(pp.seq):
            self._reject("out_of_window")
            return
        if not self._valid_request(pp):
            return
        old = self.pre_prepares.get((pp.view, pp.seq))
        if old is not None:
            if old.message == pp:
                self._reject("replayed")
                return
            self._reject("conflicting")  # an equivocating primary
            if not self.accepts_conflicting_pre_prepare():
                return
        self._accept_pre_prepare(signed, pp)

    def _accept_pre_prepare(self, signed: Signed, pp: PrePrepare) -> None:
        self.pre_prepares[(pp.view, pp.seq)] = signed
        if pp.request is not None and pp.seq > self.last_exec:
            self._add_pending(pp.request)
        if self.id != self.primary(pp.view):
            prep = Prepare(pp.view, pp.seq, pp.digest, self.id)
            key = (pp.view, pp.seq, pp.digest)
            self._own_vote("prepare", key, self.id, self._send(BROADCAST, prep))
        self._check_prepared(pp.view, pp.seq, pp.digest)

    def _on_prepare(self, signed: Signed, p: Prepare) -> None:
        # spec/PBFT.tla: Prepare  (a matching prepare from another backup)
        if p.replica == self.primary(p.view):
            self._reject("not_backup")
            return
        if not self._view_ok(p.view):
            return
        if self._record_vote("prepare", (p.view, p.seq, p.digest), p.replica, signed):
            self._check_prepared(p.view, p.seq, p.digest)

    def _record_vote(self, kind: str, key: Key3, replica: int, signed: Signed) -> bool:
        """Store a prepare or commit vote: inside the watermarks, one per replica (quorums
        count distinct senders, so a repeated vote is a replay)."""
        if not self._in_window(key[1]):
            self._reject("out_of_window")
            return False
        return self._store_vote(kind, key, replica, signed)

    def _votes(self, kind: str) -> dict[Key3, dict[int, Signed]]:
        return self.prepares if kind == "prepare" else self.commits

    def _store_vote(self, kind: str, key: Key3, replica: int, signed: Signed) -> bool:
        """One vote per (view, seq, sender): an honest replica votes for one digest per
        (view, seq), so a second digest is a Byzantine sender's, refused as
        ``conflicting`` and not stored (otherwise one sender could fill the log with
        votes for arbitrarily many digests)."""
        table = self._votes(kind)
        votes = table.get(key)
        if votes is not None and replica in votes:
            self._reject("replayed")
            return False
        view, seq, digest = key
        if any(d != digest for d in self._voted.get((kind, view, seq, replica), ())):
            self._reject("conflicting")
            return False
        self._own_vote(kind, key, replica, signed)
        return True

    def _own_vote(self, kind: str, key: Key3, replica: int, signed: Signed) -> None:
        """Store a vote without the checks (this replica's own, or a checked one)."""
        self._votes(kind).setdefault(key, {})[replica] = signed
        self._voted.setdefault((kind, key[0], key[1], replica), set()).add(key[2])

    def _pp_digest(self, view: int, seq: int) -> str | None:
        pp = self.pre_prepares.get((view, seq))
        if pp is None or not isinstance(pp.message, PrePrepare):
            return None
        return pp.message.digest

    def _check_prepared(self, view: int, seq: int, digest: str) -> None:
        """prepared(m, v, n, i): pre-prepare + ``q-1`` matching prepares from backups."""
        # spec/PBFT.tla: EagerCommits  (prepared, so send COMMIT)
        if self._pp_digest(view, seq) != digest and not self._extra_pre_prepared(view, seq, digest):
            return
        if self.sent_commit.get((view, seq)) == digest:
            return
        votes = self.prepares.get((view, seq, digest), {})
        backups = [r for r in votes if r != self.primary(view)]
        if len(backups) < self.prepared_threshold():
            return
        if (view, seq) in self.sent_commit and not self.accepts_conflicting_pre_prepare():
            return
        pp = self._pre_prepare_for(view, seq, digest)
        self.sent_commit[(view, seq)] = digest
        self.prepared_log.add((view, seq, digest))
        cert = PreparedCert(pp, tuple(votes[r] for r in sorted(backups)))
        old = self.prepared_certs.get(seq)
        if old is None or _cert_view(old) <= view:
            self.prepared_certs[seq] = cert
        c = Commit(view, seq, digest, self.id)
        self._own_vote("commit", (view, seq, digest), self.id, self._send(BROADCAST, c))
        self._check_committed(view, seq, digest)

    # The two hooks below exist for the "prepares twice" mutant, which keeps every
    # pre-prepare it accepts; honest replicas keep one per (view, seq).
    def _extra_pre_prepared(self, view: int, seq: int, digest: str) -> bool:
        return False

    def _pre_prepare_for(self, view: int, seq: int, digest: str) -> Signed:
        return self.pre_prepares[(view, seq)]

    def _on_commit(self, signed: Signed, c: Commit) -> None:
        # spec/PBFT.tla: CommittedAt  (a matching commit)
        if self._late(c.view):
            self._on_late_commit(signed, c)
            return
        if not self._view_ok(c.view):
            return
        if self._record_vote("commit", (c.view, c.seq, c.digest), c.replica, signed):
            self._check_committed(c.view, c.seq, c.digest)

    def _on_late_commit(self, signed: Signed, c: Commit) -> None:
        """Commits of a view this replica has left still prove a decision.

        ``q`` matching commits mean the request is *committed* (prepared at ``q-f``
        honest replicas), so the sequence number can never get another request: a
        replica that left the view early (its timer fired alone) may execute it without
        voting.  Without this, such a replica would wait for the next view change or
        checkpoint to learn a decision everyone else has taken.
        """
        # spec/PBFT.tla: CommittedAt  (a committed certificate from an earlier view)
        if not self._in_window(c.seq) or c.seq <= self.last_exec:
            self._reject("stale_view")
            return
        if self._store_vote("commit", (c.view, c.seq, c.digest), c.replica, signed):
            self._check_late_committed(c.view, c.seq, c.digest)

    def _check_late_committed(self, view: int, seq: int, digest: str) -> None:
        if seq <= self.last_exec or seq in self.to_execute:
            return
        if len(self.commits.get((view, seq, digest), {})) < self.commit_threshold():
            return
        body = self._body(view, seq, digest)
        if body is None and digest != NULL_DIGEST:
            return  # the request itself is still missing (a pre-prepare or the client)
        self.committed.setdefault(seq, set()).add(digest)
        self.committed_local.add((view, seq, digest))
        self.to_execute[seq] = (digest, body)
        self._execute()

    def _body(self, view: int, seq: int, digest: str) -> Signed | None:
        pp = self.pre_prepares.get((view, seq))
        m = None if pp is None else pp.message
        if isinstance(m, PrePrepare) and m.digest == digest:
            return m.request
        return self.pending.get(digest)

    def _check_committed(self, view: int, seq: int, digest: str) -> None:
        """committed-local(m, v, n, i): prepared + ``q`` matching commits."""
        if (view, seq, digest) not in self.prepared_log:
            return
        if len(self.commits.get((view, seq, digest), {})) < self.commit_threshold():
            return
        self.committed.setdefault(seq, set()).add(digest)
        self.committed_local.add((view, seq, digest))
        if seq > self.last_exec and seq not in self.to_execute:
            pp = self._pre_prepare_for(view, seq, digest)
            assert isinstance(pp.message, PrePrepare)
            self.to_execute[seq] = (digest, pp.message.request)
        self._execute()

    def _execute(self) -> None:
        """Execute committed requests strictly in sequence order."""
        # spec/PBFT.tla: OwnLog  (execution in sequence order)
        while self.last_exec + 1 in self.to_execute:
            seq = self.last_exec + 1
            digest, req = self.to_execute.pop(seq)
            result = self._execute_one(seq, digest, req, reply=True)
            self._out.executed.append(Executed(seq, req, result))
            if seq % self.checkpoint_k == 0:
                self._make_checkpoint(seq)
        if self.active and self.is_primary:
            self._send_pre_prepare()

    def _execute_one(
        self, seq: int, digest: str, req: Signed | None, *, reply: bool
    ) -> dict[str, Any] | None:
        result: dict[str, Any] | None = None
        if req is not None:
            m = req.message
            assert isinstance(m, Request)
            if m.timestamp > self.last_ts.get(m.client, 0):
                result = self.app.execute(m.operation)
                self.last_ts[m.client] = m.timestamp
                r = self._reply(m, result)
                self.last_reply[m.client] = r
                if reply:
                    self._out.sends.append(Send(m.client, r))
            self._drop_pending(m.client)
        self.history.append(req)
        self.executed_log.append((seq, digest))
        self.chain = chain_step(self.chain, digest)
        self.last_exec = seq
        self.progress += 1
        self.consecutive_view_changes = 0
        return result

    def _reply(self, m: Request, result: dict[str, Any]) -> Signed:
        """The signed REPLY of ``result``; if it would not fit a frame, the REPLY of the
        result's digest (``{"too_large": sha256}``) instead.

        BFT-LIVE-1: a reply above the frame is unsendable, and the client would wait
        for ever.  Every honest replica computes the same result, so ``f+1`` of them send
        the same digest: the client learns that the request executed and that its result
        is too large to carry (the cluster's front answers it as an error)."""
        r = self.signer.sign(Reply(self.view, m.timestamp, m.client, self.id, result))
        if len(r.encoded) <= self.max_message:
            return r
        digest = {"too_large": sha256_hex(canonical(result))}
        return self.signer.sign(Reply(self.view, m.timestamp, m.client, self.id, digest))

    def _drop_pending(self, client: str) -> None:
        last = self.last_ts.get(client, 0)
        for d, r in list(self.pending.items()):
            m = r.message
            if isinstance(m, Request) and m.client == client and m.timestamp <= last:
                del self.pending[d]
                self.pending_per_client[client] -= 1


def _cert_view(cert: PreparedCert) -> int:
    pp = cert.pre_prepare.message
    assert isinstance(pp, PrePrepare)
    return pp.view
