"""One run of the retrieval experiment, and what it measures.

Each trial is measured once, after its measurement round: the agent asks the world's
question about the trial's slot ("What is the deploy region of orlan?"), in each mode
(``stores.MODES``), and takes the top ``top_k`` hits.  What is measured is the
retrieval-to-decision decomposition the interference paper uses:

* **retrieval**: is a sentence carrying the slot's *current* value (the world's truth at
  the measurement) among the hits (``hit``), and at which rank (``mrr``: 1/rank, 0 if
  absent);
* **decision**, by two deterministic readers:
  - ``top``: answers with the value of the top hit, whatever it is about;
  - ``store``: answers by the store's own rule (``Memory.choose``): ostrom's hit marked
    current, the add-only store's newest stable hit, the others' best hit about the slot;
  ``acc`` is the share of trials answered with the current value, ``stale`` with the old
  value, ``wrong`` with the competing one.

The final metrics are means over the run's trials: ``<mode>.hit``, ``<mode>.mrr``,
``<mode>.<reader>.acc`` (and ``.stale``, ``.wrong``), and by cell
``<mode>.hit.<kind>.k<k>`` and ``<mode>.<reader>.acc.<kind>.k<k>``.  A store without a
``history`` view (the baselines hold every version anyway) reports its lexical figures
there too, so tables align.
"""

from __future__ import annotations

import math
from collections import defaultdict

from ostrom.simulation.result import Progress, RunResult
from ostrom.simulation.retrieval.config import RetrievalConfig
from ostrom.simulation.retrieval.index import Lsa
from ostrom.simulation.retrieval.stores import MODES, Hit, make_store
from ostrom.simulation.retrieval.world import Trial, World, make_world

__all__ = ["BY_CELL", "KEY", "READERS", "corpus", "measure", "run_retrieval"]

READERS = ("top", "store")
#: The headline: lexical retrieval, the store's own reader, answered with the current value.
KEY = "lexical.store.acc"
#: The figures also reported per (kind, k) cell (the others only pooled, to keep the
#: committed evidence compact).
BY_CELL = ("hit", "top.acc", "store.acc")


def corpus(world: World) -> list[str]:
    """Every sentence the world will write, setup first (what LSA is fitted on)."""
    texts = [p.text for p in world.initial.values()]
    for r in sorted(world.proposals):
        texts.extend(p.text for p in world.proposals[r])
    return texts


def measure(
    trial: Trial, world: World, hits: list[Hit], chosen: dict[str, Hit | None]
) -> dict[str, float]:
    """One trial's figures in one mode (module docstring)."""
    truth = world.truth(trial.slot, trial.measure_round)
    rank = next((i for i, h in enumerate(hits, 1) if h.slot == trial.slot and h.value == truth), 0)
    out = {"hit": float(rank > 0), "mrr": 1.0 / rank if rank else 0.0}
    for reader, h in chosen.items():
        answer = None if h is None else h.value
        out[f"{reader}.acc"] = float(answer == truth)
        out[f"{reader}.stale"] = float(answer == trial.old)
        out[f"{reader}.wrong"] = float(bool(trial.wrong) and answer == trial.wrong)
    return out


def run_retrieval(cfg: RetrievalConfig, seed: int, progress: Progress | None = None) -> RunResult:
    world = make_world(cfg, seed)
    lsa = Lsa(corpus(world), cfg.lsa_rank)
    store = make_store(cfg.store, world, lsa, seed, cfg.reviewer_noise, cfg.policy)
    due: dict[int, list[Trial]] = defaultdict(list)
    for t in world.trials:
        due[t.measure_round].append(t)
    sums: dict[str, list[float]] = defaultdict(list)
    series: dict[str, list[float]] = {KEY: []}
    try:
        for r in range(cfg.rounds):
            store.step(r, world.proposals.get(r, []))
            for trial in due.get(r, []):
                q = world.query(trial.slot)
                for mode in MODES:
                    view = mode if (mode != "history" or store.name == "ostrom") else "lexical"
                    hits = store.search(q, view, cfg.top_k)
                    chosen = {
                        "top": hits[0] if hits else None,
                        "store": store.choose(hits, trial.slot),
                    }
                    for name, v in measure(trial, world, hits, chosen).items():
                        sums[f"{mode}.{name}"].append(v)
                        if name in BY_CELL:
                            sums[f"{mode}.{name}.{trial.kind}.k{trial.k}"].append(v)
            acc = sums.get(KEY, [])
            series[KEY].append(sum(acc) / len(acc) if acc else math.nan)
            if progress is not None:
                progress(r + 1, cfg.rounds)
        extras = store.extras()
    finally:
        store.close()
    final = {k: sum(v) / len(v) for k, v in sorted(sums.items())}
    final["trials"] = float(sum(1 for t in world.trials if t.measure_round < cfg.rounds))
    final["dropped"] = float(world.dropped)
    return RunResult(cfg, seed, series, final, {**extras, "stale_pairs": len(world.stale)})
