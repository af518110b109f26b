"""Every reference in the repository resolves: paths, design sections, spec and code pointers.

A newcomer follows references: a comment that says ``# spec/Lifecycle.tla: Dispute``, a TLA+
comment that names ``ostrom/protocol/orchestrator.py: Orchestrator.dispute``, a chapter that
cites ``docs/design.md §3`` or shows ``ostrom check --model NAME``.  Each of them must lead
somewhere.  This test reads the code (``reference/``, ``property_tests/``, ``bench/``,
``scripts/``), the specs and models (``spec/``, ``models/`` with their ``.cfg``), the registry,
schema and example files, the docs (``docs/``, ``README.md``) and the help of every ``ostrom``
subcommand, and fails with ``file:line: kind: reference: why`` for each one that does not
resolve.  The kinds:

* ``path`` — a repository path (``docs/x.md``, ``spec/X.tla``, ``models/…``, ``reference/…``;
  ``ostrom/…`` means ``reference/ostrom/…``); a glob must match a file; ``<name>``, ``{x}``
  and ``…`` mark a placeholder, and a word with neither extension nor trailing slash is prose
  ("spec/code agreement"); a path in a test may point into a fixture tree
  (``property_tests/fixtures/*/``), and ``folder/module.Name`` names a module's definition;
* ``package-path`` — a path inside the package written from one of its folders
  (``conformance/runner.py``, ``tlc/values.py``), or a test's from the folder of the tests
  that mirrors it (``protocol/test_voting.py``): some file under ``reference/ostrom/`` or
  ``property_tests/`` ends so;
* ``module`` — a dotted ``ostrom.…`` name: a module, or a name that module defines;
* ``design`` — ``docs/design.md §N``: the section's heading exists (and the old form
  ``DESIGN §N`` is reported wherever it is left);
* ``outside`` — a file of the project's history that is not in the repository
  (``DESIGN.md``, ``TOOL-NOTES``, ``seeds/…``): the repository cites only itself;
* ``tla-op`` — ``spec/X.tla: Op`` in Python and TLA+: the module defines ``Op``;
* ``py-name`` — ``ostrom/….py: Class.method`` in TLA+: resolved with ``ast``, not by import;
* ``link`` — a relative Markdown link (and its ``#anchor`` when it points into a Markdown file);
* ``model`` — a backticked name in the docs that follows the manifest's naming scheme must be
  a model of ``models/manifest.json``;
* ``command`` — a file named by a command the docs show (``ostrom check --manifest F``,
  ``ostrom explain F``, ``ostrom check-params F``, ``ostrom simulate --config F``, …) exists,
  unless it is a placeholder (``FILE.toml``, ``<name>``), the reader's own file (a bare name
  such as ``run.jsonl``: every file of the repository that a command reads is in a folder) or
  something the command itself writes (under ``.tlc/`` or ``results/``).
"""

from __future__ import annotations

import ast
import glob
import json
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from click.testing import CliRunner

from ostrom.layout import DOCS_DIR, MODELS_DIR, ROOT, SPEC_DIR

PACKAGE = ROOT / "reference" / "ostrom"
DESIGN = DOCS_DIR / "design.md"

#: The exceptions, each with its reason.  Keep this tiny: a reference that does not resolve
#: is fixed, not listed.
ALLOWED: dict[tuple[str, str], str] = {
    # The docstrings that state the pointer convention show its shape, not a pointer.
    ("tla-op", "Name"): "placeholder in '# spec/X.tla: Name'",
    # property_tests/verify/test_tlc_runner.py writes this config into its temporary fixture tree.
    ("path", "models/x.cfg"): "a config written by the test that names it",
    # property_tests/verify/test_thresholds.py checks that an unknown theorem is refused.
    ("module", "ostrom.verify.thresholds::nope"): "a deliberately unknown theorem",
    # property_tests/verify/test_codemutation.py checks that a target naming no test file fails.
    ("package-path", "protocol/test_nope.py"): "a deliberately missing test file",
}

