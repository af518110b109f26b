"""The layers integrated: reputation drives tiers drives guards; sanctions block actions;
forgetting never touches a disputed or hidden-under-review artifact (docs/design.md §2, §4, §5).

A Hypothesis ``RuleBasedStateMachine`` drives ``Community.apply`` — the orchestrator
whose registry is derived from the reputation and sanction books — with honest and
faulty agents: founders of tiers 1–3, newcomers who join mid-run, honest and lying
votes, reveals that do not open their commitment, commitments never revealed, malformed
commands, rate-limit abuse, disputes, urgent reports and forget votes.  The defaults of
docs/design.md §8 are kept where they matter for the properties (w_min 0.1, w_max 1.0, α 0.5,
so FG-1 needs ``min_active_agents`` = 12); timers and sanction thresholds are shortened
so that ladders, promotions and decisions happen within a run.

Checks (each message starts with its property id; ``test_community_mutant_is_caught``
relies on that):

* LC-SAFE-4 — every command an agent sent that succeeded was allowed *by the layers*:
  the sanction book did not bar the agent and its reputation tier (capped by the
  sanction) was at least the command's minimum tier, both read before the command; and
  after every step the orchestrator's registry equals what the books say.
* LC-SAFE-6 — a ``forget`` event never leaves ``disputed`` nor an artifact hidden under
  review.
* FG-1 — every ``forget`` had at least two active forget voters, one agent never
  forgets alone.
* TALLY-1 — every decided tally (accept, reject, retract, and a keep with quorum) had at
  least ``tally_min_side`` voters on the winning side.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from community_mutants import MUTANTS
from mutant_check import assert_mutant_caught, run_machine
from ostrom.protocol.agents import BARRING, MAX_TIER, Agent
from ostrom.protocol.commands import Observation
from ostrom.protocol.community import Community, Member
from ostrom.protocol.forgetting import fg1_min_active
from ostrom.protocol.lifecycle import DISPUTED, EVENTS, RETRACTED
from ostrom.protocol.params import Params
from ostrom.protocol.voting import commitment, make_salt

# The reachability test at the end reads what the machines above recorded in this
# process: the whole module runs on one xdist worker, in file order (--dist loadfile,
# conftest.py).

PARAMS = Params(
    reviewers=3,
    quorum=2,
    tau_accept=0.75,  # a wide undecided band: arbitration is reached often
    tau_reject=0.25,
    dispute_reviewers=4,
    q_dispute=3,  # > tally_min_side: TALLY-1's dispute-lone-keep holds (docs/thresholds.md)
    T_fast=2,
    T_delib=1,
    T_commit=3,
    T_reveal=3,
    T_arb=3,
    max_disputes=1,
    cooldown=2,
    tier1_rounds=2,
    sanction_window=8,
    sigma1=2,
    sigma2=3,
    sigma3=4,
    sigma4=6,
    T_susp=3,
    T_quarantine=3,
    seed=3,
)
assert fg1_min_active(PARAMS) == PARAMS.min_active_agents == 12  # FG-1 at the defaults

FOUNDERS = (
    Member("f0", tier=3, reputation=0.95, evidence=20, pretrusted=True),
    Member("f1", tier=3, reputation=0.9, evidence=10),
    Member("f2", tier=2, reputation=0.72, evidence=10),
    Member("f3", tier=1, reputation=0.56, evidence=4),
    Member("f4", tier=1, reputation=0.56, evidence=4),
    Member("f5", tier=1, reputation=0.6, evidence=4),
    Member("f6", tier=1, reputation=0.6, evidence=4),
)
JOINERS = tuple(f"j{i}" for i in range(9))
SLOTS = ("s0", "s1")
AGENT_OPS = {op for op, spec in EVENTS.items() if spec.actor == "agent"}

REACHED: Counter[str] = Counter()


class CommunityMachine(RuleBasedStateMachine):
    """The integrated protocol under random commands; ``COMMUNITY`` is swapped by the
    mutant test."""

    COMMUNITY: type[Community] = Community

    def __init__(self) -> None:
        super().__init__()
        self.c = self.COMMUNITY(PARAMS, FOUNDERS)
        self.rng = random.Random(0)
        self.salts: dict[tuple[str, int, str], tuple[str, str]] = {}  # (x, round, v) -> vote
        self.next_id = 0

    # --- helpers ------------------------------------------------------------------------

    def _ids(self) -> list[str]:
        return sorted(self.c.agents)

    def _actor(self, data: st.DataObject, min_tier: int) -> str:
        """Any agent, or (half the time) one whose registry tier suffices: the rare
        commands still get through often enough to reach their paths."""
        able = [a for a, x in sorted(self.c.agents.items()) if x.tier >= min_tier]
        pool = able if bool(able) and data.draw(st.booleans()) else self._ids()
        return data.draw(st.sampled_from(pool))

    def _artifacts(self, states: set[str] | None = None) -> list[str]:
        pub = self.c.public_state()["artifacts"]
        return sorted(x for x, a in pub.items() if states is None or a["state"] in states)

    def _allowed(self, agent: str, op: str) -> tuple[bool, str]:
        """What the *books* allow (LC-SAFE-4), independent of the orchestrator's registry."""
        if self.c.sanctions.level(agent) in BARRING:
            return False, f"sanction {self.c.sanctions.level(agent).value}"
        cap = self.c.sanctions.tier_cap(agent)
        tier = self.c.reputation.tier(agent, MAX_TIER if cap is None else cap)
        need = EVENTS[op].min_tier or 0
        return tier >= need, f"reputation tier {tier} < {need}"

    def do(self, cmd: dict[str, Any]) -> Observation:
        op = cmd.get("op", "")
        agent = cmd.get("agent", "")
        is_agent_op = op in AGENT_OPS and isinstance(agent, str) and agent in self.c.agents
        allowed, why = self._allowed(agent, op) if is_agent_op else (True, "")
        before = self.c.public_state()["artifacts"] if op == "tick" else None
        obs = self.c.apply(cmd)
        REACHED[f"result:{obs['result']}"] += 1
        if obs["result"] == "ok" and is_agent_op:
            assert allowed, f"LC-SAFE-4: {agent} did {op} although the layers say {why}"
            REACHED[f"op:{op}"] += 1
        for ev in obs["events"]:
            REACHED[f"event:{ev['event']}"] += 1
            REACHED[
                f"event:{ev['event']}:{ev.get('verdict') or ev.get('kind') or ev.get('to')}"
            ] += 1
        if before is not None:
            self._check_tick(before, obs["events"])
        return obs

    def _check_tick(self, before: dict[str, Any], events: list[dict[str, Any]]) -> None:
        after = self.c.public_state()["artifacts"]
        active = {a for a, x in self.c.agents.items() if not x.barred}
        hidden = {x: a["hidden"] for x, a in before.items()}
        for ev in events:
            x = ev.get("artifact", "")
            if ev["event"] == "timeout" and ev["from"] == DISPUTED and ev["to"] != DISPUTED:
                hidden[x] = hidden[x] and ev["to"] == RETRACTED  # LC-SAFE-5: a failed one clears
            if ev["event"] == "forget":
                assert ev["from"] != DISPUTED, f"LC-SAFE-6: {x} forgotten while disputed"
                assert not (hidden[x] and ev["from"] != RETRACTED), (
                    f"LC-SAFE-6: {x} forgotten while hidden under review"
                )
                b = before[x]
                voters = set(b["forget_voters"]) & active
                assert len(voters) >= 2, f"FG-1: {x} forgotten by {sorted(voters)} alone"
                REACHED["forgotten"] += 1
            if ev["event"] == "timeout" and ev.get("verdict") in (
                "accept",
                "reject",
                "retract",
                "keep",
                "keep_superseded",
            ):
                revealed = after[x]["revealed"] or {}
                won = {"keep_superseded": "keep"}.get(ev["verdict"], ev["verdict"])
                lost = {
                    "accept": "reject",
                    "reject": "accept",
                    "retract": "keep",
                    "keep": "retract",
                }
                heads = sum(1 for v in revealed.values() if v == won)
                others = sum(1 for v in revealed.values() if v == lost[won])
                side = PARAMS.tally_min_side
                if won == "keep" and (others < side or len(revealed) < PARAMS.q_dispute):
                    continue  # no retraction could be decided: the status quo, nobody decided
                assert heads >= side, (
                    f"TALLY-1: {x} {won} with {heads} voter(s) on that side: {revealed}"
                )
                REACHED[f"decided:{won}"] += 1

    # --- rules --------------------------------------------------------------------------

    @initialize(k=st.integers(0, len(JOINERS)))
    def joiners(self, k: int) -> None:
        """Newcomers at the start: with 5 or more, 12 agents are active and the forget
        rule may decide; with fewer, FG-1's floor holds every forget back."""
        for j in JOINERS[:k]:
            assert self.do({"op": "join", "agent": j})["result"] == "ok"

    @rule(data=st.data())
    def join(self, data: st.DataObject) -> None:
        self.do({"op": "join", "agent": data.draw(st.sampled_from(JOINERS))})

    @rule(data=st.data(), slot=st.sampled_from(SLOTS))
    def propose(self, data: st.DataObject, slot: str) -> None:
        self.next_id += 1
        agent = data.draw(st.sampled_from(self._ids()))
        self.do({"op": "propose", "agent": agent, "artifact": f"x{self.next_id}", "slot": slot,
                 "digest": "d"})  # fmt: skip

    def _ballot_members(self, phase: str, committed: bool) -> list[tuple[str, str]]:
        out = []
        for x, a in sorted(self.c.public_state()["artifacts"].items()):
            if a["phase"] != phase:
                continue
            for v in a["reviewers"]:
                if (v in a["committed"]) == committed and (
                    phase != "reveal" or v not in (a["revealed"] or {})
                ):
                    out.append((x, v))
        return out

    @precondition(lambda self: bool(self._ballot_members("commit", committed=False)))
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        x, v = data.draw(st.sampled_from(self._ballot_members("commit", committed=False)))
        self._commit(data, x, v)

    def _commit(self, data: st.DataObject, x: str, v: str, side: int | None = None) -> None:
        """Commit ``v``'s vote on ``x``: side 0 is yes (accept/retract), 1 is no, None
        draws it."""
        pub = self.c.public_state()["artifacts"][x]
        yes, no = ("accept", "reject") if pub["ballot"] == "review" else ("retract", "keep")
        vote = (yes, no)[side] if side is not None else data.draw(st.sampled_from([yes, no]))
        salt = make_salt(self.rng)
        self.salts[(x, pub["round"], v)] = (vote, salt)
        digest = commitment(v, x, pub["round"], vote, "", salt)
        self.do({"op": "commit_vote", "agent": v, "artifact": x, "commitment": digest})

    @precondition(lambda self: bool(self._ballot_members("commit", committed=False)))
    @rule(data=st.data(), side=st.sampled_from([None, 0, 1]))
    def commit_all(self, data: st.DataObject, side: int | None) -> None:
        """Every pending reviewer of one ballot commits, the same way (side 0 or 1) or
        each drawn (None): most ballots are well attended, many are clear."""
        xs = sorted({x for x, _ in self._ballot_members("commit", committed=False)})
        x = data.draw(st.sampled_from(xs))
        for y, v in self._ballot_members("commit", committed=False):
            if y == x:
                self._commit(data, x, v, side)

    @precondition(lambda self: bool(self._ballot_members("commit", committed=False)))
    @rule(data=st.data(), side=st.sampled_from([0, 1, 2]))
    def clear_ballot(self, data: st.DataObject, side: int) -> None:
        """One ballot run to its end by diligent reviewers: all commit the same way (side
        0 or 1) or alternately (2: a split vote, which weights and the side rule may send
        to arbitration), the clock moves to the reveal phase, all reveal, the clock moves
        on until it closes (everything else ticks along)."""
        xs = sorted({x for x, _ in self._ballot_members("commit", committed=False)})
        x = data.draw(st.sampled_from(xs))
        rnd = self.c.public_state()["artifacts"][x]["round"]
        mine = [v for y, v in self._ballot_members("commit", committed=False) if y == x]
        for i, v in enumerate(mine):
            self._commit(data, x, v, side if side < 2 else i % 2)

        def phase() -> str | None:
            a = self.c.public_state()["artifacts"][x]
            return a["phase"] if a["round"] == rnd else None

        for _ in range(PARAMS.T_commit):
            if phase() != "commit":
                break
            self.do({"op": "tick"})
        if phase() == "reveal":
            for y, v in self._ballot_members("reveal", committed=True):
                if y == x:
                    self._reveal(x, v, "honest")
        for _ in range(PARAMS.T_reveal):
            if phase() != "reveal":
                break
            self.do({"op": "tick"})

    @precondition(lambda self: bool(self._ballot_members("reveal", committed=True)))
    @rule(data=st.data())
    def reveal_all(self, data: st.DataObject) -> None:
        """Every committed reviewer of one ballot reveals honestly."""
        xs = sorted({x for x, _ in self._ballot_members("reveal", committed=True)})
        x = data.draw(st.sampled_from(xs))
        for y, v in self._ballot_members("reveal", committed=True):
            if y == x:
                self._reveal(x, v, "honest")

    @precondition(lambda self: bool(self._ballot_members("reveal", committed=True)))
    @rule(data=st.data(), how=st.sampled_from(["honest", "honest", "honest", "bad", "skip"]))
    def reveal(self, data: st.DataObject, how: str) -> None:
        x, v = data.draw(st.sampled_from(self._ballot_members("reveal", committed=True)))
        self._reveal(x, v, how)

    def _reveal(self, x: str, v: str, how: str) -> None:
        rnd = self.c.public_state()["artifacts"][x]["round"]
        vote, salt = self.salts.get((x, rnd, v), ("accept", "00" * 32))
        if how == "skip":
            return  # a non-reveal: the ballot's close counts it
        if how == "bad":
            salt = "11" * 32
        self.do({"op": "reveal_vote", "agent": v, "artifact": x, "vote": vote, "reason": "",
                 "salt": salt})  # fmt: skip

    @precondition(lambda self: bool(self._artifacts({"fast_track"})))
    @rule(data=st.data())
    def object(self, data: st.DataObject) -> None:
        xs = self._artifacts({"fast_track"})
        if xs:
            self.do({"op": "object", "agent": data.draw(st.sampled_from(self._ids())),
                     "artifact": data.draw(st.sampled_from(xs))})  # fmt: skip

    @precondition(lambda self: bool(self._artifacts({"arbitration"})))
    @rule(data=st.data(), outcome=st.sampled_from(["accept", "reject", "revote"]))
    def arbitrate(self, data: st.DataObject, outcome: str) -> None:
        x = data.draw(st.sampled_from(self._artifacts({"arbitration"})))
        reviewers = self.c.public_state()["artifacts"][x]["reviewers"]
        free = [a for a, e in sorted(self.c.agents.items()) if e.tier == 3 and a not in reviewers]
        pool = free if bool(free) and data.draw(st.booleans()) else self._ids()
        self.do({"op": "arbitrate", "agent": data.draw(st.sampled_from(pool)), "artifact": x,
                 "outcome": outcome})  # fmt: skip

    @precondition(lambda self: bool(self._artifacts({"active"})))
    @rule(data=st.data(), op=st.sampled_from(["dispute", "urgent_report"]))
    def dispute(self, data: st.DataObject, op: str) -> None:
        xs = self._artifacts({"active"})
        if xs:
            self.do({"op": op, "agent": self._actor(data, 2),
                     "artifact": data.draw(st.sampled_from(xs)), "reason": "r"})  # fmt: skip

    @rule(data=st.data())
    def forget_vote(self, data: st.DataObject) -> None:
        xs = self._artifacts({"active", "disputed", "superseded", "rejected", "expired",
                              "retracted"})  # fmt: skip
        if xs:
            disputed = self._artifacts({DISPUTED})
            pool = disputed if bool(disputed) and data.draw(st.booleans()) else xs
            self.do({"op": "forget_vote", "agent": data.draw(st.sampled_from(self._ids())),
                     "artifact": data.draw(st.sampled_from(pool))})  # fmt: skip

    @rule(data=st.data())
    def forget_wave(self, data: st.DataObject) -> None:
        """Several agents vote to forget one artifact (a forget needs about half the
        active weight)."""
        xs = self._artifacts({"active", "disputed", "superseded", "rejected", "expired"})
        if xs:
            x = data.draw(st.sampled_from(xs))
            for a in data.draw(st.lists(st.sampled_from(self._ids()), min_size=1, max_size=8)):
                self.do({"op": "forget_vote", "agent": a, "artifact": x})

    @rule(data=st.data(), junk=st.sampled_from(["artifact", "extra"]))
    def malformed(self, data: st.DataObject, junk: str) -> None:
        """A broken agent's output: a command that fails check 1 (counts as malformed)."""
        agent = data.draw(st.sampled_from(self._ids()))
        cmd: dict[str, Any] = {"op": "object", "agent": agent, "artifact": "x1"}
        cmd["artifact" if junk == "artifact" else "extra"] = 7
        assert self.do(cmd)["result"] == "invalid_input"

    @rule(data=st.data())
    def spam(self, data: st.DataObject) -> None:
        """Rate-limit abuse: proposals beyond propose_rate in one round."""
        agent = data.draw(st.sampled_from(self._ids()))
        for _ in range(PARAMS.propose_rate + 1):
            self.next_id += 1
            self.do({"op": "propose", "agent": agent, "artifact": f"x{self.next_id}",
                     "slot": "s1", "digest": "d"})  # fmt: skip

    @rule(n=st.integers(1, 2))
    def tick(self, n: int) -> None:
        for _ in range(n):
            self.do({"op": "tick"})

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def registry_is_the_layers(self) -> None:
        """LC-SAFE-4's source: tier, weight and sanction in the registry are the books'."""
        for a, entry in self.c.agents.items():
            level = self.c.sanctions.level(a)
            cap = self.c.sanctions.tier_cap(a)
            want = Agent(
                a,
                self.c.reputation.tier(a, MAX_TIER if cap is None else cap),
                self.c.reputation.weight(a),
                self.c.reputation.expected(a),
                level,
                entry.subscriptions,
            )
            assert entry == want, f"LC-SAFE-4: registry {entry} but the layers say {want}"


