"""Stateful property tests of the sanctions book (docs/design.md §4 and §7, docs/sanctions.md).

A Hypothesis ``RuleBasedStateMachine`` drives ``SanctionBook.record`` (at the current round
and at later ones) and ``SanctionBook.tick`` (one or several rounds) for three agents, with
every violation kind and a repair check whose outcome the machine switches per agent.
``test_sanctions_reaches`` fails if the runs never reach a rung, a quarantine, a renewal, a
release, a reclassification, a level capped after a suspension or a rise held back in
quarantine (a test that reaches nothing proves nothing).

The test keeps its *own* log of every agent's violations (since its last release, as the
rules say) and computes the window, the weights and the classifier itself, so a bug in the
book's bookkeeping cannot hide itself.  After every step, in this order (a mutant must fail
its own property's check first; ``mutant_check`` reads the message prefix):

* SAN-BAN — a ban is terminal;
* SAN-SUSP — a suspension starts only at a record and lasts exactly ``T_susp`` rounds;
* SAN-1 — ``san_1_quarantine_no_rise``: a quarantined agent's level never rises;
  ``san_1_quarantine_ends``: its next repair check is at most ``T_quarantine`` rounds away
  and a passing check releases it (so a quarantine ends within that bound once the repair
  check passes);
* SAN-2 — ``san_2_window``: levels rise only at the agent's own record and never above what
  the in-window violations give; in every state the level is exactly what the window gives
  (capped at σ2 after a suspension), at most that while quarantined;
* SAN-CLASS — quarantine only when the classifier says malfunction, never for a strategic
  agent; reclassification exactly on a violation during probation;
* SAN-GUARD — ``may_act``/``tier_cap`` bar exactly the barring sanctions.

``test_sanctions_mutant_is_caught`` runs the machine against each mutant of
``sanctions_mutants.py`` and requires the failure of the mutant's own property.
"""

from __future__ import annotations

import copy
import re
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from mutant_check import assert_mutant_caught, run_machine
from ostrom.protocol.agents import BARRING, MAX_TIER, MICRO, Sanction, micro
from ostrom.protocol.params import Params
from ostrom.protocol.sanctions import (
    AGENT_ACTIONS,
    MALFUNCTION,
    AgentRecord,
    SanctionBook,
    Violation,
)
from ostrom.verify.tlc.jar import TlcSetupError, find_jar, find_java
from ostrom.verify.tlc.values import parse_value, to_itf
from sanctions_mutants import MUTANTS

# The reachability test at the end reads what the machines above recorded in this
# process: the whole module runs on one xdist worker, in file order (--dist loadfile,
# conftest.py).

# --- the world under test ----------------------------------------------------------------

PARAMS = Params(
    sanction_window=4,
    sigma1=2,
    sigma2=3,
    sigma3=5,
    sigma4=7,
    urgent_penalty=2.5,  # not a whole number: weights are compared in micro-units
    T_susp=3,  # < sanction_window: a suspension can end while its violations still count
    T_quarantine=3,
)
W = PARAMS.sanction_window
THRESHOLDS = [s * MICRO for s in (PARAMS.sigma1, PARAMS.sigma2, PARAMS.sigma3, PARAMS.sigma4)]
AGENTS = ["a", "b", "c"]
KINDS = list(Violation)
MALFUNCTION_KINDS = [Violation.MALFORMED, Violation.INVALID_REVEAL]
ACTIONS = sorted(AGENT_ACTIONS)

#: What the ci run reached, across all examples (read by ``test_sanctions_reaches``).
REACHED: Counter[str] = Counter()
MUST_REACH = (
    "level:warned",
    "level:rate_limited",
    "level:suspended",
    "level:banned",
    "level:quarantined",
    "banned_while_suspended",
    "suspension_end",
    "capped_after_suspension",
    "quarantine_renewed",
    "released",
    "reclassified",
    "reclassified_rise",
    "held_in_quarantine",
    "expiry",
    "record_later",
)


def weight(kind: Violation) -> int:
    """The test's own weights (micro-units): 1, or ``urgent_penalty`` for an urgent report."""
    return micro(PARAMS.urgent_penalty) if kind == Violation.UNFOUNDED_URGENT else MICRO


