"""The transitions machine built from ``TRANSITIONS`` accepts exactly the table's rows."""

from __future__ import annotations

import itertools

import pytest
from transitions import MachineError

from ostrom.protocol.lifecycle import (
    EVENTS,
    FORGET_VOTABLE,
    FORGETTABLE,
    FORGOTTEN,
    NEW,
    RESUBMITTABLE,
    STABLE,
    STATES,
    TRANSIENT,
    TRANSITIONS,
    build_machine,
)

EVENT_NAMES = sorted({r.event for r in TRANSITIONS})
#: `propose` only creates (source NEW): it is a model's initial state, not a machine event.
MACHINE_EVENTS = sorted({r.event for r in TRANSITIONS if r.source != NEW})
VERDICTS = sorted({r.verdict for r in TRANSITIONS if r.verdict is not None})


class Model:
    state: str


def _outcome(source: str, event: str, verdict: str | None) -> str | None:
    """What the machine does: the destination, or None if it refuses."""
    machine = build_machine()
    m = Model()
    machine.add_model(m)
    machine.set_state(source, model=m)
    try:
        ok = m.trigger(event, verdict=verdict)  # type: ignore[attr-defined]
    except MachineError:
        return None
    return m.state if ok else None


def _expected(source: str, event: str, verdict: str | None) -> str | None:
    for r in TRANSITIONS:  # first matching row wins, as in transitions
        if r.source == source and r.event == event and r.verdict in (None, verdict):
            return r.dest
    return None


@pytest.mark.parametrize(("source", "event"), list(itertools.product(STATES, MACHINE_EVENTS)))
def test_machine_accepts_exactly_the_rows(source: str, event: str) -> None:
    for verdict in [None, *VERDICTS]:
        assert _outcome(source, event, verdict) == _expected(source, event, verdict), (
            source,
            event,
            verdict,
        )


def test_creation_is_the_initial_state() -> None:
    machine = build_machine()
    m = Model()
    machine.add_model(m)
    assert m.state == "proposed" and "propose" not in machine.events
    assert [r.dest for r in TRANSITIONS if r.source == NEW] == ["proposed"]


def test_every_state_appears_and_sets_partition() -> None:
    seen = {r.source for r in TRANSITIONS} | {r.dest for r in TRANSITIONS}
    assert seen - {NEW} == set(STATES)
    assert set(STATES) == STABLE | TRANSIENT and not STABLE & TRANSIENT
    assert {"active", "superseded", "rejected", "expired", "retracted", "forgotten"} == STABLE
    assert RESUBMITTABLE <= STABLE and FORGETTABLE <= STABLE and "disputed" not in FORGETTABLE
    assert FORGETTABLE | {"disputed"} == FORGET_VOTABLE


def test_timeouts_only_leave_transient_states() -> None:
    """LC-LIVE-1 needs every transient state but `proposed` (recruited at the next tick)
    to have a timeout row, and no stable state to have one."""
    timed = {r.source for r in TRANSITIONS if r.event == "timeout"}
    assert timed == TRANSIENT - {"proposed"}
    assert {r.source for r in TRANSITIONS if r.event == "recruit"} == {"proposed"}


def test_forgotten_is_terminal() -> None:
    """LC-SAFE-6: no row leaves `forgotten`, and none forgets a disputed artifact."""
    assert not [r for r in TRANSITIONS if r.source == FORGOTTEN]
    assert {r.source for r in TRANSITIONS if r.event == "forget"} == set(FORGETTABLE)


def test_every_event_has_a_guard_entry() -> None:
    assert set(EVENT_NAMES) == set(EVENTS)
