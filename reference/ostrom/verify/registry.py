"""The property registry: which checker checks which property id, in which layer.

``spec/properties.toml`` maps each property id of docs/design.md §7 to its TLC invariant or
temporal property, its Hypothesis test, its Z3 theorem and the mutants that show each
check can fail.  ``required`` lists the layers that must have a checker *now*; the test
``property_tests/verify/test_registry.py`` resolves every named checker (the TLA+ definition
exists and a manifest model checks it, the Python test exists, the mutant exists and is
expected to be caught by that checker) and fails when a required layer has none.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ostrom import layout

__all__ = ["Property", "RegistryError", "load"]

LAYERS = ("tla", "hypothesis", "z3")


@dataclass(frozen=True)
class Property:
    """One property id and its checkers."""

    id: str
    statement: str
    required: tuple[str, ...]
    tla: tuple[str, ...] = ()
    hypothesis: tuple[str, ...] = ()
    z3: tuple[str, ...] = ()
    tla_mutants: tuple[str, ...] = ()
    code_mutants: tuple[str, ...] = ()
    notes: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def checkers(self, layer: str) -> tuple[str, ...]:
        """The checkers named for ``layer`` (one of ``LAYERS``)."""
        return tuple(getattr(self, layer))


class RegistryError(ValueError):
    """The registry file is malformed."""


def default_path() -> Path:
    """``spec/properties.toml`` of the source tree this package lives in."""
    return layout.SPEC_DIR / "properties.toml"


def _strings(p: Path, pid: str, key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise RegistryError(f"{p}: property {pid}: {key} must be a list of names")
    return tuple(value)


_KEYS = ("statement", "required", *LAYERS, "tla_mutants", "code_mutants", "notes")


def load(path: Path | None = None) -> list[Property]:
    """Read the registry, in file order.  ``RegistryError`` names the first problem: an
    unreadable file, TOML that is not a registry (no ``[properties]`` table, other
    top-level keys, no property at all), a property whose fields have the wrong type."""
    p = path or default_path()
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RegistryError(f"{p}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise RegistryError(f"{p}: cannot read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{p}: not valid TOML: {exc}") from exc
    extra = sorted(k for k in data if k != "properties")
    if extra:
        raise RegistryError(f"{p}: unknown top-level key(s) {extra} (only [properties.ID])")
    table = data.get("properties")
    if not isinstance(table, dict) or not table:
        raise RegistryError(f"{p}: no property: the registry is [properties.ID] tables")
    out = []
    for pid, entry in table.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("statement"), str):
            raise RegistryError(f"{p}: property {pid} needs a statement (a string)")
        unknown = set(entry) - set(_KEYS)
        if unknown:
            raise RegistryError(f"{p}: property {pid}: unknown keys {sorted(unknown)}")
        required = _strings(p, pid, "required", entry.get("required", []))
        bad = [layer for layer in required if layer not in LAYERS]
        if bad:
            raise RegistryError(f"{p}: property {pid}: unknown layers {bad}")
        notes = entry.get("notes", "")
        if not isinstance(notes, str):
            raise RegistryError(f"{p}: property {pid}: notes must be a string")
        out.append(
            Property(
                id=pid,
                statement=entry["statement"],
                required=required,
                tla=_strings(p, pid, "tla", entry.get("tla", [])),
                hypothesis=_strings(p, pid, "hypothesis", entry.get("hypothesis", [])),
                z3=_strings(p, pid, "z3", entry.get("z3", [])),
                tla_mutants=_strings(p, pid, "tla_mutants", entry.get("tla_mutants", [])),
                code_mutants=_strings(p, pid, "code_mutants", entry.get("code_mutants", [])),
                notes=notes,
            )
        )
    return out
