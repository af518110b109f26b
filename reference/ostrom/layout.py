"""Where the repository's files are: the one place that knows the tree's shape.

The reference implementation reads the specs, models, docs and vectors of the repository it
lives in (an editable install, which ``make setup`` makes). Every module that needs a path
takes it from here, so moving a module never changes what it reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

#: The repository root (``reference/ostrom/layout.py`` is two levels below it).
ROOT: Final = Path(__file__).resolve().parents[2]
SPEC_DIR: Final = ROOT / "spec"
MODELS_DIR: Final = ROOT / "models"
DOCS_DIR: Final = ROOT / "docs"
VECTORS_DIR: Final = ROOT / "vectors"
SCHEMA_DIR: Final = ROOT / "schema"
