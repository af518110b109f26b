---------------------------- MODULE SanctionsTrace ----------------------------
(***************************************************************************)
(* Trace validation of the sanctions layer (docs/conformance.md "Trace     *)
(* validation"; Python side: reference/ostrom/conformance/                 *)
(* trace/sanctions.py, `ostrom validate-trace` on a log whose header says  *)
(* "layer": "sanctions"). As spec/LifecycleTrace.tla does for the          *)
(* lifecycle: a log of an implementation's SanctionBook, compiled into the *)
(* module TraceLog as a sequence constant, is walked with a cursor, and    *)
(* every logged command must be a step of spec/Sanctions.tla (EXTENDED     *)
(* here, unchanged; its constants come from the log's params).           *)
(*                                                                         *)
(* WHAT IS MODELLED. One log step is several TLC steps, through `phase`:   *)
(*  - `record` (result ok) at round r: r - now Ticks (phase "adv"), as the *)
(*    reference's record at a later round first advances to it, then      *)
(*    Record(agent, kind), then "check". A banned agent's record changes   *)
(*    nothing (the reference returns at once; Sanctions.tla's Record is    *)
(*    not enabled for rank 4, so the step is a stutter of the spec vars);  *)
(*  - `tick` (result ok) to round r: r - now Ticks (at least one), then    *)
(*    "check";                                                             *)
(*  - a refused command: nothing changes, and the refusal must be one the  *)
(*    reference is required to make: a record at a round before now, a     *)
(*    tick to a round not after now, or a malformed command (sanctions_    *)
(*    trace.py decides that; op "noop"). A well-formed record or tick that *)
(*    the spec takes and the log refuses is a failure;                     *)
(*  - "check": the logged state after the step equals the spec's: the      *)
(*    clock, the set of agents with a record (`known`: the book keeps an   *)
(*    agent from its first accepted record on) and, per agent, the level   *)
(*    (quarantined, else the rung of `rank`), the rank and the weighted    *)
(*    in-window count (WCount of Sanctions.tla, in units of one violation; *)
(*    the log's micro-units divided by 10^6). If the log step carries      *)
(*    events, they must equal the events the spec's steps give (Events     *)
(*    below): per Tick, per agent in the reference's (sorted) order; then  *)
(*    the Record's.                                                        *)
(*                                                                         *)
(* WHAT IS ABSTRACTED OR FIXED, and why:                                   *)
(*  - the repair check, nondeterministic in Sanctions.tla, is resolved by  *)
(*    the log's setup: the agents in `unrepaired` fail every check, every  *)
(*    other agent passes (SanctionsLayer of conformance/layers.py). Left   *)
(*    open it would accept a book that never releases anyone; fixed, every *)
(*    log has exactly one behaviour to follow.                             *)
(*  - MaxPerRound (a workload bound of the model, not a rule) is set to    *)
(*    the number of records in the batch's longest log, so it never        *)
(*    disables a Record; Kinds is AllKinds.                                *)
(*  - strategic and probation are not in the public state: they are        *)
(*    checked only through their effects (a later rise instead of a        *)
(*    quarantine) and through the `reclassified` event when events are     *)
(*    logged.                                                              *)
(*  - UrgentPenalty must be an integer (Sanctions.tla weighs the other     *)
(*    kinds 1): a log with a fractional urgent_penalty is refused as       *)
(*    unusable by trace/sanctions.py, never accepted; so is a window above *)
(*    64 rounds (Sanctions.tla's SumAges recurses once per age: TLC's      *)
(*    default stack overflows a little above 70).                          *)
(*                                                                         *)
(* Verdict (as in LifecycleTrace.tla): Watch prints                        *)
(* <<"ostrom-cursor", log, k>> when a log gets further than before, and at *)
(* a dead end at the deepest cursor <<"ostrom-deadend", log, k, phase,     *)
(* Why>>; the log is accepted iff the cursor reaches its end.              *)
(***************************************************************************)
EXTENDS Integers, Sequences, TLC, Sanctions, TraceLog

VARIABLES
    which,     \* the log of the batch this behaviour follows (index into TLLogs)
    cursor,    \* log steps consumed
    phase,     \* "idle", "adv" (Ticks of a step), "check"
    now,       \* the reference's clock: Ticks taken
    known,     \* the agents the book has a record of
    expected,  \* the logged view of the agents after step `cursor`
    evs        \* the events of the spec's steps of the current log step

svars == <<hist, rank, susp, quar, prob, strategic, last, risen>>

TraceKinds == AllKinds
Steps == TLLogs[which].steps
E == Steps[cursor + 1]
\* The agents whose repair check passes (trace.py: the log's setup).
Repaired == Agents \ TLLogs[which].unrepaired

NoValue == "-"
Ladder == <<"none", "warned", "rate_limited", "suspended", "banned">>
LevelOf(r, q) == IF q > 0 THEN "quarantined" ELSE Ladder[r + 1]
Lvl(a) == LevelOf(rank[a], quar[a])
LvlNext(a) == LevelOf(rank'[a], quar'[a])

-----------------------------------------------------------------------------
(* The view: what of an agent the spec and the logged state both say      *)
(* (trace/sanctions.py: the same from a logged state).                    *)

AgentView(a) == [level |-> Lvl(a), rank |-> rank[a], window_count |-> WCount(a)]
SpecView == [a \in known |-> AgentView(a)]
NextExpected ==
    LET d == E.delta IN
    [y \in (DOMAIN expected \cup DOMAIN d) \ E.gone |->
        IF y \in DOMAIN d THEN d[y] ELSE expected[y]]
EventsOK == E.checkev => evs = E.events
CheckOK == now = E.now /\ SpecView = NextExpected /\ EventsOK

-----------------------------------------------------------------------------
(* Events (ostrom/protocol/sanctions.py: SanctionBook.record, _tick_agent, _change) *)

Ev(kind, a, from, to, cause) ==
    [event |-> kind, agent |-> a, from |-> from, to |-> to, cause |-> cause]
Change(a, cause) == Ev("sanction", a, Lvl(a), LvlNext(a), cause)
None_ == <<>>

\* One agent's events of a Tick whose passing repair checks are P.
TickEventsOf(a, P) ==
    CASE rank[a] = 4 -> None_
      [] quar[a] = 1 /\ a \in P -> <<Change(a, "released")>>
      [] quar[a] = 1 -> <<Ev("quarantine_renewed", a, NoValue, NoValue, NoValue)>>
      [] quar[a] > 0 -> None_
      [] rank[a] = 3 -> IF susp[a] = 1 THEN <<Change(a, "suspension_end")>> ELSE None_
      [] rank'[a] # rank[a] -> <<Change(a, "expiry")>>
      [] OTHER -> None_

\* The known agents in the reference's order (sorted ids: TLOrder).
Order == SelectSeq(TLOrder, LAMBDA a : a \in known)
\* Each agent has at most one event per Tick (TickEventsOf); no recursion, so that the
\* number of agents is not bounded by TLC's stack.
TickEvents(P) ==
    LET per == [i \in 1..Len(Order) |-> TickEventsOf(Order[i], P)]
        some == SelectSeq(per, LAMBDA s : s # None_)
    IN [i \in 1..Len(some) |-> Head(some[i])]

RecordEvents(a) ==
    IF rank[a] = 4 \/ quar[a] > 0 THEN None_
    ELSE (IF prob[a] > 0 THEN <<Ev("reclassified", a, NoValue, NoValue, NoValue)>> ELSE None_)
         \o (IF LvlNext(a) # Lvl(a)
             THEN <<Change(a, IF quar'[a] > 0 THEN "malfunction" ELSE "violation")>>
             ELSE None_)

-----------------------------------------------------------------------------
(* The steps                                                               *)

Hold == UNCHANGED <<which, cursor, expected>>
Accepted == E.code = "ok" /\ E.op \in {"record", "tick"}

\* One round of the reference's advance (SanctionBook._advance), before a record at a
\* later round or as part of a tick.
AdvStep ==
    /\ phase \in {"idle", "adv"} /\ Accepted /\ now < E.round
    /\ LET P == Due \cap Repaired
       IN /\ Tick(P)
          /\ evs' = evs \o TickEvents(P)
    /\ now' = now + 1 /\ phase' = "adv"
    /\ UNCHANGED known /\ Hold
\* The record itself, once the clock is at its round.
RecordStep ==
    /\ phase \in {"idle", "adv"} /\ E.op = "record" /\ E.code = "ok" /\ now = E.round
    /\ IF rank[E.agent] = 4
       THEN UNCHANGED svars   \* a ban is terminal: the reference records nothing
       ELSE Record(E.agent, E.kind)
    /\ evs' = evs \o RecordEvents(E.agent)
    /\ known' = known \cup {E.agent}
    /\ phase' = "check" /\ UNCHANGED now /\ Hold
\* A tick is done once the clock is at its round (it took at least one Tick).
TickDone ==
    /\ phase = "adv" /\ E.op = "tick" /\ E.code = "ok" /\ now = E.round
    /\ phase' = "check" /\ UNCHANGED <<svars, now, known, evs>> /\ Hold
\* A refusal the reference must make: nothing changes.
RefusalAllowed(e) ==
    \/ e.op = "noop"
    \/ e.op = "record" /\ e.round < now
    \/ e.op = "tick" /\ e.round <= now
RefuseStep ==
    /\ phase = "idle" /\ E.code # "ok" /\ RefusalAllowed(E)
    /\ phase' = "check" /\ UNCHANGED <<svars, now, known, evs>> /\ Hold
\* The logged state (and events) after the step are the spec's.
CheckStep ==
    /\ phase = "check" /\ CheckOK
    /\ cursor' = cursor + 1 /\ expected' = NextExpected /\ phase' = "idle" /\ evs' = None_
    /\ UNCHANGED <<svars, which, now, known>>

\* op "bad" (trace/sanctions.py: an accepted malformed command, or a logged state that
\* is not a sanctions state) has no step.
Move == E.op # "bad" /\ (AdvStep \/ RecordStep \/ TickDone \/ RefuseStep)

TraceInit ==
    /\ which \in DOMAIN TLLogs
    /\ Init
    /\ cursor = 0 /\ phase = "idle" /\ now = 0 /\ known = {}
    /\ expected = <<>> /\ evs = None_
    /\ TLCSet(which, -1)

TraceNext ==
    /\ cursor < Len(Steps)
    /\ Move \/ CheckStep

-----------------------------------------------------------------------------
(* The verdict (read by trace/sanctions.py from the PrintT lines)          *)

Why ==
    IF phase = "check"
    THEN LET SV == SpecView
             NE == NextExpected
             both == DOMAIN SV \cap DOMAIN NE
         IN [kind |-> "state", now |-> <<now, E.now>>,
             spec_only |-> DOMAIN SV \ DOMAIN NE, log_only |-> DOMAIN NE \ DOMAIN SV,
             diff |-> [x \in {y \in both : SV[y] # NE[y]} |->
                         [f \in {g \in DOMAIN SV[x] : SV[x][g] # NE[x][g]} |->
                            <<SV[x][f], NE[x][f]>>]],
             events |-> IF EventsOK THEN <<>> ELSE <<evs, E.events>>]
    ELSE [kind |-> IF E.code = "ok" THEN "command" ELSE "refusal", now |-> now]

Watch ==
    LET top == TLCGet(which) IN
    /\ IF cursor > top THEN TLCSet(which, cursor) /\ PrintT(<<"ostrom-cursor", which, cursor>>)
                       ELSE TRUE
    /\ \/ cursor < top                   \* a shallower branch: not the first failing step
       \/ cursor = Len(Steps)            \* the whole log is a behaviour of the spec
       \/ phase = "check" /\ CheckOK
       \/ phase = "adv"    \* inside a step's Ticks: a Tick, the Record or TickDone follows
       \/ phase = "idle" /\ ENABLED Move
       \/ PrintT(<<"ostrom-deadend", which, cursor, phase, Why>>)
=============================================================================
