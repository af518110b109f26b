"""What a cluster replica executes (ostrom/cluster/app.py): a retried envelope is answered
as the node answers it from its log (``Retries``), and nothing else changes.

The node (service/node.py) answers an envelope identical to one it applied with the
logged observation and ``retry: true``, applies nothing, and refuses any other envelope
with a used seq (409 ``replayed``).  ``check_retries`` states that for any core; it runs
on the cluster's core and on mutants it must catch: one that ignores the envelope's
content (a forged replay would be answered as a retry) and one that applies retries
again.  Hypothesis drives random mixes of fresh, retried and altered envelopes: the
cluster's core keeps exactly the plain gate's public state (REPL-1 compares it with the
single node's).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.cluster.app import Retries, _agent_seq
from ostrom.consensus.application import Core
from ostrom.protocol.commands import Observation
from ostrom.protocol.params import DEFAULTS
from ostrom.service.gate import GATE_ERRORS, Gate
from service_world import OPERATOR, Signer, setup


def cluster_core() -> Core:
    return Retries(Gate(DEFAULTS, setup()))


class IgnoresContent(Retries):
    """Mutant: a used (agent, seq) is a retry whatever the envelope says."""

    def apply(self, command: object) -> Observation:
        key = _agent_seq(command)
        if key is not None and key in self.applied:
            return {**json.loads(self.applied[key][1]), "retry": True}  # type: ignore[typeddict-item]
        return super().apply(command)


class AppliesAgain(Retries):
    """Mutant: no memory; every envelope goes to the gate (the cluster before the fix)."""

    def apply(self, command: object) -> Observation:
        return self.gate.apply(command)


def check_retries(make: Callable[[], Core]) -> None:
    core = make()
    s = Signer()
    tick = s.env(OPERATOR, {"op": "tick"})
    propose = s.env(
        "f1", {"op": "propose", "agent": "f1", "artifact": "x", "slot": "s", "digest": "d"}
    )
    first = [core.apply(dict(e)) for e in (tick, propose)]
    assert [o["result"] for o in first] == ["ok", "ok"]
    state = core.public_state()
    again = core.apply(dict(propose))
    assert again == {**first[1], "retry": True}, again  # the first observation, flagged
    assert core.public_state() == state  # nothing applied again
    forged = dict(propose, command={**propose["command"], "artifact": "y"})
    assert core.apply(forged)["result"] == "bad_signature"
    other = Signer()
    other.seq["f1"] = 0
    reused = other.env(
        "f1", {"op": "propose", "agent": "f1", "artifact": "z", "slot": "t", "digest": "d"}
    )
    obs = core.apply(reused)  # a genuine, different envelope with a used seq
    assert dict(obs) == {"result": "replayed", "events": []}, obs
    assert core.public_state() == state


def test_the_cluster_core_answers_retries_as_the_node() -> None:
    check_retries(cluster_core)


@pytest.mark.parametrize("mutant", [IgnoresContent, AppliesAgain])
def test_the_check_catches_mutants(mutant: type[Retries]) -> None:
    with pytest.raises(AssertionError):
        check_retries(lambda: mutant(Gate(DEFAULTS, setup())))


@given(
    st.lists(st.tuples(st.sampled_from(["new", "retry", "alter"]), st.integers(0, 4)), max_size=30)
)
def test_retries_never_change_the_state(steps: list[tuple[str, int]]) -> None:
    """Whatever mix arrives, the cluster's core ends in the plain gate's state, answers
    every non-retry exactly as the gate does, and a retry only ever with the observation
    of the identical envelope's first application."""
    s = Signer()
    plain, core = Gate(DEFAULTS, setup()), cluster_core()
    sent: list[dict[str, Any]] = []
    first: dict[int, Observation] = {}
    for kind, k in steps:
        agent = f"f{k + 1}"
        if kind == "new" or not sent:
            env = s.env(
                agent,
                {
                    "op": "propose",
                    "agent": agent,
                    "artifact": f"a{len(sent)}",
                    "slot": f"s{len(sent)}",
                    "digest": "d",
                },
            )
            sent.append(env)
        elif kind == "retry":
            env = sent[k % len(sent)]
        else:
            env = dict(sent[k % len(sent)], signature="00" * 64)
        expected = plain.apply(dict(env))
        got = core.apply(dict(env))
        if dict(got).get("retry"):
            i = next(i for i, e in enumerate(sent) if e is env)
            assert got == {**first[i], "retry": True}
            assert dict(expected) == {"result": "replayed", "events": []}
        else:
            assert got == expected
            for i, e in enumerate(sent):
                # logged as on the node: any observation the gate let through
                if e is env and i not in first and got["result"] not in GATE_ERRORS:
                    first[i] = got
        assert core.public_state() == plain.public_state()
