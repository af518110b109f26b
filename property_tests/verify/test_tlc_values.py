"""The TLC value parser: unit cases for what TLC prints, and a printer/parser round trip.

Counterexamples are only as good as this parser: a value it misreads would make a saved ITF
trace (and every conformance vector built from it) silently wrong.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom.verify.tlc.values import (
    ModelValue,
    Opaque,
    TlaFunction,
    TlaRecord,
    TlaSet,
    Value,
    ValueParseError,
    format_pretty,
    format_value,
    from_itf,
    parse_value,
    to_itf,
)

CASES: list[tuple[str, Value]] = [
    ("42", 42),
    ("-7", -7),
    ("TRUE", True),
    ("FALSE", False),
    ('"hello"', "hello"),
    (r'"q\"s\\"', 'q"s\\'),
    ('"a\\nb"', "a\nb"),
    ("p1", ModelValue("p1")),
    ("<<>>", ()),
    ("<<1, <<2>>, {}>>", (1, (2,), TlaSet(()))),
    ("{}", TlaSet(())),
    ("{1, -2, 3}", TlaSet((1, -2, 3))),
    ("1..3", TlaSet((1, 2, 3))),
    ("{1..2, 5..4}", TlaSet((TlaSet((1, 2)), TlaSet(())))),
    ("[]", TlaRecord(())),
    ('[a |-> 1, b |-> "x"]', TlaRecord((("a", 1), ("b", "x")))),
    ("(a1 :> 1 @@ a2 :> 2)", TlaFunction(((ModelValue("a1"), 1), (ModelValue("a2"), 2)))),
    ("(<<1, 2>> :> {TRUE})", TlaFunction((((1, 2), TlaSet((True,))),))),
    (
        '[votes |-> (a1 :> [v |-> "yes", w |-> {<<1, a2>>}]), log |-> <<[k |-> 1]>>]',
        TlaRecord(
            (
                (
                    "votes",
                    TlaFunction(
                        (
                            (
                                ModelValue("a1"),
                                TlaRecord((("v", "yes"), ("w", TlaSet(((1, ModelValue("a2")),))))),
                            ),
                        )
                    ),
                ),
                ("log", (TlaRecord((("k", 1),)),)),
            )
        ),
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_parse_cases(text: str, expected: Value) -> None:
    assert parse_value(text) == expected


def test_multiline_value_as_tlc_wraps_it() -> None:
    text = "[ a |-> 1,\n  b |->\n      ( p1 :> {1, 2} @@\n        p2 :> {} ) ]"
    assert parse_value(text) == TlaRecord(
        (
            ("a", 1),
            (
                "b",
                TlaFunction(((ModelValue("p1"), TlaSet((1, 2))), (ModelValue("p2"), TlaSet(())))),
            ),
        )
    )


def test_lazy_values_are_kept_verbatim() -> None:
    assert parse_value(r"[x \in Nat |-> x + 1]") == Opaque(r"[x \in Nat |-> x + 1]")
    assert parse_value("{[S -> T]}") == TlaSet((Opaque("[S -> T]"),))
    assert parse_value("1..100000") == Opaque("1..100000")


@pytest.mark.parametrize(
    "bad", ["", "<<1, 2", "[a |-> ]", "(a :> 1", "{1 2}", "1 2", '"open', "@@"]
)
def test_malformed_values_raise(bad: str) -> None:
    with pytest.raises(ValueParseError):
        parse_value(bad)


def test_itf_encoding() -> None:
    value = parse_value('[s |-> {1}, f |-> (p1 :> <<"a">>), n |-> 12345678901234567890]')
    encoded = to_itf(value)
    assert encoded == {
        "s": {"#set": [1]},
        "f": {"#map": [[{"#unserializable": "p1"}, ["a"]]]},
        "n": {"#bigint": "12345678901234567890"},
    }
    assert from_itf(json.loads(json.dumps(encoded))) == value
    assert from_itf({"#tup": [1, {"#bigint": "2"}]}) == (1, 2)
    assert from_itf({"#unserializable": "[x \\in Nat |-> x]"}) == Opaque("[x \\in Nat |-> x]")


# ----------------------------------------------------------------------------------------------
# Round trip: generated nested values, printed in TLC syntax, parsed back.
# ----------------------------------------------------------------------------------------------

_IDENTS = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_MODEL_VALUES = st.builds(
    ModelValue, st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
).filter(lambda m: m.name not in ("TRUE", "FALSE", "SUBSET", "UNION"))
_STRINGS = st.text(alphabet=st.sampled_from('ab "\\\n\t|->:@{}[]<>,.x'), max_size=8)
_LEAVES: st.SearchStrategy[Value] = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20), st.booleans(), _STRINGS, _MODEL_VALUES
)


def _extend(children: st.SearchStrategy[Value]) -> st.SearchStrategy[Value]:
    return st.one_of(
        st.lists(children, max_size=4).map(tuple),
        # a set's elements and a function's keys are distinct TLA+ values
        st.lists(children, max_size=4, unique_by=format_value).map(lambda xs: TlaSet(tuple(xs))),
        st.dictionaries(_IDENTS, children, max_size=4).map(lambda d: TlaRecord(tuple(d.items()))),
        st.lists(
            st.tuples(children, children),
            min_size=1,
            max_size=4,
            unique_by=lambda kv: format_value(kv[0]),
        ).map(lambda ps: TlaFunction(tuple(ps))),
    )


VALUES: st.SearchStrategy[Value] = st.recursive(_LEAVES, _extend, max_leaves=25)


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(VALUES)
def test_print_parse_round_trip(value: Value) -> None:
    assert parse_value(format_value(value)) == value


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(VALUES, st.integers(min_value=8, max_value=100))
def test_the_pretty_layout_changes_only_whitespace(value: Value, width: int) -> None:
    """The explorer's table shows ``format_pretty``: the same value, laid out (a line per
    element when one line would pass ``width``; never cut)."""
    text = format_pretty(value, width)
    assert parse_value(text) == value
    assert "".join(text.split()) == "".join(format_value(value).split())
    if len(format_value(value)) <= width:
        assert text == format_value(value)


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(VALUES)
def test_the_module_layout_changes_only_whitespace(value: Value) -> None:
    """``lines=True`` (a TraceLog module's values: SANY parses a long line in time that
    grows with the square of its length) puts a line break where ``, `` and `` @@ `` put a
    space, nothing else."""
    text = format_value(value, lines=True)
    assert parse_value(text) == value
    assert text.replace("\n", " ") == format_value(value)


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(VALUES)
def test_itf_round_trip(value: Value) -> None:
    assert from_itf(json.loads(json.dumps(to_itf(value)))) == value
