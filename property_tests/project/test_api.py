"""Every package and module of ``ostrom`` says what its public API is, and nothing reaches
past it.

A user tells a package's API from its internals by ``__all__``: the package's
``__init__`` re-exports what a user of the package needs, each module lists what it
offers to the other modules, and everything else is private by name (``_name``).  The
checks read the source with ``ast`` (importing would run the modules and could not see
which names a module binds):

a. every package and module of ``reference/ostrom`` defines ``__all__`` as a literal list
   of strings, without duplicates, and every name in it is defined or imported there;
b. an import of a name from ANOTHER package (the first component after ``ostrom.``
   differs; ``ostrom.layout`` and the other top-level modules are packages of their own)
   imports a name in the ``__all__`` of the module it names — the package's, for a
   re-export.  This covers ``from ostrom.protocol.params import Params``, an attribute of
   an imported module (``params.Params``) and the ``"module:name"`` strings the command
   loads tools by (``ostrom/cli/tools.py``);
c. in the PRODUCT packages (``ostrom.PRODUCT``), every public module-level name a module
   binds is in its ``__all__`` or used by another module of the same package; anything
   else is renamed ``_name``.

The tests (``property_tests/``) may import internals; the checks are about the package.
The fixture tests run the same checker on a small package with one violation per rule,
so a rule that can no longer fail is caught.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

import ostrom
from ostrom.layout import ROOT
from package_source import (
    Module,
    absolute,
    lazy_table,
    load_tree,
    origin,
    package_of,
    top_level,
    type_checking_imports,
    uses,
)

SOURCE: Final = ROOT / "reference"

#: Module-level names of the code-mutation targets (models/mutation/code/*.toml) that
#: check c would want private.  Renaming a function there changes its mutmut ids (the
#: recorded scores and the toml's ``[[equivalent]]`` entries name them), so these keep
#: their names: each is used inside its module only.
MUTATION_TARGET_NAMES: Final[dict[str, frozenset[str]]] = {
    # a tick event's verdict -> the vote it decided, read by Community's feedback only
    "ostrom.protocol.community": frozenset({"DECIDED_VOTE"}),
    # numpy's float array, the annotation of the EigenTrust arithmetic inside the module
    "ostrom.protocol.reputation": frozenset({"FloatArray"}),
}


def _where(module: Module, line: int) -> str:
    return f"{module.name} (line {line})"


# --- a: every module defines __all__, and every name in it exists ----------------------------


def _binds_submodule(package: Module, name: str) -> bool:
    """Whether the package binds ``name`` to its submodule of that name (``from . import
    name``), not to something else that would hide it."""
    for stmt in top_level(package.tree.body):
        if (
            isinstance(stmt, ast.ImportFrom)
            and absolute(package, stmt) == package.name
            and any((a.asname or a.name) == name == a.name for a in stmt.names)
        ):
            return True
    return False


def check_all_defined(modules: dict[str, Module]) -> list[str]:
    problems = []
    for module in modules.values():
        if module.exports is None:
            problems.append(f"{module.name}: no literal __all__")
            continue
        seen: set[str] = set()
        for name in module.exports:
            if name in seen:
                problems.append(f"{module.name}: __all__ lists {name!r} twice")
            seen.add(name)
            if name not in module.defined and name not in module.imported:
                problems.append(f"{module.name}: __all__ lists {name!r}, which it does not bind")
            if (
                module.is_package
                and f"{module.name}.{name}" in modules
                and not _binds_submodule(module, name)
            ):
                problems.append(
                    f"{module.name}: __all__ lists {name!r}, which is also its submodule "
                    f"(``from {module.name} import {name}`` would mean either)"
                )
    return problems


# --- b: across packages, only names in __all__ ------------------------------------------------


def check_cross_package(modules: dict[str, Module]) -> list[str]:
    problems = set()
    for module in modules.values():
        for source, name, line in uses(module, modules):
            if package_of(source) == module.package:
                continue
            exports = modules[source].exports or []
            if name not in exports:
                problems.add(
                    f"{_where(module, line)}: takes {name!r} from {source}, "
                    f"which is not in its __all__"
                )
    return sorted(problems)


# --- c: in the product, a public name is exported or shared within its package ----------------


def check_product_private(
    modules: dict[str, Module],
    product: tuple[str, ...],
    exempt: dict[str, frozenset[str]] | None = None,
) -> list[str]:
    exempt = exempt or {}
    shared: set[tuple[str, str]] = set()  # (module, name) used by another module of its package
    for module in modules.values():
        for source, name, _line in uses(module, modules):
            if package_of(source) == module.package and source != module.name:
                shared.add(origin(modules, source, name))
    problems = []
    for module in modules.values():
        if module.package not in product:
            continue
        exports = set(module.exports or [])
        for name, line in sorted(module.defined.items()):
            if name.startswith("_") or name in exports or (module.name, name) in shared:
                continue
            if name in exempt.get(module.name, frozenset()):
                continue
            problems.append(
                f"{_where(module, line)}: {name!r} is public but neither in __all__ nor "
                f"used by another module of {module.package}: export it or call it _{name}"
            )
    return problems


# --- the tree ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree() -> dict[str, Module]:
    return load_tree(SOURCE)


def test_every_module_defines_all_and_binds_what_it_lists(tree: dict[str, Module]) -> None:
    assert check_all_defined(tree) == []


def test_no_import_reaches_past_another_packages_all(tree: dict[str, Module]) -> None:
    assert check_cross_package(tree) == []


def test_every_public_name_of_the_product_is_exported_or_shared(tree: dict[str, Module]) -> None:
    assert check_product_private(tree, ostrom.PRODUCT, MUTATION_TARGET_NAMES) == []


def test_the_exemptions_are_still_needed(tree: dict[str, Module]) -> None:
    """An exempted name that was renamed, exported or removed leaves the table."""
    unneeded = {
        (module, name)
        for module, names in MUTATION_TARGET_NAMES.items()
        for name in names
        if module not in tree
        or name not in tree[module].defined
        or name in (tree[module].exports or [])
    }
    without = check_product_private(tree, ostrom.PRODUCT, {})
    for module, names in MUTATION_TARGET_NAMES.items():
        for name in names:
            if not any(f"{module} (" in p and f"{name!r} is public" in p for p in without):
                unneeded.add((module, name))
    assert unneeded == set()


def test_a_lazy_package_loads_exactly_what_it_declares(tree: dict[str, Module]) -> None:
    """A package that loads its names on first use (PEP 562) keeps three lists of them:
    ``__all__``, the ``TYPE_CHECKING`` imports mypy reads and the ``_LAZY`` table the
    module ``__getattr__`` reads; they must name the same things."""
    lazy = {name: m for name, m in tree.items() if lazy_table(m) is not None}
    assert "ostrom.service" in lazy  # the check reads the tree's real form of the table
    for name, module in lazy.items():
        table = lazy_table(module)
        assert table == type_checking_imports(module), name
        assert sorted(table or {}) == sorted(module.exports or []), name


def test_every_exported_name_resolves() -> None:
    """Importing each package and reading each name of its ``__all__`` works: an eager
    re-export, a lazy one and the module it names all exist."""
    for name, module in load_tree(SOURCE).items():
        if module.is_package:
            package = importlib.import_module(name)
            for exported in module.exports or []:
                assert getattr(package, exported) is not None, f"{name}.{exported}"


#: What a lazy package keeps from loading: importing the module on the left must not
#: import any module on the right (the web stack, the supervisor, every product command).
LIGHT: Final[dict[str, tuple[str, ...]]] = {
    "ostrom.service.gate": ("starlette", "ostrom.service.app"),
    "ostrom.cluster.replica_process": ("ostrom.cluster.supervisor", "ostrom.cluster.front"),
    "ostrom.cli.exits": ("ostrom.cli.main", "ostrom.service", "ostrom.cluster"),
    "ostrom.harness.byzantine_node": ("ostrom.harness.demo", "ostrom.harness.alg1"),
}


@pytest.mark.parametrize("module", sorted(LIGHT))
def test_a_lazy_package_stays_light(module: str) -> None:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout.split()
    )
    assert not loaded & set(LIGHT[module])


# --- the rules can fail: a small package with one violation per rule --------------------------

FIXTURE: Final = "fx"

#: A clean package laid out like ``ostrom``: a product package ``core`` (a module and its
#: re-export) and a tool ``tool`` that uses it through the API.
CLEAN: Final[dict[str, str]] = {
    "__init__": '__all__ = ["PRODUCT"]\nPRODUCT = ("core",)\n',
    "core/__init__": '"""Core."""\nfrom fx.core.mod import thing\n__all__ = ["thing"]\n',
    "core/mod": (
        '__all__ = ["thing"]\nLIMIT_SHARED = 3\n\ndef thing() -> int:\n    return _helper()\n\n'
        "def _helper() -> int:\n    return 1\n"
    ),
    "core/other": (
        '__all__ = ["more"]\nfrom fx.core import mod\n\ndef more() -> int:\n'
        "    return mod.LIMIT_SHARED\n"
    ),
    "tool/__init__": "__all__: list[str] = []\n",
    "tool/use": (
        '__all__ = ["go", "TARGET"]\nfrom fx.core import thing\nfrom fx.core import mod\n'
        'TARGET = "fx.core.mod:thing"\n\ndef go() -> int:\n    return thing() + mod.thing()\n'
    ),
}

#: One violation per rule: the module it changes, its new source, and what the report says.
VIOLATIONS: Final[dict[str, tuple[str, str, str]]] = {
    "a-missing": ("tool/__init__", '"""No list."""\n', "fx.tool: no literal __all__"),
    "a-unbound": (
        "core/__init__",
        CLEAN["core/__init__"].replace('"thing"]', '"thing", "ghost"]'),
        "'ghost', which it does not bind",
    ),
    "a-submodule": (
        "core/__init__",
        CLEAN["core/__init__"].replace('"thing"]', '"thing", "mod"]') + "mod = thing\n",
        "'mod', which is also its submodule",
    ),
    "b-from-import": (
        "tool/use",
        CLEAN["tool/use"] + "from fx.core.mod import LIMIT_SHARED\n",
        "takes 'LIMIT_SHARED' from fx.core.mod",
    ),
    "b-attribute": (
        "tool/use",
        CLEAN["tool/use"] + "X = mod._helper\n",
        "takes '_helper' from fx.core.mod",
    ),
    "b-target-string": (
        "tool/use",
        CLEAN["tool/use"].replace("mod:thing", "mod:LIMIT_SHARED"),
        "takes 'LIMIT_SHARED' from fx.core.mod",
    ),
    "c-unused-public": (
        "core/mod",
        CLEAN["core/mod"] + "\ndef helper() -> int:\n    return 2\n",
        "'helper' is public but neither in __all__ nor used by another module of core",
    ),
}


def _fixture(root: Path, sources: dict[str, str]) -> dict[str, Module]:
    for name, text in sources.items():
        path = root / FIXTURE / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return load_tree(root, FIXTURE)


def _check(modules: dict[str, Module]) -> list[str]:
    return [
        *check_all_defined(modules),
        *check_cross_package(modules),
        *check_product_private(modules, ("core",)),
    ]


def test_the_clean_fixture_passes(tmp_path: Path) -> None:
    assert _check(_fixture(tmp_path, CLEAN)) == []


@pytest.mark.parametrize("rule", sorted(VIOLATIONS))
def test_a_violation_is_reported(rule: str, tmp_path: Path) -> None:
    module, source, message = VIOLATIONS[rule]
    problems = _check(_fixture(tmp_path, {**CLEAN, module: source}))
    assert len(problems) == 1, problems
    assert message in problems[0], problems


def test_an_exemption_silences_only_its_name(tmp_path: Path) -> None:
    module, source, _ = VIOLATIONS["c-unused-public"]
    modules = _fixture(tmp_path, {**CLEAN, module: source})
    assert check_product_private(modules, ("core",), {"fx.core.mod": frozenset({"helper"})}) == []
    assert check_product_private(modules, ("core",), {"fx.core.mod": frozenset({"other"})})
