"""A small signed world shared by the service tests: founders with keys, an operator,
and helpers that sign commands for them (keys derived from a seed: reproducible)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ostrom import layout
from ostrom.consensus.crypto import derive_key
from ostrom.protocol import voting
from ostrom.protocol.community import Member
from ostrom.protocol.params import Params
from ostrom.service.gate import Founder, Setup
from ostrom.service.identity import public_hex, sign_envelope

SEED = b"service-tests"
#: The test community's id (ENV-1): fixed, so that envelopes signed once replay anywhere
#: a test rebuilds the same world; a node opened without ``setup()`` has its own.
COMMUNITY = "5e" * 16
FOUNDERS = ("f1", "f2", "f3", "f4", "f5")
OPERATOR = "op"
SECRET_REASON = "SECRET-REASON-d41d8cd9"
SALT = "ab" * 32


def key(principal: str) -> Ed25519PrivateKey:
    return derive_key(SEED, principal)


def setup() -> Setup:
    founders = tuple(
        Founder(Member(f, tier=3, reputation=0.95, evidence=40.0), public_hex(key(f)))
        for f in FOUNDERS
    )
    return Setup(founders, {OPERATOR: public_hex(key(OPERATOR))}, COMMUNITY)


PARAMS = Params()


class Signer:
    """Signs each principal's commands with its next seq (what a client does)."""

    def __init__(self, community: str = COMMUNITY) -> None:
        self.seq: dict[str, int] = {}
        self.community = community

    def env(self, sender: str, command: dict[str, Any], join: bool = False) -> dict[str, Any]:
        n = self.seq.get(sender, 0) + 1
        self.seq[sender] = n
        pk = public_hex(key(sender)) if join else None
        return sign_envelope(key(sender), sender, n, command, pk, community=self.community)


def commitment(agent: str, artifact: str, rnd: int, vote: str) -> str:
    return voting.commitment(agent, artifact, rnd, vote, SECRET_REASON, SALT)


VOTES = {"f1": "accept", "f2": "accept", "f3": "accept", "f4": "accept", "f5": "reject"}


def reveal(agent: str, artifact: str = "x") -> dict[str, Any]:
    return {
        "op": "reveal_vote",
        "agent": agent,
        "artifact": artifact,
        "vote": VOTES[agent],
        "reason": SECRET_REASON,
        "salt": SALT,
    }


def commit_phase(s: Signer) -> list[dict[str, Any]]:
    """A newcomer's proposal up to its commit phase: every founder committed, and f1's
    early reveal (refused: the commit phase is open) — the moment CR-1 is about."""
    envs = [
        s.env("n", {"op": "join", "agent": "n"}, join=True),
        s.env("n", {"op": "propose", "agent": "n", "artifact": "x", "slot": "s", "digest": "d"}),
    ]
    envs += [s.env(OPERATOR, {"op": "tick"}) for _ in range(5)]
    envs += [
        s.env(
            f,
            {
                "op": "commit_vote",
                "agent": f,
                "artifact": "x",
                "commitment": commitment(f, "x", 1, VOTES[f]),
            },
        )
        for f in FOUNDERS
    ]
    envs.append(s.env("f1", reveal("f1")))
    return envs


def decided(s: Signer) -> list[dict[str, Any]]:
    """After ``commit_phase``: the reveal phase, every reveal, the decision."""
    envs = [s.env(OPERATOR, {"op": "tick"}) for _ in range(2)]
    envs += [s.env(f, reveal(f)) for f in FOUNDERS]
    envs += [s.env(OPERATOR, {"op": "tick"}) for _ in range(3)]
    envs.append(s.env("f2", {"op": "dispute", "agent": "f2", "artifact": "x", "reason": "stale"}))
    envs.append(s.env(OPERATOR, {"op": "tick"}))
    return envs


@contextlib.contextmanager
def served(node: Any) -> Iterator[str]:
    """``node``'s app served by uvicorn on a loopback port in a thread: its URL while the
    block runs (bounded: 10 s to start, 10 s to stop); the node is closed after."""
    import threading
    import time

    import uvicorn

    from ostrom.service.app import create_app

    config = uvicorn.Config(create_app(node), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert time.monotonic() < deadline, "uvicorn did not start in 10 s"
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        node.close()


def in_app(node: Any, body: Any) -> Any:
    """Run ``body(client)`` against ``node``'s app in process (ASGI, no socket); an
    exception in the app is its 500 answer, not raised into the test."""
    import asyncio

    import httpx

    from ostrom.service.app import create_app

    async def go() -> Any:
        transport = httpx.ASGITransport(app=create_app(node), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://node") as c:
            return await body(c)

    return asyncio.run(go())


def validate_schema(body: Any, component: str) -> None:
    """``body`` is what the OpenAPI document promises (its component schema)."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs

    from ostrom.service.openapi import openapi

    doc = openapi()
    # the component, with the document's components beside it: its refs resolve
    schema = {**doc["components"]["schemas"][component], "components": doc["components"]}
    Draft202012Validator(schema).validate(body)


@contextlib.contextmanager
def serving_port(proc: subprocess.Popen[bytes]) -> Iterator[int]:
    """The port an ``ostrom serve`` process (started with ``--port 0`` and stderr piped)
    prints on its first line; the process is stopped when the block ends."""
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline().decode()
        found = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert found, f"the node did not start: {line!r}"
        yield int(found.group(1))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def serve_founders(tmp: Path, *options: str) -> Iterator[str]:
    """``ostrom serve`` of ``tmp/n.db`` whose founders are ``setup()``'s (f1..f5) and whose
    operator is ``OPERATOR`` (the keys of ``key``), on a free port: its URL."""
    lines = []
    for f in setup().founders:
        lines += ["[[founder]]", f'id = "{f.member.id}"', "tier = 3", "reputation = 0.95"]
        lines += ["evidence = 40", f'public_key = "{f.public_key}"']
    lines += ["[[operator]]", f'id = "{OPERATOR}"', f'public_key = "{public_hex(key(OPERATOR))}"']
    (tmp / "founders.toml").write_text("\n".join(lines) + "\n")
    cmd = [sys.executable, "-m", "ostrom", "serve", "--db", str(tmp / "n.db")]
    cmd += ["--founders", str(tmp / "founders.toml"), "--fsync", "off", "--port", "0"]
    env = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}
    proc = subprocess.Popen(
        [*cmd, *options], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env
    )
    with serving_port(proc) as port:
        yield f"http://127.0.0.1:{port}"
