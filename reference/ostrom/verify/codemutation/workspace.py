"""The scratch copy of the repository that mutmut mutates, one per target module.

mutmut 3.8 mutates files under a source directory it knows by name (``src``, ``lib`` or
the project's name) and names a mutant after its module path with a leading ``src.``
stripped; it cannot work in place on ``reference/ostrom``.  So each target gets a copy of
the tree in ``build/mutate-code/<kind>/<target>`` (run.py) with ``reference/`` renamed
``src/`` and a ``[tool.mutmut]`` table appended to the copied pyproject.toml that limits
mutation to the target's one file and the tests to the ones its target file lists.  The
repository itself is never written to.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ostrom import layout
from ostrom.verify.codemutation.target import Target

__all__ = ["SKIP", "WORKSPACE_ROOT", "build_workspace", "mutmut_table"]

#: Where the workspaces live (``make clean`` removes build/).
WORKSPACE_ROOT = layout.ROOT / "build" / "mutate-code"

#: Top-level entries never copied: caches, the venv, build output, version control.
SKIP = frozenset(
    {
        ".git",
        ".venv",
        "build",
        ".tlc",
        ".hypothesis",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "states",
        "results",
        "mutants",
        ".coverage",
    }
)

_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".coverage.*")


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(s) for s in items) + "]"


def mutmut_table(target: Target, also_copy: list[str]) -> str:
    """The ``[tool.mutmut]`` table for ``target`` (appended to the copy's pyproject.toml).

    The tests run in the Hypothesis profile ``ci`` (derandomized, no example database), so
    a mutant's verdict does not depend on what ran before it; no cache, so the copies do not
    share state through ``.pytest_cache``; a mutant's tests fastest first (fastfirst.py).
    """
    pytest_args = [
        "-p",
        "no:cacheprovider",
        "-p",
        "ostrom.verify.codemutation.fastfirst",
        "--hypothesis-profile=ci",
    ]
    selection = [*target.tests, *(["-k", target.select] if target.select else [])]
    return "\n".join(
        [
            "",
            "[tool.mutmut]",
            'source_paths = ["src"]',
            f'only_mutate = ["src/ostrom/{target.source}"]',
            f"also_copy = {_toml_list(also_copy)}",
            f"pytest_add_cli_args = {_toml_list(pytest_args)}",
            f"pytest_add_cli_args_test_selection = {_toml_list(selection)}",
            f"timeout_multiplier = {target.timeout_multiplier}",
            f"timeout_constant = {target.timeout_constant}",
            "use_git_change_detection = false",
            "",
        ]
    )


def build_workspace(target: Target, root: Path | None = None, source: Path | None = None) -> Path:
    """A fresh copy of the repository ``source`` for ``target``; returns its directory.

    An old workspace of the same target is removed first: a run always starts from the
    code as it is now, never from an earlier run's cached verdicts.
    """
    src_root = source or layout.ROOT
    work = (root or WORKSPACE_ROOT) / target.name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    also_copy: list[str] = []
    for entry in sorted(src_root.iterdir()):
        if entry.name in SKIP or entry.name.startswith(".coverage"):
            continue
        if entry.name == "reference":
            shutil.copytree(entry, work / "src", ignore=_IGNORE)
        elif entry.is_dir():
            shutil.copytree(entry, work / entry.name, ignore=_IGNORE)
            also_copy.append(entry.name)
        elif entry.is_file():
            shutil.copy2(entry, work / entry.name)
            if entry.name != "pyproject.toml":
                also_copy.append(entry.name)
    pyproject = work / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text(encoding="utf-8") + mutmut_table(target, also_copy), encoding="utf-8"
    )
    return work