@pytest.mark.budget  # holds at the ci profile's budget: make test-fast skips it
def test_community_reaches() -> None:
    """The run must reach what the checks are about, or they check nothing."""
    REACHED.clear()
    run_machine(CommunityMachine)
    must = [
        "forgotten",
        "decided:accept",
        "decided:reject",
        "decided:retract",
        "event:sanction:suspended",
        "event:sanction:quarantined",
        "event:agent",
        "event:violation:malformed",
        "event:violation:non_reveal",
        "event:violation:bad_reveal",
        "event:violation:rate_limited",
        "result:sanctioned",
        "op:commit_vote",
        "op:arbitrate",
    ]
    missing = [k for k in must if REACHED[k] == 0]
    assert not missing, f"never reached: {missing}; reached: {sorted(REACHED)}"


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
@pytest.mark.budget  # holds at the ci profile's budget
@pytest.mark.mutation  # a mutant the machine must catch: make mutate, make test-slow
def test_community_mutant_is_caught(mutant: str) -> None:
    cls, prop = MUTANTS[mutant]
    machine = type(f"{mutant}Machine", (CommunityMachine,), {"COMMUNITY": cls})
    assert_mutant_caught(machine, mutant, prop)


def test_forgetting_executes_through_consensus() -> None:
    """docs/design.md §5: "forgotten only if S ≥ Q **and** the decision is committed through
    consensus".  Each PBFT replica runs a whole Community; the forget votes and the tick
    that decides are client requests, so every honest replica forgets at the same point
    of the same log (REPL-1), with the view-0 primary equivocating and messages lost."""
    from ostrom.harness.byzantine import EquivocatingPrimary
    from ostrom.harness.network import Faults
    from ostrom.harness.replicated import ReplicatedOrchestrator

    members = (*FOUNDERS, *(Member(j) for j in JOINERS))  # 16 agents: FG-1's floor is met

    def core() -> Community:
        return Community(PARAMS, members)

    ro = ReplicatedOrchestrator(
        4,
        1,
        seed=5,
        params=PARAMS,
        byzantine={0: EquivocatingPrimary()},
        faults=Faults(drop=0.05, duplicate=0.05, max_delay=4),
        core=core,
    )
    commands: list[dict[str, Any]] = [
        {"op": "propose", "agent": "f0", "artifact": "x", "slot": "s0", "digest": "d"},
        *({"op": "tick"} for _ in range(PARAMS.T_fast + 1)),
        *(
            {"op": "forget_vote", "agent": a, "artifact": "x"}
            for a in ("f0", "f1", "f2", "f3", "f4", "f5", "f6")
        ),
        {"op": "tick"},
    ]
    for cmd in commands:
        ro.submit("c0", cmd)
    ro.sim.run(400_000, until=ro.sim.all_executed)
    ro.check_repl1()
    states = list(ro.states().values())
    assert len(states) == 3 and all(s == states[0] for s in states)
    assert states[0]["artifacts"]["x"]["state"] == "forgotten"
    assert states[0]["artifacts"]["x"]["tombstone"]["artifact"] == "x"
    results = [r["result"] for _, r in ro.sim.results("c0")]
    assert results == ["ok"] * len(commands)


