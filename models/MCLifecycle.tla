------------------------------ MODULE MCLifecycle ------------------------------
(* TLC models of spec/Lifecycle.tla. The configurations models/MCLifecycle_*.cfg *)
(* pick one of the registries below (ci, deep) by substitution (CONST <- Def).  *)
(* Agents are strings: no symmetry is used (SettlesProp is checked, and TLC's  *)
(* liveness checking is unsound under symmetry).                               *)
EXTENDS Lifecycle, LifecycleTable, TLC

\* --- ci: a tier-0 newcomer, one agent of each tier 1..3, one barred tier-2 agent;
\*     two artifacts, one slot.
CIAgents == {"a0", "a1", "a2", "a3", "b"}
CITier == [a \in CIAgents |-> CASE a = "a0" -> 0 [] a = "a1" -> 1 [] a = "a2" -> 2
                                [] a = "a3" -> 3 [] a = "b" -> 2]
CIWeight == [a \in CIAgents |-> IF a = "a0" THEN 1 ELSE 2]
CIBarred == {"b"}
CISubscriptions == [a \in CIAgents |-> IF a = "a1" THEN {"s1"} ELSE {}]
\* the newcomer's reputation is below r_resubmit; the tier-3 agent's is not
CIRepOK == {"a1", "a2", "a3"}
CIArtifacts == {"x1", "x2"}
CISlots == {"s1"}
\* workload: x1 is the newcomer's proposal (formal review), x2 the tier-3
\* agent's (fast track while the slot is free, formal review otherwise); forget
\* votes on x1 come from the tier-2 and tier-3 agents (together 4 >= alpha * 7).
CIProposals == {<<"a0", "x1", "s1">>, <<"a3", "x2", "s1">>}
CIForgetVotes == {<<"a2", "x1">>, <<"a3", "x1">>}

\* --- ci-solo: the newcomer's artifact alone, with resubmission (the newcomer's
\*     reputation reaches r_resubmit here) and forget votes: covers the rows the
\*     two-artifact model leaves out to stay small (resubmit from retracted).
CISoloArtifacts == {"x1"}
CISoloRepOK == {"a0", "a1", "a2", "a3"}
CISoloProposals == {<<"a0", "x1", "s1">>}

\* --- deep: the ci registry and proposals, but both artifacts fully featured:
\*     every non-barred agent's reputation reaches r_resubmit (both resubmit) and
\*     both receive forget votes from the tier-2 and tier-3 agents.
DeepRepOK == {"a0", "a1", "a2", "a3"}
DeepForgetVotes == {"a2", "a3"} \X CIArtifacts
\* --- cross-check with the Python transition table (property_tests/test_models.py):
\*     RecordRows, an ACTION_CONSTRAINT that is always TRUE, prints each
\*     <<event, source, dest>> row the first time TLC takes it. TLC's registers
\*     belong to a worker, so the models that use it pin one worker (with more, a
\*     row may print once per worker: harmless, the test takes the union).
MCInit == Init /\ TLCSet(1, {})
MCSpec == MCInit /\ [][Next]_vars /\ Fairness
RecordRows ==
    \A t \in lastEvent' :
        \/ t \in TLCGet(1)
        \/ PrintT(<<"ROW", t>>) /\ TLCSet(1, TLCGet(1) \cup {t})

=============================================================================
