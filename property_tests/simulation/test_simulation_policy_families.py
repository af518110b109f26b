"""A plugged agent policy in the forgetting, plasticity and retrieval experiments
(simulation/policy.py's hooks ``forgets`` and ``accepts``; docs/evaluation.md, "Plugging in
an agent policy").

Three things are held here:

* no change without a plug: a run of each experiment reproduces rows of its committed
  evidence (evaluation/<experiment>/runs.csv, written on the code before the hooks) bit
  for bit, in the cells whose agents decide through the hook (the protocol, the single
  curator and the majority of forgetting; the protocol and the majority panels of
  plasticity; the node of retrieval), and the committed descriptions of the cells are
  what the builders give now (the ``policy`` field adds nothing when empty);
* non-vacuity: a plugged policy changes each experiment's outcome, through its seats only;
* hostile input: a bad spec, a wrong kind, a policy without the hook or one that answers
  wrongly is one clear line, exit 2 on the command line, never a traceback.
"""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ostrom import layout
from ostrom.cli.main import main
from ostrom.simulation import experiments as ex
from ostrom.simulation import policy as pol
from ostrom.simulation.config import ConfigError
from ostrom.simulation.engine import Cell, Experiment
from ostrom.simulation.evidence import EVIDENCE_DIR, RUNS, load_evidence, write_evidence
from ostrom.simulation.forgetting.config import ForgetConfig
from ostrom.simulation.forgetting.run import run_forgetting
from ostrom.simulation.plasticity import mechanisms
from ostrom.simulation.plasticity.config import PlasticityConfig
from ostrom.simulation.plasticity.run import run_plasticity
from ostrom.simulation.retrieval.config import RetrievalConfig
from ostrom.simulation.retrieval.run import run_retrieval

ROOT = layout.ROOT


def _committed(name: str, label: str, scenario: str, seed: int) -> dict[str, str]:
    text = (ROOT / EVIDENCE_DIR / name / RUNS).read_text(encoding="utf-8")
    for row in csv.DictReader(io.StringIO(text)):
        if (row["label"], row["scenario"], row["seed"]) == (label, scenario, str(seed)):
            return row
    raise AssertionError(f"{name}: no committed row {label}, {scenario}, {seed}")


def _now(name: str, label: str, scenario: str, seed: int, tmp: Path) -> dict[str, str]:
    """The evidence row of one run of the full-size cell ``label``, run now (the same
    writer as ``--evidence``)."""
    full = ex.build_family(name)
    cell = full.cell(label)
    one = Experiment(
        name, "one run", (Cell(label, cell.config, (), (scenario,)),), (scenario,), (seed,)
    )
    result = ex.run_experiment(one, jobs=1, progress=False)
    write_evidence(result, tmp, ["ostrom", "test"], ("c0ffee", False))
    rows = list(csv.DictReader(io.StringIO((tmp / RUNS).read_text(encoding="utf-8"))))
    assert len(rows) == 1
    return rows[0]


