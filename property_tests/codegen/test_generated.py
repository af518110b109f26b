"""Every generated file and block is what its source gives now (the one drift test).

``ostrom.codegen.registry.REGISTRY`` is the table of everything in the repository that is made
from a single source. Here:

* each entry (but the slow kill matrix, which test_kill_matrix.py checks with the run of the
  matrix it makes anyway) renders to exactly the committed file or block;
* the table covers every generated block of the repository (a ``BEGIN generated:`` marker no
  entry writes would be a copy nobody regenerates), and each entry's file exists;
* ``ostrom docs --check`` on a copy of the tree where one generated block or file was edited by
  hand exits 1 naming that file and writes nothing; ``ostrom docs`` then restores it;
* hostile input (a file that is not UTF-8, a directory where a file should be, a block whose
  markers are gone) is one ``error:`` line, exit 2, nothing written;
* the parameter table's model column: a constant of spec/Lifecycle.tla without a model value,
  or a model value without its constant, is refused by name.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ostrom import layout
from ostrom.cli.main import main
from ostrom.codegen import params_docs
from ostrom.codegen.registry import REGISTRY, Generated, by_name
from ostrom.protocol.params import table

ROOT = layout.ROOT
#: The folders of the tree ``ostrom docs`` reads or writes (the copy of the tree the tests
#: edit); ``reference/`` only has to exist there (the sources are the installed package).
TREE = ("docs", "spec", "models", "schema", "drivers", "examples", "vectors", "evaluation")
#: ... and the files at its top that hold a generated block (README.md: pbft-faults)
TOP_FILES = ("README.md",)
#: A generated block's opening marker, in any of the comments the registry uses.
_MARKER = re.compile(r"(?:<!-- |// |\\\* )BEGIN generated: ([\w-]+)")
#: The kinds of file that can hold a generated block.
_TEXT = {".md", ".js", ".cfg", ".tla", ".toml", ".json"}


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _fast(entry: Generated) -> bool:
    return not entry.slow


@pytest.mark.parametrize("entry", [e for e in REGISTRY if _fast(e)], ids=lambda e: e.name)
def test_generated_file_is_current(entry: Generated) -> None:
    if entry.needs is not None and shutil.which(entry.needs) is None:
        pytest.skip(f"{entry.name} needs {entry.needs} (make generate installs it)")
    stale = [
        str(path.relative_to(ROOT))
        for path, text in entry.outputs(ROOT, _read).items()
        if not path.is_file() or _read(path) != text
    ]
    assert not stale, f"{entry.target} is stale ({stale}): run `make generate`"


def test_the_slow_entries_are_checked_where_they_run() -> None:
    # the kill matrix's drift is test_kill_matrix.py's (one run of every mutant driver)
    assert [e.name for e in REGISTRY if e.slow] == ["kill-matrix"]
    kill = (ROOT / "property_tests" / "conformance" / "test_kill_matrix.py").read_text()
    assert 'by_name("kill-matrix")' in kill


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [ROOT / p for p in out.split("\0") if p]


def test_every_generated_block_is_registered() -> None:
    registered = {(e.path, e.block) for e in REGISTRY if e.block is not None}
    found = set()
    for path in _tracked():
        if path.suffix not in _TEXT or not path.is_file():
            continue
        for m in _MARKER.finditer(_read(path)):
            found.add((str(path.relative_to(ROOT)), m.group(1)))
    assert found == registered, (
        f"blocks no entry writes: {sorted(found - registered)}; "
        f"entries whose block is missing: {sorted(registered - found)}"
    )


def test_every_entry_names_existing_files_once() -> None:
    names = [e.name for e in REGISTRY]
    assert len(names) == len(set(names))
    targets = [(e.path, e.block) for e in REGISTRY]
    assert len(targets) == len(set(targets))
    for entry in REGISTRY:
        for pattern in entry.path.split(", "):
            assert sorted(ROOT.glob(pattern)), f"{entry.name}: no file {pattern}"
        assert entry.source and (entry.make is None) != (entry.family is None), entry.name


# --- ostrom docs on a copy of the tree -------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for top in TREE:
        shutil.copytree(ROOT / top, root / top)
    for name in TOP_FILES:
        shutil.copy(ROOT / name, root / name)
    (root / "reference").mkdir()
    return root


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def docs(root: Path, *args: str) -> Result:
    r = CliRunner().invoke(main, ["docs", "--no-svg", "--root", str(root), *args])
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    return r


def _edit_to(path: Path, out: Path, old: str, new: str) -> None:
    """``out`` := ``path`` with the first ``old`` replaced by ``new``."""
    text = _read(path)
    assert old in text, (path, old)
    out.write_text(text.replace(old, new, 1), encoding="utf-8")


def _edit(path: Path, old: str, new: str) -> None:
    _edit_to(path, path, old, new)


#: (file, text in it, what a hand edit makes of it): a block in Markdown, in a TLA+ cfg, in
#: JavaScript; a whole generated file; a file of a family (a trace's text chart).
HAND_EDITS = [
    ("docs/cli.md", "| 2 | bad input", "| 2 | wrong input"),
    ("docs/rules.md", "| `quorum` | 3 |", "| `quorum` | 4 |"),
    ("models/MCLifecycle_ci.cfg", "    Reviewers = 2\n", "    Reviewers = 3\n"),
    ("docs/checking.md", "| `lifecycle-no-supersede` |", "| `lifecycle-no-supersedes` |"),
    ("drivers/js/params.js", "  quorum: ['int', 3,", "  quorum: ['int', 4,"),
    ("spec/LifecycleTable.tla", '"new", "proposed">>', '"new", "active">>'),
    ("docs/counterexamples/drop-own-view-change.txt", "r0", "r9"),
]


def test_check_names_each_hand_edited_file_and_writes_nothing(tree: Path) -> None:
    # Every kind of hand edit at once: a render of the registry costs seconds, and the
    # check must name exactly the files edited, each once, whatever else is stale.
    assert docs(tree, "--check").exit_code == 0
    for rel, old, new in HAND_EDITS:
        _edit(tree / rel, old, new)
    before = _files(tree)
    r = docs(tree, "--check")
    assert r.exit_code == 1, r.output
    named = re.findall(r"^stale (\S+)$", r.output, re.M)
    assert sorted(named) == sorted(rel for rel, _, _ in HAND_EDITS), r.output
    assert _files(tree) == before, "--check wrote"
    r = docs(tree)
    assert r.exit_code == 0, r.output
    for rel, _, _ in HAND_EDITS:
        assert f"updated {rel}" in r.output, r.output
        assert _read(tree / rel) == _read(ROOT / rel)


def test_a_deleted_generated_file_is_stale_and_recreated(tree: Path) -> None:
    (tree / "schema" / "openapi.json").unlink()
    r = docs(tree, "--check")
    assert r.exit_code == 1 and "stale schema/openapi.json" in r.output, r.output
    assert not (tree / "schema" / "openapi.json").exists()
    assert docs(tree).exit_code == 0
    assert _read(tree / "schema" / "openapi.json") == _read(ROOT / "schema" / "openapi.json")


def _one_error_line(r: Result) -> str:
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    return lines[0]


def _not_utf8(p: Path) -> None:
    p.write_bytes(b"# lifecycle\n\xff\xfe\n")


def _a_directory(p: Path) -> None:
    p.unlink()
    p.mkdir()


def _no_markers(p: Path) -> None:
    p.write_text(re.sub(r"<!-- (BEGIN|END) generated: params -->\n", "", _read(p)))


#: Hostile versions of a file with a generated block, and what the error line says.
HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "not UTF-8": (_not_utf8, "cannot read"),
    "a directory": (_a_directory, "cannot read"),
    "no markers": (_no_markers, "no generated block 'params'"),
}


@pytest.mark.parametrize("what", HOSTILE)
def test_a_hostile_file_is_one_line_and_nothing_is_written(tree: Path, what: str) -> None:
    # another generated file is stale too: that nothing at all is written must be visible
    _edit(tree / "docs" / "cli.md", "| 2 | bad input", "| 2 | wrong input")
    spoil, says = HOSTILE[what]
    spoil(tree / "docs" / "lifecycle.md")
    before = _files(tree)
    for args in ((), ("--check",)):
        line = _one_error_line(docs(tree, *args))
        assert "docs/lifecycle.md" in line and says in line, line
        assert _files(tree) == before, f"{what}: something was written"


def test_a_wrong_root_is_refused(tmp_path: Path) -> None:
    line = _one_error_line(docs(tmp_path))
    assert "not an ostrom source tree" in line
    assert list(tmp_path.iterdir()) == []


def test_help_and_list_explain_the_registry() -> None:
    r = CliRunner().invoke(main, ["docs", "--help"])
    assert r.exit_code == 0
    assert "ostrom.codegen.registry.REGISTRY" in r.output and "--check" in r.output
    r = CliRunner().invoke(main, ["docs", "--list"])
    assert r.exit_code == 0
    for entry in REGISTRY:
        assert entry.name in r.output and entry.target in r.output


# --- the parameter table's model column -------------------------------------------------------


def test_a_constant_without_a_model_value_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = ROOT / "spec" / "Lifecycle.tla"
    # a row whose constant the spec no longer declares
    renamed = tmp_path / "Lifecycle.tla"
    _edit_to(spec, renamed, "MaxResubmit, Cooldown\n", "MaxResubmit\n")
    with pytest.raises(ValueError, match=r"but no constant in Lifecycle\.tla: cooldown"):
        params_docs.model_constants(renamed)
    # a row of a declared constant without a model value (a new parameter, say)
    rows = [dataclasses.replace(p, model=None, why="") if p.name == "cooldown" else p
            for p in table()]  # fmt: skip
    monkeypatch.setattr(params_docs, "table", lambda: rows)
    with pytest.raises(ValueError, match="no model value for cooldown"):
        params_docs.model_constants(spec)
    # the block's values are the rows' model values, in the spec's units
    monkeypatch.undo()
    block = params_docs.model_constants(spec)
    assert "    TauAccept = 60\n" in block and "    Reviewers = 2\n" in block
    assert by_name("model-params").path == "models/MCLifecycle_ci.cfg"