def rank_of(count: int) -> int:
    """The test's own ladder: σk at ``sigma_k`` weighted violations or more."""
    return sum(1 for t in THRESHOLDS if count >= t)


class SanctionsMachine(RuleBasedStateMachine):
    """The sanctions book under records and ticks; ``BOOK`` is swapped for mutants."""

    BOOK: ClassVar[type[SanctionBook]] = SanctionBook

    def __init__(self) -> None:
        super().__init__()
        self.book = self.BOOK(PARAMS, repair_check=self._repair)
        self.now = 0
        self.log: dict[str, list[tuple[int, Violation]]] = {a: [] for a in AGENTS}
        self.repair_ok = dict.fromkeys(AGENTS, True)
        self.probation: dict[str, int | None] = dict.fromkeys(AGENTS)
        self.strategic = dict.fromkeys(AGENTS, False)
        self.susp_start: dict[str, int | None] = dict.fromkeys(AGENTS)
        self.events: list[dict[str, Any]] = []
        self.op: tuple[str, str | None] = ("init", None)
        self.prev_now = 0
        self.prev: dict[str, AgentRecord] = {}
        self.prev_level: dict[str, Sanction] = {}
        self._remember()

    # --- the test's own model ------------------------------------------------------------

    def _repair(self, agent: str, round: int) -> bool:
        return self.repair_ok[agent]

    def _remember(self) -> None:
        self.prev_now = self.now
        self.prev = {a: self.book.state(a) for a in AGENTS}
        self.prev_level = {a: self.book.level(a) for a in AGENTS}

    def _wcount(self, agent: str) -> int:
        return sum(weight(k) for r, k in self.log[agent] if self.now - W < r <= self.now)

    def _wrank(self, agent: str) -> int:
        return rank_of(self._wcount(agent))

    def _broken(self, agent: str) -> bool:
        window = [k for r, k in self.log[agent] if self.now - W < r <= self.now]
        return 2 * sum(1 for k in window if k in MALFUNCTION_KINDS) > len(window)

    def _advance_model(self, new_now: int) -> None:
        """What the rules say the rounds up to ``new_now`` do to the test's model: a due
        repair check that passes releases (clean slate, probation)."""
        for a in AGENTS:
            until = self.prev[a].quarantined_until
            if until is not None and until <= new_now and self.repair_ok[a]:
                self.log[a] = []
                self.probation[a] = until + W
        self.now = new_now
        for a in AGENTS:
            p = self.probation[a]
            if p is not None and self.now >= p:
                self.probation[a] = None

    # --- rules ---------------------------------------------------------------------------

    def _record(self, agent: str, kind: Violation, round: int) -> None:
        self._remember()
        self.op = ("record", agent)
        if round > self.now:
            REACHED["record_later"] += 1
        self._advance_model(round)
        banned = self.prev_level[agent] == Sanction.BANNED
        if not banned:
            self.log[agent].append((round, kind))
            if self.probation[agent] is not None:
                self.strategic[agent] = True
                self.probation[agent] = None
        self.events = self.book.record(agent, kind, round)

    @initialize()
    def start(self) -> None:
        self._remember()

    @rule(agent=st.sampled_from(AGENTS), kind=st.sampled_from(KINDS))
    def record(self, agent: str, kind: Violation) -> None:
        self._record(agent, kind, self.now)

    @rule(agent=st.sampled_from(AGENTS), kind=st.sampled_from(MALFUNCTION_KINDS))
    def record_malfunction(self, agent: str, kind: Violation) -> None:
        self._record(agent, kind, self.now)

    @rule(
        agent=st.sampled_from(AGENTS),
        kind=st.sampled_from(KINDS),
        later=st.integers(1, 3),
    )
    def record_later(self, agent: str, kind: Violation, later: int) -> None:
        self._record(agent, kind, self.now + later)

    @rule(rounds=st.integers(1, 4))
    def tick(self, rounds: int) -> None:
        self._remember()
        self.op = ("tick", None)
        self._advance_model(self.now + rounds)
        self.events = self.book.tick(self.now)

    @rule(agent=st.sampled_from(AGENTS), ok=st.booleans())
    def set_repair(self, agent: str, ok: bool) -> None:
        self._remember()
        self.op = ("none", None)
        self.events = []
        self.repair_ok[agent] = ok

    # --- checks, after every step ----------------------------------------------------------

    @invariant()
    def after_every_step(self) -> None:
        self._count()
        self.san_ban_terminal()
        self.san_suspension()
        self.san_1_quarantine_no_rise()
        self.san_1_quarantine_ends()
        self.san_2_window()
        self.san_classifier()
        self.san_guards()

    def _recorded(self, agent: str) -> bool:
        return self.op == ("record", agent)

    def _count(self) -> None:
        for ev in self.events:
            if ev["event"] == "sanction":
                REACHED["level:" + ev["to"]] += 1
                REACHED[ev["cause"]] += 1
            else:
                REACHED[ev["event"]] += 1
        for a in AGENTS:
            level, prev = self.book.level(a), self.prev_level[a]
            if prev == Sanction.SUSPENDED and level == Sanction.BANNED:
                REACHED["banned_while_suspended"] += 1
            if level == Sanction.RATE_LIMITED and self._wrank(a) >= 3:
                REACHED["capped_after_suspension"] += 1
            if level == Sanction.QUARANTINED and self._recorded(a):
                REACHED["held_in_quarantine"] += self._wrank(a) > self.book.rank(a)
            if self.strategic[a] and self.book.rank(a) > self.prev[a].rank and self._recorded(a):
                REACHED["reclassified_rise"] += 1

    def san_ban_terminal(self) -> None:
        for a in AGENTS:
            if self.prev_level[a] == Sanction.BANNED:
                st_ = self.book.state(a)
                assert self.book.level(a) == Sanction.BANNED and st_.rank == 4, (
                    f"SAN-BAN: {a} was banned and is now {self.book.level(a)}"
                )
                assert st_.suspended_until is None and st_.quarantined_until is None, (
                    f"SAN-BAN: banned {a} has a timer: {st_}"
                )

    def san_suspension(self) -> None:
        t_susp = PARAMS.T_susp
        for a in AGENTS:
            level, prev = self.book.level(a), self.prev_level[a]
            start = self.susp_start[a]
            if level == Sanction.SUSPENDED:
                renewed = start is not None and start + t_susp <= self.now
                if prev != Sanction.SUSPENDED or renewed:
                    assert self._recorded(a), f"SAN-SUSP: {a} suspended by {self.op[0]}"
                    self.susp_start[a] = start = self.now
                assert start is not None
                until = self.book.state(a).suspended_until
                assert until == start + t_susp, (
                    f"SAN-SUSP: {a} suspended at round {start} until {until}, "
                    f"not {start + t_susp} (T_susp {t_susp})"
                )
                assert self.now < start + t_susp, (
                    f"SAN-SUSP: {a} suspended at round {start} is still suspended at {self.now}"
                )
            elif prev == Sanction.SUSPENDED:
                assert start is not None
                if level == Sanction.BANNED:
                    assert self._recorded(a), f"SAN-SUSP: suspended {a} banned by {self.op[0]}"
                else:
                    assert self.now >= start + t_susp, (
                        f"SAN-SUSP: {a} suspended at round {start} is {level} at round "
                        f"{self.now}, before T_susp ({t_susp}) passed"
                    )

    def san_1_quarantine_no_rise(self) -> None:
        """SAN-1: a quarantined agent's level never rises (nor does it on entering)."""
        for a in AGENTS:
            if self.book.level(a) != Sanction.QUARANTINED:
                continue
            rank, before = self.book.rank(a), self.prev[a].rank
            assert rank <= before, (
                f"SAN-1: {a} is quarantined and its level rose from σ{before} to σ{rank} "
                f"({self.op[0]} at round {self.now})"
            )
            assert not self.book.may_act(a, "propose"), f"SAN-1: quarantined {a} may act"

    def san_1_quarantine_ends(self) -> None:
        """SAN-1: the next repair check is at most T_quarantine rounds away, and a passing
        check releases the agent: a quarantine ends within that bound of its first passing
        check."""
        t_q = PARAMS.T_quarantine
        for a in AGENTS:
            st_ = self.book.state(a)
            if self.book.level(a) == Sanction.QUARANTINED:
                until = st_.quarantined_until
                assert until is not None and self.now < until <= self.now + t_q, (
                    f"SAN-1: quarantined {a}'s repair check is due at round {until}, "
                    f"not within ({self.now}, {self.now + t_q}]"
                )
            due = self.prev[a].quarantined_until
            if due is not None and due <= self.now and self.repair_ok[a]:
                assert self.book.level(a) != Sanction.QUARANTINED, (
                    f"SAN-1: {a}'s repair check passed at round {due} but {a} is still "
                    f"quarantined at round {self.now}"
                )
                assert all(r >= due for r, _ in st_.violations), (
                    f"SAN-1: {a} was released at round {due} without a clean slate: "
                    f"{st_.violations}"
                )

    def san_2_window(self) -> None:
        """SAN-2: levels rise only at the agent's own record, to at most what the window gives;
        in every state the level is the window's (capped at σ2 after a suspension), at most
        that while quarantined; suspended and banned are the other checks' business."""
        for a in AGENTS:
            rank, before, wr = self.book.rank(a), self.prev[a].rank, self._wrank(a)
            if rank > before:
                assert self._recorded(a), (
                    f"SAN-2: {a}'s level rose from σ{before} to σ{rank} at a {self.op[0]} "
                    f"(round {self.now}), not at a violation of its own"
                )
                assert rank <= wr, (
                    f"SAN-2: {a} rose to σ{rank} but its in-window violations give σ{wr} "
                    f"(round {self.now}, log {self.log[a]})"
                )
            level = self.book.level(a)
            if level in (Sanction.BANNED, Sanction.SUSPENDED):
                continue
            if level == Sanction.QUARANTINED:
                assert rank <= wr, (
                    f"SAN-2: quarantined {a} at σ{rank} above its window's σ{wr} "
                    f"(round {self.now}, log {self.log[a]})"
                )
            else:
                assert rank == min(wr, 2), (
                    f"SAN-2: {a} is at σ{rank} but its in-window violations give σ{wr} "
                    f"(round {self.now}, window {W}, log {self.log[a]})"
                )

    def san_classifier(self) -> None:
        for a in AGENTS:
            assert self.book.state(a).strategic == self.strategic[a], (
                f"SAN-CLASS: {a} strategic is {self.book.state(a).strategic}, "
                f"expected {self.strategic[a]} (probation {self.probation[a]})"
            )
            entered = (
                self.book.level(a) == Sanction.QUARANTINED
                and self.prev_level[a] != Sanction.QUARANTINED
            )
            rose = self.book.rank(a) > self.prev[a].rank and self.book.level(a) != (
                Sanction.QUARANTINED
            )
            if not (entered or rose):
                continue
            eligible = not self.strategic[a] and self.prev[a].rank < 3
            if entered:
                assert self._recorded(a), f"SAN-CLASS: {a} quarantined by {self.op[0]}"
                assert eligible and self._broken(a), (
                    f"SAN-CLASS: {a} quarantined but it is strategic or suspended or its "
                    f"window {self.log[a]} does not look broken"
                )
            else:
                assert not (eligible and self._broken(a)), (
                    f"SAN-CLASS: {a} escalated although it looks broken: {self.log[a]}"
                )

    def san_guards(self) -> None:
        for a in AGENTS:
            barred = self.book.level(a) in BARRING
            assert self.book.tier_cap(a) == (None if barred else MAX_TIER), (
                f"SAN-GUARD: {a} at {self.book.level(a)} has tier cap {self.book.tier_cap(a)}"
            )
            for action in ACTIONS:
                assert self.book.may_act(a, action) is not barred, (
                    f"SAN-GUARD: {a} at {self.book.level(a)}: may_act({action}) wrong"
                )


