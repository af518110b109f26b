------------------------------ MODULE MCLifecycle ------------------------------
(* TLC models of spec/Lifecycle.tla. The configurations models/MCLifecycle_*.cfg *)
(* pick one of the registries below (ci, deep) by substitution (CONST <- Def).  *)
(* Agents are strings: no symmetry is used (SettlesProp is checked, and TLC's  *)
(* liveness checking is unsound under symmetry).                               *)
EXTENDS Lifecycle, LifecycleTable, TLC

\* --- ci: a tier-0 newcomer, one agent of each tier 1..3, one barred tier-2 agent;
\*     two artifacts, one slot. a1 weighs 1 (= w_min), a2 and a3 weigh 2: a 2:1 split of
\*     two reviewers passes tau_accept on weight alone, which only the side rule stops.
\*     With the side rule (MinSide = 2) a dispute retracts only with two retracting
\*     fresh reviewers, and a dispute's reviewers exclude the submitter, the disputer
\*     and the reviewers of the last ballot (two): here at most one is left, so in the
\*     two-artifact model every dispute keeps (misses q_dispute = 2). Retraction needs
\*     a fifth agent of tier >= 1 (a4, the ci-solo registry); with a4 the two-artifact
\*     model grows past a million states, too many for CI.
CIAgents == {"a0", "a1", "a2", "a3", "b"}
TierOf(A) == [a \in A |-> CASE a = "a0" -> 0 [] a \in {"a1", "a4"} -> 1 [] a = "a2" -> 2
                          [] a = "a3" -> 3 [] a = "b" -> 2]
WeightOf(A) == [a \in A |-> IF a \in {"a0", "a1", "a4"} THEN 1 ELSE 2]
SubscriptionsOf(A) == [a \in A |-> IF a = "a1" THEN {"s1"} ELSE {}]
CITier == TierOf(CIAgents)
CIWeight == WeightOf(CIAgents)
CIBarred == {"b"}
CISubscriptions == SubscriptionsOf(CIAgents)
\* the newcomer's reputation is below r_resubmit; the tier-3 agent's is not
CIRepOK == {"a1", "a2", "a3"}
CIArtifacts == {"x1", "x2"}
CISlots == {"s1"}
\* workload: x1 is the newcomer's proposal (formal review), x2 the tier-3
\* agent's (fast track while the slot is free, formal review otherwise); forget
\* votes on x1 come from the tier-2 and tier-3 agents (together 4 >= alpha * 6).
CIProposals == {<<"a0", "x1", "s1">>, <<"a3", "x2", "s1">>}
CIForgetVotes == {<<"a2", "x1">>, <<"a3", "x1">>}

\* --- ci-solo: the newcomer's artifact alone, with resubmission (the newcomer's
\*     reputation reaches r_resubmit here) and forget votes: covers the rows the
\*     two-artifact model leaves out to stay small (retraction, and resubmit from
\*     retracted). A second tier-1 agent a4 (weight 1) makes four agents of tier >= 1
\*     besides the submitter, so a dispute can have two fresh reviewers (the side
\*     rule needs two retracters); a2 and a3's forget votes (4) reach alpha * 7.
CISoloAgents == CIAgents \cup {"a4"}
CISoloTier == TierOf(CISoloAgents)
CISoloWeight == WeightOf(CISoloAgents)
CISoloSubscriptions == SubscriptionsOf(CISoloAgents)
CISoloArtifacts == {"x1"}
CISoloRepOK == {"a0", "a1", "a2", "a3"}
CISoloProposals == {<<"a0", "x1", "s1">>}

\* --- deep: the ci registry and proposals, but both artifacts fully featured:
\*     every non-barred agent's reputation reaches r_resubmit (both resubmit) and
\*     both receive forget votes from the tier-2 and tier-3 agents.
DeepRepOK == {"a0", "a1", "a2", "a3"}
DeepForgetVotes == {"a2", "a3"} \X CIArtifacts

