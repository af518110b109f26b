"""``ostrom explain --params``: each step's action with the values it was taken with.

TLC finds the values (verify/tlc/bindings.py); these tests hold its answer against
evidence it did not use:

* in a lifecycle counterexample every step of an action with parameters is bound, to
  exactly one tuple, and the tuple is the one the step's own changes show (the voter in
  the vote it adds, the slot the proposal fills, the artifact that moves);
* Algorithm 1's honest steps are called through ``HonestStep(a)``, whose parameter is
  bound where HonestStep is called: the binding still comes out, with the coordinator
  proposing;
* a Byzantine envelope of PBFTReplicaSystem (a record TLC prints over many lines) is the
  message that lands on the link from its sender to its receiver;
* a step doctored so that no values of its action take it stays unbound (the formal
  parameters are shown, nothing is invented), and a trace that names no model is refused.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ostrom import layout
from ostrom.cli.main import main
from ostrom.verify.tlc.bindings import bind_trace, call_sites, scan_binders
from ostrom.verify.tlc.values import TlaRecord, from_itf, parse_value

DOCS_CEX = layout.ROOT / "docs" / "counterexamples"


def _load(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def _action(data: dict[str, Any], k: int) -> str:
    return str(data["states"][k]["#meta"]["action"])


# -- reading the spec's call sites (no TLC) ---------------------------------------------


def test_binders_with_commas_colons_and_strings_inside_their_domains() -> None:
    text = (
        '\\E o \\in {"accept", "reject: no"}, r \\in [a : S, b : T] : '
        "\\A x, y \\in {z \\in S : z > 1} : Foo(o, r, x, y)"
    )
    got = [(n, d) for n, d, _ in scan_binders(text)]
    assert got == [
        ("o", '{"accept", "reject: no"}'),
        ("r", "[a : S, b : T]"),
        ("x", "{z \\in S : z > 1}"),
        ("y", "{z \\in S : z > 1}"),
    ]


def test_a_parameter_of_the_enclosing_definition_is_bound_where_that_is_called() -> None:
    sites = call_sites("Commit", "MCCoForgettingAlg1")
    assert sites, "HonestStep(a) == ... Commit(a, v): a comes from Next's \\E a \\in Honest"
    assert all(dict(s.binders).get("a") == "Honest" for s in sites), sites
    assert all(dict(s.binders).get("v") == "Values" for s in sites), sites


def test_the_lifecycle_votes_range_over_the_specs_own_domains() -> None:
    sites = call_sites("CommitVote", "MCLifecycle")
    # Next's, and the step witnesses NeverMinTierCommitVoteStep's and NeverStepCommitVoteStep's
    # in models/MCLifecycle.tla
    assert {s.args for s in sites} == {("a", "x", "v")}
    assert (("a", "Agents"), ("x", "Artifacts"), ("v", "Votes")) in [s.binders for s in sites]
    assert len(sites) == 3


# -- TLC's answer against the trace's own changes ---------------------------------------


@pytest.fixture(scope="module")
def lifecycle_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cex")
    r = CliRunner().invoke(
        main, ["check", "--model", "lifecycle-mutant-supersede", "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    return out / "lifecycle-mutant-supersede.itf.json"


def _art(state: dict[str, Any], x: str) -> Any:
    art: Any = from_itf(state["art"])  # a record of artifacts (x1, x2 are strings)
    return dict(art.pairs)[x] if hasattr(art, "pairs") else art.get(x)


@pytest.mark.tlc
def test_every_lifecycle_step_is_bound_to_what_it_changed(lifecycle_trace: Path) -> None:
    data = _load(lifecycle_trace)
    bound = bind_trace(data)
    states = data["states"]
    with_params = [k for k in range(1, len(states)) if _action(data, k) != "Tick"]
    assert sorted(bound) == with_params, (sorted(bound), with_params)
    for k in with_params:
        assert len(bound[k]) == 1, f"step {k}: {bound[k]}"
        args = [parse_value(a) for a in bound[k][0]]
        action = _action(data, k)
        x = args[1] if action not in ("Recruit", "Timeout", "Forget") else args[0]
        before, after = _art(states[k - 1], str(x)), _art(states[k], str(x))
        assert before != after, f"step {k} {action}{tuple(args)}: artifact {x} did not change"
        if action in ("CommitVote", "RevealVote"):
            field = "commits" if action == "CommitVote" else "reveals"
            added = set(after.get(field).elems) - set(before.get(field).elems)
            assert [(t[0], t[2]) for t in added] == [(args[0], args[2])], (k, added, args)
        if action == "Propose":
            assert isinstance(after, TlaRecord)
            assert after.get("sub") == args[0] and after.get("slot") == args[2]


@pytest.mark.tlc
def test_explain_prints_the_bound_call(lifecycle_trace: Path) -> None:
    r = CliRunner().invoke(main, ["explain", "--params", str(lifecycle_trace)])
    assert r.exit_code == 0, r.output
    assert re.search(r'Propose\("a\d", "x\d", "s\d"\)', r.output), r.output
    assert "Propose(a, x, s)" not in r.output


@pytest.mark.tlc
def test_algorithm_1_through_honest_step() -> None:
    data = _load(DOCS_CEX / "alg1" / "forged-votes.itf.json.gz")
    bound = bind_trace(data)
    assert sorted(bound) == list(range(1, len(data["states"])))
    first = next(k for k in bound if _action(data, k) == "Propose")
    assert bound[first] == [('"a1"', '"forget"')], "a1 coordinates view 0 (MCCoord)"
    for k in bound:
        if _action(data, k) == "ByzCommit":
            ((b, _w, s, _v),) = bound[k]
            assert b == '"a4"' and s != '"a4"', "the Byzantine a4 commits under others' names"


@pytest.mark.tlc
def test_a_byzantine_envelope_is_the_message_on_its_link() -> None:
    data = _load(DOCS_CEX / "first-checkpoint-vote-wins.itf.json.gz")
    bound = bind_trace(data)
    byz = [k for k in range(1, len(data["states"])) if _action(data, k) == "ByzSend"]
    assert byz and all(k in bound for k in byz)
    for k in byz:
        ((text,),) = bound[k]
        env: Any = parse_value(text)
        to, m = env.get("to"), env.get("m")
        links: Any = from_itf(data["states"][k]["chan"])
        chan = dict(links.pairs)
        assert chan[(m.get("r"), to)][-1] == m, f"step {k}: {m} is not last on its link"


@pytest.mark.tlc
def test_a_step_no_values_can_take_stays_unbound(lifecycle_trace: Path, tmp_path: Path) -> None:
    data = _load(lifecycle_trace)
    k = next(i for i in range(1, len(data["states"])) if _action(data, i) == "Propose")
    doctored = json.loads(json.dumps(data))
    doctored["states"][k]["#meta"]["action"] = "Recruit"  # Recruit cannot make a proposal
    bound = bind_trace(doctored)
    assert k not in bound
    f = tmp_path / "doctored.itf.json"
    f.write_text(json.dumps(doctored))
    r = CliRunner().invoke(main, ["explain", "--params", "--step", str(k), str(f)])
    assert r.exit_code == 0 and f"step {k}: Recruit(x)" in r.output, r.output


def test_a_trace_of_no_model_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "t.itf.json"
    f.write_text(json.dumps({"#meta": {}, "vars": ["x"], "states": [{"x": 1}, {"x": 2}]}))
    r = CliRunner().invoke(main, ["explain", "--params", str(f)])
    assert r.exit_code == 2 and "--params: the trace names no model" in r.output, r.output
