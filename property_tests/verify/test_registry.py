"""The property registry names a real checker for every property id in every required layer."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ostrom.verify import registry
from ostrom.verify.tlc.manifest import cfg_text, load_manifest

ROOT = Path(__file__).resolve().parents[2]
PROPS = registry.load()
MODELS = load_manifest(ROOT / "models" / "manifest.json")
MANIFEST = json.loads((ROOT / "models" / "manifest.json").read_text(encoding="utf-8"))["models"]

# Every id of docs/design.md §7; the registry must list each exactly once.
DESIGN_IDS = [
    "LC-SAFE-1", "LC-SAFE-2", "LC-SAFE-3", "LC-SAFE-4", "LC-SAFE-5", "LC-SAFE-6", "LC-LIVE-1",
    "CR-1", "CR-2", "TALLY-1", "REP-1", "REP-2", "SAN-1", "SAN-2", "FG-1",
    "BFT-SAFE-1", "BFT-SAFE-2", "BFT-QUORUM-1", "BFT-LIVE-1", "BFT-NET-1", "BFT-FAULT-1",
    "ALG1-FAIL-1",
    "REPL-1", "FORGET-PURGE", "READ-1", "ENV-1", "ADM-1", "ADM-2", "ROW-1", "KEY-1", "KEY-2",
]  # fmt: skip
# The ids the lifecycle layer is responsible for: each needs a TLC and/or Hypothesis checker.
LIFECYCLE_IDS = {"LC-SAFE-1", "LC-SAFE-2", "LC-SAFE-3", "LC-SAFE-4", "LC-SAFE-5", "LC-SAFE-6",
                 "LC-LIVE-1", "CR-1", "CR-2"}  # fmt: skip


def _tla_definitions() -> set[str]:
    """The definitions a checker may name: the specs', and the MC modules' (an invariant
    over a history variable that only a model keeps, such as BFT-NET-1's over `net` in
    models/MCPBFTReplicaNet.tla, lives beside that variable)."""
    names: set[str] = set()
    for path in [*(ROOT / "spec").glob("*.tla"), *(ROOT / "models").glob("MC*.tla")]:
        names |= set(re.findall(r"^([A-Za-z_]\w*)\s*==", path.read_text(encoding="utf-8"), re.M))
    return names


def _cfg_checked(name: str) -> set[str]:
    """Names under INVARIANT(S) / PROPERTY(IES) of a model's TLC config (a derived model's
    generated from its base's)."""
    entry = MODELS.get(name)
    assert entry is not None, name
    checked: set[str] = set()
    section = None
    for raw in cfg_text(MODELS, entry, ROOT).splitlines():
        line = raw.split("\\*")[0].strip()
        if not line:
            continue
        head, *rest = line.split()
        if head.isupper():
            section = head
            words = rest
        else:
            words = [head, *rest]
        if section in {"INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES"}:
            checked.update(words)
    return checked


def _import(path: Path) -> ModuleType:
    """Import a module of property_tests/ by file, under the name pytest gives it (its stem:
    pytest puts each test's folder on sys.path, and this does the same for another's)."""
    assert path.is_relative_to(ROOT / "property_tests"), path
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    return importlib.import_module(path.stem)


def test_registry_lists_every_design_id_once() -> None:
    assert [p.id for p in PROPS] == DESIGN_IDS


def test_design_names_every_family_of_the_registry() -> None:
    """docs/design.md §7 names every id's family (``LC-SAFE-1..6`` names LC-SAFE-3): an id
    added to spec/properties.toml and to the list above is not done until §7 says it."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    section = text[text.index("## 7. Properties") : text.index("## 8. Parameters")]
    for ident in DESIGN_IDS:
        family = re.sub(r"-\d+$", "", ident)
        assert ident in section or f"{family}-1" in section, f"§7 does not name {ident}"


@pytest.mark.parametrize("prop", PROPS, ids=lambda p: p.id)
def test_required_layers_have_checkers(prop: registry.Property) -> None:
    if prop.id in LIFECYCLE_IDS:
        assert prop.required, f"{prop.id} is the lifecycle's: it must require a checker"
    for layer in prop.required:
        assert prop.checkers(layer), f"{prop.id}: no {layer} checker named in spec/properties.toml"


@pytest.mark.parametrize("prop", [p for p in PROPS if p.tla], ids=lambda p: p.id)
def test_tla_checkers_exist_and_are_checked_by_a_passing_model(prop: registry.Property) -> None:
    defined = _tla_definitions()
    passing = [m for m in MANIFEST if m["expect"] == "pass"]
    checked = set().union(*(_cfg_checked(m["name"]) for m in passing))
    for name in prop.tla:
        assert name in defined, f"{prop.id}: {name} is not defined in spec/*.tla or models/MC*.tla"
        assert name in checked, f"{prop.id}: no passing manifest model checks {name}"


@pytest.mark.parametrize("prop", [p for p in PROPS if p.tla], ids=lambda p: p.id)
def test_tla_mutants_are_expected_to_break_the_checker(prop: registry.Property) -> None:
    by_name = {m["name"]: m for m in MANIFEST}
    assert prop.tla_mutants, f"{prop.id}: no TLA+ mutant shows the TLC check can fail"
    for mutant in prop.tla_mutants:
        assert mutant in by_name, f"{prop.id}: mutant model {mutant} not in the manifest"
        assert by_name[mutant]["expect"] in prop.tla, (
            f"{prop.id}: {mutant} is expected to violate {by_name[mutant]['expect']}, "
            f"not one of {prop.tla}"
        )


@pytest.mark.parametrize("prop", [p for p in PROPS if p.hypothesis], ids=lambda p: p.id)
def test_hypothesis_checkers_exist(prop: registry.Property) -> None:
    for node in prop.hypothesis:
        file, *path = node.split("::")
        target = ROOT / "property_tests" / file
        assert target.exists(), f"{prop.id}: {file} does not exist"
        obj: object = _import(target)
        for part in path:
            assert hasattr(obj, part), f"{prop.id}: {node} does not resolve ({part} missing)"
            obj = getattr(obj, part)


@pytest.mark.parametrize(
    "prop", [p for p in PROPS if "hypothesis" in p.required], ids=lambda p: p.id
)
def test_code_mutants_exist(prop: registry.Property) -> None:
    known = {}
    # every mutant module of the suite: mutants.py and <layer>_mutants.py
    for path in sorted((ROOT / "property_tests").glob("*mutants.py")):
        if not path.name.startswith("test_"):
            known.update(_import(path).MUTANTS)
    assert prop.code_mutants, f"{prop.id}: no code mutant shows the Hypothesis check can fail"
    for name in prop.code_mutants:
        assert name in known, f"{prop.id}: mutant {name} not in property_tests/*mutants.py"
        assert known[name][1] == prop.id, f"{prop.id}: mutant {name} is caught by {known[name][1]}"
