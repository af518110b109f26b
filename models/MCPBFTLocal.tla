------------------------------ MODULE MCPBFTLocal ------------------------------
(***************************************************************************)
(* spec/PBFT.tla with LOCAL KNOWLEDGE: the protocol-level spec the code-   *)
(* level spec (spec/PBFTReplicaSystem.tla) is checked to refine, in        *)
(* models/MCPBFTRefinement.tla. Its next-state relation is PBFT.tla's Next *)
(* plus three relaxed honest steps, each switched on by a member of the    *)
(* CONSTANT Relaxations (the refinement models switch on all three; the    *)
(* models that leave one out show that the code needs it).                 *)
(*                                                                         *)
(* WHY. PBFT.tla lets a replica read the message sets the moment a message *)
(* exists ("receiving is reading", its header). Where a replica's step is  *)
(* ENABLED by what it knows (f+1 VIEW-CHANGEs, 2f+1 of them, a pre-prepare,*)
(* a NEW-VIEW), reading earlier only adds behaviours, and the code, which  *)
(* acts on what it has RECEIVED (a subset), is covered. But in three places*)
(* PBFT.tla makes global knowledge FORCE or FORBID something, and there   *)
(* the code, faithfully to Castro & Liskov, does something else; TLC found *)
(* each as a counterexample of the refinement (docs/consensus.md,          *)
(* "Refinement"):                                                          *)
(*                                                                         *)
(*  "lazy_commit" (LPrepare, LCommit, LAcceptNewView, LByzPrepare).       *)
(*    PBFT.tla's commits are EAGER: the step that completes a certificate  *)
(*    (pre-prepare + 2f prepares sent) also sends the COMMIT of every      *)
(*    honest replica in the view that accepted it. The code commits when   *)
(*    IT has received the 2f prepares (Replica._check_prepared), possibly  *)
(*    later, possibly never                                                *)
(*    (it may leave the view first). Here prepare and commit are separate  *)
(*    steps: LCommit(i) sends i's COMMIT for a certificate that exists, that*)
(*    i accepted, while i is in that view in normal status, once per       *)
(*    (view, seq), which is Castro & Liskov's rule; LPrepare,              *)
(*    LAcceptNewView and LByzPrepare are Prepare, AcceptNewView and        *)
(*    ByzPrepare without the eager commits. PBFT.tla's header calls eager  *)
(*    commits a restriction; this is the unrestricted protocol.            *)
(*  "committed_p" (the P of LTimeout, LJoinViewChange). PBFT.tla's honest  *)
(*    VIEW-CHANGE carries PSet(i): per sequence number the highest-view    *)
(*    certificate that exists and i accepted. The code's carries the        *)
(*    certificates i has COLLECTED (received the 2f prepares of), and it   *)
(*    collects one exactly when it sends its COMMIT: CommittedP(i), per     *)
(*    sequence number the highest-view certificate i sent a COMMIT for. A  *)
(*    VIEW-CHANGE's P is message content, so a smaller P is not "earlier or *)
(*    later receipt" but a different message.                              *)
(*  "free_timer" (LTimeout). PBFT.tla's request timer runs only while some *)
(*    request is not in OwnLog(i), computed from the commits that EXIST;   *)
(*    the code's runs until i has EXECUTED the request, i.e. received 2f+1 *)
(*    commits. So the code times out where PBFT.tla forbids it (all commits *)
(*    sent, not yet received). Here the timer of an honest replica below  *)
(*    MaxView may fire at any time (the view-change timer still needs 2f+1 *)
(*    VIEW-CHANGEs for the replica's view: the code's Waiting implies it).  *)
(*                                                                         *)
(* WHY IT IS SOUND (BFT-SAFE-1/2 still hold). Castro & Liskov's argument   *)
(* needs: (1) a request committed-local at an honest replica has 2f+1      *)
(* COMMITs, so f+1 honest replicas committed it in view v; (2) each of     *)
(* them, in every VIEW-CHANGE for a later view, carries a certificate for  *)
(* that sequence number of view >= v; (3) any 2f+1 VIEW-CHANGEs include one*)
(* of them, so the NEW-VIEW re-proposes the request. "lazy_commit" keeps   *)
(* (1) (a COMMIT is still sent only for an existing certificate the sender *)
(* accepted, in its view). "committed_p" is exactly (2): what a replica    *)
(* committed is in its P, with the highest view per sequence number; only  *)
(* certificates it never committed may be missing, and those count for no *)
(* decision. "free_timer" changes only WHEN a replica leaves a view, which *)
(* safety never depends on (Byzantine timing is arbitrary anyway). The     *)
(* argument is checked, not only stated: MCPBFTLocal_safety.cfg model-     *)
(* checks AgreementInv, PrefixInv and ValidityInv for LSpec on PBFT.tla's  *)
(* own small model (equivocating Byzantine primary). What is given up:     *)
(* PBFT.tla's LivenessInv is not claimed for LSpec (free timers fire in   *)
(* good views; BFT-LIVE-1 is checked on the code directly, by              *)
(* spec/PBFTReplicaSystem.tla's LivenessInv).                              *)
(***************************************************************************)
EXTENDS MCPBFT

CONSTANT Relaxations   \* a subset of {"lazy_commit", "committed_p", "free_timer"}
ASSUME Relaxations \subseteq {"lazy_commit", "committed_p", "free_timer"}

\* "committed_p": per sequence number, the highest-view certificate i sent a COMMIT for
CommittedP(i) ==
    LET C == {m \in CertSet : [v |-> m.v, n |-> m.n, r |-> m.r, src |-> i] \in com}
    IN  {c \in C : \A d \in C : d.n = c.n => d.v <= c.v}
VCP(i) == IF "committed_p" \in Relaxations THEN CommittedP(i) ELSE PSet(i)
\* MUTANT pbft-view-change-drops-certificates: an honest VIEW-CHANGE carries no
\* certificate (an unsound "relaxation": the model pbft-local-mutant-empty-p
\* substitutes VCP <- MutVCP and must find an AgreementInv violation)
MutVCP(i) == {}

LSendViewChange(i, w) ==
    /\ view' = [view EXCEPT ![i] = w]
    /\ status' = [status EXCEPT ![i] = "vc"]
    /\ vc' = vc \cup {[v |-> w, src |-> i, P |-> VCP(i)]}

\* "lazy_commit": PBFT's Prepare(i) without the eager commits
LPrepare(i) ==
    LET v == view[i] IN
    /\ "lazy_commit" \in Relaxations
    /\ i # Primary(v) /\ status[i] = "normal"
    /\ \E m \in pp :
          /\ m.v = v
          /\ \A x \in prep : ~(x.src = i /\ x.v = v /\ x.n = m.n)
          /\ prep' = prep \cup {[v |-> v, n |-> m.n, r |-> m.r, src |-> i]}
    /\ UNCHANGED <<view, status, pp, com, vc, byzvc, nv>>

\* "lazy_commit": Replica._check_prepared. i sends its COMMIT for a certificate that
\* exists and that it accepted, in its view, in normal status, once per (view, seq).
LCommit(i) ==
    /\ "lazy_commit" \in Relaxations
    /\ \E m \in CertSet :
         /\ view[i] = m.v /\ status[i] = "normal" /\ Accepted(i, m)
         /\ \A x \in com : ~(x.src = i /\ x.v = m.v /\ x.n = m.n)
         /\ com' = com \cup {[v |-> m.v, n |-> m.n, r |-> m.r, src |-> i]}
         /\ UNCHANGED <<view, status, pp, prep, vc, byzvc, nv>>

\* "lazy_commit": PBFT's AcceptNewView(i) without the eager commits
LAcceptNewView(i) ==
    /\ "lazy_commit" \in Relaxations
    /\ \E m \in nv :
         /\ i # Primary(m.v)
         /\ view[i] < m.v \/ (view[i] = m.v /\ status[i] = "vc")
         /\ ValidNewView(m)
         /\ view' = [view EXCEPT ![i] = m.v]
         /\ status' = [status EXCEPT ![i] = "normal"]
         /\ prep' = prep \cup {[v |-> m.v, n |-> o.n, r |-> o.r, src |-> i] : o \in m.O}
         /\ UNCHANGED <<pp, com, vc, byzvc, nv>>

\* "lazy_commit": PBFT's ByzPrepare(b) without the eager commits
LByzPrepare(b) ==
    /\ "lazy_commit" \in Relaxations
    /\ Mode # "liveness"
    /\ \E m \in pp :
         /\ b # Primary(m.v) /\ Takes(m.v)
         /\ Cardinality(PrepSenders(m)) = PrepareQuorum - 1   \* it completes a certificate
         /\ [v |-> m.v, n |-> m.n, r |-> m.r, src |-> b] \notin prep
         /\ prep' = prep \cup {[v |-> m.v, n |-> m.n, r |-> m.r, src |-> b]}
         /\ UNCHANGED <<view, status, pp, com, vc, byzvc, nv>>

\* PBFT's Timeout(i); "free_timer": without the Pending guard; "committed_p": P
LTimeout(i) ==
    /\ TimersFire
    /\ "free_timer" \notin Relaxations => Pending(i) # {}
    /\ status[i] = "vc" => Cardinality(VCSenders(view[i])) >= ViewChangeQuorum
    /\ view[i] < MaxView
    /\ LSendViewChange(i, view[i] + 1)
    /\ UNCHANGED <<pp, prep, com, byzvc, nv>>

\* PBFT's JoinViewChange(i); "committed_p": P
LJoinViewChange(i) ==
    LET others == HigherVCs(i)
    IN  /\ Cardinality({m.src : m \in others}) >= F + 1
        /\ LSendViewChange(i, Min({m.v : m \in others}))
        /\ UNCHANGED <<pp, prep, com, byzvc, nv>>

\* With Relaxations = {} every L-step is a Next step (or disabled): LNext = Next.
LNext ==
    \/ Next
    \/ \E i \in Honest :
         \/ LPrepare(i) \/ LCommit(i) \/ LAcceptNewView(i)
         \/ LTimeout(i) \/ LJoinViewChange(i)
    \/ \E b \in Byz : LByzPrepare(b)

LSpec == Init /\ [][LNext]_vars
=============================================================================
