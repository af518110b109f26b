"""The JavaScript driver (drivers/js/) against the reference, step by step.

drivers/js/ostrom-driver.js is a second, independent implementation of the ``lifecycle``
layer (docs/implementers.md, "A driver in JavaScript").  These tests drive it and the
reference with the *same* seeded random walks — every op, valid and invalid inputs, several
hundred steps per walk under several parameter sets — and require every observation
(result, events, public state) to be identical.  The reference is ``python -m
ostrom.conformance.driver`` when it is installed, otherwise an in-process ``Orchestrator`` with the
same reset semantics (setup agents entered as ``set_agent``).

The walk generator reads only the *reference's* observations (never the JS driver's), so a
bug in the driver cannot steer the walk around itself.  Commitments are computed with
``ostrom.protocol.voting.commitment``, so the driver's canonical encoding is checked against the
reference's bytes (non-ASCII, quotes, control characters, astral code points).

When the vector suite exists (``vectors/`` and ``ostrom conform``), the driver must also
pass ``ostrom conform --layer lifecycle``.  Only a missing ``node`` skips these tests.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from ostrom.protocol import voting
from ostrom.protocol.lifecycle import EVENTS, TRANSITIONS
from ostrom.protocol.orchestrator import Orchestrator
from ostrom.protocol.params import Params
from ostrom.protocol.voting import commitment

ROOT = Path(__file__).resolve().parents[2]
#: OSTROM_JS_DRIVER points the tests at another copy (e.g. a deliberately broken one)
JS_DRIVER = Path(os.environ.get("OSTROM_JS_DRIVER", ROOT / "drivers" / "js" / "ostrom-driver.js"))
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.system,  # real processes: make test, not make test-fast
    pytest.mark.skipif(NODE is None, reason="node (Node.js) is not installed"),
]  # one worker holds the module's fixture

PROTOCOL = "ostrom-driver/1"
REPLY_TIMEOUT = 20.0  # seconds per reply before the driver is declared hung


# --- the two implementations behind one interface -------------------------------------------


class Proc:
    """A driver process speaking ostrom-driver/1 (one request line, one reply line)."""

    def __init__(self, argv: Sequence[str]) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.argv = list(argv)
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=ROOT,
        )
        hello = self.request({"type": "hello", "protocol": PROTOCOL})
        assert hello["type"] == "hello", hello
        assert "lifecycle" in hello["layers"], hello

    def request(self, msg: Mapping[str, Any], ascii_only: bool = True) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(_line(msg, ascii_only))
        self.proc.stdin.flush()
        timer = threading.Timer(REPLY_TIMEOUT, self.proc.kill)
        timer.start()
        try:
            raw = self.proc.stdout.readline()
        finally:
            timer.cancel()
        if not raw:
            raise AssertionError(f"{self.argv} died: {self.stderr()}")
        reply = json.loads(raw)
        assert isinstance(reply, dict), raw
        return reply

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-4000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b'{"type":"bye"}\n')
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


def _line(msg: Mapping[str, Any], ascii_only: bool) -> bytes:
    """One JSON line; raw UTF-8 unless asked for escapes (a lone surrogate forces them)."""
    if not ascii_only:
        try:
            return (json.dumps(msg, ensure_ascii=False) + "\n").encode("utf-8")
        except UnicodeEncodeError:
            pass
    return (json.dumps(msg) + "\n").encode("ascii")


class InProcessReference:
    """The reference without ``ostrom.conformance.driver``: an Orchestrator, setup entered as
    set_agent."""

    def __init__(self) -> None:
        self.orch: Orchestrator | None = None

    def request(self, msg: Mapping[str, Any], ascii_only: bool = True) -> dict[str, Any]:
        msg = json.loads(_line(msg, ascii_only))  # the same bytes the JS driver reads
        if msg["type"] == "reset":
            orch = Orchestrator(Params.from_mapping(msg.get("params", {})))
            for entry in msg.get("setup", {}).get("agents", []):
                cmd = {"op": "set_agent", **{k: v for k, v in entry.items() if k != "id"}}
                cmd["agent"] = entry.get("id")
                if orch.apply(cmd)["result"] != "ok":
                    return {"type": "error", "message": f"bad agent {entry!r}"}
            self.orch = orch
            return {"type": "ready"}
        assert msg["type"] == "step" and self.orch is not None
        obs = self.orch.apply(msg["command"])
        return {"type": "observation", **obs, "state": self.orch.public_state()}

    def close(self) -> None:
        pass


def reference() -> Proc | InProcessReference:
    if importlib.util.find_spec("ostrom.conformance.driver") is not None:
        return Proc([sys.executable, "-m", "ostrom.conformance.driver", "--layers", "lifecycle"])
    return InProcessReference()


@pytest.fixture(scope="module")
def drivers() -> Iterator[tuple[Proc | InProcessReference, Proc]]:
    ref, js = reference(), Proc([NODE or "node", str(JS_DRIVER)])
    try:
        yield ref, js
    finally:
        ref.close()
        js.close()


# --- comparing ------------------------------------------------------------------------------


def _canon(x: Any) -> str:
    """Strict equality: 1 and 1.0 and True differ, key order does not."""
    return json.dumps(x, sort_keys=True)


def first_difference(a: Any, b: Any, path: str = "$") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: {a.get(k, '<missing>')!r} != {b.get(k, '<missing>')!r}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if _canon(a) == _canon(b) else f"{path}: {a!r} != {b!r}"


# --- the random walk ------------------------------------------------------------------------

HEX = "0123456789abcdef"
#: floats whose x·10^6 is exactly k + 0.5 with k even: micro() must round them down
HALF_WAY = (0.1000005, 0.1000025, 0.2500005, 0.4999985)
#: ids that sort differently by UTF-16 unit (JS) and by code point (Python), non-ASCII ones
FANCY_IDS = ["é", "агент", "\U0001f916bot", "\uffffz", "\ue000", "Z", "a b"]
REASONS = [
    "",
    "ok",
    'quote " and \\ backslash',
    "line\nbreak\ttab\r",
    "\x00\x01\x1f\x7f",
    "\u2028\u2029",
    "naïve café",
    "日本語の理由",
    "\U0001f916 robot",
    "</script>",
]


def _hex(rng: random.Random) -> str:
    return "".join(rng.choice(HEX) for _ in range(64))


class Walk:
    """Seeded commands, chosen from the reference's last observed public state."""

    def __init__(self, rng: random.Random, params: dict[str, Any], n_agents: int) -> None:
        self.rng = rng
        self.params = params
        p = Params.from_mapping(params)
        self.p = p
        ids = [f"a{i:02d}" for i in range(n_agents)] + FANCY_IDS
        self.agents: dict[str, dict[str, Any]] = {}
        entries = []
        for i, a in enumerate(ids):
            tier = [0, 1, 1, 2, 2, 3][i % 6] if i else 3
            entry: dict[str, Any] = {"id": a, "tier": tier}
            if rng.random() < 0.8:
                entry["weight"] = self.weight()
            if rng.random() < 0.7:
                entry["reputation"] = rng.choice([0.0, 0.4, 0.5, 0.6, 1.0, 1])
            if rng.random() < 0.3:
                entry["subscriptions"] = rng.sample(["s0", "s1", "s2", "s3"], 2)
            entries.append(entry)
            self.agents[a] = dict(entry)
        self.setup = {"agents": entries}
        self.slots = ["s0", "s1", "s2", "s3"]
        self.art_ids = [f"x{i}" for i in range(14)] + ["é1", "\U0001d4cd", "\uffffx", "42", "7"]
        self.state: dict[str, Any] = {"now": 0, "artifacts": {}}
        #: (artifact, round, agent) -> (vote, reason, salt) of every accepted commitment
        self.commits: dict[tuple[str, int, str], tuple[str, str, str]] = {}
        self.pending: dict[str, Any] | None = None
        self.plan: list[Any] = []  # commands queued by a burst
        self.last_proposer: str | None = None
        self.last_disputer: str | None = None

    # -- values

    def weight(self) -> float | int:
        p, r = self.p, self.rng
        return r.choice(
            [
                p.w_min,
                p.w_max,
                round(r.uniform(p.w_min, p.w_max), 3),
                round(r.uniform(p.w_min, p.w_max), 7),
                r.choice(HALF_WAY),  # x·10^6 is k + 0.5 with k even: round half to even
                r.uniform(p.w_min, p.w_max),
                1,
            ]
        )

    def agent(self) -> str:
        r = self.rng.random()
        if r < 0.06:
            return "ghost"  # unknown_agent
        return self.rng.choice(list(self.agents))

    def artifacts(self, *states: str) -> list[str]:
        arts = self.state["artifacts"]
        return [x for x, a in arts.items() if not states or a["state"] in states]

    # -- one command

    def observe(self, command: dict[str, Any], obs: dict[str, Any]) -> None:
        self.state = obs["state"]
        if obs["result"] != "ok":
            return
        op = command.get("op")
        if op == "set_agent":
            entry = self.agents.setdefault(command["agent"], {"id": command["agent"]})
            entry.update({k: v for k, v in command.items() if k not in ("op", "agent")})
        if op == "commit_vote" and self.pending is not None:
            art = self.state["artifacts"][command["artifact"]]
            self.commits[(command["artifact"], art["round"], command["agent"])] = (
                self.pending["vote"],
                self.pending["reason"],
                self.pending["salt"],
            )

    def command(self) -> Any:
        self.pending = None
        r = self.rng
        if self.plan:
            return self.plan.pop(0)
        if r.random() < 0.04:
            return self.burst()
        if r.random() < 0.6:
            cmd = self.purposeful()
            if cmd is not None:
                return cmd
        kind = r.choices(
            [
                "tick",
                "propose",
                "commit",
                "reveal",
                "object",
                "arbitrate",
                "dispute",
                "resubmit",
                "forget",
                "set_agent",
                "recruit",
                "garbage",
                "noise",
            ],
            weights=[16, 5, 6, 6, 3, 4, 4, 4, 8, 4, 2, 5, 8],
        )[0]
        return getattr(self, f"c_{kind}")()

    def purposeful(self) -> dict[str, Any] | None:
        """A command that moves a ballot forward: commit, reveal, arbitrate, or a forget vote."""
        r = self.rng
        options = []
        for x, a in self.state["artifacts"].items():
            if a["phase"] == "commit" and a["state"] in ("commit", "disputed"):
                todo = [v for v in a["reviewers"] if v not in a["committed"]]
                options += [("commit", x, v) for v in todo]
            if a["phase"] == "reveal" and a["state"] in ("reveal", "disputed"):
                todo = [v for v in a["committed"] if v not in (a["revealed"] or {})]
                options += [("reveal", x, v) for v in todo]
            if a["state"] == "arbitration":
                options.append(("arbitrate", x, None))
            if a["state"] in ("rejected", "expired", "retracted") and r.random() < 0.15:
                options.append(("resubmit", x, None))
            if a["state"] == "retracted" and a["forget_voters"] == []:
                options.append(("forget", x, None))
        if not options:
            return None
        what, x, v = r.choice(options)
        if what == "forget":
            return {"op": "forget_vote", "agent": self.agent(), "artifact": x}
        if what == "commit":
            return self.c_commit(x, v)
        if what == "reveal":
            return self.c_reveal(x, v) if r.random() < 0.9 else self.c_tick()
        if what == "arbitrate":
            return self.c_arbitrate(x)
        return self.c_resubmit(x)

    def burst(self) -> Any:
        """Several commands of one agent in one round: the per-round rate limits."""
        r = self.rng
        agent = self.agent()
        kind = r.choice(["propose", "dispute", "resubmit"])
        if kind == "propose":
            self.plan = [dict(self.c_propose(), agent=agent) for _ in range(3)]
        elif kind == "dispute":
            self.plan = [dict(self.c_dispute(), agent=agent) for _ in range(3)]
        else:
            done = self.artifacts("rejected", "expired", "retracted")
            if not done:
                return self.c_tick()
            x = r.choice(done)
            sub = self.state["artifacts"][x]["submitter"]
            self.plan = [dict(self.c_propose(), agent=sub) for _ in range(r.randrange(1, 3))]
            self.plan.append(dict(self.c_resubmit(x), agent=sub))
        return self.plan.pop(0)

    def c_tick(self) -> dict[str, Any]:
        return {"op": "tick"}

    def c_propose(self) -> dict[str, Any]:
        r = self.rng
        if self.last_proposer is None or r.random() < 0.7:
            self.last_proposer = self.agent()  # else the same agent again: its rate limit
        cmd: dict[str, Any] = {
            "op": "propose",
            "agent": self.last_proposer,
            "artifact": r.choice(self.art_ids),
            "slot": r.choice(self.slots),
            "digest": f"d{r.randrange(5)}",
        }
        if r.random() < 0.3:
            cmd["evidence"] = [f"e{r.randrange(4)}" for _ in range(r.randrange(3))]
        return cmd

    def c_commit(self, x: str | None = None, v: str | None = None) -> dict[str, Any]:
        r = self.rng
        arts = self.state["artifacts"]
        if x is None:
            open_ = self.artifacts("commit", "disputed")
            x = r.choice(open_) if open_ else r.choice(self.art_ids)
        a = arts.get(x)
        if v is None:
            v = (
                r.choice(a["reviewers"])
                if a and a["reviewers"] and r.random() < 0.7
                else self.agent()
            )
        rnd = a["round"] if a else 1
        kind = a["ballot"] if a and a["ballot"] else "review"
        votes = ["accept", "reject"] if kind == "review" else ["retract", "keep"]
        vote = r.choice(votes) if r.random() < 0.93 else r.choice(["accept", "keep"])
        reason = r.choice(REASONS)
        salt = _hex(r)
        if r.random() < 0.04:
            rnd += r.choice([-1, 1])  # a commitment for another round: its reveal fails CR-2
        c = commitment(v, x, rnd, vote, reason, salt)
        roll = r.random()
        if roll < 0.03:
            c = _hex(r)
        elif roll < 0.05:
            c = c.upper()  # invalid_input: commitments are lowercase
        elif roll < 0.06:
            c = c[:63]
        self.pending = {"vote": vote, "reason": reason, "salt": salt}
        return {"op": "commit_vote", "agent": v, "artifact": x, "commitment": c}

    def c_reveal(self, x: str | None = None, v: str | None = None) -> dict[str, Any]:
        r = self.rng
        if x is None:
            open_ = self.artifacts("reveal", "disputed")
            x = r.choice(open_) if open_ else r.choice(self.art_ids)
        a = self.state["artifacts"].get(x)
        rnd = a["round"] if a else 1
        if v is None:
            v = (
                r.choice(a["committed"])
                if a and a["committed"] and r.random() < 0.8
                else self.agent()
            )
        known = self.commits.get((x, rnd, v))
        if known is None:
            old = [k for k in self.commits if k[0] == x and k[2] == v]
            known = self.commits[r.choice(old)] if old else ("accept", "", _hex(r))
        vote, reason, salt = known
        roll = r.random()
        if roll < 0.04:
            reason += "!"  # bad_reveal
        elif roll < 0.07:
            vote = r.choice(["accept", "reject", "retract", "keep"])
        elif roll < 0.09:
            salt = _hex(r)
        elif roll < 0.10:
            reason = "\ud800 lone surrogate"  # invalid_input (not encodable)
        elif roll < 0.11:
            vote = "maybe"
        return {
            "op": "reveal_vote",
            "agent": v,
            "artifact": x,
            "vote": vote,
            "reason": reason,
            "salt": salt,
        }

    def c_object(self) -> dict[str, Any]:
        r = self.rng
        fast = self.artifacts("fast_track")
        x = r.choice(fast) if fast and r.random() < 0.85 else r.choice(self.art_ids)
        a = self.state["artifacts"].get(x)
        choices = [self.agent()]
        if a:
            choices += a["reviewers"] + [a["submitter"]]
            choices += [
                i for i, e in self.agents.items() if a["slot"] in e.get("subscriptions", [])
            ]
        return {"op": "object", "agent": r.choice(choices), "artifact": x}

    def c_arbitrate(self, x: str | None = None) -> dict[str, Any]:
        r = self.rng
        if x is None:
            arb = self.artifacts("arbitration")
            x = r.choice(arb) if arb and r.random() < 0.8 else r.choice(self.art_ids)
        tier3 = [i for i, e in self.agents.items() if e.get("tier") == 3]
        agent = r.choice(tier3) if tier3 and r.random() < 0.85 else self.agent()
        outcome = r.choice(["accept", "reject", "revote", "revote", "revote"])
        return {"op": "arbitrate", "agent": agent, "artifact": x, "outcome": outcome}

    def c_dispute(self) -> dict[str, Any]:
        r = self.rng
        active = self.artifacts("active")
        x = r.choice(active) if active and r.random() < 0.85 else r.choice(self.art_ids)
        op = r.choice(["dispute", "urgent_report"])
        if self.last_disputer is None or r.random() < 0.6:
            self.last_disputer = self.agent()  # else the same agent again: its rate limit
        return {"op": op, "agent": self.last_disputer, "artifact": x, "reason": r.choice(REASONS)}

    def c_resubmit(self, x: str | None = None) -> dict[str, Any]:
        r = self.rng
        if x is None:
            done = self.artifacts("rejected", "expired", "retracted")
            x = r.choice(done) if done and r.random() < 0.8 else r.choice(self.art_ids)
        a = self.state["artifacts"].get(x)
        agent = a["submitter"] if a and r.random() < 0.8 else self.agent()
        digest = (a["digest"] or "d0") if a and r.random() < 0.25 else f"d{r.randrange(50)}"
        cmd: dict[str, Any] = {"op": "resubmit", "agent": agent, "artifact": x, "digest": digest}
        if r.random() < 0.3:
            cmd["evidence"] = [f"e{r.randrange(5)}" for _ in range(r.randrange(3))]
        return cmd

    def c_forget(self) -> dict[str, Any]:
        r = self.rng
        arts = self.state["artifacts"]
        votable = self.artifacts(
            "active", "disputed", "superseded", "rejected", "expired", "retracted"
        )
        if votable and r.random() < 0.9:
            # concentrate the votes, so that some artifacts reach the quorum
            votable.sort(key=lambda i: -len(arts[i]["forget_voters"]))
            x = votable[0] if r.random() < 0.6 else r.choice(votable)
        else:
            x = r.choice(self.art_ids)
        voters = [i for i in self.agents if i not in arts.get(x, {}).get("forget_voters", [])]
        agent = r.choice(voters) if voters and r.random() < 0.9 else self.agent()
        cmd: dict[str, Any] = {"op": "forget_vote", "agent": agent, "artifact": x}
        roll = r.random()
        if roll < 0.3:
            cmd["confidence"] = r.choice([0, 1, 0.5, 1.0, 0.0, 0.0000005, 0.0000015, 0.9999995])
        elif roll < 0.45:
            cmd["confidence"] = round(r.random(), r.choice([2, 6, 7]))
        return cmd

    def c_set_agent(self) -> dict[str, Any]:
        r = self.rng
        agent = self.agent() if r.random() < 0.9 else f"n{r.randrange(5)}"
        if agent == "ghost":
            agent = "n9"
        cmd: dict[str, Any] = {"op": "set_agent", "agent": agent, "tier": r.choice([0, 1, 2, 3])}
        if r.random() < 0.4:
            cmd["weight"] = self.weight() if r.random() < 0.85 else r.choice([5.0, -1, 0.0])
        if r.random() < 0.4:
            cmd["sanction"] = r.choice(
                [
                    "none",
                    "warned",
                    "rate_limited",
                    "rate_limited",
                    "suspended",
                    "banned",
                    "quarantined",
                ]
            )
        elif r.random() < 0.3 and agent in self.agents:
            cmd["sanction"] = "none"
        if r.random() < 0.3:
            cmd["reputation"] = r.choice([0, 0.3, 0.5, 0.4999995, 0.5000005, 1])
        if r.random() < 0.2:
            cmd["subscriptions"] = r.sample(self.slots, r.randrange(3))
        return cmd

    def c_recruit(self) -> dict[str, Any]:
        r = self.rng
        prop = self.artifacts("proposed")
        x = r.choice(prop) if prop and r.random() < 0.7 else r.choice([*self.art_ids, "nope"])
        return {"op": "recruit", "artifact": x}

    def c_noise(self) -> dict[str, Any]:
        """A well-formed command aimed at a random artifact by a random agent."""
        r = self.rng
        op = r.choice(["object", "commit", "reveal", "arbitrate", "dispute", "resubmit"])
        x = r.choice([*self.art_ids, "nope"])
        if op == "commit":
            return self.c_commit(x, self.agent())
        if op == "reveal":
            return self.c_reveal(x, self.agent())
        if op == "arbitrate":
            return {
                "op": "arbitrate",
                "agent": self.agent(),
                "artifact": x,
                "outcome": r.choice(["accept", "reject", "revote"]),
            }
        if op == "resubmit":
            return {"op": "resubmit", "agent": self.agent(), "artifact": x, "digest": "dz"}
        if op == "dispute":
            return {
                "op": r.choice(["dispute", "urgent_report"]),
                "agent": self.agent(),
                "artifact": x,
                "reason": "r",
            }
        return {"op": "object", "agent": self.agent(), "artifact": x}

    def c_garbage(self) -> Any:
        """check 1 (invalid_input) in its many spellings; a registered sender is `malformed`."""
        r = self.rng
        a = self.agent()
        x = r.choice(self.art_ids)
        base = self.rng.choice(
            [
                self.c_propose(),
                self.c_commit(),
                self.c_reveal(),
                self.c_object(),
                self.c_arbitrate(),
                self.c_dispute(),
                self.c_resubmit(),
                self.c_forget(),
                self.c_set_agent(),
                {"op": "tick"},
                {"op": "recruit", "artifact": x},
            ]
        )
        self.pending = None
        cmd = dict(base)
        fields = [k for k in cmd if k != "op"]
        roll = r.randrange(16)
        if roll == 0:
            return r.choice([[], "tick", 3, None, True, [{"op": "tick"}]])
        if roll == 1:
            cmd["op"] = r.choice(["Tick", "", "vote", "fork", 7, None])
        elif roll == 2 and fields:
            del cmd[r.choice(fields)]
        elif roll == 3:
            cmd[r.choice(["extra", "Agent", "round"])] = 1
        elif roll == 4 and fields:
            key = r.choice(fields)
            values: list[Any] = [None, 1, 1.5, True, ""]
            if key not in UNHASHABLE_CRASHES:
                values += [[], {}]
            cmd[key] = r.choice(values)
        elif roll == 5:
            cmd = {"op": "set_agent", "agent": a, "tier": r.choice([1.0, 4, -1, True, "1", 2**70])}
        elif roll == 6:
            w = r.choice([math.nan, math.inf, -math.inf, 1e300, "0.5", True, 101, 2**64, 1e-300])
            cmd = {"op": "set_agent", "agent": a, "tier": 1, "weight": w}
        elif roll == 7:
            conf = r.choice([1.5, -0.1, math.nan, "1", True, 2, 10**30, -0.0])
            cmd = {"op": "forget_vote", "agent": a, "artifact": x, "confidence": conf}
        elif roll == 8:
            cmd = {"op": "propose", "agent": a, "artifact": "", "slot": "s0", "digest": "d"}
        elif roll == 9:
            cmd = {
                "op": "propose",
                "agent": a,
                "artifact": x,
                "slot": "s0",
                "digest": "d",
                "evidence": r.choice([["e", ""], "e", [1], ["\udc00"]]),
            }
        elif roll == 10:
            cmd = {
                "op": "set_agent",
                "agent": a,
                "tier": 1,
                "sanction": r.choice(["SUSPENDED", "jailed", 1, None]),
            }
        elif roll == 11:
            cmd = {
                "op": "set_agent",
                "agent": a,
                "tier": 2,
                "reputation": r.choice([1.01, -1, math.nan, "0.5"]),
            }
        elif roll == 12:
            cmd = {"op": "set_agent", "agent": a, "tier": 2, "subscriptions": ["s0", ""]}
        elif roll == 13:
            cmd = {"op": "commit_vote", "agent": a, "artifact": x, "commitment": "g" * 64}
        elif roll == 14:
            cmd = {
                "op": "reveal_vote",
                "agent": a,
                "artifact": x,
                "vote": "accept",
                "reason": r.choice(["r", 5]),
                "salt": r.choice(["A" * 64, "0" * 63, 0]),
            }
        else:
            cmd = {"op": r.choice(["object", "tick", "forget_vote"]), "agent": "\udfff"}
        return cmd


