"""The node's published view is the gate's public state after every command (READ-1's
reads answer from it: service/node.py, ``View``).

The view is built incrementally (``Node._next_view``: the artifacts a command and its
events name, the principal that signed it, the registry if an agent changed).  That is
exact only if nothing else changes, so it is checked over whole runs of the evaluation
model (simulation/protocol.py: proposals, objections, commit-reveal ballots, disputes,
arbitration, sanctions, forgetting), played against an in-process node: after every
command the view, order included, is ``Gate.public_state()`` of the node's own gate.
Each rule of the incremental build is mutated once and the same run catches it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.responses import JSONResponse

from ostrom.consensus.crypto import derive_key
from ostrom.protocol.commands import Observation
from ostrom.service import node as node_module
from ostrom.service.gate import OPERATOR_OPS, Founder, Setup
from ostrom.service.identity import public_hex, sign_envelope
from ostrom.service.node import Node
from ostrom.service.reads import Read, answer, slots_of
from ostrom.simulation.commands import single_config
from ostrom.simulation.config import SimConfig
from ostrom.simulation.protocol import Run, node_setup

SEED = b"views"
OPERATOR = "sim-operator"


class Drift(AssertionError):
    """The view and the gate's public state differ."""


class CheckedRemote:
    """``simulation.protocol.Remote`` over an in-process node: signs each command as its
    agent (a tick as the operator), submits it, and compares the view with the gate."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.seq: dict[str, int] = {}
        self.checked = 0

    def apply(self, command: dict[str, Any]) -> Observation:
        op, agent = command.get("op"), command.get("agent")
        principal = OPERATOR if op in OPERATOR_OPS else str(agent)
        seq = self.seq.get(principal, 0) + 1
        self.seq[principal] = seq
        env = sign_envelope(
            derive_key(SEED, principal),
            principal,
            seq,
            command,
            community=self.node.gate.setup.community,
        )
        r = self.node.submit(env)
        assert r.status == 200, r
        self.check()
        return {"result": r.body["result"], "events": r.body["events"]}

    def check(self) -> None:
        view = self.node.view()
        whole = json.loads(json.dumps(self.node.gate.public_state()))
        if view.pos != self.node.last_pos or json.dumps(view.state) != json.dumps(whole):
            raise Drift(f"after {self.checked} commands the view is not the gate's state")
        # the answers kept with the view: the whole state's, encoded as the app would
        expected = {
            "artifacts": {"now": whole["now"], "artifacts": whole["artifacts"]},
            "agents": {"agents": whole["agents"], "principals": whole["principals"]},
            "slots": {"slots": slots_of(whole["artifacts"])},
        }
        for name, body in expected.items():
            a = answer(self.node, Read.of(name))
            if a.position != view.pos or a.raw != JSONResponse(body).body:
                raise Drift(f"after {self.checked} commands GET /{name} is not the state's")
        self.checked += 1


def run(tmp: Path, scenario: str, agents: int, rounds: int) -> CheckedRemote:
    """A run of the evaluation model against a fresh node, checked after every command."""
    base = SimConfig(feedback_noise=0.0)  # the node has none (simulation/target.py)
    cfg = single_config(base, scenario=scenario, agents=agents, rounds=rounds)
    params, members = node_setup(cfg, 7)
    founders = tuple(Founder(m, public_hex(derive_key(SEED, m.id))) for m in members)
    setup = Setup(founders, {OPERATOR: public_hex(derive_key(SEED, OPERATOR))})
    node = Node.open(tmp / "n.db", params=params, setup=setup, fsync=False, snapshot_every=50)
    remote = CheckedRemote(node)
    try:
        Run(cfg, 7, remote).run()
    finally:
        node.close()
    return remote


def test_the_view_is_the_gates_state_after_every_command(tmp_path: Path) -> None:
    remote = run(tmp_path, "high", 12, 20)
    assert remote.checked > 250


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["moderate", "high"])
def test_the_view_over_long_runs(tmp_path: Path, scenario: str) -> None:
    """The same over longer runs (more agents, every path of the lifecycle)."""
    assert run(tmp_path, scenario, 40, 60).checked > 1000


@pytest.mark.parametrize(
    "mutant",
    ["nothing_named", "registry_never_changes", "no_signer", "answers_kept_across_views"],
)
def test_each_rule_of_the_incremental_view_is_needed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutant: str
) -> None:
    """Each rule of ``_next_view`` mutated in turn: the run above sees the view drift."""
    if mutant == "nothing_named":
        monkeypatch.setattr(node_module, "_named", lambda staged: set())
    elif mutant == "registry_never_changes":
        monkeypatch.setattr(node_module, "_same_registry", lambda old, new: True)
    elif mutant == "no_signer":
        monkeypatch.setattr(node_module, "_signers", lambda staged: set())
    else:  # one dict of kept answers for every view: encoded once, for good
        kept: dict[str, Any] = {}
        real = node_module.View.__init__

        def init(self: Any, *args: Any, **kw: Any) -> None:
            real(self, *args, **kw)
            object.__setattr__(self, "answers", kept)

        monkeypatch.setattr(node_module.View, "__init__", init)
    with pytest.raises(Drift):
        run(tmp_path, "high", 12, 20)
