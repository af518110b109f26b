"""Derived models: a base model plus overrides, the cfg generated when the model runs (no TLC).

A mutant or a variant of a model is described in models/manifest.json by its base model and
what differs (``"cfg"``: constants, ``Op <- MutOp`` substitutions, sections), so a new constant
is added to the base cfgs only and the normative specs carry no mutation switch. These tests pin
the cfg derivation, the manifest's validation of derived entries, and the shape of the real
manifest: every derived cfg renders, every substitution replaces an operator of the specs by one
of the model's MC module, no cfg file is left that no base model uses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ostrom import layout
from ostrom.verify.tlc.cfg import (
    CfgError,
    CfgOverrides,
    derive_cfg,
    parse_cfg,
    parse_overrides,
)
from ostrom.verify.tlc.manifest import ManifestError, ModelEntry, cfg_text, load_manifest
from ostrom.verify.tlc.runner import select_models
from ostrom.verify.trace.lifecycle import lifecycle_constants

MANIFEST = load_manifest(layout.MODELS_DIR / "manifest.json")
DERIVED = [m for m in MANIFEST.models if m.base is not None]

BASE = """\\* a comment with INVARIANT Hidden
CONSTANTS
    N = 3
    Names = {"a = b", "c"}   (* a string with '=' *)
    Pick <- MCPick
SPECIFICATION MCSpec
ACTION_CONSTRAINT RecordRows
INVARIANT TypeOK
INVARIANTS
    Safety
    Binding
PROPERTY Live
"""


def test_parse_reads_constants_and_merges_sections() -> None:
    cfg = parse_cfg(BASE)
    assert cfg.constants == {
        "N": ("=", "3"),
        "Names": ("=", '{"a = b", "c"}'),
        "Pick": ("<-", "MCPick"),
    }
    assert cfg.sections == {
        "SPECIFICATION": ["MCSpec"],
        "ACTION_CONSTRAINTS": ["RecordRows"],
        "INVARIANTS": ["TypeOK", "Safety", "Binding"],
        "PROPERTIES": ["Live"],
    }


def test_overrides_replace_in_place_add_drop_and_keep_invariant_order() -> None:
    overrides = parse_overrides(
        {
            "constants": {"N": "4", "M": "1"},
            "substitute": {"Binding": "MutBinding", "Pick": None},
            "specification": "Spec",
            "action_constraints": None,
            "properties": [],
        }
    )
    text = derive_cfg(BASE, overrides, "mutant: generated")
    assert text.startswith("\\* mutant: generated\nCONSTANTS\n    N = 4\n")
    derived = parse_cfg(text)
    assert list(derived.constants) == ["N", "Names", "M", "Binding"]
    assert derived.constants["Binding"] == ("<-", "MutBinding")
    # TLC reports the first listed of two invariants a state violates: the order is the base's
    assert derived.sections == {
        "SPECIFICATION": ["Spec"],
        "INVARIANTS": ["TypeOK", "Safety", "Binding"],
    }
    # deriving from the derived text changes nothing more
    assert parse_cfg(derive_cfg(text, CfgOverrides())) == derived


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"invariant": ["X"]}, "unknown key 'invariant'"),
        ({"substitute": {"Op": "not a name"}}, "operator name"),
        ({"constants": {"N": 3}}, "non-empty strings"),
        ({"invariants": "X Y", "properties": [1]}, "'cfg.properties'"),
        ([], "must be an object"),
    ],
)
def test_bad_overrides(data: object, fragment: str) -> None:
    with pytest.raises(CfgError, match=fragment):
        parse_overrides(data)


def _manifest(tmp_path: Path, *models: dict[str, object]) -> Path:
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"models": list(models)}), encoding="utf-8")
    return path


BASE_ENTRY: dict[str, object] = {"name": "a", "module": "M", "config": "a.cfg", "expect": "pass"}


@pytest.mark.parametrize(
    ("derived", "fragment"),
    [
        ({"name": "b", "base": "nope", "expect": "pass"}, "base model 'nope'"),
        ({"name": "b", "base": "a", "config": "b.cfg", "expect": "pass"}, "no 'config'"),
        ({"name": "b", "base": "a", "module": "Other", "expect": "pass"}, "not its base's"),
        ({"name": "b", "base": "a", "cfg": {"nope": 1}, "expect": "pass"}, "unknown key"),
        ({"name": "b", "base": "b", "expect": "pass"}, "cycle"),
        ({"name": "b", "base": "a", "expect": "X", "mutant": True}, "must name the mutant"),
    ],
)
def test_malformed_derived_entries(
    tmp_path: Path, derived: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ManifestError, match=fragment):
        load_manifest(_manifest(tmp_path, BASE_ENTRY, derived))


def test_cfg_overrides_need_a_base(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="need a 'base'"):
        load_manifest(_manifest(tmp_path, {**BASE_ENTRY, "cfg": {"constants": {"N": "1"}}}))


def test_a_chain_of_bases_and_the_module_inherited(tmp_path: Path) -> None:
    (tmp_path / "a.cfg").write_text("CONSTANTS\n    N = 1\n    K = 2\nINIT Init\nNEXT Next\n")
    path = _manifest(
        tmp_path,
        BASE_ENTRY,
        {"name": "b", "base": "a", "cfg": {"constants": {"N": "2"}}, "expect": "pass"},
        {"name": "c", "base": "b", "cfg": {"constants": {"K": None}}, "expect": "X"},
    )
    manifest = load_manifest(path)
    c = manifest.get("c")
    assert c is not None and c.module == "M" and c.config is None and c.cfg_name == "c.cfg"
    assert c.source == "models/manifest.json#c"
    text = cfg_text(manifest, c, tmp_path)
    assert parse_cfg(text).constants == {"N": ("=", "2")}
    assert "generated by ostrom check from the model b" in text


# ------------------------------------------------------------------ the real manifest


def _module_body(path: Path) -> str:
    """A module's text up to its closing ``====`` line (SANY ignores what follows)."""
    return re.split(r"^={4,}", path.read_text(encoding="utf-8"), maxsplit=1, flags=re.M)[0]


