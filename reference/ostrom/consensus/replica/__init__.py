"""A PBFT replica (Castro & Liskov, OSDI'99 / TOCS 2002), sans-IO and deterministic.

``Replica`` is a state machine: ``on_request``, ``on_message`` and ``on_timeout`` (and
``retransmit``) take an input and return an ``Output`` — the signed messages to send and
the requests executed — without touching a network, a clock or an entropy source.  The
cluster's replica process (``ostrom.cluster.replica_process``) puts sockets, timers and a
store around it; the test harness's simulated network and Byzantine wrappers
(``ostrom.harness``) drive the same object.

What is PBFT here, and what the seed paper's Algorithm 1 lacks (docs/design.md §6):

* **normal case** (``normal.py``) — the primary of view ``v`` (replica ``v mod n``)
  assigns sequence numbers with PRE-PREPARE; *prepared* = the pre-prepare plus ``q-1``
  matching PREPAREs from distinct backups (``2f`` when ``n = 3f+1``); *committed-local* =
  prepared plus ``q`` matching COMMITs; requests execute in sequence order, each exactly
  once per client timestamp, and the result goes back to the client;
* **checkpoints** (``checkpoints.py``) every ``checkpoint_k`` executions, stable with
  ``q`` matching signed CHECKPOINTs; the message log below the stable checkpoint is
  garbage collected and the watermarks ``h < n <= h + watermark_window`` bound what is
  accepted;
* **view change** (``view_change.py``) — on timeout a replica stops accepting messages
  of its view and sends VIEW-CHANGE with its stable-checkpoint proof and its prepared
  certificates; the new primary, with ``q`` of them, computes O (per sequence number the
  request of the highest-view certificate, else a null request) and sends NEW-VIEW;
  backups recompute O and refuse a NEW-VIEW that differs.  Timeouts double per
  consecutive view change;
* **authentication** (``entry_points.py``) — every message is Ed25519-signed
  (``crypto.py``); forged, tampered, replayed, out-of-window and stale-view messages are
  refused and counted in ``rejected`` by reason.

Quorum: ``q = ceil((n+f+1)/2)``, which is ``2f+1`` when ``n = 3f+1`` (BFT-QUORUM-1).

Two things a textbook omits are explicit here because a simulation with message loss
needs them: ``retransmit`` re-sends this replica's own signed messages of the current
view (PBFT assumes retransmission until delivery), and a replica behind a stable
checkpoint fetches the certified request log (``FetchState``/``StateTransfer``, in
chunks of at most a frame) and replays it after checking its hash chain against the
checkpoint digest.  A request above ``max_request`` is refused (``too_large``) and a
reply above the frame carries its result's digest, so that no message this replica
sends exceeds the frame (``messages.message_bounds``).

Each handler names its TLA+ action (``# spec/PBFT.tla: Name``); what PBFT.tla abstracts
(checkpoints, state transfer) is named in the code-level ``spec/PBFTReplica.tla``.

The package has one module per section of spec/PBFTReplica.tla, each a mixin over the
shared state, composed as ``class Replica(NormalCase, Checkpoints, ViewChanges, Durable,
ReplicaBase)``:

* ``base.py`` — ``ReplicaBase``: every attribute with its type (the spec's initial
  state), the parameters (``primary``, ``_in_window``, ``_late``, ``timeout_duration``)
  and the outputs (``_reject``, ``_send``);
* ``normal.py`` — ``NormalCase``; ``checkpoints.py`` — ``Checkpoints`` (and state
  transfer); ``view_change.py`` — ``ViewChanges``;
* ``entry_points.py`` — ``Replica``: ``on_message``, ``on_timeout``, ``retransmit``;
* ``durable.py`` — ``DurableState`` and ``Durable``: what a replica keeps across a crash
  and how it restarts (the spec's crash and restart);
* ``helpers.py`` (quorum, digests, signers), ``app.py`` (``App``, ``CounterApp``) and
  ``outputs.py`` (``Send``, ``Executed``, ``Output``).

Import from the package (``from ostrom.consensus.replica import Replica``): the modules
are its layout, the names below its interface.
"""

from __future__ import annotations

from ostrom.consensus.replica.app import App, CounterApp
from ostrom.consensus.replica.durable import DurableState, InvalidDurableState, ReplayMismatch
from ostrom.consensus.replica.entry_points import Replica
from ostrom.consensus.replica.helpers import (
    GENESIS_CHAIN,
    Key3,
    chain_step,
    quorum,
    signer_matches,
    state_digest,
)
from ostrom.consensus.replica.outputs import BROADCAST, RETRY_LATER, Executed, Output, Send

__all__ = [
    "BROADCAST",
    "GENESIS_CHAIN",
    "RETRY_LATER",
    "App",
    "CounterApp",
    "DurableState",
    "Executed",
    "InvalidDurableState",
    "Key3",
    "Output",
    "ReplayMismatch",
    "Replica",
    "Send",
    "chain_step",
    "quorum",
    "signer_matches",
    "state_digest",
]
