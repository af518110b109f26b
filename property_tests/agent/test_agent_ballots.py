"""The reveal bookkeeping of ``ostrom mcp`` (agent/ballots.py): which kept ballots to
reveal, which are finished, and the mode-600 file that keeps them across restarts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ostrom.agent.ballots import BallotBook, BallotFileError, plan
from ostrom.client import Ballot

B = Ballot("accept", "checked", "ab" * 32, 3)


def art(phase: str | None, rnd: int = 3, revealed: dict[str, str] | None = None) -> dict[str, Any]:
    return {"phase": phase, "round": rnd, "revealed": revealed}


def test_reveal_only_in_the_reveal_phase_of_the_ballots_round() -> None:
    # CR-1: never in the commit phase (a reveal there is refused and reveals the vote)
    assert plan("a", {"x": B}, {"x": art("commit")}).reveal == ()
    assert plan("a", {"x": B}, {"x": art("commit")}).finished == ()
    assert plan("a", {"x": B}, {"x": art("reveal", revealed={})}).reveal == ("x",)
    # done, over, another round, gone: finished, not revealed
    for a in (
        art("reveal", revealed={"a": "accept"}),
        art("closed"),
        art(None),
        art("reveal", rnd=4, revealed={}),
    ):
        p = plan("a", {"x": B}, {"x": a})
        assert p.reveal == () and p.finished == ("x",), a
    assert plan("a", {"x": B}, {}).finished == ("x",)


@given(
    st.dictionaries(
        st.sampled_from("xyz"),
        st.fixed_dictionaries(
            {
                "phase": st.sampled_from(["commit", "reveal", "closed", None]),
                "round": st.integers(2, 4),
                "revealed": st.none() | st.dictionaries(st.sampled_from("ab"), st.just("accept")),
            }
        ),
    ),
    st.sets(st.sampled_from("xyz")),
)
def test_a_plan_reveals_at_most_once_and_only_when_it_may(
    arts: dict[str, Any], kept: set[str]
) -> None:
    ballots = {x: B for x in kept}
    p = plan("a", ballots, arts)
    assert not set(p.reveal) & set(p.finished)
    assert set(p.reveal) | set(p.finished) <= kept
    for x in p.reveal:
        a = arts[x]
        assert a["phase"] == "reveal" and a["round"] == B.round
        assert not (a["revealed"] or {}).get("a")
    for x in kept - set(p.reveal) - set(p.finished):
        assert arts[x]["phase"] == "commit" and arts[x]["round"] == B.round


def test_the_file_is_private_survives_a_restart_and_refuses_another_agents(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    book = BallotBook(path, "a")
    assert book.ballots == {} and not path.exists()
    book.put("x", B)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert BallotBook(path, "a").ballots == {"x": B}
    book.drop("x")
    assert BallotBook(path, "a").ballots == {}
    book.put("y", B)
    with pytest.raises(BallotFileError, match="agent 'b'"):
        BallotBook(path, "b")
    for bad in ("{", "[]", '{"agent": "a"}', '{"agent": "a", "ballots": {"x": {}}}'):
        path.write_text(bad)
        with pytest.raises(BallotFileError):
            BallotBook(path, "a")
    path.write_bytes(b"\xff")
    with pytest.raises(BallotFileError):
        BallotBook(path, "a")
    # a leftover temporary file of a wider mode is made private before it is written
    path.write_text(json.dumps({"agent": "a", "ballots": {}}))
    tmp = tmp_path / "b.json.tmp"
    tmp.write_text("")
    tmp.chmod(0o644)
    BallotBook(path, "a").put("z", B)
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_the_ballot_file_is_never_written_through_a_link(tmp_path: Path) -> None:
    """A link planted where the temporary file goes (docs/security.md, keys): the secret
    ballots must not be written through it into the file it names."""
    victim = tmp_path / "victim"
    victim.write_text("unchanged")
    book = BallotBook(tmp_path / "ballots.json", "alice")
    (tmp_path / "ballots.json.tmp").symlink_to(victim)
    book.put("x", B)
    assert victim.read_text() == "unchanged"
    assert json.loads((tmp_path / "ballots.json").read_text())["ballots"]["x"]["salt"] == B.salt
    assert not (tmp_path / "ballots.json.tmp").exists()
