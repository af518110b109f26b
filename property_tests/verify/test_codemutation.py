"""Code mutation's own parts: target files, the reading of mutmut's report, the scores file,
the cheapest-files-first plugin and the command line.

A typo in a target file must never drop a test file or accept a mutant silently, a
mutant's line must be the line it changes, an accepted equivalent whose id now names
another edit must not be accepted, and hostile input must end as a documented exit code.
The runs themselves (mutmut on the real modules) are test_mutate_code_gate.py's.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ostrom import children, layout
from ostrom.cli.main import main
from ostrom.verify.codemutation import fastfirst
from ostrom.verify.codemutation import run as run_mod
from ostrom.verify.codemutation.report import (
    MutantResult,
    TargetReport,
    change_of,
    classify,
    line_of,
    verdict_of,
)
from ostrom.verify.codemutation.run import NoSuchMutant, mutant_ids, sample_of
from ostrom.verify.codemutation.scores import (
    ScoresError,
    load_scores,
    record_score,
    scores_table,
)
from ostrom.verify.codemutation.target import (
    TargetError,
    load_target,
    load_targets,
    target_names,
)
from ostrom.verify.codemutation.workspace import (
    WorkspaceChanged,
    build_workspace,
    check_resumable,
    mutmut_table,
    tree_fingerprint,
)

#: the modules the issue holds to 85%: the protocol core and the PBFT replica
CORE = {
    "orchestrator": "protocol/orchestrator.py",
    "lifecycle": "protocol/lifecycle.py",
    "voting": "protocol/voting.py",
    "forgetting": "protocol/forgetting.py",
    "reputation": "protocol/reputation.py",
    "sanctions": "protocol/sanctions.py",
    "community": "protocol/community.py",
    "replica": "consensus/replica/",
}

VOTING = "ostrom.protocol.voting"  # the module of the voting target, mutmut's id prefix

GOOD = """
[target]
source = "protocol/voting.py"
tests = [
    "property_tests/protocol/test_voting.py",
    "property_tests/protocol/test_orchestrator_unit.py",
]
ci_tests = ["property_tests/protocol/test_voting.py"]
goal = 0.85
sample = 12
seed = 3

