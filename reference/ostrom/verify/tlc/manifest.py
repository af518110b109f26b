"""``models/manifest.json``: the list of TLC models, what each must report, and its recorded counts.

Like tlaplus/Examples' manifest, every model states its expected result, so a check that starts
passing when it should fail (a mutant no longer caught, a witness no longer reached) is a failure
too; recorded state counts turn unintended changes of the state space into review-visible diffs.

A model is either a *base* model, with its own cfg file (``"config"``), or a *derived* one: a
base model plus overrides (``"base"``, ``"cfg"``: constants, ``Op <- MutOp`` substitutions,
sections; :mod:`ostrom.verify.tlc.cfg`), its cfg computed when it runs (:func:`cfg_text`). Mutants
and variants of a model are derived, so a new constant is added to the base cfgs only. A mutant
names its entry of the mutant registry (``"mutant": "<layer>-<bug>"``,
``ostrom.conformance.mutants.registry``).

Entries are validated on load; unknown keys are kept (and written back by :func:`save_manifest`)
so other tools may annotate entries without this module knowing about them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ostrom.verify.tlc.cfg import CfgError, CfgOverrides, derive_cfg, parse_overrides

__all__ = [
    "Manifest",
    "ManifestError",
    "ModelEntry",
    "cfg_text",
    "load_manifest",
    "save_manifest",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ManifestError(ValueError):
    """The manifest is missing, not JSON, or an entry is malformed; the message names the entry."""


@dataclass
class ModelEntry:
    """One model of the manifest (see docs/checking.md for the meaning of each field)."""

    name: str
    module: str
    #: the cfg file of a base model (relative to the repository root); None if derived
    config: str | None
    expect: str
    deep: bool = False
    #: run by ``make check`` but, for its cost, not by ``make test`` (``make test-slow`` does)
    slow: bool = False
    #: the registry name of the mutant this model plays (``<layer>-<bug>``), or None
    mutant: str | None = None
    #: the model this one is derived from, and how its cfg differs (None for a base model)
    base: str | None = None
    overrides: CfgOverrides | None = None
    workers: int | None = None
    fp: int | None = None
    distinct_states: int | None = None
    total_states: int | None = None
    depth: int | None = None
    seconds: float | None = None
    witnesses: list[str] = field(default_factory=list)
    properties: list[str] = field(default_factory=list)
    description: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def pinned(self) -> bool:
        """Workers and fingerprint seed are fixed, so counts of any outcome are reproducible."""
        return self.workers is not None and self.fp is not None

    @property
    def source(self) -> str:
        """Where the model's cfg comes from: its file, or ``manifest.json#name`` if derived."""
        return self.config if self.config is not None else f"models/manifest.json#{self.name}"

    @property
    def cfg_name(self) -> str:
        """The file name of the model's cfg (a derived model's, generated: ``<name>.cfg``)."""
        if self.config is not None:
            return Path(self.config).name
        return f"{self.name}.cfg"


@dataclass
class Manifest:
    """The parsed manifest plus where it came from (to write recorded counts back)."""

    path: Path
    models: list[ModelEntry]
    raw: dict[str, Any]

    def names(self) -> list[str]:
        """Model names in manifest order."""
        return [m.name for m in self.models]

    def get(self, name: str) -> ModelEntry | None:
        """The entry called ``name``, or None."""
        return next((m for m in self.models if m.name == name), None)


def _opt_int(entry: dict[str, Any], key: str, where: str) -> int | None:
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ManifestError(f"{where}: '{key}' must be a non-negative integer or null")
    return value