@pytest.mark.budget  # holds at the ci profile's budget: make test-fast skips it
def test_sanctions_reaches() -> None:
    """All checks above over the profile's examples, then: was everything reached?"""
    REACHED.clear()
    run_machine(SanctionsMachine)
    missing = [k for k in MUST_REACH if REACHED[k] == 0]
    assert not missing, f"never reached: {missing} (reached: {sorted(REACHED)})"


@pytest.mark.parametrize(("mutant", "prop"), list(MUTANTS.values()), ids=list(MUTANTS))
@pytest.mark.budget  # holds at the ci profile's budget
@pytest.mark.mutation  # a mutant the machine must catch: make mutate, make test-slow
def test_sanctions_mutant_is_caught(mutant: type[SanctionBook], prop: str) -> None:
    """Each mutant of ``sanctions_mutants.py`` fails the check of its own property first."""
    machine = type(f"{mutant.__name__}Machine", (SanctionsMachine,), {"BOOK": mutant})
    assert_mutant_caught(machine, mutant.__name__, prop)


# --- examples: the rules of docs/sanctions.md, one at a time --------------------------------

P = Params(sanction_window=10, sigma1=2, sigma2=3, sigma3=4, sigma4=6, T_susp=5, T_quarantine=5)


def test_window_slides() -> None:
    book = SanctionBook(P)
    book.record("x", "non_reveal", 0)
    book.record("x", "non_reveal", 0)
    assert book.level("x") == Sanction.WARNED
    book.tick(9)
    assert book.level("x") == Sanction.WARNED  # rounds 0..9 are the window at round 9
    book.tick(10)
    assert book.level("x") == Sanction.NONE  # round 0 left it


