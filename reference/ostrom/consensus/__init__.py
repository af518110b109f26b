"""PBFT (Castro & Liskov) for the replicated orchestrator (docs/design.md §6), sans-IO.

* ``messages`` — the protocol messages, their canonical encoding and digests;
* ``crypto`` — Ed25519 signing and verification, keys derived from a seed;
* ``replica`` — the PBFT replica state machine (normal case, checkpoints, view change);
* ``client`` — a client accepting a result on ``f+1`` matching replies;
* ``network`` — a deterministic simulated network with fault injection, and its driver;
* ``byzantine`` — Byzantine strategies wrapping a replica;
* ``replicated`` — orchestrator commands ordered by PBFT and applied at every replica.
"""
