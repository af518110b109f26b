"""``ostrom tlc SPEC CFG [-- TLC OPTIONS]``: any spec and config, ad hoc, through the same
runner as ``ostrom check`` (staging, progress, the counterexample saved as ITF).

SPEC's directory is staged with spec/ and models/ of this tree (so a spec of one's own may
EXTEND the project's modules); ``-D Name=Value`` sets or replaces a constant of CFG
(written into the staged copy, CFG itself is not touched).  Only the TLC options that
make sense here pass, each checked: ``-simulate`` (with ``num=N``: TLC 2.15 would run for
ever without it, so a bare ``-simulate`` gets ``num=1000``), ``-depth N``, ``-seed N``,
``-coverage MINUTES``, ``-dump [dot[,colorize][,actionlabels]] FILE`` (FILE relative to
where ostrom runs), ``-workers N``, ``-fp N``, ``-deadlock``, ``-difftrace``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from ostrom import layout
from ostrom.cli.exits import BadInput, ExitCode, ToolError
from ostrom.cli.options import SECONDS
from ostrom.verify.tlc.cfg import CfgError, parse_cfg, render_cfg
from ostrom.verify.tlc.itf import write_itf
from ostrom.verify.tlc.jar import TlcSetupError
from ostrom.verify.tlc.runner import RunnerError, run_tlc
from ostrom.verify.tlc.values import parse_value

__all__ = ["tlc"]

_IDENT = re.compile(r"[A-Za-z_]\w*")
_INT = re.compile(r"\d{1,9}")


def tlc_options(raw: tuple[str, ...]) -> list[str]:
    """The TLC options after ``--``, checked (``BadInput`` names the first bad one)."""
    out: list[str] = []
    args = list(raw)
    while args:
        opt = args.pop(0)
        if opt in ("-deadlock", "-difftrace"):
            out.append(opt)
        elif opt in ("-depth", "-seed", "-coverage", "-workers", "-fp"):
            value = args.pop(0) if args else ""
            if not _INT.fullmatch(value) or (opt == "-workers" and int(value) < 1):
                raise BadInput(f"{opt} takes a whole number, got {value!r}")
            out += [opt, value]
        elif opt == "-simulate":
            if args and re.fullmatch(r"num=\d{1,9}", args[0]):
                out += [opt, args.pop(0)]
            else:
                out += [opt, "num=1000"]  # TLC 2.15 simulates for ever without num
        elif opt == "-dump":
            kinds = ""
            if args and re.fullmatch(r"dot(,colorize|,actionlabels)*", args[0]):
                kinds = args.pop(0)
            if not args:
                raise BadInput("-dump needs a FILE")
            target = Path(args.pop(0)).resolve()
            if not target.parent.is_dir():
                raise BadInput(f"-dump {target}: no such directory")
            out += ["-dump", *([kinds] if kinds else []), str(target)]
        else:
            raise BadInput(
                f"TLC option {opt!r} is not passed (these are: -simulate [num=N], -depth N, "
                "-seed N, -coverage N, -dump [dot,...] FILE, -workers N, -fp N, -deadlock, "
                "-difftrace)"
            )
    return out


def _overrides(defines: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for d in defines:
        name, eq, value = d.partition("=")
        if not eq or not _IDENT.fullmatch(name.strip()) or not value.strip():
            raise BadInput(f"-D takes Name=Value, got {d!r}")
        try:
            parse_value(value.strip())
        except ValueError:
            raise BadInput(f"-D {name.strip()}: {value.strip()!r} is not a TLA+ value") from None
        out[name.strip()] = value.strip()
    return out


@click.command(name="tlc")
@click.argument("spec", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("cfg", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-D", "defines", multiple=True, metavar="NAME=VALUE", help="Set a constant (repeatable)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where a counterexample is saved as ITF (default .tlc/counterexamples).",
)
@click.option("--timeout", type=SECONDS, default=None, help="Stop TLC after this many seconds.")
@click.argument("options", nargs=-1, type=click.UNPROCESSED)
def tlc(
    spec: Path,
    cfg: Path,
    defines: tuple[str, ...],
    out: Path | None,
    timeout: float | None,
    options: tuple[str, ...],
) -> None:
    """Run TLC on SPEC with CFG: any spec, ad hoc, as `ostrom check` runs the manifest's.

    \b
      ostrom tlc spec/Lifecycle.tla models/MCLifecycle_ci.cfg
      ostrom tlc my/Spec.tla my/Spec.cfg -D N=4 -- -simulate num=200 -depth 40
      ostrom tlc my/Spec.tla my/Spec.cfg -- -dump dot,actionlabels states.dot -coverage 1

    SPEC's directory is staged with spec/ and models/ of this tree (a spec of your own may
    EXTEND the project's modules); -D NAME=VALUE sets a constant in a staged copy of CFG.
    The TLC options after -- are checked: -simulate [num=N] (num=1000 if not given: TLC
    2.15 would simulate for ever), -depth, -seed, -coverage, -dump, -workers, -fp,
    -deadlock, -difftrace.  Progress goes to stderr; a counterexample is saved as ITF
    (read it with `ostrom explain`, or `ostrom explore` for a page).

    Exit status (docs/cli.md): 0 no violation, 1 an invariant, property or deadlock
    violated, 2 bad input, 3 TLC failed (a parse error, --timeout).
    """
    if spec.suffix != ".tla" or not spec.is_file():
        raise BadInput(f"{spec}: not a .tla file")
    try:
        cfg_text = cfg.read_text(encoding="utf-8")
        parsed = parse_cfg(cfg_text)
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{cfg}: cannot read: {exc}") from None
    except CfgError as exc:
        raise BadInput(f"{cfg}: {exc}") from None
    for name, value in _overrides(defines).items():
        parsed.constants[name] = ("=", value)
    if defines:
        cfg_text = render_cfg(parsed, f"{cfg.name} with -D {' -D '.join(defines)}")
    extra = tlc_options(options)
    module = spec.stem
    here = spec.resolve().parent
    own = {layout.SPEC_DIR.resolve(), layout.MODELS_DIR.resolve()}
    modules = {}
    if here not in own:
        modules = {p.stem: p.read_text(encoding="utf-8") for p in sorted(here.glob("*.tla"))}
    workers = 1 if "-workers" in extra or "-simulate" in extra else 2

    def progress(label: str, text: str) -> None:
        click.echo(f"  {label}: {text}", err=True)

    click.echo(f"tlc: {spec} with {cfg}{' ' + ' '.join(extra) if extra else ''}", err=True)
    try:
        run = run_tlc(
            layout.ROOT,
            module,
            Path(cfg.name),
            label=f"tlc-{module}",
            workers=workers,
            cfg_text=cfg_text,
            on_progress=progress,
            timeout=timeout,
            extra_modules=modules,
            tlc_options=extra,
        )
    except RunnerError as exc:
        raise BadInput(str(exc)) from None
    except TlcSetupError as exc:
        raise ToolError(str(exc)) from None
    o = run.outcome
    counts = f"{o.distinct_states:,} distinct states" if o.distinct_states is not None else ""
    click.echo(f"{o.got} ({counts}{', ' if counts else ''}{run.seconds:.1f} s)")
    if o.trace:
        scratch = out or layout.scratch() / ".tlc" / "counterexamples"
        target = scratch / f"tlc-{module}.itf.json"
        meta = {"model": f"tlc {spec.name}", "module": module, "config": str(cfg)}
        write_itf(target, o, meta | {"expected": o.got, "witness": None})
        click.echo(f"counterexample: {target} (`ostrom explain {target}`)")
    if o.kind == "error":
        click.echo(o.error_text or "", err=True)
        sys.exit(ExitCode.TOOL_ERROR)
    sys.exit(ExitCode.OK if o.kind == "pass" else ExitCode.FAILED)
