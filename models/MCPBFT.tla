-------------------------------- MODULE MCPBFT --------------------------------
(* TLC models of spec/PBFT.tla. The configurations models/MCPBFT_*.cfg set the *)
(* constants; replicas are the integers 0..N-1 because Primary(v) = v % N, so no *)
(* symmetry set is used (and LivenessInv reads ENABLED, which is fine without   *)
(* symmetry). Requests are strings, the null request is "null".               *)
EXTENDS PBFT, TLC

\* --- ci: two requests r1, r2 sent in this order.
CIRequests == <<"r1", "r2">>
\* The Byzantine primary of view 0 equivocates at sequence number 1 (r1 to some
\* backups, r2 to others) and proposes nothing at 2.
CIByzPrePrepares == {{[v |-> 0, n |-> 1, r |-> "r1"], [v |-> 0, n |-> 1, r |-> "r2"]}}
\* every set of view-0 pre-prepares
AnyByzPrePrepares == SUBSET [v : {0}, n : 1..MaxSeq, r : Requests]
\* --- deep: three requests.
DeepRequests == <<"r1", "r2", "r3">>

=============================================================================
