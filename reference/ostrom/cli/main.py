"""The ``ostrom`` command line: one subcommand per job, each with ``--help``."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ostrom import __version__
from ostrom.cli import docs as cli_docs
from ostrom.cli import exits
from ostrom.cli.check import check, explain
from ostrom.cli.cluster import cluster, node
from ostrom.cli.exits import BadInput, ToolError
from ostrom.cli.explore import explore
from ostrom.cli.extras import install_hint, missing_extra
from ostrom.cli.mutate import mutate
from ostrom.cli.mutate_code import mutate_code
from ostrom.cli.options import SECONDS
from ostrom.cli.service import keygen, log, serve
from ostrom.cli.tlc import tlc
from ostrom.consensus import demo
from ostrom.explore import docfigures
from ostrom.figures import diagram
from ostrom.protocol.params import ParamError, Params
from ostrom.protocol.params import table as param_table
from ostrom.service import openapi as service_docs
from ostrom.verify import registry
from ostrom.verify.codemutation import scores as code_mutation_scores
from ostrom.verify.mutate import suite as mutation_suites
from ostrom.verify.tlc import sequence

if TYPE_CHECKING:
    from ostrom.verify import thresholds as thresholds_t


class _Group(click.Group):
    """The command group; a command whose optional extra is not installed stops with one
    line naming it (``cli/extras.py``) instead of a traceback.  ``lazy`` commands are
    built on first use: ``simulate`` imports SciPy (half a second, more on a busy
    machine), which every ``ostrom serve`` start and restart would otherwise pay."""

    lazy: ClassVar[dict[str, Callable[[], click.Command]]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            self.add_command(self.lazy[cmd_name](), name=cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            message = missing_extra(exc)
            if message is None:
                raise
            raise ToolError(message) from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's ``main`` inside the one error boundary (``cli/exits.py``): every
        exception becomes one line and an exit code of docs/cli.md."""
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        if args is not None and any("\x00" in str(a) for a in args):
            # no shell can pass one (execve cannot); an in-process caller must not either
            click.echo("error: an argument contains a NUL byte", err=True)
            sys.exit(exits.ExitCode.BAD_INPUT)
        code = exits.run(
            lambda: super(_Group, self).main(args, prog_name, complete_var, False, **extra)
        )
        sys.exit(code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ostrom")
def main() -> None:
    """ostrom: model-check the specs, run the reference implementation, check conformance."""


main.add_command(check)
main.add_command(explore)
main.add_command(tlc)
main.add_command(mutate)
main.add_command(mutate_code)
main.add_command(explain)
main.add_command(cluster)
main.add_command(node)
main.add_command(serve)
main.add_command(log)
main.add_command(keygen)


def _simulate_command() -> click.Command:
    try:
        from ostrom.simulation.command import simulate_command
    except ModuleNotFoundError as exc:  # scipy/matplotlib: the `sim` extra
        message = missing_extra(exc)
        if message is None:
            raise

        @click.command(
            context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
            help=f"Run the evaluation model (needs {install_hint('sim')}).",
        )
        def unavailable() -> None:
            raise click.ClickException(message)

        return unavailable
    try:  # --target and --node-setup need the client (the `service` extra)
        from ostrom.cli.target import extend_simulate
    except ModuleNotFoundError as exc:
        if missing_extra(exc) is None:
            raise
        return simulate_command
    return extend_simulate(simulate_command)


_Group.lazy["simulate"] = _simulate_command


def _site_command() -> click.Command:
    from ostrom.cli.site import site  # MkDocs loads only for this command

    return site


_Group.lazy["site"] = _site_command


def _console(piped_width: int) -> Console:
    """A console as wide as the terminal, or ``piped_width`` when stdout is not one (a
    pipe or a log has no width: rich's 80 columns would fold every long cell)."""
    return Console() if sys.stdout.isatty() else Console(width=piped_width)


def _param_range(name: str) -> tuple[int, int]:
    """The range of an integer parameter in the parameter table (one source)."""
    row = next(r for r in param_table() if r.name == name)
    assert row.lo is not None and row.hi is not None
    return int(row.lo), int(row.hi)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the registry as JSON on stdout.")
@click.option(
    "--registry",
    "path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Registry file (default: spec/properties.toml of this source tree).",
)
def properties(as_json: bool, path: Path | None) -> None:
    """Print which checker checks which property id (TLC, Hypothesis, Z3, mutants).

    A property whose required layers lack a checker is marked MISSING; the test suite
    fails on it (property_tests/test_registry.py).
    """
    try:
        props = registry.load(path)
    except registry.RegistryError as exc:
        raise BadInput(str(exc)) from None
    if as_json:
        rows = [
            {
                "id": p.id,
                "statement": p.statement,
                "required": list(p.required),
                "tla": list(p.tla),
                "hypothesis": list(p.hypothesis),
                "z3": list(p.z3),
                "tla_mutants": list(p.tla_mutants),
                "code_mutants": list(p.code_mutants),
                "notes": p.notes,
            }
            for p in props
        ]
        click.echo(json.dumps({"properties": rows}, indent=2))
        return
    title = f"ostrom property registry ({path or 'spec/properties.toml'})"
    table = Table(title=title, title_justify="left", show_lines=True)
    table.add_column("id", no_wrap=True)
    table.add_column("statement", ratio=3)  # wraps between words
    for col in ("TLC", "Hypothesis", "Z3", "mutants"):
        table.add_column(col, ratio=1, overflow="ellipsis")
    table.add_column("status", no_wrap=True)
    for p in props:
        missing = [layer for layer in p.required if not p.checkers(layer)]
        status = f"MISSING {', '.join(missing)}" if missing else ("ok" if p.required else "planned")
        mutants = [*(f"tla:{m}" for m in p.tla_mutants), *(f"code:{m}" for m in p.code_mutants)]
        table.add_row(
            p.id,
            Text(p.statement),
            "\n".join(p.tla) or "—",
            "\n".join(h.split("::")[-1] for h in p.hypothesis) or "—",
            "\n".join(p.z3) or "—",
            "\n".join(mutants) or "—",
            status,
        )
    _console(200).print(table)


@main.command(name="diagram")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(diagram.FORMATS)),
    default="mermaid",
    show_default=True,
    help="dot/svg/mermaid: the state diagram; tla: spec/LifecycleTable.tla; "
    "guards/params: the docs' Markdown tables.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write here instead of stdout.",
)
def diagram_cmd(fmt: str, output: Path | None) -> None:
    """Render the lifecycle transition table (one table, many views)."""
    try:
        text = diagram.FORMATS[fmt]()
    except RuntimeError as exc:  # Graphviz's dot is missing or failed
        raise ToolError(str(exc)) from None
    if output is None:
        click.echo(text, nl=False)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@main.command()
