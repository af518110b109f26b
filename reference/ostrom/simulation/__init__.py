"""The evaluation model (docs/design.md §10): agents of seven archetypes curating a knowledge base.

The protocol runs on the real core (``ostrom.protocol.community.Community``: the orchestrator,
reputation and sanctions); baselines are the simpler mechanisms the paper compares it to.
Modules, one job each:

* ``config``     — what a run is: population mix, workload, governance, ablations;
* ``archetypes`` — how each kind of agent judges, votes, objects and disputes;
* ``policy``     — the agent policy interface the runs ask (the archetypes are policies;
  ``ostrom simulate --policy`` plugs in another, e.g. an LLM's);
* ``world``      — the artifact pool and the population, drawn from a seed;
* ``protocol``   — a run of the protocol (and its ablations) on ``Community``;
* ``baselines``  — majority vote, single curator, ungoverned;
* ``metrics``    — precision, recall, reputation Gini, sanction false-positive rate;
* ``engine``     — cells × scenarios × seeds run in parallel, sorted results;
* ``experiments``— the built-in experiments; ``report`` and ``stats``: tables, tests, plots;
* ``forgetting`` — the Co-Forgetting evaluation against ground truth (its own package);
* ``plasticity`` — update plasticity under same-slot interference (its own package).

Everything is deterministic per seed: the same config and seed give the same numbers.
"""

from ostrom.simulation.config import SimConfig
from ostrom.simulation.run import RunResult, simulate

__all__ = ["RunResult", "SimConfig", "simulate"]
