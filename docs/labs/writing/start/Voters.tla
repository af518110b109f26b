------------------------------ MODULE Voters ------------------------------
(* Commit-reveal voting: each voter commits to a vote, the commit phase closes,  *)
(* then each reveals.  A commitment stands for a hash of vote and secret salt.   *)
EXTENDS Integers

CONSTANTS N,   \* how many voters
          M    \* how many values a vote may take: 0 .. M-1
ASSUME N >= 1 /\ M >= 1

Voters == 1 .. N
Values == 0 .. (M - 1)
None == -1     \* "nothing yet": a number that is no vote

VARIABLES phase,   \* "commit", then "reveal" once the commit phase has closed
          commit,  \* commit[v]: the vote v committed to, or None
          reveal,  \* reveal[v]: the vote v revealed, or None
          seen     \* seen[v]: whose reveals v could read when it committed (history)
vars == <<phase, commit, reveal, seen>>

Init == /\ phase = "commit"
        /\ commit = [v \in Voters |-> None]
        /\ reveal = [v \in Voters |-> None]
        /\ seen = [v \in Voters |-> {}]

\* A voter commits once, while the commit phase is open.
Commit(v, x) == /\ phase = "commit" /\ commit[v] = None
                /\ commit' = [commit EXCEPT ![v] = x]
                /\ seen' = [seen EXCEPT ![v] = {w \in Voters : reveal[w] # None}]
                /\ UNCHANGED <<phase, reveal>>

\* The deadline: the commit phase closes; whoever has not committed does not vote.
Close == phase = "commit" /\ phase' = "reveal" /\ UNCHANGED <<commit, reveal, seen>>

\* A voter that committed reveals its vote, once, after the commit phase.
Reveal(v, x) == /\ phase = "reveal" /\ commit[v] # None /\ reveal[v] = None
                \* (1) write here what the revealed vote must be
                /\ reveal' = [reveal EXCEPT ![v] = x]
                /\ UNCHANGED <<phase, commit, seen>>

\* Voting is over: a step that changes nothing, so TLC does not call the end a deadlock.
Done == /\ phase = "reveal" /\ UNCHANGED vars
        /\ \A v \in Voters : commit[v] # None => reveal[v] # None
Next == Close \/ Done \/ \E v \in Voters, x \in Values : Commit(v, x) \/ Reveal(v, x)
Spec == Init /\ [][Next]_vars

\* Binding: a revealed vote is the committed one.
BindingInv == \A v \in Voters : reveal[v] # None => reveal[v] = commit[v]
\* (2) write BlindCommitInv: no voter committed after reading someone's reveal
=============================================================================
