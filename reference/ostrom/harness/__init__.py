"""The consensus test harness: what drives the PBFT replica core in tests, benchmarks and
the demo, none of which a deployment runs.

* ``network`` — a deterministic simulated network with fault injection (loss,
  duplication, reordering, delay, partitions, crash-restarts) and its driver;
* ``byzantine`` — Byzantine strategies wrapping an honest replica, and the ledger of what
  they cause; ``byzantine_node`` — one of them as a cluster's replica process;
* ``replicated`` — orchestrator commands ordered by simulated PBFT, REPL-1 checked;
* ``alg1`` — the Co-Forgetting paper's Algorithm 1 as written, for contrast;
* ``demo`` and ``commands`` — ``ostrom consensus-demo``.
"""
