"""Reputation benchmark: EigenTrust for 100, 1,000 and 10,000 agents, and a book's tick.

* **eigentrust** — ``ostrom.protocol.reputation.eigentrust`` on a random sparse agreement graph in
  which every agent picks ``PARTNERS`` distinct others; agreement is symmetric, so each
  agent ends up with about 2 × PARTNERS ≈ 20 neighbours and the graph has about
  20·N directed edges, kept as three numpy arrays (no n×n matrix: 10,000 agents dense
  would be 800 MB).  Local trust s_ij is a random agreement surplus 1..10, 5% of the
  agents are pre-trusted, a = ``Params.eigentrust_a``, tolerance and iteration cap are
  the module defaults.  Reported: median and best wall time over ``REPEATS`` runs,
  iterations, whether it converged, and the iteration bound of the contraction argument.
* **book_tick** — one ``ReputationBook.tick`` (decay, EigenTrust rebuilt from the pair
  table, weights, tiers) after fresh agreement, for 100 and 1,000 agents with
  five-reviewer ballots (the simulation's per-round cost).

Seeded (numpy ``default_rng(SEED)`` and ``random.Random(SEED)``); no scipy.
Usage: ``python bench/reputation.py`` prints the result as JSON.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from typing import Any

import numpy as np

from ostrom.protocol.params import DEFAULTS
from ostrom.protocol.reputation import ReputationBook, eigentrust, eigentrust_iteration_bound

SEED = 1
SIZES = (100, 1_000, 10_000)
PARTNERS = 10  # chosen per agent; symmetric agreement doubles it to ~20 neighbours
REPEATS = {100: 50, 1_000: 20, 10_000: 5}
BOOK_SIZES = (100, 1_000)
BALLOTS_PER_AGENT = 20  # five-reviewer ballots per agent before the measured tick


def agreement_graph(
    n: int, rng: np.random.Generator
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Symmetric sparse agreement graph as (src, dst, weight) arrays."""
    i = np.repeat(np.arange(n), PARTNERS)
    j = (i + rng.integers(1, n, size=i.size)) % n  # never i itself
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    pairs = np.unique(lo * n + hi)  # one entry per unordered pair
    a, b = pairs // n, pairs % n
    s = rng.integers(1, 11, size=pairs.size).astype(np.float64)
    return np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([s, s])


def bench_eigentrust(n: int, rng: np.random.Generator) -> dict[str, Any]:
    src, dst, w = agreement_graph(n, rng)
    p = np.zeros(n)
    p[rng.choice(n, size=max(1, n // 20), replace=False)] = 1.0
    times = []
    for _ in range(REPEATS[n]):
        t0 = time.perf_counter()
        res = eigentrust(n, src, dst, w, p, DEFAULTS.eigentrust_a)
        times.append(time.perf_counter() - t0)
    degree = np.bincount(src, minlength=n)
    return {
        "agents": n,
        "edges": int(src.size),
        "mean_neighbours": round(float(degree.mean()), 1),
        "median_ms": round(statistics.median(times) * 1000, 3),
        "best_ms": round(min(times) * 1000, 3),
        "iterations": res.iterations,
        "iteration_bound": eigentrust_iteration_bound(DEFAULTS.eigentrust_a),
        "converged": res.converged,
        "residual": res.residual,
        "trust_sum": round(float(res.trust.sum()), 12),
        "edge_arrays_mb": round((src.nbytes + dst.nbytes + w.nbytes) / 2**20, 2),
    }


def bench_book_tick(n: int, rnd: random.Random) -> dict[str, Any]:
    names = [f"a{i:05d}" for i in range(n)]
    book = ReputationBook(DEFAULTS, names, pretrusted=names[: max(1, n // 20)])
    for _ in range(n * BALLOTS_PER_AGENT // DEFAULTS.reviewers):
        voters = rnd.sample(names, DEFAULTS.reviewers)
        truth, wrong = rnd.choice([("accept", "reject"), ("reject", "accept")])
        votes = {v: truth if rnd.random() < 0.8 else wrong for v in voters}
        book.record_votes(votes, truth)
    t0 = time.perf_counter()
    book.tick()
    seconds = time.perf_counter() - t0
    res = book.trust_result()
    return {
        "agents": n,
        "pairs": len(book.local_trust()),
        "tick_ms": round(seconds * 1000, 2),
        "eigentrust_iterations": res.iterations,
        "converged": res.converged,
    }


def bench_reputation() -> dict[str, Any]:
    """EigenTrust times for 100, 1,000, 10,000 agents and a book's tick (see module doc)."""
    rng = np.random.default_rng(SEED)
    rnd = random.Random(SEED)
    return {
        "seed": SEED,
        "eigentrust_a": DEFAULTS.eigentrust_a,
        "partners_chosen_per_agent": PARTNERS,
        "eigentrust": [bench_eigentrust(n, rng) for n in SIZES],
        "book_tick": [bench_book_tick(n, rnd) for n in BOOK_SIZES],
    }


if __name__ == "__main__":
    print(json.dumps(bench_reputation(), indent=2))