def _differences(old: dict[str, str], new: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Every figure of the committed row that the new one does not give exactly (a figure
    the new run does not measure is the empty field, as in the file)."""
    return {k: (v, new.get(k, "")) for k, v in old.items() if new.get(k, "") != v}


# --- no plug, no change: the committed evidence, reproduced --------------------------------

ROWS = [
    ("forgetting", "protocol [c≥α]", "adversarial", 1),
    ("forgetting", "single_curator [c≥α]", "adversarial", 1),
    ("forgetting", "majority [c≥α]", "adversarial", 1),
    ("plasticity", "protocol [after]", "adv=0.20", 1),
    ("plasticity", "majority [after]", "adv=0.20", 1),
    pytest.param("retrieval", "ostrom [after]", "adv=0.20", 1, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("name", "label", "scenario", "seed"), ROWS)
def test_without_a_plug_a_run_reproduces_its_committed_evidence_row(
    name: str, label: str, scenario: str, seed: int, tmp_path: Path
) -> None:
    old = _committed(name, label, scenario, seed)
    assert _differences(old, _now(name, label, scenario, seed, tmp_path)) == {}


def test_the_row_check_catches_a_changed_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check can fail: honest panelists who never err (no noise draw) change the
    committed majority row."""
    real = mechanisms.judge

    def noiseless(
        world: Any,
        agent: str,
        slot: str,
        value: str,
        transient: bool,
        round: int,
        rng: random.Random,
        noise: float,
    ) -> bool:
        return real(world, agent, slot, value, transient, round, rng, 0.0)

    monkeypatch.setattr(mechanisms, "judge", noiseless)
    old = _committed("plasticity", "majority [after]", "adv=0.20", 1)
    assert _differences(old, _now("plasticity", "majority [after]", "adv=0.20", 1, tmp_path))


@pytest.mark.parametrize("name", ["forgetting", "plasticity", "retrieval"])
def test_the_committed_cells_are_what_the_builders_give(name: str) -> None:
    """An empty ``policy`` adds nothing to a cell's description: the committed meta.json
    describes exactly the cells the builder gives now (and the one shared builder of
    plasticity and retrieval gives what each gave before)."""
    ev = load_evidence(ROOT / EVIDENCE_DIR / name)
    full = ex.build_family(name)
    assert ev.meta["experiment"]["cells"] == full.to_dict()["cells"]
    assert ev.scenarios == full.scenarios and ev.seeds == full.seeds
    assert all("policy" not in c["config"] for c in ev.meta["experiment"]["cells"])


# --- a plugged policy changes the outcome ------------------------------------------------------

POLICIES = '''
from ostrom.simulation.policy import Policy

class ForgetAll:
    """Votes to forget everything it assesses, at full confidence."""
    def forgets(self, obs, rng):
        return 1.0

class Careful:
    """The careful agent's rule by hand: its own reading, the protocol's confidence,
    sent once it reaches the seat's patience."""
    def forgets(self, obs, rng):
        c = obs.confidence(obs.read(rng))
        return c if c >= obs.patience and c > 0 else 0.0

class AcceptAll:
    def accepts(self, obs, rng):
        return True

class Believer:
    """Accepts what it believes, never a transient value, never errs."""
    def accepts(self, obs, rng):
        return obs.value == obs.belief and not obs.transient

class Two:
    def forgets(self, obs, rng):
        return 2

class Maybe:
    def accepts(self, obs, rng):
        return "yes"

class Offline:
    def accepts(self, obs, rng):
        raise RuntimeError("model offline")

class VoteOnly(Policy):
    def vote(self, obs, rng):
        return "endorse"
'''


@pytest.fixture
def pols(tmp_path: Path) -> str:
    path = tmp_path / "family_policies.py"
    path.write_text(POLICIES, encoding="utf-8")
    return str(path)


SMALL_FORGET = ForgetConfig(vote_rule="at_alpha", epochs=250, scenario="adversarial")
SMALL_PLASTIC = PlasticityConfig(rounds=60)
SMALL_RETRIEVAL = RetrievalConfig(
    entities=5, rounds=36, counts=(0, 1, 2), trials_per_round=1, adversary_share=0.2
)


def test_a_forgetting_policy_changes_the_forgetting(pols: str) -> None:
    base = run_forgetting(SMALL_FORGET, 1)
    eager = run_forgetting(SMALL_FORGET.with_(policy=f"{pols}:ForgetAll"), 1)
    assert eager.final["wrongly_forgotten"] > base.final["wrongly_forgotten"]
    assert eager.final["reduction"] > base.final["reduction"]
    # the erasers' seats taken by the careful rule: their early full-confidence votes on
    # items still useful (final, so they count once the items are superseded) are gone
    tamed = run_forgetting(SMALL_FORGET.with_(policy=f"{pols}:Careful=eraser"), 1)
    assert tamed.final["reduction"] < base.final["reduction"]
    again = run_forgetting(SMALL_FORGET.with_(policy=f"{pols}:Careful=eraser"), 1)
    assert again.final == tamed.final  # deterministic: the policy has a stream of its own
    # every mechanism in which agents vote asks the plug; the others have nobody to ask
    for mech in ("single_curator", "majority"):
        c = SMALL_FORGET.with_(mechanism=mech)
        assert run_forgetting(c.with_(policy=f"{pols}:ForgetAll"), 1).final != (
            run_forgetting(c, 1).final
        )
    decay = SMALL_FORGET.with_(mechanism="time_decay", vote_rule="at_threshold")
    assert run_forgetting(decay.with_(policy=f"{pols}:ForgetAll"), 1).final == (
        run_forgetting(decay, 1).final
    )


def test_a_review_policy_changes_plasticity(pols: str) -> None:
    base = run_plasticity(SMALL_PLASTIC, 1)
    naive = run_plasticity(SMALL_PLASTIC.with_(policy=f"{pols}:AcceptAll"), 1)
    assert naive.final["wrong_adoption"] > base.final["wrong_adoption"]
    # the adversaries' seats given an honest, noiseless reading: more plasticity
    tamed = run_plasticity(SMALL_PLASTIC.with_(policy=f"{pols}:Believer=adversary"), 1)
    assert tamed.final["plasticity"] > base.final["plasticity"]
    panel = SMALL_PLASTIC.with_(mechanism="majority")
    assert run_plasticity(panel.with_(policy=f"{pols}:AcceptAll"), 1).final != (
        run_plasticity(panel, 1).final
    )
    lww = SMALL_PLASTIC.with_(mechanism="last_writer_wins")
    assert run_plasticity(lww.with_(policy=f"{pols}:AcceptAll"), 1).final == (
        run_plasticity(lww, 1).final
    )


def test_a_review_policy_changes_what_the_node_serves(pols: str) -> None:
    base = run_retrieval(SMALL_RETRIEVAL, 1)
    naive = run_retrieval(SMALL_RETRIEVAL.with_(policy=f"{pols}:AcceptAll"), 1)
    assert naive.final["lexical.store.acc"] != base.final["lexical.store.acc"]
    assert naive.final["lexical.store.wrong"] > base.final["lexical.store.wrong"]


# --- hostile input -------------------------------------------------------------------------


def test_a_policy_answer_is_checked_and_a_failure_names_the_decision(pols: str) -> None:
    with pytest.raises(pol.PolicyError, match=r"deciding forgets at round \d+, agent g\d+"):
        run_forgetting(SMALL_FORGET.with_(policy=f"{pols}:Two"), 1)
    with pytest.raises(pol.PolicyError, match=r"answered 2, not a number in \[0, 1\]"):
        run_forgetting(SMALL_FORGET.with_(policy=f"{pols}:Two"), 1)
    with pytest.raises(pol.PolicyError, match=r"deciding accepts .* answered 'yes', not True"):
        run_plasticity(SMALL_PLASTIC.with_(policy=f"{pols}:Maybe"), 1)
    with pytest.raises(pol.PolicyError, match="raised RuntimeError: model offline"):
        run_plasticity(SMALL_PLASTIC.with_(policy=f"{pols}:Offline"), 1)
    with pytest.raises(pol.PolicyError, match=r"not a policy \(no forgets method"):
        run_forgetting(SMALL_FORGET.with_(policy=f"{pols}:VoteOnly"), 1)


def test_a_kind_the_model_does_not_have_is_refused_by_the_config() -> None:
    for cfg, kind in ((SMALL_FORGET, "honest"), (SMALL_PLASTIC, "careful")):
        with pytest.raises(ConfigError, match=f"'{kind}' is not an agent kind of this model"):
            cfg.with_(policy=f"m:A={kind}")
    with pytest.raises(ConfigError, match="'stale' is not an agent kind"):
        SMALL_RETRIEVAL.with_(policy="m:A=stale")
    assert ForgetConfig(policy="m:A").to_dict()["policy"] == "m:A"
    assert "policy" not in ForgetConfig().to_dict()


def test_the_hooks_are_the_experiments_and_the_observations_show_no_truth() -> None:
    assert pol.needs("forgetting") == ("forgets",)
    assert pol.needs("plasticity") == pol.needs("retrieval") == ("accepts",)
    assert pol.needs("paper") == pol.DECISIONS
    obs = pol.ForgetObservation(
        "g001", "careful", "m00001", "t0s0 w", 7, 3, 0.4, 0.1, 0.5, 0.6, 0.5, 0.5, 0.6, 0.25
    )
    assert "0.25" not in repr(obs)  # the relevance is read, never shown
    r1, r2 = random.Random(3), random.Random(3)
    assert obs.read(r1) == min(1.0, max(0.0, 0.25 + r2.gauss(0.0, 0.1)))
    assert obs.keep(0.0) == pytest.approx(0.2) and obs.confidence(0.0) == pytest.approx(0.6)
    assert obs.confidence(1.0) == 0.0  # C = 0.7 >= θ: keep


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, ["simulate", *args, "--quiet"], catch_exceptions=False)


