"""A cluster's configuration: ``cluster.toml``, read once, validated, clear errors.

Every process of a cluster (the N replicas, the HTTP front, ``ostrom cluster status``)
reads the same file, so the file is the one source of the cluster's facts: n, f, the
batch size, the timer periods, where each replica listens and where its peers dial it,
its database, the directory of key files, the node's founders file (who the
community starts with: the file ``ostrom serve --founders`` reads) and its parameter
file (``ostrom serve --params``: every replica executes with the same parameters because
they all read them from the one file this configuration names).  Paths in the file
are relative to the file's directory, so a cluster directory can be moved as a whole.

A bad file never starts a half-configured process: ``load`` raises ``ConfigError`` with
one line naming the field and what is wrong, and the CLI prints that line.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ostrom.consensus.messages import MAX_MESSAGE_BYTES, max_request_bytes, replica_name
from ostrom.service.budget import DEFAULT_BURST, DEFAULT_RATE
from ostrom.service.identity import is_community_id

__all__ = [
    "DEFAULT_BASE_TIMEOUT_MS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_BATCH_WINDOW_MS",
    "DEFAULT_CHECKPOINT_K",
    "DEFAULT_CLIENTS",
    "DEFAULT_PAYLOAD_BYTES",
    "DEFAULT_WATERMARK_WINDOW",
    "MIN_REQUEST_BYTES",
    "Address",
    "ClusterConfig",
    "ConfigError",
    "ReplicaConfig",
    "load",
    "parse",
]

#: Defaults of the ``[cluster]`` table (what ``cluster up`` writes when not told).
DEFAULT_BATCH_SIZE: Final = 16
DEFAULT_BATCH_WINDOW_MS: Final = 2
DEFAULT_CLIENTS: Final = 8
DEFAULT_BASE_TIMEOUT_MS: Final = 1000
DEFAULT_CHECKPOINT_K: Final = 16
DEFAULT_WATERMARK_WINDOW: Final = 32
#: The bound of each replica's payload file in bytes (cluster/payloads.py): 4 GiB.
DEFAULT_PAYLOAD_BYTES: Final = 1 << 32
#: The smallest request a cluster must be able to order (``max_request_bytes`` of its n
#: and window): a batch of commands, each without its payload, fits in it.
MIN_REQUEST_BYTES: Final = 16 * 1024
_SYNCHRONOUS: Final = ("FULL", "NORMAL", "OFF")
_MAX_PORT: Final = 65535


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the field."""


@dataclasses.dataclass(frozen=True)
class Address:
    host: str
    port: int


@dataclasses.dataclass(frozen=True)
class ReplicaConfig:
    """One replica: where it listens, where others dial it (a proxy may sit between:
    ``dial`` differs from ``listen``), and its SQLite database."""

    id: int
    listen: Address
    dial: Address
    db: Path

    @property
    def name(self) -> str:
        return replica_name(self.id)

    @property
    def node_db(self) -> Path:
        """The node database the replica executes ordered commands on (its log, content
        and search index: cluster/app.py), beside its PBFT store and named after it.
        Derived state: rebuilt from the executed history at every start."""
        return self.db.with_name(f"{self.db.stem}-node{self.db.suffix}")

    @property
    def payload_db(self) -> Path:
        """The payloads the front handed the replica (cluster/payloads.py): durable."""
        return self.db.with_name(f"{self.db.stem}-payloads{self.db.suffix}")


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """A cluster's configuration (cluster.toml): its size, batching, timeouts, keys and
    addresses."""

    n: int
    f: int
    batch_size: int
    batch_window_ms: int
    clients: int
    base_timeout_ms: int
    checkpoint_k: int
    watermark_window: int
    synchronous: str
    keys: Path
    front: Address  # where the front receives replies from the replicas
    http: Address  # the front's HTTP API
    replicas: tuple[ReplicaConfig, ...]
    founders: Path | None  # the node's founders file (ostrom serve --founders), if any
    path: Path | None = None  # the file it was read from
    params: Path | None = None  # the protocol parameters (ostrom serve --params), if any
    #: the community's id, 32 hex digits: every envelope is signed for it (ENV-1); made
    #: at random by ``cluster up``, the same for every replica and the front
    community: str = ""
    #: each replica's payload file holds at most this many bytes (a put beyond it is
    #: refused: cluster/payloads.py)
    payload_bytes: int = DEFAULT_PAYLOAD_BYTES
    #: the largest message a replica sends (bytes): requests are bounded so that every
    #: VIEW-CHANGE and NEW-VIEW fits it, a STATE-TRANSFER is cut into chunks of it
    #: (``messages.max_request_bytes``, ``Replica.max_message``); smaller only in tests
    max_frame_bytes: int = MAX_MESSAGE_BYTES
    #: the front's refusal budget per address and key (ADM-2, as ``ostrom serve
    #: --refusal-burst/--refusal-rate``): refusals at once, and refilled per second
    refusal_burst: int = DEFAULT_BURST
    refusal_rate: float = DEFAULT_RATE

    @property
    def client_names(self) -> list[str]:
        """The front's PBFT client identities (one outstanding request each)."""
        return [f"c{i}" for i in range(self.clients)]

    def replica(self, i: int) -> ReplicaConfig:
        for r in self.replicas:
            if r.id == i:
                return r
        raise ConfigError(f"no replica {i} (replicas are 0..{self.n - 1})")

    def to_toml(self) -> str:
        """The file ``load`` reads back to an equal configuration (paths relative to
        ``base``: the file's directory)."""
        base = self.path.parent if self.path is not None else Path(".")
        lines = [
            "[cluster]",
            f"n = {self.n}",
            f"f = {self.f}",
            f"batch_size = {self.batch_size}",
            f"batch_window_ms = {self.batch_window_ms}",
            f"clients = {self.clients}",
            f"base_timeout_ms = {self.base_timeout_ms}",
            f"checkpoint_k = {self.checkpoint_k}",
            f"watermark_window = {self.watermark_window}",
            f'synchronous = "{self.synchronous}"',
            f"payload_bytes = {self.payload_bytes}",
            f'keys = "{_rel(self.keys, base)}"',
            f'community = "{self.community}"',
            *(
                [f"max_frame_bytes = {self.max_frame_bytes}"]
                if self.max_frame_bytes != MAX_MESSAGE_BYTES
                else []
            ),
            *([f'founders = "{_rel(self.founders, base)}"'] if self.founders else []),
            *([f'params = "{_rel(self.params, base)}"'] if self.params else []),
            "",
            "[front]",
            f'host = "{self.front.host}"',
            f"port = {self.front.port}",
            f'http_host = "{self.http.host}"',
            f"http_port = {self.http.port}",
            *(
                [f"refusal_burst = {self.refusal_burst}"]
                if self.refusal_burst != DEFAULT_BURST
                else []
            ),
            *(
                [f"refusal_rate = {self.refusal_rate!r}"]
                if self.refusal_rate != DEFAULT_RATE
                else []
            ),
        ]
        for r in self.replicas:
            lines += [
                "",
                "[[replica]]",
                f"id = {r.id}",
                f'host = "{r.listen.host}"',
                f"port = {r.listen.port}",
                f'dial_host = "{r.dial.host}"',
                f"dial_port = {r.dial.port}",
                f'db = "{_rel(r.db, base)}"',
            ]
        return "\n".join(lines) + "\n"


