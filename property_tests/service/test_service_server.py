"""Slow clients against a real ``ostrom serve`` and a real cluster front, over loopback.

The attack of docs/security.md ("slow clients"): connections that send half a request
and stop.  Before service/server.py each one held a descriptor for good, so a few more
of them than the process's descriptor limit made every later connection fail —
``/health`` included — for as long as they were held (checked: the flood test fails on
the unguarded server).  The process under attack gets a low descriptor limit
(``ulimit -n``, set in the child) so that a few hundred connections are the same attack
as 1,100 against the usual limit of 1,024; the slow test runs that one.

What must hold while the attack runs: ``/health`` answers within ``PROBE_S`` every time;
and a connection that stalls in its headers or its body is closed by the server within
its timeout (plus slack), never held.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ostrom import layout
from ostrom.service.limits import DEFAULT_LIMITS, RESERVED_FDS, Limits, effective_cap
from service_world import serving_port

ENV = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}
#: a probe of /health must answer within this many seconds while the attack runs
PROBE_S = 2.0
#: a half request: the request line and one header, never the blank line that ends them
HALF = b"GET /health HTTP/1.1\r\nHost: node\r\n"


def _limit_fds(n: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


@contextlib.contextmanager
def node(tmp: Path, *options: str, nofile: int | None = None) -> Iterator[int]:
    """``ostrom serve`` on a free port (its descriptor limit ``nofile``); the port."""
    cmd = [sys.executable, "-m", "ostrom", "serve", "--db", str(tmp / "n.db")]
    proc = subprocess.Popen(
        [*cmd, "--fsync", "off", "--port", "0", *options],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=ENV,
        preexec_fn=None if nofile is None else (lambda: _limit_fds(nofile)),
    )
    with serving_port(proc) as port:
        yield port


def probe(url: str) -> str:
    """'ok' if GET ``url`` answers 200 within PROBE_S, else what went wrong."""
    try:
        with urllib.request.urlopen(url, timeout=PROBE_S) as resp:
            return "ok" if resp.status == 200 else f"status {resp.status}"
    except OSError as exc:
        return repr(exc)


def hold(port: int, n: int, data: bytes = HALF) -> list[socket.socket]:
    """``n`` connections that sent ``data`` and stop (those the server let in)."""
    held = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(PROBE_S)
        try:
            s.connect(("127.0.0.1", port))
            s.sendall(data)
        except OSError:
            s.close()
            continue
        held.append(s)
    return held


def closed_within(s: socket.socket, seconds: float) -> bool:
    """The server closed ``s`` (EOF or reset, after any answer) within ``seconds``."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        s.settimeout(left)
        try:
            if s.recv(65536) == b"":
                return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
    return False


def response(s: socket.socket) -> bytes:
    """One whole response on ``s``: its head and its Content-Length's body (b"" if the
    server closed ``s`` first)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    found = re.search(rb"(?i)content-length: *(\d+)", head)
    while found and len(body) < int(found.group(1)):
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def flood(port: int, n: int, url: str, probes: int = 5) -> list[str]:
    """Hold ``n`` half-open connections, probe ``url`` meanwhile; the probes' outcomes."""
    held = hold(port, n)
    try:
        outcomes = []
        for _ in range(probes):
            outcomes.append(probe(url))
            time.sleep(0.2)
        return outcomes
    finally:
        for s in held:
            s.close()


def test_limits_are_checked() -> None:
    assert effective_cap(Limits(max_connections=10)) == 10
    cap = effective_cap(Limits(max_connections=10**9))  # may raise the soft limit first
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert cap == soft - RESERVED_FDS
    bad_values = (
        {"header_timeout": 0},
        {"header_timeout": float("nan")},
        {"body_timeout": float("inf")},
        {"keep_alive": -1},
        {"max_connections": 0},
    )
    for bad in bad_values:
        with pytest.raises(ValueError):
            Limits(**bad)
    assert DEFAULT_LIMITS.header_timeout < DEFAULT_LIMITS.body_timeout


def test_one_configuration_for_every_http_server() -> None:
    """``ostrom serve`` and the front take their uvicorn configuration from
    ``server.config``: the guarded protocol, bound to the limits, and the backlog the
    descriptor reserve counts."""
    from ostrom.service.limits import BACKLOG
    from ostrom.service.server import config

    limits = Limits(header_timeout=3, body_timeout=4, max_connections=5)
    cfg = config(object(), host="127.0.0.1", port=0, lifespan="off", limits=limits)
    http = cfg.http
    assert isinstance(http, type) and getattr(http, "limits", None) == limits
    assert getattr(http, "cap", None) == 5
    assert cfg.backlog == BACKLOG < RESERVED_FDS
    for module in ("cli/service.py", "cluster/front.py"):
        text = (layout.ROOT / "reference/ostrom" / module).read_text()
        assert "server_config(" in text and "uvicorn.Config(" not in text, module


