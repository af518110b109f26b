"""Accepted equivalent mutants: edits of a spec that no model can tell apart, with why.

Some mutants change nothing a behaviour can show within any model's bounds (dropping
``Tier[a] >= 0`` when every tier is at least 0), so no check can kill them; a person
decides that, once, and writes it down.  The file ``models/mutation/<Spec>.toml`` holds

    [[equivalent]]
    id = "Legitimate/cmp/2"          # the mutant's id (verify/mutate/operators.py)
    change = ">= -> >"               # its edit, so that an id that now names another
                                     # edit is noticed (reported as stale, not accepted)
    reason = "one line: why no behaviour can tell"

Unknown keys, a missing or empty field, or a duplicate id are errors: a typo must not
silently accept a mutant.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ostrom import layout

__all__ = [
    "EQUIVALENTS_DIR",
    "Equivalent",
    "EquivalentsError",
    "equivalent_entries",
    "load_equivalents",
]

EQUIVALENTS_DIR = layout.MODELS_DIR / "mutation"
_FIELDS = ("id", "change", "reason")


class EquivalentsError(ValueError):
    """The equivalents file cannot be read; the message names the entry and field."""


@dataclass(frozen=True)
class Equivalent:
    id: str
    change: str
    reason: str


def load_equivalents(spec: str, directory: Path | None = None) -> list[Equivalent]:
    """The accepted equivalent mutants of ``spec`` (none if it has no file)."""
    path = (directory or EQUIVALENTS_DIR) / f"{spec}.toml"
    if not path.exists():
        return []
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise EquivalentsError(f"{path}: {exc}") from None
    extra = sorted(set(doc) - {"equivalent", "suite"})  # [suite]: verify/mutate/suite.py
    if extra:
        raise EquivalentsError(
            f"{path}: unknown key {extra[0]!r} (only [suite] and [[equivalent]] tables)"
        )
    return equivalent_entries(str(path), doc.get("equivalent", []), EquivalentsError)


def equivalent_entries(
    where: str, entries: Any, error: type[ValueError] = EquivalentsError
) -> list[Equivalent]:
    """The ``[[equivalent]]`` tables of a parsed file (``where`` names it in messages),
    checked: each a table of exactly ``id``, ``change`` and ``reason``, non-empty strings,
    no id twice; anything else raises ``error``.  Spec mutation's files and code
    mutation's target files (verify/codemutation/target.py) share this."""
    if not isinstance(entries, list):
        raise error(f"{where}: equivalent must be an array of tables")
    out: list[Equivalent] = []
    seen: set[str] = set()
    for k, e in enumerate(entries, start=1):
        at = f"{where}: equivalent #{k}"
        if not isinstance(e, dict):
            raise error(f"{at} is not a table")
        unknown = sorted(set(e) - set(_FIELDS))
        if unknown:
            raise error(f"{at}: unknown key {unknown[0]!r}")
        for f in _FIELDS:
            if not isinstance(e.get(f), str) or not e[f].strip():
                raise error(f"{at}: {f} must be a non-empty string")
        if e["id"] in seen:
            raise error(f"{at}: duplicate id {e['id']!r}")
        seen.add(e["id"])
        out.append(Equivalent(e["id"], e["change"], e["reason"]))
    return out
