"""The architecture of the reference, as import-linter contracts (``.importlinter``).

``test_the_tree_keeps_every_contract`` runs the contracts on ``ostrom``: the layers
protocol < consensus < verify < conformance < explore < site < service < cluster < client < cli, a
protocol core that imports nothing else of ostrom but ``ostrom.layout``, simulation and
figures beside the stack (protocol and consensus only), and no import cycle inside any
package.  The other tests run the same
contracts on a small package laid out like ``ostrom``, once clean and once with one
violation per contract, so a contract that could never fail (a typo in a module name, an
empty layer) is caught too.
"""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

from ostrom.layout import ROOT

CONTRACTS = ROOT / ".importlinter"
FIXTURE = "ostrom_layout_fixture"

#: The fixture package: every package of ``ostrom`` the contracts name, one module each,
#: importing downwards only (module -> its source).
CLEAN: dict[str, str] = {
    "__init__": "",
    "__main__": "from ostrom.cli import main\n",
    "layout": "",
    "protocol/__init__": "",
    "protocol/lifecycle": "from ostrom import layout\n",
    "protocol/voting": "from ostrom.protocol import lifecycle\n",
    "consensus/__init__": "",
    "consensus/replica": "from ostrom.protocol import voting\n",
    "verify/__init__": "",
    "verify/registry": "from ostrom.consensus import replica\n",
    "conformance/__init__": "",
    "conformance/runner": "from ostrom.verify import registry\n",
    "explore/__init__": "",
    "explore/page": "from ostrom.conformance import runner\n",
    "site/__init__": "",
    "site/build": "from ostrom.explore import page\n",
    "service/__init__": "",
    "service/node": "from ostrom.site import build\n",
    "cluster/__init__": "",
    "cluster/replica": "from ostrom.service import node\n",
    "client/__init__": "",
    "client/client": "from ostrom.cluster import replica\n",
    "simulation/__init__": "",
    "simulation/run": "from ostrom.consensus import replica\nfrom ostrom.protocol import voting\n",
    "figures/__init__": "",
    "figures/diagram": "from ostrom.protocol import lifecycle\n",
    "cli/__init__": "",
    "cli/main": (
        "from ostrom.client import client\nfrom ostrom.figures import diagram\n"
        "from ostrom.simulation import run\n"
    ),
}

#: One violation per contract id: the module it changes and the import it adds.
VIOLATIONS: dict[str, tuple[str, str]] = {
    "layers": ("verify/registry", "from ostrom.conformance import runner\n"),
    "protocol-core": ("protocol/voting", "from ostrom.simulation import run\n"),
    "beside-the-stack": ("simulation/run", "from ostrom.verify import registry\n"),
    "nothing-imports-beside": ("consensus/replica", "from ostrom.figures import diagram\n"),
    "simulation-figures-independent": ("figures/diagram", "from ostrom.simulation import run\n"),
    "acyclic": ("protocol/lifecycle", "from ostrom.protocol import voting\n"),
}


def lint(config: Path, capsys: pytest.CaptureFixture[str], *contracts: str) -> tuple[bool, str]:
    """``lint-imports CONFIG [--contract ID ...]`` through its Python API: every contract
    (or the ones named) kept, and the report it prints."""
    capsys.readouterr()
    status = lint_imports(
        config_filename=str(config), limit_to_contracts=contracts, no_cache=True, no_logo=True
    )
    return status == 0, capsys.readouterr().out


def contract_ids() -> set[str]:
    """The contracts ``.importlinter`` declares (``[importlinter:contract:ID]``)."""
    parser = configparser.ConfigParser()
    parser.read(CONTRACTS, encoding="utf-8")
    prefix = "importlinter:contract:"
    return {s.removeprefix(prefix) for s in parser.sections() if s.startswith(prefix)}


def write_fixture(root: Path, modules: dict[str, str]) -> Path:
    """The fixture package under ``root`` and the contracts rewritten for it."""
    for name, source in modules.items():
        path = root / FIXTURE / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source.replace("ostrom", FIXTURE), encoding="utf-8")
    config = root / "contracts.ini"
    config.write_text(
        CONTRACTS.read_text(encoding="utf-8").replace("ostrom", FIXTURE), encoding="utf-8"
    )
    return config


def test_the_tree_keeps_every_contract(capsys: pytest.CaptureFixture[str]) -> None:
    kept, report = lint(CONTRACTS, capsys)
    assert kept, report


def test_every_contract_has_a_violation_below() -> None:
    assert contract_ids() == set(VIOLATIONS)


def test_the_clean_fixture_keeps_every_contract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    kept, report = lint(write_fixture(tmp_path, CLEAN), capsys)
    assert kept, report


@pytest.mark.parametrize("contract", sorted(VIOLATIONS))
def test_a_violation_breaks_its_contract(
    contract: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One forbidden import breaks the contract it is about, and lint-imports names it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    module, line = VIOLATIONS[contract]
    config = write_fixture(tmp_path, {**CLEAN, module: CLEAN[module] + line})
    kept, report = lint(config, capsys, contract)
    assert not kept, report
    assert module.rsplit("/", 1)[-1] in report, report  # the offending import is shown
