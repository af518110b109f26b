"""What every section of the replica computes the same way: the quorum size (the spec's
``Q``), the hash chain and state digest a checkpoint certifies, and who may sign what.

spec/PBFTReplica.tla keeps these in its preamble and its section "parameters", and
abstracts the digests (a state digest there *is* the history it certifies: ``SDOf``).
They are pure functions of their arguments, kept apart from the sections so that every
section, and the durable-state checks, can use them without importing one another.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from ostrom.consensus.messages import PreparedCert, Request, Signed, replica_name, sha256_hex

__all__ = ["GENESIS_CHAIN", "Key3", "chain_step", "quorum", "signer_matches", "state_digest"]

GENESIS_CHAIN: Final = sha256_hex(b"ostrom-pbft-genesis")


def quorum(n: int, f: int) -> int:
    """``ceil((n+f+1)/2)``: any two quorums share ``f+1`` replicas (BFT-QUORUM-1)."""
    return (n + f + 2) // 2


def chain_step(chain: str, digest: str) -> str:
    """The hash chain of executed request digests (what a checkpoint certifies)."""
    return sha256_hex((chain + digest).encode())


def state_digest(chain: str, app_digest: str) -> str:
    return sha256_hex((chain + app_digest).encode())


Key3 = tuple[int, int, str]  # (view, seq, digest)


def signer_matches(signed: Signed, n: int) -> bool:
    """The signer is who the message says it is: a request's client (not a replica name),
    a replica's message its replica ``r<i>`` with ``0 <= i < n``; a prepared certificate is
    never sent on its own.  The signature itself is checked separately."""
    m = signed.message
    if isinstance(m, Request):
        return signed.sender == m.client and not _is_replica_name(m.client, n)
    if isinstance(m, PreparedCert):
        return False
    return 0 <= m.replica < n and signed.sender == replica_name(m.replica)


def _is_replica_name(name: str, n: int) -> bool:
    """``r`` then a decimal number below ``n`` (``r3``, also ``r03``): never a client's name.

    Digit by digit, not ``int(name[1:])``: a client's name is a principal's choice, and
    ``int`` raises on digits ``isdigit`` accepts (``r²``) and on more than 4300 of them,
    which made an authentic request raise out of the handlers that check it (inside a
    PRE-PREPARE, a prepared certificate, a STATE-TRANSFER).  ``isdecimal`` is exactly the
    set of digits ``int`` reads, so every name ``int`` could read is classified as before.
    """
    digits = name[1:]
    if not (name.startswith("r") and digits.isdecimal()):
        return False
    value = 0
    for c in digits:
        value = value * 10 + unicodedata.decimal(c)
        if value >= n:
            return False
    return True
