"""The founders file of ``ostrom serve --founders FILE.toml``: who the community starts with.

::

    [[founder]]
    id = "alice"
    tier = 3                      # 0..3; > 0 makes a founder (docs/community.md)
    public_key = "<64 hex>"       # Ed25519, raw, hex (ostrom keygen prints it)
    reputation = 0.9              # optional: the prior's mean, in [0, 1]
    evidence = 20                 # optional: the prior's weight, >= 2
    pretrusted = true             # optional: EigenTrust's seed set
    subscriptions = ["topic"]     # optional

    [[operator]]                  # may sign tick and recruit
    id = "ops"
    public_key = "<64 hex>"

Every field is checked and every problem is named (``FoundersError``; the CLI exits 2
and creates nothing).  Without a file the community has no founders: nobody can review
until reputation is earned, and with every agent at tier 0 it never is — a community
that should decide anything needs founders.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from ostrom.service.gate import Founder, Setup, member_from_json
from ostrom.service.identity import is_public_key

__all__ = ["FoundersError", "load_founders", "parse_founders"]


class FoundersError(ValueError):
    """A founders file that cannot be used; the message names the file and the problem."""


def parse_founders(doc: Any, name: str = "founders") -> Setup:
    """A ``Setup`` from the parsed TOML document (``FoundersError`` otherwise)."""
    if not isinstance(doc, dict):
        raise FoundersError(f"{name}: not a table")
    extra = sorted(set(doc) - {"founder", "operator"})
    if extra:
        raise FoundersError(f"{name}: unknown key(s) {', '.join(extra)} (founder, operator)")
    founders, operators = doc.get("founder", []), doc.get("operator", [])
    if not isinstance(founders, list) or not isinstance(operators, list):
        raise FoundersError(f"{name}: founder and operator are arrays of tables ([[founder]])")
    out: list[Founder] = []
    for i, f in enumerate(founders, 1):
        where = f"{name}: founder #{i}"
        if not isinstance(f, dict):
            raise FoundersError(f"{where}: not a table")
        key = f.get("public_key")
        if not is_public_key(key):
            raise FoundersError(f"{where}: public_key must be 64 lowercase hex digits (Ed25519)")
        try:
            member = member_from_json({k: v for k, v in f.items() if k != "public_key"})
        except ValueError as exc:
            raise FoundersError(f"{where}: {exc}") from None
        out.append(Founder(member, str(key)))
    ops: dict[str, str] = {}
    for i, o in enumerate(operators, 1):
        where = f"{name}: operator #{i}"
        if not isinstance(o, dict) or set(o) != {"id", "public_key"}:
            raise FoundersError(f"{where}: an operator is exactly id and public_key")
        oid, key = o["id"], o["public_key"]
        if not isinstance(oid, str) or not 0 < len(oid) <= 256:
            raise FoundersError(f"{where}: id must be a string of 1 to 256 characters")
        if not is_public_key(key):
            raise FoundersError(f"{where}: public_key must be 64 lowercase hex digits (Ed25519)")
        if oid in ops:
            raise FoundersError(f"{where}: operator {oid!r} repeats")
        ops[oid] = key
    try:
        return Setup(tuple(out), ops)
    except ValueError as exc:
        raise FoundersError(f"{name}: {exc}") from None


def load_founders(path: str | Path) -> Setup:
    """Read and check a founders file."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            doc = tomllib.load(fh)
    except OSError as exc:
        raise FoundersError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FoundersError(f"{p}: not valid TOML: {exc}") from None
    return parse_founders(doc, str(p))
