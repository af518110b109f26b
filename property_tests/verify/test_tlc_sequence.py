"""Message-sequence charts of PBFTReplicaSystem traces (``ostrom explain --sequence``).

Three kinds of checks:

* the committed pictures in docs/counterexamples/ tell the story of each defect (the lost
  NEW-VIEW, the poisoned checkpoint vote), and ``ostrom explain`` prints them (that they are
  what the committed traces and the code give now is the generated-files registry's drift
  test, property_tests/codegen/test_generated.py);
* a small hand-made trace with one of every event (sent, delivered, dropped, send omission,
  partition, timeout, restart, heal, round, retry, reply) gives exactly the expected events
  and rows — the chart is derived from the state variables, not from action names, so this
  pins the derivation;
* hostile input (not JSON, not ITF, another spec's trace, malformed values anywhere) is one
  ``error:`` line and exit status 2, never a traceback.
"""

from __future__ import annotations

import copy
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.cli.main import main
from ostrom.verify.tlc.itf import ItfError, read_itf
from ostrom.verify.tlc.sequence import (
    DOCS_DIR,
    Arrow,
    Chart,
    Note,
    SequenceError,
    _link_diff,
    chart_from_itf,
    render_mermaid,
    render_text,
)
from ostrom.verify.tlc.values import TlaRecord, TlaSet, Value, to_itf

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / DOCS_DIR
TRACES = sorted(DOCS.glob("*.itf.json.gz"))


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


# ----------------------------------------------------------------------------------------------
# The committed counterexamples
# ----------------------------------------------------------------------------------------------


def test_both_defects_are_committed() -> None:
    assert [p.name for p in TRACES] == [
        "drop-own-view-change.itf.json.gz",
        "first-checkpoint-vote-wins.itf.json.gz",
    ]


def test_cli_prints_the_committed_pictures() -> None:
    for trace in TRACES:
        stem = trace.name.split(".itf.json")[0]
        text = _invoke("explain", "--sequence", str(trace))
        assert text.exit_code == 0, text.output
        assert text.stdout == (DOCS / f"{stem}.txt").read_text(encoding="utf-8")
        mermaid = _invoke("explain", str(trace), "--format", "mermaid")
        assert mermaid.exit_code == 0, mermaid.output
        assert mermaid.stdout == (DOCS / f"{stem}.mmd").read_text(encoding="utf-8")


def _chart(name: str) -> Chart:
    return chart_from_itf(read_itf(DOCS / f"{name}.itf.json.gz"))


def _events(chart: Chart) -> list[tuple[int, Arrow | Note]]:
    return [(step.index, e) for step in chart.steps for e in step.events]


def test_drop_own_view_change_tells_its_story() -> None:
    chart = _chart("drop-own-view-change")
    events = _events(chart)
    # the new primary's VIEW-CHANGE and NEW-VIEW of view 1 are lost in a send omission ...
    lost_nv = [
        i
        for i, e in events
        if isinstance(e, Arrow) and e.lost and e.sender == 1 and "NEW-VIEW v1" in e.labels
    ]
    assert lost_nv and all(
        e.note == "send omission" for i, e in events if i == lost_nv[0] and isinstance(e, Arrow)
    )
    # ... then it times out of view 1 and forgets that NEW-VIEW (the defect)
    assert any(
        isinstance(e, Note)
        and e.actor == 1
        and e.marker == "T"
        and "forgets the NEW-VIEW" in e.text
        for i, e in events
        if i > lost_nv[0]
    )
    assert any(isinstance(e, Note) and e.marker == "=" for _, e in events)  # the heal
    final = "\n".join(chart.final)
    assert "LivenessInv violated" in chart.final[0]
    assert "r0: view 1 not active, VIEW-CHANGE v1 from r0, r2 (2 of 3): timer stopped" in final
    assert "stuck:" in final and "a is not executed at r0, r1, r2" in final