#: Fields where the reference raises TypeError on a list or object (``v in frozenset``) instead
#: of answering invalid_input; the walks avoid it there (test_unhashable_fields_... covers JS).
UNHASHABLE_CRASHES = frozenset({"vote", "outcome"})

#: parameter sets of the walks: (name, params, number of plain agents)
SCENARIOS: list[tuple[str, dict[str, Any], int]] = [
    # the defaults; 14 + 7 agents so that min_active_agents (12) is met and forgetting runs
    ("defaults", {}, 14),
    # small ballots, short phases, a huge lottery seed (decimal in the sha256 input)
    (
        "small",
        {
            "reviewers": 3,
            "quorum": 2,
            "dispute_reviewers": 4,
            "q_dispute": 2,
            "tally_min_side": 1,
            "T_fast": 1,
            "T_delib": 1,
            "T_commit": 2,
            "T_reveal": 2,
            "T_arb": 2,
            "cooldown": 1,
            "max_resubmit": 3,
            "max_disputes": 3,
            "alpha": 0.3,
            "min_active_agents": 3,
            "seed": 123456789012345678901234567890,
        },
        6,
    ),
    # the side rule at its bound, thresholds off the defaults, rate limits at their minimum
    (
        "side-rule",
        {
            "reviewers": 4,
            "quorum": 3,
            "dispute_reviewers": 5,
            "q_dispute": 3,
            "tally_min_side": 2,
            "tau_accept": 0.55,
            "tau_reject": 0.45,
            "tau_retract": 0.5,
            "T_delib": 2,
            "T_commit": 1,
            "T_reveal": 1,
            "T_arb": 1,
            "cooldown": 0,
            "propose_rate": 1,
            "propose_rate_limited": 0,
            "dispute_rate": 2,
            "alpha": 0.25,
            "r_resubmit": 0.45,
            "seed": 7,
            # 17 agents and set_agent adds up to 5: a few bars put it below the floor
            "min_active_agents": 17,
        },
        10,
    ),
    # weights that may be 0 (w_min = 0): the all-zero tally, tier-0 voters weightless
    (
        "zero-weight",
        {
            "w_min": 0.0,
            "w_max": 2.5,
            "reviewers": 3,
            "quorum": 2,
            "q_dispute": 2,
            "dispute_reviewers": 3,
            "T_delib": 1,
            "T_fast": 2,
            "cooldown": 2,
            "min_active_agents": 1,
            "alpha": 0.1,
            "seed": 99,
        },
        5,
    ),
    # thresholds far apart: most tallies are undecided, arbiters revote (and revote again)
    (
        "arbiters",
        {
            "tau_accept": 0.95,
            "tau_reject": 0.05,
            "reviewers": 3,
            "quorum": 2,
            "T_delib": 1,
            "T_arb": 3,
            "q_dispute": 3,
            "min_active_agents": 5,
        },
        6,
    ),
    # alpha = 0: the quorum Q is 0, so only S > 0 keeps a zero-confidence vote from forgetting
    (
        "alpha-zero",
        {
            "alpha": 0.0,
            "min_active_agents": 4,
            "reviewers": 3,
            "quorum": 2,
            "T_delib": 1,
            "cooldown": 3,
            "dispute_reviewers": 5,
            "q_dispute": 3,
        },
        6,
    ),
]

