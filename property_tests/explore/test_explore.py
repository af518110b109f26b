"""``ostrom explore``: one self-contained page per trace, and what it shows.

* each kind of file (an ITF counterexample of the lifecycle, of PBFTReplicaSystem, of
  Algorithm 1; a lifecycle vector; a PBFT vector; a trace log with its verdict) becomes a
  page that loads nothing from anywhere (no http, no src= but data);
* the message-sequence chart has one arrow per message, counted independently of the
  chart's own code: for Algorithm 1 the new elements of its message sets, for
  PBFTReplicaSystem the arrows of verify/tlc/sequence.py's chart;
* the lifecycle states a step highlights are the artifacts' states in that step's data
  (the vector's expected state, the ITF's ``art[x].st``);
* each step's action links its TLA+ definition and the Python method the spec cites, and
  every link of the page resolves to a file of the checkout;
* a violation is named in words from the property registry, a rejected log's step marked.

test_explore_browser.py opens the pages in headless Chromium.
"""

from __future__ import annotations

import gzip
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.explore import sources
from ostrom.explore.chart import chart_from_pbft
from ostrom.explore.page import render_page
from ostrom.verify.tlc import sequence

ROOT = Path(__file__).resolve().parents[2]
CEX = ROOT / "docs" / "counterexamples"
LIFECYCLE_ITF = ROOT / "vectors" / "lifecycle" / "traces" / "tlc-sim-3.itf.json"
PBFT_ITF = CEX / "drop-own-view-change.itf.json.gz"
ALG1_ITF = CEX / "alg1" / "forged-votes.itf.json.gz"
LIFECYCLE_VECTOR = ROOT / "vectors" / "lifecycle" / "dispute" / "retracted-by-two-of-three.json"
PBFT_VECTOR = ROOT / "vectors" / "pbft" / "commit" / "committed-local-executes.json"
LOG = Path(__file__).parents[1] / "fixtures" / "logs" / "lifecycle-tally.jsonl"
#: lab 07's counterexample (spec/PBFT.tla, model pbft-mutant-commit-2f: Mode "safety")
PBFT_SPEC_ITF = Path(__file__).parents[1] / "fixtures" / "tla" / "pbft-mutant-commit-2f.itf.json.gz"


def page_of(path: Path, tmp: Path, *extra: str) -> tuple[str, dict[str, Any]]:
    out = tmp / (path.name.split(".")[0] + ".html")
    r = CliRunner().invoke(main, ["explore", str(path), "-o", str(out), *extra])
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', html, re.S)
    assert m is not None
    return html, json.loads(m.group(1))


