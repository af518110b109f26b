"""The writing labs (docs/labs/writing/w*.md) run as printed and say what TLC says.

A writing lab gives the student a small spec with gaps (``start/``), a mutant of the
finished spec (``mutants/``) and keeps the finished spec folded (``solutions/``).  Its
commands are ``sh`` blocks, each followed by a ``text`` block of what the student sees.
Here they run word for word, each line by ``/bin/sh`` after the setup line of the lab's
"Before you start" box (``. .venv/bin/activate``, here the venv running the tests), with a
bare PATH and no PYTHONPATH — the shell a student has — from a directory with ``docs/`` of
this checkout, and every line of each ``text`` block must appear, in order, in what the
commands print (``…`` stands for what varies: the seconds).  What the student
writes is played by the ``<!-- student: COMMAND -->`` comments: copying the solution
over the student's copy.

Then the lab must make its claims, each by such a run: the start fails, the written
spec passes, the mutant fails, the smallest constants the lab names (``-D``) still fail
and one smaller passes, the repaired mutant passes; and every counterexample's length
is shown by ``ostrom explain``.  The smallest constants are checked to be smallest: one
less of any of them passes, or is refused by the spec's ASSUME.  The files are what the
lab says they are: the mutant is the solution with one change, the start is the solution
with one change per numbered gap, each module 20-50 lines; every line of the folded
answer is a line of the solution, and every verdict or trace length the prose quotes is
one a ``text`` block shows.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WRITING = ROOT / "docs" / "labs" / "writing"
LABS = sorted(WRITING.glob("w[0-9]-*.md"))
#: The setup line of every lab's "Before you start" box (docs/labs/README.md).
ACTIVATE = "`. .venv/bin/activate`"
#: A student's shell: the system's PATH, nothing of this checkout until the venv is activated.
SHELL_ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    "PATH": "/usr/bin:/bin",
}
_TOKEN = re.compile(
    r"<!-- student: (?P<student>.*?) -->"
    r"|```sh\n(?P<sh>.*?)```(?:\s*```text\n(?P<text>.*?)```)?",
    re.S,
)
_EXPLAINED = re.compile(r"^model: tlc (\w+)\.tla · outcome: (\w+) · (\d+) states$", re.M)


@dataclass
class Run:
    """One ``ostrom tlc`` command of a lab, what it printed, and the explain that followed."""

    argv: list[str]
    verdict: str  # "pass", or the invariant TLC found violated
    defines: dict[str, int] = field(default_factory=dict)
    length: int | None = None  # the counterexample's states, from ``ostrom explain``
    after_student: bool = False  # the student has edited the files this run checks


def _lab_parts(text: str) -> list[tuple[str, str, str | None]]:
    """The lab's ``student`` comments and ``sh`` blocks (with their ``text``), in order."""
    out: list[tuple[str, str, str | None]] = []
    for m in _TOKEN.finditer(text):
        if m.group("student") is not None:
            out.append(("student", m.group("student"), None))
        else:
            out.append(("sh", m.group("sh"), m.group("text")))
    return out


def _clone(tmp: Path) -> None:
    """``tmp`` as the root of a clone, for what the labs' commands read (``docs/``)."""
    tmp.mkdir(exist_ok=True)
    (tmp / "docs").symlink_to(ROOT / "docs")


