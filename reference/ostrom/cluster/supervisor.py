"""Starting, watching and stopping a cluster's processes (``ostrom cluster up|status|down``).

``create`` writes a cluster directory: ``cluster.toml`` (free loopback ports unless told)
and ``keys/`` (keys.py).  ``Cluster`` starts each replica (``python -m
ostrom.cluster.replica_process``) and the front (``python -m ostrom.cluster.front``) as
subprocesses, kills and restarts them (the fault tests), asks each replica for its
status over its port, and stops everything.  Every wait is bounded.  ``start_cluster``
is what a benchmark needs: a running cluster in a directory, its front URL, and a stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Final

from ostrom.cluster import config as C
from ostrom.cluster.app import community_factory
from ostrom.cluster.config import Address, ClusterConfig, ConfigError, ReplicaConfig
from ostrom.cluster.keys import generate
from ostrom.cluster.wire import STATUS, hello, read_one
from ostrom.consensus.crypto import derive_key
from ostrom.consensus.messages import MAX_MESSAGE_BYTES
from ostrom.service.budget import DEFAULT_BURST, DEFAULT_RATE
from ostrom.service.identity import create_file, new_community_id, new_key, public_hex, save_key

_CONFIG_FILE: Final = "cluster.toml"
_PIDS_FILE: Final = "pids.json"
_FOUNDERS_FILE: Final = "founders.toml"
_PARAMS_FILE: Final = "params.toml"
#: The module a Byzantine replica runs (`--byzantine I=STRATEGY`): the test harness's.
_BYZANTINE_NODE: Final = "ostrom.harness.byzantine_node"
#: The operator a new cluster gets (it may sign tick and recruit); its key is in keys/.
_OPERATOR: Final = "ops"
_STATUS_TIMEOUT_S: Final = 2.0
#: The founders a new cluster gets, (id, tier) (tier 2: reviewers; docs/community.md).
_DEFAULT_FOUNDERS: Final = tuple((f"founder{i}", 2) for i in range(4))


#: Ports ``free_ports`` draws from start here and end below the kernel's ephemeral range.
_PORT_FLOOR = 20_000
#: The kernel's ephemeral range's start where it cannot be read (Linux's default).
_EPHEMERAL_LOW = 32_768


def _ephemeral_low() -> int:
    try:
        text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii")
        return int(text.split()[0])
    except (OSError, ValueError, IndexError):
        return _EPHEMERAL_LOW


def free_ports(k: int, host: str = "127.0.0.1") -> list[int]:
    """``k`` distinct ports free at this instant (bound together, then released).

    Drawn at random below the kernel's ephemeral range: a port the kernel picked for a
    bind to port 0, once released, is the next outgoing connection's source port as
    likely as any, and a replica then fails to bind it ("address already in use": a
    clean-clone run lost a cluster test so); no outgoing connection takes a port below
    the range, so only another explicit bind can, and a random draw makes that rare.
    Where the range leaves too little room below it, the kernel's pick as before."""
    low = _ephemeral_low()
    pool = range(_PORT_FLOOR, low) if low - _PORT_FLOOR >= 1_000 else None
    socks: list[socket.socket] = []
    try:
        tries = 0
        while len(socks) < k:
            tries += 1
            port = 0 if pool is None or tries > 50 * k else pool[secrets.randbelow(len(pool))]
            s = socket.socket()
            try:
                s.bind((host, port))
            except OSError:
                s.close()
                continue
            if any(o.getsockname()[1] == s.getsockname()[1] for o in socks):
                s.close()
                continue
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def create(
    directory: Path,
    *,
    n: int = 4,
    f: int | None = None,
    batch_size: int = C.DEFAULT_BATCH_SIZE,
    batch_window_ms: int = C.DEFAULT_BATCH_WINDOW_MS,
    clients: int = C.DEFAULT_CLIENTS,
    base_timeout_ms: int = C.DEFAULT_BASE_TIMEOUT_MS,
    checkpoint_k: int = C.DEFAULT_CHECKPOINT_K,
    watermark_window: int = C.DEFAULT_WATERMARK_WINDOW,
    synchronous: str = "FULL",
    payload_bytes: int = C.DEFAULT_PAYLOAD_BYTES,
    host: str = "127.0.0.1",
    http_port: int | None = None,
    dial_ports: Sequence[int] | None = None,
    seed: int | None = None,
    founders: Sequence[tuple[str, int]] = _DEFAULT_FOUNDERS,
    founders_file: Path | None = None,
    params_file: Path | None = None,
    max_frame_bytes: int = MAX_MESSAGE_BYTES,
    refusal_burst: int = DEFAULT_BURST,
    refusal_rate: float = DEFAULT_RATE,
) -> ClusterConfig:
    """Write ``cluster.toml``, the keys and a founders file into ``directory``; the
    configuration read back from the file (so the file is what every process will see).

    Without ``founders_file`` the founders file is generated (the node's format: the
    ``founders`` and an operator ``ops``, their private keys in ``keys/``).  With it, and
    with ``params_file``, the community is the caller's: each file is checked as ``ostrom
    serve`` checks it (``ConfigError`` before anything is created) and *copied* into the
    directory, and ``cluster.toml`` names the copies.  A copy, not the caller's path:
    every replica, including one restarted next week, must execute with the bytes the
    cluster started with (a replica that replayed its history under other parameters
    would not reproduce its own checkpoints), and the directory stays movable.

    A directory that holds a cluster already (``existing``) is refused (``ConfigError``):
    its keys, founders' private keys included, and its databases are never overwritten,
    and new keys beside old databases would be a cluster that cannot restart its own
    history.  ``Cluster(directory).start()`` starts it again (``cluster up --reuse``).
    Every file is created new, never through a link (``identity.create_file``)."""
    f = (n - 1) // 3 if f is None else f
    found = existing(directory)
    if found:
        names = ", ".join(p.name for p in found[:4]) + (", ..." if len(found) > 4 else "")
        raise ConfigError(
            f"{directory}: holds a cluster already ({names}); its keys and databases are "
            "never overwritten: start it again with --reuse, or give a new directory"
        )
    founders_text = _read(founders_file)
    params_text = _read(params_file)
    if founders_text is not None or params_text is not None:
        _check_community(founders_file, founders_text, params_file, params_text)
    directory.mkdir(parents=True, exist_ok=True)
    ports = free_ports(n + 2, host)
    listen, front_port = ports[:n], ports[n]
    http = http_port if http_port is not None else ports[n + 1]
    dials = list(dial_ports) if dial_ports is not None else listen
    cfg = ClusterConfig(
        n=n,
        f=f,
        batch_size=batch_size,
        batch_window_ms=batch_window_ms,
        clients=clients,
        base_timeout_ms=base_timeout_ms,
        checkpoint_k=checkpoint_k,
        watermark_window=watermark_window,
        synchronous=synchronous,
        keys=directory / "keys",
        front=Address(host, front_port),
        http=Address(host, http),
        replicas=tuple(
            ReplicaConfig(
                i, Address(host, listen[i]), Address(host, dials[i]), directory / f"r{i}.sqlite3"
            )
            for i in range(n)
        ),
        founders=directory / _FOUNDERS_FILE,
        path=directory / _CONFIG_FILE,
        params=None if params_text is None else directory / _PARAMS_FILE,
        community=new_community_id(),  # ENV-1: this cluster's own
        payload_bytes=payload_bytes,
        max_frame_bytes=max_frame_bytes,
        refusal_burst=refusal_burst,
        refusal_rate=refusal_rate,
    )
    path = directory / _CONFIG_FILE
    try:
        _write_cluster(directory, cfg, seed, founders, founders_text, params_text)
    except OSError as exc:  # a file that appeared meanwhile, or a link in the way
        raise ConfigError(f"{exc.filename or directory}: {exc.strerror or exc}") from None
    return C.load(path)