WALK_SEEDS = (1, 2)
STEPS = 900


def run_walk(
    ref: Proc | InProcessReference, js: Proc, name: str, params: dict[str, Any], n: int, seed: int
) -> dict[str, Counter[Any]]:
    rng = random.Random(f"{name}/{seed}")
    walk = Walk(rng, params, n)
    reset = {"type": "reset", "layer": "lifecycle", "params": params, "setup": walk.setup}
    a, b = ref.request(reset), js.request(reset)
    assert a == {"type": "ready"}, a
    assert b == {"type": "ready"}, b
    cov: dict[str, Counter[Any]] = {k: Counter() for k in ("ok", "codes", "rows", "kinds")}
    for i in range(STEPS):
        cmd = walk.command()
        msg = {"type": "step", "command": cmd}
        ascii_only = rng.random() < 0.5
        want, got = ref.request(msg, ascii_only), js.request(msg, ascii_only)
        diff = first_difference(want, got)
        assert diff is None, (
            f"{name} seed {seed} step {i}: {json.dumps(cmd)}\n  first difference: {diff}\n"
            f"  reference events: {json.dumps(want.get('events'))}\n"
            f"  js events:        {json.dumps(got.get('events'))}"
        )
        walk.observe(cmd, want)
        op = cmd.get("op") if isinstance(cmd, dict) else None
        if want["result"] == "ok":
            cov["ok"][op] += 1
        else:
            cov["codes"][(str(op), want["result"])] += 1
        for ev in want["events"]:
            if ev["event"] in ("violation", "penalty"):
                cov["kinds"][(ev["event"], ev["kind"])] += 1
            else:
                cov["rows"][(ev["event"], ev["from"], ev["to"], ev.get("verdict"))] += 1
    return cov


