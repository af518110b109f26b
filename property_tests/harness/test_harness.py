"""The consensus test harness itself: the simulated network, the Byzantine strategies and
their ledger, the replicated orchestrator, and the Byzantine replica process.

The consensus tests (property_tests/consensus/) use the harness to test PBFT; here the
harness is what is tested, so that a consensus test that passes is not passing because
the network stopped delivering, a strategy stopped attacking or the REPL-1 check
stopped comparing.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lifecycle_world import AGENTS, PARAMS
from ostrom.consensus.messages import replica_name
from ostrom.harness import STRATEGIES, Faults, ReplicatedOrchestrator, Simulation
from ostrom.harness.byzantine import RejectionLedger
from ostrom.harness.byzantine_node import main as byzantine_node
from ostrom.harness.network import Network

COMMANDS = [
    {"op": "propose", "agent": "d1", "artifact": "x0", "slot": "s0", "digest": "d0"},
    {"op": "tick"},
    {"op": "object", "agent": "a1", "artifact": "x0"},
    {"op": "tick"},
]


def _queue(seed: int, faults: Faults) -> list[tuple[str, str, int]]:
    net = Network(random.Random(seed), faults)
    for k in range(200):
        net.send(f"r{k % 4}", f"r{(k + 1) % 4}", b"m%d" % k)
    return [(e.src, e.dst, e.deliver_at) for e in net.queue]


def test_the_network_is_deterministic_per_seed() -> None:
    faults = Faults(drop=0.2, duplicate=0.2, max_delay=9)
    assert _queue(3, faults) == _queue(3, faults)
    assert _queue(3, faults) != _queue(4, faults)


def test_the_faults_do_what_they_say() -> None:
    assert _queue(0, Faults(drop=1.0)) == []
    assert len(_queue(0, Faults())) == 200
    assert len(_queue(0, Faults(duplicate=1.0))) == 400
    delays = {at for _, _, at in _queue(0, Faults(max_delay=5))}
    assert delays <= set(range(6)) and len(delays) > 1


def test_a_partition_cuts_exactly_the_links_between_groups() -> None:
    net = Network(random.Random(0))
    net.partition([{"r0", "r1"}, {"r2"}])
    for src, dst, delivered in [("r0", "r1", True), ("r1", "r2", False), ("r3", "r3", False)]:
        before = len(net.queue)
        net.send(src, dst, b"x")
        assert (len(net.queue) > before) is delivered, (src, dst)
    assert net.stats["dropped_partition"] == 2
    net.heal()
    net.send("r1", "r2", b"y")
    assert net.queue[-1].dst == "r2"


def test_a_simulation_executes_every_request_despite_loss() -> None:
    sim = Simulation(4, 1, 9, faults=Faults(drop=0.1, duplicate=0.1, max_delay=4), clients=2)
    for k in range(3):
        sim.submit("c0", {"k": k})
        sim.submit("c1", {"k": 10 + k})
    sim.run(200_000, until=sim.all_executed)
    assert sim.all_executed()
    histories = [list(sim.replicas[i].history) for i in sim.honest]
    assert all(h == histories[0] for h in histories)  # BFT-SAFE-1 on the run
    assert len(sim.results("c0")) == 3 and len(sim.results("c1")) == 3


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_is_survived_and_its_refusals_are_counted(name: str) -> None:
    """One Byzantine replica of four, each strategy: the honest ones agree and execute
    everything, and every refusal they count is charged to a sender."""
    sim = Simulation(4, 1, 5, byzantine={0: STRATEGIES[name]()}, faults=Faults(reorder=False))
    ledger = RejectionLedger(sim)
    sim.submit("c0", {"op": "a"})
    sim.submit("c0", {"op": "b"})
    sim.run(300_000, until=sim.all_executed)
    assert sim.run_fair(12) is not None, name  # the fair scheduler reaches quiescence
    assert sim.all_executed(), name
    logs = [list(sim.replicas[i].history) for i in sim.honest]
    assert all(log == logs[0] for log in logs), name
    assert set(ledger.by_source) <= {replica_name(i) for i in range(4)} | {"c0"}


def test_the_replicated_orchestrator_checks_repl1_and_can_fail() -> None:
    ro = ReplicatedOrchestrator(4, 1, seed=2, params=PARAMS, agents=AGENTS, clients=1)
    for command in COMMANDS:
        ro.submit("c0", command)
    ro.sim.run(200_000, until=ro.sim.all_executed)
    ro.check_repl1()
    states = ro.states()
    assert len({repr(sorted(s.items())) for s in states.values()}) == 1
    victim = sorted(ro.sim.honest)[-1]
    ro.app(victim).orchestrator.apply({"op": "tick"})  # a command outside the log
    with pytest.raises(AssertionError, match=f"replica {victim} diverges"):
        ro.check_repl1()


def test_the_byzantine_node_refuses_what_it_cannot_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "cluster.toml")
    assert byzantine_node(["--cluster", missing, "--id", "0", "--byzantine", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown strategy 'nope'") and err.count("\n") == 1
    strategy = sorted(STRATEGIES)[0]
    assert byzantine_node(["--cluster", missing, "--id", "0", "--byzantine", strategy]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
