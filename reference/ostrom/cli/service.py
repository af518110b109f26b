"""``ostrom serve``, ``ostrom log export`` and ``ostrom keygen``: the node from the shell.

The web stack (Starlette, uvicorn) is imported inside ``serve`` only, so that ``log
export``, ``keygen`` and every other command start without loading it.  Every bad
argument or file is a one-line error and exit 2, with nothing created.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from ostrom.cli.options import REFUSAL_RATE, SECONDS, Finite
from ostrom.protocol.params import DEFAULTS, ParamError, Params
from ostrom.service.budget import DEFAULT_BURST, DEFAULT_RATE, RefusalBudget
from ostrom.service.founders import FoundersError, load_founders
from ostrom.service.gate import Gate, Setup
from ostrom.service.identity import (
    KeyFileError,
    check_private,
    load_key,
    new_key,
    public_hex,
    save_key,
)
from ostrom.service.limits import DEFAULT_LIMITS, Limits
from ostrom.service.readpool import DEFAULT_MAX_READS, DEFAULT_READ_QUEUE, DEFAULT_READ_SHARE
from ostrom.service.store import StoreError

__all__ = ["export", "keygen", "log", "serve"]

#: The node's own operator id (it signs the ticks of ``--tick-interval``).
_NODE_OPERATOR = "node"


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.command()
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("node.db"),
    show_default=True,
    help="The node's SQLite database; created (with --params and --founders) if missing.",
)
@click.option(
    "--params",
    "params_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Parameter file (TOML), loaded as check-params loads it; default: the defaults. "
    "An existing database keeps its own parameters (a different file is an error).",
)
@click.option(
    "--founders",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Founders and operators (TOML: [[founder]] id, tier, public_key, ...; [[operator]] "
    "id, public_key).  Without it: no founders, so nobody can review (docs/service.md); "
    "--demo DIR writes three.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option(
    "--fsync",
    type=click.Choice(["on", "off"]),
    default="on",
    show_default=True,
    help="off: SQLite synchronous=OFF (benchmarks, tests): a power loss may lose replies.",
)
@click.option(
    "--snapshot-every",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Write a snapshot of the whole state at most every K commands (a start restores "
    "the latest); see --snapshot-ratio.",
)
@click.option(
    "--snapshot-ratio",
    type=Finite(0.0, 1e6),  # nan or inf: never another snapshot
    default=1.0,
    show_default=True,
    help="A snapshot also waits until the log since the last one is R times that one's size "
    "(a snapshot's cost grows with the state: this keeps its share of each command's cost "
    "constant). 0: exactly every K commands.",
)
@click.option(
    "--verify",
    is_flag=True,
    help="At start, replay the whole log from the header and check every logged observation "
    "and every snapshot.",
)
@click.option(
    "--tick-interval",
    type=SECONDS,  # nan passed FloatRange and reached the ticker's sleep
    default=None,
    help="Tick by itself every S seconds, signed by the node's operator key (default: off; "
    "ticks then come from an operator's signed tick commands).",
)
@click.option(
    "--operator-key",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The node's operator key file (default: DB.operator.key, created with the DB).",
)
@click.option(
    "--demo",
    "demo_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A community that works at once: write three founders (alice, bob, carol) with "
    "their keys, a founders file and parameters into DIR (kept: the same DIR serves the "
    "same community again), tick every 2 s, and print how to connect three MCP agents "
    "(docs/agents.md).  Sets --db, --founders and --params itself.",
)
@click.option(
    "--header-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_LIMITS.header_timeout,
    show_default=True,
    help="Seconds a client has for a request's line and headers (then it is disconnected).",
)
@click.option(
    "--body-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=DEFAULT_LIMITS.body_timeout,
    show_default=True,
    help="Seconds a client has for a request's body, from the end of its headers.",
)
@click.option(
    "--max-connections",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMITS.max_connections,
    show_default=True,
    help="Open connections at most (lowered to the descriptor limit): past it, the "
    "connection that has waited longest for its request is closed (docs/security.md).",
)
@click.option(
    "--max-reads",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_READS,
    show_default=True,
    help="Reads of the file (/log, /search, /slots/{slot}, content, one artifact) run at "
    "once, each on a thread of their own pool, never the writer's (docs/security.md).",
)
@click.option(
    "--read-queue",
    type=click.IntRange(min=0),
    default=DEFAULT_READ_QUEUE,
    show_default=True,
    help="Reads of the file waiting for one of those threads; past it a read is answered "
    "503 busy with Retry-After at once.",
)
@click.option(
    "--read-share",
    type=click.FloatRange(min=0, max=64, min_open=True),
    default=DEFAULT_READ_SHARE,
    show_default=True,
    help="CPU the reads of the file may use, summed over their threads, as a share of the "
    "time (1: one core's worth); past it a read waits for its turn before it starts.",
)
@click.option(
    "--refusal-burst",
    type=click.IntRange(min=1),
    default=DEFAULT_BURST,
    show_default=True,
    help="Refused commands one address, or one key, may send at once; past it the node "
    "answers 429 too_many_refusals before reading the command (docs/security.md).",
)
@click.option(
    "--refusal-rate",
    type=REFUSAL_RATE,  # nan passed FloatRange: RefusalBudget raised, exit 3
    default=DEFAULT_RATE,
    show_default=True,
    help="Refused commands per second an address's or a key's budget refills by.",
)
def serve(
    db: Path,
    params_file: Path | None,
    founders: Path | None,
    host: str,
    port: int,
    fsync: str,
    snapshot_every: int,
    snapshot_ratio: float,
    verify: bool,
    tick_interval: float | None,
    operator_key: Path | None,
    demo_dir: Path | None,
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
    max_reads: int,
    read_queue: int,
    read_share: float,
    refusal_burst: int,
    refusal_rate: float,
) -> None:
    """Run one node: signed commands in over HTTP, the Community applies them, the log out.

    Every command is an envelope signed by its agent (Ed25519, per-agent sequence
    numbers); a reply is sent only after the command and its observation are durable in
    the SQLite log.  On start the state is restored from the latest snapshot and the log
    after it is replayed (--verify: the whole log, every observation and snapshot
    compared).  API: GET /openapi.json, and docs/service.md.

    \b
    Examples:
      ostrom keygen alice.key                    # prints alice's public key
      ostrom serve --founders founders.toml --port 8000
      ostrom serve --db run.db --fsync off --tick-interval 1
      ostrom serve --demo demo                   # three founders; prints the MCP setup
    """
    import uvicorn  # here, not at the top: the other commands do not pay for loading it

    from ostrom.cli.demo import DEMO_TICK, DemoError, connect_text, prepare
    from ostrom.service.app import create_app
    from ostrom.service.node import Node, Operator
    from ostrom.service.readpool import ReadPool
    from ostrom.service.server import config as server_config

    try:
        limits = Limits(header_timeout, body_timeout, max_connections)
        reads = ReadPool(max_reads, read_queue, read_share)  # nan passes FloatRange
    except ValueError as exc:
        _fail(str(exc))
    demo = None
    if demo_dir is not None:
        ctx = click.get_current_context()
        given = [
            f"--{name.replace('_file', '')}"
            for name in ("db", "params_file", "founders")
            if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT
        ]
        if given:
            _fail(f"--demo sets {', '.join(given)} itself (give only DIR)")
        try:
            demo = prepare(demo_dir)
        except DemoError as exc:
            _fail(str(exc))
        db, params_file, founders = demo.db, demo.params, demo.founders
        tick_interval = tick_interval or DEMO_TICK

    params = None
    if params_file is not None:
        try:
            params = Params.from_toml(params_file)
        except ParamError as exc:
            _fail(str(exc))
    setup = None
    if founders is not None:
        try:
            setup = load_founders(founders)
        except FoundersError as exc:
            _fail(str(exc))
    key_path = operator_key or db.with_name(db.name + ".operator.key")
    creating = not db.exists()
    try:
        if key_path.exists() or key_path.is_symlink():
            if creating:  # adopted as the new node's operator: it must be this user's own
                check_private(key_path)
            key = load_key(key_path)
        elif creating:
            key = new_key()
        else:
            key = None
    except KeyFileError as exc:
        _fail(str(exc))
    if creating:
        assert key is not None
        base = setup or Setup()
        if _NODE_OPERATOR in base.operators or _NODE_OPERATOR in {
            f.member.id for f in base.founders
        }:
            _fail(f"the id {_NODE_OPERATOR!r} is the node's own operator; rename it")
        setup = Setup(base.founders, {**base.operators, _NODE_OPERATOR: public_hex(key)})
        params = params or DEFAULTS
        try:  # what only the Community checks (a founder below its tier's threshold)
            Gate(params, setup)
        except ValueError as exc:
            _fail(f"the community cannot start: {exc}")
    elif setup is not None and key is not None:
        setup = Setup(setup.founders, {**setup.operators, _NODE_OPERATOR: public_hex(key)})
    # The key is saved before the database that names it is committed: a kill between
    # the two must not leave a header naming a key that was never saved (every restart
    # with the same founders file would then be refused).  A failed creation removes it.
    wrote_key = False
    if creating and key is not None and not key_path.exists():
        try:
            save_key(key, key_path)
        except OSError as exc:
            _fail(f"{key_path}: {exc.strerror or exc}")
        wrote_key = True
    try:
        node = Node.open(
            db,
            params=params,
            setup=setup,
            fsync=fsync == "on",
            verify=verify,
            snapshot_every=snapshot_every,
            snapshot_ratio=snapshot_ratio,
        )
    except StoreError as exc:
        if wrote_key:
            key_path.unlink(missing_ok=True)
        _fail(str(exc))
    if key is not None and node.gate.key_of(_NODE_OPERATOR) == public_hex(key):
        node.operator = Operator(_NODE_OPERATOR, key)
    elif tick_interval:
        node.close()
        _fail(f"--tick-interval needs the node's operator key ({key_path}) of this database")
    refusals = RefusalBudget(refusal_burst, refusal_rate)  # ADM-2
    app = create_app(node, tick_interval=tick_interval, refusals=refusals, reads=reads)
    server = uvicorn.Server(server_config(app, host=host, port=port, lifespan="on", limits=limits))
    original = server.startup

    async def startup(sockets: object = None) -> None:
        await original(sockets)  # type: ignore[arg-type]
        for s in server.servers:
            for sock in s.sockets:
                h, p = sock.getsockname()[:2]
                click.echo(
                    f"ostrom node: DB at log position {node.last_pos}; http://{h}:{p}", err=True
                )
                if demo is not None:
                    click.echo(connect_text(demo, f"http://{h}:{p}"))

    server.startup = startup  # type: ignore[method-assign]
    try:
        server.run()
    finally:
        node.close()


@click.group()
def log() -> None:
    """The node's log."""


