"""The limits of the HTTP server (``server``) on what one client may hold.

Apart from ``server`` so that the command line can show the defaults without loading
the web stack (``ostrom serve``'s options; docs/security.md).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from typing import Final

__all__ = ["BACKLOG", "DEFAULT_LIMITS", "RESERVED_FDS", "Limits", "effective_cap"]

#: The listening socket's backlog: connections the kernel completes before the server
#: accepts them.  The event loop accepts up to this many in one go before any of them
#: runs ``connection_made`` (where the cap evicts), so they need descriptors beyond the
#: cap: ``RESERVED_FDS`` counts them.
BACKLOG: Final = 128
#: Descriptors kept free of connections: an accept burst (``BACKLOG``), and the
#: database (with its WAL and journal), the listening sockets, the replicas' links,
#: logs, and the interpreter's own.
RESERVED_FDS: Final = BACKLOG + 64
#: The longest timeout (a day): nan, infinity or a timer the event loop cannot arm are
#: no timeouts at all.
_MAX_TIMEOUT_S: Final = 86400.0


@dataclass(frozen=True)
class Limits:
    """The server's limits on what one client may hold (docs/security.md)."""

    #: seconds for a request's line and headers, from the connection's opening or the
    #: end of the previous response on it
    header_timeout: float = 10.0
    #: seconds for a request's body, from the end of its headers
    body_timeout: float = 30.0
    #: open connections at most (lowered to what the descriptor limit allows)
    max_connections: int = 1000
    #: seconds an idle keep-alive connection stays open after a response (uvicorn's)
    keep_alive: float = 5.0

    def __post_init__(self) -> None:
        for name in ("header_timeout", "body_timeout", "keep_alive"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value <= _MAX_TIMEOUT_S):
                raise ValueError(f"{name} must be in (0, {_MAX_TIMEOUT_S:g}] seconds, not {value}")
        if self.max_connections < 1:
            raise ValueError("max_connections is at least 1")


DEFAULT_LIMITS: Final = Limits()


def effective_cap(limits: Limits) -> int:
    """The connection cap this process can keep: ``max_connections``, lowered to its
    descriptor limit minus a reserve.  The soft limit is first raised to the hard one
    (what any process may do), so the cap is the configured one wherever the OS allows."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    room = soft - RESERVED_FDS if soft != resource.RLIM_INFINITY else limits.max_connections
    return max(1, min(limits.max_connections, room))
