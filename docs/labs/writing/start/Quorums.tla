------------------------------ MODULE Quorums ------------------------------
(* N replicas vote on a value, 0 or 1; F of them are faulty (Byzantine): they   *)
(* may vote for both.  A value is decided once a quorum of replicas voted for   *)
(* it.  Two quorums must share an honest replica, or two values get decided.   *)
EXTENDS Naturals, FiniteSets

CONSTANTS N,   \* how many replicas
          F    \* how many of them are faulty
ASSUME F >= 0 /\ N >= 3 * F + 1   \* fewer than a third faulty: the bound of BFT

Replicas == 1 .. N
Values == {0, 1}
QuorumSize == N - F   \* wait for all but the F that may stay silent
Quorums == {Q \in SUBSET Replicas : Cardinality(Q) = QuorumSize}

VARIABLES faulty,  \* the faulty replicas: any F of them, fixed at the start
          votes    \* votes[r]: the values replica r voted for
vars == <<faulty, votes>>

Init == /\ faulty \in {B \in SUBSET Replicas : Cardinality(B) = F}
        /\ votes = [r \in Replicas |-> {}]

\* An honest replica votes once.
Vote(r, x) == /\ r \notin faulty
              \* (1) write here what makes it vote once
              /\ votes' = [votes EXCEPT ![r] = @ \cup {x}] /\ UNCHANGED faulty

\* A faulty replica votes for any value, as often as it likes.
Equivocate(r, x) == /\ r \in faulty
                    /\ votes' = [votes EXCEPT ![r] = @ \cup {x}] /\ UNCHANGED faulty

\* Voting is over: a step that changes nothing, so TLC does not call the end a deadlock.
Done == /\ \A r \in Replicas \ faulty : votes[r] # {}
        /\ UNCHANGED vars

Next == Done \/ \E r \in Replicas, x \in Values : Vote(r, x) \/ Equivocate(r, x)
Spec == Init /\ [][Next]_vars

\* x is decided: every replica of some quorum voted for it.
Decided(x) == \E Q \in Quorums : \A r \in Q : x \in votes[r]

\* Agreement: no two values are decided.
AgreementInv == \A x, y \in Values : Decided(x) /\ Decided(y) => x = y
\* (2) write QuorumIntersectionInv: any two quorums share a replica that is not faulty
=============================================================================
