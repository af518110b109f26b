"""Every command, fed hostile input: no traceback, a documented exit code, nothing written.

docs/cli.md promises that no input — an option value, a file of any format a command
reads, the replies of a driver under test — produces a Python traceback or an internal
error, that bad input exits 2 (or what the command documents for a verdict), and that a
command that fails writes nothing.  Hypothesis checks it here:

* option values: for every numeric or textual option of every command, values drawn
  from hostile numbers (nan, inf, 1e308, -1, 10^11, 1e-300, hex, underscores, blanks)
  and arbitrary text;
* files: each format mutated from a valid example — parameter files and simulation
  configs (TOML), the property registry (TOML), ITF traces (JSON), JSON-lines trace logs,
  the model manifest, conformance vectors (re-hashed into MANIFEST.json, so that the
  runner reads them) — by replacing values with hostile ones, deleting and duplicating
  lines, and cutting the file;
* a driver's replies: arbitrary JSON-ish lines from the driver under test.

Each example runs in a fresh working directory, which must be empty afterwards, and the
input files must be unchanged.  The number of examples scales with the Hypothesis
profile (``ci``: a tenth of its max_examples per test, at least 12; ``deep``: ten
times more).
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ostrom.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parents[1] / "fixtures"
TOY = FIXTURES / "vectors"
TLA = FIXTURES / "tla"
DRIVERS = FIXTURES / "drivers"

#: exit codes a command may end with on hostile input (docs/cli.md): never 3 (that would
#: be an internal error or a tool failure the input caused)
ALLOWED = {0, 1, 2}


def examples(share: int = 10, least: int = 12) -> int:
    """How many examples a test here runs: a share of the profile's max_examples."""
    return max(least, settings().max_examples // share)


def fuzz(share: int = 10, least: int = 12) -> settings:
    return settings(
        max_examples=examples(share, least),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


@contextlib.contextmanager
def empty_cwd() -> Iterator[Path]:
    old = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="ostrom-hostile-") as d:
        os.chdir(d)
        try:
            yield Path(d)
        finally:
            os.chdir(old)


def run(args: list[str], *, allowed: set[int] = ALLOWED, named: tuple[Path, ...] = ()) -> Result:
    """``ostrom ARGS`` in a fresh empty directory: the exit code is documented, nothing
    leaked, nothing was written there (but the ``named`` outputs)."""
    with empty_cwd() as cwd:
        r = CliRunner().invoke(main, args)
        left = sorted(p.name for p in cwd.iterdir() if p not in named)
    out = r.output
    assert "Traceback" not in out and "internal error" not in out, (args, out)
    assert r.exit_code in allowed, (args, r.exit_code, out)
    assert not isinstance(r.exception, Exception) or isinstance(r.exception, SystemExit), (
        args,
        r.exception,
    )
    assert not left, f"{args} wrote {left} into its working directory"
    return r


# --- hostile values ------------------------------------------------------------------------------

HOSTILE_NUMBERS = [
    "nan", "NaN", "inf", "-inf", "Infinity", "1e308", "1e400", "-1e308", "-1", "-5",
    "99999999999", "1e-300", "-0", "0x10", "1_000", " 3", "3 ", "", " ", "ten", "1.5.2",
    "٣", "1e", "--1", "+-2", "9" * 40,
]  # fmt: skip
hostile_number = st.sampled_from(HOSTILE_NUMBERS)
hostile_text = st.one_of(
    hostile_number,
    st.text(min_size=0, max_size=30),
    st.text(alphabet="\x00\n\r\t\"'\\{}[]<>|;$`", min_size=1, max_size=10),
)
HOSTILE_VALUES = [
    "nan", "inf", "-inf", "1e308", "-1", "0", "99999999999", "1e-300", '"x"', "[]", "{}",
    "true", "[1, 2]", '"' + "a" * 300 + '"', "{a = 1}", "-0.0", "1e-7", "0.3333333333",
]  # fmt: skip


# --- option values -------------------------------------------------------------------------------

#: (command words, option, arguments that keep a valid value cheap).  Values are hostile,
#: so almost every example is refused; the few that parse must still end as documented.
OPTIONS: list[tuple[list[str], str, list[str]]] = [
    (["simulate"], "--seed-start", ["--rounds", "1", "--agents", "12", "--quiet"]),
    (["simulate"], "--seeds", ["--rounds", "1", "--agents", "12", "--quiet"]),
    (["simulate"], "--rounds", ["--agents", "12", "--quiet"]),
    (["simulate"], "--agents", ["--rounds", "1", "--quiet"]),
    (["simulate"], "--artifacts", ["--rounds", "1", "--agents", "12", "--quiet"]),
    (["simulate"], "--jobs", ["--rounds", "1", "--agents", "12", "--quiet"]),
    (["simulate"], "--scenario", ["--rounds", "1", "--agents", "12", "--quiet"]),
    (["check-params"], "--min-active-agents", []),
    (["check"], "--timeout", ["--print-cfg", "--manifest", str(TLA / "models/manifest.json")]),
    (["check"], "--workers", ["--print-cfg", "--manifest", str(TLA / "models/manifest.json")]),
    (["check"], "--jobs", ["--print-cfg", "--manifest", str(TLA / "models/manifest.json")]),
    (["check"], "--model", ["--print-cfg", "--manifest", str(TLA / "models/manifest.json")]),
    (["diagram"], "--format", []),
    (["properties"], "--registry", []),
    (["consensus-demo"], "--items", ["--scenario", "silent-backup"]),
    (["consensus-demo"], "--scenario", ["--items", "1"]),
    (["serve"], "--port", ["--founders", "/nonexistent/founders.toml"]),
    (["serve"], "--snapshot-every", ["--founders", "/nonexistent/founders.toml"]),
    (["serve"], "--snapshot-ratio", ["--founders", "/nonexistent/founders.toml"]),
    (["serve"], "--tick-interval", ["--founders", "/nonexistent/founders.toml"]),
    (["serve"], "--header-timeout", ["--founders", "/nonexistent/founders.toml"]),
    (["serve"], "--body-timeout", ["--founders", "/nonexistent/founders.toml"]),
    (["serve"], "--max-connections", ["--founders", "/nonexistent/founders.toml"]),
    (["mutate-code", "--list"], "--jobs", []),
    (["mutate-code", "--list", "voting"], "--only", []),
    (["mutate-code", "--list", "--out"], "--only", []),
]


@pytest.mark.parametrize(("words", "option", "extra"), OPTIONS, ids=lambda x: str(x))
@fuzz(share=30, least=8)
@given(value=hostile_text)
def test_hostile_option_values(words: list[str], option: str, extra: list[str], value: str) -> None:
    if option == "--registry" and value.strip() in ("", "."):
        value = "/nonexistent/registry.toml"
    run([*words, option, value, *extra])


@fuzz(share=20, least=10)
@given(
    option=st.sampled_from(["--timeout", "--layer", "--action", "--property"]), value=hostile_text
)
def test_hostile_conform_options(option: str, value: str) -> None:
    driver = [sys.executable, str(DRIVERS / "correct.py")]
    run(["conform", "--vectors", str(TOY), option, value, "--", *driver])


@fuzz(share=20, least=10)
@given(option=st.sampled_from(["--step", "--var", "--format"]), value=hostile_text)
def test_hostile_explain_options(option: str, value: str) -> None:
    trace = TOY / "lifecycle" / "traces" / "toy.itf.json"
    run(["explain", str(trace), option, value])


# --- files ---------------------------------------------------------------------------------------


@st.composite
def mutated_text(draw: st.DrawFn, original: str) -> str:
    """``original`` with a few line-level edits: a value replaced by a hostile one, a line
    deleted, duplicated or cut short, or an arbitrary line inserted."""
    lines = original.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            lines.append(draw(st.text(max_size=30)))
            continue
        i = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.sampled_from(["value", "delete", "duplicate", "cut", "insert", "key"]))
        if edit == "value" and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {draw(st.sampled_from(HOSTILE_VALUES))}"
        elif edit == "delete":
            del lines[i]
        elif edit == "duplicate":
            lines.insert(i, lines[i])
        elif edit == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif edit == "key" and "=" in lines[i]:
            lines[i] = f"{draw(st.text(min_size=1, max_size=8))} = {lines[i].split('=', 1)[1]}"
        else:
            lines.insert(i, draw(st.text(max_size=40)))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_bytes(text)
    return path


