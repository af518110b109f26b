------------------------- MODULE MCCoForgettingAlg1 -------------------------
(* TLC models of spec/CoForgettingAlg1.tla (Algorithm 1 of the Co-Forgetting *)
(* paper), N = 4, f = 1, one item. The configurations                        *)
(* models/MCCoForgettingAlg1_*.cfg pick the faults and the switches; most are *)
(* EXPECTED violations (models/manifest.json, docs/alg1.md). Agents are        *)
(* strings and no symmetry is used (TerminationProp is checked, and TLC's     *)
(* liveness checking is unsound under symmetry).                              *)
EXTENDS CoForgettingAlg1, TLC

MCAgents == {"a1", "a2", "a3", "a4"}
\* the coordinator of view 0 is a1; with ViewChange, a2 coordinates view 1
MCCoord == "a1"
MCCoord1 == "a2"
NoAgents == {}
\* a1, the coordinator, as the crashed or the Byzantine agent
CoordOnly == {"a1"}
\* a4, a backup, as the Byzantine agent
BackupOnly == {"a4"}

\* --- alg1-forged-votes only: a bound on the adversary. Without authentication a
\*     Byzantine agent can inject 24 different messages (PROPOSE to 4 recipients,
\*     PREPARE and COMMIT under 4 identities, 2 values each) and TLC cannot enumerate
\*     all their subsets at the depth of the attack. The constraint keeps the states
\*     in which at most AdversaryMessages messages are not ones an honest agent sent.
\*     For an EXPECTED violation this is sound: the counterexample TLC reports is a
\*     behaviour of the unconstrained spec (no passing model uses the constraint).
AdversaryMessages == 3
NotHonestlySent ==
    {m \in props : CoordOf(m[1]) \in Byz \/ hprop[m[1]] # m[3]}
    \cup {<<"P", m>> : m \in {x \in prepares : x[2] \in Byz \/ prepared[x[2]] # x[3]}}
    \cup {<<"C", m>> : m \in {x \in commits : x[2] \in Byz \/ x[3] \notin committed[x[2]]}}
AdversaryBudget == Cardinality(NotHonestlySent) <= AdversaryMessages
=============================================================================
