"""The package's source as ``ast`` sees it: modules, what they bind, what they take from
each other.

property_tests/project/test_api.py checks the public API on it (``__all__``, no reaching
past another package's) and test_test_layout.py which tests reach which modules; neither
imports the package to do so, so a module's import-time code never hides what it binds.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final


@dataclass
class Module:
    """What the checks need of one source file."""

    name: str  # dotted: "ostrom.protocol.voting"
    path: Path
    tree: ast.Module
    is_package: bool
    exports: list[str] | None = None  # __all__, None when missing or not a literal
    defined: dict[str, int] = field(default_factory=dict)  # bound here -> line
    imported: dict[str, int] = field(default_factory=dict)  # bound by an import -> line

    @property
    def package(self) -> str:
        """The first component after the top package: ``ostrom.protocol.voting`` ->
        ``protocol``; a top-level module is its own package; the top package is ``""``."""
        parts = self.name.split(".")
        return parts[1] if len(parts) > 1 else ""


def type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at module level: inside ``if``, ``try`` and ``with``
    blocks too (a conditional definition or a ``TYPE_CHECKING`` import binds a name)."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from top_level(stmt.body)
            yield from top_level(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody):
                yield from top_level(block)
            for handler in stmt.handlers:
                yield from top_level(handler.body)
        elif isinstance(stmt, ast.With):
            yield from top_level(stmt.body)
        else:
            yield stmt


def _targets(target: ast.expr) -> Iterator[ast.Name]:
    if isinstance(target, ast.Name):
        yield target
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _targets(element)
    elif isinstance(target, ast.Starred):
        yield from _targets(target.value)


def parse_module(name: str, path: Path) -> Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    module = Module(name, path, tree, path.name == "__init__.py")
    for stmt in top_level(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            module.defined.setdefault(stmt.name, stmt.lineno)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in _targets(target):
                    if node.id == "__all__":
                        module.exports = _literal_strings(stmt.value)
                    else:
                        module.defined.setdefault(node.id, stmt.lineno)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                module.imported.setdefault(bound, stmt.lineno)
    return module


def _literal_strings(value: ast.expr | None) -> list[str] | None:
    if not isinstance(value, ast.List | ast.Tuple):
        return None
    names = [
        e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
    ]
    return names if len(names) == len(value.elts) else None


def load_tree(source: Path, top: str = "ostrom") -> dict[str, Module]:
    """Every module of the package ``top`` under ``source``, by dotted name."""
    modules: dict[str, Module] = {}
    for path in sorted((source / top).rglob("*.py")):
        parts = list(path.relative_to(source).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        modules[name] = parse_module(name, path)
    return modules


#: A tool command's "module:attribute" (ostrom/cli/tools.py) and any other string that
#: names an attribute of a module to load.
_TARGET: Final = re.compile(r"^([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+):([A-Za-z_]\w*)$")


def package_of(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def absolute(module: Module, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = module.name.split(".")
    if not module.is_package:
        parts.pop()
    parts = parts[: len(parts) - node.level + 1]
    return ".".join([*parts, *([node.module] if node.module else [])])


def uses(module: Module, modules: dict[str, Module]) -> Iterator[tuple[str, str, int]]:
    """Every ``(module, name, line)`` this module takes from a module of the tree: by
    ``from m import name``, as an attribute of an imported module, or by a
    ``"module:name"`` string.  A submodule imported by name is not a use of a name."""
    aliases: dict[str, str] = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            source = absolute(module, node)
            if source not in modules:
                continue
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
                else:
                    yield source, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        aliases[top] = top
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _TARGET.match(node.value)
            if match and match.group(1) in modules:
                yield match.group(1), match.group(2), node.lineno
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain: list[str] = []
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in aliases:
            continue
        target = aliases[base.id]
        for attr in reversed(chain):
            if f"{target}.{attr}" in modules:
                target = f"{target}.{attr}"
                continue
            yield target, attr, node.lineno
            break


def origin(modules: dict[str, Module], source: str, name: str) -> tuple[str, str]:
    """The module that defines ``name`` as ``source`` offers it: ``source`` itself, or,
    for a re-export (``from <package>.<module> import name`` in a package), the module it comes
    from, followed to the end."""
    for _ in range(len(modules)):
        module = modules[source]
        if name in module.defined:
            break
        found = None
        for node in top_level(module.tree.body):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        found = (absolute(module, node), alias.name)
        if found is None or found[0] not in modules:
            break
        source, name = found
    return source, name


def lazy_table(module: Module) -> dict[str, str] | None:
    """A lazy package's ``_LAZY`` ("module:attribute" by name), or None if it has none."""
    for stmt in module.tree.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == "_LAZY"
            and isinstance(stmt.value, ast.Dict)
        ):
            return {
                ast.literal_eval(k): ast.literal_eval(v)
                for k, v in zip(stmt.value.keys, stmt.value.values, strict=True)
                if k is not None
            }
    return None


def type_checking_imports(module: Module) -> dict[str, str]:
    """What the ``if TYPE_CHECKING:`` block imports: "module:attribute" by bound name."""
    found = {}
    for stmt in module.tree.body:
        if isinstance(stmt, ast.If) and type_checking(stmt.test):
            for node in stmt.body:
                if isinstance(node, ast.ImportFrom):
                    for alias in node.names:
                        found[alias.asname or alias.name] = f"{node.module}:{alias.name}"
    return found
