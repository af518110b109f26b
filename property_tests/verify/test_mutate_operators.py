"""The mutation operators over TLA+ text (reference/ostrom/verify/mutate/operators.py).

What is checked: each operator finds the sites it names and only those (never in a
comment or a string, never a binder's ``\\in``, an assignment ``x' =`` or an ``EXCEPT``
``=``), a mutant is the module with exactly one edit, and ids stay the same when another
definition changes (the equivalents file relies on it).  A Hypothesis property over the
real specs checks the one-edit rule for every mutant they have.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom import layout
from ostrom.verify.mutate.operators import OPERATORS, Mutant, mutants

MODULE = r"""---- MODULE M ----
EXTENDS Naturals
VARIABLES x, y
\* a comment with >= and \in that no operator may touch
Init == x = 0 /\ y = {}
Guard(n) ==
    /\ n >= 1
    /\ x + 1 < 3
    /\ "a >= b" # "c"
Step ==
    /\ \E v \in {1, 2} : x' = x + v
    /\ y' = y \cup {x}
Other ==
    \/ y = {} /\ ~(x \in y)
    \/ \A v \in y : v <= TRUE
Rec == [r EXCEPT !.a = 1, !.b = 2]
Str == [F(r, "s") EXCEPT !.a = 1]
Keep == UNCHANGED <<x, y>>
====
"""


def _by(ms: list[Mutant], definition: str, op: str) -> list[Mutant]:
    return [m for m in ms if m.definition == definition and m.operator == op]


def test_every_operator_has_a_site_in_the_sample_module() -> None:
    ops = {m.operator for m in mutants(MODULE)}
    assert ops == set(OPERATORS)


def test_comparisons_flip_at_their_boundary_and_skip_assignments() -> None:
    ms = mutants(MODULE)
    assert [(m.before, m.after) for m in _by(ms, "Guard", "cmp")] == [
        (">=", ">"),
        ("<", "<="),
        ("#", "="),  # between the strings, not inside them
    ]
    # `x' =` and `y' =` are assignments: flipping them only makes TLC fail to evaluate
    assert _by(ms, "Step", "cmp") == []
    # Init's `x = 0` and `y = {}` are comparisons in an initial predicate
    assert [(m.before, m.after) for m in _by(ms, "Init", "cmp")] == [("=", "#"), ("=", "#")]


def test_nothing_in_comments_or_strings_is_mutated() -> None:
    inside = MODULE.index('"a >= b"')
    for m in mutants(MODULE):
        line = MODULE.splitlines()[m.line - 1]
        assert not line.lstrip().startswith("\\*"), m
        # only a dropped bullet may span the string, and then the whole of it
        assert not (inside < m.start < inside + len('"a >= b"')), m
    guard = [m.before for m in mutants(MODULE, ["Guard"])]
    assert guard.count(">=") == 1  # the one outside the string


def test_a_binders_in_is_not_swapped_but_a_membership_test_is() -> None:
    ms = mutants(MODULE)
    assert _by(ms, "Step", "in") == []  # \E v \in {1, 2}
    other = _by(ms, "Other", "in")
    assert [m.before for m in other] == ["\\in"]  # ~(x \in y), not \A v \in y
    assert other[0].line == MODULE.splitlines().index("    \\/ y = {} /\\ ~(x \\in y)") + 1


def test_bullets_except_clauses_and_unchanged_variables_are_dropped_one_at_a_time() -> None:
    ms = mutants(MODULE)
    assert len(_by(ms, "Guard", "conj")) == 3
    assert len(_by(ms, "Other", "disj")) == 2
    assert [m.after for m in _by(ms, "Rec", "except")] == ["", ""]
    assert len(_by(ms, "Keep", "unchanged")) == 2
    dropped = _by(ms, "Guard", "conj")[0].apply(MODULE)
    assert "n >= 1" not in dropped and "x + 1 < 3" in dropped


def test_dropping_the_only_except_clause_keeps_the_functions_text() -> None:
    # the replacement was once taken from the blanked text: F(r, "_")
    (m,) = _by(mutants(MODULE), "Str", "except")
    assert m.after == 'F(r, "s")'
    assert 'Str == F(r, "s")' in m.apply(MODULE)


def test_a_mutant_is_the_module_with_one_edit() -> None:
    for m in mutants(MODULE):
        out = m.apply(MODULE)
        assert out[: m.start] == MODULE[: m.start]
        assert out[m.start + len(m.after) :] == MODULE[m.end :]
        assert out != MODULE


def test_ids_are_stable_when_another_definition_changes() -> None:
    before = {m.id: m.change for m in mutants(MODULE) if m.definition == "Other"}
    edited = MODULE.replace("    /\\ x + 1 < 3\n", "    /\\ x + 1 < 3\n    /\\ x - 2 > 0\n")
    after = {m.id: m.change for m in mutants(edited) if m.definition == "Other"}
    assert before == after
    assert len(mutants(edited, ["Guard"])) > len(mutants(MODULE, ["Guard"]))


def test_names_restrict_the_definitions() -> None:
    assert {m.definition for m in mutants(MODULE, ["Rec", "Keep"])} == {"Rec", "Keep"}
    assert mutants(MODULE, []) == []


SPECS = sorted(layout.SPEC_DIR.glob("*.tla"))


@pytest.mark.parametrize("path", SPECS, ids=[p.stem for p in SPECS])
def test_every_mutant_of_every_spec_is_one_edit_with_a_unique_id(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    ms = mutants(text)
    # LifecycleTable.tla is data (the rows), generated from the Python table
    assert ms or path.stem == "LifecycleTable", path
    assert len({m.id for m in ms}) == len(ms)
    for m in ms:
        assert text[m.start : m.end] == m.before
        assert m.before != m.after


@given(st.text(alphabet="=<>#+-~/\\ inotcupaEATRUEFALS(){}[]x1'\n", max_size=200))
def test_no_text_makes_the_operators_raise(text: str) -> None:
    for m in mutants(text):
        assert m.apply(text) != text or m.before == m.after
