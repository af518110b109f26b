"""What the front of a cluster refuses before it signs anything: envelopes nobody signed.

The front signs every command it orders as its own PBFT client, and every replica
orders, persists and keeps it in its history before the gate (service/gate.py) looks at
it.  An envelope that the gate will refuse for its *sender* (not an envelope, unsigned,
a signature that is not the sender's key's, an unknown sender, an impersonation, an
operator command from a non-operator) would cost the whole cluster an ordering, a
durable write on every replica and a place in the history that state transfer and view
changes carry: for free, since nobody had to sign it (docs/security.md, "the cluster's
front").  ``screen`` answers those refusals at the front, with the code and status the
gate gives (``GATE_ERRORS``: one name per refusal), and nothing is sent.

It mirrors ``Gate.admit`` up to and including the signature check, in the same order,
so an envelope the front refuses is one the gate refuses with the same code (what
test_cluster_screen checks against a real ``Gate`` on generated envelopes).  What the
gate checks after the signature (the sequence number, the payload) is left to the
replicas: only a signed envelope reaches them, so whatever it costs is charged to a
key.

The one thing the front does not hold is the state: an agent's registered key.  The
front asks the replicas for it (``Front.registered_key``); ``screen`` is sans-IO and says
which agent it needs (``Lookup``) when the caller's ``registered`` map does not say.  The
signature itself is ``identity.verify_envelope``, the node's one function: whatever bytes
it signs, the front checks the same ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ostrom.service.gate import IDENTITY_OPS, OPERATOR_OPS
from ostrom.service.identity import envelope_shape, is_public_key, verify_envelope

__all__ = ["SCREENED", "Lookup", "Refusal", "screen"]

#: The gate's codes the front may answer (each one ``GATE_ERRORS`` names).
SCREENED: Final = frozenset(
    {
        "malformed",
        "unsigned",
        "bad_signature",
        "unknown_agent",
        "impersonation",
        "not_operator",
        "key_retired",
    }
)


@dataclass(frozen=True)
class Refusal:
    """The gate's refusal of the envelope (``code`` in ``SCREENED``): answered, not sent."""

    code: str
    detail: str


@dataclass(frozen=True)
class Lookup:
    """The registered key of ``agent`` is needed to decide (the caller asks the replicas
    and calls ``screen`` again with it in ``registered``)."""

    agent: str


def screen(
    envelope: Any,
    community: str,
    operators: Mapping[str, str],
    registered: Mapping[str, str | None],
    retired: Mapping[str, Sequence[str]] | None = None,
) -> Refusal | Lookup | None:
    """None if ``envelope`` is signed by its sender's key (the front orders it), else
    the gate's refusal, or the agent whose registered key decides (``Lookup``).

    ``community``: the cluster's community id (ENV-1: what the signature covers);
    ``operators``: the community's operator ids and keys (its founders file);
    ``registered``: the registered key of agents already looked up (None: not joined);
    ``retired``: the keys they rotated away from (KEY-1: an envelope signed by one is
    refused ``key_retired``, but a revoke_key, which any key the agent held may sign,
    KEY-2, goes to the gate).  Never raises."""
    shape = envelope_shape(envelope)  # the gate's own first check, the same function
    if shape is not None:
        return Refusal(*shape)
    assert isinstance(envelope, dict)
    agent, command = envelope["agent"], envelope["command"]
    op = command.get("op")
    if isinstance(op, str) and op in OPERATOR_OPS:
        key = operators.get(agent)
        if key is None:
            return Refusal("not_operator", f"{op} is an operator command")
    elif isinstance(op, str) and op in IDENTITY_OPS and agent in operators:
        key = operators[agent]  # an operator rotates or revokes any agent's key
    else:
        if command.get("agent") != agent:
            return Refusal("impersonation", "the command's agent is not the envelope's")
        if agent in operators:
            return Refusal("impersonation", "an operator id is not an agent")
        own = envelope.get("public_key")
        if op == "join" and is_public_key(own) and verify_envelope(envelope, str(own), community):
            # signed by the key it registers: a signed envelope, whoever holds the key;
            # whether that agent already has another key is the gate's to say
            return None
        if agent not in registered:
            return Lookup(agent)
        key = registered[agent]
        if key is None and op == "join":
            if not is_public_key(own):
                return Refusal("malformed", "a join carries public_key (64 hex digits)")
            key = str(own)
        if key is None:
            return Refusal("unknown_agent", f"{agent!r} has not joined")
    if not verify_envelope(envelope, key, community):  # ENV-1
        old = (retired or {}).get(agent, ())
        if agent not in operators and any(verify_envelope(envelope, k, community) for k in old):
            if op == "revoke_key":
                return None  # KEY-2: any key the agent held may revoke it
            return Refusal("key_retired", "signed by a retired key of the agent")  # KEY-1
        return Refusal("bad_signature", "the signature does not verify")
    return None
