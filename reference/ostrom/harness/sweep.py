"""The congestion sweep: PBFT on the simulated network over replica counts, jitter, loss
and faulty replicas, and what each run costs (docs/consensus.md, "Congestion control").

One run (``run_cell``) is issue 42's run scaled to ``n``: ``f = (n-1)//3``, checkpoints
every 8 executions, a window of 16, a view-change timeout of ``40·n`` ticks (280 at
N = 7, the issue's), random delivery order with up to ``max_delay`` ticks of jitter, each
message lost with probability ``loss``, and the clients' requests submitted at once
(round-robin).  ``faulty`` is ``"none"``, ``"silent"`` (the ``f`` highest replicas
receive and send nothing) or ``"flood"`` (they flood VIEW-CHANGEs,
``byzantine.ViewChangeFlood``).  A run ends when every request is executed at every
honest replica and every client has its result (BFT-LIVE-1), or at ``max_ticks``.

``sweep`` runs a grid of them; ``bound_violations`` compares each lossy run's messages
per request with the loss-free run of the same cell (``LOSS_BOUND``).  The grid of
issue 42 is ``FULL`` (``make bench``, ``bench/congestion.py``, and the slow test); a CI
grid (``CI``) runs in the property tests in seconds.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ostrom.harness.byzantine import Silent, Strategy, ViewChangeFlood
from ostrom.harness.network import Faults, Simulation

__all__ = [
    "CI",
    "FAULTY",
    "FULL",
    "LOSS_BOUND",
    "Cell",
    "Grid",
    "bound_violations",
    "run_cell",
    "sweep",
]

#: The kinds of faulty replicas a cell may have (``f`` of them, the highest ids).
FAULTY: Final = ("none", "silent", "flood")
#: A lossy run may send at most this many times the messages per request of the same
#: cell without loss.  A message is lost with probability p and each copy of it again,
#: so it is sent 1/(1-p) times on average (1.25 at 20%); the rest of the margin is for
#: retransmissions of messages that were only slow, and for the timers that loss
#: lengthens (a relayed request, a checkpoint that comes later).
LOSS_BOUND: Final = 2.0


@dataclasses.dataclass(frozen=True)
class Cell:
    """One run's parameters."""

    n: int
    max_delay: int
    loss: float
    faulty: str
    requests: int = 30
    clients: int = 3
    seed: int = 0
    congestion: bool = True


@dataclasses.dataclass(frozen=True)
class Grid:
    """A sweep: every combination of its axes."""

    ns: tuple[int, ...]
    delays: tuple[int, ...]
    losses: tuple[float, ...]
    faulty: tuple[str, ...] = FAULTY
    requests: int = 30
    clients: int = 3
    seeds: tuple[int, ...] = (0,)

    def cells(self) -> list[Cell]:
        return [
            Cell(n, d, p, k, self.requests, self.clients, s)
            for n in self.ns
            for d in self.delays
            for p in self.losses
            for k in self.faulty
            for s in self.seeds
        ]


#: Issue 42's grid: N in {4, 7, 10, 13}, max_delay in {0, 5, 20, 50}, loss in {0, 5, 20%}.
FULL: Final = Grid((4, 7, 10, 13), (0, 5, 20, 50), (0.0, 0.05, 0.20))
#: What the property tests run in ``make test`` (seconds).
CI: Final = Grid((4, 7), (20,), (0.0, 0.20), requests=6, clients=2)


def _faulty(kind: str, n: int, f: int) -> dict[int, Strategy]:
    if kind not in FAULTY:
        raise ValueError(f"faulty={kind!r}: expected one of {FAULTY}")
    if kind == "none":
        return {}
    make = Silent if kind == "silent" else ViewChangeFlood
    return {i: make() for i in range(n - f, n)}


def run_cell(cell: Cell, max_ticks: int = 2_000_000) -> dict[str, Any]:
    """Run one cell; what it cost and whether it completed (see the module docstring)."""
    n, f = cell.n, (cell.n - 1) // 3
    sim = Simulation(
        n,
        f,
        cell.seed,
        byzantine=_faulty(cell.faulty, n, f),
        faults=Faults(drop=cell.loss, reorder=True, max_delay=cell.max_delay),
        clients=cell.clients,
        checkpoint_k=8,
        watermark_window=16,
        base_timeout=40 * n,
        congestion=cell.congestion,
    )
    names = list(sim.clients)
    for k in range(cell.requests):
        sim.submit(names[k % len(names)], {"op": "sweep", "k": k})
    wanted = {c: sum(1 for k in range(cell.requests) if names[k % len(names)] == c) for c in names}
    honest = [sim.replicas[i] for i in sim.honest]

    def done() -> bool:
        return all(
            len(sim.clients[c].results) == m and all(r.last_ts.get(c, 0) == m for r in honest)
            for c, m in wanted.items()
        )

    start = time.process_time()
    sim.run(1 << 62, until=lambda: done() or sim.network.now >= max_ticks)
    cpu = time.process_time() - start
    stats = sim.network.stats
    sent = stats["sent"]
    return {
        **dataclasses.asdict(cell),
        "completed": done(),
        "ticks": sim.network.now,
        "messages": sent,
        "messages_per_request": round(sent / cell.requests, 2),
        "retransmitted": stats["retransmitted"],
        "periodic": stats["periodic_retransmissions"],
        "deferred": stats["deferred"],
        "dropped": stats["dropped"],
        "queue": len(sim.network.queue),
        "view": max(r.view for r in honest),
        "executed_min": min(r.last_exec for r in honest),
        "cpu_s": round(cpu, 2),
    }


def sweep(cells: Iterable[Cell], max_ticks: int = 2_000_000) -> list[dict[str, Any]]:
    return [run_cell(c, max_ticks) for c in cells]


def _key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (row["n"], row["max_delay"], row["faulty"], row["seed"])


def bound_violations(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every lossy run that sent more than ``LOSS_BOUND`` times the messages per request
    of its loss-free run, or that did not complete; empty when the sweep holds."""
    rows = list(rows)
    free = {_key(r): r["messages_per_request"] for r in rows if r["loss"] == 0}
    bad = [f"incomplete: {dict(r)}" for r in rows if not r["completed"]]
    for r in rows:
        base = free.get(_key(r))
        if r["loss"] and base is not None and r["messages_per_request"] > LOSS_BOUND * base:
            bad.append(
                f"{r['messages_per_request']} messages/request > {LOSS_BOUND} x {base}: {dict(r)}"
            )
    return bad
