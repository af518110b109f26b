"""Which faults each model of the composed PBFT system exercises, as a table.

spec/PBFTReplicaSystem.tla claims BFT-SAFE-1/2 and BFT-LIVE-1 "on a network that loses,
duplicates and reorders messages and partitions until it heals", but each model enables
only some of those faults: a fault no model enables is a claim no check stands behind.
The table is read from the one source, the models' TLC configurations (a derived model's
generated from models/manifest.json): the budgets before the heal and the Byzantine
replicas' attack.  ``ostrom docs`` writes it into README.md and docs/consensus.md
(ostrom.codegen.registry), and its drift test fails when a model's budgets change
without the table.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ostrom import layout
from ostrom.verify.tlc.cfg import parse_cfg
from ostrom.verify.tlc.manifest import Manifest, ModelEntry, cfg_text
from ostrom.verify.tlc.modules import used_modules

__all__ = ["FAULTS", "SPEC", "fault_rows", "fault_table"]

#: the spec whose models the table describes
SPEC = "PBFTReplicaSystem"
#: the fault budgets of spec/PBFTReplicaSystem.tla, in the table's order, with their heading
FAULTS = (
    ("LossBudget", "drops"),
    ("OmissionBudget", "send omissions"),
    ("ReorderBudget", "out of order"),
    ("DupBudget", "duplicates"),
    ("PartitionBudget", "partitions"),
    ("TimeoutBudget", "timeouts"),
    ("RestartBudget", "restarts"),
)


def _uses_spec(entry: ModelEntry) -> bool:
    return any(p.stem == SPEC and p.parent == layout.SPEC_DIR for p in used_modules(entry.module))


def _run_by(entry: ModelEntry, gates: Collection[str]) -> str:
    where = "make check-deep" if entry.deep else "make test-slow" if entry.slow else "make test"
    return where + (", CI gate" if entry.name in gates else "")


def fault_rows(manifest: Manifest, root: Path, gates: Collection[str] = ()) -> list[list[str]]:
    """One row per passing model of the composed system: its name, where it runs (``gates``:
    the models of the mutation suites' CI gates), each fault budget (``-`` for none) with
    the replicas a partition may cut, and the Byzantine replicas' attack."""
    rows = []
    for entry in manifest.models:
        if entry.expect != "pass" or entry.mutant or not _uses_spec(entry):
            continue
        consts = parse_cfg(cfg_text(manifest, entry, root)).constants
        if not all(name in consts for name, _ in FAULTS):
            continue
        row = [f"`{entry.name}`", _run_by(entry, gates)]
        for name, _ in FAULTS:
            value = consts[name][1]
            if name == "PartitionBudget" and value != "0":
                value = f"{value} (cut {consts['Cuttable'][1]})"
            row.append("-" if value == "0" else value)
        byz, sends = consts["Byz"][1], consts["ByzSends"]
        attack = "silent" if sends == ("=", "{}") else sends[1]
        row.append(f"{byz}: {attack}" if byz != "{}" else "-")
        rows.append(row)
    return rows


def fault_table(manifest: Manifest, root: Path, gates: Collection[str] = ()) -> str:
    """The markdown table of :func:`fault_rows`."""
    head = ["model", "runs in", *(h for _, h in FAULTS), "Byzantine"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in fault_rows(manifest, root, gates)]
    return "\n".join(lines) + "\n"
