"""The ``pbft`` layer of the conformance suite: one PBFT replica behind the driver protocol.

A vector drives a single replica (``setup.id``) of an ``n = 3f+1`` system.  Every input the
network, the clients or the timer could give it is a command; every output is an event:

* commands: ``{"op": "request", "message": T}`` (a client's signed request),
  ``{"op": "message", "message": T}`` (any message from the network), ``{"op": "timeout"}``
  (the view-change timer expired) and ``{"op": "retransmit"}`` (re-send own messages);
  ``T`` is the wire tree of a ``Signed`` envelope (``messages.Signed.tree``);
* events: ``reject`` (one per refused input, with the reason the replica counts), then
  ``execute`` (in execution order), then ``send`` (sorted by the canonical bytes of the
  event, since messages sent in one step leave together and the network may reorder them);
* state: ``PBFTLayer.state`` below.

The replicated application is ``replica.CounterApp`` (digest chain of the canonical
operations, result ``{"n": <executions so far>}``), and keys are derived from
``setup.key_seed`` exactly as in ``crypto.derive_key``.  docs/conformance.md, section
"The pbft layer", is the normative description, precise enough to match byte for byte.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from ostrom.conformance.layer import Observation
from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import (
    Malformed,
    Request,
    Signed,
    canonical,
    replica_name,
    request_digest,
    signed_from_tree,
)
from ostrom.consensus.principals import DEFAULT_BASE_TIMEOUT, DEFAULT_CLIENTS, principals
from ostrom.consensus.replica import CounterApp, Executed, Output, Replica, Send
from ostrom.protocol.params import ParamError, Params

__all__ = [
    "DEFAULT_BASE_TIMEOUT",
    "DEFAULT_CLIENTS",
    "PBFTLayer",
    "ReplicaClass",
    "command_for",
    "execute_event",
    "principals",
    "send_event",
]

#: What builds the replica under test (``Replica`` or a mutant subclass).
ReplicaClass = type[Replica]

_SETUP_KEYS: Final = frozenset({"n", "f", "id", "key_seed", "clients", "base_timeout"})
#: The most principals (replicas, then clients) a setup may name.  A key is derived for
#: each at reset, so without a bound one reset line (``"n": 1000000000``) stalls the
#: driver for hours instead of getting an error.
MAX_PRINCIPALS: Final = 1024


def send_event(send: Send) -> dict[str, Any]:
    """The observation of one outgoing message (``dest`` ``"*"``: every other replica)."""
    if not isinstance(send.payload, Signed):  # only Byzantine wrappers send raw bytes
        raise TypeError("an honest replica sends only signed messages")
    return {"event": "send", "dest": send.dest, "message": send.payload.tree()}


def execute_event(ex: Executed) -> dict[str, Any]:
    """The observation of one executed sequence number (null request: the null digest)."""
    return {
        "event": "execute",
        "seq": ex.seq,
        "digest": request_digest(ex.request),
        "result": ex.result,
    }


def command_for(payload: Signed) -> dict[str, Any]:
    """The command that delivers ``payload`` to the replica (``request`` for a client's)."""
    op = "request" if isinstance(payload.message, Request) else "message"
    return {"op": op, "message": payload.tree()}


def _nat(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


class PBFTLayer:
    """One ``Replica`` (or a mutant of it) as a conformance layer."""

    name = "pbft"

    def __init__(self, replica_cls: ReplicaClass = Replica) -> None:
        self.replica_cls = replica_cls
        self._replica: Replica | None = None

    # --- reset ---------------------------------------------------------------------------

    def reset(self, params: Mapping[str, Any], setup: Mapping[str, Any]) -> None:
        """A fresh replica; raises ``ValueError`` for a setup or params it cannot build."""
        try:
            p = Params.from_mapping(params)
        except ParamError as exc:
            raise ValueError(f"bad params: {exc}") from exc
        unknown = sorted(set(setup) - _SETUP_KEYS)
        if unknown:
            raise ValueError(f"unknown setup key(s): {', '.join(unknown)}")
        n, f, rid, seed = (setup.get(k) for k in ("n", "f", "id", "key_seed"))
        if not (_nat(n) and _nat(f) and _nat(rid) and _nat(seed)):
            raise ValueError("setup needs natural numbers n, f, id and key_seed")
        assert isinstance(n, int) and isinstance(f, int) and isinstance(rid, int)
        assert isinstance(seed, int)
        if n > MAX_PRINCIPALS:
            raise ValueError(f"setup.n {n} is above {MAX_PRINCIPALS} principals")
        clients = setup.get("clients", list(DEFAULT_CLIENTS))
        if (
            not isinstance(clients, list)
            or not all(isinstance(c, str) and c for c in clients)
            or len(set(clients)) != len(clients)
            or set(clients) & set(principals(n, []))
        ):
            raise ValueError("setup.clients must be a list of distinct names, not r<i>")
        if n + len(clients) > MAX_PRINCIPALS:
            raise ValueError(f"setup names more than {MAX_PRINCIPALS} principals")
        base_timeout = setup.get("base_timeout", DEFAULT_BASE_TIMEOUT)
        if not _nat(base_timeout) or base_timeout == 0:
            raise ValueError("setup.base_timeout must be a positive integer")
        keyring, signers = make_keys(seed, principals(n, clients))
        if not 0 <= rid < n:
            raise ValueError(f"setup.id {rid} not in 0..{n - 1}")
        self._replica = self.replica_cls(
            rid,
            n,
            f,
            keyring,
            signers[replica_name(rid)],
            app=CounterApp(),
            checkpoint_k=p.checkpoint_k,
            watermark_window=p.watermark_window,
            base_timeout=base_timeout,
        )

    @property
    def replica(self) -> Replica:
        if self._replica is None:
            raise RuntimeError("reset first")
        return self._replica

    # --- step ----------------------------------------------------------------------------

    def step(self, command: Mapping[str, Any]) -> Observation:
        """Apply one command; a command that is not well-formed changes nothing."""
        r = self.replica
        op = command.get("op") if isinstance(command, Mapping) else None
        before = Counter(r.rejected)
        if op in ("request", "message") and set(command) == {"op", "message"}:
            tree = command["message"]
            if not isinstance(tree, dict):
                return self._refuse()
            if op == "request":
                inner = tree.get("message")
                if not isinstance(inner, dict) or inner.get("type") != "Request":
                    return self._refuse()
            try:
                payload: object = signed_from_tree(tree)
            except (Malformed, RecursionError, TypeError):
                payload = tree  # not a well-typed envelope: the replica counts it malformed
            out = r.on_message(payload)
        elif op == "timeout" and set(command) == {"op"}:
            out = r.on_timeout()
        elif op == "retransmit" and set(command) == {"op"}:
            out = r.retransmit()
        else:
            return self._refuse()
        return {"result": "ok", "events": self._events(before, out), "state": self.state()}

    def _refuse(self) -> Observation:
        return {"result": "invalid_input", "events": [], "state": self.state()}

    def _events(self, before: Counter[str], out: Output) -> list[dict[str, Any]]:
        rejected = self.replica.rejected - before
        events: list[dict[str, Any]] = [
            {"event": "reject", "reason": reason}
            for reason in sorted(rejected)
            for _ in range(rejected[reason])
        ]
        events += [execute_event(ex) for ex in out.executed]
        events += sorted((send_event(s) for s in out.sends), key=canonical)
        return events

    # --- state ---------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The normative public state of the replica (no keys, no message logs)."""
        r = self.replica
        return {
            "view": r.view,
            "active": r.active,
            "primary": r.primary(),
            "last_exec": r.last_exec,
            "exec_chain": r.chain,
            "app_digest": r.app.digest(),
            "stable_seq": r.stable_seq,
            "stable_digest": r.stable_digest,
            "low": r.stable_seq,
            "high": r.stable_seq + r.window,
            "pending": len(r.pending),
            "timer": r.waiting,
            "timeout": r.timeout_duration(),
        }
