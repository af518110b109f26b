"""The refusal budget: how often one address, or one key, may be refused (ADM-2).

A refused command costs its sender nothing and the node a parse, a signature check and,
for a refusal the Community gives, a row in the log.  Without a bound one client could
make the node do that work for ever: before this budget, 300 refused 50 KiB joins grew a
node's database by 17.5 MB.  So refusals are counted against token buckets — ``burst``
at once, refilled at ``rate`` a second — and a sender whose bucket is empty is answered
429 ``too_many_refusals`` before the gate sees its command: nothing checked, applied or
logged.  An honest client, refused rarely, never notices.

Whose bucket (``senders``), so that nobody can spend another's budget:

* a command from a *registered* principal (the gate knows the agent's key) is charged to
  that principal only, and only for refusals its own signature vouches for
  (``SIGNED_REFUSALS``, or a command the Community refused: a logged row).  A forgery in
  its name fails the signature and is charged to the forger's address; so neither an
  attacker behind the same proxy nor one that knows the agent's name can silence it;
* anything else — a join from a new key, a name nobody registered, bytes that are not
  an envelope — is charged to the connection's *address* (and a join to its key too):
  fresh keys are free to make, the address is what a flood of them shares.  Behind a
  proxy every client has the proxy's address: new agents then share one budget for
  their refusals (docs/security.md), registered ones keep their own.

The buckets are bounded in number (``max_senders``: the least recently charged is
forgotten first, and starts full again if it comes back).  Sans-IO: the caller passes the
time (``time.monotonic()`` in the app).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "DEFAULT_BURST",
    "DEFAULT_RATE",
    "MAX_SENDERS",
    "SIGNED_REFUSALS",
    "RefusalBudget",
    "is_refusal",
    "senders",
]

#: Refusals one sender may have at once (``--refusal-burst``).
DEFAULT_BURST: Final = 32
#: Refusals per second a sender's budget refills by (``--refusal-rate``).
DEFAULT_RATE: Final = 1.0
#: Senders tracked at most (each bucket is two floats).
MAX_SENDERS: Final = 1 << 16
#: The gate's refusals that come only after the envelope's signature verified (the order
#: of ``Gate.admit``: shape, sender, signature, seq, payload; ``join_refused`` after the
#: Community): the only ones charged to a registered principal.
SIGNED_REFUSALS: Final = frozenset(
    {
        "replayed",
        "out_of_order",
        "content_too_large",
        "bad_content",
        "bad_embedding",
        "embedding_dimension",
        "embeddings_off",
        "digest_mismatch",
        "join_refused",
        "key_reused",  # a rotate_key signed by the agent's current key (or an operator's)
        "oversized_refusal",  # after the Community applied it (ROW-1)
    }
)


def senders(envelope: Any, address: str, registered: bool) -> tuple[str, ...]:
    """The buckets a command from ``address`` is checked against and charged to:
    ``registered`` (the gate knows the envelope's agent's key) — the agent's own;
    otherwise the address's, and a join's key's."""
    agent = envelope.get("agent") if isinstance(envelope, dict) else None
    if registered and isinstance(agent, str):
        return ("agent:" + agent,)
    pk = envelope.get("public_key") if isinstance(envelope, dict) else None
    if isinstance(pk, str) and len(pk) == 64:
        return ("addr:" + address, "key:" + pk)
    return ("addr:" + address,)


def is_refusal(status: int, body: dict[str, Any], registered: bool) -> bool:
    """Whether an answer counts against the command's senders: a 4xx (for a registered
    principal, one of ``SIGNED_REFUSALS`` only), or a command the Community refused."""
    if 400 <= status < 500:
        return not registered or body.get("error") in SIGNED_REFUSALS
    return status == 200 and body.get("result") not in ("ok", None)


@dataclass
class RefusalBudget:
    """Token buckets of refusals, one per sender (an address, a key or an agent)."""

    burst: int = DEFAULT_BURST
    rate: float = DEFAULT_RATE
    max_senders: int = MAX_SENDERS
    _buckets: OrderedDict[str, tuple[float, float]] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        if self.burst < 1 or not self.rate > 0 or self.max_senders < 1:
            raise ValueError("a refusal budget needs burst >= 1, rate > 0, max_senders >= 1")

    def _level(self, sender: str, now: float) -> float:
        """The refusals ``sender`` may still have at ``now`` (refilled since last time)."""
        got = self._buckets.get(sender)
        if got is None:
            return float(self.burst)
        tokens, then = got
        return min(float(self.burst), tokens + max(0.0, now - then) * self.rate)

    def wait(self, senders: tuple[str, ...], now: float) -> float:
        """Seconds until every one of ``senders`` may be refused again (0: now); the
        caller answers 429 ``too_many_refusals`` while it is above 0."""
        worst = 0.0
        for s in senders:
            level = self._level(s, now)
            if level < 1:
                worst = max(worst, (1 - level) / self.rate)
        return worst

    def charge(self, senders: tuple[str, ...], now: float) -> None:
        """One refusal of each of ``senders`` at ``now``."""
        for s in senders:
            self._buckets[s] = (self._level(s, now) - 1, now)
            self._buckets.move_to_end(s)
            while len(self._buckets) > self.max_senders:
                self._buckets.popitem(last=False)
