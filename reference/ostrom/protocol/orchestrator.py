"""The lifecycle orchestrator: sans-IO and deterministic, (state, command) -> (state, observation).

Only the orchestrator changes artifact state (docs/design.md §3); it never votes, proposes or
disputes.  Every command is handled in two phases:

1. **check** — the ordered checks of docs/rules.md ("Checking a command"), each raising
   ``Refused`` with the first failing code.  Nothing is mutated in this phase, so a
   refused command leaves the state exactly as it was (tested by a deep snapshot
   comparison before/after every refused command in ``property_tests``);
2. **mutate** — bookkeeping, then the lifecycle event is triggered on the artifact's
   model of the shared ``transitions`` machine built from ``lifecycle.TRANSITIONS``.  The
   orchestrator computes the *verdict* (a tally, a fast-track decision, an arbiter's
   outcome) and the table picks the row: ``.state`` is never assigned here.

Time advances only through ``tick`` (rules.md "Time").  Nothing here reads a clock or an
entropy source: reviewer selection is a sha256 sortition over ``params.seed``
(``voting.select_reviewers``).

Cost per command is O(1) in the number of artifacts and, for a recruitment, O(k log n) in
the number n of agents (the sorted eligible tuple is rebuilt only when an agent's
eligibility changes):
active artifacts are indexed per slot, deadlines per round, proposed artifacts and
forget candidates in their own sets, so ``tick`` only touches artifacts that are due;
a new artifact joins the machine in O(1) too (``lifecycle.LifecycleMachine``), which
``make bench`` checks with proposals/s at 1,000, 10,000 and 100,000 artifacts.

Each method names its TLA+ action (``# spec/Lifecycle.tla: Name``) and each guard the
property it protects (``# LC-SAFE-4``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from transitions import Machine

from ostrom.protocol.agents import Agent, Sanction, micro
from ostrom.protocol.commands import OPS as OPS
from ostrom.protocol.commands import PAYLOAD_FIELDS, Event, Observation, payload_matches
from ostrom.protocol.commands import SCHEMAS as SCHEMAS
from ostrom.protocol.errors import ErrorCode, Refused
from ostrom.protocol.forgetting import BLOCK_POPULATION, RULE, ForgetRule
from ostrom.protocol.forgetting import decide as forget_decide
from ostrom.protocol.lifecycle import (
    ACTIVE,
    ARBITRATION,
    COMMIT,
    DELIBERATION,
    DISPUTED,
    EVENTS,
    FAST_TRACK,
    FORGET_VOTABLE,
    NEW,
    PROPOSED,
    RESUBMITTABLE,
    REVEAL,
    STABLE,
    build_machine,
)
from ostrom.protocol.params import DEFAULTS, Params
from ostrom.protocol.voting import (
    Ballot,
    BallotKind,
    Phase,
    dispute_verdict,
    review_verdict,
    select_reviewers,
)

__all__ = ["LEGIT_ACTIVE_PATHS", "Artifact", "Orchestrator"]

#: Decision paths by which an artifact may become (or return to) `active` (LC-SAFE-1).
LEGIT_ACTIVE_PATHS: Final = frozenset({"fast_track", "tally", "arbiter", "dispute_kept"})


#: The commands an agent sends (its ``agent`` field is the sender).
_AGENT_OPS: Final = frozenset(name for name, spec in EVENTS.items() if spec.actor == "agent")

# --- input validation (check 1: invalid_input): protocol/commands.py --------------------
# SCHEMAS (op -> required and optional field checks) and OPS are the command table's, the
# one every other reader of commands uses too (conformance layers, trace compilers, the
# published schema/command.schema.json).


def _violation(agent: str, kind: str) -> Event:
    return {"event": "violation", "agent": agent, "kind": kind}


class Artifact:
    """One artifact: the model object of the shared ``transitions`` machine.

    ``state`` belongs to the machine (it is set by ``add_model`` and by triggered
    events only).  The rest is the orchestrator's bookkeeping of docs/design.md §3.
    """

    state: str
    trigger: Callable[..., bool]

    def __init__(
        self, id: str, slot: str, submitter: str, digest: str, evidence: tuple[str, ...], seq: int
    ) -> None:
        self.id = id
        self.slot = slot
        self.submitter = submitter
        self.digest: str | None = digest
        self.evidence: tuple[str, ...] | None = evidence
        self.seq = seq  # creation order: ticks process artifacts in this order
        self.hidden = False
        self.dispute_count = 0
        self.resubmit_count = 0
        self.deadline: int | None = None
        self.stable_since = 0
        #: {"path", "verdict", "tally"?, "arbiter"?}: how the last decision was reached (LC-SAFE-1)
        self.decision: dict[str, Any] | None = None
        self.round = 0  # last ballot round allocated; rounds never repeat for an artifact
        self.reviewers: frozenset[str] = frozenset()  # of the open (or last) ballot
        self.review_reviewers: frozenset[str] = frozenset()  # everyone recruited this review
        self.rerecruited = False
        self.revoted = False
        self.ballot: Ballot | None = None
        self.urgent_reporter: str | None = None
        self.disputer: str | None = None  # of the open plain dispute (frivolous if it fails)
        self.forget_votes: dict[str, int] = {}  # voter -> confidence in micro-units
        self.tombstone: dict[str, Any] | None = None


class Orchestrator:
    """The lifecycle of all artifacts under one parameter set and agent registry.

    ``apply(command)`` is the untrusted entry point (JSON-like dicts in, observations
    out, never an exception for bad input).  The per-op methods (``propose``, ...)
    validate the same way and return the events, raising ``Refused`` on refusal.
    """

    #: The forget decision rule (forgetting.py); property_tests' mutants replace it.
    forget_rule: ForgetRule = RULE

    def __init__(self, params: Params = DEFAULTS, agents: Iterable[Agent] = ()) -> None:
        self.params = params
        self._agents: dict[str, Agent] = {a.id: a for a in agents}
        self._machine: Machine = build_machine()
        self._artifacts: dict[str, Artifact] = {}
        self._now = 0
        self._seq = 0
        self._proposed: set[str] = set()  # awaiting recruitment
        self._deadlines: dict[int, set[str]] = {}  # round -> artifacts whose timeout is due then
        self._active: dict[str, set[str]] = {}  # slot -> active artifacts (LC-SAFE-2: <= 1)
        self._proposals: dict[str, int] = {}  # per-round proposal/resubmission counts
        self._disputes: dict[str, int] = {}  # per-round dispute/urgent-report counts
        self._forget_voted: set[str] = set()  # artifacts holding forget votes
        self._forget_watch: set[str] = set()  # ... whose score must be re-evaluated at the tick
        self._forget_all = False  # registry changed: re-evaluate every forget candidate
        self._eligible_cache: tuple[str, ...] | None = None
        self._max_disputes = params.max_disputes
        self._tau_accept = micro(params.tau_accept)
        self._tau_reject = micro(params.tau_reject)
        self._tau_retract = micro(params.tau_retract)
        self._min_side = params.tally_min_side  # TALLY-1
        self._min_active = params.min_active_agents  # FG-1
        self._dispatch: dict[str, Callable[..., list[Event]]] = {
            op: getattr(self, f"_op_{op}") for op in OPS
        }

    # --- entry points ---------------------------------------------------------------------

    def apply(self, command: object) -> Observation:
        """Apply one command; return ``{"result": "ok" | code, "events": [...]}``."""
        try:
            op, kwargs = self._parse(command)
        except Refused as refusal:
            return {"result": refusal.code.value, "events": self._malformed(command)}
        try:
            events = self._dispatch[op](**kwargs)
        except Refused as refusal:
            return {"result": refusal.code.value, "events": refusal.events}
        return {"result": "ok", "events": events}

    def _malformed(self, command: object) -> list[Event]:
        """A command that fails check 1 but names a registered agent is that agent's
        ``malformed`` violation (docs/design.md §4; the sanctions layer counts it, and many of them
        look like malfunction).  Nothing else is changed; anonymous garbage is ignored."""
        if not isinstance(command, dict):
            return []
        op = command.get("op")
        if not isinstance(op, str) or op not in _AGENT_OPS:
            return []  # set_agent's "agent" is its subject, not its sender
        agent = command.get("agent")
        if isinstance(agent, str) and agent in self._agents:
            return [_violation(agent, "malformed")]
        return []

    def _parse(self, command: object) -> tuple[str, dict[str, Any]]:
        """Check 1 (``invalid_input``): op known, required fields present, no extra keys,
        every field of the right type and range; normalise lists to tuples."""
        if not isinstance(command, dict):
            raise Refused(ErrorCode.INVALID_INPUT, "command is not an object")
        op = command.get("op")
        if not isinstance(op, str) or op not in SCHEMAS:
            raise Refused(ErrorCode.INVALID_INPUT, f"unknown op {op!r}")
        required, optional = SCHEMAS[op]
        kwargs: dict[str, Any] = {}
        for key, value in command.items():
            if key == "op":
                continue
            check = required.get(key) or optional.get(key)
            if check is None:
                raise Refused(ErrorCode.INVALID_INPUT, f"{op}: unexpected field {key!r}")
            if not check(value):
                raise Refused(ErrorCode.INVALID_INPUT, f"{op}: bad {key} {value!r}")
            kwargs[key] = tuple(value) if isinstance(value, list) else value
        missing = [k for k in required if k not in kwargs]
        if missing:
            raise Refused(ErrorCode.INVALID_INPUT, f"{op}: missing {', '.join(missing)}")
        if not payload_matches(command):
            raise Refused(ErrorCode.INVALID_INPUT, f"{op}: the payload does not hash to digest")
        for key in PAYLOAD_FIELDS:  # payload, not state (docs/design.md §11): only the digest
            kwargs.pop(key, None)
        return op, kwargs

    def _call(self, op: str, **fields: Any) -> list[Event]:
        cmd = {"op": op, **{k: v for k, v in fields.items() if v is not None}}
        _, kwargs = self._parse(cmd)
        return self._dispatch[op](**kwargs)

    # --- per-op API (same checks as apply; raise Refused) ----------------------------------

    def propose(
        self,
        agent: str,
        artifact: str,
        slot: str,
        digest: str,
        evidence: Sequence[str] | None = None,
    ) -> list[Event]:
        """# spec/Lifecycle.tla: Propose"""
        return self._call(
            "propose", agent=agent, artifact=artifact, slot=slot, digest=digest, evidence=evidence
        )

    def resubmit(
        self, agent: str, artifact: str, digest: str, evidence: Sequence[str] | None = None
    ) -> list[Event]:
        """# spec/Lifecycle.tla: Resubmit"""
        return self._call(
            "resubmit", agent=agent, artifact=artifact, digest=digest, evidence=evidence
        )

    def recruit(self, artifact: str) -> list[Event]:
        """# spec/Lifecycle.tla: Recruit"""
        return self._call("recruit", artifact=artifact)

    def object(self, agent: str, artifact: str) -> list[Event]:
        """# spec/Lifecycle.tla: Object"""
        return self._call("object", agent=agent, artifact=artifact)

    def commit_vote(self, agent: str, artifact: str, commitment: str) -> list[Event]:
        """# spec/Lifecycle.tla: CommitVote"""
        return self._call("commit_vote", agent=agent, artifact=artifact, commitment=commitment)

    def reveal_vote(
        self, agent: str, artifact: str, vote: str, reason: str, salt: str
    ) -> list[Event]:
        """# spec/Lifecycle.tla: RevealVote"""
        return self._call(
            "reveal_vote", agent=agent, artifact=artifact, vote=vote, reason=reason, salt=salt
        )

    def arbitrate(self, agent: str, artifact: str, outcome: str) -> list[Event]:
        """# spec/Lifecycle.tla: Arbitrate"""
        return self._call("arbitrate", agent=agent, artifact=artifact, outcome=outcome)

    def dispute(self, agent: str, artifact: str, reason: str) -> list[Event]:
        """# spec/Lifecycle.tla: Dispute"""
        return self._call("dispute", agent=agent, artifact=artifact, reason=reason)

    def urgent_report(self, agent: str, artifact: str, reason: str) -> list[Event]:
        """# spec/Lifecycle.tla: UrgentReport"""
        return self._call("urgent_report", agent=agent, artifact=artifact, reason=reason)

    def forget_vote(
        self, agent: str, artifact: str, confidence: float | None = None
    ) -> list[Event]:
        """# spec/Lifecycle.tla: ForgetVote"""
        return self._call("forget_vote", agent=agent, artifact=artifact, confidence=confidence)

    def tick(self) -> list[Event]:
        """# spec/Lifecycle.tla: Tick (then the due Recruit, Timeout and Forget actions)"""
        return self._call("tick")

    def set_agent(
        self,
        agent: str,
        tier: int,
        weight: float | None = None,
        reputation: float | None = None,
        sanction: str | None = None,
        subscriptions: Sequence[str] | None = None,
    ) -> list[Event]:
        """Replace a registry entry (stands in for the reputation and sanction layers).

        Not an action of spec/Lifecycle.tla: there the registry is CONSTANTS.
        """
        return self._call(
            "set_agent",
            agent=agent,
            tier=tier,
            weight=weight,
            reputation=reputation,
            sanction=sanction,
            subscriptions=subscriptions,
        )

    # --- common checks -------------------------------------------------------------------

    def _min_tier(self, event: str) -> int:
        tier = EVENTS[event].min_tier
        return 0 if tier is None else tier

    def _actor(self, agent: str, event: str, artifact: str | None) -> tuple[Agent, Artifact]:
        """Checks 2-5 shared by all agent commands (the role part of 5 is the caller's)."""
        a = self._agents.get(agent)
        if a is None:
            raise Refused(ErrorCode.UNKNOWN_AGENT, agent)
        art = self._artifacts.get(artifact) if artifact is not None else None
        if artifact is not None and art is None:
            raise Refused(ErrorCode.UNKNOWN_ARTIFACT, artifact)
        if a.barred:  # LC-SAFE-4: suspended, banned or quarantined agents act on nothing
            raise Refused(ErrorCode.SANCTIONED, agent)
        if a.tier < self._min_tier(event):  # LC-SAFE-4: tier guard of the event
            raise Refused(ErrorCode.NOT_ELIGIBLE, f"{agent} tier {a.tier} < {event} min tier")
        return a, art  # type: ignore[return-value]  # art is None only for propose

    def _weight(self, agent: str) -> int:
        return self._agents[agent].weight_micro(self.params.w_min)

    def _eligible(self) -> tuple[str, ...]:
        """Agents who may be recruited: tier >= 1 and not barred, sorted by code point (the
        sortition indexes it).  Cached until an agent's eligibility changes."""
        if self._eligible_cache is None:
            self._eligible_cache = tuple(
                sorted(a.id for a in self._agents.values() if _recruitable(a))
            )
        return self._eligible_cache

    def _reveal_matches(
        self, ballot: Ballot, voter: str, artifact: str, vote: str, reason: str, salt: str
    ) -> bool:
        return ballot.matches(voter, artifact, vote, reason, salt)  # CR-2: this round only

    # --- state changes -------------------------------------------------------------------

    def _set_deadline(self, art: Artifact, deadline: int | None) -> None:
        if art.deadline is not None:
            bucket = self._deadlines.get(art.deadline)
            if bucket is not None:
                bucket.discard(art.id)
        art.deadline = deadline
        if deadline is not None:
            self._deadlines.setdefault(deadline, set()).add(art.id)

    def _fire(
        self, art: Artifact, event: str, verdict: str | None = None, timer: int | None = None
    ) -> Event:
        """Trigger ``event`` on the shared machine and keep the indexes in step.

        ``timer`` (a duration) starts the timeout of the state entered.  A row that does
        not match is an orchestrator bug (the checks ran first), never a refusal.
        """
        source = art.state
        if not art.trigger(event, verdict=verdict):
            raise AssertionError(f"no row {event}/{verdict} from {source} for {art.id}")
        dest = art.state
        if source != dest:
            if source == ACTIVE:
                self._active[art.slot].discard(art.id)
            if dest == ACTIVE:
                self._active.setdefault(art.slot, set()).add(art.id)
            if dest in STABLE:
                art.stable_since = self._now
                self._set_deadline(art, None)
        if timer is not None:
            self._set_deadline(art, self._now + timer)
        ev: Event = {"event": event, "artifact": art.id, "from": source, "to": dest}
        if verdict is not None:
            ev["verdict"] = verdict
        return ev

    def _open_ballot(
        self, art: Artifact, kind: BallotKind, reviewers: Iterable[str], round: int
    ) -> None:
        art.round = round
        art.reviewers = frozenset(reviewers)
        art.ballot = Ballot(kind, round, art.reviewers)

    def _supersede(self, art: Artifact) -> list[Event]:
        """# spec/Lifecycle.tla: Activate — LC-SAFE-2: the slot's other active artifacts go."""
        others = self._active.get(art.slot, set()) - {art.id}
        return [
            self._fire(self._artifacts[o], "supersede")
            for o in sorted(others, key=lambda i: self._artifacts[i].seq)
        ]

    def _activate(self, art: Artifact, event: str, verdict: str | None) -> list[Event]:
        """Enter `active` through a decision (fast track, tally, arbiter), then supersede."""
        return [self._fire(art, event, verdict), *self._supersede(art)]

    def _clear_hidden(self, art: Artifact) -> None:
        art.hidden = False  # LC-SAFE-5: a failed dispute lifts the urgent report's hiding

    # --- ops -------------------------------------------------------------------------------

    def _op_propose(
        self, agent: str, artifact: str, slot: str, digest: str, evidence: tuple[str, ...] = ()
    ) -> list[Event]:
        # spec/Lifecycle.tla: Propose
        a, _ = self._actor(agent, "propose", None)
        if artifact in self._artifacts:
            raise Refused(ErrorCode.DUPLICATE, artifact)
        limit = (
            self.params.propose_rate_limited
            if a.sanction == Sanction.RATE_LIMITED
            else self.params.propose_rate
        )
        if self._proposals.get(agent, 0) >= limit:
            raise Refused(ErrorCode.RATE_LIMITED, agent, [_violation(agent, "rate_limited")])
        # --- checks passed: mutate
        self._seq += 1
        art = Artifact(artifact, slot, agent, digest, tuple(evidence), self._seq)
        self._machine.add_model(art)  # the creation row: a new model starts in `proposed`
        self._artifacts[artifact] = art
        self._proposals[agent] = self._proposals.get(agent, 0) + 1
        self._proposed.add(artifact)
        return [{"event": "propose", "artifact": artifact, "from": NEW, "to": PROPOSED}]

    def _op_recruit(self, artifact: str) -> list[Event]:
        # spec/Lifecycle.tla: Recruit
        art = self._artifacts.get(artifact)
        if art is None:
            raise Refused(ErrorCode.UNKNOWN_ARTIFACT, artifact)
        if art.state != PROPOSED:
            raise Refused(ErrorCode.WRONG_PHASE, art.state)
        return self._recruit(art)

    def _recruit(self, art: Artifact) -> list[Event]:
        submitter = self._agents.get(art.submitter)
        fast = (
            submitter is not None
            and submitter.tier >= 1
            and not self._active.get(art.slot)
            and art.resubmit_count == 0  # a resubmission is formal only
        )
        rnd = art.round + 1
        reviewers = select_reviewers(
            self.params.seed, art.id, rnd, self._eligible(), {art.submitter}, self.params.reviewers
        )
        art.round = rnd
        art.reviewers = frozenset(reviewers)
        art.review_reviewers = art.reviewers
        art.ballot = None
        self._proposed.discard(art.id)
        if fast:
            return [self._fire(art, "recruit", "fast", self.params.T_fast)]
        return [self._fire(art, "recruit", "formal", self.params.T_delib)]

    def _op_object(self, agent: str, artifact: str) -> list[Event]:
        # spec/Lifecycle.tla: Object
        a, art = self._actor(agent, "object", artifact)
        role = agent in art.reviewers or art.slot in a.subscriptions
        if not role or agent == art.submitter:  # LC-SAFE-4: role guard
            raise Refused(ErrorCode.NOT_ELIGIBLE, "not a reviewer or subscriber, or the submitter")
        if art.state != FAST_TRACK:
            raise Refused(ErrorCode.WRONG_PHASE, art.state)
        return self._do_object(art)

    def _do_object(self, art: Artifact) -> list[Event]:
        return [self._fire(art, "object", None, self.params.T_delib)]  # LC-SAFE-1

    def _op_commit_vote(self, agent: str, artifact: str, commitment: str) -> list[Event]:
        # spec/Lifecycle.tla: CommitVote
        _, art = self._actor(agent, "commit_vote", artifact)
        if agent not in art.reviewers:  # LC-SAFE-4: only the ballot's reviewers vote
            raise Refused(ErrorCode.NOT_ELIGIBLE, "not a reviewer of the ballot")
        ballot = art.ballot
        if ballot is None or ballot.phase != Phase.COMMIT or art.state not in (COMMIT, DISPUTED):
            raise Refused(ErrorCode.WRONG_PHASE, art.state)
        if (code := ballot.check_commit(agent)) is not None:
            raise Refused(code, "already committed in this round")
        # --- checks passed: mutate
        ballot.commit(agent, commitment)
        return [self._fire(art, "commit_vote")]

    def _op_reveal_vote(
        self, agent: str, artifact: str, vote: str, reason: str, salt: str
    ) -> list[Event]:
        # spec/Lifecycle.tla: RevealVote
        _, art = self._actor(agent, "reveal_vote", artifact)
        ballot = art.ballot
        if ballot is None or agent not in ballot.commitments:  # LC-SAFE-4: committed reviewers
            raise Refused(ErrorCode.NOT_ELIGIBLE, "no commitment in this round")
        if ballot.phase != Phase.REVEAL or art.state not in (REVEAL, DISPUTED):
            raise Refused(ErrorCode.WRONG_PHASE, art.state)

        def matcher(v: str, x: str, vote: str, reason: str, salt: str) -> bool:
            return self._reveal_matches(ballot, v, x, vote, reason, salt)

        code = ballot.check_reveal(agent, artifact, vote, reason, salt, matcher)  # CR-2
        if code is ErrorCode.BAD_REVEAL:
            raise Refused(code, "does not open the commitment", [_violation(agent, "bad_reveal")])
        if code is not None:
            raise Refused(code, "already revealed")
        # --- checks passed: mutate
        ballot.reveal(agent, vote, reason)
        return [self._fire(art, "reveal_vote")]

    def _op_arbitrate(self, agent: str, artifact: str, outcome: str) -> list[Event]:
        # spec/Lifecycle.tla: Arbitrate
        _, art = self._actor(agent, "arbitrate", artifact)
        if agent == art.submitter or agent in art.reviewers:  # LC-SAFE-4: no self-judging
            raise Refused(ErrorCode.NOT_ELIGIBLE, "the submitter or a reviewer of the ballot")
        if art.state != ARBITRATION:
            raise Refused(ErrorCode.WRONG_PHASE, art.state)
        if outcome == "revote" and art.revoted:
            raise Refused(ErrorCode.LIMIT_REACHED, "one revote per review")
        # --- checks passed: mutate
        prior = art.decision.get("tally") if art.decision else None
        if outcome == "revote":
            art.revoted = True
            self._open_ballot(art, BallotKind.REVIEW, art.reviewers, art.round + 1)
            return [self._fire(art, "arbitrate", "revote", self.params.T_commit)]
        art.decision = {"path": "arbiter", "verdict": outcome, "arbiter": agent, "tally": prior}
        if outcome == "accept":
            return self._activate(art, "arbitrate", "accept")
        return [self._fire(art, "arbitrate", "reject")]

    def _op_dispute(self, agent: str, artifact: str, reason: str) -> list[Event]:
        # spec/Lifecycle.tla: Dispute
        return self._open_dispute(agent, artifact, "dispute")

    def _op_urgent_report(self, agent: str, artifact: str, reason: str) -> list[Event]:
        # spec/Lifecycle.tla: UrgentReport
        return self._open_dispute(agent, artifact, "urgent_report")

    def _open_dispute(self, agent: str, artifact: str, event: str) -> list[Event]:
        _, art = self._actor(agent, event, artifact)
        if art.state != ACTIVE:
            raise Refused(ErrorCode.WRONG_PHASE, art.state)
        if art.dispute_count >= self._max_disputes:  # LC-SAFE-3
            raise Refused(ErrorCode.LIMIT_REACHED, "max_disputes")
        if self._disputes.get(agent, 0) >= self.params.dispute_rate:
            raise Refused(ErrorCode.RATE_LIMITED, agent, [_violation(agent, "rate_limited")])
        # --- checks passed: mutate
        art.dispute_count += 1
        self._disputes[agent] = self._disputes.get(agent, 0) + 1
        excluded = art.reviewers | {art.submitter, agent}
        rnd = art.round + 1
        reviewers = select_reviewers(
            self.params.seed, art.id, rnd, self._eligible(), excluded, self.params.dispute_reviewers
        )
        self._open_ballot(art, BallotKind.DISPUTE, reviewers, rnd)
        if event == "urgent_report":
            art.hidden = True  # LC-SAFE-5: hidden only together with a pending review
            art.urgent_reporter = agent
        else:
            art.disputer = agent
        return [self._fire(art, event, None, self.params.T_commit)]

    def _op_resubmit(
        self, agent: str, artifact: str, digest: str, evidence: tuple[str, ...] = ()
    ) -> list[Event]:
        # spec/Lifecycle.tla: Resubmit
        a, art = self._actor(agent, "resubmit", artifact)
        if agent != art.submitter or micro(a.reputation) < micro(self.params.r_resubmit):
            raise Refused(ErrorCode.NOT_ELIGIBLE, "not the submitter, or reputation too low")
        if art.state not in RESUBMITTABLE:
            raise Refused(ErrorCode.WRONG_PHASE, art.state)
        if art.resubmit_count >= self.params.max_resubmit:  # LC-SAFE-3
            raise Refused(ErrorCode.LIMIT_REACHED, "max_resubmit")
        if self._now < art.stable_since + self.params.cooldown:
            raise Refused(ErrorCode.COOLDOWN, f"until {art.stable_since + self.params.cooldown}")
        if digest == art.digest and set(evidence) <= set(art.evidence or ()):
            raise Refused(ErrorCode.DUPLICATE, "neither a new digest nor new evidence")
        limit = (
            self.params.propose_rate_limited
            if a.sanction == Sanction.RATE_LIMITED
            else self.params.propose_rate
        )
        if self._proposals.get(agent, 0) >= limit:
            raise Refused(ErrorCode.RATE_LIMITED, agent, [_violation(agent, "rate_limited")])
        # --- checks passed: mutate (a new review starts: allowances and votes reset)
        self._proposals[agent] = self._proposals.get(agent, 0) + 1
        art.digest = digest
        art.evidence = tuple(evidence)
        art.resubmit_count += 1
        art.reviewers = art.review_reviewers = frozenset()
        art.rerecruited = art.revoted = False
        art.ballot = None
        art.decision = None
        art.hidden = False
        art.urgent_reporter = None
        art.forget_votes = {}
        self._forget_voted.discard(art.id)
        self._forget_watch.discard(art.id)
        self._proposed.add(art.id)
        return [self._fire(art, "resubmit")]

    def _op_forget_vote(self, agent: str, artifact: str, confidence: float = 1.0) -> list[Event]:
        # spec/Lifecycle.tla: ForgetVote
        _, art = self._actor(agent, "forget_vote", artifact)
        if art.state not in FORGET_VOTABLE:
            raise Refused(ErrorCode.WRONG_PHASE, art.state)
        if agent in art.forget_votes:
            raise Refused(ErrorCode.DUPLICATE, "one forget vote per agent and artifact")
        # --- checks passed: mutate
        art.forget_votes[agent] = micro(confidence)
        self._forget_voted.add(art.id)
        self._forget_watch.add(art.id)
        return [self._fire(art, "forget_vote")]

    def _op_set_agent(
        self,
        agent: str,
        tier: int,
        weight: float | None = None,
        reputation: float | None = None,
        sanction: str | None = None,
        subscriptions: tuple[str, ...] | None = None,
    ) -> list[Event]:
        # not in spec/Lifecycle.tla (its registry is CONSTANTS)
        p = self.params
        if weight is not None and not micro(p.w_min) <= micro(weight) <= micro(p.w_max):
            raise Refused(ErrorCode.INVALID_INPUT, f"weight outside [{p.w_min}, {p.w_max}]")
        old = self._agents.get(agent)
        self._agents[agent] = Agent(
            id=agent,
            tier=tier,
            weight=float(weight if weight is not None else (old.weight if old else p.w_min)),
            reputation=float(
                reputation if reputation is not None else (old.reputation if old else 0.0)
            ),
            sanction=Sanction(sanction)
            if sanction is not None
            else (old.sanction if old else Sanction.NONE),
            subscriptions=(
                frozenset(subscriptions)
                if subscriptions is not None
                else (old.subscriptions if old else frozenset())
            ),
        )
        if _recruitable(old) != _recruitable(self._agents[agent]):
            self._eligible_cache = None  # only then: a Community re-syncs reputations often
        self._forget_all = True  # weights and the quorum Q may have changed
        return []

    def _op_tick(self) -> list[Event]:
        # spec/Lifecycle.tla: Tick, then the due Recruit / Timeout / Forget actions
        events: list[Event] = []
        for x in sorted(self._proposed, key=lambda i: self._artifacts[i].seq):
            events += self._recruit(self._artifacts[x])
        self._now += 1
        self._proposals.clear()
        self._disputes.clear()
        due = self._deadlines.pop(self._now, set())
        for x in sorted(due, key=lambda i: self._artifacts[i].seq):
            events += self._timeout(self._artifacts[x])
        events += self._forget_due()
        return events

    # --- orchestrator steps ------------------------------------------------------------------

    def _timeout(self, art: Artifact) -> list[Event]:
        """# spec/Lifecycle.tla: Timeout — the state's deadline has come (LC-LIVE-1)."""
        p = self.params
        art.deadline = None  # popped from the index by the caller
        state = art.state
        if state == FAST_TRACK:
            art.decision = {"path": "fast_track", "verdict": "accept"}
            return self._activate(art, "timeout", None)  # LC-SAFE-1: no objection came
        if state == DELIBERATION:
            self._open_ballot(art, BallotKind.REVIEW, art.reviewers, art.round)
            return [self._fire(art, "timeout", None, p.T_commit)]
        ballot = art.ballot
        assert ballot is not None or state == ARBITRATION, f"{art.id}: no ballot in {state}"
        if state == COMMIT:
            assert ballot is not None
            ballot.phase = Phase.REVEAL  # CR-1: votes may be revealed from now on
            return [self._fire(art, "timeout", None, p.T_reveal)]
        if state == REVEAL:
            assert ballot is not None
            return self._close_review(art, ballot)
        if state == ARBITRATION:
            art.decision = {
                "path": "arbitration_timeout",
                "verdict": "reject",
                "tally": art.decision.get("tally") if art.decision else None,
            }
            return [self._fire(art, "timeout")]  # status quo
        if state == DISPUTED:
            assert ballot is not None
            if ballot.phase == Phase.COMMIT:
                ballot.phase = Phase.REVEAL
                return [self._fire(art, "timeout", "reveal_phase", p.T_reveal)]
            return self._close_dispute(art, ballot)
        raise AssertionError(f"{art.id}: timeout in {state}")  # pragma: no cover

    @staticmethod
    def _non_reveals(ballot: Ballot) -> list[Event]:
        """Reviewers who committed but never revealed: each a ``non_reveal`` violation
        (docs/design.md §4).  Sorted, so the observation is deterministic."""
        return [
            _violation(v, "non_reveal")
            for v in sorted(set(ballot.commitments) - set(ballot.reveals))
        ]

    def _close_review(self, art: Artifact, ballot: Ballot) -> list[Event]:
        return self._decide_review(art, ballot) + self._non_reveals(ballot)

    def _decide_review(self, art: Artifact, ballot: Ballot) -> list[Event]:
        p = self.params
        tally = ballot.tally(self._weight)
        verdict = review_verdict(  # TALLY-1: the side rule
            tally, p.quorum, self._tau_accept, self._tau_reject, self._min_side
        )
        ballot.phase = Phase.CLOSED
        record = {"path": "tally", "verdict": verdict, "tally": tally.to_dict(ballot.kind)}
        if verdict == "accept":
            art.decision = record
            return self._activate(art, "timeout", "accept")
        if verdict == "reject":
            art.decision = record
            return [self._fire(art, "timeout", "reject")]
        if verdict == "undecided":
            art.decision = record
            return [self._fire(art, "timeout", "undecided", p.T_arb)]
        if not art.rerecruited:  # quorum missed the first time in this review
            art.rerecruited = True
            rnd = art.round + 1
            seen = art.review_reviewers | {art.submitter}
            fresh = select_reviewers(p.seed, art.id, rnd, self._eligible(), seen, p.reviewers)
            self._open_ballot(art, BallotKind.REVIEW, fresh, rnd)
            art.review_reviewers = art.review_reviewers | art.reviewers
            return [self._fire(art, "timeout", "rerecruit", p.T_commit)]
        art.decision = {"path": "quorum_missed", "verdict": "expire", "tally": record["tally"]}
        return [self._fire(art, "timeout", "expire")]

    def _close_dispute(self, art: Artifact, ballot: Ballot) -> list[Event]:
        events = self._decide_dispute(art, ballot) + self._non_reveals(ballot)
        art.disputer = None
        return events

    def _decide_dispute(self, art: Artifact, ballot: Ballot) -> list[Event]:
        tally = ballot.tally(self._weight)
        verdict = dispute_verdict(  # TALLY-1: the side rule
            tally, self.params.q_dispute, self._tau_retract, self._min_side
        )
        ballot.phase = Phase.CLOSED
        self._forget_watch.add(art.id)  # a forget decision may have waited for the dispute
        if verdict == "retract":
            art.decision = {
                "path": "dispute",
                "verdict": "retract",
                "tally": tally.to_dict(ballot.kind),
            }
            art.urgent_reporter = None
            return [self._fire(art, "timeout", "retract")]
        art.decision = {
            "path": "dispute_kept",
            "verdict": "keep",
            "tally": tally.to_dict(ballot.kind),
        }
        self._clear_hidden(art)  # LC-SAFE-5
        verdict = "keep_superseded" if self._active.get(art.slot) else "keep"  # LC-SAFE-2
        events = [self._fire(art, "timeout", verdict)]
        if art.urgent_reporter is not None:
            events.append(
                {
                    "event": "penalty",
                    "agent": art.urgent_reporter,
                    "kind": "unfounded_urgent_report",
                }
            )
            art.urgent_reporter = None
        if art.disputer is not None:
            events.append({"event": "penalty", "agent": art.disputer, "kind": "frivolous_dispute"})
        return events

    def _forget_due(self) -> list[Event]:
        """# spec/Lifecycle.tla: Forget — every watched artifact whose decision is reached.

        The decision is ``forgetting.decide`` (S > 0, S ≥ Q over the active agents, not
        disputed or hidden under review, at least ``min_active_agents`` active): one rule
        for the orchestrator, the tests and the docs.  Only artifacts whose score or
        quorum may have changed are looked at (the forget watch).
        """
        if self._forget_all:
            self._forget_watch = set(self._forget_voted)
            self._forget_all = False
        if not self._forget_watch:
            return []
        watched = sorted((self._artifacts[x] for x in self._forget_watch), key=lambda art: art.seq)
        decisions = forget_decide(
            watched,
            self._agents.values(),
            self.params,
            self.forget_rule,
            min_active=self._min_active,  # FG-1
        )
        events: list[Event] = []
        for art, d in zip(watched, decisions, strict=True):
            if d.forget:
                events.append(self._forget(art))
            elif not d.reached or d.blocked == BLOCK_POPULATION:
                # re-evaluated on a new vote or a registry change (which may lift either)
                self._forget_watch.discard(art.id)
            # else blocked by a dispute or hidden review (LC-SAFE-6): watched until it closes
        return events

    def _forget(self, art: Artifact) -> Event:
        ev = self._fire(art, "forget")
        art.tombstone = {
            "artifact": art.id,
            "slot": art.slot,
            "submitter": art.submitter,
            "round": art.round,
        }
        art.digest = None  # content erased; the tombstone stays (LC-SAFE-6)
        art.evidence = None
        self._forget_voted.discard(art.id)
        self._forget_watch.discard(art.id)
        return ev

    # --- reading -------------------------------------------------------------------------------

    @property
    def now(self) -> int:
        return self._now

    @property
    def agents(self) -> Mapping[str, Agent]:
        return dict(self._agents)

    def agent(self, agent: str) -> Agent | None:
        """One registry entry (``agents`` copies the whole registry: O(n) per call)."""
        return self._agents.get(agent)

    def state_of(self, artifact: str) -> str | None:
        art = self._artifacts.get(artifact)
        return None if art is None else art.state

    def serve(self, slot: str) -> dict[str, Any] | None:
        """The slot's active artifact, unless it is hidden (LC-SAFE-5)."""
        for x in sorted(self._active.get(slot, ()), key=lambda i: self._artifacts[i].seq):
            art = self._artifacts[x]
            if not art.hidden:
                return {
                    "artifact": x,
                    "slot": slot,
                    "digest": art.digest,
                    "evidence": list(art.evidence or ()),
                }
            return None
        return None

    def public_artifact(self, artifact: str) -> dict[str, Any] | None:
        """One artifact's entry of ``public_state`` (None if unknown), without building
        the whole state: the layers read closed ballots through it at every tick."""
        art = self._artifacts.get(artifact)
        return None if art is None else self._public_artifact(art)

    def public_state(self) -> dict[str, Any]:
        """The normative public state (rules.md "Observations"), JSON-ready.

        A ballot shows who committed, never what; the revealed votes appear only once its
        commit phase has closed (CR-1).
        """
        return {
            "now": self._now,
            "artifacts": {x: self._public_artifact(a) for x, a in self._artifacts.items()},
        }

    def _public_artifact(self, art: Artifact) -> dict[str, Any]:
        b = art.ballot
        return {
            "slot": art.slot,
            "submitter": art.submitter,
            "state": art.state,
            "hidden": art.hidden,
            "dispute_count": art.dispute_count,
            "resubmit_count": art.resubmit_count,
            "deadline": art.deadline,
            "decision": _plain(art.decision),
            "digest": art.digest,
            "evidence": None if art.evidence is None else list(art.evidence),
            "round": art.round,
            "ballot": None if b is None else b.kind.value,
            "phase": None if b is None else b.phase.value,
            "reviewers": sorted(art.reviewers),
            "committed": [] if b is None else sorted(b.commitments),
            "revealed": (
                None
                if b is None or b.phase == Phase.COMMIT
                else {v: r.vote for v, r in sorted(b.reveals.items())}
            ),
            "forget_voters": sorted(art.forget_votes),
            "tombstone": _plain(art.tombstone),
        }


def _plain(value: Any) -> Any:
    """A JSON-ready deep copy (the public state never aliases internal dicts)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _recruitable(a: Agent | None) -> bool:
    """May ``a`` be drawn as a reviewer (LC-SAFE-4: tier >= 1, not barred)?"""
    return a is not None and a.tier >= 1 and not a.barred
