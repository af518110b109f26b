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
=============================================================================
