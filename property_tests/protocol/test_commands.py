"""The command language has one table (protocol/commands.py), published as a JSON Schema.

The schema must be current, must accept every command of the committed vectors that the
reference accepts and reject every one it refuses as ``invalid_input`` (but for the
refusals that depend on the parameters or the layer, named below), and must agree with
the reference's own check on generated commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs

from ostrom import layout
from ostrom.protocol import commands
from ostrom.protocol.orchestrator import Orchestrator

SCHEMA_PATH = layout.SCHEMA_DIR / "command.schema.json"
VALIDATOR = Draft202012Validator(commands.command_schema())


def test_schema_file_is_a_valid_schema() -> None:
    # that it is current is the generated-files registry's drift test (codegen/test_generated.py)
    Draft202012Validator.check_schema(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def test_typed_commands_have_the_tables_keys() -> None:
    specs = {**commands.COMMANDS, commands.JOIN.op: commands.JOIN}
    assert set(commands.TYPED) == set(specs)
    for op, typed in commands.TYPED.items():
        spec = specs[op]
        assert typed.__required_keys__ == {"op", *spec.required}, op  # type: ignore[attr-defined]
        assert typed.__optional_keys__ == set(spec.optional), op  # type: ignore[attr-defined]


def _refused_beyond_shape(layer: str, command: Any, params: dict[str, Any]) -> bool:
    """An invalid_input the schema cannot see: a set_agent weight outside [w_min, w_max]
    (the parameters decide), set_agent in the community layer (its registry is derived), or
    a well-typed payload that does not hash to the digest (a hash is no JSON Schema)."""
    if isinstance(command, dict) and commands.payload_of(command) and VALIDATOR.is_valid(command):
        return not commands.payload_matches(command)
    if not isinstance(command, dict) or command.get("op") != "set_agent":
        return False
    if layer == "community":
        return True
    w = command.get("weight")
    return isinstance(w, int | float) and not (
        params.get("w_min", 0.1) <= w <= params.get("w_max", 1.0)
    )


def _vector_commands() -> list[tuple[str, str, Any, dict[str, Any]]]:
    out = []
    for layer in ("lifecycle", "community"):
        for path in sorted((layout.VECTORS_DIR / layer).glob("*/*.json")):
            doc = json.loads(path.read_text(encoding="utf-8"))
            if path.parent.name == "traces":  # ITF traces of the TLC vectors, not vectors
                continue
            for k, step in enumerate(doc["steps"]):
                name = f"{path.relative_to(layout.VECTORS_DIR)}#{k + 1}"
                out.append((name, step["expect"]["result"], step["command"], doc["params"]))
    return out


def test_schema_accepts_every_accepted_vector_command_and_rejects_the_malformed() -> None:
    accepted = rejected = 0
    wrong: list[str] = []
    for name, result, command, params in _vector_commands():
        layer = name.split("/", 1)[0]
        valid = VALIDATOR.is_valid(command)
        if result == "invalid_input" and not _refused_beyond_shape(layer, command, params):
            rejected += 1
            if valid:
                wrong.append(f"{name}: refused as invalid_input, yet the schema accepts it")
        elif result != "invalid_input":
            accepted += 1
            if not valid:
                wrong.append(f"{name}: {result}, yet the schema rejects {command!r}")
    assert not wrong, "\n".join(wrong)
    assert accepted > 1500 and rejected >= 10  # the vectors exercise both sides


MALFORMED = [
    {"op": "propose", "agent": "a", "artifact": "x", "slot": "s"},  # digest missing
    {"op": "propose", "agent": "", "artifact": "x", "slot": "s", "digest": "d"},
    {"op": "object", "agent": "a", "artifact": "x", "extra": 1},
    {"op": "commit_vote", "agent": "a", "artifact": "x", "commitment": "AB" * 32},
    {"op": "commit_vote", "agent": "a", "artifact": "x", "commitment": "ab" * 32 + "\n"},
    {
        "op": "reveal_vote",
        "agent": "a",
        "artifact": "x",
        "vote": "maybe",
        "reason": "",
        "salt": "0" * 64,
    },
    {"op": "arbitrate", "agent": "a", "artifact": "x", "outcome": "keep"},
    {"op": "forget_vote", "agent": "a", "artifact": "x", "confidence": 1.5},
    {"op": "forget_vote", "agent": "a", "artifact": "x", "confidence": True},
    {"op": "set_agent", "agent": "a", "tier": 4},
    {"op": "set_agent", "agent": "a", "tier": 1, "weight": 1e12},
    {"op": "set_agent", "agent": "a", "tier": 1, "sanction": "jailed"},
    {"op": "tick", "now": 3},
    {"op": "promote", "agent": "a"},
    {"op": "join", "agent": "x" * 257},
    ["tick"],
]


@pytest.mark.parametrize("command", MALFORMED, ids=lambda c: json.dumps(c)[:60])
def test_malformed_commands_are_rejected_by_schema_and_reference(command: Any) -> None:
    assert not VALIDATOR.is_valid(command)
    assert commands.well_formed(command) is None
    if isinstance(command, dict) and command.get("op") != "join":
        assert Orchestrator().apply(command)["result"] == "invalid_input"


_TEXT = st.one_of(st.text(max_size=4), st.sampled_from(["accept", "keep", "revote", "banned"]))
_VALUE = st.one_of(
    _TEXT,
    st.integers(-5, 5),
    st.floats(-2, 2, allow_nan=False),
    st.booleans(),
    st.none(),
    st.sampled_from(["ab" * 32, "AB" * 32]),
    st.lists(_TEXT, max_size=2),
)


@settings(max_examples=300, deadline=None)
@given(
    op=st.sampled_from([*commands.COMMANDS, "join"]),
    fields=st.dictionaries(
        st.sampled_from(
            [
                "agent",
                "artifact",
                "slot",
                "digest",
                "commitment",
                "vote",
                "reason",
                "salt",
                "outcome",
                "confidence",
                "tier",
                "weight",
                "reputation",
                "sanction",
                "subscriptions",
                "evidence",
            ]
        ),
        _VALUE,
        max_size=6,
    ),
)
def test_schema_and_reference_check_agree(op: str, fields: dict[str, Any]) -> None:
    command = {"op": op, **fields}
    spec = commands.JOIN if op == "join" else commands.COMMANDS[op]
    shape_ok = (
        commands.checked_fields(
            command,
            {k: t.check for k, t in spec.required.items()},
            {k: t.check for k, t in spec.optional.items()},
        )
        is not None
    )
    assert VALIDATOR.is_valid(command) == shape_ok, command


def test_schema_lives_in_the_schema_folder() -> None:
    assert SCHEMA_PATH.parent == Path(layout.SCHEMA_DIR)
