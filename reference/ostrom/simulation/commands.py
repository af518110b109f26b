"""``ostrom simulate``: the command that runs the evaluation model — one configuration over
some seeds, or a built-in experiment with its report (``experiments`` runs, ``report``
renders)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ostrom import layout
from ostrom.simulation import evidence_docs, report
from ostrom.simulation.config import (
    ABLATIONS,
    GOVERNANCE,
    INT_RANGES,
    MIXES,
    ConfigError,
    SimConfig,
    load_config,
    parse_policy,
)
from ostrom.simulation.evidence import EvidenceError, git_commit, write_evidence
from ostrom.simulation.experiments import (
    FAMILIES,
    RunError,
    build_experiment,
    build_family,
    experiment_names,
    run_experiment,
    single_experiment,
)
from ostrom.simulation.forgetting.config import SCENARIOS as FORGET_SCENARIOS
from ostrom.simulation.policy import load_policy, needs
from ostrom.simulation.run import simulate

_EPILOG = """\b
Examples:
  ostrom simulate                                   # the protocol, moderate, seed 1
  ostrom simulate --governance majority --seeds 10 --scenario high
  ostrom simulate --ablation no_commit_reveal --seeds 5 --json
  ostrom simulate --config my.toml --seeds 3        # SimConfig fields; [mix] table
  ostrom simulate --policy examples/simulation/policy.py:Cautious --rounds 60 --agents 20
  ostrom simulate --experiment smoke                # seconds; results/smoke/
  ostrom simulate --experiment paper --seeds 5 --rounds 100 --jobs 4
  ostrom simulate --experiment paper                # 480 runs; results/paper/
  ostrom simulate --experiment paper --evidence evaluation/paper
  ostrom simulate --tables                          # evaluation/tables.md from the evidence
  ostrom simulate --experiment forgetting           # ground-truth forgetting; results/forgetting/
  ostrom simulate --experiment forgetting --governance pbft --seeds 5
  ostrom simulate --experiment plasticity --scenario adv=0.20 --seeds 10
  ostrom simulate --experiment retrieval --seeds 3  # the node's search vs ungoverned memories