@click.option("--no-svg", is_flag=True, help="Skip the SVG (needs Graphviz's dot).")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Repository root.",
)
def docs(no_svg: bool, root: Path) -> None:
    """Regenerate every generated file and docs block (make docs).

    From the tables: the lifecycle diagrams and docs tables. From the TLC counterexamples
    committed in docs/counterexamples/: their message-sequence charts (text and Mermaid).
    """
    missing = [d for d in ("spec", "models", "docs", "reference") if not (root / d).is_dir()]
    if missing:  # before anything is written: a wrong --root must not get stray files
        raise BadInput(
            f"{root} is not an ostrom source tree (no {', '.join(m + '/' for m in missing)}); "
            "--root names the repository's root"
        )
    if not no_svg and shutil.which("dot") is None:
        raise ToolError(
            "Graphviz's `dot` is not installed: run `make docs` (it installs Debian's "
            "graphviz), or pass --no-svg"
        )
    try:
        changed = diagram.update_generated(root, svg=not no_svg)
        changed += service_docs.update_generated(root)
        changed += sequence.update_docs(root)
        changed += cli_docs.update_generated(root)
        changed += docfigures.update_generated(root)
        changed += mutation_suites.update_docs(root)
        changed += code_mutation_scores.update_docs(root)
    except RuntimeError as exc:
        raise ToolError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise BadInput(str(exc)) from None
    for path in changed:
        click.echo(f"updated {path}", err=True)
    if not changed:
        click.echo("generated files are current", err=True)


