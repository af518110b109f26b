"""The committed conformance vectors: valid, complete, current, replayable, covering.

This is what CI relies on for the suite itself (docs/conformance.md):

* every file of vectors/ is listed in MANIFEST.json with its sha256, and nothing else is;
* every vector validates against schema/vector.schema.json and sits at
  vectors/<layer>/<action>/<id>.json;
* every vector replays identically on the reference adapters;
* ``ostrom vectors --check`` passes: the committed vectors are what the reference
  generates now (deterministically);
* per layer, every command and every error code the layer can answer appears.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.conformance import LAYERS, VECTOR_FORMAT
from ostrom.conformance.generators.generate import OWNED_LAYERS, dump
from ostrom.conformance.layers import ADAPTER_CLASSES, ADAPTERS, clean
from ostrom.conformance.vectors import (
    VECTORS_DIR,
    SuiteError,
    Vector,
    compare,
    load_suite,
    manifest_problems,
    replay,
    schema_errors,
    vector_errors,
    write_manifest,
)

# one xdist worker holds the module's fixture (--dist loadfile, conftest.py)


@pytest.fixture(scope="module")
def suite() -> Any:
    return load_suite()


def test_manifest_is_complete_and_exact() -> None:
    assert manifest_problems(VECTORS_DIR) == []


def test_every_vector_is_valid_and_where_its_id_says(suite: Any) -> None:
    assert len(suite.vectors) >= 100
    for v in suite.vectors:
        assert vector_errors(v.doc, v.rel) == [], v.rel
        assert v.doc["format"] == VECTOR_FORMAT


def test_every_vector_replays_on_the_reference(suite: Any) -> None:
    failures = {}
    for v in suite.vectors:
        if v.layer not in ADAPTERS:
            continue  # pragma: no cover - only pbft, when its adapter is absent
        d = replay(v)
        if d is not None:
            failures[v.id] = str(d)
    assert failures == {}


def test_committed_vectors_are_current() -> None:
    """`ostrom vectors --check`: regenerating changes nothing (this is CI's check)."""
    result = CliRunner().invoke(main, ["vectors", "--check"])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("layer", OWNED_LAYERS)
def test_every_op_and_error_code_appears(suite: Any, layer: str) -> None:
    """The hand-written examples alone use every op and answer every error code."""
    cls = ADAPTER_CLASSES[layer]
    vectors = [v for v in suite.by_layer(layer) if v.doc["source"] == "reference:examples"]
    ops = {
        s["command"].get("op") for v in vectors for s in v.steps if isinstance(s["command"], dict)
    }
    results = {s["expect"]["result"] for v in vectors for s in v.steps}
    assert set(cls.ops) <= ops, f"{layer}: no vector uses {sorted(set(cls.ops) - ops)}"
    assert set(cls.errors) <= results, (
        f"{layer}: no vector answers {sorted(set(cls.errors) - results)}"
    )
    actions = {v.action for v in suite.by_layer(layer)}
    assert actions <= set(cls.ops), f"action folders that are no op: {actions - set(cls.ops)}"


def test_every_layer_but_pbft_has_both_sources(suite: Any) -> None:
    walked = {v.layer for v in suite.vectors if v.doc["source"] == "reference:hypothesis"}
    assert {"lifecycle", "community", "sanctions", "reputation"} <= walked
    assert set(LAYERS) >= {v.layer for v in suite.vectors}


def test_properties_are_design_ids(suite: Any) -> None:
    from ostrom.verify import registry

    known = {p.id for p in registry.load()}
    for v in suite.vectors:
        assert set(v.properties) <= known, (v.id, set(v.properties) - known)


# --- the suite refuses what it cannot vouch for ---------------------------------------------------


def _small_suite(tmp_path: Path) -> Path:
    root = tmp_path / "vectors"
    for rel in ("lifecycle/propose/duplicate-id.json", "voting/commitment/canonical-encoding.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(VECTORS_DIR / rel, root / rel)
    write_manifest(root)
    return root


def test_unlisted_missing_or_changed_files_are_refused(tmp_path: Path) -> None:
    root = _small_suite(tmp_path)
    assert len(load_suite(root).vectors) == 2
    extra = root / "voting" / "commitment" / "sneaked-in.json"
    extra.write_text("{}", encoding="utf-8")
    with pytest.raises(SuiteError, match=re.escape("unlisted: voting/commitment/sneaked-in.json")):
        load_suite(root)
    extra.unlink()
    (root / "lifecycle/propose/duplicate-id.json").unlink()
    with pytest.raises(SuiteError, match=re.escape("missing: lifecycle/propose/duplicate-id.json")):
        load_suite(root)
    write_manifest(root)
    path = root / "voting/commitment/canonical-encoding.json"
    path.write_text(path.read_text(encoding="utf-8") + " ", encoding="utf-8")
    changed = re.escape("changed: voting/commitment/canonical-encoding.json")
    with pytest.raises(SuiteError, match=changed):
        load_suite(root)
    (root / "MANIFEST.json").unlink()
    with pytest.raises(SuiteError, match="manifest"):
        load_suite(root)


def test_invalid_vector_is_refused(tmp_path: Path) -> None:
    root = _small_suite(tmp_path)
    path = root / "voting/commitment/canonical-encoding.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["id"] = "voting/commitment/elsewhere"
    path.write_text(dump(doc), encoding="utf-8")
    write_manifest(root)
    with pytest.raises(SuiteError, match="is not the file's path"):
        load_suite(root)


def test_schema_catches_malformed_vectors(suite: Any) -> None:
    good = suite.vectors[0].doc
    assert schema_errors(good) == []
    mutations: list[Callable[[dict[str, Any]], object]] = [
        lambda d: d.pop("steps"),
        lambda d: d.update(format="ostrom-vector/2"),
        lambda d: d.update(steps=[]),
        lambda d: d["steps"][0]["expect"].pop("state"),
        lambda d: d.update(source="somewhere"),
        lambda d: d.update(properties=["not an id"]),
        lambda d: d.update(extra=1),
    ]
    for mutate in mutations:
        bad = copy.deepcopy(good)
        mutate(bad)
        assert schema_errors(bad), bad


# --- comparing and replaying ----------------------------------------------------------------------


def test_float_rule() -> None:
    assert compare(1, 1.0) == [] and compare(1.0, 1) == []
    assert compare(3, 3.0000001) != []  # an expected integer is exact
    assert compare(0.5, 0.5 + 5e-10) == [] and compare(0.5, 0.5 + 2e-9) != []
    assert compare(True, 1) != [] and compare(1, True) != []
    assert compare(None, 0) != [] and compare("a", "a") == []
    assert compare({"a": [1, 2]}, {"a": [1, 2, 3]})[0].path == "$.a.length"
    assert compare({"a": 1}, {"b": 1}) != []


def test_replay_names_the_first_diverging_step(suite: Any) -> None:
    v = next(x for x in suite.vectors if x.id == "lifecycle/dispute/retracted-by-two-of-three")
    doc = copy.deepcopy(v.doc)
    doc["steps"][3]["expect"]["state"]["artifacts"]["x"]["dispute_count"] = 0
    doc["steps"][5]["expect"]["result"] = "wrong_phase"
    d = replay(Vector(v.rel, doc))
    assert d is not None and d.step == 3
    assert [x.path for x in d.differences] == ["$.state.artifacts.x.dispute_count"]


def test_observations_are_json_clean() -> None:
    from enum import Enum

    class E(Enum):
        A = "a"

    assert clean({"t": (1, E.A), "s": {2, 1}}) == {"t": [1, "a"], "s": [1, 2]}
    with pytest.raises(ValueError):
        clean(float("nan"))


def test_bad_params_or_setup_cannot_reset() -> None:
    for layer in OWNED_LAYERS:
        adapter = ADAPTERS[layer]()
        with pytest.raises(ValueError):
            adapter.reset({"no_such_param": 1}, {})
        with pytest.raises(ValueError):
            adapter.reset({}, {"no_such_setup": 1})
        adapter.reset({}, {})
        assert adapter.step({"op": "no_such_op"})["result"] == "invalid_input"
        assert adapter.step(None)["result"] == "invalid_input"  # type: ignore[arg-type]
