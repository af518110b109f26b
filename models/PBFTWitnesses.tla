---------------------------- MODULE PBFTWitnesses ----------------------------
(* The reachability witnesses of spec/PBFT.tla: invariants TLC must report    *)
(* VIOLATED, so that a passing model whose witnesses all held is seen to be    *)
(* vacuous (docs/design.md §7). They are model checks, not protocol, so they   *)
(* live here rather than in the spec. Two modules use them: models/MCPBFT.tla  *)
(* (EXTENDS) on PBFT.tla's own variables, and models/MCPBFTRefinement.tla      *)
(* (INSTANCE) on the abstract state it maps the code-level spec to.            *)
EXTENDS PBFT

\* some honest replica commits (committed-local) a request
NeverCommittedInv == \A i \in Honest : CommittedIn(ComSet, i) = {}
\* some honest replica executes a client request
NeverExecutedInv == \A i \in Honest : Range(OwnLog(i)) \subseteq {Null}
\* every request is executed by every honest replica
NeverAllExecutedInv == ~AllExecuted
\* a view change completes: an honest backup accepts a NEW-VIEW
NeverViewChangeInv == \A i \in Honest : view[i] = 0 \/ status[i] = "vc" \/ i = Primary(view[i])
\* a second view change completes (view 2 is entered by an honest backup)
NeverSecondViewChangeInv ==
    \A i \in Honest : view[i] < 2 \/ status[i] = "vc" \/ i = Primary(view[i])
\* a NEW-VIEW re-proposes a prepared request (O carries a certificate's request)
NeverNewViewReproposalInv == \A m \in nv : \A o \in m.O : o.r = Null
\* a NEW-VIEW fills a gap with the null request
NeverNullRequestInv == \A m \in nv : \A o \in m.O : o.r # Null
\* the Byzantine primary equivocates: two pre-prepares for one (v, n)
NeverByzantineEquivocationInv ==
    \A a, b \in pp : a.v = b.v /\ a.n = b.n => a.r = b.r
\* ... and honest backups accept different ones
NeverSplitPrepareInv ==
    \A a, b \in prep : a.src \in Honest /\ b.src \in Honest /\ a.v = b.v /\ a.n = b.n
                        => a.r = b.r
\* a request is committed in a view after a view change
NeverCommittedAfterViewChangeInv ==
    \A i \in Honest : \A m \in CommittedIn(ComSet, i) : m.v = 0
\* a request re-proposed by a NEW-VIEW is executed
NeverReproposedExecutedInv ==
    \A m \in nv : \A o \in m.O : o.r # Null =>
        \A i \in Honest : [v |-> m.v, n |-> o.n, r |-> o.r] \notin CommittedIn(ComSet, i)
\* a replica is behind and takes the state of another (state transfer)
NeverCatchUpInv == Stuck => Logs = OwnLogs
\* the premise of LivenessInv is reached (the run stops, not at a bound) ...
NeverStuckInv == ~(Stuck /\ ~BoundStop)
\* ... also after a view change, with everything executed
NeverStuckAfterViewChangeInv ==
    ~(Stuck /\ ~BoundStop /\ \A i \in Honest : view[i] >= 1)

\* a Byzantine replica sends a VIEW-CHANGE (ByzViewChange; byzvc is not
\* merged by PBFTView, so the first such state is checked)
NeverByzantineViewChangeInv == byzvc = {}
\* the Byzantine primary of a later view sends a NEW-VIEW (ByzNewView)
NeverByzantineNewViewInv == \A m \in nv : Primary(m.v) \in Honest
\* ... and pre-prepares beyond its NEW-VIEW's O (ByzPrePrepare)
NeverByzantinePrePrepareInv ==
    \A m \in pp : m.v > 0 /\ Primary(m.v) \in Byz => m.n <= MaxO(m.v)
\* a Byzantine replica sends a PREPARE (ByzPrepare; Mode "safety" or "full")
NeverByzantinePrepareInv == \A m \in prep : m.src \in Honest
\* a Byzantine replica sends a COMMIT (ByzCommit; Mode "full")
NeverByzantineCommitInv == \A m \in com : m.src \in Honest

=============================================================================
