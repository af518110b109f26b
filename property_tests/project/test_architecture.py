"""The architecture of the package, as import-linter contracts (``.importlinter``).

``test_the_tree_keeps_every_contract`` runs the contracts on ``ostrom``: two stacks, the
product (protocol < consensus < service < cluster < client < cli) that never imports a
tool, and the tools (harness < verify < conformance < explore < site < codegen, with the
evaluation model beside them); a protocol core that imports nothing else of ostrom; no
import cycle inside any package.  ``ostrom.PRODUCT`` and ``ostrom.TOOLS`` are the one list
of the stacks: the contract "product-no-tools" must name exactly them.  The other tests
run the same contracts on a small package laid out like ``ostrom``, once clean and once
with one violation per contract, so a contract that could never fail (a typo in a module
name, an empty layer) is caught too.
"""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

import ostrom
from ostrom.layout import ROOT

CONTRACTS = ROOT / ".importlinter"
FIXTURE = "ostrom_layout_fixture"

#: The fixture package: every package of ``ostrom`` the contracts name, one module each,
#: importing downwards only (module -> its source).
CLEAN: dict[str, str] = {
    "__init__": "",
    "__main__": "from ostrom.cli import main\n",
    "children": "",
    "layout": "",
    "docblocks": "",
    "protocol/__init__": "",
    "protocol/lifecycle": "",
    "protocol/voting": "from ostrom.protocol import lifecycle\n",
    "consensus/__init__": "",
    "consensus/replica": "from ostrom.protocol import voting\n",
    "service/__init__": "",
    "service/node": "from ostrom.consensus import replica\n",
    "cluster/__init__": "",
    "cluster/replica": "from ostrom.service import node\n",
    "client/__init__": "",
    "client/client": "from ostrom.cluster import replica\n",
    "agent/__init__": "",
    "agent/memory": "from ostrom.client import client\n",
    "cli/__init__": "",
    "cli/main": "from ostrom.agent import memory\nfrom ostrom import children\n",
    "harness/__init__": "",
    "harness/network": "from ostrom.cluster import replica\n",
    "verify/__init__": "",
    "verify/registry": "from ostrom.harness import network\nfrom ostrom import layout\n",
    "conformance/__init__": "",
    "conformance/runner": "from ostrom.verify import registry\n",
    "explore/__init__": "",
    "explore/page": "from ostrom.conformance import runner\nfrom ostrom import docblocks\n",
    "site/__init__": "",
    "site/build": "from ostrom.explore import page\n",
    "codegen/__init__": "",
    "codegen/diagram": "from ostrom.site import build\n",
    "simulation/__init__": "",
    "simulation/run": "from ostrom.harness import network\nfrom ostrom.client import client\n",
}

#: One violation per contract id: the module it changes and the import it adds.
VIOLATIONS: dict[str, tuple[str, str]] = {
    "product-no-tools": ("service/node", "from ostrom.verify import registry\n"),
    "product-layers": ("consensus/replica", "from ostrom.service import node\n"),
    "protocol-core": ("protocol/voting", "from ostrom.consensus import replica\n"),
    "tool-layers": ("verify/registry", "from ostrom.conformance import runner\n"),
    "simulation-beside": ("simulation/run", "from ostrom.verify import registry\n"),
    "nothing-imports-simulation": ("codegen/diagram", "from ostrom.simulation import run\n"),
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


def _contract_modules(contract: str, key: str) -> list[str]:
    parser = configparser.ConfigParser()
    parser.read(CONTRACTS, encoding="utf-8")
    lines = parser[f"importlinter:contract:{contract}"][key].split()
    return [m.removeprefix("ostrom.") for m in lines]


def test_the_product_contract_names_exactly_the_two_stacks() -> None:
    """``ostrom.PRODUCT`` and ``ostrom.TOOLS`` are the one list of the stacks; the contract
    that keeps the product free of tools is written from them, and every package and
    top-level module of ``ostrom`` is in exactly one of them."""
    sources = set(_contract_modules("product-no-tools", "source_modules")) - {"__main__"}
    forbidden = set(_contract_modules("product-no-tools", "forbidden_modules"))
    assert sources == set(ostrom.PRODUCT)
    assert forbidden == set(ostrom.TOOLS)
    package = ROOT / "reference" / "ostrom"
    found = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    found |= {p.stem for p in package.glob("*.py") if not p.stem.startswith("__")}
    assert found == set(ostrom.PRODUCT) | set(ostrom.TOOLS)
    assert not set(ostrom.PRODUCT) & set(ostrom.TOOLS)
