"""The soundness condition of lifecycle-defaults' VIEW (models/MCLifecycle.tla, LastEventView).

The VIEW leaves out the history variable ``lastEvent``.  That is sound only while no action of
spec/Lifecycle.tla reads it: then two states that differ only in ``lastEvent`` have the same
successors, and the invariants that read it are checked as a step property on every generated
step (LastEventStepProp).  An action that starts reading ``lastEvent`` (unprimed) would make
the VIEW unsound without any model failing, so this test fails first.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ostrom.verify.tlc.runner import run_tlc

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec" / "Lifecycle.tla"
MC = ROOT / "models" / "MCLifecycle.tla"


def _strip_comments(text: str) -> str:
    text = re.sub(r"\(\*.*?\*\)", " ", text, flags=re.S)
    return re.sub(r"\\\*[^\n]*", " ", text)


def _unprimed_reads(text: str) -> list[str]:
    """The lines of the action part (after Init, before the properties) that read lastEvent."""
    body = _strip_comments(text)
    start = re.search(r"^Init ==.*?(?=^\S)", body, flags=re.S | re.M)
    end = body.find("\nDecisions ==")
    assert start is not None and end > start.end(), "layout of spec/Lifecycle.tla changed"
    actions = body[start.end() : end]
    return [line.strip() for line in actions.splitlines() if re.search(r"\blastEvent\b(?!')", line)]


def test_no_action_reads_last_event() -> None:
    assert _unprimed_reads(SPEC.read_text(encoding="utf-8")) == []


def test_the_check_sees_an_action_that_reads_last_event() -> None:
    text = SPEC.read_text(encoding="utf-8")
    mutated = text.replace("\nNext ==", "\nPeek == lastEvent = {} /\\ UNCHANGED vars\n\nNext ==", 1)
    assert mutated != text
    assert _unprimed_reads(mutated) != []


def test_the_view_leaves_out_only_last_event() -> None:
    spec = SPEC.read_text(encoding="utf-8")
    declared = re.search(r"^vars == <<(.*?)>>", spec, flags=re.M)
    view = re.search(r"^LastEventView == <<(.*?)>>", MC.read_text(encoding="utf-8"), flags=re.M)
    assert declared is not None and view is not None
    names = {v.strip() for v in declared.group(1).split(",")}
    assert {v.strip() for v in view.group(1).split(",")} == names - {"lastEvent"}


# The TLC behaviour the argument rests on, shown on a spec of two states: the step C into
# a state whose view A already reached records "bad".  Under the VIEW an invariant on the
# recorded value misses it (C's state is never checked), the same check as an action
# property catches it: TLC checks action properties on every step it generates.
_VIEW_PROBE = """---- MODULE ViewProbe ----
VARIABLES x, h
vars == <<x, h>>
Init == x = 0 /\\ h = "init"
Next == \\/ x = 0 /\\ x' = 1 /\\ h' = "a"
        \\/ x = 1 /\\ x' = 0 /\\ h' = "b"
        \\/ x = 0 /\\ x' = 1 /\\ h' = "bad"
Spec == Init /\\ [][Next]_vars
View == x
Inv == h # "bad"
StepProp == [][h' # "bad"]_vars
====
"""


def _tlc(tmp: Path, check: str) -> str:
    """TLC's verdict (``pass`` or the violated property) on the probe, with ``check``."""
    for sub in ("spec", "models"):
        (tmp / sub).mkdir(parents=True)
    run = run_tlc(
        tmp,
        "ViewProbe",
        Path("ViewProbe.cfg"),
        label="view-probe",
        workers=1,
        cfg_text=f"SPECIFICATION Spec\nVIEW View\n{check}\n",
        extra_modules={"ViewProbe": _VIEW_PROBE},
        timeout=120,
    )
    return run.outcome.got


@pytest.mark.tlc
def test_a_view_hides_a_state_from_invariants_but_not_from_action_properties(
    tmp_path: Path,
) -> None:
    assert _tlc(tmp_path / "inv", "INVARIANT Inv") == "pass"
    assert _tlc(tmp_path / "prop", "PROPERTIES StepProp") == "StepProp"
