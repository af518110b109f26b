"""Where ostrom's files are: the one place that knows the tree's shape.

The tools read the specs, models, vectors and schemas, and ostrom runs from one of two
places, which this module tells apart once, on import:

* a **source checkout** (the editable install ``make setup`` makes, or a code-mutation
  workspace's copy of it): this module is ``reference/ostrom/layout.py`` of a tree that
  also has ``spec/``, ``models/``, ``vectors/`` and ``schema/``.  Those folders are the
  one source, read and written in place, and the tools that edit the tree (``ostrom
  docs``, ``ostrom site``, ``ostrom mutate-code``, the generators) need it;
* an **installed package** (a wheel): the same four folders are the package data in
  ``ostrom/_data/`` (setup.py's ``build_py`` copies them there when the wheel is built),
  read-only, and anything a command writes (TLC's ``.tlc/``, ``build/``) goes under the
  current directory, never into the installed package.

Every module that needs a path takes it from here, so moving a module never changes what
it reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = [
    "CHECKOUT",
    "DATA_DIRS",
    "DOCS_DIR",
    "MODELS_DIR",
    "PACKAGE_DIR",
    "ROOT",
    "SCHEMA_DIR",
    "SPEC_DIR",
    "VECTORS_DIR",
    "NotACheckout",
    "checkout_of",
    "in_package",
    "scratch",
    "source_tree",
]

#: The folders the tools read, at the top of a checkout and in the wheel's ``ostrom/_data/``
#: (setup.py copies exactly these; property_tests/project/test_packaging.py checks the wheel).
DATA_DIRS: Final = ("spec", "models", "vectors", "schema")

#: The ``ostrom`` package's own directory (its modules: ``reference/ostrom`` in a checkout).
PACKAGE_DIR: Final = Path(__file__).resolve().parent


def checkout_of(package_dir: Path) -> Path | None:
    """The root of the source tree whose package is ``package_dir``, or None when it is an
    installed package: the directory two levels up when it holds every data folder
    (``reference/ostrom`` in the repository, ``src/ostrom`` in a code-mutation workspace,
    which is a copy of the tree with ``reference/`` renamed)."""
    root = package_dir.parents[1]
    return root if all((root / d).is_dir() for d in DATA_DIRS) else None


#: The source checkout's root (``reference/ostrom/layout.py`` is two levels below it), or
#: None in an installed package.
CHECKOUT: Final = checkout_of(PACKAGE_DIR)
#: The root the data folders hang from, and the manifest's paths (``models/MCPBFT_ci.cfg``)
#: are relative to: the checkout, or the installed package's ``_data/``.
ROOT: Final = CHECKOUT if CHECKOUT is not None else PACKAGE_DIR / "_data"
#: The TLA+ specs.
SPEC_DIR: Final = ROOT / "spec"
#: The TLC models, their manifest and the mutation suites.
MODELS_DIR: Final = ROOT / "models"
#: The conformance vectors.
VECTORS_DIR: Final = ROOT / "vectors"
#: The JSON schemas (commands, vectors, the OpenAPI document).
SCHEMA_DIR: Final = ROOT / "schema"
#: The docs are not package data: only the generators of the docs' tables read or write
#: them, in a checkout.
DOCS_DIR: Final = ROOT / "docs"


class NotACheckout(Exception):
    """A command that edits or reads the source tree was run from an installed package."""


def source_tree(needs: str) -> Path:
    """The checkout's root, for ``needs`` (what wants it, e.g. "ostrom site"): the
    installed package carries only the data folders, so anything else is a one-line
    ``NotACheckout`` there."""
    if CHECKOUT is None:
        raise NotACheckout(
            f"{needs} needs a source checkout of ostrom (the installed package carries "
            f"{', '.join(d + '/' for d in DATA_DIRS)} only): run it from a clone"
        )
    return CHECKOUT


def scratch(root: Path = ROOT) -> Path:
    """Where a run that reads its specs and models from ``root`` writes its scratch
    (``.tlc/``, ``build/``): ``root`` itself when it is a tree of the user's (a checkout,
    or a ``--root`` they named), the current directory when it is the installed package's
    data, which is never written to."""
    return Path.cwd() if in_package(root) else root


def in_package(path: Path) -> bool:
    """Whether ``path`` is inside the ``ostrom`` package's own directory: the installed
    package's data (read-only: a command that would write there refuses), or, in a
    checkout, ``reference/ostrom``."""
    resolved = path.resolve()
    return resolved == PACKAGE_DIR or PACKAGE_DIR in resolved.parents