def existing(directory: Path) -> list[Path]:
    """What of a cluster ``directory`` holds: its configuration, keys, community files
    and replica databases (with their journals)."""
    if not directory.is_dir():
        return []
    names = {_CONFIG_FILE, _FOUNDERS_FILE, _PARAMS_FILE, "keys", _PIDS_FILE}
    return sorted(p for p in directory.iterdir() if p.name in names or ".sqlite3" in p.name)


def _write_cluster(
    directory: Path,
    cfg: ClusterConfig,
    seed: int | None,
    founders: Sequence[tuple[str, int]],
    founders_text: bytes | None,
    params_text: bytes | None,
) -> None:
    create_file(directory / _CONFIG_FILE, cfg.to_toml().encode(), 0o644)
    generate(cfg.keys, [r.name for r in cfg.replicas] + cfg.client_names, seed=seed)
    if params_text is not None:
        create_file(directory / _PARAMS_FILE, params_text, 0o644)
    if founders_text is not None:
        create_file(directory / _FOUNDERS_FILE, founders_text, 0o644)
        return
    lines: list[str] = []
    for fid, tier in founders:
        key = new_key() if seed is None else derive_key(seed, f"founder:{fid}")
        save_key(key, cfg.keys / f"{fid}.key")
        lines += ["[[founder]]", f'id = "{fid}"', f"tier = {tier}", "reputation = 0.9"]
        lines += ["evidence = 20", f'public_key = "{public_hex(key)}"', ""]
    op = new_key() if seed is None else derive_key(seed, f"operator:{_OPERATOR}")
    save_key(op, cfg.keys / f"{_OPERATOR}.key")
    lines += ["[[operator]]", f'id = "{_OPERATOR}"', f'public_key = "{public_hex(op)}"']
    create_file(directory / _FOUNDERS_FILE, ("\n".join(lines) + "\n").encode(), 0o644)