def _itf(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    data: dict[str, Any] = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return data


ALL = [LIFECYCLE_ITF, PBFT_ITF, ALG1_ITF, LIFECYCLE_VECTOR, PBFT_VECTOR, LOG]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_every_kind_is_one_self_contained_page(tmp_path: Path, path: Path) -> None:
    html, data = page_of(path, tmp_path)
    assert "http://" not in html.replace("http://www.w3.org/", "")  # SVG namespaces only
    assert "https://" not in html
    assert not re.search(r"<(script|img|link)[^>]+(src|href)=", html)  # nothing loaded
    assert data["steps"] and all(s["action"] for s in data["steps"])
    for step in data["steps"][1:]:
        assert set(step["changed"]) <= set(step["state"])


def test_the_sequence_chart_has_one_arrow_per_alg1_message(tmp_path: Path) -> None:
    """Counted from the trace itself: every element a step adds to a message set."""
    html, data = page_of(ALG1_ITF, tmp_path)
    states = _itf(ALG1_ITF)["states"]
    sent = 0
    for old, new in itertools.pairwise(states):
        for var in ("props", "prepares", "commits", "vcs"):
            before = {json.dumps(m) for m in old[var]["#set"]}
            sent += sum(json.dumps(m) not in before for m in new[var]["#set"])
    assert sent > 0
    assert html.count('<g class="arrow') == sent == data["messages"]
    assert "(Byzantine)" in html  # the forger's lane


def test_the_sequence_chart_has_one_arrow_per_pbft_message(tmp_path: Path) -> None:
    html, data = page_of(PBFT_ITF, tmp_path)
    arrows = [
        e
        for step in sequence.chart_from_itf(_itf(PBFT_ITF)).steps
        for e in step.events
        if isinstance(e, sequence.Arrow)
    ]
    assert html.count('<g class="arrow') == len(arrows) == data["messages"]
    broadcasts = [a for a in arrows if len(a.receivers) > 1]
    assert broadcasts, "a broadcast is one arrow with several heads"
    chart = chart_from_pbft(_itf(PBFT_ITF))
    assert sum(len(m.receivers) > 1 for m in chart.messages) == len(broadcasts)


def _vnr(m: dict[str, Any]) -> tuple[int, int, str]:
    return m["v"], m["n"], json.dumps(m["r"])


def test_a_pbft_spec_trace_is_charted_with_its_implicit_commits(tmp_path: Path) -> None:
    """spec/PBFT.tla keeps messages as sets: one arrow per element a step adds, plus the
    two requests and the view-0 pre-prepares at step 0, plus one *derived* COMMIT per
    Byzantine replica (r0) for each certificate that appears (2f = 2 PREPAREs from
    backups, counted here from the trace); honest COMMITs are marked *eager*."""
    html, data = page_of(PBFT_SPEC_ITF, tmp_path)
    states = _itf(PBFT_SPEC_ITF)["states"]

    def certs(state: dict[str, Any]) -> set[tuple[int, int, str]]:
        out = set()
        for pp in state["pp"]["#set"]:
            key = _vnr(pp)
            backups = {
                p["src"] for p in state["prep"]["#set"] if _vnr(p) == key and p["src"] != key[0] % 4
            }
            if len(backups) >= 2:
                out.add(key)
        return out

    sent = derived = 0
    for old, new in itertools.pairwise(states):
        for var in ("pp", "prep", "com", "vc", "byzvc", "nv"):
            before = {json.dumps(m) for m in old[var]["#set"]}
            sent += sum(json.dumps(m) not in before for m in new[var]["#set"])
        derived += len(certs(new) - certs(old))
    initial = 1 + len(states[0]["pp"]["#set"])  # the requests, the view-0 pre-prepares
    assert derived == 2 and sent > 0
    assert html.count('<g class="arrow') == sent + derived + initial == data["messages"]
    assert html.count('<g class="arrow derived"') == derived
    assert html.count('<g class="arrow eager"') == sum(
        len(s["com"]["#set"]) for s in states[-1:]
    )  # every honest COMMIT of this trace is eager
    assert "COMMIT v0 n1 r1 (derived)" in html and "(Byzantine)" in html


@pytest.mark.tlc
def test_a_pbft_spec_step_names_its_replica_as_tlc_does(tmp_path: Path) -> None:
    """Without --params each one-parameter step of a PBFT.tla page names the replica that
    acts, read off the chart; TLC's own bindings (--params) must say the same."""
    _, inferred = page_of(PBFT_SPEC_ITF, tmp_path)
    _, bound = page_of(PBFT_SPEC_ITF, tmp_path / "p", "--params")
    got = [(s["action"], s["args"]) for s in inferred["steps"][1:]]
    assert all(args for _, args in got)
    assert got == [(s["action"], s["args"]) for s in bound["steps"][1:]]


def test_explain_sequence_draws_a_pbft_spec_trace() -> None:
    r = CliRunner().invoke(main, ["explain", "--sequence", str(PBFT_SPEC_ITF)])
    assert r.exit_code == 0, r.output
    assert "NEW-VIEW v1" in r.output and "derived" in r.output and "eager" in r.output
    assert "r0 Byzantine" in r.output


def test_lifecycle_steps_highlight_the_artifacts_states(tmp_path: Path) -> None:
    html, data = page_of(LIFECYCLE_VECTOR, tmp_path)
    vector = json.loads(LIFECYCLE_VECTOR.read_text())
    assert 'id="diagram"' in html
    for step, raw in zip(data["steps"], vector["steps"], strict=True):
        want = {x: a["state"] for x, a in raw["expect"]["state"]["artifacts"].items()}
        assert step["states"] == want
    assert "retracted" in data["steps"][-1]["states"].values()
    _, itf = page_of(LIFECYCLE_ITF, tmp_path)
    art = _itf(LIFECYCLE_ITF)["states"][-1]["art"]
    assert itf["steps"][-1]["states"] == {x: r["st"] for x, r in art.items() if r["st"] != "none"}


def test_actions_link_their_definition_and_python_method(tmp_path: Path) -> None:
    _, data = page_of(LIFECYCLE_VECTOR, tmp_path)
    defs = data["definitions"]
    reveal = defs["RevealVote"]
    assert reveal["tla"]["file"] == "spec/Lifecycle.tla" and reveal["tla"]["params"] == "a,x,v"
    assert reveal["tla"]["text"].startswith("RevealVote(a, x, v) ==")
    assert reveal["python"]["name"] == "Orchestrator.reveal_vote"
    src = (ROOT / reveal["python"]["file"]).read_text().splitlines()
    assert src[reveal["python"]["line"] - 1].strip().startswith("def reveal_vote(")
    for target in data["links"].values():
        assert (tmp_path / unquote(target)).resolve().is_file(), target


def test_a_violation_is_named_from_the_registry(tmp_path: Path) -> None:
    _, data = page_of(PBFT_ITF, tmp_path)
    assert data["violation"]["name"] == "LivenessInv"
    assert data["violation"]["property"] == "BFT-LIVE-1"
    assert "executed by all honest replicas" in data["violation"]["statement"]
    assert data["steps"][-1]["failed"]


@pytest.mark.tlc
def test_a_rejected_log_marks_its_step(tmp_path: Path) -> None:
    lines = [json.loads(x) for x in LOG.read_text().splitlines()]
    lines[3]["state"]["now"] = 7
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    verdict = tmp_path / "verdict.json"
    p = subprocess.run(
        [sys.executable, "-m", "ostrom", "validate-trace", "--json", str(bad)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "reference"), "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 1, p.stderr
    verdict.write_text(p.stdout)
    for args in ((bad, "--verdict", str(verdict)), (verdict,)):
        _, data = page_of(args[0], tmp_path, *map(str, args[1:]))
        failed = [s for s in data["steps"] if s["failed"]]
        assert [s["index"] for s in failed] == [3]
        assert "now: spec 1, log 7" in failed[0]["note"]


def test_the_page_cannot_be_broken_out_of_by_the_data(tmp_path: Path) -> None:
    """A trace whose values contain ``</script>`` stays inside its JSON."""
    page = sources.Page(
        "t</script><script>alert(1)</script>",
        "itf",
        "x",
        [sources.Step(0, "A", state={"v": '"</script><!--'})],
    )
    html = render_page(page, tmp_path)
    assert html.count("</script>") == 2  # the data's and the code's own
    assert "<script>alert" not in html


NOT_TRACES = ["", "x", "{", "[1]", '{"format": "ostrom-vector/1"}', '{"states": "x"}',
              '{"format": "ostrom-trace/1"}\n{"a": 1}']  # fmt: skip


@pytest.mark.parametrize("text", NOT_TRACES)
def test_files_that_are_no_trace_are_bad_input(tmp_path: Path, text: str) -> None:
    f = tmp_path / "t.json"
    f.write_text(text)
    r = CliRunner().invoke(main, ["explore", str(f), "-o", str(tmp_path / "o.html")])
    assert r.exit_code in (0, 2), r.output
    assert "Traceback" not in r.output and "internal error" not in r.output
    if r.exit_code == 2:
        assert not (tmp_path / "o.html").exists()
