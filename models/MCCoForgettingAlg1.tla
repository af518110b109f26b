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

\* --- reachability witnesses (docs/design.md §7) ----------------------------------
\* Invariants TLC must report VIOLATED: a passing model whose witnesses all held would
\* be vacuous. Model checks, not protocol: they live here, not in spec/CoForgettingAlg1.tla.

\* some honest agent decides
NeverDecidedInv == \A a \in Honest : decided[a] = None
\* every honest agent decides
NeverAllDecidedInv == ~\A a \in Honest : decided[a] # None
\* a Byzantine agent's vote is sent (the adversary is exercised)
NeverByzVoteInv == \A m \in prepares \cup commits : m[2] \notin Byz
\* two honest agents prepared different values (the coordinator equivocated to them)
NeverConflictingPreparesInv == \A a, b \in Honest : prepared[a] = None \/ prepared[b] = None \/ prepared[a] = prepared[b]
\* both values reached the prepare threshold (2f lets conflicting values "prepare")
NeverBothPreparedInv == ~\A v \in Values : Cardinality(PrepareSenders(0, v)) >= PrepareQuorum
\* honest agents committed different values (split commit: the seed of the stall)
NeverSplitCommitInv == ~\E a, b \in Honest : committed[a] # {} /\ committed[b] # {} /\ committed[a] # committed[b]
\* an agent moved to view 1
NeverViewChangedInv == \A a \in Agents : view[a] = 0
\* an agent decided in view 1 (the new coordinator's proposal)
NeverDecidedInView1Inv == \A a \in Honest : decided[a] = None \/ view[a] = 0

=============================================================================