@pytest.mark.parametrize("entry", DERIVED, ids=lambda e: e.name)
def test_every_derived_cfg_renders_and_substitutes_a_spec_operator(entry: ModelEntry) -> None:
    assert entry.overrides is not None
    parse_cfg(cfg_text(MANIFEST, entry, layout.ROOT))
    mc = _module_body(layout.MODELS_DIR / f"{entry.module}.tla")
    specs = "\n".join(_module_body(p) for p in layout.SPEC_DIR.glob("*.tla"))
    models = "\n".join(_module_body(p) for p in layout.MODELS_DIR.glob("*.tla"))
    for op, replacement in entry.overrides.substitute.items():
        defined = re.compile(rf"^{re.escape(replacement)}\b[^=\n]*==", re.MULTILINE)
        assert defined.search(mc) or defined.search(models), (
            f"{entry.name}: {replacement} is not defined in models/{entry.module}.tla"
        )
        declared = re.compile(rf"^\s*(CONSTANTS?\s+)?{re.escape(op)}\b", re.MULTILINE)
        assert declared.search(specs) or declared.search(models), (
            f"{entry.name}: {op} is neither an operator nor a constant of the specs"
        )


def test_specs_carry_no_mutation_switch_and_no_witness() -> None:
    """The normative specs are the protocol only: mutants replace their operators from the MC
    modules (models/MC*.tla), selected by the manifest, and the reachability witnesses a
    model must violate are defined there too."""
    for path in sorted(layout.SPEC_DIR.glob("*.tla")):
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\bMutation\b|\bMUTANT\b", text), f"{path.name} switches on a mutant"
        assert not re.search(r"^Never\w*Inv\b", text, re.M), f"{path.name} defines a witness"


def test_mutants_are_derived_and_named() -> None:
    for entry in MANIFEST.models:
        if entry.mutant is not None:
            assert entry.base is not None, f"{entry.name}: a mutant is a derived model"
            assert entry.overrides is not None and entry.overrides.substitute, (
                f"{entry.name}: a mutant substitutes at least one operator"
            )
            assert re.fullmatch(r"[a-z]+(-[a-z0-9]+)+", entry.mutant), entry.mutant


def test_every_cfg_file_is_a_base_model() -> None:
    """No derived copy is left behind: each cfg in models/ is the config of a base model (the
    vector generator's cfgs are generated too: tlc_vectors.sim_cfg)."""
    used = {Path(m.config).name for m in MANIFEST.models if m.config is not None}
    files = {p.name for p in layout.MODELS_DIR.glob("*.cfg")}
    assert files == used


def test_lifecycle_constants_live_in_the_base_cfgs_only() -> None:
    """A new CONSTANT of spec/Lifecycle.tla is assigned in the lifecycle base cfg
    (MCLifecycle_ci.cfg) only; its derived models inherit it."""
    constants = lifecycle_constants()
    lifecycle = [m for m in MANIFEST.models if m.module == "MCLifecycle"]
    bases = {m.config for m in lifecycle if m.config is not None}
    assert bases == {"models/MCLifecycle_ci.cfg"}
    assigned = set(parse_cfg((layout.ROOT / "models/MCLifecycle_ci.cfg").read_text()).constants)
    assert constants <= assigned
    for entry in lifecycle:
        if entry.overrides is not None:
            assert constants >= set(entry.overrides.constants), entry.name


def test_the_vector_generators_cfgs_assign_every_constant_their_module_declares() -> None:
    # The MCLifecycleSim cfgs are generated (tlc_vectors.sim_cfg): every CONSTANT of
    # Lifecycle.tla and the cover row, and nothing else; the registry differs per setup.
    from ostrom.conformance.generators import tlc_vectors as tv

    cfgs = {s.name: parse_cfg(tv.sim_cfg(s)) for s in (tv.SIM, tv.SOLO, tv.DUO)}
    for name, cfg in cfgs.items():
        assert set(cfg.constants) == lifecycle_constants() | set(tv.COVER_CONSTANTS), name
        assert cfg.sections == {"INIT": ["SimInit"], "NEXT": ["SimNext"]}, name
    assert cfgs["solo"].constants["Artifacts"] == ("=", '{"x1"}')
    assert cfgs["duo"].constants["Agents"] == ("<-", "DuoAgents")
    row = ("retract", "disputed", "retracted")
    assert parse_cfg(tv.sim_cfg(tv.SOLO, row)).constants["CoverTo"] == ("=", '"retracted"')


def test_readme_counts_the_witnesses_make_check_runs() -> None:
    """README's make check row says how many reachability witnesses the CI models have:
    the number is the manifest's, counted here, so the prose cannot drift from it."""
    entries = select_models(load_manifest(layout.ROOT / "models" / "manifest.json"), [], deep=False)
    n = sum(len(e.witnesses) for e in entries)
    readme = (layout.ROOT / "README.md").read_text(encoding="utf-8")
    assert f"{n:,} reachability witnesses" in readme, f"README: {n:,} reachability witnesses"