@pytest.mark.slow  # 71 s: make test keeps the JS driver on every vector (conform layer)
def test_differential_random_walks(drivers: tuple[Proc | InProcessReference, Proc]) -> None:
    """Every observation of the JS driver equals the reference's, on every walk."""
    ref, js = drivers
    total: dict[str, Counter[Any]] = {k: Counter() for k in ("ok", "codes", "rows", "kinds")}
    for name, params, n in SCENARIOS:
        for seed in WALK_SEEDS:
            for k, c in run_walk(ref, js, name, params, n, seed).items():
                total[k].update(c)

    if os.environ.get("OSTROM_JS_COVERAGE"):  # print what the walks reached
        print(
            json.dumps(
                {k: {str(x): n for x, n in v.most_common()} for k, v in total.items()},
                indent=1,
                ensure_ascii=False,
            )
        )
    # coverage: the walks must reach what they claim to compare
    ops = {
        "propose",
        "resubmit",
        "recruit",
        "object",
        "commit_vote",
        "reveal_vote",
        "arbitrate",
        "dispute",
        "urgent_report",
        "forget_vote",
        "tick",
        "set_agent",
    }
    assert ops <= set(total["ok"]), ops - set(total["ok"])
    # every refusal of every op (docs/lifecycle.md "Who may do what")
    wanted = {(op, code) for op, spec in EVENTS.items() if op in ops for code in spec.errors}
    wanted |= {("tick", "invalid_input"), ("set_agent", "invalid_input")}
    missing = wanted - set(total["codes"])
    assert not missing, f"refusals never reached: {sorted(missing)}"
    rows = {(r.event, r.source, r.dest, r.verdict) for r in TRANSITIONS}
    reached = set(total["rows"])
    assert reached <= rows, reached - rows  # nothing outside the table
    assert rows == reached, f"rows never reached: {sorted(rows - reached, key=str)}"
    kinds = {("violation", k) for k in ("malformed", "bad_reveal", "rate_limited", "non_reveal")}
    kinds |= {("penalty", k) for k in ("frivolous_dispute", "unfounded_urgent_report")}
    assert set(total["kinds"]) == kinds, kinds ^ set(total["kinds"])