def _parse_entry(entry: Any, index: int) -> ModelEntry:
    where = f"model #{index + 1}"
    if not isinstance(entry, dict):
        raise ManifestError(f"{where}: must be a JSON object")
    name = entry.get("name")
    if isinstance(name, str):
        where = f"model '{name}'"
    derived = "base" in entry
    required = ("name", "base", "expect") if derived else ("name", "module", "config", "expect")
    for key in required:
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise ManifestError(f"{where}: '{key}' is required and must be a non-empty string")
    if derived and "config" in entry:
        raise ManifestError(f"{where}: a derived model ('base') has no 'config' of its own")
    if not derived and "cfg" in entry:
        raise ManifestError(f"{where}: 'cfg' overrides need a 'base' model")
    if not _NAME_RE.match(entry["name"]):
        raise ManifestError(f"{where}: name may contain only letters, digits, '.', '_', '-'")
    if "module" in entry and (
        not isinstance(entry["module"], str) or not _IDENT_RE.match(entry["module"])
    ):
        raise ManifestError(f"{where}: 'module' must be a TLA+ module name, not a path")
    for flag in ("deep", "slow"):
        if not isinstance(entry.get(flag, False), bool):
            raise ManifestError(f"{where}: '{flag}' must be true or false")
    mutant = entry.get("mutant")
    if mutant is not None and not isinstance(mutant, bool | str):
        raise ManifestError(f"{where}: 'mutant' must be a mutant name (or false)")
    if mutant is True:
        raise ManifestError(f"{where}: 'mutant' must name the mutant (<layer>-<bug>)")
    try:
        overrides = parse_overrides(entry.get("cfg", {})) if derived else None
    except CfgError as exc:
        raise ManifestError(f"{where}: {exc}") from None
    for key in ("witnesses", "properties"):
        items = entry.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ManifestError(f"{where}: '{key}' must be a list of strings")
    for witness in entry.get("witnesses", []):
        if not _IDENT_RE.match(witness):
            raise ManifestError(f"{where}: witness {witness!r} is not an invariant name")
    seconds = entry.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float)):
        raise ManifestError(f"{where}: 'seconds' must be a number or null")
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise ManifestError(f"{where}: 'description' must be a string")
    workers = _opt_int(entry, "workers", where)
    if workers == 0:
        raise ManifestError(f"{where}: 'workers' must be at least 1")
    return ModelEntry(
        name=entry["name"],
        module=entry.get("module", ""),  # a derived model without one: its base's (below)
        config=None if derived else entry["config"],
        expect=entry["expect"],
        deep=entry.get("deep", False),
        slow=entry.get("slow", False),
        mutant=mutant or None,
        base=entry.get("base"),
        overrides=overrides,
        workers=workers,
        fp=_opt_int(entry, "fp", where),
        distinct_states=_opt_int(entry, "distinct_states", where),
        total_states=_opt_int(entry, "total_states", where),
        depth=_opt_int(entry, "depth", where),
        seconds=float(seconds) if seconds is not None else None,
        witnesses=list(entry.get("witnesses", [])),
        properties=list(entry.get("properties", [])),
        description=description,
        raw=entry,
    )


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest; raise :class:`ManifestError` with a one-line reason."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"manifest not found: {path}") from None
    except OSError as exc:
        raise ManifestError(f"cannot read manifest {path}: {exc.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(
            f"manifest {path} is not valid JSON: {exc.msg} (line {exc.lineno}, col {exc.colno})"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("models"), list):
        raise ManifestError(f'manifest {path} must be an object with a "models" list')
    models = [_parse_entry(entry, i) for i, entry in enumerate(data["models"])]
    seen: set[str] = set()
    for model in models:
        if model.name in seen:
            raise ManifestError(f"manifest {path}: model name '{model.name}' appears twice")
        seen.add(model.name)
    manifest = Manifest(path=path, models=models, raw=data)
    for model in models:
        root = _base_model(manifest, model)
        if not model.module:
            model.module = root.module
        elif model.module != root.module:
            raise ManifestError(
                f"model '{model.name}': module {model.module} is not its base's ({root.module})"
            )
    return manifest


def _base_model(manifest: Manifest, entry: ModelEntry) -> ModelEntry:
    """The base model (with a cfg file) that ``entry`` is derived from, through any chain."""
    seen = [entry.name]
    while entry.base is not None:
        base = manifest.get(entry.base)
        if base is None:
            raise ManifestError(
                f"model '{seen[0]}': base model '{entry.base}' is not in the manifest"
            )
        if base.name in seen:
            raise ManifestError(f"model '{seen[0]}': bases form a cycle: {' -> '.join(seen)}")
        seen.append(base.name)
        entry = base
    return entry


def cfg_text(manifest: Manifest, entry: ModelEntry, root: Path) -> str:
    """The TLC configuration of ``entry``: its cfg file, or, for a derived model, its base's
    (recursively) with its overrides applied, under a header naming where it came from."""
    if entry.config is not None:
        try:
            return (root / entry.config).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ManifestError(f"model '{entry.name}': config {entry.config} not found") from None
    assert entry.base is not None and entry.overrides is not None
    base = manifest.get(entry.base)
    if base is None:
        raise ManifestError(
            f"model '{entry.name}': base model '{entry.base}' is not in the manifest"
        )
    header = (
        f"{entry.name}: generated by ostrom check from the model {base.name} "
        f"({base.source}) and the overrides of models/manifest.json.\n"
        "Do not edit: change the base cfg or the manifest entry."
    )
    try:
        return derive_cfg(cfg_text(manifest, base, root), entry.overrides, header)
    except CfgError as exc:
        raise ManifestError(f"model '{entry.name}': {exc}") from None


def save_manifest(manifest: Manifest) -> None:
    """Write the manifest back (2-space JSON, keys in their original order, final newline)."""
    manifest.path.write_text(json.dumps(manifest.raw, indent=2) + "\n", encoding="utf-8")
