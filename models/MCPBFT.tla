-------------------------------- MODULE MCPBFT --------------------------------
(* TLC models of spec/PBFT.tla. The configurations models/MCPBFT_*.cfg set the *)
(* constants. Replicas are the integers 0..N-1 because Primary(v) = v % N, so    *)
(* they are not a symmetry set; the requests are model values and are one       *)
(* (RequestSymmetry). The null request is the string "null".                    *)
EXTENDS PBFT, PBFTWitnesses, TLC

\* The client requests are model values, so that they can be a symmetry set.
CONSTANTS r1, r2, r3

\* --- ci: two requests r1, r2 sent in this order.
CIRequests == <<r1, r2>>
\* --- one request (the Byzantine-primary model pbft-ci-byz-primary-one).
OneRequest == <<r1>>
\* (its view-0 primary is honest: no Byzantine view-0 pre-prepares)
NoByzPrePrepares == {{}}
\* The Byzantine primary of view 0 equivocates at sequence number 1 (r1 to some
\* backups, r2 to others) and proposes nothing at 2.
CIByzPrePrepares == {{[v |-> 0, n |-> 1, r |-> r1], [v |-> 0, n |-> 1, r |-> r2]}}
\* every set of view-0 pre-prepares
AnyByzPrePrepares == SUBSET [v : {0}, n : 1..MaxSeq, r : Requests]
\* --- deep: three requests.
DeepRequests == <<r1, r2, r3>>

\* Requests are interchangeable: nothing in PBFT.tla depends on which request is
\* which (the order of ClientRequests is not read; CHOOSE over requests happens
\* only in states that already violate AgreementInv), and the workloads above are
\* closed under swapping them. Sound for the invariants checked (all of them are
\* symmetric in the requests); not used for temporal properties.
RequestSymmetry == Permutations(Requests)

\* The state TLC fingerprints (VIEW PBFTView in the CI configurations): a
\* quotient that merges states no behaviour and no checked property can tell
\* apart, so checking the quotient is checking the spec.
\*  - NEW-VIEWs without V: V is read only by ValidNewView, which is TRUE for every
\*    NEW-VIEW the spec can send (SendNewView and ByzNewView compute O with
\*    ComputeO from VIEW-CHANGEs that exist, and vc, byzvc and CertSet only grow);
\*  - VIEW-CHANGEs for a view w whose honest primary has sent its NEW-VIEW for w
\*    or left w, without P: after that, P is read by nothing (only the primary of
\*    w reads P, in SendNewView, once per view; counting reads v and src).
\* Not used with the mutants below: a mutant may make ValidNewView false.
SentNewView(w) ==
    /\ Primary(w) \in Honest
    /\ \/ view[Primary(w)] > w
       \/ view[Primary(w)] = w /\ status[Primary(w)] = "normal"
PBFTView ==
    <<view, status, pp, prep, com,
      {IF SentNewView(m.v) THEN [v |-> m.v, src |-> m.src, P |-> {}] ELSE m : m \in vc},
      byzvc,
      {[v |-> m.v, O |-> m.O] : m \in nv}>>

\* --- mutants: each replaces one operator of spec/PBFT.tla (the model's config
\*     substitutes it, `Op <- MutOp`; models/manifest.json lists them and
\*     reference/ostrom/conformance/mutants/registry.py names each mutant). PBFTView
\*     is not used with them: a mutant may make ValidNewView false.
\* pbft-prepared-one-short (BFT-SAFE-1): prepared with one prepare fewer (2f-1)
MutPrepareQuorum == 2 * F - 1
\* pbft-commit-quorum-2f (BFT-SAFE-1): committed-local with 2f commits
MutCommitQuorum == 2 * F
\* pbft-new-primary-ignores-certificates (BFT-SAFE-1): O ignores the prepared
\* certificates: the null request everywhere
MutPickCert(certs, n) == Null
\* pbft-skip-gaps (BFT-SAFE-2): execute every committed request in sequence order,
\* not waiting for the gaps below it to be committed
MutExecutedLog(D) ==
    LET ns == {m.n : m \in D}
        nth(k) == CHOOSE x \in ns : Cardinality({y \in ns : y <= x}) = k
    IN  [k \in 1..Cardinality(ns) |-> (CHOOSE m \in D : m.n = nth(k)).r]
\* pbft-no-view-change (BFT-LIVE-1): replicas never start a view change
MutTimersFire == FALSE

\* The reachability witnesses are in models/PBFTWitnesses.tla (MCPBFTRefinement checks
\* them on its mapped state too).

\* --- one reachability witness per action of Next (each must be VIOLATED) -------
\* NeverStep<A>Step is violated exactly by a step of action A of spec/PBFT.tla
\* (property_tests/verify/test_action_witnesses.py: every action has one in a model that
\* make test or the suite's CI gate runs).
NeverStepHonestStepStep == ~HonestStep
NeverStepTimeoutStep == ~\E i \in Honest : Timeout(i)
NeverStepByzStepStep == ~ByzStep
\* the clients wait (a stuttering step)
NeverStepIdleStep == ~Idle
=============================================================================