def test_first_checkpoint_vote_wins_tells_its_story() -> None:
    chart = _chart("first-checkpoint-vote-wins")
    events = _events(chart)
    assert any(isinstance(e, Note) and e.marker == "/" and e.actor == 2 for _, e in events)
    lie = [
        i
        for i, e in events
        if isinstance(e, Arrow)
        and e.sender == 3
        and e.receivers == (2,)
        and e.labels == ("CHECKPOINT n1 [inconsistent]",)
    ]
    assert lie, "the Byzantine replica's lie to r2 is drawn"
    final = "\n".join(chart.final)
    assert "r2: view 1 not active" in final and "executed nothing" in final
    assert "CHECKPOINT n1 votes [a] from r0, r1 · [inconsistent] from r3" in final
    assert "a is not executed at r2" in final


# ----------------------------------------------------------------------------------------------
# A hand-made trace with every kind of event
# ----------------------------------------------------------------------------------------------

REQ = TlaRecord((("t", "Request"), ("c", "c0"), ("ts", 1), ("d", "a"), ("sok", True)))


def _msg(t: str, **fields: Value) -> TlaRecord:
    return TlaRecord((("t", t), *fields.items(), ("sok", True)))


PP = _msg("PrePrepare", v=0, n=1, d="a", r=0, req=REQ, dok=True)
VC2 = _msg("ViewChange", nv=1, s=0, proof=(), P=(), r=2)


def _replica(i: int, **fields: Value) -> TlaRecord:
    base: dict[str, Value] = {
        "view": 0,
        "active": True,
        "N": 4,
        "F": 1,
        "Id": i,
        "vcs": TlaSet(()),
        "pending": (),
        "hist": (),
        "stable": 0,
        "lastexec": 0,
        "plog": TlaSet(()),
    }
    base.update(fields)
    return TlaRecord(tuple(base.items()))


LINKS = [(s, r) for s in range(5) for r in range(3) if s != r]


class Trace:
    """Builds an ITF document state by state, each a copy of the last with changes."""

    def __init__(self) -> None:
        # TLA+ values, and Python dicts for the functions written as ITF "#map"s
        self.vars: dict[str, Any] = {
            "rs": {i: _replica(i) for i in range(3)},
            "chan": {link: ((REQ,) if link[0] == 4 else ()) for link in LINKS},
            "lossLeft": 1,
            "omitsLeft": 1,
            "timeoutsLeft": 1,
            "restartsLeft": 1,
            "partitionsLeft": 1,
            "cut": TlaSet(()),
            "healed": False,
            "rt": {i: False for i in range(3)},
            "changed": False,
            "rounds": 0,
            "retried": False,
            "acks": TlaRecord((("a", TlaSet(())),)),
            "promises": TlaSet(()),
        }
        self.states: list[dict[str, Any]] = []
        self.step("Initial predicate")

    def step(self, action: str, **changes: Any) -> None:
        for key, value in changes.items():
            if isinstance(value, dict) and isinstance(self.vars[key], dict):
                merged = dict(self.vars[key])
                merged.update(value)
                self.vars[key] = merged
            else:
                self.vars[key] = value
        state: dict[str, Any] = {"#meta": {"index": len(self.states), "action": action}}
        for key, value in self.vars.items():
            if isinstance(value, dict):
                state[key] = {"#map": [[to_itf(_key(k)), to_itf(v)] for k, v in value.items()]}
            else:
                state[key] = to_itf(value)
        self.states.append(state)

    def doc(self) -> dict[str, Any]:
        return {
            "#meta": {"format": "ITF", "model": "hand-made", "outcome": "LivenessInv"},
            "vars": list(self.vars),
            "states": copy.deepcopy(self.states),
        }


def _key(k: Any) -> Value:
    value: Value = tuple(k) if isinstance(k, tuple) else k
    return value


