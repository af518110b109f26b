"""``ostrom mcp`` and ``ostrom serve --demo`` from the shell: bad arguments and files are
one line and exit 2, with nothing created; the demo's directory is written once and read
again (the end-to-end runs are property_tests/agent/)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ostrom.cli.agent import mcp
from ostrom.cli.demo import DEMO_FOUNDERS, DemoError, connect_text, prepare
from ostrom.service.founders import load_founders
from ostrom.service.identity import load_key, public_hex


def test_mcp_refuses_bad_arguments_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.key").write_text("not hex\n")
    good = tmp_path / "good.key"
    good.write_text("ab" * 32 + "\n")
    good.chmod(0o600)
    (tmp_path / "ballots.json").write_text('{"agent": "someone else", "ballots": {}}')
    for args in (
        ["--agent", "a", "--key", str(tmp_path / "missing.key")],
        ["--agent", "a", "--key", str(tmp_path / "bad.key")],
        ["--agent", "", "--key", str(good)],
        ["--agent", "a", "--key", str(good), "--url", "ftp://x"],
        ["--agent", "a", "--key", str(good), "--ballots", str(tmp_path / "ballots.json")],
    ):
        r = CliRunner().invoke(mcp, args)
        assert r.exit_code == 2, (args, r.output)
        assert r.output.startswith("error: ") and r.output.count("\n") == 1, r.output
        assert "Traceback" not in r.output


def test_the_demo_dir_is_written_once_and_read_again(tmp_path: Path) -> None:
    demo = prepare(tmp_path / "d")
    setup = load_founders(demo.founders)
    assert [f.member.id for f in setup.founders] == list(DEMO_FOUNDERS)
    for f in setup.founders:
        assert f.public_key == public_hex(load_key(demo.keys[f.member.id]))
        assert demo.keys[f.member.id].stat().st_mode & 0o777 == 0o600
    keys = {a: p.read_bytes() for a, p in demo.keys.items()}
    again = prepare(tmp_path / "d")
    assert {a: p.read_bytes() for a, p in again.keys.items()} == keys
    text = connect_text(demo, "http://127.0.0.1:1")
    for a in DEMO_FOUNDERS:
        assert f"ostrom mcp --url http://127.0.0.1:1 --agent {a} --key {demo.keys[a]}" in text
    assert (demo.dir / "mcp.json").exists()


@pytest.mark.parametrize("case", ["file", "half", "bad_key"])
def test_a_dir_that_is_not_a_demo_is_refused(tmp_path: Path, case: str) -> None:
    d = tmp_path / "d"
    if case == "file":
        d.write_text("")
    elif case == "half":
        d.mkdir()
        (d / "alice.key").write_text("")
    else:
        prepare(d)
        (d / "bob.key").write_text("x\n")
    with pytest.raises(DemoError):
        prepare(d)
