"""The community of the lifecycle state machine (protocol/test_orchestrator_stateful.py):
parameters shrunk so that every path is reached in a few steps, and agents of every tier
and sanction.  The PBFT tests replicate an orchestrator over the same community.
"""

from __future__ import annotations

from ostrom.protocol.agents import Agent, Sanction
from ostrom.protocol.params import Params

__all__ = ["AGENTS", "PARAMS"]

PARAMS = Params(
    reviewers=3,
    quorum=2,
    T_fast=2,
    T_delib=2,
    T_commit=3,
    T_reveal=3,
    T_arb=6,  # arbitration lasts long enough for the arbiter rules to act
    tau_accept=0.75,  # a wide undecided band: arbitration is reached often
    tau_reject=0.25,
    dispute_reviewers=3,
    q_dispute=2,
    max_disputes=1,
    dispute_rate=1,
    max_resubmit=1,
    cooldown=2,
    propose_rate=1,
    propose_rate_limited=0,
    alpha=0.25,
    min_active_agents=8,  # 8 agents are active until set_agent bars one: forgetting stops
    seed=7,
)

AGENTS = (
    Agent("n0", 0, 0.5, 0.9),  # newcomer: counts at w_min, never fast-tracked
    Agent("r1", 1, 0.6, 0.9, subscriptions=frozenset({"s0"})),
    Agent("r2", 1, 0.9, 0.3),  # reputation below r_resubmit
    Agent("d1", 2, 1.0, 0.9),
    Agent("d2", 2, 0.7, 0.8, subscriptions=frozenset({"s1"})),
    Agent("a1", 3, 1.0, 0.95),
    Agent("a2", 3, 0.8, 0.9),
    Agent("bx", 2, 1.0, 0.9, Sanction.SUSPENDED),  # barred
    Agent("rl", 1, 0.5, 0.9, Sanction.RATE_LIMITED),
)
