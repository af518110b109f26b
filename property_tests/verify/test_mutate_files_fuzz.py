"""Hostile mutation files: whatever bytes models/mutation/*.toml or scores.json hold, the
readers either return well-typed values or raise their own error naming the file — never a
traceback, and never a suite or an accepted equivalent that a typo let through.

Three generators: arbitrary bytes; a valid suite file with characters inserted, deleted
or replaced (most such edits still parse as TOML and reach the validation); and
structured documents whose keys are the real ones and whose values are of any JSON type.
The scores file gets arbitrary JSON, and every document ``load_scores`` accepts must also
render as the docs table (``ostrom docs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ostrom.verify.mutate.equivalents import EquivalentsError, load_equivalents
from ostrom.verify.mutate.suite import Suite, SuiteError, load_scores, load_suite, scores_table

GOOD = """[suite]
models = ["m1", "m2"]
sample = 10
seed = 3
timeout = 60
ci_models = ["m1"]
ci_sample = 2

[[equivalent]]
id = "Step/cmp/1"
change = ">= -> >"
reason = "no state has n = 0"
"""

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_keys = st.sampled_from(
    ["models", "sample", "seed", "timeout", "ci_models", "ci_sample", "id", "change", "reason", "x"]
)


def _toml_value(v: Any) -> str:
    """A TOML rendering of a JSON-like value (None as an empty array: TOML has no null)."""
    if v is None:
        return "[]"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return json.dumps(v) if v == v and v not in (float("inf"), float("-inf")) else "nan"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"


@st.composite
def _edited(draw: st.DrawFn) -> bytes:
    text = bytearray(GOOD.encode())
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        byte = draw(st.sampled_from([*b"[]=\"'#\n ,.0129-abzAZ\\{}", 0xFF, 0xC3]))
        if kind == "insert":
            text.insert(at, byte)
        elif at < len(text):
            if kind == "delete":
                del text[at]
            else:
                text[at] = byte
    return bytes(text)


@st.composite
def _structured(draw: st.DrawFn) -> bytes:
    suite = draw(st.dictionaries(_keys, _json, max_size=7))
    eqs = draw(st.lists(st.dictionaries(_keys, _json, max_size=4), max_size=3))
    lines = ["[suite]"] + [f"{k} = {_toml_value(v)}" for k, v in suite.items()]
    for e in eqs:
        lines += ["", "[[equivalent]]"] + [f"{k} = {_toml_value(v)}" for k, v in e.items()]
    return ("\n".join(lines) + "\n").encode()


_files = st.binary(max_size=300) | _edited() | _structured()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=_files)
def test_a_hostile_suite_file_is_read_or_refused_with_the_files_own_error(
    tmp_path: Path, data: bytes
) -> None:
    (tmp_path / "S.toml").write_bytes(data)
    try:
        suite = load_suite("S", tmp_path)
    except SuiteError as exc:
        assert "S.toml" in str(exc) or "no suite" in str(exc)
    else:
        assert isinstance(suite, Suite)
        assert suite.models and all(isinstance(m, str) for m in suite.models)
        assert all(isinstance(x, int) and not isinstance(x, bool)
                   for x in (suite.sample, suite.seed, suite.timeout, suite.ci_sample))  # fmt: skip
        assert suite.sample >= 1 and suite.seed >= 0 and suite.timeout >= 1
        assert set(suite.ci_models) <= set(suite.models)
        assert (suite.ci_sample >= 1) == bool(suite.ci_models)
    try:
        eqs = load_equivalents("S", tmp_path)
    except EquivalentsError as exc:
        assert "S.toml" in str(exc)
    else:
        assert len({e.id for e in eqs}) == len(eqs)
        assert all(e.id.strip() and e.change.strip() and e.reason.strip() for e in eqs)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(
    doc=_json
    | st.dictionaries(
        st.sampled_from(["Lifecycle", "PBFT"]),
        st.dictionaries(
            st.sampled_from(["ci", "sample", "full", "other"]),
            st.dictionaries(
                st.sampled_from(
                    ["score", "counts", "models", "survivors", "sampled", "generated", "seed", "x"]
                ),
                _json,
                max_size=5,
            ),
            max_size=3,
        ),
        max_size=2,
    ),
    raw=st.booleans(),
    junk=st.binary(max_size=60),
)
def test_a_hostile_scores_file_is_read_or_refused_and_what_is_read_renders(
    tmp_path: Path, doc: Any, raw: bool, junk: bytes
) -> None:
    path = tmp_path / "scores.json"
    path.write_bytes(junk if raw else json.dumps(doc).encode())
    try:
        scores = load_scores(path)
    except SuiteError as exc:
        assert "scores.json" in str(exc)
    else:
        assert scores_table(scores).startswith("| spec |")
