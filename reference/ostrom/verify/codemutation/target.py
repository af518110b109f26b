"""The code-mutation targets: which module, with which tests, and which mutants are equivalent.

One file per target module, ``models/mutation/code/<name>.toml``, is the only place that
says which tests cover a module (the module -> tests map) and which of its mutants a person
accepted as equivalent:

    [target]
    source = "protocol/voting.py"        # under reference/ostrom: a module, or a package's
                                         # folder ("consensus/replica/": all its modules)
    tests = ["property_tests/protocol/test_voting.py", ...]
    goal = 0.85                          # the score the full run must reach (optional)
    sample = 30                          # make test's gate: a seeded sample ...
    seed = 1                             # ... its seed ...
    ci_tests = ["property_tests/protocol/test_voting.py"]   # ... and its tests (a subset of tests,
                                         # the fast ones; all of tests by default) ...
    ci_select = "not stateful"           # ... less those a pytest -k expression leaves out
    timeout_multiplier = 3.0             # a mutant's tests may take this many times ...
    timeout_constant = 10.0              # ... their unmutated time, plus these seconds

    [[equivalent]]
    id = "ostrom.protocol.voting.x_review_verdict__mutmut_7"   # mutmut's name for the mutant
    change = "a > b -> a >= b"           # its edit: an id that now names another edit is
                                         # reported as stale, not accepted
    reason = "one line: why no behaviour can tell them apart"

A folder names a package split into modules (the PBFT replica mirrors the sections of
spec/PBFTReplica.tla, one module each): every ``.py`` file under it is mutated, in one
run, so a module added to the package is mutated without a change here.  mutmut names a
mutant after its module (``ostrom.consensus.replica.normal.xǁNormalCaseǁ_body__mutmut_1``).

Unknown keys, missing or mistyped fields and duplicate ids are errors: a typo must not
silently accept a mutant or drop a test file.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ostrom import layout
from ostrom.verify.mutate.equivalents import Equivalent, equivalent_entries

__all__ = [
    "TARGETS_DIR",
    "Equivalent",
    "Target",
    "TargetError",
    "load_target",
    "load_targets",
    "target_names",
]

TARGETS_DIR = layout.MODELS_DIR / "mutation" / "code"
_TARGET_KEYS = {
    "source",
    "tests",
    "goal",
    "sample",
    "seed",
    "timeout_multiplier",
    "timeout_constant",
    "ci_tests",
    "ci_select",
}
#: a target's name is its file's stem: letters, digits, - and _ (never a path)
_NAME = re.compile(r"[A-Za-z0-9_-]+")


class TargetError(ValueError):
    """A target file cannot be used; the message names the file, entry and field."""


@dataclass(frozen=True)
class Target:
    """One module (or package) of reference/ostrom with the tests that cover it."""

    name: str
    #: as the target file writes it: a ``.py`` file, or a folder ending in ``/``
    source: str
    #: the files mutmut mutates, under reference/ostrom: ``source`` itself, or every
    #: ``.py`` file under the folder ``source``, sorted
    files: tuple[str, ...]
    tests: tuple[str, ...]
    goal: float | None
    sample: int
    seed: int
    timeout_multiplier: float
    timeout_constant: float
    equivalents: tuple[Equivalent, ...]
    #: the gate's tests (make test): a subset of ``tests`` ...
    ci_tests: tuple[str, ...] = ()
    #: ... and a pytest ``-k`` expression that leaves the slow ones out
    ci_select: str | None = None
    #: the ``-k`` expression this run applies (the gate's ``ci_select``; none in full)
    select: str | None = None

    def gate(self) -> Target:
        """This target as make test's gate runs it: its ``ci_tests``, ``ci_select``."""
        return replace(self, tests=self.ci_tests or self.tests, select=self.ci_select)

    @property
    def module(self) -> str:
        """The dotted name of the module, or of the package, that ``source`` names: what
        mutmut puts in front of each mutant's name (a package's modules add their own)."""
        return "ostrom." + self.source.removesuffix(".py").strip("/").replace("/", ".")

    @property
    def is_package(self) -> bool:
        """``source`` names a folder: its mutants live in several files."""
        return self.source.endswith("/")

    def file_of(self, module: str) -> str | None:
        """The file of ``files`` whose module is ``module`` (as mutmut names it: a
        package's ``__init__.py`` is the package), or None."""
        for f in self.files:
            dotted = "ostrom." + f.removesuffix(".py").replace("/", ".")
            if dotted.removesuffix(".__init__") == module:
                return f
        return None


