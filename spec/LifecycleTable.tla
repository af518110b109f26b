---------------------------- MODULE LifecycleTable ----------------------------
(* Generated from reference/ostrom/protocol/lifecycle.py (TRANSITIONS, EVENTS)   *)
(* by `ostrom docs` (make generate); property_tests/codegen/test_generated.py    *)
(* checks that this file is current. Lifecycle.tla's TableInv requires every     *)
(* step TLC takes to be one of these rows; the cross-check test requires every   *)
(* row be reached.                                                               *)
TableRows == {
    <<"propose", "new", "proposed">>,
    <<"resubmit", "rejected", "proposed">>,
    <<"resubmit", "expired", "proposed">>,
    <<"resubmit", "retracted", "proposed">>,
    <<"recruit", "proposed", "fast_track">>,
    <<"recruit", "proposed", "deliberation">>,
    <<"object", "fast_track", "deliberation">>,
    <<"timeout", "fast_track", "active">>,
    <<"timeout", "deliberation", "commit">>,
    <<"commit_vote", "commit", "commit">>,
    <<"timeout", "commit", "reveal">>,
    <<"reveal_vote", "reveal", "reveal">>,
    <<"timeout", "reveal", "active">>,
    <<"timeout", "reveal", "rejected">>,
    <<"timeout", "reveal", "arbitration">>,
    <<"timeout", "reveal", "commit">>,
    <<"timeout", "reveal", "expired">>,
    <<"arbitrate", "arbitration", "active">>,
    <<"arbitrate", "arbitration", "rejected">>,
    <<"arbitrate", "arbitration", "commit">>,
    <<"timeout", "arbitration", "rejected">>,
    <<"dispute", "active", "disputed">>,
    <<"urgent_report", "active", "disputed">>,
    <<"commit_vote", "disputed", "disputed">>,
    <<"reveal_vote", "disputed", "disputed">>,
    <<"timeout", "disputed", "disputed">>,
    <<"timeout", "disputed", "retracted">>,
    <<"timeout", "disputed", "active">>,
    <<"timeout", "disputed", "superseded">>,
    <<"supersede", "active", "superseded">>,
    <<"forget_vote", "active", "active">>,
    <<"forget_vote", "disputed", "disputed">>,
    <<"forget_vote", "superseded", "superseded">>,
    <<"forget_vote", "rejected", "rejected">>,
    <<"forget_vote", "expired", "expired">>,
    <<"forget_vote", "retracted", "retracted">>,
    <<"forget", "active", "forgotten">>,
    <<"forget", "superseded", "forgotten">>,
    <<"forget", "rejected", "forgotten">>,
    <<"forget", "expired", "forgotten">>,
    <<"forget", "retracted", "forgotten">>
}
(* The spec action of each command whose step is one action (EVENTS: action,    *)
(* command). LifecycleTrace.tla's Act takes it; a test checks Act against it.    *)
CommandAction == [
    propose |-> "Propose",
    resubmit |-> "Resubmit",
    recruit |-> "Recruit",
    object |-> "Object",
    commit_vote |-> "CommitVote",
    reveal_vote |-> "RevealVote",
    arbitrate |-> "Arbitrate",
    dispute |-> "Dispute",
    urgent_report |-> "UrgentReport",
    forget_vote |-> "ForgetVote"
]
(* The commands an agent sends (EVENTS: actor "agent").                         *)
AgentCommands == {"propose", "resubmit", "object", "commit_vote", "reveal_vote", "arbitrate", "dispute", "urgent_report", "forget_vote"}
================================================================================
