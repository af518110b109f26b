"""The conformance suite: vectors, the driver protocol, the runner, trace validation.

docs/conformance.md is the normative description of every format here.  The package
exports the formats' names and constants below; the entry points are ``ostrom conform``
and ``ostrom vectors`` (``commands``), ``runner.run_suite`` and the reference driver
(``python -m ostrom.conformance.driver``), each in its module: the runner and the drivers
import every layer of the product, which this package's constants must not load.
"""

from __future__ import annotations

from typing import Final

# The trace-log format of ``ostrom validate-trace`` (defined where trace logs are read).
from ostrom.protocol.version import TRACE_FORMAT as TRACE_FORMAT

__all__ = ["DRIVER_PROTOCOL", "FLOAT_TOLERANCE", "LAYERS", "TRACE_FORMAT", "VECTOR_FORMAT"]

#: The vector format this code reads and writes (``"format"`` of a vector file).
VECTOR_FORMAT: Final = "ostrom-vector/1"
#: The driver protocol (the ``hello`` handshake names it).
DRIVER_PROTOCOL: Final = "ostrom-driver/1"
#: Every layer the suite knows, in the order the runner reports them.
LAYERS: Final = (
    "lifecycle",
    "voting",
    "reputation",
    "sanctions",
    "forgetting",
    "community",
    "pbft",
)
#: Absolute tolerance for floats in observations (integers always compare exactly).
FLOAT_TOLERANCE: Final = 1e-9
