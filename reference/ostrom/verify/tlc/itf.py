"""Write and read counterexamples in the Informal Trace Format (ITF) of Apalache and Quint.

ITF makes TLC's traces usable by other tools (Quint's and Apalache's trace viewers, conformance
replays) and by ``ostrom explain``. What ITF does not say and we add, all under ``#meta``:

* per state: ``index`` (0-based, as ITF requires), ``action`` (the TLC action that produced the
  state, ``Initial predicate`` for the first) and ``location`` (its source range);
* per trace: the model, the outcome, ``loop_action`` (the step from the last state back to state
  ``loop``) and ``stuttering`` (the behaviour ends by stuttering forever, encoded as ``loop`` on
  the last state).

Model values are ``{"#unserializable": "name"}`` (see :mod:`ostrom.verify.tlc.values`).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from ostrom.verify.tlc.output import TlcOutcome
from ostrom.verify.tlc.values import to_itf

__all__ = ["ITF_DESCRIPTION", "ItfError", "outcome_to_itf", "read_itf", "write_itf"]

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"


class ItfError(ValueError):
    """A file is missing or is not an ITF trace."""


def outcome_to_itf(outcome: TlcOutcome, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ITF document of ``outcome``'s trace; ``meta`` is merged into the top-level ``#meta``."""
    variables: list[str] = []
    for state in outcome.trace:
        for name in state.values:
            if name not in variables:
                variables.append(name)
    top_meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": ITF_DESCRIPTION,
        "generated-by": "ostrom check (TLC -tool output)",
        "outcome": outcome.got,
    }
    if outcome.loop_action is not None:
        top_meta["loop_action"] = outcome.loop_action
    if outcome.stuttering:
        top_meta["stuttering"] = True
    top_meta.update(meta or {})
    states: list[dict[str, Any]] = []
    for state in outcome.trace:
        state_meta: dict[str, Any] = {"index": state.index, "action": state.action}
        if state.location is not None:
            state_meta["location"] = state.location
        doc: dict[str, Any] = {"#meta": state_meta}
        doc.update({name: to_itf(value) for name, value in state.values.items()})
        states.append(doc)
    result: dict[str, Any] = {"#meta": top_meta, "vars": variables, "states": states}
    if outcome.loop is not None:
        result["loop"] = outcome.loop
    return result


def write_itf(path: Path, outcome: TlcOutcome, meta: dict[str, Any] | None = None) -> Path:
    """Write ``outcome``'s trace to ``path`` (parents created); return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(outcome_to_itf(outcome, meta), indent=1) + "\n", encoding="utf-8")
    return path


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_itf(path: Path) -> dict[str, Any]:
    """Load an ITF file, checking the shape ``explain`` relies on; raise :class:`ItfError`.

    A gzip-compressed file (``*.itf.json.gz``, told by its magic bytes) is read as well: the
    traces committed under docs/counterexamples/ are stored so, since every state repeats every
    replica's full record and a 50-state trace is 700 kB of JSON but 10 kB compressed."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ItfError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise ItfError(f"{path} is a directory, not an ITF trace") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error):
            raise ItfError(f"{path} is a damaged gzip file") from None
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError:
        raise ItfError(f"{path}: nested too deeply to be a trace") from None
    except (ValueError, UnicodeDecodeError):
        raise ItfError(f"{path} is not JSON, so not an ITF trace") from None
    if not isinstance(data, dict) or not isinstance(data.get("states"), list):
        raise ItfError(f'{path} is not an ITF trace: no "states" list')
    if not data["states"]:
        raise ItfError(f"{path}: an ITF trace with no states")
    variables = data.get("vars")
    if variables is not None and (
        not isinstance(variables, list) or not all(isinstance(v, str) for v in variables)
    ):
        raise ItfError(f"{path}: 'vars' must be a list of variable names")
    for i, state in enumerate(data["states"]):
        if not isinstance(state, dict):
            raise ItfError(f"{path} is not an ITF trace: state {i} is not an object")
    loop = data.get("loop")
    if loop is not None and (
        isinstance(loop, bool) or not isinstance(loop, int) or not 0 <= loop < len(data["states"])
    ):
        raise ItfError(f"{path}: 'loop' must be the index of a state")
    return data
