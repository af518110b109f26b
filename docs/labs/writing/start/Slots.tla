------------------------------- MODULE Slots -------------------------------
(* Items are proposed into slots (a slot: one question the knowledge base      *)
(* answers) and then activated.  A slot holds at most one active item:         *)
(* activating an item supersedes the item that was active in its slot.         *)
EXTENDS Naturals

CONSTANTS I,   \* how many items
          S    \* how many slots
ASSUME I >= 1 /\ S >= 1

Items == 1 .. I
Slots == 1 .. S

VARIABLES slot,   \* slot[i]: the slot item i was proposed into (0: not yet)
          st      \* st[i]: "new", "proposed", "active" or "superseded"
vars == <<slot, st>>

Init == slot = [i \in Items |-> 0] /\ st = [i \in Items |-> "new"]

\* An item is proposed into a slot, any slot.
Propose(i, s) == /\ st[i] = "new"
                 /\ slot' = [slot EXCEPT ![i] = s]
                 /\ st' = [st EXCEPT ![i] = "proposed"]

\* The items active in slot s.
ActiveIn(s) == {i \in Items : st[i] = "active" /\ slot[i] = s}

\* A proposed item becomes active and supersedes the active item of its slot.
Activate(i) == /\ st[i] = "proposed"
               /\ st' = [j \in Items |-> IF j = i THEN "active"
                                         \* (1) this line is wrong: repair it
                                         ELSE IF st[j] = "active" THEN "superseded"
                                         ELSE st[j]]
               /\ UNCHANGED slot

\* All is settled: a step that changes nothing, so TLC does not call the end a deadlock.
Done == /\ \A i \in Items : st[i] \in {"active", "superseded"}
        /\ UNCHANGED vars

Next == Done \/ \E i \in Items : Activate(i) \/ \E s \in Slots : Propose(i, s)
Spec == Init /\ [][Next]_vars

\* A superseded item was replaced: its slot has an active item.
ReplacedInv == \A i \in Items : st[i] = "superseded" => ActiveIn(slot[i]) # {}
\* (2) write OneActivePerSlotInv: at most one active item per slot
=============================================================================