# --- rules pinned down by code mutation (models/mutation/code/community.toml) --------------


def _to_phase(c: Community, x: str, phase: str, limit: int = 20) -> None:
    for _ in range(limit):
        if c.public_state()["artifacts"][x]["phase"] == phase:
            return
        assert c.tick()["result"] == "ok"
    raise AssertionError(f"{x} never reached {phase}: {c.public_state()['artifacts'][x]}")


def _ballot(c: Community, x: str, sides: list[str] | str, close: bool = True) -> dict[str, str]:
    """Commit and reveal ``sides`` (one per ballot member, in sorted order, or one side
    for all) on ``x``'s open ballot, and (``close``) tick until it is no longer in its
    reveal phase; the votes cast."""
    _to_phase(c, x, "commit")
    pub = c.public_state()["artifacts"][x]
    members = sorted(pub["reviewers"])
    if isinstance(sides, str):
        sides = [sides] * len(members)
    votes = dict(zip(members, sides, strict=True))
    salts = {}
    for v, vote in votes.items():
        salts[v] = make_salt(random.Random(v))
        digest = commitment(v, x, pub["round"], vote, "", salts[v])
        assert c.apply({"op": "commit_vote", "agent": v, "artifact": x,
                        "commitment": digest})["result"] == "ok"  # fmt: skip
    _to_phase(c, x, "reveal")
    for v, vote in votes.items():
        assert c.apply({"op": "reveal_vote", "agent": v, "artifact": x, "vote": vote,
                        "reason": "", "salt": salts[v]})["result"] == "ok"  # fmt: skip
    for _ in range(PARAMS.T_reveal + 1 if close else 0):
        if c.public_state()["artifacts"][x]["phase"] != "reveal":
            break
        c.tick()
    return votes