#: Top folders of the repository that references name.
ROOTS = (
    "docs",
    "spec",
    "models",
    "property_tests",
    "reference",
    "ostrom",
    "examples",
    "vectors",
    "schema",
    "bench",
    "scripts",
    "drivers",
)
#: Sub-packages of ``ostrom`` from which a package-relative path may start.
PACKAGE_DIRS = (
    "protocol",
    "consensus",
    "verify",
    "conformance",
    "simulation",
    "figures",
    "cli",
    "tlc",
    "trace",
    "generators",
    "thresholds",
)
#: Prefixes of what the commands write themselves (not in the repository until run), and
#: the wheel's copy of the data folders (setup.py writes ostrom/_data/ when it is built).
#: (my/: the writing labs' work folder, docs/labs/writing/, filled by their commands)
WRITTEN = (".tlc/", "results/", "bench/results/", "ostrom/_data/", "my/")
#: Miniature repositories of the tests: a path in a test may point into one of them.
FIXTURE_ROOTS = tuple(p for p in (ROOT / "property_tests" / "fixtures").glob("*") if p.is_dir())
#: Files of the project's history that are not in the repository.
OUTSIDE = re.compile(
    r"(?<![\w/.-])(DESIGN\.md|TOOL-NOTES(?:\.md)?|seeds/[\w./-]*|[\w-]+-review\.md|\.\./shared/\S*)"
)

_PLACEHOLDER = re.compile(r"[<>{}…]|\.\.\.|\$")
_PATH = re.compile(
    rf"(?<![\w./@:-])((?:{'|'.join(ROOTS)})/[\w./*<>{{}}…$-]*[\w*>}}/])",
)
_PKG_PATH = re.compile(rf"(?<![\w./-])((?:{'|'.join(PACKAGE_DIRS)})/[\w/]*\w\.py)\b")
_MODULE = re.compile(r"(?<![\w./-])(ostrom(?:\.\w+)+(?:::\w+)?)")
_DESIGN = re.compile(r"design\.md §(\d+)((?:(?:, | and | or |–)§?\d+)*)")
_OLD_DESIGN = re.compile(r"\bDESIGN §\d+")
_TLA_PTR = re.compile(
    r"(?<![\w/])(?:spec/|models/)?(\w+)\.tla:\s*"
    r"([A-Z]\w*(?![\w.'])(?:(?:, | / | and )[A-Z]\w*(?![\w.']))*)"
)
_PY_PTR = re.compile(
    r"(?<![\w/])((?:reference/)?ostrom/[\w/]+\.py|\w+\.py):\s*(\w[\w.]*(?:, \w[\w.]*)*)"
)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_MODEL_LIKE = re.compile(
    r"^(?:lifecycle|sanctions|pbft|alg1)-(?:[a-z0-9]+-)*[a-z0-9*]+$",
)
_COMMAND = re.compile(
    r"\bostrom (check-params|check|explain|params|simulate|validate-trace|conform)\b([^`\n#|]*)"
)
#: Options of each command whose value is a file, and whether the command has a file argument.
_FILE_OPTIONS = {"--manifest", "--config", "--registry"}
_FILE_ARGUMENT = {"explain", "check-params", "params", "validate-trace"}


@dataclass(frozen=True)
class Dangling:
    """One reference that does not resolve."""

    where: str
    kind: str
    ref: str
    why: str

    def __str__(self) -> str:
        return f"{self.where}: {self.kind}: {self.ref}: {self.why}"


# --- resolution ------------------------------------------------------------------------------


@cache
def _design_sections() -> frozenset[str]:
    text = DESIGN.read_text(encoding="utf-8") if DESIGN.exists() else ""
    return frozenset(re.findall(r"^## (\d+)\. ", text, flags=re.M))


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return frozenset(out)


