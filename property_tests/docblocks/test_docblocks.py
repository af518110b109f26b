"""Generated blocks inside hand-written files (ostrom/docblocks.py).

``replace_block`` replaces exactly the lines between a block's markers, in any comment
syntax, and leaves every other byte as it was; a block that is not there is a
``ValueError`` (``ostrom docs`` turns it into one line naming the file).  The body is
text, never a pattern: backslashes and group references in it are written as they are.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.docblocks import replace_block

DOC = "# Title\n\nbefore\n<!-- BEGIN generated: t -->\nold\n<!-- END generated: t -->\nafter\n"


def test_only_the_body_changes() -> None:
    assert replace_block(DOC, "t", "new\n") == DOC.replace("old\n", "new\n")


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=60))
def test_any_body_is_written_as_it_is(body: str) -> None:
    out = replace_block(DOC, "t", body)
    head, _, rest = out.partition("<!-- BEGIN generated: t -->\n")
    assert head == "# Title\n\nbefore\n"
    assert rest == body + "<!-- END generated: t -->\nafter\n"


@pytest.mark.parametrize(
    ("comment", "text"),
    [
        ("// {}", "a\n// BEGIN generated: t\nx\n// END generated: t\nb"),
        ("\\* {}", "a\n\\* BEGIN generated: t\nx\n\\* END generated: t\nb"),
    ],
)
def test_every_comment_syntax(comment: str, text: str) -> None:
    assert replace_block(text, "t", "y\n", comment) == text.replace("x\n", "y\n")


@pytest.mark.parametrize(
    "text",
    [
        "no markers at all\n",
        DOC.replace("END", "FIN"),  # an unclosed block
        DOC.replace("generated: t", "generated: other"),  # another block's markers
        DOC.replace("<!-- BEGIN generated: t -->\n", "<!-- BEGIN generated: t -->"),
    ],
)
def test_a_missing_block_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="no generated block 't'"):
        replace_block(text, "t", "new\n")


def test_a_name_is_not_a_pattern() -> None:
    with pytest.raises(ValueError):
        replace_block(DOC, ".", "new\n")
