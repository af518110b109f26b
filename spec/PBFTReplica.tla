------------------------------ MODULE PBFTReplica ------------------------------
(***************************************************************************)
(* ONE honest PBFT replica, at the level the conformance suite observes it *)
(* (vectors/pbft, docs/conformance.md "The pbft layer"): its inputs are    *)
(* messages from the network (any message the environment, Byzantine      *)
(* replicas included, may deliver), timer expiries and retransmission      *)
(* requests; its outputs are rejections, executions and sent messages.     *)
(* Python counterpart: the package reference/ostrom/consensus/replica/     *)
(* (class Replica), one module per section of this module; each section    *)
(* names its module: base.py (parameters, the initial state, outputs),     *)
(* normal.py (normal case), checkpoints.py (checkpoints and state          *)
(* transfer), view_change.py (view change), entry_points.py (entry points: *)
(* Replica itself), durable.py (crash and restart), and helpers.py, app.py *)
(* and outputs.py for the pure functions, the application and the outputs. *)
(* Each operator names the method it mirrors (module: Class.method) and,   *)
(* where there is one, the honest action of spec/PBFT.tla it refines.      *)
(*                                                                         *)
(* DESIGN CHOICE. spec/PBFT.tla is a system-level model (N replicas,       *)
(* messages as grow-only sets, eager commits, derived execution, no        *)
(* stable checkpoints, no replies, no timestamps). A single replica's log  *)
(* is an input/output sequence, so this module is instead a DETERMINISTIC  *)
(* transition function of one replica: Step(s, input) is the state after  *)
(* the input, with the outputs of the step in s.rej (rejection reasons),   *)
(* s.exe (executions, in order) and s.out (sent messages). Deterministic, *)
(* because the replica is (no clocks, no entropy, deterministic signatures):*)
(* the spec then says exactly which outputs a step must have, and a trace *)
(* is accepted iff every logged step equals the spec's step.               *)
(* The state is one record s; the parameters (n, f, id, K, window, base    *)
(* timeout) are fields of it (not CONSTANTS), so that logs with different  *)
(* parameters can be checked in one TLC run (PBFTReplicaTrace.tla).        *)
(*                                                                         *)
(* WHAT PBFT.tla ABSTRACTS AND THIS MODULE REPRESENTS: per-replica message *)
(* logs (received votes per (view, seq, digest) and sender), replays,      *)
(* commit after prepare in the receiving step, execution in sequence      *)
(* order as a step with its outputs, client timestamps and duplicate      *)
(* suppression (a request with a stale timestamp is not applied; a        *)
(* replayed request gets the last reply again), replies, checkpoints      *)
(* every K executions, stable checkpoints with 2f+1 matching CHECKPOINTs, *)
(* watermarks (h < n <= h + W) and garbage collection, state transfer     *)
(* (FetchState / StateTransfer, checked against a checkpoint proof),      *)
(* retransmission, exponential timeout back-off, late commits of a view   *)
(* the replica has left.                                                  *)
(*                                                                         *)
(* ABSTRACTED (outside TLA+): cryptography and encodings. The compiler     *)
(* (reference/ostrom/verify/trace/pbft.py) checks every signature,   *)
(* digest and wire format and hands this module ABSTRACT messages:        *)
(* records with the type `t`, the protocol fields (view v, seq n, request *)
(* id d, replica r, ...), `sok` (the signature is valid and the signer is *)
(* the principal the message names: ReplicaBase._authentic) and, for a    *)
(* PRE-PREPARE, `dok` (its digest is its request's). A message that is not *)
(* a well-typed envelope is [t |-> "malformed"]. Request digests are      *)
(* request ids; the null request is NullReq (d = "null"). A state digest  *)
(* (chain of executed digests + application digest) is the HISTORY it     *)
(* certifies: the sequence of executed requests (the compiler maps each   *)
(* 64-hex digest to the history that hashes to it, or to an opaque token);*)
(* an application digest is the sequence of APPLIED requests (Applied);   *)
(* a reply's result {"n": k} is k. Digest order (a tie-break of O) is      *)
(* DRank, the rank of the hex digests, given by the compiler.             *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC

CONSTANT DRank  \* request id -> rank of its hex digest (ties in ComputeO)

NoMsg == [t |-> "none"]
NullReq == [t |-> "null", d |-> "null"]
Missing == [t |-> "missing"]
Broadcast == "*"

Max(S) == CHOOSE x \in S : \A y \in S : x >= y
Min(S) == CHOOSE x \in S : \A y \in S : x <= y
Range(q) == {q[i] : i \in DOMAIN q}

RECURSIVE SortByR(_), SortByN(_)
\* messages with distinct senders, by sender (r); certificates by sequence number
SortByR(S) ==
    IF S = {} THEN <<>>
    ELSE LET m == CHOOSE x \in S : \A y \in S : x.r <= y.r IN <<m>> \o SortByR(S \ {m})
SortByN(S) ==
    IF S = {} THEN <<>>
    ELSE LET m == CHOOSE x \in S : \A y \in S : x.pp.n <= y.pp.n IN <<m>> \o SortByN(S \ {m})

Name(i) == "r" \o ToString(i)

(* ---- parameters, fields of the state (ostrom/consensus/replica/base.py) ---- *)
\* ostrom/consensus/replica/helpers.py: quorum (2f+1 when n = 3f+1)
Q(s) == (s.N + s.F + 2) \div 2
\* ostrom/consensus/replica/base.py: ReplicaBase.primary, ReplicaBase.is_primary
Prim(s, v) == v % s.N
IsPrim(s) == Prim(s, s.view) = s.Id
\* ostrom/consensus/replica/base.py: ReplicaBase._in_window
InWin(s, n) == s.stable < n /\ n <= s.stable + s.W
\* ostrom/consensus/replica/base.py: ReplicaBase._late
Late(s, v) == v < s.view \/ (v = s.view /\ ~s.active)
Pow2(k) == 2^k
\* ostrom/consensus/replica/base.py: ReplicaBase.timeout_duration
TimeoutDuration(s) == s.Base * Pow2(IF s.cvc < 20 THEN s.cvc ELSE 20)

\* ostrom/consensus/replica/app.py: App, CounterApp
\* the application's view of a history: the requests applied (fresh timestamps)
RECURSIVE AppliedFrom(_, _, _)
AppliedFrom(h, i, last) ==
    IF i > Len(h) THEN <<>>
    ELSE LET q == h[i] IN
         IF q.t = "Request" /\ q.c \in DOMAIN last /\ q.ts > last[q.c]
         THEN <<q>> \o AppliedFrom(h, i + 1, [last EXCEPT ![q.c] = q.ts])
         ELSE IF q.t = "Request" /\ q.c \notin DOMAIN last
         THEN <<q>> \o AppliedFrom(h, i + 1, last @@ (q.c :> q.ts))
         ELSE AppliedFrom(h, i + 1, last)
Applied(h) == AppliedFrom(h, 1, <<>>)
\* ostrom/consensus/replica/helpers.py: state_digest
\* state_digest(chain, app): the history if app is that history's, else not a history
SDOf(h, app) == IF app = Applied(h) THEN h ELSE <<[t |-> "inconsistent"]>>

(* ---- the initial state (ostrom/consensus/replica/base.py) ------------- *)
\* ostrom/consensus/replica/base.py: ReplicaBase.__init__
InitState(cfg) ==
    [N |-> cfg.n, F |-> cfg.f, Id |-> cfg.id, K |-> cfg.k, W |-> cfg.w,
     Base |-> cfg.base, Clients |-> cfg.clients,
     view |-> 0, active |-> TRUE, cvc |-> 0, vcs |-> {}, nvmsg |-> NoMsg,
     pps |-> {}, prepares |-> {}, commits |-> {}, sentc |-> {}, certs |-> {},
     toexec |-> {}, next |-> 1, pending |-> <<>>, assigned |-> {},
     lastexec |-> 0, hist |-> <<>>, app |-> <<>>,
     lastts |-> [c \in cfg.clients |-> 0], lastreply |-> [c \in cfg.clients |-> NoMsg],
     stable |-> 0, ssd |-> <<>>, sapp |-> <<>>, hasapp |-> TRUE, sproof |-> <<>>, cks |-> {},
     ownck |-> {[n |-> 0, h |-> <<>>, app |-> <<>>]}, fetched |-> {}, answered |-> {},
     plog |-> {}, out |-> <<>>, rej |-> <<>>, exe |-> <<>>]

\* the outputs of one step start empty
Fresh(s) == [s EXCEPT !.out = <<>>, !.rej = <<>>, !.exe = <<>>]

(* ---- outputs (ostrom/consensus/replica/outputs.py) -------------------- *)
\* ostrom/consensus/replica/base.py: ReplicaBase._reject, ReplicaBase._send (s.out: Output.sends)
Rej(s, why) == [s EXCEPT !.rej = Append(@, why)]
Send(s, dest, m) == [s EXCEPT !.out = Append(@, [dest |-> dest, m |-> m])]
RECURSIVE SendSeq(_, _, _)
SendSeq(s, dest, q) == IF q = <<>> THEN s ELSE SendSeq(Send(s, dest, Head(q)), dest, Tail(q))
RECURSIVE SendSet(_, _, _)
SendSet(s, dest, S) ==
    IF S = {} THEN s
    ELSE LET m == CHOOSE x \in S : TRUE IN SendSet(Send(s, dest, m), dest, S \ {m})

(* ---- own messages (ostrom/consensus/messages.py; sok: signed by this replica) ---- *)
MkPP(s, v, n, d, req) == [t |-> "PrePrepare", v |-> v, n |-> n, d |-> d, r |-> Prim(s, v),
                          req |-> req, dok |-> TRUE, sok |-> TRUE]
MkVote(s, ty, v, n, d) == [t |-> ty, v |-> v, n |-> n, d |-> d, r |-> s.Id, sok |-> TRUE]
MkCheckpoint(s, n, sd) == [t |-> "Checkpoint", n |-> n, sd |-> sd, r |-> s.Id, sok |-> TRUE]
MkFetch(s) == [t |-> "FetchState", after |-> s.lastexec, r |-> s.Id, sok |-> TRUE]

PendingDs(s) == {q.d : q \in Range(s.pending)}
\* ostrom/consensus/replica/normal.py: NormalCase._add_pending
\* only a fresh request (timestamp above the client's last executed: an
\* executed request must not restart the timer), at most W per client (else rate_limited)
Fresh_(s, req) == req.t = "Request" /\ req.ts > s.lastts[req.c]
AddsPending(s, req) ==
    Fresh_(s, req) /\ req.d \notin PendingDs(s)
    /\ Len(SelectSeq(s.pending, LAMBDA q : q.c = req.c)) < s.W
AddPending(s, req) ==
    IF ~Fresh_(s, req) \/ req.d \in PendingDs(s) THEN s
    ELSE IF Len(SelectSeq(s.pending, LAMBDA q : q.c = req.c)) >= s.W THEN Rej(s, "rate_limited")
    ELSE [s EXCEPT !.pending = Append(@, req)]
PPAt(s, v, n) == {x \in s.pps : x.v = v /\ x.n = n}
\* ostrom/consensus/replica/normal.py: NormalCase._pp_digest
PPDigest(s, v, n) == IF PPAt(s, v, n) = {} THEN "none" ELSE (CHOOSE x \in PPAt(s, v, n) : TRUE).d
PutPP(s, pp) == [s EXCEPT !.pps = (@ \ PPAt(s, pp.v, pp.n)) \cup {pp}]
Votes(S, v, n, d) == {x \in S : x.v = v /\ x.n = n /\ x.d = d}

(* ---- normal case (ostrom/consensus/replica/normal.py) ----------------- *)
\* ostrom/consensus/replica/normal.py: NormalCase._send_pre_prepare; spec/PBFT.tla: PrePrepare
\* (pending requests in arrival order)
RECURSIVE SPP(_, _)
SPP(s, i) ==
    IF i > Len(s.pending) THEN s
    ELSE LET req == s.pending[i] IN
         IF req.d \in s.assigned THEN SPP(s, i + 1)
         ELSE IF s.next > s.stable + s.W THEN s
         ELSE LET pp == MkPP(s, s.view, s.next, req.d, req)
                  s1 == Send(s, Broadcast, pp)
              IN SPP([s1 EXCEPT !.next = @ + 1, !.assigned = @ \cup {req.d},
                                !.pps = (@ \ PPAt(s, pp.v, pp.n)) \cup {pp}], i + 1)
SendPrePrepare(s) == SPP(s, 1)

\* ostrom/consensus/replica/normal.py: NormalCase._drop_pending
DropPending(s, c) ==
    [s EXCEPT !.pending = SelectSeq(@, LAMBDA q : ~(q.c = c /\ q.ts <= s.lastts[c]))]

\* ostrom/consensus/replica/normal.py: NormalCase._execute_one (+ the Executed output)
\* a stale timestamp is skipped (no reply)
ExecuteOne(s, n, req, reply) ==
    LET fresh == req.t = "Request" /\ req.ts > s.lastts[req.c]
        s1 == IF fresh
              THEN LET k == Len(s.app) + 1
                       rp == [t |-> "Reply", v |-> s.view, ts |-> req.ts, c |-> req.c,
                              r |-> s.Id, res |-> k, sok |-> TRUE]
                       s0 == [s EXCEPT !.app = Append(@, req), !.lastts[req.c] = req.ts,
                                       !.lastreply[req.c] = rp]
                   IN IF reply THEN Send(s0, req.c, rp) ELSE s0
              ELSE s
        s2 == IF req.t = "Request" THEN DropPending(s1, req.c) ELSE s1
        res == IF fresh THEN Len(s1.app) ELSE -1
    IN [s2 EXCEPT !.hist = Append(@, req), !.lastexec = n, !.cvc = 0,
                  !.exe = Append(@, [n |-> n, d |-> req.d, res |-> res])]

(* ---- checkpoints: what execution calls (ostrom/consensus/replica/checkpoints.py) ---- *)
\* (defined here, before their first use in ExecLoop; the section itself is below)
\* ostrom/consensus/replica/checkpoints.py: Checkpoints._fetch_from
\* one FETCH-STATE per replica per retransmission period
FetchFrom(s, r) ==
    IF r = s.Id \/ r \in s.fetched THEN s
    ELSE [Send(s, Name(r), MkFetch(s)) EXCEPT !.fetched = @ \cup {r}]
\* ostrom/consensus/replica/checkpoints.py: Checkpoints._fetch; spec/PBFT.tla: LogsFrom
\* (state transfer to a stable checkpoint)
FetchTo(s) ==
    LET RECURSIVE F1(_, _)
        F1(x, q) == IF q = <<>> THEN x ELSE F1(FetchFrom(x, Head(q).r), Tail(q))
    IN F1(s, s.sproof)

\* ostrom/consensus/replica/checkpoints.py: Checkpoints._advance_stable
\* (stable checkpoint, garbage collection; abstracted in spec/PBFT.tla)
AdvanceStable(s, seq, sd, proof) ==
    LET own == {o \in s.ownck : o.n = seq}
        hasapp == own # {} /\ SDOf((CHOOSE o \in own : TRUE).h,
                                    (CHOOSE o \in own : TRUE).app) = sd
        s1 == [s EXCEPT !.stable = seq, !.ssd = sd, !.hasapp = hasapp,
                        !.sapp = IF hasapp THEN (CHOOSE o \in own : TRUE).app ELSE <<>>,
                        !.sproof = SortByR(proof),
                        !.pps = {x \in @ : x.n > seq}, !.prepares = {x \in @ : x.n > seq},
                        !.commits = {x \in @ : x.n > seq}, !.sentc = {x \in @ : x[2] > seq},
                        !.certs = {x \in @ : x.pp.n > seq}, !.cks = {x \in @ : x.n > seq},
                        !.ownck = {x \in @ : x.n >= seq},
                        !.next = IF @ > seq + 1 THEN @ ELSE seq + 1]
    IN IF s.lastexec < seq
       THEN FetchTo([s1 EXCEPT !.toexec = {e \in @ : e.n > seq}])
       ELSE IF s1.active /\ IsPrim(s1) THEN SendPrePrepare(s1) ELSE s1

\* ostrom/consensus/replica/checkpoints.py: Checkpoints._record_checkpoint
\* one vote per (n, sender); a second, different vote of a sender
\* replaces its first only if it completes a certificate (q-1 matching votes of others)
RecordCheckpoint(s, ck) ==
    LET old == {x \in s.cks : x.n = ck.n /\ x.r = ck.r}
        others == {x \in s.cks : x.n = ck.n /\ x.sd = ck.sd /\ x.r # ck.r}
    IN IF ck \in old THEN Rej(s, "replayed")
       ELSE IF old # {} /\ Cardinality(others) + 1 < Q(s) THEN Rej(s, "conflicting")
       ELSE LET s1 == [s EXCEPT !.cks = (@ \ old) \cup {ck}]
                matching == {x \in s1.cks : x.n = ck.n /\ x.sd = ck.sd}
            IN IF Cardinality(matching) >= Q(s) /\ ck.n > s.stable
               THEN AdvanceStable(s1, ck.n, ck.sd, matching) ELSE s1

\* ostrom/consensus/replica/checkpoints.py: Checkpoints._make_checkpoint
\* (after executing a multiple of K; abstracted in spec/PBFT.tla)
MakeCheckpoint(s, n) ==
    LET ck == MkCheckpoint(s, n, s.hist)
        s1 == [s EXCEPT !.ownck = {o \in @ : o.n # n} \cup {[n |-> n, h |-> s.hist, app |-> s.app]}]
    IN RecordCheckpoint(Send(s1, Broadcast, ck), ck)

(* ---- normal case, continued (ostrom/consensus/replica/normal.py) ------ *)
\* ostrom/consensus/replica/normal.py: NormalCase._execute; spec/PBFT.tla: OwnLog
\* (committed requests in sequence order)
RECURSIVE ExecLoop(_)
ExecLoop(s) ==
    LET due == {e \in s.toexec : e.n = s.lastexec + 1} IN
    IF due = {} THEN s
    ELSE LET e == CHOOSE x \in due : TRUE
             s1 == ExecuteOne([s EXCEPT !.toexec = @ \ {e}], e.n, e.req, TRUE)
         IN ExecLoop(IF e.n % s.K = 0 THEN MakeCheckpoint(s1, e.n) ELSE s1)
Execute(s) == LET s1 == ExecLoop(s) IN
              IF s1.active /\ IsPrim(s1) THEN SendPrePrepare(s1) ELSE s1

ToExecKeys(s) == {e.n : e \in s.toexec}
PPFor(s, v, n) == CHOOSE x \in PPAt(s, v, n) : TRUE

\* ostrom/consensus/replica/normal.py: NormalCase._check_committed
\* committed-local = prepared + 2f+1 matching commits
CheckCommitted(s, v, n, d) ==
    IF <<v, n, d>> \notin s.plog THEN s
    ELSE IF Cardinality(Votes(s.commits, v, n, d)) < Q(s) THEN s
    ELSE LET s1 == IF n > s.lastexec /\ n \notin ToExecKeys(s)
                   THEN [s EXCEPT !.toexec = @ \cup {[n |-> n, d |-> d, req |-> PPFor(s, v, n).req]}]
                   ELSE s
         IN Execute(s1)

\* ostrom/consensus/replica/normal.py: NormalCase._check_prepared
\* spec/PBFT.tla: Prepare + Commit (EagerCommits: prepared, so COMMIT)
CheckPrepared(s, v, n, d) ==
    IF PPDigest(s, v, n) # d THEN s
    ELSE IF <<v, n, d>> \in s.sentc THEN s
    ELSE LET backups == {x \in Votes(s.prepares, v, n, d) : x.r # Prim(s, v)} IN
         IF Cardinality(backups) < Q(s) - 1 THEN s
         ELSE IF \E x \in s.sentc : x[1] = v /\ x[2] = n THEN s
         ELSE LET cert == [pp |-> PPFor(s, v, n), preps |-> SortByR(backups)]
                  old == {c \in s.certs : c.pp.n = n}
                  keep == old = {} \/ (CHOOSE c \in old : TRUE).pp.v <= v
                  c == MkVote(s, "Commit", v, n, d)
                  s1 == [s EXCEPT !.sentc = @ \cup {<<v, n, d>>}, !.plog = @ \cup {<<v, n, d>>},
                                  !.certs = IF keep THEN (@ \ old) \cup {cert} ELSE @,
                                  !.commits = @ \cup {c}]
              IN CheckCommitted(Send(s1, Broadcast, c), v, n, d)

\* ostrom/consensus/replica/normal.py: NormalCase._accept_pre_prepare; spec/PBFT.tla: Prepare
\* (a backup prepares the pre-prepare)
AcceptPP(s, pp) ==
    LET s1 == PutPP(s, pp)
        s2 == IF pp.req.t # "null" /\ pp.n > s.lastexec THEN AddPending(s1, pp.req) ELSE s1
        p == MkVote(s, "Prepare", pp.v, pp.n, pp.d)
        s3 == IF s.Id # Prim(s, pp.v)
              THEN [Send(s2, Broadcast, p) EXCEPT !.prepares = @ \cup {p}] ELSE s2
    IN CheckPrepared(s3, pp.v, pp.n, pp.d)

\* ostrom/consensus/replica/normal.py: NormalCase._view_ok
ViewOk(s, v) == IF v < s.view THEN "stale_view" ELSE IF v > s.view THEN "future_view"
                ELSE IF ~s.active THEN "stale_view" ELSE "ok"
\* ostrom/consensus/replica/normal.py: NormalCase._valid_request
ValidRequest(pp) ==
    IF ~pp.dok THEN "tampered"
    ELSE IF pp.req.t # "null" /\ ~(pp.req.t = "Request" /\ pp.req.sok) THEN "forged"
    ELSE "ok"

\* ostrom/consensus/replica/normal.py: NormalCase._body
Body(s, v, n, d) ==
    IF PPAt(s, v, n) # {} /\ PPFor(s, v, n).d = d THEN PPFor(s, v, n).req
    ELSE IF d \in PendingDs(s) THEN CHOOSE q \in Range(s.pending) : q.d = d
    ELSE Missing

\* ostrom/consensus/replica/normal.py: NormalCase._check_late_committed
CheckLateCommitted(s, v, n, d) ==
    IF n <= s.lastexec \/ n \in ToExecKeys(s) THEN s
    ELSE IF Cardinality(Votes(s.commits, v, n, d)) < Q(s) THEN s
    ELSE LET body == Body(s, v, n, d) IN
         IF body.t \in {"null", "missing"} /\ d # "null" THEN s
         ELSE Execute([s EXCEPT !.toexec = @ \cup
                         {[n |-> n, d |-> d, req |-> IF body.t = "missing" THEN NullReq ELSE body]}])

RECURSIVE LateViews(_, _, _, _)
LateViews(s, vs, n, d) ==
    IF vs = {} THEN s
    ELSE LET v == Min(vs) IN LateViews(CheckLateCommitted(s, v, n, d), vs \ {v}, n, d)

\* ostrom/consensus/replica/normal.py: NormalCase._on_pre_prepare; spec/PBFT.tla: Prepare
OnPrePrepare(s, pp) ==
    IF pp.r # Prim(s, pp.v) THEN Rej(s, "not_primary")
    ELSE IF Late(s, pp.v)
    THEN LET s1 == Rej(s, "stale_view") IN
         IF InWin(s, pp.n) /\ pp.n > s.lastexec
         THEN IF ValidRequest(pp) # "ok" THEN Rej(s1, ValidRequest(pp))
              ELSE LET s1a == IF pp.v < s.view /\ PPAt(s, pp.v, pp.n) = {}
                              THEN [s1 EXCEPT !.pps = @ \cup {pp}] ELSE s1
                       s2 == IF pp.req.t # "null" THEN AddPending(s1a, pp.req) ELSE s1a
                   IN LateViews(s2, {c.v : c \in {x \in s2.commits : x.n = pp.n /\ x.d = pp.d}},
                                pp.n, pp.d)
         ELSE s1
    ELSE IF ViewOk(s, pp.v) # "ok" THEN Rej(s, ViewOk(s, pp.v))
    ELSE IF ~InWin(s, pp.n) THEN Rej(s, "out_of_window")
    ELSE IF ValidRequest(pp) # "ok" THEN Rej(s, ValidRequest(pp))
    ELSE IF PPAt(s, pp.v, pp.n) # {}
    THEN IF PPFor(s, pp.v, pp.n) = pp THEN Rej(s, "replayed") ELSE Rej(s, "conflicting")
    ELSE AcceptPP(s, pp)

\* ostrom/consensus/replica/normal.py: NormalCase._store_vote
\* one vote per (view, seq, sender): a second digest is "conflicting"
StoreVote(s, field, m) ==
    IF \E x \in s[field] : x.v = m.v /\ x.n = m.n /\ x.d = m.d /\ x.r = m.r
    THEN [ok |-> FALSE, s |-> Rej(s, "replayed")]
    ELSE IF \E x \in s[field] : x.v = m.v /\ x.n = m.n /\ x.r = m.r
    THEN [ok |-> FALSE, s |-> Rej(s, "conflicting")]
    ELSE [ok |-> TRUE, s |-> [s EXCEPT ![field] = @ \cup {m}]]
\* ostrom/consensus/replica/normal.py: NormalCase._record_vote
\* inside the watermarks, one vote per sender
RecordVote(s, field, m) ==
    IF ~InWin(s, m.n) THEN [ok |-> FALSE, s |-> Rej(s, "out_of_window")]
    ELSE StoreVote(s, field, m)

\* ostrom/consensus/replica/normal.py: NormalCase._on_prepare; spec/PBFT.tla: Prepare
\* (a matching prepare from another backup)
OnPrepare(s, p) ==
    IF p.r = Prim(s, p.v) THEN Rej(s, "not_backup")
    ELSE IF ViewOk(s, p.v) # "ok" THEN Rej(s, ViewOk(s, p.v))
    ELSE LET rv == RecordVote(s, "prepares", p) IN
         IF rv.ok THEN CheckPrepared(rv.s, p.v, p.n, p.d) ELSE rv.s

\* ostrom/consensus/replica/normal.py: NormalCase._on_late_commit; spec/PBFT.tla: CommittedAt
\* (a committed certificate of an earlier view)
OnLateCommit(s, c) ==
    IF ~InWin(s, c.n) \/ c.n <= s.lastexec THEN Rej(s, "stale_view")
    ELSE LET sv == StoreVote(s, "commits", c) IN
         IF sv.ok THEN CheckLateCommitted(sv.s, c.v, c.n, c.d) ELSE sv.s

\* ostrom/consensus/replica/normal.py: NormalCase._on_commit; spec/PBFT.tla: CommittedAt
OnCommit(s, c) ==
    IF Late(s, c.v) THEN OnLateCommit(s, c)
    ELSE IF ViewOk(s, c.v) # "ok" THEN Rej(s, ViewOk(s, c.v))
    ELSE LET rv == RecordVote(s, "commits", c) IN
         IF rv.ok THEN CheckCommitted(rv.s, c.v, c.n, c.d) ELSE rv.s

\* ostrom/consensus/replica/normal.py: NormalCase._on_request; spec/PBFT.tla: PrePrepare
\* (the primary assigns; backups relay to it)
OnRequest(s, m) ==
    IF m.ts <= s.lastts[m.c]
    THEN LET s1 == Rej(s, "replayed")
             last == s.lastreply[m.c]
         IN IF last # NoMsg /\ last.ts = m.ts THEN Send(s1, m.c, last) ELSE s1
    ELSE LET added == AddsPending(s, m)
             s1 == AddPending(s, m)
         IN IF s.active /\ IsPrim(s) THEN SendPrePrepare(s1)
            ELSE IF s.active /\ added THEN Send(s1, Name(Prim(s, s.view)), m)
            ELSE s1

(* ---- checkpoints and state transfer (ostrom/consensus/replica/checkpoints.py) ---- *)
\* ostrom/consensus/replica/checkpoints.py: Checkpoints._on_checkpoint
\* (abstracted in spec/PBFT.tla)
OnCheckpoint(s, ck) ==
    IF ck.n <= s.stable THEN Rej(s, "stale_view")
    ELSE IF ck.n % s.K # 0 THEN Rej(s, "invalid")
    ELSE IF ck.n > s.stable + s.W
    THEN LET s1 == Rej(s, "out_of_window") IN
         IF ck.n > s.lastexec THEN FetchFrom(s1, ck.r) ELSE s1
    ELSE RecordCheckpoint(s, ck)

\* ostrom/consensus/replica/checkpoints.py: Checkpoints._valid_checkpoint_proof
\* 2f+1 authentic CHECKPOINTs of distinct replicas, one (n, sd)
ValidProof(s, proof) ==
    LET ok == /\ proof # <<>>
              /\ \A i \in DOMAIN proof : proof[i].t = "Checkpoint" /\ proof[i].sok
              /\ \A i, j \in DOMAIN proof : i # j => proof[i].r # proof[j].r
              /\ \A i \in DOMAIN proof : proof[i].n = proof[1].n /\ proof[i].sd = proof[1].sd
              /\ Len(proof) >= Q(s)
    IN IF ok THEN [ok |-> TRUE, n |-> proof[1].n, sd |-> proof[1].sd]
       ELSE [ok |-> FALSE, n |-> -1, sd |-> <<>>]

\* ostrom/consensus/replica/checkpoints.py: Checkpoints._on_fetch_state
OnFetchState(s, m) ==
    IF m.after >= s.stable \/ s.lastexec < s.stable \/ ~s.hasapp
    THEN Rej(s, "stale_view")
    ELSE IF <<"fetch", m.r>> \in s.answered THEN Rej(s, "rate_limited")
    ELSE Send([s EXCEPT !.answered = @ \cup {<<"fetch", m.r>>}], Name(m.r),
              [t |-> "StateTransfer", after |-> m.after,
               reqs |-> SubSeq(s.hist, m.after + 1, s.stable), app |-> s.sapp,
               proof |-> s.sproof, r |-> s.Id, sok |-> TRUE])

RECURSIVE InstallAll(_, _, _)
InstallAll(s, q, n) ==
    IF q = <<>> THEN s ELSE InstallAll(ExecuteOne(s, n, Head(q), FALSE), Tail(q), n + 1)

\* ostrom/consensus/replica/checkpoints.py: Checkpoints._on_state_transfer
\* spec/PBFT.tla: LogsFrom (install a certified state)
OnStateTransfer(s, m) ==
    LET key == ValidProof(s, m.proof) IN
    IF m.after # s.lastexec THEN Rej(s, "stale")
    ELSE IF ~key.ok THEN Rej(s, "bad_state_transfer")
    ELSE IF key.n # m.after + Len(m.reqs) \/ key.n <= s.lastexec THEN Rej(s, "bad_state_transfer")
    ELSE IF \E i \in DOMAIN m.reqs : m.reqs[i].t # "null" /\ ~(m.reqs[i].t = "Request" /\ m.reqs[i].sok)
    THEN Rej(s, "forged")
    ELSE IF SDOf(s.hist \o m.reqs, m.app) # key.sd THEN Rej(s, "tampered")
    ELSE LET s1 == InstallAll(s, m.reqs, m.after + 1)
             s2 == [s1 EXCEPT !.ownck = {o \in @ : o.n # key.n} \cup
                                         {[n |-> key.n, h |-> s1.hist, app |-> m.app]}]
             s3 == IF key.n > s2.stable THEN AdvanceStable(s2, key.n, key.sd, Range(m.proof))
                   ELSE IF key.n = s2.stable THEN [s2 EXCEPT !.sapp = m.app, !.hasapp = TRUE]
                   ELSE s2
         IN Execute([s3 EXCEPT !.toexec = {e \in @ : e.n > s3.lastexec}])

(* ---- view change (ostrom/consensus/replica/view_change.py) ------------ *)
VCsFor(s, v) == {x \in s.vcs : x.nv = v}

\* ostrom/consensus/replica/view_change.py: ViewChanges._valid_cert
\* a prepared certificate of a view before nv above low
ValidCert(s, cert, nv, low) ==
    LET pp == cert.pp IN
    /\ pp.t = "PrePrepare" /\ pp.sok
    /\ pp.r = Prim(s, pp.v) /\ pp.v < nv
    /\ low < pp.n /\ pp.n <= low + s.W
    /\ pp.dok
    /\ (pp.req.t = "null" \/ (pp.req.t = "Request" /\ pp.req.sok))
    /\ \A i \in DOMAIN cert.preps :
          LET p == cert.preps[i] IN
          /\ p.t = "Prepare" /\ p.sok
          /\ p.v = pp.v /\ p.n = pp.n /\ p.d = pp.d
          /\ p.r # pp.r
          /\ \A j \in DOMAIN cert.preps : j < i => cert.preps[j].r # p.r
    /\ Len(cert.preps) >= Q(s) - 1

\* ostrom/consensus/replica/view_change.py: ViewChanges._valid_view_change
ValidVC(s, vc) ==
    /\ IF vc.s = 0 THEN vc.proof = <<>>
       ELSE LET key == ValidProof(s, vc.proof) IN key.ok /\ key.n = vc.s
    /\ \A i \in DOMAIN vc.P : ValidCert(s, vc.P[i], vc.nv, vc.s)
    /\ \A i, j \in DOMAIN vc.P : i # j => vc.P[i].pp.n # vc.P[j].pp.n

\* ostrom/consensus/replica/view_change.py: ViewChanges.compute_o (PBFT §4.4)
\* per seq in (min-s, max-s] the request of the highest-view
\* certificate (ties: the larger digest), else the null request
ComputeO(s, vcs, v) ==
    LET low == Max({vcs[i].s : i \in DOMAIN vcs})
        pps == UNION {{vcs[i].P[j].pp : j \in DOMAIN vcs[i].P} : i \in DOMAIN vcs}
        above == {pp \in pps : pp.n > low}
        Better(a, b) == a.v > b.v \/ (a.v = b.v /\ DRank[a.d] > DRank[b.d])
        best(n) == CHOOSE pp \in above : pp.n = n /\ \A o \in above : o.n = n => ~Better(o, pp)
        high == IF above = {} THEN low ELSE Max({pp.n : pp \in above})
    IN [i \in 1 .. (high - low) |->
          LET n == low + i IN
          IF \E pp \in above : pp.n = n
          THEN [t |-> "PrePrepare", v |-> v, n |-> n, d |-> best(n).d, r |-> Prim(s, v),
                req |-> best(n).req, dok |-> TRUE, sok |-> TRUE]
          ELSE MkPP(s, v, n, "null", NullReq)]

\* ostrom/consensus/replica/view_change.py: ViewChanges._enter_view
EnterView(s, nv, vcs, o) ==
    LET s0 == [s EXCEPT !.active = TRUE, !.nvmsg = nv, !.assigned = {},
                        !.vcs = {x \in @ : x.nv > s.view}]
        low == Max({vcs[i].s : i \in DOMAIN vcs})
        bi == Min({i \in DOMAIN vcs : vcs[i].s = low})
        key == ValidProof(s, vcs[bi].proof)
        s1 == IF low > s0.stable THEN AdvanceStable(s0, key.n, key.sd, Range(vcs[bi].proof)) ELSE s0
        RECURSIVE Acc(_, _)
        Acc(x, q) == IF q = <<>> THEN x
                     ELSE LET pp == Head(q)
                              x1 == [x EXCEPT !.assigned = @ \cup {pp.d}]
                          IN Acc(IF pp.n > x1.stable THEN AcceptPP(x1, pp) ELSE x1, Tail(q))
        s2 == Acc(s1, o)
        high == Max({low} \cup {o[i].n : i \in DOMAIN o})
        s3 == [s2 EXCEPT !.next = (IF high > s2.stable THEN high ELSE s2.stable) + 1]
    IN IF IsPrim(s3) THEN SendPrePrepare(s3)
       ELSE SendSeq(s3, Name(Prim(s3, s3.view)), s3.pending)

\* ostrom/consensus/replica/view_change.py: ViewChanges._send_new_view
\* spec/PBFT.tla: SendNewView
SendNewView(s) ==
    IF s.active \/ Prim(s, s.view) # s.Id THEN s
    ELSE IF Cardinality(VCsFor(s, s.view)) < Q(s) THEN s
    ELSE LET chosen == SortByR(VCsFor(s, s.view))
             o == ComputeO(s, chosen, s.view)
             nv == [t |-> "NewView", v |-> s.view, V |-> chosen, O |-> o, r |-> s.Id, sok |-> TRUE]
         IN EnterView(Send(s, Broadcast, nv), nv, chosen, o)

\* ostrom/consensus/replica/view_change.py: ViewChanges._send_view_change
\* spec/PBFT.tla: SendViewChange (Timeout) / JoinViewChange
SendViewChange(s, v) ==
    IF v < s.view \/ (v = s.view /\ ~s.active) THEN s
    ELSE LET certs == SortByN({c \in s.certs : c.pp.n > s.stable})
             vc == [t |-> "ViewChange", nv |-> v, s |-> s.stable, proof |-> s.sproof,
                    P |-> certs, r |-> s.Id, sok |-> TRUE]
             s1 == [s EXCEPT !.view = v, !.active = FALSE, !.cvc = @ + 1,
                             !.vcs = {x \in @ : x.nv >= v - 1 /\ ~(x.nv = v /\ x.r = s.Id)}
                                     \cup {vc}]
         IN SendNewView(Send(s1, Broadcast, vc))

\* ostrom/consensus/replica/view_change.py: ViewChanges._on_view_change
\* spec/PBFT.tla: JoinViewChange (f+1 VIEW-CHANGEs for later views)
\* ostrom/consensus/replica/view_change.py: ViewChanges._answer_late_view_change
\* the NEW-VIEW of the last installed view, if at least the
\* sender's, once per sender per retransmission period
AnswerLateVC(s, vc) ==
    IF s.nvmsg = NoMsg \/ vc.r = s.Id \/ <<"new_view", vc.r>> \in s.answered \/ s.nvmsg.v < vc.nv
    THEN s
    ELSE Send([s EXCEPT !.answered = @ \cup {<<"new_view", vc.r>>}], Name(vc.r), s.nvmsg)
\* ostrom/consensus/replica/view_change.py: ViewChanges._later_view_change
\* the sender's VIEW-CHANGEs held for views above s.view (at most one)
LaterVCs(s, r) == {x \in s.vcs : x.nv > s.view /\ x.r = r}

OnViewChange(s, vc) ==
    IF vc.nv < s.view \/ (vc.nv = s.view /\ s.active)
    THEN AnswerLateVC(Rej(s, "stale_view"), vc)
    ELSE IF \E x \in VCsFor(s, vc.nv) : x.r = vc.r THEN Rej(s, "replayed")
    ELSE IF vc.nv > s.view /\ \E x \in LaterVCs(s, vc.r) : x.nv > vc.nv THEN Rej(s, "superseded")
    ELSE IF ~ValidVC(s, vc) THEN Rej(s, "bad_view_change")
    ELSE LET s0 == IF vc.nv > s.view /\ LaterVCs(s, vc.r) # {}
                   THEN [Rej(s, "superseded") EXCEPT !.vcs = @ \ LaterVCs(s, vc.r)] ELSE s
             s1 == [s0 EXCEPT !.vcs = @ \cup {vc}]
             key == ValidProof(s, vc.proof)
             s2 == IF vc.s > s.stable THEN AdvanceStable(s1, key.n, key.sd, Range(vc.proof)) ELSE s1
             later == {x \in s2.vcs : x.nv > s2.view}
             senders == {x.r : x \in later}
             s3 == IF Cardinality(senders) >= s.F + 1
                   THEN SendViewChange(s2, Min({x.nv : x \in later}))
                   ELSE s2
         IN SendNewView(s3)

Strip(m) == [t |-> m.t, v |-> m.v, n |-> m.n, d |-> m.d, r |-> m.r, req |-> m.req]

\* _on_new_view; spec/PBFT.tla: AcceptNewView (O recomputed from V)
OnNewView(s, nv) ==
    IF nv.r # Prim(s, nv.v) THEN Rej(s, "not_primary")
    ELSE IF nv.v < s.view \/ (nv.v = s.view /\ s.active)
    THEN Rej(s, IF nv = s.nvmsg THEN "replayed" ELSE "stale_view")
    ELSE LET V == nv.V
             okV == \A i \in DOMAIN V :
                      /\ V[i].t = "ViewChange" /\ V[i].sok /\ V[i].nv = nv.v
                      /\ \A j \in DOMAIN V : j < i => V[j].r # V[i].r
                      /\ ValidVC(s, V[i])
         IN IF ~okV \/ Len(V) < Q(s) THEN Rej(s, "bad_new_view")
            ELSE LET exp == ComputeO(s, V, nv.v)
                     okO == /\ Len(exp) = Len(nv.O)
                            /\ \A i \in DOMAIN nv.O : nv.O[i].t = "PrePrepare"
                            /\ \A i \in DOMAIN nv.O : Strip(nv.O[i]) = Strip(exp[i])
                            /\ \A i \in DOMAIN nv.O : nv.O[i].sok
                 IN IF ~okO THEN Rej(s, "bad_new_view")
                    ELSE EnterView([s EXCEPT !.view = nv.v], nv, V, nv.O)

(* ---- entry points (ostrom/consensus/replica/entry_points.py) ---------- *)
\* ostrom/consensus/replica/entry_points.py: Replica.on_message
\* authentication first (outside TLA+: the `sok` flag)
OnMessage(s, m) ==
    IF m.t = "malformed" THEN Rej(s, "malformed")
    ELSE IF ~m.sok THEN Rej(s, "forged")
    ELSE CASE m.t = "Request" -> OnRequest(s, m)
           [] m.t = "PrePrepare" -> OnPrePrepare(s, m)
           [] m.t = "Prepare" -> OnPrepare(s, m)
           [] m.t = "Commit" -> OnCommit(s, m)
           [] m.t = "Checkpoint" -> OnCheckpoint(s, m)
           [] m.t = "ViewChange" -> OnViewChange(s, m)
           [] m.t = "NewView" -> OnNewView(s, m)
           [] m.t = "FetchState" -> OnFetchState(s, m)
           [] m.t = "StateTransfer" -> OnStateTransfer(s, m)
           [] OTHER -> Rej(s, "unexpected")

\* ostrom/consensus/replica/entry_points.py: Replica.waiting
\* the view-change timer runs
Waiting(s) == IF ~s.active THEN Cardinality(VCsFor(s, s.view)) >= Q(s) ELSE s.pending # <<>>

\* ostrom/consensus/replica/entry_points.py: Replica.on_timeout; spec/PBFT.tla: Timeout
OnTimeout(s) == IF Waiting(s) THEN SendViewChange(s, s.view + 1) ELSE s

\* ostrom/consensus/replica/entry_points.py: Replica.retransmit
\* (PBFT assumes retransmission until delivery; not in PBFT.tla)
Retransmit(s) ==
    LET s0 == [s EXCEPT !.answered = {}, !.fetched = {}]
        s0a == IF ~s.active
               THEN SendSet(s0, Broadcast, {x \in s.vcs : x.nv \in {s.view - 1, s.view}})
               ELSE s0
        s1 == IF s.nvmsg # NoMsg THEN Send(s0a, Broadcast, s.nvmsg) ELSE s0a
        \* BFT-LIVE-1: every accepted PRE-PREPARE (relayed with its signature) and our
        \* own votes, of every view the log holds, not only the current one
        s2 == SendSet(s1, Broadcast, s.pps)
        s3 == SendSet(s2, Broadcast, {x \in s.prepares \cup s.commits : x.r = s.Id})
        s4 == SendSeq(s3, Broadcast, s.sproof)
        s5 == SendSet(s4, Broadcast, {x \in s.cks : x.r = s.Id})
        s6 == IF s.active /\ ~IsPrim(s) THEN SendSeq(s5, Name(Prim(s, s.view)), s.pending) ELSE s5
    IN IF s.lastexec < s.stable THEN FetchTo(s6) ELSE s6

\* one input of the environment: [op |-> "msg", m |-> abstract message] | "timeout" | "retransmit"
Step(s, inp) ==
    CASE inp.op = "msg" -> OnMessage(Fresh(s), inp.m)
      [] inp.op = "timeout" -> OnTimeout(Fresh(s))
      [] inp.op = "retransmit" -> Retransmit(Fresh(s))

(* ---- the public state (ostrom/conformance/pbft_layer.py: PBFTLayer.state) ---- *)
Observed(s) ==
    [view |-> s.view, active |-> s.active, primary |-> Prim(s, s.view),
     last_exec |-> s.lastexec, exec_chain |-> s.hist, app_digest |-> s.app,
     stable_seq |-> s.stable, stable_digest |-> s.ssd, low |-> s.stable,
     high |-> s.stable + s.W, pending |-> Len(s.pending), timer |-> Waiting(s),
     timeout |-> TimeoutDuration(s)]

(* ---- crash and restart (ostrom/consensus/replica/durable.py) ---------- *)
\* A replica restarted from its database (reference/ostrom/consensus/storage.py)
\* has its DURABLE state: what it promised, and what derives from its promises:
\* its view and the NEW-VIEW that installed it, its own VIEW-CHANGEs, the
\* PRE-PREPAREs it sent or accepted (accepted = it sent the PREPARE), its own
\* PREPAREs, COMMITs and CHECKPOINTs, its certificates, checkpoints, stable proof
\* and executed history. Everything else is VOLATILE and back to its initial
\* value: what others sent it (their votes, checkpoints, VIEW-CHANGEs), the
\* requests it was waiting for, committed requests not yet executed, the rate
\* limits of the retransmission period and the timeout back-off. Writing the
\* durable part before sending is what lets a restarted replica never
\* contradict itself (docs/consensus.md, "Durability and recovery").
\* ostrom/consensus/replica/durable.py: Durable.durable_pre_prepares
Accepted(s, x) ==
    x.r = s.Id \/ \E p \in s.prepares : p.r = s.Id /\ p.v = x.v /\ p.n = x.n /\ p.d = x.d
\* ostrom/consensus/replica/durable.py: Durable.restore_durable (a DurableState, checked by
\* Durable._check_durable; the volatile part back to ReplicaBase.__init__'s values)
Recover(s) ==
    [s EXCEPT !.vcs = {x \in @ : x.r = s.Id},
              !.pps = {x \in @ : Accepted(s, x)},
              !.prepares = {x \in @ : x.r = s.Id},
              !.commits = {x \in @ : x.r = s.Id},
              !.cks = {x \in @ : x.r = s.Id},
              !.toexec = {}, !.pending = <<>>, !.answered = {}, !.fetched = {}, !.cvc = 0,
              !.out = <<>>, !.rej = <<>>, !.exe = <<>>]
================================================================================