def _read(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _check_community(
    founders: Path | None,
    founders_text: bytes | None,
    params: Path | None,
    params_text: bytes | None,
) -> None:
    """``ConfigError`` (one line, naming the caller's file) unless the replicas' own loader
    (``app.community_factory``) accepts exactly these bytes: they are checked from a
    scratch copy, so what is copied into the cluster is what was checked."""
    with tempfile.TemporaryDirectory(prefix="ostrom-cluster-check-") as d:
        paths: list[Path | None] = []
        renames: dict[str, str] = {}
        for name, original, data in (
            (_FOUNDERS_FILE, founders, founders_text),
            (_PARAMS_FILE, params, params_text),
        ):
            if original is None or data is None:
                paths.append(None)
                continue
            scratch = Path(d) / name
            scratch.write_bytes(data)
            paths.append(scratch)
            renames[str(scratch)] = str(original)
        try:
            community_factory(paths[0], paths[1])
        except ConfigError as exc:
            message = str(exc)
            for scratch_name, original_name in renames.items():
                message = message.replace(scratch_name, original_name)
            raise ConfigError(message) from None


# --- status --------------------------------------------------------------------------------


async def _ask(address: Address, timeout: float) -> dict[str, Any]:
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(address.host, address.port), timeout
    )
    try:
        writer.write(hello(STATUS))
        await writer.drain()
        data = await asyncio.wait_for(read_one(reader), timeout)
        if data is None:
            raise ConnectionError("closed without an answer")
        doc = json.loads(data)
        if not isinstance(doc, dict):
            raise ValueError("not a status")
        return doc
    finally:
        writer.close()


def replica_status(address: Address, timeout: float = _STATUS_TIMEOUT_S) -> dict[str, Any] | None:
    """The status a replica answers, or None if it does not answer in time."""
    try:
        return asyncio.run(_ask(address, timeout))
    except (TimeoutError, OSError, ConnectionError, ValueError):
        return None
    except Exception:  # FrameError and the like: a peer that is not a replica
        return None


def cluster_status(cfg: ClusterConfig) -> dict[int, dict[str, Any] | None]:
    """Each replica's status (asked on its listening address: no proxy in between)."""
    return {r.id: replica_status(r.listen) for r in cfg.replicas}


def front_status(cfg: ClusterConfig, timeout: float = _STATUS_TIMEOUT_S) -> dict[str, Any] | None:
    """The front's ``GET /status``, or None if it does not answer in time."""
    url = f"http://{cfg.http.host}:{cfg.http.port}/status"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # loopback
            doc = json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


# --- processes -----------------------------------------------------------------------------


