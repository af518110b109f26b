"""The table of which faults each model of the composed PBFT system exercises.

README.md and docs/consensus.md hold it as a generated block (``pbft-faults``; their drift
test is property_tests/codegen/test_generated.py's). Here: the table is read from the
models' configurations, so a budget changed in the manifest changes its row, and every
fault of spec/PBFTReplicaSystem.tla is exercised by a model that make test runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from ostrom import layout
from ostrom.verify.mutate.suite import load_suite, suites
from ostrom.verify.tlc.faults import FAULTS, fault_rows, fault_table
from ostrom.verify.tlc.manifest import load_manifest

MANIFEST_PATH = layout.MODELS_DIR / "manifest.json"
GATES = {m for spec in suites() for m in load_suite(spec).ci_models}


def _rows(path: Path = MANIFEST_PATH) -> dict[str, list[str]]:
    return {r[0].strip("`"): r for r in fault_rows(load_manifest(path), layout.ROOT, GATES)}


def test_every_fault_is_exercised_by_a_model_make_test_runs() -> None:
    rows = [r for r in _rows().values() if r[1].startswith("make test,") or r[1] == "make test"]
    for k, (name, _) in enumerate(FAULTS):
        assert any(r[2 + k] != "-" for r in rows), f"no make test model enables {name}"
    assert any(r[-1] != "-" and "silent" not in r[-1] for r in rows), "no Byzantine attack"


def test_a_budget_changed_in_the_manifest_changes_its_row(tmp_path: Path) -> None:
    data = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    entry = next(m for m in data["models"] if m["name"] == "pbft-replica-net-partition-ci")
    assert _rows()["pbft-replica-net-partition-ci"][2:9] == ["-", "1", "-", "-", "1 (cut {2})",
                                                             "-", "-"]  # fmt: skip
    entry["cfg"]["constants"]["DupBudget"] = "2"
    # the derived model's cfg comes from its base's file: give the copy the real paths
    for m in data["models"]:
        if "config" in m:
            m["config"] = str(layout.ROOT / m["config"])
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _rows(path)["pbft-replica-net-partition-ci"][5] == "2"


def test_the_table_has_a_row_per_model_and_a_column_per_fault() -> None:
    table = fault_table(load_manifest(MANIFEST_PATH), layout.ROOT).splitlines()
    assert table[0].count("|") == len(FAULTS) + 4
    assert len(table) == 2 + len(_rows())
