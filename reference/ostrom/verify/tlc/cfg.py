"""TLC configuration files: read one into sections, derive a model's cfg from its base's.

A derived model of ``models/manifest.json`` (a mutant, a smaller or deeper variant) is its base
model plus overrides; TLC wants every constant in every cfg, so writing each derived cfg by hand
copied the base's forty lines into each (a new lifecycle parameter meant editing every copy).
Here the derived cfg is computed when the model runs: :func:`derive_cfg` parses the base cfg
(:func:`parse_cfg`), applies the overrides (:class:`CfgOverrides`) and renders the result
(:func:`render_cfg`). ``ostrom check --print-cfg --model NAME`` shows it; every run stages it into
``.tlc/runs/``, so what TLC checked is kept.

Overrides, as the manifest writes them (``"cfg": {...}``): ``constants`` (``Name = value``),
``substitute`` (``Op <- Replacement``, TLC's definition override: a mutant replaces one operator
of the spec by a broken one of its MC module), null in either dropping the base's line; and a
cfg section by its lower-case keyword (``specification``, ``init``, ``next``, ``invariants``,
``properties``, ``action_constraints``, ``constraints``, ``symmetry``, ``view``,
``check_deadlock``): a name or a list replaces the section, null (or ``[]``) removes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CfgError",
    "CfgOverrides",
    "ParsedCfg",
    "cfg_names",
    "derive_cfg",
    "parse_cfg",
    "parse_overrides",
    "render_cfg",
    "witness_cfg",
]

_CFG_KEYWORDS = (
    "CONSTANTS",
    "CONSTANT",
    "INIT",
    "NEXT",
    "SPECIFICATION",
    "INVARIANTS",
    "INVARIANT",
    "PROPERTIES",
    "PROPERTY",
    "CONSTRAINTS",
    "CONSTRAINT",
    "ACTION_CONSTRAINTS",
    "ACTION_CONSTRAINT",
    "SYMMETRY",
    "VIEW",
    "CHECK_DEADLOCK",
    "POSTCONDITION",
    "ALIAS",
)
#: One spelling per section (TLC accepts both the singular and the plural).
_CANONICAL = {
    "CONSTANT": "CONSTANTS",
    "INVARIANT": "INVARIANTS",
    "PROPERTY": "PROPERTIES",
    "CONSTRAINT": "CONSTRAINTS",
    "ACTION_CONSTRAINT": "ACTION_CONSTRAINTS",
}
#: Sections that hold a list of names (rendered one per line); the others hold one word.
_LISTS = ("INVARIANTS", "PROPERTIES", "CONSTRAINTS", "ACTION_CONSTRAINTS")
#: The sections an override may replace, by their manifest key.
SECTION_KEYS = {
    k.lower(): k
    for k in (
        "SPECIFICATION",
        "INIT",
        "NEXT",
        "INVARIANTS",
        "PROPERTIES",
        "CONSTRAINTS",
        "ACTION_CONSTRAINTS",
        "SYMMETRY",
        "VIEW",
        "CHECK_DEADLOCK",
        "POSTCONDITION",
    )
}
#: Rendering order after CONSTANTS (TLC reads sections in any order; a fixed one keeps derived
#: cfgs diffable). Names within a section keep their order: of two invariants a state violates,
#: TLC reports the first listed.
_ORDER = (
    "SPECIFICATION",
    "INIT",
    "NEXT",
    "CONSTRAINTS",
    "ACTION_CONSTRAINTS",
    "SYMMETRY",
    "VIEW",
    "INVARIANTS",
    "PROPERTIES",
    "CHECK_DEADLOCK",
    "POSTCONDITION",
)

_KEYWORD_RE = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(_CFG_KEYWORDS) + r")(?![A-Za-z0-9_])")
_COMMENT_RE = re.compile(r'"(?:[^"\\]|\\.)*"|\(\*.*?\*\)|\\\*[^\n]*', re.DOTALL)
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_ASSIGN_RE = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)\s*(=|<-)")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CfgError(ValueError):
    """A cfg or an override that cannot be read or applied; the message says which part."""


def _strip_comments(text: str) -> str:
    """Blank out cfg comments (keeping offsets) so keywords inside them are not sections."""

    def blank(m: re.Match[str]) -> str:
        s = m.group()
        return s if s.startswith('"') else re.sub(r"[^\n]", " ", s)

    return _COMMENT_RE.sub(blank, text)


def _sections(text: str) -> list[tuple[str, int, int]]:
    """(keyword, start, end) of every section of a cfg; a section runs to the next keyword."""
    clean = _strip_comments(text)
    hits = [(m.group(1), m.start()) for m in _KEYWORD_RE.finditer(clean)]
    # keywords inside strings do not count
    strings = [(m.start(), m.end()) for m in _STRING_RE.finditer(clean)]
    hits = [(k, s) for k, s in hits if not any(a <= s < b for a, b in strings)]
    return [
        (kw, start, hits[i + 1][1] if i + 1 < len(hits) else len(text))
        for i, (kw, start) in enumerate(hits)
    ]


def cfg_names(text: str, *keywords: str) -> list[str]:
    """The names listed under the given section keywords (e.g. PROPERTY, PROPERTIES)."""
    clean = _strip_comments(text)
    names: list[str] = []
    for kw, start, end in _sections(text):
        if kw in keywords:
            names.extend(clean[start + len(kw) : end].split())
    return names


def witness_cfg(text: str, witness: str) -> str:
    """``text`` with every INVARIANT(S) and PROPERTY/PROPERTIES section replaced by
    ``INVARIANT witness``: the witness run checks reachability only, and a liveness property
    could otherwise fail first and hide whether the witness is reached."""
    drop = {"INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES"}
    out: list[str] = []
    pos = 0
    for kw, start, end in _sections(text):
        if kw in drop:
            out.append(text[pos:start])
            pos = end
    out.append(text[pos:])
    body = "".join(out).rstrip()
    return f"{body}\n\\* ostrom: reachability witness run\nINVARIANT {witness}\n"


@dataclass
class ParsedCfg:
    """A cfg as data: constants in order (name -> (``=`` or ``<-``, value)), and every other
    section's words (sections of one kind merged, singular and plural alike)."""

    constants: dict[str, tuple[str, str]] = field(default_factory=dict)
    sections: dict[str, list[str]] = field(default_factory=dict)


