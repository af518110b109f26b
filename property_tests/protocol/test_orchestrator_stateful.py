"""Stateful property tests of the lifecycle orchestrator (docs/design.md §7, docs/rules.md).

A Hypothesis ``RuleBasedStateMachine`` drives ``Orchestrator.apply`` with every command,
valid and invalid, from agents of every tier (one of them barred, one rate-limited) and
``set_agent`` changes mid-run, over two slots and several artifacts per slot, with ticks.
Honest voters keep the salts they used, so tallies, arbitration, disputes, urgent
reports, resubmissions and forgetting are actually reached; ``test_lifecycle_reaches``
fails if the run never reaches them (a test that reaches nothing proves nothing).

The test keeps its *own* model — the state of every artifact as told by the events, the
commitments it made and the reveals that were accepted, the registry — and checks the
orchestrator against it, so a bug in the orchestrator's bookkeeping cannot hide itself.

Every assertion message starts with the property id it checks; ``test_mutants.py``
relies on that to tell which property caught a mutant:

* LC-SAFE-1..6, CR-2: ``@invariant``s (plus per-event checks in ``_track``);
* CR-1: a *twin* orchestrator gets the same commands except that every commitment is to
  a different (vote, salt); observations and public states must be identical.  When a
  commit phase closes the twin is re-synchronised by replaying the main log (votes may
  matter from then on);
* REFUSAL ("a refused command changes nothing"): a deep snapshot of the orchestrator's
  whole internal state before and after every refused command;
* LC-LIVE-1: the ``drain`` rule ticks ``drain_bound(params)`` times with no commands and
  requires every artifact to be stable.
"""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from enum import Enum
from typing import Any, ClassVar

import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from transitions import Machine

from lifecycle_world import AGENTS, PARAMS
from mutant_check import run_machine
from ostrom.protocol.agents import Agent, Sanction, micro
from ostrom.protocol.commands import Observation
from ostrom.protocol.errors import ErrorCode
from ostrom.protocol.lifecycle import (
    ACTIVE,
    DISPUTED,
    EVENTS,
    FORGET_VOTABLE,
    FORGOTTEN,
    NEW,
    RESUBMITTABLE,
    STABLE,
    TRANSITIONS,
)
from ostrom.protocol.orchestrator import LEGIT_ACTIVE_PATHS, Orchestrator
from ostrom.protocol.params import Params
from ostrom.protocol.voting import commitment, make_salt

# The reachability test at the end reads what the machines above recorded in this
# process: the whole module runs on one xdist worker, in file order (--dist loadfile,
# conftest.py).

# --- the world under test ----------------------------------------------------------------

AGENT_IDS = [a.id for a in AGENTS] + ["ghost"]  # "ghost" is never registered
ARTIFACT_IDS = ["x0", "x1", "x2", "x3", "x4", "x5"]
ALL_ARTIFACT_IDS = [*ARTIFACT_IDS, "nope"]  # "nope" is never proposed
SLOTS = ["s0", "s1"]
DIGESTS = ["d0", "d1", "d2"]
REASONS = ["", "because", "ünïcode ✓"]
EVIDENCE = st.lists(st.sampled_from(["e1", "e2", "e3"]), max_size=2, unique=True)
TRIPLES = {(r.event, r.source, r.dest): r for r in TRANSITIONS}
AGENT_OPS = {op for op, spec in EVENTS.items() if spec.actor == "agent"}
COMMIT_CLOSE = {
    ("timeout", "commit", "reveal", None),
    ("timeout", "disputed", "disputed", "reveal_phase"),
}

NAN = float("nan")

#: How an example starts (LifecycleMachine.preamble): empty, or with an artifact in
#: arbitration, rejected by a tally, or retracted by a dispute.
PREAMBLES = (None, "arbitration", "rejected", "retracted")

#: What the honest arbiters decide for each artifact that reaches arbitration (None: no
#: one takes it, so the window times out and the artifact is rejected, the status quo).
ARBITER_POLICY: dict[str, str | None] = dict(
    zip(ARTIFACT_IDS, ["accept", "revote", "reject", None, "accept", "revote"], strict=True)
)

#: What the ci run reached, across all examples (read by ``test_lifecycle_reaches``).
REACHED: Counter[str] = Counter()


def drain_bound(p: Params) -> int:
    """LC-LIVE-1: ticks after which, with no commands, every artifact is stable.

    Derivation (a tick recruits *before* advancing ``now``, and every timed state sets
    ``deadline = now + T``, so a state with timer T is left exactly T ticks after entry;
    the recruiting tick counts towards the first timer):

    * ``proposed`` → fast track → ``active``: ``T_fast``;
    * ``proposed`` → ``deliberation`` → ``commit`` → ``reveal``: with no commands no
      reveal arrives, so the quorum is missed → re-recruit → ``commit`` → ``reveal`` →
      ``expired``: ``T_delib + 2·(T_commit + T_reveal)`` (a later entry point, e.g. a
      revote's ``commit``, has a suffix of this chain);
    * a ``reveal`` phase that already holds a quorum → ``arbitration`` → ``rejected``:
      ``T_reveal + T_arb``;
    * ``disputed``: commit phase then reveal phase, ``T_commit + T_reveal`` (dominated).

    Hence ``max(T_fast, T_delib + 2·(T_commit + T_reveal), T_reveal + T_arb)``.
    """
    return max(p.T_fast, p.T_delib + 2 * (p.T_commit + p.T_reveal), p.T_reveal + p.T_arb)


