"""The registry of generated files: every file and block of the repository that is made from a
single source, what it is made from, and the function that makes it.

One fact has one source; its copies in other files are generated, so a copy cannot drift
from its source unnoticed. ``REGISTRY`` is the table: each entry names the file it writes (a
glob for a family of files, one per committed trace), the generated block inside it (between
``BEGIN generated: NAME`` and ``END generated: NAME`` markers, ``ostrom.docblocks``) or none
(the whole file), its source, and the function that renders it. The tools keep the
functions that compute text from their data (the TLC chart module, the mutation scores, the
kill matrix ...); this module decides where each text goes. ``ostrom docs`` (``make
generate``) rewrites what differs, ``ostrom docs --check`` names it and writes nothing, and
property_tests/codegen/test_generated.py checks every entry against the committed tree.

Everything is computed before anything is written (:func:`render`): a source that cannot be
read, a file that lacks its block, a missing program leave the tree as it was.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ostrom import layout
from ostrom.codegen import (
    api_docs,
    cli_docs,
    deployment_docs,
    diagram,
    js_commands,
    params_docs,
    service_docs,
)
from ostrom.conformance import killmatrix, runner
from ostrom.conformance.mutants import registry as mutant_registry
from ostrom.docblocks import blocks, replace_block
from ostrom.explore import docfigures
from ostrom.protocol import commands
from ostrom.protocol.params import markdown_table
from ostrom.service.openapi import openapi_text
from ostrom.verify.codemutation import scores as code_scores
from ostrom.verify.mutate import suite as spec_scores
from ostrom.verify.tlc import faults, sequence
from ostrom.verify.tlc.manifest import load_manifest

__all__ = [
    "REGISTRY",
    "GenerateError",
    "Generated",
    "by_name",
    "kill_matrix_block",
    "render",
    "stale",
    "write",
]

#: A generated block's markers in each kind of file (``docblocks.replace_block``'s comment).
MARKDOWN: Final = "<!-- {} -->"
JAVASCRIPT: Final = "// {}"
TLA_CFG: Final = "\\* {}"


class GenerateError(ValueError):
    """A generated file cannot be made: a source or a target cannot be read, or a target
    lacks its generated block. The message names the file."""


@dataclass(frozen=True)
class Generated:
    """One entry of the registry.

    ``path`` is relative to the repository root; for a family (a file per committed trace)
    it is the family's globs, comma-separated, and ``family`` makes every file of it.
    Otherwise ``make`` renders the whole file, or the body of ``block`` (marked with
    ``comment``) when a block is named. ``needs`` is a program the rendering runs
    (Graphviz's ``dot``); ``slow`` marks an entry whose source is a long run (the kill matrix
    runs every mutant driver through the suite: about two minutes on two cores),
    regenerated only on request.
    """

    name: str
    path: str
    source: str
    make: Callable[[Path], str] | None = None
    block: str | None = None
    comment: str = MARKDOWN
    family: Callable[[Path], Mapping[Path, str]] | None = None
    needs: str | None = None
    slow: bool = False

    @property
    def target(self) -> str:
        """The file, and the block in it (what ``--list`` and the drift test show)."""
        return self.path if self.block is None else f"{self.path} [{self.block}]"

    def outputs(self, root: Path, read: Callable[[Path], str]) -> dict[Path, str]:
        """The content each file this entry writes must have, given the current text of the
        files (``read``: from disk, or as earlier entries left it)."""
        if self.family is not None:
            return dict(self.family(root))
        assert self.make is not None, self.name
        path = root / self.path
        if self.block is None:
            return {path: self.make(root)}
        text = read(path)
        try:
            return {path: replace_block(text, self.block, self.make(root), self.comment)}
        except ValueError as exc:
            raise GenerateError(f"{self.path}: {exc}") from None


# --- the renderings that need the root ------------------------------------------------------


def _lifecycle_mermaid(_root: Path) -> str:
    # the svg line names the SVG that stands for the Mermaid block on the site
    return f"<!-- svg: img/lifecycle.svg -->\n```mermaid\n{diagram.to_mermaid()}```\n"


def _under(root: Path, path: Path) -> Path:
    """``path`` (a file of this source tree) in the tree at ``root``."""
    return root / path.relative_to(layout.ROOT)


def _mutation_scores(root: Path) -> str:
    return spec_scores.scores_table(spec_scores.load_scores(_under(root, spec_scores.SCORES_PATH)))


def _pbft_faults(root: Path) -> str:
    # the CI gates' models, marked in the table (a suite's ci_models)
    suites_dir = _under(root, spec_scores.SUITES_DIR)
    gates = {
        m
        for spec in spec_scores.suites(suites_dir)
        for m in spec_scores.load_suite(spec, suites_dir).ci_models
    }
    return faults.fault_table(load_manifest(root / "models" / "manifest.json"), root, gates)


def _code_mutation_scores(root: Path) -> str:
    return code_scores.scores_table(code_scores.load_scores(_under(root, code_scores.SCORES_PATH)))


def _mutant_registry(root: Path) -> str:
    manifest = load_manifest(root / "models" / "manifest.json")
    return mutant_registry.docs_table(manifest) + "\n"


def _kill_matrix(root: Path) -> str:
    rows = killmatrix.build(suite=runner.load_suite(root / "vectors"))
    pending = [r.name for r in rows if r.trace.status in ("unavailable", "error")]
    if pending:  # a table without the validate-trace column is not the one to commit
        raise RuntimeError(f"validate-trace did not run on {', '.join(pending)} (needs java)")
    return kill_matrix_block(rows)


def kill_matrix_block(rows: Iterable[killmatrix.Row]) -> str:
    """docs/conformance.md's kill-matrix block for these rows (the kill matrix test checks
    the committed block with the rows of its own run)."""
    return killmatrix.markdown(list(rows)) + "\n"


#: The evaluation's tables: made from the committed evidence by the evaluation model
#: (``ostrom simulate --tables``), which no other tool imports; ``ostrom docs`` copies them.
EVALUATION_TABLES: Final = Path("evaluation/tables.md")
EVALUATION_PREFIX: Final = "evaluation-"


#: docs/evaluation.md's generated tables, one block each (the names of
#: ``ostrom.simulation.evidence_docs.BLOCKS``; a block without its entry fails
#: property_tests/codegen/test_generated.py).
EVALUATION_BLOCKS: Final = (
    "paper-precision",
    "paper-comparisons",
    "paper-choices",
    "paper-other",
    "truth",
    "bloc",
    "sanctions",
    "sanctions-2000",
    "sensitivity",
    "plasticity-by-k",
    "plasticity-controls",
    "plasticity-threshold",
    "retrieval",
    "retrieval-by-k",
    "retrieval-controls",
    "forgetting-honest",
    "forgetting-adversarial",
    "forgetting-four",
    "forgetting-accuracy-vs-reference",
    "forgetting-wrong-vs-reference",
    "forgetting-consensus",
    "forgetting-paper",
)


def _evaluation_table(name: str) -> Callable[[Path], str]:
    """The body of table ``name`` in evaluation/tables.md (between its ``table:``
    markers)."""

    def make(root: Path) -> str:
        try:
            text = (root / EVALUATION_TABLES).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise GenerateError(f"{EVALUATION_TABLES}: {exc}") from None
        found = blocks(text, kind="table").get(name)
        if found is None:
            raise GenerateError(f"{EVALUATION_TABLES}: no table {name!r}")
        return found

    return make


def _lifecycle_spec(root: Path) -> Path:
    return root / "spec" / "Lifecycle.tla"


#: Every generated file and block, in the order ``ostrom docs`` writes them (entries that
#: share a file are applied one after the other).
REGISTRY: Final[tuple[Generated, ...]] = (
    Generated(
        "lifecycle-table",
        "spec/LifecycleTable.tla",
        "ostrom.protocol.lifecycle.TRANSITIONS, EVENTS",
        lambda _root: diagram.to_tla_table(),
    ),
    Generated(
        "command-schema",
        "schema/command.schema.json",
        "ostrom.protocol.commands (every command's fields)",
        lambda _root: commands.schema_text(),
    ),
    Generated(
        "lifecycle-dot",
        "docs/img/lifecycle.dot",
        "ostrom.protocol.lifecycle.TRANSITIONS",
        lambda _root: diagram.to_dot(),
    ),
    Generated(
        "lifecycle-svg",
        "docs/img/lifecycle.svg",
        "ostrom.protocol.lifecycle.TRANSITIONS, drawn by Graphviz's dot",
        lambda _root: diagram.to_svg(),
        needs="dot",
    ),
    Generated(
        "lifecycle-mermaid",
        "docs/lifecycle.md",
        "ostrom.protocol.lifecycle.TRANSITIONS",
        _lifecycle_mermaid,
        block="lifecycle-mermaid",
    ),
    Generated(
        "guards",
        "docs/lifecycle.md",
        "ostrom.protocol.lifecycle.EVENTS",
        lambda _root: diagram.to_guard_table(),
        block="guards",
    ),
    Generated(
        "params",
        "docs/lifecycle.md",
        "ostrom.protocol.params.Params (every row)",
        lambda _root: markdown_table(),
        block="params",
    ),
    Generated(
        "rules-params",
        "docs/rules.md",
        "ostrom.protocol.params.Params (the rows the lifecycle reads, with their CONSTANT)",
        lambda root: params_docs.lifecycle_table(_lifecycle_spec(root)),
        block="params",
    ),
    Generated(
        "model-params",
        "models/MCLifecycle_ci.cfg",
        "ostrom.protocol.params.Params (model and why), in the order of spec/Lifecycle.tla",
        lambda root: params_docs.model_constants(_lifecycle_spec(root)),
        block="params",
        comment=TLA_CFG,
    ),
    Generated(
        "defaults-toml",
        "examples/params/defaults.toml",
        "ostrom.protocol.params.Params (every default)",
        lambda _root: params_docs.defaults_toml(),
    ),
    Generated(
        "js-params",
        "drivers/js/params.js",
        "ostrom.protocol.params.Params (kind, default, range)",
        lambda _root: params_docs.js_params(),
        block="params",
        comment=JAVASCRIPT,
    ),
    Generated(
        "js-commands",
        "drivers/js/lifecycle.js",
        "ostrom.protocol.commands.COMMANDS (every op's fields and their types)",
        lambda _root: js_commands.js_commands(),
        block="commands",
        comment=JAVASCRIPT,
    ),
    Generated(
        "openapi",
        "schema/openapi.json",
        "ostrom.service.openapi.ENDPOINTS",
        lambda _root: openapi_text(),
    ),
    Generated(
        "service-api",
        "docs/service.md",
        "ostrom.service.openapi.ENDPOINTS",
        lambda _root: service_docs.markdown_table(),
        block="service-api",
    ),
    Generated(
        "service-errors",
        "docs/service.md",
        "ostrom.service.gate.GATE_ERRORS",
        lambda _root: service_docs.errors_table(),
        block="service-errors",
    ),
    Generated(
        "service-identity",
        "docs/service.md",
        "ostrom.service.gate.IDENTITY_COMMANDS",
        lambda _root: service_docs.identity_table(),
        block="service-identity",
    ),
    Generated(
        "deployment-limits",
        "docs/deployment.md",
        "ostrom serve and cluster up options, protocol/params.py, service and front bounds",
        lambda _root: deployment_docs.limits_table(),
        block="deployment-limits",
    ),
    Generated(
        "exit-codes",
        "docs/cli.md",
        "ostrom.cli.exits.EXIT_CODES",
        lambda _root: cli_docs.exit_code_table(),
        block="exit-codes",
    ),
    Generated(
        "api",
        "docs/design.md",
        "each package's __all__ (ostrom.PRODUCT, ostrom.TOOLS) and its names' docstrings",
        lambda _root: api_docs.api_markdown(),
        block="api",
    ),
    Generated(
        "counterexample-charts",
        "docs/counterexamples/*.txt, docs/counterexamples/*.mmd",
        "each docs/counterexamples/<name>.itf.json.gz (ostrom.verify.tlc.sequence)",
        family=sequence.counterexample_charts,
    ),
    Generated(
        "counterexamples",
        "docs/counterexamples/README.md",
        "each docs/counterexamples/<name>.itf.json.gz (ostrom.verify.tlc.sequence)",
        sequence.counterexample_sections,
        block="counterexamples",
    ),
    Generated(
        "counterexample-svgs",
        "docs/counterexamples/*.svg, docs/counterexamples/alg1/*.svg",
        "each trace of docs/counterexamples/ and its alg1/ (ostrom.explore.docfigures)",
        family=docfigures.counterexample_figures,
    ),
    Generated(
        "pbft-figures",
        "docs/img/pbft-normal-case.svg, docs/img/pbft-view-change.svg",
        "ostrom.explore.docfigures.normal_case, view_change",
        family=docfigures.protocol_figures,
    ),
    Generated(
        "mutation-scores",
        "docs/checking.md",
        "models/mutation/scores.json",
        _mutation_scores,
        block="mutation-scores",
    ),
    Generated(
        "pbft-faults",
        "docs/consensus.md",
        "the configurations of models/manifest.json's models of spec/PBFTReplicaSystem.tla",
        _pbft_faults,
        block="pbft-faults",
    ),
    Generated(
        "pbft-faults-readme",
        "README.md",
        "the configurations of models/manifest.json's models of spec/PBFTReplicaSystem.tla",
        _pbft_faults,
        block="pbft-faults",
    ),
    Generated(
        "code-mutation-scores",
        "docs/checking.md",
        "models/mutation/code/scores.json",
        _code_mutation_scores,
        block="code-mutation-scores",
    ),
    Generated(
        "mutant-registry",
        "docs/checking.md",
        "ostrom.conformance.mutants.registry.MUTANTS, models/manifest.json",
        _mutant_registry,
        block="mutant-registry",
    ),
    *(
        Generated(
            f"{EVALUATION_PREFIX}{name}",
            "docs/evaluation.md",
            "evaluation/tables.md (made from evaluation/<experiment>/ by ostrom simulate --tables)",
            _evaluation_table(f"{EVALUATION_PREFIX}{name}"),
            block=f"{EVALUATION_PREFIX}{name}",
        )
        for name in EVALUATION_BLOCKS
    ),
    Generated(
        "kill-matrix",
        "docs/conformance.md",
        "every mutant driver run through the vectors (ostrom.conformance.killmatrix.build)",
        _kill_matrix,
        block="kill-matrix",
        slow=True,
    ),
)


def by_name(name: str) -> Generated:
    """The entry called ``name``."""
    return next(e for e in REGISTRY if e.name == name)


def _reader(root: Path) -> tuple[Callable[[Path], str], dict[Path, str]]:
    """A cached reader of the files under ``root``: a missing whole file reads as empty (it
    is created); every read error is a ``GenerateError`` naming the file."""
    texts: dict[Path, str] = {}

    def read(path: Path) -> str:
        if path not in texts:
            try:
                texts[path] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise GenerateError(f"{_rel(path, root)}: cannot read: {why}") from None
        return texts[path]

    return read, texts


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def render(root: Path, entries: Iterable[Generated] = REGISTRY) -> dict[Path, str]:
    """The content every file the ``entries`` write must have; reads, never writes.

    ``GenerateError`` (a file that cannot be read or lacks its block, a bad source),
    ``RuntimeError`` (a program that is missing or failed)."""
    read, texts = _reader(root)
    out: dict[Path, str] = {}
    for entry in entries:
        if entry.needs is not None and shutil.which(entry.needs) is None:
            raise RuntimeError(f"{entry.name}: needs {entry.needs!r}, which is not installed")
        try:
            made = entry.outputs(root, read)
        except (OSError, UnicodeDecodeError) as exc:
            raise GenerateError(f"{entry.name}: cannot read its source: {exc}") from None
        except ValueError as exc:
            raise GenerateError(str(exc)) from None
        for path, text in made.items():
            texts[path] = out[path] = text
    return out


def _differs(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") != text
    except (OSError, UnicodeDecodeError):  # missing, or not a text file: rewritten
        return True


def stale(root: Path, entries: Iterable[Generated] = REGISTRY) -> list[Path]:
    """The files the ``entries`` would rewrite (``ostrom docs --check``)."""
    return [p for p, text in render(root, entries).items() if _differs(p, text)]


def write(root: Path, entries: Iterable[Generated] = REGISTRY) -> list[Path]:
    """Rewrite what differs from :func:`render` (computed whole first); the files written."""
    changed = [(p, text) for p, text in render(root, entries).items() if _differs(p, text)]
    for path, text in changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return [p for p, _ in changed]
