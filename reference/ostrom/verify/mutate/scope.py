"""Which definitions of which spec a model's mutants may touch.

A mutant is worth running only where it changes the behaviour the model explores: the
definitions of the normative spec (the first module of spec/ the model's module uses)
that its INIT, NEXT or SPECIFICATION reaches, directly or through other definitions.
Left out, by that rule: what the cfg substitutes (``Name <- MCName``: the spec's text is
not used), and the definitions that only the model's checks use (its invariants,
properties and reachability witnesses) — a mutated property tests the property, not the
spec.  A definition both use (a tally the invariant re-reads) is in scope.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ostrom import layout
from ostrom.verify.tlc.cfg import parse_cfg
from ostrom.verify.tlc.modules import used_modules
from ostrom.verify.tlc.text import blank, definitions

__all__ = ["Scope", "ScopeError", "scope_of"]

_IDENT = re.compile(r"[A-Za-z_]\w*")


class ScopeError(ValueError):
    """The model uses no spec of spec/, or the named spec is not one it uses."""


@dataclass(frozen=True)
class Scope:
    """The spec file to mutate and the definitions of it in scope, in text order."""

    spec: str
    path: Path
    names: tuple[str, ...]
    left_out: tuple[str, ...]  # definitions of the spec outside the scope


def scope_of(module: str, cfg_text: str, spec: str | None = None) -> Scope:
    """The scope of a model of ``module`` with cfg ``cfg_text`` (see the module docstring);
    ``spec`` names the spec to mutate (default: the first of spec/ the module uses)."""
    used = used_modules(module)
    specs = [p for p in used if p.parent == layout.SPEC_DIR]
    if spec is not None:
        specs = [p for p in specs if p.stem == spec]
        if not specs:
            names = ", ".join(p.stem for p in used if p.parent == layout.SPEC_DIR) or "none"
            raise ScopeError(f"{module} does not use a spec {spec} (it uses: {names})")
    if not specs:
        raise ScopeError(f"{module} uses no module of spec/")
    target = specs[0]
    bodies: dict[str, str] = {}
    for path in used:
        masked = blank(path.read_text(encoding="utf-8"), strings=True)
        for d in definitions(masked):
            bodies.setdefault(d.name, masked[d.start : d.end])
    cfg = parse_cfg(cfg_text)
    roots = [w for key in ("INIT", "NEXT", "SPECIFICATION") for w in cfg.sections.get(key, [])]
    substituted = {n for n, (op, _v) in cfg.constants.items() if op == "<-"}
    reached: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in reached or name not in bodies or name in substituted:
            continue
        reached.add(name)
        todo += _IDENT.findall(bodies[name])
    own = [d.name for d in definitions(blank(target.read_text(encoding="utf-8"), strings=True))]
    chosen = tuple(n for n in own if n in reached)
    return Scope(target.stem, target, chosen, tuple(n for n in own if n not in chosen))
