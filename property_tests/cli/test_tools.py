"""The tools' commands as the product's command sees them (cli/tools.py).

``ostrom`` names each tool command by its module and attribute, the extra it needs and its
line in ``ostrom --help``, and imports none of them until one is run: the product never
imports a tool.  These tests keep the names true: every entry loads to the command it
names, its summary is that command's own first docstring line (one source: the table is
checked against it), its extra is one of pyproject.toml's, and ``ostrom --help`` lists
every command in its stack's section without importing a tool package.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib

import click
import pytest

import ostrom
from ostrom.cli.main import PRODUCT_COMMANDS
from ostrom.cli.tools import TOOL_COMMANDS, load
from ostrom.layout import ROOT

EXTRAS = set(
    tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
)


@pytest.mark.parametrize("name", sorted(TOOL_COMMANDS))
def test_each_tool_command_loads_and_its_summary_is_its_own_first_line(name: str) -> None:
    entry = TOOL_COMMANDS[name]
    command = load(name)
    assert isinstance(command, click.Command)
    module = entry.target.partition(":")[0]
    assert module.split(".")[1] in ostrom.TOOLS, f"{name}: {module} is not a tool's module"
    first = (command.help or "").strip().splitlines()[0]
    assert entry.summary == first, f"cli/tools.py's summary of {name} is not its first line"
    assert entry.extra is None or entry.extra in EXTRAS, f"{name}: no extra {entry.extra!r}"


def test_no_command_is_both_the_products_and_a_tools() -> None:
    product = {c.name for c in PRODUCT_COMMANDS}
    assert len(product) == len(PRODUCT_COMMANDS)
    assert not product & set(TOOL_COMMANDS), product & set(TOOL_COMMANDS)
    for command in PRODUCT_COMMANDS:
        assert command.callback is not None
        assert command.callback.__module__.split(".")[1] in ostrom.PRODUCT, command.name


def test_help_lists_both_stacks_without_importing_a_tool() -> None:
    probe = (
        "import sys\n"
        "from ostrom.cli.main import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "tools = " + repr(tuple(ostrom.TOOLS)) + "\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'ostrom'\n"
        "                and len(m.split('.')) > 1 and m.split('.')[1] in tools)\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert "LOADED []" in out.stderr, out.stderr
    product, _, tools = out.stdout.partition("Tools that check it")
    assert "Commands (the product" in product
    for name in ("serve", "cluster", "keygen", "log", "node", "params"):
        assert f"\n  {name} " in product, name
    for name, entry in TOOL_COMMANDS.items():
        assert f"\n  {name} " in tools, name
        assert entry.summary[:40] in " ".join(tools.split()), name
