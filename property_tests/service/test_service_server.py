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
from ostrom.service.limits import (
    BACKLOG,
    DEFAULT_LIMITS,
    MAX_BACKLOG,
    OTHER_FDS,
    RESERVED_FDS,
    Limits,
    effective_cap,
    listen_backlog,
)
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
    from ostrom.service.server import config

    limits = Limits(header_timeout=3, body_timeout=4, max_connections=5)
    cfg = config(object(), host="127.0.0.1", port=0, lifespan="off", limits=limits)
    http = cfg.http
    assert isinstance(http, type) and getattr(http, "limits", None) == limits
    assert getattr(http, "cap", None) == 5
    assert cfg.backlog == listen_backlog(limits) >= BACKLOG
    for module in ("cli/service.py", "cluster/front.py"):
        text = (layout.ROOT / "reference/ostrom" / module).read_text()
        assert "server_config(" in text and "uvicorn.Config(" not in text, module


@pytest.mark.parametrize("nofile", [256, 1024, 1500, 2300, 20000, 1 << 20])
def test_the_backlog_holds_what_the_cap_sends_back(
    nofile: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the cap every evicted slow client comes straight back: the accept queue must
    hold that excess, or the kernel drops honest SYNs (TCP backoff, 1 to 31 s; the siege,
    docs/security.md).  So the backlog is as deep as the descriptors allow above the cap,
    up to ``MAX_BACKLOG``, and never takes descriptors the cap had before: with 1,024
    descriptors the cap stays 832 (1,024 - 192).  The old fixed backlog of 128 fails
    the depth check at every limit from 1,500 up."""
    monkeypatch.setattr(resource, "getrlimit", lambda _r: (nofile, nofile))
    cap, backlog = effective_cap(DEFAULT_LIMITS), listen_backlog(DEFAULT_LIMITS)
    assert BACKLOG <= backlog <= MAX_BACKLOG
    assert cap == min(DEFAULT_LIMITS.max_connections, nofile - RESERVED_FDS) or cap == (
        DEFAULT_LIMITS.max_connections
    )
    if nofile >= RESERVED_FDS + DEFAULT_LIMITS.max_connections:  # the configured cap fits
        assert cap == DEFAULT_LIMITS.max_connections
        assert cap + backlog + OTHER_FDS <= nofile  # never past the descriptors
        assert backlog == min(MAX_BACKLOG, nofile - OTHER_FDS - cap)  # all that is left
    else:  # short of descriptors: the backlog shrinks to its least before the cap does
        assert backlog == BACKLOG and cap == max(1, nofile - RESERVED_FDS)
    if nofile >= 2 * DEFAULT_LIMITS.max_connections + OTHER_FDS:
        assert backlog >= cap  # every connection at the cap can come back at once


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


def _refused(s: socket.socket, seconds: float) -> tuple[int, int]:
    """Refused commands (not JSON: 400 ``malformed``, charged to the address) sent
    one at a time on ``s`` for ``seconds``: how many were answered 429, and other 4xx."""
    req = b"POST /commands HTTP/1.1\r\nHost: n\r\nContent-Length: 2\r\n\r\n{x"
    many = other = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        s.sendall(req)
        got = response(s)
        if got.startswith(b"HTTP/1.1 429"):
            assert b"retry-after: 1" in got.lower()
            many += 1
        else:
            assert got.startswith(b"HTTP/1.1 4"), got[:80]
            other += 1
    return many, other


def _join(s: socket.socket, port: int, name: str) -> bytes:
    """A join of a fresh key (an open community) posted on ``s``: the whole answer."""
    import json

    from ostrom.consensus.crypto import derive_key
    from ostrom.service.identity import canonical, public_hex, sign_envelope

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
        community = json.loads(r.read())["community"]
    k = derive_key(b"test-server", name)
    body = canonical(
        sign_envelope(k, name, 1, {"op": "join", "agent": name}, public_hex(k), community=community)
    )
    head = f"POST /commands HTTP/1.1\r\nHost: n\r\nContent-Length: {len(body)}\r\n\r\n"
    s.sendall(head.encode() + body)
    return response(s)


@pytest.mark.system
def test_a_refused_flooder_waits_out_its_retry_after(tmp_path: Path) -> None:
    """ADM-2's refusal budget answers an over-budget sender 429 before any check, but
    each answer still cost the node its HTTP machinery (tens of thousands of them in one
    siege).  Now a connection answered 429 on which no command was accepted is not read
    again before the Retry-After (1 s at the default rate): in 3 s one connection gets
    the burst (32 refusals), what refilled and about 3 429s.  On the code before it got
    3,634 answers in 3 s (bytes that are not JSON were answered 400 past the budget, for
    ever; with that fixed alone, 3,793 429s).  A read does not vouch for a connection (a
    flooder would read /health first: the first version of this hold let it); a command
    accepted on it does (a proxy's, an agent's own), and it is answered at once, 429s
    included."""
    with node(tmp_path) as port:
        flooder = socket.create_connection(("127.0.0.1", port), timeout=10)
        vouched = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            assert _join(vouched, port, "v").startswith(b"HTTP/1.1 200")
            flooder.sendall(HALF + b"\r\n")  # a free read first: vouches for nothing
            assert response(flooder).startswith(b"HTTP/1.1 200")
            many, other = _refused(flooder, 3.0)
            # the burst (32) refused by the node's checks (400 malformed), then what the
            # budget refills (1/s) and one 429 per Retry-After: not hundreds of either
            assert 32 <= other <= 36, other
            assert 1 <= many <= 5, many
            t0 = time.monotonic()
            assert _refused(flooder, 0.01)[0] == 1  # still answered, after its wait
            assert 0.3 < time.monotonic() - t0 < 3.0
            quick, _ = _refused(vouched, 1.0)  # the address's budget is spent: all 429
            assert quick > 20, quick
            assert probe(f"http://127.0.0.1:{port}/health") == "ok"
        finally:
            flooder.close()
            vouched.close()
