"""The suite is shown to catch bugs: every mutant driver is killed (issue 5, item 6).

Each mutant of ``ostrom.conformance.mutants`` is a reference driver with one deliberate bug
(``python -m ostrom.conformance.driver --mutant NAME``).  This test runs, for every one of them:

* ``ostrom conform`` in-process (``runner.run_suite``) on the vectors of the mutant's layer
  — at least one vector must fail;
* ``ostrom validate-trace`` on the ``--log`` logs of the mutant replaying its first failing
  vectors, for the layers with a trace spec (lifecycle, community, sanctions, pbft) — at
  least one log must be rejected by the spec, while the reference's logs of the same
  vectors are accepted; the mutants whose bug their spec cannot see
  (``killmatrix.OUTSIDE_SPEC``, each with its reason; none at present) must be exactly
  those it accepts.  The other layers (voting, reputation, forgetting) have no TLA+ spec:
  ``n/a``, with the reason.

It prints the kill matrix and fails if any mutant survives; it also checks that the table
in docs/conformance.md is the one this run prints (regenerate it with
``ostrom docs --only kill-matrix``).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from ostrom import layout
from ostrom.codegen import registry as generated
from ostrom.conformance import killmatrix
from ostrom.conformance.mutants import MUTANTS
from ostrom.docblocks import replace_block
from ostrom.verify import registry

pytestmark = pytest.mark.tlc  # one worker holds the module's fixture

#: The bugs issue 5 names, each with the mutant that plays it.
REQUIRED = {
    "an ignored objection": "lifecycle-ignored-objection",
    "an unchecked reveal": "lifecycle-unchecked-reveal",
    "a tier guard off by one": "lifecycle-tier-off-by-one",
    "a dispute bound dropped": "lifecycle-dispute-unbounded",
    "a stale reveal accepted": "lifecycle-stale-reveal",
    "supersession skipped": "lifecycle-no-supersede",
    "a sanction not enforced": "community-sanction-not-enforced",
    "a PBFT replica that prepares twice in a view": "pbft-prepares-twice",
}

#: Check labels of the property tests for rules without a docs/design.md §7 id.
LABELS = {"REFUSAL", "FARM-CAP", "FG-EXACT"}
TOKEN = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*\b")


@pytest.fixture(scope="module")
def matrix() -> list[killmatrix.Row]:
    return killmatrix.build()


def test_registry() -> None:
    known = {p.id for p in registry.load()} | LABELS
    assert len(MUTANTS) >= 12
    for bug, name in REQUIRED.items():
        assert name in MUTANTS, f"no mutant plays {bug!r}"
    layers = {m.layer for m in MUTANTS.values()}
    assert layers >= {"lifecycle", "community", "voting", "reputation", "sanctions"}
    assert layers >= {"forgetting", "pbft"}
    assert set(killmatrix.TRACED_LAYERS) == {"lifecycle", "community", "sanctions", "pbft"}
    for name, m in MUTANTS.items():
        assert name.startswith(f"{m.layer}-"), name
        named = set(TOKEN.findall(m.description)) & known
        assert named, f"{name}: the description names no property id"


def test_every_mutant_is_selectable_by_the_driver() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--list-mutants"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert [line.split("\t")[0] for line in listed] == list(MUTANTS)


@pytest.mark.mutation  # the suite's mutation gate, two minutes of drivers and TLC: make mutate
def test_kill_matrix(matrix: list[killmatrix.Row], capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print("\n" + killmatrix.plain(matrix))
    survivors = [r.name for r in matrix if not r.conform.killed]
    assert not survivors, f"no vector fails these mutants (a gap in the suite): {survivors}"
    for r in matrix:
        if r.layer not in killmatrix.TRACED_LAYERS:
            assert r.trace.status == "n/a" and r.trace.detail, r.name
    traced = [r for r in matrix if r.layer in killmatrix.TRACED_LAYERS]
    if any(r.trace.status == "unavailable" for r in traced):
        pytest.skip("conform kills every mutant; validate-trace is not in this tree yet")
    missed = [f"{r.name}: {r.trace.status}: {r.trace.detail}" for r in traced if r.survives]
    assert not missed, f"validate-trace does not reject these mutants: {missed}"
    outside = {r.name for r in traced if r.trace.status == "outside"}
    assert outside == set(killmatrix.OUTSIDE_SPEC), (
        "killmatrix.OUTSIDE_SPEC is stale: validate-trace now rejects "
        f"{sorted(set(killmatrix.OUTSIDE_SPEC) - outside)}"
    )
    for r in traced:
        assert r.trace.status in ("rejected", "refused", "outside"), (r.name, r.trace)


@pytest.mark.mutation  # the suite's mutation gate, two minutes of drivers and TLC: make mutate
def test_docs_hold_the_current_matrix(matrix: list[killmatrix.Row]) -> None:
    # The registry's kill-matrix entry, checked with this module's one run of the matrix
    # (the registry's drift test leaves its slow entries to the tests that already run them).
    entry = generated.by_name("kill-matrix")
    assert entry.slow and entry.block is not None
    text = (layout.ROOT / entry.path).read_text(encoding="utf-8")
    current = replace_block(text, entry.block, generated.kill_matrix_block(matrix), entry.comment)
    assert current == text, f"{entry.path} holds an old kill matrix: ostrom docs --only kill-matrix"


@pytest.mark.mutation  # the suite's mutation gate, two minutes of drivers and TLC: make mutate
def test_markdown_names_every_mutant(matrix: list[killmatrix.Row]) -> None:
    table = killmatrix.markdown(matrix)
    for name in MUTANTS:
        assert f"`{name}`" in table
    data = killmatrix.to_json(matrix)
    assert [m["name"] for m in data["mutants"]] == list(MUTANTS)