@main.command()
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the parameters as JSON.")
@click.option(
    "--markdown",
    is_flag=True,
    help="Print the table as Markdown (docs/design.md §8 embeds it), defaults only.",
)
def params(file: Path | None, as_json: bool, markdown: bool) -> None:
    """Print the parameter table, or validate FILE.toml and print its effective values.

    Keys of FILE are the parameter names (e.g. w_min, quorum, tau_accept), at the top
    level or all under one [params] table; keys not given take their defaults; unknown
    keys, keys beside [params], out-of-range values and values finer than the protocol's
    resolution (10^-6) are errors that name them (exit 2).
    """
    try:
        p = Params.from_toml(file) if file else Params()
    except ParamError as exc:
        raise BadInput(str(exc)) from None
    if as_json:
        click.echo(json.dumps(p.to_dict(), indent=2))
    elif markdown:
        click.echo(diagram.to_param_table(), nl=False)
    else:
        _console(160).print(_params_table(p, file))


@main.command(name="check-params")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@click.option(
    "--general",
    is_flag=True,
    help="Also prove every theorem for all parameter values the table allows.",
)
@click.option(
    "--min-active-agents",
    type=click.IntRange(*_param_range("min_active_agents")),
    default=None,
    help="Check FG-1 as if the file set min_active_agents (the forget rule's smallest "
    "population of non-barred agents) to this value.",
)
def check_params(
    file: Path | None, as_json: bool, general: bool, min_active_agents: int | None
) -> None:
    """Prove every threshold theorem (Z3) for FILE.toml, or for the defaults.

    Keys of FILE are the parameter names (e.g. w_min, w_max, quorum, tau_accept); keys not
    given take their defaults.  Unknown keys, wrong types, out-of-range values and the
    relations no theorem states (quorum > reviewers, w_min > w_max, ...) are errors that
    name them (exit 2, nothing on stdout).  tau_reject >= tau_accept, unordered tier
    thresholds and non-increasing sanction thresholds load, so that their theorems
    (TALLY-1, TIER-MONO, SAN-MONO) refute them with a counterexample.

    Prints one row per check (TALLY-1, REP-1, REP-2, FG-1, BFT-QUORUM-1, TIER-MONO,
    SAN-MONO), then each failure's counterexample in plain words (which agents, which
    weights, what goes wrong, replayed through voting.py or the orchestrator's
    arithmetic), then the bounds the theorems derive.  Contrast checks (the paper's plain
    decay rule, a flat 2f+1 PBFT quorum) are expected to be refuted.

    Exit status: 0 if every check is as expected, 1 if any is refuted or unknown.
    docs/thresholds.md says what each theorem states.
    """
    from ostrom.verify import thresholds  # z3 loads only for this command

    try:
        p = thresholds.load_params(file)
    except ParamError as exc:
        raise BadInput(str(exc)) from None
    results = thresholds.prove_all(p, min_active_agents=min_active_agents)
    general_results = thresholds.prove_general() if general else []
    bounds = thresholds.derived_bounds(p, min_active_agents=min_active_agents)
    failed = thresholds.failures([*results, *general_results])
    source = str(file) if file else "defaults"
    if as_json:
        doc: dict[str, object] = {
            "params": source,
            "ok": not failed,
            "summary": _summary(results),
            "bounds": bounds,
            "results": [r.to_dict() for r in results],
        }
        if general:
            doc["general"] = [r.to_dict() for r in general_results]
        click.echo(json.dumps(doc, indent=2))
    else:
        console = Console(width=max(110, Console().width))
        console.print(_results_table(f"check-params: {source}", results))
        if general:
            console.print(_results_table("for all parameter values in range", general_results))
        if failed:
            click.echo("\nCounterexamples (plain words):")
            for r in failed:
                click.echo(click.style(f"  ✗ {r.name}: {r.title}", fg="red"))
                click.echo(textwrap.fill(r.explanation, 100, initial_indent=" " * 4,
                                         subsequent_indent=" " * 4))  # fmt: skip
        click.echo("\nDerived bounds:")
        for line in _bound_lines(bounds):
            click.echo(textwrap.fill(line, 100, initial_indent="  ", subsequent_indent=" " * 4))
        s = _summary([*results, *general_results])
        summary = (
            f"\n{s['proved']} proved, {s['expected_refutations']} refuted as expected "
            f"(contrasts), {s['failed']} failed"
        )
        click.echo(click.style(summary, fg="red" if failed else "green"))
    if failed:
        sys.exit(1)


