"""The scratch copy of the repository that mutmut mutates, one per target module.

mutmut 3.8 mutates files under a source directory it knows by name (``src``, ``lib`` or
the project's name) and names a mutant after its module path with a leading ``src.``
stripped; it cannot work in place on ``reference/ostrom``.  So each target gets a copy of
the tree in ``build/mutate-code/<kind>/<target>`` (run.py) with ``reference/`` renamed
``src/`` and a ``[tool.mutmut]`` table appended to the copied pyproject.toml that limits
mutation to the target's files (one module, or a package's) and the tests to the ones its
target file lists.  The
repository itself is never written to.

A full run of the larger modules takes hours; an interrupted one may be resumed
(``resume=True``) in its workspace, where mutmut keeps each mutant's verdict as it is
found, but only on the tree it started from: the workspace records a fingerprint of
every file it copied, and a resume on a tree with any other content (the recorded scores
apart, which a run itself rewrites) is refused.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
from pathlib import Path

from ostrom import layout
from ostrom.verify.codemutation.scores import SCORES_PATH
from ostrom.verify.codemutation.target import Target

__all__ = [
    "SKIP",
    "WORKSPACE_ROOT",
    "WorkspaceChanged",
    "build_workspace",
    "check_resumable",
    "mutmut_table",
    "tree_fingerprint",
]

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

#: Names never copied at any depth (and so not fingerprinted).
_IGNORED_NAMES = ("__pycache__", "*.pyc", "*.egg-info", ".coverage.*")
_IGNORE = shutil.ignore_patterns(*_IGNORED_NAMES)

#: The file in a workspace holding the fingerprint of the tree it was copied from.
FINGERPRINT = ".ostrom-tree"

#: Rewritten by the runs themselves (``--record``): not part of what a run tests.
_UNFINGERPRINTED = frozenset({SCORES_PATH.relative_to(layout.ROOT).as_posix()})


class WorkspaceChanged(ValueError):
    """A resume was asked for where there is no run to resume, or the tree has changed
    since the run started (its verdicts would mix two trees)."""


def _top_entries(src_root: Path) -> list[Path]:
    """The top-level entries of ``src_root`` a workspace copies, sorted."""
    return [
        e
        for e in sorted(src_root.iterdir())
        if e.name not in SKIP and not e.name.startswith(".coverage")
    ]


def _copied(src_root: Path) -> list[Path]:
    """The files ``build_workspace`` copies from ``src_root``, sorted."""
    files: list[Path] = []
    for entry in _top_entries(src_root):
        if entry.is_file():
            files.append(entry)
        elif entry.is_dir():
            for path in sorted(entry.rglob("*")):
                parts = path.relative_to(src_root).parts
                ignored = any(fnmatch.fnmatch(p, pat) for p in parts for pat in _IGNORED_NAMES)
                if path.is_file() and not ignored:
                    files.append(path)
    return files


def tree_fingerprint(src_root: Path | None = None) -> str:
    """SHA-256 over the relative path and content of every file a workspace copies from
    ``src_root`` (the recorded scores apart)."""
    root = src_root or layout.ROOT
    h = hashlib.sha256()
    for path in _copied(root):
        rel = path.relative_to(root).as_posix()
        if rel in _UNFINGERPRINTED:
            continue
        h.update(rel.encode("utf-8") + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(s) for s in items) + "]"


def mutmut_table(target: Target, also_copy: list[str]) -> str:
    """The ``[tool.mutmut]`` table for ``target`` (appended to the copy's pyproject.toml).

    The tests run in the Hypothesis profile ``ci`` (derandomized, no example database), so
    a mutant's verdict does not depend on what ran before it; no cache, so the copies do not
    share state through ``.pytest_cache``; a mutant's cheapest test files first (fastfirst.py).
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
            f"only_mutate = {_toml_list([f'src/ostrom/{f}' for f in target.files])}",
            f"also_copy = {_toml_list(also_copy)}",
            f"pytest_add_cli_args = {_toml_list(pytest_args)}",
            f"pytest_add_cli_args_test_selection = {_toml_list(selection)}",
            f"timeout_multiplier = {target.timeout_multiplier}",
            f"timeout_constant = {target.timeout_constant}",
            "use_git_change_detection = false",
            "",
        ]
    )


def check_resumable(target: Target, root: Path | None = None, source: Path | None = None) -> None:
    """``WorkspaceChanged`` unless ``root``'s workspace of ``target`` holds a run that
    was copied from a tree with the content ``source`` has now."""
    work = (root or WORKSPACE_ROOT) / target.name
    marker = work / FINGERPRINT
    if not marker.is_file() or not (work / "mutants").is_dir():
        raise WorkspaceChanged(f"no run of {target.name} to resume in {work}")
    if marker.read_text(encoding="utf-8").strip() != tree_fingerprint(source or layout.ROOT):
        raise WorkspaceChanged(
            f"the tree has changed since the run of {target.name} in {work} started: "
            "its verdicts are of other code or tests (run it again without --resume)"
        )


def build_workspace(
    target: Target, root: Path | None = None, source: Path | None = None, *, resume: bool = False
) -> Path:
    """A fresh copy of the repository ``source`` for ``target``; returns its directory.

    An old workspace of the same target is removed first: a run always starts from the
    code as it is now, never from an earlier run's cached verdicts.  With ``resume`` the
    old workspace is kept instead, if it was copied from a tree with the content
    ``source`` has now; otherwise ``WorkspaceChanged``, and nothing is removed.
    """
    src_root = source or layout.ROOT
    work = (root or WORKSPACE_ROOT) / target.name
    if resume:
        check_resumable(target, root, src_root)
        return work
    fingerprint = tree_fingerprint(src_root)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    also_copy: list[str] = []
    for entry in _top_entries(src_root):
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
    (work / FINGERPRINT).write_text(fingerprint + "\n", encoding="utf-8")
    return work
