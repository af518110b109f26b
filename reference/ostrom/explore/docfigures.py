"""The message-sequence charts of the docs, as SVG drawn by ``chart.render_svg``.

Two kinds, both written by ``ostrom docs`` (the registry of ``ostrom.codegen.registry``,
whose test checks they are current):

* the protocol's figures in docs/consensus.md — PBFT's normal case and its view change —
  defined here as charts, so that a broadcast is drawn as what it is: PREPARE and COMMIT
  go from each replica to every other one, one arrow with a head at each receiver (the
  Mermaid drawings they replace could only draw one receiver per arrow);
* one chart per counterexample committed under docs/counterexamples/ (PBFTReplicaSystem)
  and docs/counterexamples/alg1/ (Algorithm 1), beside its trace as ``NAME.svg``.

Each Mermaid block left in the docs is preceded by ``<!-- svg: PATH -->`` naming the SVG
that stands for it; ``make site`` shows the SVG (the site renders no Mermaid).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from ostrom.explore.chart import (
    Chart,
    Message,
    Remark,
    chart_from_alg1,
    chart_from_pbft,
    render_svg,
)
from ostrom.verify.tlc.constants import model_constants

__all__ = ["counterexample_figures", "normal_case", "protocol_figures", "view_change"]

_C, _P, _B1, _B2, _B3 = range(5)
_REPLICAS = (_P, _B1, _B2, _B3)


def _others(i: int) -> tuple[int, ...]:
    return tuple(r for r in _REPLICAS if r != i)


def normal_case() -> Chart:
    """PBFT's normal case, N = 4, f = 1 (docs/consensus.md)."""
    c = Chart(["client", "r0 (primary)", "r1", "r2", "r3"])
    step = 1
    c.events.append(Message(step, _C, (_P,), "REQUEST(op, t)"))
    step += 1
    c.events.append(Message(step, _P, _others(_P), "PRE-PREPARE(v, n, d)"))
    c.events.append(Remark(step, None, "each backup accepts the first pre-prepare for (v, n)"))
    step += 1
    for b in (_B1, _B2, _B3):
        c.events.append(Message(step, b, _others(b), "PREPARE(v, n, d)"))
    c.events.append(Remark(step, None, "prepared: the pre-prepare and 2f matching prepares"))
    step += 1
    for r in _REPLICAS:
        c.events.append(Message(step, r, _others(r), "COMMIT(v, n, d)"))
    c.events.append(Remark(step, None, "committed-local: prepared and 2f+1 commits; execute"))
    step += 1
    for r in _REPLICAS:
        c.events.append(Message(step, r, (_C,), "REPLY"))
    c.events.append(Remark(step, _C, "accepts f+1 matching replies"))
    return c


def view_change() -> Chart:
    """A view change away from a faulty primary, N = 4, f = 1 (docs/consensus.md)."""
    c = Chart(["r0 (faulty primary of v)", "r1 (primary of v+1)", "r2", "r3"], {0})
    r0, r1, r2, r3 = range(4)
    c.events.append(Remark(1, r0, "silent or equivocating"))
    c.events.append(Remark(1, None, "r2 and r3: the request timer expires"))
    for r in (r2, r3):
        c.events.append(Message(2, r, (r0, r1, *(x for x in (r2, r3) if x != r)),
                                f"VIEW-CHANGE(v+1, s, P{r})"))  # fmt: skip
    c.events.append(Remark(2, r1, "f+1 VIEW-CHANGEs for v+1: r1 joins"))
    c.events.append(Message(3, r1, (r0, r2, r3), "VIEW-CHANGE(v+1, s, P1)"))
    c.events.append(
        Remark(3, r1, "2f+1 VIEW-CHANGEs = V; O: per n the highest-view certificate, or null")
    )
    c.events.append(Message(4, r1, (r0, r2, r3), "NEW-VIEW(v+1, V, O)"))
    c.events.append(
        Remark(4, None, "r2, r3: recompute O from V, accept, prepare every request in O")
    )
    return c


def _trace(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    doc: dict[str, Any] = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return doc


def _stem(path: Path) -> str:
    return path.name.split(".itf.json")[0]


def protocol_figures(root: Path) -> dict[Path, str]:
    """docs/consensus.md's figures (PBFT's normal case and view change), with their SVG."""
    return {
        root / "docs" / "img" / "pbft-normal-case.svg": render_svg(normal_case()),
        root / "docs" / "img" / "pbft-view-change.svg": render_svg(view_change()),
    }


def counterexample_figures(root: Path) -> dict[Path, str]:
    """The chart of every trace under ``root``'s docs/counterexamples/ (PBFTReplicaSystem)
    and docs/counterexamples/alg1/ (Algorithm 1), as the SVG beside it must be."""
    out = {}
    cex = root / "docs" / "counterexamples"
    for trace in sorted(cex.glob("*.itf.json*")):
        out[cex / f"{_stem(trace)}.svg"] = render_svg(chart_from_pbft(_trace(trace)))
    for trace in sorted((cex / "alg1").glob("*.itf.json*")):
        doc = _trace(trace)
        model = str(doc.get("#meta", {}).get("model", ""))
        out[cex / "alg1" / f"{_stem(trace)}.svg"] = render_svg(
            chart_from_alg1(doc, model_constants(model))
        )
    return out