class Cluster:
    """The processes of one cluster directory (replicas and front)."""

    def __init__(self, directory: Path, cfg: ClusterConfig | None = None) -> None:
        self.dir = directory
        self.cfg = cfg if cfg is not None else C.load(directory / _CONFIG_FILE)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.byzantine: dict[int, str] = {}
        self._logs: list[IO[bytes]] = []

    @property
    def config_path(self) -> Path:
        assert self.cfg.path is not None
        return self.cfg.path

    @property
    def url(self) -> str:
        return f"http://{self.cfg.http.host}:{self.cfg.http.port}"

    def _spawn(self, name: str, args: list[str], *, detach: bool = False) -> None:
        log = open(self.dir / f"{name}.log", "ab")  # noqa: SIM115 (closed in stop)
        self._logs.append(log)
        env = dict(os.environ)
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.procs[name] = subprocess.Popen(
            [sys.executable, "-m", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=detach,
        )

    def start_replica(self, i: int, byzantine: str | None = None, *, detach: bool = False) -> None:
        args = [
            "ostrom.cluster.replica_process",
            "--cluster",
            str(self.config_path),
            "--id",
            str(i),
        ]
        if byzantine is not None:
            # the fault tests' Byzantine replica: the test harness's process (by name; the
            # product imports no attack), the same replica process with a strategy
            args[0] = _BYZANTINE_NODE
            args += ["--byzantine", byzantine]
            self.byzantine[i] = byzantine
        self._spawn(f"r{i}", args, detach=detach)

    def start_front(self, *, detach: bool = False) -> None:
        self._spawn(
            "front", ["ostrom.cluster.front", "--cluster", str(self.config_path)], detach=detach
        )

    def start(
        self,
        byzantine: dict[int, str] | None = None,
        *,
        detach: bool = False,
        timeout: float = 30.0,
    ) -> None:
        for r in self.cfg.replicas:
            self.start_replica(r.id, (byzantine or {}).get(r.id), detach=detach)
        self.start_front(detach=detach)
        self.wait_ready(timeout)
        # each process with its start time: ``down`` signals only a process that is still
        # the one started here (a pid is reused once its process is gone)
        pids = {k: {"pid": p.pid, "start": _start_time(p.pid)} for k, p in self.procs.items()}
        path = self.dir / _PIDS_FILE
        path.unlink(missing_ok=True)  # a stale one (--reuse after a crash); never followed
        create_file(path, json.dumps(pids, sort_keys=True).encode(), 0o644)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Every running replica answers status and the front answers HTTP."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [k for k, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"process {dead[0]} exited: see {self.dir / (dead[0] + '.log')}")
            up = all(
                replica_status(r.listen, 0.5) is not None
                for r in self.cfg.replicas
                if f"r{r.id}" in self.procs
            )
            if up and ("front" not in self.procs or _http_ok(self.url + "/status")):
                return
            time.sleep(0.05)
        raise TimeoutError(f"the cluster in {self.dir} was not up within {timeout}s")

    def wait_replica(self, i: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = self.procs.get(f"r{i}")
            if p is not None and p.poll() is not None:
                raise RuntimeError(f"r{i} exited with {p.returncode}")
            if replica_status(self.cfg.replica(i).listen, 0.5) is not None:
                return
            time.sleep(0.05)
        raise TimeoutError(f"r{i} did not answer within {timeout}s")

    def kill(self, name: str) -> None:
        """``kill -9``: no cleanup, no flush (the store's promises must survive it)."""
        p = self.procs[name]
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGKILL)
        p.wait(10)

    def restart_replica(self, i: int) -> None:
        self.start_replica(i, self.byzantine.get(i))
        self.wait_replica(i)

    def status(self) -> dict[int, dict[str, Any] | None]:
        return cluster_status(self.cfg)

    def stop(self, timeout: float = 10.0) -> dict[str, int | None]:
        """SIGTERM every process, SIGKILL what is still running after ``timeout``."""
        for p in self.procs.values():
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        codes: dict[str, int | None] = {}
        for name, p in self.procs.items():
            try:
                codes[name] = p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)
                codes[name] = None
        for log in self._logs:
            log.close()
        self._logs.clear()
        return codes


def _http_ok(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start_cluster(
    directory: Path, *, n: int = 4, batch_size: int = C.DEFAULT_BATCH_SIZE, **options: Any
) -> tuple[str, Callable[[], None]]:
    """A running cluster in ``directory`` (for benchmarks): its front URL and a stop."""
    create(directory, n=n, batch_size=batch_size, **options)
    cluster = Cluster(directory)
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise

    def stop() -> None:
        cluster.stop()

    return cluster.url, stop


def down(directory: Path, timeout: float = 10.0) -> list[str]:
    """Stop the processes ``cluster up`` started (``pids.json``), and only those.

    ``pids.json`` is a file in a directory, not a proof: a pid it names may have been
    reused by another process since, and anyone who can write the file can name any pid.
    A process is signalled only if it is still the one started (``ours``: the start time
    recorded, and a command line that runs a cluster process on this directory's
    ``cluster.toml``); any other entry is skipped and left alone."""
    path = directory / _PIDS_FILE
    try:
        pids = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(pids, dict):
        return []
    config = (directory / _CONFIG_FILE).resolve()
    ours = {
        name: (e["pid"], e["start"])
        for name, e in sorted(pids.items())
        if isinstance(e, dict) and _ours(e.get("pid"), e.get("start"), config)
    }
    stopped = []
    for name, (pid, _) in ours.items():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
            stopped.append(name)
    deadline = time.monotonic() + timeout
    for pid, start in ours.values():
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid) and _ours(pid, start, config):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    path.unlink(missing_ok=True)
    return stopped


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot: /proc/PID/stat, field 22),
    or None (no such process, or no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, from field 3
    return fields[19] if len(fields) > 19 else None


def _ours(pid: Any, start: Any, config: Path) -> bool:
    """Process ``pid`` is one ``Cluster`` started for ``config``: it started at ``start``
    and runs a cluster module (``python -m ostrom...``) with ``--cluster`` naming
    ``config``.  Without /proc nothing can be checked, and nothing is ours."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1 or not isinstance(start, str):
        return False
    if _start_time(pid) != start:
        return False
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return False
    modules = ("ostrom.cluster.replica_process", "ostrom.cluster.front", _BYZANTINE_NODE)
    if not any(m in args for m in modules):
        return False
    named = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--cluster"]
    return any((cwd / n).resolve() == config for n in named)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # a zombie of ours counts as gone
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    return True


__all__ = [
    "Cluster",
    "cluster_status",
    "create",
    "down",
    "existing",
    "free_ports",
    "front_status",
    "replica_status",
    "start_cluster",
]
