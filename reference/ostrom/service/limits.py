"""The limits of the HTTP server (``server``) on what one client may hold.

Apart from ``server`` so that the command line can show the defaults without loading
the web stack (``ostrom serve``'s options; docs/security.md).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BACKLOG",
    "DEFAULT_LIMITS",
    "MAX_BACKLOG",
    "OTHER_FDS",
    "RESERVED_FDS",
    "Limits",
    "effective_cap",
    "listen_backlog",
]

#: The listening socket's least backlog: connections the kernel completes before the
#: server accepts them.  The event loop accepts up to the backlog in one go before any of
#: them runs ``connection_made`` (where the cap evicts), so they need descriptors beyond
#: the cap: the reserve counts them.
BACKLOG: Final = 128
#: The deepest backlog asked for (Linux's default ``somaxconn`` since 5.4; the kernel
#: lowers a larger one to its own).  ``listen_backlog``: as deep as the descriptors
#: allow above the cap, up to this.
MAX_BACKLOG: Final = 4096
#: Descriptors kept free of connections besides the accept burst: the database (with
#: its WAL and journal), the listening sockets, the replicas' links, logs, and the
#: interpreter's own.
OTHER_FDS: Final = 64
#: The least reserve of descriptors kept free of connections: the least backlog's
#: accept burst and ``OTHER_FDS``.
RESERVED_FDS: Final = BACKLOG + OTHER_FDS
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


def _descriptors() -> int | None:
    """The soft descriptor limit, first raised to the hard one (what any process may
    do); None: unlimited."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def listen_backlog(limits: Limits) -> int:
    """The listen backlog: what the descriptors leave above ``max_connections`` and
    ``OTHER_FDS``, between ``BACKLOG`` and ``MAX_BACKLOG``.  At the cap every evicted slow
    client comes straight back, so the accept queue must hold the attackers' excess
    connections, or the kernel drops honest SYNs (server.py)."""
    soft = _descriptors()
    if soft is None:
        return MAX_BACKLOG
    return max(BACKLOG, min(MAX_BACKLOG, soft - OTHER_FDS - limits.max_connections))


def effective_cap(limits: Limits) -> int:
    """The connection cap this process can keep: ``max_connections``, lowered to its
    descriptor limit minus the reserve (the backlog's accept burst and ``OTHER_FDS``).
    The soft limit is first raised to the hard one, so the cap is the configured one
    wherever the OS allows; the backlog shrinks to ``BACKLOG`` before the cap does."""
    soft = _descriptors()
    if soft is None:
        return limits.max_connections
    room = soft - OTHER_FDS - listen_backlog(limits)
    return max(1, min(limits.max_connections, room))
