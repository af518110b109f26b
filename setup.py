"""The wheel carries the folders the tools read: spec/, models/, vectors/, schema/.

pyproject.toml declares the package; this file only adds a ``build_py`` step that copies
the top-level folders of ostrom.layout.DATA_DIRS into the built package as
``ostrom/_data/``, where ostrom.layout finds them in an installed package.  The folders
stay the one source: nothing is copied into the source tree, and an editable install
(``make setup``) reads them in place.  MANIFEST.in puts them into the sdist, so a wheel
built from the sdist (``python -m build``) carries them too.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _data_dirs() -> tuple[str, ...]:
    """ostrom.layout.DATA_DIRS, read from the source (the package is not importable yet:
    its dependencies may not be installed in the build environment)."""
    spec = importlib.util.spec_from_file_location(
        "_ostrom_layout", HERE / "reference" / "ostrom" / "layout.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    dirs: tuple[str, ...] = module.DATA_DIRS
    return dirs


class BuildPyWithData(build_py):
    """build_py, then the data folders copied into ``<build_lib>/ostrom/_data/``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # the checkout's own folders are read in place
            return
        target = Path(self.build_lib) / "ostrom" / "_data"
        for name in _data_dirs():
            source = HERE / name
            if not source.is_dir():
                raise SystemExit(f"setup.py: {source} is missing: the wheel needs {name}/")
            shutil.copytree(
                source,
                target / name,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"),
            )


setup(cmdclass={"build_py": BuildPyWithData})
