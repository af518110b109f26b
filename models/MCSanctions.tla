------------------------------ MODULE MCSanctions ------------------------------
(* TLC models of spec/Sanctions.tla. The configurations models/MCSanctions_*.cfg *)
(* pick the definitions below by substitution (CONST <- Def).                   *)
(* Agents are strings and no symmetry is used: QuarantineEndsProp is checked,   *)
(* and TLC's liveness checking is unsound under symmetry (../shared/TOOL-NOTES). *)
EXTENDS Sanctions

\* --- ci: one agent (agents are independent: one covers every per-agent behaviour),
\*     one kind of each (weight, class): a malfunction kind of weight 1, a strategic kind
\*     of weight 1, and the unfounded urgent report of weight UrgentPenalty.
CIAgents == {"a1"}
CIKinds == {"malformed", "non_reveal", "unfounded_urgent"}

\* --- two agents: the same kinds, interleaved (one tick is shared).
DuoAgents == {"a1", "a2"}
=============================================================================
