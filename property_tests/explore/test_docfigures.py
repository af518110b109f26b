"""The docs' message-sequence charts (reference/ostrom/explore/docfigures.py).

That every generated SVG is current is the drift test of the generated-files registry
(property_tests/codegen/test_generated.py). Here:

* PBFT's normal case draws PREPARE and COMMIT as broadcasts: one arrow per sender, with a
  head at each of the other N - 1 replicas;
* every Mermaid block left in docs/ names, in a ``<!-- svg: PATH -->`` line just above it,
  a committed SVG that stands for it (the site shows the SVG).
"""

from __future__ import annotations

import re
from pathlib import Path

from ostrom.explore import docfigures

ROOT = Path(__file__).resolve().parents[2]


def test_prepare_and_commit_are_broadcasts() -> None:
    chart = docfigures.normal_case()
    replicas = 4
    for kind in ("PREPARE", "COMMIT"):
        msgs = [m for m in chart.messages if m.label.startswith(kind)]
        assert msgs and all(len(m.receivers) == replicas - 1 for m in msgs)
        assert all(m.sender not in m.receivers for m in msgs)
    svg = (ROOT / "docs" / "img" / "pbft-normal-case.svg").read_text()
    assert svg.count('<g class="arrow"') == len(chart.messages)


def test_every_mermaid_block_has_its_svg() -> None:
    for md in sorted((ROOT / "docs").rglob("*.md")):
        text = md.read_text(encoding="utf-8")
        for m in re.finditer(r"(?:<!-- svg: (\S+) -->\n)?```mermaid\n", text):
            where = f"{md.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
            assert m.group(1), f"{where}: a mermaid block without a <!-- svg: PATH --> line"
            assert (md.parent / m.group(1)).is_file(), f"{where}: no {m.group(1)}"
