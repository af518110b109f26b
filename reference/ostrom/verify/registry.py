"""The property registry: which checker checks which property id, in which layer.

``spec/properties.toml`` maps each property id of docs/design.md §7 to its TLC invariant or
temporal property, its Hypothesis test, its Z3 theorem and the mutants that show each
check can fail.  ``required`` lists the layers that must have a checker *now*; the test
``property_tests/test_registry.py`` resolves every named checker (the TLA+ definition
exists and a manifest model checks it, the Python test exists, the mutant exists and is
expected to be caught by that checker) and fails when a required layer has none.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ostrom import layout

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


def load(path: Path | None = None) -> list[Property]:
    """Read the registry, in file order."""
    p = path or default_path()
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RegistryError(f"{p}: no such file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{p}: not valid TOML: {exc}") from exc
    out = []
    for pid, entry in data.get("properties", {}).items():
        if not isinstance(entry, dict) or "statement" not in entry:
            raise RegistryError(f"{p}: property {pid} needs a statement")
        unknown = set(entry) - {
            "statement",
            "required",
            *LAYERS,
            "tla_mutants",
            "code_mutants",
            "notes",
        }
        if unknown:
            raise RegistryError(f"{p}: property {pid}: unknown keys {sorted(unknown)}")
        required = tuple(entry.get("required", ()))
        bad = [layer for layer in required if layer not in LAYERS]
        if bad:
            raise RegistryError(f"{p}: property {pid}: unknown layers {bad}")
        out.append(
            Property(
                id=pid,
                statement=entry["statement"],
                required=required,
                tla=tuple(entry.get("tla", ())),
                hypothesis=tuple(entry.get("hypothesis", ())),
                z3=tuple(entry.get("z3", ())),
                tla_mutants=tuple(entry.get("tla_mutants", ())),
                code_mutants=tuple(entry.get("code_mutants", ())),
                notes=entry.get("notes", ""),
            )
        )
    return out
