"""docs/design.md's API tables are read from the packages' source (ostrom/codegen/api_docs.py).

On a small package: a name re-exported eagerly, one loaded lazily under another name, a
constant described by its ``#:`` comment and a class without a docstring each get their
summary from where they are defined; a package without a literal ``__all__``, or whose
``__all__`` names something it does not define or import, is an ``ApiError`` naming it.
The committed block itself is checked by test_generated.py with every other entry.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ostrom.codegen.api_docs import ApiError, Export, api_markdown, package_api

PACKAGE: dict[str, str] = {
    "__init__.py": '"""The fixture."""\n__all__ = []\n',
    "core/__init__.py": (
        '"""The core: what it does.  More words."""\n'
        "from fx.core.things import LIMIT, Thing\n"
        '__all__ = ["LIMIT", "Thing", "loaded"]\n'
        '_LAZY: dict[str, str] = {"loaded": "fx.core.things:load"}\n'
    ),
    "core/things.py": (
        '__all__ = ["LIMIT", "Thing", "load"]\n'
        "#: The most there can be, e.g. three.\n#: A second line.\nLIMIT = 3\n\n"
        "#: A thing without a docstring.\nclass Thing:\n    pass\n\n"
        'def load() -> int:\n    """Load one. Then more."""\n    return 1\n'
    ),
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "fx" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "fx"


def test_each_name_is_described_where_it_is_defined(tmp_path: Path) -> None:
    summary, exports = package_api("fx.core", _write(tmp_path, PACKAGE))
    assert summary == "The core: what it does."
    assert exports == [
        Export("LIMIT", "fx.core.things", "The most there can be, e.g. three."),
        Export("Thing", "fx.core.things", "A thing without a docstring."),
        Export("loaded", "fx.core.things", "Load one."),
    ]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ('"""No list."""\n', "fx.core: no literal __all__"),
        ('__all__ = ["LIMIT", *OTHER]\n', "fx.core: no literal __all__"),
        ('__all__ = ["ghost"]\n', "fx.core: cannot find the definition of 'ghost'"),
    ],
)
def test_a_package_whose_api_cannot_be_read_is_named(
    tmp_path: Path, edit: str, message: str
) -> None:
    root = _write(tmp_path, {**PACKAGE, "core/__init__.py": edit})
    with pytest.raises(ApiError, match=message):
        package_api("fx.core", root)


def test_the_block_lists_every_package_of_both_stacks() -> None:
    import ostrom

    block = api_markdown()
    for package in (*ostrom.PRODUCT, *ostrom.TOOLS):
        assert f"`ostrom.{package}` — " in block
    assert "| `Orchestrator` | orchestrator | " in block
    assert not re.search(r"\| — \|$", block, re.M)  # every exported name says what it is
