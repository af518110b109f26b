--------------------------- MODULE MCPBFTReplicaSystem ---------------------------
(* TLC models of spec/PBFTReplicaSystem.tla: the workloads, the narrowing of the   *)
(* adversary each model uses, the reachability witnesses, and the replica BEFORE    *)
(* the fixes of the "PBFT under real faults" work as definition overrides (the      *)
(* models that must find the old defects as counterexamples). The configurations   *)
(* models/MCPBFTReplicaSystem_*.cfg pick among them.                               *)
EXTENDS PBFTReplicaSystem

\* --- workloads ------------------------------------------------------------------
\* one client, one request (digest id "a"); DRank orders the ids as the hex digests
\* would (only ties in O read it)
ReqA == [t |-> "Request", c |-> "c0", ts |-> 1, d |-> "a", sok |-> TRUE]
ReqB == [t |-> "Request", c |-> "c0", ts |-> 2, d |-> "b", sok |-> TRUE]
OneRequest == {ReqA}
ReqC == [t |-> "Request", c |-> "c0", ts |-> 3, d |-> "c", sok |-> TRUE]
TwoRequests == {ReqA, ReqB}
ThreeRequests == {ReqA, ReqB, ReqC}
\* two requests of one client whose digest ids sort against their timestamps (TLC
\* orders a set of records by its fields, `d` before `ts`): the client sends the one of
\* timestamp 1 first, though TLC enumerates the other first; a replica that executed
\* the later one ignores the earlier one as old (PBFTReplica!Fresh_)
ReqLate == [t |-> "Request", c |-> "c0", ts |-> 2, d |-> "a", sok |-> TRUE]
ReqEarly == [t |-> "Request", c |-> "c0", ts |-> 1, d |-> "b", sok |-> TRUE]
TsAgainstIds == {ReqLate, ReqEarly}
MCDRank == ("null" :> 0) @@ ("a" :> 1) @@ ("b" :> 2) @@ ("c" :> 3)

\* The Byzantine replica 3 lies about checkpoint 1 to replica 2 (a digest of no
\* history) and also sends its genuine vote and the votes a quorum needs while
\* replica 2 is cut off: its PREPARE and COMMIT of "a" at (0, 1) to replicas 0 and
\* 1, its genuine CHECKPOINT to everyone.
Lie == <<[t |-> "inconsistent"]>>
ByzVote(t, to) == [to |-> to, m |-> [t |-> t, v |-> 0, n |-> 1, d |-> "a", r |-> 3, sok |-> TRUE]]
ByzCk(sd, to) == [to |-> to, m |-> [t |-> "Checkpoint", n |-> 1, sd |-> sd, r |-> 3, sok |-> TRUE]]
CheckpointLiar ==
    {ByzCk(Lie, 2)} \cup {ByzCk(<<ReqA>>, j) : j \in {0, 1, 2}}
    \cup {ByzVote(t, j) : t \in {"Prepare", "Commit"}, j \in {0, 1}}

