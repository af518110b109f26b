"""The reference driver over a real subprocess: `python -m ostrom.conformance.driver`
(docs/conformance.md).

Handshake, reset, steps, refusals (observations, not errors), malformed lines (errors,
and the driver keeps going), `--layers`, the `--mutant` hook (a mutant fails a vector the
reference passes) and the `--log` trace format.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from ostrom.conformance import DRIVER_PROTOCOL, TRACE_FORMAT
from ostrom.conformance.mutants import MUTANTS, Mutant
from ostrom.conformance.vectors import VECTORS_DIR, compare_step, load_vector

HELLO = {"type": "hello", "protocol": DRIVER_PROTOCOL}
TIMEOUT = 30.0


class Driver:
    """One driver process; ``send`` writes a line and returns the reply line as JSON."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ostrom.conformance.driver", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")  # EOF

    def write(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def reply(self) -> Any:
        line = self.lines.get(timeout=TIMEOUT)
        assert line.endswith("\n"), f"no reply line: {line!r}"
        return json.loads(line)

    def send(self, msg: Any) -> Any:
        self.write(json.dumps(msg))
        return self.reply()

    def close(self) -> int:
        self.write(json.dumps({"type": "bye"}))
        return self.proc.wait(timeout=TIMEOUT)


def _run_vector(d: Driver, rel: str) -> int | None:
    """Run a committed vector through the driver; the first diverging step or None."""
    v = load_vector(VECTORS_DIR / rel)
    ready = d.send({"type": "reset", "layer": v.layer, "params": v.doc["params"],
                    "setup": v.doc["setup"]})  # fmt: skip
    assert ready == {"type": "ready"}
    for i, step in enumerate(v.steps):
        obs = d.send({"type": "step", "command": step["command"]})
        assert obs["type"] == "observation"
        if compare_step(step["expect"], obs):
            return i
    return None


def test_protocol_session() -> None:
    d = Driver()
    try:
        hello = d.send(HELLO)
        assert hello["type"] == "hello" and hello["protocol"] == DRIVER_PROTOCOL
        assert hello["implementation"].startswith("ostrom-reference")
        assert hello["layers"][:6] == [
            "lifecycle",
            "voting",
            "reputation",
            "sanctions",
            "forgetting",
            "community",
        ]
        assert _run_vector(d, "lifecycle/dispute/retracted-by-two-of-three.json") is None
        assert _run_vector(d, "reputation/record_votes/agreement-builds-trust.json") is None
        # a refusal is an observation with its code, never a driver error
        d.send({"type": "reset", "layer": "lifecycle", "params": {}, "setup": {}})
        obs = d.send({"type": "step", "command": {"op": "tick", "extra": 1}})
        assert obs["type"] == "observation" and obs["result"] == "invalid_input"
        obs = d.send({"type": "step", "command": "tick"})
        assert obs["result"] == "invalid_input"
        # malformed lines: an error each, and the driver goes on
        for line, why in [
            ("garbage", "not JSON"),
            ("[1, 2]", "JSON object"),
            ('{"type": "shout"}', "unknown message type"),
            ('{"type": "step"}', "needs a command"),
            ('{"type": "reset", "layer": "astrology"}', "not implemented"),
            ('{"type": "reset", "layer": "voting", "params": {"quorum": "many"}}', "bad params"),
            ('{"type": "reset", "layer": "lifecycle", "setup": {"agents": 3}}', "cannot build"),
            ('{"type": "reset", "layer": "voting", "params": []}', "must be objects"),
            ('{"type": "hello", "protocol": "ostrom-driver/0"}', "unsupported protocol"),
            ('"\\ud800"', "JSON object"),
        ]:
            d.write(line)
            reply = d.reply()
            assert reply["type"] == "error" and why in reply["message"], (line, reply)
        # after a failed reset there is no layer to step
        assert d.send({"type": "step", "command": {"op": "tick"}})["type"] == "error"
        d.write("")  # an empty line gets no reply
        d.write("   ")
        assert d.send({"type": "reset", "layer": "voting"}) == {"type": "ready"}
    finally:
        assert d.close() == 0


def test_handshake_comes_first_and_eof_ends() -> None:
    d = Driver()
    reply = d.send({"type": "reset", "layer": "voting"})
    assert reply["type"] == "error" and "handshake" in reply["message"]
    assert d.send(HELLO)["type"] == "hello"
    assert d.proc.stdin is not None
    d.proc.stdin.close()
    assert d.proc.wait(timeout=TIMEOUT) == 0


def test_layers_option_announces_a_subset() -> None:
    d = Driver("--layers", "voting,lifecycle")
    try:
        assert d.send(HELLO)["layers"] == ["lifecycle", "voting"]
        assert d.send({"type": "reset", "layer": "sanctions"})["type"] == "error"
    finally:
        d.close()
    bad = subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--layers", "tarot"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        input="",
    )
    assert bad.returncode != 0 and "unknown layer" in bad.stderr