# --- targeted checks -----------------------------------------------------------------------


def _session(js: Proc, params: dict[str, Any], agents: list[dict[str, Any]]) -> None:
    reply = js.request(
        {"type": "reset", "layer": "lifecycle", "params": params, "setup": {"agents": agents}}
    )
    assert reply == {"type": "ready"}, reply


def test_canonical_encoding_matches_python_bytes(drivers: tuple[Any, Proc]) -> None:
    """A reveal opens a commitment made by ostrom.protocol.voting.commitment, for awkward strings;
    a one-character change to the reason does not."""
    _, js = drivers
    agents = [{"id": a, "tier": 1} for a in ["é", "\U0001f916", 'b"q', "c"]]
    agents.append({"id": "sub", "tier": 0})
    _session(js, {"reviewers": 4, "quorum": 2, "T_delib": 1, "T_commit": 1}, agents)
    js.request(
        {
            "type": "step",
            "command": {
                "op": "propose",
                "agent": "sub",
                "artifact": "ä/x",
                "slot": "s",
                "digest": "d",
            },
        }
    )
    state = js.request({"type": "step", "command": {"op": "tick"}})["state"]  # recruit, commit
    art = state["artifacts"]["ä/x"]
    assert art["state"] == "commit" and len(art["reviewers"]) == 4
    reasons = dict(zip(art["reviewers"], REASONS[2:], strict=False))
    salt = "ab" * 32
    for v, reason in reasons.items():
        c = commitment(v, "ä/x", art["round"], "accept", reason, salt)
        obs = js.request(
            {
                "type": "step",
                "command": {"op": "commit_vote", "agent": v, "artifact": "ä/x", "commitment": c},
            },
            ascii_only=False,
        )
        assert obs["result"] == "ok", obs
    js.request({"type": "step", "command": {"op": "tick"}})
    for v, reason in reasons.items():
        bad = {
            "op": "reveal_vote",
            "agent": v,
            "artifact": "ä/x",
            "vote": "accept",
            "reason": reason + " ",
            "salt": salt,
        }
        assert js.request({"type": "step", "command": bad})["result"] == "bad_reveal"
        good = dict(bad, reason=reason)
        assert js.request({"type": "step", "command": good})["result"] == "ok", good