def test_urgent_report_weighs_urgent_penalty() -> None:
    book = SanctionBook(P)  # urgent_penalty 3.0 by default
    book.record("x", Violation.UNFOUNDED_URGENT, 0)
    assert book.window_count("x") == 3 * MICRO
    assert book.level("x") == Sanction.RATE_LIMITED


def test_suspension_ends_capped_then_next_violation_suspends_again() -> None:
    book = SanctionBook(P)
    for _ in range(4):
        book.record("x", "frivolous_dispute", 0)
    assert book.level("x") == Sanction.SUSPENDED
    assert book.state("x").suspended_until == 5
    book.tick(4)
    assert book.level("x") == Sanction.SUSPENDED
    events = book.tick(5)
    assert book.level("x") == Sanction.RATE_LIMITED  # window still gives σ3: capped
    assert events == [
        {
            "event": "sanction",
            "agent": "x",
            "from": "suspended",
            "to": "rate_limited",
            "cause": "suspension_end",
        }
    ]
    book.record("x", "rate_limit", 5)
    assert book.level("x") == Sanction.SUSPENDED and book.state("x").suspended_until == 10


def test_ban_is_terminal_and_ignores_violations() -> None:
    book = SanctionBook(P)
    for _ in range(6):
        book.record("x", "non_reveal", 0)
    assert book.level("x") == Sanction.BANNED
    book.tick(100)
    snap = book.snapshot()
    book.record("x", "non_reveal", 100)
    assert book.level("x") == Sanction.BANNED and book.snapshot() == snap
    assert not book.may_act("x", "propose") and book.tier_cap("x") is None


