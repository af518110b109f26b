"""``ostrom explain --why``: the conjunct of a violated invariant that is false in the
last state, and for which values of its leading \\A, as TLC evaluates it there.

* OneActivePerSlotInv (a leading \\A over the slots): false for the slot of the two active
  artifacts, s1;
* ForgottenInv (three bullets): only its third, "nothing is forgotten from disputed";
* a trace whose last state was changed so that the invariant holds there: every part
  holds, which --why says instead of inventing a culprit;
* a lasso (a temporal property) and a passing trace are refused with one line (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ostrom.cli.main import main
from ostrom.verify.tlc.why import split_invariant

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cex")
    for model in ("lifecycle-mutant-supersede", "lifecycle-mutant-forget-disputed",
                  "lifecycle-mutant-fairness"):  # fmt: skip
        r = CliRunner().invoke(main, ["check", "--model", model, "--out", str(out)])
        assert r.exit_code == 0, r.output
    return out


def _why(path: Path) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["explain", "--why", str(path)])
    return r.exit_code, r.output


def test_the_false_binding_of_a_quantified_invariant(traces: Path) -> None:
    code, out = _why(traces / "lifecycle-mutant-supersede.itf.json")
    assert code == 0, out
    assert "why: OneActivePerSlotInv (LC-SAFE-2" in out
    assert 'its body is false for s \\in {"s1"}' in out


def test_the_false_conjunct_of_a_conjunction(traces: Path) -> None:
    code, out = _why(traces / "lifecycle-mutant-forget-disputed.itf.json")
    assert code == 0, out
    assert "conjunct 3 of 3 is false" in out
    assert "conjunct 1 of 3" not in out and "conjunct 2 of 3" not in out
    assert 't[1] = "forget" => t[2] # "disputed"' in out


def test_a_state_where_the_invariant_holds_is_not_blamed(traces: Path, tmp_path: Path) -> None:
    doc = json.loads((traces / "lifecycle-mutant-supersede.itf.json").read_text())
    doc["states"][-1] = doc["states"][-3]  # before x1 and x2 were both active
    f = tmp_path / "doctored.itf.json"
    f.write_text(json.dumps(doc))
    code, out = _why(f)
    assert code == 0 and "every part holds" in out, out


def test_what_has_no_bad_state_is_refused(traces: Path) -> None:
    code, out = _why(traces / "lifecycle-mutant-fairness.itf.json")
    assert code == 2 and "temporal property" in out, out


def test_bullets_keep_their_columns() -> None:
    text = "Inv ==\n    /\\ a = 1\n    /\\ \\A x \\in S :\n          b[x]\n"
    binder, parts = split_invariant(text)
    assert binder is None
    assert parts == ["       a = 1", "       \\A x \\in S :\n          b[x]"]
    binder, parts = split_invariant("Inv == \\A s \\in Slots : f(s) <= 1")
    assert binder == ("s", "Slots") and parts[0].strip() == "f(s) <= 1"
