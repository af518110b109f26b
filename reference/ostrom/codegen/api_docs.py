"""docs/design.md's table of the public API, from each package's ``__all__``.

A package's ``__init__`` names its API in ``__all__`` (property_tests/project/test_api.py
checks that every module does, and that no package reaches past another's); this module
renders, for every package of ``ostrom.PRODUCT`` and ``ostrom.TOOLS``, those names with the
summary of what each is: the first sentence of its docstring, or of the ``#:`` comment
above a constant.  It reads the source with ``ast`` and imports nothing: the tools'
packages need their extras, and the generator of the docs must not import the evaluation
model (``.importlinter``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ostrom import PRODUCT, TOOLS, layout

__all__ = ["ApiError", "Export", "api_markdown", "package_api"]

#: A sentence ends at a full stop followed by a space or the end (not "e.g." or "i.e.").
_SENTENCE: Final = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.(\s|$)")


class ApiError(ValueError):
    """A package's API cannot be read: no literal ``__all__``, or a name whose definition
    cannot be found."""


@dataclass(frozen=True)
class Export:
    """One name of a package's ``__all__``: where it is defined and what it is."""

    name: str
    module: str  # the module that defines it (dotted)
    summary: str  # the first sentence of its docstring or ``#:`` comment; "" if none


def _module_path(package_dir: Path, dotted: str) -> Path:
    parts = dotted.split(".")[1:]
    base = package_dir.joinpath(*parts)
    return base / "__init__.py" if (base / "__init__.py").is_file() else base.with_suffix(".py")


def _parse(path: Path) -> tuple[ast.Module, list[str]]:
    text = path.read_text(encoding="utf-8")
    return ast.parse(text, filename=str(path)), text.splitlines()


def _exports(tree: ast.Module) -> list[str] | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            if not isinstance(value, ast.List | ast.Tuple):
                return None
            names = [
                e.value
                for e in value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
            return names if len(names) == len(value.elts) else None
    return None


def _statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, with those inside ``if``/``try`` blocks (``TYPE_CHECKING``)."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            out += _statements(stmt.body) + _statements(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            out += _statements(stmt.body)
        else:
            out.append(stmt)
    return out


def _summary(text: str) -> str:
    """The first sentence of the first paragraph, in Markdown (reST's double backticks
    made single)."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split()).replace("``", "`")
    match = _SENTENCE.search(paragraph)
    return paragraph[: match.start() + 1] if match else paragraph


def _comment_above(lines: list[str], lineno: int) -> str:
    """The ``#:`` comment lines just above line ``lineno`` (1-based), joined."""
    found: list[str] = []
    index = lineno - 2
    while index >= 0 and lines[index].lstrip().startswith("#:"):
        found.insert(0, lines[index].lstrip()[2:].strip())
        index -= 1
    return " ".join(found)


def _lazy_table(tree: ast.Module) -> dict[str, str]:
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and stmt.target.id == "_LAZY"
            and isinstance(stmt.value, ast.Dict)
        ):
            return {
                k.value: v.value
                for k, v in zip(stmt.value.keys, stmt.value.values, strict=True)
                if isinstance(k, ast.Constant)
                and isinstance(v, ast.Constant)
                and isinstance(k.value, str)
                and isinstance(v.value, str)
            }
    return {}


def _define(package_dir: Path, dotted: str, name: str, hops: int = 8) -> Export:
    """Follow ``name`` from module ``dotted`` to its definition."""
    tree, lines = _parse(_module_path(package_dir, dotted))
    lazy = _lazy_table(tree)
    if name in lazy and hops:
        module, _, attribute = lazy[name].partition(":")
        return _with_name(_define(package_dir, module, attribute, hops - 1), name)
    for stmt in _statements(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if stmt.name == name:
                first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
                text = ast.get_docstring(stmt) or _comment_above(lines, first)
                return Export(name, dotted, _summary(text))
        elif isinstance(stmt, ast.Assign | ast.AnnAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return Export(name, dotted, _summary(_comment_above(lines, stmt.lineno)))
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and hops:
            for alias in stmt.names:
                top = dotted.split(".")[0]
                if (alias.asname or alias.name) == name and stmt.module.split(".")[0] == top:
                    found = _define(package_dir, stmt.module, alias.name, hops - 1)
                    return _with_name(found, name)
    raise ApiError(f"{dotted}: cannot find the definition of {name!r}")


def _with_name(export: Export, name: str) -> Export:
    return Export(name, export.module, export.summary)


def package_api(dotted: str, package_dir: Path = layout.PACKAGE_DIR) -> tuple[str, list[Export]]:
    """The summary of package (or top-level module) ``dotted`` and its exports, in the
    order of its ``__all__``."""
    tree, _ = _parse(_module_path(package_dir, dotted))
    names = _exports(tree)
    if names is None:
        raise ApiError(f"{dotted}: no literal __all__")
    summary = _summary(ast.get_docstring(tree) or "")
    return summary, [_define(package_dir, dotted, n) for n in names]


def api_markdown(package_dir: Path = layout.PACKAGE_DIR) -> str:
    """docs/design.md's API block: a table per package of the product, then of the tools."""
    out: list[str] = []
    for stack, packages in (("The product", PRODUCT), ("The tools", TOOLS)):
        out.append(f"**{stack}'s API** (each package's `__all__`):\n")
        for package in packages:
            summary, exports = package_api(f"ostrom.{package}", package_dir)
            out.append(f"`ostrom.{package}` — {summary}\n")
            if not exports:
                out.append("(no names: it is run, not imported)\n")
                continue
            out.append("| name | defined in | what it is |\n|---|---|---|")
            for e in exports:
                where = e.module.removeprefix(f"ostrom.{package}").lstrip(".") or "—"
                what = e.summary.replace("|", "\\|") or "—"
                out.append(f"| `{e.name}` | {where} | {what} |")
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