\* The Byzantine replica 3 sends replica 0 VIEW-CHANGEs for views it has not left:
\* one for view 1 whose prepared certificate carries a PREPARE of replica 1 that
\* replica 1 never signed (the primary's genuine PRE-PREPARE of "a" at (0, 1), replayed,
\* and replica 2's genuine PREPARE), a genuine one for view 1 and a genuine one for
\* view 2 (which supersedes it). Alone, f = 1 of them moves no one.
PPa == [t |-> "PrePrepare", v |-> 0, n |-> 1, d |-> "a", r |-> 0, req |-> ReqA,
        dok |-> TRUE, sok |-> TRUE]
PrepA(r, sok) == [t |-> "Prepare", v |-> 0, n |-> 1, d |-> "a", r |-> r, sok |-> sok]
ForgedCert == [pp |-> PPa, preps |-> <<PrepA(1, FALSE), PrepA(2, TRUE)>>]
ByzVC(nv, P) == [to |-> 0, m |-> [t |-> "ViewChange", nv |-> nv, s |-> 0, proof |-> <<>>,
                                  P |-> P, r |-> 3, sok |-> TRUE]]
ViewChangeLiar == {ByzVC(1, <<ForgedCert>>), ByzVC(1, <<>>), ByzVC(2, <<>>)}

\* The Byzantine replica 3 sends replica 0 its genuine VIEW-CHANGE for view 1, at any
\* time: before the view change it is one of the f+1 that make replica 0 join; once
\* replica 0 has installed view 1 it is late, and replica 0 answers it with its NEW-VIEW
\* (PBFTReplica!AnswerLateVC), a step that changes only `answered` (the answer-only
\* round of models/MCPBFTReplicaNet.tla)
LateViewChange == {ByzVC(1, <<>>)}

\* The Byzantine replica 3 sends replica 2, the replica a partition may cut off, its
\* PREPARE of "a" at (0, 1): a vote consistent with the honest ones, sent at any time
\* (the network models: what a partition and the links do with it is what is checked)
CutOffVote == {ByzVote("Prepare", 2)}

\* --- narrowing the adversary (CI models) ---------------------------------------
\* Before the heal a timer fires only when nothing is in flight to its replica:
\* everything sent to it before has arrived or been dropped. What is lost is a
\* message overtaken by the receiver's own timeout; messages sent after it still
\* arrive late (the late pre-prepare and commit paths are exercised), and the deep
\* model keeps the timers free.
InboxEmpty(i) == \A l \in Links : l[2] = i => chan[l] = <<>>
\* The view-change models: as InboxEmpty, and replica 1 (the primary of view 1)
\* times out only once it has left view 0 (it joins view 1 when f+1 others want it,
\* the shape of defect 1; its own view-0 timeout only adds interleavings).
ViewChangeTimer(i) == InboxEmpty(i) /\ (i = 1 => rs[1].view >= 1)

\* Delivery in one fixed fair order: the first nonempty link, senders then
\* receivers by number, as Simulation.drain delivers in one order.
LinkRank(l) == l[1] * (N + 1) + l[2]
FirstLinkFirst(l) ==
    \A m \in Links : chan[m] # <<>> => LinkRank(l) <= LinkRank(m)
\* The deep models: any order before the heal, the fixed order after it. BFT-LIVE-1
\* is then checked for that schedule from every state the faults can reach, not for
\* every order of delivery after the heal; safety loses nothing, since every
\* delivery after the heal is also a step the model can take before it.
HealedInOrder(l) == healed => FirstLinkFirst(l)
\* The CI models: the fixed order throughout. The adversary keeps its drops,
\* omissions, duplicates, out-of-order deliveries (ReorderBudget), partitions,
\* restarts and timeouts; what it loses is racing whole links against each other.

\* The Byzantine replica sends a message again only while its receiver does not
\* hold it: a copy the receiver stored is refused as a replay and changes nothing,
\* while a copy it refused (or dropped with its state at a restart) may matter.
ByzNotHeld(e) ==
    LET s == rs[e.to] IN e.m \notin s.cks \cup s.prepares \cup s.commits
\* ... and only when nothing else is in flight to the receiver (as InboxEmpty for
\* timers): the lie still arrives before or after any message already delivered.
ByzNotHeldInboxEmpty(e) == ByzNotHeld(e) /\ InboxEmpty(e.to)

\* --- reachability witnesses (each must be VIOLATED) ------------------------------
\* some honest replica answers a late VIEW-CHANGE with the NEW-VIEW of its view
\* (PBFTReplica!AnswerLateVC, rate-limited through `answered`)
NeverAnsweredLateInv == \A i \in Honest : \A x \in rs[i].answered : x[1] # "new_view"
\* every honest replica has installed a view above 0 before the heal: under
\* ViewChangeTimer replica 1 cannot time out in view 0, so it must JOIN on f+1
\* VIEW-CHANGEs (PBFTReplica!OnViewChange) for view 1 to be installed; with one
\* timeout (pbft-replica-byz-view-change-ci) the others join on the timed-out
\* replica's VIEW-CHANGE and the Byzantine one
NeverViewInstalledBeforeHealInv == healed \/ \E i \in Honest : rs[i].view = 0 \/ ~rs[i].active
\* some honest replica installs a view above 0
NeverViewInstalledInv == \A i \in Honest : rs[i].view = 0 \/ ~rs[i].active
\* some honest replica makes a checkpoint stable
NeverStableInv == \A i \in Honest : rs[i].stable = 0
\* some honest replica holds a Byzantine VIEW-CHANGE for view 2 (one for view 1 superseded)
NeverHeldByzViewChangeInv == \A i \in Honest : \A x \in rs[i].vcs : x.r \notin Byz \/ x.nv < 2
\* some honest replica executes a request
NeverExecutedInv == \A x \in execd : x[3] = "null"
\* every request is executed by every honest replica
NeverAllExecutedInv == ~AllExecuted
\* a view change completes after the heal (a replica becomes active in a new view)
NeverViewChangeAfterHealInv == "view-installed-after-heal" \notin events
\* a lagging replica catches up by state transfer
NeverStateTransferInv == "transfer" \notin events
\* a replica restarted from its database executes afterwards
NeverRestartedExecutesInv == "restarted-executes" \notin events
\* a checkpoint becomes stable at every honest replica
NeverStableEverywhereInv == \E i \in Honest : rs[i].stable = 0
\* the premise of LivenessInv is reached (the run stops, not at the view bound) ...
NeverStuckInv == ~(Stuck /\ ~BoundStop)
\* ... also after a view change
NeverStuckAfterViewChangeInv == ~(Stuck /\ ~BoundStop /\ \A i \in Honest : rs[i].view >= 1)
\* ... also with a replica restarted before the heal
NeverStuckAfterRestartInv == ~(Stuck /\ ~BoundStop /\ "restart" \in events)

\* --- the replica before the fixes (mutants) --------------------------------------
\* drop-own-view-change: leaving a view forgets the NEW-VIEW that installed it; it is
\* retransmitted, and sent to a replica whose VIEW-CHANGE is late, only while active.
PreFixSendViewChange(s, v) ==
    IF v < s.view \/ (v = s.view /\ ~s.active) THEN s
    ELSE LET certs == SortByN({c \in s.certs : c.pp.n > s.stable})
             vc == [t |-> "ViewChange", nv |-> v, s |-> s.stable, proof |-> s.sproof,
                    P |-> certs, r |-> s.Id, sok |-> TRUE]
             s1 == [s EXCEPT !.view = v, !.active = FALSE, !.nvmsg = NoMsg, !.cvc = @ + 1,
                             !.vcs = {x \in @ : x.nv >= v - 1 /\ ~(x.nv = v /\ x.r = s.Id)}
                                     \cup {vc}]
         IN SendNewView(Send(s1, Broadcast, vc))
PreFixAnswerLateVC(s, vc) ==
    IF s.active /\ s.nvmsg # NoMsg /\ vc.r # s.Id THEN Send(s, Name(vc.r), s.nvmsg) ELSE s
PreFixRetransmit(s) ==
    LET s1 == IF ~s.active
              THEN SendSet(s, Broadcast, {x \in s.vcs : x.nv \in {s.view - 1, s.view}})
              ELSE IF s.nvmsg # NoMsg THEN Send(s, Broadcast, s.nvmsg) ELSE s
        s2 == SendSet(s1, Broadcast, {x \in s.pps : x.v = s.view /\ x.r = s.Id})
        s3 == SendSet(s2, Broadcast, {x \in s.prepares \cup s.commits : x.v = s.view /\ x.r = s.Id})
        s4 == SendSeq(s3, Broadcast, s.sproof)
        s5 == SendSet(s4, Broadcast, {x \in s.cks : x.r = s.Id})
        s6 == IF s.active /\ ~IsPrim(s) THEN SendSeq(s5, Name(Prim(s, s.view)), s.pending) ELSE s5
    IN IF s.lastexec < s.stable THEN FetchTo(s6) ELSE s6

\* first-checkpoint-vote-wins: the first CHECKPOINT of a sender for a sequence number
\* is the only one ever counted; its genuine vote, relayed later, is a "replay".
PreFixRecordCheckpoint(s, ck) ==
    IF \E x \in s.cks : x.n = ck.n /\ x.r = ck.r THEN Rej(s, "replayed")
    ELSE LET s1 == [s EXCEPT !.cks = @ \cup {ck}]
             matching == {x \in s1.cks : x.n = ck.n /\ x.sd = ck.sd}
         IN IF Cardinality(matching) >= Q(s) /\ ck.n > s.stable
            THEN AdvanceStable(s1, ck.n, ck.sd, matching) ELSE s1

\* current-view-votes: the view-change fixes kept, but a replica re-sends only the
\* PRE-PREPAREs and its own votes of its current view (found by TLC on
\* MCPBFTReplicaSystem_faults.cfg: a replica that committed and moved on alone
\* withholds the commit a restarted peer still in the old view needs).
CurrentViewRetransmit(s) ==
    LET s0 == [s EXCEPT !.answered = {}, !.fetched = {}]
        s0a == IF ~s.active
               THEN SendSet(s0, Broadcast, {x \in s.vcs : x.nv \in {s.view - 1, s.view}})
               ELSE s0
        s1 == IF s.nvmsg # NoMsg THEN Send(s0a, Broadcast, s.nvmsg) ELSE s0a
        s2 == SendSet(s1, Broadcast, {x \in s.pps : x.v = s.view})
        s3 == SendSet(s2, Broadcast, {x \in s.prepares \cup s.commits : x.v = s.view /\ x.r = s.Id})
        s4 == SendSeq(s3, Broadcast, s.sproof)
        s5 == SendSet(s4, Broadcast, {x \in s.cks : x.r = s.Id})
        s6 == IF s.active /\ ~IsPrim(s) THEN SendSeq(s5, Name(Prim(s, s.view)), s.pending) ELSE s5
    IN IF s.lastexec < s.stable THEN FetchTo(s6) ELSE s6

\* amnesia: a replica restarted without its database (Recover forgets everything)
AmnesiacRecover(s) ==
    InitState([n |-> s.N, f |-> s.F, id |-> s.Id, k |-> s.K, w |-> s.W, base |-> s.Base,
               clients |-> s.Clients])

\* idle-restart: a crash-restart that loses nothing (the spec mutant Restart/except/1)
IdleRestart(i) ==
    /\ ~healed /\ restartsLeft > 0
    /\ restartsLeft' = restartsLeft - 1
    /\ events' = events \cup {"restart", RestartTag(i)}
    /\ UNCHANGED <<rs, chan, omitsLeft, lossLeft, reorderLeft, dupLeft, cut, partitionsLeft,
                   timeoutsLeft, healed, rt, changed, rounds, retried, acks, execd, promises>>
\* unguarded-timeout: a timer expires on any replica, waiting or not, also at the view
\* bound (the spec mutant FireTimeout/conj/1)
UnguardedFireTimeout(i) ==
    /\ IF healed THEN Quiescent ELSE TimerMayFire(i) /\ timeoutsLeft > 0
    /\ timeoutsLeft' = IF healed THEN timeoutsLeft ELSE timeoutsLeft - 1
    /\ Apply(i, Step(rs[i], [op |-> "timeout"]), chan, "timeout")
    /\ UNCHANGED <<lossLeft, reorderLeft, dupLeft, cut, partitionsLeft, restartsLeft, healed, rt, rounds>>

\* --- the faults themselves, checked on the step (BFT-FAULT-1) ----------------------
\* A fault budget says WHEN a fault was spent; what it did is read from the replicas'
\* states before and after the step, so a fault that does something else than the
\* one described (or nothing at all) fails here, whatever the step's own code says.
\* A crash-restart gives one honest replica exactly PBFTReplica!Recover of its state
\* before (the volatile part lost, the durable part kept) and leaves the others
RestartStep ==
    restartsLeft' < restartsLeft => \E i \in Honest : rs' = [rs EXCEPT ![i] = Recover(rs[i])]
\* A timer expiry is spent on a replica that was waiting, and starts its view change:
\* its view rises, and it is no longer active in it
TimeoutStep ==
    timeoutsLeft' < timeoutsLeft =>
        \E i \in Honest : rs'[i].view > rs[i].view /\ ~rs'[i].active
RestartStepProp == [][RestartStep]_vars
TimeoutStepProp == [][TimeoutStep]_vars

\* --- one reachability witness per action of Next (each must be VIOLATED) ----------
\* NeverStep<A>Inv is violated exactly when action A of spec/PBFTReplicaSystem.tla
\* has been taken (property_tests/verify/test_action_witnesses.py: every action has one
\* in a model that make test or the suite's CI gate runs).
\* an honest replica reported an execution: it takes many deliveries (a PRE-PREPARE,
\* 2f PREPAREs, 2f+1 COMMITs), more than ReorderBudget out-of-order ones, so whole links
\* were delivered (DeliverLink)
NeverStepDeliverLinkInv == execd = {}
\* only an out-of-order delivery spends the reorder budget (DeliverAt, k > 1)
NeverStepDeliverAtInv == reorderLeft = ReorderBudget
NeverStepDropInv == lossLeft = LossBudget
NeverStepDuplicateInv == dupLeft = DupBudget
\* a view rises by a timeout, or by joining f+1 VIEW-CHANGEs, one of them an honest
\* replica's, which it sent when it timed out
NeverStepFireTimeoutInv == \A i \in Honest : rs[i].view = 0
NeverStepRetransmissionInv == \A i \in Honest : ~rt[i]
NeverStepRestartInv == restartsLeft = RestartBudget
NeverStepPartitionInv == partitionsLeft = PartitionBudget
\* before the heal only Reconnect ends a partition
NeverStepReconnectInv == healed \/ cut # {} \/ partitionsLeft = PartitionBudget
NeverStepClientRetryInv == ~retried
NeverStepNewRoundInv == rounds = 0
NeverStepHealInv == ~healed
\* a Byzantine replica's message is in flight
NeverStepByzSendInv == \A l \in Links : l[1] \in Byz => chan[l] = <<>>
\* Terminated is the stuttering step of a run that has ended (Stuck or OutOfRounds)
NeverStepTerminatedInv == ~(Stuck \/ OutOfRounds)

\* The state TLC fingerprints: the back-off counter is read by no step of this
\* untimed model (TimeoutDuration is only observed), so states differing only in it
\* are merged.
MCView == <<[i \in Honest |-> [rs[i] EXCEPT !.cvc = 0]], chan, faults, healed, rt, changed,
            rounds, retried, acks, execd, promises, events>>
=============================================================================
