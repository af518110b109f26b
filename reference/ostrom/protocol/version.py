"""The version of the protocol and of the formats every implementation shares.

These are the protocol's versions, not the package's (``ostrom.__version__``): a release
of the package that changes no rule, message or format keeps them.
"""

from __future__ import annotations

from typing import Final

__all__ = ["TRACE_FORMAT"]

#: The header of an implementation's log (docs/conformance.md, "Trace validation"): what
#: ``ostrom log export``, the reference driver and any implementation write, and what
#: ``ostrom validate-trace`` reads.
TRACE_FORMAT: Final = "ostrom-trace/1"
