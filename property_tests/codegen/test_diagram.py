"""The renderings of the transition table draw all of it, and the spec agrees with its classes.

(That every committed rendering is current — spec/LifecycleTable.tla, the diagrams, the guard
table — is the drift test of the generated-files registry, codegen/test_generated.py.)
"""

from __future__ import annotations

import re
from pathlib import Path

from ostrom.codegen import diagram
from ostrom.protocol.lifecycle import STATES, TRANSITIONS

ROOT = Path(__file__).resolve().parents[2]


def test_every_row_and_state_is_drawn() -> None:
    dot = diagram.to_dot()
    for state in STATES:
        assert f'"{state}"' in dot
    for row in TRANSITIONS:
        assert row.event in dot


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


def test_the_diagram_command_writes_each_view_and_refuses_a_bad_format(tmp_path: Path) -> None:
    # `ostrom diagram` is a core-install command: it renders from the table alone.
    from click.testing import CliRunner

    from ostrom.codegen.diagram_command import diagram_cmd

    runner = CliRunner()
    shown = runner.invoke(diagram_cmd, ["--format", "mermaid"])
    assert shown.exit_code == 0 and shown.output == diagram.FORMATS["mermaid"]()
    out = tmp_path / "deep" / "table.tla"
    written = runner.invoke(diagram_cmd, ["--format", "tla", "--output", str(out)])
    assert written.exit_code == 0
    assert out.read_text(encoding="utf-8") == diagram.FORMATS["tla"]()
    refused = runner.invoke(diagram_cmd, ["--format", "png"])
    assert refused.exit_code == 2 and "Invalid value" in refused.output
