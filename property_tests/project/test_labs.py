"""Every lab of docs/labs/ runs as written and says what the tools say.

Each lab's "Run" section is a ``sh`` block of ``ostrom`` commands: they run here word for
word, in an empty directory (with ``examples/`` of this checkout beside it), and must all
succeed but for the exit status a lab declares.  Each lab's ``<!-- lab ... -->`` block
states the outcome: the property TLC reports violated and the counterexample's length
(``model``, ``expect``, ``states``), or a command's exit status and lines of its output.
The counterexample a lab tells the reader to open must open in the explorer, which must
name the violated property.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tlc

ROOT = Path(__file__).resolve().parents[2]
LABS = sorted((ROOT / "docs" / "labs").glob("[0-9][0-9]-*.md"))
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "reference")}


def _block(text: str) -> dict[str, list[str]]:
    m = re.search(r"<!-- lab\n(.*?)-->", text, re.S)
    assert m is not None, "a lab needs a <!-- lab ... --> block"
    out: dict[str, list[str]] = {}
    for line in m.group(1).strip().splitlines():
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def _commands(text: str) -> list[list[str]]:
    run = text.split("**Run.**", 1)[1].split("**", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", run, re.S)
    assert blocks, "a lab's Run section has a sh block"
    return [shlex.split(line) for b in blocks for line in b.splitlines() if line.strip()]


def test_there_are_at_least_eight_labs_and_an_index() -> None:
    assert len(LABS) >= 8
    index = (ROOT / "docs" / "labs" / "README.md").read_text()
    for lab in LABS:
        assert f"({lab.name})" in index, f"{lab.name} is not in docs/labs/README.md"
    for lab in LABS:
        text = lab.read_text()
        for part in ("**The rule", "**Predict.**", "**Run.**", "**Answer.**"):
            assert part in text, f"{lab.name} lacks {part}"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_lab_runs_as_written(tmp_path: Path, lab: Path) -> None:
    text = lab.read_text(encoding="utf-8")
    spec = _block(text)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    want_exit = int(spec.get("exit", ["0"])[0])
    outputs = []
    for argv in _commands(text):
        assert argv[0] == "ostrom", argv
        p = subprocess.run(
            [sys.executable, "-m", "ostrom", *argv[1:]],
            cwd=tmp_path,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert "Traceback" not in p.stderr, p.stderr
        expected = want_exit if spec.get("command", [""])[0] == shlex.join(argv) else 0
        assert p.returncode == expected, f"{shlex.join(argv)}: {p.returncode}\n{p.stderr}"
        outputs.append(p.stdout + p.stderr)
    for line in spec.get("output", []):
        assert any(line in out for out in outputs), f"{lab.name}: no output {line!r}"
    if "model" in spec:
        model, invariant = spec["model"][0], spec["expect"][0]
        traces = list(tmp_path.rglob(f"{model}.itf.json"))
        assert len(traces) == 1, f"{lab.name}: the run saved no counterexample of {model}"
        doc = json.loads(traces[0].read_text())
        assert doc["#meta"]["outcome"] == invariant
        assert len(doc["states"]) == int(spec["states"][0]), (
            f"{lab.name}: the counterexample has {len(doc['states'])} states"
        )
        assert any(f"{model}: {invariant}" in out for out in outputs)
        pages = list(tmp_path.rglob("*.html"))
        if pages:
            html = pages[0].read_text()
            assert f"<strong>{invariant}</strong>" in html
