"""How ``ostrom explain`` renders a saved counterexample (verify/tlc/explain.py): one row
per step with the variables that changed, one step whole, one variable's changes; a step
or a variable the trace does not have is one ``ExplainError`` line naming what it has.
Run on every committed trace of docs/counterexamples/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ostrom.layout import DOCS_DIR
from ostrom.verify.tlc.explain import ExplainError, describe_changes, explain_itf
from ostrom.verify.tlc.itf import read_itf
from ostrom.verify.tlc.values import TlaRecord

TRACES = sorted((DOCS_DIR / "counterexamples").glob("*.itf.json.gz"))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name.split(".")[0])
def test_every_committed_trace_is_explained_step_by_step(path: Path) -> None:
    data: dict[str, Any] = read_itf(path)
    states = len(data["states"])
    lines = explain_itf(data)
    assert lines and all("\n" not in line for line in lines)
    last = explain_itf(data, step=states - 1)
    assert last and explain_itf(data, step=0)
    with pytest.raises(
        ExplainError, match=rf"no step {states}: the trace has states 0\.\.{states - 1}"
    ):
        explain_itf(data, step=states)
    with pytest.raises(ExplainError, match="no variable 'nope' in the trace"):
        explain_itf(data, var="nope")


def test_a_change_is_described_down_to_the_field() -> None:
    old = TlaRecord((("a", 1), ("b", 2)))
    new = TlaRecord((("a", 1), ("b", 3)))
    changes = describe_changes("r", old, new)
    assert changes and all("r" in c and "b" in c for c in changes)
    assert describe_changes("r", old, old) == []