def test_broken_agent_is_quarantined_released_then_reclassified() -> None:
    checks: list[tuple[str, int]] = []

    def repair(agent: str, round: int) -> bool:
        checks.append((agent, round))
        return len(checks) > 1  # the first check fails, the second passes

    book = SanctionBook(P, repair_check=repair)
    book.record("x", "malformed", 0)
    events = book.record("x", "malformed", 0)
    assert book.level("x") == Sanction.QUARANTINED and book.rank("x") == 0
    assert events[-1]["cause"] == "malfunction"
    for _ in range(5):
        book.record("x", "non_reveal", 1)  # SAN-1: logged, never escalated
    assert book.rank("x") == 0 and book.window_rank("x") == 4
    assert book.tick(5) == [{"event": "quarantine_renewed", "agent": "x"}]
    book.tick(10)
    assert checks == [("x", 5), ("x", 10)]
    assert book.level("x") == Sanction.NONE and book.state("x").violations == []
    assert book.state("x").probation_until == 20
    events = book.record("x", "malformed", 12)
    assert {"event": "reclassified", "agent": "x"} in events
    book.record("x", "malformed", 12)
    assert book.level("x") == Sanction.WARNED  # strategic now: the ladder, not quarantine


def test_suspended_agent_is_banned_not_quarantined() -> None:
    book = SanctionBook(P)
    for kind in ["non_reveal", "non_reveal", "malformed", "malformed"]:
        book.record("x", kind, 0)  # 2 of 4 malfunction at σ3: not a strict majority
    assert book.level("x") == Sanction.SUSPENDED
    book.record("x", "malformed", 0)
    book.record("x", "malformed", 0)  # σ4 with 4 of 6 malfunction: no benefit of the doubt
    assert book.level("x") == Sanction.BANNED


