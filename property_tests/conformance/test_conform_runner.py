"""``ostrom conform``: the runner against fake drivers (docs/conformance.md, issue 5 item 4).

The fake drivers in fixtures/drivers/ implement a toy counter as the "lifecycle" layer
(toy.py) and misbehave at one command, ``{"op": "add", "n": 13}``, step 1 of the vector
lifecycle/add/trigger of the synthetic suite fixtures/vectors/: they crash, hang, answer
garbage or return a wrong state.  Every other vector must still pass (the runner restarts
the driver), the "voting" vector must be reported not implemented, and the exit status,
the JSON report and the JUnit XML must say so.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from ostrom.conformance import FLOAT_TOLERANCE, runner, vectors
from ostrom.protocol.version import PROTOCOL_VERSION

HERE = Path(__file__).parents[1]
DRIVERS = HERE / "fixtures" / "drivers"
TOY = HERE / "fixtures" / "vectors"
REPO = HERE.parent
TRIGGER = "lifecycle/add/trigger"
OSTROM = Path(sys.executable).parent / "ostrom"


def driver(name: str, *args: str) -> list[str]:
    return [sys.executable, str(DRIVERS / f"{name}.py"), *args]


def conform(
    capsys: pytest.CaptureFixture[str], cmd: list[str], *options: str
) -> tuple[int, str, str]:
    """``ostrom conform OPTIONS -- CMD`` in-process: (exit status, stdout, stderr)."""
    kwargs: dict[str, Any] = {"vectors_dir": TOY}
    opts = list(options)
    while opts:
        opt = opts.pop(0)
        if opt == "--json":
            kwargs["as_json"] = True
        elif opt == "--fail-fast":
            kwargs["fail_fast"] = True
        elif opt == "-v":
            kwargs["verbose"] = True
        elif opt == "--timeout":
            kwargs["timeout"] = float(opts.pop(0))
        elif opt == "--junit":
            kwargs["junit"] = Path(opts.pop(0))
        elif opt == "--vectors":
            kwargs["vectors_dir"] = Path(opts.pop(0))
        else:
            key = {"--layer": "layers", "--action": "actions", "--property": "properties"}[opt]
            kwargs[key] = (*kwargs.get(key, ()), opts.pop(0))
    code = runner.main(cmd, **kwargs)
    out, err = capsys.readouterr()
    return code, out, err


def report_of(capsys: pytest.CaptureFixture[str], cmd: list[str], *options: str) -> Any:
    code, out, _ = conform(capsys, cmd, "--json", *options)
    doc = json.loads(out)
    doc["exit"] = code
    return doc


def statuses(doc: Any) -> dict[str, str]:
    return {v["id"]: v["status"] for v in doc["vectors"]}


# ------------------------------------------------------------------ the outcomes


def test_correct_driver_passes_and_reports_the_unimplemented_layer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = conform(capsys, driver("correct"))
    assert code == 0, out + err
    # the summary per layer, per action, per property id, and the suite check line
    for text in ("per layer", "per action", "per property id", "voting/commitment", "TOY-3"):
        assert text in out
    assert "read 6 of the 6 files listed in" in out
    assert "(5 vectors, 1 trace); selected 5, ran 4" in out
    assert "4 passed, 0 failed, 0 crashed, 0 timeout, 0 malformed, 1 not implemented" in out
    # progress on stderr, plain lines (not a terminal)
    assert "conform: toy 1 implements lifecycle; 5 vectors selected" in err
    assert "conform: voting: 0 passed, 0 failed, 1 not implemented" in err


def test_json_report(capsys: pytest.CaptureFixture[str]) -> None:
    doc = report_of(capsys, driver("correct"))
    assert doc["exit"] == 0 and doc["ok"] is True
    assert doc["format"] == runner.REPORT_FORMAT
    assert doc["implementation"] == "toy 1" and doc["driver_layers"] == ["lifecycle"]
    assert doc["suite"] | {"dir": None} == {
        "dir": None,
        "files_listed": 6,
        "files_read": 6,
        "vector_files": 5,
        "trace_files": 1,
        "selected": 5,
        "ran": 4,
        "stopped_early": False,
    }
    assert statuses(doc) == {
        "lifecycle/add/refused": "passed",
        TRIGGER: "passed",
        "lifecycle/add/two-adds": "passed",
        "lifecycle/tick/after-start": "passed",
        "voting/commitment/toy": "not_implemented",  # never "passed"
    }
    summary = doc["summary"]
    assert summary["layers"]["voting"] == {"passed": 0, "failed": 0, "not_implemented": 1}
    assert summary["actions"]["lifecycle/add"] == {"passed": 3, "failed": 0, "not_implemented": 0}
    assert summary["properties"]["TOY-2"] == {"passed": 1, "failed": 0, "not_implemented": 1}
    assert doc["totals"]["passed"] == 4 and doc["totals"]["not_implemented"] == 1


def _only_trigger_fails(doc: Any, status: str) -> dict[str, Any]:
    assert doc["exit"] == 1 and doc["ok"] is False
    expected = {
        "lifecycle/add/refused": "passed",
        TRIGGER: status,
        "lifecycle/add/two-adds": "passed",  # run by a restarted driver after a fault
        "lifecycle/tick/after-start": "passed",
        "voting/commitment/toy": "not_implemented",
    }
    assert statuses(doc) == expected
    (vec,) = [v for v in doc["vectors"] if v["id"] == TRIGGER]
    assert vec["file"] == "lifecycle/add/trigger.json"
    failure: dict[str, Any] = vec["failure"]
    assert failure["step"] == 1
    assert failure["command"] == {"op": "add", "n": 13}
    assert doc["summary"]["layers"]["lifecycle"] == {
        "passed": 3,
        "failed": 1,
        "not_implemented": 0,
    }
    return failure


def test_wrong_state_fails_at_the_diverging_step_with_a_diff(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = report_of(capsys, driver("wrong_state"))
    failure = _only_trigger_fails(doc, "failed")
    # the first difference in sorted-key order: events come before state
    assert failure["path"] == "$.events[0].n"
    assert (failure["expected"], failure["got"]) == (13, 14)
    assert '-      "n": 13,' in failure["diff"] and '+      "n": 14,' in failure["diff"]
    assert '-    "total": 14' in failure["diff"] and '+    "total": 15' in failure["diff"]
    # the sloppy "third" (off by 1e-12) passes elsewhere and is not noise in this diff
    assert "1e-12" not in failure["diff"] and "0.000000000001" not in failure["diff"]


def test_text_failure_names_vector_file_step_command_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = conform(capsys, driver("wrong_state"))
    assert code == 1
    assert "FAILED lifecycle/add/trigger (property_tests/fixtures/vectors/" in out.replace(
        str(REPO) + "/", ""
    )
    assert 'failed at step 1 of 3: {"n": 13, "op": "add"}' in out
    assert "first difference at $.events[0].n: expected 13, got 14" in out
    assert "--- expected" in out and "+++ got" in out
    assert "FAILED lifecycle/add/trigger: failed at step 1 of 3" in err  # progress line


def test_crash_mid_vector(capsys: pytest.CaptureFixture[str]) -> None:
    doc = report_of(capsys, driver("crash"))
    failure = _only_trigger_fails(doc, "crashed")
    assert "exit status 3" in failure["message"]
    assert "cannot add 13 to 1, giving up" in failure["stderr"]  # stderr shown, not parsed
    (vec,) = [v for v in doc["vectors"] if v["id"] == TRIGGER]
    assert vec["steps_run"] == 1


def test_hang_is_a_timeout_and_the_timeout_is_honoured(
    capsys: pytest.CaptureFixture[str],
) -> None:
    t0 = time.monotonic()
    doc = report_of(capsys, driver("hang"), "--timeout", "0.5")
    elapsed = time.monotonic() - t0
    failure = _only_trigger_fails(doc, "timeout")
    assert "within 0.5 s" in failure["message"]
    assert "thinking about 13" in failure["stderr"]
    (vec,) = [v for v in doc["vectors"] if v["id"] == TRIGGER]
    assert 0.5 <= vec["seconds"] < 3.0
    assert elapsed < 6.0  # the hung driver was killed, not waited for


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        (
            "text",
            "not one JSON object on one line (Expecting value: line 1 column 1 (char 0)): "
            "'adding 13... done!'",
        ),
        ("array", "not a JSON object: '[1, 2, 3]'"),
        ("wrong-type", "expected a reply of type 'observation', got type 'ready'"),
        ("no-state", 'the observation has no "state"'),
        ("error", "got an error: 13 is unlucky"),
    ],
)
def test_garbage_is_malformed(capsys: pytest.CaptureFixture[str], mode: str, message: str) -> None:
    failure = _only_trigger_fails(report_of(capsys, driver("garbage", mode)), "malformed")
    assert message in failure["message"]
    assert failure["step"] == 1


def test_a_surplus_reply_is_malformed(capsys: pytest.CaptureFixture[str]) -> None:
    """One request, one reply: a second line after step 1's observation fails step 2
    (found before sending it, or read as its reply: either way malformed)."""
    doc = report_of(capsys, driver("garbage", "extra"))
    (vec,) = [v for v in doc["vectors"] if v["id"] == TRIGGER]
    assert vec["status"] == "malformed" and vec["failure"]["step"] == 2
    assert "'ready'" in vec["failure"]["message"] or "no request asked" in vec["failure"]["message"]
    assert statuses(doc)["lifecycle/add/two-adds"] == "passed"


def test_fail_fast_stops_at_the_first_failure(capsys: pytest.CaptureFixture[str]) -> None:
    doc = report_of(capsys, driver("wrong_state"), "--fail-fast")
    assert doc["exit"] == 1
    assert list(statuses(doc).items()) == [
        ("lifecycle/add/refused", "passed"),
        (TRIGGER, "failed"),
    ]
    assert doc["suite"]["stopped_early"] is True


# ------------------------------------------------------------------ JUnit


def test_junit_xml(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "out" / "conform.xml"
    code, _, _ = conform(capsys, driver("wrong_state"), "--junit", str(path))
    assert code == 1
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("5", "1", "1")
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"lifecycle", "voting"}  # one testsuite per layer
    lifecycle = suites["lifecycle"]
    assert (lifecycle.get("tests"), lifecycle.get("failures")) == ("4", "1")
    cases = {c.get("name"): c for c in lifecycle.iter("testcase")}
    assert len(cases) == 4  # one testcase per vector
    failure = cases[TRIGGER].find("failure")
    assert failure is not None
    assert failure.get("type") == "failed"
    assert "at step 1 of 3" in (failure.get("message") or "")
    assert "$.events[0].n" in (failure.get("message") or "")
    assert "+++ got" in (failure.text or "")
    assert cases[TRIGGER].get("classname") == "lifecycle.add"
    assert (cases[TRIGGER].get("file") or "").endswith("lifecycle/add/trigger.json")
    assert cases["lifecycle/add/two-adds"].find("failure") is None
    assert suites["voting"].find("testcase/skipped") is not None


def test_junit_errors_for_a_crash_and_garbage_is_valid_xml(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "conform.xml"
    conform(capsys, driver("crash"), "--junit", str(path), "--layer", "lifecycle")
    root = ET.parse(path).getroot()
    assert (root.get("tests"), root.get("errors"), root.get("failures")) == ("4", "1", "0")
    (error,) = root.iter("error")
    assert error.get("type") == "crashed"
    (stderr,) = root.iter("system-err")
    assert "giving up" in (stderr.text or "")
    # control characters from a driver cannot make the XML unreadable
    from ostrom.conformance.junit import _clean

    assert _clean("a\x00b\x1bc") == "a\ufffdb\ufffdc"


# ------------------------------------------------------------------ usage errors


def test_bad_commands_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = conform(capsys, ["no-such-driver-anywhere"])
    assert code == 2 and "cannot run 'no-such-driver-anywhere'" in err
    code, _, err = conform(capsys, [str(DRIVERS / "toy.py")])  # not executable
    assert code == 2 and "not executable" in err
    code, _, err = conform(capsys, driver("garbage", "bad-hello"))
    assert code == 2
    assert "protocol 'ostrom-driver/0', the runner 'ostrom-driver/1'" in err
    code, _, err = conform(capsys, driver("correct"), "--layer", "nope")
    assert code == 2 and "unknown layer nope" in err


def test_filters(capsys: pytest.CaptureFixture[str]) -> None:
    doc = report_of(capsys, driver("correct"), "--action", "tick")
    assert list(statuses(doc)) == ["lifecycle/tick/after-start"]
    doc = report_of(capsys, driver("correct"), "--property", "TOY-2")
    assert statuses(doc) == {
        "lifecycle/add/refused": "passed",
        "voting/commitment/toy": "not_implemented",
    }
    doc = report_of(capsys, driver("correct"), "--layer", "lifecycle", "--action", "lifecycle/add")
    assert len(doc["vectors"]) == 3 and doc["exit"] == 0
    assert doc["suite"]["files_read"] == 6  # filters never skip the suite check
    # a driver that implements none of the selected layers proves nothing: exit 1
    doc = report_of(capsys, driver("correct"), "--layer", "voting")
    assert doc["exit"] == 1 and statuses(doc) == {"voting/commitment/toy": "not_implemented"}


# ------------------------------------------------------------------ the suite check


def _copy_suite(tmp_path: Path) -> Path:
    dest = tmp_path / "vectors"
    shutil.copytree(TOY, dest)
    return dest


def test_suite_check_refuses_a_missing_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    suite = _copy_suite(tmp_path)
    (suite / "lifecycle/tick/after-start.json").unlink()
    code, out, err = conform(capsys, driver("correct"), "--vectors", str(suite))
    assert code == 2 and out == ""
    assert "missing: lifecycle/tick/after-start.json is listed but absent" in err


def test_suite_check_refuses_an_unlisted_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    suite = _copy_suite(tmp_path)
    shutil.copy(suite / "lifecycle/add/refused.json", suite / "lifecycle/add/extra.json")
    code, _, err = conform(capsys, driver("correct"), "--vectors", str(suite))
    assert code == 2
    assert "unlisted: lifecycle/add/extra.json is not in MANIFEST.json" in err


def test_suite_check_refuses_a_changed_file_and_a_missing_manifest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    suite = _copy_suite(tmp_path)
    path = suite / "lifecycle/add/two-adds.json"
    path.write_text(path.read_text().replace('"n": 2', '"n": 3'))
    code, _, err = conform(capsys, driver("correct"), "--vectors", str(suite))
    assert code == 2 and "changed: lifecycle/add/two-adds.json does not match its sha256" in err
    (suite / "MANIFEST.json").unlink()
    code, _, err = conform(capsys, driver("correct"), "--vectors", str(suite))
    assert code == 2 and "cannot read the manifest" in err


@pytest.mark.parametrize("protocol", [PROTOCOL_VERSION + 1, "1", True, None, "absent"])
def test_suite_check_refuses_a_suite_of_another_protocol_version(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, protocol: object
) -> None:
    """A suite holds one protocol version's expectations (docs/design.md §9, "Versions"):
    run against another version's implementation it would fail a correct one or pass a
    wrong one, so it is refused whole, in one line naming both versions."""
    suite = _copy_suite(tmp_path)
    path = suite / "MANIFEST.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["protocol"] == PROTOCOL_VERSION  # the generator wrote it
    if protocol == "absent":
        del doc["protocol"]
    else:
        doc["protocol"] = protocol
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, out, err = conform(capsys, driver("correct"), "--vectors", str(suite))
    assert code == 2 and out == ""
    assert f"this ostrom checks protocol version {PROTOCOL_VERSION}" in err
    said = "names no protocol version" if protocol == "absent" else json.dumps(protocol)
    assert said in err and err.strip().count("\n") == 0, err


def test_toy_manifest_is_current() -> None:
    assert vectors.manifest_problems(TOY) == []


# ------------------------------------------------------------------ comparing


def test_diff_shows_only_real_differences() -> None:
    third = 1.0 / 3
    diff = runner.json_diff(
        {"third": third, "total": 1, "events": [1]},
        {"third": third + FLOAT_TOLERANCE / 10, "total": 2, "events": [1, 2]},
    )
    assert '-  "total": 1' in diff and '+  "total": 2' in diff
    assert "+    2" in diff
    assert not any(line[:1] in "+-" and "third" in line for line in diff.splitlines())


# ------------------------------------------------------------------ through the CLI


def test_cli_end_to_end(tmp_path: Path) -> None:
    """The installed ``ostrom conform`` with ``--``: options of CMD are not the runner's."""
    argv = [str(OSTROM), "conform", "--vectors", str(TOY), "--json", "--"]
    proc = subprocess.run(
        [*argv, *driver("garbage", "text")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)  # stdout holds only the report; progress is on stderr
    assert statuses(doc)[TRIGGER] == "malformed"
    assert "conform: toy 1 implements lifecycle" in proc.stderr
    assert "read 6 of the 6 files listed in" in proc.stderr


# ------------------------------------------------------------------ the real suite


def test_reference_driver_passes_the_lifecycle_layer(capsys: pytest.CaptureFixture[str]) -> None:
    vectors = REPO / "vectors"
    if importlib.util.find_spec("ostrom.conformance.driver") is None:
        pytest.skip("the reference driver (python -m ostrom.conformance.driver) does not exist yet")
    if not (vectors / "MANIFEST.json").is_file():
        pytest.skip("the vector suite (vectors/MANIFEST.json) does not exist yet")
    doc = report_of(
        capsys,
        [sys.executable, "-m", "ostrom.conformance.driver"],
        "--vectors",
        str(vectors),
        "--layer",
        "lifecycle",
    )
    failing = {k: v for k, v in statuses(doc).items() if v != "passed"}
    assert not failing, failing
    assert doc["exit"] == 0 and doc["suite"]["ran"] > 0
    assert doc["suite"]["files_read"] == doc["suite"]["files_listed"]


def test_a_reference_mutant_is_caught(capsys: pytest.CaptureFixture[str]) -> None:
    """The runner catches a real protocol bug: the reference with an ignored objection."""
    mutant = "lifecycle-ignored-objection"
    if not (REPO / "vectors" / "MANIFEST.json").is_file():
        pytest.skip("the vector suite (vectors/MANIFEST.json) does not exist yet")
    listed = subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--list-mutants"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    ).stdout.split()
    if mutant not in listed:
        pytest.skip(f"the reference driver has no mutant {mutant}")
    doc = report_of(
        capsys,
        [sys.executable, "-m", "ostrom.conformance.driver", "--mutant", mutant],
        "--vectors",
        str(REPO / "vectors"),
        "--layer",
        "lifecycle",
    )
    assert doc["exit"] == 1
    failed = [v for v in doc["vectors"] if v["status"] == "failed"]
    assert failed, "the mutant passed every lifecycle vector"
    assert all(v["failure"]["step"] is not None and v["failure"]["diff"] for v in failed)
    assert {v["status"] for v in doc["vectors"]} <= {"passed", "failed"}  # no driver fault
