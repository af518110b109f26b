"""TLC model checking for ostrom: run the manifest's models, parse TLC, save and explain traces.

One job per module: :mod:`.jar` finds java and the jar, :mod:`.values` parses TLC's value syntax,
:mod:`.output` parses ``-tool`` output, :mod:`.manifest` loads ``models/manifest.json``,
:mod:`.cfg` reads cfgs and derives a derived model's from its base's, :mod:`.runner` stages and
runs TLC, :mod:`.itf` writes/reads ITF traces, :mod:`.explain` renders
them.  The scale-out modes of ``ostrom check``: :mod:`.distributed` runs TLC's TLCServer and
TLCWorker processes, :mod:`.replay` asks single-machine TLC what the distributed server
does not say, :mod:`.distcheck` makes the manifest's rows from them (``--distributed``), and
:mod:`.simulate` those of TLC's random simulation (``--simulate``).
"""

from __future__ import annotations

from ostrom.verify.tlc.jar import TlcSetupError
from ostrom.verify.tlc.manifest import Manifest, ManifestError, ModelEntry, load_manifest
from ostrom.verify.tlc.runner import (
    RowResult,
    RunnerError,
    TlcRun,
    check_models,
    run_model,
    run_tlc,
)

__all__ = [
    "Manifest",
    "ManifestError",
    "ModelEntry",
    "RowResult",
    "RunnerError",
    "TlcRun",
    "TlcSetupError",
    "check_models",
    "load_manifest",
    "run_model",
    "run_tlc",
]