def deep_snapshot(obj: Any) -> Any:
    """Every piece of data reachable from ``obj`` as plain values (callables and the
    ``transitions`` machine skipped).  Generic on purpose: it does not trust the
    orchestrator to list its own fields, so a counter bumped anywhere is seen."""
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, dict):
        return {repr(k): deep_snapshot(v) for k, v in obj.items() if not callable(v)}
    if isinstance(obj, list | tuple):
        return [deep_snapshot(v) for v in obj]
    if isinstance(obj, set | frozenset):
        return sorted(repr(deep_snapshot(v)) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: deep_snapshot(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Machine):
        return None
    return {
        k: deep_snapshot(v)
        for k, v in vars(obj).items()
        if not callable(v) and not isinstance(v, Machine)
    }


@dataclasses.dataclass(frozen=True)
class Commit:
    """What the test committed: the hash it sent and the opening it kept."""

    hex: str
    vote: str | None  # None: a random hash the test cannot open
    reason: str = ""
    salt: str = ""
    hash_round: int = 0  # the round the hash was computed for (!= ballot round: a replay)


def _votes(kind: str | None) -> tuple[str, str]:
    return ("retract", "keep") if kind == "dispute" else ("accept", "reject")


class LifecycleMachine(RuleBasedStateMachine):
    """The orchestrator under every command; ``ORCH`` is swapped for mutants."""

    ORCH: ClassVar[type[Orchestrator]] = Orchestrator

    def __init__(self) -> None:
        super().__init__()
        self.orch = self.ORCH(PARAMS, AGENTS)
        self.twin = self.ORCH(PARAMS, AGENTS)
        self.log: list[Any] = []
        self.rng = random.Random(2024)
        self.pub: dict[str, Any] = self.orch.public_state()["artifacts"]
        # the model
        self.reg: dict[str, Agent] = {a.id: a for a in AGENTS}
        self.state: dict[str, str] = {}
        self.commits: dict[tuple[str, int, str], Commit] = {}
        self.last_commit: dict[tuple[str, str], Commit] = {}
        self.reveals: dict[tuple[str, int], dict[str, Commit]] = {}
        self.objected: set[str] = set()
        self.hidden: dict[str, bool] = {}
        self.legit: dict[str, str] = {}  # artifact -> path the model verified for its activation
        # LC-SAFE-3 over the events seen, not over the counters the steps maintain
        self.opened: Counter[tuple[str, str]] = Counter()
        self.drains = 0
        self.set_agents = 0
        self.steps = 0

    # --- plumbing -------------------------------------------------------------------------

    def do(self, cmd: Any, alt: Any = None) -> Observation:
        """Apply ``cmd`` to the orchestrator (``alt``, same but other secrets, to the twin)."""
        self.steps += 1
        before = deep_snapshot(self.orch)
        pub_before = self.pub
        reg_before = dict(self.reg)
        obs = self.orch.apply(cmd)
        assert set(obs) == {"result", "events"}, f"OBS: malformed observation {obs}"
        REACHED["result:" + obs["result"]] += 1
        self.log.append(cmd)
        for e in obs["events"]:
            if e["event"] in ("violation", "penalty"):
                REACHED[e["event"] + ":" + e["kind"]] += 1
        if obs["result"] != "ok":
            assert deep_snapshot(self.orch) == before, (
                f"REFUSAL: {cmd!r} was refused ({obs['result']}) but changed the state"
            )
            assert all(e["event"] == "violation" for e in obs["events"]), "REFUSAL: events"
        twin_obs = self.twin.apply(cmd if alt is None else alt)
        assert twin_obs == obs, f"CR-1: observation depends on a secret vote: {obs} != {twin_obs}"
        self.pub = self.orch.public_state()["artifacts"]
        if obs["result"] == "ok":
            self._check_actor(cmd, reg_before)
            self._track(cmd, obs["events"], pub_before)
        if any(
            (e.get("event"), e.get("from"), e.get("to"), e.get("verdict")) in COMMIT_CLOSE
            for e in obs["events"]
        ):
            # CR-1 holds until a commit phase closes; from then on the votes may matter.
            self.twin = self.ORCH(PARAMS, AGENTS)
            for c in self.log:
                self.twin.apply(c)
        return obs

    def _check_actor(self, cmd: dict[str, Any], reg: dict[str, Agent]) -> None:
        op = cmd["op"]
        if op in AGENT_OPS:
            a = reg[cmd["agent"]]
            assert not a.barred, f"LC-SAFE-4: barred {a.id} succeeded with {op}"
            tier = EVENTS[op].min_tier or 0
            assert a.tier >= tier, f"LC-SAFE-4: tier-{a.tier} {a.id} succeeded with {op}"
        if op == "set_agent":
            old = reg.get(cmd["agent"])
            self.reg[cmd["agent"]] = Agent(
                cmd["agent"],
                cmd["tier"],
                float(cmd.get("weight", old.weight if old else PARAMS.w_min)),
                float(cmd.get("reputation", old.reputation if old else 0.0)),
                Sanction(cmd.get("sanction", old.sanction if old else "none")),
                frozenset(cmd.get("subscriptions", old.subscriptions if old else ())),
            )

    def _w(self, agent: str) -> int:
        a = self.reg[agent]
        return micro(PARAMS.w_min) if a.tier == 0 else micro(a.weight)

    def _model_tally(self, x: str, rnd: int, yes: str) -> tuple[int, int, int, int]:
        """(yes weight, no weight, yes voters, no voters) of the verified reveals."""
        revs = self.reveals.get((x, rnd), {})
        y = sum(self._w(v) for v, c in revs.items() if c.vote == yes)
        n = sum(self._w(v) for v, c in revs.items() if c.vote != yes)
        ny = sum(1 for c in revs.values() if c.vote == yes)
        return y, n, ny, len(revs) - ny

    def _track(
        self, cmd: dict[str, Any], events: list[dict[str, Any]], before: dict[str, Any]
    ) -> None:
        """Follow the events with the model; check each against the table and the rules."""
        op = cmd["op"]
        REACHED["op:" + op] += 1
        if op == "object":
            self.objected.add(cmd["artifact"])
        if op == "resubmit":
            self.hidden[cmd["artifact"]] = False
        for ev in events:
            if ev["event"] in ("violation", "penalty"):
                continue
            x, src, dst, verdict = ev["artifact"], ev["from"], ev["to"], ev.get("verdict")
            if ev["event"] == "forget":
                assert src != DISPUTED, f"LC-SAFE-6: {x} forgotten while disputed"
            row = TRIPLES.get((ev["event"], src, dst))
            assert row is not None and row.verdict == verdict, f"LC-SAFE-1: {ev} is not a table row"
            if ev["event"] in ("dispute", "urgent_report", "resubmit"):
                self.opened[(x, "resubmit" if ev["event"] == "resubmit" else "dispute")] += 1
            known = self.state.get(x, NEW)
            assert known != FORGOTTEN, f"LC-SAFE-6: forgotten {x} moved again: {ev}"
            assert src == known, f"LC-SAFE-1: {ev} but the model had {x} in {known}"
            self.state[x] = dst
            REACHED[f"{ev['event']}:{src}->{dst}"] += 1
            event(f"{ev['event']} {src}->{dst}")
            rnd = before[x]["round"] if x in before else 0
            if ev["event"] == "urgent_report":
                self.hidden[x] = True
            if src == "reveal" and ev["event"] == "timeout":
                y, n, ny, nn = self._model_tally(x, rnd, "accept")
                side = PARAMS.tally_min_side  # TALLY-1: a side needs this many voters
                if ny + nn < PARAMS.quorum:
                    want = {"rerecruit", "expire"}
                elif y * 10**6 >= micro(PARAMS.tau_accept) * (y + n) and ny >= side:
                    want = {"accept"}
                elif y * 10**6 <= micro(PARAMS.tau_reject) * (y + n) and nn >= side:
                    want = {"reject"}
                else:
                    want = {"undecided"}
                assert verdict in want, (
                    f"CR-2: tally verdict {verdict} but the verified reveals give {want}"
                )
            if src == DISPUTED and dst != DISPUTED:
                y, n, ny, nn = self._model_tally(x, rnd, "retract")
                side = PARAMS.tally_min_side
                retract = (
                    ny + nn >= PARAMS.q_dispute
                    and ny >= side
                    and (y * 10**6 >= micro(PARAMS.tau_retract) * (y + n) or nn < side)
                )
                assert (dst == "retracted") == retract, (
                    f"CR-2: dispute {verdict}, model {y},{n},{ny},{nn}"
                )
                if not retract:
                    self.hidden[x] = False
            if dst == ACTIVE and src != ACTIVE:
                self._check_activation(x, ev, cmd, src)

    def _check_activation(self, x: str, ev: dict[str, Any], cmd: dict[str, Any], src: str) -> None:
        """LC-SAFE-1: the model's own account of why ``x`` may become active."""
        if src == "fast_track":
            assert x not in self.objected, f"LC-SAFE-1: {x} fast-tracked despite an objection"
            path = "fast_track"
        elif src == "reveal":
            path = "tally"  # the verdict was checked against the model's tally above
        elif src == "arbitration":
            assert cmd["op"] == "arbitrate" and cmd["outcome"] == "accept", f"LC-SAFE-1: {ev}"
            path = "arbiter"
        elif src == DISPUTED:
            path = "dispute_kept"
        else:
            raise AssertionError(f"LC-SAFE-1: {x} became active from {src}")
        self.legit[x] = path
        REACHED["active_by:" + path] += 1

    # --- drawing helpers --------------------------------------------------------------------

    def _artifact(self, data: st.DataObject, states: set[str] | frozenset[str]) -> str:
        """Mostly an artifact in one of ``states``, else any existing one, else any id."""
        cands = sorted(x for x, s in self.state.items() if s in states)
        strategy = st.sampled_from(ALL_ARTIFACT_IDS)
        if self.state:
            strategy = st.sampled_from(sorted(self.state)) | strategy
        if cands:
            strategy = st.sampled_from(cands) | st.sampled_from(cands) | strategy
        return data.draw(strategy, label="artifact")

    def _agent(self, data: st.DataObject, prefer: list[str] | None = None) -> str:
        base = st.sampled_from(AGENT_IDS)
        return data.draw(st.sampled_from(prefer) | base if prefer else base, label="agent")

    def _pending(self, phase: str, committed: bool) -> list[tuple[str, str]]:
        out = []
        for x, a in sorted(self.pub.items()):
            if a["phase"] != phase or a["state"] not in ("commit", "reveal", DISPUTED):
                continue
            for v in a["reviewers"]:
                if committed:
                    c = self.commits.get((x, a["round"], v))
                    if c and c.vote and v not in (a["revealed"] or {}):
                        out.append((x, v))
                elif v not in a["committed"]:
                    out.append((x, v))
        return out

    @staticmethod
    def _some(data: st.DataObject, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Each pending voter acts now with probability 3/4 (at least one acts)."""
        acts = data.draw(st.lists(st.sampled_from([True, True, True, False]),
                                  min_size=len(pairs), max_size=len(pairs)))  # fmt: skip
        return [p for p, a in zip(pairs, acts, strict=True) if a] or pairs[:1]

    def _replays(self) -> list[tuple[str, str]]:
        return [
            (x, v)
            for x, v in self._pending("commit", committed=False)
            if (v, x) in self.last_commit and self.last_commit[(v, x)].vote is not None
        ]

    def _able(self, agent: str, op: str) -> bool:
        a = self.reg.get(agent)
        return a is not None and not a.barred and a.tier >= (EVENTS[op].min_tier or 0)

    # --- the start: often an artifact deep in its lifecycle -------------------------------

    @initialize(data=st.data(), start=st.sampled_from(PREAMBLES), x=st.sampled_from(ARTIFACT_IDS))
    def preamble(self, data: st.DataObject, start: str | None, x: str) -> None:
        """Most examples start with ``x`` brought, through the same checked steps as any
        other command, to a state a random history of 80 steps reaches only near its end,
        if at all: ``arbitration`` (a split review), ``rejected`` (two reject votes) or
        ``retracted`` (accepted, disputed, two retract votes). Arbitration, for one, needs a
        proposal, recruitment, T_delib, commits, T_commit, reveals and T_reveal — too late,
        otherwise, for the arbiter's outcomes, a revote's stale reveals or the timeout."""
        if start is None:
            return
        slot = data.draw(st.sampled_from(SLOTS), label="slot")
        self.do({"op": "propose", "agent": "n0", "artifact": x, "slot": slot, "digest": "d0"})
        self.do({"op": "recruit", "artifact": x})  # a tier-0 submitter: formal review
        for _ in range(PARAMS.T_delib):
            self.do({"op": "tick"})
        first = {"arbitration": (True, False), "rejected": (False, False)}.get(start)
        if not self._ballot(data, x, first or (True, True)) or start != "retracted":
            return
        disputers = [g for y, g in self._disputable() if y == x]
        if disputers:
            self.do({"op": "dispute", "agent": disputers[0], "artifact": x, "reason": "start"})
            self._ballot(data, x, (True, True))

    def _ballot(self, data: st.DataObject, x: str, votes: tuple[bool, bool]) -> bool:
        """Two reviewers of ``x``'s open ballot commit ``votes`` (True: accept or retract),
        reveal them, and the ballot's windows run out; False if it has no two free voters."""
        pairs = [(v, w) for y, v, w in self._free_pairs() if y == x]
        if not pairs:
            return False
        voters = pairs[0]
        yes, no = _votes(self.pub[x]["ballot"])
        for voter, vote in zip(voters, votes, strict=True):
            self._commit(x, voter, data, None, vote=yes if vote else no)
        for _ in range(PARAMS.T_commit):
            self.do({"op": "tick"})
        for voter in voters:
            self._reveal(x, voter)
        for _ in range(PARAMS.T_reveal):
            self.do({"op": "tick"})
        return True

    # --- rules: every command, valid and invalid --------------------------------------------

    @rule(
        batch=st.lists(
            st.tuples(
                st.sampled_from(AGENT_IDS),
                st.sampled_from(ARTIFACT_IDS),
                st.sampled_from(SLOTS),
                st.sampled_from(DIGESTS),
                EVIDENCE,
            ),
            min_size=1,
            max_size=3,
        )
    )
    def propose(self, batch: list[tuple[str, str, str, str, list[str]]]) -> None:
        """A few proposals at once (agents propose in parallel within a round)."""
        for agent, artifact, slot, digest, evidence in batch:
            self.do({"op": "propose", "agent": agent, "artifact": artifact, "slot": slot,
                     "digest": digest, "evidence": evidence})  # fmt: skip

    @rule(artifact=st.sampled_from(ALL_ARTIFACT_IDS))
    def recruit(self, artifact: str) -> None:
        self.do({"op": "recruit", "artifact": artifact})

    @rule(data=st.data())
    def object(self, data: st.DataObject) -> None:
        x = self._artifact(data, {"fast_track"})
        prefer = self.pub[x]["reviewers"] if x in self.pub else None
        self.do({"op": "object", "agent": self._agent(data, prefer), "artifact": x})

    def _commit(
        self, x: str, v: str, data: st.DataObject, replay: Commit | None, vote: str | None = None
    ) -> None:
        a = self.pub[x]
        rnd, kind = a["round"], a["ballot"]
        yes, no = _votes(kind)
        if replay is None:
            if vote is None:
                vote = data.draw(st.sampled_from([yes, no]), label="vote")
            reason = data.draw(st.sampled_from(REASONS), label="reason")
            c = Commit(commitment(v, x, rnd, vote, reason, salt := make_salt(self.rng)), vote,
                       reason, salt, rnd)  # fmt: skip
        else:
            c = replay
        other = no if c.vote == yes else yes
        alt = commitment(v, x, rnd, other, "alt", make_salt(self.rng))
        cmd = {"op": "commit_vote", "agent": v, "artifact": x, "commitment": c.hex}
        obs = self.do(cmd, {**cmd, "commitment": alt})
        if self._able(v, "commit_vote"):
            assert obs["result"] == "ok", f"RULES: an eligible reviewer's commit refused: {obs}"
        if obs["result"] == "ok":
            self.commits[(x, rnd, v)] = c
            self.last_commit[(v, x)] = c
            REACHED["stale_commit" if replay else "honest_commit"] += 1

    @precondition(lambda self: bool(self._pending("commit", committed=False)))
    @rule(data=st.data())
    def commit_honest(self, data: st.DataObject) -> None:
        """Several reviewers commit in one step (a ballot needs a quorum within its window)."""
        for x, v in self._some(data, self._pending("commit", committed=False)):
            if (x, v) in self._pending("commit", committed=False):
                old = self.last_commit.get((v, x))
                # a reviewer of an earlier round sometimes replays its old hash (CR-2)
                replay = old is not None and old.vote is not None and data.draw(st.booleans())
                self._commit(x, v, data, old if replay else None)

    def _free_pairs(self) -> list[tuple[str, str, str]]:
        """(artifact, reviewer, reviewer): a ballot in its commit phase with two eligible
        reviewers who have not committed yet."""
        out = []
        for x, a in sorted(self.pub.items()):
            if a["phase"] != "commit" or a["state"] not in ("commit", DISPUTED):
                continue
            free = [v for v in a["reviewers"]
                    if v not in a["committed"] and self._able(v, "commit_vote")]  # fmt: skip
            out += [(x, free[0], free[1])] if len(free) >= 2 else []
        return out

    @precondition(lambda self: bool(self._free_pairs()))
    @rule(data=st.data())
    def commit_split(self, data: st.DataObject) -> None:
        """Two reviewers commit opposite votes: neither side reaches ``tally_min_side`` or
        the accept share is between the thresholds, so the tally is undecided and a review
        goes to arbitration (LC-SAFE-1's arbiter path) — drawn votes rarely split."""
        x, v, w = data.draw(st.sampled_from(self._free_pairs()), label="split")
        yes, no = _votes(self.pub[x]["ballot"])
        self._commit(x, v, data, None, vote=yes)
        self._commit(x, w, data, None, vote=no)

    @precondition(lambda self: bool(self._replays()))
    @rule(data=st.data())
    def commit_replayed(self, data: st.DataObject) -> None:
        """Commit, in a new round, the hash made for an earlier round (CR-2: stale)."""
        x, v = data.draw(st.sampled_from(self._replays()))
        self._commit(x, v, data, self.last_commit[(v, x)])

    @rule(data=st.data(), digest=st.binary(min_size=32, max_size=32))
    def commit_any(self, data: st.DataObject, digest: bytes) -> None:
        x = self._artifact(data, {"commit", DISPUTED})
        agent = self._agent(data, self.pub[x]["reviewers"] if x in self.pub else None)
        cmd = {"op": "commit_vote", "agent": agent, "artifact": x, "commitment": digest.hex()}
        obs = self.do(cmd, {**cmd, "commitment": bytes(b ^ 0xFF for b in digest).hex()})
        if obs["result"] == "ok":
            rnd = self.pub[x]["round"]
            self.commits[(x, rnd, agent)] = Commit(digest.hex(), None, hash_round=rnd)

    @precondition(lambda self: bool(self._pending("reveal", committed=True)))
    @rule(data=st.data())
    def reveal_honest(self, data: st.DataObject) -> None:
        """Reveal exactly what was committed (a replayed hash must then be refused)."""
        for x, v in self._some(data, self._pending("reveal", committed=True)):
            if (x, v) in self._pending("reveal", committed=True):
                self._reveal(x, v)

    def _reveal(self, x: str, v: str) -> None:
        rnd = self.pub[x]["round"]
        c = self.commits[(x, rnd, v)]
        obs = self.do({"op": "reveal_vote", "agent": v, "artifact": x, "vote": c.vote,
                       "reason": c.reason, "salt": c.salt})  # fmt: skip
        if c.hash_round != rnd:
            assert obs["result"] != "ok", f"CR-2: a reveal of round {c.hash_round} counted in {rnd}"
            REACHED["stale_reveal_refused"] += obs["result"] == "bad_reveal"
        elif self._able(v, "reveal_vote"):
            assert obs["result"] == "ok", f"RULES: an honest reveal was refused: {obs}"
        if obs["result"] == "ok":
            self.reveals.setdefault((x, rnd), {})[v] = c

    def _stale_reveals(self) -> list[tuple[str, str]]:
        return [
            (x, v)
            for x, v in self._pending("reveal", committed=True)
            if self.commits[(x, self.pub[x]["round"], v)].hash_round != self.pub[x]["round"]
        ]

    @precondition(lambda self: bool(self._stale_reveals()))
    @rule(data=st.data())
    def reveal_stale(self, data: st.DataObject) -> None:
        """A reviewer who replayed an earlier round's hash reveals it: CR-2 refuses it."""
        x, v = data.draw(st.sampled_from(self._stale_reveals()), label="stale")
        self._reveal(x, v)

    @precondition(lambda self: bool(self._pending("reveal", committed=True)))
    @rule(data=st.data(), how=st.sampled_from(["vote", "salt", "reason", "kind"]))
    def reveal_mismatched(self, data: st.DataObject, how: str) -> None:
        x, v = data.draw(st.sampled_from(self._pending("reveal", committed=True)))
        rnd = self.pub[x]["round"]
        c = self.commits[(x, rnd, v)]
        yes, no = _votes(self.pub[x]["ballot"])
        vote, reason, salt = c.vote, c.reason, c.salt
        if how == "vote":
            vote = no if vote == yes else yes
        elif how == "salt":
            salt = make_salt(self.rng)
        elif how == "reason":
            reason = reason + "!"
        else:
            vote = "retract" if vote in ("accept", "reject") else "accept"
        obs = self.do({"op": "reveal_vote", "agent": v, "artifact": x, "vote": vote,
                       "reason": reason, "salt": salt})  # fmt: skip
        assert obs["result"] != "ok", f"CR-2: a mismatched reveal ({how}) was accepted"
        if self._able(v, "reveal_vote"):
            assert obs["result"] == "bad_reveal", f"RULES: mismatched reveal gave {obs}"
            assert obs["events"] == [{"event": "violation", "agent": v, "kind": "bad_reveal"}]

    @rule(data=st.data(), outcome=st.sampled_from(["accept", "reject", "revote"]))
    def arbitrate(self, data: st.DataObject, outcome: str) -> None:
        x = self._artifact(data, {"arbitration"})
        self.do({"op": "arbitrate", "agent": self._agent(data, ["a1", "a2"]), "artifact": x,
                 "outcome": outcome})  # fmt: skip

    @precondition(lambda self: "arbitration" in self.state.values())
    @rule(data=st.data(), outcome=st.sampled_from(["revote", "accept", "reject"]))
    def arbitrate_more(self, data: st.DataObject, outcome: str) -> None:
        """Arbitration is short-lived (T_arb): this rule runs only while some artifact is
        in it, and asks a tier-3 agent who is not one of its reviewers (a revote opens the
        stale-reveal path, CR-2)."""
        xs = sorted(x for x, st_ in self.state.items() if st_ == "arbitration")
        x = data.draw(st.sampled_from(xs), label="artifact")
        reviewers = set(self.pub[x]["reviewers"]) if x in self.pub else set()
        free = [a for a in ("a1", "a2") if a not in reviewers]
        agent = data.draw(st.sampled_from(free or ["a1", "a2"]), label="agent")
        self.do({"op": "arbitrate", "agent": agent, "artifact": x, "outcome": outcome})

    @rule(
        data=st.data(),
        op=st.sampled_from(["dispute", "urgent_report"]),
        reason=st.sampled_from(REASONS),
    )
    def dispute(self, data: st.DataObject, op: str, reason: str) -> None:
        x = self._artifact(data, {ACTIVE})
        self.do({"op": op, "agent": self._agent(data), "artifact": x, "reason": reason})

    @rule(data=st.data(), digest=st.sampled_from(DIGESTS), evidence=EVIDENCE)
    def resubmit(self, data: st.DataObject, digest: str, evidence: list[str]) -> None:
        x = self._artifact(data, RESUBMITTABLE)
        prefer = [self.pub[x]["submitter"]] if x in self.pub else None
        self.do({"op": "resubmit", "agent": self._agent(data, prefer), "artifact": x,
                 "digest": digest, "evidence": evidence})  # fmt: skip

    @rule(data=st.data(), confidence=st.sampled_from([None, 1.0, 0.5, 0]))
    def forget_vote(self, data: st.DataObject, confidence: float | None) -> None:
        """Forget votes come in groups (a quorum of weight is needed to forget anything)."""
        x = self._artifact(data, FORGET_VOTABLE)
        voters = data.draw(st.lists(st.sampled_from(AGENT_IDS), min_size=1, max_size=6))
        for agent in voters:
            cmd: dict[str, Any] = {"op": "forget_vote", "agent": agent, "artifact": x}
            if confidence is not None:
                cmd["confidence"] = confidence
            self.do(cmd)

    @rule(
        agent=st.sampled_from([*AGENT_IDS, "new1"]),
        tier=st.integers(0, 3),
        weight=st.sampled_from([None, 0.1, 0.5, 1.0, 2.0]),
        sanction=st.sampled_from([None, None, None, "none", "none", "warned", "rate_limited",
                                  "suspended", "banned", "quarantined"]),
        subscriptions=st.sampled_from([None, [], ["s0"], ["s0", "s1"]]),
    )  # fmt: skip
    @precondition(lambda self: self.set_agents < 3)
    def set_agent(self, agent: str, tier: int, weight: float | None, sanction: str | None,
                  subscriptions: list[str] | None) -> None:  # fmt: skip
        cmd: dict[str, Any] = {"op": "set_agent", "agent": agent, "tier": tier}
        for k, v in (("weight", weight), ("sanction", sanction), ("subscriptions", subscriptions)):
            if v is not None:
                cmd[k] = v
        self.set_agents += 1  # a few registry changes per run; more would bar everyone
        obs = self.do(cmd)
        want = "invalid_input" if weight == 2.0 else "ok"
        assert obs["result"] == want, f"RULES: set_agent {cmd} gave {obs}"

    @rule(data=st.data())
    def malformed(self, data: st.DataObject) -> None:
        """Input that is not a well-formed command is `invalid_input`, never an exception."""
        good = {"op": "dispute", "agent": "d1", "artifact": "x0", "reason": ""}
        junk: Any = data.draw(
            st.sampled_from(
                [
                    None,
                    [],
                    "tick",
                    42,
                    {},
                    {"op": "nope"},
                    {"op": None},
                    {**good, "extra": 1},
                    {k: v for k, v in good.items() if k != "agent"},
                    {**good, "agent": 7},
                    {**good, "agent": ""},
                    {**good, "reason": None},
                    {"op": "propose", "agent": "d1", "artifact": "x9", "slot": "", "digest": "d"},
                    {"op": "propose", "agent": "d1", "artifact": "x9", "slot": "s0", "digest": "d",
                     "evidence": "e1"},
                    {"op": "commit_vote", "agent": "d1", "artifact": "x0", "commitment": "ab" * 31},
                    {"op": "commit_vote", "agent": "d1", "artifact": "x0", "commitment": "AB" * 32},
                    {"op": "reveal_vote", "agent": "d1", "artifact": "x0", "vote": "maybe",
                     "reason": "", "salt": "00" * 32},
                    {"op": "reveal_vote", "agent": "d1", "artifact": "x0", "vote": "accept",
                     "reason": "", "salt": "zz" * 32},
                    {"op": "arbitrate", "agent": "a1", "artifact": "x0", "outcome": "maybe"},
                    {"op": "forget_vote", "agent": "d1", "artifact": "x0", "confidence": 1.5},
                    {"op": "forget_vote", "agent": "d1", "artifact": "x0", "confidence": True},
                    {"op": "forget_vote", "agent": "d1", "artifact": "x0", "confidence": NAN},
                    {"op": "set_agent", "agent": "d1", "tier": 4},
                    {"op": "set_agent", "agent": "d1", "tier": True},
                    {"op": "set_agent", "agent": "d1", "tier": 1, "sanction": "jailed"},
                    {"op": "tick", "now": 3},
                    {"op": "dispute", "agent": "d1", "artifact": "x0", "reason": "\ud800"},
                ]
            )
        )  # fmt: skip
        obs = self.do(junk)
        is_agent_op = isinstance(junk, dict) and junk.get("op") in AGENT_OPS
        sender = junk.get("agent") if is_agent_op else None
        blame = (
            [{"event": "violation", "agent": sender, "kind": "malformed"}]
            if isinstance(sender, str) and sender in self.orch.agents
            else []
        )  # a registered agent's malformed command is its violation (docs/design.md §4)
        assert obs == {"result": "invalid_input", "events": blame}, f"INPUT: {junk!r} gave {obs}"

    @precondition(lambda self: bool(self._pending("commit", committed=False)))
    @rule(data=st.data())
    def commit_honest_more(self, data: st.DataObject) -> None:
        """Alias: honest voting is most of what reviewers do."""
        self.commit_honest(data)

    @precondition(lambda self: bool(self._pending("reveal", committed=True)))
    @rule(data=st.data())
    def reveal_honest_more(self, data: st.DataObject) -> None:
        """Alias: honest voting is most of what reviewers do."""
        self.reveal_honest(data)

    # --- focused rules: enabled only when they can make progress --------------------------

    def _resubmittable(self) -> list[str]:
        return [
            x
            for x, a in sorted(self.pub.items())
            if a["state"] in RESUBMITTABLE
            and self._able(a["submitter"], "resubmit")
            and self.reg[a["submitter"]].reputation >= PARAMS.r_resubmit
            and a["resubmit_count"] < PARAMS.max_resubmit
        ]

    @precondition(lambda self: bool(self._resubmittable()))
    @rule(data=st.data())
    def resubmit_focused(self, data: st.DataObject) -> None:
        x = data.draw(st.sampled_from(self._resubmittable()))
        a = self.pub[x]
        self.do({"op": "resubmit", "agent": a["submitter"], "artifact": x,
                 "digest": (a["digest"] or "d") + "'"})  # fmt: skip

    def _arbiters(self) -> list[tuple[str, str, str]]:
        """(artifact, arbiter, outcome) for every open arbitration the honest arbiters decide.

        Their policy is fixed per artifact (``ARBITER_POLICY``), so a replayed example
        decides the same way, and every outcome — and the timeout, for the artifacts no
        arbiter takes — is reached whichever artifacts a run happens to bring to arbitration.
        The ``arbitrate`` rules add arbitrary outcomes by arbitrary agents."""
        return [
            (x, g, outcome)
            for x, a in sorted(self.pub.items())
            if a["state"] == "arbitration" and (outcome := ARBITER_POLICY[x]) is not None
            for g in sorted(self.reg)
            if self._able(g, "arbitrate") and g != a["submitter"] and g not in a["reviewers"]
        ]

    def _arbitrate_focused(self, data: st.DataObject) -> None:
        x, g, outcome = data.draw(st.sampled_from(self._arbiters()), label="arbiter")
        obs = self.do({"op": "arbitrate", "agent": g, "artifact": x, "outcome": outcome})
        assert obs["result"] in ("ok", "limit_reached"), f"RULES: arbitrate gave {obs}"

    @precondition(
        lambda self: bool(
            self._arbiters()
            or self._pending("commit", committed=False)
            or self._pending("reveal", committed=True)
        )
    )
    @rule(data=st.data())
    def participants_act(self, data: st.DataObject) -> None:
        """Everyone with something due acts: pending commits, reveals and one arbitration."""
        if self._pending("commit", committed=False):
            self.commit_honest(data)
        if self._pending("reveal", committed=True):
            self.reveal_honest(data)
        if self._arbiters():
            self._arbitrate_focused(data)

    def _objectors(self) -> list[tuple[str, str]]:
        return [
            (x, g)
            for x, a in sorted(self.pub.items())
            if a["state"] == "fast_track"
            for g in a["reviewers"]
            if self._able(g, "object") and g != a["submitter"]
        ]

    @precondition(lambda self: bool(self._objectors()))
    @rule(data=st.data())
    def object_focused(self, data: st.DataObject) -> None:
        """Objections send fast-track artifacts to the formal review (tallies, arbitration)."""
        x, g = data.draw(st.sampled_from(self._objectors()))
        obs = self.do({"op": "object", "agent": g, "artifact": x})
        assert obs["result"] == "ok", f"RULES: an eligible objection was refused: {obs}"

    def _disputable(self) -> list[tuple[str, str]]:
        return [
            (x, g)
            for x, a in sorted(self.pub.items())
            if a["state"] == ACTIVE and a["dispute_count"] < PARAMS.max_disputes
            for g in sorted(self.reg)
            if self._able(g, "dispute")
        ]

    @precondition(lambda self: bool(self._disputable()))
    @rule(data=st.data(), op=st.sampled_from(["dispute", "urgent_report"]))
    def dispute_focused(self, data: st.DataObject, op: str) -> None:
        x, g = data.draw(st.sampled_from(self._disputable()))
        self.do({"op": op, "agent": g, "artifact": x, "reason": "focused"})

    @precondition(lambda self: bool(self._pending("commit", committed=False)))
    @rule(data=st.data())
    def commit_honest_again(self, data: st.DataObject) -> None:
        """Alias (a ballot's window is a few ticks; reviewers must be likely to use it)."""
        self.commit_honest(data)

    @precondition(lambda self: bool(self._pending("reveal", committed=True)))
    @rule(data=st.data())
    def reveal_honest_again(self, data: st.DataObject) -> None:
        """Alias (a ballot's window is a few ticks; reviewers must be likely to use it)."""
        self.reveal_honest(data)

    def _arbiter_may_act(self, data: st.DataObject) -> None:
        """Before the clock moves, an honest arbiter decides one open arbitration."""
        if self._arbiters():
            self._arbitrate_focused(data)

    @rule(data=st.data())
    def tick(self, data: st.DataObject) -> None:
        self._arbiter_may_act(data)
        self.do({"op": "tick"})

    @rule(data=st.data())
    def tick_again(self, data: st.DataObject) -> None:
        """Ticks are a third of a lifecycle's steps; a second rule makes them frequent."""
        self._arbiter_may_act(data)
        self.do({"op": "tick"})

    @precondition(lambda self: self.drains == 0 and self.steps >= 60)
    @rule()
    def drain(self) -> None:
        """LC-LIVE-1: with no new commands, every artifact is stable within the bound."""
        self.drains += 1
        for _ in range(drain_bound(PARAMS)):
            self.do({"op": "tick"})
        stuck = {x: s for x, s in self.state.items() if s not in STABLE}
        assert not stuck, f"LC-LIVE-1: not stable after {drain_bound(PARAMS)} ticks: {stuck}"
        REACHED["drained"] += 1

    # --- invariants ---------------------------------------------------------------------------

    @invariant()
    def lc_safe_1_legitimate_activation(self) -> None:
        for x, a in self.pub.items():
            assert a["state"] == self.state.get(x), f"LC-SAFE-1: {x} changed state silently"
            if a["state"] == ACTIVE:
                path = (a["decision"] or {}).get("path")
                assert path in LEGIT_ACTIVE_PATHS, f"LC-SAFE-1: {x} active by {path}"
                assert self.legit.get(x) == path, (
                    f"LC-SAFE-1: {x} active by {path}, model {self.legit.get(x)}"
                )

    @invariant()
    def lc_safe_2_one_active_per_slot(self) -> None:
        active = Counter(a["slot"] for a in self.pub.values() if a["state"] == ACTIVE)
        assert all(n <= 1 for n in active.values()), f"LC-SAFE-2: {active}"

    @invariant()
    def lc_safe_3_bounded_counts(self) -> None:
        # the disputes and resubmissions the events show, counted here (a counter the
        # orchestrator stopped counting would never exceed its bound), and the counters
        # the public state reports agree with them
        for x, a in self.pub.items():
            disputes, resubmits = self.opened[(x, "dispute")], self.opened[(x, "resubmit")]
            assert disputes <= PARAMS.max_disputes, f"LC-SAFE-3: {x} disputed {disputes} times"
            assert resubmits <= PARAMS.max_resubmit, f"LC-SAFE-3: {x} resubmitted {resubmits}"
            assert (a["dispute_count"], a["resubmit_count"]) == (disputes, resubmits), (
                f"LC-SAFE-3: {x} reports {a['dispute_count']}/{a['resubmit_count']}, "
                f"the events show {disputes}/{resubmits}"
            )

    @invariant()
    def lc_safe_5_hidden(self) -> None:
        for x, a in self.pub.items():
            assert a["hidden"] == self.hidden.get(x, False), f"LC-SAFE-5: {x} hidden={a['hidden']}"
        for slot in SLOTS:
            served = self.orch.serve(slot)
            if served is not None:
                a = self.pub[served["artifact"]]
                assert not a["hidden"] and a["state"] == ACTIVE, f"LC-SAFE-5: served {served}"

    @invariant()
    def lc_safe_6_forgotten(self) -> None:
        for x, a in self.pub.items():
            if a["state"] == FORGOTTEN:
                t = a["tombstone"]
                assert t and t["artifact"] == x and t["slot"] == a["slot"], f"LC-SAFE-6: {x} {t}"
                assert a["digest"] is None and a["evidence"] is None, f"LC-SAFE-6: {x} content"

    @invariant()
    def cr_2_binding(self) -> None:
        for (x, rnd), revs in self.reveals.items():
            for v, c in revs.items():
                assert c.vote is not None
                opened = commitment(v, x, rnd, c.vote, c.reason, c.salt)
                assert opened == self.commits[(x, rnd, v)].hex, f"CR-2: {v}'s reveal on {x}/{rnd}"
        for x, a in self.pub.items():
            if a["revealed"] is not None:
                model = {v: c.vote for v, c in self.reveals.get((x, a["round"]), {}).items()}
                assert a["revealed"] == model, f"CR-2: {x} revealed {a['revealed']} != {model}"

    @invariant()
    def cr_1_vote_concealment(self) -> None:
        twin = self.twin.public_state()["artifacts"]
        assert twin == self.pub, (
            "CR-1: the public state depends on a vote before its commit phase closed"
        )


#: Everything the ci run must reach, or it tests nothing (reachability witnesses,
#: docs/design.md §7).
MUST_REACH = (
    "op:dispute",
    "op:urgent_report",
    "op:arbitrate",
    "op:resubmit",
    "op:object",
    "timeout:disputed->retracted",
    "timeout:disputed->active",
    "timeout:reveal->arbitration",
    "timeout:reveal->active",
    "timeout:reveal->rejected",
    "timeout:reveal->commit",
    "timeout:reveal->expired",
    "timeout:arbitration->rejected",
    "timeout:fast_track->active",
    "arbitrate:arbitration->commit",
    "supersede:active->superseded",
    "forget:active->forgotten",
    "active_by:tally",
    "active_by:arbiter",
    "active_by:dispute_kept",
    "stale_commit",
    "stale_reveal_refused",
    "violation:bad_reveal",
    "violation:rate_limited",
    "penalty:unfounded_urgent_report",
    "drained",
    *("result:" + c.value for c in ErrorCode),
)


@pytest.mark.budget  # holds at the ci profile's budget: make test-fast skips it
def test_lifecycle_reaches() -> None:
    """All invariants above over the profile's examples, then: was everything reached?"""
    REACHED.clear()
    run_machine(LifecycleMachine)
    missing = [k for k in MUST_REACH if REACHED[k] == 0]
    assert not missing, f"never reached: {missing} (reached: {sorted(REACHED)})"