def _hand_made() -> dict[str, Any]:
    t = Trace()
    # 1: r0 (primary) gets the request and broadcasts its PRE-PREPARE (not to Byzantine r3)
    t.step(
        "DeliverLink",
        rs={0: _replica(0, pending=(REQ,))},
        chan={(4, 0): (), (0, 1): (PP,), (0, 2): (PP,)},
        promises=TlaSet(
            (TlaRecord((("t", "PrePrepare"), ("v", 0), ("n", 1), ("d", "a"), ("r", 0))),)
        ),
    )
    # 2: the network drops the PRE-PREPARE to r2
    t.step("Drop", chan={(0, 2): ()}, lossLeft=0)
    # 3: r1 gets it; its PREPARE is lost in a send omission (visible only in `promises`)
    prep1 = TlaRecord((("t", "Prepare"), ("v", 0), ("n", 1), ("d", "a"), ("r", 1)))
    t.step(
        "DeliverLink",
        rs={1: _replica(1, pending=(REQ,))},
        chan={(0, 1): ()},
        omitsLeft=0,
        promises=TlaSet((*t.vars["promises"].elems, prep1)),
    )
    # 4: r2 is cut off
    t.step("Partition", cut=TlaSet((2,)), partitionsLeft=0)
    # 5: r2's timer fires: its VIEW-CHANGE is lost (r2 is cut off)
    t.step(
        "FireTimeout",
        rs={2: _replica(2, view=1, active=False, vcs=TlaSet((VC2,)))},
        timeoutsLeft=0,
    )
    # 6: r1 crashes and restarts
    t.step("Restart", rs={1: _replica(1)}, restartsLeft=0)
    # 7: the heal
    t.step("Heal", healed=True, cut=TlaSet(()), changed=True)
    # 8: r0 retransmits its PRE-PREPARE to r1 and r2
    t.step("Retransmission", rt={0: True}, chan={(0, 1): (PP,), (0, 2): (PP,)})
    # 9: r1 executes and replies (the reply reaches the client: acks)
    t.step(
        "DeliverLink",
        rs={1: _replica(1, hist=(REQ,), lastexec=1)},
        chan={(0, 1): ()},
        acks=TlaRecord((("a", TlaSet((1,))),)),
    )
    # 10: a new round; 11: the client retries
    t.step("NewRound", rounds=1, changed=False, rt={0: False})
    t.step("ClientRetry", retried=True, chan={(4, 0): (REQ,)})
    return t.doc()


def test_hand_made_trace_events() -> None:
    chart = chart_from_itf(_hand_made())
    steps = {s.index: s for s in chart.steps}
    assert chart.n == 4 and chart.honest == (0, 1, 2) and chart.byzantine(3)
    assert steps[0].events == (Arrow(4, (0, 1, 2), ("REQUEST a",), note="in flight"),)
    assert steps[1].events == (
        Note(0, "o", "gets REQUEST a from c: waits for a"),
        Arrow(0, (1, 2), ("PRE-PREPARE v0 n1 a",)),
    )
    assert steps[2].events == (
        Arrow(0, (2,), ("PRE-PREPARE v0 n1 a",), lost=True, note="dropped in transit"),
    )
    assert steps[3].events == (
        Note(1, "o", "gets PRE-PREPARE v0 n1 a from r0: waits for a"),
        Arrow(1, (0, 2), ("PREPARE v0 n1 a",), lost=True, note="send omission"),
    )
    assert steps[4].events == (Note(2, "/", "r2 is cut off: what it sends or is sent is lost"),)
    assert steps[5].events == (
        Note(2, "T", "timer fires: moves to view 1, waits for its NEW-VIEW"),
        Arrow(2, (0, 1), ("VIEW-CHANGE v1",), lost=True, note="r2 is cut off"),
    )
    assert steps[6].events == (
        Note(
            1,
            "R",
            "crashes and restarts from its database (view 0, executed n0); "
            "forgets pending requests",
        ),
    )
    assert steps[7].events == (
        Note(None, "=", "network heals (GST): nothing is lost from here on"),
    )
    assert steps[8].events == (Arrow(0, (1, 2), ("PRE-PREPARE v0 n1 a",), note="retransmission"),)
    assert steps[9].events == (
        Note(1, "o", "gets PRE-PREPARE v0 n1 a from r0: executes n1 a"),
        Arrow(1, (4,), ("REPLY a",)),
    )
    assert steps[10].events == (Note(None, ".", "round 1 (the last round changed some state)"),)
    assert steps[11].events == (Arrow(4, (0,), ("REQUEST a",), note="client retry"),)


