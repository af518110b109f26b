"""The module order of the workers (durations.py, conftest.py): measured seconds per module
file, a test class counted in its module, and a broken or missing file is no order at all."""

from __future__ import annotations

from pathlib import Path

import durations

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="suite.protocol.test_a" name="test_x" time="1.25"/>
<testcase classname="suite.protocol.test_a" name="test_y" time="0.5"/>
<testcase classname="suite.service.test_b.TestNode" name="runTest" time="3"/>
</testsuite></testsuites>
"""


def test_seconds_are_summed_per_module_file(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT, encoding="utf-8")
    assert durations.module_seconds(junit) == {
        "suite/protocol/test_a.py": 1.8,
        "suite/service/test_b.py": 3.0,
    }


def test_a_bad_file_is_no_order(tmp_path: Path) -> None:
    for text in ("", "[1, 2]", '{"a": "slow"}', "{not json"):
        f = tmp_path / "d.json"
        f.write_text(text, encoding="utf-8")
        assert durations.load(f) == {}
    assert durations.load(tmp_path / "missing.json") == {}


def test_bad_input_is_exit_2(tmp_path: Path) -> None:
    assert durations.main([]) == 2
    assert durations.main([str(tmp_path / "missing.xml")]) == 2
    (tmp_path / "bad.xml").write_text("<unclosed", encoding="utf-8")
    assert durations.main([str(tmp_path / "bad.xml")]) == 2


def test_the_committed_order_names_existing_modules() -> None:
    root = Path(durations.__file__).resolve().parent.parent
    recorded = durations.load()
    assert recorded, "property_tests/durations.json is missing: make test-durations"
    stale = [m for m in recorded if not (root / m).is_file()]
    assert not stale, f"durations.json names modules that are gone: {stale}"
