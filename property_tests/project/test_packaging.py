"""The package's dependencies: a runtime core and extras (pyproject.toml).

``pip install ostrom`` must give a working protocol core and conformance driver, and a
command whose extra is missing must stop with one line naming it.  The slow test proves
it: it installs the package with its core dependencies only into a throwaway virtual
environment, then speaks ostrom-driver/1 to ``python -m ostrom.conformance.driver``
(handshake, a reset, one lifecycle step, a tick) and runs a few ``ostrom`` commands.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from importlib.metadata import packages_distributions
from pathlib import Path
from typing import Any

import pytest

from ostrom import layout
from ostrom.cli.extras import EXTRA_OF_MODULE

PYPROJECT = tomllib.loads((layout.ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement (``"Z3_solver==1" -> "z3-solver"``)."""
    name = re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _core() -> set[str]:
    return {_name(r) for r in PYPROJECT["project"]["dependencies"]}


def _extras() -> dict[str, list[str]]:
    extras: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
    return extras


def test_every_pin_is_exact() -> None:
    requirements = list(PYPROJECT["project"]["dependencies"])
    for reqs in _extras().values():
        requirements += [r for r in reqs if not r.startswith("ostrom[")]
    loose = [r for r in requirements if not re.fullmatch(r"[A-Za-z0-9_.\-]+==[^=<>~!,;]+", r)]
    assert not loose, f"pin exactly (==): {loose}"


def test_all_is_every_extra() -> None:
    extras = _extras()
    (everything,) = extras["all"]
    named = set(re.fullmatch(r"ostrom\[(.*)\]", everything).group(1).split(","))  # type: ignore[union-attr]
    assert named == set(extras) - {"all"}


def test_the_cli_names_the_extra_that_provides_each_optional_module() -> None:
    """``cli/extras.py`` (the one-line messages) agrees with pyproject.toml."""
    dists = packages_distributions()
    core = _core()
    for module, extra in EXTRA_OF_MODULE.items():
        names = {_name(d) for d in dists.get(module, [])}
        assert names, f"{module} is not installed here (make setup installs every extra)"
        assert names & {_name(r) for r in _extras()[extra]}, f"{module} is not in [{extra}]"
        assert not names & core, f"{module} is a core dependency, not an extra"


def _session(python: Path, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(python), "-m", "ostrom.conformance.driver"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.mark.venv
def test_the_core_install_runs_the_protocol_and_the_driver(tmp_path: Path) -> None:
    # A copy of what the wheel is built from, so the build leaves nothing in the tree.
    src = tmp_path / "src"
    shutil.copytree(
        layout.ROOT / "reference" / "ostrom",
        src / "reference" / "ostrom",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"),
    )
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (layout.ROOT / name).is_file():
            shutil.copy(layout.ROOT / name, src / name)
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bindir = env_dir / ("Scripts" if sys.platform == "win32" else "bin")
    python = bindir / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(src)],
        check=True,
        timeout=900,
    )

    # Only the core is there: no extra's module imports.
    probe = "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in sys.argv[1:]))"
    optional = [*EXTRA_OF_MODULE, "pytest", "networkx"]
    subprocess.run([str(python), "-c", probe, *optional], check=True, timeout=60)

    agents = [{"id": "a1", "tier": 0, "weight": 0.1, "reputation": 0.6}]
    replies = _session(
        python,
        [
            {"type": "hello", "protocol": "ostrom-driver/1"},
            {"type": "reset", "layer": "lifecycle", "params": {}, "setup": {"agents": agents}},
            {
                "type": "step",
                "command": {
                    "op": "propose",
                    "agent": "a1",
                    "artifact": "x1",
                    "slot": "s1",
                    "digest": "d1",
                },
            },
            {"type": "step", "command": {"op": "tick"}},
            {"type": "bye"},
        ],
    )
    hello, ready, proposed, ticked = replies
    assert hello["type"] == "hello" and "lifecycle" in hello["layers"]
    assert ready == {"type": "ready"}
    assert proposed["result"] == "ok"
    assert proposed["state"]["artifacts"]["x1"]["state"] == "proposed"
    assert ticked["result"] == "ok" and ticked["state"]["now"] == 1

    ostrom = bindir / "ostrom"
    params = subprocess.run(
        [str(ostrom), "params", "--json"], capture_output=True, text=True, timeout=120
    )
    assert params.returncode == 0, params.stderr
    assert "propose_rate" in json.loads(params.stdout)

    # A command whose extra is missing: one line naming it, no traceback.
    for command, extra in (["simulate"], "sim"), (["check-params"], "check"):
        out = subprocess.run([str(ostrom), *command], capture_output=True, text=True, timeout=120)
        assert out.returncode != 0
        assert out.stderr.strip().count("\n") == 0, out.stderr
        assert f"pip install 'ostrom[{extra}]'" in out.stderr
        assert "Traceback" not in out.stderr
