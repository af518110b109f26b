"""One self-contained HTML page per trace: no server, no network, works from ``file://``.

The page holds its data (``sources.Page`` as JSON in a ``<script type="application/json">``
tag), its style and its script (``assets/``), the lifecycle state diagram (the SVG that
``ostrom docs`` draws from the transition table, docs/img/lifecycle.svg) when the trace
is of the lifecycle, and the message-sequence chart (``chart.render_svg``) when it has
messages.  Links to the spec and the Python sources are relative to where the page is
written, so they open the files of this checkout.
"""

from __future__ import annotations

import json
import os
from html import escape
from importlib import resources
from pathlib import Path

from ostrom import layout
from ostrom.explore.chart import render_svg
from ostrom.explore.sources import Page

__all__ = ["render_page", "write_page"]

DIAGRAM = layout.DOCS_DIR / "img" / "lifecycle.svg"


def _asset(name: str) -> str:
    return resources.files("ostrom.explore").joinpath("assets", name).read_text(encoding="utf-8")


def _script_json(data: object) -> str:
    """JSON that cannot end its ``<script>`` element early: no ``<`` or ``>`` at all."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


def _links(page: Page, out_dir: Path) -> dict[str, str]:
    files = set()
    for d in page.definitions.values():
        for side in ("tla", "python"):
            if side in d:
                files.add(d[side]["file"])
    return {f: Path(os.path.relpath(layout.ROOT / f, out_dir)).as_posix() for f in files}


def render_page(page: Page, out_dir: Path) -> str:
    """The HTML of ``page``, its links relative to ``out_dir``."""
    data = page.to_json() | {"links": _links(page, out_dir)}
    violation = ""
    if page.violation:
        v = page.violation
        pid = f'<span class="pid">{escape(v["property"])}</span> ' if v.get("property") else ""
        violation = (
            f'<div id="violation"><strong>{escape(v["name"])}</strong>: {pid}'
            f"{escape(v['statement'])}</div>"
        )
    figures = []
    if page.lifecycle and DIAGRAM.is_file():
        svg = DIAGRAM.read_text(encoding="utf-8")
        svg = svg[svg.index("<svg") :]  # no XML prolog or DOCTYPE inside HTML
        figures.append(
            '<section class="figure" id="diagram"><h3>The lifecycle (from the transition '
            "table): the states the artifacts are in now are highlighted — "
            f'<span id="diagram-states"></span></h3>{svg}</section>'
        )
    if page.chart is not None:
        figures.append(
            '<section class="figure" id="chart"><h3>Message-sequence chart: one lane per '
            f"process, one arrow per message ({len(page.chart.messages)} messages; a "
            "broadcast has a head at each receiver; dashed and crossed: lost; dotted: "
            "implicit in the spec — <em>derived</em> COMMITs that ComSenders counts but no "
            "state holds, <em>eager</em> COMMITs sent inside the step that prepared them)</h3>"
            f"{render_svg(page.chart)}</section>"
        )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ostrom explore">
<title>{escape(page.title)} — ostrom explore</title>
<style>{_asset("explore.css")}</style>
</head>
<body>
<header>
<h1>{escape(page.title)}</h1>
<div class="sub">{escape(page.subtitle)} · {escape(Path(page.source).name)}</div>
{violation}
</header>
<main>
<ol id="steps" aria-label="steps"></ol>
<div id="detail">
<div id="nav"><button id="prev" type="button">◀ previous</button><button id="next"
type="button">next ▶</button> <span id="position"></span>
<span class="keys">(keys: ← → or j k, Home, End)</span></div>
<div id="action"></div>
<div id="note" role="status"></div>
<ul id="changes"></ul>
<table class="vars"><thead><tr><th>variable</th><th>value after the step (changed: ●)</th></tr>
</thead><tbody id="vars"></tbody></table>
{"".join(figures)}
</div>
</main>
<script type="application/json" id="trace-data">{_script_json(data)}</script>
<script>{_asset("explore.js")}</script>
</body>
</html>
"""


def write_page(page: Page, out: Path) -> Path:
    """Write the page to ``out`` (its directory created); return the path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_page(page, out.parent.resolve()), encoding="utf-8")
    return out
