--------------------------- MODULE MCPBFTRefinement ---------------------------
(***************************************************************************)
(* REFINEMENT: the code-level spec implements the protocol-level spec.     *)
(* spec/PBFTReplicaSystem.tla (N copies of PBFTReplica!Step, the replica   *)
(* that trace validation checks reference/ostrom/consensus/replica/        *)
(* against, over a lossy network with timeouts, restarts and a silent      *)
(* Byzantine replica) is checked to refine spec/PBFT.tla, whose safety      *)
(* (BFT-SAFE-1/2) the pbft-* models check. TLC checks, on small models:     *)
(*                                                                         *)
(*     RSpec => PBFTRefinementInit /\ PBFTRefinementStep                   *)
(*     PBFTRefinementInit == Abs!Init                                      *)
(*     PBFTRefinementStep == [][RefStep]_AState                            *)
(*                                                                         *)
(* where Abs is PBFT.tla under the mapping below and RefStep says: the     *)
(* mapped state does not change, or it moves by a chain of 1 to 8 steps of *)
(* LNext (models/MCPBFTLocal.tla: PBFT.tla's Next plus the relaxed steps   *)
(* of the CONSTANT Relaxations). With Relaxations = {} LNext is PBFT.tla's *)
(* Next itself (the model pbft-refinement-strict).                         *)
(*                                                                         *)
(* THE MAPPING (AState). Messages are mapped from what honest replicas     *)
(* have SENT, a history (sent = exists, as in PBFT.tla, even if the        *)
(* network then loses it):                                                 *)
(*  - view[i], status[i]: rs[i].view, and "vc" iff ~rs[i].active (honest i); *)
(*    the Byzantine replica's are constant (0, "normal"), as in PBFT.tla,   *)
(*    which gives Byzantine replicas no local state;                      *)
(*  - pp, prep, com: the PRE-PREPAREs, PREPAREs, COMMITs of `promises`     *)
(*    (PBFTReplicaSystem's history of every vote an honest replica sent,   *)
(*    the PRE-PREPAREs inside a NEW-VIEW's O included), request digest d    *)
(*    as the request, the null request "null" as Null;                     *)
(*  - vc, nv: the auxiliary history variables vcSent and nvSent of this    *)
(*    module: every VIEW-CHANGE [v |-> nv, src |-> r, P |-> the             *)
(*    certificates' pre-prepares (v, n, d)] and NEW-VIEW [v, V, O] an       *)
(*    honest replica sent. They are read off the replica state after each  *)
(*    step (a replica keeps its own VIEW-CHANGE in rs[i].vcs, or, if it    *)
(*    became primary in the same step, in the NEW-VIEW rs[i].nvmsg it sent);*)
(*    a message missed this way would make the check FAIL (the step that   *)
(*    sent it would add nothing), never pass wrongly;                      *)
(*  - byzvc: {} (the Byzantine replica is silent: ByzSends = {}).          *)
(* Constants: N, F, Byz, MaxView are the code's; MaxSeq = W (the watermark *)
(* window; K > W, so no checkpoint is ever taken, see below); the client   *)
(* requests are the digests of Requests in timestamp order; Null = "null";  *)
(* ByzPrePrepares = {{}} (silent); Mode = "full" (no reduction).          *)
(*                                                                         *)
(* ONE CODE STEP, SEVERAL PBFT STEPS. A code step is one replica handling  *)
(* one input, or (DeliverLink) every message of a link in order. It can do *)
(* what PBFT.tla splits into several steps, e.g. a backup that gets the    *)
(* last VIEW-CHANGE it needs and is the new primary joins the view change, *)
(* sends the NEW-VIEW and pre-prepares the pending request in one step.    *)
(* So RefStep allows a chain of up to 8 LNext steps (ChainK below; no code  *)
(* step of these models needs more than 4, and a longer one would FAIL the *)
(* check). TLC has no action composition (\cdot), so A \cdot B, i.e.      *)
(* \E u : A(s, u) /\ B(u, t), is written out with a parametrised INSTANCE *)
(* Seg(t0, x, y) of MCPBFTLocal whose variables are x's values in the      *)
(* current state and y's in the next: `tog` is an auxiliary bit that flips *)
(* on every step, t0 its current value, and each variable is substituted  *)
(* by IF tog = t0 THEN x.var ELSE y.var (so its prime, where tog' # t0, is *)
(* y.var). The intermediate states u range over Mids(s, t): every state    *)
(* between s and t (message sets between s's and t's, views between), which*)
(* is complete because every PBFT.tla step only adds messages and raises   *)
(* views. tog is not part of the fingerprint (VIEW RView): the check reads *)
(* tog only to tell the current state from the next.                       *)
(*                                                                         *)
(* THE DISCREPANCIES TLC FOUND, and how each is resolved (the arguments    *)
(* are in models/MCPBFTLocal.tla; docs/consensus.md has the traces):       *)
(*  1. Eager commits (pbft-refinement-strict). The code sends COMMIT       *)
(*     when it has received the 2f prepares; PBFT.tla's step that completes*)
(*     a certificate also sends every honest replica's COMMIT. An          *)
(*     abstraction of PBFT.tla (its header calls it a restriction), not a  *)
(*     code bug: Relaxations "lazy_commit".                                *)
(*  2. The P of a VIEW-CHANGE (pbft-refinement-without-committed-p).       *)
(*     The code's P holds the certificates the replica has COLLECTED (it   *)
(*     sent COMMIT for them); PBFT.tla's, every certificate that exists    *)
(*     and that the replica accepted. The code is Castro & Liskov's rule:   *)
(*     Relaxations "committed_p".                                          *)
(*  3. The request timer (pbft-refinement-without-free-timer). The         *)
(*     code's timer runs until the replica has executed the request;       *)
(*     PBFT.tla's stops once 2f+1 COMMITs exist. PBFT.tla is too strict    *)
(*     (timers are not clocks): Relaxations "free_timer".                  *)
(* With all three, every code step of every model here is a chain of LNext *)
(* steps. LSpec (PBFT.tla + the three) keeps AgreementInv, PrefixInv and    *)
(* ValidityInv: MCPBFTLocal_safety.cfg checks them on PBFT.tla's model.    *)
(*                                                                         *)
(* BESIDES THE PROPERTY, the models check (as invariants) that the mapped  *)
(* state satisfies PBFT.tla's TypeOK, AgreementInv, PrefixInv, ValidityInv, *)
(* and ExecutionRefinementInv: every execution a replica REPORTS (execd) is *)
(* a PBFT.tla decision: a request with 2f+1 COMMITs at that sequence       *)
(* number. That is the link from PBFT.tla's AgreementInv (about COMMITs)   *)
(* to what the code executes, including executions through late commits.  *)
(*                                                                         *)
(* WHAT THE MAPPING DOES NOT COVER:                                        *)
(*  - checkpoints, garbage collection, watermark movement and state        *)
(*    transfer: K > W, so no checkpoint is taken and every VIEW-CHANGE has *)
(*    s = 0 (PBFT.tla has no stable checkpoints; its state transfer is a   *)
(*    derived log copy). After a stable checkpoint the check would fail    *)
(*    rather than pass: the code's VIEW-CHANGE then leaves out the         *)
(*    certificates at or below s, which CommittedP still holds;            *)
(*  - Byzantine messages: the Byzantine replica is silent (ByzSends = {}), *)
(*    so byzvc is {} and no Byzantine vote is mapped; a model with Byzantine*)
(*    sends needs the mapping of their messages to PBFT.tla's Byz* steps   *)
(*    (and probably a NEW-VIEW with more than 2f+1 VIEW-CHANGEs and a join *)
(*    to the smallest RECEIVED view, which PBFT.tla does not allow);       *)
(*  - crash-restarts are covered as far as the mapping sees them: a        *)
(*    restart keeps the durable state (view, own votes, certificates), so  *)
(*    it is a stuttering step, and the restarted replica's later steps are *)
(*    checked like any other; amnesia (AmnesiacRecover) is not;            *)
(*  - replies, client timestamps, retransmission, rate limits: not in      *)
(*    PBFT.tla; they change no mapped variable (stuttering steps);          *)
(*  - liveness: PBFT.tla's LivenessInv is not carried over (free_timer);    *)
(*    BFT-LIVE-1 is checked on the code-level spec itself;                 *)
(*  - small models only: one request, N = 4, f = 1, MaxView 1 or 2, small  *)
(*    fault budgets (the cfg files).                                       *)
(***************************************************************************)
EXTENDS PBFTReplicaSystem

CONSTANT Relaxations   \* which relaxed steps of models/MCPBFTLocal.tla the target allows

\* --- workload: one client, one request (as in models/MCPBFTReplicaSystem.tla) -------
ReqA == [t |-> "Request", c |-> "c0", ts |-> 1, d |-> "a", sok |-> TRUE]
OneRequest == {ReqA}
MCDRank == ("null" :> 0) @@ ("a" :> 1)
\* before the heal a timer fires only when nothing is in flight to its replica
InboxEmpty(i) == \A l \in Links : l[2] = i => chan[l] = <<>>

\* --- the history variables ---------------------------------------------------
VARIABLES
    vcSent,   \* every VIEW-CHANGE an honest replica sent, mapped ([v, src, P])
    nvSent,   \* every NEW-VIEW an honest replica sent, mapped ([v, V, O])
    tog       \* flips on every step: tells the current state from the next (Seg)
aux == <<vcSent, nvSent, tog>>

MapCert(c) == [v |-> c.pp.v, n |-> c.pp.n, r |-> c.pp.d]
MapVC(x) == [v |-> x.nv, src |-> x.r, P |-> {MapCert(x.P[k]) : k \in DOMAIN x.P}]
MapNV(m) == [v |-> m.v, V |-> {MapVC(m.V[k]) : k \in DOMAIN m.V},
             O |-> {[n |-> m.O[k].n, r |-> m.O[k].d] : k \in DOMAIN m.O}]
\* a replica's own VIEW-CHANGEs in its state: kept in vcs, or (the new primary, which
\* enters the view in the step that sends it) inside the NEW-VIEW it sent
OwnVCs(s) == {x \in s.vcs : x.r = s.Id}
             \cup (IF s.nvmsg.t = "NewView" THEN {x \in Range(s.nvmsg.V) : x.r = s.Id} ELSE {})
OwnNVs(s) == IF s.nvmsg.t = "NewView" /\ s.nvmsg.r = s.Id THEN {s.nvmsg} ELSE {}

RInit == Init /\ vcSent = {} /\ nvSent = {} /\ tog = FALSE
RNext ==
    /\ Next
    /\ vcSent' = vcSent \cup {MapVC(x) : x \in UNION {OwnVCs(rs'[i]) : i \in Honest}}
    /\ nvSent' = nvSent \cup {MapNV(x) : x \in UNION {OwnNVs(rs'[i]) : i \in Honest}}
    /\ tog' = ~tog
RSpec == RInit /\ [][RNext]_<<vars, aux>>

\* The fingerprint: everything but tog (read only to tell a state from its successor).
RView == <<vars, vcSent, nvSent>>

\* --- the refinement mapping ------------------------------------------------------
AView == [i \in Replicas |-> IF i \in Honest THEN rs[i].view ELSE 0]
AStatus == [i \in Replicas |-> IF i \in Honest /\ ~rs[i].active THEN "vc" ELSE "normal"]
Sent(t) == {q \in promises : q.t = t}
APP == {[v |-> p.v, n |-> p.n, r |-> p.d] : p \in Sent("PrePrepare")}
APrep == {[v |-> p.v, n |-> p.n, r |-> p.d, src |-> p.r] : p \in Sent("Prepare")}
ACom == {[v |-> p.v, n |-> p.n, r |-> p.d, src |-> p.r] : p \in Sent("Commit")}
MCClientRequests == LET q == SortByTs(Requests) IN [k \in DOMAIN q |-> q[k].d]

Abs == INSTANCE PBFTWitnesses WITH
        view <- AView, status <- AStatus, pp <- APP, prep <- APrep, com <- ACom,
        vc <- vcSent, byzvc <- {}, nv <- nvSent,
        ClientRequests <- MCClientRequests, Null <- "null", MaxSeq <- W,
        ByzPrePrepares <- {{}}, Mode <- "full"

\* the mapped state as one record (evaluated once per state by RefStep)
AState == [view |-> AView, status |-> AStatus, pp |-> APP, prep |-> APrep, com |-> ACom,
           vc |-> vcSent, byzvc |-> {}, nv |-> nvSent]

\* --- steps of the target between explicit states (see the header) --------------
Seg(t0, x, y) == INSTANCE MCPBFTLocal WITH
        view <- IF tog = t0 THEN x.view ELSE y.view,
        status <- IF tog = t0 THEN x.status ELSE y.status,
        pp <- IF tog = t0 THEN x.pp ELSE y.pp,
        prep <- IF tog = t0 THEN x.prep ELSE y.prep,
        com <- IF tog = t0 THEN x.com ELSE y.com,
        vc <- IF tog = t0 THEN x.vc ELSE y.vc,
        byzvc <- IF tog = t0 THEN x.byzvc ELSE y.byzvc,
        nv <- IF tog = t0 THEN x.nv ELSE y.nv,
        r1 <- "r1", r2 <- "r2", r3 <- "r3",   \* MCPBFT's symmetric requests: unused here
        ClientRequests <- MCClientRequests, Null <- "null", MaxSeq <- W,
        ByzPrePrepares <- {{}}, Mode <- "full"

\* x to y is one LNext step (t0: the current value of tog)
One(t0, x, y) == Seg(t0, x, y)!LNext

\* the states between a and b: each message set between a's and b's, each view and
\* status between (a replica whose view and status do not change keeps them)
Between(X0, X1) == {X0 \cup D : D \in SUBSET (X1 \ X0)}
Mids(a, b) ==
    {[view |-> vw, status |-> st, pp |-> p, prep |-> q, com |-> c, vc |-> w,
      byzvc |-> a.byzvc, nv |-> n] :
       vw \in {f \in [Replicas -> 0 .. MaxView] :
                 \A j \in Replicas : a.view[j] <= f[j] /\ f[j] <= b.view[j]},
       st \in {f \in [Replicas -> {"normal", "vc"}] :
                 \A j \in Replicas : a.view[j] = b.view[j] /\ a.status[j] = b.status[j]
                                     => f[j] = a.status[j]},
       p \in Between(a.pp, b.pp), q \in Between(a.prep, b.prep), c \in Between(a.com, b.com),
       w \in Between(a.vc, b.vc), n \in Between(a.nv, b.nv)}

\* a chain of at most K LNext steps from a to b (unrolled: SANY allows no recursion
\* through primed expressions); each intermediate state differs from both ends
Chain1(t0, a, b) == One(t0, a, b)
Chain2(t0, a, b) == One(t0, a, b) \/ \E m \in Mids(a, b) \ {a, b} : One(t0, a, m) /\ Chain1(t0, m, b)
Chain3(t0, a, b) == One(t0, a, b) \/ \E m \in Mids(a, b) \ {a, b} : One(t0, a, m) /\ Chain2(t0, m, b)
Chain4(t0, a, b) == One(t0, a, b) \/ \E m \in Mids(a, b) \ {a, b} : One(t0, a, m) /\ Chain3(t0, m, b)
Chain5(t0, a, b) == One(t0, a, b) \/ \E m \in Mids(a, b) \ {a, b} : One(t0, a, m) /\ Chain4(t0, m, b)
Chain6(t0, a, b) == One(t0, a, b) \/ \E m \in Mids(a, b) \ {a, b} : One(t0, a, m) /\ Chain5(t0, m, b)
Chain7(t0, a, b) == One(t0, a, b) \/ \E m \in Mids(a, b) \ {a, b} : One(t0, a, m) /\ Chain6(t0, m, b)
Chain8(t0, a, b) == One(t0, a, b) \/ \E m \in Mids(a, b) \ {a, b} : One(t0, a, m) /\ Chain7(t0, m, b)

RefStep ==
    \E t0 \in {tog}, a \in {AState}, b \in {AState'} : a = b \/ Chain8(t0, a, b)

\* THE PROPERTY: the code-level spec refines PBFT.tla (+ Relaxations). The cfg files
\* list its two conjuncts, so that TLC names the one violated.
PBFTRefinementInit == Abs!Init
PBFTRefinementStep == [][RefStep]_AState
PBFTRefinement == PBFTRefinementInit /\ PBFTRefinementStep

\* --- invariants over the mapped state ------------------------------------------
MappedTypeOK == Abs!TypeOK
MappedAgreementInv == Abs!AgreementInv
MappedPrefixInv == Abs!PrefixInv
MappedValidityInv == Abs!ValidityInv
\* every execution a replica reported is a PBFT.tla decision (2f+1 COMMITs at that n)
ExecutionRefinementInv ==
    LET decided == {[n |-> m.n, r |-> m.r] : m \in Abs!ComSet}
    IN  \A x \in execd : [n |-> x[2], r |-> x[3]] \in decided

\* --- reachability witnesses (each must be VIOLATED) ------------------------------
\* some honest replica executes the request
NeverExecutedInv == \A x \in execd : x[3] = "null"
\* a view change completes: an honest backup accepts a NEW-VIEW (PBFT.tla's witness)
NeverViewChangeInv == Abs!NeverViewChangeInv
\* a request is committed (2f+1 COMMITs, prepared by the replica) in a view after a view change
NeverCommittedAfterViewChangeInv == Abs!NeverCommittedAfterViewChangeInv
\* a NEW-VIEW re-proposes a request of a certificate carried by a VIEW-CHANGE
NeverNewViewReproposalInv == Abs!NeverNewViewReproposalInv
\* a replica restarted from its database executes afterwards (PBFTReplicaSystem's events)
NeverRestartedExecutesInv == "restarted-executes" \notin events
\* "lazy_commit"/"committed_p" are exercised: a replica is in a later view than a
\* certificate it accepted, without having sent its COMMIT for it
NeverLeftUncommittedInv ==
    \A i \in Honest : \A m \in Abs!CertSet :
        Abs!Accepted(i, m) /\ rs[i].view > m.v
        => [v |-> m.v, n |-> m.n, r |-> m.r, src |-> i] \in ACom
\* "free_timer" is exercised: a replica is in a later view than a request that is
\* committed-local at it in PBFT.tla's sense (so PBFT.tla's request timer had stopped),
\* without having executed it
NeverLeftUnexecutedInv ==
    \A i \in Honest : \A m \in Abs!CommittedIn(Abs!ComSet, i) :
        rs[i].view > m.v => \E x \in execd : x[1] = i /\ x[2] = m.n

\* --- MUTANT (code level): a VIEW-CHANGE that carries no certificates -----------
\* Replica._send_view_change with P always empty. With one request no invariant of
\* the code-level spec can see it (there is nothing to disagree with); the
\* refinement check does, at the VIEW-CHANGE of a replica that has committed
\* (the model pbft-refinement-mutant-vc-drops-certificates: SendViewChange <- this).
NoCertSendViewChange(s, v) ==
    IF v < s.view \/ (v = s.view /\ ~s.active) THEN s
    ELSE LET vc == [t |-> "ViewChange", nv |-> v, s |-> s.stable, proof |-> s.sproof,
                    P |-> <<>>, r |-> s.Id, sok |-> TRUE]
             s1 == [s EXCEPT !.view = v, !.active = FALSE, !.cvc = @ + 1,
                             !.vcs = {x \in @ : x.nv >= v - 1 /\ ~(x.nv = v /\ x.r = s.Id)}
                                     \cup {vc}]
         IN SendNewView(Send(s1, Broadcast, vc))
=============================================================================
