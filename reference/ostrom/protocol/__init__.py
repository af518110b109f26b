"""The normative protocol core: sans-IO, deterministic, importing nothing outside itself.

Each module mirrors a TLA+ spec in ``spec/`` action for action (docs/design.md).  The API
a user of the library needs is re-exported here: ``Community`` (the layers together) and
``Orchestrator`` (the lifecycle), ``Params`` and ``DEFAULTS``, ``Agent`` and ``Sanction``,
``ErrorCode`` and ``Refused``, the command and observation types (``Command``,
``Observation``, ``well_formed``), the ballots, the books of reputation and sanctions, and
the protocol's version.  The names are imported eagerly: the core is plain Python and
``Community`` loads every module of it anyway.
"""

from __future__ import annotations

from ostrom.protocol.agents import Agent, Sanction
from ostrom.protocol.commands import (
    COMMANDS,
    Command,
    Event,
    Observation,
    command_schema,
    well_formed,
)
from ostrom.protocol.community import Community, Member, Truth
from ostrom.protocol.errors import ErrorCode, Refused
from ostrom.protocol.forgetting import ForgetDecision, ForgetRule
from ostrom.protocol.lifecycle import STATES, TRANSITIONS
from ostrom.protocol.orchestrator import Artifact, Orchestrator
from ostrom.protocol.params import DEFAULTS, ParamError, Params
from ostrom.protocol.reputation import ReputationBook
from ostrom.protocol.sanctions import SanctionBook, Violation
from ostrom.protocol.version import PROTOCOL_VERSION, TRACE_DELTA_FORMAT, TRACE_FORMAT
from ostrom.protocol.voting import Ballot, BallotKind, Tally, commitment, make_salt

__all__ = [
    "COMMANDS",
    "DEFAULTS",
    "PROTOCOL_VERSION",
    "STATES",
    "TRACE_DELTA_FORMAT",
    "TRACE_FORMAT",
    "TRANSITIONS",
    "Agent",
    "Artifact",
    "Ballot",
    "BallotKind",
    "Command",
    "Community",
    "ErrorCode",
    "Event",
    "ForgetDecision",
    "ForgetRule",
    "Member",
    "Observation",
    "Orchestrator",
    "ParamError",
    "Params",
    "Refused",
    "ReputationBook",
    "Sanction",
    "SanctionBook",
    "Tally",
    "Truth",
    "Violation",
    "command_schema",
    "commitment",
    "make_salt",
    "well_formed",
]
