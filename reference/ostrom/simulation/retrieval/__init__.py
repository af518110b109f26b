"""Plasticity at retrieval: what an agent retrieves from a memory of sentences after a fact
changed under interference, and whether it answers with the current value — the node's
governed search against three ungoverned memories (docs/evaluation.md, "Plasticity at
retrieval (experiment `retrieval`)").

Modules: ``config`` (``RetrievalConfig``), ``world`` (facts as sentences, trials, the
population without persona leak), ``index`` (the baselines' BM25 and the LSA vectors),
``stores`` (the node and the baselines), ``run`` (one run and its metrics),
``experiment`` (the cells).
"""

from ostrom.simulation.retrieval.config import RetrievalConfig
from ostrom.simulation.retrieval.run import run_retrieval

__all__ = ["RetrievalConfig", "run_retrieval"]
