"""The agent policy interface: what an agent of the curation model decides, and the one
code path through which the runs ask it (docs/evaluation.md, "Plugging in an agent policy").

The paper's simulation plays agents of fixed archetypes (``archetypes``).  An evaluation
with real agents (an LLM behind each vote) needs the same runs with another decision
maker in some seats, so the runs never call the archetypes directly: they ask a
``Seat`` (a policy, the random stream it draws from, and its name), and a seat asks its
``AgentPolicy``.  The built-in archetypes are policies (``Archetype``, an adapter over
``archetypes.vote`` and friends), so a run with no plugged policy takes exactly the
path it took before the interface existed: property_tests/simulation/test_simulation_policy.py
holds twenty small runs bit-identical to results recorded on the code before it.

The decisions, each the archetypes' own:

* ``vote``: the act on a review or dispute ballot, and an arbiter's decision:
  ``endorse`` (accept / keep), ``oppose`` (reject / retract), ``abstain`` (no vote), or
  ``garbage`` (a malformed message, which the protocol sanctions);
* ``objects``: on a fast-tracked artifact, ``oppose`` objects (sends it to formal review),
  ``garbage`` is a malformed objection, anything else lets it through;
* ``reveals``: a committed vote's reveal: ``endorse`` opens the commitment, ``abstain``
  never reveals (a violation), ``garbage`` sends a reveal that does not open it;
* ``disputes``: whether to dispute an active artifact it looks at (``True``/``False``);
* ``speaks_first``: when votes are visible (``no_commit_reveal``, ``majority_open``),
  whether it casts its vote before the others (``True``/``False``).

The other experiments' agents decide other things, each through one optional hook (a
policy for them needs that hook only; ``HOOKS`` maps experiment to hook):

* ``forgets`` (the ``forgetting`` experiment): the confidence of a forget vote on an item
  the agent assesses in a sweep, a number in [0, 1]; 0 keeps the item (no vote).  It
  observes a ``ForgetObservation``: the item, the epoch, the decay of its last access
  (public), the protocol's θ, α and weights, and ``read(rng)``, the agent's noisy reading
  of the item's relevance to the recent queries (the one its kind takes);
* ``accepts`` (``plasticity`` and ``retrieval``): whether a reviewer, an arbiter or (the
  plasticity majority baseline) a panelist accepts a proposed value for a slot
  (``True``/``False``), observing an ``UpdateObservation``: the slot, the value, whether
  it is marked transient, the round, and what the agent believes the slot holds.

Which update is proposed is not a decision there: the stream of proposals is the
experiments' treatment, drawn from the seed before any mechanism runs, so that every
mechanism faces the same proposals (a policy could not change it without unpairing the
runs).  A run with no plugged policy takes the model's own rule for every agent, exactly
the code it ran before the hooks existed (property_tests/simulation: the committed
evidence rows, reproduced).

What a policy observes (``Observation``): its own id and role (the archetype whose seat
it holds), the artifact's id, the ballot's kind, the round, whether a deliberation phase
preceded the vote, the endorsements already cast and visible to it, and a *reading* of the
artifact's quality: ``obs.read(rng)`` is the latent quality plus Gaussian noise of the
run's ``perception_noise`` (``deliberation_noise`` after deliberation), the same reading
an honest archetype takes.  It never sees the quality itself nor whether the artifact is
good: the built-in archetypes that the paper models with privileged knowledge (the bloc
knows the truth) read it through ``ground_truth``, which a plugged policy has no reason to
call.

Determinism: every decision gets a seeded ``random.Random``.  The built-in archetypes
share the run's vote stream (as they always did); a plugged policy gets a stream of its
own (``world.stream(seed, "policy")``), so the same config and seed give the same run.

A plugged policy's answers are checked: a wrong type or value, or an exception, stops the
run with ``PolicyError`` (a ``ConfigError``: the engine reports it without a traceback)
naming the policy, the decision, the round, the agent and the artifact.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

from ostrom.protocol.agents import MICRO
from ostrom.protocol.forgetting import forget_confidence_micro
from ostrom.protocol.forgetting import keep_score as fkeep_score
from ostrom.simulation import archetypes as arch
from ostrom.simulation.config import (
    ARCHETYPES,
    ConfigError,
    PolicySpec,
    SimConfig,
    is_number,
    parse_policy,
)
from ostrom.simulation.world import stream

#: The acts a ``vote``, ``objects`` or ``reveals`` decision may answer.
ACTS: Final = (arch.ENDORSE, arch.OPPOSE, arch.ABSTAIN, arch.GARBAGE)
#: The decisions of ``AgentPolicy``, in the order the module doc lists them.
DECISIONS: Final = ("vote", "objects", "reveals", "disputes", "speaks_first")
#: The experiments whose agents decide through one optional hook, and that hook (a policy
#: plugged into them needs only it; any other experiment needs ``DECISIONS``).
HOOKS: Final[dict[str, str]] = {
    "forgetting": "forgets",
    "plasticity": "accepts",
    "retrieval": "accepts",
}


def needs(experiment: str) -> tuple[str, ...]:
    """The methods a policy plugged into ``experiment`` must have."""
    hook = HOOKS.get(experiment)
    return DECISIONS if hook is None else (hook,)


class PolicyError(ConfigError):
    """A policy that cannot be loaded, or that raised or answered wrongly while deciding
    (the message names it and, during a run, the decision, round, agent and artifact)."""


@dataclass(frozen=True)
class Observation:
    """What an agent perceives when it decides (see the module doc).  ``threshold`` is the
    reading at which the simulation's honest archetype accepts (``accept_threshold``)."""

    agent: str
    role: str
    artifact: str
    kind: str  # "review" (a review ballot, an objection, an arbitration) or "dispute"
    round: int
    deliberated: bool
    visible: tuple[bool, ...]
    noise: float  # the sd of this agent's reading on this ballot
    threshold: float
    _ballot: arch.Ballot = field(repr=False, compare=False)

    def read(self, rng: random.Random) -> float:
        """A noisy reading of the artifact's quality (what the agent perceives of it)."""
        return arch.perceive(self._ballot.quality, self.noise, rng)