def test_record_at_a_later_round_advances_and_past_rounds_are_refused() -> None:
    book = SanctionBook(P)
    book.record("x", "non_reveal", 3)
    assert book.now == 3
    try:
        book.record("x", "non_reveal", 2)
    except ValueError:
        pass
    else:  # pragma: no cover
        raise AssertionError("a back-dated violation was accepted")


def test_orchestrator_observations_are_counted() -> None:
    book = SanctionBook(P)
    book.record_events(
        [
            {"event": "violation", "agent": "x", "kind": "bad_reveal"},
            {"event": "penalty", "agent": "x", "kind": "unfounded_urgent_report"},
            {"event": "timeout", "artifact": "y", "from": "reveal", "to": "active"},
        ],
        0,
    )
    assert [k for _, k in book.state("x").violations] == [
        Violation.INVALID_REVEAL,
        Violation.UNFOUNDED_URGENT,
    ]


def test_snapshot_is_json_and_deterministic() -> None:
    import json

    def run() -> str:
        book = SanctionBook(P)
        for i, kind in enumerate(["malformed", "non_reveal", "malformed", "rate_limit"]):
            book.record(f"x{i % 2}", kind, i)
        return json.dumps(book.snapshot(), sort_keys=True)

    assert run() == run()
    assert json.loads(run())["agents"]["x0"]["level"] == "quarantined"


def test_snapshot_names_the_spec_variables_of_every_agent() -> None:
    """The snapshot is what a node persists and serves: its keys are the per-agent
    variables of spec/Sanctions.tla under their documented names, not just any JSON."""
    book = SanctionBook(P)
    book.record("x", "malformed", 0)
    book.record("x", "malformed", 0)  # quarantined (2 of 2 malfunction)
    book.record("y", "non_reveal", 1)
    assert book.snapshot() == {
        "now": 1,
        "agents": {
            "x": {
                "level": "quarantined",
                "rank": 0,
                "violations": [[0, "malformed"], [0, "malformed"]],
                "suspended_until": None,
                "quarantined_until": 5,
                "probation_until": None,
                "strategic": False,
            },
            "y": {
                "level": "none",
                "rank": 0,
                "violations": [[1, "non_reveal"]],
                "suspended_until": None,
                "quarantined_until": None,
                "probation_until": None,
                "strategic": False,
            },
        },
    }


def test_record_events_counts_every_violation_and_only_violations() -> None:
    """Each violation or penalty observation is recorded and its sanction events kept, for
    every agent in the batch; an observation of another kind with a violation's ``kind``
    key is not a violation."""
    book = SanctionBook(P)
    events = book.record_events(
        [
            {"event": "violation", "agent": "x", "kind": "bad_reveal"},
            {"event": "violation", "agent": "x", "kind": "bad_reveal"},  # x: sigma1
            {"event": "violation", "agent": "y", "kind": "non_reveal"},
            {"event": "violation", "agent": "y", "kind": "non_reveal"},  # y: sigma1
            {"event": "timeout", "agent": "z", "kind": "bad_reveal"},
        ],
        0,
    )
    assert [(e["event"], e["agent"]) for e in events] == [("sanction", "x"), ("sanction", "y")]
    assert book.state("z").violations == []


def test_may_act_refuses_a_name_that_is_not_an_agent_command() -> None:
    message = r"'tick' is not an agent's command: \['arbitrate', 'commit_vote'"
    with pytest.raises(ValueError, match=message):
        SanctionBook(P).may_act("x", "tick")


def test_tick_must_move_forward() -> None:
    book = SanctionBook(P, now=3)
    with pytest.raises(ValueError, match="tick to round 3: not after the current round 3"):
        book.tick(3)
    assert book.tick(4) == [] and book.now == 4


