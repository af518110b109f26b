"""Logged refused rows are bounded in size (ROW-1, issue 41 item 4).

A registered agent's command that the Community refuses is logged (it is sequenced and
may count a violation), but over the ``refused_row_bytes`` parameter it no longer costs
the log its size: an ``invalid_input`` refusal is kept as its SHA-256 and a surrogate
command that the Community refuses the same way (``gate.elided``); a refusal that
counted no violation changed nothing and is not logged at all (413
``oversized_refusal``, its seq unused).  Checked here:

* on random oversized commands (known and unknown ops, extra fields, long fields), the
  reply is the Community's own answer to the command as sent, every row is within the
  bound, and the log replays with ``--verify`` (each surrogate's observation equals the
  one logged) and exports;
* a resend of a command kept as its hash is answered as a retry;
* an oversized refusal that counts a ``rate_limited`` or ``bad_reveal`` violation is
  kept as its hash too, naming its refusal, and replays (``Community.refused``) to the
  same observation and state as the command as sent (before: logged whole);
* over loopback, a flood of 50 KiB refused commands from a registered agent grows a real
  node's log by a bounded amount per row (before: by the whole body each).
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ostrom.protocol.commands import COMMANDS
from ostrom.protocol.community import Community
from ostrom.protocol.params import Params
from ostrom.service.export import export
from ostrom.service.gate import Gate
from ostrom.service.identity import canonical, sign_envelope
from ostrom.service.node import Node
from ostrom.service.store import StoreError
from service_world import OPERATOR, SALT, Signer, commit_phase, key, serve_founders, setup

BOUND = 1024  # the smallest refused_row_bytes: every row below stays as sent
PARAMS = Params(refused_row_bytes=BOUND)
AGENT = "f1"

OPS = st.sampled_from([*COMMANDS, "join", "no_such_op", "x" * 2000])
BIG = st.text(alphabet="ab\u00e9 ", min_size=0, max_size=3000)


@st.composite
def commands(draw: st.DrawFn) -> dict[str, Any]:
    """A command from the agent: a known op or not, with fields of any size, some
    extra: mostly refused, some of them over the bound."""
    cmd: dict[str, Any] = {"op": draw(OPS), "agent": AGENT}
    for f in draw(st.lists(st.sampled_from(["artifact", "reason", "slot", "junk", "digest"]))):
        cmd[f] = draw(BIG)
    return cmd


def _rows(node: Node) -> list[str]:
    return [canonical(e.envelope).decode() for e in node.store.entries()]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(commands(), min_size=1, max_size=6))
def test_refused_rows_are_bounded_and_replay(cmds: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "n.db"
        node = Node.open(db, params=PARAMS, setup=setup(), fsync=False)
        twin = Gate(PARAMS, node.gate.setup)  # applies every command as sent, never elided
        try:
            for cmd in cmds:
                seq = node.gate.last_seq(AGENT) + 1
                cid = node.gate.setup.community
                env = sign_envelope(key(AGENT), AGENT, seq, cmd, community=cid)
                size = node.gate.row_size(env)
                reply = node.submit(env)
                obs = twin.apply(env)
                if reply.status == 200:
                    assert reply.body["result"] == obs["result"]
                    assert reply.body["events"] == obs["events"]
                elif reply.body["error"] != "oversized_refusal":  # the gate's, before the log
                    assert obs == {"result": reply.body["error"], "events": []}, reply.body
                else:  # ROW-1: refused without a violation, over the bound: no row, no seq
                    assert obs["result"] not in ("ok", "invalid_input") and not obs["events"]
                    assert size > BOUND
                    twin = Gate(PARAMS, node.gate.setup)  # the twin's seq moved: redo it
                    for e in node.store.entries():
                        assert twin.apply_logged(e.envelope)["result"] == e.result
                assert node.gate.last_seq(AGENT) == twin.last_seq(AGENT)
                assert node.gate.public_state() == twin.public_state()
            for e in node.store.entries():
                if e.result != "ok":
                    assert len(canonical(e.envelope)) <= max(BOUND, 400), e.envelope
        finally:
            node.close()
        again = Node.open(db, verify=True, fsync=False)  # every surrogate replays the same
        again.close()
        export(db, Path(d) / "t.jsonl")


def test_a_resend_of_a_row_kept_as_its_hash_is_a_retry(tmp_path: Path) -> None:
    node = Node.open(tmp_path / "n.db", params=PARAMS, setup=setup(), fsync=False)
    try:
        cmd = {"op": "dispute", "agent": AGENT, "artifact": "x", "reason": "r", "junk": "j" * 5000}
        env = sign_envelope(key(AGENT), AGENT, 1, cmd, community=node.gate.setup.community)
        first = node.submit(env)
        assert first.body["result"] == "invalid_input" and not first.body["retry"]
        (row,) = node.store.entries()
        assert "elided" in row.envelope and "signature" not in row.envelope
        again = node.submit(env)
        assert again.body == {**first.body, "retry": True}
        other = sign_envelope(key(AGENT), AGENT, 1, {**cmd, "junk": "k" * 5000},
                              community=node.gate.setup.community)  # fmt: skip
        assert node.submit(other).body["error"] == "replayed"
        # the same within one group commit: the second is answered as a retry
        env2 = sign_envelope(key(AGENT), AGENT, 2, cmd, community=node.gate.setup.community)
        first2, again2 = node.submit_many([env2, env2])
        assert again2.body == {**first2.body, "retry": True}
    finally:
        node.close()


def test_the_bound_can_fail() -> None:
    """A gate that keeps every refused row as sent (the mutant) writes rows over it."""

    class KeepsEverything(Gate):
        def logged_form(self, envelope: dict[str, Any], obs: Any) -> dict[str, Any]:
            return envelope

    cmd = {"op": "dispute", "agent": AGENT, "artifact": "x", "reason": "r", "junk": "j" * 5000}
    with tempfile.TemporaryDirectory() as d:
        node = Node.open(Path(d) / "n.db", params=PARAMS, setup=setup(), fsync=False)
        node.gate.__class__ = KeepsEverything
        env = sign_envelope(key(AGENT), AGENT, 1, cmd, community=node.gate.setup.community)
        node.submit(env)
        assert max(len(r) for r in _rows(node)) > BOUND
        node.close()


def _violating(s: Signer) -> list[dict[str, Any]]:
    """Two oversized refusals that count a violation: f2's reveal that does not open its
    commitment (``bad_reveal``: a 5 KB reason) and f1's proposal over its rate
    (``rate_limited``: a 5 KB artifact id, evidence too), then each resent."""
    envs = commit_phase(s)
    envs += [s.env(OPERATOR, {"op": "tick"}) for _ in range(2)]  # the reveal phase
    bad = {"op": "reveal_vote", "agent": "f2", "artifact": "x", "vote": "accept",
           "reason": "r" * 5000, "salt": SALT}  # fmt: skip
    envs.append(s.env("f2", bad))
    envs.append(s.env("f1", {"op": "propose", "agent": "f1", "artifact": "a", "slot": "t",
                             "digest": "d"}))  # fmt: skip
    over = {"op": "propose", "agent": "f1", "artifact": "b" * 5000, "slot": "t", "digest": "d",
            "evidence": ["e" * 100] * 10}  # fmt: skip
    envs.append(s.env("f1", over))
    return envs


def test_refusals_with_a_violation_are_bounded_and_replay(tmp_path: Path) -> None:
    """ROW-1 for ``rate_limited`` and ``bad_reveal``: the row is its hash (before the fix
    it was the whole envelope, over the bound), the reply and the state are those of the
    command as sent (a twin gate applies every envelope as sent), a resend is a retry,
    and the log replays, with ``--verify`` and without, to the twin's state."""
    params = Params(refused_row_bytes=BOUND, propose_rate=1, propose_rate_limited=1)
    db = tmp_path / "n.db"
    node = Node.open(db, params=params, setup=setup(), fsync=False)
    twin = Gate(params, node.gate.setup)
    seen: dict[str, int] = {}
    envs = _violating(Signer(node.gate.setup.community))
    try:
        for env in envs:
            reply, obs = node.submit(env), twin.apply(env)
            assert reply.status == 200 and reply.body["result"] == obs["result"], reply.body
            assert reply.body["events"] == obs["events"]
            seen[obs["result"]] = seen.get(obs["result"], 0) + 1
            if obs["result"] in ("rate_limited", "bad_reveal"):
                assert obs["events"][0]["event"] == "violation"
                assert node.submit(env).body == {**reply.body, "retry": True}
        assert node.gate.public_state() == twin.public_state()
        assert seen.get("rate_limited") == 1 and seen.get("bad_reveal") == 1, seen
        kept = [e for e in node.store.entries() if "elided" in e.envelope]
        assert sorted(e.envelope["elided"]["refused"] for e in kept) == [
            "bad_reveal",
            "rate_limited",
        ]
        for e in node.store.entries():
            if e.result != "ok":  # every refused row within the bound
                assert len(canonical(e.envelope)) <= BOUND, (e.result, len(canonical(e.envelope)))
    finally:
        node.close()
    for verify in (True, False):
        again = Node.open(db, verify=verify, fsync=False)
        try:
            assert again.gate.public_state() == twin.public_state()
        finally:
            again.close()
    export(db, tmp_path / "t.jsonl")


