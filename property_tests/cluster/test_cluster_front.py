"""The front's admission of commands (ostrom/cluster/front.py, ``check_command``).

Whatever the front accepts, every replica decodes: a command the message decoder would
refuse, signed and sent, would be dropped by every replica and retried forever by its
client identity.  A body goes through the one application's strict JSON parser
(service/app.py) and then ``check_command``; hostile bodies are refused by one of the two
(400) and nothing else happens.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ostrom.cluster.app import batch_operation
from ostrom.cluster.front import BadCommand, check_command
from ostrom.consensus.crypto import make_keys
from ostrom.consensus.messages import Request, decode
from ostrom.service.app import _BadRequest, _parse_json

_, SIGNERS = make_keys(3, ["c0"])

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


def parse_command(body: bytes) -> tuple[Any, int]:
    """What a cluster does with a POST /commands body: the app's parser, the front's check."""
    try:
        command = _parse_json(body)
    except _BadRequest as exc:
        raise BadCommand(exc.detail) from None
    return command, check_command(command)


def _accepted_travels(body: bytes) -> None:
    try:
        command, size = parse_command(body)
    except BadCommand:
        return
    signed = SIGNERS["c0"].sign(Request("c0", 1, batch_operation([command, command])))
    back = decode(signed.encoded)  # what a replica does with the frame
    assert back == signed
    assert size > 0


@given(st.binary(max_size=500))
def test_hostile_bytes(body: bytes) -> None:
    _accepted_travels(body)


@given(json_values)
def test_json_values(value: Any) -> None:
    _accepted_travels(json.dumps(value).encode())


def test_what_is_refused() -> None:
    for body, why in [
        (b"NaN", "not JSON"),
        (b"[1e999]", "cannot be signed"),
        (str(2**64).encode(), "cannot be signed"),
        (b"[" * 60 + b"]" * 60, "cannot be signed"),
        (b'"\\ud800"', "cannot be signed"),
        (b"\xff", "not JSON"),
    ]:
        try:
            parse_command(body)
        except BadCommand as exc:
            assert why in str(exc), (body[:20], exc)
        else:
            raise AssertionError(f"{body[:20]!r} was accepted")
    assert parse_command(b'{"op": "tick"}') == ({"op": "tick"}, 13)
