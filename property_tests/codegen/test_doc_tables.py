"""The docs' tables of the command and of the node (codegen/cli_docs.py,
codegen/service_docs.py): one row per entry of their one source, in its order, and
nothing a Markdown table cannot hold.  test_generated.py checks the committed blocks are
these tables; here the tables are checked against the sources row by row.
"""

from __future__ import annotations

from ostrom.cli import EXIT_CODES
from ostrom.codegen.cli_docs import exit_code_table
from ostrom.codegen.service_docs import errors_table, markdown_table
from ostrom.service import ENDPOINTS, GATE_ERRORS


def _rows(table: str) -> list[list[str]]:
    lines = table.rstrip("\n").split("\n")
    assert set(lines[1]) <= {"|", "-"}, "the second line is the header rule"
    cells = [[c.strip() for c in line.strip("| ").split(" | ")] for line in lines]
    del cells[1]
    assert len({len(row) for row in cells}) == 1, "every row has the header's columns"
    return cells[1:]


def test_one_row_per_exit_code() -> None:
    rows = _rows(exit_code_table())
    assert [(int(code), meaning) for code, meaning in rows] == [
        (int(e.code), e.meaning) for e in EXIT_CODES
    ]


def test_one_row_per_gate_error() -> None:
    rows = _rows(errors_table())
    assert [r[0] for r in rows] == [f"`{code}`" for code in GATE_ERRORS]
    assert [int(r[1]) for r in rows] == [e.status for e in GATE_ERRORS.values()]


def test_one_row_per_route_with_its_errors() -> None:
    rows = _rows(markdown_table())
    assert [r[0] for r in rows] == [e.method for e in ENDPOINTS]
    for row, endpoint in zip(rows, ENDPOINTS, strict=True):
        assert "{" in row[1] or "<" not in row[1]  # the OpenAPI form of the path
        assert row[3] == (", ".join(f"`{c}`" for c in endpoint.errors) or "—")
        assert all(code in GATE_ERRORS for code in endpoint.errors)
