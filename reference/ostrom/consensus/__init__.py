"""PBFT (Castro & Liskov) for the replicated orchestrator (docs/design.md §6), sans-IO: the
replica core a cluster runs.

* ``messages`` — the protocol messages, their canonical encoding and digests;
* ``crypto`` — Ed25519 signing and verification; ``principals`` — who may send what;
* ``replica`` — the PBFT replica state machine, a package with one module per section of
  spec/PBFTReplica.tla (normal case, checkpoints and state transfer, view change, entry
  points, durable state);
* ``storage`` — the replica's durable state in SQLite (write before send);
* ``congestion`` — the rules that bound retransmission by what the network carries (the
  observed delay, back-off, a per-link budget, adaptive view-change timers);
* ``client`` — a client accepting a result on ``f+1`` matching replies;
* ``application`` — the deterministic core each replica applies its committed log to.

The API, re-exported here: ``Replica`` and ``DurableReplica`` (with its store's
locations and errors), what a replica returns (``Output``, ``Send``, ``Executed``), the
applications (``App``, ``OrchestratorApp``), the messages and their encoding, the keys
(``KeyRing``, ``Signer``, ``make_keys``) and the ``Client``.  The names are imported
eagerly — every module here is plain Python over the standard library and the signature
library a replica needs anyway — but for the store's, which load on first use (PEP 562):
``python -m ostrom.consensus.storage`` (the store check) would otherwise find its module
already imported by this package and run it twice (runpy's RuntimeWarning).

The simulated network, the Byzantine strategies and Algorithm 1 that test it are the
harness's (``ostrom.harness``), not the product's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ostrom.consensus.application import OrchestratorApp
from ostrom.consensus.client import Client
from ostrom.consensus.crypto import KeyRing, Signer, make_keys
from ostrom.consensus.messages import (
    AnyMessage,
    Checkpoint,
    Commit,
    FetchState,
    Malformed,
    NewView,
    Prepare,
    PrePrepare,
    Reply,
    Request,
    Signed,
    StateTransfer,
    ViewChange,
    decode,
    encode,
)
from ostrom.consensus.replica import App, CounterApp, Executed, Output, Replica, Send, quorum

if TYPE_CHECKING:
    from ostrom.consensus.storage import (
        DurableReplica,
        FileLocation,
        MemoryLocation,
        StoreError,
        StoreMissing,
    )

#: The store's names, imported on first use (see above).
_STORAGE = frozenset(
    {"DurableReplica", "FileLocation", "MemoryLocation", "StoreError", "StoreMissing"}
)

__all__ = [
    "AnyMessage",
    "App",
    "Checkpoint",
    "Client",
    "Commit",
    "CounterApp",
    "DurableReplica",
    "Executed",
    "FetchState",
    "FileLocation",
    "KeyRing",
    "Malformed",
    "MemoryLocation",
    "NewView",
    "OrchestratorApp",
    "Output",
    "PrePrepare",
    "Prepare",
    "Replica",
    "Reply",
    "Request",
    "Send",
    "Signed",
    "Signer",
    "StateTransfer",
    "StoreError",
    "StoreMissing",
    "ViewChange",
    "decode",
    "encode",
    "make_keys",
    "quorum",
]


def __getattr__(name: str) -> Any:
    if name in _STORAGE:
        return getattr(importlib.import_module("ostrom.consensus.storage"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