@cache
def _tla_definitions(module: str) -> frozenset[str]:
    """Operators a TLA+ module defines (``Op ==``, ``Op(x) ==``), with those it EXTENDS."""
    for folder in (SPEC_DIR, MODELS_DIR):
        path = folder / f"{module}.tla"
        if path.exists():
            break
    else:
        return frozenset()
    text = path.read_text(encoding="utf-8")
    names = set(re.findall(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*==", text, flags=re.M))
    for extends in re.findall(r"^EXTENDS\s+(.+)$", text, flags=re.M):
        for other in re.split(r"\s*,\s*", extends.strip()):
            names |= _tla_definitions(other)
    return frozenset(names)


def _tla_exists(module: str) -> bool:
    return (SPEC_DIR / f"{module}.tla").exists() or (MODELS_DIR / f"{module}.tla").exists()


@cache
def _package_files() -> tuple[str, ...]:
    """The package's files, and the tests' (which mirror its folders), relative to each."""
    tests = ROOT / "property_tests"
    return tuple(p.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("*.py")) + tuple(
        p.relative_to(tests).as_posix() for p in tests.rglob("test_*.py")
    )


@cache
def _py_names(path: Path) -> tuple[frozenset[str], dict[str, frozenset[str]], bool]:
    """(top-level names, members per class, has a star import) of a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top: set[str] = set()
    classes: dict[str, frozenset[str]] = {}
    star = False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            top.add(node.name)
        if isinstance(node, ast.ClassDef):
            members = set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    members.add(item.name)
                members |= _assigned(item)
            for sub in ast.walk(node):  # instance attributes: self.x = ... in any method
                targets = sub.targets if isinstance(sub, ast.Assign) else []
                if isinstance(sub, ast.AnnAssign):
                    targets = [sub.target]
                for t in targets:
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id == "self"
                    ):
                        members.add(t.attr)
            for base in node.bases:  # bases defined in the same module
                if isinstance(base, ast.Name) and base.id in classes:
                    members |= classes[base.id]
            classes[node.name] = frozenset(members)
        top |= _assigned(node)
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    star = True
                top.add(alias.asname or alias.name.split(".")[0])
    return frozenset(top), classes, star


def _assigned(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def _py_defines(path: Path, dotted: str) -> bool:
    """``Class.member``, or a name defined at top level or in any class of ``path``."""
    top, classes, _ = _py_names(path)
    first, _, rest = dotted.partition(".")
    if rest:
        return first in classes and rest.split(".")[0] in classes[first]
    return first in top or any(first in members for members in classes.values())


def _module_file(parts: list[str]) -> Path | None:
    base = PACKAGE.joinpath(*parts)
    if (base / "__init__.py").is_file():  # a package wins over a module, as in Python
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    if base.is_dir():  # a namespace package: no names to check
        return base
    return None


#: a mutmut mutant id's last part: ``x_f__mutmut_3`` is made from ``f``, ``xǁCǁm__mutmut_3``
#: from ``C.m`` (docs/checking.md, "Code mutation")
_MUTANT = re.compile(r"^(?:xǁ(?P<cls>\w+?)ǁ|x_)(?P<fn>\w+?)__mutmut_\d+$")


def _resolve_module(ref: str) -> str | None:
    """None if ``ostrom.a.b[.Name[.member]]`` (or ``ostrom.a::name``) resolves, else why.
    A mutant id resolves when the function it was made from exists."""
    dotted, _, attr = ref.partition("::")
    parts = dotted.split(".")[1:]
    mutant = _MUTANT.match(parts[-1]) if parts else None
    if mutant:
        parts = [*parts[:-1], *filter(None, (mutant.group("cls"), mutant.group("fn")))]
    for cut in range(len(parts), -1, -1):
        path = _module_file(parts[:cut])
        if path is None:
            continue
        rest = parts[cut:] + ([attr] if attr else [])
        if not rest or path.is_dir():
            return None
        top, classes, star = _py_names(path)
        if rest[0] in top or star:
            if len(rest) == 1 or rest[0] not in classes or rest[1] in classes[rest[0]]:
                return None
            return f"{rest[0]} has no member {rest[1]} ({path.relative_to(ROOT)})"
        return f"{path.relative_to(ROOT)} defines no {rest[0]}"
    return "no such module"


def _resolve_path(ref: str) -> str | None:
    """None if the repository path resolves, else why."""
    ref = ref.rstrip(".")
    if _PLACEHOLDER.search(ref):
        return None
    if ref.startswith(WRITTEN):
        return None
    rel = f"reference/{ref}" if ref.startswith("ostrom/") else ref
    if "." not in rel.rsplit("/", 1)[-1] and not rel.endswith("/"):
        return None  # no extension, no trailing slash: prose ("spec/code", "vectors/s")
    if any(c in rel for c in "*?["):
        return None if glob.glob(str(ROOT / rel), recursive=True) else "no file matches"
    if any((root / rel).exists() for root in (ROOT, *FIXTURE_ROOTS)):
        return None
    module, _, name = rel.rpartition(".")  # property_tests/x_mutants.Name: a module and a name
    if name[:1].isupper() and (ROOT / f"{module}.py").is_file():
        if _py_defines(ROOT / f"{module}.py", name):
            return None
        return f"{module}.py defines no {name}"
    return "no such file"


# --- scanning --------------------------------------------------------------------------------


def scan(text: str, origin: str, source: str, base: Path = ROOT) -> list[Dangling]:
    """The dangling references of ``text``.

    ``origin`` names the text in messages (a path, or ``ostrom X --help``); ``source`` is one
    of ``code``, ``data`` (registry, manifest, schema, examples), ``tla``, ``doc`` or ``help``
    and selects the kinds that apply; ``base`` is the
    directory relative links start from.
    """
    out: list[Dangling] = []
    fence = False
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{origin}:{number}"

        def bad(kind: str, ref: str, why: str) -> None:
            if (kind, ref) not in ALLOWED:
                out.append(Dangling(where, kind, ref, why))  # noqa: B023 (used at once)

        if source == "doc" and line.lstrip().startswith("```"):
            fence = not fence
        for m in _PATH.finditer(line):
            if (why := _resolve_path(m.group(1))) is not None:
                bad("path", m.group(1), why)
        for m in _PKG_PATH.finditer(line):
            if not any(f == m.group(1) or f.endswith("/" + m.group(1)) for f in _package_files()):
                bad("package-path", m.group(1), "no file of the package or the tests ends so")
        for m in _MODULE.finditer(line):
            if (why := _resolve_module(m.group(1).rstrip("."))) is not None:
                bad("module", m.group(1), why)
        for m in _DESIGN.finditer(line):
            for n in [m.group(1), *re.findall(r"\d+", m.group(2))]:
                if n not in _design_sections():
                    bad("design", f"docs/design.md §{n}", "no such section")
        for m in _OLD_DESIGN.finditer(line):
            bad("design", m.group(0), "the design is docs/design.md: cite docs/design.md §N")
        for m in OUTSIDE.finditer(line):
            bad("outside", m.group(1), "not in the repository")
        if source in ("code", "tla"):
            for m in _TLA_PTR.finditer(line):
                module = m.group(1)
                for op in re.split(r", | / | and ", m.group(2)):
                    if (("tla-op", op)) in ALLOWED:
                        continue
                    if not _tla_exists(module):
                        bad("tla-op", f"{module}.tla: {op}", "no such module")
                    elif op not in _tla_definitions(module):
                        bad("tla-op", f"{module}.tla: {op}", f"{module}.tla defines no {op}")
        if source == "tla":
            for m in _PY_PTR.finditer(line):
                out.extend(_check_py_pointer(where, m.group(1), m.group(2)))
        if source in ("doc", "help"):
            for m in _COMMAND.finditer(line):
                for ref in _command_files(m.group(1), m.group(2)):
                    if ref.startswith(WRITTEN) or "/" not in ref:
                        continue  # written by the command, or the reader's own file
                    if not (ROOT / ref).exists():
                        bad("command", ref, f"`ostrom {m.group(1)}` names no existing file")
        if source == "doc":
            for m in _LINK.finditer(line):
                out.extend(_check_link(where, m.group(1), base, ROOT / origin))
            if not fence:
                for m in _BACKTICK.finditer(line):
                    name = m.group(1)
                    if _looks_like_model(name) and not _is_model(name):
                        bad("model", name, "no model of that name in models/manifest.json")
    return out


def _check_py_pointer(where: str, file: str, names: str) -> Iterator[Dangling]:
    pointed = [n for n in names.split(", ") if "/" in file or re.search(r"[._]|^[A-Z]", n)]
    if not pointed:
        return  # "trace.py: the log's setup" is prose, not a pointer
    rel = file.removeprefix("reference/").removeprefix("ostrom/")
    candidates = [f for f in _package_files() if f == rel or f.endswith("/" + rel)]
    if not candidates:
        yield Dangling(where, "py-name", f"{file}: {names}", "no such file under reference/ostrom/")
        return
    for name in pointed:
        if not any(_py_defines(PACKAGE / c, name) for c in candidates):
            why = f"{' or '.join(candidates)} defines no {name}"
            yield Dangling(where, "py-name", f"{file}: {name}", why)


def _check_link(where: str, target: str, base: Path, here: Path) -> Iterator[Dangling]:
    if re.match(r"^[a-z]+:", target) or target == "#":
        return
    file, _, anchor = target.partition("#")
    path = (base / file).resolve() if file else None
    if path is not None:
        if not path.is_relative_to(ROOT):
            yield Dangling(where, "link", target, "leaves the repository")
            return
        if not path.exists():
            yield Dangling(where, "link", target, "no such file")
            return
    md = path if path is not None else here  # "#anchor" points into the file itself
    if anchor and md.suffix == ".md" and md.is_file() and anchor not in _anchors(md):
        yield Dangling(where, "link", target, f"no heading #{anchor} in {md.name}")


@cache
def _manifest_names() -> frozenset[str]:
    data = json.loads((MODELS_DIR / "manifest.json").read_text(encoding="utf-8"))
    return frozenset(m["name"] for m in data["models"])


def _looks_like_model(name: str) -> bool:
    """A name in the manifest's scheme: <family>-ci…, -deep, -safety, -mutant-…, and the
    PBFT and Algorithm 1 families' own prefixes (conformance mutants use other words)."""
    if not _MODEL_LIKE.match(name):
        return False
    return bool(
        re.search(r"-(ci|deep|safety)(-|$)|-mutant-", name)
        or name.startswith(("pbft-replica-", "pbft-refinement-", "pbft-local-", "alg1-"))
    )


def _is_model(name: str) -> bool:
    if "*" in name:
        pattern = re.compile(re.escape(name).replace(r"\*", ".*"))
        return any(pattern.fullmatch(n) for n in _manifest_names())
    return name in _manifest_names()


def _command_files(command: str, args: str) -> Iterable[str]:
    """The file operands of ``ostrom COMMAND ARGS`` as the docs show it."""
    args = args.split(">")[0].split(" -- ")[0]
    try:
        words = shlex.split(args)
    except ValueError:
        return []
    files = []
    positional = command in _FILE_ARGUMENT
    i = 0
    while i < len(words):
        w = words[i]
        if w in _FILE_OPTIONS and i + 1 < len(words):
            files.append(words[i + 1])
            i += 2
            continue
        if w.startswith("-"):
            i += 2 if w in {"--model", "--format", "--out", "--keep", "--timeout", "--layer"} else 1
            continue
        if positional and re.search(r"[/.]", w) and not _PLACEHOLDER.search(w):
            files.append(w)
        i += 1
    return [f for f in files if not _PLACEHOLDER.search(f) and f not in ("FILE", "LOG")]


# --- the repository --------------------------------------------------------------------------


def _sources() -> Iterator[tuple[Path, str]]:
    for top in ("reference", "property_tests", "bench", "scripts"):
        for path in sorted((ROOT / top).rglob("*")):
            if path == Path(__file__).resolve():
                continue  # its examples of bad references are meant to be bad
            if path.suffix in (".py", ".sh") and "egg-info" not in path.as_posix():
                yield path, "code"
    for folder in (SPEC_DIR, MODELS_DIR):
        for path in sorted(folder.iterdir()):
            if path.suffix in (".tla", ".cfg"):
                yield path, "tla"
            elif path.suffix in (".toml", ".json"):
                yield path, "data"
    for path in sorted((ROOT / "schema").glob("*.json")):
        yield path, "data"
    for path in sorted((ROOT / "examples").rglob("*.toml")):
        yield path, "data"
    yield ROOT / "README.md", "doc"
    for path in sorted(DOCS_DIR.rglob("*.md")):
        yield path, "doc"


def _help_texts() -> Iterator[tuple[str, str]]:
    from ostrom.cli.main import main

    runner = CliRunner()
    yield "ostrom --help", runner.invoke(main, ["--help"], terminal_width=1000).output
    for name in sorted(main.commands):
        result = runner.invoke(main, [name, "--help"], terminal_width=1000, max_content_width=1000)
        assert result.exit_code == 0, f"ostrom {name} --help: {result.output}"
        yield f"ostrom {name} --help", result.output


def test_every_reference_resolves() -> None:
    dangling: list[Dangling] = []
    for path, source in _sources():
        text = path.read_text(encoding="utf-8")
        dangling += scan(text, path.relative_to(ROOT).as_posix(), source, base=path.parent)
    for origin, text in _help_texts():
        dangling += scan(text, origin, "help")
    assert not dangling, "dangling references:\n" + "\n".join(map(str, dangling))


# --- the check can fail ----------------------------------------------------------------------

BAD = [
    ("code", "see docs/no-such-chapter.md", "path", "docs/no-such-chapter.md"),
    ("code", "see ostrom/lifecycle.py", "path", "ostrom/lifecycle.py"),
    ("code", "moved from conformance/trace.py", "package-path", "conformance/trace.py"),
    ("code", "from ostrom.conformance.trace import x", "module", "ostrom.conformance.trace"),
    ("code", "ostrom.protocol.orchestrator.Nope", "module", "ostrom.protocol.orchestrator.Nope"),
    ("code", "(docs/design.md §99)", "design", "docs/design.md §99"),
    ("code", "(DESIGN §3)", "design", "DESIGN §3"),
    ("code", "(see seeds/some-review.md)", "outside", "seeds/some-review.md"),
    ("code", "# spec/Lifecycle.tla: Supersede", "tla-op", "Lifecycle.tla: Supersede"),
    ("code", "# spec/Nowhere.tla: Propose", "tla-op", "Nowhere.tla: Propose"),
    (
        "tla",
        r"\* ostrom/protocol/orchestrator.py: Orchestrator.no_such_method",
        "py-name",
        "ostrom/protocol/orchestrator.py: Orchestrator.no_such_method",
    ),
    ("tla", r"\* ostrom/protocol/nothing.py: f", "py-name", "ostrom/protocol/nothing.py: f"),
    ("doc", "[rules](no-such.md)", "link", "no-such.md"),
    ("doc", "[rules](rules.md#no-such-heading)", "link", "rules.md#no-such-heading"),
    ("doc", "[away](../../elsewhere.md)", "link", "../../elsewhere.md"),
    ("help", "ostrom explain examples/none.itf.json", "command", "examples/none.itf.json"),
    ("doc", "`pbft-ci-liveness` adds", "model", "pbft-ci-liveness"),
    (
        "doc",
        "ostrom check --manifest models/sanctions-entries.json --model sanctions-ci",
        "command",
        "models/sanctions-entries.json",
    ),
    ("doc", "  ostrom check-params examples/params/no.toml", "command", "examples/params/no.toml"),
]


@pytest.mark.parametrize(("source", "text", "kind", "ref"), BAD, ids=[b[3] for b in BAD])
def test_a_bad_reference_is_reported(source: str, text: str, kind: str, ref: str) -> None:
    found = scan(text, "example.txt", source, base=DOCS_DIR)
    assert any(d.kind == kind and d.ref == ref for d in found), found
    assert all(d.where == "example.txt:1" for d in found)


GOOD = [
    ("code", "# spec/Lifecycle.tla: Propose, docs/design.md §3, ostrom/protocol/lifecycle.py"),
    ("code", "ostrom.protocol.orchestrator.Orchestrator.propose, conformance/runner.py"),
    ("tla", r"\* ostrom/protocol/orchestrator.py: Orchestrator.propose"),
    ("doc", "[design §7](design.md#7-properties), `lifecycle-ci`, `lifecycle-mutant-*`"),
    ("doc", "ostrom explain .tlc/counterexamples/x.itf.json; ostrom check-params FILE.toml"),
]


@pytest.mark.parametrize(("source", "text"), GOOD)
def test_a_good_reference_is_not_reported(source: str, text: str) -> None:
    assert scan(text, "example.txt", source, base=DOCS_DIR) == []
