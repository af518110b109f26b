"""Mutants of the ``pbft`` layer: a PBFT replica with one deliberate bug, as a driver layer.

``PBFT_MUTANTS`` maps a mutant's name to ``(layer, factory, description)``; the factory
builds a fresh ``PBFTLayer`` whose replica is the mutant.  The driver's mutant registry
imports it, and ``replay`` of the pbft vectors on the mutant must diverge (the vector
that catches it is named in the description and checked by
``property_tests/conformance/test_pbft_layer.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ostrom.conformance.layer import Layer
from ostrom.conformance.pbft_layer import PBFTLayer
from ostrom.consensus.messages import PrePrepare, Signed
from ostrom.consensus.replica import Replica

__all__ = ["CATCHING_VECTOR", "PBFT_MUTANTS", "PreparesTwiceReplica", "prepares_twice_layer"]


class PreparesTwiceReplica(Replica):
    """A backup that prepares twice in one view: when an (equivocating) primary sends a
    second PRE-PREPARE with a different digest for a (view, seq) it already accepted, the
    mutant still counts it as ``conflicting`` but accepts it too, sends a second PREPARE
    for the other digest, and commits whichever digest gathers ``2f`` prepares.

    This is the bug that breaks the quorum-intersection argument of PBFT (docs/consensus.md,
    "Why 2f prepares are enough"): an honest backup prepares at most one digest per
    (view, seq).  The same bug as ``property_tests/consensus_mutants.PreparesTwice``,
    which the stateful test catches as a BFT-SAFE-1 violation.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.extra: dict[tuple[int, int, str], Signed] = {}

    def accepts_conflicting_pre_prepare(self) -> bool:
        return True

    def _accept_pre_prepare(self, signed: Signed, pp: PrePrepare) -> None:
        self.extra[(pp.view, pp.seq, pp.digest)] = signed
        super()._accept_pre_prepare(signed, pp)

    def _extra_pre_prepared(self, view: int, seq: int, digest: str) -> bool:
        return (view, seq, digest) in self.extra

    def _pre_prepare_for(self, view: int, seq: int, digest: str) -> Signed:
        return self.extra.get((view, seq, digest)) or super()._pre_prepare_for(view, seq, digest)


def prepares_twice_layer() -> Layer:
    """A ``pbft`` layer whose replica is :class:`PreparesTwiceReplica`."""
    return PBFTLayer(PreparesTwiceReplica)


#: The vector (id) that catches ``pbft-prepares-twice``: its second step is the
#: conflicting PRE-PREPARE, which the mutant answers with a second PREPARE.
CATCHING_VECTOR: Final = "pbft/reject/conflicting-pre-prepare"

#: name -> (layer, factory of the mutant layer, description), for the driver's registry.
PBFT_MUTANTS: Final[dict[str, tuple[str, Callable[[], Layer], str]]] = {
    "pbft-prepares-twice": (
        "pbft",
        prepares_twice_layer,
        "a PBFT backup prepares twice in a view: it accepts a second, conflicting "
        "PRE-PREPARE for a (view, seq) and sends a second PREPARE (caught by "
        f"{CATCHING_VECTOR})",
    ),
}
