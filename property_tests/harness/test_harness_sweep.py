"""The congestion sweep (``ostrom.harness.sweep``; docs/consensus.md, "Congestion control").

BFT-LIVE-1 under jitter, loss and faulty replicas at bounded cost: in every cell of the
grid every request executes at every honest replica, and a lossy run sends at most
``LOSS_BOUND`` times the messages per request of the same cell without loss.  The CI grid
(N = 4 and 7, 20 ticks of jitter, 0 and 20% loss, no faulty replica, f silent, f
flooding VIEW-CHANGEs; six requests) runs in ``make test``; issue 42's whole grid (144
runs of 30 requests) is ``@pytest.mark.slow`` and ``make bench`` (bench/congestion.py).
The check itself can fail: an incomplete run and a run over the bound are reported.
"""

from __future__ import annotations

import pytest

from ostrom.harness.sweep import (
    CI,
    FULL,
    LOSS_BOUND,
    Cell,
    bound_violations,
    run_cell,
    sweep,
)


def test_the_ci_sweep_completes_within_the_bound() -> None:
    """BFT-LIVE-1: every cell of the CI grid completes, within ``LOSS_BOUND``."""
    rows = sweep(CI.cells())
    assert len(rows) == 12 and all(r["completed"] for r in rows), rows
    assert bound_violations(rows) == []
    assert any(r["dropped"] for r in rows) and any(r["retransmitted"] for r in rows)


@pytest.mark.slow
def test_the_full_sweep_completes_within_the_bound() -> None:
    """Issue 42's grid: N in {4, 7, 10, 13} x max_delay in {0, 5, 20, 50} x loss in
    {0, 5, 20%} x {no faulty replica, f silent, f flooding} (about half an hour)."""
    rows = sweep(FULL.cells())
    assert len(rows) == 144
    assert bound_violations(rows) == []


def _row(loss: float, per_request: float, *, completed: bool = True) -> dict[str, object]:
    return {
        "n": 4,
        "max_delay": 0,
        "faulty": "none",
        "seed": 0,
        "loss": loss,
        "messages_per_request": per_request,
        "completed": completed,
    }


def test_the_bound_check_can_fail() -> None:
    """An incomplete run, and a lossy run over ``LOSS_BOUND`` times its loss-free run, are
    reported; a run at the bound is not."""
    assert bound_violations([_row(0.0, 30.0), _row(0.2, LOSS_BOUND * 30.0)]) == []
    over = bound_violations([_row(0.0, 30.0), _row(0.2, LOSS_BOUND * 30.0 + 0.01)])
    assert len(over) == 1 and "> 2.0 x 30.0" in over[0]
    stuck = bound_violations([_row(0.0, 30.0, completed=False)])
    assert len(stuck) == 1 and stuck[0].startswith("incomplete")


def test_an_unknown_faulty_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="faulty='crashy'"):
        run_cell(Cell(4, 0, 0.0, "crashy"))