@pytest.mark.system
def test_a_half_open_flood_past_the_descriptor_limit(tmp_path: Path) -> None:
    """300 half-open connections against a node allowed 256 descriptors."""
    with node(tmp_path, nofile=256) as port:
        url = f"http://127.0.0.1:{port}/health"
        assert probe(url) == "ok"
        outcomes = flood(port, 300, url)
        assert outcomes == ["ok"] * len(outcomes), outcomes
        assert probe(f"http://127.0.0.1:{port}/log?after=0") == "ok"


@pytest.mark.system
def test_a_flood_evicts_slow_connections_before_answered_ones(tmp_path: Path) -> None:
    """At the cap, connections that never completed a request go before keep-alive ones
    that were answered: 10 clients each answered once, idle between two requests, then
    twice the cap of half-open connections (each younger than the idle clients, as a slow
    client that reconnects at once always is).  Every client's next request on its own
    connection is answered.  By age alone (before) the idle clients went first: the test
    failed in 3 of 6 runs on that code (and passed in 4 of 4 on this one)."""
    cap = 20  # few connections: the whole attack well within the 5 s keep-alive
    with node(tmp_path, "--max-connections", str(cap)) as port:
        clients = hold(port, 10, HALF + b"\r\n")
        assert all(response(c).startswith(b"HTTP/1.1 200") for c in clients)
        held = hold(port, 2 * cap)
        try:
            answered = []
            for c in clients:
                try:
                    c.sendall(HALF + b"\r\n")
                    answered.append(response(c).startswith(b"HTTP/1.1 200"))
                except OSError:
                    answered.append(False)
            assert all(answered), answered
        finally:
            for s in held + clients:
                s.close()


@pytest.mark.system
def test_stalled_headers_and_bodies_are_cut(tmp_path: Path) -> None:
    opts = ("--header-timeout", "1", "--body-timeout", "1")
    with node(tmp_path, *opts) as port:
        headers = hold(port, 1)[0]
        body = hold(port, 1, b"POST /commands HTTP/1.1\r\nHost: n\r\nContent-Length: 900\r\n\r\n{")
        # a keep-alive connection: one whole request answered, then half of the next
        again = hold(port, 1, HALF + b"\r\n")[0]
        assert again.recv(65536).startswith(b"HTTP/1.1 200")
        again.sendall(HALF)
        assert closed_within(headers, 3.0), "stalled headers held past the header timeout"
        assert closed_within(body[0], 3.0), "a stalled body held past the body timeout"
        assert closed_within(again, 3.0), "a stalled second request held"
        assert probe(f"http://127.0.0.1:{port}/health") == "ok"


@pytest.mark.system
@pytest.mark.slow
def test_a_half_open_flood_against_the_cluster_front(tmp_path: Path) -> None:
    """The front runs the node's server (service/server.py): the same flood, the same
    outcome.  The cluster is started by a process with 256 descriptors, which its
    replicas and its front inherit.  ``slow`` (a cluster: about 7 s) for make test's
    budget; ``test_one_configuration_for_every_http_server`` checks there that the front
    takes the node's configuration."""
    directory = tmp_path / "c"
    up = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256)); "
        "from ostrom.cli.main import main; sys.exit(main())"
    )
    args = ["cluster", "up", "--dir", str(directory), "--timeout-ms", "800", "--seed", "5"]
    run = subprocess.run(
        [sys.executable, "-c", up, *args], env=ENV, capture_output=True, text=True, timeout=120
    )
    try:
        assert run.returncode == 0, run.stderr
        found = re.search(r"front at http://127\.0\.0\.1:(\d+)", run.stdout)
        assert found, run.stdout
        port = int(found.group(1))
        url = f"http://127.0.0.1:{port}/status"
        assert probe(url) == "ok"
        outcomes = flood(port, 300, url)
        assert outcomes == ["ok"] * len(outcomes), outcomes
    finally:
        subprocess.run(
            [sys.executable, "-m", "ostrom", "cluster", "down", "--dir", str(directory)],
            env=ENV,
            capture_output=True,
            timeout=60,
        )


@pytest.mark.system
@pytest.mark.slow
def test_eleven_hundred_half_open_connections(tmp_path: Path) -> None:
    """Issue 41's attack as reported: 1,100 against the usual limit of 1,024 descriptors,
    with the default limits, probed over more than one header timeout."""
    with node(tmp_path, nofile=1024) as port:
        url = f"http://127.0.0.1:{port}/health"
        probes = int(DEFAULT_LIMITS.header_timeout * 1.5 / 0.2)
        outcomes = flood(port, 1100, url, probes=probes)
        assert outcomes == ["ok"] * len(outcomes), outcomes
