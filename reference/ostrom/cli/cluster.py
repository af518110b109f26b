"""``ostrom cluster up|status|down|front`` and ``ostrom node``: the replicated orchestrator
as processes (docs/cluster.md).

``cluster up`` writes a cluster directory (``cluster.toml``, key files) and starts N
replica processes and the HTTP front in the background; ``status`` asks each replica
for its view, last executed request and stable checkpoint (``--audit`` also checks the
stores: BFT-SAFE-1, REPL-1); ``down`` stops them.  ``ostrom node`` runs one replica in the
foreground, for a deployment that starts each process itself.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from ostrom.cli.options import REFUSAL_RATE
from ostrom.service.budget import DEFAULT_BURST, DEFAULT_RATE

if TYPE_CHECKING:
    from ostrom.cluster.config import ClusterConfig

__all__ = ["cluster", "down", "front", "node", "status", "up"]


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


@click.group()
def cluster() -> None:
    """Run the PBFT-replicated orchestrator as N processes on this machine."""


@cluster.command()
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=Path("ostrom-cluster"))
@click.option(
    "--replicas",
    "n",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="Replicas n; the cluster tolerates f = (n - 1) // 3 Byzantine ones.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 1024),
    default=16,
    show_default=True,
    help="Most commands the primary orders in one batch.",
)
@click.option(
    "--clients",
    type=click.IntRange(1, 256),
    default=8,
    show_default=True,
    help="PBFT client identities of the front: commands in flight at once.",
)
@click.option(
    "--timeout-ms",
    type=click.IntRange(10, 600_000),
    default=1000,
    show_default=True,
    help="A replica's view-change timeout (ms): how long a request may wait to execute "
    "before the replica suspects the primary.",
)
@click.option(
    "--synchronous",
    type=click.Choice(["FULL", "NORMAL", "OFF"]),
    default="FULL",
    show_default=True,
    help="SQLite's: FULL fsyncs every step before its messages leave.",
)
@click.option("--http-port", type=click.IntRange(0, 65535), default=None)
@click.option("--seed", type=int, default=None, help="Derive the keys from a seed (tests only).")
@click.option(
    "--founders",
    "founders_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The community's founders and operators (ostrom serve --founders's format); "
    "copied into DIR.  Default: four founders and an operator ops, keys in DIR/keys.",
)
@click.option(
    "--params",
    "params_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Protocol parameters (TOML, as ostrom serve --params); copied into DIR, read by "
    "every replica.  Default: the defaults.",
)
@click.option(
    "--byzantine",
    multiple=True,
    metavar="I=STRATEGY",
    help="Start replica I with a strategy of harness/byzantine.py.",
)
@click.option(
    "--refusal-burst",
    type=click.IntRange(min=1),
    default=DEFAULT_BURST,
    show_default=True,
    help="Refused commands one address, or one key, may send the front at once; past it "
    "the front answers 429 too_many_refusals before checking a signature (as ostrom serve).",
)
@click.option(
    "--refusal-rate",
    type=REFUSAL_RATE,
    default=DEFAULT_RATE,
    show_default=True,
    help="Refused commands per second an address's or a key's budget refills by.",
)
@click.option(
    "--reuse",
    is_flag=True,
    help="DIR holds a cluster already (after cluster down): start it again with its own "
    "configuration, keys and databases.  Without it such a DIR is refused (nothing in it "
    "is ever overwritten).",
)
def up(
    directory: Path,
    n: int,
    batch_size: int,
    clients: int,
    timeout_ms: int,
    synchronous: str,
    http_port: int | None,
    seed: int | None,
    founders_file: Path | None,
    params_file: Path | None,
    byzantine: tuple[str, ...],
    refusal_burst: int,
    refusal_rate: float,
    reuse: bool,
) -> None:
    """Create DIR (config and keys) and start the replicas and the front.

    A bad --founders or --params file is one line and exit 2, with nothing created.  A DIR
    that holds a cluster already is refused, unless --reuse starts that cluster again."""
    from ostrom.cluster.config import ConfigError
    from ostrom.cluster.supervisor import Cluster, create

    if (directory / "pids.json").exists():
        raise click.ClickException(f"{directory} already runs a cluster: ostrom cluster down first")
    byz: dict[int, str] = {}
    for item in byzantine:
        i, _, name = item.partition("=")
        if not i.isdigit() or not name:
            raise click.ClickException(f"--byzantine {item!r}: expected I=STRATEGY")
        byz[int(i)] = name
    if reuse:
        cfg = _existing(directory)
    else:
        try:
            cfg = create(
                directory,
                n=n,
                batch_size=batch_size,
                clients=clients,
                base_timeout_ms=timeout_ms,
                synchronous=synchronous,
                http_port=http_port,
                seed=seed,
                founders_file=founders_file,
                params_file=params_file,
                refusal_burst=refusal_burst,
                refusal_rate=refusal_rate,
            )
        except ConfigError as exc:
            _fail(str(exc))
    try:
        c = Cluster(directory, cfg)
        try:
            c.start(byz, detach=True, timeout=60)
        except (RuntimeError, TimeoutError) as exc:
            c.stop()
            raise click.ClickException(str(exc)) from None
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"cluster of {cfg.n} replicas up in {directory}; front at {c.url}")


def _existing(directory: Path) -> ClusterConfig:
    """``up --reuse``: the cluster DIR holds, as it is (an option that would shape a new
    cluster is an error: nothing of an existing cluster is rewritten)."""
    from ostrom.cluster.config import ConfigError, load

    ctx = click.get_current_context()
    shaping = [
        p.opts[0]
        for p in ctx.command.params
        if p.name not in (None, "directory", "byzantine", "reuse")
        and ctx.get_parameter_source(p.name) != click.core.ParameterSource.DEFAULT
    ]
    if shaping:
        _fail(f"--reuse starts the cluster in DIR as it is: no {', '.join(shaping)}")
    try:
        return load(directory / "cluster.toml")
    except ConfigError as exc:
        _fail(str(exc))


@cluster.command()
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=Path("ostrom-cluster"))
@click.option("--audit", is_flag=True, help="Also check the stores: BFT-SAFE-1, REPL-1.")
@click.option("--json", "as_json", is_flag=True)
def status(directory: Path, audit: bool, as_json: bool) -> None:
    """Each replica's view, last executed request and stable checkpoint."""
    from ostrom.cluster.audit import AuditError
    from ostrom.cluster.audit import audit as run_audit
    from ostrom.cluster.config import ConfigError, load
    from ostrom.cluster.supervisor import cluster_status, front_status

    try:
        cfg = load(directory / "cluster.toml")
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    st = cluster_status(cfg)
    fr = front_status(cfg)
    doc: dict[str, object] = {"replicas": st, "front": fr}
    if not as_json:
        click.echo("replica  view  primary  active  executed  stable  state")
        for i, s in st.items():
            if s is None:
                click.echo(f"r{i:<7} (not answering)")
                continue
            tag = f"  byzantine {s['byzantine']}" if s.get("byzantine") else ""
            prim, digest = f"r{s['primary']}", str(s["app_digest"])[:12]
            click.echo(
                f"r{i:<7} {s['view']:>4}  {prim:>7}  {s['active']!s:>6}"
                f"  {s['last_executed']:>8}  {s['stable_checkpoint']:>6}  {digest}{tag}"
            )
        url = f"http://{cfg.http.host}:{cfg.http.port}"
        if fr is None:
            click.echo(f"front    {url} (not answering)")
        else:
            stats = fr.get("stats", {})
            click.echo(
                f"front    {url}: {stats.get('acknowledged', 0)} commands acknowledged in "
                f"{stats.get('requests', 0)} requests, {fr.get('busy')} of "
                f"{fr.get('clients')} client identities busy, batch size {fr.get('batch_size')}"
            )
    if audit:
        honest = [
            i
            for i, s in st.items()
            if (s is not None and not s.get("byzantine"))
            or (s is None and cfg.replica(i).db.exists())
        ]
        live = {
            i: (int(s["last_executed"]), str(s["app_digest"]))
            for i, s in st.items()
            if s is not None and i in honest
        }
        try:
            report = run_audit(cfg, honest, live=live)
        except AuditError as exc:
            doc["audit"] = {"failed": str(exc)}
            click.echo(
                json.dumps(doc, indent=1, default=str) if as_json else f"AUDIT FAILED: {exc}"
            )
            sys.exit(1)
        doc["audit"] = report
        if not as_json:
            click.echo(f"audit of replicas {honest}: " + ", ".join(report["checks"]) + " hold")
    if as_json:
        click.echo(json.dumps(doc, indent=1, default=str))


@cluster.command()
@click.option("--dir", "directory", type=click.Path(path_type=Path), default=Path("ostrom-cluster"))
def down(directory: Path) -> None:
    """Stop the processes ``cluster up`` started in DIR."""
    from ostrom.cluster.supervisor import down as stop

    stopped = stop(directory)
    click.echo(f"stopped {', '.join(stopped)}" if stopped else "nothing running")


@cluster.command()
@click.option("--cluster", "config", type=click.Path(path_type=Path), required=True)
def front(config: Path) -> None:
    """Run the HTTP front in the foreground."""
    from ostrom.cluster.front import main as front_main

    sys.exit(front_main(["--cluster", str(config)]))


@click.command()
@click.option("--id", "replica_id", type=int, required=True, help="The replica id (0..n-1).")
@click.option("--cluster", "config", type=click.Path(path_type=Path), required=True)
def node(replica_id: int, config: Path) -> None:
    """Run one PBFT replica of a cluster in the foreground (SIGTERM stops it)."""
    from ostrom.cluster.replica_process import run_node

    sys.exit(run_node(str(config), replica_id))
