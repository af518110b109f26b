"""Deliberately broken sanction books: one bug each, each with the property that must catch it.

``test_sanctions.py::test_sanctions_mutant_is_caught`` runs the stateful sanctions test against
every mutant and requires Hypothesis to find a failure *of the named property*
(``mutant_check.assert_mutant_caught``).  A mutant that survives means the property tests
have gone blind to that property.  Each mutant overrides one small hook of ``SanctionBook``;
everything else is the real code.  The TLA+ mutants of spec/Sanctions.tla break the same
rules (docs/sanctions.md).
"""

from __future__ import annotations

from ostrom.conformance.mutants.registry import code_mutants
from ostrom.protocol.commands import Event
from ostrom.protocol.sanctions import BANNED, AgentRecord, SanctionBook, Violation


class QuarantineEscalates(SanctionBook):
    """SAN-1: a quarantined agent's violations go up the ladder like anyone's
    (spec mutant ``quarantine_escalates``)."""

    def _frozen(self, rec: AgentRecord) -> bool:
        return False


class NeverReleased(SanctionBook):
    """SAN-1: a passed repair check starts another quarantine period anyway
    (spec mutant ``never_release``)."""

    def _repaired(self, agent: str) -> bool:
        super()._repaired(agent)
        return False


class ExpiresLate(SanctionBook):
    """SAN-2: a violation leaves the window one round late, a window of W + 1 rounds
    (spec mutant ``expire_late``)."""

    def _in_window(self, r: int) -> bool:
        return self._now - self.params.sanction_window <= r <= self._now


class WindowIgnored(SanctionBook):
    """SAN-2: violations never expire: every violation since the start counts."""

    def _in_window(self, r: int) -> bool:
        return r <= self._now


class SuspensionOneShort(SanctionBook):
    """SAN-SUSP: a suspension lasts T_susp - 1 rounds."""

    def record(self, agent: str, kind: Violation | str, round: int) -> list[Event]:
        events = super().record(agent, kind, round)
        rec = self._agents.get(agent)
        if rec is not None and rec.suspended_until == self._now + self.params.T_susp:
            rec.suspended_until -= 1
        return events


class BanLifted(SanctionBook):
    """SAN-BAN: a ban falls with the window like any other level."""

    def _tick_agent(self, agent: str, rec: AgentRecord) -> list[Event]:
        if rec.rank == BANNED:
            rec.violations = [(r, k) for r, k in rec.violations if self._in_window(r)]
            rec.rank = min(rec.rank, self.window_rank(agent), 2)
            return []
        return super()._tick_agent(agent, rec)


#: key -> (mutant class, the id of the check that must catch it): the code mutants the
#: mutant registry (ostrom.conformance.mutants.registry) places in this module.
MUTANTS: dict[str, tuple[type[SanctionBook], str]] = code_mutants(
    "sanctions_mutants", globals(), SanctionBook
)
