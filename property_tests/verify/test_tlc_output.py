"""Parsing TLC's -tool output, cfg rewriting for witnesses, and manifest validation (no TLC run).

These pin the formats of TLC 2.15 as seen on this machine, so a change of TLC version that
breaks the classification fails here with a readable diff instead of mislabelling a model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ostrom.verify.tlc.manifest import ManifestError, load_manifest
from ostrom.verify.tlc.output import parse_state_body, parse_tool_output
from ostrom.verify.tlc.runner import RunnerError, cfg_names, select_models, witness_cfg
from ostrom.verify.tlc.values import ModelValue, Opaque, TlaFunction

FIXTURE_MANIFEST = Path(__file__).parents[1] / "fixtures" / "tla" / "models" / "manifest.json"


def _msg(code: int, severity: int, *body: str) -> list[str]:
    return [f"@!@!@STARTMSG {code}:{severity} @!@!@", *body, f"@!@!@ENDMSG {code} @!@!@"]


def test_nested_messages_and_runtime_error() -> None:
    lines = [
        *_msg(2185, 0, "Starting... (2026-11-29 20:11:54)"),
        "@!@!@STARTMSG 1000:1 @!@!@",
        "TLC threw an unexpected exception.",
        "The exception was a tlc2.tool.EvalException",
        ": @!@!@STARTMSG 2132:0 @!@!@",
        "The first argument of Assert evaluated to FALSE; the second argument was:",
        '"boom"',
        "@!@!@ENDMSG 2132 @!@!@",
        "@!@!@ENDMSG 1000 @!@!@",
    ]
    outcome, prints = parse_tool_output(lines, 75)
    assert outcome.kind == "error"
    assert outcome.got.startswith("error: TLC threw an unexpected exception.")
    assert outcome.error_text is not None and "Assert evaluated to FALSE" in outcome.error_text
    assert prints == []


def test_invariant_violated_by_initial_state() -> None:
    lines = _msg(2107, 1, "Invariant Inv is violated by the initial state:", "x = 0", "")
    outcome, _ = parse_tool_output(lines, 12)
    assert (outcome.kind, outcome.got) == ("invariant", "Inv")
    assert [(s.index, s.action, s.values) for s in outcome.trace] == [
        (0, "Initial predicate", {"x": 0})
    ]


def test_liveness_naming_depends_on_the_cfg() -> None:
    lines = _msg(2116, 1, "Temporal properties were violated.", "")
    assert parse_tool_output(lines, 13, ["Live"])[0].got == "Live"
    assert parse_tool_output(lines, 13, ["A", "B"])[0].got == "liveness"
    assert parse_tool_output(lines, 13, [])[0].got == "liveness"


def test_state_body_forms() -> None:
    body = ["/\\ f = ( p1 :> 1 @@", "       p2 :> 2 )", "/\\ g = [x \\in Nat |-> x]", ""]
    values = parse_state_body(body)
    assert values["f"] == TlaFunction(((ModelValue("p1"), 1), (ModelValue("p2"), 2)))
    assert values["g"] == Opaque("[x \\in Nat |-> x]")
    assert parse_state_body(["y = <<>>"]) == {"y": ()}


def test_print_lines_are_separated_from_sany_text() -> None:
    lines = [
        "Parsing file /x/M.tla",
        *_msg(2185, 0, "Starting..."),
        '<<"x", 0>>',
        *_msg(2193, 0, "Model checking completed. No error has been found."),
        *_msg(
            2199, 0, "1,234 states generated, 567 distinct states found, 0 states left on queue."
        ),
        *_msg(2194, 0, "The depth of the complete state graph search is 9."),
    ]
    outcome, prints = parse_tool_output(lines, 0)
    assert (outcome.got, outcome.total_states, outcome.distinct_states, outcome.depth) == (
        "pass",
        1234,
        567,
        9,
    )
    assert prints == ['<<"x", 0>>']


CFG = """\\* comment mentioning INVARIANT Fake
CONSTANTS
    N = 3
    Names = {"PROPERTY x", a}
SPECIFICATION Spec
INVARIANTS TypeOK
    Safety (* PROPERTY Hidden *)
PROPERTY Live
CONSTRAINT Bound
"""


def test_cfg_names_ignore_comments_and_strings() -> None:
    assert cfg_names(CFG, "INVARIANT", "INVARIANTS") == ["TypeOK", "Safety"]
    assert cfg_names(CFG, "PROPERTY", "PROPERTIES") == ["Live"]


def test_witness_cfg_keeps_everything_but_the_checks() -> None:
    text = witness_cfg(CFG, "NeverDone")
    assert cfg_names(text, "INVARIANT", "INVARIANTS") == ["NeverDone"]
    assert cfg_names(text, "PROPERTY", "PROPERTIES") == []
    assert 'Names = {"PROPERTY x", a}' in text
    assert "CONSTRAINT Bound" in text and "SPECIFICATION Spec" in text


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ({"model": []}, '"models" list'),
        ({"models": [{"name": "a", "module": "M", "config": "c"}]}, "'expect' is required"),
        (
            {"models": [{"name": "a", "module": "M", "config": "c", "expect": "pass", "fp": -1}]},
            "'fp' must be",
        ),
        (
            {"models": [{"name": "a", "module": "m/M", "config": "c", "expect": "pass"}]},
            "module name",
        ),
        (
            {"models": [{"name": "a", "module": "M", "config": "c", "expect": "pass"}] * 2},
            "appears twice",
        ),
    ],
)
def test_malformed_manifest(tmp_path: Path, data: object, fragment: str) -> None:
    with pytest.raises(ManifestError, match=fragment):
        load_manifest(_write(tmp_path, data))


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="not found"):
        load_manifest(tmp_path / "nope.json")


def test_selection() -> None:
    manifest = load_manifest(FIXTURE_MANIFEST)
    default = [m.name for m in select_models(manifest, [], deep=False)]
    assert "counter-deadlock" not in default and "counter-pass" in default
    assert "counter-deadlock" in [m.name for m in select_models(manifest, [], deep=True)]
    assert [m.name for m in select_models(manifest, ["counter-deadlock"], deep=False)] == [
        "counter-deadlock"
    ]
    with pytest.raises(RunnerError, match="unknown model 'nope'; known: counter-pass"):
        select_models(manifest, ["nope"], deep=False)


def test_repository_manifest_is_valid() -> None:
    path = Path(__file__).parents[2] / "models" / "manifest.json"
    load_manifest(path)