[[equivalent]]
id = "ostrom.protocol.voting.x_review_verdict__mutmut_1"
change = "return a -> return None"
reason = "f's result is never read"
"""


def _write(tmp_path: Path, text: str, name: str = "t") -> Path:
    (tmp_path / f"{name}.toml").write_text(text, encoding="utf-8")
    return tmp_path


# --- target files -------------------------------------------------------------------------


def test_a_good_file_gives_its_target(tmp_path: Path) -> None:
    t = load_target("t", _write(tmp_path, GOOD))
    assert t.source == "protocol/voting.py" and t.module == "ostrom.protocol.voting"
    assert t.tests == (
        "property_tests/protocol/test_voting.py",
        "property_tests/protocol/test_orchestrator_unit.py",
    )
    assert (t.goal, t.sample, t.seed) == (0.85, 12, 3)
    assert t.gate().tests == ("property_tests/protocol/test_voting.py",)
    (eq,) = t.equivalents
    assert (eq.change, eq.reason) == ("return a -> return None", "f's result is never read")
    assert target_names(tmp_path) == ["t"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("goal = 0.85", "goal = 1.5"), "goal must be at most 1"),
        (("goal = 0.85", "goal = true"), "goal must be a number"),
        (("sample = 12", "sample = 0"), "sample must be at least 1"),
        (("sample = 12", "sample = 1.5"), "sample must be an integer"),
        (("seed = 3", "sede = 3"), "unknown key 'sede'"),
        (("voting.py\"", "nope.py\""), "does not exist"),
        (("voting.py\"", "voting.txt\""), "must be a .py path"),
        (('source = "protocol/voting.py"', 'source = "protocol/nope/"'), "is no folder"),
        (('source = "protocol/voting.py"', 'source = "protocol"'), "or a folder ending in /"),
        (('source = "protocol/voting.py"', 'source = "/"'), "or a folder ending in /"),
        # it exists, but by a way out of reference/ostrom and back: refused all the same
        (('source = "protocol/voting.py"', 'source = "../ostrom/protocol/voting.py"'),
         "or a folder ending in /"),
        (
            ("protocol/test_voting.py\",\n", "protocol/test_nope.py\",\n"),
            "test_nope.py does not exist",
        ),
        (
            ('ci_tests = ["property_tests/protocol/test_voting.py"]', "ci_tests = []"),
            "ci_tests must be",
        ),
        (
            ('ci_tests = ["property_tests/protocol/test_voting.py"]',
             'ci_tests = ["property_tests/protocol/test_params.py"]'),
            "which tests does not",
        ),
        (("reason = \"f's result is never read\"", 'reason = ""'), "reason must be a non-empty"),
        (("[[equivalent]]", "[[equivalents]]"), "unknown key 'equivalents'"),
    ],
)  # fmt: skip
def test_a_malformed_file_is_an_error_naming_the_field(
    tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    assert edit[0] in GOOD
    with pytest.raises(TargetError, match=message):
        load_target("t", _write(tmp_path, GOOD.replace(edit[0], edit[1])))


def test_an_equivalent_accepted_twice_and_a_missing_target_are_errors(tmp_path: Path) -> None:
    twice = GOOD + GOOD[GOOD.index("[[equivalent]]") :]
    with pytest.raises(TargetError, match="duplicate id"):
        load_target("t", _write(tmp_path, twice))
    with pytest.raises(TargetError, match=r"no code-mutation target 'x' \(the targets: t\)"):
        load_target("x", tmp_path)


@given(
    key=st.sampled_from(["source", "tests", "ci_tests", "goal", "sample", "seed",
                         "timeout_multiplier", "timeout_constant"]),
    value=st.one_of(
        st.integers(-(2**70), 2**70), st.floats(), st.booleans(), st.text(max_size=20),
        st.lists(st.text(max_size=10), max_size=3),
    ),
)  # fmt: skip
def test_hostile_values_are_target_errors_or_valid(key: str, value: Any) -> None:
    import tempfile

    base = GOOD.split("[[equivalent]]")[0]
    lines = [ln for ln in base.splitlines() if not ln.startswith(f"{key} =")]
    text = "\n".join(lines) + f"\n{key} = {json.dumps(value)}\n"
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "t.toml").write_text(text, encoding="utf-8")
        with contextlib.suppress(TargetError):  # anything else fails the test
            load_target("t", Path(d))


def test_the_issue_modules_have_targets_that_load_with_the_goal() -> None:
    targets = {t.name: t for t in load_targets()}
    for name, source in CORE.items():
        assert name in targets, f"no target file models/mutation/code/{name}.toml"
        assert targets[name].source == source
        goal = targets[name].goal
        assert goal is not None and goal >= 0.85


#: the small package of the trees below, as mutmut names its modules and as the reports
#: name its files (built from parts: the repository's reference check would look for it)
PKG = ".".join(("ostrom", "pkg"))
PKG_FILES = "/".join(("reference", "ostrom", "pkg"))


def _package_tree(root: Path, files: dict[str, str]) -> Path:
    """A small repository whose reference/ostrom holds ``files``, with GOOD's test files."""
    for rel, text in {
        "pyproject.toml": "[project]\nname = 'x'\n",
        "property_tests/protocol/test_voting.py": "def test_a() -> None: ...\n",
        "property_tests/protocol/test_orchestrator_unit.py": "def test_b() -> None: ...\n",
        **{f"reference/ostrom/{k}": v for k, v in files.items()},
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_a_folder_source_is_every_module_of_the_package(tmp_path: Path) -> None:
    """A package split into modules is one target: every .py file under the folder,
    sorted, caches left out; a folder without one is an error, not an empty run."""
    tree = _package_tree(
        tmp_path / "repo",
        {
            "pkg/__init__.py": "",
            "pkg/b.py": "B = 1\n",
            "pkg/a.py": "A = 1\n",
            "pkg/sub/c.py": "C = 1\n",
            "pkg/__pycache__/a.py": "",
            "empty/notes.txt": "",
        },
    )
    text = GOOD.split("[[equivalent]]")[0].replace('"protocol/voting.py"', '"pkg/"')
    t = load_target("t", _write(tmp_path, text), root=tree)
    assert (t.source, t.module, t.is_package) == ("pkg/", PKG, True)
    assert t.files == ("pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/sub/c.py")
    assert (t.file_of(PKG), t.file_of(f"{PKG}.sub.c")) == (
        "pkg/__init__.py",
        "pkg/sub/c.py",
    )
    assert t.file_of(f"{PKG}.z") is None
    with pytest.raises(TargetError, match=r"has no \.py file"):
        load_target("t", _write(tmp_path, text.replace('"pkg/"', '"empty/"')), root=tree)
    one = load_target("voting")
    assert (one.files, one.is_package) == (("protocol/voting.py",), False)


def test_the_replica_target_is_its_package() -> None:
    """The PBFT replica is a package with a module per section of spec/PBFTReplica.tla:
    its target mutates all of them, and the workspace's mutmut table names each."""
    t = load_target("replica")
    modules = sorted((layout.ROOT / "reference" / "ostrom" / "consensus" / "replica").glob("*.py"))
    assert t.files == tuple(f"consensus/replica/{m.name}" for m in modules)
    assert {"consensus/replica/normal.py", "consensus/replica/view_change.py"} <= set(t.files)
    table = mutmut_table(t, [])
    assert "only_mutate = [" + ", ".join(f'"src/ostrom/{f}"' for f in t.files) + "]" in table


def test_the_workspace_is_a_copy_with_the_mutmut_table(tmp_path: Path) -> None:
    t = load_target("voting")
    work = build_workspace(t, root=tmp_path)
    assert (work / "src" / "ostrom" / "protocol" / "voting.py").read_bytes() == (
        layout.ROOT / "reference" / "ostrom" / "protocol" / "voting.py"
    ).read_bytes()
    assert not (work / ".git").exists() and not (work / "reference").exists()
    text = (work / "pyproject.toml").read_text(encoding="utf-8")
    assert text.endswith(mutmut_table(t, json.loads(text.split("also_copy = ")[1].split("\n")[0])))
    assert 'only_mutate = ["src/ostrom/protocol/voting.py"]' in text
    assert "ostrom.verify.codemutation.fastfirst" in text
    # a second build starts from scratch: no verdict of an earlier run survives
    (work / "mutants").mkdir()
    assert not (build_workspace(t, root=tmp_path) / "mutants").exists()


#: a cache file in the small tree (not copied, so not fingerprinted); a path built from
#: parts, so the repository's reference check does not look for it here
_CACHE = str(Path("reference", "ostrom", "__pycache__", "x.pyc"))


def _tree(root: Path) -> Path:
    """A small repository: what a workspace copies, and the scores file runs rewrite."""
    for rel, text in {
        "pyproject.toml": "[project]\nname = 'x'\n",
        "reference/ostrom/protocol/voting.py": "A = 1\n",
        "property_tests/protocol/test_voting.py": "def test_a() -> None: ...\n",
        "models/mutation/code/scores.json": "{}\n",
        _CACHE: "cache",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_a_full_run_resumes_only_on_the_tree_it_started_on(tmp_path: Path) -> None:
    """A resumed run keeps its workspace (mutmut's verdicts so far) when the tree is the
    same, the recorded scores and caches apart; any other change refuses the resume and
    removes nothing; a run that was never started cannot be resumed."""
    t = load_target("voting")
    src, root = _tree(tmp_path / "src"), tmp_path / "ws"
    with pytest.raises(WorkspaceChanged, match="no run of voting to resume"):
        build_workspace(t, root=root, source=src, resume=True)
    work = build_workspace(t, root=root, source=src)
    (work / "mutants").mkdir()
    (work / "mutants" / "verdicts").write_text("kept", encoding="utf-8")
    (src / "models/mutation/code/scores.json").write_text('{"voting": {}}\n', encoding="utf-8")
    (src / _CACHE).write_text("other cache", encoding="utf-8")
    assert build_workspace(t, root=root, source=src, resume=True) == work
    assert (work / "mutants" / "verdicts").read_text(encoding="utf-8") == "kept"
    for rel in ("property_tests/protocol/test_voting.py", "reference/ostrom/protocol/voting.py"):
        before = (src / rel).read_text(encoding="utf-8")
        (src / rel).write_text(before + "# changed\n", encoding="utf-8")
        with pytest.raises(WorkspaceChanged, match="the tree has changed"):
            check_resumable(t, root, src)
        assert (work / "mutants" / "verdicts").exists()  # nothing removed
        (src / rel).write_text(before, encoding="utf-8")
        check_resumable(t, root, src)
    (src / "property_tests" / "test_new.py").write_text("", encoding="utf-8")  # a new file
    with pytest.raises(WorkspaceChanged, match="the tree has changed"):
        check_resumable(t, root, src)
    # without resume: a fresh copy, the old verdicts gone
    assert not (build_workspace(t, root=root, source=src) / "mutants").exists()


def test_the_fingerprint_names_paths_and_contents(tmp_path: Path) -> None:
    """Moving a file's content to another path changes the fingerprint too."""
    src = _tree(tmp_path)
    before = tree_fingerprint(src)
    (src / "property_tests/protocol/test_voting.py").rename(
        src / "property_tests" / "test_other.py"
    )
    assert tree_fingerprint(src) != before


@given(st.binary(max_size=40))
def test_a_resumed_runs_earlier_time_is_read_from_any_bytes(data: bytes) -> None:
    """The time of the earlier parts is a file in the workspace: whatever it holds, a
    finite number of seconds >= 0 comes out (0 if it is not one)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "elapsed"
        path.write_bytes(data)
        seconds = run_mod._earlier_seconds(path)
    assert seconds >= 0.0 and seconds != float("inf")
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        value = float(data.decode("utf-8"))
        if 0.0 <= value < float("inf"):
            assert seconds == value


def test_each_verdict_is_reported_once_and_progress_every_tenth(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """mutmut's spinner repeats its counter many times a second: the run's time is kept
    once per new verdict (so an interrupted run loses at most the time since its last
    one), and a progress line is printed at each tenth of the mutants."""
    spinner = "".join(
        f"\r{n}/20  \U0001f389 {n} \U0001fae5 0  \u23f0 0" for n in (0, 0, 1, 1, 1, 2, 5, 5, 20)
    )
    fake = [
        sys.executable,
        "-c",
        f"import sys; sys.stdout.write({spinner!r}); sys.stdout.write('\\n')",
    ]
    real_spawn = children.spawn
    monkeypatch.setattr(children, "spawn", lambda cmd, **kw: real_spawn(fake, **kw))
    verdicts: list[int] = []
    lines: list[str] = []
    run_mod._mutmut_run(
        tmp_path, [], 2, lines.append, "t", 20, resumed=True, on_verdict=lambda: verdicts.append(1)
    )
    assert len(verdicts) == 5  # 0, 1, 2, 5, 20: each new count once
    assert lines == [
        "t: 0/20 mutants tested",
        "t: 2/20 mutants tested",
        "t: 5/20 mutants tested",
        "t: 20/20 mutants tested",
    ]


def test_resume_is_for_full_runs_only() -> None:
    with pytest.raises(ValueError, match="only a full run is resumed"):
        run_mod.run_target(load_target("voting"), sample=3, seed=1, resume=True)


# --- reading mutmut's report -----------------------------------------------------------

SOURCE = '''\
"""module"""


def tally(a: int, b: int) -> int:
    # the sum
    if a > b:
        return a - b
    return a + b


class Ballot:
    @property
    def size(self) -> int:
        n = 0
        n = 0
        return n

    def _count(self, x: int) -> bool:
        return x >= 3
'''

DIFF_FN = """\
--- src/ostrom/m.py
+++ src/ostrom/m.py
@@ -1,6 +1,6 @@
 def tally(a: int, b: int) -> int:
     # the sum
-    if a > b:
+    if a >= b:
         return a - b
     return a + b"""

DIFF_METHOD = """\
--- src/ostrom/m.py
+++ src/ostrom/m.py
@@ -2,4 +2,4 @@
 def size(self) -> int:
     n = 0
-    n = 0
+    n = 1
     return n"""

DIFF_PRIVATE = """\
--- src/ostrom/m.py
+++ src/ostrom/m.py
@@ -1,2 +1,2 @@
 def _count(self, x: int) -> bool:
-    return x >= 3
+    return x >= 4"""


def test_a_mutant_is_located_at_the_line_it_changes() -> None:
    assert line_of(SOURCE, "pkg.m.x_tally__mutmut_3", DIFF_FN) == 6
    # the second of two identical lines, in a decorated method
    assert line_of(SOURCE, "pkg.m.xǁBallotǁsize__mutmut_2", DIFF_METHOD) == 15
    assert line_of(SOURCE, "pkg.m.xǁBallotǁ_count__mutmut_1", DIFF_PRIVATE) == 19
    assert line_of(SOURCE, "pkg.m.x_nothere__mutmut_1", DIFF_FN) is None
    assert change_of(DIFF_FN) == "if a > b: -> if a >= b:"
    assert change_of(DIFF_PRIVATE) == "return x >= 3 -> return x >= 4"


def test_mutmut_statuses_become_verdicts() -> None:
    assert [verdict_of(s) for s in ("killed", "caught by type check", "survived", "no tests",
                                    "timeout", "segfault", "suspicious", "not checked")] == [
        "killed", "killed", "survived", "no_tests", "timeout", "error", "error", "error"
    ]  # fmt: skip


def _raw(mid: str, status: str, diff: str) -> dict[str, Any]:
    return {"id": mid, "exit_code": 0, "status": status, "diff": diff, "seconds": 0.5}


def test_equivalents_apply_to_survivors_only_and_stale_ones_are_reported(tmp_path: Path) -> None:
    text = (
        GOOD.replace("x_review_verdict__mutmut_1", "x_tally__mutmut_3")
        .replace("return a -> return None", "if a > b: -> if a >= b:")
        .replace(f"{VOTING}.x_", "pkg.m.x_")
    )
    accepted = text + (
        '\n[[equivalent]]\nid = "pkg.m.xǁBallotǁ_count__mutmut_1"\n'
        'change = "return x >= 3 -> return x > 3"\nreason = "stale: the edit is another one"\n'
        '\n[[equivalent]]\nid = "pkg.m.x_gone__mutmut_1"\nchange = "a -> b"\nreason = "gone"\n'
    )
    t = load_target("t", _write(tmp_path, accepted))
    raw = [
        _raw("pkg.m.x_tally__mutmut_3", "survived", DIFF_FN),
        _raw("pkg.m.xǁBallotǁsize__mutmut_2", "killed", DIFF_METHOD),
        _raw("pkg.m.xǁBallotǁ_count__mutmut_1", "survived", DIFF_PRIVATE),
    ]
    results, stale = classify(t, {t.source: SOURCE}, raw)
    assert [r.verdict for r in results] == ["equivalent", "killed", "survived"]
    assert results[0].reason == "f's result is never read" and results[0].line == 6
    assert len(stale) == 2 and "x_gone__mutmut_1: no such mutant" in stale[1]
    assert "now 'return x >= 3 -> return x >= 4'" in stale[0]
    report = TargetReport(target=t, generated=10, seed=None, results=results, seconds=1.0)
    # (killed + timeout) / (run - equivalent): 1 / (3 - 1)
    assert report.score == 0.5 and report.kind == "full"
    sources = {t.source: SOURCE}
    hang = classify(t, sources, [*raw, _raw("pkg.m.x_tally__mutmut_9", "timeout", DIFF_FN)])[0]
    assert TargetReport(target=t, generated=10, seed=None, results=hang, seconds=1.0).score == (
        2 / 3  # a mutant that makes the tests hang is detected
    )
    assert [r.id for r in report.survivors] == ["pkg.m.xǁBallotǁ_count__mutmut_1"]
    doc = report.as_json()
    assert doc["survivors"][0]["line"] == 19 and doc["survivors"][0]["diff"] == DIFF_PRIVATE
    assert doc["counts"] == {"killed": 1, "survived": 1, "no_tests": 0, "timeout": 0,
                             "error": 0, "equivalent": 1}  # fmt: skip
    # a sample reports only the mutants it ran
    sampled, _ = classify(t, {t.source: SOURCE}, raw, {"pkg.m.xǁBallotǁsize__mutmut_2"})
    assert [r.verdict for r in sampled] == ["killed"]


DIFF_A = """\
--- src/ostrom/pkg/a.py
+++ src/ostrom/pkg/a.py
@@ -1,2 +1,2 @@
 def f(x: int) -> int:
-    return x + 1
+    return x - 1"""

DIFF_B = """\
--- src/ostrom/pkg/b.py
+++ src/ostrom/pkg/b.py
@@ -1,2 +1,2 @@
 def run(self) -> bool:
-    return self.n > 1
+    return self.n >= 1"""


def test_a_package_targets_mutants_are_located_in_their_own_modules(tmp_path: Path) -> None:
    """In a package each mutant's line is found in its own module (read from its id),
    reported with that file; the summary says file and line; an accepted equivalent is
    checked against the edit of its own module."""
    a = "\n\ndef f(x: int) -> int:\n    return x + 1\n"
    b = "class K:\n    n = 2\n\n    def run(self) -> bool:\n        return self.n > 1\n"
    tree = _package_tree(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/a.py": a, "pkg/b.py": b})
    text = (
        GOOD.replace('"protocol/voting.py"', '"pkg/"')
        .replace(f"{VOTING}.x_review_verdict__mutmut_1", f"{PKG}.b.xǁKǁrun__mutmut_2")
        .replace("return a -> return None", "return self.n > 1 -> return self.n >= 1")
    )
    t = load_target("t", _write(tmp_path, text), root=tree)
    raw = [
        _raw(f"{PKG}.a.x_f__mutmut_1", "survived", DIFF_A),
        _raw(f"{PKG}.b.xǁKǁrun__mutmut_2", "survived", DIFF_B),
    ]
    sources = {f: (tree / "reference" / "ostrom" / f).read_text(encoding="utf-8") for f in t.files}
    results, stale = classify(t, sources, raw)
    assert not stale
    assert [(r.file, r.line, r.verdict) for r in results] == [
        ("pkg/a.py", 4, "survived"),
        ("pkg/b.py", 5, "equivalent"),
    ]
    report = TargetReport(target=t, generated=2, seed=None, results=results, seconds=1.0)
    assert report.summary()["source"] == f"{PKG_FILES}/"
    assert report.summary()["survivors"] == ["a.py:4: return x + 1 -> return x - 1 (survived)"]
    assert [m["file"] for m in report.as_json()["mutants"]] == [
        f"{PKG_FILES}/a.py",
        f"{PKG_FILES}/b.py",
    ]
    # the same id accepted for another edit of its module is stale, not accepted
    moved = text.replace("return self.n >= 1", "return self.n > 2")
    t2 = load_target("t", _write(tmp_path, moved), root=tree)
    results2, stale2 = classify(t2, sources, raw)
    assert [r.verdict for r in results2] == ["survived", "survived"] and len(stale2) == 1


def test_only_names_a_mutant_by_its_full_relative_or_last_id() -> None:
    t = load_target("replica")
    names = [
        "ostrom.consensus.replica.normal.xǁNormalCaseǁ_body__mutmut_1",
        "ostrom.consensus.replica.helpers.x_quorum__mutmut_1",
        "ostrom.consensus.replica.app.xǁCounterAppǁexecute__mutmut_1",
        "ostrom.consensus.replica.app.xǁAppǁexecute__mutmut_1",
        f"{t.module}.other.xǁCounterAppǁexecute__mutmut_1",  # a module of another name
    ]
    assert mutant_ids(t, names, [names[0], "helpers.x_quorum__mutmut_1"]) == set(names[:2])
    assert mutant_ids(t, names, ["xǁNormalCaseǁ_body__mutmut_1"]) == {names[0]}
    assert mutant_ids(t, names, ["xǁAppǁexecute__mutmut_1"]) == {names[3]}
    with pytest.raises(NoSuchMutant, match="has several mutants 'xǁCounterAppǁexecute"):
        mutant_ids(t, names, ["xǁCounterAppǁexecute__mutmut_1"])
    with pytest.raises(NoSuchMutant, match="has no mutant 'x_nope__mutmut_1'"):
        mutant_ids(t, names, ["x_nope__mutmut_1"])


@given(names=st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=40),
       size=st.integers(1, 50), seed=st.integers(0, 2**31))  # fmt: skip
def test_a_sample_is_a_seeded_subset_of_the_size_asked(
    names: list[str], size: int, seed: int
) -> None:
    s = sample_of(names, size, seed)
    assert s == sample_of(list(reversed(names)), size, seed)  # the order given does not matter
    assert len(s) == min(size, len(names)) and set(s) <= set(names) and s == sorted(s)


# --- scores -------------------------------------------------------------------------------


def test_scores_round_trip_and_malformed_files_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "scores.json"
    assert load_scores(path) == {}
    summary = {"source": "reference/ostrom/protocol/voting.py", "generated": 224, "sampled": 30,
               "seed": 1, "counts": {"killed": 28}, "score": 0.9333, "seconds": 50,
               "survivors": []}  # fmt: skip
    record_score("voting", "sample", summary, path)
    assert load_scores(path) == {"voting": {"sample": summary}}
    # source code as it is written: a record does not re-encode another target's survivors
    other = dict(summary, survivors=["133: a α + β -> a α - β (survived)"])
    record_score("reputation", "full", other, path)
    assert "a α + β -> a α - β" in path.read_text(encoding="utf-8")
    assert load_scores(path)["reputation"]["full"] == other
    assert "| `reference/ostrom/protocol/voting.py` | sample | 30 of 224 (seed 1) | 28 |" in (
        scores_table(load_scores(path))
    )
    for bad in ('{"voting": {"deep": {}}}', '{"voting": {"full": {"score": 2}}}',
                '{"voting": {"full": {"score": 0.5, "generated": -1, "sampled": 1}}}',
                '[]', '{"voting": 3}', "{"):  # fmt: skip
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(ScoresError):
            load_scores(path)


# --- the plugin and mutmut's internals ---------------------------------------------------------


class _Item:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def test_fastfirst_orders_files_by_measured_duration_and_keeps_each_files_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ("m.py::machine", "m.py::witness", "u.py::slow", "u.py::fast", "n.py::new", "d.py::x")
    items = [_Item(n) for n in names]
    monkeypatch.chdir(tmp_path)
    fastfirst.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert tuple(i.nodeid for i in items) == names  # no stats: as collected
    durations = {
        "m.py::machine": 30.0,
        "m.py::witness": 0.001,  # reads what the machine counted: must stay after it
        "u.py::slow": 2,
        "u.py::fast": 0.1,
        "d.py::x": 0.5,
    }
    stats = {"duration_by_test": durations}
    (tmp_path / "mutmut-stats.json").write_text(json.dumps(stats), encoding="utf-8")
    fastfirst.pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "d.py::x",  # mean 0.5
        "u.py::slow",  # mean 1.05, written first
        "u.py::fast",
        "m.py::machine",  # mean 15
        "m.py::witness",
        "n.py::new",  # never measured: last
    ]


_WITNESS_FILE = """
COUNT = []

def test_machine():
    COUNT.append(1)

def test_machine_reached():
    assert COUNT, "ran before the machine"
"""


def test_a_resumed_run_keeps_a_witness_after_its_machine(tmp_path: Path) -> None:
    """What broke a resume: with every duration known (mutmut-stats.json is written by the
    first run), a witness test that reads a counter its file's machine filled must still
    run after the machine, in a real pytest run with the plugin loaded."""
    (tmp_path / "test_other.py").write_text("def test_quick():\n    pass\n", encoding="utf-8")
    (tmp_path / "test_machine.py").write_text(_WITNESS_FILE, encoding="utf-8")
    durations = {
        "test_machine.py::test_machine": 5.0,
        "test_machine.py::test_machine_reached": 0.0001,
        "test_other.py::test_quick": 0.01,
    }
    stats = {"duration_by_test": durations}
    (tmp_path / "mutmut-stats.json").write_text(json.dumps(stats), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}
    args = [sys.executable, "-m", "pytest", "-p", "ostrom.verify.codemutation.fastfirst"]
    args += ["-p", "no:cacheprovider", "-x", "-v", "test_machine.py", "test_other.py"]
    done = subprocess.run(args, cwd=tmp_path, env=env, timeout=120, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    ran = [line.split(" ")[0] for line in done.stdout.splitlines() if " PASSED" in line]
    assert ran == [
        "test_other.py::test_quick",
        "test_machine.py::test_machine",
        "test_machine.py::test_machine_reached",
    ]


def test_the_driver_generates_and_reports_with_this_mutmut(tmp_path: Path) -> None:
    """mutmut_driver.py calls mutmut's internals: an upgrade that moves one fails here."""
    from ostrom.verify.codemutation.run import _driver

    work = build_workspace(load_target("voting"), root=tmp_path)
    names = _driver(work, "generate")
    assert len(names) > 100 and all(n.startswith(f"{VOTING}.x") for n in names)
    report = _driver(work, "report")
    assert sorted(r["id"] for r in report) == names
    assert {r["status"] for r in report} == {"not checked"}  # generated, none run yet
    assert all(r["diff"].startswith("--- src/ostrom/protocol/voting.py") for r in report)


def test_the_driver_generates_the_mutants_of_every_module_of_a_package(tmp_path: Path) -> None:
    """A folder target gives mutmut every module of the package (its only_mutate list),
    and the mutants' names say which module each is of."""
    from ostrom.verify.codemutation.run import _driver

    a = "def f(x: int) -> int:\n    return x + 1\n"
    b = "class K:\n    def run(self, n: int) -> bool:\n        return n > 1\n"
    tree = _package_tree(tmp_path / "repo", {"pkg/__init__.py": "", "pkg/a.py": a, "pkg/b.py": b})
    text = GOOD.split("[[equivalent]]")[0].replace('"protocol/voting.py"', '"pkg/"')
    t = load_target("t", _write(tmp_path, text), root=tree)
    work = build_workspace(t, root=tmp_path / "ws", source=tree)
    names = _driver(work, "generate")
    assert {n.rpartition(".")[0] for n in names} == {f"{PKG}.a", f"{PKG}.b"}
    report = _driver(work, "report")
    assert {r["diff"].splitlines()[0] for r in report} == {
        "--- src/ostrom/pkg/a.py",
        "--- src/ostrom/pkg/b.py",
    }


# --- the command line ---------------------------------------------------------------------------


def test_list_names_every_target() -> None:
    result = CliRunner().invoke(main, ["mutate-code", "--list"])
    assert result.exit_code == 0, result.output
    for name, source in CORE.items():
        assert name in result.output and f"reference/ostrom/{source}" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "no code-mutation target 'nope'"),
        (["voting", "voting", "--list"], "named twice"),
        (["--jobs", "0", "voting"], "0 is not in the range"),
        (["--jobs", "nan"], "is not a valid integer"),
        (["../voting"], "no code-mutation target"),
        (["voting", "--only", "x_nope__mutmut_1"], "voting has no mutant"),
        (["voting", "replica", "--only", "x"], "--only needs exactly one TARGET"),
        (["voting", "--only", "x", "--record"], "no --sample, --estimate, --record"),
        (["voting", "--sample", "--estimate", "3"], "different runs"),
        (["voting", "--estimate", "0"], "0 is not in the range"),
        (["voting", "--out", "/dev/null/x"], "cannot write /dev/null/x"),
        (["voting", "--resume", "--sample"], "--resume continues a full run"),
        (["voting", "--resume", "--only", "x"], "--resume continues a full run"),
        (["voting", "--resume"], "no run of voting to resume"),
    ],
)
def test_bad_input_is_exit_2_and_runs_nothing(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an unknown --only id is found after the mutants are made: in a workspace of its own,
    # not the one the gate's test may be using at the same time
    from ostrom.verify.commands import mutate_code as cli

    monkeypatch.setattr(run_mod, "WORKSPACE_ROOT", tmp_path)
    monkeypatch.setattr(cli, "WORKSPACE_ROOT", tmp_path)
    out = [] if "--out" in args else ["--out", str(tmp_path / "out")]
    result = CliRunner().invoke(main, ["mutate-code", *args, *out])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not list(tmp_path.glob("out/*.json"))  # no report: nothing ran


def test_check_without_a_recorded_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gate with nothing recorded is bad input, said before anything runs; a full run
    with nothing recorded (make check-deep before the first record) is held to the goal."""
    from ostrom.verify.codemutation.report import MutantResult
    from ostrom.verify.commands import mutate_code as cli

    called: list[str] = []

    def fake_run(target: Any, **_: Any) -> TargetReport:
        called.append(target.name)
        killed = MutantResult("m", "killed", "killed", 1, "a -> b", "")
        survived = MutantResult("n", "survived", "survived", 2, "c -> d", "")
        return TargetReport(
            target=target, generated=2, seed=None, results=[killed, survived], seconds=0.0
        )

    monkeypatch.setattr(cli, "run_target", fake_run)
    monkeypatch.setattr(cli, "load_scores", lambda: {})
    gate = CliRunner().invoke(main, ["mutate-code", "voting", "--sample", "--check"])
    assert gate.exit_code == 2 and "no recorded sample score for voting" in gate.output
    assert called == []
    full = CliRunner().invoke(main, ["mutate-code", "voting", "--check", "--out", str(tmp_path)])
    assert full.exit_code == 1 and "voting scores 50.0%, below its goal 85%" in full.output
    assert called == ["voting"] and (tmp_path / "voting.json").exists()
    assert os.environ.get("MUTANT_UNDER_TEST") is None


def test_a_score_equal_to_its_rounded_record_passes_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 of 9 is recorded as 0.8889 (4 places); the same run must not fall below it."""
    from ostrom.verify.codemutation.report import MutantResult
    from ostrom.verify.commands import mutate_code as cli

    def fake_run(target: Any, **_: Any) -> TargetReport:
        results = [MutantResult(f"m{i}", "killed", "killed", 1, "a -> b", "") for i in range(8)]
        results.append(MutantResult("n", "survived", "survived", 2, "c -> d", ""))
        return TargetReport(target=target, generated=9, seed=1, results=results, seconds=0.0)

    recorded = {"voting": {"sample": {"score": round(8 / 9, 4), "generated": 9, "sampled": 9}}}
    monkeypatch.setattr(cli, "run_target", fake_run)
    monkeypatch.setattr(cli, "load_scores", lambda: recorded)
    args = ["mutate-code", "voting", "--sample", "--check", "--out", str(tmp_path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "88.9%, at least the recorded 88.9%" in result.output


def test_the_survivor_table_shows_code_verbatim() -> None:
    """A survivor's change is source code: its ``[i]`` is an index, not rich markup
    (the table once showed ``self._artifacts[i].seq`` as ``self._artifacts.seq``)."""
    import io

    from rich.console import Console

    from ostrom.verify.commands.mutate_code import _table

    change = "key=lambda i: self._artifacts[i].seq -> key=None"
    result = MutantResult("m.x__mutmut_1", "survived", "survived", 3, change, "")
    report = TargetReport(
        target=load_target("voting"), generated=1, seed=None, results=[result], seconds=1.0
    )
    out = io.StringIO()
    Console(file=out, width=200).print(_table(report))
    assert "self._artifacts[i].seq -> key=None" in out.getvalue()
