"""The agent policy interface (simulation/policy.py; docs/evaluation.md, "Plugging in an
agent policy"): the built-in archetypes through it give the runs recorded before it
existed, bit for bit; a plugged policy changes the run it is plugged into, and only
through its seats; a bad spec or a policy that fails while deciding is one clear line and
exit 2, never a traceback.

``fixtures/simulation/default_policies.json`` was recorded on commit 2675be8 (before the
interface) and is never re-recorded: twenty small runs (20 agents, 60 rounds, seeds 1
and 2) of the protocol in every mix, every archetype in one custom mix, the visible-vote
ablation (who speaks first), the protocol without deliberation and every voting baseline.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ostrom import layout
from ostrom.cli.main import main
from ostrom.simulation import archetypes as arch
from ostrom.simulation import policy as pol
from ostrom.simulation.config import ConfigError, SimConfig, from_mapping, parse_policy
from ostrom.simulation.run import simulate

RECORDED = layout.ROOT / "property_tests" / "fixtures" / "simulation" / "default_policies.json"
EXAMPLE = layout.ROOT / "examples" / "simulation" / "policy.py"
SMALL = SimConfig(agents=20, rounds=60, artifacts=120)
ENV = {**os.environ, "PYTHONPATH": str(layout.ROOT / "reference")}


def _recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDED.read_text(encoding="utf-8"))
    return data


def _now(entry: dict[str, Any]) -> dict[str, Any]:
    """The run ``entry`` records, run now, in the form it was recorded in."""
    cfg = from_mapping(entry["config"])
    r = simulate(cfg, entry["seed"]).to_dict(with_series=True)
    doc = {"config": cfg.to_dict(), "seed": entry["seed"], **r}
    out: dict[str, Any] = json.loads(json.dumps(doc, allow_nan=False))
    return out


# --- one code path: the built-ins through the interface ---------------------------------


def test_the_archetypes_through_the_interface_give_the_recorded_runs() -> None:
    recorded = _recorded()
    assert len(recorded) == 20
    for key, entry in recorded.items():
        assert _now(entry) == entry, key


def test_the_record_catches_a_changed_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: the honest seats drawing from a stream of their own (instead of
    the run's vote stream) change every protocol and majority run of the record."""
    real = pol.Seats.__init__

    def own_stream(self: pol.Seats, cfg: SimConfig, seed: int, rng: random.Random) -> None:
        real(self, cfg, seed, rng)
        self.seats["honest"] = pol.Seat(pol.Archetype("honest", cfg, seed), random.Random(seed))

    monkeypatch.setattr(pol.Seats, "__init__", own_stream)
    recorded = _recorded()
    for key in ("protocol-moderate/1", "majority/2", "no_commit_reveal-high/1"):
        assert _now(recorded[key]) != recorded[key], key


def test_the_built_ins_and_the_base_are_policies() -> None:
    cfg = SimConfig()
    for kind in ("honest", "sycophant", "malicious", "strategic", "adaptive", "broken", "lazy"):
        assert isinstance(pol.Archetype(kind, cfg, 1), pol.AgentPolicy)
    assert isinstance(pol.Policy(), pol.AgentPolicy)
    with pytest.raises(ValueError, match="unknown archetype"):
        pol.Archetype("saboteur", cfg, 1)


def _ballot(quality: float = 0.72, kind: str = "review", deliberated: bool = True) -> arch.Ballot:
    return arch.Ballot("x0001", quality, quality >= 0.7, kind, 7, deliberated, (True,))


def test_an_observation_shows_a_reading_not_the_truth() -> None:
    cfg = SimConfig()
    b = _ballot()
    obs = pol.observe("a003", "honest", b, cfg)
    assert (obs.agent, obs.role, obs.artifact, obs.kind, obs.round) == (
        "a003",
        "honest",
        "x0001",
        "review",
        7,
    )
    assert obs.visible == (True,) and obs.threshold == cfg.accept_threshold
    assert "quality" not in repr(obs) and "good" not in repr(obs)
    # the reading is the honest archetype's: the same noise, the same draw
    assert obs.noise == cfg.deliberation_noise
    assert pol.observe("a003", "honest", _ballot(deliberated=False), cfg).noise == (
        cfg.perception_noise
    )
    r1, r2 = random.Random(5), random.Random(5)
    assert obs.read(r1) == arch.perceive(b.quality, cfg.deliberation_noise, r2)
    assert pol.ground_truth(obs) is b


def test_the_base_policy_derives_objections_and_disputes_from_its_vote() -> None:
    class No(pol.Policy):
        def vote(self, obs: pol.Observation, rng: random.Random) -> arch.Act:
            return arch.OPPOSE

    class Yes(pol.Policy):
        def vote(self, obs: pol.Observation, rng: random.Random) -> arch.Act:
            return arch.ENDORSE

    obs, rng = pol.observe("a1", "honest", _ballot(), SimConfig()), random.Random(1)
    assert No().objects(obs, rng) == arch.OPPOSE and No().disputes(obs, rng)
    assert Yes().objects(obs, rng) == arch.ABSTAIN and not Yes().disputes(obs, rng)
    assert Yes().reveals(obs, rng) == arch.ENDORSE and not Yes().speaks_first(obs)
    with pytest.raises(NotImplementedError):
        pol.Policy().vote(obs, rng)