def test_an_arbiters_decision_scores_the_split_ballots_voters_and_submitter() -> None:
    """A split review goes to arbitration; the arbiter's accept is the decision the
    reviewers' reveals are scored against (the paper's rule: agreement with the final
    decision), and the submitter's evidence counts it too.  Typed helpers ``join``,
    ``tick`` and ``state_of`` are the commands they name."""
    asked: list[tuple[str, str]] = []

    def truth(artifact: str, ballot: str) -> str:
        asked.append((artifact, ballot))
        return "accept"

    c = Community(PARAMS, FOUNDERS, truth=truth)
    assert c.join("j0", ["s0"])["result"] == "ok" and "j0" in c.agents
    obs = c.apply({"op": "propose", "agent": "j0", "artifact": "x", "slot": "s0", "digest": "d"})
    assert obs["result"] == "ok" and c.state_of("x") == "proposed"
    _to_phase(c, "x", "commit")
    pub = c.public_state()["artifacts"]["x"]
    votes = dict(zip(sorted(pub["reviewers"]), ["accept", "reject", "accept"], strict=True))
    salts = {}
    for v, vote in votes.items():
        salts[v] = make_salt(random.Random(v))
        digest = commitment(v, "x", pub["round"], vote, "", salts[v])
        assert c.apply({"op": "commit_vote", "agent": v, "artifact": "x",
                        "commitment": digest})["result"] == "ok"  # fmt: skip
    _to_phase(c, "x", "reveal")
    for v, vote in votes.items():
        assert c.apply({"op": "reveal_vote", "agent": v, "artifact": "x", "vote": vote,
                        "reason": "", "salt": salts[v]})["result"] == "ok"  # fmt: skip
    for _ in range(PARAMS.T_reveal + 1):
        if c.state_of("x") == "arbitration":
            break
        c.tick()
    assert c.state_of("x") == "arbitration", c.public_state()["artifacts"]["x"]
    before = {a: c.reputation.beta(a) for a in [*votes, "j0"]}
    arbiter = next(a for a in ("f0", "f1") if a not in votes)
    assert c.apply({"op": "arbitrate", "agent": arbiter, "artifact": "x",
                    "outcome": "accept"})["result"] == "ok"  # fmt: skip
    assert c.state_of("x") == "active"
    for a, vote in votes.items():
        after = c.reputation.beta(a)
        agreed = vote == "accept"
        # one unit of evidence on the side of the arbiter's decision (up to float noise)
        gained = (after.alpha - before[a].alpha, after.beta - before[a].beta)
        assert gained[0 if agreed else 1] > 0.5 > abs(gained[1 if agreed else 0]), (a, gained)
    assert c.reputation.beta("j0").alpha - before["j0"].alpha > 0.5  # the submitter's work
    # the ground truth (where a simulation knows it) is asked about the review ballot
    assert asked == [("x", "review")]


