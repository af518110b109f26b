--------------------------- MODULE PBFTReplicaTrace ---------------------------
(***************************************************************************)
(* Trace validation of one PBFT replica's log (`ostrom validate-trace` on  *)
(* a log whose header says layer "pbft"; Python side:                      *)
(* reference/ostrom/verify/trace/pbft.py). The log is compiled into   *)
(* the module PBFTTraceLog (TLLogs: per log its parameters `cfg` and its   *)
(* steps) and walked with a cursor, as spec/LifecycleTrace.tla does.       *)
(*                                                                         *)
(* A step is [inp, res, rej, exe, out, obs]: the input as the abstract     *)
(* input of PBFTReplica.tla (`inp.op` "msg" with the abstract message,     *)
(* "timeout", "retransmit", or "invalid" for a command the layer must     *)
(* refuse as invalid_input), the logged result, the logged rejection       *)
(* reasons, executions [n, d, res] (res -1: no application result), sent  *)
(* messages [dest, m] and public state, all abstracted by the compiler as *)
(* PBFTReplica.tla describes. The step of the spec (PBFTReplica!Step) must *)
(* produce exactly these: the same result, the same rejections and sent    *)
(* messages (as multisets: the layer sorts them), the same executions in   *)
(* the same order, and the same public state (Observed). An invalid        *)
(* command changes nothing and outputs nothing.                            *)
(*                                                                         *)
(* The replica is deterministic, so one behaviour per log: the log is      *)
(* accepted iff its cursor reaches the end; otherwise Watch prints, at the *)
(* failing step, <<"ostrom-deadend", log, cursor, Why>> with what the spec *)
(* would have done where it differs from the log.                          *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC, PBFTReplica, PBFTTraceLog

VARIABLES st, which, cursor  \* the replica's state; the log walked; its cursor

Steps == TLLogs[which].steps
E == Steps[cursor + 1]

Bag(q) == [x \in Range(q) |-> Cardinality({i \in DOMAIN q : q[i] = x})]

SpecStep(e) == IF e.inp.op = "invalid" THEN Fresh(st) ELSE Step(st, e.inp)
SpecResult(e) == IF e.inp.op = "invalid" THEN "invalid_input" ELSE "ok"

Matches(s, e) ==
    /\ SpecResult(e) = e.res
    /\ Bag(s.rej) = Bag(e.rej)
    /\ s.exe = e.exe
    /\ Bag(s.out) = Bag(e.out)
    /\ Observed(s) = e.obs

TraceInit ==
    /\ which \in DOMAIN TLLogs
    /\ cursor = 0
    /\ st = InitState(TLLogs[which].cfg)
    /\ TLCSet(which, -1)

TraceNext ==
    /\ cursor < Len(Steps)
    /\ LET s1 == SpecStep(E) IN
       /\ Matches(s1, E)
       /\ st' = s1
    /\ cursor' = cursor + 1
    /\ UNCHANGED which

\* What the spec does at the failing step, where it differs from the log.
Why ==
    LET s == SpecStep(E)
        O == Observed(s)
    IN [result |-> <<SpecResult(E), E.res>>,
        rej |-> IF Bag(s.rej) = Bag(E.rej) THEN <<>> ELSE <<s.rej, E.rej>>,
        exe |-> IF s.exe = E.exe THEN <<>> ELSE <<s.exe, E.exe>>,
        out_spec_only |-> Range(s.out) \ Range(E.out),
        out_log_only |-> Range(E.out) \ Range(s.out),
        out_counts |-> <<Len(s.out), Len(E.out)>>,
        state |-> [f \in {g \in DOMAIN O : O[g] # E.obs[g]} |-> <<O[f], E.obs[f]>>]]

Watch ==
    LET top == TLCGet(which) IN
    /\ IF cursor > top THEN TLCSet(which, cursor) /\ PrintT(<<"ostrom-cursor", which, cursor>>)
                       ELSE TRUE
    /\ \/ cursor < top
       \/ cursor = Len(Steps)
       \/ Matches(SpecStep(E), E)
       \/ PrintT(<<"ostrom-deadend", which, cursor, Why>>)
================================================================================
