"""The artifact lifecycle as data.

The transition table below is the single source of the lifecycle: it drives the
``transitions`` state machine that every artifact runs on (``build_machine``), the
state diagram in ``docs/`` (``ostrom diagram``) and the cross-check against the
TLA+ spec (``property_tests/test_spec_agreement.py``), which requires that every
(event, source, dest) TLC reaches in ``spec/Lifecycle.tla`` is a row here and that
every row here is reached by TLC.

A row fires only when its ``verdict`` matches the verdict the orchestrator computed
for the event (a tally outcome, a fast-track decision, an arbiter's outcome).  Guards
on the *actor* (tier, sanction, role) are not rows: they are in ``EVENTS`` and are
checked by the orchestrator before any row is tried, because a refused actor must
leave the state exactly as it was (LC-SAFE-4).

Names are the protocol's names: the event ``dispute`` is the TLA+ action ``Dispute``,
the method ``Orchestrator.dispute`` and the vector op ``{"op": "dispute"}``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from transitions import EventData, Machine

# --- states ---------------------------------------------------------------------------

PROPOSED: Final = "proposed"
FAST_TRACK: Final = "fast_track"
DELIBERATION: Final = "deliberation"
COMMIT: Final = "commit"
REVEAL: Final = "reveal"
ARBITRATION: Final = "arbitration"
ACTIVE: Final = "active"
DISPUTED: Final = "disputed"
SUPERSEDED: Final = "superseded"
REJECTED: Final = "rejected"
EXPIRED: Final = "expired"
RETRACTED: Final = "retracted"
FORGOTTEN: Final = "forgotten"

STATES: Final[tuple[str, ...]] = (
    PROPOSED,
    FAST_TRACK,
    DELIBERATION,
    COMMIT,
    REVEAL,
    ARBITRATION,
    ACTIVE,
    DISPUTED,
    SUPERSEDED,
    REJECTED,
    EXPIRED,
    RETRACTED,
    FORGOTTEN,
)
#: States with no timeout pending (DESIGN §3). LC-LIVE-1: every artifact reaches one.
STABLE: Final[frozenset[str]] = frozenset(
    {ACTIVE, SUPERSEDED, REJECTED, EXPIRED, RETRACTED, FORGOTTEN}
)
TRANSIENT: Final[frozenset[str]] = frozenset(STATES) - STABLE
#: States from which a resubmission may start (after the cooldown).
RESUBMITTABLE: Final[frozenset[str]] = frozenset({REJECTED, EXPIRED, RETRACTED})
#: States a collective forget decision may end (LC-SAFE-6: never `disputed`).
FORGETTABLE: Final[frozenset[str]] = frozenset({ACTIVE, SUPERSEDED, REJECTED, EXPIRED, RETRACTED})
#: States in which agents may cast a forget vote (the decision waits while `disputed`).
FORGET_VOTABLE: Final[frozenset[str]] = FORGETTABLE | {DISPUTED}

#: Marker for the creation row (no source state: the artifact does not exist yet).
NEW: Final = "new"


@dataclass(frozen=True)
class Row:
    """One transition: ``event`` moves an artifact from ``source`` to ``dest``.

    ``verdict`` names the outcome the orchestrator computed for the event that selects
    this row (``None``: the row is the event's only outcome from ``source``).
    ``dest == source`` marks an internal transition (a vote recorded, a ballot phase
    advanced inside `disputed`).
    """

    event: str
    source: str
    dest: str
    verdict: str | None
    why: str


TRANSITIONS: Final[tuple[Row, ...]] = (
    # creation and resubmission
    Row("propose", NEW, PROPOSED, None, "submitter not sanctioned, within its rate limit"),
    Row("resubmit", REJECTED, PROPOSED, None, "cooldown elapsed, revised, count < max_resubmit"),
    Row("resubmit", EXPIRED, PROPOSED, None, "cooldown elapsed, revised, count < max_resubmit"),
    Row("resubmit", RETRACTED, PROPOSED, None, "cooldown elapsed, revised, count < max_resubmit"),
    # recruitment: fast track only for tier >= 1 submitters on a free slot, first submission
    Row(
        "recruit", PROPOSED, FAST_TRACK, "fast", "tier >= 1 submitter, slot has no active artifact"
    ),
    Row(
        "recruit",
        PROPOSED,
        DELIBERATION,
        "formal",
        "tier-0 submitter, occupied slot or resubmission",
    ),
    # fast track
    Row(
        "object", FAST_TRACK, DELIBERATION, None, "an eligible objection sends it to formal review"
    ),
    Row("timeout", FAST_TRACK, ACTIVE, None, "T_fast passed with no objection"),
    # formal review: deliberation, commit, reveal
    Row("timeout", DELIBERATION, COMMIT, None, "T_delib passed"),
    Row("commit_vote", COMMIT, COMMIT, None, "a recruited reviewer commits once"),
    Row("timeout", COMMIT, REVEAL, None, "T_commit passed"),
    Row("reveal_vote", REVEAL, REVEAL, None, "the reveal matches the voter's commitment"),
    Row("timeout", REVEAL, ACTIVE, "accept", "quorum met, accept share >= tau_accept"),
    Row("timeout", REVEAL, REJECTED, "reject", "quorum met, accept share <= tau_reject"),
    Row("timeout", REVEAL, ARBITRATION, "undecided", "quorum met, share between the thresholds"),
    Row("timeout", REVEAL, COMMIT, "rerecruit", "quorum missed the first time: fresh reviewers"),
    Row("timeout", REVEAL, EXPIRED, "expire", "quorum missed again"),
    # arbitration
    Row(
        "arbitrate",
        ARBITRATION,
        ACTIVE,
        "accept",
        "tier-3 arbiter, not a reviewer or the submitter",
    ),
    Row(
        "arbitrate",
        ARBITRATION,
        REJECTED,
        "reject",
        "tier-3 arbiter, not a reviewer or the submitter",
    ),
    Row("arbitrate", ARBITRATION, COMMIT, "revote", "at most one revote per artifact"),
    Row("timeout", ARBITRATION, REJECTED, None, "T_arb passed: status quo"),
    # disputes and urgent reports (the dispute ballot runs commit and reveal inside `disputed`)
    Row("dispute", ACTIVE, DISPUTED, None, "tier >= 2, dispute count < max_disputes"),
    Row("urgent_report", ACTIVE, DISPUTED, None, "tier >= 1; sets hidden; counts as a dispute"),
    Row("commit_vote", DISPUTED, DISPUTED, None, "a dispute reviewer commits once"),
    Row("reveal_vote", DISPUTED, DISPUTED, None, "the reveal matches the voter's commitment"),
    Row(
        "timeout", DISPUTED, DISPUTED, "reveal_phase", "T_commit passed: the dispute ballot reveals"
    ),
    Row(
        "timeout",
        DISPUTED,
        RETRACTED,
        "retract",
        "quorum q_dispute met, retract share >= tau_retract",
    ),
    Row("timeout", DISPUTED, ACTIVE, "keep", "dispute failed or missed quorum; slot still free"),
    Row("timeout", DISPUTED, SUPERSEDED, "keep_superseded", "dispute failed; slot taken meanwhile"),
    # supersession: a side effect of another artifact of the same slot becoming active
    Row("supersede", ACTIVE, SUPERSEDED, None, "another artifact of the slot became active"),
    # collective forgetting
    Row("forget_vote", ACTIVE, ACTIVE, None, "a forget vote is recorded"),
    Row("forget_vote", DISPUTED, DISPUTED, None, "recorded; the decision waits for the dispute"),
    Row("forget_vote", SUPERSEDED, SUPERSEDED, None, "a forget vote is recorded"),
    Row("forget_vote", REJECTED, REJECTED, None, "a forget vote is recorded"),
    Row("forget_vote", EXPIRED, EXPIRED, None, "a forget vote is recorded"),
    Row("forget_vote", RETRACTED, RETRACTED, None, "a forget vote is recorded"),
    Row("forget", ACTIVE, FORGOTTEN, None, "forget score S >= quorum Q, not hidden"),
    Row("forget", SUPERSEDED, FORGOTTEN, None, "forget score S >= quorum Q"),
    Row("forget", REJECTED, FORGOTTEN, None, "forget score S >= quorum Q"),
    Row("forget", EXPIRED, FORGOTTEN, None, "forget score S >= quorum Q"),
    Row("forget", RETRACTED, FORGOTTEN, None, "forget score S >= quorum Q"),
)


@dataclass(frozen=True)
class EventSpec:
    """Who may cause an event, for the guard table and the orchestrator's checks.

    ``actor``: ``"agent"`` (an agent's command, checked for sanction and ``min_tier``),
    or ``"orchestrator"`` (the orchestrator's own step: never refused for a tier).
    ``role``: an extra condition on the agent beyond its tier, in words.
    """

    event: str
    actor: str
    min_tier: int | None
    role: str
    errors: tuple[str, ...]


EVENTS: Final[dict[str, EventSpec]] = {
    e.event: e
    for e in (
        EventSpec(
            "propose",
            "agent",
            0,
            "any agent",
            ("invalid_input", "unknown_agent", "sanctioned", "duplicate", "rate_limited"),
        ),
        EventSpec(
            "resubmit",
            "agent",
            0,
            "the submitter, reputation >= r_resubmit, content revised",
            (
                "invalid_input",
                "unknown_agent",
                "unknown_artifact",
                "sanctioned",
                "not_eligible",
                "wrong_phase",
                "limit_reached",
                "cooldown",
                "duplicate",
                "rate_limited",
            ),
        ),
        EventSpec(
            "recruit",
            "orchestrator",
            None,
            "the orchestrator (also done by tick)",
            ("invalid_input", "unknown_artifact", "wrong_phase"),
        ),
        EventSpec(
            "object",
            "agent",
            1,
            "a recruited reviewer or a subscriber of the slot, not the submitter",
            (
                "invalid_input",
                "unknown_agent",
                "unknown_artifact",
                "sanctioned",
                "not_eligible",
                "wrong_phase",
            ),
        ),
        EventSpec(
            "commit_vote",
            "agent",
            1,
            "a reviewer of the open ballot",
            (
                "invalid_input",
                "unknown_agent",
                "unknown_artifact",
                "sanctioned",
                "not_eligible",
                "wrong_phase",
                "duplicate",
            ),
        ),
        EventSpec(
            "reveal_vote",
            "agent",
            1,
            "a reviewer who committed in this ballot round",
            (
                "invalid_input",
                "unknown_agent",
                "unknown_artifact",
                "sanctioned",
                "not_eligible",
                "wrong_phase",
                "duplicate",
                "bad_reveal",
            ),
        ),
        EventSpec(
            "arbitrate",
            "agent",
            3,
            "not a reviewer of the artifact, not the submitter",
            (
                "invalid_input",
                "unknown_agent",
                "unknown_artifact",
                "sanctioned",
                "not_eligible",
                "wrong_phase",
                "limit_reached",
            ),
        ),
        EventSpec(
            "dispute",
            "agent",
            2,
            "any tier-2 agent within its dispute rate limit",
            (
                "invalid_input",
                "unknown_agent",
                "unknown_artifact",
                "sanctioned",
                "not_eligible",
                "wrong_phase",
                "limit_reached",
                "rate_limited",
            ),
        ),
        EventSpec(
            "urgent_report",
            "agent",
            1,
            "any tier-1 agent within its dispute rate limit",
            (
                "invalid_input",
                "unknown_agent",
                "unknown_artifact",
                "sanctioned",
                "not_eligible",
                "wrong_phase",
                "limit_reached",
                "rate_limited",
            ),
        ),
        EventSpec(
            "forget_vote",
            "agent",
            0,
            "any agent, once per artifact",
            (
                "invalid_input",
                "unknown_agent",
                "unknown_artifact",
                "sanctioned",
                "wrong_phase",
                "duplicate",
            ),
        ),
        EventSpec("timeout", "orchestrator", None, "the orchestrator, on tick", ()),
        EventSpec("supersede", "orchestrator", None, "the orchestrator, on activation", ()),
        EventSpec("forget", "orchestrator", None, "the orchestrator, on tick", ()),
    )
}

#: Commands that are not lifecycle events of one artifact.
GLOBAL_OPS: Final[tuple[str, ...]] = ("tick", "set_agent")


def rows_for(event: str) -> tuple[Row, ...]:
    """All rows of one event, in table order."""
    return tuple(r for r in TRANSITIONS if r.event == event)


def triples() -> frozenset[tuple[str, str, str]]:
    """The table as a set of (event, source, dest) — what the TLA+ cross-check compares."""
    return frozenset((r.event, r.source, r.dest) for r in TRANSITIONS)


# --- the transitions machine ------------------------------------------------------------


def _verdict_is(verdict: str) -> Any:
    def check(event_data: EventData) -> bool:
        return bool(event_data.kwargs.get("verdict") == verdict)

    check.__name__ = f"verdict_is_{verdict}"
    return check


class LifecycleMachine(Machine):  # type: ignore[misc]
    """A ``transitions`` machine that binds only what the orchestrator uses to each model.

    ``add_model`` normally attaches, per model, an ``is_<state>`` helper for every state and a
    ``may_<event>`` helper for every event (about 30 partials, ~0.3 ms per artifact). The
    orchestrator fires events through ``model.trigger(event, ...)`` only, so those helpers
    are skipped; the trigger methods, the state attribute and all transitions and
    conditions are the library's own.
    """

    def _add_model_to_state(self, state: Any, model: Any) -> None:
        pass

    def _add_may_transition_func_for_trigger(self, trigger: str, model: Any) -> None:
        pass


def build_machine(models: Iterable[Any] = ()) -> Machine:
    """One ``transitions`` machine, built from ``TRANSITIONS``, shared by all artifacts.

    ``auto_transitions=False``: no ``to_<state>`` shortcuts, so the only way to change an
    artifact's state is a row of the table.  An event whose rows do not apply raises
    ``MachineError`` (no row from this state) or returns ``False`` (no verdict matched);
    the orchestrator never lets either happen after its checks, and treats both as bugs.
    """
    machine = LifecycleMachine(
        model=None,
        states=list(STATES),
        initial=PROPOSED,
        auto_transitions=False,
        send_event=True,
        ignore_invalid_triggers=False,
        model_attribute="state",
    )
    for row in TRANSITIONS:
        if row.source == NEW:
            continue  # creation: a new model starts in `proposed`
        conditions = [_verdict_is(row.verdict)] if row.verdict is not None else []
        # dest=None makes an internal transition: no exit/enter, state unchanged.
        dest = None if row.dest == row.source else row.dest
        machine.add_transition(row.event, row.source, dest, conditions=conditions)
    for model in models:
        machine.add_model(model)
    return machine