def test_a_joining_agent_id_is_1_to_256_characters() -> None:
    c = Community(PARAMS, FOUNDERS)
    assert c.join("a" * 257)["result"] == "invalid_input"
    assert c.join("")["result"] == "invalid_input"
    assert "a" * 257 not in c.agents
    assert c.join("a" * 256)["result"] == "ok" and "a" * 256 in c.agents


# the founders and joiners, and a watcher of slot s0 who objects to fast-tracked proposals
_WATCHED = (
    *FOUNDERS,
    *(Member(j) for j in JOINERS),
    Member("w", tier=1, reputation=0.6, evidence=4, subscriptions=frozenset({"s0"})),
)


def _object(c: Community, x: str) -> None:
    """The watcher objects to ``x`` once it is fast-tracked: it goes to a formal review."""
    for _ in range(3):
        if c.state_of(x) == "fast_track":
            break
        c.tick()
    assert c.apply({"op": "object", "agent": "w", "artifact": x})["result"] == "ok"


def _disputed(c: Community, side: str) -> dict[str, str]:
    """f2's ``x`` accepted by its review, then disputed by f0 and the dispute ballot cast
    all ``side``; the dispute's votes (``x`` is retracted or kept by then)."""
    obs = c.apply({"op": "propose", "agent": "f2", "artifact": "x", "slot": "s0", "digest": "d"})
    assert obs["result"] == "ok"
    _object(c, "x")
    _ballot(c, "x", "accept")
    assert c.state_of("x") == "active", c.public_state()["artifacts"]["x"]
    obs = c.apply({"op": "dispute", "agent": "f0", "artifact": "x", "reason": "wrong"})
    assert obs["result"] == "ok", obs
    votes = _ballot(c, "x", side)
    assert len(votes) >= PARAMS.q_dispute
    return votes