\* --- defaults (lifecycle-defaults): the deep registry at the documented max_disputes 2 and
\*     max_resubmit 2, with the VIEW LastEventView, which leaves out the history lastEvent.
\*     Sound for safety: no action reads lastEvent (each only sets lastEvent';
\*     property_tests/verify/test_lifecycle_view.py checks it), so states that differ only in it
\*     have the same successors, and every reachable state is generated as the successor of
\*     an explored one.  TLC checks an action property on every step it generates, into a
\*     new view or not, so the invariants that read lastEvent (TableInv, ForgottenInv) are
\*     checked there, primed (LastEventStepProp); every other invariant reads only the view.
\*     No liveness is checked under the VIEW (SettlesProp is lifecycle-ci's).
LastEventView == <<art, ticking, unguarded, history>>
LastEventStep == TableInv' /\ ForgottenInv'
LastEventStepProp == [][LastEventStep]_vars
\* --- boundary: every threshold of a ballot and of forgetting lands exactly on its
\*     boundary, and every agent event of tier 1 or 2 (and forget_vote at tier 0) is
\*     taken by an agent of exactly the tier it needs (the step witnesses below).  One
\*     artifact x1 by the tier-1 agent u, so it is fast-tracked (the fast track's
\*     Tier >= 1 at its boundary) unless an objection sends it to formal review.
\*     Reviewers p (weight 2) and q (weight 3): q accepting against p is 3/5 = 60% =
\*     tau_accept, p against q 2/5 = 40% = tau_reject.  The disputer d (tier 2; no agent
\*     of tier 3, so only the tier dispute needs can dispute) and fresh dispute reviewers
\*     s (2) and t (3): t retracting against s is 60%, the model's tau_retract.  Forget
\*     votes from q, t and the tier-0 agent n (weight w_min = 1): 7 of the 14 weight
\*     units of the seven agents (d weighs 2, u and n 1), S = Q at alpha = 50% (q and t
\*     alone, 6, fall short).  MinSide 1 here (two voters per ballot: a side of one must
\*     be able to win at the boundary); the side rule is lifecycle-ci's.  TDelib 2 > TFast
\*     1: an objection must give the deliberation its own period.
BoundaryAgents == {"u", "p", "q", "s", "t", "d", "n"}
BoundaryTier == [a \in BoundaryAgents |-> CASE a = "d" -> 2 [] a = "n" -> 0 [] OTHER -> 1]
BoundaryWeight == [a \in BoundaryAgents |-> CASE a \in {"q", "t"} -> 3
                                              [] a \in {"p", "s", "d"} -> 2 [] OTHER -> 1]
BoundaryBarred == {}
BoundarySubscriptions == [a \in BoundaryAgents |-> {}]
BoundaryRepOK == {"u"}
BoundaryProposals == {<<"u", "x1", "s1">>}
BoundaryForgetVotes == {<<"q", "x1">>, <<"t", "x1">>, <<"n", "x1">>}

\* --- cross-check with the Python transition table (property_tests/verify/test_models.py):
\*     RecordRows, an ACTION_CONSTRAINT that is always TRUE, prints each
\*     <<event, source, dest>> row the first time TLC takes it. TLC's registers
\*     belong to a worker, so the models that use it pin one worker (with more, a
\*     row may print once per worker: harmless, the test takes the union).
MCInit == Init /\ TLCSet(1, {})
MCSpec == MCInit /\ [][Next]_vars /\ Fairness
RecordRows ==
    \A t \in lastEvent' :
        \/ t \in TLCGet(1)
        \/ PrintT(<<"ROW", t>>) /\ TLCSet(1, TLCGet(1) \cup {t})

\* --- mutants: each replaces one operator of spec/Lifecycle.tla (the model's
\*     config substitutes it, `Op <- MutOp`; models/manifest.json lists them and
\*     reference/ostrom/conformance/mutants/registry.py names each mutant). Every
\*     one breaks the rule of one property, which the model must report violated.
\* lifecycle-tally-without-quorum (LC-SAFE-1): a tally with fewer than Quorum reveals decides
MutQuorumMet(n) == TRUE
\* lifecycle-no-side-rule (LC-SAFE-1): weights alone decide, as before tally_min_side
MutSideOK(k) == TRUE
\* lifecycle-no-supersede (LC-SAFE-2): the slot's previous active artifact stays active
MutSupersededBy(x) == {}
\* lifecycle-dispute-unbounded (LC-SAFE-3): the max_disputes check is dropped. Written
\* as a disjunction that is always TRUE: TLC takes each true disjunct of an action as its
\* own branch, and this is how the model was first recorded (its total state count).
MutDisputeAllowed(r) == TRUE \/ r.disputes < MaxDisputes
\* lifecycle-tier-off-by-one (LC-SAFE-4): tier >= 1 may dispute
MutDisputeTier == 1
\* lifecycle-hidden-never-cleared (LC-SAFE-5): a failed dispute keeps `hidden`
MutKeptHidden(r) == r.hidden
\* lifecycle-forget-while-disputed (LC-SAFE-6): the forget decision does not wait
\* for a pending dispute
MutForgetOpenIn(r) == r.st \in Forgettable \/ r.st = "disputed"
\* lifecycle-unchecked-reveal (CR-2): a reveal is not checked against the commitment
MutRevealMatches(r, a, v) == TRUE
\* lifecycle-stale-reveal (CR-2): a reveal is matched against the voter's commitment
\* of any round (the closed rounds' commitments are kept to be matched)
MutStaleRevealMatches(r, a, v) == \E c \in r.commits : c[1] = a /\ c[3] = v
MutOldCommits(r) == r.commits
\* lifecycle-arbitration-expires (TableInv): the arbitration deadline records the
\* status quo as expired, a row the table does not have
MutArbitrationLapse == "expired"
\* lifecycle-arbitration-never-times-out (LC-LIVE-1): Timeout has no fairness, so a
\* due timeout may never be taken
MutTimeoutFair == {}

\* --- reachability witnesses (docs/design.md §7) ----------------------------------
\* Invariants TLC must report VIOLATED: a passing model whose witnesses all held would
\* be vacuous. Model checks, not protocol: they live here, not in spec/Lifecycle.tla.

NoStep(t) == t \notin lastEvent
NeverActiveInv == \A x \in Artifacts : art[x].st # "active"
NeverFastTrackActiveInv == NoStep(<<"timeout", "fast_track", "active">>)
NeverTallyAcceptedInv == NoStep(<<"timeout", "reveal", "active">>)
NeverTallyRejectedInv == NoStep(<<"timeout", "reveal", "rejected">>)
NeverObjectedInv == NoStep(<<"object", "fast_track", "deliberation">>)
NeverArbitratedInv == \A t \in lastEvent : t[1] # "arbitrate"
NeverArbiterAcceptInv == NoStep(<<"arbitrate", "arbitration", "active">>)
NeverArbitrationTimeoutInv == NoStep(<<"timeout", "arbitration", "rejected">>)
NeverRevoteInv == NoStep(<<"arbitrate", "arbitration", "commit">>)
NeverRerecruitInv == NoStep(<<"timeout", "reveal", "commit">>)
NeverExpiredInv == \A x \in Artifacts : art[x].st # "expired"
NeverDisputedInv == \A x \in Artifacts : art[x].st # "disputed"
NeverUrgentReportInv == NoStep(<<"urgent_report", "active", "disputed">>)
NeverRetractedInv == \A x \in Artifacts : art[x].st # "retracted"
NeverDisputeKeptInv == NoStep(<<"timeout", "disputed", "active">>)
NeverKeptSupersededInv == NoStep(<<"timeout", "disputed", "superseded">>)
NeverSupersededInv == \A x \in Artifacts : art[x].st # "superseded"
NeverResubmittedInv == \A x \in Artifacts : art[x].resubs = 0
NeverResubmitRetractedInv == NoStep(<<"resubmit", "retracted", "proposed">>)
NeverForgottenInv == \A x \in Artifacts : art[x].st # "forgotten"
\* the defaults' bounds reached: a second dispute and a second resubmission (lifecycle-defaults)
NeverSecondDisputeInv == \A x \in Artifacts : history[x].disputes < 2
NeverSecondResubmitInv == \A x \in Artifacts : history[x].resubs < 2
NeverHiddenInv == \A x \in Artifacts : ~art[x].hidden
NeverHiddenResolvedInv ==   \* a hidden artifact after its review was upheld
    \A x \in Artifacts : ~(art[x].hidden /\ art[x].st = "retracted")
NeverTier1FastTrackInv ==   \* the fast track's tier at its boundary (Tier[sub] = 1)
    \A x \in Artifacts : ~(art[x].st = "fast_track" /\ Tier[art[x].sub] = 1)
\* an objection gives the deliberation its own TDelib (lifecycle-boundary: TDelib > TFast)
NeverObjectedFullDeliberationInv ==
    \A x \in Artifacts : ~(art[x].st = "deliberation" /\ art[x].objected /\ art[x].timer = TDelib)

\* Step witnesses (verify/tlc/witnesses.py: an action, a name ending in Step): what only
\* a step shows, for a ballot whose reveals are dropped when it closes.  Each threshold
\* restated as its product, so that a comparison flipped at its boundary in the spec
\* (>= to >) loses the witness.
AcceptW(x) == SumW(VotersOf(x, "accept"))
RejectW(x) == SumW(VotersOf(x, "reject"))
NeverAcceptAtThresholdStep ==
    ~\E x \in Artifacts : /\ art[x].st = "reveal" /\ art'[x].st = "active"
                         /\ AcceptW(x) * 100 = TauAccept * (AcceptW(x) + RejectW(x))
NeverRejectAtThresholdStep ==
    ~\E x \in Artifacts : /\ art[x].st = "reveal" /\ art'[x].st = "rejected"
                         /\ AcceptW(x) * 100 = TauReject * (AcceptW(x) + RejectW(x))
RetractW(x) == SumW(VotersOf(x, "retract"))
KeepW(x) == SumW(VotersOf(x, "keep"))
NeverRetractAtThresholdStep ==   \* decided by the weights: the keepers have a side
    ~\E x \in Artifacts : /\ art[x].st = "disputed" /\ art'[x].st = "retracted"
                         /\ Cardinality(VotersOf(x, "keep")) >= MinSide
                         /\ RetractW(x) * 100 = TauRetract * (RetractW(x) + KeepW(x))
\* a dispute (not an urgent report) leaves the artifact served while it is reviewed
NeverDisputeServedStep ==
    ~\E x \in Artifacts : /\ <<"dispute", "active", "disputed">> \in lastEvent'
                         /\ art'[x].st = "disputed" /\ ~art'[x].hidden
                         /\ art'[x].urgent = art[x].urgent
\* a resubmission is new content: the old content's forget votes are dropped
NeverResubmitDropsVotesStep ==
    ~\E x \in Artifacts : /\ art[x].st \in Resubmittable /\ art[x].fvotes # {}
                         /\ art'[x].st = "proposed" /\ art'[x].fvotes = {}
NeverForgetAtQuorumStep ==
    ~\E x \in Artifacts : /\ art[x].st # "forgotten" /\ art'[x].st = "forgotten"
                         /\ ForgetScore(art[x]) * 100 = Alpha * ForgetBase
\* An agent of exactly the tier EVENTS requires (MinTier) takes the step: a guard
\* written one tier too high in an action loses it.
AtMinTier(e) == {a \in Agents \ Barred : Tier[a] = MinTier[e]}
NeverMinTierObjectStep ==
    ~\E a \in AtMinTier("object"), x \in Artifacts : Object(a, x)
NeverMinTierCommitVoteStep ==
    ~\E a \in AtMinTier("commit_vote"), x \in Artifacts, v \in Votes : CommitVote(a, x, v)
NeverMinTierRevealVoteStep ==
    ~\E a \in AtMinTier("reveal_vote"), x \in Artifacts, v \in Votes : RevealVote(a, x, v)
NeverMinTierDisputeStep ==
    ~\E a \in AtMinTier("dispute"), x \in Artifacts : Dispute(a, x)
NeverMinTierUrgentReportStep ==
    ~\E a \in AtMinTier("urgent_report"), x \in Artifacts : UrgentReport(a, x)
NeverMinTierArbitrateStep ==
    ~\E a \in AtMinTier("arbitrate"), x \in Artifacts, o \in {"accept", "reject", "revote"} :
          Arbitrate(a, x, o)
NeverMinTierProposeStep ==
    ~\E a \in AtMinTier("propose"), x \in Artifacts, s \in Slots : Propose(a, x, s)
NeverMinTierResubmitStep ==
    ~\E a \in AtMinTier("resubmit"), x \in Artifacts : Resubmit(a, x)
NeverMinTierForgetVoteStep ==
    ~\E a \in AtMinTier("forget_vote"), x \in Artifacts, c \in ForgetConfidences :
          ForgetVote(a, x, c)

\* --- one reachability witness per action of Next (each must be VIOLATED) -------
\* NeverStep<A>Step is violated exactly by a step of action A of spec/Lifecycle.tla
\* (property_tests/verify/test_action_witnesses.py: every action has one in a model that
\* make test or the suite's CI gate runs).
NeverStepTickStep == ~Tick
NeverStepRecruitStep == ~\E x \in Artifacts : Recruit(x)
NeverStepTimeoutStep == ~\E x \in Artifacts : Timeout(x)
NeverStepForgetStep == ~\E x \in Artifacts : Forget(x)
NeverStepProposeStep == ~\E a \in Agents, x \in Artifacts, s \in Slots : Propose(a, x, s)
NeverStepResubmitStep == ~\E a \in Agents, x \in Artifacts : Resubmit(a, x)
NeverStepObjectStep == ~\E a \in Agents, x \in Artifacts : Object(a, x)
NeverStepDisputeStep == ~\E a \in Agents, x \in Artifacts : Dispute(a, x)
NeverStepUrgentReportStep == ~\E a \in Agents, x \in Artifacts : UrgentReport(a, x)
NeverStepForgetVoteStep ==
    ~\E a \in Agents, x \in Artifacts, c \in ForgetConfidences : ForgetVote(a, x, c)
NeverStepCommitVoteStep == ~\E a \in Agents, x \in Artifacts, v \in Votes : CommitVote(a, x, v)
NeverStepRevealVoteStep == ~\E a \in Agents, x \in Artifacts, v \in Votes : RevealVote(a, x, v)
NeverStepArbitrateStep ==
    ~\E a \in Agents, x \in Artifacts, o \in {"accept", "reject", "revote"} : Arbitrate(a, x, o)
=============================================================================