def test_unhashable_fields_are_invalid_input(drivers: tuple[Any, Proc]) -> None:
    """A list or object where a vote, outcome or op is expected is check 1 (invalid_input),
    with the registered sender's `malformed` violation when the op is an agent's."""
    _, js = drivers
    _session(js, {}, [{"id": "a", "tier": 3}])
    cases = [
        (
            {
                "op": "reveal_vote",
                "agent": "a",
                "artifact": "x",
                "vote": [],
                "reason": "",
                "salt": "0" * 64,
            },
            [{"event": "violation", "agent": "a", "kind": "malformed"}],
        ),
        (
            {"op": "arbitrate", "agent": "a", "artifact": "x", "outcome": {}},
            [{"event": "violation", "agent": "a", "kind": "malformed"}],
        ),
        ({"op": ["propose"], "agent": "a"}, []),
    ]
    for cmd, events in cases:
        obs = js.request({"type": "step", "command": cmd})
        assert (obs["result"], obs["events"]) == ("invalid_input", events), (cmd, obs)


def test_protocol_errors(drivers: tuple[Any, Proc]) -> None:
    """Bad params or setup answer `error` (never crash); the driver keeps serving."""
    _, js = drivers
    for params, setup in [
        ({"reviewers": 5.0}, {}),  # an integer parameter given as a float
        ({"quorum": 9}, {}),  # quorum > reviewers
        ({"nonsense": 1}, {}),
        ({}, {"agents": [{"id": "a", "tier": 1, "weight": 7}]}),  # weight above w_max
        ({}, {"agents": [{"id": "a", "tier": 1, "colour": "red"}]}),
        ({}, {"founders": []}),
    ]:
        reply = js.request(
            {"type": "reset", "layer": "lifecycle", "params": params, "setup": setup}
        )
        assert reply["type"] == "error", (params, setup, reply)
    assert js.request({"type": "reset", "layer": "pbft", "params": {}, "setup": {}})["type"] == (
        "error"
    )
    _session(js, {}, [{"id": "a", "tier": 1}, {"id": "a", "tier": 2}])  # a repeat updates
    obs = js.request({"type": "step", "command": {"op": "tick"}})
    assert obs["result"] == "ok" and obs["state"] == {"now": 1, "artifacts": {}}


