"""The agents' private side of forgetting: when each one looks, and what it votes.

An honest agent (``careful`` or ``sloppy``) judges an item exactly as docs/forgetting.md's
agent side says — ``ostrom.protocol.forgetting``'s decay ``D``, keep score
``C = ω_D·D + ω_R·R`` and confidence ``c = (θ − C)/θ`` in micro-units — with its own
reading of the relevance: ``R_a = clip(R + ε, 0, 1)``, ``ε ~ N(0, σ_kind)`` drawn afresh at
each look (``R`` from ``relevance.Prepared``; ``D`` from the item's last access, which every
agent sees).  It is ``forgetting.assess`` with the relevance supplied and the decay of each
elapsed time computed once per run (``D`` depends on the elapsed epochs only).

An ``eraser`` is the adversary of forgetting: it knows what is still useful and votes to
forget exactly that, with confidence 1; it never helps forget what should go.

Agents look in sweeps: agent number i assesses, at every epoch t with
``t ≡ i (mod sweep_every)``, every item it may vote on and has not voted on yet (a forget
vote is final: the orchestrator keeps one per agent and artifact).

A plugged policy (``ForgetConfig.policy``; ``ostrom.simulation.policy``, hook ``forgets``)
takes the agents of one kind: ``confidence`` then asks it, with a ``ForgetObservation``,
instead of the kind's rule, and every mechanism in which agents vote (the protocol, the
single curator, the majority) gets its answers.  The other kinds keep their rule and the
judgment stream; the policy draws from a stream of its own.
"""

from __future__ import annotations

from ostrom.protocol.agents import MICRO, micro
from ostrom.protocol.forgetting import checked_relevance, decay, forget_confidence_micro, keep_score
from ostrom.protocol.params import Params
from ostrom.simulation.forgetting.config import KINDS, POLICY_ROLE, ForgetConfig
from ostrom.simulation.forgetting.relevance import Prepared
from ostrom.simulation.forgetting.world import World
from ostrom.simulation.policy import ForgetObservation, plug
from ostrom.simulation.world import stream


class RelevanceBook:
    """R of each item against the context of its window: the distinct query texts of the
    ``context_window`` epochs before the window that contains t (epoch 0's own queries for
    the first window).  Computed once per item and window."""

    def __init__(self, world: World, window: int) -> None:
        self.world = world
        self.window = window
        self._scorer: dict[int, Prepared] = {}
        self._r: dict[tuple[str, int], float] = {}

    def context(self, t: int) -> list[str]:
        w = t // self.window
        lo, hi = max(0, (w - 1) * self.window), max(1, w * self.window)
        seen = dict.fromkeys(
            q.text
            for e in range(lo, min(hi, len(self.world.queries)))
            for q in self.world.queries[e]
        )
        return list(seen)

    def r(self, item: str, t: int) -> float:
        w = t // self.window
        key = (item, w)
        value = self._r.get(key)
        if value is None:
            scorer = self._scorer.get(w)
            if scorer is None:
                scorer = self._scorer[w] = Prepared(self.context(t))
            value = self._r[key] = scorer(self.world.item(item).text)
        return value


class Judges:
    """Every agent's judgment in one run (deterministic per seed)."""

    def __init__(self, cfg: ForgetConfig, world: World, params: Params, seed: int) -> None:
        self.cfg = cfg
        self.world = world
        self.params = params
        self.relevance = RelevanceBook(world, cfg.context_window)
        self.rng = stream(seed, "forgetting:judgment")
        self.noise = {"careful": cfg.noise_careful, "sloppy": cfg.noise_sloppy, "eraser": 0.0}
        self.confidence_weighting = "no_confidence" not in cfg.ablations
        self.patience = (
            micro(params.alpha) if cfg.vote_rule == "at_alpha" else 1
        )  # the least confidence (micro) at which an honest agent sends its vote
        self._decay: dict[int, float] = {}
        self.index = {a: i for i, a in enumerate(world.agents)}
        self.plug = plug(cfg.policy, KINDS, POLICY_ROLE, "forgetting", seed)

    def sweeps(self, agent: str, t: int) -> bool:
        """Does ``agent`` look at its items at epoch ``t``?"""
        return self.index[agent] % self.cfg.sweep_every == t % self.cfg.sweep_every

    def decay_of(self, elapsed: int) -> float:
        d = self._decay.get(elapsed)
        if d is None:
            p = self.params
            d = self._decay[elapsed] = decay(elapsed, p.decay_scales, p.decay_weights)
        return d

    def confidence(self, agent: str, item: str, t: int, last_access: int) -> int:
        """The confidence (micro-units) of ``agent``'s forget vote on ``item`` at ``t``;
        0 means it keeps the item (sends no vote)."""
        kind = self.world.kind[agent]
        if self.plug is not None and kind == self.plug.role:
            return self._asked(agent, kind, item, t, last_access)
        if kind == "eraser":
            return MICRO if self.world.item(item).useful(t) else 0
        p = self.params
        r = self.relevance.r(item, t) + self.rng.gauss(0.0, self.noise[kind])
        r = checked_relevance(min(1.0, max(0.0, r)))
        c = keep_score(self.decay_of(t - last_access), r, p.omega_D, p.omega_R)
        conf = forget_confidence_micro(c, p.theta)
        if conf < self.patience:
            return 0
        return MICRO if not self.confidence_weighting else conf

    def _asked(self, agent: str, kind: str, item: str, t: int, last_access: int) -> int:
        """The plugged policy's forget vote (micro-units; 0: none).  The protocol's
        ``no_confidence`` ablation still sends any vote at confidence 1: it changes the
        protocol, not the agent."""
        assert self.plug is not None
        p, elapsed = self.params, t - last_access
        obs = ForgetObservation(
            agent=agent,
            role=kind,
            artifact=item,
            text=self.world.item(item).text,
            round=t,
            elapsed=elapsed,
            decay=self.decay_of(elapsed),
            noise=self.noise[kind],
            theta=p.theta,
            alpha=p.alpha,
            omega_D=p.omega_D,
            omega_R=p.omega_R,
            patience=self.patience / MICRO,
            _relevance=self.relevance.r(item, t),
        )
        conf = micro(self.plug.seat.forgets(obs))
        if conf <= 0:
            return 0
        return MICRO if not self.confidence_weighting else conf


__all__ = ["Judges", "RelevanceBook"]
