"""The simulation played against a remote core (``ostrom simulate --target``): the shadow
community catches a node that answers differently, and a faithful node gives the result
of the in-process run of the same setup.

The HTTP path (a real node, signed commands) is tested in test_simulate_target.py; here
the remote is an in-process ``Community`` so the comparison itself is what is tested.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from ostrom.protocol.commands import Observation
from ostrom.protocol.community import Community
from ostrom.simulation.config import SimConfig
from ostrom.simulation.protocol import (
    Divergence,
    Run,
    check_remote_config,
    node_setup,
)

CFG = SimConfig(agents=24, rounds=20, artifacts=40, feedback_noise=0.0)
SEED = 3


class LocalNode:
    """A remote that is a community in this process, answering as JSON would."""

    def __init__(self, community: Community) -> None:
        self.community = community
        self.commands = 0

    def apply(self, command: dict[str, Any]) -> Observation:
        self.commands += 1
        answer: Observation = json.loads(json.dumps(self.community.apply(command)))
        return answer


def test_a_faithful_node_gives_the_shadow_result() -> None:
    node = LocalNode(Community(*node_setup(CFG, SEED)))
    remote = Run(CFG, SEED, node).run()
    shadow = Run(CFG, SEED, LocalNode(Community(*node_setup(CFG, SEED)))).run()
    assert node.commands > CFG.rounds  # proposals, votes and ticks all went to the node
    assert remote.final == shadow.final
    assert remote.extras == shadow.extras
    assert node.community.now == CFG.rounds


def test_a_node_with_other_parameters_is_caught() -> None:
    params, members = node_setup(CFG, SEED)
    wrong = Community(dataclasses.replace(params, seed=params.seed + 1), members)
    with pytest.raises(Divergence, match="the node answered"):
        Run(CFG, SEED, LocalNode(wrong)).run()


def test_a_node_with_other_founders_is_caught() -> None:
    params, members = node_setup(CFG, SEED)
    wrong = Community(params, members[:-1])
    with pytest.raises(Divergence):
        Run(CFG, SEED, LocalNode(wrong)).run()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"feedback_noise": 0.15}, "feedback_noise"),
        ({"ablations": ("no_sanctions",)}, "ablations"),
        ({"feedback": "truth"}, "feedback"),
        ({"governance": "majority"}, "governance"),
    ],
)
def test_what_a_node_cannot_run_is_refused_up_front(change: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field.split("_")[0]):
        check_remote_config(dataclasses.replace(CFG, **change))
