"""A PBFT client: one outstanding request, accepted on ``f+1`` matching signed replies.

``f+1`` matching replies from distinct replicas include at least one from an honest
replica, so the result is one the service really produced (PBFT §4.1).  The client sends
to the primary it believes in; when its timer expires it broadcasts to every replica,
which is what makes backups notice a silent primary and start a view change.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ostrom.consensus.crypto import KeyRing, Signer
from ostrom.consensus.messages import (
    Malformed,
    Reply,
    Request,
    Signed,
    canonical,
    decode,
    replica_name,
)
from ostrom.consensus.replica import BROADCAST, Output, Send

__all__ = ["Client"]


class Client:
    """Sans-IO client; ``request``/``on_reply``/``on_timeout`` return an ``Output``."""

    def __init__(self, name: str, signer: Signer, keyring: KeyRing, n: int, f: int) -> None:
        if signer.principal != name:
            raise ValueError("a client signs only as itself")
        self.name, self.signer, self.keyring = name, signer, keyring
        self.n, self.f = n, f
        self.view = 0
        self.timestamp = 0
        self.outstanding: Signed | None = None
        self.replies: dict[int, bytes] = {}
        self.results: list[tuple[int, dict[str, Any]]] = []
        self.sent: list[Signed] = []  # every request this client signed (BFT-SAFE-2)
        self.rejected: Counter[str] = Counter()

    @property
    def busy(self) -> bool:
        return self.outstanding is not None

    def request(self, operation: dict[str, Any]) -> Output:
        """Sign and send a new request to the primary (one outstanding at a time)."""
        if self.outstanding is not None:
            raise RuntimeError(f"{self.name} already has an outstanding request")
        self.timestamp += 1
        signed = self.signer.sign(Request(self.name, self.timestamp, operation))
        self.outstanding, self.replies = signed, {}
        self.sent.append(signed)
        return Output([Send(replica_name(self.view % self.n), signed)])

    def on_timeout(self) -> Output:
        """No result in time: broadcast the request to every replica."""
        if self.outstanding is None:
            return Output()
        return Output([Send(BROADCAST, self.outstanding)])

    def on_reply(self, payload: object) -> Output:
        if isinstance(payload, bytes):
            try:
                payload = decode(payload)
            except Malformed:
                self.rejected["malformed"] += 1
                return Output()
        if not isinstance(payload, Signed) or not isinstance(payload.message, Reply):
            self.rejected["malformed"] += 1
            return Output()
        r = payload.message
        try:
            authentic = self.keyring.verify(payload)
        except (ValueError, TypeError, RecursionError):
            # an in-process envelope whose reply has no canonical encoding (a lone
            # surrogate, a value JSON cannot carry): the wire decoder refuses the same,
            # and so does the replica (Replica.on_message)
            self.rejected["malformed"] += 1
            return Output()
        if not authentic or payload.sender != replica_name(r.replica):
            self.rejected["forged"] += 1
            return Output()
        req = self.outstanding
        if req is None or not isinstance(req.message, Request):
            self.rejected["replayed"] += 1
            return Output()
        if r.client != self.name or r.timestamp != req.message.timestamp:
            self.rejected["stale"] += 1
            return Output()
        if r.replica in self.replies:
            self.rejected["replayed"] += 1
            return Output()
        self.replies[r.replica] = canonical(r.result)
        votes = Counter(self.replies.values())
        if votes[self.replies[r.replica]] >= self.f + 1:
            self.results.append((r.timestamp, r.result))
            self.view = max(self.view, r.view)
            self.outstanding, self.replies = None, {}
        return Output()