def test_a_retraction_is_evidence_against_the_submitter_and_asks_about_the_dispute() -> None:
    """A dispute that retracts an accepted artifact scores its submitter as a rejection
    would (the submitter's share of the decision), and the ground truth is asked about
    the dispute ballot, not the review one."""
    asked: list[tuple[str, str]] = []

    def truth(artifact: str, ballot: str) -> str:
        asked.append((artifact, ballot))
        return "accept" if ballot == "review" else "retract"

    c = Community(PARAMS, _WATCHED, truth=truth)
    before: list[Any] = []
    c.reputation.observe = _spy(c.reputation.observe, before)  # type: ignore[method-assign]
    _disputed(c, "retract")
    assert c.state_of("x") == RETRACTED, c.public_state()["artifacts"]["x"]
    # the submitter's two observations: for its accepted work, then against the retraction
    assert [(a, positive) for a, positive, *_ in before if a == "f2"] == [
        ("f2", True),
        ("f2", False),
    ]
    assert asked == [("x", "review"), ("x", "dispute")]


def test_a_kept_artifact_asks_the_truth_about_the_dispute_ballot() -> None:
    """A dispute that fails is a dispute ballot too: the truth is asked about it."""
    asked: list[tuple[str, str]] = []

    def truth(artifact: str, ballot: str) -> str:
        asked.append((artifact, ballot))
        return "accept" if ballot == "review" else "keep"

    c = Community(PARAMS, _WATCHED, truth=truth)
    _disputed(c, "keep")
    assert c.state_of("x") == "active"
    assert asked == [("x", "review"), ("x", "dispute")]


