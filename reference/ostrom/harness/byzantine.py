"""Byzantine behaviours: strategies that wrap an honest ``Replica``.

A strategy sees everything its replica sees and rewrites what it sends.  It holds only
its own replica's ``Signer``: it can sign anything *as itself*, and a message it
attributes to anyone else carries a signature that does not verify (docs/design.md §6).  That is
the whole adversary of PBFT, so the strategies cover the behaviours the seed-paper review
asks about (docs/design.md §6): silence, an equivocating primary, conflicting votes
from a replica that stays reachable, delays, and garbage.

The adversary suite adds the attacks on PBFT's own machinery (docs/consensus.md, "The
adversary suite"): lying checkpoints, fabricated prepared certificates in VIEW-CHANGEs, a
new primary whose NEW-VIEW drops a prepared request, replays of old views, fields changed
under a kept signature, and floods of VIEW-CHANGEs.  Each class says what it does, which
rule of ``Replica`` defeats it, the rejection reasons it must cause at honest replicas
(``refused_as``) and the property it probes.  ``RejectionLedger`` measures that effect:
it counts every refusal at an honest replica by the sender of the envelope that caused
it.  ``EquivocatingColluder`` and ``DoubleVoter`` are the control beyond ``f`` (not in
``STRATEGIES``): two of them at N = 4 do break agreement, so the checks can see it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections import Counter, deque
from typing import TYPE_CHECKING, Any, ClassVar

from ostrom.consensus.messages import (
    NULL_DIGEST,
    AnyMessage,
    Checkpoint,
    Commit,
    FetchState,
    NewView,
    Prepare,
    PreparedCert,
    PrePrepare,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica import BROADCAST, Output, Replica, Send, signer_matches

if TYPE_CHECKING:
    from ostrom.harness.network import Envelope, Simulation

__all__ = [
    "FAKE_CERTIFICATES",
    "NEW_VIEW_LIES",
    "STRATEGIES",
    "CheckpointLiar",
    "ConflictingVoter",
    "DoubleVoter",
    "EquivocatingColluder",
    "EquivocatingPrimary",
    "FakeCertificates",
    "Garbage",
    "LeavesOneOut",
    "NewViewLiar",
    "RejectionLedger",
    "Silent",
    "Strategy",
    "ViewChangeFlood",
]


class Strategy:
    """Honest behaviour; subclasses override ``transform`` (or the entry points)."""

    name = "honest"
    #: The rejection reasons this behaviour must cause at honest replicas (the attack
    #: tests and ``consensus-demo --attack`` check them through ``RejectionLedger``).
    refused_as: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.replica: Replica
        self.rng = random.Random(0)
        self.n = 0

    def attach(self, replica: Replica, rng: random.Random, n: int) -> None:
        self.replica, self.rng, self.n = replica, rng, n

    def others(self) -> list[str]:
        return [replica_name(i) for i in range(self.n) if i != self.replica.id]

    def on_message(self, payload: object) -> Output:
        self.observe(payload)
        return self.transform(self.replica.on_message(payload))

    def observe(self, payload: object) -> None:
        """Every input, before the replica handles it (attacks keep what they can reuse)."""

    def authentic(self, signed: Signed) -> bool:
        """Would an honest replica believe ``signed``?  (What a strategy may reuse.)"""
        try:
            return self.replica.keyring.verify(signed) and signer_matches(signed, self.n)
        except (ValueError, TypeError):  # a message without a canonical encoding
            return False

    def on_timeout(self) -> Output:
        return self.transform(self.replica.on_timeout())

    def retransmit(self) -> Output:
        return self.transform(self.replica.retransmit())

    def transform(self, out: Output) -> Output:
        return out

    def sign(self, message: Any) -> Signed:
        return self.replica.signer.sign(message)

    def __repr__(self) -> str:
        return self.name


class Silent(Strategy):
    """Crashed or mute: receives everything, sends nothing."""

    name = "silent"

    def transform(self, out: Output) -> Output:
        return Output()


class EquivocatingPrimary(Strategy):
    """As primary, sends different pre-prepares for one sequence number to different
    backups (and both to one of them); honest otherwise."""

    name = "equivocate"
    refused_as = ("conflicting",)

    def transform(self, out: Output) -> Output:
        res = Output(executed=out.executed)
        for s in out.sends:
            m = s.payload.message if isinstance(s.payload, Signed) else None
            if s.dest == BROADCAST and isinstance(m, PrePrepare):
                res.sends.extend(self._split(m, s.payload))  # type: ignore[arg-type]
            else:
                res.sends.append(s)
        return res

    def _split(self, pp: PrePrepare, original: Signed) -> list[Send]:
        other = self._other_request(pp.digest)
        alt = self.sign(PrePrepare(pp.view, pp.seq, request_digest(other), other, pp.replica))
        backups = self.others()
        self.rng.shuffle(backups)
        half = len(backups) // 2
        sends = [Send(b, original) for b in backups[:half]]
        sends += [Send(b, alt) for b in backups[half:]]
        both = backups[0]
        sends.append(Send(both, alt))
        return sends

    def _other_request(self, digest: str) -> Signed | None:
        """Another client-signed request it has seen (a real one: it cannot forge), else
        the null request."""
        pool = [r for d, r in self.replica.pending.items() if d != digest]
        pool += [r for r in self.replica.history if r is not None and request_digest(r) != digest]
        return self.rng.choice(pool) if pool else None


class ConflictingVoter(Strategy):
    """Stays reachable but votes for conflicting digests: each prepare/commit goes to half
    of the replicas as is and to the others for another digest; it also commits before
    it has prepared, and its view-change messages hide its prepared certificates."""

    name = "conflict"
    refused_as = ("conflicting",)

    def transform(self, out: Output) -> Output:
        res = Output(executed=out.executed)
        r = self.replica
        for s in out.sends:
            m = s.payload.message if isinstance(s.payload, Signed) else None
            if s.dest == BROADCAST and isinstance(m, Prepare | Commit):
                fake = _digest(self.rng)
                others = self.others()
                self.rng.shuffle(others)
                half = len(others) // 2
                res.sends += [Send(d, s.payload) for d in others[:half]]
                cls = type(m)
                bad = self.sign(cls(m.view, m.seq, fake, r.id))
                res.sends += [Send(d, bad) for d in others[half:]]
                if isinstance(m, Prepare):  # commit without being prepared
                    res.sends.append(
                        Send(BROADCAST, self.sign(Commit(m.view, m.seq, m.digest, r.id)))
                    )
            elif s.dest == BROADCAST and isinstance(m, ViewChange):
                lie = ViewChange(m.new_view, m.last_stable_seq, m.checkpoint_proof, (), r.id)
                res.sends.append(Send(BROADCAST, self.sign(lie)))
            else:
                res.sends.append(s)
        return res


class Delayed(Strategy):
    """Honest content, sent late: every message gets up to ``max_delay`` extra ticks."""

    name = "delay"

    def __init__(self, max_delay: int = 50) -> None:
        super().__init__()
        self.max_delay = max_delay

    def transform(self, out: Output) -> Output:
        return Output(
            [
                Send(s.dest, s.payload, s.delay + self.rng.randint(1, self.max_delay))
                for s in out.sends
            ],
            out.executed,
        )


class Garbage(Strategy):
    """Honest, plus noise on every input: random bytes, malformed JSON, messages that
    claim another replica's or a client's identity (their signatures cannot verify) and
    tampered pre-prepares under its own name."""

    name = "garbage"
    refused_as = ("malformed", "forged")

    def transform(self, out: Output) -> Output:
        res = Output(list(out.sends), out.executed)
        r = self.replica
        rng = self.rng
        target = rng.choice(self.others())
        kind = rng.randrange(5)
        if kind == 0:
            res.sends.append(Send(target, rng.randbytes(rng.randint(0, 64))))
        elif kind == 1:
            res.sends.append(Send(target, b'{"type":"Signed","message":{"type":"Prepare"}}'))
        elif kind == 2:  # a vote in another replica's name, signed with its own key
            victim = rng.choice([i for i in range(self.n) if i != r.id])
            fake = self.sign(Prepare(r.view, r.last_exec + 1, _digest(rng), victim))
            res.sends.append(
                Send(target, Signed(fake.message, replica_name(victim), fake.signature))
            )
        elif kind == 3:  # a request no client sent, in a client's name
            req = Request("c0", 10**6 + rng.randrange(10**6), {"op": "forged", "by": r.id})
            fake = self.sign(req)
            forged = Signed(req, "c0", fake.signature)
            res.sends.append(Send(replica_name(r.primary()), forged))
        else:  # a pre-prepare whose digest is not its request's
            pp = PrePrepare(r.view, r.last_exec + 1, _digest(rng), None, r.id)
            res.sends.append(Send(target, self.sign(pp)))
        return res


# --- the adversary suite: attacks on PBFT's own machinery ---------------------------------


def _msg(payload: object) -> AnyMessage | None:
    return payload.message if isinstance(payload, Signed) else None


def _seen_requests(replica: Replica, extra: list[Signed] | None = None) -> list[Signed]:
    """Client-signed requests the replica has seen (real ones: a strategy cannot forge)."""
    pool = list(replica.pending.values())
    pool += [r for r in replica.history if r is not None]
    pool += extra or []
    return pool


def _other_request(
    replica: Replica, rng: random.Random, digest: str | None, extra: list[Signed] | None = None
) -> Signed | None:
    """A seen request whose digest is not ``digest``, else the null request (None)."""
    pool = [r for r in _seen_requests(replica, extra) if request_digest(r) != digest]
    return rng.choice(pool) if pool else None


class CheckpointLiar(Strategy):
    """Lies about the state in CHECKPOINTs, three ways, and answers state fetches with lies.

    * **ahead**: before its replica gets there, it signs CHECKPOINTs with wrong state
      digests for every checkpoint sequence number in the window above its last
      execution, and sends them to its victims (a fixed half of the others), so that its
      vote for those numbers is a lie before its genuine vote exists; then a second,
      different lie for each, contradicting the first;
    * **split**: each genuine CHECKPOINT of its replica goes to the non-victims as is; the
      victims get a lie for the same number and then the genuine vote, contradicting
      itself (its genuine vote also reaches them relayed in the others' stable proofs);
    * **out of window**: CHECKPOINTs far above the victims' high watermark, which make a
      victim ask the liar for state (FETCH-STATE); the liar answers with a STATE-TRANSFER
      of null requests under a genuine stable proof, or under a "proof" of its own lie.

    Defeated by: a checkpoint is stable only with ``q`` matching signed votes (one liar
    cannot make a false one stable, nor keep a true one from it: a sender's second vote
    replaces its first only when it completes a certificate, else it is ``conflicting``); a
    CHECKPOINT above the window is ``out_of_window`` and only triggers one FETCH-STATE per
    sender per retransmission period; a STATE-TRANSFER is installed only if its requests
    chain to a digest ``q`` replicas signed (``bad_state_transfer``, ``tampered``; or
    ``stale`` when the victim has executed more by the time the lie arrives, which is
    why only ``out_of_window`` is certain).
    Probes BFT-LIVE-1 (the victims still reach stable checkpoints and catch up) and
    BFT-SAFE-2 (no state but the certified one is ever installed).
    """

    name = "checkpoint-lie"
    refused_as = ("out_of_window", "conflicting")

    def __init__(self) -> None:
        super().__init__()
        self.victims: list[str] = []
        self.lied_ahead: set[int] = set()
        self.far_for = -1  # the stable checkpoint its last out-of-window lies were above

    def attach(self, replica: Replica, rng: random.Random, n: int) -> None:
        super().attach(replica, rng, n)
        others = self.others()
        self.rng.shuffle(others)
        self.victims = sorted(others[: (len(others) + 1) // 2])

    def _lie(self, seq: int, variant: int = 0) -> Signed:
        """A false vote for ``seq`` (the same each time for one ``variant``)."""
        wrong = hashlib.sha256(f"lie|{self.replica.id}|{seq}|{variant}".encode()).hexdigest()
        return self.sign(Checkpoint(seq, wrong, self.replica.id))

    def on_message(self, payload: object) -> Output:
        m = _msg(payload)
        if (
            isinstance(m, FetchState)
            and isinstance(payload, Signed)
            and self.authentic(payload)
            and m.replica != self.replica.id
        ):
            # the out-of-window lie worked: a victim asks the liar for the log
            return Output([Send(replica_name(m.replica), self._false_transfer(m))])
        return super().on_message(payload)

    def _false_transfer(self, fetch: FetchState) -> Signed:
        r = self.replica
        if r.stable_seq > fetch.after_seq and r.stable_proof and self.rng.random() < 0.5:
            # a genuine proof, a false log: null requests cannot chain to its digest
            length = r.stable_seq - fetch.after_seq
            st = StateTransfer(
                fetch.after_seq, (None,) * length, _digest(self.rng), r.stable_proof, r.id
            )
        else:
            seq = fetch.after_seq + r.checkpoint_k
            lie = self._lie(seq)
            st = StateTransfer(
                fetch.after_seq,
                (None,) * r.checkpoint_k,
                _digest(self.rng),
                (lie,),  # one signature where q are needed
                r.id,
            )
        return self.sign(st)

    def transform(self, out: Output) -> Output:
        r = self.replica
        res = Output(executed=out.executed)
        for s in out.sends:
            m = _msg(s.payload)
            if s.dest == BROADCAST and isinstance(m, Checkpoint) and m.replica == r.id:
                res.sends += [Send(d, s.payload) for d in self.others() if d not in self.victims]
                for d in self.victims:
                    res.sends += [Send(d, self._lie(m.seq)), Send(d, s.payload)]
            else:
                res.sends.append(s)
        k = r.checkpoint_k
        self.lied_ahead = {s for s in self.lied_ahead if s > r.stable_seq}
        first = (r.last_exec // k + 1) * k
        for seq in range(first, r.stable_seq + r.window + 1, k):
            if seq not in self.lied_ahead:
                self.lied_ahead.add(seq)
                for d in self.victims:
                    res.sends += [Send(d, self._lie(seq)), Send(d, self._lie(seq, 1))]
        if self.far_for != r.stable_seq:
            self.far_for = r.stable_seq
            far = (r.stable_seq + r.window) // k * k + k
            res.sends += [Send(d, self._lie(far)) for d in self.victims]
        return res

    def retransmit(self) -> Output:
        self.far_for = -1  # a new period: the victims may fetch from it again
        return super().retransmit()


#: Ways to fabricate a prepared certificate, each refused by one check of ``_valid_cert``.
FAKE_CERTIFICATES: tuple[str, ...] = (
    "relabelled",
    "too-few",
    "other-digest",
    "not-primary",
    "future-view",
    "out-of-window",
)


class FakeCertificates(Strategy):
    """VIEW-CHANGEs whose P carries prepared certificates it cannot have.

    Before each of its replica's VIEW-CHANGEs (once per view) it sends one VIEW-CHANGE per
    kind of fabrication (``FAKE_CERTIFICATES``), each with its genuine certificates and one
    fake that claims a request (another one it has seen, or the null request) at the
    sequence number of its highest genuine certificate:

    * ``relabelled``: prepares it signed itself, re-labelled as other backups' votes;
    * ``too-few``: a genuine certificate with one prepare fewer than ``2f``;
    * ``other-digest``: a genuine pre-prepare with genuine prepares of another (view, seq,
      digest), or with its own prepare for another digest in place of one;
    * ``not-primary``: a pre-prepare it signed for a view whose primary it is not;
    * ``future-view``: a certificate of the new view itself (not below it);
    * ``out-of-window``: a genuine certificate it kept from below its stable checkpoint
      (or, if it has none, one above the window).

    Then its genuine VIEW-CHANGE, so that the view change can still complete.  It does not
    wait for its replica to change view (a Byzantine replica may send VIEW-CHANGEs at
    will): at its first input, timer or retransmission, and at the first in each later
    view, it sends the fakes for the next view, and when another replica's VIEW-CHANGE for
    a later view arrives, the fakes for that view.  Defeated
    by ``Replica._valid_view_change``: every certificate must hold the view's primary's
    signed pre-prepare and ``2f`` matching prepares signed by distinct backups, from a view
    below the new one and inside the window, or the whole message is ``bad_view_change``.
    Probes BFT-SAFE-1: an accepted fake would make the new primary's O re-propose a
    request no quorum prepared.
    """

    name = "fake-certificate"
    refused_as = ("bad_view_change",)

    def __init__(self) -> None:
        super().__init__()
        self.pre_prepares: dict[tuple[int, int], Signed] = {}
        self.prepares: dict[tuple[int, int, str], dict[int, Signed]] = {}
        self.certs: dict[tuple[int, int], PreparedCert] = {}  # every one it ever held
        self.lied_for: set[int] = set()

    def observe(self, payload: object) -> None:
        m = _msg(payload)
        if not isinstance(payload, Signed) or not isinstance(m, PrePrepare | Prepare):
            return
        if not self.authentic(payload):
            return
        if isinstance(m, PrePrepare):
            if m.replica == m.view % self.n:
                _bounded_put(self.pre_prepares, (m.view, m.seq), payload)
        else:
            votes = self.prepares.setdefault((m.view, m.seq, m.digest), {})
            votes.setdefault(m.replica, payload)
            _bounded_trim(self.prepares)

    def transform(self, out: Output) -> Output:
        r = self.replica
        for cert in r.prepared_certs.values():
            pp = cert.pre_prepare.message
            assert isinstance(pp, PrePrepare)
            _bounded_put(self.certs, (pp.view, pp.seq), cert)
        res = Output(executed=out.executed)
        for s in out.sends:
            m = _msg(s.payload)
            if isinstance(m, ViewChange) and m.replica == r.id and m.new_view not in self.lied_for:
                self.lied_for.add(m.new_view)
                self.lied_for = {v for v in self.lied_for if v >= m.new_view - 2}
                for kind in FAKE_CERTIFICATES:
                    res.sends.append(Send(s.dest, self.sign(self.fake_view_change(m, kind))))
            res.sends.append(s)
        return res

    def on_message(self, payload: object) -> Output:
        out = super().on_message(payload)
        r = self.replica
        m = _msg(payload)
        if isinstance(m, ViewChange) and m.replica != r.id and m.new_view > 0:
            self._lie_for(out, max(m.new_view, r.view))
        return self._lie_for(out, r.view + 1 if r.active else r.view)

    def on_timeout(self) -> Output:
        out = super().on_timeout()
        r = self.replica
        return self._lie_for(out, r.view + 1 if r.active else r.view)

    def retransmit(self) -> Output:
        out = super().retransmit()
        r = self.replica
        return self._lie_for(out, r.view + 1 if r.active else r.view)

    def _lie_for(self, out: Output, view: int) -> Output:
        """The fakes for ``view`` (once per view), before anything else it sends for it."""
        r = self.replica
        if view in self.lied_for or (view <= r.view and r.active):
            return out
        self.lied_for.add(view)
        self.lied_for = {v for v in self.lied_for if v >= view - 2}
        certs = tuple(c for s, c in sorted(r.prepared_certs.items()) if s > r.stable_seq)
        base = ViewChange(view, r.stable_seq, r.stable_proof, certs, r.id)
        fakes = [
            Send(BROADCAST, self.sign(self.fake_view_change(base, kind)))
            for kind in FAKE_CERTIFICATES
        ]
        out.sends[:0] = fakes
        return out

    def fake_view_change(self, vc: ViewChange, kind: str) -> ViewChange:
        """``vc`` with one fabricated certificate of ``kind`` in its P."""
        fake = self.fake_certificate(vc, kind)
        fpp = fake.pre_prepare.message
        assert isinstance(fpp, PrePrepare)
        keep = tuple(c for c in vc.prepared if _cert_seq(c) != fpp.seq)
        prepared = tuple(sorted((*keep, fake), key=_cert_seq))
        return dataclasses.replace(vc, prepared=prepared)

    def fake_certificate(self, vc: ViewChange, kind: str) -> PreparedCert:
        r, n, f = self.replica, self.n, self.replica.f
        new_view, low = vc.new_view, vc.last_stable_seq
        seq = max((_cert_seq(c) for c in vc.prepared), default=low + 1)
        at_seq = [c for c in vc.prepared if _cert_seq(c) == seq]
        held = at_seq[0].pre_prepare.message if at_seq else None
        extra = [
            pp.message.request
            for pp in self.pre_prepares.values()
            if isinstance(pp.message, PrePrepare) and pp.message.request is not None
        ]
        req = _other_request(
            r, self.rng, held.digest if isinstance(held, PrePrepare) else None, extra
        )
        digest = request_digest(req)
        view = max(new_view - 1, 0)  # the view the fake claims to be prepared in
        genuine = sorted(self.certs.items())

        def own_pp(v: int, s: int, primary: int) -> Signed:
            """A pre-prepare it signs: authentic only if it is ``primary``."""
            signed = self.sign(PrePrepare(v, s, digest, req, primary))
            return Signed(signed.message, replica_name(primary), signed.signature)

        def relabelled(v: int, s: int, d: str) -> tuple[Signed, ...]:
            """2f prepares it signed itself, each re-labelled as another backup's."""
            backups = [j for j in range(n) if j != v % n][: 2 * f]
            own = [(j, self.sign(Prepare(v, s, d, j))) for j in backups]
            return tuple(Signed(p.message, replica_name(j), p.signature) for j, p in own)

        if kind == "relabelled":
            return PreparedCert(own_pp(view, seq, view % n), relabelled(view, seq, digest))
        if kind == "too-few":
            if genuine:
                cert = genuine[-1][1]
                return PreparedCert(cert.pre_prepare, cert.prepares[: 2 * f - 1])
            return PreparedCert(own_pp(view, seq, view % n), relabelled(view, seq, digest)[:0])
        if kind == "other-digest":
            for (v, s), cert in reversed(genuine):
                others = [
                    tuple(votes.values())
                    for (pv, ps, _pd), votes in self.prepares.items()
                    if (pv, ps) != (v, s) and len(votes) >= 2 * f
                ]
                if others:
                    return PreparedCert(cert.pre_prepare, others[-1][: 2 * f])
                other = self.sign(Prepare(v, s, _digest(self.rng), r.id))
                return PreparedCert(cert.pre_prepare, (other, *cert.prepares[1:]))
            return PreparedCert(
                own_pp(view, seq, view % n), relabelled(view, seq, _digest(self.rng))
            )
        if kind == "not-primary":
            v = next((w for w in range(view, -1, -1) if w % n != r.id), view)
            return PreparedCert(
                self.sign(PrePrepare(v, seq, digest, req, r.id)), relabelled(v, seq, digest)
            )
        if kind == "future-view":
            return PreparedCert(
                own_pp(new_view, seq, new_view % n), relabelled(new_view, seq, digest)
            )
        assert kind == "out-of-window", kind
        below = [c for (_v, s), c in genuine if s <= low]
        if below:
            return below[-1]
        far = low + r.window + 1
        return PreparedCert(own_pp(view, far, view % n), relabelled(view, far, digest))


class NewViewLiar(Strategy):
    """As the primary of a new view, sends a NEW-VIEW whose O is not the one V implies.

    Its replica computes the genuine O (per sequence number the request of the
    highest-view prepared certificate in V, else the null request); the liar replaces one
    re-proposed request by the null request or by another request it has seen, or omits
    it; if O re-proposes nothing, it adds a request.  Every NEW-VIEW its replica sends
    (the broadcast, retransmissions, answers to late VIEW-CHANGEs) is replaced by the same
    lie, signed by itself as the primary.  Defeated by ``Replica._on_new_view``: backups
    recompute O from V and refuse a NEW-VIEW whose O differs (``bad_new_view``); they then
    hold 2f+1 VIEW-CHANGEs for the view, so their timers run and the view change moves on
    to the next primary (with a doubled timeout).  Probes BFT-SAFE-1 (a committed request
    survives the view change) and BFT-LIVE-1 (a lying new primary is replaced).
    Placement: it must be the primary of a view that is installed (replica 1 for view 1).
    It pushes for that view: in the view before, it withholds its PREPAREs and COMMITs (so
    that any loss or crash among the honest stalls that view) and, on its first input or
    timer there, sends its VIEW-CHANGE for its own view, so that a single honest replica
    timing out completes the f+1 the others need to join, together with a premature
    NEW-VIEW whose V is that one VIEW-CHANGE: refused too (``bad_new_view``: V must hold
    2f+1).  A full view change into its view is rare in the general stateful test, so
    ``test_consensus_attacks.py`` runs it in place (``AttackMachine``, where it lies about
    O in most examples) and refuses each lie about O on its own.
    """

    name = "bad-new-view"
    refused_as = ("bad_new_view",)

    def __init__(self, how: str | None = None) -> None:
        super().__init__()
        self.how = how  # one of NEW_VIEW_LIES, or None: chosen at random per NEW-VIEW
        self.pushed: set[int] = set()  # views it asked for (it would be their primary)
        self.lies: dict[bytes, Signed] = {}  # by the genuine NEW-VIEW's signature

    def transform(self, out: Output) -> Output:
        r = self.replica
        res = Output(executed=out.executed)
        for s in out.sends:
            m = _msg(s.payload)
            if isinstance(m, Prepare | Commit) and r.primary(m.view + 1) == r.id:
                continue  # it wants the view before its own to stall
            if isinstance(m, NewView) and m.replica == self.replica.id:
                assert isinstance(s.payload, Signed)
                lie = self.lies.get(s.payload.signature)
                if lie is None:
                    lie = self.sign(self.lie(m, self.how))
                    self.lies = {s.payload.signature: lie}  # only the latest is re-sent
                res.sends.append(Send(s.dest, lie, s.delay))
            else:
                res.sends.append(s)
        return res

    def on_message(self, payload: object) -> Output:
        return self._push(super().on_message(payload))

    def on_timeout(self) -> Output:
        return self._push(super().on_timeout())

    def _push(self, out: Output) -> Output:
        """Ask for the next view if it would be its primary (once per view)."""
        r = self.replica
        nxt = r.view + 1
        if r.active and r.primary(nxt) == r.id and nxt not in self.pushed:
            self.pushed.add(nxt)
            certs = tuple(c for s, c in sorted(r.prepared_certs.items()) if s > r.stable_seq)
            vc = ViewChange(nxt, r.stable_seq, r.stable_proof, certs, r.id)
            signed = self.sign(vc)
            o = tuple(self.sign(pp) for pp in r.compute_o([vc], nxt))
            premature = self.sign(NewView(nxt, (signed,), o, r.id))
            out.sends += [Send(BROADCAST, signed), Send(BROADCAST, premature)]
        return out

    def lie(self, nv: NewView, how: str | None = None) -> NewView:
        """``nv`` with O changed ``how`` (one of ``NEW_VIEW_LIES``; default: at random).

        ``null``, ``other`` and ``omit`` act on a re-proposed request (a non-null entry of
        O, i.e. the request of a highest-view certificate); without one, every lie is
        ``add``: a request O does not contain."""
        me, v = self.replica.id, nv.view
        o = list(nv.pre_prepares)
        pps = [s.message for s in o]
        chosen = [
            k for k, pp in enumerate(pps) if isinstance(pp, PrePrepare) and pp.digest != NULL_DIGEST
        ]
        if how is None:
            how = self.rng.choice(NEW_VIEW_LIES[:3])
        if chosen and how != "add":
            k = self.rng.choice(chosen)
            pp = pps[k]
            assert isinstance(pp, PrePrepare)
            other = _other_request(self.replica, self.rng, pp.digest)
            if how == "omit":
                del o[k]
            elif how == "other" and other is not None:  # another request in its place
                o[k] = self.sign(PrePrepare(v, pp.seq, request_digest(other), other, me))
            else:  # the null request in its place
                o[k] = self.sign(PrePrepare(v, pp.seq, NULL_DIGEST, None, me))
        else:
            low = max(
                (
                    vc.message.last_stable_seq
                    for vc in nv.view_changes
                    if isinstance(vc.message, ViewChange)
                ),
                default=0,
            )
            high = max((pp.seq for pp in pps if isinstance(pp, PrePrepare)), default=low)
            other = _other_request(self.replica, self.rng, None)
            o.append(self.sign(PrePrepare(v, high + 1, request_digest(other), other, me)))
        return NewView(v, nv.view_changes, tuple(o), me)


#: How a lying new primary changes O (``NewViewLiar.lie``): a re-proposed request replaced
#: by the null request or by another request, or omitted; or a request added.
NEW_VIEW_LIES: tuple[str, ...] = ("null", "other", "omit", "add")


#: The kinds of old-view traffic a replayer keeps (BFT-SAFE-1: none may count again).
_REPLAYABLE = (PrePrepare, Prepare, Commit, ViewChange, NewView, Checkpoint)


class Replayer(Strategy):
    """Re-sends, in later views, signed messages of earlier views: its own and the ones it
    received (PRE-PREPAREs, PREPAREs, COMMITs, VIEW-CHANGEs, NEW-VIEWs; CHECKPOINTs below
    its stable checkpoint).  After every input it replays up to two of them, chosen at
    random, each to one other replica; otherwise honest.

    Defeated by: the view (or sequence number) is inside the signature, so a replayed
    message cannot be re-labelled into the current view; normal-case messages of a view
    the receiver has left are ``stale_view`` (a COMMIT of such a view may still prove a
    decision, which is true whenever it was sent); VIEW-CHANGEs and NEW-VIEWs of installed
    views are ``stale_view`` (a stale VIEW-CHANGE is answered with the last NEW-VIEW, at
    most once per sender per retransmission period); CHECKPOINTs at or below the stable
    checkpoint are ``stale_view``; a message already held is ``replayed``.  Probes
    BFT-SAFE-1 (old votes never join a quorum of a later view) and BFT-LIVE-1 (replays
    force no view change and no unbounded answers).
    """

    name = "replay"
    refused_as = ("stale_view",)

    def __init__(self) -> None:
        super().__init__()
        self.log: deque[Signed] = deque(maxlen=256)
        self.keys: set[tuple[str, str]] = set()

    def _keep(self, signed: Signed) -> None:
        if not isinstance(signed.message, _REPLAYABLE):
            return
        key = (signed.sender, signed.message.msg_digest)
        if key in self.keys:
            return
        if len(self.log) == self.log.maxlen:
            old = self.log[0]
            self.keys.discard((old.sender, old.message.msg_digest))
        self.log.append(signed)
        self.keys.add(key)

    def observe(self, payload: object) -> None:
        if isinstance(payload, Signed) and self.authentic(payload):
            self._keep(payload)

    def _old(self, m: AnyMessage) -> bool:
        r = self.replica
        if isinstance(m, PrePrepare | Prepare | Commit | NewView):
            return m.view < r.view
        if isinstance(m, ViewChange):
            return m.new_view < r.view or (m.new_view == r.view and r.active)
        if isinstance(m, Checkpoint):
            return m.seq <= r.stable_seq
        return False

    def transform(self, out: Output) -> Output:
        for s in out.sends:
            if isinstance(s.payload, Signed):
                self._keep(s.payload)
        res = Output(list(out.sends), out.executed)
        old = [s for s in self.log if self._old(s.message)]
        for signed in self.rng.sample(old, min(2, len(old))):
            res.sends.append(Send(self.rng.choice(self.others()), signed))
        return res


class Tamperer(Strategy):
    """Changes fields of the messages it sends or relays, keeping the original signature.

    * Each signed message its replica sends (its own, and the ones it relays: client
      requests, other replicas' checkpoints and VIEW-CHANGEs, NEW-VIEWs) is preceded by a
      tampered copy: one field (view, seq, digest, replica, the client's request or
      operation, a proof) changed under the signature it had;
    * its own messages that carry other principals' signatures (a PRE-PREPARE's request, a
      VIEW-CHANGE's proofs, a NEW-VIEW's V and O, a STATE-TRANSFER's requests) are also
      tampered *inside*: the nested part is changed under its kept signature and the
      outer message re-signed.  As primary that is a PRE-PREPARE whose request is not the
      one its digest names;
    * after every input it relays a tampered copy of a message it received: half of the
      time as a message, half of the time as its wire bytes with one byte changed.

    Defeated by: every signature covers the canonical encoding of the whole message, so a
    changed field is ``forged`` (a changed byte that breaks the encoding is ``malformed``);
    a PRE-PREPARE's digest must be its request's
    (``tampered``), and every nested signature is checked where it is used
    (``bad_view_change``, ``bad_new_view``, ``forged`` requests in a STATE-TRANSFER).
    Probes BFT-SAFE-1 and BFT-SAFE-2 (only requests clients signed, in the order the
    primary signed).
    """

    name = "tamper"
    refused_as = ("forged",)

    def __init__(self) -> None:
        super().__init__()
        self.received: deque[Signed] = deque(maxlen=64)

    def observe(self, payload: object) -> None:
        if isinstance(payload, Signed) and not isinstance(payload.message, Request):
            self.received.append(payload)

    def transform(self, out: Output) -> Output:
        me = replica_name(self.replica.id)
        res = Output(executed=out.executed)
        for s in out.sends:
            if isinstance(s.payload, Signed) and _is_replica_dest(s.dest):
                inner = (
                    _tamper_inner(s.payload.message, self.rng) if s.payload.sender == me else None
                )
                if inner is not None and self.rng.random() < 0.5:
                    res.sends.append(Send(s.dest, self.sign(inner)))
                else:
                    res.sends.append(Send(s.dest, _kept_signature(s.payload, self.rng)))
            res.sends.append(s)
        if self.received:
            relayed = self.rng.choice(self.received)
            dest = self.rng.choice(self.others())
            if self.rng.random() < 0.5:
                res.sends.append(Send(dest, _kept_signature(relayed, self.rng)))
            else:  # on the wire: one byte of the encoding changed
                wire = bytearray(relayed.encoded)
                k = self.rng.randrange(len(wire))
                wire[k] = (wire[k] + self.rng.randint(1, 255)) % 256
                res.sends.append(Send(dest, bytes(wire)))
        return res


def _is_replica_dest(dest: str) -> bool:
    return dest == BROADCAST or (dest.startswith("r") and dest[1:].isdigit())


def _kept_signature(signed: Signed, rng: random.Random) -> Signed:
    """``signed`` with one field of its message changed and the signature it had."""
    return Signed(_tamper_field(signed.message, rng), signed.sender, signed.signature)


def _tamper_field(m: Any, rng: random.Random) -> Any:
    """A copy of message ``m`` with one field changed (recursively for nested parts)."""
    fields = [
        fld.name
        for fld in dataclasses.fields(m)
        if getattr(m, fld.name) is not None and getattr(m, fld.name) != ()
    ]
    name = rng.choice(fields)
    value = getattr(m, name)
    if isinstance(value, bool):
        new: Any = not value
    elif isinstance(value, int):
        new = value + rng.randint(1, 3)
    elif isinstance(value, str):
        new = _digest(rng) if len(value) == 64 else value + "x"
    elif isinstance(value, dict):
        new = {**value, "tampered": rng.randrange(10**6)}
    elif isinstance(value, Signed):
        new = _kept_signature(value, rng)
    elif isinstance(value, PreparedCert):
        new = _tamper_field(value, rng)
    else:
        assert isinstance(value, tuple), (name, value)
        k = rng.randrange(len(value))
        item = value[k]
        changed = (
            _kept_signature(item, rng) if isinstance(item, Signed) else _tamper_field(item, rng)
        )
        new = (*value[:k], changed, *value[k + 1 :])
    return dataclasses.replace(m, **{name: new})


def _tamper_inner(m: AnyMessage, rng: random.Random) -> AnyMessage | None:
    """``m`` with a nested signed part changed under its kept signature (the outer message
    is then re-signed by the tamperer); None if ``m`` has no nested signed part."""
    if isinstance(m, PrePrepare) and m.request is not None:
        # the same digest, another operation under the client's signature: `tampered`
        return dataclasses.replace(m, request=_kept_signature(m.request, rng))
    if isinstance(m, ViewChange) and (m.checkpoint_proof or m.prepared):
        if m.prepared and (not m.checkpoint_proof or rng.random() < 0.5):
            k = rng.randrange(len(m.prepared))
            certs = m.prepared
            cert = _tamper_field(certs[k], rng)  # a prepare or the pre-prepare inside
            return dataclasses.replace(m, prepared=(*certs[:k], cert, *certs[k + 1 :]))
        k = rng.randrange(len(m.checkpoint_proof))
        proof = m.checkpoint_proof
        vote = _kept_signature(proof[k], rng)
        return dataclasses.replace(m, checkpoint_proof=(*proof[:k], vote, *proof[k + 1 :]))
    if isinstance(m, NewView) and m.view_changes:
        k = rng.randrange(len(m.view_changes))
        vcs = m.view_changes
        return dataclasses.replace(
            m, view_changes=(*vcs[:k], _kept_signature(vcs[k], rng), *vcs[k + 1 :])
        )
    if isinstance(m, StateTransfer) and any(r is not None for r in m.requests):
        k = next(i for i, r in enumerate(m.requests) if r is not None)
        req = m.requests[k]
        assert req is not None
        reqs = (*m.requests[:k], _kept_signature(req, rng), *m.requests[k + 1 :])
        return dataclasses.replace(m, requests=reqs)
    return None


class ViewChangeFlood(Strategy):
    """VIEW-CHANGEs for ever higher views, one more after every input it handles.

    Each is a valid VIEW-CHANGE (its replica's stable checkpoint and prepared
    certificates) for a view 1 to 3 above the last one it flooded, so each is believed,
    and goes to the next replica in turn (each receiver gets a steady stream; a broadcast
    per input would only multiply the simulation's traffic by N-1).
    It wants to force needless view changes and to fill the receivers' memory with
    VIEW-CHANGEs for views nobody else wants.  Defeated by the two rules of
    ``Replica._on_view_change``: a replica keeps at most one VIEW-CHANGE per sender for
    views above its own, the highest (a lower one, or the one it replaces, is
    ``superseded``), and it joins a later view only when f+1 senders want one, choosing
    the smallest: alone the flooder moves nobody, and with an honest replica that timed
    out it only adds the one vote any Byzantine replica could add.  Probes BFT-LIVE-1
    (no view change is forced, memory stays bounded) and BFT-SAFE-1 (its VIEW-CHANGEs
    are genuine, so they may be used).
    """

    name = "view-change-flood"
    refused_as = ("superseded",)

    def __init__(self) -> None:
        super().__init__()
        self.flooded = 0  # the highest view it has asked for
        self.sent = 0  # flooded VIEW-CHANGEs so far (the next receiver in turn)

    def transform(self, out: Output) -> Output:
        r = self.replica
        self.flooded = max(self.flooded, r.view) + self.rng.randint(1, 3)
        certs = tuple(c for s, c in sorted(r.prepared_certs.items()) if s > r.stable_seq)
        vc = ViewChange(self.flooded, r.stable_seq, r.stable_proof, certs, r.id)
        others = self.others()
        dest = others[self.sent % len(others)]
        self.sent += 1
        return Output([*out.sends, Send(dest, self.sign(vc))], out.executed)


# --- measuring an attack: who caused which refusal ----------------------------------------


class RejectionLedger:
    """Every refusal at an honest replica, counted by the sender of the envelope that
    caused it (the network's source, not the name a message claims: a forged or replayed
    message is the attacker's doing).

    It wraps ``sim.deliver``, the one entry point of every delivery (the schedulers and
    the property tests' adversary all use it), and diffs the receiver's ``rejected``
    counter around it.  ``caused(name)`` is the attack's effect.
    """

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.by_source: dict[str, Counter[str]] = {}
        self._honest = {replica_name(i): i for i in sim.honest}
        self._deliver = sim.deliver
        sim.deliver = self._deliver_and_count  # type: ignore[method-assign]

    def _deliver_and_count(self, index: int) -> Envelope:
        env = self.sim.network.queue[index]
        i = self._honest.get(env.dst)
        if i is None:
            return self._deliver(index)
        rejected = self.sim.replicas[i].rejected
        before = Counter(rejected)
        delivered = self._deliver(index)
        if rejected != before:
            self.by_source.setdefault(env.src, Counter()).update(rejected - before)
        return delivered

    def caused(self, source: str) -> Counter[str]:
        return self.by_source.get(source, Counter())

    def reset(self) -> None:
        self.by_source = {}


# --- the control: beyond f ----------------------------------------------------------------


class DoubleVoter(Strategy):
    """Control only, never with at most f (not in ``STRATEGIES``): votes for whatever each
    replica votes for.  Its replica's own PREPAREs and COMMITs are dropped; instead, when
    a replica's PREPARE for (v, n, d) arrives, it sends that replica its own PREPARE (as a
    backup) and COMMIT for exactly (v, n, d).  With an equivocating primary that colludes
    (``EquivocatingColluder``) this completes two certificates for one sequence number:
    at N = 4 that is f+1 = 2 Byzantine replicas, beyond PBFT's assumption, and BFT-SAFE-1
    fails, which is what the control must show.
    """

    name = "double-voter"

    def __init__(self) -> None:
        super().__init__()
        self.voted: set[tuple[str, int, int, str]] = set()

    def on_message(self, payload: object) -> Output:
        out = super().on_message(payload)
        m = _msg(payload)
        r = self.replica
        if (
            isinstance(m, Prepare)
            and isinstance(payload, Signed)
            and m.replica != r.id
            and self.authentic(payload)
        ):
            dest = replica_name(m.replica)
            if (dest, m.view, m.seq, m.digest) not in self.voted:
                self.voted.add((dest, m.view, m.seq, m.digest))
                if r.primary(m.view) != r.id:
                    out.sends.append(Send(dest, self.sign(Prepare(m.view, m.seq, m.digest, r.id))))
                out.sends.append(Send(dest, self.sign(Commit(m.view, m.seq, m.digest, r.id))))
        return out

    def transform(self, out: Output) -> Output:
        keep = [
            s
            for s in out.sends
            if not (isinstance(_msg(s.payload), Prepare | Commit) and s.dest == BROADCAST)
        ]
        return Output(keep, out.executed)


class EquivocatingColluder(DoubleVoter):
    """Control only (not in ``STRATEGIES``): a primary that holds its PRE-PREPAREs until it
    knows two requests, then proposes one to the lower half of the backups and the other
    to the upper half at the same sequence number, and (as ``DoubleVoter``) commits to
    each backup whatever that backup prepared."""

    name = "equivocating-colluder"

    def __init__(self) -> None:
        super().__init__()
        self.held: list[PrePrepare] = []

    def transform(self, out: Output) -> Output:
        res = super().transform(out)
        rest: list[Send] = []
        for s in res.sends:
            m = _msg(s.payload)
            if s.dest == BROADCAST and isinstance(m, PrePrepare):
                self.held.append(m)
            else:
                rest.append(s)
        res.sends = rest
        requests = list(self.replica.pending.values())
        if len(requests) < 2:
            return res
        backups = sorted(self.others(), key=lambda name: int(name[1:]))
        half = len(backups) // 2  # N = 4: replica 1 | replicas 2 and 3
        for pp in self.held:
            other = next(q for q in requests if request_digest(q) != pp.digest)
            alt = PrePrepare(pp.view, pp.seq, request_digest(other), other, pp.replica)
            res.sends += [Send(b, self.sign(pp)) for b in backups[:half]]
            res.sends += [Send(b, self.sign(alt)) for b in backups[half:]]
        self.held = []
        return res


class LeavesOneOut(Strategy):
    """A primary that is honest except that its PRE-PREPAREs (and their retransmissions)
    go to every backup but one.  The other backups and the primary prepare and commit
    (2f+1), the client gets f+1 replies; the left-out backup holds the prepares and the
    commits but no pre-prepare, and it has no pending request, so no timer runs and
    nobody wants a view change.  Found by the adversary suite: before the fix it executed
    the requests only when a later checkpoint became stable and it fetched the state.
    Defeated by the relay of accepted PRE-PREPAREs in ``Replica.retransmit``.  Probes
    BFT-LIVE-1 (test_consensus_attacks.py, "a finding, fixed")."""

    name = "leaves-one-out"

    def __init__(self, left_out: int | None = None) -> None:
        super().__init__()
        self.left_out = left_out  # None: the highest-numbered backup

    def transform(self, out: Output) -> Output:
        others = self.others()
        victim = others[-1] if self.left_out is None else replica_name(self.left_out)
        res = Output(executed=out.executed)
        for s in out.sends:
            if s.dest == BROADCAST and isinstance(_msg(s.payload), PrePrepare):
                res.sends += [Send(d, s.payload) for d in others if d != victim]
            else:
                res.sends.append(s)
        return res


def _cert_seq(cert: PreparedCert) -> int:
    pp = cert.pre_prepare.message
    assert isinstance(pp, PrePrepare)
    return pp.seq


_MEMORY = 64  # how many messages of each kind a strategy keeps


def _bounded_put(table: dict[Any, Any], key: Any, value: Any) -> None:
    table.pop(key, None)
    table[key] = value
    _bounded_trim(table)


def _bounded_trim(table: dict[Any, Any]) -> None:
    while len(table) > _MEMORY:
        del table[next(iter(table))]


def _digest(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(16)).hexdigest()


#: Every Byzantine strategy, by the name a test or ``ostrom cluster up --byzantine`` uses.
STRATEGIES: dict[str, type[Strategy]] = {
    s.name: s
    for s in (
        Silent,
        EquivocatingPrimary,
        ConflictingVoter,
        Delayed,
        Garbage,
        # the adversary suite (docs/consensus.md, "The adversary suite")
        CheckpointLiar,
        FakeCertificates,
        NewViewLiar,
        Replayer,
        Tamperer,
        ViewChangeFlood,
        LeavesOneOut,
    )
}
"""Every strategy a run may give to at most ``f`` replicas (the stateful test samples it;
``consensus-demo --attack`` runs each).  The control strategies are not here."""
