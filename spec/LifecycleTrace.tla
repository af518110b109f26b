---------------------------- MODULE LifecycleTrace ----------------------------
(***************************************************************************)
(* Trace validation of the lifecycle (docs/conformance.md "Trace          *)
(* validation"; Python side: reference/ostrom/verify/trace/lifecycle.py,   *)
(* `ostrom validate-trace`). In the style of the EWD998 and CCF trace      *)
(* specs: a log of an implementation, compiled into the module TraceLog as *)
(* a sequence constant, is walked with a cursor, and every logged command  *)
(* must be a step of spec/Lifecycle.tla with the logged arguments.         *)
(*                                                                         *)
(* Both modules this one EXTENDS are written for each run (Python side):  *)
(*  - LifecycleRegVar is spec/Lifecycle.tla with ONE mechanical edit       *)
(*    (regvar.py: registry_variable_spec): the registry constants Tier,    *)
(*    Weight, Barred, Subscriptions and RepOK become VARIABLES (so that a  *)
(*    logged `set_agent` can change them between steps), and each ASSUME  *)
(*    becomes a definition LifecycleAssumption<k> (an ASSUME cannot read a *)
(*    variable); TraceInit requires LifecycleAssumptions. Every action,    *)
(*    guard and helper is Lifecycle.tla's text, unchanged. Agents stays a  *)
(*    constant: every id the log names. An id not registered (yet) is, in *)
(*    the registry variables, a barred tier-0 agent: such an agent is      *)
(*    never recruited, never counted by the forget quorum or the           *)
(*    population floor and cannot act, so it is invisible to the spec.     *)
(*    `registered` says who is registered (for unknown_agent).             *)
(*    `rateLimited`, the agents whose sanction is rate_limited (sigma2),   *)
(*    is registry state too, read only by the rate limits below.           *)
(*  - TraceLog holds TLLogs, one record per log (a batch of logs with the  *)
(*    same parameters runs in one TLC run): the initial registry and the   *)
(*    steps. A step is [op, code, check, agent, artifact, slot, vote,      *)
(*    outcome, conf, tier, weight, barred, ratelim, subs, repok, now,      *)
(*    delta]: the command                                                  *)
(*    with its arguments mapped onto the spec's (weights divided by their  *)
(*    common unit; a forget vote's confidence as `conf` in units of        *)
(*    1/TLConfUnit, the batch's common unit, exact: see lifecycle.py), the *)
(*    logged result, and `delta`, the                                      *)
(*    projection (View below) of the artifacts whose logged public state   *)
(*    changed in this step.                                                *)
(*                                                                         *)
(* One log step is several TLC steps, through `phase`:                     *)
(*  - a command (result ok): "idle" --Act--> "check" --CheckStep--> "idle" *)
(*    with cursor + 1; Act is the spec action of the command (Propose,     *)
(*    Recruit, Object, CommitVote, RevealVote, Arbitrate, Dispute,         *)
(*    UrgentReport, Resubmit, ForgetVote) with the logged arguments;       *)
(*  - `tick`: the due Recruit steps ("recruit"), Tick ("due"), the due     *)
(*    Timeout and Forget steps in any order, and, once nothing is due,     *)
(*    "check": exactly the reference's atomic tick (Lifecycle.tla header); *)
(*  - a refused command (result not ok): the spec state is left as it is,  *)
(*    and the spec action must NOT be enabled (~ENABLED Act), unless the   *)
(*    refusal's reason is one the spec abstracts (e.check = FALSE: a       *)
(*    resubmission that is not revised, a reveal whose vote is the         *)
(*    committed one but whose salt or reason is not, a malformed           *)
(*    command); unknown_agent / unknown_artifact require the agent to be   *)
(*    unregistered / the artifact not to exist; rate_limited requires the  *)
(*    action to be enabled and the agent's counter to be at its limit      *)
(*    (below);                                                             *)
(*  - `set_agent` (ok): the registry variables change (not a Lifecycle     *)
(*    action: the reference's stand-in for the reputation and sanction     *)
(*    layers); nothing else.                                               *)
(*                                                                         *)
(* RATE LIMITS (trace-level; Lifecycle.tla abstracts them, its header,    *)
(* ABSTRACTED: they only refuse commands, so Lifecycle.tla + the limits    *)
(* below is a refinement of Lifecycle.tla: every behaviour of this trace   *)
(* spec is, projected on Lifecycle.tla's variables, one of Lifecycle.tla). *)
(* As the reference (orchestrator.py: _proposals, _disputes): pcount[a]   *)
(* counts a's accepted propose and resubmit commands in the current round, *)
(* dcount[a] its accepted dispute and urgent_report commands; TickTick    *)
(* resets both. An accepted command of these needs its counter below the   *)
(* limit: ProposeRate (ProposeRateLimited when a \in rateLimited, the     *)
(* agent's registry sanction is sigma2) or DisputeRate. A refusal          *)
(* rate_limited needs the counter AT the limit and the action otherwise    *)
(* enabled (the reference checks the rate last); a refused command never   *)
(* counts. The limits are constants of the trace run (lifecycle.py:       *)
(* spec_constants).                                                        *)
(*                                                                         *)
(* "check" requires the spec's view of every artifact (View) and the       *)
(* clock to equal the logged public state after the step (`expected`).     *)
(*                                                                         *)
(* Nondeterminism of the spec is resolved by the log, not enumerated:      *)
(* reviewer recruitment (Picks) is overridden in the cfg by TracePicks, the *)
(* reviewer sets that the logged state after the step holds (if one of     *)
(* them is a valid pick), else one valid pick (FirstK), so that a wrong    *)
(* pick shows as a state difference. That is Picks restricted to values   *)
(* the log can match: every behaviour that matches the log is kept. The    *)
(* committed vote of a commit_vote is the one its reveal opens (lifecycle.py *)
(* resolves the commitment); a forget vote's confidence is the logged     *)
(* one, exact in the batch's unit (the cfg overrides ConfUnit <-          *)
(* TLConfUnit and ForgetConfidences <- TLForgetConfidences, any of        *)
(* 0..TLConfUnit). Timeouts and forgets inside a tick: any order (as in   *)
(* the spec), up to a partial-order reduction that keeps every final      *)
(* state (TickDue).                                                        *)
(*                                                                         *)
(* Verdict: TLC explores every behaviour that follows the log (BFS, no     *)
(* deadlock check). Watch, the only invariant, prints <<"ostrom-cursor",   *)
(* log, k>> each time a log gets further than before, and at a dead end at *)
(* the deepest cursor so far <<"ostrom-deadend", log, k, phase, Why>>. A   *)
(* log is accepted iff some behaviour consumes it (cursor = Len); else the *)
(* first step no behaviour gets past is the deepest cursor, and Why says   *)
(* which: the action is not enabled, a refused command is enabled, or     *)
(* which artifact fields differ after the step.                            *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC, LifecycleRegVar, TraceLog

CONSTANTS
    ProposeRate,         \* propose_rate: proposals + resubmissions per agent per round
    ProposeRateLimited,  \* propose_rate_limited: the same under sanction rate_limited
    DisputeRate          \* dispute_rate: disputes + urgent reports per agent per round

VARIABLES
    which,       \* the log of the batch this behaviour follows (index into TLLogs)
    cursor,      \* log steps consumed
    phase,       \* "idle", "recruit", "due" (inside a tick), "check"
    now,         \* the reference's clock: ticks consumed
    expected,    \* the logged view of the artifacts after step `cursor`
    registered,  \* agents in the registry (unknown_agent otherwise)
    rateLimited, \* registered agents whose sanction is rate_limited (sigma2)
    pcount,      \* [Agents -> Nat]: accepted propose + resubmit in this round
    dcount       \* [Agents -> Nat]: accepted dispute + urgent_report in this round

regvars == <<Tier, Weight, Barred, Subscriptions, RepOK, registered, rateLimited>>
ratevars == <<pcount, dcount>>
specvars == <<art, ticking, lastEvent, unguarded, history>>

Steps == TLLogs[which].steps
E == Steps[cursor + 1]

\* The workload of the log: the proposals and forget votes it logs (TraceLog:
\* TLLogProposals, TLLogForgetVotes: the arguments of every propose and forget_vote
\* entry, accepted or refused). Lifecycle.tla reads Proposals and ForgetVotes only in
\* Propose and ForgetVote, which this spec evaluates only with a logged entry's
\* arguments (Act(E)), so whether the command is allowed is what it was with
\* Agents \X Artifacts \X Slots, while Lifecycle.tla's ASSUME (Proposals \subseteq
\* Agents \X Artifacts \X Slots) no longer makes TLC enumerate that product, whose size
\* grows with the square of the log (a 1,000-command node export: 3.2 * 10^7 tuples).
TLProposals == TLLogProposals
TLForgetVotes == TLLogForgetVotes
\* Forget confidences: any, in the log's unit TLConfUnit (TraceLog; the cfg overrides
\* Lifecycle.tla's ConfUnit <- TLConfUnit, ForgetConfidences <- TLForgetConfidences).
TLForgetConfidences == 0..TLConfUnit

\* Lifecycle.tla's AtLeastPct and AtMostPct without the products a * 100 and p * b, which
\* leave TLC's 32-bit integers once the weight sums of a real log pass 2^31 / 100 (the cfg
\* overrides AtLeastPct <- TraceAtLeastPct, AtMostPct <- TraceAtMostPct).  With
\* b = 100 * q + m (0 <= m < 100) and d = a - p * q (p * q <= b as p <= 100),
\* a * 100 - p * b = 100 * d - p * m, and 0 <= p * m <= 9900: so the sign is that of d
\* unless 0 <= d < 100, where 100 * d is small.  Equal to the products for every
\* a, b >= 0 and p in 0..100 (ASSUME below on a range; lifecycle.py: pct_gap, the
\* same arithmetic, tested against the products by Hypothesis).
PctGap(a, p, b) ==   \* the sign of a * 100 - p * b, as -1, 0 or 1
    LET d == a - p * (b \div 100)
        pm == p * (b % 100)
    IN IF d >= 100 THEN 1
       ELSE IF d < 0 THEN -1
       ELSE IF d * 100 > pm THEN 1 ELSE IF d * 100 = pm THEN 0 ELSE -1
TraceAtLeastPct(a, p, b) == PctGap(a, p, b) >= 0
TraceAtMostPct(a, p, b) == PctGap(a, p, b) <= 0
ASSUME \A a \in 0..130, b \in 0..230, p \in {0, 1, 7, 33, 50, 67, 99, 100} :
           /\ TraceAtLeastPct(a, p, b) = (a * 100 >= p * b)
           /\ TraceAtMostPct(a, p, b) = (a * 100 <= p * b)

-----------------------------------------------------------------------------
(* The view: what of an artifact the spec and the public state both say   *)
(* (lifecycle.py: project_artifact computes the same from a logged state). *)

NoView == "-"
BallotView(r) ==
    CASE r.st \in {"commit", "reveal"} -> <<"review", r.st>>
      [] r.st = "arbitration" -> <<"review", "closed">>
      [] r.st = "disputed" -> <<"dispute", r.dphase>>
      [] r.st \in {"proposed", "fast_track", "deliberation"} -> <<"none", "none">>
      [] OTHER -> <<NoView, NoView>>   \* a stable state keeps no open ballot here
\* Only an active artifact's decision is kept by the spec (LC-SAFE-1); its tally
\* only for the paths decided by a tally.
DecisionView(r) ==
    IF r.st # "active" THEN <<NoView, 0, 0, 0, 0>>
    ELSE IF r.decision.how \in {"tally", "dispute_kept"}
    THEN <<r.decision.how, r.decision.acc, r.decision.rej, r.decision.nacc, r.decision.nrej>>
    ELSE <<r.decision.how, 0, 0, 0, 0>>
OpenRound(S, r) == {c \in S : c[2] = r.round}
View(x) ==
    LET r == art[x] IN
    [state |-> r.st, slot |-> r.slot, submitter |-> r.sub, hidden |-> r.hidden,
     dispute_count |-> r.disputes, resubmit_count |-> r.resubs, content |-> r.content,
     deadline |-> IF r.st \in Timed THEN now + r.timer ELSE -1,
     ballot |-> BallotView(r),
     reviewers |-> IF r.st \in Transient \cup {"active"} THEN r.reviewers ELSE {},
     committed |-> IF r.st \in Transient THEN {c[1] : c \in OpenRound(r.commits, r)} ELSE {},
     revealed |-> IF r.st \in Transient
                  THEN {<<c[1], c[3]>> : c \in OpenRound(r.reveals, r)} ELSE {},
     forget_voters |-> IF r.st = "forgotten" THEN {} ELSE FVoters(r),
     decision |-> DecisionView(r)]
Existing == {x \in Artifacts : art[x].st # "none"}
SpecView == [x \in Existing |-> View(x)]
\* The logged view after the current step: `expected` updated by its delta.
NextExpected ==
    LET d == E.delta IN
    [y \in DOMAIN expected \cup DOMAIN d |-> IF y \in DOMAIN d THEN d[y] ELSE expected[y]]
CheckOK == now = E.now /\ SpecView = NextExpected

-----------------------------------------------------------------------------
(* The commands                                                            *)

\* Both generated into LifecycleTable.tla from lifecycle.py's EVENTS.
AgentOps == AgentCommands
CommandOps == DOMAIN CommandAction

\* The spec action of a command: CommandAction[e.op] names it (the verdict's messages
\* read the same map; property_tests/codegen/test_diagram.py checks these arms against it);
\* compile_log maps the arguments, resolve_commitments the vote of a commitment.
Act(e) ==
    CASE e.op = "propose" -> Propose(e.agent, e.artifact, e.slot)
      [] e.op = "recruit" -> Recruit(e.artifact)
      [] e.op = "object" -> Object(e.agent, e.artifact)
      [] e.op = "commit_vote" ->   \* "*": a refused commitment binds no known vote
            IF e.vote = "*" THEN \E v \in Votes : CommitVote(e.agent, e.artifact, v)
            ELSE CommitVote(e.agent, e.artifact, e.vote)
      [] e.op = "reveal_vote" -> RevealVote(e.agent, e.artifact, e.vote)
      [] e.op = "arbitrate" -> Arbitrate(e.agent, e.artifact, e.outcome)
      [] e.op = "dispute" -> Dispute(e.agent, e.artifact)
      [] e.op = "urgent_report" -> UrgentReport(e.agent, e.artifact)
      [] e.op = "resubmit" -> Resubmit(e.agent, e.artifact)
      [] e.op = "forget_vote" -> ForgetVote(e.agent, e.artifact, e.conf)

\* The rate limits (header, RATE LIMITS; orchestrator.py: _op_propose, _open_dispute,
\* _op_resubmit).
ProposeOps == {"propose", "resubmit"}
DisputeOps == {"dispute", "urgent_report"}
Rated(e) == e.op \in ProposeOps \cup DisputeOps /\ e.agent \in Agents
RateLimit(e) ==
    IF e.op \in ProposeOps
    THEN IF e.agent \in rateLimited THEN ProposeRateLimited ELSE ProposeRate
    ELSE DisputeRate
RateCount(e) == IF e.op \in ProposeOps THEN pcount[e.agent] ELSE dcount[e.agent]
UnderLimit(e) == Rated(e) => RateCount(e) < RateLimit(e)
\* An accepted command uses one of its agent's per-round allowance.
RateUse(e) ==
    /\ pcount' = IF e.op \in ProposeOps THEN [pcount EXCEPT ![e.agent] = @ + 1] ELSE pcount
    /\ dcount' = IF e.op \in DisputeOps THEN [dcount EXCEPT ![e.agent] = @ + 1] ELSE dcount

\* The arguments are in the spec's domain (else the action cannot be evaluated).
InDomain(e) ==
    /\ e.op \in CommandOps
    /\ e.op \in AgentOps => e.agent \in registered
    /\ e.artifact \in Artifacts
    /\ e.op # "propose" => art[e.artifact].st # "none"

\* A refused command: allowed iff the spec does not allow the command either
\* (lifecycle.py: compile_log sets e.check = FALSE where the spec abstracts the reason).
RefusalAllowed(e) ==
    CASE e.op = "noop" -> TRUE   \* malformed, or set_agent: not a spec command
      [] e.code = "unknown_agent" -> e.op \in AgentOps /\ e.agent \notin registered
      [] e.code = "unknown_artifact" ->
            /\ e.op \in AgentOps => e.agent \in registered
            /\ e.artifact \in Artifacts /\ art[e.artifact].st = "none"
      [] e.code = "rate_limited" ->   \* checked last by the reference: all else passes
            Rated(e) /\ InDomain(e) /\ ENABLED Act(e) /\ ~UnderLimit(e)
      [] ~e.check -> TRUE   \* refused for a reason the spec abstracts
      [] OTHER -> InDomain(e) /\ ~ENABLED Act(e)

\* logged set_agent: the registry entry of e.agent becomes e's (lifecycle.py: _merge_entry
\* fills the fields the command leaves out, as Orchestrator.set_agent does).
SetAgent(e) ==
    /\ registered' = registered \cup {e.agent}
    /\ Tier' = [Tier EXCEPT ![e.agent] = e.tier]
    /\ Weight' = [Weight EXCEPT ![e.agent] = e.weight]
    /\ Barred' = IF e.barred THEN Barred \cup {e.agent} ELSE Barred \ {e.agent}
    /\ Subscriptions' = [Subscriptions EXCEPT ![e.agent] = e.subs]
    /\ RepOK' = IF e.repok THEN RepOK \cup {e.agent} ELSE RepOK \ {e.agent}
    /\ rateLimited' = IF e.ratelim THEN rateLimited \cup {e.agent} ELSE rateLimited \ {e.agent}

IsTick == E.op = "tick" /\ E.code = "ok"
Keep == UNCHANGED <<which, cursor, now, expected>> /\ UNCHANGED regvars /\ UNCHANGED ratevars

\* An accepted command (lifecycle.py: compile_log; the reference: Orchestrator.apply).
CommandStep ==
    /\ phase = "idle" /\ E.code = "ok" /\ InDomain(E)
    /\ Act(E) /\ UnderLimit(E) /\ RateUse(E)
    /\ phase' = "check" /\ UNCHANGED <<which, cursor, now, expected>> /\ UNCHANGED regvars
\* An accepted tick (the reference: Orchestrator.tick): its Recruit steps, in a fixed order
\* (TLArtRank): Recruits commute (each reads its own artifact, the registry and its
\* slot's active set, which no Recruit changes) and stay enabled until taken, so one
\* order reaches every state that any order reaches ...
RecruitNext ==
    LET P == {y \in Artifacts : art[y].st = "proposed"}
    IN IF P = {} THEN {} ELSE {CHOOSE x \in P : \A y \in P : TLArtRank[x] <= TLArtRank[y]}
TickRecruit ==
    /\ phase \in {"idle", "recruit"} /\ IsTick
    /\ \E x \in RecruitNext : Recruit(x)
    /\ phase' = "recruit" /\ Keep
\* ... Tick itself (now := now + 1) ...
TickTick ==
    /\ phase \in {"idle", "recruit"} /\ IsTick
    /\ Tick /\ now' = now + 1
    /\ pcount' = [a \in Agents |-> 0] /\ dcount' = [a \in Agents |-> 0]   \* a new round
    /\ phase' = "due" /\ UNCHANGED <<which, cursor, expected>> /\ UNCHANGED regvars
\* ... the due timeouts and forgets, in any order. A partial-order reduction keeps
\* this linear in the number of due artifacts: a due step is *local* when it reads and
\* writes only its own artifact (and the registry), i.e. it is not the close of a
\* dispute (which reads the slot's active set) and the artifact is not active before
\* or after it (activation supersedes; forgetting an active artifact frees its slot).
\* A local step commutes with every other step of the tick and stays due until taken,
\* so taking it first loses no final state: while one is due, only the first local
\* one (TLArtRank) is taken; the other due steps are taken in every order.
DueSet == {y \in Artifacts : TimeoutDue(y) \/ ForgetDue(y)}
\* Whether the due Timeout of x activates it: the fast track, or a review tally that
\* accepts (the condition of Lifecycle.tla's TimeoutReveal, restated from its
\* helpers; TickDue asserts that a step taken as local indeed does not activate).
Activates(x) ==
    LET r == art[x]
        A == SumW(VotersOf(x, "accept"))
        R == SumW(VotersOf(x, "reject"))
    IN \/ r.st = "fast_track"
       \/ /\ r.st = "reveal"
          /\ QuorumMet(Cardinality(Counted(x)))
          /\ AtLeastPct(A, TauAccept, A + R) /\ SideOK(Cardinality(VotersOf(x, "accept")))
Local(x) ==
    LET r == art[x] IN
    /\ r.st # "active"
    /\ ~(r.st = "disputed" /\ r.dphase = "reveal")
    /\ ~(TimeoutDue(x) /\ Activates(x))
\* A due step is local too when its artifact is the only due one of its slot, whatever
\* the step does: a Timeout or Forget reads and writes only its artifact, the artifacts
\* of its slot (ActiveIn: the supersession of an activation, the close of a dispute)
\* and history variables nobody reads here, so it commutes with every step on another
\* slot's artifact, and no such step can disable it (TickDue asserts that a step taken
\* as local changes no artifact of another slot). Without it the fast-track activations
\* of one tick, each in a slot of its own, were taken in every order: 2^k states for k
\* of them (a node's log with 49 proposals between ticks).
AloneInSlot(x, D) == \A y \in D \ {x} : art[y].slot # art[x].slot
LocalNext ==
    LET D == DueSet
        L == {y \in D : Local(y) \/ AloneInSlot(y, D)}
    IN IF L = {} THEN {} ELSE {CHOOSE x \in L : \A y \in L : TLArtRank[x] <= TLArtRank[y]}
DueNext == IF LocalNext # {} THEN LocalNext ELSE DueSet
TickDue ==
    /\ phase = "due"
    /\ \E x \in DueNext :
          /\ Timeout(x) \/ Forget(x)
          /\ Assert(x \in LocalNext =>
                        /\ (Local(x) => art'[x].st # "active")
                        /\ \A y \in Artifacts : art'[y] # art[y] => art[y].slot = art[x].slot,
                    "LifecycleTrace: a step taken as local activated its artifact or "
                    \o "changed another slot's")
    /\ UNCHANGED phase /\ Keep
\* ... until nothing is due.
TickDone ==
    /\ phase = "due" /\ ~Due
    /\ phase' = "check" /\ UNCHANGED specvars /\ Keep
\* The artifact whose reviewers are being picked (TracePicks): the artifact of a
\* dispute or an urgent report, the artifact being recruited (RecruitNext), or the
\* re-recruited one (a re-recruitment is a local step, taken alone: DueNext).
Focus ==
    CASE phase = "idle" /\ E.op # "tick" -> E.artifact
      [] phase \in {"idle", "recruit"} /\ RecruitNext # {} -> CHOOSE x \in RecruitNext : TRUE
      [] phase = "due" /\ LocalNext # {} -> CHOOSE x \in LocalNext : TRUE
      [] OTHER -> NoView

RECURSIVE FirstK(_, _)
FirstK(S, n) ==
    IF n = 0 \/ S = {} THEN {} ELSE LET a == CHOOSE a \in S : TRUE IN {a} \cup FirstK(S \ {a}, n - 1)
\* Picks(pool, k) of Lifecycle.tla restricted to the set the log shows for the
\* artifact after the step, if that is a valid pick, else to one valid pick (so that
\* the wrong set shows as a state difference). Either way a subset of Picks(pool, k).
TracePicks(pool, k) ==
    LET m == Min(k, Cardinality(pool))
        NE == NextExpected
        want == IF cursor < Len(Steps) /\ Focus \in DOMAIN NE THEN NE[Focus].reviewers ELSE {}
    IN IF want \subseteq pool /\ Cardinality(want) = m THEN {want} ELSE {FirstK(pool, m)}

\* An accepted set_agent (lifecycle.py: compile_log, _merge_entry).
SetAgentStep ==
    /\ phase = "idle" /\ E.op = "set_agent" /\ E.code = "ok"
    /\ SetAgent(E)
    /\ phase' = "check" /\ UNCHANGED specvars /\ UNCHANGED <<which, cursor, now, expected>>
    /\ UNCHANGED ratevars
\* A refusal: nothing changes (lifecycle.py: compile_log).
RefuseStep ==
    /\ phase = "idle" /\ E.code # "ok"
    /\ RefusalAllowed(E)
    /\ phase' = "check" /\ UNCHANGED specvars /\ Keep
\* The logged state after the step is the spec's (lifecycle.py: _views writes the deltas).
CheckStep ==
    /\ phase = "check" /\ CheckOK
    /\ cursor' = cursor + 1 /\ expected' = NextExpected /\ phase' = "idle"
    /\ UNCHANGED specvars /\ UNCHANGED <<which, now>> /\ UNCHANGED regvars
    /\ UNCHANGED ratevars

\* op "bad" (lifecycle.py: an accepted malformed command, or a logged state that is not a
\* public state) has no step.
IdleStep ==
    /\ E.op # "bad"
    /\ CommandStep \/ TickRecruit \/ TickTick \/ SetAgentStep \/ RefuseStep

TraceInit ==
    /\ which \in DOMAIN TLLogs
    /\ Init
    /\ registered = TLLogs[which].registered
    /\ Tier = TLLogs[which].tier
    /\ Weight = TLLogs[which].weight
    /\ Barred = TLLogs[which].barred
    /\ Subscriptions = TLLogs[which].subs
    /\ RepOK = TLLogs[which].repok
    /\ rateLimited = TLLogs[which].ratelim
    /\ pcount = [a \in Agents |-> 0] /\ dcount = [a \in Agents |-> 0]
    /\ LifecycleAssumptions
    /\ cursor = 0 /\ phase = "idle" /\ now = 0 /\ expected = <<>>
    /\ TLCSet(which, -1)

TraceNext ==
    /\ cursor < Len(Steps)
    /\ \/ IdleStep
       \/ TickRecruit \/ TickTick \/ TickDue \/ TickDone   \* (inside a tick)
       \/ CheckStep

-----------------------------------------------------------------------------
(* Chunks (lifecycle_check.py: _run_chunked; docs/conformance.md "Long     *)
(* logs"). A long log is checked in chunks of steps, one TLC run each; a   *)
(* chunk after the first starts from the states the previous one ended in  *)
(* (TraceLog: TLStarts, printed by ChunkEnd), and each run holds only the  *)
(* artifacts its steps can touch (TLArtifacts), so that a step costs what  *)
(* the live artifacts cost, not what the log has accumulated: Lifecycle.tla *)
(* maps every action over all of Artifacts (Observe, Tick, Due,            *)
(* StillTicking, ActiveIn) and CheckOK compares the view of every existing *)
(* artifact, so with every artifact ever proposed in the state a step of   *)
(* a node's log cost O(log length) and the whole check O(length^2).        *)
(*                                                                         *)
(* Which artifacts a chunk may leave out: the Frozen ones below, not named *)
(* by any of its steps, whose logged view its steps do not change, and, if *)
(* active, of a slot no artifact of the chunk is in. A Frozen record is    *)
(* changed by no step that does not name it (Tick keeps timer = cool = 0;  *)
(* Timeout needs a Timed state, Recruit a proposed one, Forget a positive  *)
(* ForgetScore, i.e. a forget vote) except the supersession of an active   *)
(* one by an activation in its slot, and read by no step except through    *)
(* ActiveIn(its slot) when active (Due, Tick's guard, StillTicking and the *)
(* trace's RecruitNext, DueSet and LocalNext see only Timed, proposed or   *)
(* forget-voted records). So a behaviour of the chunk with the left-out    *)
(* records unchanged is a behaviour of the whole spec and conversely; the  *)
(* Python side keeps the left-out records and hands them back to the first *)
(* chunk that includes them again.                                          *)
Frozen(r) == r.st \in Stable \cup {"none"} /\ r.timer = 0 /\ r.cool = 0 /\ r.fvotes = {}

\* A start state s of TLStarts: the state variables of an end state of the previous chunk
\* (EndState), `art` and `history` given for the artifacts seen before (the others were
\* never proposed: Blank, as in Init).
ChunkStart(s) ==
    /\ art = [x \in Artifacts |-> IF x \in DOMAIN s.art THEN s.art[x] ELSE Blank]
    /\ history = [x \in Artifacts |-> IF x \in DOMAIN s.history THEN s.history[x]
                                       ELSE [disputes |-> 0, resubs |-> 0]]
    /\ ticking = s.ticking /\ lastEvent = s.lastEvent /\ unguarded = s.unguarded
    /\ Tier = s.tier /\ Weight = s.weight /\ Barred = s.barred /\ Subscriptions = s.subs
    /\ RepOK = s.repok /\ registered = s.registered /\ rateLimited = s.ratelim
    /\ pcount = s.pcount /\ dcount = s.dcount /\ now = s.now
ChunkBegin ==
    /\ which \in DOMAIN TLLogs /\ cursor = 0 /\ phase = "idle"
    /\ expected = TLLogs[which].expected   \* the logged view at the boundary
\* The boundary state is checked by both chunks: the previous one's last CheckStep compared
\* it with the log, and this one compares the state it starts from with the log again.
BoundaryDiff ==   \* the artifacts whose view differs at a boundary: <<spec, log>>
    LET SV == SpecView IN
    [x \in {y \in DOMAIN SV \cup DOMAIN expected :
              y \notin DOMAIN SV \/ y \notin DOMAIN expected \/ SV[y] # expected[y]} |->
       <<IF x \in DOMAIN SV THEN SV[x] ELSE NoView,
         IF x \in DOMAIN expected THEN expected[x] ELSE NoView>>]
ChunkBoundary ==
    /\ IF now = TLLogs[which].now /\ SpecView = expected THEN TRUE
       ELSE PrintT(<<"ostrom-boundary", which, <<now, TLLogs[which].now>>, BoundaryDiff>>)
    /\ Assert(now = TLLogs[which].now /\ SpecView = expected,
              "LifecycleTrace: a chunk's start state is not the logged state at its boundary")
    /\ TLCSet(which, -1)
ChunkInit == ChunkBegin /\ \E s \in TLStarts : ChunkStart(s) /\ ChunkBoundary

EndState ==
    [art |-> art, history |-> history, ticking |-> ticking, lastEvent |-> lastEvent,
     unguarded |-> unguarded, tier |-> Tier, weight |-> Weight, barred |-> Barred,
     subs |-> Subscriptions, repok |-> RepOK, registered |-> registered,
     ratelim |-> rateLimited, pcount |-> pcount, dcount |-> dcount, now |-> now,
     frozen |-> {x \in Artifacts : Frozen(art[x])}]
\* Every state in which a behaviour has consumed the chunk, printed once (an invariant is
\* evaluated once per distinct state): the next chunk starts from these.
ChunkEnd == cursor = Len(Steps) => PrintT(<<"ostrom-end", which, EndState>>)

-----------------------------------------------------------------------------
(* The verdict (read by lifecycle_check.py from the PrintT lines)          *)

\* Why no behaviour gets past this state (printed only at the deepest cursor;
\* lifecycle_check.py: _describe turns it into the message, _verdicts reads the prints).
AgentView(a) ==
    IF a \in Agents
    THEN [registered |-> a \in registered, tier |-> Tier[a], weight |-> Weight[a],
          barred |-> a \in Barred, subscriptions |-> Subscriptions[a], repok |-> a \in RepOK,
          rate_limited |-> a \in rateLimited]
    ELSE NoView
Why ==
    IF phase = "check"
    THEN LET SV == SpecView
             NE == NextExpected
             both == DOMAIN SV \cap DOMAIN NE
         IN [kind |-> "state", now |-> <<now, E.now>>,
             spec_only |-> DOMAIN SV \ DOMAIN NE, log_only |-> DOMAIN NE \ DOMAIN SV,
             diff |-> [x \in {y \in both : SV[y] # NE[y]} |->
                         [f \in {g \in DOMAIN SV[x] : SV[x][g] # NE[x][g]} |->
                            <<SV[x][f], NE[x][f]>>]]]
    ELSE [kind |-> IF E.code = "ok" THEN "command" ELSE "refusal",
          in_domain |-> InDomain(E),
          enabled |-> InDomain(E) /\ ENABLED Act(E),
          due |-> Due,
          rate |-> IF Rated(E) THEN <<RateCount(E), RateLimit(E)>> ELSE <<0, 0>>,
          artifact |-> IF E.artifact \in Artifacts THEN art[E.artifact] ELSE NoView,
          agent |-> AgentView(E.agent)]

Watch ==
    LET top == TLCGet(which) IN
    /\ IF cursor > top THEN TLCSet(which, cursor) /\ PrintT(<<"ostrom-cursor", which, cursor>>)
                       ELSE TRUE
    /\ \/ cursor < top                   \* a shallower branch: not the first failing step
       \/ cursor = Len(Steps)            \* the whole log is a behaviour of the spec
       \/ phase \in {"recruit", "due"}   \* inside a tick: a Timeout/Forget or TickDone follows
       \/ phase = "check" /\ CheckOK
       \/ phase = "idle" /\ ENABLED IdleStep
       \/ PrintT(<<"ostrom-deadend", which, cursor, phase, Why>>)
=============================================================================
