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


def test_agents_events_and_only_they_have_a_minimum_tier() -> None:
    """LC-SAFE-4's tier guard reads ``min_tier`` for every command an agent sends; the
    orchestrator's own events (tick's timeouts, recruit, supersede, forget) have none."""
    for name, spec in EVENTS.items():
        assert (spec.min_tier is not None) == (spec.actor == "agent"), name
        assert spec.min_tier is None or 0 <= spec.min_tier <= 3, name


# --- derived tables and helpers, called here (models/mutation/code/lifecycle.toml) ---------
# The module builds its derived constants at import, before any test runs: these tests call
# the functions themselves, so that what they compute is checked, not only its first result.


def test_command_actions_derive_from_the_events() -> None:
    from ostrom.protocol import lifecycle

    derived = lifecycle._command_actions()
    assert derived == lifecycle.COMMAND_ACTIONS
    assert derived["reveal_vote"] == ("RevealVote",) and derived["recruit"] == ("Recruit",)
    assert derived["tick"][0] == "Tick" and "Timeout" in derived["tick"]
    assert "set_agent" not in derived  # no TLA+ action: the registry is a constant
    assert all(lifecycle.ACTION_COMMANDS[a] == op for op, acts in derived.items() for a in acts)


@pytest.mark.parametrize(
    ("parts", "want"),
    [
        (("RevealVote",), "reveal-vote"),
        (("reveal_vote",), "reveal-vote"),
        (("reveal-vote",), "reveal-vote"),
        (("ReplicaID",), "replica-id"),
        (("lifecycle", "Propose", "ok"), "lifecycle-propose-ok"),
        (("--x--",), "x"),
    ],
)
def test_slug_is_the_one_spelling(parts: tuple[str, ...], want: str) -> None:
    from ostrom.protocol.lifecycle import slug

    assert slug(*parts) == want


def test_rows_for_and_triples_are_the_table() -> None:
    from ostrom.protocol.lifecycle import TRANSITIONS, rows_for, triples

    rows = rows_for("dispute")
    assert rows and all(r.event == "dispute" for r in rows)
    assert rows == tuple(r for r in TRANSITIONS if r.event == "dispute")
    assert rows_for("no-such-event") == ()
    assert triples() == {(r.event, r.source, r.dest) for r in TRANSITIONS}


def test_the_models_index_is_membership_by_identity() -> None:
    """``_Models`` keeps an identity index beside the list (O(1) ``in`` for add_model):
    appended and removed models are in and out of both, and a copy rebuilds it."""
    import copy

    from ostrom.protocol.lifecycle import _Models

    class M:
        def __eq__(self, other: object) -> bool:  # equal, but not the same model
            return True

        __hash__ = object.__hash__

    a, b = M(), M()
    models = _Models([a])
    assert a in models and b not in models
    models.append(b)
    assert b in models and list(models) == [a, b]
    models.remove(a)
    assert a not in models and b in models and len(models) == 1
    clone = copy.copy(models)
    assert isinstance(clone, _Models) and b in clone and a not in clone
