"""The scale-out modes of ``ostrom check``: ``--distributed`` and ``--simulate``.

Their options, the checks of how they combine (a bad combination is one line and exit 2,
before anything runs), the simulation table, and what a remote worker must run.  The TLC
drivers are verify/tlc/distcheck.py (with distributed.py) and verify/tlc/simulate.py;
verify/commands/check.py only dispatches to them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import click
from click.core import ParameterSource
from rich.table import Table

from ostrom.cli.exits import BadInput
from ostrom.verify.tlc.distributed import (
    DEFAULT_PORT,
    LOOPBACK,
    MAX_WORKERS,
    DistributedSetup,
    worker_command,
)
from ostrom.verify.tlc.runner import RowResult
from ostrom.verify.tlc.simulate import DEFAULT_DEPTH, DEFAULT_SEED, DEFAULT_TRACES, SimRow

__all__ = ["Simulate", "mode", "on_ready_printer", "options", "simulation_table"]

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_LOCAL_WORKERS: Final = 2
MAX_TRACES: Final = 10**9
MAX_DEPTH: Final = 10**6
_JAVA_LONG: Final = 2**63 - 1


@dataclass(frozen=True)
class Simulate:
    """``--simulate``: N random behaviours of up to ``depth`` steps from ``seed``."""

    traces: int
    depth: int
    seed: int


def options(f: F) -> F:
    """The scale-out options of ``ostrom check`` (applied to the command)."""
    decorators = [
        click.option(
            "--distributed",
            "distributed",
            type=int,
            default=None,
            metavar="N",
            help="Run each model on TLC's distributed mode: a TLCServer and N TLCWorker "
            f"processes on this machine (e.g. {DEFAULT_LOCAL_WORKERS}, at most "
            f"{MAX_WORKERS}), over RMI on loopback; 0 starts the server only and prints "
            "the command workers on other machines must run (with --distributed-host). "
            "Same verdict and state counts as a single-machine run; but the counterexample is "
            "the violating step only, temporal properties are not checked, action "
            "properties only on steps into new states, and each witness gets a distributed "
            "run of its own (docs/checking.md, Scale-out).",
        ),
        click.option(
            "--distributed-host",
            "distributed_host",
            metavar="HOST",
            default=None,
            help="With --distributed: the name or address of this machine as workers on "
            f"other machines reach it (default {LOOPBACK}: local workers only).",
        ),
        click.option(
            "--distributed-port",
            "distributed_port",
            type=int,
            default=None,
            metavar="PORT",
            help="With --distributed: the TLC server's RMI registry port (default: a free "
            f"port on loopback, TLC's {DEFAULT_PORT} with --distributed-host).",
        ),
        click.option(
            "--simulate",
            is_flag=True,
            help="Check by TLC's random simulation instead (models too large to exhaust): "
            "--traces random behaviours of up to --depth steps from --seed, each state "
            "checked against the invariants and each behaviour against the properties. A "
            "violation is reported as in the normal mode; no violation proves nothing, so "
            "the row says 'simulated', not 'pass'. Witnesses are not checked.",
        ),
        click.option(
            "--traces",
            type=int,
            default=None,
            metavar="N",
            help=f"With --simulate: behaviours to generate (default {DEFAULT_TRACES:,}).",
        ),
        click.option(
            "--depth",
            type=int,
            default=None,
            metavar="D",
            help=f"With --simulate: steps per behaviour at most (default {DEFAULT_DEPTH}).",
        ),
        click.option(
            "--seed",
            type=int,
            default=None,
            metavar="S",
            help=f"With --simulate: TLC's random seed (default {DEFAULT_SEED}: the same "
            "options give the same behaviours and result).",
        ),
    ]
    for decorator in reversed(decorators):
        f = decorator(f)
    return f


def _given(ctx: click.Context, name: str) -> bool:
    return ctx.get_parameter_source(name) not in (ParameterSource.DEFAULT, None)


def _in_range(option: str, value: int, lo: int, hi: int) -> int:
    if not lo <= value <= hi:
        raise BadInput(f"{option} takes a whole number in [{lo:,}, {hi:,}], got {value}")
    return value


def mode(ctx: click.Context, params: dict[str, Any]) -> DistributedSetup | Simulate | None:
    """The mode the options ask for (None: the normal one), or ``BadInput`` naming the
    first option that does not fit: checked before Java is looked for."""
    distributed: int | None = params["distributed"]
    simulate: bool = params["simulate"]
    sim_only = [o for o in ("traces", "depth", "seed") if params[o] is not None]
    dist_only = [o for o in ("distributed_host", "distributed_port") if params[o] is not None]
    flag = {"traces": "--traces", "depth": "--depth", "seed": "--seed",
            "distributed_host": "--distributed-host", "distributed_port": "--distributed-port",
            "record": "--record", "witness_traces": "--witness-traces", "jobs": "--jobs",
            "workers": "--workers"}  # fmt: skip
    if distributed is not None and simulate:
        raise BadInput("--distributed and --simulate do not combine: choose one")
    if sim_only and not simulate:
        raise BadInput(f"{flag[sim_only[0]]} is an option of --simulate")
    if dist_only and distributed is None:
        raise BadInput(f"{flag[dist_only[0]]} is an option of --distributed")
    if distributed is None and not simulate:
        return None
    name = "--simulate" if simulate else "--distributed"
    for opt in ("record", "witness_traces"):
        if params[opt]:
            why = {
                "record": "it records single-machine figures: run without it",
                "witness_traces": "its traces need the normal mode",
            }[opt]
            raise BadInput(f"{flag[opt]} does not combine with {name} ({why})")
    for opt in ("jobs", "workers"):
        if _given(ctx, opt):
            why = (
                "its runs go one at a time"
                if opt == "jobs"
                else "a simulation runs one TLC worker, so that a seed repeats"
                if simulate
                else "set the worker processes with --distributed N"
            )
            raise BadInput(f"{flag[opt]} does not combine with {name} ({why})")
    if simulate:

        def given(name: str, default: int) -> int:
            value: int | None = params[name]
            return default if value is None else value

        return Simulate(
            traces=_in_range("--traces", given("traces", DEFAULT_TRACES), 1, MAX_TRACES),
            depth=_in_range("--depth", given("depth", DEFAULT_DEPTH), 1, MAX_DEPTH),
            seed=_in_range("--seed", given("seed", DEFAULT_SEED), -_JAVA_LONG - 1, _JAVA_LONG),
        )
    assert distributed is not None
    workers = _in_range("--distributed", distributed, 0, MAX_WORKERS)
    host: str = LOOPBACK if params["distributed_host"] is None else params["distributed_host"]
    if not host.strip() or any(c.isspace() for c in host) or host.startswith("-"):
        raise BadInput(f"--distributed-host takes a host name or address, got {host!r}")
    port = params["distributed_port"]
    if port is not None:
        _in_range("--distributed-port", port, 1024, 65535)
    elif host != LOOPBACK:
        port = DEFAULT_PORT  # a fixed port: workers elsewhere must know it, run after run
    return DistributedSetup(workers=workers, host=host, port=port)


def on_ready_printer(
    setup: DistributedSetup, jar: Path, echo: Callable[[str], None]
) -> Callable[[str, int], None]:
    """The ``on_ready`` of a distributed check: with workers of other machines, the first
    time the exact command they must run and what to open, then one line per run."""
    told = [False]

    def on_ready(label: str, port: int) -> None:
        if not setup.remote:
            return
        if told[0]:
            echo(f"distributed: {label}: TLC server ready at {setup.host}:{port}")
            return
        told[0] = True
        cmd = worker_command("java", jar.name, setup.host, port, own_host="WORKER_ADDRESS",
                             threads=None)  # fmt: skip
        echo(
            f"distributed: {label}: TLC server ready at {setup.host}:{port}; on each worker "
            f"machine (the same {jar.name} and Java), run:\n"
            f"  while {' '.join(cmd)}; do sleep 1; done\n"
            "with WORKER_ADDRESS the worker machine's own address as the server reaches it "
            "(the loop makes it serve run after run: every model and witness is a run of its "
            f"own). Open TCP port {port} on this machine, and let the machines reach each "
            "other on any TCP port: Java RMI calls back on ephemeral ports both ways."
        )

    return on_ready


def simulation_table(rows: list[RowResult]) -> Table:
    """``ostrom check --simulate``'s table: behaviours and states generated instead of
    distinct states and depth (a simulation counts neither)."""
    table = Table(
        title="TLC models, simulated (random behaviours: no violation proves nothing)",
        title_justify="left",
    )
    for col, justify in (("model", "left"), ("expected", "left"), ("got", "left"),
                         ("traces", "right"), ("states generated", "right"),
                         ("seconds", "right"), ("ok", "center")):  # fmt: skip
        table.add_column(
            col, justify=justify, no_wrap=True,  # type: ignore[arg-type]
            overflow="ellipsis" if col == "got" else "fold",
            max_width=40 if col == "got" else None,
        )  # fmt: skip
    for row in rows:
        traces = row.traces if isinstance(row, SimRow) else None
        table.add_row(
            row.name,
            row.expected,
            row.got,
            f"{traces:,}" if traces is not None else "-",
            f"{row.total_states:,}" if row.total_states is not None else "-",
            f"{row.seconds:.1f}",
            "[green]ok[/green]" if row.ok else "[red]FAIL[/red]",
        )
    return table
