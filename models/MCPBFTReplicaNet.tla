--------------------------- MODULE MCPBFTReplicaNet ---------------------------
(* TLC models of spec/PBFTReplicaSystem.tla that check the network model itself   *)
(* (BFT-NET-1) and the round accounting after the heal (RoundInv, BFT-LIVE-1) over *)
(* a history variable the spec does not keep, and the network before those checks *)
(* as definition overrides (mutants). The workloads, the narrowing of the          *)
(* adversary and the action witnesses are models/MCPBFTReplicaSystem.tla's; the    *)
(* configurations are generated from models/manifest.json.                         *)
EXTENDS MCPBFTReplicaSystem

\* --- the network itself, over a history the spec does not keep (BFT-NET-1, BFT-LIVE-1)
\* `net` watches the links and the round flags from outside: it is updated from each
\* step's before and after states by the definitions below, never by the spec's own
\* budget counters, so a step that miscounts (or a budget that is never spent) shows
\* as a difference between what the network did and what it may do. The models that
\* check NetLinkInv, DupBoundInv and RoundInv run MCInit/MCNext (NetView fingerprints
\* the history too); the models of models/MCPBFTReplicaSystem.tla run Init/Next.
VARIABLE net
\* link a minus its k-th message
Without(a, k) == SubSeq(a, 1, k - 1) \o SubSeq(a, k + 1, Len(a))
\* how one link changed in one step: unchanged; messages appended at its tail ("sent");
\* its head taken, or every message in order ("head"); one message taken from behind
\* the head ("skip": an out-of-order delivery or a drop); anything else ("reshaped":
\* a message re-appears, moves, or is invented in place)
LinkChange(a, b) ==
    IF b = a THEN "same"
    ELSE IF Len(b) > Len(a) /\ SubSeq(b, 1, Len(a)) = a THEN "sent"
    ELSE IF a # <<>> /\ (b = <<>> \/ b = Tail(a)) THEN "head"
    ELSE IF \E k \in 2 .. Len(a) : b = Without(a, k) THEN "skip"
    ELSE "reshaped"
\* how many messages the links of S gained in this step
RECURSIVE Grown(_)
Grown(S) ==
    IF S = {} THEN 0
    ELSE LET l == CHOOSE x \in S : TRUE
         IN Len(chan'[l]) - Len(chan[l]) + Grown(S \ {l})
\* a replica's protocol state, written here again (not spec/PBFTReplicaSystem.tla's Core,
\* whose mutants this must judge): without the rate limits of the retransmission period
\* and the back-off counter, which change in every period without being progress
Progress(s) == [s EXCEPT !.answered = {}, !.fetched = {}, !.cvc = 0]
NetInit == [dups |-> 0, skips |-> 0, resets |-> 0, retx |-> {}, moved |-> TRUE, bad |-> {}]
\* the history after one step (before: unprimed, after: primed)
NetStep ==
    LET ch == [l \in Links |-> LinkChange(chan[l], chan'[l])]
        \* a step in which no replica moved and no message was taken, but a link of an
        \* honest sender or of the client that held messages grew: a duplication (a
        \* client retry fills only empty links, a Byzantine send only its own links)
        quiet == rs' = rs /\ rt' = rt /\ \A l \in Links : ch[l] \in {"same", "sent"}
        \* the last message a link gained (a Byzantine send or a duplicate appends one)
        last(l) == chan'[l][Len(chan'[l])]
        \* a Byzantine replica's link that gained a message it already carries: a copy
        \* of a message in flight is a duplicate, whoever sent the original (ByzSend
        \* sends again only once the previous copy has arrived)
        byzCopy(l) == l[1] \in Byz /\ last(l) \in Range(chan[l])
        dupd == {l \in Links : quiet /\ chan[l] # <<>> /\ ch[l] = "sent"
                               /\ (l[1] \notin Byz \/ byzCopy(l))}
        \* before the heal a partition loses what crosses it, a Byzantine sender's
        \* messages too: a fresh message on a link to or from a replica cut off
        crossed == {l \in Links : ~healed /\ l[1] \in Byz /\ ch[l] = "sent"
                                  /\ ({l[1], l[2]} \cap cut) # {} /\ ~byzCopy(l)}
        copies == \A l \in dupd : \A k \in Len(chan[l]) + 1 .. Len(chan'[l]) :
                      chan'[l][k] \in Range(chan[l])
        skipped == {l \in Links : ch[l] = "skip"}
        \* a new round: the round flags are cleared (NewRound)
        reset == \E i \in Honest : rt[i] /\ ~rt'[i]
        retx == net.retx \cup {i \in Honest : rt'[i] /\ ~rt[i]}
        \* some replica's protocol state changed in this round (before the heal every
        \* state counts: the first round after it runs whatever happened)
        moved == net.moved \/ ~healed \/ \E i \in Honest : Progress(rs'[i]) # Progress(rs[i])
        Flag(c, f) == IF c THEN {f} ELSE {}
    IN [dups |-> net.dups + Grown(dupd),
        skips |-> net.skips + Cardinality(skipped),
        resets |-> net.resets + (IF reset THEN 1 ELSE 0),
        retx |-> IF reset THEN {} ELSE retx,
        moved |-> IF reset THEN FALSE ELSE moved,
        bad |-> net.bad
                \cup Flag(\E l \in Links : ch[l] = "reshaped", "reshaped")
                \cup Flag(~copies, "invented")
                \cup Flag(crossed # {}, "crossed-partition")
                \cup Flag(healed /\ (dupd \cup skipped) # {}, "fault-after-heal")
                \cup Flag(reset /\ (retx # Honest \/ ~Empty \/ ~healed), "round-cut-short")
                \cup Flag(reset /\ ~moved, "idle-round")
                \* a retransmission is one replica's step: round flags are set one at a time
                \cup Flag(Cardinality({i \in Honest : rt'[i] /\ ~rt[i]}) > 1, "round-cut-short")
                \* a budget the step spent is a fault the links show: a drop or an
                \* out-of-order delivery takes a message (from behind the head, unless the
                \* message before it is a copy of it), a duplication adds one (the counters
                \* say WHEN a fault was spent, the links WHAT it did)
                \cup Flag((lossLeft' < lossLeft \/ reorderLeft' < reorderLeft)
                          /\ \A l \in Links : ch[l] \in {"same", "sent"}, "nothing-taken")
                \cup Flag(dupLeft' < dupLeft /\ dupd = {}, "nothing-duplicated")]
MCInit == Init /\ net = NetInit
MCNext == Next /\ net' = NetStep

\* BFT-NET-1: every link is FIFO but for counted exceptions: it gains messages only at
\* its tail, loses them from its head, and a message taken from behind the head (an
\* out-of-order delivery or a drop) is one of at most ReorderBudget + LossBudget; a
\* delivered message has left its link, so nothing is delivered again unless it was
\* sent again or duplicated; no message is invented; after the heal the network
\* neither drops, reorders nor duplicates; a fault budget is spent only on a fault;
\* and before the heal no message crosses a partition, a Byzantine sender's neither
NetLinkInv ==
    /\ net.bad \cap {"reshaped", "invented", "fault-after-heal", "nothing-taken",
                    "nothing-duplicated", "crossed-partition"} = {}
    /\ net.skips <= ReorderBudget + LossBudget
\* BFT-NET-1: at most DupBudget duplicates, counted from the links, not from dupLeft
\* (a Byzantine replica's copy of a message still on its link counts as one)
DupBoundInv == net.dups <= DupBudget
\* BFT-LIVE-1 (the round accounting LivenessInv rests on): a new round starts only once
\* EVERY honest replica has retransmitted in the round before and nothing is in flight,
\* and only after a round in which some replica's protocol state changed (a round that
\* changed nothing is the end of the run: Quiescent); the rounds counted are the rounds
\* that started
RoundInv == net.bad \cap {"round-cut-short", "idle-round"} = {} /\ rounds = net.resets

\* BFT-LIVE-1 for the client: a run that ends (not at the view bound) has given the client
\* f+1 replies to every request it is due (Due: all but one a later request of the client
\* overtook on a faulty network, which PBFT refuses as old and whose reply never comes),
\* counted from the replies the honest replicas' steps reported and the client could
\* receive (acks), as Client.on_reply does
ClientServedInv == Stuck /\ ~BoundStop => \A d \in Due : Cardinality(acks[d]) >= F + 1

\* --- reachability witness of the round accounting (must be VIOLATED) ---------------
\* a round after the heal whose only change is an answer: every honest replica has
\* retransmitted in it (Retransmission empties `answered`), none's protocol state has
\* changed since it began (net.moved, judged by Progress), and one has answered a late
\* VIEW-CHANGE or a FETCH-STATE since its retransmission. Here the spec's `changed`
\* must stay FALSE: a Core that counted `answered` (the spec mutant Core/except/1)
\* would start another round, which RoundInv reports as an idle round.
NeverAnswerOnlyRoundInv ==
    ~(net.resets > 0 /\ ~net.moved /\ (\A i \in Honest : rt[i])
      /\ \E i \in Honest : rs[i].answered # {})

\* a request is overtaken by a later one of its client (spec/PBFTReplicaSystem.tla:
\* Overtaken), so that Due excuses it
NeverOvertakenInv == \A q \in Requests : ~Overtaken(q)

\* the state TLC fingerprints: MCPBFTReplicaSystem's and the history
NetView == <<MCView, net>>

\* --- the network before its checks (mutants of the network model) ---------------
\* redelivery: an out-of-order delivery leaves the delivered message on its link, where
\* it is delivered again (the spec mutant DeliverAt/arith/2 keeps it there too, and
\* also repeats the message after it or reads past the link's end)
RedeliverAt(l, k) ==
    /\ k \in 1 .. Len(chan[l])
    /\ k > 1 => ~healed /\ reorderLeft > 0
    /\ reorderLeft' = IF k > 1 THEN reorderLeft - 1 ELSE reorderLeft
    /\ LET i == l[2]
           m == chan[l][k]
           rest == [chan EXCEPT ![l] = SubSeq(@, 1, k) \o SubSeq(@, k, Len(@))]
       IN Apply(i, Step(rs[i], [op |-> "msg", m |-> m]), rest,
                IF m.t = "StateTransfer" THEN "transfer" ELSE "msg")
    /\ UNCHANGED <<lossLeft, dupLeft, cut, partitionsLeft, timeoutsLeft, restartsLeft, healed, rt, rounds>>
\* uncounted-reorder: an out-of-order delivery does not spend ReorderBudget
FreeDeliverAt(l, k) ==
    /\ k \in 1 .. Len(chan[l])
    /\ k > 1 => ~healed /\ reorderLeft > 0
    /\ reorderLeft' = reorderLeft
    /\ LET i == l[2]
           m == chan[l][k]
           rest == [chan EXCEPT ![l] = Without(@, k)]
       IN Apply(i, Step(rs[i], [op |-> "msg", m |-> m]), rest,
                IF m.t = "StateTransfer" THEN "transfer" ELSE "msg")
    /\ UNCHANGED <<lossLeft, dupLeft, cut, partitionsLeft, timeoutsLeft, restartsLeft, healed, rt, rounds>>
\* endless-duplicates: a duplication does not spend the budget
FreeDuplicate(l) ==
    /\ ~healed /\ dupLeft > 0 /\ chan[l] # <<>>
    /\ chan' = [chan EXCEPT ![l] = Append(@, Head(@))]
    /\ UNCHANGED <<rs, omitsLeft, lossLeft, reorderLeft, dupLeft, cut, partitionsLeft, timeoutsLeft,
                   restartsLeft, healed, rt, changed, rounds, retried, acks, execd, promises, events>>
\* any-round-done: a round after the heal is done once ANY honest replica has
\* retransmitted: the spec mutant RoundDone/quant/1
AnyRoundDone == healed /\ changed /\ Empty /\ \E i \in Honest : rt[i]
\* endless-rounds: a round after the heal is followed by another whether or not it changed
\* anything (RoundDone without `changed`): the run never ends before MaxRounds
EndlessRoundDone == healed /\ Empty /\ \A i \in Honest : rt[i]
=============================================================================