def _params_table(p: Params, file: Path | None) -> Table:
    values = p.to_dict()
    title = f"parameters of {file}" if file else "parameters (defaults)"
    table = Table(title=title, title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("value" if file else "default", no_wrap=True)
    table.add_column("unit", no_wrap=True)
    table.add_column("range", no_wrap=True)
    table.add_column("meaning")
    for row in param_table():
        v = values[row.name]
        shown = ", ".join(f"{x:g}" for x in v) if isinstance(v, list) else str(v)
        if file and v != (list(row.default) if isinstance(row.default, tuple) else row.default):
            shown += " *"  # not the default: marked with a sign, not a colour alone
        lo = "" if row.lo is None else f"{row.lo:g}"
        hi = "∞" if row.hi is None else f"{row.hi:g}"
        table.add_row(row.name, shown, row.unit, f"[{lo}, {hi}]", Text(row.doc))
    if file:
        table.caption = "* differs from the default"
    return table


def _summary(results: list[thresholds_t.TheoremResult]) -> dict[str, int]:
    return {
        "checks": len(results),
        "proved": sum(r.status == "proved" for r in results),
        "expected_refutations": sum(r.ok and r.status == "refuted" for r in results),
        "failed": sum(not r.ok for r in results),
    }


def _results_table(title: str, results: list[thresholds_t.TheoremResult]) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ("property", "check", "claim", "result", "ms"):
        table.add_column(col, overflow="fold", justify="right" if col == "ms" else "left")
    for r in results:
        if not r.ok:
            result = Text(r.status.value.upper(), style="bold red")
        elif r.status == "refuted":
            result = Text("refuted (expected)", style="green")
        else:
            result = Text(r.status.value, style="green")
        table.add_row(r.id, r.check, Text(r.title), result, f"{r.seconds * 1000:.0f}")
    return table


def _bound_lines(b: dict[str, object]) -> list[str]:
    def n(x: object) -> str:
        return "∞" if x is None else f"{x:.4g}" if isinstance(x, float) else str(x)

    limits = b["tally_ratio_limits"]
    assert isinstance(limits, dict)
    ratios = (
        f"below {n(limits['review-lone-accept'])} (lone accept), below "
        f"{n(limits['review-lone-reject'])} (lone reject), below "
        f"{n(limits['dispute-lone-retract'])} (lone retract), at most "
        f"{n(limits['dispute-lone-keep'])} (lone keep)"
    )
    side = b["tally_min_side"]
    if isinstance(side, int) and side >= 2:
        tally = (
            f"TALLY-1: tally_min_side = {side}: no side of one voter wins, whatever the weights "
            f"(w_max/w_min = {n(b['tally_weight_ratio'])})"
        )
        if b["tally_lone_keep_by_heads"]:
            tally += (
                "; but q_dispute ≤ tally_min_side: a lone keeper holds a dispute against "
                "q_dispute − 1 retracters, too few to retract"
            )
        tally += f"; without the side rule w_max/w_min would have to stay {ratios}"
    else:
        tally = (
            f"TALLY-1: tally_min_side = {side} (no side rule): w_max/w_min = "
            f"{n(b['tally_weight_ratio'])}; no single agent decides while it is {ratios}"
        )
    return [
        tally,
        f"REP-2 Sybils needed to overturn: review {n(b['sybil_review_bound'])} "
        f"(spare seats {b['sybil_review_seats']}), dispute {n(b['sybil_dispute_bound'])} "
        f"(spare seats {b['sybil_dispute_seats']})",
        f"FG-1 population: min_active_agents = {b['forget_min_active_agents']}; no lone "
        f"forgetter from {n(b['forget_least_population_no_lone_forgetter'])} active agents "
        f"(exact: what min_active_agents must reach), docs/design.md §5's Q > w_max from "
        f"{n(b['forget_least_population_quorum_above_w_max'])} (sufficient, not needed)",
    ]


@main.command(name="consensus-demo")
@click.option(
    "--items",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Forget decisions per scenario.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of both runs.")
@click.option(
    "--scenario",
    "scenarios",
    multiple=True,
    type=click.Choice([*demo.SCENARIOS, *demo.ALIASES]),
    help="Run only this scenario (repeatable; default: all three, unless --attack is "
    "given). silent-coordinator and conflicting-voter are aliases.",
)
@click.option(
    "--attack",
    "attacks",
    multiple=True,
    type=click.Choice(list(demo.ATTACKS)),
    help="Run PBFT (alone) with one replica running this Byzantine strategy "
    "(repeatable; default: none). The attacks are listed below.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
def consensus_demo(
    items: int, seed: int, scenarios: tuple[str, ...], attacks: tuple[str, ...], as_json: bool
) -> None:
    """The reviewers' concrete test: PBFT vs the Co-Forgetting paper's Algorithm 1.

    N=4 replicas, f=1, ITEMS forget decisions, one faulty replica, in three scenarios:
    silent-backup (replica 3 sends nothing), silent-primary (replica 0, the first
    primary, sends nothing; Algorithm 1 calls it the coordinator) and conflicting-votes
    (replica 3 votes for conflicting values and stays reachable).

    PBFT side: each decision is an orchestrator command (a forget vote, then one closing
    tick) signed by a client, ordered by PBFT and applied by every replica to its own
    orchestrator; REPL-1 is checked at the end.  Algorithm 1 side: the paper's two-round
    vote as written, on the same scenario.

    Printed side by side: decided %, disagreements, messages per item, view changes per
    item and wall-clock.  What to expect: PBFT decides every item identically in all
    three, changing view once when the primary is silent; Algorithm 1 has no pre-prepare,
    no sequence numbers, no view change and no authentication, so with a silent
    coordinator it decides nothing (ALG1-FAIL-1) and forged conflicting votes split the
    honest agents.

    --attack NAME runs the same workload on PBFT alone (N=4, f=1) with one replica
    running a Byzantine strategy from the item phase on, and prints the metrics and the
    attacker's effect: the rejections it caused at honest replicas, by reason (* marks
    a reason the attack must cause).  Attacks on the view change also cut the honest
    view-0 primary off until the others have left its view (a network fault):

    \b
      silent             a backup that sends nothing
      equivocate         view-0 primary: different pre-prepares for one seq (conflicting)
      conflict           a backup voting for conflicting digests (conflicting)
      delay              a backup whose messages arrive late
      garbage            view-0 primary: random bytes, forged identities (malformed, forged)
      checkpoint-lie     a backup: CHECKPOINTs with wrong digests, ahead of time, against
                         its own votes and beyond the window, and lying STATE-TRANSFERs
                         (out_of_window, conflicting)
      fake-certificate   a backup whose VIEW-CHANGEs carry fabricated prepared
                         certificates (bad_view_change)
      bad-new-view       the primary of view 1: its NEW-VIEW drops or substitutes a
                         re-proposed request; backups recompute O and move to view 2
                         (bad_new_view)
      replay             a backup re-sending old-view traffic in later views (stale_view)
      tamper             view-0 primary: fields changed under kept signatures (forged)
      view-change-flood  a backup sending VIEW-CHANGEs for ever higher views; one is
                         kept per sender, f+1 are needed to move (superseded)

    Exit status 1 if PBFT fails (an honest replica misses an item, two disagree, or REPL-1
    fails), in a scenario or under an attack: that would be a bug.  Algorithm 1's failures
    are the expected result and do not change the exit status.  Progress goes to stderr.
    """
    names = tuple(dict.fromkeys(demo.scenario_name(s) for s in scenarios))
    if not names and not attacks:
        names = demo.SCENARIOS
    results = []
    for name in names:
        click.echo(f"consensus-demo: {name} ({items} items, seed {seed})", err=True)
        results.append(
            demo.run_demo(name, items, seed, progress=lambda m: click.echo(f"  {m}", err=True))
        )
    attacked = []
    for attack in dict.fromkeys(attacks):
        click.echo(f"consensus-demo: attack {attack} ({items} items, seed {seed})", err=True)
        attacked.append(
            demo.run_attack(attack, items, seed, progress=lambda m: click.echo(f"  {m}", err=True))
        )
    if as_json:
        click.echo(json.dumps(demo.to_json(results, attacked), indent=2))
    else:
        console = Console(width=max(100, Console().width))
        if results:
            console.print(demo.render_table(results))
        if attacked:
            console.print(demo.render_attack_table(attacked))
    failed: list[str] = [r.scenario for r in results if not r.pbft_ok]
    failed += [f"attack {a.attack}" for a in attacked if not a.pbft_ok]
    if failed:
        click.echo(f"error: PBFT failed in {', '.join(failed)} (a bug)", err=True)
        sys.exit(1)


# --- ostrom conform (the conformance runner, ostrom/conformance/runner.py) ----------------


@main.command(context_settings={"allow_interspersed_args": False})
@click.option(
    "--vectors",
    "vectors_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Vector directory with its MANIFEST.json (default: vectors/ of this source tree).",
)
@click.option(
    "--layer",
    "layers",
    multiple=True,
    metavar="LAYER",
    help="Run only this layer (repeatable): lifecycle, voting, reputation, sanctions, "
    "forgetting, community, pbft.",
)
@click.option(
    "--action",
    "actions",
    multiple=True,
    metavar="ACTION",
    help="Run only vectors of this action (repeatable), as dispute or lifecycle/dispute.",
)
@click.option(
    "--property",
    "property_ids",
    multiple=True,
    metavar="ID",
    help="Run only vectors exercising this property id (repeatable), e.g. LC-SAFE-3.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the full report as JSON on stdout.")
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write JUnit XML here (one testsuite per layer, one testcase per vector).",
)
@click.option(
    "--timeout",
    type=SECONDS,
    default=10.0,
    show_default=True,
    help="Seconds to wait for each reply of the driver, in (0, 1e6]; after three "
    "timeouts in a row the driver is taken to hang and the rest is not run.",
)
@click.option("--fail-fast", is_flag=True, help="Stop at the first failing vector.")
@click.option("-v", "--verbose", is_flag=True, help="A line per vector; full diffs and stderr.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def conform(
    vectors_dir: Path | None,
    layers: tuple[str, ...],
    actions: tuple[str, ...],
    property_ids: tuple[str, ...],
    as_json: bool,
    junit: Path | None,
    timeout: float,
    fail_fast: bool,
    verbose: bool,
    command: tuple[str, ...],
) -> None:
    """Run the conformance vectors against an implementation: ostrom conform -- CMD ARGS.

    CMD ARGS start the implementation's driver, which speaks the driver protocol of
    docs/conformance.md on stdin/stdout (its stderr is shown for failures).  Every file
    listed in vectors/MANIFEST.json is read first; a missing or unlisted file is refused.
    Vectors of the layers the driver names in its handshake run; the others are reported
    "not implemented".  Each vector stops at its first diverging step.  A driver that
    crashes, hangs (--timeout) or answers garbage fails that vector and is restarted.

    Progress goes to stderr; the summary per layer, action and property id, and every
    failure with its diff, go to stdout (or the JSON report with --json).

    Exit status: 0 if every vector of the implemented layers passed (and at least one
    ran), 1 otherwise, 2 if the suite or CMD is unusable.

    \b
    Examples:
      ostrom conform -- python -m ostrom.conformance.driver
      ostrom conform --layer lifecycle --junit conform.xml -- node js/driver.js
    """
    from ostrom.conformance import runner

    sys.exit(
        runner.main(
            command,
            vectors_dir=vectors_dir,
            layers=layers,
            actions=actions,
            properties=property_ids,
            as_json=as_json,
            junit=junit,
            timeout=timeout,
            fail_fast=fail_fast,
            verbose=verbose,
        )
    )


# --- end of ostrom conform ------------------------------------------------------------------


# --- ostrom vectors (the reference vectors, ostrom/conformance/generators/generate.py) ---


@main.command(name="vectors")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Vector directory (default: vectors/ of this source tree).",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing; exit 1 if the vectors or MANIFEST.json under --out are not current.",
)
def vectors_cmd(out: Path | None, check_only: bool) -> None:
    """Regenerate the reference's conformance vectors, deterministically (make vectors).

    Sources: reference:examples (hand-written histories that use every command of every
    layer and every error code) and reference:hypothesis (derandomized random walks that
    keep the first history reaching each new transition row, error code, sanction or tier
    change).  Every expectation is what the reference observes.  Files are written as
    <out>/<layer>/<action>/<name>.json; stale files of these sources are deleted; vectors
    of other sources (TLC, PBFT) are left alone; MANIFEST.json is rebuilt over all files.

    Exit status (--check): 0 if the committed files are current, 1 if not (each stale
    file is named).
    """
    from ostrom.conformance.generators import generate
    from ostrom.conformance.vectors import VECTORS_DIR

    root = VECTORS_DIR if out is None else out
    try:
        docs = generate.generate()
    except generate.GenerationError as exc:
        raise ToolError(str(exc)) from None
    counts = generate.summary(docs)
    for layer, row in counts.items():
        parts = ", ".join(f"{n} {src}" for src, n in sorted(row.items()))
        click.echo(f"  {layer:<11} {parts}", err=True)
    if check_only:
        problems = generate.check_suite(root, docs)
        for p in problems:
            click.echo(f"  {p}", err=True)
        if problems:
            click.echo(f"{root}: {len(problems)} problem(s); run `make vectors`", err=True)
            sys.exit(1)
        click.echo(f"{root}: {len(docs)} reference vectors are current", err=True)
        return
    plan = generate.write_suite(root, docs)
    click.echo(
        f"{root}: {len(plan.write)} written, {len(plan.delete)} deleted, "
        f"{plan.unchanged} unchanged; MANIFEST.json rebuilt",
        err=True,
    )


# --- end of ostrom vectors ------------------------------------------------------------------


# --- ostrom validate-trace (trace validation with TLC, ostrom/verify/trace/validate.py) ----------


@main.command(name="validate-trace")
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


# --- end of ostrom validate-trace -----------------------------------------------------------


if __name__ == "__main__":  # pragma: no cover
    main()