def test_cli_takes_a_policy_for_each_experiment_and_refuses_bad_ones(pols: str) -> None:
    for experiment, spec, message in (
        ("forgetting", "no_such_module_xyz:P", "no module"),
        ("forgetting", f"{pols}:VoteOnly", "no forgets method"),
        ("plasticity", f"{pols}:AcceptAll=careful", "is not an agent kind of this model"),
        ("retrieval", f"{pols}:Nope", "has no attribute 'Nope'"),
        ("retrieval", "nocolon", "is not MODULE:ATTR"),
    ):
        r = _cli("--experiment", experiment, "--policy", spec, "--seeds", "1")
        assert r.exit_code == 2, (experiment, spec, r.stderr)
        assert message in r.stderr and "Traceback" not in r.stderr, (spec, r.stderr)
    r = _cli("--experiment", "forgetting", "--ablation", "no_sanctions")
    assert r.exit_code == 2 and "are the paper model's" in r.stderr
    # a policy that fails while deciding stops the experiment: exit 2, one clear line
    size = ("--seeds", "1", "--rounds", "60", "--scenario", "adv=0.20", "--jobs", "1")
    r = _cli("--experiment", "plasticity", "--policy", f"{pols}:Offline", *size)
    assert r.exit_code == 2 and "model offline" in r.stderr and "Traceback" not in r.stderr


def test_cli_runs_an_experiment_with_a_plug_and_the_results_say_so(
    pols: str, tmp_path: Path
) -> None:
    size = ("--seeds", "1", "--rounds", "60", "--scenario", "adv=0.20", "--jobs", "1")
    out = tmp_path / "plugged"
    r = _cli(
        "--experiment", "plasticity", "--policy", f"{pols}:AcceptAll", *size, "--out", str(out)
    )
    assert r.exit_code == 0, r.stderr
    base = _cli("--experiment", "plasticity", *size, "--out", str(tmp_path / "base"))
    assert base.exit_code == 0, base.stderr
    plugged = (out / "runs.csv").read_text(encoding="utf-8")
    assert plugged != (tmp_path / "base" / "runs.csv").read_text(encoding="utf-8")
    assert f"{pols}:AcceptAll" in (out / "results.json").read_text(encoding="utf-8")
