--------------------------- MODULE PBFTReplicaSystem ---------------------------
(***************************************************************************)
(* N copies of the code-level replica (spec/PBFTReplica.tla, which mirrors *)
(* reference/ostrom/consensus/replica/ step for step) composed with a      *)
(* network that loses messages, reorders them and partitions replicas     *)
(* until it heals, with Byzantine replicas, crash-restarts and a client.   *)
(* Python counterpart: reference/ostrom/harness/network.py (Simulation). *)
(*                                                                         *)
(* Where spec/PBFT.tla is the protocol (messages as grow-only sets that a  *)
(* replica reads the moment they exist; no loss, no checkpoints, no       *)
(* retransmission), this module is the CODE's logic under real faults:    *)
(* every honest step is PBFTReplica!Step, the function trace validation   *)
(* checks the Python replica against, so the timers, retransmission,       *)
(* checkpoints, state transfer, rate limits and recovery checked here are *)
(* the ones the code runs. Its properties:                                 *)
(*  - BFT-SAFE-1 (AgreementInv) and BFT-SAFE-2 (PrefixInv, ValidityInv),   *)
(*    stated over the history variable `execd` (every execution an honest *)
(*    replica REPORTED: the `exe` outputs of its steps), not over the      *)
(*    replicas' own logs; NoContradictionInv over `promises` (every       *)
(*    PRE-PREPARE, PREPARE and COMMIT an honest replica sent): no replica, *)
(*    restarted or not, ever votes two digests at one (view, seq);         *)
(*  - BFT-LIVE-1 after heal (LivenessInv): once the network has healed,    *)
(*    every request the client sent is executed by every honest replica.  *)
(*                                                                         *)
(* THE NETWORK. chan[<<j, i>>] is the FIFO link from sender j (a replica, *)
(* or ClientId for the client) to honest replica i. Delivery takes the     *)
(* head of a link; DeliverLink hands a replica every message of one link  *)
(* in one step (the code handles them one by one, and no other replica    *)
(* can observe the difference: the outputs are appended in the same       *)
(* order), which keeps the interleavings TLC explores to the ones that    *)
(* matter; which link goes next is free (DeliverNext, which a model may   *)
(* fix to one fair order). Before the heal the adversary may drop any message             *)
(* (LossBudget), drop every output of one step (a send omission,          *)
(* OmissionBudget: how a message overtaken by a timeout is lost),          *)
(* deliver a message ahead of its link's order (ReorderBudget), duplicate  *)
(* one (DupBudget) and cut one replica of Cuttable off (Partition, until   *)
(* Reconnect or the heal: what it sends and what is sent to it meanwhile  *)
(* is lost). Every retransmission is also a duplicate, so replays are      *)
(* exercised without the budget. Messages to a Byzantine replica are not   *)
(* kept (it runs no code here). A reply reaches the client when it is     *)
(* sent, unless its sender is cut off or its step's outputs are omitted.  *)
(*                                                                         *)
(* TIME. Timers are not clocks. Before the heal a waiting replica          *)
(* (PBFTReplica!Waiting) may time out whenever TimerMayFire allows it      *)
(* (TRUE here; models narrow it), at most TimeoutBudget times in all. The *)
(* heal is the global stabilisation time: afterwards nothing is lost, and  *)
(* the timers are longer than a round of messages (what the code's        *)
(* exponential back-off achieves: timeouts double until they exceed the    *)
(* delays). This is modelled with ROUNDS, as Simulation.run_fair runs     *)
(* them: when nothing is in flight every replica retransmits once, in      *)
(* replica order (Retransmission), and every message is delivered; a      *)
(* round in which some replica's protocol state changed starts another    *)
(* round (NewRound); only when a whole round changed nothing (Quiescent)   *)
(* may a timer fire or the client retry. A replica's protocol state is    *)
(* Core(s): its state without the rate-limit bookkeeping of the           *)
(* retransmission period (`answered`, `fetched`) and the back-off counter, *)
(* which change with every period but are not progress.                    *)
(*                                                                         *)
(* LIVENESS is checked as the invariant LivenessInv, as spec/PBFT.tla      *)
(* does and for the same reason (bounded views make a temporal property    *)
(* fail by stuttering at the bound). After the heal every fair behaviour   *)
(* is a sequence of rounds; it either stops in a Stuck state (quiescent,   *)
(* no timer runs, the client has its f+1 replies or has retried in vain:  *)
(* no step but a Byzantine one can happen) or keeps starting rounds. A     *)
(* finite model can do the latter only in a cycle, a livelock, which an   *)
(* invariant over Stuck alone cannot see; so the rounds are counted, and   *)
(* reaching MaxRounds with the last round still changing state            *)
(* (OutOfRounds) counts as not live. LivenessInv: every Stuck or          *)
(* OutOfRounds state has every request executed at every honest replica,  *)
(* but one a later request of its client overtook on a faulty network     *)
(* (Due; see THE CLIENT), unless the view bound stopped it (BoundStop: a   *)
(* replica waits in view MaxView, where no timeout is allowed). This is    *)
(* BFT-LIVE-1 bounded:                                                     *)
(* "within MaxRounds rounds after the heal", Simulation.run_fair's        *)
(* max_rounds, and a model whose honest recovery needs more rounds fails   *)
(* rather than passes. The witnesses in models/MCPBFTReplicaSystem.tla    *)
(* show that Stuck states are reached, also after a view change, after     *)
(* state transfer and after a restart.                                    *)
(*                                                                         *)
(* FAULTS. Byzantine replicas (CONSTANT Byz) run no code: they send the   *)
(* messages of ByzSends, signed with their own keys (so `sok`), any number *)
(* of times at any moment, before and after the heal (ByzMaySend: a model *)
(* may narrow when; across a partition only after the heal). A model picks *)
(* ByzSends to be an attack: silence ({}), checkpoint lies, a vote a       *)
(* quorum needs. Honest replicas may crash and restart before the heal     *)
(* (RestartBudget): Restart gives the replica PBFTReplica!Recover of its   *)
(* state, the durable part (written before anything that depends on it    *)
(* is sent, so a crash in the middle of a step loses only volatile state). *)
(* Messages in flight to a crashed replica arrive after its restart (a    *)
(* crash that loses them is a restart plus drops).                         *)
(*                                                                         *)
(* THE CLIENT sends each request to every replica at the start (it has     *)
(* timed out on the primary: the request then reaches every replica, or    *)
(* is lost), and after the heal sends it again to every replica whenever   *)
(* the system is quiescent and it lacks f+1 matching replies.              *)
(* Unlike PBFT's client (and ostrom/consensus/client.py), which has one    *)
(* request outstanding at a time, it sends them all at once: a drop or an  *)
(* out-of-order delivery may then let a later request reach the primary   *)
(* first, and the earlier one is refused as old for ever (Overtaken). That *)
(* is PBFT's timestamp rule, not a defect; BFT-LIVE-1 excuses it (Due).    *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC, PBFTReplica

CONSTANTS
    N, F,          \* replicas 0..N-1 tolerating F faults (N >= 3F+1)
    Byz,           \* the Byzantine replicas (at most F)
    ByzSends,      \* the envelopes [to |-> replica id, m |-> message] they may send
    Requests,      \* the client's requests: abstract Request records (PBFTReplica.tla)
    Clients,       \* the client names
    K, W,          \* checkpoint period and watermark window (checkpoint_k, watermark_window)
    LossBudget,    \* messages the network may drop before the heal
    OmissionBudget, \* steps whose every output the network may drop before the heal
    ReorderBudget, \* messages it may deliver ahead of their link's order before the heal
    DupBudget,     \* messages it may duplicate before the heal
    Cuttable,      \* the replicas a partition may cut off before the heal
    PartitionBudget, \* how many times the network may partition before the heal
    TimeoutBudget, \* how many timers may expire before the heal
    RestartBudget, \* crash-restarts of honest replicas before the heal
    MaxView,       \* the view bound: no timeout in view MaxView
    MaxRounds      \* the round bound after the heal (Simulation.run_fair's max_rounds)

Replicas == 0 .. (N - 1)
Honest == Replicas \ Byz
ClientId == N                                  \* the client's end of its links
Senders == Replicas \cup {ClientId}
Links == {l \in Senders \X Honest : l[1] # l[2]}
Cfg(i) == [n |-> N, f |-> F, id |-> i, k |-> K, w |-> W, base |-> 1, clients |-> Clients]

ASSUME /\ N >= 3 * F + 1 /\ F >= 1
       /\ Byz \subseteq Replicas /\ Cardinality(Byz) <= F
       /\ \A e \in ByzSends : e.to \in Honest /\ e.m.r \in Byz /\ e.m.sok
       /\ \A q \in Requests : q.t = "Request" /\ q.c \in Clients /\ q.sok
       /\ Cuttable \subseteq Honest

VARIABLES
    rs,            \* rs[i]: honest replica i's state (a PBFTReplica record, outputs empty)
    chan,          \* chan[<<j, i>>]: the messages in flight from j to honest i, in order
    lossLeft,      \* drops left before the heal
    omitsLeft,     \* send omissions left before the heal
    reorderLeft,   \* out-of-order deliveries left before the heal
    dupLeft,       \* duplications left before the heal
    cut,           \* the replicas cut off by the partition (until it ends)
    partitionsLeft, \* partitions left before the heal
    timeoutsLeft,  \* timer expiries left before the heal
    restartsLeft,  \* crash-restarts left before the heal
    healed,        \* the network has healed (global stabilisation time)
    rt,            \* rt[i]: after the heal, i has retransmitted in this round
    changed,       \* after the heal: some protocol state changed in this round
    rounds,        \* after the heal: the rounds started since (NewRound)
    retried,       \* after the heal: the client retried and nothing changed since
    acks,          \* acks[d]: the replicas whose reply to request d reached the client
    execd,         \* history: <<i, n, d>> for every execution honest i reported
    promises,      \* history: [t, v, n, d, r] of every PRE-PREPARE, PREPARE, COMMIT sent
    events         \* history: what happened, for the witnesses ("transfer", "restart", ...)

faults == <<lossLeft, omitsLeft, reorderLeft, dupLeft, cut, partitionsLeft, timeoutsLeft, restartsLeft>>
vars == <<rs, chan, faults, healed, rt, changed, rounds, retried, acks, execd, promises, events>>

ReqIds == {q.d : q \in Requests}
RECURSIVE SortByTs(_)
SortByTs(S) ==
    IF S = {} THEN <<>>
    ELSE LET q == CHOOSE x \in S : \A y \in S : x.ts <= y.ts IN <<q>> \o SortByTs(S \ {q})

-----------------------------------------------------------------------------
(* Routing the outputs of a step.                                          *)

Alive(i, j) == i \notin cut /\ j \notin cut    \* no partition between them
Dests(i, o) ==
    IF o.dest = Broadcast THEN Replicas \ {i}
    ELSE {j \in Replicas : Name(j) = o.dest}   \* {} for a client
\* who gets a message replica i sends: not a Byzantine replica (it runs no code
\* here), nobody across the partition
Targets(i, o) == {j \in Dests(i, o) : j \notin Byz /\ Alive(i, j)}
\* replica i's outputs appended to its links, in the order it sent them
RECURSIVE Route(_, _, _)
Route(i, out, ch) ==
    IF out = <<>> THEN ch
    ELSE Route(i, Tail(out),
               [l \in Links |-> IF l[1] = i /\ l[2] \in Targets(i, Head(out))
                                THEN Append(ch[l], Head(out).m) ELSE ch[l]])
\* the replies among i's outputs, as <<request id, replica>> (Client.on_reply)
Replies(i, out) ==
    IF i \in cut THEN {}
    ELSE UNION {{<<q.d, o.m.r>> : q \in {y \in Requests : y.c = o.m.c /\ y.ts = o.m.ts}}
                : o \in {x \in Range(out) : x.m.t = "Reply"}}

\* the votes a step sends, directly or inside a NEW-VIEW's O
Promised(out) ==
    LET ms == {o.m : o \in Range(out)}
        direct == {m \in ms : m.t \in {"PrePrepare", "Prepare", "Commit"}}
        inNV == UNION {Range(m.O) : m \in {x \in ms : x.t = "NewView"}}
    IN {[t |-> m.t, v |-> m.v, n |-> m.n, d |-> m.d, r |-> m.r] : m \in direct \cup inNV}

\* a replica's protocol state: without the rate limits of the retransmission period
\* and the back-off counter (see the header, TIME)
Core(s) == [s EXCEPT !.answered = {}, !.fetched = {}, !.cvc = 0]
Clean(s) == [s EXCEPT !.out = <<>>, !.rej = <<>>, !.exe = <<>>]
RestartTag(i) == "restart-" \o ToString(i)

\* honest replica i took a step from rs[i] to s1 (outputs in s1); ch0 is the network
\* without the messages it consumed. Before the heal the network may lose every
\* message of the step (a send omission, OmissionBudget of them).
Apply(i, s1, ch0, how) ==
    LET s == Clean(s1)
        moved == Core(s) # Core(rs[i])
    IN /\ rs' = [rs EXCEPT ![i] = s]
       /\ \E lose \in IF ~healed /\ omitsLeft > 0 /\ s1.out # <<>> THEN BOOLEAN ELSE {FALSE} :
            /\ chan' = IF lose THEN ch0 ELSE Route(i, s1.out, ch0)
            /\ omitsLeft' = IF lose THEN omitsLeft - 1 ELSE omitsLeft
            /\ acks' = IF lose THEN acks
                       ELSE [d \in ReqIds |-> acks[d] \cup
                                {x[2] : x \in {y \in Replies(i, s1.out) : y[1] = d}}]
       /\ execd' = execd \cup {<<i, e.n, e.d>> : e \in Range(s1.exe)}
       /\ promises' = promises \cup Promised(s1.out)
       /\ changed' = (changed \/ (healed /\ moved))
       /\ retried' = (retried /\ ~moved)
       /\ events' = events \cup
             (IF s1.exe # <<>> /\ how = "transfer" THEN {"transfer"} ELSE {})
             \cup (IF s1.exe # <<>> /\ RestartTag(i) \in events THEN {"restarted-executes"} ELSE {})
             \cup (IF healed /\ s.active /\ ~rs[i].active THEN {"view-installed-after-heal"} ELSE {})

-----------------------------------------------------------------------------
Init ==
    /\ rs = [i \in Honest |-> InitState(Cfg(i))]
    \* the client has sent every request to every replica, in timestamp order
    /\ chan = [l \in Links |-> IF l[1] = ClientId
                               THEN SortByTs(Requests) ELSE <<>>]
    /\ lossLeft = LossBudget /\ omitsLeft = OmissionBudget /\ reorderLeft = ReorderBudget /\ dupLeft = DupBudget
    /\ cut = {} /\ partitionsLeft = PartitionBudget /\ timeoutsLeft = TimeoutBudget
    /\ restartsLeft = RestartBudget
    /\ healed = FALSE
    /\ rt = [i \in Honest |-> FALSE]
    /\ changed = FALSE /\ rounds = 0 /\ retried = FALSE
    /\ acks = [d \in ReqIds |-> {}]
    /\ execd = {} /\ promises = {} /\ events = {}

Empty == \A l \in Links : chan[l] = <<>>
\* after the heal, a whole round changed nothing
Quiescent == healed /\ Empty /\ (\A i \in Honest : rt[i]) /\ ~changed

\* Replica.on_message (Simulation.deliver) of the first message of link l, or (before
\* the heal, within ReorderBudget) of its k-th
DeliverAt(l, k) ==
    /\ k \in 1 .. Len(chan[l])
    /\ k > 1 => ~healed /\ reorderLeft > 0
    /\ reorderLeft' = IF k > 1 THEN reorderLeft - 1 ELSE reorderLeft
    /\ LET i == l[2]
           m == chan[l][k]
           rest == [chan EXCEPT ![l] = SubSeq(@, 1, k - 1) \o SubSeq(@, k + 1, Len(@))]
       IN Apply(i, Step(rs[i], [op |-> "msg", m |-> m]), rest,
                IF m.t = "StateTransfer" THEN "transfer" ELSE "msg")
    /\ UNCHANGED <<lossLeft, dupLeft, cut, partitionsLeft, timeoutsLeft, restartsLeft, healed, rt, rounds>>
Deliver(l) == DeliverAt(l, 1)

RECURSIVE Fold(_, _, _, _)
Fold(s, ms, out, exe) ==
    IF ms = <<>> THEN [s EXCEPT !.out = out, !.exe = exe]
    ELSE LET r == Step(s, [op |-> "msg", m |-> Head(ms)])
         IN Fold(r, Tail(ms), out \o r.out, exe \o r.exe)
\* Which nonempty link may be delivered next (TRUE: any; a model may fix an order,
\* as Simulation.drain does: models/MCPBFTReplicaSystem.tla)
DeliverNext(l) == TRUE

\* replica l[2] handles every message of link l, in order
DeliverLink(l) ==
    /\ chan[l] # <<>>
    /\ DeliverNext(l)
    /\ LET i == l[2] IN
       Apply(i, Fold(rs[i], chan[l], <<>>, <<>>), [chan EXCEPT ![l] = <<>>],
             IF \E k \in 1 .. Len(chan[l]) : chan[l][k].t = "StateTransfer" THEN "transfer" ELSE "msg")
    /\ UNCHANGED <<lossLeft, reorderLeft, dupLeft, cut, partitionsLeft, timeoutsLeft, restartsLeft,
                   healed, rt, rounds>>

\* Before the heal the timer of a waiting replica may fire at any moment (a model
\* may narrow this: models/MCPBFTReplicaSystem.tla)
TimerMayFire(i) == TRUE

\* Replica.on_timeout (Simulation.fire_timeout): before the heal whenever the timer
\* may fire; after, only when a whole round changed nothing (the timer outlasts a round)
FireTimeout(i) ==
    /\ Waiting(rs[i]) /\ rs[i].view < MaxView
    /\ IF healed THEN Quiescent ELSE TimerMayFire(i) /\ timeoutsLeft > 0
    /\ timeoutsLeft' = IF healed THEN timeoutsLeft ELSE timeoutsLeft - 1
    /\ Apply(i, Step(rs[i], [op |-> "timeout"]), chan, "timeout")
    /\ UNCHANGED <<lossLeft, reorderLeft, dupLeft, cut, partitionsLeft, restartsLeft, healed, rt, rounds>>

\* Replica.retransmit (Simulation.retransmit), after the heal: once per round, when
\* nothing is in flight, in replica order
Retransmission(i) ==
    /\ healed /\ Empty /\ ~rt[i]
    /\ \A j \in Honest : j < i => rt[j]
    /\ Apply(i, Step(rs[i], [op |-> "retransmit"]), chan, "retransmit")
    /\ rt' = [rt EXCEPT ![i] = TRUE]
    /\ UNCHANGED <<lossLeft, reorderLeft, dupLeft, cut, partitionsLeft, timeoutsLeft,
                   restartsLeft, healed, rounds>>

\* after the heal: a round in which something changed is followed by another
RoundDone == healed /\ changed /\ Empty /\ \A i \in Honest : rt[i]
NewRound ==
    /\ RoundDone /\ rounds < MaxRounds
    /\ rt' = [i \in Honest |-> FALSE]
    /\ changed' = FALSE
    /\ rounds' = rounds + 1
    /\ UNCHANGED <<rs, chan, faults, healed, retried, acks, execd, promises, events>>

\* Client.on_timeout, after the heal: without f+1 replies the request goes to every
\* replica again (once per change of the replicas' protocol state: a retry that
\* changes nothing is not repeated, see Stuck)
ClientRetry(q) ==
    /\ Quiescent /\ ~retried
    /\ Cardinality(acks[q.d]) < F + 1
    /\ chan' = [l \in Links |-> IF l[1] = ClientId THEN <<q>> ELSE chan[l]]
    /\ retried' = TRUE
    /\ UNCHANGED <<rs, faults, healed, rt, changed, rounds, acks, execd, promises, events>>

(* The environment before the heal --------------------------------------- *)

Drop(l, k) ==
    /\ ~healed /\ lossLeft > 0 /\ k \in 1 .. Len(chan[l])
    /\ chan' = [chan EXCEPT ![l] = SubSeq(@, 1, k - 1) \o SubSeq(@, k + 1, Len(@))]
    /\ lossLeft' = lossLeft - 1
    /\ UNCHANGED <<rs, omitsLeft, reorderLeft, dupLeft, cut, partitionsLeft, timeoutsLeft, restartsLeft,
                   healed, rt, changed, rounds, retried, acks, execd, promises, events>>

\* the first message of link l arrives twice (the copy last)
Duplicate(l) ==
    /\ ~healed /\ dupLeft > 0 /\ chan[l] # <<>>
    /\ chan' = [chan EXCEPT ![l] = Append(@, Head(@))]
    /\ dupLeft' = dupLeft - 1
    /\ UNCHANGED <<rs, omitsLeft, lossLeft, reorderLeft, cut, partitionsLeft, timeoutsLeft, restartsLeft,
                   healed, rt, changed, rounds, retried, acks, execd, promises, events>>

\* Simulation.partition: replica i is cut off from everyone else; what it sends and
\* what is sent to it from then on is lost (messages already in flight crossed the
\* link before the cut and still arrive) ...
Partition(i) ==
    /\ ~healed /\ cut = {} /\ i \in Cuttable /\ partitionsLeft > 0
    /\ cut' = {i}
    /\ partitionsLeft' = partitionsLeft - 1
    /\ UNCHANGED <<rs, omitsLeft, chan, lossLeft, reorderLeft, dupLeft, timeoutsLeft, restartsLeft, healed,
                   rt, changed, rounds, retried, acks, execd, promises, events>>
\* ... until it reconnects (or the network heals)
Reconnect ==
    /\ ~healed /\ cut # {}
    /\ cut' = {}
    /\ UNCHANGED <<rs, omitsLeft, chan, lossLeft, reorderLeft, dupLeft, partitionsLeft, timeoutsLeft,
                   restartsLeft, healed, rt, changed, rounds, retried, acks, execd, promises, events>>

\* a crash and a restart from the database
\* (ostrom/consensus/replica/durable.py: Durable.restore_durable)
Restart(i) ==
    /\ ~healed /\ restartsLeft > 0
    /\ rs' = [rs EXCEPT ![i] = Recover(rs[i])]
    /\ restartsLeft' = restartsLeft - 1
    /\ events' = events \cup {"restart", RestartTag(i)}
    /\ UNCHANGED <<chan, omitsLeft, lossLeft, reorderLeft, dupLeft, cut, partitionsLeft, timeoutsLeft,
                   healed, rt, changed, rounds, retried, acks, execd, promises>>

\* Simulation.heal: global stabilisation; every replica retransmits in the first round
Heal ==
    /\ ~healed
    /\ healed' = TRUE
    /\ cut' = {}
    /\ rt' = [i \in Honest |-> FALSE]
    /\ changed' = TRUE
    /\ UNCHANGED <<rs, omitsLeft, chan, lossLeft, reorderLeft, dupLeft, partitionsLeft, timeoutsLeft,
                   restartsLeft, rounds, retried, acks, execd, promises, events>>

\* a Byzantine replica sends one of its messages, before or after the heal (again
\* once the previous copy has arrived)
\* (ByzMaySend: TRUE here; a model may narrow when, models/MCPBFTReplicaSystem.tla)
ByzMaySend(e) == TRUE
ByzSend(e) ==
    LET l == <<e.m.r, e.to>> IN
    /\ e \in ByzSends /\ ByzMaySend(e)
    /\ \A k \in 1 .. Len(chan[l]) : chan[l][k] # e.m
    /\ ~healed => Alive(e.m.r, e.to)
    /\ chan' = [chan EXCEPT ![l] = Append(@, e.m)]
    /\ UNCHANGED <<rs, faults, healed, rt, changed, rounds, retried, acks, execd, promises, events>>

(* The end of a run (BFT-LIVE-1, see the header) ----------------------- *)

\* BFT-LIVE-1 (see the header)
AllExecuted == \A i \in Honest : ReqIds \subseteq {x.d : x \in Range(rs[i].hist)}
ClientDone == \A d \in ReqIds : Cardinality(acks[d]) >= F + 1
\* A request that a later one of its client overtook: an honest replica reported executing
\* a request of the same client with a larger timestamp without having executed this one
\* before it. From then on every replica refuses it as old (PBFTReplica!Fresh_), as PBFT
\* does: a client's timestamps order its requests, and an older one is not executed
\* after a newer one. This client sends all its requests at once (THE CLIENT, above);
\* PBFT's client, and ostrom/consensus/client.py's, has one outstanding request at a time,
\* so none of its requests is ever overtaken. Sent in timestamp order on FIFO links
\* (SortByTs), the requests can overtake each other only through the network: a message
\* dropped or delivered out of order before the heal.
Overtaken(q) ==
    \E x \in execd, p \in Requests :
        /\ p.c = q.c /\ p.ts > q.ts /\ x[3] = p.d
        /\ ~\E y \in execd : y[1] = x[1] /\ y[3] = q.d /\ y[2] < x[2]
\* the requests BFT-LIVE-1 promises to execute and answer: every request, but one
\* overtaken in a run in which the network dropped or reordered a message (no other
\* cause is excused: a request overtaken otherwise still fails LivenessInv)
Due == {q.d : q \in {r \in Requests :
                     ~(Overtaken(r) /\ (lossLeft < LossBudget \/ reorderLeft < ReorderBudget))}}
DueExecuted == \A i \in Honest : Due \subseteq {x.d : x \in Range(rs[i].hist)}
TimerRuns == \E i \in Honest : Waiting(rs[i]) /\ rs[i].view < MaxView
Stuck == Quiescent /\ ~TimerRuns /\ (ClientDone \/ retried)
\* the round bound is reached with the last round still changing state: a livelock,
\* or a recovery slower than MaxRounds rounds (BFT-LIVE-1 within the bound)
OutOfRounds == RoundDone /\ rounds = MaxRounds
BoundStop == \E i \in Honest : Waiting(rs[i]) /\ rs[i].view = MaxView
LivenessInv == Stuck \/ OutOfRounds => DueExecuted \/ BoundStop

\* a run ends only in a Stuck or OutOfRounds state (LivenessInv judges them); any
\* other state without a successor is a deadlock TLC reports
Terminated == (Stuck \/ OutOfRounds) /\ UNCHANGED vars

Next ==
    \/ \E l \in Links : DeliverLink(l) \/ \E k \in 2 .. Len(chan[l]) : DeliverAt(l, k)
    \/ \E l \in Links : \E k \in 1 .. Len(chan[l]) : Drop(l, k)
    \/ \E l \in Links : Duplicate(l)
    \/ \E i \in Honest : FireTimeout(i) \/ Retransmission(i) \/ Restart(i) \/ Partition(i)
    \/ \E q \in Requests : ClientRetry(q)
    \/ NewRound \/ Heal \/ Reconnect
    \/ \E e \in ByzSends : ByzSend(e)
    \/ Terminated

Spec == Init /\ [][Next]_vars

-----------------------------------------------------------------------------
(* Properties (docs/design.md §7)                                          *)

\* BFT-SAFE-1: no two honest replicas execute different requests at one sequence
\* number, over every execution ever reported (restarts included)
AgreementInv ==
    \A x, y \in execd : x[2] = y[2] => x[3] = y[3]

\* BFT-SAFE-2: each honest replica's reported executions are the sequence numbers
\* 1..k, each once (prefix logs follow with AgreementInv) ...
PrefixInv ==
    \A i \in Honest :
        LET mine == {y \in execd : y[1] = i}
            ns == {x[2] : x \in mine}
        IN ns = 1 .. Cardinality(ns) /\ Cardinality(mine) = Cardinality(ns)
\* ... and every executed request was sent by the client (or is the null request)
ValidityInv == \A x \in execd : x[3] \in ReqIds \cup {"null"}

\* no honest replica sends two digests at one (view, seq): the PRE-PREPARE of a
\* primary, a backup's PREPARE or a COMMIT, across crashes and restarts
NoContradictionInv ==
    \A p, q \in promises :
        p.t = q.t /\ p.v = q.v /\ p.n = q.n /\ p.r = q.r => p.d = q.d

\* BFT-SAFE-2: a stable checkpoint certifies the history the honest replicas executed:
\* its digest (here the history itself) agrees, sequence number by sequence number,
\* with every execution an honest replica reported (`execd`, independent of the
\* checkpoint bookkeeping that computes the digest)
StableDigestInv ==
    \A i \in Honest :
        /\ Len(rs[i].ssd) = rs[i].stable
        /\ \A n \in 1 .. rs[i].stable : \A x \in execd :
              x[2] = n => "d" \in DOMAIN rs[i].ssd[n] /\ rs[i].ssd[n].d = x[3]

\* BFT-SAFE-2 (validity rests on it): no honest replica keeps a message whose signature
\* does not verify, nor a VIEW-CHANGE whose certificates or checkpoint proof carry one
\* (what a Byzantine replica forges is refused, whatever path it arrives by)
AuthenticInv ==
    \A i \in Honest :
        LET s == rs[i] IN
        /\ \A m \in s.pps \cup s.prepares \cup s.commits \cup s.cks : m.sok
        /\ \A x \in s.vcs :
              /\ x.sok
              /\ \A k \in DOMAIN x.proof : x.proof[k].sok
              /\ \A k \in DOMAIN x.P :
                    /\ x.P[k].pp.sok
                    /\ \A j \in DOMAIN x.P[k].preps :
                          x.P[k].preps[j].t = "Prepare" /\ x.P[k].preps[j].sok

\* BFT-LIVE-1 (a replica that fell behind can catch up): an honest replica that has
\* executed through its stable checkpoint holds the application state of it, so it can
\* answer a FETCH-STATE for it (PBFTReplica!OnFetch serves only with `hasapp`)
ServesStableInv == \A i \in Honest : rs[i].lastexec >= rs[i].stable => rs[i].hasapp

\* BFT-LIVE-1, the normal case: in a run in which nothing failed before the heal (no
\* loss, omission, reordering, duplicate, partition, timeout or restart was used; f
\* replicas may still be silent or lie), no honest replica leaves view 0: with an
\* honest primary the protocol does not stall by itself into a view change
NormalCaseInv ==
    faults = <<LossBudget, OmissionBudget, ReorderBudget, DupBudget, {}, PartitionBudget,
               TimeoutBudget, RestartBudget>>
    => \A i \in Honest : rs[i].view = 0

\* BFT-LIVE-1 (a Byzantine replica cannot grow an honest replica's state without bound,
\* nor hold it to a view it has since abandoned): of each sender, an honest replica
\* keeps at most one VIEW-CHANGE for a view above its own, the latest
LaterVCsInv ==
    \A i \in Honest : \A r \in {x.r : x \in rs[i].vcs} :
        Cardinality({x \in rs[i].vcs : x.r = r /\ x.nv > rs[i].view}) <= 1

\* The state is what the code keeps: a light type check.
TypeOK ==
    /\ DOMAIN rs = Honest /\ DOMAIN chan = Links
    /\ \A i \in Honest : rs[i].out = <<>> /\ rs[i].rej = <<>> /\ rs[i].exe = <<>>
    /\ lossLeft \in 0 .. LossBudget /\ reorderLeft \in 0 .. ReorderBudget
    /\ dupLeft \in 0 .. DupBudget /\ restartsLeft \in 0 .. RestartBudget
    /\ partitionsLeft \in 0 .. PartitionBudget /\ timeoutsLeft \in 0 .. TimeoutBudget
    /\ cut \subseteq Cuttable /\ healed \in BOOLEAN /\ changed \in BOOLEAN
    /\ rounds \in 0 .. MaxRounds /\ (rounds > 0 => healed)
=============================================================================
