------------------------------- MODULE Lifecycle -------------------------------
(***************************************************************************)
(* The artifact lifecycle of ostrom (docs/design.md §3, normative rules    *)
(* in docs/rules.md, transition table in                                   *)
(* reference/ostrom/protocol/lifecycle.py).                                *)
(*                                                                         *)
(* MODELLED, as docs/rules.md states them:                                 *)
(*  - every state and event of TRANSITIONS; every step is a row of the     *)
(*    table (TableInv), recorded in the history variable lastEvent;        *)
(*  - the guards on the actor: tier >= min_tier of EVENTS, not barred      *)
(*    (suspended/banned/quarantined), and each event's role (reviewer of   *)
(*    the open ballot, subscriber, submitter, arbiter who did not review); *)
(*  - slots and supersession; fast track (tier >= 1 submitter, free slot,  *)
(*    not a resubmission) that becomes active when T_fast passes with no   *)
(*    objection; deliberation; commit and reveal with commitments bound to *)
(*    (voter, artifact, ballot round); weighted tally against tau_accept / *)
(*    tau_reject with quorum and the side rule of TALLY-1 (MinSide =       *)
(*    tally_min_side: a side wins only with that many voters, so a lone    *)
(*    heavy vote sends the review to arbitration); re-recruit once (fresh  *)
(*    reviewers of this review), then expired; arbitration by a tier-3     *)
(*    non-reviewer with at most one revote (same reviewers, new round),    *)
(*    status quo on T_arb; disputes and urgent reports (they count as      *)
(*    disputes, max_disputes) with fresh reviewers, q_dispute, tau_retract *)
(*    and the side rule (retract needs MinSide retracters, and the weight  *)
(*    threshold or fewer than MinSide keepers: a lone keeper cannot hold   *)
(*    the artifact), the orthogonal `hidden` flag set by an urgent report  *)
(*    and cleared when the dispute fails; a failed dispute returns to      *)
(*    active or to superseded; bounded resubmission with cooldown by the   *)
(*    submitter with reputation >= r_resubmit; forget votes (any tier,     *)
(*    once per artifact, each with its confidence c = k / ConfUnit, k in   *)
(*    ForgetConfidences, kept per voter) and the collective Forget         *)
(*    decision at a tick (docs/rules.md forget_vote, forgetting.decide):   *)
(*    score S = sum of w_i * c_i over the voters that are not barred,      *)
(*    S > 0 and S >= alpha * total weight of the agents that are not       *)
(*    barred (both sides scaled by 100 * ConfUnit: exact in integers), at  *)
(*    least MinActive (min_active_agents, FG-1) agents not barred, never   *)
(*    while disputed or hidden under review; a forgotten artifact keeps a  *)
(*    tombstone (id, slot, submitter) and loses content.                   *)
(*  - time: docs/rules.md "Time". The reference's atomic `tick` is         *)
(*    modelled as Tick followed by the due Recruit, Timeout and Forget     *)
(*    steps in any order; agents' actions are disabled while any Timeout  *)
(*    or Forget is due. Recruit of a `proposed` artifact is step 1 of the *)
(*    reference's tick (and also an explicit command): Tick is disabled    *)
(*    while an artifact is `proposed`, so Recruit always precedes the tick *)
(*    and its countdown (T) has one round consumed by that tick, exactly   *)
(*    as deadline = now + T followed by now := now + 1 in the reference.   *)
(*    Deadlines are countdown timers per artifact (timer, cool) instead of *)
(*    an absolute clock, so the state space is finite without CONSTRAINT.  *)
(*    Tick is enabled whenever nothing is due and nothing is `proposed`    *)
(*    (the reference accepts `tick` at any time), so the spec never        *)
(*    deadlocks: a quiescent state (every artifact stable, no agent able   *)
(*    to act) still has its idle Tick. `ticking` records that no agent has *)
(*    acted since the last Tick: a Forget is due only then (the reference  *)
(*    forgets only at a tick).                                             *)
(*                                                                         *)
(* ABSTRACTED, and why it is sound:                                        *)
(*  - reputation -> tiers: the registry (tier, weight, barred, slot        *)
(*    subscriptions, reputation >= r_resubmit) is given as CONSTANTS;      *)
(*    `set_agent` and the reputation/sanction layers (which change it) are *)
(*    not modelled (Sanctions.tla checks those). `warned`/`rate_limited`   *)
(*    sanctions only change rate limits (below); the barred sanctions are  *)
(*    the set Barred.                                                      *)
(*  - weights, thresholds: small integers; tau_* and alpha are integer     *)
(*    percentages, compared exactly as A*100 >= tau*(A+R) (the reference   *)
(*    compares micro-units in the same form). Tier-0 agents count at WMin. *)
(*  - forget confidences in the models: ConfUnit = 1 and                   *)
(*    ForgetConfidences = {1}, every model votes with confidence 1 (a vote *)
(*    of confidence c is, for the score, a vote of weight w*c, which the   *)
(*    weight constants can express). The rule itself weighs confidences:   *)
(*    trace validation overrides both operators with a log's confidences  *)
(*    in a common unit (LifecycleTrace.tla, trace.py), so that c =         *)
(*    k / ConfUnit is exactly the reference's micro(c) / 10^6.             *)
(*  - the population floor: the registry is constant, so "at least        *)
(*    MinActive agents are not barred" is a constant of a model; it blocks *)
(*    every forget decision or none. The models set MinActive to their     *)
(*    number of non-barred agents (forgetting reachable). That the floor  *)
(*    makes a lone forgetter impossible (FG-1) is a statement about all    *)
(*    populations and weights: a Z3 theorem (ostrom.verify.thresholds.fg_1), as  *)
(*    is TALLY-1 for all weights; TLC checks that the rules are applied.   *)
(*  - digests, evidence, reasons and salts are abstracted: `content` is    *)
(*    TRUE while the artifact holds content; a resubmission is assumed to  *)
(*    be revised (the `duplicate` refusal leaves the state unchanged).     *)
(*  - hash -> recorded vote: a commitment is the triple <<voter, round,    *)
(*    vote>> (the artifact is the index of art). SHA-256 is assumed        *)
(*    binding and hiding; with a binding hash a reveal matches a           *)
(*    commitment iff it carries the committed vote of that voter, artifact *)
(*    and round, which is what the record states; hiding matters for CR-1  *)
(*    (no agent action here reads other voters' votes: none can). A        *)
(*    commitment to something that is no valid vote is the same, for the   *)
(*    lifecycle, as a commitment that is never revealed. CR-2 is about the *)
(*    protocol counting only the committed vote, which BindingInv checks.  *)
(*  - rate limits (propose_rate, dispute_rate) are NOT modelled: they only *)
(*    refuse commands, so every behaviour of the rate-limited protocol is  *)
(*    a behaviour of this spec (with the same enabledness of the fair      *)
(*    orchestrator actions); safety and the liveness under orchestrator    *)
(*    fairness carry over. Penalties/violations are observations only.     *)
(*  - workload: Proposals and ForgetVotes restrict which commands the    *)
(*    environment (the agents) sends: a model may fix who proposes which   *)
(*    artifact id into which slot and who votes to forget which artifact;  *)
(*    the rules are unchanged (the forget quorum still counts every        *)
(*    non-barred agent). Agents \X Artifacts \X Slots and Agents \X        *)
(*    Artifacts are the full workload (the deep model uses it).           *)
(*  - reviewer recruitment: any subset of the eligible agents of size      *)
(*    min(R, |eligible|); the reference's sha256 sortition (rules.md,      *)
(*    `recruit`: k seeded draws among the sorted eligible agents) is one   *)
(*    such choice (a sound over-approximation).                            *)
(*  - the order of the reference's timeouts and forgets inside one tick    *)
(*    (creation order, timeouts before forgets) is any order here: more    *)
(*    behaviours, so safety carries over.                                  *)
(*  - bookkeeping that can no longer be read is reset when an artifact     *)
(*    reaches a stable state (commitments, reveals and ballot rounds of    *)
(*    the finished review, the "reviewed by" set, allowances), and those   *)
(*    of a closed round when the next round of the review opens: rounds are*)
(*    numbered from 1 inside each review / dispute; only equality with the *)
(*    open round matters. The cooldown countdown runs only while another   *)
(*    resubmission is still allowed by max_resubmit.                       *)
(*  - the decision record is kept while the artifact is active (that is  *)
(*    what LC-SAFE-1 inspects); it holds both sides' weights and voter     *)
(*    counts, so LegitimateActivationInv rechecks quorum, threshold and    *)
(*    side rule.                                                           *)
(*  - history variables: lastEvent, the (event, source, dest) triples of  *)
(*    the last step (an invariant over it, checked in every reachable      *)
(*    state, covers every step ever taken), and unguarded, the (event,     *)
(*    agent) pairs of all agent steps so far that lacked the tier of       *)
(*    EVENTS or came from a barred agent (logging only the bad pairs keeps *)
(*    the state space of a correct model unchanged), and history, the      *)
(*    disputes opened and resubmissions made per artifact, counted from    *)
(*    its states before and after each step (Observe) so that LC-SAFE-3 is *)
(*    not checked against the counters it bounds (a correct model has one  *)
(*    history per counter value: the state space is unchanged).            *)
(*  - `ticking` is normalised to FALSE once nothing is due or ready.       *)
(*                                                                         *)
(* CHOICES where docs/rules.md is silent (reported, to be confirmed):     *)
(*  - the reviewers recruited for a fast track are the reviewers of ballot *)
(*    round 1 (rules: recruit opens round 1), so a later dispute excludes  *)
(*    them as "reviewers of the artifact's last ballot";                   *)
(*  - resubmission keeps `hidden` (cleared only by a failed dispute) and   *)
(*    the forget votes ("one vote per agent and artifact");                *)
(*  - a disputer may be the submitter (no rule forbids it);                *)
(*  - Tick records lastEvent = {}: a tick moves no artifact by itself (the *)
(*    table has no tick row); the Timeout/Forget steps it makes due record *)
(*    their own rows.                                                      *)
(*                                                                         *)
(* MUTANTS are not in this module: a mutant model replaces one of its    *)
(* operators by a broken one of models/MCLifecycle.tla (`Op <- MutOp`,     *)
(* models/manifest.json, docs/checking.md).                                *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, LifecycleTable

CONSTANTS
    Agents,            \* agent ids
    Artifacts,         \* artifact ids (created by Propose)
    Slots,             \* (entity, attribute) slots
    Tier,              \* [Agents -> 0..3]
    Weight,            \* [Agents -> Nat \ {0}], voting weight (small integers)
    WMin,              \* weight of every tier-0 agent
    Barred,            \* agents that are suspended, banned or quarantined
    Subscriptions,     \* [Agents -> SUBSET Slots]
    RepOK,             \* agents whose reputation is >= r_resubmit
    Proposals,         \* workload: the <<agent, artifact, slot>> proposals the
                       \* environment may send (Agents \X Artifacts \X Slots: any)
    ForgetVotes,       \* workload: the <<agent, artifact>> forget votes the environment
                       \* may send (Agents \X Artifacts: any)
    Reviewers,         \* reviewers per artifact
    Quorum,            \* valid reveals needed for a review tally
    DisputeReviewers,  \* fresh reviewers of a dispute (at most)
    QDispute,          \* valid reveals needed for a dispute tally
    MinSide,           \* tally_min_side: fewest voters a side needs to win (TALLY-1)
    TauAccept, TauReject, TauRetract, \* percentages
    Alpha,             \* forget quorum, percentage of the non-barred weight
    MinActive,         \* min_active_agents: no forget decision with fewer non-barred
                       \* agents (FG-1)
    TFast, TDelib, TCommit, TReveal, TArb, \* rounds, >= 1
    MaxDisputes, MaxResubmit, Cooldown

ASSUME /\ Tier \in [Agents -> 0..3]
       /\ Weight \in [Agents -> Nat \ {0}]
       /\ WMin \in Nat \ {0}
       /\ Barred \subseteq Agents
       /\ Subscriptions \in [Agents -> SUBSET Slots]
       /\ RepOK \subseteq Agents
       /\ Proposals \subseteq Agents \X Artifacts \X Slots
       /\ ForgetVotes \subseteq Agents \X Artifacts
       /\ Reviewers \in Nat \ {0} /\ Quorum \in 1..Reviewers
       /\ DisputeReviewers \in Nat \ {0} /\ QDispute \in 1..DisputeReviewers
       \* the parameter relation of ostrom.protocol.params: a unanimous quorum can decide
       /\ MinSide \in 1..Quorum /\ MinSide <= QDispute
       /\ MinActive \in Nat \ {0}
       /\ TauReject \in 0..100 /\ TauAccept \in 0..100 /\ TauReject < TauAccept
       /\ TauRetract \in 0..100 /\ Alpha \in 0..100
       /\ {TFast, TDelib, TCommit, TReveal, TArb} \subseteq Nat \ {0}
       /\ {MaxDisputes, MaxResubmit, Cooldown} \subseteq Nat

-----------------------------------------------------------------------------
(* States and event metadata (reference/ostrom/protocol/lifecycle.py)               *)

States == {"proposed", "fast_track", "deliberation", "commit", "reveal",
           "arbitration", "active", "disputed", "superseded", "rejected",
           "expired", "retracted", "forgotten"}
Stable == {"active", "superseded", "rejected", "expired", "retracted", "forgotten"}
Transient == States \ Stable
Timed == {"fast_track", "deliberation", "commit", "reveal", "arbitration", "disputed"}
Resubmittable == {"rejected", "expired", "retracted"}
Forgettable == {"active", "superseded", "rejected", "expired", "retracted"}
ForgetVotable == Forgettable \cup {"disputed"}

\* EVENTS[e].min_tier of lifecycle.py, for the agents' events (LC-SAFE-4).
AgentEvents == {"propose", "resubmit", "object", "commit_vote", "reveal_vote",
                "arbitrate", "dispute", "urgent_report", "forget_vote"}
MinTier == [e \in AgentEvents |->
              CASE e \in {"propose", "resubmit", "forget_vote"} -> 0
                [] e \in {"object", "commit_vote", "reveal_vote", "urgent_report"} -> 1
                [] e = "dispute" -> 2
                [] e = "arbitrate" -> 3]

ReviewVotes == {"accept", "reject"}
DisputeVotes == {"retract", "keep"}
Votes == ReviewVotes \cup DisputeVotes
MaxRound == 3   \* initial ballot, one re-recruitment, one revote per review

NoAgent == "-"
NoSlot == "-"
ASSUME NoAgent \notin Agents /\ NoSlot \notin Slots

\* Forget confidence (docs/rules.md forget_vote; orchestrator.py: _op_forget_vote keeps
\* micro(confidence) per voter): a forget vote carries k \in ForgetConfidences, the
\* confidence k / ConfUnit in [0, 1]. The models vote with confidence 1 (header,
\* ABSTRACTED); trace validation overrides both (ConfUnit <- TLConfUnit).
ConfUnit == 1
ForgetConfidences == {ConfUnit}
ASSUME ConfUnit \in Nat \ {0} /\ ForgetConfidences \subseteq 0..ConfUnit

Paths == {"none", "fast_track", "tally", "arbiter", "dispute_kept"}
\* by: the arbiter of an arbiter's decision (NoAgent otherwise).
\* acc/rej: the weights of the side that won (accept; keep for dispute_kept) and of
\* the other side; nacc/nrej: their voter counts (the side rule of TALLY-1).
NoDecision == [how |-> "none", objected |-> FALSE, acc |-> 0, rej |-> 0,
               nacc |-> 0, nrej |-> 0, by |-> NoAgent]

\* The record of one artifact. st = "none": not created yet.
Blank == [st |-> "none", slot |-> NoSlot, sub |-> NoAgent, content |-> FALSE,
          hidden |-> FALSE, urgent |-> "none", disputes |-> 0, resubs |-> 0,
          timer |-> 0, cool |-> 0, dphase |-> "none", round |-> 0,
          reviewers |-> {}, reviewed |-> {}, rerecruited |-> FALSE,
          revoted |-> FALSE, objected |-> FALSE, commits |-> {}, reveals |-> {},
          fvotes |-> {}, decision |-> NoDecision]
\* fvotes: the <<voter, k>> pairs of the forget votes, one per voter (confidence k / ConfUnit).

VARIABLES
    art,        \* [Artifacts -> record], see Blank
    ticking,    \* TRUE iff no agent has acted since the last Tick
    lastEvent,  \* history: set of <<event, source, dest>> of the last step
    unguarded,  \* history: the <<event, agent>> pairs of every agent step that
                \* succeeded without the tier of EVENTS or while barred (LC-SAFE-4)
    history     \* history: [Artifacts -> [disputes, resubs]], the disputes opened and
                \* the resubmissions made so far, counted from the artifact's states
                \* before and after each step (Observe), not from its counters (LC-SAFE-3)

vars == <<art, ticking, lastEvent, unguarded, history>>

-----------------------------------------------------------------------------
(* Helpers                                                                 *)

Min(a, b) == IF a <= b THEN a ELSE b
\* a / b >= p / 100 and a / b <= p / 100 (weights a, b; a percentage p in 0..100), as
\* the integer products the reference compares (docs/rules.md, tally arithmetic).  The
\* actions' tallies use these; the invariants restate the products (LC-SAFE-1), so that
\* a wrong operator cannot also be a wrong check.  Trace validation substitutes an equal
\* operator whose intermediate values stay within TLC's 32-bit integers
\* (LifecycleTrace.tla: TraceAtLeastPct).
AtLeastPct(a, p, b) == a * 100 >= p * b
AtMostPct(a, p, b) == a * 100 <= p * b
EffW(a) == IF Tier[a] = 0 THEN WMin ELSE Weight[a]
RECURSIVE SumW(_)
SumW(S) == IF S = {} THEN 0 ELSE LET a == CHOOSE a \in S : TRUE IN EffW(a) + SumW(S \ {a})

\* Agents eligible as reviewers of x: tier >= 1, not barred, not the submitter.
Eligible(x) == {a \in Agents : Tier[a] >= 1 /\ a \notin Barred /\ a # art[x].sub}
\* The possible reviewer sets drawn from pool: any min(k, |pool|) of them.
Picks(pool, k) == {S \in SUBSET pool : Cardinality(S) = Min(k, Cardinality(pool))}

ActiveIn(s) == {y \in Artifacts : art[y].st = "active" /\ art[y].slot = s}

\* Reveals counted by the tally: those of the open round (all stored reveals
\* passed the reveal check; older rounds of the review are not counted).
Counted(x) == {v \in art[x].reveals : v[2] = art[x].round}
VotersOf(x, val) == {v[1] : v \in {c \in Counted(x) : c[3] = val}}

\* Forget score and quorum (docs/rules.md forget_vote; forgetting.py: decide, forget_score,
\* forget_quorum, ForgetRule.tally, called by Orchestrator._forget_due):
\* S = sum of w_i * k_i / ConfUnit over the voters, Q = Alpha / 100 * sum of w_j over the
\* agents; ForgetScore is ConfUnit * S and ForgetBase is ConfUnit * sum of w_j, so S >= Q
\* iff AtLeastPct(ForgetScore, Alpha, ForgetBase), in integers (the reference compares
\* micro^2 integers in the same form: sum of W_i * C_i >= A * sum of W_j). The score counts the
\* voters that are not barred, as the quorum counts the agents that are not barred.
\* (Barred agents cannot vote here, so excluding them only restates the rule.)
FVoters(r) == {v[1] : v \in r.fvotes}
RECURSIVE SumWC(_)
SumWC(V) == IF V = {} THEN 0 ELSE LET v == CHOOSE v \in V : TRUE IN EffW(v[1]) * v[2] + SumWC(V \ {v})
ForgetScore(r) == SumWC({v \in r.fvotes : v[1] \notin Barred})
ForgetBase == ConfUnit * SumW(Agents \ Barred)
\* FG-1: no forget decision while fewer than MinActive agents are not barred.
EnoughActive == Cardinality(Agents \ Barred) >= MinActive
\* The states a forget decision may leave (LC-SAFE-6: never disputed).
ForgetOpenIn(r) == r.st \in Forgettable
ForgetReadyIn(r) ==
    /\ ForgetOpenIn(r)
    \* never hidden under review (forgetting.blocker). Only a retraction keeps
    \* `hidden` after the review (HiddenInv), so the clause excludes
    \* no reachable state; it restates the reference's rule.
    /\ ~(r.hidden /\ r.st # "retracted")
    /\ ForgetScore(r) > 0
    /\ AtLeastPct(ForgetScore(r), Alpha, ForgetBase)
    /\ EnoughActive
ForgetReady(x) == ForgetReadyIn(art[x])

TimeoutDueIn(r) == r.st \in Timed /\ r.timer = 0
TimeoutDue(x) == TimeoutDueIn(art[x])
ForgetDue(x) == ticking /\ ForgetReady(x)
Due == \E x \in Artifacts : TimeoutDue(x) \/ ForgetDue(x)

\* Entering a stable state s: the finished review's bookkeeping is dropped.
Close(r, s) ==
    [r EXCEPT !.st = s, !.timer = 0, !.dphase = "none", !.round = 0,
              !.commits = {}, !.reveals = {}, !.reviewed = {},
              !.rerecruited = FALSE, !.revoted = FALSE, !.objected = FALSE,
              !.cool = IF s \in Resubmittable /\ r.resubs < MaxResubmit
                         THEN Cooldown ELSE 0,
              !.reviewers = IF s = "active" THEN r.reviewers ELSE {},
              !.decision = NoDecision]

\* The artifacts superseded when x becomes active: every other active
\* artifact of its slot (LC-SAFE-2).
SupersededBy(x) == ActiveIn(art[x].slot) \ {x}

\* x becomes active through a decision (event ev from src) with decision d;
\* every other active artifact of its slot is superseded in the same step.
Activate(x, ev, src, d) ==
    LET sup == SupersededBy(x)
    IN /\ art' = [y \in Artifacts |->
                    IF y = x THEN [Close(art[x], "active") EXCEPT !.decision = d]
                    ELSE IF y \in sup THEN Close(art[y], "superseded")
                    ELSE art[y]]
       /\ lastEvent' = {<<ev, src, "active">>}
                       \cup {<<"supersede", "active", "superseded">> : y \in sup}

Set(x, r) == art' = [art EXCEPT ![x] = r]

\* When a new round of the same review opens, the closed round's reveals and
\* commitments can never be counted again (the reveal check names the open
\* round), so the model drops them.
OldCommits(r) == {}

\* The guard of EVENTS, restated from the table (independent of the literal
\* guards written in the actions below).
Guarded(e, a) == Tier[a] >= MinTier[e] /\ a \notin Barred

\* Every agent command e by a: nothing is due, the agent is not barred; the
\* pair is logged in the history if it violates the guard of EVENTS.
AgentStep(e, a) ==
    /\ ~Due /\ a \notin Barred /\ ticking' = FALSE
    /\ unguarded' = IF Guarded(e, a) THEN unguarded ELSE unguarded \cup {<<e, a>>}

\* After an orchestrator step inside a tick: the tick stays open while a
\* Timeout or a Forget is still due (only then is `ticking` ever read).
\* (Normalising it to FALSE otherwise merges states that differ only in a
\* value nobody reads.)
StillTicking ==
    ticking' = (ticking /\ \E y \in Artifacts : TimeoutDueIn(art'[y]) \/ ForgetReadyIn(art'[y]))

\* The history of LC-SAFE-3, the last conjunct of every action: a dispute is opened when
\* an artifact goes from active to disputed, a resubmission made when it goes from a
\* resubmittable state back to proposed.  Counted from the states before and after the
\* step, so an action that forgets to count (its `disputes` or `resubs` bookkeeping)
\* cannot also hide the steps from BoundedCountsInv.
Observe ==
    history' = [x \in Artifacts |->
                  [disputes |-> history[x].disputes
                                + (IF art[x].st = "active" /\ art'[x].st = "disputed"
                                   THEN 1 ELSE 0),
                   resubs |-> history[x].resubs
                              + (IF art[x].st \in Resubmittable /\ art'[x].st = "proposed"
                                 THEN 1 ELSE 0)]]

-----------------------------------------------------------------------------
Init ==
    /\ art = [x \in Artifacts |-> Blank]
    /\ ticking = FALSE
    /\ lastEvent = {}
    /\ unguarded = {}
    /\ history = [x \in Artifacts |-> [disputes |-> 0, resubs |-> 0]]

\* ostrom/protocol/orchestrator.py: Orchestrator.propose
Propose(a, x, s) ==
    /\ AgentStep("propose", a)
    /\ Tier[a] >= 0
    /\ <<a, x, s>> \in Proposals
    /\ art[x].st = "none"
    /\ Set(x, [Blank EXCEPT !.st = "proposed", !.slot = s, !.sub = a, !.content = TRUE])
    /\ lastEvent' = {<<"propose", "new", "proposed">>}
    /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator.resubmit
Resubmit(a, x) ==
    LET r == art[x] IN
    /\ AgentStep("resubmit", a)
    /\ Tier[a] >= 0
    /\ a = r.sub /\ a \in RepOK
    /\ r.st \in Resubmittable
    /\ r.resubs < MaxResubmit
    /\ r.cool = 0
    \* a resubmission is new content: the hidden flag and the old content's forget
    \* votes do not carry over (docs/rules.md resubmit)
    /\ Set(x, [r EXCEPT !.st = "proposed", !.resubs = r.resubs + 1, !.cool = 0,
                        !.content = TRUE, !.hidden = FALSE, !.urgent = "none",
                        !.fvotes = {}])
    /\ lastEvent' = {<<"resubmit", r.st, "proposed">>}
    /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator.recruit (also step 1 of Orchestrator.tick)
Recruit(x) ==
    LET r == art[x]
        fast == Tier[r.sub] >= 1 /\ ActiveIn(r.slot) = {} /\ r.resubs = 0
        dest == IF fast THEN "fast_track" ELSE "deliberation"
    IN /\ r.st = "proposed"
       /\ \E R \in Picks(Eligible(x), Reviewers) :
             Set(x, [r EXCEPT !.st = dest, !.timer = IF fast THEN TFast ELSE TDelib,
                              !.round = 1, !.reviewers = R, !.reviewed = R])
       /\ lastEvent' = {<<"recruit", "proposed", dest>>}
       /\ StillTicking /\ UNCHANGED unguarded /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator.object
Object(a, x) ==
    LET r == art[x] IN
    /\ AgentStep("object", a)
    /\ Tier[a] >= 1
    /\ a # r.sub /\ (a \in r.reviewers \/ r.slot \in Subscriptions[a])
    /\ r.st = "fast_track"
    /\ Set(x, [r EXCEPT !.st = "deliberation", !.timer = TDelib, !.objected = TRUE])
    /\ lastEvent' = {<<"object", "fast_track", "deliberation">>}
    /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator.commit_vote
CommitVote(a, x, v) ==
    LET r == art[x] IN
    /\ AgentStep("commit_vote", a)
    /\ Tier[a] >= 1
    /\ a \in r.reviewers
    /\ \/ r.st = "commit" /\ v \in ReviewVotes
       \/ r.st = "disputed" /\ r.dphase = "commit" /\ v \in DisputeVotes
    /\ ~\E c \in r.commits : c[1] = a /\ c[2] = r.round
    /\ Set(x, [r EXCEPT !.commits = @ \cup {<<a, r.round, v>>}])
    /\ lastEvent' = {<<"commit_vote", r.st, r.st>>}
    /\ Observe

\* The reveal check of CR-2: the revealed vote equals the voter's commitment
\* for this artifact and the open round.
RevealMatches(r, a, v) == <<a, r.round, v>> \in r.commits

\* ostrom/protocol/orchestrator.py: Orchestrator.reveal_vote
RevealVote(a, x, v) ==
    LET r == art[x] IN
    /\ AgentStep("reveal_vote", a)
    /\ Tier[a] >= 1
    /\ \E c \in r.commits : c[1] = a /\ c[2] = r.round   \* committed in this round
    /\ \/ r.st = "reveal" /\ v \in ReviewVotes
       \/ r.st = "disputed" /\ r.dphase = "reveal" /\ v \in DisputeVotes
    /\ ~\E c \in r.reveals : c[1] = a /\ c[2] = r.round
    /\ RevealMatches(r, a, v)
    /\ Set(x, [r EXCEPT !.reveals = @ \cup {<<a, r.round, v>>}])
    /\ lastEvent' = {<<"reveal_vote", r.st, r.st>>}
    /\ Observe

\* A side wins a tally only with at least MinSide voters (the side rule of
\* TALLY-1, voting.py's review_verdict / dispute_verdict).
SideOK(k) == k >= MinSide

\* A review tally needs Quorum valid reveals (n of them).
QuorumMet(n) == n >= Quorum

\* The tally of a review ballot at the end of its reveal phase.
TimeoutReveal(x) ==
    LET r == art[x]
        n == Cardinality(Counted(x))
        A == SumW(VotersOf(x, "accept"))
        R == SumW(VotersOf(x, "reject"))
        nA == Cardinality(VotersOf(x, "accept"))
        nR == Cardinality(VotersOf(x, "reject"))
    IN IF QuorumMet(n)
       THEN IF AtLeastPct(A, TauAccept, A + R) /\ SideOK(nA)
            THEN Activate(x, "timeout", "reveal",
                          [NoDecision EXCEPT !.how = "tally", !.acc = A, !.rej = R,
                                             !.nacc = nA, !.nrej = nR])
            ELSE IF AtMostPct(A, TauReject, A + R) /\ SideOK(nR)
            THEN /\ Set(x, Close(r, "rejected"))
                 /\ lastEvent' = {<<"timeout", "reveal", "rejected">>}
            ELSE /\ Set(x, [r EXCEPT !.st = "arbitration", !.timer = TArb])
                 /\ lastEvent' = {<<"timeout", "reveal", "arbitration">>}
       ELSE IF ~r.rerecruited
       THEN /\ \E F \in Picks(Eligible(x) \ r.reviewed, Reviewers) :
                  Set(x, [r EXCEPT !.st = "commit", !.timer = TCommit,
                                   !.round = r.round + 1, !.reviewers = F,
                                   !.commits = OldCommits(r), !.reveals = {},
                                   !.reviewed = r.reviewed \cup F,
                                   !.rerecruited = TRUE])
            /\ lastEvent' = {<<"timeout", "reveal", "commit">>}
       ELSE /\ Set(x, Close(r, "expired"))
            /\ lastEvent' = {<<"timeout", "reveal", "expired">>}

\* The hidden flag of an artifact whose dispute failed: cleared (LC-SAFE-5).
KeptHidden(r) == FALSE

\* The tally of a dispute ballot at the end of its reveal phase.
TimeoutDisputeReveal(x) ==
    LET r == art[x]
        n == Cardinality(Counted(x))
        Rt == SumW(VotersOf(x, "retract"))
        K == SumW(VotersOf(x, "keep"))
        nRt == Cardinality(VotersOf(x, "retract"))
        nK == Cardinality(VotersOf(x, "keep"))
        other == ActiveIn(r.slot) \ {x} # {}
        dest == IF other THEN "superseded" ELSE "active"
        \* retract: a quorum, at least MinSide retracters, and either the weight
        \* threshold or fewer than MinSide keepers (a lone keeper cannot hold it)
        retract == /\ n >= QDispute /\ SideOK(nRt)
                   /\ \/ AtLeastPct(Rt, TauRetract, Rt + K)
                      \/ ~SideOK(nK)
    IN IF retract
       THEN /\ Set(x, [Close(r, "retracted") EXCEPT
                         !.urgent = IF r.urgent = "pending" THEN "upheld" ELSE r.urgent])
            /\ lastEvent' = {<<"timeout", "disputed", "retracted">>}
       ELSE /\ Set(x, [Close(r, dest) EXCEPT
                         !.hidden = KeptHidden(r),
                         !.urgent = "none",
                         !.decision = IF other THEN NoDecision
                                      ELSE [NoDecision EXCEPT !.how = "dispute_kept",
                                              !.acc = K, !.rej = Rt,
                                              !.nacc = nK, !.nrej = nRt]])
            /\ lastEvent' = {<<"timeout", "disputed", dest>>}

\* The state an arbitration reaches at its deadline: the status quo, rejected
\* (a row of the table, TableInv).
ArbitrationLapse == "rejected"

\* ostrom/protocol/orchestrator.py: Orchestrator._timeout (fired by Orchestrator.tick)
Timeout(x) ==
    LET r == art[x] IN
    /\ TimeoutDue(x)
    /\ CASE r.st = "fast_track" ->
              Activate(x, "timeout", "fast_track",
                       [NoDecision EXCEPT !.how = "fast_track", !.objected = r.objected])
         [] r.st = "deliberation" ->
              /\ Set(x, [r EXCEPT !.st = "commit", !.timer = TCommit])
              /\ lastEvent' = {<<"timeout", "deliberation", "commit">>}
         [] r.st = "commit" ->
              /\ Set(x, [r EXCEPT !.st = "reveal", !.timer = TReveal])
              /\ lastEvent' = {<<"timeout", "commit", "reveal">>}
         [] r.st = "reveal" -> TimeoutReveal(x)
         [] r.st = "arbitration" ->
              LET d == ArbitrationLapse IN
              /\ Set(x, Close(r, d))
              /\ lastEvent' = {<<"timeout", "arbitration", d>>}
         [] r.st = "disputed" /\ r.dphase = "commit" ->
              /\ Set(x, [r EXCEPT !.dphase = "reveal", !.timer = TReveal])
              /\ lastEvent' = {<<"timeout", "disputed", "disputed">>}
         [] r.st = "disputed" /\ r.dphase = "reveal" -> TimeoutDisputeReveal(x)
    /\ StillTicking /\ UNCHANGED unguarded /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator.arbitrate
Arbitrate(a, x, o) ==
    LET r == art[x] IN
    /\ AgentStep("arbitrate", a)
    /\ Tier[a] >= 3
    /\ a # r.sub /\ a \notin r.reviewers
    /\ r.st = "arbitration"
    /\ CASE o = "accept" ->
              Activate(x, "arbitrate", "arbitration",
                       [NoDecision EXCEPT !.how = "arbiter", !.by = a])
         [] o = "reject" ->
              /\ Set(x, Close(r, "rejected"))
              /\ lastEvent' = {<<"arbitrate", "arbitration", "rejected">>}
         [] o = "revote" ->
              /\ ~r.revoted
              /\ Set(x, [r EXCEPT !.st = "commit", !.timer = TCommit,
                                  !.round = r.round + 1, !.revoted = TRUE,
                                  !.commits = OldCommits(r), !.reveals = {}])
              /\ lastEvent' = {<<"arbitrate", "arbitration", "commit">>}
    /\ Observe

\* Whether the artifact may be disputed once more (LC-SAFE-3: max_disputes).
DisputeAllowed(r) == r.disputes < MaxDisputes

\* Opening a dispute ballot (dispute or urgent report).
OpenDispute(a, x, ev, urgent) ==
    LET r == art[x] IN
    /\ r.st = "active"
    /\ DisputeAllowed(r)
    /\ \E D \in Picks(Eligible(x) \ ({a} \cup r.reviewers), DisputeReviewers) :
          Set(x, [r EXCEPT !.st = "disputed", !.disputes = r.disputes + 1,
                           !.dphase = "commit", !.timer = TCommit, !.round = 1,
                           !.reviewers = D, !.reviewed = D,
                           !.decision = NoDecision,
                           !.hidden = IF urgent THEN TRUE ELSE r.hidden,
                           !.urgent = IF urgent THEN "pending" ELSE r.urgent])
    /\ lastEvent' = {<<ev, "active", "disputed">>}

\* The tier a disputer needs (LC-SAFE-4; MinTier["dispute"], written out so
\* that GuardedActionsInv checks the action against the table).
DisputeTier == 2

\* ostrom/protocol/orchestrator.py: Orchestrator.dispute
Dispute(a, x) ==
    /\ AgentStep("dispute", a)
    /\ Tier[a] >= DisputeTier
    /\ OpenDispute(a, x, "dispute", FALSE)
    /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator.urgent_report
UrgentReport(a, x) ==
    /\ AgentStep("urgent_report", a)
    /\ Tier[a] >= 1
    /\ OpenDispute(a, x, "urgent_report", TRUE)
    /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator.forget_vote (_op_forget_vote), confidence c / ConfUnit
ForgetVote(a, x, c) ==
    LET r == art[x] IN
    /\ AgentStep("forget_vote", a)
    /\ Tier[a] >= 0
    /\ <<a, x>> \in ForgetVotes
    /\ c \in ForgetConfidences
    /\ r.st \in ForgetVotable
    /\ a \notin FVoters(r)
    /\ Set(x, [r EXCEPT !.fvotes = @ \cup {<<a, c>>}])
    /\ lastEvent' = {<<"forget_vote", r.st, r.st>>}
    /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator._forget (fired by Orchestrator.tick)
Forget(x) ==
    LET r == art[x] IN
    /\ ForgetDue(x)
    /\ Set(x, [Blank EXCEPT !.st = "forgotten", !.slot = r.slot, !.sub = r.sub,
                            !.hidden = r.hidden, !.urgent = r.urgent,
                            !.disputes = r.disputes, !.resubs = r.resubs])
    /\ lastEvent' = {<<"forget", r.st, "forgotten">>}
    /\ StillTicking /\ UNCHANGED unguarded /\ Observe

\* ostrom/protocol/orchestrator.py: Orchestrator.tick (steps 2-3: now := now + 1; the due
\* Timeout and Forget steps follow as separate actions). Records no lifecycle
\* event: a tick itself moves no artifact (the table has no tick row).
Tick ==
    /\ ~Due
    /\ \A x \in Artifacts : art[x].st # "proposed"
    /\ art' = [x \in Artifacts |->
                 [art[x] EXCEPT !.timer = IF @ > 0 THEN @ - 1 ELSE 0,
                                !.cool = IF @ > 0 THEN @ - 1 ELSE 0]]
    /\ ticking' = \E y \in Artifacts : TimeoutDueIn(art'[y]) \/ ForgetReadyIn(art'[y])
    /\ lastEvent' = {}
    /\ UNCHANGED <<unguarded, history>>

Next ==
    \/ Tick
    \/ \E x \in Artifacts : Recruit(x) \/ Timeout(x) \/ Forget(x)
    \/ \E a \in Agents, x \in Artifacts :
          \/ \E s \in Slots : Propose(a, x, s)
          \/ Resubmit(a, x) \/ Object(a, x) \/ Dispute(a, x)
          \/ UrgentReport(a, x)
          \/ \E c \in ForgetConfidences : ForgetVote(a, x, c)
          \/ \E v \in Votes : CommitVote(a, x, v) \/ RevealVote(a, x, v)
          \/ \E o \in {"accept", "reject", "revote"} : Arbitrate(a, x, o)

\* Weak fairness of the orchestrator's own steps only; agents get none.
\* TimeoutFair: the artifacts whose Timeout is fair (LC-LIVE-1): all of them.
TimeoutFair == Artifacts
Fairness ==
    /\ WF_vars(Tick)
    /\ \A x \in Artifacts : WF_vars(Recruit(x))
    /\ \A x \in TimeoutFair : WF_vars(Timeout(x))
    /\ \A x \in Artifacts : WF_vars(Forget(x))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Properties (docs/design.md §7)                                          *)

Decisions == [how : Paths, objected : BOOLEAN, acc : Nat, rej : Nat,
              nacc : Nat, nrej : Nat, by : Agents \cup {NoAgent}]
Triples == (STRING \X STRING \X STRING)

TypeOK ==
    /\ art \in [Artifacts -> [st : States \cup {"none"},
                              slot : Slots \cup {NoSlot},
                              sub : Agents \cup {NoAgent},
                              content : BOOLEAN, hidden : BOOLEAN,
                              urgent : {"none", "pending", "upheld"},
                              disputes : Nat, resubs : Nat,
                              timer : Nat, cool : Nat,
                              dphase : {"none", "commit", "reveal"},
                              round : 0..MaxRound,
                              reviewers : SUBSET Agents, reviewed : SUBSET Agents,
                              rerecruited : BOOLEAN, revoted : BOOLEAN,
                              objected : BOOLEAN,
                              commits : SUBSET (Agents \X (1..MaxRound) \X Votes),
                              reveals : SUBSET (Agents \X (1..MaxRound) \X Votes),
                              fvotes : SUBSET (Agents \X ForgetConfidences),
                              decision : Decisions]]
    /\ \A x \in Artifacts : Cardinality(FVoters(art[x])) = Cardinality(art[x].fvotes)
    /\ ticking \in BOOLEAN
    /\ lastEvent \subseteq Triples
    /\ unguarded \subseteq (AgentEvents \X Agents)
    /\ history \in [Artifacts -> [disputes : Nat, resubs : Nat]]

\* LC-SAFE-1: active only through a legitimate decision path; the recorded
\* tally is rechecked, the side rule of TALLY-1 included (restated here, not
\* shared with the actions, so that a wrong tally cannot also be a wrong check).
Legitimate(r) ==
    LET d == r.decision IN
    \* a side's recorded weight is at least its voters' count (every weight is >= 1, ASSUME)
    LET weighed == d.acc >= d.nacc /\ d.rej >= d.nrej IN
    CASE d.how = "fast_track" ->   \* a first submission of a tier >= 1 agent, unobjected
            ~d.objected /\ Tier[r.sub] >= 1 /\ r.resubs = 0
      [] d.how = "tally" ->
            /\ weighed
            /\ d.nacc + d.nrej >= Quorum
            /\ d.acc * 100 >= TauAccept * (d.acc + d.rej)
            /\ d.nacc >= MinSide
      [] d.how = "arbiter" ->   \* a tier-3 agent, neither the submitter nor a reviewer
            d.by \in Agents /\ Tier[d.by] >= 3 /\ d.by # r.sub /\ d.by \notin r.reviewers
      [] d.how = "dispute_kept" ->   \* acc/nacc: keep, rej/nrej: retract
            weighed /\
            ~(/\ d.nacc + d.nrej >= QDispute
              /\ d.nrej >= MinSide
              /\ (d.rej * 100 >= TauRetract * (d.acc + d.rej) \/ d.nacc < MinSide))
      [] OTHER -> FALSE
LegitimateActivationInv ==
    \A x \in Artifacts : art[x].st = "active" => Legitimate(art[x])

\* LC-SAFE-2
OneActivePerSlotInv == \A s \in Slots : Cardinality(ActiveIn(s)) <= 1

\* LC-SAFE-3, over the history the steps leave (Observe), not over the `disputes` and
\* `resubs` counters that DisputeAllowed and Resubmit read: a bound checked against the
\* counter that enforces it cannot see an action that fails to count.
BoundedCountsInv ==
    \A x \in Artifacts : history[x].disputes <= MaxDisputes /\ history[x].resubs <= MaxResubmit
\* ... and the counters those checks read agree with the history: a step that counts
\* wrongly is caught at once, not only when the bound is passed.
CountersInv ==
    \A x \in Artifacts : art[x].disputes = history[x].disputes /\ art[x].resubs = history[x].resubs

\* LC-SAFE-4: every agent action that succeeded had the tier of EVENTS and no
\* bar (the history `unguarded` logs every <<event, agent>> pair that did not).
GuardedActionsInv == unguarded = {}

\* LC-SAFE-5: hidden only with a pending or upheld urgent review; never served.
Served(s) == {x \in ActiveIn(s) : ~art[x].hidden}
HiddenInv ==
    /\ \A x \in Artifacts : art[x].hidden => art[x].urgent \in {"pending", "upheld"}
    /\ \A s \in Slots : \A x \in Served(s) : ~art[x].hidden

\* LC-SAFE-6: tombstone kept, content erased; nothing leaves forgotten; nothing
\* is forgotten from disputed.
ForgottenInv ==
    /\ \A x \in Artifacts : art[x].st = "forgotten" =>
          art[x].slot \in Slots /\ art[x].sub \in Agents /\ ~art[x].content
    /\ \A t \in lastEvent : t[2] # "forgotten"
    /\ \A t \in lastEvent : t[1] = "forget" => t[2] # "disputed"

\* CR-2: every stored (hence countable) reveal equals the voter's commitment
\* for the same artifact and round.
BindingInv ==
    \A x \in Artifacts : \A v \in art[x].reveals : v \in art[x].commits

\* LC-SAFE-4: every step is a row of reference/ostrom/protocol/lifecycle.py TRANSITIONS.
TableInv == lastEvent \subseteq TableRows

\* LC-SAFE-4 ... and the row a step records is what it did (TableStepProp): every recorded
\* <<event, source, dest>> is an artifact that was in source, is in dest and changed,
\* and every artifact whose state changed recorded its move.  Without it an action
\* could record one row and move the artifact elsewhere (or nowhere), and TableInv,
\* and the spec/code cross-check of the rows, would not notice.
Source(x) == IF art[x].st = "none" THEN "new" ELSE art[x].st
TableStep ==
    /\ \A t \in lastEvent' :
          \E x \in Artifacts : Source(x) = t[2] /\ art'[x].st = t[3] /\ art'[x] # art[x]
    /\ \A x \in Artifacts :
          art'[x].st # art[x].st => \E t \in lastEvent' : t[2] = Source(x) /\ t[3] = art'[x].st
TableStepProp == [][TableStep]_vars

\* LC-SAFE-4: a review expires only after its one re-recruitment (docs/rules.md: the re-recruited
\* ballot missed its quorum too), so past its first round.  Read from the round, not
\* from the `rerecruited` flag the expiry tests: a flag left set from an earlier review
\* (not reset when the review closed) would expire the next review at its first miss.
ExpiryStep ==
    \A x \in Artifacts : (art[x].st = "reveal" /\ art'[x].st = "expired") => art[x].round >= 2
ExpiryStepProp == [][ExpiryStep]_vars

\* LC-LIVE-1
SettlesProp ==
    \A x \in Artifacts : (art[x].st \in Transient) ~> (art[x].st \in Stable)

=============================================================================