def test_a_wrong_replay_of_a_violation_row_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: a ``Community.refused`` that forgets the violation (the
    mutant) replays a different observation, and ``--verify`` refuses the log."""
    params = Params(refused_row_bytes=BOUND, propose_rate=1, propose_rate_limited=1)
    db = tmp_path / "n.db"
    node = Node.open(db, params=params, setup=setup(), fsync=False)
    for env in _violating(Signer(node.gate.setup.community)):
        node.submit(env)
    node.close()
    monkeypatch.setattr(Community, "refused", lambda self, a, c: {"result": c, "events": []})
    with pytest.raises(StoreError, match="differs"):
        Node.open(db, verify=True, fsync=False)


def _log_bytes(db: Path) -> tuple[int, int]:
    """(rows, bytes of their envelopes and observations) of a node's log."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        q = "SELECT count(*), sum(length(envelope) + length(observation)) FROM log"
        n, b = c.execute(q).fetchone()
    return int(n), int(b or 0)


def _flood(tmp: Path, n: int) -> None:
    """``n`` refused 50 KiB commands of a registered founder against ``ostrom serve`` (the
    refusal budget raised so that every one reaches the log's decision): half
    ``invalid_input`` (a violation: logged as its hash), half ``unknown_artifact`` (no
    violation: not logged)."""
    with serve_founders(tmp, "--refusal-burst", "100000") as url:
        cid = httpx.get(url + "/health", timeout=10).json()["community"]
        statuses: dict[int, int] = {}
        sent = 0
        with httpx.Client(timeout=30) as http:
            for i in range(n):
                if i % 2:
                    cmd = {"op": "dispute", "agent": AGENT, "artifact": "x", "reason": "r",
                           "junk": "j" * 50_000}  # fmt: skip
                else:
                    cmd = {"op": "dispute", "agent": AGENT, "artifact": f"none{i}",
                           "reason": "r" * 50_000}  # fmt: skip
                seq = http.get(f"{url}/agents/{AGENT}").json()["next_seq"]
                env = sign_envelope(key(AGENT), AGENT, seq, cmd, community=cid)
                sent += len(canonical(env))
                r = http.post(url + "/commands", json=env)
                statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
        assert statuses == {200: n // 2, 413: n - n // 2}, statuses
        rows, stored = _log_bytes(tmp / "n.db")
    assert rows == n // 2
    per_row = stored / rows
    # each row far within the default refused_row_bytes (8 KiB): a few hundred bytes;
    # before ROW-1 every one of them was logged whole (``sent`` bytes in all)
    assert per_row < 1024, per_row
    print(f"\n{n} refused 50 KiB commands ({sent} bytes sent): {rows} rows, {stored} bytes "
          f"stored ({per_row:.0f} a row)")  # fmt: skip


@pytest.mark.system
def test_a_flood_of_large_refused_commands_costs_the_log_little(tmp_path: Path) -> None:
    _flood(tmp_path, 12)


@pytest.mark.system
@pytest.mark.slow
def test_three_hundred_large_refused_commands(tmp_path: Path) -> None:
    _flood(tmp_path, 300)


@pytest.mark.tlc
def test_validate_trace_accepts_an_export_with_violation_rows_kept_as_hashes(
    tmp_path: Path,
) -> None:
    """ROW-1's rows of a refusal with a violation (``rate_limited``, ``bad_reveal``) are
    exported as the command's op and agent with its hash (``elided``), the result and
    the violation event: the community trace spec follows them (the sanction book
    records the violation from the event, not from the elided arguments)."""
    import json
    import subprocess
    import sys

    test_refusals_with_a_violation_are_bounded_and_replay(tmp_path)
    trace = tmp_path / "t.jsonl"
    lines = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()[1:]]
    elided = sorted(x["result"] for x in lines if "elided" in x["command"])
    assert elided == ["bad_reveal", "rate_limited"], elided
    r = subprocess.run(
        [sys.executable, "-m", "ostrom", "validate-trace", str(trace)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0 and "ACCEPTED" in r.stdout, r.stdout + r.stderr
