"""The artifact lifecycle as data.

The transition table below is the single source of the lifecycle: it drives the
``transitions`` state machine that every artifact runs on (``build_machine``), the
state diagram in ``docs/`` (``ostrom diagram``) and the cross-check against the
TLA+ spec (``property_tests/verify/test_models.py``), which requires that every
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

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from transitions import EventData, Machine

__all__ = [
    "ACTION_COMMANDS",
    "ACTIVE",
    "AGENT_COMMANDS",
    "ARBITRATION",
    "BALLOT_KINDS",
    "COMMAND_ACTIONS",
    "COMMIT",
    "DELIBERATION",
    "DISPUTED",
    "EVENTS",
    "EXPIRED",
    "FAST_TRACK",
    "FORGETTABLE",
    "FORGET_VOTABLE",
    "FORGOTTEN",
    "GLOBAL_ACTIONS",
    "GLOBAL_OPS",
    "NEW",
    "PROPOSED",
    "REJECTED",
    "RESUBMITTABLE",
    "RETRACTED",
    "REVEAL",
    "SINGLE_ACTIONS",
    "STABLE",
    "STATES",
    "SUPERSEDED",
    "TIMED",
    "TRANSIENT",
    "TRANSITIONS",
    "EventSpec",
    "LifecycleMachine",
    "Row",
    "build_machine",
    "rows_for",
    "slug",
    "triples",
]

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

#: Every state an artifact can be in, in the spec's order (spec/Lifecycle.tla).
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
#: States with no timeout pending (docs/design.md §3). LC-LIVE-1: every artifact reaches one.
STABLE: Final[frozenset[str]] = frozenset(
    {ACTIVE, SUPERSEDED, REJECTED, EXPIRED, RETRACTED, FORGOTTEN}
)
TRANSIENT: Final[frozenset[str]] = frozenset(STATES) - STABLE
#: States with a deadline (a timeout pending): every transient state but `proposed`, which
#: waits for its recruitment, not for a clock (Lifecycle.tla: Timed).
TIMED: Final[frozenset[str]] = TRANSIENT - {PROPOSED}
#: The states in which a ballot collects commitments, and its kind (voting.BallotKind):
#: the review ballot commits in `commit`, the dispute ballot inside `disputed`.
BALLOT_KINDS: Final[dict[str, str]] = {COMMIT: "review", DISPUTED: "dispute"}
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


#: The transition table: every event's source, destination, verdict and why; the one
#: source of spec/LifecycleTable.tla, the diagrams and the guards table.
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
    """Who may cause an event, for the guard table and the orchestrator's checks, and
    where the event lives in the spec and on the wire.

    ``actor``: ``"agent"`` (an agent's command, checked for sanction and ``min_tier``),
    or ``"orchestrator"`` (the orchestrator's own step: never refused for a tier).
    ``role``: an extra condition on the agent beyond its tier, in words.
    ``action``: the TLA+ action of spec/Lifecycle.tla that takes the event (None: the
    event has no action of its own).  ``command``: the command (``{"op": ...}``) whose
    step takes the action (None: no command does).  Trace validation, the TLC vector
    generator and spec/LifecycleTable.tla (``CommandAction``) all read this one map.
    """

    event: str
    actor: str
    min_tier: int | None
    role: str
    errors: tuple[str, ...]
    action: str | None = None
    command: str | None = None


EVENTS: Final[dict[str, EventSpec]] = {
    e.event: e
    for e in (
        EventSpec(
            "propose",
            "agent",
            0,
            "any agent",
            ("invalid_input", "unknown_agent", "sanctioned", "duplicate", "rate_limited"),
            action="Propose",
            command="propose",
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
            action="Resubmit",
            command="resubmit",
        ),
        EventSpec(
            "recruit",
            "orchestrator",
            None,
            "the orchestrator (also done by tick)",
            ("invalid_input", "unknown_artifact", "wrong_phase"),
            action="Recruit",
            command="recruit",
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
            action="Object",
            command="object",
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
            action="CommitVote",
            command="commit_vote",
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
            action="RevealVote",
            command="reveal_vote",
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
            action="Arbitrate",
            command="arbitrate",
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
            action="Dispute",
            command="dispute",
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
            action="UrgentReport",
            command="urgent_report",
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
            action="ForgetVote",
            command="forget_vote",
        ),
        EventSpec(
            "timeout", "orchestrator", None, "the orchestrator, on tick", (), "Timeout", "tick"
        ),
        # supersession is a side effect of an activation (Lifecycle.tla: Activate, inside
        # Timeout or Arbitrate), not an action of its own
        EventSpec("supersede", "orchestrator", None, "the orchestrator, on activation", ()),
        EventSpec(
            "forget", "orchestrator", None, "the orchestrator, on tick", (), "Forget", "tick"
        ),
    )
}

#: Commands that are not lifecycle events of one artifact, with their own TLA+ action
#: (``set_agent`` has none: the registry is a constant of spec/Lifecycle.tla).
GLOBAL_ACTIONS: Final[dict[str, str | None]] = {"tick": "Tick", "set_agent": None}
GLOBAL_OPS: Final[tuple[str, ...]] = tuple(GLOBAL_ACTIONS)


def _command_actions() -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for spec in EVENTS.values():
        if spec.command is None or spec.action is None:
            continue
        own = GLOBAL_ACTIONS.get(spec.command)
        out.setdefault(spec.command, [own] if own else []).append(spec.action)
    return {op: tuple(actions) for op, actions in out.items()}


#: Each command and the TLA+ actions its step is made of, in ``EVENTS`` order: one action
#: for an agent's command and for ``recruit``; ``tick`` is Tick and then the due Timeout
#: and Forget steps (the reference's tick is atomic, the spec's is not).
COMMAND_ACTIONS: Final[dict[str, tuple[str, ...]]] = _command_actions()
#: The inverse: the command each TLA+ action belongs to (how a TLC behaviour becomes
#: commands, and what trace validation names a command's expected spec step).
ACTION_COMMANDS: Final[dict[str, str]] = {
    action: op for op, actions in COMMAND_ACTIONS.items() for action in actions
}
#: The commands whose step is one TLA+ action, and that action (LifecycleTrace.tla: Act).
SINGLE_ACTIONS: Final[dict[str, str]] = {
    op: actions[0] for op, actions in COMMAND_ACTIONS.items() if len(actions) == 1
}
#: The commands an agent sends (its events), checked for its tier and sanction.
AGENT_COMMANDS: Final[tuple[str, ...]] = tuple(
    spec.event for spec in EVENTS.values() if spec.actor == "agent"
)


def slug(*parts: str) -> str:
    """The one spelling of an event, action or row in a file or vector name: lower case,
    words joined by ``-`` (``reveal_vote``, ``RevealVote`` and ``reveal-vote`` are all
    ``reveal-vote``), the parts joined by ``-``."""
    words = (re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", p) for p in parts)
    return re.sub(r"[^a-z0-9]+", "-", "-".join(words).lower()).strip("-")


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


class _Models(list[Any]):
    """``Machine.models`` with an identity index beside the list.

    ``transitions`` (0.9.3) asks ``model not in self.models`` in ``add_model`` before it
    binds a model: a list scan, which made each new artifact cost O(artifacts already
    there).  The library changes the list only through ``append`` and ``remove``; both keep
    the index, so that membership test is O(1).  Identity is what the scan decided too
    (the orchestrator's ``Artifact`` has no ``__eq__``).
    """

    def __init__(self, models: Iterable[Any] = ()) -> None:
        super().__init__(models)
        self._ids = {id(m) for m in self}

    def __contains__(self, model: object) -> bool:
        return id(model) in self._ids

    def append(self, model: Any) -> None:
        super().append(model)
        self._ids.add(id(model))

    def remove(self, model: Any) -> None:
        super().remove(model)
        self._ids.discard(id(model))

    def __reduce__(self) -> tuple[type[_Models], tuple[list[Any]]]:
        # A copy (or an unpickled machine) rebuilds the index from its own models.
        return (_Models, (list(self),))


class LifecycleMachine(Machine):
    """A ``transitions`` machine whose ``add_model`` is O(1) in the number of models and
    binds only what the orchestrator uses to each model.

    ``add_model`` normally attaches, per model, an ``is_<state>`` helper for every state, and
    an ``<event>()`` trigger method and a ``may_<event>`` helper for every event (about 40
    partials, ~0.3 ms per artifact: the largest cost of a proposal).  The orchestrator
    fires events through ``model.trigger(event, ...)`` only, so all of those are skipped;
    ``trigger``, the state attribute and all transitions and conditions are the
    library's own.  ``models`` is a ``_Models`` list, so the library's
    own "already added?" test does not scan every artifact (``bench/run.py`` measures
    proposals/s at 1k, 10k and 100k artifacts).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.models = _Models(self.models)

    def _add_model_to_state(self, state: Any, model: Any) -> None:
        pass

    def _add_trigger_to_model(self, trigger: str, model: Any) -> None:
        pass  # no per-event method: the orchestrator calls model.trigger(event)


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
