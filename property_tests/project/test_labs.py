"""Every lab of docs/labs/ runs as written and says what the tools say.

Each lab's "Run" section is a ``sh`` block of ``ostrom`` commands: they run here word for
word, each by ``/bin/sh`` after the one setup line every lab's "Before you start" box gives
(``. .venv/bin/activate``, here the venv running the tests), with a bare PATH and no
PYTHONPATH — the shell a student has — in an empty directory (with ``examples/`` of this
checkout beside it), and must all succeed but for the exit status a lab declares.  Each
lab's ``<!-- lab ... -->`` block (at the end, after the folded Answer) states the outcome:
the property TLC reports violated and the counterexample's length (``model``, ``expect``,
``states``), or a command's exit status and lines of its output.  The counterexample a lab
tells the reader to open must open in the explorer, which must name the violated property.

The prose is checked against the trace too: every "step N `Action`" a lab names must be
step N of its counterexample (numbered as ``ostrom explain`` and the explorer number it:
step 0 is the initial state) and be taken by that action, and every range "steps A–B" must
lie inside the trace.  A bare "step N" is refused: it is what let "the NEW-VIEW carried at
step 8" (step 8 is ``AcceptNewView``; the NEW-VIEW is sent at step 6) through.  Words in
*italics* are glossary words: each is an entry of docs/glossary.md.
"""

from __future__ import annotations

import gzip
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
#: The setup line of every lab's "Before you start" box.
ACTIVATE = "`. .venv/bin/activate`"
#: A student's shell: the system's PATH, nothing of this checkout until the venv is activated.
SHELL_ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    "PATH": "/usr/bin:/bin",
}
VENV = Path(sys.prefix)
FIXTURES = ROOT / "property_tests" / "fixtures" / "tla"


def _block(text: str) -> dict[str, list[str]]:
    m = re.search(r"<!-- lab\n(.*?)-->", text, re.S)
    assert m is not None, "a lab needs a <!-- lab ... --> block"
    out: dict[str, list[str]] = {}
    for line in m.group(1).strip().splitlines():
        key, _, value = line.partition(":")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


