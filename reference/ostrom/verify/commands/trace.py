"""``ostrom validate-trace``: an implementation's log checked against the TLA+ spec of its layer."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ostrom.cli.options import SECONDS

__all__ = ["validate_trace"]


@click.command(name="validate-trace")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON on stdout.")
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the generated TLA+ modules, the cfg and TLC's output in this directory.",
)
@click.option(
    "--timeout",
    type=SECONDS,
    default=None,
    help="Give up (exit 3) if TLC runs longer than this many seconds, in (0, 1e6] "
    "(default: no limit).",
)
def validate_trace(file: Path, as_json: bool, keep: Path | None, timeout: float | None) -> None:
    """Check an ostrom-trace/1 log against the TLA+ spec of its layer.

    The header's layer picks the trace spec: lifecycle (spec/LifecycleTrace.tla over
    Lifecycle.tla), community (spec/CommunityTrace.tla), sanctions
    (spec/SanctionsTrace.tla over Sanctions.tla) or pbft (spec/PBFTReplicaTrace.tla).
    The log (a header, then {command, result, state, events?} per line: python -m
    ostrom.conformance.driver --log FILE writes one) is compiled into a TLA+ module that the trace
    spec walks with a cursor; TLC looks for a behaviour of the spec that takes every logged
    command with its logged arguments and result and reaches every logged state.  The
    first step no behaviour gets past is reported with the spec step expected and, for a
    state mismatch, the fields that differ.  Progress goes to stderr.

    Exit status (docs/cli.md): 0 accepted, 1 rejected, 2 unusable input (an unreadable
    log, a log with no step, parameters the spec cannot express, e.g. numbers that would
    overflow TLC's integers), 3 TLC failed or ran past --timeout.

    \b
    Examples:
      python -m ostrom.conformance.driver --log run.jsonl < session.jsonl
      ostrom validate-trace run.jsonl
      ostrom validate-trace --json --keep /tmp/trace run.jsonl
    """
    from ostrom.verify.trace import validate as trace

    sys.exit(trace.main(file, as_json=as_json, keep=keep, timeout=timeout))
