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

from ostrom.conformance.mutants.registry import code_mutants
from ostrom.consensus.messages import NULL_DIGEST, PrePrepare, Request, Signed, ViewChange
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


class _Replay:
    """Stands in for the application while a request it already applied is logged: the
    result is the one it returned then, and nothing is applied again."""

    def __init__(self, result: dict[str, Any] | None) -> None:
        self.result = result if result is not None else {}

    def execute(self, operation: dict[str, Any]) -> dict[str, Any]:
        return self.result

    def digest(self) -> str:
        return ""


class TentativeNoRollback(Replica):
    """REPL-1: PBFT's tentative execution (Castro & Liskov, TOCS 2002) without its rollback.

    The orchestrator applies the next request as soon as it is *prepared* (every lower
    sequence number being committed and executed), before it is committed; the PBFT log
    records it only when it commits, and the tentative application is never undone.  The
    orchestrator thus shows a decision that is not committed, and when a view change puts
    another request (or the null request) at that sequence number, the replica logs the
    new one but keeps the old one applied, for good.  The committed, prepared and executed
    logs are exactly the real replica's and checkpoints are taken before running ahead, so
    BFT-SAFE-1/2 see nothing, and BFT-LIVE-1 only once a kept request makes checkpoints
    disagree (without REPL-1's check the mutant survives the ci profile's 1000 examples);
    comparing the orchestrator with the committed log sees it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ahead = 0  # the sequence number applied tentatively (<= last_exec: none)
        self.ahead_result: dict[str, Any] | None = None

    def _check_prepared(self, view: int, seq: int, digest: str) -> None:
        super()._check_prepared(view, seq, digest)
        self._run_ahead()

    def _execute(self) -> None:
        super()._execute()
        self._run_ahead()

    def _execute_one(
        self, seq: int, digest: str, req: Signed | None, *, reply: bool
    ) -> dict[str, Any] | None:
        if seq != self.ahead:
            return super()._execute_one(seq, digest, req, reply=reply)
        # applied tentatively (whatever request it was then): log it, do not apply it
        app, self.app = self.app, _Replay(self.ahead_result)
        try:
            return super()._execute_one(seq, digest, req, reply=reply)
        finally:
            self.app = app

    def _run_ahead(self) -> None:
        """Apply the request prepared at ``last_exec + 1`` (the highest view's)."""
        seq = self.last_exec + 1
        certs = [k for k in self.prepared_log if k[1] == seq]
        if self.ahead == seq or not certs:
            return
        view, _, digest = max(certs)
        req = None if digest == NULL_DIGEST else self._body(view, seq, digest)
        if req is None and digest != NULL_DIGEST:
            return
        self.ahead, self.ahead_result = seq, None
        m = None if req is None else req.message
        if isinstance(m, Request) and m.timestamp > self.last_ts.get(m.client, 0):
            self.ahead_result = self.app.execute(m.operation)


#: key -> (mutant class, the id of the check that must catch it): the code mutants the
#: mutant registry (ostrom.conformance.mutants.registry) places in this module.
MUTANTS: dict[str, tuple[type[Replica], str]] = code_mutants(
    "consensus_mutants", globals(), Replica
)