# --- specs and loading -----------------------------------------------------------------------


def test_a_spec_names_module_attribute_and_archetype() -> None:
    s = parse_policy("examples/simulation/policy.py:Cautious")
    assert (s.module, s.attr, s.role, s.name) == (
        "examples/simulation/policy.py",
        "Cautious",
        "honest",
        "examples/simulation/policy.py:Cautious",
    )
    assert parse_policy("pkg.mod:make.policy=sycophant").role == "sycophant"
    for bad in ("", "nocolon", "m:", ":A", "m:A=", "m:A=saboteur", "m:1A", "m:A=b=c", 5):
        with pytest.raises(ConfigError, match="policy"):
            parse_policy(bad)
    with pytest.raises(ConfigError, match="policy: must be a string"):
        SimConfig(policy=5)  # type: ignore[arg-type]


def test_a_policy_for_an_archetype_nobody_is_drawn_as_is_refused() -> None:
    with pytest.raises(ConfigError, match="no agent is bloc"):
        SMALL.with_(policy="m:A=bloc")
    assert SMALL.with_(scenario="bloc", policy="m:A=bloc").policy == "m:A=bloc"


def test_no_policy_leaves_the_config_description_as_it_was() -> None:
    assert "policy" not in SMALL.to_dict()
    assert SMALL.with_(policy="m:A").to_dict()["policy"] == "m:A"


def _file(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


POLICIES = '''
import random
from ostrom.simulation.policy import Policy

class Reject(Policy):
    """Rejects everything (keeps nothing on a dispute ballot)."""
    def vote(self, obs, rng):
        return "oppose"

class Counting(Policy):
    """Honest by its reading, and counts its calls (state of its own run)."""
    def __init__(self):
        self.calls = 0
    def vote(self, obs, rng):
        self.calls += 1
        return "endorse" if obs.read(rng) >= obs.threshold else "oppose"

class Boom(Policy):
    def vote(self, obs, rng):
        if obs.round >= 3:
            raise RuntimeError("model offline")
        return "endorse"

class Yes(Policy):
    def vote(self, obs, rng):
        return "yes"

class Sure(Policy):
    def vote(self, obs, rng):
        return "endorse"
    def disputes(self, obs, rng):
        return 1

def factory():
    return Reject()

def broken_factory():
    raise ValueError("no API key")

INSTANCE = Reject()
NOT_A_POLICY = 42

class Half:
    def vote(self, obs, rng):
        return "endorse"
'''


def test_load_policy_builds_from_an_object_a_class_or_a_factory(tmp_path: Path) -> None:
    path = _file(tmp_path, "pols.py", POLICIES)
    for attr in ("Reject", "factory", "INSTANCE"):
        p = pol.load_policy(f"{path}:{attr}")
        assert isinstance(p, pol.AgentPolicy) and type(p).__name__ == "Reject"
    assert pol.load_policy(f"{path}:Counting") is not pol.load_policy(f"{path}:Counting")
    # an importable module works as well as a file
    assert type(pol.load_policy("ostrom.simulation.policy:Policy")).__name__ == "Policy"


def test_a_bad_policy_is_one_clear_line(tmp_path: Path) -> None:
    path = _file(tmp_path, "pols.py", POLICIES)
    raising = _file(tmp_path, "raising.py", "raise ImportError('needs torch')\n")
    cases = {
        "no_such_module_xyz:P": "no module 'no_such_module_xyz'",
        f"{tmp_path / 'missing.py'}:P": "no such file",
        f"{path}:Nope": "has no attribute 'Nope'",
        f"{path}:NOT_A_POLICY": r"not a policy \(no vote, objects",
        f"{path}:Half": r"Half\) is not a policy \(no objects, reveals, disputes, speaks_first",
        f"{path}:broken_factory": "building it raised ValueError: no API key",
        f"{raising}:P": "importing .* raised ImportError: needs torch",
        "m:A=saboteur": "'saboteur' is not an archetype",
    }
    for spec, message in cases.items():
        with pytest.raises(pol.PolicyError, match=message) as info:
            pol.load_policy(spec)
        assert "\n" not in str(info.value), spec


# --- a plugged policy in a run -----------------------------------------------------------------


def test_a_plugged_policy_changes_the_run_only_through_its_seats(tmp_path: Path) -> None:
    path = _file(tmp_path, "pols.py", POLICIES)
    base = simulate(SMALL, 1)
    rejecting = simulate(SMALL.with_(policy=f"{path}:Reject"), 1)
    assert rejecting.final != base.final
    again = simulate(SMALL.with_(policy=f"{path}:Reject"), 1)
    assert again.final == rejecting.final and again.series == rejecting.series  # deterministic
    # every governance asks the seats: the plug changes a baseline too
    for governance in ("majority", "majority_open", "weighted_majority"):
        c = SMALL.with_(governance=governance)
        assert simulate(c.with_(policy=f"{path}:Reject"), 1).final != simulate(c, 1).final
    # and another archetype's seats
    syc = simulate(SMALL.with_(policy=f"{path}:Reject=sycophant"), 1)
    assert syc.final != base.final and syc.final != rejecting.final


def test_a_policy_is_built_afresh_for_every_run(tmp_path: Path) -> None:
    path = _file(tmp_path, "pols.py", POLICIES)
    c = SMALL.with_(policy=f"{path}:Counting")
    first, second = simulate(c, 2), simulate(c, 2)
    assert first.final == second.final and first.extras == second.extras


def test_a_policy_that_fails_while_deciding_names_itself(tmp_path: Path) -> None:
    path = _file(tmp_path, "pols.py", POLICIES)
    with pytest.raises(pol.PolicyError) as info:
        simulate(SMALL.with_(policy=f"{path}:Boom"), 1)
    msg = str(info.value)
    assert f"policy {path}:Boom (honest seat), deciding " in msg
    assert "at round 3, agent a0" in msg and "raised RuntimeError: model offline" in msg
    with pytest.raises(pol.PolicyError, match=r"deciding vote .* answered 'yes', not one of"):
        simulate(SMALL.with_(policy=f"{path}:Yes"), 1)
    with pytest.raises(pol.PolicyError, match=r"deciding disputes .* answered 1, not True/False"):
        simulate(SMALL.with_(policy=f"{path}:Sure"), 1)


# --- the command line ----------------------------------------------------------------------


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["simulate", *args, "--quiet"], catch_exceptions=False)