def test_hand_made_trace_text_rows() -> None:
    text = render_text(chart_from_itf(_hand_made()))
    rows = text.splitlines()
    assert " step action             c   r0  r1  r2  r3" in rows
    expected = [
        "    1 DeliverLink        |   o   |   |   :   gets REQUEST a from c: waits for a",
        "                         |   *--->--->   :   PRE-PREPARE v0 n1 a",
        "    2 Drop               |   *~~~~~~~x   :   "
        "PRE-PREPARE v0 n1 a  [lost: dropped in transit]",
        "                         |   x~~~*~~~x   :   PREPARE v0 n1 a  [lost: send omission]",
        "    5 FireTimeout        |   |   |   T   :   "
        "timer fires: moves to view 1, waits for its NEW-VIEW",
        "    7 Heal               =================   "
        "network heals (GST): nothing is lost from here on",
        "                         <-------*   |   :   REPLY a",
        "   11 ClientRetry        *--->   |   |   :   REQUEST a  [client retry]",
    ]
    for row in expected:
        assert row in rows, f"missing row {row!r} in\n{text}"


_TEXT = r"(?:[^;#<>\n]|#\w+;|<br/>)+"  # no raw ; # < > but entity codes (#59;) and <br/>
_MERMAID_LINE = re.compile(
    r"sequenceDiagram"
    rf"|    %% {_TEXT}"
    r"|    participant \w+( as [\w ()]+)?"
    rf"|    Note over \w+(,\w+)?: {_TEXT}"
    rf"|    \w+(->>|-->>|-x)\w+: {_TEXT}"
)


def test_mermaid_has_only_known_statements() -> None:
    """Every line is a statement Mermaid's sequenceDiagram grammar knows, with ``;`` and
    angle brackets escaped (a raw ``;`` would end the statement: checked once against
    mermaid 11's own parser, which accepts both committed diagrams)."""
    for doc in (_hand_made(), read_itf(TRACES[0])):
        for line in render_mermaid(chart_from_itf(doc)).splitlines():
            assert _MERMAID_LINE.fullmatch(line), line
    hostile = _hand_made()
    hostile["#meta"]["model"] = "a;b <c> #d"
    text = render_mermaid(chart_from_itf(hostile))
    assert "a#59;b #lt;c#gt; #35;d" in text


@pytest.mark.parametrize(
    ("old", "new", "removed", "appended"),
    [
        ((1, 2), (2,), [(0, 1)], []),  # delivery of the head
        ((1, 2, 3), (1, 3), [(1, 2)], []),  # out of order (DeliverAt k > 1, or Drop)
        ((1,), (1, 2, 2), [], [2, 2]),  # sends
        ((1, 2), (), [(0, 1), (1, 2)], []),  # DeliverLink: the whole link
        ((1, 2, 3), (2, 4), [(0, 1), (2, 3)], [4]),  # not in this spec: LCS fallback
    ],
)
def test_link_diff(
    old: tuple[int, ...], new: tuple[int, ...], removed: list[Any], appended: list[int]
) -> None:
    assert _link_diff(old, new) == (removed, appended)


