"""The constants of a manifest model, as values (for the charts of its counterexamples).

A counterexample saved as ITF names its model (``#meta.model``) but not the model's
constants; a chart needs some of them (how many replicas, which are Byzantine, the reduction
mode).  They are read back from the model's cfg in models/manifest.json and, for a constant
bound to a definition (``Name <- Def``), from that definition's one-line body in the model
module.  Anything that cannot be read is left out: a chart then infers what it can.
"""

from __future__ import annotations

import re

from ostrom import layout
from ostrom.verify.tlc.cfg import CfgError, parse_cfg
from ostrom.verify.tlc.manifest import ManifestError, cfg_text, load_manifest
from ostrom.verify.tlc.values import Value, parse_value

__all__ = ["model_constants"]


def model_constants(model: str) -> dict[str, Value]:
    """The constants of manifest model ``model`` (from its cfg), or {}."""
    if not model:
        return {}
    try:
        manifest = load_manifest(layout.MODELS_DIR / "manifest.json")
        entry = manifest.get(model)
        if entry is None:
            return {}
        cfg = parse_cfg(cfg_text(manifest, entry, layout.ROOT))
    except (ManifestError, CfgError, OSError):
        return {}
    # ``Name <- Def``: the value of a one-line definition of the model module
    defs: dict[str, str] = {}
    module = layout.MODELS_DIR / f"{entry.module}.tla"
    if module.is_file():
        for line in module.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^([A-Za-z_]\w*)\s*==\s*(.+?)\s*$", line)
            if m:
                defs[m.group(1)] = m.group(2)
    out: dict[str, Value] = {}
    for name, (op, text) in cfg.constants.items():
        value = text if op == "=" else defs.get(text.strip())
        if value is None:
            continue
        try:
            out[name] = parse_value(value)
        except ValueError:
            continue
    return out
