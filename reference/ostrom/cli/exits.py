"""Exit codes and the one error boundary of the ``ostrom`` command.

Every subcommand ends with one of the codes of ``EXIT_CODES`` (docs/cli.md is generated
from the table): 0 as expected, 1 a property or a regression failed, 2 bad input, 3 the
tools failed, 130 interrupted.  A subcommand reports bad input by raising ``BadInput``
(or one of the input errors of ``INPUT_ERRORS``) and a failure of TLC, Java or a spec by
raising ``ToolError``; ``run`` turns every exception into one line on stderr and its
code, so no input reaches the user as a Python traceback.  An exception that is none of
these is a bug of ostrom: it is reported as ``internal error`` with exit 3 (and the
traceback when ``OSTROM_DEBUG`` is set), and the fuzz tests of property_tests/cli/test_cli_*
fail on it.

SIGTERM (what a CI timeout sends) is turned into ``Terminated`` in the main thread, so
that the ``finally`` blocks run and ``ostrom.children`` stops every process the command
started (a TLC JVM, a conformance driver) instead of leaving it orphaned.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from types import FrameType
from typing import IO, Any, Final

import click

from ostrom import children
from ostrom.protocol.params import ParamError

__all__ = [
    "EXIT_CODES",
    "INPUT_ERRORS",
    "BadInput",
    "ExitCode",
    "ExitInfo",
    "Terminated",
    "ToolError",
    "run",
]


class ExitCode(IntEnum):
    """The exit codes of every ``ostrom`` subcommand (docs/cli.md)."""

    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    TOOL_ERROR = 3
    INTERRUPTED = 130
    TERMINATED = 143


@dataclass(frozen=True)
class ExitInfo:
    code: ExitCode
    meaning: str


#: The one table of exit codes: ``ostrom docs`` writes docs/cli.md's from it.
EXIT_CODES: Final = (
    ExitInfo(ExitCode.OK, "as expected: every check passed, the command did its job"),
    ExitInfo(
        ExitCode.FAILED,
        "a property or a regression failed: a model row not as the manifest expects, a "
        "vector failed, a log rejected, a theorem refuted, generated files not current",
    ),
    ExitInfo(
        ExitCode.BAD_INPUT,
        "bad input: an option or a file that is not what the command takes (the message "
        "names it); nothing was run and nothing written",
    ),
    ExitInfo(
        ExitCode.TOOL_ERROR,
        "the tools failed: Java or TLC missing or crashed, a spec that does not parse, a "
        "run that hit its --timeout, or an internal error of ostrom (a bug: please report)",
    ),
    ExitInfo(ExitCode.INTERRUPTED, "interrupted (Ctrl-C); the processes it started are stopped"),
    ExitInfo(ExitCode.TERMINATED, "terminated (SIGTERM); the processes it started are stopped"),
)


class BadInput(click.ClickException):
    """Bad input: one line ``error: ...`` on stderr, exit 2."""

    exit_code = ExitCode.BAD_INPUT

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class ToolError(click.ClickException):
    """TLC, Java or a spec failed: one line ``error: ...`` on stderr, exit 3."""

    exit_code = ExitCode.TOOL_ERROR

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class Terminated(BaseException):
    """SIGTERM arrived (raised in the main thread by ``run``'s handler)."""


#: Exceptions that only ever mean bad input, wherever they come from.
INPUT_ERRORS: Final[tuple[type[BaseException], ...]] = (ParamError,)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _internal(exc: BaseException) -> int:
    if os.environ.get("OSTROM_DEBUG"):
        traceback.print_exception(exc)
    what = f"{type(exc).__name__}: {exc}"
    if len(what) > 300:
        what = what[:300] + "…"
    click.echo(
        f"internal error: {what} (a bug of ostrom, not of the input's author; "
        "OSTROM_DEBUG=1 shows the traceback)",
        err=True,
    )
    return ExitCode.TOOL_ERROR


def run(body: Callable[[], Any]) -> int:
    """Run ``body`` (the command group, not in standalone mode) and return its exit code."""
    in_main = sys.modules.get("threading") is not None and _main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if in_main else None
    code: int
    try:
        rv = body()
        code = rv if isinstance(rv, int) and not isinstance(rv, bool) else ExitCode.OK
    except SystemExit as exc:
        code = _code_of(exc.code)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:
        exc.show()
        code = exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("interrupted", err=True)
        code = ExitCode.INTERRUPTED
    except Terminated:
        click.echo("terminated", err=True)
        code = ExitCode.TERMINATED
    except BrokenPipeError:
        # the reader went away (`ostrom properties | head`): nothing more to say
        _quiet_stdout()
        code = ExitCode.OK
    except INPUT_ERRORS as exc:
        click.echo(f"error: {exc}", err=True)
        code = ExitCode.BAD_INPUT
    except RecursionError as exc:
        code = _internal(exc)
    except Exception as exc:
        code = _internal(exc)
    finally:
        children.stop_all()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return code


def _code_of(value: object) -> int:
    if value is None:
        return ExitCode.OK
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    click.echo(str(value), err=True)
    return ExitCode.FAILED


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _quiet_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so that the interpreter's final
    flush does not raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