def _parse_constants(body: str, into: dict[str, tuple[str, str]]) -> None:
    # values may hold spaces and '=' inside strings: blank strings out to find the assignments
    masked = _STRING_RE.sub(lambda m: "_" * len(m.group()), body)
    starts = list(_ASSIGN_RE.finditer(masked))
    if masked[: starts[0].start() if starts else len(masked)].strip():
        raise CfgError(f"cannot read CONSTANTS near {body.strip()[:40]!r}")
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(body)
        value = " ".join(body[m.end() : end].split())
        if not value:
            raise CfgError(f"constant {m.group(1)} has no value")
        into[m.group(1)] = (m.group(2), value)


def parse_cfg(text: str) -> ParsedCfg:
    """Read a cfg (comments ignored)."""
    clean = _strip_comments(text)
    secs = _sections(text)
    if secs and clean[: secs[0][1]].strip():
        raise CfgError(f"text before the first section: {clean[: secs[0][1]].strip()[:40]!r}")
    parsed = ParsedCfg()
    for kw, start, end in secs:
        key = _CANONICAL.get(kw, kw)
        body = clean[start + len(kw) : end]
        if key == "CONSTANTS":
            _parse_constants(body, parsed.constants)
        else:
            parsed.sections.setdefault(key, []).extend(body.split())
    return parsed


