"""Who holds a key in a PBFT setup, and the setup's defaults.

The pbft conformance layer (ostrom/conformance/pbft_layer.py) builds its replica from a
setup and the pbft trace compiler (ostrom/verify/trace/pbft.py) re-derives the same keys
from the logged header: both read the principals and defaults from here, so that the
verification layer needs nothing from the conformance layer.
"""

from __future__ import annotations

from typing import Final

from ostrom.consensus.messages import replica_name

__all__ = ["DEFAULT_BASE_TIMEOUT", "DEFAULT_CLIENTS", "principals"]

#: ``setup.base_timeout`` when absent (``Replica``'s default).
DEFAULT_BASE_TIMEOUT: Final = 1000
#: ``setup.clients`` when absent.
DEFAULT_CLIENTS: Final = ("c0",)


def principals(n: int, clients: tuple[str, ...] | list[str]) -> list[str]:
    """Every principal with a key: replicas ``r0..r{n-1}``, then the clients."""
    return [replica_name(i) for i in range(n)] + list(clients)
