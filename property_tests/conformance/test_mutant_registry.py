"""One mutant registry: every catalogue of mutants agrees with it (no TLC, no Hypothesis run).

``ostrom.conformance.mutants.registry`` lists each deliberate bug once, as ``<layer>-<bug>``,
with the property ids it violates and where it is played. The catalogues that used to name the
same bug four ways are checked against it here: the driver mutants (the kill matrix runs
them), the Hypothesis mutant modules (``property_tests/*mutants.py``), the manifest's mutant
models and spec/properties.toml's ``code_mutants`` / ``tla_mutants``. A mutant in one of them
and not in the registry (or the reverse) fails. docs/checking.md's table is generated from it
(``ostrom docs``; property_tests/codegen/test_generated.py checks it is current).
"""

from __future__ import annotations

import importlib
import inspect
import re
from types import ModuleType

import pytest

from ostrom import layout
from ostrom.conformance import LAYERS
from ostrom.conformance.mutants import MUTANTS as DRIVERS
from ostrom.conformance.mutants import registry
from ostrom.verify import registry as properties
from ostrom.verify.tlc.manifest import load_manifest

REGISTRY = registry.MUTANTS
BY_NAME = registry.by_name()
MANIFEST = load_manifest(layout.MODELS_DIR / "manifest.json")
PROPERTIES = {p.id: p for p in properties.load()}
#: Check labels of rules that have no property id of docs/design.md §7.
LABELS = {"REFUSAL", "FARM-CAP", "FG-EXACT", "TIER-DWELL", "SAN-SUSP", "SAN-BAN", "TABLE"}
#: The Hypothesis mutant modules of property_tests/ and the class each one's mutants subclass.
CODE_MODULES = {
    "mutants": "Orchestrator",
    "community_mutants": "Community",
    "consensus_mutants": "Replica",
    "forgetting_mutants": "ForgetRule",
    "reputation_mutants": "ReputationBook",
    "sanctions_mutants": "SanctionBook",
}


def test_names_are_one_scheme_and_unique() -> None:
    names = [m.name for m in REGISTRY]
    assert len(names) == len(set(names)), "a mutant is registered twice"
    for m in REGISTRY:
        assert re.fullmatch(r"[a-z]+(-[a-z0-9]+)+", m.name), m.name
        assert m.layer in LAYERS and m.name.startswith(f"{m.layer}-"), m.name
        assert m.models or m.code or m.driver, f"{m.name} is played nowhere"
        assert m.properties, f"{m.name} names no property"
        for prop in m.properties:
            assert prop in PROPERTIES or prop in LABELS, f"{m.name}: unknown property {prop}"
        assert any(prop in m.bug for prop in m.properties), f"{m.name}: the bug names no id"
        if m.code is not None:
            assert m.code.check in m.properties, f"{m.name}: its code check is not its property"


def test_driver_mutants_are_the_registrys() -> None:
    """The driver mutants (and so the kill matrix and its docs table) are the registry's
    driver entries, in registry order, with the registry's layer and description."""
    assert list(DRIVERS) == [m.name for m in REGISTRY if m.driver]
    for name, driver in DRIVERS.items():
        assert (driver.layer, driver.description) == (BY_NAME[name].layer, BY_NAME[name].bug)


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)  # property_tests/ is on sys.path under pytest


@pytest.mark.parametrize("module", sorted(CODE_MODULES))
def test_code_mutants_are_the_registrys(module: str) -> None:
    """Every mutant class a Hypothesis mutant module defines is in the registry, and the
    module's MUTANTS is the registry's (derived, so a new class must be registered to run)."""
    mod = _module(module)
    base = CODE_MODULES[module]
    defined = {
        name
        for name, obj in vars(mod).items()
        if inspect.isclass(obj)
        and obj.__module__ == mod.__name__
        and not name.startswith("_")
        and base in {b.__name__ for b in obj.__mro__[1:]}
    }
    registered = {m.code.cls: m.code for m in REGISTRY if m.code and m.code.module == module}
    assert defined == set(registered), (
        f"{module}.py: classes not in the registry {sorted(defined - set(registered))}, "
        f"registered but missing {sorted(set(registered) - defined)}"
    )
    assert {k: (cls.__name__, check) for k, (cls, check) in mod.MUTANTS.items()} == {
        code.name: (code.cls, code.check) for code in registered.values()
    }


def test_manifest_mutant_models_are_the_registrys() -> None:
    models = {m.name: m for m in MANIFEST.models}
    registered = {model: m for m in REGISTRY for model in m.models}
    marked = {m.name: m.mutant for m in MANIFEST.models if m.mutant is not None}
    assert set(marked) == set(registered), (
        f"mutant models not in the registry {sorted(set(marked) - set(registered))}, "
        f"registered models not marked in the manifest {sorted(set(registered) - set(marked))}"
    )
    for model, mutant in registered.items():
        assert marked[model] == mutant.name, f"{model} plays {marked[model]}, not {mutant.name}"
        assert set(models[model].properties) <= set(mutant.properties), model


def test_properties_toml_names_registered_mutants() -> None:
    """spec/properties.toml's mutants of a property are registry mutants of that property."""
    codes = {m.code.name: m for m in REGISTRY if m.code is not None}
    models = {model: m for m in REGISTRY for model in m.models}
    for prop in PROPERTIES.values():
        for key in prop.code_mutants:
            assert key in codes, f"{prop.id}: code mutant {key} is not in the registry"
            assert any(
                m.code is not None and m.code.name == key and m.code.check == prop.id
                for m in REGISTRY
            ), f"{prop.id}: no registered {key} is caught by {prop.id}'s check"
        for model in prop.tla_mutants:
            if model in models:
                assert prop.id in models[model].properties, (prop.id, model)
            else:  # an expected-violation model that is not a mutant (alg1-silent-coordinator)
                entry = MANIFEST.get(model)
                assert entry is not None and entry.mutant is None, model