def test_in_truth_mode_voters_and_submitter_are_scored_against_the_truth() -> None:
    """feedback="truth" (a simulation's ground truth): the voters who retracted what the
    truth keeps lose, and the submitter is not scored against a retraction the truth does
    not share — the decision counts for nothing there."""

    def truth(artifact: str, ballot: str) -> str:
        return "accept" if ballot == "review" else "keep"

    c = Community(PARAMS, _WATCHED, feedback="truth", truth=truth)
    assert c.reputation.feedback == "truth"
    layers = (c, c.reputation, c.sanctions, c.orchestrator)
    assert all(layer.params is PARAMS for layer in layers)  # one parameter set, every layer
    seen: list[Any] = []
    c.reputation.observe = _spy(c.reputation.observe, seen)  # type: ignore[method-assign]
    votes = _disputed(c, "retract")
    assert c.state_of("x") == RETRACTED
    scored = {a: positive for a, positive, *_ in seen if a in votes}
    assert scored == dict.fromkeys(votes, False)  # the truth kept it: every retract was wrong
    assert [positive for a, positive, *_ in seen if a == "f2"] == [True]  # its review only


def _spy(method: Any, calls: list[Any]) -> Any:
    """``method``, recording each call's positional arguments in ``calls``."""

    def spied(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return method(*args, **kwargs)

    return spied


def test_a_tick_that_also_recruits_still_scores_the_ballot_it_decides() -> None:
    """One tick recruits the proposals made since the last one, then fires the timeouts
    due: the decided review's voters are scored even when a recruitment comes first in
    the tick's events."""
    c = Community(PARAMS, _WATCHED)
    c.apply({"op": "propose", "agent": "f2", "artifact": "x", "slot": "s0", "digest": "d"})
    _object(c, "x")
    votes = _ballot(c, "x", "accept", close=False)
    seen: list[Any] = []
    c.reputation.observe = _spy(c.reputation.observe, seen)  # type: ignore[method-assign]
    while c.now + 1 < c.public_state()["artifacts"]["x"]["deadline"]:
        c.tick()
    c.apply({"op": "propose", "agent": "f1", "artifact": "y", "slot": "s1", "digest": "e"})
    obs = c.tick()  # recruits y, then decides x
    assert c.state_of("x") == "active"
    kinds = [e["event"] for e in obs["events"]]
    assert kinds.index("recruit") < kinds.index("timeout"), kinds
    assert {a for a, *_ in seen} >= set(votes)


def test_a_communitys_own_checks_refuse_saying_why() -> None:
    """Member ids are unique; feedback by the truth needs the truth; a join names only
    the agent and its subscriptions."""
    with pytest.raises(ValueError, match=r"^member ids must be unique$"):
        Community(PARAMS, (Member("a"), Member("a")))
    with pytest.raises(ValueError, match=r'^feedback="truth" needs a truth callable$'):
        Community(PARAMS, FOUNDERS, feedback="truth")
    c = Community(PARAMS, FOUNDERS)
    obs = c.apply({"op": "join", "agent": "j0", "subscriptions": [], "tier": 3})
    assert obs["result"] == "invalid_input" and not obs["events"] and "j0" not in c.agents


def test_the_repair_check_decides_when_a_quarantine_ends() -> None:
    """The sanctions layer asks the community's ``repair_check`` at the end of each
    quarantine period: while it says "not repaired" the quarantine is renewed."""
    asked: list[tuple[str, int]] = []

    def not_repaired(agent: str, now: int) -> bool:
        asked.append((agent, now))
        return False

    c = Community(PARAMS, FOUNDERS, repair_check=not_repaired)
    while c.sanctions.level("f3").value != "quarantined":  # malformed commands: malfunction
        assert c.apply({"op": "propose", "agent": "f3", "artifact": 5})["result"] == "invalid_input"
    for _ in range(2 * PARAMS.T_quarantine):
        c.tick()
    assert c.sanctions.level("f3").value == "quarantined"
    assert [a for a, _ in asked] == ["f3", "f3"]


def test_an_arbitration_that_times_out_leaves_no_votes_waiting() -> None:
    """A split ballot's reveals wait for the arbiter (to be scored against the decision);
    when no arbiter decides within T_arb the status quo holds and nobody is scored, so the
    waiting votes are dropped — kept, they would pile up one entry per such artifact."""
    c = Community(PARAMS, _WATCHED)
    obs = c.apply({"op": "propose", "agent": "f2", "artifact": "x", "slot": "s0", "digest": "d"})
    _object(c, "x")
    _ballot(c, "x", ["accept", "reject", "accept"])
    assert c.state_of("x") == "arbitration", c.public_state()["artifacts"]["x"]
    assert set(c._pending) == {"x"}  # the reveals wait for the arbiter
    before = {a: c.reputation.beta(a) for a in c.agents}
    for _ in range(PARAMS.T_arb + 1):
        obs = c.tick()
        if c.state_of("x") != "arbitration":
            break
    assert c.state_of("x") == "rejected"
    assert any(e.get("from") == "arbitration" for e in obs["events"])
    assert c._pending == {}
    for a, b in before.items():  # no decision on the merits: nobody's evidence grew
        assert c.reputation.beta(a).alpha <= b.alpha + 1e-9, a
        assert c.reputation.beta(a).beta <= b.beta + 1e-9, a


def test_a_refused_tick_changes_nothing() -> None:
    """Only a tick that happened runs the layers' round: a malformed ``tick`` is refused
    and decays no reputation, ages no sanction and changes no tier."""
    c = Community(PARAMS, FOUNDERS)
    state = c.public_state()
    betas = {a: c.reputation.beta(a) for a in c.agents}
    obs = c.apply({"op": "tick", "extra": 1})
    assert obs["result"] == "invalid_input" and obs["events"] == []
    assert c.public_state() == state
    assert {a: c.reputation.beta(a) for a in c.agents} == betas


def test_a_tier_0_member_starts_as_a_newcomer_whatever_its_record_says() -> None:
    """A founding member of tier 0 gets the newcomer's prior (REP-2: a fresh identity is
    cheap), not the reputation and evidence written in its Member record."""
    c = Community(PARAMS, (*FOUNDERS, Member("z", tier=0, reputation=0.95, evidence=40)))
    assert c.join("j0")["result"] == "ok"
    assert c.reputation.beta("z") == c.reputation.beta("j0")
    assert c.agents["z"].tier == c.agents["j0"].tier == 0