def render_cfg(cfg: ParsedCfg, header: str = "") -> str:
    """The cfg as TLC reads it: ``header`` (comment lines), CONSTANTS one per line, then the
    sections in a fixed order."""
    lines = [f"\\* {line}".rstrip() for line in header.splitlines()]
    if cfg.constants:
        lines.append("CONSTANTS")
        lines += [f"    {name} {op} {value}" for name, (op, value) in cfg.constants.items()]
    order = [*_ORDER, *sorted(set(cfg.sections) - set(_ORDER))]
    for key in order:
        words = cfg.sections.get(key)
        if not words:
            continue
        if key in _LISTS:
            lines.append(key)
            lines += [f"    {w}" for w in words]
        else:
            lines.append(f"{key} {' '.join(words)}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class CfgOverrides:
    """How a derived model's cfg differs from its base's (see the module docstring)."""

    constants: dict[str, str] = field(default_factory=dict)
    substitute: dict[str, str] = field(default_factory=dict)
    #: names whose assignment or substitution of the base is dropped (null in the manifest):
    #: the spec's own definition applies again
    drop: tuple[str, ...] = ()
    #: section -> its new words (an empty list removes the section)
    sections: dict[str, list[str]] = field(default_factory=dict)

    def apply(self, base: ParsedCfg) -> ParsedCfg:
        """``base`` with these overrides (``base`` is not changed). A constant or substitution
        replaces the base's assignment of that name in place, or is added at the end."""
        constants = dict(base.constants)
        for name, value in self.constants.items():
            constants[name] = ("=", value)
        for name, replacement in self.substitute.items():
            constants[name] = ("<-", replacement)
        for name in self.drop:
            constants.pop(name, None)
        sections = {k: list(v) for k, v in base.sections.items()}
        for key, words in self.sections.items():
            if words:
                sections[key] = list(words)
            else:
                sections.pop(key, None)
        return ParsedCfg(constants, sections)


def _str_map(value: Any, where: str, *, idents: bool) -> dict[str, str | None]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str)
        and _IDENT_RE.match(k)
        and (v is None or (isinstance(v, str) and v.strip()))
        for k, v in value.items()
    ):
        raise CfgError(f"{where} must map names to non-empty strings (or null)")
    if idents and not all(v is None or _IDENT_RE.match(v) for v in value.values()):
        raise CfgError(f"{where}: each replacement must be an operator name")
    return dict(value)


def parse_overrides(data: Any) -> CfgOverrides:
    """Validate the manifest's ``"cfg"`` object; :class:`CfgError` names the bad key."""
    if not isinstance(data, dict):
        raise CfgError("'cfg' must be an object")
    sections: dict[str, list[str]] = {}
    for key, value in data.items():
        if key in ("constants", "substitute"):
            continue
        if key not in SECTION_KEYS:
            known = ", ".join(["constants", "substitute", *SECTION_KEYS])
            raise CfgError(f"'cfg' has an unknown key {key!r} (known: {known})")
        if value is None:
            words: list[str] = []
        elif isinstance(value, str) and value.strip():
            words = value.split()
        elif isinstance(value, list) and all(
            isinstance(v, str) and _IDENT_RE.match(v) for v in value
        ):
            words = list(value)
        else:
            raise CfgError(f"'cfg.{key}' must be a name, a list of names, or null")
        sections[SECTION_KEYS[key]] = words
    constants = _str_map(data.get("constants", {}), "'cfg.constants'", idents=False)
    substitute = _str_map(data.get("substitute", {}), "'cfg.substitute'", idents=True)
    return CfgOverrides(
        constants={k: v for k, v in constants.items() if v is not None},
        substitute={k: v for k, v in substitute.items() if v is not None},
        drop=tuple(k for k, v in (constants | substitute).items() if v is None),
        sections=sections,
    )


def derive_cfg(base_text: str, overrides: CfgOverrides, header: str = "") -> str:
    """The cfg of a derived model: the base cfg's text with ``overrides`` applied."""
    return render_cfg(overrides.apply(parse_cfg(base_text)), header)