def observe(agent: str, role: str, ballot: arch.Ballot, cfg: SimConfig) -> Observation:
    """The observation an agent in seat ``role`` has of ``ballot``."""
    noise = cfg.deliberation_noise if ballot.deliberated else cfg.perception_noise
    return Observation(
        agent,
        role,
        ballot.artifact,
        ballot.kind,
        ballot.now,
        ballot.deliberated,
        ballot.visible,
        noise,
        cfg.accept_threshold,
        ballot,
    )


def ground_truth(obs: Observation) -> arch.Ballot:
    """The simulation's whole ballot behind ``obs`` (latent quality, the truth): what the
    built-in archetypes are modelled with, not what an agent perceives."""
    return obs._ballot


@dataclass(frozen=True)
class ForgetObservation:
    """What an agent of the forgetting model perceives when it assesses a held item (the
    hook ``forgets``).  ``decay`` is D of the epochs since the item's last access (every
    agent sees the accesses); ``keep`` and ``confidence`` are docs/forgetting.md's keep
    score and forget confidence for a relevance reading, with the run's θ and weights;
    ``patience`` is the least confidence at which the model's honest agents send a vote
    (α under the ``at_alpha`` rule).  A forget vote is final: an agent is not asked again
    about an item it voted on."""

    agent: str
    role: str
    artifact: str  # the item
    text: str
    round: int  # the epoch (one orchestrator tick)
    elapsed: int  # epochs since the item's last access
    decay: float
    noise: float  # the sd of this agent's reading of the relevance
    theta: float
    alpha: float
    omega_D: float
    omega_R: float
    patience: float
    _relevance: float = field(repr=False, compare=False)

    def read(self, rng: random.Random) -> float:
        """A noisy reading of the item's relevance to the recent queries, in [0, 1]: the
        relevance plus Gaussian noise of the seat's kind (the reading its kind takes)."""
        return min(1.0, max(0.0, self._relevance + rng.gauss(0.0, self.noise)))

    def keep(self, relevance: float) -> float:
        """The keep score ``C = ω_D·D + ω_R·R`` for a relevance reading."""
        return fkeep_score(self.decay, relevance, self.omega_D, self.omega_R)

    def confidence(self, relevance: float) -> float:
        """The forget confidence ``(θ − C)/θ`` (0 when ``C ≥ θ``) for a relevance reading,
        as the protocol's agent side computes it (in micro-units, then as a number)."""
        return forget_confidence_micro(self.keep(relevance), self.theta) / MICRO