PARAMS_TEXT = (ROOT / "examples" / "params" / "defaults.toml").read_text(encoding="utf-8")
REGISTRY_TEXT = (ROOT / "spec" / "properties.toml").read_text(encoding="utf-8")
SIM_TEXT = (
    'scenario = "moderate"\nrounds = 1\nagents = 12\nartifacts = 4\nperception_noise = 0.1\n[mix]\n'
)


@fuzz(share=10)
@given(data=st.data())
def test_mutated_parameter_files(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    f = tmp_path_factory.mktemp("params") / "p.toml"
    text = data.draw(mutated_text(PARAMS_TEXT))
    _write(f, text)
    before = f.read_bytes()
    run(["params", str(f)])
    assert f.read_bytes() == before


@fuzz(share=30, least=6)
@given(data=st.data())
def test_mutated_parameter_files_through_the_prover(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    f = _write(tmp_path_factory.mktemp("params") / "p.toml", data.draw(mutated_text(PARAMS_TEXT)))
    run(["check-params", str(f)])


@fuzz(share=10)
@given(data=st.data())
def test_mutated_registries(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    f = _write(tmp_path_factory.mktemp("reg") / "r.toml", data.draw(mutated_text(REGISTRY_TEXT)))
    run(["properties", "--registry", str(f)])
    run(["properties", "--json", "--registry", str(f)])


@fuzz(share=15)
@given(data=st.data())
def test_mutated_simulation_configs(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    text = data.draw(mutated_text(SIM_TEXT))
    f = _write(tmp_path_factory.mktemp("sim") / "c.toml", text)
    run(["simulate", "--config", str(f), "--rounds", "1", "--agents", "12", "--quiet"])


# --- JSON documents ------------------------------------------------------------------------------

HOSTILE_JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(
            [
                {"#set": "ab"},
                {"#tup": 3},
                {"#map": [[1]]},
                {"#bigint": "x"},
                {"#set": [1, 1]},
                {"#unserializable": 3},
                {"#meta": []},
            ]
        ),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def mutated_json(draw: st.DrawFn, doc: Any) -> Any:
    """``doc`` with one to three subtrees replaced by hostile JSON, or deleted."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        path: list[Any] = []
        node = doc
        while isinstance(node, dict | list) and node and draw(st.booleans()):
            key = draw(
                st.sampled_from(sorted(node) if isinstance(node, dict) else range(len(node)))
            )
            path.append(key)
            node = node[key]
        if not path:
            doc = draw(HOSTILE_JSON) if draw(st.integers(0, 9)) == 0 else doc
            continue
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(HOSTILE_JSON)
    return doc


ITF = json.loads(
    gzip.decompress((ROOT / "docs/counterexamples/drop-own-view-change.itf.json.gz").read_bytes())
)
ITF["states"] = ITF["states"][:6]  # enough to mutate, cheap to explain


@fuzz(share=6)
@given(data=st.data(), sequence=st.booleans())
def test_mutated_itf_traces(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, sequence: bool
) -> None:
    doc = data.draw(mutated_json(ITF))
    f = _write(tmp_path_factory.mktemp("itf") / "t.itf.json", json.dumps(doc))
    run(["explain", str(f), *(["--sequence"] if sequence else [])])
    page = f.with_suffix(".html")
    run(["explore", str(f), "-o", str(page)])


@fuzz(share=10)
@given(raw=st.binary(max_size=200))
def test_raw_bytes_as_itf(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    f = _write(tmp_path_factory.mktemp("itf") / "t.itf.json", raw)
    run(["explain", str(f)])


MANIFEST = json.loads((TLA / "models" / "manifest.json").read_text())


@fuzz(share=10)
@given(data=st.data())
def test_mutated_model_manifests(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    d = tmp_path_factory.mktemp("tla")
    shutil.copytree(TLA, d / "repo")
    f = d / "repo" / "models" / "manifest.json"
    f.write_text(json.dumps(data.draw(mutated_json(MANIFEST))))
    run(["check", "--print-cfg", "--manifest", str(f)])


def _rehash(root: Path) -> None:
    manifest = root / "MANIFEST.json"
    doc = json.loads(manifest.read_text())
    doc["files"] = {
        rel: hashlib.sha256((root / rel).read_bytes()).hexdigest() for rel in doc["files"]
    }
    manifest.write_text(json.dumps(doc, indent=2))


@fuzz(share=10)
@given(data=st.data())
def test_mutated_vectors(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """A vector mutated and re-hashed: the runner reads it and must refuse it or run it."""
    suite = tmp_path_factory.mktemp("suite") / "vectors"
    shutil.copytree(TOY, suite)
    rel = data.draw(
        st.sampled_from(sorted(json.loads((TOY / "MANIFEST.json").read_text())["files"]))
    )
    target = suite / rel
    target.write_text(json.dumps(data.draw(mutated_json(json.loads(target.read_text())))))
    _rehash(suite)
    run(["explore", str(target), "-o", str(target.with_suffix(".html"))])
    driver = [sys.executable, str(DRIVERS / "correct.py")]
    run(["conform", "--vectors", str(suite), "--timeout", "5", "--", *driver])


REPLY = st.one_of(
    HOSTILE_JSON.map(json.dumps),
    st.builds(
        lambda result, events, state: json.dumps(
            {"type": "observation", "result": result, "events": events, "state": state}
        ),
        HOSTILE_JSON,
        HOSTILE_JSON,
        HOSTILE_JSON,
    ),
    st.text(max_size=60),
    st.sampled_from(
        [
            '{"type": "observation", "result": "ok", "events": [], "state": NaN}',
            '{"type": "observation", "result": "ok", "events": [], "state": 1e400}',
            "[" * 5000 + "]" * 5000,
            '{"type": "error"}',
            '{"type": "hello"}',
        ]
    ),
)


@fuzz(share=10)
@given(reply=REPLY, as_json=st.booleans())
def test_hostile_driver_replies(
    tmp_path_factory: pytest.TempPathFactory, reply: str, as_json: bool
) -> None:
    f = tmp_path_factory.mktemp("reply") / "reply.txt"
    f.write_bytes(reply.encode("utf-8", "surrogatepass").replace(b"\n", b" "))
    driver = [sys.executable, str(DRIVERS / "replies.py"), str(f)]
    r = run(["conform", "--vectors", str(TOY), "--timeout", "5", *(["--json"] if as_json else []),
             "--", *driver])  # fmt: skip
    if as_json and r.exit_code in (0, 1):  # the report is JSON that every reader accepts
        json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the report"))


LOG = [
    json.loads(line)
    for line in (FIXTURES / "logs" / "lifecycle-tally.jsonl").read_text().splitlines()
]


@pytest.mark.tlc
@fuzz(share=20, least=8)
@given(data=st.data())
def test_mutated_trace_logs(tmp_path_factory: pytest.TempPathFactory, data: st.DataObject) -> None:
    """A lifecycle log with one line mutated: unusable (2), rejected (1), or accepted."""
    lines = copy.deepcopy(LOG)
    i = data.draw(st.integers(0, len(lines) - 1))
    lines[i] = data.draw(mutated_json(lines[i]))
    f = tmp_path_factory.mktemp("log") / "log.jsonl"
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    run(["validate-trace", "--timeout", "120", str(f)])


def test_cluster_up_refuses_a_refusal_budget_out_of_range() -> None:
    """``--refusal-rate nan`` passes click's range (NaN compares false): refused with exit
    2 before anything is created, as 0, a negative rate, infinity and a zero burst are."""
    for args in (
        ["--refusal-rate", "nan"],
        ["--refusal-rate", "0"],
        ["--refusal-rate", "-1"],
        ["--refusal-rate", "inf"],
        ["--refusal-burst", "0"],
    ):
        run(["cluster", "up", "--dir", "c", *args], allowed={2})


def test_serve_refuses_a_non_finite_float_option() -> None:
    """``serve --refusal-rate nan`` passed click's range and made the refusal budget raise
    after the database was created (exit 3, an internal error); ``--tick-interval nan`` and
    ``--snapshot-ratio nan``/``inf`` started a node that never ticks or never snapshots.
    Each is refused with exit 2 before anything is created (no --founders here: a bad
    founders file would be refused first and hide the option's fault)."""
    for args in (
        ["--refusal-rate", "nan"],
        ["--refusal-rate", "inf"],
        ["--refusal-rate", "0"],
        ["--refusal-rate", "-1"],
        ["--tick-interval", "nan"],
        ["--tick-interval", "inf"],
        ["--snapshot-ratio", "nan"],
        ["--snapshot-ratio", "inf"],
        ["--header-timeout", "nan"],
        ["--body-timeout", "nan"],
    ):
        run(["serve", "--db", "node.db", *args], allowed={2})
