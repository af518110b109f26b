"""The protocol's versions (protocol/version.py) are the ones its shared formats carry: the
conformance suite's manifest names the protocol version, a node's signatures are bound to
it, and every trace log starts with the trace format.  A version bump that missed one of
them would let two implementations of different versions agree by accident.
"""

from __future__ import annotations

import json

from ostrom.layout import ROOT, VECTORS_DIR
from ostrom.protocol import PROTOCOL_VERSION, TRACE_FORMAT
from ostrom.service.identity import SIGNING_DOMAIN


def test_the_vectors_are_of_this_protocol_version() -> None:
    manifest = json.loads((VECTORS_DIR / "MANIFEST.json").read_text(encoding="utf-8"))
    assert manifest["protocol"] == PROTOCOL_VERSION


def test_a_signature_is_bound_to_the_protocol_version() -> None:
    assert SIGNING_DOMAIN.decode("ascii").rstrip("\n").rsplit("/", 1)[1] == str(PROTOCOL_VERSION)


def test_every_committed_trace_log_has_the_trace_format() -> None:
    logs = sorted((ROOT / "property_tests" / "fixtures" / "logs").glob("*.jsonl"))
    assert logs
    for log in logs:
        header = json.loads(log.read_text(encoding="utf-8").splitlines()[0])
        assert header["format"] == TRACE_FORMAT, log.name