def _sh(line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``line`` in a student's shell, after the box's setup line."""
    activate = shlex.quote(str(Path(sys.prefix) / "bin" / "activate"))
    return subprocess.run(
        ["/bin/sh", "-c", f". {activate} && {line}"],
        cwd=cwd,
        env=SHELL_ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _matches(expected: str, printed: str) -> str | None:
    """The first line of ``expected`` not found, in order, among the lines of ``printed``."""
    lines = printed.splitlines()
    at = 0
    for want in (w.rstrip() for w in expected.splitlines() if w.strip()):
        pattern = re.compile(".*".join(re.escape(part) for part in want.split("…")))
        while at < len(lines) and not pattern.fullmatch(lines[at].rstrip()):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


def _defines(argv: list[str]) -> dict[str, int]:
    return {
        argv[k + 1].split("=")[0]: int(argv[k + 1].split("=")[1])
        for k, a in enumerate(argv)
        if a == "-D"
    }


def _play(lab: Path, tmp: Path) -> list[Run]:
    """Every command of ``lab``, run as printed in ``tmp``; its ``ostrom tlc`` runs."""
    _clone(tmp)
    runs: list[Run] = []
    edited: set[str] = set()
    for kind, body, expected in _lab_parts(lab.read_text(encoding="utf-8")):
        if kind == "student":
            argv = shlex.split(body)
            assert argv[0] == "cp" and "docs/labs/writing/solutions/" in body, body
            edited.add(argv[-1].rstrip("/"))
            p = _sh(body, tmp)
            assert p.returncode == 0, f"{lab.name}: {body}: {p.stderr!r}"
            continue
        printed = ""
        for line in (ln for ln in body.splitlines() if ln.strip()):
            argv = shlex.split(line)
            p = _sh(line, tmp)
            assert "Traceback" not in p.stderr, p.stderr
            if argv[:2] == ["ostrom", "tlc"]:
                verdict = p.stdout.split(" ", 1)[0] if p.stdout else ""
                assert p.returncode == (0 if verdict == "pass" else 1), (
                    f"{lab.name}: {line}: exit {p.returncode}\n{p.stdout}{p.stderr}"
                )
                folder = str(Path(argv[2]).parent)
                runs.append(Run(argv, verdict, _defines(argv), after_student=folder in edited))
            else:
                assert p.returncode == 0, f"{lab.name}: {line}: exit {p.returncode}\n{p.stderr}"
                m = _EXPLAINED.search(p.stdout)
                if argv[:2] == ["ostrom", "explain"] and m and runs:
                    assert m.group(2) == runs[-1].verdict, (
                        f"{lab.name}: {line} explains another run"
                    )
                    runs[-1].length = int(m.group(3))
            printed += p.stdout
        assert expected is not None, f"{lab.name}: no text block after\n{body}"
        missing = _matches(expected, printed)
        assert missing is None, f"{lab.name}: not printed: {missing!r}\n--- printed:\n{printed}"
    return runs


def _claims(lab: Path, runs: list[Run]) -> tuple[Run, Run]:
    """The lab's runs make its claims; its smallest failing run and the smaller that passes."""
    name = lab.name
    student = [r for r in runs if "mutant" not in r.argv[2] and not r.defines]
    mutant = [r for r in runs if "mutant" in r.argv[2] and not r.defines]
    assert student and student[0].verdict != "pass" and not student[0].after_student, (
        f"{name}: the start must fail first"
    )
    assert any(r.verdict == "pass" and r.after_student for r in student), (
        f"{name}: the written spec must pass"
    )
    assert mutant and mutant[0].verdict != "pass" and not mutant[0].after_student, (
        f"{name}: the mutant must fail"
    )
    assert mutant[-1].verdict == "pass" and mutant[-1].after_student, (
        f"{name}: the repaired mutant must pass"
    )
    for r in runs:
        if r.verdict != "pass" and not r.after_student:
            assert r.length is not None, f"{name}: {shlex.join(r.argv)}: no explain of its trace"
    shrunk = [r for r in runs if r.defines]
    fails = [r for r in shrunk if r.verdict != "pass"]
    passes = [r for r in shrunk if r.verdict == "pass"]
    assert fails and passes, f"{name}: -D runs that fail and pass"
    small, smaller = fails[-1], passes[-1]
    assert smaller.defines.keys() == small.defines.keys()
    assert all(smaller.defines[k] <= v for k, v in small.defines.items())
    assert smaller.defines != small.defines, f"{name}: the passing run is not smaller"
    return small, smaller


@pytest.mark.tlc
@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_writing_lab_runs_as_printed(tmp_path: Path, lab: Path) -> None:
    runs = _play(lab, tmp_path)
    small, smaller = _claims(lab, runs)
    # one less of any constant passes (the lab ran one such), or the spec's ASSUME
    # refuses it: the smallest (run on the mutant as given: the student's copy is
    # repaired by now)
    assert "mutant" in small.argv[2], f"{lab.name}: the smallest constants are the mutant's"
    given = WRITING.relative_to(ROOT) / "mutants"
    _clone(tmp_path / "again")
    for name, value in small.defines.items():
        if value == 0 or smaller.defines == {**small.defines, name: value - 1}:
            continue
        argv = [*small.argv]
        argv[2:4] = [str(given / Path(argv[2]).name), str(given / Path(argv[3]).name)]
        argv[argv.index(f"{name}={value}")] = f"{name}={value - 1}"
        argv[argv.index("--out") + 1] = "smaller"
        p = _sh(shlex.join(argv), tmp_path / "again")
        refused = p.returncode == 3 and "Assumption" in p.stdout + p.stderr
        assert p.stdout.startswith("pass") or refused, f"{shlex.join(argv)}: {p.stdout}"


def test_there_are_three_writing_labs_in_the_index() -> None:
    assert len(LABS) >= 3
    index = (ROOT / "docs" / "labs" / "README.md").read_text(encoding="utf-8")
    start, table = index.find("## Start here: write a spec"), index.find("](01-")
    assert 0 <= start < table, "the section comes before the table of labs 01-10"
    head = index[start:table]
    for lab in LABS:
        assert f"(writing/{lab.name})" in head, f"{lab.name} is not in docs/labs/README.md"
        text = lab.read_text(encoding="utf-8")
        for part in ("**Predict.**", '<details markdown="1">'):
            assert part in text, f"{lab.name} lacks {part}"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_a_writing_lab_opens_with_the_box_of_every_lab(lab: Path) -> None:
    """The box of docs/labs/README.md, first: the setup line, what to read, the model,
    what the output means; a word in italics is a glossary word (the labs' convention)."""
    text = lab.read_text(encoding="utf-8")
    before, box = text.split("> **Before you start.**", 1)
    assert before.count("\n") <= 2, f"{lab.name}: the box must open the lab"
    body = box.split("\n\n", 1)[0]
    for part in (ACTIVATE, "Read first:", "The model:", "The output:", "exit status"):
        assert part in body, f"{lab.name}: the box lacks {part}"
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    terms = {w.lower() for w in re.findall(r"^\*\*([^*]+)\*\* —", glossary, re.M)}
    prose = re.sub(r"\*\*[^*]+\*\*", "", re.sub(r"```.*?```", "", text, flags=re.S))
    italic = re.findall(r"(?<![*\w])\*([^*\n]+)\*(?!\*)", prose)
    assert italic and {w.lower() for w in italic} <= terms, f"{lab.name}: {italic}"


def _modules(lab: Path) -> list[str]:
    return sorted(set(re.findall(r"docs/labs/writing/start/(\w+)\.tla", lab.read_text())))


def _hunks(a: Path, b: Path) -> int:
    old, new = a.read_text().splitlines(), b.read_text().splitlines()
    ops = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    return sum(1 for tag, *_ in ops if tag != "equal")


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_start_and_mutant_are_the_solution_with_the_changes_the_lab_says(lab: Path) -> None:
    (module,) = _modules(lab)
    solution = WRITING / "solutions" / f"{module}.tla"
    start, mutant = WRITING / "start" / f"{module}.tla", WRITING / "mutants" / f"{module}.tla"
    gaps = re.findall(r"^\s*\\\* \((\d)\) ", start.read_text(), re.M)
    assert gaps == [str(k) for k in range(1, len(gaps) + 1)] and gaps, gaps
    assert _hunks(solution, start) == len(gaps), f"{start.name}: one change per numbered gap"
    assert _hunks(solution, mutant) == 1, f"{mutant.name}: the mutant changes one thing"
    assert (WRITING / "mutants" / f"{module}.cfg").read_text() == (
        WRITING / "solutions" / f"{module}.cfg"
    ).read_text()
    for spec in (start, solution, mutant):
        assert 20 <= len(spec.read_text().splitlines()) <= 50, f"{spec}: 20-50 lines to read"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_the_folded_answer_is_the_solution(lab: Path) -> None:
    """Every code line of the lab's folded answer is a line of its solutions/ file."""
    (module,) = _modules(lab)
    files = [WRITING / "solutions" / f"{module}{suffix}" for suffix in (".tla", ".cfg")]
    solution = {ln.strip() for f in files for ln in f.read_text().splitlines()}
    folds = re.findall(r'<details markdown="1">\n<summary>(.*?)</summary>\n(.*?)</details>',
                       lab.read_text(), re.S)  # fmt: skip
    assert folds, f"{lab.name}: no folded answer"
    code = [b for _, body in folds for b in re.findall(r"```tla\n(.*?)```", body, re.S)]
    assert code, f"{lab.name}: the folded answer shows no TLA+"
    for line in (ln.strip() for b in code for ln in b.splitlines() if ln.strip()):
        assert line in solution, f"{lab.name}: {line!r} is not in solutions/{module}.tla"


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_the_prose_quotes_only_what_is_shown(lab: Path) -> None:
    """A verdict or a trace length the prose quotes (the "Before you start" box) is one
    that a ``text`` block shows, which the run above checks against the tools."""
    text = lab.read_text(encoding="utf-8")
    shown = "\n".join(t for _, _, t in _lab_parts(text) if t)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    quotes = re.findall(r"\w+ \(\d+ distinct states|· \d+ states", prose)
    assert quotes, f"{lab.name}: the box quotes no verdict"
    for quote in quotes:
        assert quote in shown, f"{lab.name}: the prose quotes {quote!r}, no output shows it"