def _rel(p: Path, base: Path) -> str:
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        return p.as_posix()


# --- reading -----------------------------------------------------------------------------


def load(path: str | Path) -> ClusterConfig:
    """Read and validate ``path`` (``ConfigError`` with one clear line otherwise)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read ({exc.strerror or exc})") from None
    return parse(raw, base=p.parent, path=p)


def parse(raw: bytes, *, base: Path, path: Path | None = None) -> ClusterConfig:
    """Validate the bytes of a ``cluster.toml``; hostile input gives ``ConfigError``."""
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"not a TOML file: {exc}") from None
    _only(doc, {"cluster", "front", "replica"}, "top level")
    c = _table(doc, "cluster")
    _only(
        c,
        {
            "n",
            "f",
            "batch_size",
            "batch_window_ms",
            "clients",
            "base_timeout_ms",
            "checkpoint_k",
            "watermark_window",
            "synchronous",
            "payload_bytes",
            "keys",
            "founders",
            "params",
            "community",
            "max_frame_bytes",
        },
        "[cluster]",
    )
    if "community" not in c:
        raise ConfigError(
            "cluster.community is missing: the community id every envelope is signed for "
            "(ENV-1; a file from before it, whose replicas' histories name no community, "
            "cannot be run: make a new cluster)"
        )
    community_id = c["community"]
    if not is_community_id(community_id):
        raise ConfigError("cluster.community must be 32 lowercase hex digits")
    n = _int(c, "n", "cluster", lo=1, hi=64)
    f = _int(c, "f", "cluster", lo=0, hi=21)
    if n < 3 * f + 1:
        raise ConfigError(f"cluster.n = {n} is below 3f+1 = {3 * f + 1} (f = {f})")
    batch = _int(c, "batch_size", "cluster", lo=1, hi=1024, default=DEFAULT_BATCH_SIZE)
    window = _int(c, "batch_window_ms", "cluster", lo=0, hi=1000, default=DEFAULT_BATCH_WINDOW_MS)
    clients = _int(c, "clients", "cluster", lo=1, hi=256, default=DEFAULT_CLIENTS)
    timeout = _int(
        c, "base_timeout_ms", "cluster", lo=10, hi=600_000, default=DEFAULT_BASE_TIMEOUT_MS
    )
    k = _int(c, "checkpoint_k", "cluster", lo=1, hi=1 << 20, default=DEFAULT_CHECKPOINT_K)
    wm = _int(c, "watermark_window", "cluster", lo=1, hi=1 << 20, default=DEFAULT_WATERMARK_WINDOW)
    if wm < 2 * k:
        raise ConfigError(f"cluster.watermark_window = {wm} must be at least 2 * checkpoint_k")
    frame = _int(
        c, "max_frame_bytes", "cluster", lo=1, hi=MAX_MESSAGE_BYTES, default=MAX_MESSAGE_BYTES
    )
    if max_request_bytes(n, wm, frame) < MIN_REQUEST_BYTES:
        # every NEW-VIEW must fit a frame (messages.max_request_bytes): the window, n and
        # the frame bound the request, which must still hold a command of a useful size
        raise ConfigError(
            f"cluster.watermark_window = {wm} with n = {n} and a frame of {frame} bytes "
            f"leaves {max(0, max_request_bytes(n, wm, frame))} bytes per request, "
            f"below {MIN_REQUEST_BYTES}: use a smaller window"
        )
    payload_bytes = _int(
        c, "payload_bytes", "cluster", lo=1 << 16, hi=1 << 50, default=DEFAULT_PAYLOAD_BYTES
    )
    sync = c.get("synchronous", "FULL")
    if sync not in _SYNCHRONOUS:
        raise ConfigError(f"cluster.synchronous must be one of {', '.join(_SYNCHRONOUS)}")
    keys = base / _str(c, "keys", "cluster", default="keys")
    founders = base / _str(c, "founders", "cluster") if "founders" in c else None
    params = base / _str(c, "params", "cluster") if "params" in c else None
    fr = _table(doc, "front")
    _only(
        fr,
        {"host", "port", "http_host", "http_port", "refusal_burst", "refusal_rate"},
        "[front]",
    )
    burst = _int(fr, "refusal_burst", "front", lo=1, hi=1 << 30, default=DEFAULT_BURST)
    rate = fr.get("refusal_rate", DEFAULT_RATE)
    if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 < rate <= 1e9:
        raise ConfigError(f"front.refusal_rate must be a number in (0, 1e9], not {rate!r}")
    front = Address(_str(fr, "host", "front"), _port(fr, "port", "front"))
    http = Address(
        _str(fr, "http_host", "front", default=front.host), _port(fr, "http_port", "front")
    )
    rows = doc.get("replica")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ConfigError("[[replica]]: a list of tables is required")
    replicas: list[ReplicaConfig] = []
    for row in rows:
        _only(row, {"id", "host", "port", "dial_host", "dial_port", "db"}, "[[replica]]")
        i = _int(row, "id", "replica", lo=0, hi=n - 1)
        where = f"replica {i}"
        listen = Address(_str(row, "host", where), _port(row, "port", where))
        dial = Address(
            _str(row, "dial_host", where, default=listen.host),
            _port(row, "dial_port", where, default=listen.port),
        )
        db = base / _str(row, "db", where, default=f"r{i}.sqlite3")
        replicas.append(ReplicaConfig(i, listen, dial, db))
    ids = sorted(r.id for r in replicas)
    if ids != list(range(n)):
        raise ConfigError(f"[[replica]]: ids {ids}, expected exactly 0..{n - 1}")
    listens = [(r.listen.host, r.listen.port) for r in replicas]
    listens.append((front.host, front.port))
    if len(set(listens)) != len(listens) and all(port for _h, port in listens):
        raise ConfigError("two processes listen on the same host and port")
    if len({r.db for r in replicas}) != n:
        raise ConfigError("two replicas share a database file")
    return ClusterConfig(
        n=n,
        f=f,
        batch_size=batch,
        batch_window_ms=window,
        clients=clients,
        base_timeout_ms=timeout,
        checkpoint_k=k,
        watermark_window=wm,
        synchronous=str(sync),
        keys=keys,
        front=front,
        http=http,
        replicas=tuple(sorted(replicas, key=lambda r: r.id)),
        founders=founders,
        path=path,
        params=params,
        community=str(community_id),
        payload_bytes=payload_bytes,
        max_frame_bytes=frame,
        refusal_burst=burst,
        refusal_rate=float(rate),
    )


def _only(table: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(table) - allowed)
    if extra:
        raise ConfigError(f"{where}: unknown key {extra[0]!r}")


def _table(doc: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    t = doc.get(name)
    if not isinstance(t, dict):
        raise ConfigError(f"[{name}]: a table is required")
    return t


def _int(
    t: Mapping[str, Any], key: str, where: str, *, lo: int, hi: int, default: int | None = None
) -> int:
    v = t.get(key, default)
    if v is None:
        raise ConfigError(f"{where}.{key} is required")
    if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
        raise ConfigError(f"{where}.{key} must be an integer in {lo}..{hi}, not {v!r}")
    return v


def _port(t: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    return _int(t, key, where, lo=0, hi=_MAX_PORT, default=default)


def _str(t: Mapping[str, Any], key: str, where: str, default: str | None = None) -> str:
    v = t.get(key, default)
    if v is None:
        raise ConfigError(f"{where}.{key} is required")
    if not isinstance(v, str) or not 0 < len(v) <= 4096 or "\x00" in v or '"' in v or "\\" in v:
        raise ConfigError(f"{where}.{key} must be a non-empty plain string, not {v!r}")
    return v
