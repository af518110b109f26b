"""PBFT (Castro & Liskov) for the replicated orchestrator (docs/design.md §6), sans-IO: the
replica core a cluster runs.

* ``messages`` — the protocol messages, their canonical encoding and digests;
* ``crypto`` — Ed25519 signing and verification; ``principals`` — who may send what;
* ``replica`` — the PBFT replica state machine, a package with one module per section of
  spec/PBFTReplica.tla (normal case, checkpoints and state transfer, view change, entry
  points, durable state);
* ``storage`` — the replica's durable state in SQLite (write before send);
* ``client`` — a client accepting a result on ``f+1`` matching replies;
* ``application`` — the deterministic core each replica applies its committed log to.

The simulated network, the Byzantine strategies and Algorithm 1 that test it are the
harness's (``ostrom.harness``), not the product's.
"""