def _suite_available() -> bool:
    if not (ROOT / "vectors" / "MANIFEST.json").is_file():
        return False
    exe = shutil.which("ostrom") or str(Path(sys.executable).with_name("ostrom"))
    try:
        res = subprocess.run([exe, "conform", "--help"], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0


def test_conform_lifecycle_layer() -> None:
    """`ostrom conform --layer lifecycle -- node drivers/js/ostrom-driver.js` passes."""
    if not _suite_available():
        # Not a skip of the driver: the suite (vectors/, `ostrom conform`) is not in this tree.
        # The differential walks above still compare every observation with the reference.
        pytest.skip("vectors/MANIFEST.json or `ostrom conform` not present in this tree")
    exe = shutil.which("ostrom") or str(Path(sys.executable).with_name("ostrom"))
    res = subprocess.run(
        [exe, "conform", "--layer", "lifecycle", "--", NODE or "node", str(JS_DRIVER)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-3000:]


_SORTITION_JS = """
const L = require(process.argv[1]);
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = cases.map(([seed, art, round, eligible, excluded, k]) =>
  L.selectReviewers(BigInt(seed), art, round, eligible, new Set(excluded), k));
process.stdout.write(JSON.stringify({ drawsPerSeat: L.SORTITION_DRAWS_PER_SEAT, out }));
"""


def test_sortition_matches_python() -> None:
    """lifecycle.js's ``selectReviewers`` draws exactly ``voting.select_reviewers`` (the same
    agents in the same order) on fixed random cases: seeds above 2^64, astral and non-ASCII
    ids (the code-point order), pools of k or fewer candidates, excluded ids that are not
    eligible; and its draw cap is voting.SORTITION_DRAWS_PER_SEAT (one fact, two copies)."""
    rng = random.Random(20261202)
    alphabet = ["a", "b", "é", "\U0001f916", "\ue000", "z"]
    cases: list[tuple[str, str, int, list[str], list[str], int]] = []
    for i in range(300):
        ids = sorted({"".join(rng.choices(alphabet, k=rng.randint(1, 3))) for _ in range(40)})
        n = rng.choice([1, 3, 8, len(ids)])
        eligible = sorted(rng.sample(ids, min(n, len(ids))))
        excluded = rng.sample(ids, rng.randint(0, min(6, len(ids))))
        seed = rng.choice([0, rng.randrange(10**6), rng.randrange(2**64, 2**80)])
        cases.append(
            (str(seed), f"x{i}ä", rng.randint(0, 9), eligible, excluded, rng.randint(0, 7))
        )
    lib = JS_DRIVER.parent / "lifecycle.js"  # OSTROM_JS_DRIVER: a broken copy must fail
    assert NODE is not None
    proc = subprocess.run(
        [NODE, "-e", _SORTITION_JS, str(lib)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    got = json.loads(proc.stdout)
    assert got["drawsPerSeat"] == voting.SORTITION_DRAWS_PER_SEAT
    for case, js_out in zip(cases, got["out"], strict=True):
        dec, art, rnd, eligible, excluded, k = case
        want = voting.select_reviewers(int(dec), art, rnd, eligible, frozenset(excluded), k)
        assert tuple(js_out) == want, case


_PYFLOAT_JS = """
const { pyFloat } = require(process.argv[1]);
let data = '';
process.stdin.on('data', (c) => { data += c; });
process.stdin.on('end', () => {
  console.log(JSON.stringify(JSON.parse(data).map((s) => pyFloat(Number(s)))));
});
"""


def test_py_float_matches_python_repr() -> None:
    """lifecycle.js's ``pyFloat`` spells every double as Python's json does (the canonical
    encoding of an embedding's numbers, docs/rules.md): random bit patterns, random
    magnitudes, and the edges of fixed notation (1e-05 / 0.0001, 1e+16 / 1e15), -0.0,
    subnormals and the largest double."""
    rng = random.Random(20261207)
    xs = [0.0, -0.0, 1.0, 0.5, 1e-4, 1e-5, 1e15, 1e16, 9999999999999998.0, 5e-324]
    xs += [1.7976931348623157e308, -2.2250738585072014e-308, 0.1, 1 / 3, 123456.789]
    while len(xs) < 3000:
        x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(x):
            xs.append(x)
        xs.append(rng.uniform(-1, 1) * 10 ** rng.randint(-12, 20))
    lib = JS_DRIVER.parent / "lifecycle.js"  # OSTROM_JS_DRIVER: a broken copy must fail
    assert NODE is not None
    proc = subprocess.run(
        [NODE, "-e", _PYFLOAT_JS, str(lib)],
        input=json.dumps([repr(x) for x in xs]),  # repr round-trips: Number() reads it back
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    for x, spelled in zip(xs, json.loads(proc.stdout), strict=True):
        assert spelled == json.dumps(x), x
