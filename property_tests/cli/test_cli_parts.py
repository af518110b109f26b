"""The parts of the ``ostrom`` command, each on its own: the error boundary (``exits.run``),
the option types (``options``), the extras' messages (``extras``) and the product's node
commands (``cli/service.py``, ``cli/cluster.py``) on hostile input.

test_cli_hostile.py fuzzes the whole command; here each part is driven directly, so a
failure names the part.  Hostile input is one line and exit 2, never a traceback
(docs/cli.md, "Input").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from ostrom.cli import EXIT_CODES, BadInput, ExitCode, ToolError
from ostrom.cli.cluster import cluster
from ostrom.cli.exits import Terminated, run
from ostrom.cli.extras import EXTRA_OF_MODULE, install_hint, missing_extra
from ostrom.cli.options import SECONDS, Finite
from ostrom.cli.service import keygen, log
from ostrom.protocol import ParamError


def _raise(exc: BaseException) -> Callable[[], Any]:
    def body() -> Any:
        raise exc

    return body


@pytest.mark.parametrize(
    ("body", "code", "line"),
    [
        (lambda: None, ExitCode.OK, None),
        (lambda: 7, 7, None),
        (_raise(BadInput("no such file")), ExitCode.BAD_INPUT, "error: no such file"),
        (_raise(ToolError("java crashed")), ExitCode.TOOL_ERROR, "error: java crashed"),
        (_raise(ParamError("quorum: out of range")), ExitCode.BAD_INPUT, "error: quorum"),
        (_raise(KeyboardInterrupt()), ExitCode.INTERRUPTED, "interrupted"),
        (_raise(Terminated()), ExitCode.TERMINATED, "terminated"),
        (_raise(SystemExit("a message")), ExitCode.FAILED, "a message"),
        (_raise(ZeroDivisionError("boom")), ExitCode.TOOL_ERROR, "internal error:"),
    ],
)
def test_run_turns_every_outcome_into_its_code_and_one_line(
    body: Callable[[], Any], code: int, line: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(body) == code
    err = capsys.readouterr().err
    if line is None:
        assert err == ""
    else:
        assert err.startswith(line) and err.count("\n") == 1, err
        assert "Traceback" not in err


def test_every_exit_code_is_in_the_table() -> None:
    assert [info.code for info in EXIT_CODES] == list(ExitCode)


@pytest.mark.parametrize("value", ["1", "0.25", " 3 ", "1000000", 2.5])
def test_seconds_takes_a_finite_positive_duration(value: object) -> None:
    assert SECONDS.convert(value, None, None) == float(str(value).strip())


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0", r"is not in \(0, 1e\+06\]"),
        ("-1", "is not in"),
        ("1000001", "is not in"),
        ("nan", "is not a finite number"),
        ("inf", "is not a finite number"),
        ("-inf", "is not a finite number"),
        ("ten", "is not a number"),
        ("", "is not a number"),
    ],
)
def test_seconds_refuses_what_is_not_a_duration(value: str, why: str) -> None:
    with pytest.raises(click.BadParameter, match=why):
        SECONDS.convert(value, None, None)


@given(st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
def test_finite_returns_a_number_in_range_or_refuses(value: float | str) -> None:
    kind = Finite(-1.0, 1.0)
    try:
        v = kind.convert(value, None, None)
    except click.BadParameter:
        return
    assert math.isfinite(v) and -1.0 <= v <= 1.0


def test_a_missing_extra_is_named_with_its_install_command() -> None:
    for module, extra in EXTRA_OF_MODULE.items():
        message = missing_extra(ModuleNotFoundError(name=f"{module}.sub"))
        assert message is not None and install_hint(extra) in message and module in message
    assert missing_extra(ModuleNotFoundError(name="ostrom_typo")) is None  # a bug keeps it
    assert missing_extra(ModuleNotFoundError()) is None


def test_keygen_writes_a_key_once(tmp_path: Path) -> None:
    path = tmp_path / "agent.key"
    first = CliRunner().invoke(keygen, [str(path)])
    assert first.exit_code == 0, first.output
    assert len(first.stdout.strip()) == 64  # the public key, in hex
    key = path.read_text(encoding="utf-8")
    again = CliRunner().invoke(keygen, [str(path)])
    assert again.exit_code == ExitCode.BAD_INPUT
    assert again.stderr.strip() == f"error: {path}: exists (a key is never overwritten)"
    assert path.read_text(encoding="utf-8") == key


def test_log_export_of_a_missing_database_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "trace.jsonl"
    result = CliRunner().invoke(log, ["export", "--db", str(tmp_path / "none.db"), "-o", str(out)])
    assert result.exit_code == ExitCode.BAD_INPUT
    assert result.stderr.count("\n") == 1 and "no such database" in result.stderr
    assert not out.exists()


def test_log_export_of_a_file_that_is_not_a_database_writes_nothing(tmp_path: Path) -> None:
    db, out = tmp_path / "node.db", tmp_path / "trace.jsonl"
    db.write_bytes(b"\x00not sqlite\xff" * 50)
    result = CliRunner().invoke(log, ["export", "--db", str(db), "-o", str(out)])
    assert result.exit_code in (ExitCode.FAILED, ExitCode.BAD_INPUT), result.output
    assert result.stderr.startswith("error: ") and "Traceback" not in result.output
    assert not out.exists()


def test_cluster_down_with_nothing_running(tmp_path: Path) -> None:
    result = CliRunner().invoke(cluster, ["down", "--dir", str(tmp_path)])
    assert result.exit_code == 0
    assert result.stdout.strip() == "nothing running"