@dataclass(frozen=True)
class UpdateObservation:
    """What a reviewer, an arbiter or a panelist of the plasticity and retrieval models
    perceives of a proposed value (the hook ``accepts``).  ``belief`` is what the agent
    believes the slot holds (the truth, or the old value while it is stale: the model's
    own notion of what the agent knows); ``ballot`` is ``review``, ``arbitration`` or
    ``panel`` (the majority baseline); ``noise`` the model's chance that an honest
    judgment is flipped (a policy may ignore it)."""

    agent: str
    role: str
    artifact: str
    slot: str
    value: str
    transient: bool
    round: int
    belief: str
    ballot: str
    noise: float


@runtime_checkable
class AgentPolicy(Protocol):
    """An agent's decisions (the module doc says what each one answers).  Subclass
    ``Policy`` to get the usual defaults and write only ``vote``."""

    def vote(self, obs: Observation, rng: random.Random) -> arch.Act: ...

    def objects(self, obs: Observation, rng: random.Random) -> arch.Act: ...

    def reveals(self, obs: Observation, rng: random.Random) -> arch.Act: ...

    def disputes(self, obs: Observation, rng: random.Random) -> bool: ...

    def speaks_first(self, obs: Observation) -> bool: ...

    # The optional hooks (``HOOKS``): a policy for the forgetting experiment writes
    # ``forgets(obs: ForgetObservation, rng) -> float``, one for plasticity and retrieval
    # ``accepts(obs: UpdateObservation, rng) -> bool``.  They are not members of this
    # protocol, so that a policy of the curation model needs neither.


class Policy:
    """A base for plugged policies: write ``vote``; an objection and a dispute follow the
    vote (an agent objects to or disputes what it would reject), every commitment is
    revealed, and the agent never pushes to vote first, as the honest archetype does."""

    def vote(self, obs: Observation, rng: random.Random) -> arch.Act:
        raise NotImplementedError(f"{type(self).__name__}.vote")

    def objects(self, obs: Observation, rng: random.Random) -> arch.Act:
        return arch.OPPOSE if self.vote(obs, rng) == arch.OPPOSE else arch.ABSTAIN

    def reveals(self, obs: Observation, rng: random.Random) -> arch.Act:
        return arch.ENDORSE

    def disputes(self, obs: Observation, rng: random.Random) -> bool:
        return self.vote(obs, rng) == arch.OPPOSE

    def speaks_first(self, obs: Observation) -> bool:
        return False


class Archetype:
    """A built-in archetype as a policy: each decision is the ``archetypes`` function of
    the same name, reached through the module (so a test's spy on ``archetypes.vote``
    sees every vote, as before)."""

    def __init__(self, kind: str, cfg: SimConfig, seed: int) -> None:
        if kind not in ARCHETYPES:
            raise ValueError(f"unknown archetype {kind!r}")
        self.kind = kind
        self.cfg = cfg
        self.seed = seed

    def vote(self, obs: Observation, rng: random.Random) -> arch.Act:
        b = ground_truth(obs)
        return arch.vote(self.kind, obs.agent, b, self.cfg, rng, self.seed)

    def objects(self, obs: Observation, rng: random.Random) -> arch.Act:
        b = ground_truth(obs)
        return arch.objects(self.kind, obs.agent, b, self.cfg, rng, self.seed)

    def reveals(self, obs: Observation, rng: random.Random) -> arch.Act:
        return arch.reveals(self.kind, self.cfg, rng)

    def disputes(self, obs: Observation, rng: random.Random) -> bool:
        b = ground_truth(obs)
        return arch.disputes(self.kind, obs.agent, b, self.cfg, rng, self.seed)

    def speaks_first(self, obs: Observation) -> bool:
        b = ground_truth(obs)
        return arch.speaks_first(self.kind, obs.agent, b, self.cfg, self.seed)


# --- loading a plugged policy -----------------------------------------------------------


def _import(module: str) -> Any:
    """The module a spec names: a file (``*.py`` or a path that exists) loaded once under
    a name of its own, or an importable module."""
    path = Path(module)
    if module.endswith(".py") or path.exists():
        if not path.is_file():
            raise PolicyError(f"policy: no such file {module!r}")
        resolved = path.resolve()
        name = f"ostrom_policy_{hashlib.sha256(str(resolved).encode()).hexdigest()[:16]}"
        if name in sys.modules:
            return sys.modules[name]
        loader_spec = importlib.util.spec_from_file_location(name, resolved)
        if loader_spec is None or loader_spec.loader is None:
            raise PolicyError(f"policy: cannot load {module!r} as Python")
        mod = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = mod
        try:
            loader_spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
        return mod
    return importlib.import_module(module)


