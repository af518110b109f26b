"""A small signed world shared by the service tests: founders with keys, an operator,
and helpers that sign commands for them (keys derived from a seed: reproducible)."""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ostrom.consensus.crypto import derive_key
from ostrom.protocol import voting
from ostrom.protocol.community import Member
from ostrom.protocol.params import Params
from ostrom.service.gate import Founder, Setup
from ostrom.service.identity import public_hex, sign_envelope

SEED = b"service-tests"
FOUNDERS = ("f1", "f2", "f3", "f4", "f5")
OPERATOR = "op"
SECRET_REASON = "SECRET-REASON-d41d8cd9"
SALT = "ab" * 32


def key(principal: str) -> Ed25519PrivateKey:
    return derive_key(SEED, principal)


def setup() -> Setup:
    founders = tuple(
        Founder(Member(f, tier=3, reputation=0.95, evidence=40.0), public_hex(key(f)))
        for f in FOUNDERS
    )
    return Setup(founders, {OPERATOR: public_hex(key(OPERATOR))})


PARAMS = Params()


class Signer:
    """Signs each principal's commands with its next seq (what a client does)."""

    def __init__(self) -> None:
        self.seq: dict[str, int] = {}

    def env(self, sender: str, command: dict[str, Any], join: bool = False) -> dict[str, Any]:
        n = self.seq.get(sender, 0) + 1
        self.seq[sender] = n
        pk = public_hex(key(sender)) if join else None
        return sign_envelope(key(sender), sender, n, command, pk)


def commitment(agent: str, artifact: str, rnd: int, vote: str) -> str:
    return voting.commitment(agent, artifact, rnd, vote, SECRET_REASON, SALT)
