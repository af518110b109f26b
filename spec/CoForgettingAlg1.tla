---------------------------- MODULE CoForgettingAlg1 ----------------------------
(***************************************************************************)
(* Algorithm 1 of the Co-Forgetting paper (arXiv 2506.17338), the "PBFT"  *)
(* consensus on forget/keep, AS WRITTEN there (docs/design.md §6,          *)
(* ALG1-FAIL-1; docs/alg1.md). It is specified so that TLC exhibits its    *)
(* failures: the models in models/MCCoForgettingAlg1_*.cfg are mostly      *)
(* EXPECTED violations, each next to a model that adds back one missing    *)
(* piece of PBFT and passes. The Python counterpart is                     *)
(* reference/ostrom/harness/alg1.py.                                     *)
(*                                                                         *)
(* MODELLED, as the paper states it (quoted by its review, which           *)
(* docs/design.md §6 summarises):                                          *)
(*  - N = 3f+1 agents decide forget/keep on one memory item (the paper    *)
(*    runs one instance per item; items are independent);                 *)
(*  - a coordinator proposes a value: PROPOSE(v) to every agent; an        *)
(*    honest agent sends PREPARE(v) for the first proposal it receives    *)
(*    (one prepare vote per item);                                         *)
(*  - line 8: "received >= 2f identical votes" -> COMMIT(v). The prepare  *)
(*    threshold is PrepareQuorum (the paper: 2f) and counts PREPAREs from *)
(*    distinct agents, the agent's own and the coordinator's included;    *)
(*  - decision: DECIDE(v) on CommitQuorum (the paper: 2f+1) identical     *)
(*    COMMITs from distinct agents. An agent decides once, and only after *)
(*    it has itself prepared and committed (the phases run in order);     *)
(*  - no pre-prepare: PROPOSE is not a vote (it does not count towards    *)
(*    the prepare threshold) and nothing binds an agent's COMMIT to the   *)
(*    value it prepared; no view change (ViewChange = FALSE); no          *)
(*    authentication (Authenticated = FALSE): a Byzantine agent may send  *)
(*    PROPOSE, PREPARE and COMMIT messages under ANY agent's identity;     *)
(*  - line 8 as an upon-rule (CommitOnce = FALSE): an agent sends COMMIT  *)
(*    for every value that reaches the prepare threshold. The review      *)
(*    quotes only the threshold; CommitOnce = TRUE is the other reading   *)
(*    (an agent commits at most once per item) and is checked as well.    *)
(*  - faults: Byz (arbitrary messages; unfair: may also stay silent) and  *)
(*    Crashed (send nothing), |Byz \cup Crashed| <= f; the coordinator    *)
(*    may be in either.                                                    *)
(*                                                                         *)
(* THE PIECES PBFT HAS AND ALGORITHM 1 LACKS, as switches, so that each   *)
(* counterexample can be shown to disappear when its piece is added back: *)
(*  - Authenticated = TRUE: a Byzantine agent sends only under its own    *)
(*    identity (and under the coordinator's only if it IS the coordinator)*)
(*  - PrepareQuorum = 2f+1: what the pre-prepare gives PBFT. In PBFT a    *)
(*    replica is prepared with the primary's pre-prepare AND 2f matching  *)
(*    prepares from backups, i.e. 2f+1 distinct replicas vouch for the    *)
(*    same value; Algorithm 1's 2f votes are 2f replicas, so two          *)
(*    conflicting values can both reach the threshold (2f+2f-(3f+1) =     *)
(*    f-1 < f+1 overlap: no honest agent in common).                      *)
(*  - CommitOnce = TRUE: the other half of the pre-prepare's binding (an  *)
(*    honest PBFT replica commits only the digest of the pre-prepare it   *)
(*    accepted for that view and sequence number).                        *)
(*  - ViewChange = TRUE: a simplified single view change (0 -> 1, new     *)
(*    coordinator Coord1; timeouts send VIEW-CHANGE with the values the   *)
(*    agent committed; Coord1 proposes after 2f+1 of them, a reported     *)
(*    value if any). It is checked only with a CRASHED coordinator and no *)
(*    Byzantine agent: it shows that the missing view change is what     *)
(*    ALG1-FAIL-1 is about, not that this view change is PBFT's (which    *)
(*    needs new-view certificates and state transfer; the PBFT spec).    *)
(*  - sequence numbers: NOT a switch. With one item per instance and      *)
(*    messages that name their item, the item id plays the role of the    *)
(*    sequence number; no counterexample here is caused by their absence. *)
(*    They matter for ordering a log, which Algorithm 1 does not attempt  *)
(*    (forget decisions on different items commute).                      *)
(*                                                                         *)
(* ABSTRACTED, and why it is sound:                                       *)
(*  - messages are grow-only sets (broadcasts are seen by every agent,    *)
(*    in any order, since an agent may act at any later time). Honest     *)
(*    rules only test monotone "at least k senders" conditions, so a      *)
(*    Byzantine agent gains nothing by sending selectively: a message in  *)
(*    the set is available to every agent, which is the strongest         *)
(*    adversary for safety. For liveness it means Byzantine messages, once*)
(*    sent, are delivered to all; the liveness failures found are real    *)
(*    nonetheless (they need no Byzantine message at all).                *)
(*  - an honest coordinator proposes either value (its own score C vs     *)
(*    theta, DistilBERT and decay, is not modelled: any value may be its  *)
(*    opinion). ValidityInv: with an honest coordinator, only its value   *)
(*    is decided.                                                          *)
(*  - the semantic score, the weighted quorum S_m >= Q and epochs are     *)
(*    outside Algorithm 1 (Lifecycle.tla has ostrom's forget quorum).     *)
(*                                                                         *)
(* NO DEADLOCK (TLC 2.15 checks deadlock and has no CHECK_DEADLOCK        *)
(* keyword): Idle, a step that changes nothing, is enabled exactly when   *)
(* no honest agent can act (everyone decided, or everyone waits for       *)
(* messages that never come, as with a silent coordinator). TLC counts    *)
(* the self-loop as a successor, so no state is a deadlock; being a       *)
(* stuttering step it is invisible to every property, and the fairness    *)
(* conditions are on honest agents' steps only.                           *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    Agents,         \* the N = 3f+1 agents
    F,              \* f, the number of faults tolerated
    Byz,            \* Byzantine agents
    Crashed,        \* crashed agents: send nothing at all
    Coord,          \* the coordinator (of view 0)
    Coord1,         \* the coordinator of view 1 (used only with ViewChange)
    Authenticated,  \* FALSE in the paper
    PrepareQuorum,  \* 2f in the paper (line 8)
    CommitQuorum,   \* 2f+1 in the paper
    CommitOnce,     \* FALSE: line 8 as an upon-rule, per value
    ViewChange      \* FALSE in the paper

Values == {"forget", "keep"}
None == "none"
Honest == Agents \ (Byz \cup Crashed)
MaxView == IF ViewChange THEN 1 ELSE 0
Views == 0..MaxView
CoordOf(w) == IF w = 0 THEN Coord ELSE Coord1

ASSUME
    /\ Cardinality(Agents) = 3 * F + 1
    /\ Byz \subseteq Agents /\ Crashed \subseteq Agents /\ Byz \cap Crashed = {}
    /\ Cardinality(Byz \cup Crashed) <= F
    /\ Coord \in Agents /\ Coord1 \in Agents
    /\ Authenticated \in BOOLEAN /\ CommitOnce \in BOOLEAN /\ ViewChange \in BOOLEAN
    /\ PrepareQuorum \in 1..Cardinality(Agents) /\ CommitQuorum \in 1..Cardinality(Agents)

VARIABLES
    props,      \* PROPOSE messages <<view, recipient, value>> (sender: CoordOf(view))
    prepares,   \* PREPARE messages <<view, sender, value>>
    commits,    \* COMMIT messages <<view, sender, value>>
    vcs,        \* VIEW-CHANGE messages <<sender, values it committed in view 0>>
    hprop,      \* hprop[w]: the value an honest coordinator proposed in view w (history)
    view,       \* view[a]
    prepared,   \* prepared[a]: the value a sent PREPARE for in its view, or None
    committed,  \* committed[a]: the values a sent COMMIT for in its view
    decided     \* decided[a]: None, or the value a decided

vars == <<props, prepares, commits, vcs, hprop, view, prepared, committed, decided>>

\* The identities a Byzantine agent can send under: without authentication, anyone's.
Identities(b) == IF Authenticated THEN {b} ELSE Agents

PrepareSenders(w, v) == {m[2] : m \in {x \in prepares : x[1] = w /\ x[3] = v}}
CommitSenders(w, v) == {m[2] : m \in {x \in commits : x[1] = w /\ x[3] = v}}
VCSenders == {m[1] : m \in vcs}
Reported == UNION {m[2] : m \in vcs}

TypeOK ==
    /\ props \subseteq Views \X Agents \X Values
    /\ prepares \subseteq Views \X Agents \X Values
    /\ commits \subseteq Views \X Agents \X Values
    /\ vcs \subseteq Agents \X SUBSET Values
    /\ hprop \in [Views -> Values \cup {None}]
    /\ view \in [Agents -> Views]
    /\ prepared \in [Agents -> Values \cup {None}]
    /\ committed \in [Agents -> SUBSET Values]
    /\ decided \in [Agents -> Values \cup {None}]

Init ==
    /\ props = {} /\ prepares = {} /\ commits = {} /\ vcs = {}
    /\ hprop = [w \in Views |-> None]
    /\ view = [a \in Agents |-> 0]
    /\ prepared = [a \in Agents |-> None]
    /\ committed = [a \in Agents |-> {}]
    /\ decided = [a \in Agents |-> None]

(* ---- honest agents ---- *)

\* The coordinator of the agent's view proposes v to every agent (itself included).
\* In view 1 (ViewChange only) it waits for 2f+1 VIEW-CHANGEs and re-proposes a
\* reported value if there is one.
Propose(a, v) ==
    LET w == view[a] IN
    /\ a = CoordOf(w) /\ hprop[w] = None
    /\ w = 1 => /\ Cardinality(VCSenders) >= CommitQuorum
                /\ Reported # {} => v \in Reported
    /\ props' = props \cup {<<w, r, v>> : r \in Agents}
    /\ hprop' = [hprop EXCEPT ![w] = v]
    /\ UNCHANGED <<prepares, commits, vcs, view, prepared, committed, decided>>

\* Prepare phase: one PREPARE vote, for the first proposal received.
Prepare(a, v) ==
    /\ prepared[a] = None
    /\ <<view[a], a, v>> \in props
    /\ prepares' = prepares \cup {<<view[a], a, v>>}
    /\ prepared' = [prepared EXCEPT ![a] = v]
    /\ UNCHANGED <<props, commits, vcs, hprop, view, committed, decided>>

\* Line 8: ">= 2f identical votes" -> COMMIT. Nothing ties v to a's own PREPARE.
Commit(a, v) ==
    /\ prepared[a] # None
    /\ v \notin committed[a]
    /\ CommitOnce => committed[a] = {}
    /\ Cardinality(PrepareSenders(view[a], v)) >= PrepareQuorum
    /\ commits' = commits \cup {<<view[a], a, v>>}
    /\ committed' = [committed EXCEPT ![a] = @ \cup {v}]
    /\ UNCHANGED <<props, prepares, vcs, hprop, view, prepared, decided>>

\* 2f+1 identical COMMITs -> decide (once).
Decide(a, v) ==
    /\ decided[a] = None
    /\ committed[a] # {}
    /\ Cardinality(CommitSenders(view[a], v)) >= CommitQuorum
    /\ decided' = [decided EXCEPT ![a] = v]
    /\ UNCHANGED <<props, prepares, commits, vcs, hprop, view, prepared, committed>>

\* ViewChange only: an undecided agent times out (asynchrony: at any time), or
\* joins once f+1 agents asked for the view change.
Timeout(a) ==
    /\ ViewChange /\ view[a] = 0
    /\ decided[a] = None \/ Cardinality(VCSenders) >= F + 1
    /\ vcs' = vcs \cup {<<a, committed[a]>>}
    /\ view' = [view EXCEPT ![a] = 1]
    /\ prepared' = [prepared EXCEPT ![a] = None]
    /\ committed' = [committed EXCEPT ![a] = {}]
    /\ UNCHANGED <<props, prepares, commits, hprop, decided>>

HonestStep(a) ==
    \/ \E v \in Values : Propose(a, v) \/ Prepare(a, v) \/ Commit(a, v) \/ Decide(a, v)
    \/ Timeout(a)

(* ---- Byzantine agents: any message, under any identity they can use ---- *)

ByzPropose(b, w, r, v) ==
    /\ CoordOf(w) \in Identities(b)
    /\ <<w, r, v>> \notin props
    /\ props' = props \cup {<<w, r, v>>}
    /\ UNCHANGED <<prepares, commits, vcs, hprop, view, prepared, committed, decided>>

ByzPrepare(b, w, s, v) ==
    /\ s \in Identities(b)
    /\ <<w, s, v>> \notin prepares
    /\ prepares' = prepares \cup {<<w, s, v>>}
    /\ UNCHANGED <<props, commits, vcs, hprop, view, prepared, committed, decided>>

ByzCommit(b, w, s, v) ==
    /\ s \in Identities(b)
    /\ <<w, s, v>> \notin commits
    /\ commits' = commits \cup {<<w, s, v>>}
    /\ UNCHANGED <<props, prepares, vcs, hprop, view, prepared, committed, decided>>

ByzViewChange(b, s, R) ==
    /\ ViewChange /\ s \in Identities(b)
    /\ <<s, R>> \notin vcs
    /\ vcs' = vcs \cup {<<s, R>>}
    /\ UNCHANGED <<props, prepares, commits, hprop, view, prepared, committed, decided>>

ByzStep(b) ==
    \/ \E w \in Views, r \in Agents, v \in Values :
          ByzPropose(b, w, r, v) \/ ByzPrepare(b, w, r, v) \/ ByzCommit(b, w, r, v)
    \/ \E s \in Agents, R \in SUBSET Values : ByzViewChange(b, s, R)

\* A step that changes nothing, enabled when no honest agent can act (see header).
Idle ==
    /\ ~\E a \in Honest : ENABLED HonestStep(a)
    /\ UNCHANGED vars

Next ==
    \/ \E a \in Honest : HonestStep(a)
    \/ \E b \in Byz : ByzStep(b)
    \/ Idle

\* Fairness of honest agents (with grow-only message sets this is also eventual
\* delivery: a message, once sent, stays available). Byzantine agents: none.
Fairness == \A a \in Honest : WF_vars(HonestStep(a))

Spec == Init /\ [][Next]_vars /\ Fairness

(* ---- properties ---- *)

\* No two honest agents decide differently.
AgreementInv ==
    \A a, b \in Honest : decided[a] # None /\ decided[b] # None => decided[a] = decided[b]

\* With honest (or crashed) coordinators, an honest agent decides only a value an
\* honest coordinator proposed.
ValidityInv ==
    (\A w \in Views : CoordOf(w) \notin Byz) =>
        \A a \in Honest : decided[a] \in {None} \cup {hprop[w] : w \in Views}

\* ALG1-FAIL-1: every honest agent eventually decides.
TerminationProp == <>(\A a \in Honest : decided[a] # None)

=============================================================================
