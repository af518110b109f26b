--------------------------------- MODULE PBFT ---------------------------------
(***************************************************************************)
(* PBFT (Castro & Liskov, OSDI'99 / TOCS'02) ordering the orchestrator's   *)
(* commands among N = 3f+1 replicas (docs/design.md §6). Python            *)
(* counterpart: the package reference/ostrom/consensus/replica/ (class     *)
(* Replica, its sections one module each: spec/PBFTReplica.tla names       *)
(* them); every action below names the method it mirrors.                  *)
(*                                                                         *)
(* MODELLED:                                                               *)
(*  - client requests (Replica.on_request: all sent at the start, which   *)
(*    covers every later sending time since proposals are nondeterministic *)
(*    in time; request timers then run earlier: more behaviours),          *)
(*    pre-prepare by the primary of view v (Primary(v) = v % N) with the    *)
(*    next sequence number in the window, prepare, commit, execution in    *)
(*    sequence-number order (derived: OwnLog, see below);                  *)
(*  - prepared(i, v, n, r): the primary's pre-prepare plus 2f matching     *)
(*    prepares from distinct backups, one of them i's own when i is a      *)
(*    backup; committed-local(i, v, n, r): prepared(i, v, n, r) plus 2f+1  *)
(*    matching commits from distinct replicas;                             *)
(*  - view change: an honest replica with a pending (unexecuted)     *)
(*    request may time out at any moment (Replica.on_timeout; timers are  *)
(*    not clocks, so a timeout is a nondeterministic step, also during a   *)
(*    view change: that is the view-change timer expiring), moving to the  *)
(*    next view and sending VIEW-CHANGE with its P set (for each sequence  *)
(*    number, the prepared certificate of the highest view); a replica     *)
(*    that sees f+1 VIEW-CHANGEs for higher views joins the smallest of    *)
(*    them; the new primary sends NEW-VIEW with 2f+1 VIEW-CHANGEs (its own *)
(*    among them) and O: for each n in min-s+1..max-s the request of the   *)
(*    highest-view certificate, or the null request; backups recompute O   *)
(*    from the VIEW-CHANGEs carried in the NEW-VIEW and accept it only if  *)
(*    it matches, then send prepares for all of O.                        *)
(*  - Byzantine replicas (the CONSTANT set Byz, |Byz| <= f): authenticated *)
(*    channels, so they send only under their own id and cannot forge a   *)
(*    client's request or another replica's message. They may send every *)
(*    message an honest receiver would not reject outright: pre-prepares  *)
(*    (when primary) of any sent request at any sequence number in the     *)
(*    window, several per (v, n) (EQUIVOCATION: honest backups accept the  *)
(*    first they see, i.e. each backup prepares one of them); prepares and *)
(*    commits for any (v, n, r), also conflicting ones; VIEW-CHANGEs for any*)
(*    view with any P made of genuine certificates (a certificate carries *)
(*    the signed pre-prepare and 2f signed prepares, so it cannot be       *)
(*    invented, only withheld or replaced by an older one); NEW-VIEWs      *)
(*    (when primary) for any 2f+1 VIEW-CHANGEs, several per view (new-view *)
(*    equivocation). Byzantine replicas have no local state here.          *)
(*                                                                         *)
(* ABSTRACTED, and why it is sound for the properties checked:             *)
(*  - messages are grow-only sets, one per message type, and "receiving"   *)
(*    is reading them: a replica's step may happen at any time after the  *)
(*    messages it needs exist, which covers every delivery order, delay    *)
(*    and duplication; loss is a replica that never takes the step. An     *)
(*    honest replica's log is what it has sent (its prepare for (v, n) is  *)
(*    its accepted pre-prepare). prepared/committed-local are predicates    *)
(*    on these sets: a replica knows a message as soon as it exists. This  *)
(*    only adds behaviours (earlier receipt) except that an honest replica *)
(*    also counts commits of a view it has left; that is sound because    *)
(*    honest replicas send commits only in their current view, before     *)
(*    their VIEW-CHANGE for any later view (Castro's proof counts the f+1 *)
(*    honest commit senders, not the receiver's view).                    *)
(*  - honest commits are EAGER: an honest replica sends its commit in the  *)
(*    step in which it becomes prepared in its current view. A later commit*)
(*    is, for every receiver, the same message delayed, and receivers       *)
(*    count late commits anyway; what is lost is only a replica leaving the *)
(*    view between becoming prepared and committing. Commits are read only *)
(*    by committed-local (no honest step depends on them except the timer  *)
(*    guard Pending), and AgreementInv/PrefixInv are monotone in the set of*)
(*    commits, so eager commits can only add violations. Reported as a      *)
(*    restriction; it removes the commit interleavings, the largest factor.*)
(*  - execution (Replica._execute) is derived, not a step: OwnLog(i) is the *)
(*    longest prefix of sequence numbers i has committed-local. Execution   *)
(*    sends nothing here (replies are not modelled); only the request timer*)
(*    reads it: a replica's timer runs while a request is not in OwnLog(i).*)
(*    The view-change timer runs only once 2f+1 VIEW-CHANGEs for the       *)
(*    replica's view exist (Castro & Liskov §4.5.2), so a second timeout   *)
(*    while waiting for a NEW-VIEW needs that quorum.                      *)
(*  - the Byzantine primary of view 0 sends its pre-prepares at the start  *)
(*    (their content depends on nothing, receivers may take them at any    *)
(*    time); which sets it may send is the workload CONSTANT ByzPrePrepares:*)
(*    the CI model fixes one equivocation (r1 and r2 at n = 1), the deep    *)
(*    model allows every set.                                              *)
(*  - Byzantine messages are restricted to useful ones, which loses no    *)
(*    behaviour of the honest replicas: a prepare only when the matching  *)
(*    pre-prepare exists, a commit only when the matching certificate      *)
(*    exists (before that they count for nothing, and the Byzantine       *)
(*    replica may as well send them later); no pre-prepare of a later view *)
(*    before its NEW-VIEW or at a sequence number the NEW-VIEW covers       *)
(*    (honest backups reject those); a NEW-VIEW is always well formed      *)
(*    (O recomputed): a wrong one is rejected by every honest backup, so   *)
(*    it changes nothing. Byzantine prepares, commits and VIEW-CHANGEs are *)
(*    sent only while some honest replica can still take them (Takes,     *)
(*    TakesViewChange): honest replicas drop messages of views below their *)
(*    own, so later ones change nothing in PBFT. A Byzantine prepare     *)
(*    (commit) is sent only when it completes a certificate (2f+1 commits): *)
(*    before that, nothing reads it (PrepSenders and ComSenders only count *)
(*    towards those thresholds), and after it changes nothing. Sent earlier,*)
(*    it would have its first effect in the step that brings the count to  *)
(*    one below the threshold; the same state is reached here by that step *)
(*    followed at once by the Byzantine one.                               *)
(*  - Byzantine VIEW-CHANGEs (variable byzvc) carry no P when sent: a      *)
(*    VIEW-CHANGE counts at once (f+1 rule, view-change timer), and its P   *)
(*    is chosen when a NEW-VIEW carries it (VCCandidates), among every set  *)
(*    of genuine certificates of earlier views existing then. Certificates *)
(*    only accumulate, so this covers every P the replica could have put in *)
(*    it when sending, and it also covers a Byzantine replica that sends   *)
(*    different VIEW-CHANGEs for one view to different replicas (only the  *)
(*    copy inside a NEW-VIEW is ever read: by the new primary, which picks *)
(*    V, and by backups, which recompute O from V).                        *)
(*  - checkpoints and watermarks: no checkpoint ever becomes stable in    *)
(*    these models (fewer requests than the checkpoint period K = 16 of   *)
(*    docs/design.md §8), so h = 0, the window is 1..MaxSeq, MaxSeq <=     *)
(*    L = 32: every VIEW-CHANGE carries s = 0, min-s = 0. This is exactly *)
(*    PBFT's behaviour before the first stable checkpoint, so safety      *)
(*    carries over for these runs; garbage collection is not checked.     *)
(*    The one use of checkpoints kept is state transfer: Log(i) is i's own *)
(*    log or, if longer, that of the honest replica that executed most    *)
(*    (derived, mirroring Replica._on_checkpoint: a stable checkpoint       *)
(*    certificate contains f+1 matching digests, so the copied state is an *)
(*    honest one). Without it, an honest replica that timed out before    *)
(*    preparing could never execute, and BFT-LIVE-1 ("executed by ALL      *)
(*    honest replicas") would fail for a reason PBFT fixes with state      *)
(*    transfer.                                                            *)
(*  - bounded views (0..MaxView) and requests; request digests are the     *)
(*    requests; duplicate suppression by client timestamp is not modelled  *)
(*    (a re-proposed request may occupy two sequence numbers; the log     *)
(*    records the decision per sequence number).                          *)
(*  - replies to clients are not modelled (BFT-LIVE-1 is about execution). *)
(*                                                                         *)
(* LIVENESS (BFT-LIVE-1) is checked as the invariant LivenessInv, not as a *)
(* temporal property: with bounded views, a temporal property under weak  *)
(* fairness fails by stuttering at the view bound, and TLC's liveness      *)
(* checking over this state space is far slower than an invariant.        *)
(* Fair actions are the honest replicas' steps and message delivery        *)
(* (HonestStep); Byzantine steps and timeouts are not fair. A state is     *)
(* Stuck when no HonestStep and no timeout can happen: under eventual      *)
(* delivery and eventually-firing timers every fair execution that stops   *)
(* stops in such a state. LivenessInv: in every Stuck state, every sent    *)
(* request is executed by every honest replica, unless the model's bounds  *)
(* caused the stop (the last view has a Byzantine primary, or its primary  *)
(* has no free sequence number: the window would move at a checkpoint).    *)
(* The witnesses NeverStuckInv and NeverStuckAfterViewChangeInv (in       *)
(* models/MCPBFT.tla) show that the premise is reached, also after a view  *)
(* change.                                                                 *)
(*                                                                         *)
(* The spec never deadlocks: Idle (the clients waiting) is always enabled; *)
(* the stopped states are what LivenessInv inspects.                       *)
(*                                                                         *)
(* MODES (CONSTANT Mode): the reduction each model uses.                  *)
(*  - "full": everything above (pbft-deep).                                *)
(*  - "safety" (pbft-safety and the safety mutants; BFT-SAFE-1/2): the     *)
(*    Byzantine replicas' commits are derived: sent for every certificate  *)
(*    as soon as it exists (ComSenders), not ByzCommit steps. Sound: in    *)
(*    this mode no honest step reads them (the request timer and the       *)
(*    primary's choice read GuardLog, which counts honest commits only, so *)
(*    timers run at least as long and primaries may propose at least as   *)
(*    much as with the real log; PBFT's safety does not depend on when     *)
(*    timers fire), so every state of "full" has a counterpart here with    *)
(*    the same honest state and at least the same commits; AgreementInv is *)
(*    monotone in the commits, and PrefixInv follows from AgreementInv and *)
(*    the longer logs. LivenessInv is not checked in this mode.            *)
(*  - "liveness" (pbft-ci; BFT-SAFE-1/2 and BFT-LIVE-1): the Byzantine     *)
(*    replicas send no prepares and no commits. A restriction, the price   *)
(*    of the CI budget: those messages only add to the counts honest       *)
(*    replicas wait for; the power to stall is kept (equivocating or       *)
(*    silent as primary, VIEW-CHANGEs at any time). Their effect on safety *)
(*    is checked in "safety" mode.                                         *)
(* The models also use a symmetry set (the requests) and a VIEW that drops  *)
(* fields no step and no property reads (models/MCPBFT.tla says why each is *)
(* sound).                                                                 *)
(*                                                                         *)
(* MUTANTS are not in this module: a mutant model replaces one of its    *)
(* operators by a broken one of models/MCPBFT.tla (`Op <- MutOp`,          *)
(* models/manifest.json, docs/checking.md).                                *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets, Sequences

CONSTANTS
    N,          \* number of replicas, ids 0..N-1
    F,          \* faults tolerated, N = 3F+1
    Byz,        \* the Byzantine replicas (|Byz| <= F)
    ClientRequests, \* the client requests (digests), in the order the clients send them
    Null,       \* the null request of NEW-VIEW
    MaxView,    \* views 0..MaxView
    MaxSeq,     \* the watermark window: sequence numbers 1..MaxSeq
    ByzPrePrepares, \* workload: the sets of view-0 pre-prepares [v, n, r] the Byzantine
                \* primary of view 0 may send (SUBSET [v : {0}, n : Seqs, r : Requests]: any)
    Mode        \* "full", "safety" or "liveness": which sound reduction (header, MODES)

Requests == {ClientRequests[k] : k \in DOMAIN ClientRequests}
Replicas == 0..(N - 1)
Honest == Replicas \ Byz
Views == 0..MaxView
Seqs == 1..MaxSeq
Vals == Requests \cup {Null}
\* Replica.on_request: every client request is sent (and stored by every
\* replica) at the start. The primary's proposals are nondeterministic in
\* time, so this covers every later sending time, except that request timers
\* may run earlier: more timeouts, more behaviours.
sent == Requests

ASSUME /\ N = 3 * F + 1 /\ F >= 1
       /\ Byz \subseteq Replicas /\ Cardinality(Byz) <= F
       /\ Null \notin Requests
       /\ MaxView \in Nat /\ MaxSeq \in Nat \ {0}
       /\ ByzPrePrepares \subseteq SUBSET [v : {0}, n : 1..MaxSeq, r : Requests]
       /\ Mode \in {"full", "safety", "liveness"}

Primary(v) == v % N

\* prepared: 2f PREPAREs; committed-local: 2f+1 COMMITs (BFT-SAFE-1)
PrepareQuorum == 2 * F
CommitQuorum == 2 * F + 1
ViewChangeQuorum == 2 * F + 1

VARIABLES
    view,     \* view[i]: honest replica i's current view
    status,   \* status[i]: "normal" or "vc" (waiting for the NEW-VIEW of view[i])
    pp,       \* PRE-PREPAREs [v, n, r], sent by Primary(v) (also those of a NEW-VIEW's O)
    prep,     \* PREPAREs [v, n, r, src]
    com,      \* COMMITs [v, n, r, src]
    vc,       \* honest VIEW-CHANGEs [v, src, P], P a set of certificates [v, n, r]
    byzvc,    \* Byzantine VIEW-CHANGEs [v, src]: their P is chosen when read (see header)
    nv        \* NEW-VIEWs [v, V, O], V a set of VIEW-CHANGEs, O a set of [n, r]

vars == <<view, status, pp, prep, com, vc, byzvc, nv>>

-----------------------------------------------------------------------------
(* Derived predicates: a replica's knowledge is the message sets.          *)

Max(S) == IF S = {} THEN 0 ELSE CHOOSE x \in S : \A y \in S : y <= x
Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Range(s) == {s[k] : k \in DOMAIN s}

PrepSenders(m) ==
    {j \in Replicas \ {Primary(m.v)} : [v |-> m.v, n |-> m.n, r |-> m.r, src |-> j] \in prep}
HonestComSenders(m) == {j \in Replicas : [v |-> m.v, n |-> m.n, r |-> m.r, src |-> j] \in com}
\* Mode "safety": the Byzantine replicas' commits are derived, sent for every
\* certificate as soon as it exists (see MODES in the header).
ComSenders(m) == HonestComSenders(m) \cup (IF Mode = "safety" THEN Byz ELSE {})

\* The prepared certificates: a pre-prepare [v, n, r] with 2f prepares of
\* distinct backups.
CertSet == {m \in pp : Cardinality(PrepSenders(m)) >= PrepareQuorum}
\* ... and those with 2f+1 commits too.
ComSet == {m \in CertSet : Cardinality(ComSenders(m)) >= CommitQuorum}

\* Replica._on_prepare, eagerly: every honest replica sends its commit in the
\* step in which it becomes prepared in its current view (its prepare or the
\* last prepare of the certificate arrives, or it enters the view). Callers
\* pass the next-state message sets: com' = com \cup EagerCommits(...).
CertsOf(PP, P) ==
    {m \in PP : Cardinality({j \in Replicas \ {Primary(m.v)} :
                     [v |-> m.v, n |-> m.n, r |-> m.r, src |-> j] \in P}) >= PrepareQuorum}
EagerCommits(PP, P, vw, st) ==
    UNION {{[v |-> m.v, n |-> m.n, r |-> m.r, src |-> j] :
              j \in {k \in Honest : vw[k] = m.v /\ st[k] = "normal"
                                 /\ (k = Primary(m.v)
                                     \/ [v |-> m.v, n |-> m.n, r |-> m.r, src |-> k] \in P)}}
           : m \in CertsOf(PP, P)}

\* i accepted the pre-prepare m: it sent it (as primary) or its own prepare.
Accepted(i, m) ==
    i = Primary(m.v) \/ [v |-> m.v, n |-> m.n, r |-> m.r, src |-> i] \in prep

\* prepared(m, v, n, i), given CertSet (so that callers compute it once).
PreparedIn(C, i) == {m \in C : Accepted(i, m)}
Prepared(i, m) == m \in CertSet /\ Accepted(i, m)

\* committed-local(m, v, n, i): prepared plus 2f+1 matching commits.
CommittedIn(C, i) == {m \in C : Accepted(i, m)}   \* C = ComSet
CommittedAt(i, n, r) == \E m \in CommittedIn(ComSet, i) : m.n = n /\ m.r = r

\* The P set of honest replica i's VIEW-CHANGE: per n, the certificate of the
\* highest view in which i prepared.
PSet(i) ==
    LET C == PreparedIn(CertSet, i)
    IN  {c \in C : \A d \in C : d.n = c.n => d.v <= c.v}

\* The O set of a NEW-VIEW computed from its VIEW-CHANGEs V (min-s = 0: no
\* stable checkpoint): for n in 1..max-s, the request of the highest-view
\* certificate in V, else the null request. Used by the new primary
\* (Replica._send_new_view) and recomputed by backups (Replica._on_new_view).
\* The request O carries at n: that of the highest-view certificate for n in
\* certs, else the null request.
PickCert(certs, n) ==
    LET atN == {c \in certs : c.n = n}
        top == {c \in atN : \A d \in atN : d.v <= c.v}
    IN  IF top = {} THEN Null ELSE (CHOOSE c \in top : TRUE).r
ComputeO(V) ==
    LET certs == UNION {m.P : m \in V}
        maxS == Max({c.n : c \in certs})
    IN  {[n |-> n, r |-> PickCert(certs, n)] : n \in 1..maxS}

MaxO(v) == Max(UNION {{o.n : o \in m.O} : m \in {x \in nv : x.v = v}})

\* The next sequence number of the (honest) primary of view v.
NextSeq(v) == Max({m.n : m \in {x \in pp : x.v = v}}) + 1

\* Replica._execute, as a derived predicate: i executes, in order, every
\* sequence number it has committed-local, as soon as it can. Execution sends
\* no message in the model (replies are not modelled), so its timing matters
\* only for the request timers, and those may fire while a committed request
\* is still unexecuted (Pending below uses i's own executions only).
\* The log executed from D, a replica's committed-local set: every sequence
\* number in order, up to the first one not committed.
ExecutedLog(D) ==
    LET len == Max({k \in 0..MaxSeq : \A n \in 1..k : \E m \in D : m.n = n})
    IN  [n \in 1..len |-> (CHOOSE m \in D : m.n = n).r]
OwnLogIn(C, i) == ExecutedLog(CommittedIn(C, i))
OwnLog(i) == OwnLogIn(ComSet, i)
\* all honest replicas' own logs, ComSet computed once
OwnLogs == LET C == ComSet IN [i \in Honest |-> OwnLogIn(C, i)]

\* Replica._on_checkpoint (state transfer), derived: a replica behind the
\* honest replica that executed most takes its state (a stable checkpoint
\* certificate carries f+1 matching digests, so at least one is honest).
LogsFrom(L) ==
    LET lead == CHOOSE j \in Honest : \A k \in Honest : Len(L[k]) <= Len(L[j])
    IN  [i \in Honest |-> IF Len(L[i]) >= Len(L[lead]) THEN L[i] ELSE L[lead]]
Logs == LogsFrom(OwnLogs)
Log(i) == Logs[i]

\* What the timers and the primary's choice read (see MODES in the header): the
\* own log, except in mode "safety", where it counts honest commits only (so
\* never more than the real log: timers run at least as long, primaries may
\* propose at least as much).
GuardComSet ==
    IF Mode = "safety"
    THEN {m \in CertSet : Cardinality(HonestComSenders(m)) >= CommitQuorum}
    ELSE ComSet
GuardLog(i) == LogsFrom([j \in Honest |-> OwnLogIn(GuardComSet, j)])[i]

\* Requests i has not executed itself: its request timer runs.
Pending(i) == sent \ Range(OwnLogIn(GuardComSet, i))

\* Any P of genuine certificates of views before w, at most one per n: what a
\* Byzantine replica may put in a VIEW-CHANGE for view w.
ByzPChoices(w) ==
    LET C == {c \in CertSet : c.v < w}
    IN  {P \in SUBSET C : \A c, d \in P : c.n = d.n => c = d}

\* The senders of VIEW-CHANGEs for view w, honest and Byzantine.
VCSenders(w) == {m.src : m \in {x \in vc : x.v = w}} \cup {b.src : b \in {x \in byzvc : x.v = w}}

\* The VIEW-CHANGEs for view w a NEW-VIEW may carry: the honest ones as sent,
\* and for each Byzantine VIEW-CHANGE every P the adversary may put in it
\* (chosen when the NEW-VIEW is built: see the header, "Byzantine VIEW-CHANGEs").
VCCandidates(w) ==
    {m \in vc : m.v = w}
      \cup {[v |-> w, src |-> b.src, P |-> P] : b \in {x \in byzvc : x.v = w}, P \in ByzPChoices(w)}

\* The VIEW-CHANGEs (view, sender) of others for views above honest replica i's:
\* what the f+1 rule counts (JoinViewChange, TakesViewChange).
HigherVCs(i) ==
    {m \in {[v |-> x.v, src |-> x.src] : x \in vc} \cup byzvc : m.v > view[i] /\ m.src # i}

ValidVC(x) ==
    \/ x \in vc
    \/ [v |-> x.v, src |-> x.src] \in byzvc /\ x.P \in ByzPChoices(x.v)

ValidNewView(m) ==
    /\ Cardinality({x.src : x \in m.V}) = ViewChangeQuorum
    /\ Cardinality(m.V) = ViewChangeQuorum
    /\ \A x \in m.V : ValidVC(x) /\ x.v = m.v
    /\ m.O = ComputeO(m.V)

-----------------------------------------------------------------------------
Init ==
    /\ view = [i \in Replicas |-> 0]
    /\ status = [i \in Replicas |-> "normal"]
    \* The Byzantine primary of view 0 sends its pre-prepares (any set, also
    \* equivocating ones) at the start: their content depends on nothing, and
    \* receivers may take them at any later time, so this covers every sending
    \* time (Replica._send_pre_prepare of a Byzantine primary).
    /\ pp \in IF Primary(0) \in Byz THEN ByzPrePrepares ELSE {{}}
    /\ prep = {} /\ com = {} /\ vc = {} /\ byzvc = {} /\ nv = {}

(* Honest replicas and the clients ------------------------------------------*)

\* Replica._send_pre_prepare: the honest primary of its view assigns the next
\* sequence number to a request it has not ordered in this view nor executed.
PrePrepare(i) ==
    LET v == view[i] IN
    /\ i = Primary(v) /\ status[i] = "normal"
    /\ NextSeq(v) <= MaxSeq
    /\ \E r \in sent :
          /\ \A m \in pp : m.v = v => m.r # r
          /\ r \notin Range(GuardLog(i))
          /\ pp' = pp \cup {[v |-> v, n |-> NextSeq(v), r |-> r]}
    /\ UNCHANGED <<view, status, prep, com, vc, byzvc, nv>>

\* Replica._on_pre_prepare: an honest backup in view v accepts the first
\* pre-prepare for (v, n) it sees and sends its prepare.
Prepare(i) ==
    LET v == view[i] IN
    /\ i # Primary(v) /\ status[i] = "normal"
    /\ \E m \in pp :
          /\ m.v = v
          /\ \A x \in prep : ~(x.src = i /\ x.v = v /\ x.n = m.n)
          /\ prep' = prep \cup {[v |-> v, n |-> m.n, r |-> m.r, src |-> i]}
    /\ com' = com \cup EagerCommits(pp, prep', view, status)
    /\ UNCHANGED <<view, status, pp, vc, byzvc, nv>>

SendViewChange(i, w) ==
    /\ view' = [view EXCEPT ![i] = w]
    /\ status' = [status EXCEPT ![i] = "vc"]
    /\ vc' = vc \cup {[v |-> w, src |-> i, P |-> PSet(i)]}

\* Whether timers may expire at all (they may: BFT-LIVE-1 rests on view changes).
TimersFire == TRUE

\* Replica.on_timeout: the request timer of a replica with a pending request
\* expires, or its view-change timer (which runs only once 2f+1 VIEW-CHANGEs
\* for its view exist, as in Castro & Liskov) does: it moves to the next view.
Timeout(i) ==
    /\ TimersFire
    /\ Pending(i) # {}
    /\ status[i] = "vc" => Cardinality(VCSenders(view[i])) >= ViewChangeQuorum
    /\ view[i] < MaxView
    /\ SendViewChange(i, view[i] + 1)
    /\ UNCHANGED <<pp, prep, com, byzvc, nv>>

\* Replica._on_view_change: f+1 VIEW-CHANGEs from others for views above i's
\* make i join the smallest of those views.
JoinViewChange(i) ==
    LET others == HigherVCs(i)
    IN  /\ Cardinality({m.src : m \in others}) >= F + 1
        /\ SendViewChange(i, Min({m.v : m \in others}))
        /\ UNCHANGED <<pp, prep, com, byzvc, nv>>

\* Replica._send_new_view: the new primary, with 2f+1 VIEW-CHANGEs for its
\* view (its own among them), sends NEW-VIEW and the pre-prepares of O.
SendNewView(i) ==
    LET v == view[i] IN
    /\ i = Primary(v) /\ status[i] = "vc"
    /\ \E V \in SUBSET VCCandidates(v) :
          /\ \E m \in V : m.src = i
          /\ Cardinality(V) = ViewChangeQuorum
          /\ Cardinality({m.src : m \in V}) = ViewChangeQuorum
          /\ LET O == ComputeO(V) IN
               /\ nv' = nv \cup {[v |-> v, V |-> V, O |-> O]}
               /\ pp' = pp \cup {[v |-> v, n |-> o.n, r |-> o.r] : o \in O}
    /\ status' = [status EXCEPT ![i] = "normal"]
    /\ UNCHANGED <<view, prep, com, vc, byzvc>>

\* Replica._on_new_view: a backup checks the NEW-VIEW (2f+1 VIEW-CHANGEs for
\* the view, O recomputed from them), enters the view and prepares all of O.
AcceptNewView(i) ==
    \E m \in nv :
      /\ i # Primary(m.v)
      /\ view[i] < m.v \/ (view[i] = m.v /\ status[i] = "vc")
      /\ ValidNewView(m)
      /\ view' = [view EXCEPT ![i] = m.v]
      /\ status' = [status EXCEPT ![i] = "normal"]
      /\ prep' = prep \cup {[v |-> m.v, n |-> o.n, r |-> o.r, src |-> i] : o \in m.O}
      /\ com' = com \cup EagerCommits(pp, prep', view', status')
      /\ UNCHANGED <<pp, vc, byzvc, nv>>

(* Byzantine replicas --------------------------------------------------------*)

\* Some honest replica may still take a message of view v: honest replicas drop
\* messages of views below their own (Replica rejects them as "stale_view"), so a
\* Byzantine message of a view every honest replica has left changes nothing
\* (in the real protocol; here a replica that left v could still read it when
\* computing its P, an effect of "receiving is reading" that PBFT does not have).
Takes(v) == \E i \in Honest : view[i] <= v
\* ... and a Byzantine VIEW-CHANGE for view w can make a difference now: it
\* brings the VIEW-CHANGEs for views above a replica below w to f+1 or more
\* (f+1 rule: join, or join a lower view), or those for w to 2f or more (2f+1
\* with it: the view-change timer of a replica waiting in w, the new primary's
\* choice of V). Before that moment nothing reads it (every reader needs f
\* other VIEW-CHANGEs), so sending it earlier reaches, at that moment, the same
\* state as sending it then.
TakesViewChange(w) ==
    \E i \in Honest :
      \/ /\ view[i] < w
         /\ Cardinality({m.src : m \in HigherVCs(i)}) >= F
      \/ /\ view[i] = w /\ status[i] = "vc"
         /\ Cardinality(VCSenders(w)) >= 2 * F

\* A pre-prepare of any sent request at any n (equivocation included).
ByzPrePrepare(b) ==
    \E v \in Views \ {0}, n \in Seqs, r \in sent :
      /\ Primary(v) = b
      /\ \E m \in nv : m.v = v
      /\ n > MaxO(v)
      /\ [v |-> v, n |-> n, r |-> r] \notin pp
      /\ pp' = pp \cup {[v |-> v, n |-> n, r |-> r]}
      /\ UNCHANGED <<view, status, prep, com, vc, byzvc, nv>>

\* Mode "liveness": the Byzantine replicas send no prepares and no commits.
ByzPrepare(b) ==
    /\ Mode # "liveness"
    /\ \E m \in pp :
         /\ b # Primary(m.v) /\ Takes(m.v)
         /\ Cardinality(PrepSenders(m)) = PrepareQuorum - 1   \* it completes a certificate
         /\ [v |-> m.v, n |-> m.n, r |-> m.r, src |-> b] \notin prep
         /\ prep' = prep \cup {[v |-> m.v, n |-> m.n, r |-> m.r, src |-> b]}
         /\ com' = com \cup EagerCommits(pp, prep', view, status)
         /\ UNCHANGED <<view, status, pp, vc, byzvc, nv>>

\* Mode "safety": derived (ComSenders); mode "liveness": never sent.
ByzCommit(b) ==
    /\ Mode = "full"
    /\ \E m \in pp :
         /\ m \in CertSet /\ Takes(m.v)
         /\ Cardinality(ComSenders(m)) = CommitQuorum - 1   \* it completes committed-local
         /\ [v |-> m.v, n |-> m.n, r |-> m.r, src |-> b] \notin com
         /\ com' = com \cup {[v |-> m.v, n |-> m.n, r |-> m.r, src |-> b]}
         /\ UNCHANGED <<view, status, pp, prep, vc, byzvc, nv>>

\* A Byzantine VIEW-CHANGE for view w: it counts at once (f+1 rule, the
\* view-change timer); its P is chosen when a NEW-VIEW carries it (VCCandidates).
ByzViewChange(b) ==
    \E w \in 1..MaxView :
      /\ [v |-> w, src |-> b] \notin byzvc /\ TakesViewChange(w)
      /\ byzvc' = byzvc \cup {[v |-> w, src |-> b]}
      /\ UNCHANGED <<view, status, pp, prep, com, vc, nv>>

ByzNewView(b) ==
    \E w \in 1..MaxView :
      /\ Primary(w) = b
      /\ \E V \in SUBSET VCCandidates(w) :
           /\ Cardinality(V) = ViewChangeQuorum
           /\ Cardinality({m.src : m \in V}) = ViewChangeQuorum
           /\ LET O == ComputeO(V) IN
                /\ [v |-> w, V |-> V, O |-> O] \notin nv
                /\ nv' = nv \cup {[v |-> w, V |-> V, O |-> O]}
                /\ pp' = pp \cup {[v |-> w, n |-> o.n, r |-> o.r] : o \in O}
      /\ UNCHANGED <<view, status, prep, com, vc, byzvc>>

-----------------------------------------------------------------------------
\* The fair steps: honest replicas' actions and message delivery.
HonestStep ==
    \/ \E i \in Honest :
          \/ PrePrepare(i) \/ Prepare(i)
          \/ JoinViewChange(i) \/ SendNewView(i) \/ AcceptNewView(i)

ByzStep ==
    \E b \in Byz :
      \/ ByzPrePrepare(b) \/ ByzPrepare(b) \/ ByzCommit(b)
      \/ ByzViewChange(b) \/ ByzNewView(b)

\* The clients wait: keeps the spec deadlock-free (see the header).
Idle == UNCHANGED vars

Next ==
    \/ HonestStep
    \/ \E i \in Honest : Timeout(i)
    \/ ByzStep
    \/ Idle

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Properties (docs/design.md §7)                                          *)

Certs == [v : Views, n : Seqs, r : Vals]
VCMsgs == [v : Views, src : Replicas, P : SUBSET Certs]

TypeOK ==
    /\ view \in [Replicas -> Views]
    /\ status \in [Replicas -> {"normal", "vc"}]
    /\ pp \subseteq Certs
    /\ prep \subseteq [v : Views, n : Seqs, r : Vals, src : Replicas]
    /\ com \subseteq [v : Views, n : Seqs, r : Vals, src : Replicas]
    /\ vc \subseteq VCMsgs
    /\ byzvc \subseteq [v : Views, src : Byz]
    /\ \A m \in nv : m.v \in Views /\ m.V \subseteq VCMsgs
                    /\ m.O \subseteq [n : Seqs, r : Vals]

\* BFT-SAFE-1: no two honest replicas commit different requests at the same
\* sequence number, in the same or in different views.
AgreementInv ==
    LET C == ComSet
        D == UNION {CommittedIn(C, i) : i \in Honest}
    IN  \A a, b \in D : a.n = b.n => a.r = b.r

IsPrefix(s, t) == Len(s) <= Len(t) /\ SubSeq(t, 1, Len(s)) = s

\* BFT-SAFE-2: honest executed logs are prefixes of one another ...
PrefixInv ==
    LET L == OwnLogs
    IN  \A i, j \in Honest : IsPrefix(L[i], L[j]) \/ IsPrefix(L[j], L[i])

\* ... and every executed non-null request was sent by a client.
ValidityInv ==
    LET L == Logs IN \A i \in Honest : \A k \in DOMAIN L[i] : L[i][k] \in sent \cup {Null}

\* ... and what an honest replica committed stays committed, so its executed
\* log (ExecutedLog of what it committed) is never rolled back: an action
\* property, checked on every step, so a step that loses a sent PRE-PREPARE,
\* PREPARE or COMMIT is seen even when no invariant of one state is broken.
ExecutedStableStep ==
    LET C == ComSet IN LET C2 == ComSet' IN
      \A i \in Honest : CommittedIn(C, i) \subseteq CommittedIn(C2, i)
ExecutedStableProp == [][ExecutedStableStep]_vars

\* BFT-LIVE-1 (see the header): when no fair step and no timeout can happen,
\* every request is executed by every honest replica, unless the bounds stopped
\* the run (last view with a Byzantine primary or without a free sequence number).
TimeoutEnabled == \E i \in Honest : ENABLED Timeout(i)
Stuck == ~ENABLED HonestStep /\ ~TimeoutEnabled
BoundStop ==
    \E i \in Honest : view[i] = MaxView /\ (Primary(MaxView) \in Byz \/ NextSeq(MaxView) > MaxSeq)
AllExecuted == LET L == Logs IN \A i \in Honest : sent \subseteq Range(L[i])
LivenessInv == AllExecuted \/ BoundStop \/ ~Stuck

=============================================================================