def test_cli_bad_specs_and_failing_policies_are_exit_2_without_a_traceback(
    tmp_path: Path,
) -> None:
    path = _file(tmp_path, "pols.py", POLICIES)
    size = ("--rounds", "10", "--agents", "20", "--jobs", "1")
    for spec, message in (
        ("no_such_module_xyz:P", "no module"),
        (f"{path}:Nope", "has no attribute"),
        (f"{path}:NOT_A_POLICY", "not a policy"),
        (f"{path}:broken_factory", "building it raised ValueError"),
        ("m:A=saboteur", "is not an archetype"),
        (f"{path}:Boom", "at round 3, agent a0"),
        (f"{path}:Yes", "answered 'yes'"),
    ):
        r = _cli("--policy", spec, *size)
        assert r.exit_code == 2, (spec, r.stderr)
        assert message in r.stderr and "Traceback" not in r.stderr, (spec, r.stderr)
    # the forgetting model asks its own hook (test_simulation_policy_families.py)
    r = _cli("--experiment", "forgetting", "--policy", f"{path}:Reject")
    assert r.exit_code == 2 and "no forgets method" in r.stderr
    assert "--policy MODULE:ATTR[=ARCHETYPE]" in _cli("--help").stdout


def _finals(stdout: str) -> list[dict[str, Any]]:
    return [run["final"] for run in json.loads(stdout)["runs"]]


def test_the_example_runs_through_the_cli_and_changes_the_result() -> None:
    """The example end to end, as docs/evaluation.md shows it (a process of its own, two
    workers: each loads the file), against the default honest seats."""
    size = ["--rounds", "60", "--agents", "20", "--seeds", "2", "--json", "--quiet"]
    spec = f"{EXAMPLE}:Cautious"
    cmd = [sys.executable, "-m", "ostrom", "simulate", "--policy", spec, "--jobs", "2", *size]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["label"] == f"protocol [policy {spec}=honest]"
    plugged = _finals(proc.stdout)
    default = _cli(*size, "--jobs", "1")
    assert default.exit_code == 0, default.stderr
    honest = _finals(default.stdout)
    assert plugged != honest  # the plug really changes the run
    # the same plugged runs in this process, one worker: the pool does not change them
    same = _cli("--policy", spec, *size, "--jobs", "1")
    assert same.exit_code == 0 and _finals(same.stdout) == plugged


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40) | st.integers() | st.none() | st.lists(st.text(max_size=5)))
def test_any_policy_spec_is_parsed_or_refused_with_a_config_error(spec: object) -> None:
    """The ``--policy`` option and the config field ``policy`` are hostile input: a spec
    is parsed or refused with ``ConfigError``, nothing else (nothing is imported here)."""
    try:
        parsed = parse_policy(spec)
    except ConfigError:
        return
    assert isinstance(spec, str) and parsed.module and parsed.attr
    assert parsed.role in arch_names()


def arch_names() -> set[str]:
    from ostrom.simulation.config import ARCHETYPES

    return set(ARCHETYPES)
