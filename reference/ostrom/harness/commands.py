"""``ostrom consensus-demo``: PBFT next to the Co-Forgetting paper's Algorithm 1, and PBFT
under each Byzantine strategy of the harness."""

from __future__ import annotations

import json
import sys

import click
from rich.console import Console

from ostrom.harness import demo

__all__ = ["consensus_demo"]


@click.command(name="consensus-demo")
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
