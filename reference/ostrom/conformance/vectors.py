"""Vector files: load, validate, list a suite, keep its MANIFEST, compare, replay.

docs/conformance.md is normative for everything here:

* a vector is ``vectors/<layer>/<action>/<name>.json``, valid against
  ``schema/vector.schema.json``, with ``id == "<layer>/<action>/<name>"``;
* ``vectors/MANIFEST.json`` names the protocol version the suite checks and lists every
  file of the suite with its sha256.  Loading a suite refuses a suite of another protocol
  version (its expectations are another protocol's), a listed file that is missing or
  changed and a file that is not listed: a suite that silently skips files proves
  nothing.  Markdown files (README.md) and the manifest itself are not suite files;
* an observation matches its expectation when every JSON value is equal, except that
  where the *expected* number is written with a fraction or exponent (a float) the
  observed one may differ by at most ``FLOAT_TOLERANCE`` (absolute).  An expected
  integer must be matched exactly (``3`` and ``3.0`` are equal, ``3.0000001`` is not).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped]  # no stubs; the API used is tiny

from ostrom import layout
from ostrom.conformance import FLOAT_TOLERANCE, VECTOR_FORMAT
from ostrom.conformance.layer import Layer
from ostrom.protocol.version import PROTOCOL_VERSION

#: The suite: vectors/ of the checkout, or the installed package's copy (ostrom/layout.py).
VECTORS_DIR: Final = layout.VECTORS_DIR
SCHEMA_PATH: Final = layout.SCHEMA_DIR / "vector.schema.json"
MANIFEST_NAME: Final = "MANIFEST.json"
MANIFEST_FORMAT: Final = "ostrom-manifest/1"
#: ITF traces (TLC simulation) live beside the vectors; listed in the manifest, not vectors.
TRACE_SUFFIX: Final = ".itf.json"


class SuiteError(Exception):
    """The suite on disk is not what its manifest says, or a vector is invalid."""


# --- one vector ---------------------------------------------------------------------------


@cache
def schema() -> dict[str, Any]:
    """The vector JSON Schema (draft 2020-12)."""
    doc: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return doc


def schema_errors(doc: object) -> list[str]:
    """Every schema violation of ``doc`` as ``"<json path>: <message>"``, sorted."""
    validator = jsonschema.Draft202012Validator(schema())
    return sorted(f"{e.json_path}: {e.message}" for e in validator.iter_errors(doc))


def vector_errors(doc: object, rel: str | None = None) -> list[str]:
    """Schema errors, plus the path rules when ``rel`` (the path under vectors/) is given:
    the id is the path without ``.json``; layer and action are its first two parts."""
    errors = schema_errors(doc)
    if errors or rel is None or not isinstance(doc, dict):
        return errors
    if not rel.endswith(".json"):
        return [f"{rel}: a vector file must end in .json"]
    vid = rel[: -len(".json")]
    parts = vid.split("/")
    if doc["id"] != vid:
        errors.append(f"id {doc['id']!r} is not the file's path {vid!r}")
    if len(parts) != 3 or parts[0] != doc["layer"] or parts[1] != doc["action"]:
        errors.append(f"{rel}: not at vectors/<layer>/<action>/<name>.json for its layer/action")
    return errors


@dataclass(frozen=True)
class Vector:
    """One loaded vector (``doc`` is the parsed file) and its path under vectors/."""

    rel: str
    doc: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.doc["id"])

    @property
    def layer(self) -> str:
        return str(self.doc["layer"])

    @property
    def action(self) -> str:
        return str(self.doc["action"])

    @property
    def properties(self) -> list[str]:
        return list(self.doc["properties"])

    @property
    def steps(self) -> list[dict[str, Any]]:
        return list(self.doc["steps"])


def load_vector(path: Path, root: Path | None = None) -> Vector:
    """Read and validate one vector file (``root``: the suite folder, for the path rules)."""
    base = VECTORS_DIR if root is None else root
    rel = path.resolve().relative_to(base.resolve()).as_posix()
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SuiteError(f"{rel}: cannot read: {exc}") from exc
    errors = vector_errors(doc, rel)
    if errors:
        raise SuiteError(f"{rel}: invalid vector: " + "; ".join(errors))
    return Vector(rel, doc)


# --- the manifest -------------------------------------------------------------------------


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def suite_files(root: Path) -> list[str]:
    """Every file of the suite under ``root`` (posix paths, sorted): all but the manifest
    and Markdown files."""
    out = []
    for p in root.rglob("*"):
        if not p.is_file():
            continue
        rel = p.relative_to(root).as_posix()
        if rel == MANIFEST_NAME or p.suffix == ".md":
            continue
        out.append(rel)
    return sorted(out)


def build_manifest(root: Path) -> dict[str, Any]:
    """The manifest of the files now under ``root``: the reference's suite, so of the
    protocol version this package implements."""
    return {
        "format": MANIFEST_FORMAT,
        "protocol": PROTOCOL_VERSION,
        "files": {rel: sha256_file(root / rel) for rel in suite_files(root)},
    }


def manifest_text(manifest: Mapping[str, Any]) -> str:
    """The manifest as written: one file per line, sorted, newline-terminated."""
    files = manifest["files"]
    lines = [f"    {json.dumps(k)}: {json.dumps(files[k])}" for k in sorted(files)]
    body = ",\n".join(lines)
    head = (
        f'  "format": {json.dumps(manifest["format"])},\n'
        f'  "protocol": {json.dumps(manifest["protocol"])},\n'
    )
    return f'{{\n{head}  "files": {{\n{body}\n  }}\n}}\n'


def write_manifest(root: Path) -> dict[str, Any]:
    manifest = build_manifest(root)
    (root / MANIFEST_NAME).write_text(manifest_text(manifest), encoding="utf-8")
    return manifest


def read_manifest(root: Path) -> dict[str, str]:
    """The manifest's file -> sha256 map; ``SuiteError`` if absent or malformed."""
    path = root / MANIFEST_NAME
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SuiteError(f"{path}: cannot read the manifest: {exc}") from exc
    files = doc.get("files") if isinstance(doc, dict) else None
    if (
        not isinstance(doc, dict)
        or doc.get("format") != MANIFEST_FORMAT
        or not isinstance(files, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    ):
        raise SuiteError(f"{path}: not an {MANIFEST_FORMAT} manifest")
    protocol = doc.get("protocol")
    if protocol != PROTOCOL_VERSION or isinstance(protocol, bool):
        # the expectations of another protocol version would fail a correct implementation
        # (or pass a wrong one): refused whole, before any vector runs
        what = (
            f"a suite of protocol version {json.dumps(protocol)}"
            if "protocol" in doc
            else "a suite that names no protocol version"
        )
        raise SuiteError(
            f"{path}: {what}; this ostrom checks protocol version {PROTOCOL_VERSION} "
            "(run the ostrom release of the suite's protocol version)"
        )
    return dict(files)


def manifest_problems(root: Path) -> list[str]:
    """What is wrong between the manifest and the files on disk (empty: nothing)."""
    listed = read_manifest(root)
    present = set(suite_files(root))
    problems = [f"missing: {rel} is listed but absent" for rel in sorted(set(listed) - present)]
    problems += [
        f"unlisted: {rel} is not in {MANIFEST_NAME}" for rel in sorted(present - set(listed))
    ]
    for rel in sorted(present & set(listed)):
        if sha256_file(root / rel) != listed[rel]:
            problems.append(f"changed: {rel} does not match its sha256 in {MANIFEST_NAME}")
    return problems


@dataclass(frozen=True)
class Suite:
    """A loaded suite: every vector (sorted by id) and every ITF trace file, all checked
    against the manifest.  ``files`` is what the manifest lists: a runner reports it read
    exactly these."""

    root: Path
    vectors: tuple[Vector, ...]
    traces: tuple[str, ...]
    files: tuple[str, ...] = field(default=())

    def by_layer(self, layer: str) -> list[Vector]:
        return [v for v in self.vectors if v.layer == layer]


def load_suite(root: Path | None = None) -> Suite:
    """Check the manifest, then load and validate every vector.  Any problem raises
    ``SuiteError`` naming every file involved: nothing is skipped silently."""
    base = VECTORS_DIR if root is None else root
    problems = manifest_problems(base)
    if problems:
        raise SuiteError("the suite does not match its manifest:\n  " + "\n  ".join(problems))
    files = sorted(read_manifest(base))
    vectors: list[Vector] = []
    traces: list[str] = []
    errors: list[str] = []
    for rel in files:
        if rel.endswith(TRACE_SUFFIX):
            traces.append(rel)
            continue
        try:
            vectors.append(load_vector(base / rel, base))
        except SuiteError as exc:
            errors.append(str(exc))
    if errors:
        raise SuiteError("invalid vector files:\n  " + "\n  ".join(errors))
    vectors.sort(key=lambda v: v.id)
    return Suite(base, tuple(vectors), tuple(traces), tuple(files))


def iter_vectors(root: Path | None = None) -> Iterator[Vector]:
    """The suite's vectors, sorted by id (after every check of ``load_suite``)."""
    yield from load_suite(root).vectors


# --- comparing observations ------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One place where an observation differs from its expectation (``path`` is JSONPath)."""

    path: str
    expected: Any
    got: Any

    def __str__(self) -> str:
        return f"{self.path}: expected {_short(self.expected)}, got {_short(self.got)}"


def _short(v: Any) -> str:
    text = json.dumps(v, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def compare(
    expected: Any, got: Any, path: str = "$", tolerance: float = FLOAT_TOLERANCE
) -> list[Difference]:
    """Every difference between two JSON values under the float rule (module docstring)."""
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        same = type(got) is type(expected) and got == expected
        return [] if same else [Difference(path, expected, got)]
    if _is_number(expected):
        if not _is_number(got):
            return [Difference(path, expected, got)]
        if isinstance(expected, int):
            return [] if got == expected else [Difference(path, expected, got)]
        return [] if abs(got - expected) <= tolerance else [Difference(path, expected, got)]
    if isinstance(expected, list):
        if not isinstance(got, list):
            return [Difference(path, expected, got)]
        if len(got) != len(expected):
            return [Difference(f"{path}.length", len(expected), len(got))]
        out: list[Difference] = []
        for i, (e, g) in enumerate(zip(expected, got, strict=True)):
            out += compare(e, g, f"{path}[{i}]", tolerance)
        return out
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return [Difference(path, expected, got)]
        out = []
        for key in sorted(set(expected) | set(got)):
            sub = f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"
            if key not in got:
                out.append(Difference(sub, expected[key], "<absent>"))
            elif key not in expected:
                out.append(Difference(sub, "<absent>", got[key]))
            else:
                out += compare(expected[key], got[key], sub, tolerance)
        return out
    raise TypeError(f"not a JSON value: {expected!r}")  # pragma: no cover


def compare_step(expect: Mapping[str, Any], observation: Mapping[str, Any]) -> list[Difference]:
    """The differences between a step's ``expect`` and an observation (result, events,
    state; anything else in the observation is ignored)."""
    out: list[Difference] = []
    for key in ("result", "events", "state"):
        out += compare(expect[key], observation.get(key, "<absent>"), f"$.{key}")
    return out


# --- replaying on the reference ----------------------------------------------------------------


@dataclass(frozen=True)
class Divergence:
    """The first step whose observation differs from the vector's expectation."""

    step: int  # 0-based index into ``steps``
    command: Any
    differences: tuple[Difference, ...]

    def __str__(self) -> str:
        lines = [f"step {self.step}: {_short(self.command)}"]
        lines += [f"  {d}" for d in self.differences[:20]]
        if len(self.differences) > 20:
            lines.append(f"  ... and {len(self.differences) - 20} more")
        return "\n".join(lines)


def wire(value: Any) -> Any:
    """``value`` as it arrives over the driver protocol (a JSON round trip)."""
    return json.loads(json.dumps(value, allow_nan=False))


def replay(
    vector: Vector | Mapping[str, Any], factory: Callable[[], Layer] | None = None
) -> Divergence | None:
    """Run the vector on the reference adapter of its layer (or on ``factory()``); the
    first diverging step, or None when every step matches."""
    doc = vector.doc if isinstance(vector, Vector) else vector
    if factory is None:
        from ostrom.conformance.layers import ADAPTERS

        factory = ADAPTERS[doc["layer"]]
    layer = factory()
    layer.reset(wire(doc["params"]), wire(doc["setup"]))
    for i, step in enumerate(doc["steps"]):
        obs = wire(layer.step(wire(step["command"])))
        diffs = compare_step(step["expect"], obs)
        if diffs:
            return Divergence(i, step["command"], tuple(diffs))
    return None


def check_vectors(vectors: Sequence[Vector]) -> dict[str, Divergence]:
    """Replay every vector on the reference; id -> divergence of those that differ."""
    out: dict[str, Divergence] = {}
    for v in vectors:
        d = replay(v)
        if d is not None:
            out[v.id] = d
    return out


__all__ = [
    "FLOAT_TOLERANCE",
    "MANIFEST_NAME",
    "VECTOR_FORMAT",
    "Difference",
    "Divergence",
    "Suite",
    "SuiteError",
    "Vector",
    "build_manifest",
    "compare",
    "compare_step",
    "load_suite",
    "load_vector",
    "manifest_problems",
    "replay",
    "schema_errors",
    "vector_errors",
    "write_manifest",
]
