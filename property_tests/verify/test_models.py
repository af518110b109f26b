"""The manifest's CI models through TLC: passing models pass, mutants are caught, witnesses
are violated, state counts are unchanged — and the spec explores exactly the Python table.

This is ``make check``'s TLC part inside the test suite, so CI fails when a mutant stops
being caught or a model becomes vacuous. The selected rows run once per session (two TLC JVMs
at a time), and each row is its own test so a failure names the model. A model the manifest
marks ``slow`` (with its witnesses) is a ``slow`` test, a mutant model a ``mutation`` test:
``make test-slow`` runs them, ``make mutate`` the mutants, ``make test`` neither, and ``make
check`` always does.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from ostrom.protocol.lifecycle import triples
from ostrom.verify.tlc.manifest import ModelEntry, load_manifest
from ostrom.verify.tlc.runner import RowResult, check_models, select_models

pytestmark = pytest.mark.tlc  # one worker holds the module's fixture

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = load_manifest(ROOT / "models" / "manifest.json")
ENTRIES = select_models(MANIFEST, [], deep=False)
# The passing models whose ACTION_CONSTRAINT RecordRows prints the rows they take: lifecycle-ci
# takes all rows but `resubmit retracted -> proposed`, which the one-artifact lifecycle-ci-solo
# adds (two artifacts that both resubmit do not fit the CI time budget).
CROSS_CHECK_MODELS = ("lifecycle-ci", "lifecycle-ci-solo")


def _marks(entry: ModelEntry) -> list[pytest.MarkDecorator]:
    """A slow model is ``slow``; a mutant model (the spec with a registered bug, which the
    model must catch) is a mutation gate, ``mutation``: ``make mutate`` and ``make check``
    run it, ``make test`` does not re-prove it at every run."""
    return [
        *([pytest.mark.slow] if entry.slow else []),
        *([pytest.mark.mutation] if entry.raw.get("mutant") else []),
    ]


ROWS = [
    pytest.param(n, marks=_marks(e), id=n)
    for e in ENTRIES
    for n in [e.name, *(f"{e.name}/{w}" for w in e.witnesses)]
]
SLOW = {e.name for e in ENTRIES if e.slow}
#: the cross-check models make test runs (the others are slow)
FAST_CROSS_CHECK_MODELS = [m for m in CROSS_CHECK_MODELS if m not in SLOW]


def _selected_models(session: pytest.Session) -> set[str]:
    """The models whose rows this session runs (after -m and -k): only those go to TLC."""
    names = set()
    for item in session.items:
        if not isinstance(item, pytest.Function) or item.module is None:
            continue
        if item.module.__name__ != __name__:
            continue
        spec = getattr(item, "callspec", None)
        if spec is not None:
            names.add(str(spec.params["name"]).split("/")[0])
        elif item.name.startswith("test_spec_reaches_every_row"):
            names.update(CROSS_CHECK_MODELS)
        elif item.name.startswith("test_spec_takes_only_table_rows"):
            names.update(FAST_CROSS_CHECK_MODELS)
    return names


@pytest.fixture(scope="session")
def rows(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, RowResult]:
    out = tmp_path_factory.mktemp("counterexamples")
    wanted = _selected_models(request.session)
    entries = [e for e in ENTRIES if e.name in wanted]
    # two TLC runs at once in one process; one under pytest-xdist, whose other worker keeps
    # the second core busy (the crash and cluster tests there are sensitive to load)
    jobs = 1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
    results = check_models(MANIFEST, ROOT, entries, out_dir=out, jobs=jobs, timeout=900)
    return {r.name: r for r in results}


def test_manifest_has_ci_models_mutants_and_witnesses() -> None:
    assert any(e.expect == "pass" and e.witnesses for e in ENTRIES), (
        "no passing model with witnesses"
    )
    assert any(e.raw.get("mutant") for e in ENTRIES), "no mutant models"


@pytest.mark.parametrize("name", ROWS)
def test_row_shows_what_the_manifest_expects(rows: dict[str, RowResult], name: str) -> None:
    row = rows[name]
    assert row.ok, f"{name}: expected {row.expected}, got {row.got}. {row.message}"


def _reached_rows(row: RowResult) -> set[tuple[str, str, str]]:
    """The (event, source, dest) triples the model's ACTION_CONSTRAINT printed with PrintT."""
    assert row.run is not None
    reached = set()
    for line in row.run.print_lines:
        m = re.match(r'<<"ROW", <<(".*?"), (".*?"), (".*?")>>>>', line.strip())
        if m:
            reached.add(tuple(ast.literal_eval(g) for g in m.groups()))
    return reached


def _rows_taken(rows: dict[str, RowResult], models: list[str]) -> set[tuple[str, str, str]]:
    reached: set[tuple[str, str, str]] = set()
    for name in models:
        assert rows[name].ok, f"{name} must pass (TableInv) before rows can be compared"
        reached |= _reached_rows(rows[name])
    assert reached, "no ROW lines printed: is RecordRows the models' ACTION_CONSTRAINT?"
    return reached


def test_spec_takes_only_table_rows(rows: dict[str, RowResult]) -> None:
    """Spec and code agree, one way (the models of ``make test``): every step TLC takes is a
    row of the Python table (TableInv checks it inside the spec; this checks it against
    the Python table itself)."""
    reached = _rows_taken(rows, FAST_CROSS_CHECK_MODELS)
    table = set(triples())
    assert reached <= table, f"TLC took steps outside the table: {sorted(reached - table)}"


@pytest.mark.slow
def test_spec_reaches_every_row(rows: dict[str, RowResult]) -> None:
    """Spec and code agree, both ways: the steps TLC takes in all the cross-check models are
    exactly the rows of the Python table (``lifecycle-ci`` is slow, so ``make test-slow``)."""
    reached = _rows_taken(rows, list(CROSS_CHECK_MODELS))
    table = set(triples())
    assert reached <= table, f"TLC took steps outside the table: {sorted(reached - table)}"
    assert table <= reached, f"rows of the table TLC never takes: {sorted(table - reached)}"
