"""``ostrom properties`` (verify/commands/properties.py): the registry as a table or JSON,
every property id once with its checkers; a registry file that cannot be read is one
line and exit 2.  test_registry.py checks the registry itself.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.verify.registry import load


def test_the_json_lists_every_property_of_the_registry() -> None:
    result = CliRunner().invoke(main, ["properties", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["properties"]
    assert [r["id"] for r in rows] == [p.id for p in load()]
    for row, prop in zip(rows, load(), strict=True):
        assert row["tla"] == list(prop.tla) and row["z3"] == list(prop.z3)


def test_the_table_names_every_property() -> None:
    result = CliRunner().invoke(main, ["properties"])
    assert result.exit_code == 0, result.output
    assert all(p.id in result.stdout for p in load())


def test_a_registry_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    for name, text in [("bad.toml", "[[property]\nid ="), ("bin.toml", None)]:
        path = tmp_path / name
        if text is None:
            path.write_bytes(b"\xff\xfe\x00garbage")
        else:
            path.write_text(text, encoding="utf-8")
        result = CliRunner().invoke(main, ["properties", "--registry", str(path)])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    missing = CliRunner().invoke(main, ["properties", "--registry", str(tmp_path / "none")])
    assert missing.exit_code == 2 and "Traceback" not in missing.output
