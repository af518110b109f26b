"""Deterministic generation of the reference's vectors (``ostrom vectors``, ``make vectors``).

Two sources, both replayed on the reference adapters (``ostrom.conformance.layers``) so
that every expectation *is* what the reference observes:

* ``reference:examples`` (``ostrom.conformance.generators.examples``): hand-written histories, each
  small and named for what it shows; together they use every command of every layer and
  every error code;
* ``reference:hypothesis`` (``ostrom.conformance.generators.walks``): derandomized Hypothesis random
  walks per layer that keep the first history reaching each not-yet-covered transition
  row, error code, sanction change or verdict.

Files are written as ``vectors/<layer>/<action>/<name>.json`` in a fixed layout (keys in
the order of docs/conformance.md, containers that fit in 100 columns on one line), so
that generating twice gives the same bytes.  ``--check`` regenerates in memory and
compares: CI fails when the committed vectors are not current.

The generator owns only the files whose ``source`` is ``reference:*``: vectors from TLC
(``tlc:*``), the PBFT layer's and ITF traces are left alone, but listed in the manifest,
which is rebuilt over every file of the suite after writing.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ostrom.conformance.generators.examples import build_examples
from ostrom.conformance.generators.fileformat import dump
from ostrom.conformance.generators.recorder import GenerationError
from ostrom.conformance.generators.tlc_vectors import generate_tlc_vectors
from ostrom.conformance.generators.walks import build_walks
from ostrom.conformance.vectors import (
    VECTORS_DIR,
    SuiteError,
    manifest_problems,
    vector_errors,
    write_manifest,
)

#: The sources this generator owns ...
SOURCES: Final = ("reference:examples", "reference:hypothesis")
#: ... in these layers' folders (vectors/pbft belongs to generators.pbft_vectors).
OWNED_LAYERS: Final = ("lifecycle", "voting", "reputation", "sanctions", "forgetting", "community")


__all__ = [
    "OWNED_LAYERS",
    "SOURCES",
    "GenerationError",
    "Plan",
    "check_suite",
    "dump",
    "generate",
    "plan",
    "summary",
    "write_suite",
]


# --- all vectors ---------------------------------------------------------------------------------


def generate(sources: Iterable[str] = SOURCES) -> dict[str, dict[str, Any]]:
    """Every vector of the reference's sources: path under vectors/ -> document."""
    out: dict[str, dict[str, Any]] = {}
    docs: list[dict[str, Any]] = []
    wanted = set(sources)
    if "reference:examples" in wanted:
        docs += build_examples()
    if "reference:hypothesis" in wanted:
        docs += build_walks()
    for doc in docs:
        rel = f"{doc['id']}.json"
        if rel in out:
            raise GenerationError(f"two vectors with the id {doc['id']}")
        errors = vector_errors(doc, rel)
        if errors:
            raise GenerationError(f"{rel}: " + "; ".join(errors))
        out[rel] = doc
    return dict(sorted(out.items()))


def _owned(root: Path) -> dict[str, str]:
    """Files under ``root`` that this generator owns (``source`` reference:*): rel -> text."""
    out: dict[str, str] = {}
    if not root.is_dir():
        return out
    for p in sorted(root.rglob("*.json")):
        rel = p.relative_to(root).as_posix()
        if rel.split("/")[0] not in OWNED_LAYERS or rel.endswith(".itf.json"):
            continue
        text = p.read_text(encoding="utf-8")
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("source") in SOURCES:
            out[rel] = text
    return out


@dataclass(frozen=True)
class Plan:
    """What writing would change: files to create or rewrite, stale files to delete."""

    write: dict[str, str]
    delete: list[str]
    unchanged: int


def plan(root: Path, docs: Mapping[str, Mapping[str, Any]]) -> Plan:
    current = _owned(root)
    texts = {rel: dump(doc) for rel, doc in docs.items()}
    write = {rel: t for rel, t in texts.items() if current.get(rel) != t}
    delete = sorted(set(current) - set(texts))
    return Plan(write, delete, len(texts) - len(write))


def write_suite(
    root: Path = VECTORS_DIR,
    docs: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    tlc: bool = True,
) -> Plan:
    """Write the generated vectors under ``root``, delete stale ones, rebuild the manifest.

    ``tlc``: also regenerate the TLC-sourced lifecycle vectors (``tlc:*``, owned by
    ``tlc_vectors.generate_tlc_vectors``; their currency is checked by
    property_tests/verify/test_validate_trace.py)."""
    docs = generate() if docs is None else docs
    p = plan(root, docs)
    for rel in p.delete:
        path = root / rel
        path.unlink()
        for parent in path.parents:
            if parent == root or any(parent.iterdir()):
                break
            parent.rmdir()
    for rel, text in p.write.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    pbft = _pbft_generator()
    if pbft is not None:
        pbft(root)
    if tlc:  # the TLC-sourced lifecycle vectors (tlc_vectors.py; TLC runs, ~30 s)
        generate_tlc_vectors(root)
    write_manifest(root)
    return p


def _pbft_generator() -> Callable[[Path], object] | None:
    """``generate_pbft_vectors`` of ``ostrom.conformance.generators.pbft_vectors``, where it
    exists: it owns vectors/pbft (one replica's vectors and ITF traces)."""
    if importlib.util.find_spec("ostrom.conformance.generators.pbft_vectors") is None:
        return None
    module = importlib.import_module("ostrom.conformance.generators.pbft_vectors")
    gen: Callable[[Path], object] = module.generate_pbft_vectors
    return gen


def _pbft_problems(root: Path) -> list[str]:
    """The PBFT generator's files, regenerated in a scratch folder, against ``root/pbft``."""
    pbft = _pbft_generator()
    if pbft is None:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        pbft(Path(tmp))
        fresh = {
            p.relative_to(tmp).as_posix(): p.read_bytes()
            for p in Path(tmp).rglob("*")
            if p.is_file()
        }
    sub = root / "pbft"
    have = (
        {p.relative_to(root).as_posix(): p.read_bytes() for p in sub.rglob("*") if p.is_file()}
        if sub.is_dir()
        else {}
    )
    problems = [
        f"stale: {rel} differs from what the PBFT generator writes"
        for rel in sorted(fresh)
        if have.get(rel) != fresh[rel]
    ]
    problems += [f"stale: {rel} is no longer generated" for rel in sorted(set(have) - set(fresh))]
    return problems


def check_suite(
    root: Path = VECTORS_DIR, docs: Mapping[str, Mapping[str, Any]] | None = None
) -> list[str]:
    """Why the committed suite is not current (empty: it is)."""
    docs = generate() if docs is None else docs
    p = plan(root, docs)
    problems = [f"stale: {rel} differs from what the reference generates" for rel in p.write]
    problems += [f"stale: {rel} is no longer generated" for rel in p.delete]
    problems += _pbft_problems(root)
    try:
        problems += manifest_problems(root)
    except SuiteError as exc:
        problems.append(str(exc))
    return problems


def summary(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """layer -> source -> number of vectors."""
    out: dict[str, dict[str, int]] = {}
    for doc in docs.values():
        row = out.setdefault(str(doc["layer"]), {})
        row[str(doc["source"])] = row.get(str(doc["source"]), 0) + 1
    return dict(sorted(out.items()))
