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

from ostrom.simulation import archetypes as arch
from ostrom.simulation.config import ARCHETYPES, ConfigError, PolicySpec, SimConfig, parse_policy
from ostrom.simulation.world import stream

#: The acts a ``vote``, ``objects`` or ``reveals`` decision may answer.
ACTS: Final = (arch.ENDORSE, arch.OPPOSE, arch.ABSTAIN, arch.GARBAGE)
#: The decisions of ``AgentPolicy``, in the order the module doc lists them.
DECISIONS: Final = ("vote", "objects", "reveals", "disputes", "speaks_first")


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


@runtime_checkable
class AgentPolicy(Protocol):
    """An agent's decisions (the module doc says what each one answers).  Subclass
    ``Policy`` to get the usual defaults and write only ``vote``."""

    def vote(self, obs: Observation, rng: random.Random) -> arch.Act: ...

    def objects(self, obs: Observation, rng: random.Random) -> arch.Act: ...

    def reveals(self, obs: Observation, rng: random.Random) -> arch.Act: ...

    def disputes(self, obs: Observation, rng: random.Random) -> bool: ...

    def speaks_first(self, obs: Observation) -> bool: ...


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


def _is_policy(obj: object) -> bool:
    """An object (not a class) with every decision as a method."""
    return not isinstance(obj, type) and all(callable(getattr(obj, d, None)) for d in DECISIONS)


def load_policy(spec: str | PolicySpec) -> AgentPolicy:
    """A fresh policy from ``spec`` (called once per run, so a policy's state is its
    run's).  ATTR may be a policy object, or a class or function that returns one when
    called with no arguments.  Every failure is a ``PolicyError`` in one line: no such
    module or file, no such attribute, not a policy, raised while importing or building."""
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
    if not _is_policy(obj):
        if not callable(obj):
            raise PolicyError(
                f"policy {s.name}: not a policy (no {_missing(obj)} method) and not a "
                "class or factory"
            )
        try:
            obj = obj()
        except Exception as exc:
            raise PolicyError(
                f"policy {s.name}: building it raised {type(exc).__name__}: {exc}"
            ) from None
        if not _is_policy(obj):
            raise PolicyError(
                f"policy {s.name}: what it built ({type(obj).__name__}) is not a policy "
                f"(no {_missing(obj)} method; see ostrom.simulation.policy.AgentPolicy)"
            )
    policy: AgentPolicy = obj
    return policy


def _missing(obj: object) -> str:
    return ", ".join(d for d in DECISIONS if not callable(getattr(obj, d, None)))


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

    def _where(self, decision: str, obs: Observation) -> str:
        return (
            f"policy {self.name} ({obs.role} seat), deciding {decision} at round {obs.round}, "
            f"agent {obs.agent}, artifact {obs.artifact}"
        )

    def _call(self, decision: str, obs: Observation, fn: Callable[[Observation], Any]) -> Any:
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

    def _flag(self, decision: str, obs: Observation, fn: Callable[[Observation], Any]) -> bool:
        answer = self._call(decision, obs, fn)
        if not isinstance(answer, bool):
            raise PolicyError(f"{self._where(decision, obs)}: answered {answer!r}, not True/False")
        return answer


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
    "AgentPolicy",
    "Archetype",
    "Observation",
    "Policy",
    "PolicyError",
    "Seat",
    "Seats",
    "ground_truth",
    "load_policy",
    "observe",
]
