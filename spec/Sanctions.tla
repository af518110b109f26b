------------------------------- MODULE Sanctions -------------------------------
(***************************************************************************)
(* Graduated sanctions and broken-agent quarantine of ostrom               *)
(* (docs/design.md §4, docs/sanctions.md; reference:                       *)
(* reference/ostrom/protocol/sanctions.py).                                *)
(*                                                                         *)
(* MODELLED, as reference/ostrom/protocol/sanctions.py states them:        *)
(*  - violations of any agent at any round (Record), each of a kind with a *)
(*    weight (1; UrgentPenalty for an unfounded urgent report), counted in *)
(*    a sliding window of W rounds;                                        *)
(*  - the ladder: rank 0..4 is sigma0..sigma4, reached at Sigma1..Sigma4   *)
(*    weighted violations in the window; a level rises only at a Record    *)
(*    (to what the window gives); a Tick only lowers it (expiry) or ends a *)
(*    suspension; sigma3 suspends for exactly TSusp ticks, after which the *)
(*    level is the window's, capped at sigma2 (a suspension is not served  *)
(*    twice for the same violations); sigma4 bans, for ever;               *)
(*  - the classifier (Broken): malformed messages and invalid reveals are  *)
(*    a strict majority, by number, of the in-window violations. It is     *)
(*    consulted only when a Record would raise the rank of an agent below  *)
(*    sigma3 that is not marked strategic: then the agent is quarantined   *)
(*    for TQuar ticks instead and its rank stays;                          *)
(*  - quarantine: violations are logged but never raise the rank (SAN-1);  *)
(*    at the end of each period the repair check passes (release: window   *)
(*    emptied, rank 0, probation for W ticks) or fails (another period);   *)
(*    the check's outcome is the environment's choice, with the fairness   *)
(*    assumption that a check tried again and again eventually passes;     *)
(*  - reclassification: a violation on probation marks the agent           *)
(*    strategic for good (never quarantined again) and goes up the ladder. *)
(*                                                                         *)
(* ABSTRACTED, and why it is sound:                                        *)
(*  - time: the log keeps the *age* of each violation (rounds since it was *)
(*    recorded) instead of its round, and suspension, quarantine and       *)
(*    probation are countdowns instead of deadlines. The state space is    *)
(*    then finite without bounding the number of rounds: behaviours are    *)
(*    unbounded in time (QuarantineEndsProp needs that), and the reference *)
(*    compares the same quantities (now - r < W is age < W; until - now is *)
(*    the countdown).                                                      *)
(*  - the log of an agent keeps, per age, the weighted count, the number   *)
(*    and the number of malfunction kinds of that round's violations: all  *)
(*    the rules read of a violation is its weight, class and round.        *)
(*  - workload: at most MaxPerRound violations per agent per round (the    *)
(*    environment's choice; the rules do not depend on it), and Kinds, the *)
(*    kinds a model lets agents commit, may be a subset of AllKinds: the   *)
(*    rules see a kind only through its weight and whether it is a         *)
(*    malfunction kind, so one kind per (weight, class) covers the rest.   *)
(*  - the repair check is a nondeterministic choice at the end of each     *)
(*    quarantine period (Tick(P): P are the due agents that pass), which   *)
(*    covers every deterministic check the reference may be given.         *)
(*  - agents are independent: no rule reads another agent's state; only    *)
(*    Tick is shared. Models with one agent cover every per-agent          *)
(*    behaviour; more agents add interleavings.                            *)
(*  - the reference's tick to a later round is a sequence of Ticks; its    *)
(*    record at a later round is those Ticks followed by a Record.         *)
(*  - history variables, for the invariants only: last (who acted in the   *)
(*    last step: an agent's Record, or "tick") and risen (the agents whose *)
(*    rank rose in the last step, computed generically in Next from rank   *)
(*    and rank'). An invariant over them, checked in every reachable       *)
(*    state, covers every step ever taken.                                 *)
(*                                                                         *)
(* CHOICES (docs/sanctions.md says why):                                   *)
(*  - the classifier counts by number and is not consulted for suspended,  *)
(*    banned or strategic agents; violations in quarantine are logged;     *)
(*    release is a clean slate with probation; reclassification is for     *)
(*    good; a banned agent's violations are not logged.                    *)
(*                                                                         *)
(* SPEC AND CODE: property_tests/protocol/test_sanctions.py::test_spec_and_code_    *)
(* agree requires TLC's state graph of sanctions-ci, projected to the      *)
(* per-agent variables, to equal the graph the reference reaches.          *)
(*                                                                         *)
(* MUTANTS are not in this module: a mutant model replaces one of its    *)
(* operators by a broken one of models/MCSanctions.tla (`Op <- MutOp`,     *)
(* models/manifest.json, docs/checking.md).                                *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    Agents,          \* agent ids
    Kinds,           \* the violation kinds the model's agents commit (SUBSET AllKinds)
    W,               \* the window, in rounds (sanction_window)
    Sigma1, Sigma2, Sigma3, Sigma4,  \* weighted violations for sigma1..sigma4
    UrgentPenalty,   \* weight of an unfounded urgent report (integer here)
    TSusp,           \* suspension length, rounds
    TQuar,           \* quarantine period, rounds
    MaxPerRound      \* workload: violations per agent per round, at most

AllKinds == {"invalid_reveal", "non_reveal", "rate_limit", "frivolous_dispute",
             "unfounded_urgent", "malformed"}
MalfunctionKinds == {"malformed", "invalid_reveal"}

ASSUME /\ Kinds \subseteq AllKinds /\ Kinds # {}
       /\ W \in Nat \ {0}
       /\ Sigma1 \in Nat \ {0} /\ Sigma1 < Sigma2 /\ Sigma2 < Sigma3 /\ Sigma3 < Sigma4
       /\ UrgentPenalty \in Nat \ {0}
       /\ TSusp \in Nat \ {0} /\ TQuar \in Nat \ {0}
       /\ MaxPerRound \in Nat \ {0}

Tick_ == "tick"
ASSUME Tick_ \notin Agents

\* The log keeps the ages 0..Keep-1; a violation leaves it when its age reaches Keep.
Keep == W
Ages == 0..(Keep - 1)

VARIABLES
    hist,       \* [Agents -> [Ages -> [w, n, m]]]: the log, by age (see Empty)
    rank,       \* [Agents -> 0..4]: sigma0..sigma4
    susp,       \* [Agents -> 0..TSusp]: ticks left of the suspension (0: none)
    quar,       \* [Agents -> 0..TQuar]: ticks left to the repair check (0: not quarantined)
    prob,       \* [Agents -> 0..W]: ticks left of the probation after a release
    strategic,  \* [Agents -> BOOLEAN]: reclassified, never quarantined again
    last,       \* history: the agent whose Record was the last step, or "tick"
    risen       \* history: the agents whose rank rose in the last step

vars == <<hist, rank, susp, quar, prob, strategic, last, risen>>

-----------------------------------------------------------------------------
(* Helpers                                                                 *)

Min(a, b) == IF a <= b THEN a ELSE b

KindWeight(k) == IF k = "unfounded_urgent" THEN UrgentPenalty ELSE 1

\* One round of an agent's log: the weighted count w, the number n and the number m of
\* malfunction kinds among its violations (all the rules read of a round).
Empty == [w |-> 0, n |-> 0, m |-> 0]
EmptyLog == [i \in Ages |-> Empty]
Add(r, k) == [w |-> r.w + KindWeight(k), n |-> r.n + 1,
              m |-> r.m + (IF k \in MalfunctionKinds THEN 1 ELSE 0)]

\* The sum of field f over the ages 0..i of a log.
RECURSIVE SumAges(_, _, _)
SumAges(h, f, i) == IF i < 0 THEN 0 ELSE h[i][f] + SumAges(h, f, i - 1)

\* The ladder's weighted count: every violation in the log (the log holds the window).
Count(h) == SumAges(h, "w", Keep - 1)

\* ostrom/protocol/sanctions.py: SanctionBook.rank_of
RankOf(c) == IF c >= Sigma4 THEN 4 ELSE IF c >= Sigma3 THEN 3
             ELSE IF c >= Sigma2 THEN 2 ELSE IF c >= Sigma1 THEN 1 ELSE 0

\* ostrom/protocol/sanctions.py: SanctionBook.looks_broken
Broken(h) == 2 * SumAges(h, "m", Keep - 1) > SumAges(h, "n", Keep - 1)

\* The log one round later: every age + 1, the oldest leave.
Shift(h) == [i \in Ages |-> IF i = 0 THEN Empty ELSE h[i - 1]]

Init ==
    /\ hist = [a \in Agents |-> EmptyLog]
    /\ rank = [a \in Agents |-> 0]
    /\ susp = [a \in Agents |-> 0]
    /\ quar = [a \in Agents |-> 0]
    /\ prob = [a \in Agents |-> 0]
    /\ strategic = [a \in Agents |-> FALSE]
    /\ last = Tick_
    /\ risen = {}

\* The history variable risen, conjoined to every step.
Risen == risen' = {a \in Agents : rank'[a] > rank[a]}

-----------------------------------------------------------------------------
(* Actions                                                                 *)

\* SAN-1: a violation of a quarantined agent is logged, never escalated.
LoggedOnly(a) == quar[a] > 0

\* ostrom/protocol/sanctions.py: SanctionBook.record
Record(a, k) ==
    /\ rank[a] # 4                               \* a ban is terminal
    /\ hist[a][0].n < MaxPerRound                \* workload bound
    /\ LET h == [hist[a] EXCEPT ![0] = Add(@, k)]
           strat == strategic[a] \/ prob[a] > 0  \* a violation on probation reclassifies
           target == RankOf(Count(h))
       IN /\ hist' = [hist EXCEPT ![a] = h]
          /\ IF LoggedOnly(a)
             THEN UNCHANGED <<rank, susp, quar, prob, strategic>>
             ELSE /\ strategic' = [strategic EXCEPT ![a] = strat]
                  /\ prob' = [prob EXCEPT ![a] = 0]
                  /\ IF target <= rank[a]
                     THEN UNCHANGED <<rank, susp, quar>>
                     ELSE IF ~strat /\ rank[a] < 3 /\ Broken(h)
                     THEN /\ quar' = [quar EXCEPT ![a] = TQuar]   \* instead of escalating
                          /\ UNCHANGED <<rank, susp>>
                     ELSE /\ rank' = [rank EXCEPT ![a] = target]
                          /\ susp' = [susp EXCEPT ![a] = IF target = 3 THEN TSusp ELSE 0]
                          /\ UNCHANGED quar
    /\ last' = a
    /\ Risen

\* The agents whose repair check is due at the next Tick.
Due == {a \in Agents : quar[a] = 1}

\* Whether agent a, due, is released at this Tick: its repair check passed (a \in P).
Releases(P, a) == a \in P

\* ostrom/protocol/sanctions.py: SanctionBook.tick (one round; SanctionBook._tick_agent per agent).
\* P: the due agents whose repair check passes this round.
Tick(P) ==
    LET Released(a) == Releases(P, a)
        WR(a) == RankOf(Count(Shift(hist[a])))
    IN
    /\ P \subseteq Due
    /\ hist' = [a \in Agents |-> IF Released(a) THEN EmptyLog ELSE Shift(hist[a])]
    /\ rank' = [a \in Agents |->
                  CASE rank[a] = 4 -> 4
                    [] Released(a) -> 0
                    [] rank[a] = 3 -> IF susp[a] = 1 THEN Min(WR(a), 2) ELSE 3
                    [] OTHER -> Min(rank[a], WR(a))]
    /\ susp' = [a \in Agents |-> IF susp[a] > 0 THEN susp[a] - 1 ELSE 0]
    /\ quar' = [a \in Agents |-> CASE quar[a] = 0 -> 0
                                   [] quar[a] = 1 -> IF Released(a) THEN 0 ELSE TQuar
                                   [] OTHER -> quar[a] - 1]
    /\ prob' = [a \in Agents |-> IF Released(a) THEN W
                                 ELSE IF prob[a] > 0 THEN prob[a] - 1 ELSE 0]
    /\ UNCHANGED strategic
    /\ last' = Tick_
    /\ Risen

TickAny == \E P \in SUBSET Due : Tick(P)
\* A tick at which a's repair check passes.
TickPass(a) == \E P \in SUBSET Due : a \in P /\ Tick(P)

Next == TickAny \/ \E a \in Agents, k \in Kinds : Record(a, k)

\* Ticks are weakly fair (time passes); a repair check that is due again and again
\* eventually passes (strong fairness: between two checks it is not enabled).
Fairness == WF_vars(TickAny) /\ \A a \in Agents : SF_vars(TickPass(a))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Properties (docs/design.md §7)                                          *)

TypeOK ==
    /\ hist \in [Agents -> [Ages -> [w : 0..(MaxPerRound * UrgentPenalty),
                                      n : 0..MaxPerRound, m : 0..MaxPerRound]]]
    /\ rank \in [Agents -> 0..4]
    /\ susp \in [Agents -> 0..TSusp]
    /\ quar \in [Agents -> 0..TQuar]
    /\ prob \in [Agents -> 0..W]
    /\ strategic \in [Agents -> BOOLEAN]
    /\ last \in Agents \cup {Tick_}
    /\ risen \subseteq Agents

\* SAN-1 (safety part): no step leaves a quarantined agent with a higher rank (a step
\* that starts a quarantine does not raise the rank either: quarantine is instead of
\* escalation); a quarantined agent is neither suspended nor banned, and its next repair
\* check is at most TQuar rounds away.
QuarantineNoRiseInv ==
    \A a \in Agents : quar[a] > 0 => /\ a \notin risen
                                    /\ rank[a] <= 2 /\ susp[a] = 0
                                    /\ quar[a] \in 1..TQuar

\* SAN-2: the rank the in-window violations give, counted by age (< W) from the log, not
\* through the ladder's own count.
WCount(a) == SumAges(hist[a], "w", W - 1)
WRank(a) == RankOf(WCount(a))
WindowInv ==
    \* a rank rises only at that agent's Record, to no more than its window gives
    /\ \A a \in risen : last = a /\ rank[a] <= WRank(a)
    \* and in every state: a suspension runs at most TSusp more ticks; a quarantined
    \* agent's rank is at most its window's; any other agent not banned is exactly at its
    \* window's rank, capped at sigma2 after a suspension
    /\ \A a \in Agents :
          CASE rank[a] = 4 -> susp[a] = 0
            [] rank[a] = 3 -> susp[a] \in 1..TSusp
            [] quar[a] > 0 -> susp[a] = 0 /\ rank[a] <= WRank(a)
            [] OTHER -> susp[a] = 0 /\ rank[a] = Min(WRank(a), 2)

\* SAN-1 (liveness part): every quarantine ends (under the fairness assumptions).
QuarantineEndsProp == \A a \in Agents : (quar[a] > 0) ~> (quar[a] = 0)

\* A ban is terminal (an action property: checked on every step, no tableau needed).
BanTerminalProp == [][\A a \in Agents : rank[a] = 4 => rank'[a] = 4]_vars

=============================================================================
