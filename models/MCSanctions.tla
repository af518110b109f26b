------------------------------ MODULE MCSanctions ------------------------------
(* TLC models of spec/Sanctions.tla. The configurations models/MCSanctions_*.cfg *)
(* pick the definitions below by substitution (CONST <- Def).                   *)
(* Agents are strings and no symmetry is used: QuarantineEndsProp is checked,   *)
(* and TLC's liveness checking is unsound under symmetry (docs/design.md §12).   *)
EXTENDS Sanctions

\* --- ci: one agent (agents are independent: one covers every per-agent behaviour),
\*     one kind of each (weight, class): a malfunction kind of weight 1, a strategic kind
\*     of weight 1, and the unfounded urgent report of weight UrgentPenalty.
CIAgents == {"a1"}
CIKinds == {"malformed", "non_reveal", "unfounded_urgent"}

\* --- two agents: the same kinds, interleaved (one tick is shared).
DuoAgents == {"a1", "a2"}
\* --- mutants: each replaces one operator of spec/Sanctions.tla (the model's config
\*     substitutes it, `Op <- MutOp`; models/manifest.json lists them and
\*     reference/ostrom/conformance/mutants/registry.py names each mutant).
\* sanctions-quarantine-escalates (SAN-1): a quarantined agent goes up the ladder
MutLoggedOnly(a) == FALSE
\* sanctions-window-off-by-one (SAN-2): violations leave the log one round late
MutKeep == W + 1
\* sanctions-never-released (SAN-1): a passed repair check starts another period anyway
MutReleases(P, a) == FALSE

\* --- reachability witnesses (docs/design.md §7) ----------------------------------
\* Invariants TLC must report VIOLATED: a passing model whose witnesses all held would
\* be vacuous. Model checks, not protocol: they live here, not in spec/Sanctions.tla.

NeverWarnedInv == \A a \in Agents : rank[a] # 1
NeverRateLimitedInv == \A a \in Agents : rank[a] # 2
NeverSuspendedInv == \A a \in Agents : rank[a] # 3
NeverBannedInv == \A a \in Agents : rank[a] # 4
NeverQuarantinedInv == \A a \in Agents : quar[a] = 0
NeverRenewedInv == ~(last = Tick_ /\ \E a \in Agents : quar[a] = TQuar)
NeverReleasedInv == \A a \in Agents : prob[a] = 0
NeverReclassifiedInv == \A a \in Agents : ~strategic[a]
\* a reclassified agent goes up the ladder
NeverReclassifiedRiseInv == \A a \in Agents : ~(strategic[a] /\ a \in risen)
\* a Record in quarantine, after the round that started it, where the window gives more
\* than the rank: SAN-1 held a rise back (requires TQuar >= 2)
NeverQuarantineHeldInv ==
    ~(last \in Agents /\ quar[last] \in 1..(TQuar - 1) /\ WRank(last) > rank[last])
\* a suspension ends while the window still gives sigma3: the level is capped at sigma2
NeverCappedInv == \A a \in Agents : ~(rank[a] = 2 /\ quar[a] = 0 /\ WRank(a) >= 3)

\* Step witnesses (actions; verify/tlc/witnesses.py): one violation of each class from a
\* clean record, with its outcome restated from docs/rules.md and this model's constants
\* (sigma1 = 1, sigma2 = UrgentPenalty = 2), not from KindWeight or Add, so that a weight
\* or a class that is wrong in the spec loses the witness.
Clean(a) == rank[a] = 0 /\ quar[a] = 0 /\ prob[a] = 0 /\ ~strategic[a]
                       /\ \A i \in Ages : hist[a][i] = Empty
\* a strategic violation of weight 1 warns (sigma1)
NeverStrategicWarnsStep ==
    ~\E a \in Agents : Clean(a) /\ Record(a, "non_reveal") /\ rank'[a] = 1 /\ quar'[a] = 0
\* an unfounded urgent report weighs UrgentPenalty = 2: rate-limited at once (sigma2)
NeverUrgentRateLimitsStep ==
    ~\E a \in Agents : Clean(a) /\ Record(a, "unfounded_urgent") /\ rank'[a] = 2
\* a malfunction looks broken (all of the agent's violations are malfunctions): it is
\* quarantined instead of warned
NeverMalfunctionQuarantinesStep ==
    ~\E a \in Agents : Clean(a) /\ Record(a, "malformed") /\ rank'[a] = 0 /\ quar'[a] > 0
\* a probation after a release runs out (W ticks)
NeverProbationEndsStep ==
    ~\E a \in Agents : last' = Tick_ /\ prob[a] = 1 /\ prob'[a] = 0

\* --- one reachability witness per action of Next (each must be VIOLATED) -------
\* NeverStep<A>Step is violated exactly by a step of action A of spec/Sanctions.tla
\* (property_tests/verify/test_action_witnesses.py: every action has one in a model that
\* make test or the suite's CI gate runs).
NeverStepTickAnyStep == ~TickAny
NeverStepRecordStep == ~\E a \in Agents, k \in Kinds : Record(a, k)
=============================================================================
