"""What one step of the replica returns: the signed messages to send and the requests it
executed (spec/PBFTReplica.tla, section "outputs": ``Send`` and ``s.out``, the executions
``s.exe``; its rejections ``s.rej`` are ``ReplicaBase.rejected``).

Separate because they are the replica's interface to the I/O around it (the cluster's
replica process, the harness's simulated network), and the client
(``ostrom.consensus.client``) speaks it without a replica of its own.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from ostrom.consensus.messages import Signed

__all__ = ["BROADCAST", "RETRY_LATER", "Executed", "Output", "Send"]

BROADCAST: Final = "*"
#: Refusals that mean "not yet": the receiver may take the message later (above its
#: window, of a future view, over its rate), so a sender or an I/O layer offers it again.
RETRY_LATER: Final = ("out_of_window", "future_view", "rate_limited")


@dataclasses.dataclass(frozen=True)
class Send:
    """Send ``payload`` to ``dest`` (a principal name, or ``BROADCAST`` to every other
    replica).  ``delay`` is extra logical delay a (Byzantine) sender asks for."""

    dest: str
    payload: Signed | bytes
    delay: int = 0


@dataclasses.dataclass(frozen=True)
class Executed:
    """Sequence number ``seq`` was executed: ``request`` (None: null request) and the
    application's result (None: null, or a duplicate timestamp that was skipped)."""

    seq: int
    request: Signed | None
    result: dict[str, Any] | None


#: What a replica's step returns: the signed messages to send and the requests executed.
@dataclasses.dataclass
class Output:
    sends: list[Send] = dataclasses.field(default_factory=list)
    executed: list[Executed] = dataclasses.field(default_factory=list)

    def extend(self, other: Output) -> Output:
        self.sends.extend(other.sends)
        self.executed.extend(other.executed)
        return self
