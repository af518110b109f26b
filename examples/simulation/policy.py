"""An agent policy to plug into the curation model (docs/evaluation.md, "Plugging in an
agent policy"):

    ostrom simulate --policy examples/simulation/policy.py:Cautious --rounds 60 --agents 20

gives the honest agents' seats to ``Cautious`` (``...:Cautious=sycophant`` would give it
the sycophants' instead).  It is a heuristic, not a model: no network, no weights.  The
one function a team with an LLM replaces is ``Cautious.judge``: everything else (how a
judgement becomes a vote, an objection, a dispute) is the interface's plumbing.

``Cautious`` is conservative about change: it accepts a new artifact only when its
reading clears the bar by a margin, and votes to retract an established one (a dispute
ballot) only when its reading falls short of the bar by the same margin; in between it
keeps the status quo.  Objections and disputes follow its vote (``Policy``'s defaults).
"""

from __future__ import annotations

import random

from ostrom.simulation.archetypes import ENDORSE, OPPOSE, Act
from ostrom.simulation.policy import Observation, Policy


class Cautious(Policy):
    """Endorse (accept / keep) or oppose (reject / retract) by a margin around the bar."""

    #: How far past the bar a reading must be before the agent changes anything.
    margin = 0.05

    def judge(self, obs: Observation, rng: random.Random) -> bool:
        """Whether the artifact belongs in the knowledge base: THE function to replace
        with an LLM call.  An LLM version would build a prompt from what the agent
        observes (in a real deployment the artifact's text, fetched by ``obs.artifact``;
        here the simulation has only a latent quality, so ``obs.read`` stands in for it),
        the ballot (``obs.kind``: "review" = accept a new artifact?, "dispute" = keep an
        established one?), the round and the votes it can see (``obs.visible``), and parse
        the answer into True/False.  Use ``rng`` for any sampling, so runs stay
        reproducible."""
        reading = obs.read(rng)
        if obs.kind == "dispute":  # keep unless clearly below the bar
            return reading >= obs.threshold - self.margin
        return reading >= obs.threshold + self.margin  # accept only when clearly above

    def vote(self, obs: Observation, rng: random.Random) -> Act:
        return ENDORSE if self.judge(obs, rng) else OPPOSE