def test_without_a_repair_check_a_quarantine_ends_after_its_period() -> None:
    """The default repair check passes (the protocol has no repair tooling): a quarantine
    ends after ``T_quarantine`` rounds, never renewed."""
    book = SanctionBook(P)
    book.record("x", "malformed", 0)
    book.record("x", "malformed", 0)
    assert book.level("x") == Sanction.QUARANTINED
    assert book.tick(4) == []
    events = book.tick(5)
    assert {"event": "quarantine_renewed", "agent": "x"} not in events
    assert book.level("x") == Sanction.NONE


def test_an_agent_the_book_never_saw_is_clean() -> None:
    """No registration: an unknown agent has no violations, counts nothing and is not
    classified as broken (docs/sanctions.md)."""
    book = SanctionBook(P)
    assert book.window_count("nobody") == 0 and book.window_rank("nobody") == 0
    assert book.looks_broken("nobody") is False
    assert book.level("nobody") == Sanction.NONE and book.rank("nobody") == 0


@pytest.mark.parametrize("agent", ["", 7, None, b"x"])
def test_record_refuses_an_agent_that_is_not_a_non_empty_string(agent: Any) -> None:
    book = SanctionBook(P)
    with pytest.raises(ValueError, match=r"^agent must be a non-empty string$"):
        book.record(agent, "malformed", 0)
    assert book.snapshot() == {"now": 0, "agents": {}}
    with pytest.raises(ValueError, match=r"^round 0 is before the current round 1$"):
        SanctionBook(P, now=1).record("x", "malformed", 0)


# --- spec and code agree: the same transition system on the CI model -------------------------

ROOT = Path(__file__).resolve().parents[2]
#: The kinds of MCSanctions.tla's CIKinds: one per (weight, class) the rules can tell apart.
CI_KINDS = (Violation.MALFORMED, Violation.NON_REVEAL, Violation.UNFOUNDED_URGENT)
AbsState = tuple[tuple[tuple[int, int, int], ...], int, int, int, int, bool]


def _cfg_constants(text: str) -> dict[str, str]:
    return dict(re.findall(r"^\s+(\w+)\s*=\s*(\S+)\s*$", text, re.M))


def _abstract(book: SanctionBook, agent: str, window: int) -> AbsState:
    """The book's state of ``agent`` in the spec's terms: the log by age as (weight, number,
    malfunction number), rank, and the countdowns susp, quar, prob; then strategic."""
    rec = book.state(agent)
    hist = [[0, 0, 0] for _ in range(window)]
    for r, k in rec.violations:
        row = hist[book.now - r]
        row[0] += book.weight(k) // MICRO
        row[1] += 1
        row[2] += k in MALFUNCTION

    def left(until: int | None) -> int:
        return 0 if until is None else until - book.now

    return (
        tuple((w, n, m) for w, n, m in hist),
        rec.rank,
        left(rec.suspended_until),
        left(rec.quarantined_until),
        left(rec.probation_until),
        rec.strategic,
    )


def _repair_check(ok: bool) -> Callable[[str, int], bool]:
    """A repair check that always answers ``ok``."""
    return lambda agent, now: ok


def _python_graph(params: Params, window: int, per_round: int) -> set[tuple[AbsState, AbsState]]:
    """Every (state, next state) of one agent's book, explored breadth-first from σ0: a record
    of each kind while not banned and under ``per_round`` this round (the spec's workload),
    and a tick with the repair check passing or failing."""
    start = SanctionBook(params)
    seen = {_abstract(start, "x", window): start}
    todo, edges = [start], set()
    while todo:
        book = todo.pop()
        src = _abstract(book, "x", window)
        succ = []
        rec = book.state("x")
        this_round = sum(1 for r, _ in rec.violations if r == book.now)
        if rec.rank != 4 and this_round < per_round:
            for kind in CI_KINDS:
                nxt = copy.deepcopy(book)
                nxt.record("x", kind, nxt.now)
                succ.append(nxt)
        for ok in (True, False):
            nxt = copy.deepcopy(book)
            nxt._repair_check = _repair_check(ok)
            nxt.tick(nxt.now + 1)
            succ.append(nxt)
        for nxt in succ:
            dst = _abstract(nxt, "x", window)
            edges.add((src, dst))
            if dst not in seen:
                seen[dst] = nxt
                todo.append(nxt)
    return edges


