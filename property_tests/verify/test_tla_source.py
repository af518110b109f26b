"""Reading TLA+ source: comments and strings blanked with every offset kept
(``tlc/text.py``), where a model's names are defined (``tlc/modules.py``,
``tlc/definitions.py``) and which definitions a model's mutants may touch
(``mutate/scope.py``).

``ostrom explain``, the explorer and ``ostrom mutate`` read specs through these; a
comment read as code, or an offset that moved, would put a mutant or a citation in the
wrong place.  Hostile text (unterminated comments and strings, any characters) never
breaks them.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.layout import MODELS_DIR, ROOT, SPEC_DIR
from ostrom.verify.mutate.scope import ScopeError, scope_of
from ostrom.verify.tlc import definitions as cited
from ostrom.verify.tlc.modules import search_order, used_modules
from ostrom.verify.tlc.text import blank, definitions

TLA = st.text(alphabet='ab =()*\\"\n-', max_size=80)


@given(TLA, st.booleans())
def test_blanking_keeps_every_offset_and_line(text: str, strings: bool) -> None:
    out = blank(text, strings=strings)
    assert len(out) == len(text)
    assert [i for i, c in enumerate(out) if c == "\n"] == [
        i for i, c in enumerate(text) if c == "\n"
    ]


def test_comments_and_strings_are_blanked_code_is_not() -> None:
    text = 'A == 1 \\* B == 2\n(* C == (* nested *) 3 *) D == "E == 4"\n'
    code = blank(text, strings=True)
    assert re.findall(r"\b[A-E]\b", code) == ["A", "D"]
    assert "E == 4" in blank(text, strings=False)  # strings kept when asked
    assert blank("(* never closed\nX == 1", strings=True).strip() == ""


def test_every_definition_of_a_spec_is_found_with_its_parameters() -> None:
    text = (SPEC_DIR / "Lifecycle.tla").read_text(encoding="utf-8")
    found = {d.name: d for d in definitions(blank(text, strings=True))}
    assert found["Dispute"].params == ("a", "x")
    assert text[found["Dispute"].head :].startswith("Dispute(a, x) ==")
    heads = re.findall(r"^([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*==", text, re.M)
    assert set(heads) <= set(found)
    for d in found.values():
        assert d.head < d.start <= d.end


def test_a_model_looks_names_up_as_sany_does() -> None:
    assert [p.name for p in used_modules("MCLifecycle")] == [
        "MCLifecycle.tla",
        "Lifecycle.tla",
        "LifecycleTable.tla",
    ]
    order = [p.name for p in search_order("MCLifecycle")]
    assert order[:3] == ["MCLifecycle.tla", "Lifecycle.tla", "LifecycleTable.tla"]
    assert used_modules("NoSuchModule") == []


def test_an_action_is_shown_with_the_method_it_cites() -> None:
    found = cited.definitions({"Dispute", "NoSuchAction"}, "MCLifecycle")
    assert set(found) == {"Dispute"}
    tla, python = found["Dispute"]["tla"], found["Dispute"]["python"]
    assert tla["file"] == "spec/Lifecycle.tla" and tla["text"].startswith("Dispute(a, x) ==")
    assert python["name"] == "Orchestrator.dispute"
    source = (ROOT / python["file"]).read_text(encoding="utf-8").splitlines()
    assert source[python["line"] - 1].lstrip().startswith("def dispute(")


def test_a_models_scope_is_its_specs_definitions_that_next_reaches() -> None:
    cfg = (MODELS_DIR / "MCLifecycle_ci.cfg").read_text(encoding="utf-8")
    scope = scope_of("MCLifecycle", cfg)
    assert scope.spec == "Lifecycle" and scope.path == SPEC_DIR / "Lifecycle.tla"
    assert "Dispute" in scope.names
    assert not set(scope.names) & set(scope.left_out)
    text = blank(scope.path.read_text(encoding="utf-8"), strings=True)
    assert set(scope.names) | set(scope.left_out) == {d.name for d in definitions(text)}


@pytest.mark.parametrize("cfg", ["", "garbage !!", "INIT Init\nNEXT NoSuchAction\n"])
def test_a_cfg_that_names_nothing_of_the_spec_has_an_empty_scope(cfg: str) -> None:
    assert "Dispute" not in scope_of("MCLifecycle", cfg).names


def test_a_module_without_a_spec_is_refused_in_one_line() -> None:
    with pytest.raises(ScopeError, match=r"^NoSuchModule uses no module of spec/$"):
        scope_of("NoSuchModule", "INIT Init\nNEXT Next\n")
