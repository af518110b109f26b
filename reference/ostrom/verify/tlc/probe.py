"""Ask TLC a question about the states of a saved trace, with the trace's own model.

``ostrom explain --why`` (verify/tlc/why.py) and ``--params`` (verify/tlc/bindings.py) both
answer by evaluating TLA+ in the states of a counterexample, so that the answer is the
spec's and not a re-implementation of it.  This module does the common part: find the
trace's model in the manifest, take its cfg with the constants only (SPECIFICATION, INIT,
NEXT and every property removed), stage a generated module that EXTENDS the model's module
and starts in the given states, and prints its findings with ``PrintT`` — from a probe
invariant that always holds (``--why``: the module never moves) or from its next-state
relation (``--params``); then return TLC's printed lines, whole values reassembled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ostrom import layout
from ostrom.verify.tlc.cfg import CfgError, ParsedCfg, parse_cfg, render_cfg
from ostrom.verify.tlc.manifest import ManifestError, cfg_text, load_manifest
from ostrom.verify.tlc.values import Value, ValueParseError, parse_value

__all__ = ["ProbeError", "ProbeModel", "model_of", "run_probe", "tagged_prints"]

_MAX_PRINT_LINES: Final = 20_000

_DROPPED = ("SPECIFICATION", "INIT", "NEXT", "PROPERTIES", "INVARIANTS", "CONSTRAINTS",
            "ACTION_CONSTRAINTS", "SYMMETRY", "VIEW")  # fmt: skip


class ProbeError(ValueError):
    """The trace names no model of the manifest, or TLC cannot answer."""


@dataclass(frozen=True)
class ProbeModel:
    """The manifest model a trace was found in: its name, module and constants."""

    name: str
    module: str
    cfg_name: str
    cfg: ParsedCfg


def model_of(data: dict[str, Any]) -> ProbeModel:
    """The manifest model named by the ITF document's ``#meta.model``."""
    meta = data.get("#meta") if isinstance(data.get("#meta"), dict) else {}
    assert isinstance(meta, dict)
    model = str(meta.get("model") or "")
    if not model:
        raise ProbeError("the trace names no model (#meta.model)")
    try:
        manifest = load_manifest(layout.MODELS_DIR / "manifest.json")
        entry = manifest.get(model)
        if entry is None:
            raise ProbeError(f"the trace's model {model!r} is not in the manifest")
        cfg = parse_cfg(cfg_text(manifest, entry, layout.ROOT))
    except (ManifestError, CfgError) as exc:
        raise ProbeError(str(exc)) from None
    return ProbeModel(model, entry.module, entry.cfg_name, cfg)


def run_probe(
    model: ProbeModel,
    module_text: str,
    *,
    init: str,
    probe: str | None,
    label: str,
    title: str,
    timeout: float,
) -> list[str]:
    """TLC's ``PrintT`` lines for the generated module ``OstromProbe`` (``module_text``,
    which must EXTEND ``model.module``) with INIT ``init``, a NEXT named ``OstromNext`` it
    defines, and the single invariant ``probe`` (or none: then the probe prints from
    ``OstromNext``, and a state without a successor is not a deadlock)."""
    from ostrom.verify.tlc.runner import RunnerError, run_tlc

    cfg = ParsedCfg(dict(model.cfg.constants), dict(model.cfg.sections))
    for key in _DROPPED:
        cfg.sections.pop(key, None)
    cfg.sections["INIT"] = [init]
    cfg.sections["NEXT"] = ["OstromNext"]
    if probe is not None:
        cfg.sections["INVARIANTS"] = [probe]
    try:
        run = run_tlc(
            layout.ROOT,
            "OstromProbe",
            Path("models") / model.cfg_name,
            label=f"{label}-{model.name}",
            workers=1,
            cfg_text=render_cfg(cfg, title),
            timeout=timeout,
            extra_modules={"OstromProbe": module_text},
            tlc_options=() if probe is not None else ("-deadlock",),
        )
    except RunnerError as exc:
        raise ProbeError(str(exc)) from None
    if run.outcome.got not in ("pass",):
        detail = run.outcome.error_text or run.outcome.got
        raise ProbeError(f"TLC could not evaluate the probe: {detail[:300]}")
    return list(run.print_lines)


def tagged_prints(lines: list[str], tag: str) -> list[tuple[Value, ...]]:
    """The values ``PrintT(<<tag, ...>>)`` printed, as tuples without the tag.

    TLC pretty-prints a long value over several lines (``<< "tag",`` then the rest
    indented), so a print is the shortest run of lines from one that starts it that parses
    as a value."""
    out: list[tuple[Value, ...]] = []
    start = re.compile(rf'^\s*<<\s*"{re.escape(tag)}"')
    i = 0
    while i < len(lines):
        if not start.match(lines[i]):
            i += 1
            continue
        for j in range(i, min(len(lines), i + _MAX_PRINT_LINES)):
            try:
                value = parse_value("\n".join(lines[i : j + 1]))
            except ValueParseError:
                continue
            if isinstance(value, tuple) and value and value[0] == tag:
                out.append(value[1:])
            i = j
            break
        i += 1
    return out
