"""A Byzantine replica process for the cluster's fault tests.

``python -m ostrom.harness.byzantine_node --cluster FILE --id I --byzantine STRATEGY``
runs the product's replica process (``ostrom.cluster.replica_process``) with one of the
harness's strategies (``STRATEGIES`` of byzantine.py) in place of its store.  The product
knows no attack; ``ostrom cluster up --byzantine I=STRATEGY`` starts this module for
replica ``I`` instead of ``ostrom.cluster.replica_process``.
"""

from __future__ import annotations

import argparse
import sys

from ostrom.cluster.replica_process import run_node
from ostrom.harness.byzantine import STRATEGIES

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """0 on a clean stop, 2 for an unknown strategy or a bad configuration (one line on
    stderr), 3 after a failed write, as ``ostrom.cluster.replica_process``."""
    p = argparse.ArgumentParser(
        prog="python -m ostrom.harness.byzantine_node",
        description="Run one PBFT replica of a cluster wrapped in a Byzantine strategy.",
    )
    p.add_argument("--cluster", required=True, help="the cluster.toml")
    p.add_argument("--id", type=int, required=True, help="the replica id (0..n-1)")
    p.add_argument("--byzantine", required=True, help=f"one of {', '.join(sorted(STRATEGIES))}")
    args = p.parse_args(argv)
    strategy = STRATEGIES.get(args.byzantine)
    if strategy is None:
        print(
            f"error: unknown strategy {args.byzantine!r}; one of {', '.join(sorted(STRATEGIES))}",
            file=sys.stderr,
        )
        return 2
    return run_node(args.cluster, args.id, strategy())


if __name__ == "__main__":
    sys.exit(main())