def test_mutant_hook() -> None:
    """The registry's example mutant fails a vector that the reference passes."""
    assert all(isinstance(m, Mutant) and m.layer and m.description for m in MUTANTS.values())
    name = "lifecycle-ignored-objection"
    assert MUTANTS[name].layer == "lifecycle"
    d = Driver("--mutant", name)
    try:
        assert d.send(HELLO)["implementation"].endswith(f"mutant {name}")
        assert _run_vector(d, "lifecycle/object/reviewer-objects.json") == 2
        assert _run_vector(d, "voting/commitment/canonical-encoding.json") is None
    finally:
        d.close()
    bad = subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--mutant", "no-such-mutant"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        input="",
    )
    assert bad.returncode != 0 and "unknown mutant" in bad.stderr


def test_log_writes_one_trace_per_logged_reset(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    d = Driver("--log", str(log))
    try:
        d.send(HELLO)
        rel = "lifecycle/propose/fast-track-to-active.json"
        assert _run_vector(d, rel) is None
        assert _run_vector(d, "voting/commitment/canonical-encoding.json") is None  # not logged
        assert _run_vector(d, "community/join/newcomer-at-w-min.json") is None
    finally:
        assert d.close() == 0
    v = load_vector(VECTORS_DIR / rel)
    lines = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == {
        "format": TRACE_FORMAT,
        "layer": "lifecycle",
        "params": v.doc["params"],
        "setup": v.doc["setup"],
    }
    assert len(lines) == 1 + len(v.steps)
    for entry, step in zip(lines[1:], v.steps, strict=True):
        assert set(entry) == {"command", "result", "state", "events"}
        assert entry["command"] == step["command"]
        assert entry["events"] == step["expect"]["events"]
        assert entry["result"] == step["expect"]["result"]
        assert entry["state"] == step["expect"]["state"]
    second = [json.loads(x) for x in (tmp_path / "run.2.jsonl").read_text().splitlines()]
    assert second[0]["layer"] == "community" and len(second) > 1
    assert not (tmp_path / "run.3.jsonl").exists()


def test_help_and_list_mutants() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--help"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert out.returncode == 0
    for word in ("ostrom-driver/1", "--layers", "--mutant", "--log", "hello", "observation"):
        assert word in out.stdout
    listed = subprocess.run(
        [sys.executable, "-m", "ostrom.conformance.driver", "--list-mutants"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert "lifecycle-ignored-objection\tlifecycle\t" in listed.stdout


@pytest.mark.parametrize("bad", ["{", '{"type": "step", "command": {"op": "tick"}}'])
def test_in_process_driver_never_raises(bad: str) -> None:
    from ostrom.conformance.driver import Driver as InProcess
    from ostrom.conformance.layers import ADAPTERS

    drv = InProcess(ADAPTERS)
    drv.handle(json.dumps(HELLO))
    reply = drv.handle(bad)
    assert reply is not None and reply["type"] == "error"
