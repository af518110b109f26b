"""``ostrom tlc SPEC CFG [-D NAME=VALUE] [-- TLC OPTIONS]``: ad hoc TLC runs.

A spec of one's own (in a directory of its own) is checked with its cfg: a violated
invariant exits 1 with its counterexample saved as ITF, which ``ostrom explain`` reads;
``-D`` changes a constant (and so the verdict) without touching the cfg; ``-simulate``,
``-depth`` and ``-dump`` reach TLC; a spec that does not parse is exit 3; an option TLC
would not get, or a malformed ``-D``, is exit 2 before TLC starts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from ostrom.cli.main import main

pytestmark = pytest.mark.tlc

SPEC = """---- MODULE Small ----
EXTENDS Naturals
CONSTANT N
VARIABLE x
Init == x = 0
Next == \\/ x < N /\\ x' = x + 1
        \\/ x = N /\\ UNCHANGED x
Small == x < 3
====
"""


def _files(tmp: Path) -> tuple[Path, Path]:
    d = tmp / "my"
    d.mkdir()
    (d / "Small.tla").write_text(SPEC)
    (d / "Small.cfg").write_text("CONSTANT N = 5\nINIT Init\nNEXT Next\nINVARIANT Small\n")
    return d / "Small.tla", d / "Small.cfg"


def _tlc(*args: str) -> Result:
    return CliRunner().invoke(main, ["tlc", *args])


def test_a_violation_is_exit_1_with_its_counterexample(tmp_path: Path) -> None:
    spec, cfg = _files(tmp_path)
    before = cfg.read_text()
    r = _tlc(str(spec), str(cfg), "--out", str(tmp_path / "cex"))
    assert r.exit_code == 1, r.output
    assert r.stdout.startswith("Small (4 distinct states")
    trace = tmp_path / "cex" / "tlc-Small.itf.json"
    explained = CliRunner().invoke(main, ["explain", str(trace)])
    assert explained.exit_code == 0 and "x: 2 -> 3" in explained.stdout
    r = _tlc(str(spec), str(cfg), "-D", "N=2", "--out", str(tmp_path / "cex"))
    assert r.exit_code == 0 and r.stdout.startswith("pass"), r.output
    assert cfg.read_text() == before  # -D changed a staged copy only


def test_tlc_options_reach_tlc(tmp_path: Path) -> None:
    spec, cfg = _files(tmp_path)
    dot = tmp_path / "states.dot"
    r = _tlc(str(spec), str(cfg), "-D", "N=2", "--", "-dump", "dot,actionlabels", str(dot))
    assert r.exit_code == 0, r.output
    assert "digraph" in dot.read_text()
    r = _tlc(str(spec), str(cfg), "--", "-simulate", "num=20", "-depth", "10")
    assert r.exit_code == 1 and r.stdout.startswith("Small"), r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--", "-bogus"], "'-bogus' is not passed"),
        (["--", "-depth", "x"], "-depth takes a whole number"),
        (["-D", "N"], "-D takes Name=Value"),
        (["-D", "1N=2"], "-D takes Name=Value"),
        (["-D", "N={1,"], "is not a TLA+ value"),
        (["--", "-dump", "/nonexistent/dir/x.dot"], "no such directory"),
    ],
)
def test_bad_options_are_refused_before_tlc(tmp_path: Path, args: list[str], message: str) -> None:
    spec, cfg = _files(tmp_path)
    r = _tlc(str(spec), str(cfg), *args)
    assert r.exit_code == 2 and message in r.output, r.output


def test_a_spec_that_does_not_parse_is_exit_3(tmp_path: Path) -> None:
    spec, cfg = _files(tmp_path)
    spec.write_text(SPEC.replace("Init == x = 0", "Init == x ="))
    r = _tlc(str(spec), str(cfg))
    assert r.exit_code == 3 and "Parse Error" in r.output, r.output
    missing = _tlc(str(tmp_path / "No.tla"), str(cfg))
    assert missing.exit_code == 2 and "not a .tla file" in missing.output


def test_a_spec_of_ones_own_is_explained_by_itself(tmp_path: Path) -> None:
    """Its actions may share names with the tree's specs (spec/Lifecycle.tla defines
    `Activate(x, ev, src, d)`): ``ostrom explain`` names the trace's steps as they are,
    never with the parameters of a same-named action of spec/ or models/ (the writing
    labs' specs, docs/labs/writing/, are such specs)."""
    d = tmp_path / "own"
    d.mkdir()
    (d / "Own.tla").write_text(
        "---- MODULE Own ----\nEXTENDS Naturals\nVARIABLE x\nInit == x = 0\n"
        "Activate == x < 2 /\\ x' = x + 1\nNext == Activate\nOwnInv == x < 2\n====\n"
    )
    (d / "Own.cfg").write_text("INIT Init\nNEXT Next\nINVARIANT OwnInv\n")
    r = _tlc(str(d / "Own.tla"), str(d / "Own.cfg"), "--out", str(tmp_path / "cex"))
    assert r.exit_code == 1, r.output
    explained = CliRunner().invoke(main, ["explain", str(tmp_path / "cex" / "tlc-Own.itf.json")])
    assert explained.exit_code == 0, explained.output
    assert "Activate " in explained.stdout and "Activate(" not in explained.stdout
