"""`ostrom validate-trace` for the pbft layer (ostrom/verify/trace/pbft.py,
spec/PBFTReplica.tla, spec/PBFTReplicaTrace.tla): every pbft vector is a behaviour of the
replica spec, perturbed logs and the pbft mutants' logs are not."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ostrom.conformance import killmatrix
from ostrom.conformance.pbft_mutants import CATCHING_VECTOR, PBFT_MUTANTS
from ostrom.conformance.vectors import load_vector
from ostrom.verify.tlc.jar import TlcSetupError, find_jar, find_java
from ostrom.verify.trace import pbft as pbft_trace
from ostrom.verify.trace.validate import validate_file
from ostrom.verify.trace.verdict import format_verdict

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "vectors"
PBFT = sorted(p for p in (VECTORS / "pbft").glob("*/*.json") if p.parent.name != "traces")


def _tlc() -> bool:
    try:
        find_jar()
        find_java()
    except TlcSetupError:
        return False
    return True


pytestmark = [
    pytest.mark.tlc,
    pytest.mark.skipif(not _tlc(), reason="TLC (java + tla2tools.jar) not available"),
]


def _doc(rel: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((VECTORS / f"{rel}.json").read_text(encoding="utf-8"))
    return doc


def test_every_pbft_vector_is_accepted() -> None:
    assert len(PBFT) == 39
    logs = [pbft_trace.log_from_vector(json.loads(p.read_text(encoding="utf-8"))) for p in PBFT]
    verdicts = pbft_trace.validate_logs(logs)
    bad = [format_verdict(v) for v in verdicts if v.status != "accepted"]
    assert not bad, "\n".join(bad)
    assert all(v.spec == "spec/PBFTReplica.tla" for v in verdicts)


def _perturbed() -> list[tuple[str, dict[str, Any], int]]:
    """(what, vector doc, the 0-based step that must be rejected)."""
    out: list[tuple[str, dict[str, Any], int]] = []
    base = _doc("pbft/reject/conflicting-pre-prepare")
    # a backup that does not prepare the pre-prepare it accepts
    d = copy.deepcopy(base)
    d["steps"][0]["expect"]["events"] = []
    out.append(("no prepare", d, 0))
    # a second PREPARE for the conflicting pre-prepare (what pbft-prepares-twice does)
    d = copy.deepcopy(base)
    d["steps"][1]["expect"]["events"].append(copy.deepcopy(base["steps"][0]["expect"]["events"][0]))
    out.append(("prepares twice", d, 1))
    # a forged vote that changes the state
    d = _doc("pbft/reject/forged-votes")
    d["steps"][2]["expect"]["state"]["pending"] += 1
    out.append(("forged vote changes state", d, 2))
    # a refusal reason the spec does not give
    d = _doc("pbft/reject/stale-and-future-view")
    d["steps"][5]["expect"]["events"][0]["reason"] = "stale_view"
    out.append(("wrong reason", d, 5))
    # executes without a commit quorum (drop the last commit's step's precondition)
    d = _doc("pbft/commit/committed-local-executes")
    del d["steps"][3]
    out.append(("executes without quorum", d, 3))
    # a wrong checkpoint digest in the observed state
    d = _doc("pbft/checkpoint/stable-and-garbage-collected")
    last = d["steps"][-1]["expect"]["state"]
    last["stable_digest"] = "0" * 64
    out.append(("stable digest", d, len(d["steps"]) - 1))
    # no back-off: the timeout does not double
    d = _doc("pbft/timeout/exponential-back-off")
    d["steps"][1]["expect"]["state"]["timeout"] = 100
    out.append(("no back-off", d, 1))
    # an invalid command answered ok
    d = _doc("pbft/reject/invalid-commands")
    d["steps"][0]["expect"]["result"] = "ok"
    out.append(("invalid command ok", d, 0))
    return out


def test_perturbed_logs_are_rejected_at_the_perturbed_step() -> None:
    cases = _perturbed()
    logs = [pbft_trace.log_from_vector(doc) for _, doc, _ in cases]
    verdicts = pbft_trace.validate_logs(logs)
    for (what, _, step), v in zip(cases, verdicts, strict=True):
        assert v.status == "rejected", (what, v.message)
        assert v.failure is not None and v.failure.step == step, (what, format_verdict(v))


@pytest.mark.parametrize("name", sorted(PBFT_MUTANTS))
@pytest.mark.mutation  # the kill matrix's rows of this layer, in small: make mutate
def test_mutant_logs_are_rejected(name: str, tmp_path: Path) -> None:
    vector = load_vector(VECTORS / f"{CATCHING_VECTOR}.json", VECTORS)
    (ref,) = killmatrix.write_logs(None, [vector], tmp_path)
    (mut,) = killmatrix.write_logs(name, [vector], tmp_path)
    good, bad = pbft_trace.validate_paths([ref, mut])
    assert good.status == "accepted", good.message
    assert bad.status == "rejected", bad.message
    assert bad.failure is not None and bad.failure.step == 1  # the conflicting PRE-PREPARE
    assert "Prepare" in bad.message


def test_cli_dispatch_and_unusable(tmp_path: Path) -> None:
    vector = load_vector(VECTORS / "pbft/pre_prepare/primary-assigns-sequence.json", VECTORS)
    (log,) = killmatrix.write_logs(None, [vector], tmp_path)
    v = validate_file(log)  # trace.validate_file dispatches on the header's layer
    assert v.status == "accepted" and v.exit_code == 0, v.message
    lines = log.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["setup"]["n"], header["setup"]["f"] = 13, 4
    big = tmp_path / "big.jsonl"
    big.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    u = validate_file(big)
    assert u.status == "unusable" and u.exit_code == 2 and "n=13" in u.message
