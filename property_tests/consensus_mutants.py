"""Deliberately broken PBFT replicas: one bug each, each with the property that must catch it.

``test_consensus_mutants.py`` runs the stateful PBFT test (``test_consensus_stateful``)
with every honest replica replaced by the mutant and requires Hypothesis to find a
failure *of the named property*.  A mutant that survives means the property tests have
gone blind to that property.  Each mutant overrides one small hook of ``Replica``;
everything else is the real code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ostrom.consensus.messages import PrePrepare, Signed, ViewChange
from ostrom.consensus.replica import Output, Replica


class PreparedOneShort(Replica):
    """BFT-SAFE-1: *prepared* with one matching prepare fewer than ``2f``."""

    def prepared_threshold(self) -> int:
        return super().prepared_threshold() - 1


class NewPrimaryIgnoresCertificates(Replica):
    """BFT-SAFE-1: O ignores the prepared certificates of V (every replica agrees, so
    backups accept the NEW-VIEW): a decided request can be replaced."""

    def compute_o(self, vcs: Sequence[ViewChange], view: int) -> list[PrePrepare]:
        stripped = [
            ViewChange(vc.new_view, vc.last_stable_seq, vc.checkpoint_proof, (), vc.replica)
            for vc in vcs
        ]
        return super().compute_o(stripped, view)


class NoViewChange(Replica):
    """BFT-LIVE-1: timeouts are ignored, so a faulty primary stops the service."""

    def on_timeout(self) -> Output:
        return self._take()


class CommitQuorum2f(Replica):
    """BFT-SAFE-1: committed-local with ``2f`` commits instead of ``2f+1``."""

    def commit_threshold(self) -> int:
        return super().commit_threshold() - 1


class PreparesTwice(Replica):
    """BFT-SAFE-1: a backup accepts a second, different pre-prepare for a (view, seq) it
    already prepared, and prepares (and commits) that one too."""

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


class SignatureUnchecked(Replica):
    """BFT-SAFE-2: signatures are not verified, so a Byzantine replica's request in a
    client's name is executed although no client sent it."""

    def _verify(self, signed: Signed) -> bool:
        return True


#: name -> (mutant, the property id whose check must catch it)
MUTANTS: dict[str, tuple[type[Replica], str]] = {
    "prepared_one_short": (PreparedOneShort, "BFT-SAFE-1"),
    "new_primary_ignores_certificates": (NewPrimaryIgnoresCertificates, "BFT-SAFE-1"),
    "no_view_change": (NoViewChange, "BFT-LIVE-1"),
    "commit_quorum_2f": (CommitQuorum2f, "BFT-SAFE-1"),
    "prepares_twice": (PreparesTwice, "BFT-SAFE-1"),
    "signature_unchecked": (SignatureUnchecked, "BFT-SAFE-2"),
}