def _tlc_graph(tmp: Path, cfg_text: str) -> set[tuple[AbsState, AbsState]]:
    """TLC's state graph of the model (``-dump dot``), projected like ``_abstract``."""
    for name in ("spec/Sanctions.tla", "models/MCSanctions.tla"):
        (tmp / Path(name).name).write_text((ROOT / name).read_text(encoding="utf-8"))
    (tmp / "agree.cfg").write_text(cfg_text, encoding="utf-8")
    try:
        cmd = [str(find_java()), "-cp", str(find_jar()), "tlc2.TLC", "-workers", "1"]
    except TlcSetupError as exc:  # pragma: no cover - TLC is installed with the dev extras
        pytest.skip(str(exc))
    cmd += ["-metadir", str(tmp / "meta"), "-dump", "dot", str(tmp / "graph.dot")]
    cmd += ["-config", "agree.cfg", "MCSanctions.tla"]
    done = subprocess.run(
        [*cmd[:1], f"-Djava.io.tmpdir={tmp}", *cmd[1:]],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    nodes: dict[str, AbsState] = {}
    edges = []
    for line in (tmp / "graph.dot").read_text(encoding="utf-8").splitlines():
        if m := re.match(r"^(-?\d+) -> (-?\d+) ", line):
            edges.append((m[1], m[2]))
        elif m := re.match(r'^(-?\d+) \[label="(.*)"(,style = filled)?\];?$', line):
            text = re.sub(r"\\(.)", lambda e: "\n" if e[1] == "n" else e[1], m[2])
            state: dict[str, Any] = {}
            for part in re.split(r"^/\\ ", text, flags=re.M)[1:]:
                name, value = part.split(" = ", 1)
                state[name] = to_itf(parse_value(value.strip()))
            agent = next(iter(state["rank"]))
            ages = sorted(state["hist"][agent]["#map"])
            nodes[m[1]] = (
                tuple((r["w"], r["n"], r["m"]) for _, r in ages),
                state["rank"][agent],
                state["susp"][agent],
                state["quar"][agent],
                state["prob"][agent],
                state["strategic"][agent],
            )
    return {(nodes[a], nodes[b]) for a, b in edges}


@pytest.mark.tlc
def test_spec_and_code_agree(tmp_path: Path) -> None:
    """The CI model of spec/Sanctions.tla and the Python book have the same transition
    system: TLC's state graph, projected to the per-agent variables (the history variables
    dropped), equals the graph of (abstract state, next abstract state) the reference
    reaches under the same workload and parameters — so every rule the spec checks is the
    rule the code runs, on every state of the model, not only on sampled traces."""
    cfg = (ROOT / "models" / "MCSanctions_ci.cfg").read_text(encoding="utf-8")
    assert "Agents <- CIAgents" in cfg and "Kinds <- CIKinds" in cfg
    assert re.search(
        r'CIKinds == \{"malformed", "non_reveal", "unfounded_urgent"\}',
        (ROOT / "models" / "MCSanctions.tla").read_text(encoding="utf-8"),
    )
    c = {k: int(v) for k, v in _cfg_constants(cfg).items() if v.isdigit()}
    params = Params(
        sanction_window=c["W"],
        sigma1=c["Sigma1"],
        sigma2=c["Sigma2"],
        sigma3=c["Sigma3"],
        sigma4=c["Sigma4"],
        urgent_penalty=float(c["UrgentPenalty"]),
        T_susp=c["TSusp"],
        T_quarantine=c["TQuar"],
    )
    safety_only = cfg.split("PROPERTIES")[0]  # the graph does not depend on the properties
    tlc = _tlc_graph(tmp_path, safety_only)
    code = _python_graph(params, c["W"], c["MaxPerRound"])
    assert len(tlc) > 1000, "the CI model's graph is suspiciously small"
    assert tlc == code, (
        f"spec and code differ: {len(tlc - code)} steps only TLC takes "
        f"(e.g. {sorted(tlc - code)[:3]}), {len(code - tlc)} only the code takes "
        f"(e.g. {sorted(code - tlc)[:3]})"
    )
