"""Every action of a mutation-tested spec is taken in a model that gates changes.

A check passes vacuously for whatever a model never does: the issue behind this test was
the composed system's duplicates, partitions and reconnections, which no CI model took,
so the mutants that broke them (an UNCHANGED dropped, a budget never spent) survived.
The rule: for each spec with a mutation suite (models/mutation/<Spec>.toml), each action
of its ``Next`` (a definition named in ``Next`` whose body primes a variable, directly or
through another) has a reachability witness ``NeverStep<Action>Step`` (an action formula,
``~Action``, violated by a step of it) or ``NeverStep<Action>Inv`` (a state predicate
violated once it has been taken) — defined in the model's MC module and checked by TLC
as every witness is (verify/test_models.py: TLC must report it violated) — in at least one
GATING model: a passing model ``make test`` runs (neither slow, nor deep, nor a mutant),
or one of the suite's CI gate.  A spec without ``Next`` is a step function (spec/PBFTReplica.tla:
no variables of its own) whose inputs are taken by the actions of the spec composing it
(STEP_FUNCTIONS): its witnesses are those actions'.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ostrom import layout
from ostrom.verify.mutate.suite import load_suite, suites
from ostrom.verify.tlc.manifest import Manifest, ModelEntry, load_manifest
from ostrom.verify.tlc.modules import used_modules
from ostrom.verify.tlc.text import blank, definitions

MANIFEST = load_manifest(layout.MODELS_DIR / "manifest.json")
_IDENT = re.compile(r"[A-Za-z_]\w*")
#: a step function's entry points, and the action of the composing spec that takes each
#: (spec/PBFTReplica.tla: Step's three inputs and Recover, in spec/PBFTReplicaSystem.tla)
STEP_FUNCTIONS = {
    "PBFTReplica": (
        "PBFTReplicaSystem",
        {"msg": "DeliverLink", "timeout": "FireTimeout", "retransmit": "Retransmission",
         "Recover": "Restart"},
    ),
}  # fmt: skip


def actions_of(text: str) -> list[str]:
    """The actions ``Next`` names, in text order: the definitions of ``text`` it uses
    whose body primes a variable or says UNCHANGED, directly or through another."""
    masked = blank(text, strings=True)
    bodies = {d.name: masked[d.start : d.end] for d in definitions(masked)}
    if "Next" not in bodies:
        return []
    primes: dict[str, bool] = {}

    def is_action(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name not in primes:
            body = bodies[name]
            primes[name] = (
                "'" in body
                or "UNCHANGED" in body
                or any(
                    n in bodies and n not in seen and is_action(n, seen | {name})
                    for n in set(_IDENT.findall(body))
                )
            )
        return primes[name]

    out: list[str] = []
    for name in _IDENT.findall(bodies["Next"]):
        if name in bodies and name != "Next" and name not in out and is_action(name):
            out.append(name)
    return out


def gating_models(manifest: Manifest, spec: str) -> list[ModelEntry]:
    """The passing models that use ``spec`` and that make test runs, and the suite's CI
    gate's models."""
    suite = load_suite(spec)
    out = []
    for entry in manifest.models:
        if entry.expect != "pass" or entry.mutant:
            continue
        uses = {p.stem for p in used_modules(entry.module) if p.parent == layout.SPEC_DIR}
        if spec not in uses:
            continue
        if (not entry.slow and not entry.deep) or entry.name in suite.ci_models:
            out.append(entry)
    return out


def witnesses(action: str) -> tuple[str, str]:
    """The names a witness of ``action`` may have: a step witness, or a state one."""
    return f"NeverStep{action}Step", f"NeverStep{action}Inv"


def missing_witnesses(manifest: Manifest, spec: str) -> list[str]:
    """The actions of ``spec`` without a witness in a gating model (empty: all taken)."""
    if spec in STEP_FUNCTIONS:
        spec, taken = STEP_FUNCTIONS[spec][0], list(STEP_FUNCTIONS[spec][1].values())
    else:
        taken = actions_of((layout.SPEC_DIR / f"{spec}.tla").read_text(encoding="utf-8"))
        assert taken, f"{spec}: no actions found in its Next"
    witnessed = {w for e in gating_models(manifest, spec) for w in e.witnesses}
    return [a for a in taken if not witnessed & set(witnesses(a))]


@pytest.mark.parametrize("spec", suites())
def test_every_action_has_a_witness_in_a_gating_model(spec: str) -> None:
    missing = missing_witnesses(MANIFEST, spec)
    assert not missing, (
        f"{spec}: no gating model (make test's, or the CI gate's) has the witness of "
        + ", ".join(f"{a} ({' or '.join(witnesses(a))})" for a in missing)
    )


def test_the_witnesses_are_defined_where_their_models_run_them() -> None:
    # a witness is a definition of the model's module (or of a module it extends)
    for spec in suites():
        spec = STEP_FUNCTIONS.get(spec, (spec, {}))[0]
        for entry in gating_models(MANIFEST, spec):
            texts = "".join(p.read_text(encoding="utf-8") for p in used_modules(entry.module))
            for name in entry.witnesses:
                if name.startswith("NeverStep"):
                    assert re.search(rf"^{name}\s*==", texts, re.M), (entry.name, name)


def test_a_spec_action_without_a_witness_fails(tmp_path: Path) -> None:
    # the check can fail: take the duplicate witness out of its model and the
    # composed system's Duplicate is reported
    data = {"models": [dict(m) for m in MANIFEST.raw["models"]]}
    for m in data["models"]:
        if "NeverStepDuplicateInv" in m.get("witnesses", []):
            m["witnesses"] = [w for w in m["witnesses"] if w != "NeverStepDuplicateInv"]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert missing_witnesses(load_manifest(path), "PBFTReplicaSystem") == ["Duplicate"]
    # ... and the actions found are the disjuncts of Next that act
    text = (layout.SPEC_DIR / "PBFTReplicaSystem.tla").read_text(encoding="utf-8")
    assert actions_of(text) == [
        "DeliverLink", "DeliverAt", "Drop", "Duplicate", "FireTimeout", "Retransmission",
        "Restart", "Partition", "ClientRetry", "NewRound", "Heal", "Reconnect", "ByzSend",
        "Terminated",
    ]  # fmt: skip
