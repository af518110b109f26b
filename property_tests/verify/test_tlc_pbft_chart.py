"""verify/tlc/pbft_chart.py and verify/tlc/constants.py: the chart of a spec/PBFT.tla trace.

* the model's constants are read back from its cfg (lab 07's model: N = 4, F = 1, r0
  Byzantine, Mode "safety");
* lab 07's counterexample (property_tests/fixtures/tla/) gives one arrow per element each
  step adds to a message set, the derived COMMITs only in Mode "safety", and the final
  lines name every COMMIT certificate's senders;
* without constants the replicas are inferred and nothing is derived;
* any variable of any state replaced by any JSON gives a chart or a SequenceError, never
  another exception (the file is input: ``ostrom explain --sequence FILE``).
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.verify.tlc.constants import model_constants
from ostrom.verify.tlc.pbft_chart import DERIVED, EAGER, chart_from_pbft_spec, is_pbft_spec
from ostrom.verify.tlc.sequence import Arrow, SequenceError, render_mermaid, render_text
from ostrom.verify.tlc.values import ModelValue, TlaSet

FIXTURE = Path(__file__).parents[1] / "fixtures" / "tla" / "pbft-mutant-commit-2f.itf.json.gz"
MODEL = "pbft-mutant-commit-2f"


def _doc() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    return data


def _arrows(chart: Any) -> list[Arrow]:
    return [e for s in chart.steps for e in s.events if isinstance(e, Arrow)]


def test_the_models_constants_are_read_from_its_cfg() -> None:
    c = model_constants(MODEL)
    assert c["N"] == 4 and c["F"] == 1 and c["Mode"] == "safety"
    assert c["Byz"] == TlaSet((0,))
    assert c["ClientRequests"] == (ModelValue("r1"), ModelValue("r2"))
    assert model_constants("no-such-model") == {} and model_constants("") == {}


def test_lab07_has_an_arrow_per_sent_message_and_two_derived_commits() -> None:
    doc = _doc()
    assert is_pbft_spec(doc)
    chart = chart_from_pbft_spec(doc, model_constants(MODEL))
    assert chart.n == 4 and chart.honest == (1, 2, 3)
    arrows = _arrows(chart)
    sent = sum(
        len({json.dumps(m) for m in new[v]["#set"]} - {json.dumps(m) for m in old[v]["#set"]})
        for old, new in zip(doc["states"], doc["states"][1:], strict=False)
        for v in ("pp", "prep", "com", "vc", "byzvc", "nv")
    )
    derived = [a for a in arrows if a.note == DERIVED]
    initial = [a for a in chart.steps[0].events if isinstance(a, Arrow)]
    assert len(arrows) == sent + len(derived) + len(initial)
    assert [a.labels for a in derived] == [("COMMIT v0 n1 r1",), ("COMMIT v1 n1 r2",)]
    assert all(a.sender == 0 and a.receivers == (1, 2, 3) for a in derived)
    assert {a.sender for a in arrows if a.note == EAGER} == {1, 2}
    assert "  COMMITs for v0 n1 r1: r2, r0 (derived)" in chart.final
    assert "  COMMITs for v1 n1 r2: r1, r2, r0 (derived)" in chart.final
    text = render_text(chart)
    assert "NEW-VIEW v1" in text and "r0 Byzantine" in text
    assert render_mermaid(chart).startswith("sequenceDiagram")


def test_without_constants_nothing_is_derived() -> None:
    chart = chart_from_pbft_spec(_doc(), {})
    assert chart.n == 4  # inferred from the senders and the view function
    assert not [a for a in _arrows(chart) if a.note == DERIVED]
    assert all(a.note != DERIVED for s in chart.steps for a in s.events if isinstance(a, Arrow))


def test_a_trace_of_another_spec_is_refused() -> None:
    doc = _doc()
    doc["states"] = [{**s, "extra": 1} for s in doc["states"]]
    assert not is_pbft_spec(doc)
    try:
        chart_from_pbft_spec(doc, {})
    except SequenceError as exc:
        assert "not a PBFT.tla trace" in str(exc)
    else:
        raise AssertionError("a trace with another variable was charted")


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 20)
    | st.sampled_from(["r1", "normal", "vc", ""])
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["#set", "#map", "#tup", "#unserializable", "v", "n", "r", "src"]),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)
_VARS = ["view", "status", "pp", "prep", "com", "vc", "byzvc", "nv"]


@settings(max_examples=200)
@given(st.integers(0, 10), st.sampled_from(_VARS), _JSON, st.booleans())
def test_any_malformed_variable_is_a_sequence_error(
    state: int, var: str, junk: Any, constants: bool
) -> None:
    doc = copy.deepcopy(_doc())
    doc["states"][state][var] = junk
    try:
        chart = chart_from_pbft_spec(doc, model_constants(MODEL) if constants else {})
    except SequenceError as exc:
        assert str(exc)
        return
    render_text(chart)
    render_mermaid(chart)
