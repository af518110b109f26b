"""The version of the protocol and of the formats every implementation shares.

These are the protocol's versions, not the package's (``ostrom.__version__``): a release
of the package that changes no rule, message or format keeps them (docs/design.md §9,
"Versions").
"""

from __future__ import annotations

from typing import Final

__all__ = ["PROTOCOL_VERSION", "TRACE_DELTA_FORMAT", "TRACE_FORMAT"]

#: The protocol's version: it changes when a rule, a message or a format that two
#: implementations share changes, and only then.  The conformance suite names it
#: (vectors/MANIFEST.json's "protocol": the runner refuses a suite of another version) and
#: a node's signed envelopes carry it (service/identity.py, SIGNING_DOMAIN), so a
#: signature made for one version is never valid under another.
PROTOCOL_VERSION: Final = 1

#: The header of an implementation's log (docs/conformance.md, "Trace validation"): what
#: ``ostrom log export``, the reference driver and any implementation write, and what
#: ``ostrom validate-trace`` reads.
TRACE_FORMAT: Final = "ostrom-trace/1"

#: The header of a log whose steps carry the public state as a delta against the step
#: before (docs/conformance.md, "Trace logs"): what ``ostrom log export`` writes, so that
#: a node's trace grows with its log, not with the log times the state.
#: ``ostrom validate-trace`` reads both formats; the vectors, the reference driver and
#: the implementations' ``--log`` stay ``TRACE_FORMAT``.
TRACE_DELTA_FORMAT: Final = "ostrom-trace/2"
