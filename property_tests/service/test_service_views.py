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
from ostrom.service import reads as reads_module
from ostrom.service.gate import OPERATOR_OPS, Founder, Setup
from ostrom.service.identity import public_hex, sign_envelope
from ostrom.service.node import KEPT_VIEWS, Node, View
from ostrom.service.reads import Read, answer, slots_of
from ostrom.simulation.commands import single_config
from ostrom.simulation.config import SimConfig
from ostrom.simulation.protocol import Run, node_setup
from service_world import FOUNDERS, Signer, setup

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
    [
        "nothing_named",
        "registry_never_changes",
        "no_signer",
        "answers_kept_across_views",
        "pieces_only_of_new_artifacts",
        "slots_unordered",
    ],
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
    elif mutant == "pieces_only_of_new_artifacts":  # a changed entry keeps its old piece
        real_since = Node.changed_since

        def only_new(self: Node, pos: int, view: View) -> set[str] | None:
            changed, before = real_since(self, pos, view), self._views.get(pos)
            if changed is None or before is None:
                return changed
            return {x for x in changed if x not in before.state["artifacts"]}

        monkeypatch.setattr(Node, "changed_since", only_new)
    elif mutant == "slots_unordered":  # each piece appended, not put in its place (and
        # found where it is: the lists stay consistent, only their order is wrong)
        monkeypatch.setattr(reads_module, "insort", lambda seq, item: seq.append(item))
        monkeypatch.setattr(reads_module, "bisect_left", lambda seq, item: seq.index(item))
    else:  # one dict of kept answers for every view: encoded once, for good
        kept: dict[str, Any] = {}
        real = node_module.View.__init__

        def init(self: Any, *args: Any, **kw: Any) -> None:
            real(self, *args, **kw)
            object.__setattr__(self, "answers", kept)

        monkeypatch.setattr(node_module.View, "__init__", init)
    with pytest.raises(Drift):
        run(tmp_path, "high", 12, 20)


def expected(view: View, name: str) -> bytes:
    """GET /{name}'s body in ``view``, encoded whole (as the app did before the pieces)."""
    st = view.state
    body = (
        {"slots": slots_of(st["artifacts"])}
        if name == "slots"
        else {"now": st["now"], "artifacts": st["artifacts"]}
    )
    return bytes(JSONResponse(body).body)


def test_the_whole_reads_after_a_gap_and_out_of_order(tmp_path: Path) -> None:
    """The encoded pieces of ``/artifacts`` and ``/slots`` (service/reads.py, ``_Whole``)
    are brought from view to view by the changes in between; after more views than the
    node keeps (the changes no longer known) they are made again from the whole state,
    and a read of a view older than theirs is answered from that view's whole state.
    Every answer is the whole state's, byte for byte.  Slots are named so that a new
    artifact often comes first in its slot (the slots' order moves)."""
    node, signer = Node.open(tmp_path / "n.db", setup=setup(), fsync=False), Signer()
    done = 0

    def write(n: int) -> None:
        nonlocal done
        for _ in range(n):
            f = FOUNDERS[done % len(FOUNDERS)]
            x, s = f"a{(7 * done) % 101:03d}-{done}", f"s{(3 * done) % 17}"
            cmd = {"op": "propose", "agent": f, "artifact": x, "slot": s, "digest": "d"}
            assert node.submit(signer.env(f, cmd)).status == 200
            done += 1

    def check(view: View) -> None:
        for name in ("artifacts", "slots"):
            assert reads_module._whole(node, view, name)[1] == expected(view, name), name

    try:
        write(5)
        check(node.view())
        write(KEPT_VIEWS + 5)  # the views in between are no longer kept
        check(node.view())
        old = node.view()
        write(3)
        check(node.view())
        check(old)  # the pieces are of a later view: answered from its whole state
        for _ in range(20):  # one view at a time, the usual path
            write(1)
            check(node.view())
    finally:
        node.close()