def _prose(text: str) -> str:
    """The lab without its code blocks and its lab block."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.sub(r"<!-- lab\n.*?-->", "", text, flags=re.S)


#: "step 8 `AcceptNewView`", "steps 1–12", or a bare "step 8" (refused)
_STEP = re.compile(r"\b[Ss]teps? (\d+)(?:–(\d+))?(?: `(\w+)`)?")


def _step_references(text: str) -> list[tuple[int, int | None, str | None]]:
    return [
        (int(m.group(1)), int(m.group(2)) if m.group(2) else None, m.group(3))
        for m in _STEP.finditer(" ".join(_prose(text).split()))
    ]


def _step_errors(text: str, actions: list[str]) -> list[str]:
    """What the prose of ``text`` says about steps that the trace (its ``actions``, one
    per state) contradicts."""
    errors = []
    for first, last, action in _step_references(text):
        if last is not None:
            if not first < last < len(actions):
                errors.append(f"steps {first}–{last} of a {len(actions)}-state trace")
        elif action is None:
            errors.append(f"'step {first}' names no action")
        elif first >= len(actions):
            errors.append(f"step {first} of a {len(actions)}-state trace")
        elif actions[first].split("(")[0] != action:
            errors.append(f"step {first} is {actions[first]}, not {action}")
    return errors


def test_a_step_the_prose_gets_wrong_is_caught() -> None:
    """Lab 07's old sentence and its variants against lab 07's counterexample."""
    raw = gzip.decompress((FIXTURES / "pbft-mutant-commit-2f.itf.json.gz").read_bytes())
    actions = [str(st["#meta"]["action"]) for st in json.loads(raw)["states"]]
    assert not _step_errors(
        "sent at step 6 `SendNewView`, accepted at step 8 `AcceptNewView`", actions
    )
    assert not _step_errors("steps 1–10", actions)
    assert _step_errors("compare step 10 with the NEW-VIEW carried at step 8", actions)
    assert _step_errors("the NEW-VIEW carried at step 8 `SendNewView`", actions)
    assert _step_errors("step 11 `ByzPrepare`", actions)
    assert _step_errors("steps 3–11", actions)


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
def test_a_lab_says_how_to_start_and_hides_its_answer(lab: Path) -> None:
    """The box before the rule: the setup line, what to read, the model, what the output
    means; the expected outcome and the Answer come after the questions, the Answer folded."""
    text = lab.read_text(encoding="utf-8")
    box = text.split("> **Before you start.**", 1)
    assert len(box) == 2, f"{lab.name} has no Before you start box"
    assert box[0].count("\n") <= 2, f"{lab.name}: the box must open the lab"
    body = box[1].split("\n\n", 1)[0]
    assert ACTIVATE in body and "Read first:" in body and "The model:" in body
    assert "The output:" in body and ("`ok`" in body or "exit status" in body)
    predict, answer = text.index("**Predict.**"), text.index("**Answer.**")
    assert text.index("<!-- lab") > answer > predict, f"{lab.name}: the outcome comes first"
    fold = text.index('<details markdown="1">')
    assert predict < fold < answer < text.index("</details>"), f"{lab.name}: Answer not folded"


def test_the_primer_names_the_specs_variables() -> None:
    """docs/primer.md quotes spec/Lifecycle.tla's VARIABLES line: it must be the spec's."""
    spec = (ROOT / "spec" / "Lifecycle.tla").read_text(encoding="utf-8")
    m = re.search(r"^VARIABLES\n(.*?)\n\n", spec, re.M | re.S)
    assert m is not None
    names = [re.sub(r"\\\*.*", "", line).strip().rstrip(",") for line in m.group(1).splitlines()]
    declared = [n for n in names if n]
    primer = (ROOT / "docs" / "primer.md").read_text(encoding="utf-8")
    quoted = re.search(r"`VARIABLES ([^`]+)`", primer)
    assert quoted is not None, "the primer quotes no VARIABLES line"
    assert [v.strip() for v in quoted.group(1).split(",")] == declared


def test_italic_words_are_glossary_words() -> None:
    """One convention (docs/labs/README.md): a word in italics in a lab is in the
    glossary; the primer's bold words are the ones it defines, all in the glossary too."""
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    terms = {t.lower() for t in re.findall(r"^\*\*([^*]+)\*\* —", glossary, re.M)}
    assert len(terms) > 20
    words: list[tuple[str, str]] = []
    for lab in LABS:
        prose = re.sub(r"\*\*[^*]+\*\*", "", _prose(lab.read_text(encoding="utf-8")))
        words += [(lab.name, w) for w in re.findall(r"(?<![*\w])\*([^*\n]+)\*(?!\*)", prose)]
    primer = (ROOT / "docs" / "primer.md").read_text(encoding="utf-8")
    words += [
        ("primer.md", w)
        for w in re.findall(r"\*\*([^*]+)\*\*", primer)
        if not w.endswith(".") and "`" not in w
    ]  # not "**Properties.**" or "**Reading `spec/...`**": a paragraph's heading
    assert words
    known = terms | {t.removesuffix("s") for t in terms}
    missing = [
        (where, w)
        for where, w in words
        if not {w.lower(), w.lower().removesuffix("es"), w.lower().removesuffix("s")} & known
    ]
    assert not missing, f"italic (or the primer's bold) words not in the glossary: {missing}"
    assert "italics are in" in (ROOT / "docs" / "labs" / "README.md").read_text()
    assert "bold are defined here" in primer


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_lab_runs_as_written(tmp_path: Path, lab: Path) -> None:
    text = lab.read_text(encoding="utf-8")
    spec = _block(text)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    want_exit = int(spec.get("exit", ["0"])[0])
    outputs = []
    for argv in _commands(text):
        assert argv[0] == "ostrom", argv
        activate = shlex.quote(str(VENV / "bin" / "activate"))
        p = subprocess.run(
            ["/bin/sh", "-c", f". {activate} && {shlex.join(argv)}"],
            cwd=tmp_path,
            env=SHELL_ENV,
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
        actions = [str(st.get("#meta", {}).get("action", "?")) for st in doc["states"]]
        errors = _step_errors(text, actions)
        assert not errors, f"{lab.name}: {errors}"
    else:
        assert not _step_references(text), f"{lab.name} names steps but has no trace"
