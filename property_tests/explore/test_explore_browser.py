"""The explorer's pages in a real browser: Debian's headless Chromium, driven by Selenium
through Debian's chromedriver (nothing downloaded: scripts/setup.sh installs both).

For each kind of page (lifecycle, PBFTReplicaSystem and Algorithm 1 counterexamples, the
last with --params too, a PBFT vector): it loads from ``file://`` with no console error;
the keys step through it (→ and ← move the current step, and the action shown, the
highlighted rows of the state table and the highlighted chart rows follow); the chart
has one arrow per message; the state diagram highlights exactly the states the step's
artifacts are in; every link resolves. A screenshot of each page is kept under
build/test-artifacts/explore/. (The ``browser`` fixture is conftest.py's.)
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main

pytestmark = [pytest.mark.browser, pytest.mark.tlc]  # tlc: the --params page runs TLC

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "test-artifacts" / "explore"
PAGES = {
    "lifecycle": ROOT / "vectors" / "lifecycle" / "traces" / "tlc-sim-3.itf.json",
    "pbft": ROOT / "docs" / "counterexamples" / "drop-own-view-change.itf.json.gz",
    "alg1": ROOT / "docs" / "counterexamples" / "alg1" / "forged-votes.itf.json.gz",
    "vector": ROOT / "vectors" / "lifecycle" / "dispute" / "retracted-by-two-of-three.json",
    "pbft-vector": ROOT / "vectors" / "pbft" / "commit" / "committed-local-executes.json",
    "alg1-params": ROOT / "docs" / "counterexamples" / "alg1" / "forged-votes.itf.json.gz",
    "pbft-spec": ROOT / "property_tests" / "fixtures" / "tla" / "pbft-mutant-commit-2f.itf.json.gz",
}
#: pages written with ``--params`` (each step names the values its action was taken with)
WITH_PARAMS = {"alg1-params"}


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pages")
    made = {}
    for name, src in PAGES.items():
        page = out / f"{name}.html"
        extra = ["--params"] if name in WITH_PARAMS else []
        r = CliRunner().invoke(main, ["explore", str(src), "-o", str(page), *extra])
        assert r.exit_code == 0, r.output
        made[name] = page
    return made


def _open(browser: Any, page: Path, name: str) -> None:
    browser.get("about:blank")
    browser.get_log("browser")  # what earlier pages of the session logged
    browser.get(page.as_uri())
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, f"{name}: console errors {errors}"


def _key(browser: Any, key: str) -> None:
    from selenium.webdriver.common.by import By

    browser.find_element(By.TAG_NAME, "body").send_keys(key)


def _state(browser: Any) -> dict[str, Any]:
    return dict(
        browser.execute_script(
            "const d = JSON.parse(document.getElementById('trace-data').textContent);"
            "const i = window.ostromExplore.current();"
            "return {i: i, step: d.steps[i], n: d.steps.length, messages: d.messages,"
            " action: document.getElementById('action-name').textContent,"
            " position: document.getElementById('position').textContent,"
            " sidebar: document.querySelector('#steps li.current .n').textContent,"
            " changed: [...document.querySelectorAll('#vars tr.changed')].map(r => r.dataset.var),"
            " nodes: [...document.querySelectorAll('#diagram g.node.current title')]"
            "   .map(t => t.textContent.trim()),"
            " arrows: document.querySelectorAll('svg.msc g.arrow').length,"
            " lit: [...document.querySelectorAll('svg.msc [data-step].current')]"
            "   .map(g => Number(g.dataset.step)),"
            " links: [...document.querySelectorAll('a[href]')].map(a => a.href)};"
        )
    )


@pytest.mark.parametrize("name", list(PAGES))
def test_page_steps_highlights_and_links(browser: Any, pages: dict[str, Path], name: str) -> None:
    from selenium.webdriver.common.keys import Keys

    _open(browser, pages[name], name)
    first = _state(browser)
    assert first["i"] == 0 and first["n"] > 1
    _key(browser, Keys.ARROW_RIGHT)
    _key(browser, Keys.ARROW_RIGHT)
    now = _state(browser)
    assert now["i"] == 2
    step = now["step"]
    assert now["action"].startswith(step["action"])
    # one numbering: the header says what the sidebar says (for a trace, as `ostrom
    # explain` does: step 0 is the initial state; a vector numbers its commands from 1)
    last = _state(browser) and browser.execute_script(
        "const d = JSON.parse(document.getElementById('trace-data').textContent);"
        "return d.steps[d.steps.length - 1].index;"
    )
    assert now["position"].startswith(f"step {step['index']} of {last}"), now["position"]
    assert now["sidebar"] == str(step["index"])
    if name not in ("vector", "pbft-vector"):
        assert step["index"] == 2 and first["position"].startswith(f"step 0 of {last}")
    if name in WITH_PARAMS:  # the heading is the call with its values (Prepare("a1", ...))
        assert step["args"] and now["action"] == f"{step['action']}({step['args']})", now
    assert set(now["changed"]) == set(step["changed"]) & set(step["state"])
    marks = browser.execute_script(
        "return [...document.querySelectorAll('#vars tr')].map(r =>"
        " [r.dataset.var, [...r.querySelectorAll('mark')].map(m => m.textContent)]);"
    )
    previous = browser.execute_script(
        "const d = JSON.parse(document.getElementById('trace-data').textContent);"
        "return d.steps[window.ostromExplore.current() - 1].state;"
    )
    for var, marked in marks:  # field-level: only new lines of changed variables
        assert not marked or var in step["changed"], (name, var)
        now_lines = Counter(step["state"][var].split("\n")) if marked else Counter()
        extra = now_lines - Counter(previous.get(var, "").split("\n"))
        assert not Counter(marked) - extra, (name, var, marked)  # as a multiset
    assert any(m for _, m in marks) or not now["changed"], f"{name}: no field marked"
    assert now["changed"] or not step["changed"]
    if step["states"]:  # lifecycle: the diagram lights the artifacts' states, no others
        assert set(now["nodes"]) == set(step["states"].values())
        sizes = browser.execute_script(
            "return [...document.querySelectorAll('#diagram g.edge text')]"
            ".map(t => t.getBoundingClientRect().height);"
        )
        assert sizes and min(sizes) >= 10, f"{name}: edge labels {min(sizes):.1f}px high"
        seen = browser.execute_script(
            "const b = document.querySelector('#diagram g.node.current').getBoundingClientRect();"
            "const v = document.getElementById('diagram').getBoundingClientRect();"
            "return b.left >= v.left - 1 && b.right <= v.right + 1;"
        )
        assert seen, f"{name}: the current state is scrolled out of the diagram's view"
    if name in ("pbft", "pbft-spec", "alg1", "alg1-params", "pbft-vector"):
        assert now["messages"] and now["arrows"], f"{name}: a trace with messages has a chart"
    if now["messages"]:  # the chart: one arrow per message, this step's rows lit
        assert now["arrows"] == now["messages"]
        assert set(now["lit"]) <= {step["index"]}
    if now["messages"]:  # scrolled past its top, the chart keeps its lane names in view
        names, top = browser.execute_script(
            "const svg = document.querySelector('svg.msc');"
            "const pane = document.getElementById('detail');"
            "pane.scrollTop = pane.scrollTop + svg.getBoundingClientRect().top"
            "  - pane.getBoundingClientRect().top + 200;"
            "pane.dispatchEvent(new Event('scroll'));"
            "const p = pane.getBoundingClientRect().top;"
            "return [svg.querySelector('g.lane-names').getBoundingClientRect().top - p,"
            "        svg.getBoundingClientRect().top - p];"
        )
        # at the pane's top once the chart's top has scrolled above it, else at the chart's
        assert abs(names - max(0.0, top)) <= 2, f"{name}: lane names at {names}, chart {top}"
        if name == "pbft":  # a chart long enough to scroll: the pinning is exercised
            assert top < -100
    _key(browser, Keys.ARROW_LEFT)
    assert _state(browser)["i"] == 1
    _key(browser, Keys.END)
    end = _state(browser)
    assert end["i"] == now["n"] - 1 and end["position"].startswith(f"step {last} of {last}")
    for href in now["links"]:
        url = urlparse(href)
        assert url.scheme == "file", href
        assert Path(unquote(url.path)).is_file(), f"{name}: broken link {href}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _key(browser, Keys.HOME)
    _key(browser, Keys.ARROW_RIGHT)
    browser.save_screenshot(str(ARTIFACTS / f"{name}.png"))
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, f"{name}: console errors {errors}"
