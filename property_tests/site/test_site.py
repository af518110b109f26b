"""``make site``: the documentation site builds (MkDocs --strict) and every link resolves.

* every page of docs/ is in the site, the README is its home page;
* no Mermaid is left (each block became its committed SVG), each committed trace has its
  explorer page, embedded in the counterexamples page;
* ``check_links`` finds every broken link: a page whose link is cut is reported;
* the search index holds every page;
* in headless Chromium, served over loopback: the pages load without console errors, the
  search finds a lab by a word of it, and every link of the pages it visits answers 200.
"""

from __future__ import annotations

import contextlib
import functools
import html
import http.server
import json
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import pytest

from ostrom.site.build import build_site, check_links

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "test-artifacts" / "site"


def _page(md: str) -> str:
    """The site's page of a docs file (a README is its folder's index)."""
    path = Path(md).with_suffix(".html")
    return (path.with_name("index.html") if path.name == "README.html" else path).as_posix()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("site")
    return build_site(ROOT, base / "site", stage_dir=base / "site-src")


def test_every_doc_is_a_page(site: Path) -> None:
    assert (site / "index.html").is_file()
    for md in sorted((ROOT / "docs").rglob("*.md")):
        rel = md.relative_to(ROOT).with_suffix(".html")
        if rel.name == "README.html":
            rel = rel.with_name("index.html")
        assert (site / rel).is_file(), f"{md.relative_to(ROOT)} is not in the site"


def test_no_mermaid_and_the_explorer_is_embedded(site: Path) -> None:
    for page in site.rglob("*.html"):
        assert "language-mermaid" not in page.read_text(encoding="utf-8"), page
    cex = (site / "docs" / "counterexamples" / "index.html").read_text(encoding="utf-8")
    traces = [*(ROOT / "docs/counterexamples").glob("*.itf.json*"),
              *(ROOT / "docs/counterexamples/alg1").glob("*.itf.json*")]  # fmt: skip
    assert cex.count("<iframe") == len(traces) >= 4
    assert len(list((site / "explore").glob("*.html"))) == len(traces)


def test_the_labs_answers_are_folded(site: Path) -> None:
    """Each lab's Answer is inside a closed <details> and still rendered as Markdown
    (md_in_html): a strong "Answer." and no raw ``**`` left."""
    labs = sorted((ROOT / "docs" / "labs").glob("[0-9][0-9]-*.md"))
    assert labs
    for md in labs:
        html = (site / _page(str(md.relative_to(ROOT)))).read_text(encoding="utf-8")
        m = re.search(r"<details>(.*?)</details>", html, re.S)
        assert m is not None, f"{md.name}: no folded answer"
        assert "<strong>Answer.</strong>" in m.group(1) and "**" not in m.group(1), md.name
        assert "<strong>Answer.</strong>" not in html.replace(m.group(0), ""), md.name


def test_the_site_loads_nothing_from_the_network(site: Path) -> None:
    """Scripts, styles, images and frames are the site's own (a link may point out)."""
    loads = re.compile(r"<(script|img|iframe)[^>]+src=[\"']https?:|<link[^>]+href=[\"']https?:")
    for page in site.rglob("*.html"):
        m = loads.search(page.read_text(encoding="utf-8"))
        assert m is None, f"{page.relative_to(site)} loads {m.group(0) if m else ''}"


def test_check_links_finds_a_broken_link(site: Path, tmp_path: Path) -> None:
    assert check_links(site) == []
    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    (copy / "docs" / "glossary.html").unlink()
    broken = check_links(copy)
    assert broken and all("glossary.html" in b for b in broken)


def test_the_search_index_holds_every_page(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text())
    locations = {d["location"].split("#")[0] for d in index["docs"]}
    assert _page("docs/labs/01-supersede.md") in locations and _page("docs/primer.md") in locations


def test_the_writing_labs_answers_are_folded(site: Path) -> None:
    """A writing lab's answer is a closed ``<details>`` with its markdown rendered inside
    (``md_in_html`` in mkdocs.yml: without it the code would show as raw text), and no
    line of its code is on the page outside it."""
    labs = sorted((ROOT / "docs" / "labs" / "writing").glob("w[0-9]-*.md"))
    assert len(labs) >= 3
    for lab in labs:
        page = (site / _page(lab.relative_to(ROOT).as_posix())).read_text(encoding="utf-8")
        folds = re.findall(r"<details([^>]*)>(.*?)</details>", page, re.S)
        assert folds, f"{lab.name}: no folded answer"
        outside = html.unescape(re.sub(r"<details.*?</details>", "", page, flags=re.S))
        for attrs, body in folds:
            assert "open" not in attrs and "<summary>" in body, lab.name
            prose = re.sub(r"<pre>.*?</pre>", "", body, flags=re.S)
            rendered = "<pre>" in body and "<p>" in prose and "`" not in prose
            assert rendered and "markdown=" not in attrs, f"{lab.name}: the fold is raw markdown"
            for code in re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", body, re.S):
                for line in html.unescape(code).splitlines():
                    if " " in line.strip() and len(line.strip()) > 12:  # a formula, not a name
                        assert line.strip() not in outside, f"{lab.name}: {line!r} unfolded"


@contextlib.contextmanager
def _serve(root: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.browser
def test_the_site_in_a_browser(site: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with _serve(site) as base:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        browser.get("about:blank")
        browser.get_log("browser")
        for path in ("index.html", *map(_page, ("docs/lifecycle.md", "docs/consensus.md",
                     "docs/counterexamples/README.md", "docs/labs/01-supersede.md"))):  # fmt: skip
            browser.get(f"{base}/{path}")
            errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            assert not errors, f"{path}: {errors}"
            browser.save_screenshot(str(ARTIFACTS / (path.replace("/", "_") + ".png")))
            for a in browser.find_elements(By.CSS_SELECTOR, "a[href]"):
                href = a.get_attribute("href") or ""
                if href.startswith(base):
                    with urlopen(href.split("#")[0]) as resp:
                        assert resp.status == 200, href
        browser.get(f"{base}/search.html?q=supersedes")
        WebDriverWait(browser, 20).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#mkdocs-search-results a")
        )
        hits = [a.get_attribute("href") or "" for a in
                browser.find_elements(By.CSS_SELECTOR, "#mkdocs-search-results a")]  # fmt: skip
        assert any("supersede" in h or "lifecycle" in h for h in hits), hits
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, f"search: {errors}"
        browser.get("about:blank")  # nothing of this site's left running when it stops
