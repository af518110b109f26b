"""``ostrom simulate --node-setup DIR`` and ``--target URL``: the evaluation model against a
live node or cluster.

The evaluation model (``simulation.engine`` and the worlds) plays against a
``simulation.protocol.Remote`` it is given; this module is the command's half, and the one
place of the evaluation model that talks to the product's client: ``NodeRemote`` signs each
command as its agent (or as the run's operator for ``tick``) and posts it with
``ostrom.client.Client``, and ``write_node_setup`` writes the founders and parameter files
the node must be started with. The run keeps a shadow community and stops at the first
observation the node answers differently (``Divergence``, exit 1): a run against a node *is*
a check of the node.

The agents' keys are derived from the run's seed and a secret (``consensus.crypto.derive_key``):
``--node-setup DIR`` draws the secret from the OS (``DIR/run.key``, mode 600, created new)
and ``--target`` reads it from the same DIR, so a node set up for seed S accepts exactly
the run of seed S played by whoever holds DIR.  Keys from the seed alone (before) were
anyone's: the seed is small and printed, and a node started from the files accepted every
founder's command from anyone who derived them (docs/security.md).  Real agents generate
their keys (``ostrom keygen``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click
import httpx

from ostrom.client import Client, ClientError
from ostrom.consensus.crypto import derive_key
from ostrom.protocol.commands import Observation
from ostrom.service.gate import OPERATOR_OPS
from ostrom.service.identity import create_file, public_hex
from ostrom.simulation.commands import simulate_command, single_config
from ostrom.simulation.config import ConfigError, SimConfig, load_config
from ostrom.simulation.protocol import Divergence, Run, node_setup
from ostrom.simulation.result import RunResult

#: The principal that signs the run's ticks (an operator of the node's founders file).
OPERATOR = "sim-operator"
#: What the agents' keys are derived from, beside the secret and the seed.
KEY_DOMAIN = b"ostrom-simulate-target/2|"
#: The file of a node setup that holds the run's secret (64 hex digits, mode 600).
RUN_KEY = "run.key"


def agent_key_seed(seed: int, secret: bytes) -> bytes:
    """The bytes every key of the run of ``seed`` is derived from: the setup's secret
    (``RUN_KEY``) makes them unknown to anyone who knows only the seed."""
    return KEY_DOMAIN + secret + b"|" + str(seed).encode()


def read_run_key(setup: Path) -> bytes:
    """The secret of the node setup in ``setup`` (``ConfigError`` if it has none)."""
    path = setup / RUN_KEY
    try:
        text = path.read_text(encoding="ascii").strip()
        secret = bytes.fromhex(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not 64 hex digits"
        raise ConfigError(f"{path}: no run key ({why}): write one with --node-setup") from None
    if len(secret) != 32:
        raise ConfigError(f"{path}: a run key is 64 hex digits")
    return secret


def founders_toml(cfg: SimConfig, seed: int, secret: bytes) -> str:
    """The founders file (service/founders.py's format) of the run of ``seed``."""
    _, members = node_setup(cfg, seed)
    lines = ["# ostrom simulate --node-setup: the run's agents as founders, and its operator", ""]
    for m in members:
        key = public_hex(derive_key(agent_key_seed(seed, secret), m.id))
        lines += [
            "[[founder]]",
            f"id = {json.dumps(m.id)}",
            f"tier = {m.tier}",
            f'public_key = "{key}"',
            f"reputation = {m.reputation!r}",
            f"evidence = {m.evidence!r}",
            "",
        ]
    op_key = public_hex(derive_key(agent_key_seed(seed, secret), OPERATOR))
    lines += ["[[operator]]", f'id = "{OPERATOR}"', f'public_key = "{op_key}"', ""]
    return "\n".join(lines)


def params_toml(cfg: SimConfig, seed: int) -> str:
    """The parameter file of the run of ``seed`` (every parameter, explicitly)."""
    params, _ = node_setup(cfg, seed)
    lines = ["# ostrom simulate --node-setup: the run's protocol parameters", ""]
    for name, value in params.to_dict().items():
        lines.append(f"{name} = {json.dumps(value)}")  # JSON scalars and lists are TOML
    return "\n".join(lines) + "\n"


def write_node_setup(cfg: SimConfig, seed: int, out: Path) -> list[Path]:
    """Write ``run.key`` (a fresh secret), ``founders.toml`` and ``params.toml`` for the
    node into ``out``; each file new (``FileExistsError``: a setup is never overwritten)."""
    out.mkdir(parents=True, exist_ok=True)
    secret = os.urandom(32)
    create_file(out / RUN_KEY, (secret.hex() + "\n").encode("ascii"))
    written = [out / RUN_KEY]
    for name, text in (
        ("founders.toml", founders_toml(cfg, seed, secret)),
        ("params.toml", params_toml(cfg, seed)),
    ):
        path = out / name
        create_file(path, text.encode("utf-8"), 0o644)
        written.append(path)
    return written


class NodeRemote:
    """``simulation.protocol.Remote`` over HTTP: one signing ``Client`` per principal,
    sharing one connection pool."""

    def __init__(self, url: str, seed: int, secret: bytes, *, timeout: float = 30.0) -> None:
        self.url = url
        self.seed = seed
        self.secret = secret
        self.timeout = timeout
        self._transport = httpx.HTTPTransport(retries=0)
        self._clients: dict[str, Client] = {}
        self.sent = 0

    def _client(self, principal: str) -> Client:
        c = self._clients.get(principal)
        if c is None:
            key = derive_key(agent_key_seed(self.seed, self.secret), principal)
            # seq 1: the node (or cluster) is fresh for this run, and a cluster's front
            # has no read endpoints to resync from
            c = Client(
                self.url, principal, key, seq=1, timeout=self.timeout, transport=self._transport
            )
            self._clients[principal] = c
        return c

    def apply(self, command: dict[str, Any]) -> Observation:
        op = command.get("op")
        agent = command.get("agent")
        principal = OPERATOR if isinstance(op, str) and op in OPERATOR_OPS else agent
        if not isinstance(principal, str):
            raise Divergence(f"{json.dumps(command)}: no agent to sign it")
        body = self._client(principal).send(command)
        self.sent += 1
        return {"result": body["result"], "events": body["events"]}

    def close(self) -> None:
        for c in self._clients.values():
            c.close()
        self._transport.close()


def run_target(
    config_file: Path | None,
    seed: int,
    url: str,
    setup: Path,
    *,
    scenario: str | None,
    agents: int | None,
    rounds: int | None,
    quiet: bool,
    policy: str | None = None,
) -> RunResult:
    """The run of ``seed`` against the node at ``url`` (``ConfigError`` for a bad setup)."""
    base = load_config(config_file) if config_file else SimConfig()
    cfg = single_config(base, scenario=scenario, agents=agents, rounds=rounds, policy=policy)
    try:
        node_setup(cfg, seed)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    remote = NodeRemote(url, seed, read_run_key(setup))
    try:

        def progress(done: int, total: int) -> None:
            if not quiet:
                click.echo(f"\rround {done}/{total}, {remote.sent} commands", nl=False, err=True)

        result = Run(cfg, seed, remote).run(progress)
        if not quiet:
            click.echo("", err=True)
        return result
    finally:
        remote.close()


def node_setup_command(config_file: Path | None, seed: int, out: Path, **options: Any) -> None:
    """``--node-setup DIR``: write the node's files and say how to start it."""
    base = load_config(config_file) if config_file else SimConfig()
    cfg = single_config(base, **options)
    try:
        written = write_node_setup(cfg, seed, out)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:  # a setup already there (never overwritten), or unwritable
        raise ConfigError(f"{exc.filename or out}: {exc.strerror or exc}") from None
    for p in written:
        click.echo(f"wrote {p}", err=True)
    click.echo(
        f"start the node with:\n  ostrom serve --founders {out / 'founders.toml'} "
        f"--params {out / 'params.toml'} --db {out / 'node.db'}\n"
        f"then: ostrom simulate{f' --config {config_file}' if config_file else ''} "
        f"--seed-start {seed} --target http://127.0.0.1:8000 --node-setup {out}",
        err=True,
    )


def extend_simulate(cmd: click.Command) -> click.Command:
    """``simulate`` with ``--node-setup`` and ``--target`` (the simulation package cannot
    import the client, so the CLI adds them around its command)."""
    inner = cmd.callback
    assert inner is not None
    cmd.params += [
        click.Option(
            ["--target"],
            metavar="URL",
            default=None,
            help="Play the run against a live node or cluster at URL (one seed, the "
            "protocol only, feedback_noise = 0): every observation must equal the shadow "
            "community's.  Start the node from --node-setup's files first, and give the "
            "same --node-setup DIR (its run.key signs the run).",
        ),
        click.Option(
            ["--node-setup"],
            type=click.Path(file_okay=False, path_type=Path),
            default=None,
            help="Write run.key (a fresh secret), founders.toml and params.toml for a node "
            "that --target can play this configuration and --seed-start against, then "
            "exit (an existing setup is never overwritten).  With --target: the setup "
            "whose run.key signs the run.",
        ),
    ]

    def callback(**kw: Any) -> Any:
        target, setup = kw.pop("target"), kw.pop("node_setup")
        if target is None and setup is None:
            return inner(**kw)
        try:
            if target is not None and setup is None:
                raise ConfigError("--target needs --node-setup DIR: the setup the node runs")
            if kw["experiment"] or kw["governance"] or kw["ablations"] or kw["feedback"]:
                raise ConfigError(
                    "--target/--node-setup run the protocol itself: no --experiment, "
                    "--governance, --ablation or --feedback"
                )
            if kw["seeds"] not in (None, 1):
                raise ConfigError("--target/--node-setup: one seed (--seed-start)")
            options = {
                "scenario": kw["scenario"],
                "agents": kw["agents"],
                "rounds": kw["rounds"],
                "policy": kw["policy"],
            }
            assert setup is not None
            if target is None:
                node_setup_command(kw["config_file"], kw["seed_start"], setup, **options)
                return None
            result = run_target(
                kw["config_file"], kw["seed_start"], target, setup, quiet=kw["quiet"], **options
            )
        except ConfigError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except (Divergence, ClientError) as exc:
            click.echo(f"\nerror: {exc}", err=True)
            sys.exit(1)
        if kw["as_json"]:
            click.echo(json.dumps({"final": result.final, "extras": result.extras}, indent=2))
        else:
            click.echo(f"run of seed {result.seed} against {target}: every observation matched")
            print_summary_one(result)
        return None

    cmd.callback = callback
    return cmd


def print_summary_one(result: RunResult) -> None:
    """The final metrics of the run (one seed)."""
    for name, value in sorted(result.final.items()):
        click.echo(f"  {name:<12} {value:.4f}")


#: ``ostrom simulate``, with ``--node-setup`` and ``--target`` (cli/tools.py names it).
simulate = extend_simulate(simulate_command)

__all__ = [
    "OPERATOR",
    "NodeRemote",
    "extend_simulate",
    "founders_toml",
    "params_toml",
    "run_target",
    "simulate",
    "write_node_setup",
]
