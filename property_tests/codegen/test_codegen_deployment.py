"""docs/deployment.md's table of limits (codegen/deployment_docs.py) says what the code
does: each row's default is the value where the limit is defined, read again here
independently, and the table changes when a default does (so it cannot drift)."""

from __future__ import annotations

import re

import pytest

from ostrom.cli.service import serve
from ostrom.cluster import front
from ostrom.codegen import deployment_docs
from ostrom.protocol.params import DEFAULTS
from ostrom.service import budget, limits, openapi


def _rows() -> dict[str, str]:
    out = {}
    for line in deployment_docs.limits_table().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = cells[1]
    return out


def test_each_default_is_the_codes() -> None:
    rows = _rows()
    assert rows["`ostrom serve --header-timeout`"] == str(limits.DEFAULT_LIMITS.header_timeout)
    assert rows["`ostrom serve --max-connections`"] == str(limits.DEFAULT_LIMITS.max_connections)
    assert rows["`ostrom serve --refusal-burst`"] == str(budget.DEFAULT_BURST)
    assert rows["parameter `refused_row_bytes`"].startswith(f"{DEFAULTS.refused_row_bytes:,}")
    assert rows["parameter `content_limit`"].startswith(f"{DEFAULTS.content_limit:,}")
    assert rows["node body limit"].startswith(f"{openapi.BODY_LIMIT:,}")
    assert rows["cluster front queue"].startswith(f"{front.MAX_QUEUED_BYTES:,}")
    # every limit option of serve is in the table
    names = {p.name for p in serve.params}
    assert set(deployment_docs.SERVE_LIMITS) <= names
    assert all(re.fullmatch(r"[\w.,()+ ]+", v) for v in rows.values()), rows


def test_the_table_follows_a_changed_default(monkeypatch: pytest.MonkeyPatch) -> None:
    before = deployment_docs.limits_table()
    monkeypatch.setattr(front, "MAX_QUEUED_BYTES", 32 << 20)
    assert deployment_docs.limits_table() != before
    assert _rows()["cluster front queue"].startswith(f"{32 << 20:,}")
