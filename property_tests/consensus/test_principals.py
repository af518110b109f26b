"""Who holds a key in a PBFT setup (consensus/principals.py), and that its defaults are
the replica's: the pbft conformance layer and the pbft trace compiler both derive keys
from a logged setup through it, so a default that drifted from ``Replica``'s would make
a trace validate against another setup than the one that ran.
"""

from __future__ import annotations

import inspect

from hypothesis import given
from hypothesis import strategies as st

from ostrom.consensus import Replica
from ostrom.consensus.messages import replica_name
from ostrom.consensus.principals import DEFAULT_BASE_TIMEOUT, DEFAULT_CLIENTS, principals
from ostrom.harness import Simulation


@given(st.integers(1, 20), st.lists(st.text("cdx0123", min_size=1, max_size=3), max_size=5))
def test_replicas_first_then_the_clients_in_order(n: int, clients: list[str]) -> None:
    names = principals(n, clients)
    assert names[:n] == [replica_name(i) for i in range(n)] == [f"r{i}" for i in range(n)]
    assert names[n:] == clients


def test_the_defaults_are_the_replicas_and_the_harness() -> None:
    default = inspect.signature(Replica.__init__).parameters["base_timeout"].default
    assert default == DEFAULT_BASE_TIMEOUT
    assert Simulation(4, 1, 0).client_names == list(DEFAULT_CLIENTS)
