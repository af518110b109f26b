"""``make site``: docs/ as a static site (MkDocs), with the explorer pages of its traces.

MkDocs builds from a staged copy of the tree (``build/site-src``), laid out like the
repository so that every relative link of the docs (``../spec/Lifecycle.tla``,
``../reference/ostrom/protocol/orchestrator.py``) resolves in the site as it does on disk:

* ``docs/`` as it is, but each Mermaid block replaced by the committed SVG named on the
  ``<!-- svg: PATH -->`` line above it (the site runs no Mermaid: test_docfigures.py
  checks that every block has one), and docs/counterexamples/README.md followed by an
  embedded explorer page per committed trace;
* README.md as the home page;
* the sources the docs link to (spec/, models/, schema/, examples/, reference/, the tests,
  the benchmarks, drivers/js/), copied as files;
* ``explore/NAME.html``: ``ostrom explore`` of every trace under docs/counterexamples/.

Then ``mkdocs build --strict`` (mkdocs.yml at the root: a warning, such as a link to a
missing file, fails the build) writes ``build/site``, and every ``href`` and ``src`` of
every page is checked to resolve to a file of the site (``check_links``).  The built-in
search of MkDocs is on.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

from ostrom import layout
from ostrom.explore.page import write_page
from ostrom.explore.sources import load

__all__ = ["SiteError", "build_site", "check_links", "stage"]

#: What the site copies besides docs/ (the files the docs link to), with the suffixes kept.
SOURCES: dict[str, tuple[str, ...]] = {
    "spec": (".tla", ".toml"),
    "models": (".tla", ".cfg", ".json"),
    "schema": (".json",),
    "examples": (".toml", ".py"),
    "reference": (".py",),
    "property_tests": (".py",),
    "bench": (".py", ".json"),
    "drivers": (".js", ".json", ".md"),
}
_MERMAID = re.compile(r"<!-- svg: (\S+) -->\n```mermaid\n.*?```\n", re.S)


class SiteError(RuntimeError):
    """The site cannot be built (MkDocs failed, a link does not resolve)."""


def _copy_sources(root: Path, stage_dir: Path) -> None:
    for top, suffixes in SOURCES.items():
        for src in sorted((root / top).rglob("*")):
            if not src.is_file() or src.suffix not in suffixes or "__pycache__" in src.parts:
                continue
            if any(part.startswith(".") for part in src.relative_to(root).parts):
                continue
            dest = stage_dir / src.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)


def _explorer_pages(root: Path, stage_dir: Path) -> list[tuple[str, Path]]:
    """``ostrom explore`` of every committed trace; (title, page) pairs."""
    out = []
    cex = root / "docs" / "counterexamples"
    for trace in sorted([*cex.glob("*.itf.json*"), *(cex / "alg1").glob("*.itf.json*")]):
        stem = trace.name.split(".itf.json")[0]
        name = f"{'alg1-' if trace.parent.name == 'alg1' else ''}{stem}"
        page = stage_dir / "explore" / f"{name}.html"
        write_page(load(trace), page)
        out.append((name, page))
    return out


def stage(root: Path, stage_dir: Path) -> list[Path]:
    """Lay out ``stage_dir`` for MkDocs (see the module docstring); the explorer pages."""
    if stage_dir.exists():
        shutil.rmtree(stage_dir)
    shutil.copytree(root / "docs", stage_dir / "docs")
    for md in (stage_dir / "docs").rglob("*.md"):
        text = md.read_text(encoding="utf-8")
        new = _MERMAID.sub(lambda m: f"![diagram]({m.group(1)})\n", text)
        if new != text:
            md.write_text(new, encoding="utf-8")
    home = (root / "README.md").read_text(encoding="utf-8")
    (stage_dir / "index.md").write_text(home, encoding="utf-8")
    _copy_sources(root, stage_dir)
    pages = _explorer_pages(root, stage_dir)
    readme = stage_dir / "docs" / "counterexamples" / "README.md"
    lines = ["", "## Step through them", ""]
    lines.append(
        "Each trace in the explorer (`ostrom explore`): ← → step, the changed variables "
        "are highlighted, the chart's rows of the current step are drawn in red."
    )
    for name, page in pages:
        rel = Path("..", "..", page.relative_to(stage_dir)).as_posix()
        lines += ["", f"### {name}", "", f"[open the page alone]({rel})", ""]
        lines.append(
            f'<iframe src="{rel}" title="{name}" style="width:100%;height:640px;'
            'border:1px solid #ccc"></iframe>'
        )
    readme.write_text(readme.read_text(encoding="utf-8") + "\n".join(lines) + "\n", "utf-8")
    return [p for _, p in pages]


def build_site(root: Path, out: Path, *, stage_dir: Path | None = None) -> Path:
    """Stage, run ``mkdocs build --strict`` into ``out``, check every link; ``out``."""
    staged = stage_dir or root / "build" / "site-src"
    stage(root, staged)
    cmd = [
        sys.executable, "-m", "mkdocs", "build", "--strict", "--clean",
        "-f", str(root / "mkdocs.yml"), "-d", str(out.resolve()),
    ]  # fmt: skip
    config = (root / "mkdocs.yml").read_text(encoding="utf-8")
    if "docs_dir: build/site-src" not in config or staged != root / "build" / "site-src":
        # mkdocs.yml names the default stage; another stage gets its own copy of the config
        alt = staged.parent / "mkdocs.yml"
        alt.write_text(
            config.replace("docs_dir: build/site-src", f"docs_dir: {staged.resolve()}"),
            encoding="utf-8",
        )
        cmd[cmd.index("-f") + 1] = str(alt)
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=root)
    if done.returncode != 0:
        lines = [ln for ln in done.stderr.splitlines() if "WARNING" in ln or "ERROR" in ln]
        raise SiteError("mkdocs build --strict failed:\n" + "\n".join(lines[:40] or [done.stderr]))
    broken = check_links(out)
    if broken:
        raise SiteError("links that do not resolve:\n" + "\n".join(broken[:40]))
    return out


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("href", "src") and value:
                self.refs.append(value)


def check_links(site: Path) -> list[str]:
    """Every relative ``href``/``src`` of every HTML page of ``site`` that names no file
    (``page: link``); links with a scheme (http, mailto, data) are not followed."""
    broken = []
    for page in sorted(site.rglob("*.html")):
        if page.name == "404.html":  # a server's error page: its links are from the root
            continue
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        for ref in parser.refs:
            url = urlparse(ref)
            if url.scheme or url.netloc or not url.path:
                continue
            target = (page.parent / unquote(url.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {ref}")
    return broken


def default_out() -> Path:
    return layout.ROOT / "build" / "site"