"""

#: The consensus layers the forgetting experiment may be restricted to (--governance).
CONSENSUS_GOVERNANCE = ("pbft", "alg1")


def single_config(
    base: SimConfig,
    *,
    scenario: str | None = None,
    governance: str | None = None,
    ablations: tuple[str, ...] = (),
    agents: int | None = None,
    rounds: int | None = None,
    artifacts: int | None = None,
    policy: str | None = None,
) -> SimConfig:
    """The one configuration the options describe (without --experiment): ``base`` with
    each option that was given (``ConfigError`` if the result is invalid).  Also what
    ``ostrom simulate --target`` runs (simulation/target.py)."""
    changes: dict[str, Any] = {}
    if scenario is not None:
        changes["scenario"] = scenario
    if governance is not None:
        changes["governance"] = governance
    if ablations:
        changes["ablations"] = tuple(dict.fromkeys(ablations))
    if agents is not None:
        changes["agents"] = agents
    if rounds is not None:
        changes["rounds"] = rounds
        changes["artifacts"] = rounds * base.proposals_per_round
    if artifacts is not None:
        changes["artifacts"] = artifacts
    if policy is not None:
        changes["policy"] = policy
    return base.with_(**changes) if changes else base


@click.command(
    name="simulate", epilog=_EPILOG, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--scenario",
    default=None,
    help=f"Population mix (default moderate; one of {', '.join(sorted(MIXES))}).  With "
    f"--experiment: run only this scenario (forgetting: {', '.join(FORGET_SCENARIOS)}; "
    "plasticity and retrieval: the adversary share, adv=<share>, e.g. adv=0.20).",
)
@click.option(
    "--seeds",
    type=click.IntRange(1, 100_000),
    default=None,
    help="How many seeds (default 1; with --experiment the experiment's, 30 for paper).",
)
@click.option(
    "--seed-start",
    type=click.IntRange(0, 2**63 - 1),
    default=1,
    show_default=True,
    help="First seed.",
)
@click.option(
    "--rounds",
    type=click.IntRange(*INT_RANGES["rounds"]),
    default=None,
    help="Rounds per run (default 500; forgetting: epochs, default 500).",
)
@click.option(
    "--agents",
    type=click.IntRange(*INT_RANGES["agents"]),
    default=None,
    help="Agents per run (default 100).",
)
@click.option(
    "--artifacts",
    type=click.IntRange(*INT_RANGES["artifacts"]),
    default=None,
    help="Artifact pool (default 1,000; with --rounds: rounds x proposals per round).",
)
@click.option(
    "--governance",
    type=click.Choice((*GOVERNANCE, *CONSENSUS_GOVERNANCE)),
    default=None,
    help="Mechanism (default protocol).  Not with --experiment, but for --experiment "
    "forgetting: pbft or alg1 runs only its consensus cells (the protocol's commands "
    "ordered by PBFT with a faulty replica, or decided by the paper's Algorithm 1).",
)
@click.option(
    "--ablation",
    "ablations",
    type=click.Choice(ABLATIONS),
    multiple=True,
    help="Remove a component of the protocol (repeatable).  Not with --experiment.",
)
@click.option(
    "--feedback",
    type=click.Choice(["decision", "truth"]),
    default=None,
    help="What a vote's correctness is judged by (default decision, the paper's rule).",
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="TOML file of SimConfig fields (a [mix] table makes the scenario custom).",
)
@click.option(
    "--policy",
    metavar="MODULE:ATTR[=ARCHETYPE]",
    default=None,
    help="Plug an agent policy into the curation model: the agents drawn as ARCHETYPE "
    "(default honest) decide with it (vote, object, reveal, dispute, speak first; "
    "ostrom.simulation.policy.AgentPolicy).  With --experiment forgetting (hook forgets; "
    "ARCHETYPE a kind: careful, the default, sloppy or eraser), plasticity (hook accepts; "
    "honest, stale or adversary) or retrieval (accepts; honest or adversary) the agents "
    "of that kind decide that model's one decision with it.  MODULE is an importable "
    "module or a .py file; ATTR a policy object, or a class or function building one "
    "with no arguments "
    "(built afresh for every run).  A spec that does not load is exit 2; a policy that "
    "raises or answers wrongly during a run stops it, naming the policy, decision, round "
    'and agent (exit 2).  Also a config field (policy = "..."); with --experiment, '
    "every cell uses it.",
)
@click.option(
    "--experiment",
    type=click.Choice(experiment_names()),
    default=None,
    help="Run a built-in experiment and write its report to --out.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Report directory (default results/<experiment>; without --experiment, none).",
)
@click.option(
    "--evidence",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write the compact evidence (runs.csv: every run's final numbers; meta.json: "
    "the commit, the command and the configuration) to this directory; the committed "
    "evidence is evaluation/<experiment>/ (docs/evaluation.md's tables are made from it).",
)
@click.option(
    "--tables",
    is_flag=True,
    help="Run nothing: write evaluation/tables.md (and the sensitivity's tornado plot into "
    "docs/img/evaluation/) from the committed evidence (evaluation/<experiment>/); then "
    "`ostrom docs` copies the tables into docs/evaluation.md.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 1024),
    default=None,
    help="Worker processes (default: one per core).",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Results as JSON on stdout (progress on stderr)."
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
def simulate_command(
    scenario: str | None,
    seeds: int | None,
    seed_start: int,
    rounds: int | None,
    agents: int | None,
    artifacts: int | None,
    governance: str | None,
    ablations: tuple[str, ...],
    feedback: str | None,
    config_file: Path | None,
    policy: str | None,
    experiment: str | None,
    out: Path | None,
    evidence: Path | None,
    tables: bool,
    jobs: int | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Run the evaluation model: the paper's agent-based simulation (docs/design.md §10).

    Without --experiment: one configuration (the protocol, or --governance, with any
    --ablation) over --seeds seeds; prints the mean ± sd of the final precision, recall,
    reputation Gini and sanction false-positive rate (and any extras the run records).

    With --experiment: paper (protocol, six baselines, five ablations; moderate and
    high; 20 seeds), truth (decision vs ground-truth feedback), bloc (a coordinated
    adversary), sanctions (long horizons), sensitivity (the headline over the fixed
    choices), smoke (tiny, for CI), forgetting (the
    Co-Forgetting evaluation against ground truth: protocol, six baselines, four
    ablations, consensus success under PBFT and Algorithm 1) or plasticity (valid
    updates under same-slot conflict and repeated history, by interference count and
    adversary share) or retrieval (what an agent retrieves and answers from the
    node's governed search and three ungoverned memories; docs/evaluation.md).  Writes results.csv,
    results.json, results.md, runs.csv, comparisons.csv and PNG plots to --out, and
    prints results.md.  Every configuration is compared with majority vote over the
    same seeds (paired t-test, Cohen's d_z, 95% CI).  --evidence writes the compact
    per-run finals with the commit and configuration (what docs/evaluation.md cites).

    --policy plugs your own agent policy into the seats of one archetype (see its help
    and docs/evaluation.md, "Plugging in an agent policy").

    Runs go to --jobs worker processes; results do not depend on it.  A bad option or
    config is an error (exit 2), and so is a plugged policy that raises or answers
    wrongly during a run; any other failing run is reported with its config and seed
    (exit 1).  Progress goes to stderr.
    """
    if tables:
        try:
            written = evidence_docs.write_tables(layout.source_tree("ostrom simulate --tables"))
        except (EvidenceError, KeyError, OSError, layout.NotACheckout) as exc:
            click.echo(f"error: --tables: {exc}", err=True)
            sys.exit(2)
        click.echo(f"wrote {', '.join(str(p) for p in written)}", err=True)
        return
    try:
        if jobs is not None and jobs < 1:
            raise ConfigError(f"--jobs: must be at least 1, got {jobs}")
        if seeds is not None and seeds < 1:
            raise ConfigError(f"--seeds: must be at least 1, got {seeds}")
        base = load_config(config_file) if config_file else SimConfig()
        changes: dict[str, Any] = {}
        if feedback is not None:
            changes["feedback"] = feedback
        if policy is not None:
            changes["policy"] = policy
        if experiment is None:
            config = single_config(
                base.with_(**changes) if changes else base,
                scenario=scenario,
                governance=governance,
                ablations=ablations,
                agents=agents,
                rounds=rounds,
                artifacts=artifacts,
            )
            exp = single_experiment(config, range(seed_start, seed_start + (seeds or 1)))
        elif experiment in FAMILIES:
            if ablations or config_file is not None or feedback is not None:
                raise ConfigError(
                    f"--ablation, --config and --feedback are the paper model's; "
                    f"the {experiment} experiment defines its own cells"
                )
            exp = build_family(
                experiment,
                seeds=seeds,
                seed_start=seed_start,
                rounds=rounds,
                agents=agents,
                artifacts=artifacts,
                scenarios=(scenario,) if scenario is not None else None,
                governance=governance,
                policy=policy,
            )
        else:
            if governance is not None or ablations:
                raise ConfigError(
                    "--governance and --ablation choose a single configuration; "
                    "an experiment defines its own (use --config for a common base)"
                )
            exp = build_experiment(
                experiment,
                seeds=seeds,
                seed_start=seed_start,
                rounds=rounds,
                agents=agents,
                artifacts=artifacts,
                base=base.with_(**changes) if changes else base,
                scenarios=(scenario,) if scenario is not None else None,
            )
        for cell in exp.cells:  # load a plugged policy once here: a bad one is exit 2 now
            if getattr(cell.config, "policy", ""):
                # the role was checked by the config, against its model's agent kinds
                load_policy(parse_policy(cell.config.policy, roles=None), needs(exp.name))
                break
    except ConfigError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)

    commit = git_commit() if evidence is not None else ("unknown", True)
    try:
        result = run_experiment(exp, jobs=jobs, progress=not quiet, run=simulate)
    except RunError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2 if exc.user else 1)
    click.echo(f"{exp.total} runs in {result.seconds:.1f} s", err=True)
    if experiment is not None or out is not None:
        target = out or Path("results") / exp.name
        written = report.write_report(result, target)
        click.echo(f"wrote {len(written)} files to {target}", err=True)
    if evidence is not None:
        try:
            write_evidence(result, evidence, ["ostrom", *sys.argv[1:]], commit)
        except OSError as exc:
            click.echo(f"error: --evidence: cannot write {evidence}: {exc}", err=True)
            sys.exit(2)
        click.echo(f"wrote the evidence to {evidence}", err=True)
    if as_json:
        doc = report.results_doc(result) if experiment else report.single_doc(result)
        click.echo(json.dumps(doc, indent=2, allow_nan=False))
    elif experiment is not None:
        click.echo(report.markdown(result), nl=False)
    else:
        report.print_summary(result)


__all__ = ["simulate_command", "single_config"]