@log.command(name="export")
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("node.db"),
    show_default=True,
    help="The node's database (read only; a running node may keep writing).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("node-trace.jsonl"),
    show_default=True,
    help="Where to write the ostrom-trace/2 community log.",
)
def export(db: Path, output: Path) -> None:
    """Write the node's log as an ostrom-trace/2 community log for validate-trace.

    The states of the trace are recomputed by replaying the logged commands on a fresh
    Community from the database's header, and each replayed observation must equal the
    logged one (else exit 1, nothing written).  Then `ostrom validate-trace FILE` checks
    the node's behaviour against spec/CommunityTrace.tla, across restarts.
    """
    from ostrom.service.export import ExportError
    from ostrom.service.export import export as run

    if not db.exists():
        _fail(f"{db}: no such database")
    try:
        n = run(db, output)
    except ExportError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(f"wrote {output}: {n} steps", err=True)


@click.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def keygen(path: Path) -> None:
    """Create an Ed25519 private key file PATH (hex, mode 600); print its public key.

    The public key goes into a founders file (public_key = "...") or a join."""
    if path.exists():
        _fail(f"{path}: exists (a key is never overwritten)")
    key = new_key()
    try:
        save_key(key, path)
    except OSError as exc:
        _fail(f"{path}: {exc.strerror or exc}")
    click.echo(public_hex(key))
