"""Byzantine behaviours: strategies that wrap an honest ``Replica``.

A strategy sees everything its replica sees and rewrites what it sends.  It holds only
its own replica's ``Signer``: it can sign anything *as itself*, and a message it
attributes to anyone else carries a signature that does not verify (DESIGN §6).  That is
the whole adversary of PBFT, so the strategies cover the behaviours the seed-paper review
asks about (co-forgetting-review.md): silence, an equivocating primary, conflicting votes
from a replica that stays reachable, delays, and garbage.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from ostrom.consensus.messages import (
    Commit,
    Prepare,
    PrePrepare,
    Request,
    Signed,
    ViewChange,
    replica_name,
    request_digest,
)
from ostrom.consensus.replica import BROADCAST, Output, Replica, Send


class Strategy:
    """Honest behaviour; subclasses override ``transform`` (or the entry points)."""

    name = "honest"

    def __init__(self) -> None:
        self.replica: Replica
        self.rng = random.Random(0)
        self.n = 0

    def attach(self, replica: Replica, rng: random.Random, n: int) -> None:
        self.replica, self.rng, self.n = replica, rng, n

    def others(self) -> list[str]:
        return [replica_name(i) for i in range(self.n) if i != self.replica.id]

    def on_message(self, payload: object) -> Output:
        return self.transform(self.replica.on_message(payload))

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


def _digest(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(16)).hexdigest()


STRATEGIES: dict[str, type[Strategy]] = {
    s.name: s for s in (Silent, EquivocatingPrimary, ConflictingVoter, Delayed, Garbage)
}
