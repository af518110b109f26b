"""``ostrom site`` outside a source checkout (site/commands.py): the site is built from
docs/, which the installed package does not carry, so the command says so in one line
and exits 2, writing nothing.  test_site.py builds the site itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from ostrom import layout
from ostrom.cli.main import main


def test_no_site_without_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layout, "CHECKOUT", None)
    out = tmp_path / "site"
    result = CliRunner().invoke(main, ["site", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ostrom site needs a source checkout")
    assert result.stderr.count("\n") == 1
    assert not out.exists()