def _number(where: str, value: Any, *, integer: bool, low: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TargetError(f"{where} must be a number")
    if integer and not isinstance(value, int):
        raise TargetError(f"{where} must be an integer")
    if value < low:
        raise TargetError(f"{where} must be at least {low:g}")
    return float(value)


def load_target(name: str, directory: Path | None = None, root: Path | None = None) -> Target:
    """The target ``name`` from ``directory`` (models/mutation/code by default).

    ``root`` is the repository the source and test paths are checked against.
    """
    base = directory or TARGETS_DIR
    repo = root or layout.ROOT
    path = base / f"{name}.toml"
    if not _NAME.fullmatch(name) or not path.is_file():
        known = ", ".join(target_names(base)) or "(none)"
        raise TargetError(f"no code-mutation target {name!r} (the targets: {known})")
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise TargetError(f"{path}: {exc}") from None
    extra = sorted(set(doc) - {"target", "equivalent"})
    if extra:
        raise TargetError(f"{path}: unknown key {extra[0]!r} (only [target] and [[equivalent]])")
    t = doc.get("target")
    if not isinstance(t, dict):
        raise TargetError(f"{path}: a [target] table is required")
    unknown = sorted(set(t) - _TARGET_KEYS)
    if unknown:
        raise TargetError(f"{path}: [target] has unknown key {unknown[0]!r}")
    source, files = _source_files(path, t.get("source"), repo / "reference" / "ostrom")
    tests = t.get("tests")
    if not isinstance(tests, list) or not tests or not all(isinstance(s, str) for s in tests):
        raise TargetError(f"{path}: [target] tests must be a non-empty list of paths")
    for test in tests:
        if not (repo / test).is_file():
            raise TargetError(f"{path}: [target] test file {test} does not exist")
    if len(set(tests)) != len(tests):
        raise TargetError(f"{path}: [target] tests lists a file twice")
    ci_tests = t.get("ci_tests", tests)
    if (
        not isinstance(ci_tests, list)
        or not ci_tests
        or not all(isinstance(s, str) for s in ci_tests)
    ):
        raise TargetError(f"{path}: [target] ci_tests must be a non-empty list of paths")
    outside = [s for s in ci_tests if s not in tests]
    if outside:
        raise TargetError(f"{path}: [target] ci_tests names {outside[0]}, which tests does not")
    ci_select = t.get("ci_select")
    if ci_select is not None and (not isinstance(ci_select, str) or not ci_select.strip()):
        raise TargetError(f"{path}: [target] ci_select must be a non-empty pytest -k expression")
    goal = t.get("goal")
    if goal is not None:
        goal = _number(f"{path}: [target] goal", goal, integer=False, low=0.0)
        if goal > 1:
            raise TargetError(f"{path}: [target] goal must be at most 1")
    return Target(
        name=name,
        source=source,
        files=files,
        tests=tuple(tests),
        goal=goal,
        sample=int(_number(f"{path}: [target] sample", t.get("sample", 30), integer=True, low=1)),
        seed=int(_number(f"{path}: [target] seed", t.get("seed", 1), integer=True, low=0)),
        timeout_multiplier=_number(
            f"{path}: [target] timeout_multiplier",
            t.get("timeout_multiplier", 3.0),
            integer=False,
            low=1.0,
        ),
        timeout_constant=_number(
            f"{path}: [target] timeout_constant",
            t.get("timeout_constant", 10.0),
            integer=False,
            low=0.0,
        ),
        equivalents=tuple(equivalent_entries(str(path), doc.get("equivalent", []), TargetError)),
        ci_tests=tuple(ci_tests),
        ci_select=ci_select,
    )


def _source_files(path: Path, source: Any, package: Path) -> tuple[str, tuple[str, ...]]:
    """``source`` as a normal path, and the files it names under ``package``
    (reference/ostrom), relative to it: the ``.py`` file itself, or every ``.py`` file under
    the folder (``name/``), sorted."""
    shape = (
        f"{path}: [target] source must be a .py path or a folder ending in / under reference/ostrom"
    )
    if not isinstance(source, str) or not source.endswith((".py", "/")):
        raise TargetError(shape)
    rel = PurePosixPath(source)
    if rel.is_absolute() or not rel.parts or ".." in rel.parts:
        raise TargetError(shape)
    where = package.joinpath(*rel.parts)
    if source.endswith(".py"):
        if not where.is_file():
            raise TargetError(f"{path}: [target] source reference/ostrom/{source} does not exist")
        return rel.as_posix(), (rel.as_posix(),)
    if not where.is_dir():
        raise TargetError(f"{path}: [target] source reference/ostrom/{source} is no folder")
    files = tuple(
        sorted(
            f.relative_to(package).as_posix()
            for f in where.rglob("*.py")
            if f.is_file() and "__pycache__" not in f.relative_to(where).parts
        )
    )
    if not files:
        raise TargetError(f"{path}: [target] source reference/ostrom/{source} has no .py file")
    return rel.as_posix() + "/", files


def target_names(directory: Path | None = None) -> list[str]:
    """The names of the targets, sorted."""
    base = directory or TARGETS_DIR
    return sorted(p.stem for p in base.glob("*.toml"))


def load_targets(directory: Path | None = None) -> list[Target]:
    """Every target, sorted by name."""
    return [load_target(n, directory) for n in target_names(directory)]
