---------------------------- MODULE CommunityTrace ----------------------------
(***************************************************************************)
(* Trace validation of the community layer (reference/ostrom/protocol/community.py, *)
(* docs/community.md): the lifecycle orchestrator with its registry        *)
(* DERIVED from the sanction book and the reputation book. Python side:    *)
(* reference/ostrom/verify/trace/lifecycle.py (a log whose header says layer    *)
(* "community").                                                           *)
(*                                                                         *)
(* Everything of LifecycleTrace.tla (EXTENDS: the cursor, the lifecycle    *)
(* actions, the rate limits, the artifact check) is kept; what changes is  *)
(* who writes the registry. In LifecycleTrace.tla a logged `set_agent`    *)
(* does; here `set_agent` is refused by the community (an accepted one is *)
(* no step: trace.py compiles it as op "bad") and the registry is, after   *)
(* every step, what this module derives:                                   *)
(*  - join (Join; community.py: Community._join; reputation.py:            *)
(*    ReputationBook.add): a new identity is registered at tier 0, weight  *)
(*    WMin, no sanction and                                                *)
(*    a fresh tier state (docs/design.md §2: a fresh identity is cheap,    *)
(*    REP-2); a `duplicate` refusal needs the agent registered;            *)
(*  - sanctions (spec/Sanctions.tla, INSTANCE S, unmodified): after the    *)
(*    step's lifecycle part, a tick first takes S!Tick (the book advances  *)
(*    one round: community.py _after_tick), then every violation the       *)
(*    step's events report (E.viol, in their order; community.py _enforce: *)
(*    SanctionBook.record_events, at once, refused command or not) is     *)
(*    an S!Record (none for a banned agent: the ban is terminal). The      *)
(*    level (SanctionBook.level: quarantined, else the rung of the ladder) *)
(*    is the registry's sanction; suspended, banned and quarantined bar    *)
(*    (Barred), rate_limited lowers the proposal rate (rateLimited);       *)
(*  - tiers (reputation.py: step_tier, applied by ReputationBook.tick at   *)
(*    every tick, to every registered agent): TierStep below, over the     *)
(*    reputation E the log shows after the tick (the `reputation_micro`    *)
(*    of each agent's public entry). The sanction caps no tier             *)
(*    (sanctions.py TIER_CAP: barring levels are Barred instead), so the   *)
(*    registry's tier is the reputation tier. Founders (setup members with *)
(*    a tier) start at their tier with the time in tier served            *)
(*    (ReputationBook.add).                                                *)
(* ABSTRACTED: weights (EigenTrust and the farming cap) and the            *)
(* reputation E itself (Beta evidence, decay) are taken from the log; the  *)
(* spec checks only that weights move at ticks only (a join: WMin), and    *)
(* RepOK (resubmission) reads the logged E. Thresholds compare E in        *)
(* micro-units (the reference compares floats).                            *)
(*                                                                         *)
(* One log step: the lifecycle part (LifecycleTrace.tla, ends in phase     *)
(* "check"), then stage 0 -> SanTick or SanSkip -> 1..Len(E.viol) SanRecord*)
(* -> Derive (the registry variables := the derived registry, which must   *)
(* equal the logged one) -> stage -1 -> CheckStep (the artifacts).         *)
(***************************************************************************)
EXTENDS LifecycleTrace

CONSTANTS
    SWindow, SSigma1, SSigma2, SSigma3, SSigma4, SUrgentPenalty, STSusp, STQuar,
    Tier1Rep, Tier2Rep, Tier3Rep,   \* tier thresholds on E, micro-units
    Tier1Rounds,                    \* tier1_rounds: time in tier before a promotion
    RResubmit                       \* r_resubmit, micro-units

VARIABLES
    s_hist, s_rank, s_susp, s_quar, s_prob, s_strategic, s_last, s_risen,  \* Sanctions.tla's
    stage,   \* 0: the step's derivation not started; k: next violation; -1: registry derived
    tstate   \* [Agents -> [tier, held]]: reputation.py TierState

svars == <<s_hist, s_rank, s_susp, s_quar, s_prob, s_strategic, s_last, s_risen>>
cvars == <<svars, stage, tstate>>

S == INSTANCE Sanctions WITH
        Agents <- Agents,
        Kinds <- {"invalid_reveal", "non_reveal", "rate_limit", "frivolous_dispute",
                  "unfounded_urgent", "malformed"},
        W <- SWindow, Sigma1 <- SSigma1, Sigma2 <- SSigma2, Sigma3 <- SSigma3,
        Sigma4 <- SSigma4, UrgentPenalty <- SUrgentPenalty, TSusp <- STSusp, TQuar <- STQuar,
        MaxPerRound <- 1000000,
        hist <- s_hist, rank <- s_rank, susp <- s_susp, quar <- s_quar, prob <- s_prob,
        strategic <- s_strategic, last <- s_last, risen <- s_risen

\* sanctions.py: SanctionBook.level (LADDER), agents.BARRING
Ladder == <<"none", "warned", "rate_limited", "suspended", "banned">>
Level(a) == IF s_quar[a] > 0 THEN "quarantined" ELSE Ladder[s_rank[a] + 1]
Barring == {"suspended", "banned", "quarantined"}

-----------------------------------------------------------------------------
(* The tier rule (reputation.py: tier_thresholds, TierState, step_tier)   *)

TierRange == 0..3
Th == [j \in TierRange |-> CASE j = 0 -> 0 [] j = 1 -> Tier1Rep [] j = 2 -> Tier2Rep
                         [] OTHER -> Tier3Rep]
\* held[j]: consecutive rounds at tier >= j; only ">= Tier1Rounds" is ever read, so the
\* counters are capped there (keeps the state finite; the rule is unchanged).
TierFresh == [tier |-> 0, held |-> [j \in TierRange |-> 0]]
TierServed(t) == [tier |-> t, held |-> [j \in TierRange |-> IF j <= t THEN Tier1Rounds ELSE 0]]
CapH(h) == IF h > Tier1Rounds THEN Tier1Rounds ELSE h
\* reputation.py: step_tier(state, e): one round, with the new E (micro-units)
TierStep(st, e) ==
    LET t == st.tier
        held == [j \in TierRange |-> IF t >= j THEN CapH(st.held[j] + 1) ELSE 0]
        new == IF t < 3 /\ e >= Th[t + 1] /\ held[t] >= Tier1Rounds THEN t + 1
               ELSE IF e >= Th[t] THEN t
               ELSE CHOOSE j \in 0..t : e >= Th[j] /\ \A i \in 0..t : e >= Th[i] => i <= j
    IN [tier |-> new, held |-> [j \in TierRange |-> IF j <= new THEN held[j] ELSE 0]]

IsTickOK == E.op = "tick" /\ E.code = "ok"
\* The tier state after this step: one TierStep per registered agent at a tick.
NextTState ==
    IF IsTickOK
    THEN [a \in Agents |-> IF a \in registered /\ a \in DOMAIN E.reg
                           THEN TierStep(tstate[a], E.reg[a].rep) ELSE tstate[a]]
    ELSE tstate

-----------------------------------------------------------------------------
(* The steps                                                               *)

\* community.py: Community._join (ReputationBook.add: tier 0, w_min, a fresh TierState)
JoinStep ==
    /\ phase = "idle" /\ stage = 0 /\ E.op = "join" /\ E.code = "ok"
    /\ E.agent \notin registered
    /\ registered' = registered \cup {E.agent}
    /\ Tier' = [Tier EXCEPT ![E.agent] = 0]
    /\ Weight' = [Weight EXCEPT ![E.agent] = WMin]
    /\ Barred' = Barred \ {E.agent}
    /\ rateLimited' = rateLimited \ {E.agent}
    /\ Subscriptions' = [Subscriptions EXCEPT ![E.agent] = E.subs]
    /\ tstate' = [tstate EXCEPT ![E.agent] = TierFresh]
    /\ phase' = "check"
    /\ UNCHANGED <<RepOK, which, cursor, now, expected>> /\ UNCHANGED specvars
    /\ UNCHANGED ratevars /\ UNCHANGED <<svars, stage>>
\* a join refused as duplicate: the id is registered; nothing changes
JoinRefused ==
    /\ phase = "idle" /\ stage = 0 /\ E.op = "join" /\ E.code = "duplicate"
    /\ E.agent \in registered
    /\ phase' = "check" /\ UNCHANGED specvars /\ Keep /\ UNCHANGED cvars

\* the sanction book's round (community.py _after_tick: SanctionBook.tick)
SanTick ==
    /\ phase = "check" /\ stage = 0 /\ IsTickOK
    /\ S!TickAny /\ stage' = 1
    /\ UNCHANGED specvars /\ UNCHANGED phase /\ Keep /\ UNCHANGED tstate
SanSkip ==
    /\ phase = "check" /\ stage = 0 /\ ~IsTickOK
    /\ stage' = 1
    /\ UNCHANGED specvars /\ UNCHANGED phase /\ Keep /\ UNCHANGED <<svars, tstate>>
\* the step's violations, in order (community.py _enforce: SanctionBook.record_events)
SanRecord ==
    /\ phase = "check" /\ stage \in 1..Len(E.viol)
    /\ LET a == E.viol[stage][1]
           k == E.viol[stage][2]
       IN IF s_rank[a] = 4 THEN UNCHANGED svars ELSE S!Record(a, k)
    /\ stage' = stage + 1
    /\ UNCHANGED specvars /\ UNCHANGED phase /\ Keep /\ UNCHANGED tstate

\* The registry the layers give (community.py _sync), against the logged one.
DerivedTier(a) == NextTState[a].tier
RegDiff(a) ==
    LET g == E.reg[a] IN
    [f \in {x \in {"tier", "sanction", "weight"} :
              CASE x = "tier" -> g.tier # DerivedTier(a)
                [] x = "sanction" -> g.sanction # Level(a)
                [] OTHER -> ~IsTickOK /\ g.weight # Weight[a]} |->
       CASE f = "tier" -> <<DerivedTier(a), g.tier>>
         [] f = "sanction" -> <<Level(a), g.sanction>>
         [] OTHER -> <<Weight[a], g.weight>>]
RegOK ==
    /\ DOMAIN E.reg = registered
    /\ \A a \in registered : RegDiff(a) = <<>>
Derive ==
    /\ phase = "check" /\ stage = Len(E.viol) + 1
    /\ RegOK
    /\ tstate' = NextTState
    /\ Tier' = [a \in Agents |-> IF a \in registered THEN DerivedTier(a) ELSE Tier[a]]
    /\ Weight' = [a \in Agents |-> IF a \in registered THEN E.reg[a].weight ELSE Weight[a]]
    /\ Barred' = {a \in Agents : a \notin registered \/ Level(a) \in Barring}
    /\ rateLimited' = {a \in registered : Level(a) = "rate_limited"}
    /\ RepOK' = {a \in registered : E.reg[a].rep >= RResubmit}
    /\ stage' = -1
    /\ UNCHANGED <<registered, Subscriptions>> /\ UNCHANGED specvars /\ UNCHANGED svars
    /\ UNCHANGED <<which, cursor, now, expected, phase>> /\ UNCHANGED ratevars

CTraceInit ==
    /\ TraceInit
    /\ S!Init
    /\ stage = 0
    /\ tstate = [a \in Agents |-> IF a \in registered /\ Tier[a] > 0 THEN TierServed(Tier[a])
                                  ELSE TierFresh]

DeriveSteps == SanTick \/ SanSkip \/ SanRecord \/ Derive
CIdleStep == (stage = 0 /\ IdleStep /\ UNCHANGED cvars) \/ JoinStep \/ JoinRefused

CTraceNext ==
    /\ cursor < Len(Steps)
    /\ \/ CIdleStep
       \/ (TickRecruit \/ TickTick \/ TickDue \/ TickDone) /\ UNCHANGED cvars
       \/ DeriveSteps
       \/ CheckStep /\ stage = -1 /\ stage' = 0 /\ UNCHANGED <<svars, tstate>>

-----------------------------------------------------------------------------
(* Chunks (LifecycleTrace.tla: ChunkInit, ChunkEnd): the community's state *)
(* (the sanction book, the tier states) is carried across a boundary too.  *)
CChunkStart(s) ==
    /\ s_hist = s.s_hist /\ s_rank = s.s_rank /\ s_susp = s.s_susp /\ s_quar = s.s_quar
    /\ s_prob = s.s_prob /\ s_strategic = s.s_strategic /\ s_last = s.s_last
    /\ s_risen = s.s_risen /\ tstate = s.tstate /\ stage = 0
CChunkInit == ChunkBegin /\ \E s \in TLStarts : ChunkStart(s) /\ CChunkStart(s) /\ ChunkBoundary
CEndState ==
    [s_hist |-> s_hist, s_rank |-> s_rank, s_susp |-> s_susp, s_quar |-> s_quar,
     s_prob |-> s_prob, s_strategic |-> s_strategic, s_last |-> s_last, s_risen |-> s_risen,
     tstate |-> tstate]
CChunkEnd ==
    cursor = Len(Steps) /\ stage = 0 => PrintT(<<"ostrom-end", which, EndState, CEndState>>)

-----------------------------------------------------------------------------
(* The verdict (as LifecycleTrace.tla's Watch; trace.py reads the prints)  *)

CWhy ==
    IF phase = "check" /\ stage # -1
    THEN [kind |-> "registry",
          logged |-> DOMAIN E.reg, registered |-> registered,
          diff |-> [a \in {b \in registered \cap DOMAIN E.reg : RegDiff(b) # <<>>} |->
                      RegDiff(a)]]
    ELSE Why

CWatch ==
    LET top == TLCGet(which) IN
    /\ IF cursor > top THEN TLCSet(which, cursor) /\ PrintT(<<"ostrom-cursor", which, cursor>>)
                       ELSE TRUE
    /\ \/ cursor < top
       \/ cursor = Len(Steps)
       \/ phase \in {"recruit", "due"}
       \/ phase = "check" /\ stage # -1 /\ ENABLED DeriveSteps
       \/ phase = "check" /\ stage = -1 /\ CheckOK
       \/ phase = "idle" /\ ENABLED CIdleStep
       \/ PrintT(<<"ostrom-deadend", which, cursor, phase, CWhy>>)
=============================================================================
