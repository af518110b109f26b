"""The view change: VIEW-CHANGE, NEW-VIEW and entering a view (spec/PBFTReplica.tla,
section "view change"; spec/PBFT.tla's SendViewChange, JoinViewChange, SendNewView and
AcceptNewView).

On a timeout a replica stops accepting messages of its view and sends a VIEW-CHANGE with
its stable-checkpoint proof and its prepared certificates; the new primary, with ``q`` of
them, computes O (per sequence number the request of the highest-view certificate, else a
null request) and sends NEW-VIEW; backups recompute O and refuse a NEW-VIEW that differs.
Separate because it is what replaces a faulty primary, the part of PBFT that the seed
paper's Algorithm 1 lacks (docs/alg1.md) and that TLC checks with Byzantine VIEW-CHANGEs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ostrom.consensus.messages import (
    NULL_DIGEST,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Request,
    Signed,
    ViewChange,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica.base import ReplicaBase
from ostrom.consensus.replica.outputs import BROADCAST, Send

__all__ = ["ViewChanges"]


class ViewChanges(ReplicaBase):
    """The view-change handlers (see the module docstring; ``ViewChange`` is the message)."""

    def _send_view_change(self, new_view: int) -> None:
        """Stop accepting messages of the current view; send VIEW-CHANGE for ``new_view``."""
        # spec/PBFT.tla: SendViewChange
        if new_view < self.view or (new_view == self.view and not self.active):
            return
        self.view, self.active = new_view, False
        self.consecutive_view_changes += 1
        self.progress += 1
        certs = tuple(c for s, c in sorted(self.prepared_certs.items()) if s > self.stable_seq)
        vc = ViewChange(new_view, self.stable_seq, self.stable_proof, certs, self.id)
        signed = self._send(BROADCAST, vc)
        self.view_changes.setdefault(new_view, {})[self.id] = signed
        self.view_changes = {v: m for v, m in self.view_changes.items() if v >= new_view - 1}
        self._send_new_view()

    def _valid_cert(self, cert: PreparedCert, new_view: int, low: int) -> PrePrepare | None:
        """A prepared certificate from a view before ``new_view`` above ``low``."""
        pps = cert.pre_prepare
        pp = pps.message
        if not isinstance(pp, PrePrepare) or not self._authentic(pps):
            return None
        if pp.replica != self.primary(pp.view) or pp.view >= new_view:
            return None
        if not low < pp.seq <= low + self.window:
            return None
        if pp.digest != request_digest(pp.request):
            return None
        if pp.request is not None and not (
            isinstance(pp.request.message, Request) and self._authentic(pp.request)
        ):
            return None
        voters: set[int] = set()
        for s in cert.prepares:
            p = s.message
            if not isinstance(p, Prepare) or not self._authentic(s):
                return None
            if (p.view, p.seq, p.digest) != (pp.view, pp.seq, pp.digest):
                return None
            if p.replica == pp.replica or p.replica in voters:
                return None
            voters.add(p.replica)
        if len(voters) < self.prepared_threshold():
            return None
        return pp

    def _valid_view_change(self, vc: ViewChange) -> bool:
        if vc.last_stable_seq == 0:
            if vc.checkpoint_proof:
                return False
        else:
            key = self._valid_checkpoint_proof(vc.checkpoint_proof)
            if key is None or key[0] != vc.last_stable_seq:
                return False
        seqs: set[int] = set()
        for cert in vc.prepared:
            pp = self._valid_cert(cert, vc.new_view, vc.last_stable_seq)
            if pp is None or pp.seq in seqs:
                return False
            seqs.add(pp.seq)
        return True

    def _on_view_change(self, signed: Signed, vc: ViewChange) -> None:
        # spec/PBFT.tla: JoinViewChange  (collect VIEW-CHANGEs; f+1 for later views: join)
        if vc.new_view < self.view or (vc.new_view == self.view and self.active):
            self._reject("stale_view")
            self._answer_late_view_change(vc)
            return
        votes = self.view_changes.get(vc.new_view, {})
        if vc.replica in votes:
            self._reject("replayed")
            return
        held = self._later_view_change(vc.replica)
        if vc.new_view > self.view and held is not None and held > vc.new_view:
            # one VIEW-CHANGE per sender for views above this replica's: its highest (an
            # honest replica's views only grow; far-future ones cannot fill the log)
            self._reject("superseded")
            return
        if not self._valid_view_change(vc):
            self._reject("bad_view_change")
            return
        if vc.new_view > self.view and held is not None:
            self._reject("superseded")  # the sender's lower one goes
            del self.view_changes[held][vc.replica]
            if not self.view_changes[held]:
                del self.view_changes[held]
        self.view_changes.setdefault(vc.new_view, {})[vc.replica] = signed
        if vc.last_stable_seq > self.stable_seq:
            key = self._valid_checkpoint_proof(vc.checkpoint_proof)
            assert key is not None
            self._advance_stable(key[0], key[1], vc.checkpoint_proof)
        # liveness: f+1 replicas want a later view -> join the smallest such view
        later: dict[int, int] = {}
        for v, ms in self.view_changes.items():
            if v > self.view:
                for r in ms:
                    later[r] = min(later.get(r, v), v)
        if len(later) >= self.f + 1:
            self._send_view_change(min(later.values()))
        self._send_new_view()

    def _later_view_change(self, replica: int) -> int | None:
        """The view of ``replica``'s VIEW-CHANGE held for a view above this replica's."""
        for v, ms in self.view_changes.items():
            if v > self.view and replica in ms:
                return v
        return None

    def _answer_late_view_change(self, vc: ViewChange) -> None:
        """A VIEW-CHANGE for a view this replica has installed (or left): its sender still
        waits for that view's NEW-VIEW, which may have been lost.  Send it the NEW-VIEW of
        the last view installed here if that view is at least the one the sender wants
        (BFT-LIVE-1; one per sender per retransmission period, and also while this replica
        is itself changing view, which is when the sender needs it most)."""
        nv = self.new_view_msg
        if nv is None or vc.replica == self.id or ("new_view", vc.replica) in self.answered:
            return
        m = nv.message
        if isinstance(m, NewView) and m.view >= vc.new_view:
            self.answered.add(("new_view", vc.replica))
            self._out.sends.append(Send(replica_name(vc.replica), nv))

    def compute_o(self, vcs: Sequence[ViewChange], view: int) -> list[PrePrepare]:
        """O: for each seq in (min-s, max-s], the request of the highest-view prepared
        certificate in V, else a null request (PBFT §4.4)."""
        low = max(vc.last_stable_seq for vc in vcs)
        best: dict[int, PrePrepare] = {}
        for vc in vcs:
            for cert in vc.prepared:
                pp = cert.pre_prepare.message
                assert isinstance(pp, PrePrepare)
                if pp.seq <= low:
                    continue
                old = best.get(pp.seq)
                if old is None or (pp.view, pp.digest) > (old.view, old.digest):
                    best[pp.seq] = pp
        high = max(best, default=low)
        primary = self.primary(view)
        return [
            PrePrepare(view, s, best[s].digest, best[s].request, primary)
            if s in best
            else PrePrepare(view, s, NULL_DIGEST, None, primary)
            for s in range(low + 1, high + 1)
        ]

    def _send_new_view(self) -> None:
        # spec/PBFT.tla: SendNewView
        v = self.view
        if self.active or self.primary(v) != self.id:
            return
        votes = self.view_changes.get(v, {})
        if len(votes) < self.q:
            return
        chosen = tuple(votes[r] for r in sorted(votes))
        vcs = [_vc(s) for s in chosen]
        o = tuple(self.signer.sign(pp) for pp in self.compute_o(vcs, v))
        nv = self._send(BROADCAST, NewView(v, chosen, o, self.id))
        self._enter_view(nv, vcs, o)

    def _on_new_view(self, signed: Signed, nv: NewView) -> None:
        # spec/PBFT.tla: AcceptNewView  (O recomputed from V)
        if nv.replica != self.primary(nv.view):
            self._reject("not_primary")
            return
        if nv.view < self.view or (nv.view == self.view and self.active):
            self._reject("replayed" if signed == self.new_view_msg else "stale_view")
            return
        vcs: list[ViewChange] = []
        voters: set[int] = set()
        for s in nv.view_changes:
            vc = s.message
            if (
                not isinstance(vc, ViewChange)
                or not self._authentic(s)
                or vc.new_view != nv.view
                or vc.replica in voters
                or not self._valid_view_change(vc)
            ):
                self._reject("bad_new_view")
                return
            voters.add(vc.replica)
            vcs.append(vc)
        if len(voters) < self.q:
            self._reject("bad_new_view")
            return
        expected = self.compute_o(vcs, nv.view)
        got = [s.message for s in nv.pre_prepares]
        if got != expected or not all(
            self._authentic(s) and s.sender == replica_name(nv.replica) for s in nv.pre_prepares
        ):
            self._reject("bad_new_view")
            return
        self.view = nv.view
        self._enter_view(signed, vcs, nv.pre_prepares)

    def _enter_view(self, nv: Signed, vcs: Sequence[ViewChange], o: Iterable[Signed]) -> None:
        self.active = True
        self.new_view_msg = nv
        self.progress += 1
        self.assigned = set()
        self.view_changes = {v: m for v, m in self.view_changes.items() if v > self.view}
        low = max(vc.last_stable_seq for vc in vcs)
        if low > self.stable_seq:
            best = next(vc for vc in vcs if vc.last_stable_seq == low)
            key = self._valid_checkpoint_proof(best.checkpoint_proof)
            assert key is not None
            self._advance_stable(key[0], key[1], best.checkpoint_proof)
        high = low
        for s in o:
            pp = s.message
            assert isinstance(pp, PrePrepare)
            high = max(high, pp.seq)
            self.assigned.add(pp.digest)
            if pp.seq > self.stable_seq:
                self._accept_pre_prepare(s, pp)
        self.next_seq = max(high, self.stable_seq) + 1
        if self.is_primary:
            self._send_pre_prepare()
        else:
            for req in self.pending.values():
                self._out.sends.append(Send(replica_name(self.primary()), req))


def _vc(signed: Signed) -> ViewChange:
    m = signed.message
    assert isinstance(m, ViewChange)
    return m