# ----------------------------------------------------------------------------------------------
# Hostile input
# ----------------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "is not JSON"),
        (b"\x1f\x8b\x08\x00broken", "damaged gzip"),
        ('{"vars": []}', 'no "states" list'),
        (
            '{"states": [{"x": 1}, {"x": 2}]}',
            "not a PBFTReplicaSystem trace: state 0 has no variable rs or chan (its variables: x)",
        ),
        ('{"states": [{"rs": 1, "chan": 2}]}', "state 0: rs is not a function: 1"),
        ('{"states": [{"rs": {"#map": []}, "chan": {"#map": []}}]}', "state 0: rs has no replica"),
        ('{"states": [{"rs": {"#set": 5}, "chan": 1}]}', "not an ITF value (malformed #set"),
        ('{"states": []}', "an ITF trace with no states"),
    ],
)
def test_bad_files_are_one_error_line(tmp_path: Path, content: str | bytes, message: str) -> None:
    path = _write(tmp_path, "t.itf.json", content)
    result = _invoke("explain", "--sequence", str(path))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)  # sys.exit(2), nothing raised
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_another_specs_trace_is_refused(tmp_path: Path) -> None:
    """A real ITF trace of another model (the fixture's counter) is not drawn."""
    doc = {"states": [{"#meta": {"index": 0}, "x": 0, "rec": {"a": 0}}]}
    path = _write(tmp_path, "counter.itf.json", json.dumps(doc))
    result = _invoke("explain", "--sequence", str(path))
    assert result.exit_code == 2 and "not a PBFTReplicaSystem trace" in result.output
    assert _invoke("explain", str(path)).exit_code == 0  # the change list still works


def test_gzip_traces_are_read_and_flags_conflict(tmp_path: Path) -> None:
    path = _write(tmp_path, "t.itf.json.gz", gzip.compress(json.dumps(_hand_made()).encode()))
    assert read_itf(path)["states"][0]["#meta"]["action"] == "Initial predicate"
    assert _invoke("explain", str(path)).exit_code == 0
    both = _invoke("explain", "--sequence", "--full", str(path))
    assert both.exit_code == 2 and both.output.startswith("error: --full")
    with pytest.raises(ItfError, match="damaged gzip"):
        read_itf(_write(tmp_path, "bad.gz", b"\x1f\x8b" + b"\x00" * 20))


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 5)
    | st.sampled_from(["a", "t", "Request", "null", ""])
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["#set", "#map", "#tup", "#bigint", "#unserializable", "t", "view", "r"]
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=12,
)
_BASE = _hand_made()
_TARGETS = ["rs", "chan", "cut", "acks", "rt", "promises", "omitsLeft", "healed", "#meta"]


def _check(doc: Any) -> None:
    try:
        chart = chart_from_itf(doc)
    except SequenceError as exc:
        assert str(exc)
        return
    render_text(chart)
    render_mermaid(chart)


@settings(max_examples=150)
@given(st.integers(0, len(_BASE["states"]) - 1), st.sampled_from(_TARGETS), _JSON)
def test_any_malformed_variable_is_a_sequence_error(state: int, var: str, junk: Any) -> None:
    """Replacing any variable of any state by any JSON gives a chart or a SequenceError."""
    doc = copy.deepcopy(_BASE)
    doc["states"][state][var] = junk
    _check(doc)


@settings(max_examples=150)
@given(
    st.integers(0, len(_BASE["states"]) - 1),
    st.sampled_from(["view", "active", "N", "F", "vcs", "pending", "hist", "stable", "plog"]),
    _JSON,
)
def test_any_malformed_replica_field_is_a_sequence_error(state: int, fname: str, junk: Any) -> None:
    doc = copy.deepcopy(_BASE)
    pairs = doc["states"][state]["rs"]["#map"]
    pairs[state % len(pairs)][1][fname] = junk
    _check(doc)


@settings(max_examples=100)
@given(st.one_of(_JSON, st.dictionaries(st.sampled_from(["states", "#meta", "loop"]), _JSON)))
def test_any_document_is_a_chart_or_a_sequence_error(doc: Any) -> None:
    _check(doc)
