----------------------------- MODULE MCLifecycleSim -----------------------------
(* Random simulation of spec/Lifecycle.tla for the conformance vectors of source   *)
(* tlc:simulate and tlc:cover (reference/ostrom/conformance/generators/tlc_vectors.py runs    *)
(* TLC -simulate num=N -depth D -seed S on the cfg its sim_cfg generates).         *)
(*                                                                                 *)
(* SimNext is Lifecycle.tla's Next, disjunct by disjunct, with one history         *)
(* variable added: `hist` records the action just taken and its arguments, so that *)
(* a simulated behaviour can be turned into the commands an implementation         *)
(* receives (tlc_vectors.py: commands_of). Nothing else differs: the same actions, *)
(* the same constants as a model would give them. Not in models/manifest.json: it  *)
(* is not model-checked, only simulated.                                           *)
EXTENDS Lifecycle, TLC

VARIABLE hist   \* <<action name, arguments...>> of the last step

\* The transition row a cover run looks for (tlc_vectors.py runs BFS with the invariant
\* NotCovered on a small registry, for the rows random simulation leaves out):
\* TLC's shortest counterexample is the shortest behaviour taking the row.
CONSTANTS CoverEvent, CoverFrom, CoverTo
NotCovered == <<CoverEvent, CoverFrom, CoverTo>> \notin lastEvent

\* --- the registry: a tier-0 newcomer a0, a1 (tier 1, subscribes s1), a2 (tier 2),
\*     a3 (tier 3), a4 (tier 1, reputation below r_resubmit), b (tier 2, barred).
\*     Weights in units of w_min: 1 for a0, a1, a4; 2 for a2, a3, b.
\*     sim (tlc_vectors.SIM, simulated): all six; artifacts x1 by a0 and x2 by a3
\*     share slot s1, x3 by a1 has slot s2; five agents are not barred: MinActive 5
\*     lets forgetting happen.
\*     solo (tlc_vectors.SOLO, cover runs): all six, x1 alone, forget votes
\*     from a2 and a3 (retraction and what follows it).
\*     duo (tlc_vectors.DUO, cover runs): a0, a2, a3; x1 and x2 in s1, forget
\*     votes from a2 (a dispute kept while another artifact took the slot).
TierOf(A) == [a \in A |-> CASE a = "a0" -> 0 [] a \in {"a1", "a4"} -> 1
                             [] a \in {"a2", "b"} -> 2 [] a = "a3" -> 3]
WeightOf(A) == [a \in A |-> IF a \in {"a0", "a1", "a4"} THEN 1 ELSE 2]
SubscriptionsOf(A) == [a \in A |-> IF a = "a1" THEN {"s1"} ELSE {}]
SimAgents == {"a0", "a1", "a2", "a3", "a4", "b"}
SimTier == TierOf(SimAgents)
SimWeight == WeightOf(SimAgents)
SimSubscriptions == SubscriptionsOf(SimAgents)
SimProposals == {<<"a0", "x1", "s1">>, <<"a3", "x2", "s1">>, <<"a1", "x3", "s2">>}
SimForgetVotes == SimAgents \X {"x1", "x2", "x3"}
SoloProposals == {<<"a0", "x1", "s1">>}
SoloForgetVotes == {"a2", "a3"} \X {"x1"}
DuoAgents == {"a0", "a2", "a3"}
DuoTier == TierOf(DuoAgents)
DuoWeight == WeightOf(DuoAgents)
DuoSubscriptions == SubscriptionsOf(DuoAgents)
DuoProposals == {<<"a0", "x1", "s1">>, <<"a3", "x2", "s1">>}
DuoForgetVotes == {"a2"} \X {"x1", "x2"}

SimInit == Init /\ hist = <<"Init">>

\* Lifecycle.tla's Next with the history: one disjunct per disjunct of Next.
SimNext ==
    \/ Tick /\ hist' = <<"Tick">>
    \/ \E x \in Artifacts :
          \/ Recruit(x) /\ hist' = <<"Recruit", x>>
          \/ Timeout(x) /\ hist' = <<"Timeout", x>>
          \/ Forget(x) /\ hist' = <<"Forget", x>>
    \/ \E a \in Agents, x \in Artifacts :
          \/ \E s \in Slots : Propose(a, x, s) /\ hist' = <<"Propose", a, x, s>>
          \/ Resubmit(a, x) /\ hist' = <<"Resubmit", a, x>>
          \/ Object(a, x) /\ hist' = <<"Object", a, x>>
          \/ Dispute(a, x) /\ hist' = <<"Dispute", a, x>>
          \/ UrgentReport(a, x) /\ hist' = <<"UrgentReport", a, x>>
          \/ \E c \in ForgetConfidences :
                ForgetVote(a, x, c) /\ hist' = <<"ForgetVote", a, x, c>>
          \/ \E v \in Votes :
                \/ CommitVote(a, x, v) /\ hist' = <<"CommitVote", a, x, v>>
                \/ RevealVote(a, x, v) /\ hist' = <<"RevealVote", a, x, v>>
          \/ \E o \in {"accept", "reject", "revote"} :
                Arbitrate(a, x, o) /\ hist' = <<"Arbitrate", a, x, o>>

SimSpec == SimInit /\ [][SimNext]_<<vars, hist>>
=============================================================================