def _parse(spec: str) -> PolicySpec:
    try:
        return parse_policy(spec)
    except PolicyError:
        raise
    except ConfigError as exc:
        raise PolicyError(str(exc)) from None


def _is_policy(obj: object, wanted: tuple[str, ...] = DECISIONS) -> bool:
    """An object (not a class) with every decision of ``wanted`` as a method."""
    return not isinstance(obj, type) and all(callable(getattr(obj, d, None)) for d in wanted)


def load_policy(spec: str | PolicySpec, wanted: tuple[str, ...] = DECISIONS) -> AgentPolicy:
    """A fresh policy from ``spec`` (called once per run, so a policy's state is its
    run's).  ATTR may be a policy object, or a class or function that returns one when
    called with no arguments; it must have the methods ``wanted`` (``needs(experiment)``:
    the curation model's five decisions, or another experiment's hook).  Every failure is
    a ``PolicyError`` in one line: no such module or file, no such attribute, not a
    policy, raised while importing or building."""
    s = spec if isinstance(spec, PolicySpec) else _parse(spec)
    try:
        mod = _import(s.module)
    except PolicyError:
        raise
    except ModuleNotFoundError as exc:
        raise PolicyError(f"policy {s.name}: no module {s.module!r} ({exc})") from None
    except Exception as exc:
        raise PolicyError(
            f"policy {s.name}: importing {s.module!r} raised {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = mod
    for part in s.attr.split("."):
        if not hasattr(obj, part):
            raise PolicyError(f"policy {s.name}: {s.module!r} has no attribute {s.attr!r}")
        obj = getattr(obj, part)
    if not _is_policy(obj, wanted):
        if not callable(obj):
            raise PolicyError(
                f"policy {s.name}: not a policy (no {_missing(obj, wanted)} method) and not "
                "a class or factory"
            )
        try:
            obj = obj()
        except Exception as exc:
            raise PolicyError(
                f"policy {s.name}: building it raised {type(exc).__name__}: {exc}"
            ) from None
        if not _is_policy(obj, wanted):
            raise PolicyError(
                f"policy {s.name}: what it built ({type(obj).__name__}) is not a policy "
                f"(no {_missing(obj, wanted)} method; see ostrom.simulation.policy."
                f"{'AgentPolicy' if wanted == DECISIONS else 'HOOKS'})"
            )
    policy: AgentPolicy = obj
    return policy


def _missing(obj: object, wanted: tuple[str, ...] = DECISIONS) -> str:
    return ", ".join(d for d in wanted if not callable(getattr(obj, d, None)))


# --- seats: how a run asks ----------------------------------------------------------------


@dataclass
class Seat:
    """A policy in a run: the stream it draws from and, for a plugged one, its name (its
    answers are then checked, and its exceptions reported as ``PolicyError``)."""

    policy: AgentPolicy
    rng: random.Random
    name: str | None = None  # None: a built-in archetype (trusted: a bug keeps its traceback)

    def vote(self, obs: Observation) -> arch.Act:
        if self.name is None:
            return self.policy.vote(obs, self.rng)
        return self._act("vote", obs, self.policy.vote)

    def objects(self, obs: Observation) -> arch.Act:
        if self.name is None:
            return self.policy.objects(obs, self.rng)
        return self._act("objects", obs, self.policy.objects)

    def reveals(self, obs: Observation) -> arch.Act:
        if self.name is None:
            return self.policy.reveals(obs, self.rng)
        return self._act("reveals", obs, self.policy.reveals)

    def disputes(self, obs: Observation) -> bool:
        if self.name is None:
            return self.policy.disputes(obs, self.rng)
        return self._flag("disputes", obs, lambda o: self.policy.disputes(o, self.rng))

    def speaks_first(self, obs: Observation) -> bool:
        if self.name is None:
            return self.policy.speaks_first(obs)
        return self._flag("speaks_first", obs, self.policy.speaks_first)

    def forgets(self, obs: ForgetObservation) -> float:
        """The hook ``forgets`` (a plugged policy only: the model's own agents decide in
        ``forgetting.judges``): a confidence in [0, 1], 0 for no vote."""
        fn = self.policy.forgets  # type: ignore[attr-defined]
        answer = self._call("forgets", obs, lambda o: fn(o, self.rng))
        if not is_number(answer) or not 0.0 <= answer <= 1.0:
            raise PolicyError(
                f"{self._where('forgets', obs)}: answered {answer!r}, not a number in [0, 1]"
            )
        return float(answer)

    def accepts(self, obs: UpdateObservation) -> bool:
        """The hook ``accepts`` (a plugged policy only)."""
        fn = self.policy.accepts  # type: ignore[attr-defined]
        return self._flag("accepts", obs, lambda o: fn(o, self.rng))

    def _where(self, decision: str, obs: Seen) -> str:
        return (
            f"policy {self.name} ({obs.role} seat), deciding {decision} at round {obs.round}, "
            f"agent {obs.agent}, artifact {obs.artifact}"
        )

    def _call(self, decision: str, obs: Any, fn: Callable[[Any], Any]) -> Any:
        try:
            return fn(obs)
        except Exception as exc:
            raise PolicyError(
                f"{self._where(decision, obs)}: raised {type(exc).__name__}: {exc}"
            ) from None

    def _act(
        self,
        decision: str,
        obs: Observation,
        fn: Callable[[Observation, random.Random], Any],
    ) -> arch.Act:
        answer = self._call(decision, obs, lambda o: fn(o, self.rng))
        if not isinstance(answer, str) or answer not in ACTS:
            raise PolicyError(
                f"{self._where(decision, obs)}: answered {answer!r}, not one of {', '.join(ACTS)}"
            )
        act: arch.Act = answer  # type: ignore[assignment]
        return act

    def _flag(self, decision: str, obs: Any, fn: Callable[[Any], Any]) -> bool:
        answer = self._call(decision, obs, fn)
        if not isinstance(answer, bool):
            raise PolicyError(f"{self._where(decision, obs)}: answered {answer!r}, not True/False")
        return answer


#: What a seat's error messages read of an observation (each has agent, role, artifact
#: and round).
Seen = Observation | ForgetObservation | UpdateObservation


@dataclass(frozen=True)
class Plug:
    """A policy plugged into a run of the forgetting, plasticity or retrieval model: the
    agents of ``role`` decide through ``seat`` (the others by the model's own rule)."""

    role: str
    seat: Seat


def plug(
    spec: str, roles: tuple[str, ...], default_role: str, experiment: str, seed: int
) -> Plug | None:
    """The plug of a run of ``experiment`` whose config says ``policy = spec`` (None for
    ""): the policy is built afresh and draws from a stream of its own, as in the
    curation model, so the same config and seed give the same run."""
    if not spec:
        return None
    try:
        s = parse_policy(spec, roles, default_role)
    except ConfigError as exc:
        raise PolicyError(str(exc)) from None
    policy = load_policy(s, needs(experiment))
    return Plug(s.role, Seat(policy, stream(seed, "policy"), s.name))


class Seats:
    """A run's seats: one per archetype, the built-in one on the run's vote stream, except
    the archetype a plugged policy (``cfg.policy``) takes, which gets the policy on a
    stream of its own.  Built once per run (a plugged policy is built afresh)."""

    def __init__(self, cfg: SimConfig, seed: int, rng_vote: random.Random) -> None:
        self.cfg = cfg
        self.builtin = {k: Seat(Archetype(k, cfg, seed), rng_vote) for k in ARCHETYPES}
        self.seats = dict(self.builtin)
        self.plugged: PolicySpec | None = None
        if cfg.policy:
            spec = parse_policy(cfg.policy)
            self.plugged = spec
            self.seats[spec.role] = Seat(load_policy(spec), stream(seed, "policy"), spec.name)

    def of(self, role: str) -> Seat:
        """The seat of the agents drawn as ``role``."""
        return self.seats[role]


__all__ = [
    "ACTS",
    "DECISIONS",
    "HOOKS",
    "AgentPolicy",
    "Archetype",
    "ForgetObservation",
    "Observation",
    "Plug",
    "Policy",
    "PolicyError",
    "Seat",
    "Seats",
    "Seen",
    "UpdateObservation",
    "ground_truth",
    "load_policy",
    "needs",
    "observe",
    "plug",
]
