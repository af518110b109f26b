"""Generated renderings of the transition table are current (one table, many views)."""

from __future__ import annotations

import re
from pathlib import Path

from ostrom.codegen import diagram
from ostrom.protocol.lifecycle import STATES, TRANSITIONS

ROOT = Path(__file__).resolve().parents[2]


def test_tla_table_module_is_current() -> None:
    # spec/LifecycleTable.tla feeds TableInv: TLC checks every step against these rows.
    committed = (ROOT / "spec" / "LifecycleTable.tla").read_text(encoding="utf-8")
    assert committed == diagram.to_tla_table(), (
        "run: ostrom diagram --format tla --output spec/LifecycleTable.tla"
    )


def test_dot_diagram_is_current() -> None:
    committed = (ROOT / "docs" / "img" / "lifecycle.dot").read_text(encoding="utf-8")
    assert committed == diagram.to_dot(), "run: make docs"


def test_mermaid_in_lifecycle_chapter_is_current() -> None:
    text = (ROOT / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    match = re.search(r"```mermaid\n(.*?)```", text, re.S)
    assert match, "docs/lifecycle.md has no mermaid block"
    assert match.group(1) == diagram.to_mermaid(), "run: ostrom diagram --format mermaid"


def test_every_row_and_state_is_drawn() -> None:
    dot = diagram.to_dot()
    for state in STATES:
        assert f'"{state}"' in dot
    for row in TRANSITIONS:
        assert row.event in dot


def _block(name: str) -> str:
    text = (ROOT / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    match = re.search(
        rf"<!-- BEGIN generated: {name} -->\n(.*?)<!-- END generated: {name} -->", text, re.S
    )
    assert match, f"docs/lifecycle.md lacks the generated block {name}"
    return match.group(1)


def test_guard_table_in_docs_is_current() -> None:
    assert _block("guards") == diagram.to_guard_table(), "run: ostrom diagram --format guards"


def test_param_table_in_docs_is_current() -> None:
    assert _block("params") == diagram.to_param_table(), "run: ostrom params"


def _tla_string_set(text: str, name: str) -> frozenset[str]:
    """The strings of a definition ``Name == {"a", "b", ...}`` (one literal set)."""
    match = re.search(rf"^{name} == \{{(.*?)\}}", text, re.S | re.M)
    assert match, f"no definition {name} == {{...}}"
    return frozenset(re.findall(r'"(\w+)"', match.group(1)))


def test_lifecycle_tla_state_classes_are_lifecycle_py() -> None:
    # One source for the state classes (lifecycle.py); spec/Lifecycle.tla spells them out,
    # this test fails when the two drift apart (LC-LIVE-1 reads Stable, TimeoutDue Timed).
    from ostrom.protocol import lifecycle

    text = (ROOT / "spec" / "Lifecycle.tla").read_text(encoding="utf-8")
    assert _tla_string_set(text, "States") == frozenset(lifecycle.STATES)
    assert _tla_string_set(text, "Stable") == lifecycle.STABLE
    assert re.search(r"^Transient == States \\ Stable$", text, re.M)
    assert _tla_string_set(text, "Timed") == lifecycle.TIMED
    assert _tla_string_set(text, "Resubmittable") == lifecycle.RESUBMITTABLE
    assert _tla_string_set(text, "Forgettable") == lifecycle.FORGETTABLE
    assert _tla_string_set(text, "AgentEvents") == frozenset(lifecycle.AGENT_COMMANDS)


def test_trace_spec_act_is_the_command_action_map() -> None:
    # LifecycleTrace.tla's Act calls the action CommandAction (generated from EVENTS) names.
    from ostrom.protocol.lifecycle import SINGLE_ACTIONS

    text = (ROOT / "spec" / "LifecycleTrace.tla").read_text(encoding="utf-8")
    act = text[text.index("Act(e) ==") : text.index("\n\n", text.index("Act(e) =="))]
    arms = re.findall(r'e\.op = "(\w+)" ->(?:.*?\n?.*?)\b([A-Z]\w+)\(', act)
    assert dict(arms) == SINGLE_ACTIONS


def test_one_slug_for_every_spelling_of_an_event() -> None:
    # vector and file names: the op, the TLA+ action and a hyphenated name are one slug
    from ostrom.protocol.lifecycle import COMMAND_ACTIONS, slug

    assert slug("reveal_vote") == slug("RevealVote") == slug("reveal-vote") == "reveal-vote"
    assert slug("row", "reveal_vote", "reveal", "reveal") == "row-reveal-vote-reveal-reveal"
    for op, actions in COMMAND_ACTIONS.items():
        if len(actions) == 1:
            assert slug(op) == slug(actions[0]), op


def test_js_driver_parameter_table_is_current() -> None:
    # drivers/js/params.js checks a vector's params against the same rows as Params.
    text = (ROOT / "drivers" / "js" / "params.js").read_text(encoding="utf-8")
    match = re.search(r"// BEGIN generated: params\n(.*?)// END generated: params", text, re.S)
    assert match, "drivers/js/params.js lacks the generated block params"
    assert match.group(1) == diagram.to_js_params(), "run: make docs"


def test_defaults_parameter_file_is_current() -> None:
    committed = (ROOT / "examples" / "params" / "defaults.toml").read_text(encoding="utf-8")
    assert committed == diagram.to_params_toml(), "run: make docs"
