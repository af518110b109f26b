"""Update plasticity under memory interference (``ostrom simulate --experiment plasticity``).

The "Controlled Memory Interference" design adapted to a governed knowledge base: in each
trial a slot's truth changes, one up-to-date agent proposes the valid update and k other
proposals interfere (a competing value for the same slot, the old value again, or — the
control — proposals to other slots); does the slot serve the valid update T rounds later?
docs/evaluation.md describes the model; modules, one job each:

* ``config``     — ``PlasticityConfig``: every parameter of a run, validated;
* ``world``      — the generative model: agents, slots, the stream of trials (seeded);
* ``mechanisms`` — the interface, the reading rule ``judge`` and the three baselines;
* ``protocol``   — the protocol mechanism on the real ``Community``;
* ``metrics``    — plasticity, stale retention, wrong adoption, time to adoption;
* ``run``        — ``run_plasticity`` and the experiment's cells and scenarios.
"""

from ostrom.simulation.plasticity.config import PlasticityConfig
from ostrom.simulation.plasticity.run import (
    PLASTICITY_SCENARIO_NAMES,
    PLASTICITY_SCENARIOS,
    plasticity_cells,
    run_plasticity,
)

__all__ = [
    "PLASTICITY_SCENARIOS",
    "PLASTICITY_SCENARIO_NAMES",
    "PlasticityConfig",
    "plasticity_cells",
    "run_plasticity",
]
